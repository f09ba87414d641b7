package console

import "net/http"

// The pages below are placeholders, each replaced by its own file.

func (h *Handler) showCalendar(w http.ResponseWriter, r *http.Request, s *session) {
	h.render(w, r, http.StatusOK, "calendar", h.newView(s, "calendar", "Calendar"))
}
