package console

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// reschedulePost is POST /posts/{id}/reschedule: fields at (a
// datetime-local value, read in the viewer's zone) and account (""
// for every target). Desk.Reschedule decides, with the rules of `oncepost
// post reschedule`: only targets nothing was sent for move. Each target's
// outcome comes back as the flash of the post's page.
func (h *Handler) reschedulePost(w http.ResponseWriter, r *http.Request, s *session) {
	id := post.ID(r.PathValue("id"))
	back := "/posts/" + string(id)
	zone := s.location()
	raw := strings.TrimSpace(r.PostFormValue("at"))
	at, err := parseLocalTime(raw, zone)
	if err != nil {
		h.back(w, r, s, back, err.Error(), true)
		return
	}
	outcomes, err := h.cfg.API.Desk.Reschedule(r.Context(), id, post.AccountID(r.PostFormValue("account")), at)
	h.afterAction(w, r, s, back, "Move to "+at.In(zone).Format("Mon 2 Jan 2006 15:04")+" ("+zone.String()+")", outcomes, err)
}

// cancelPost is POST /posts/{id}/cancel: field account ("" for every
// target). Desk.Cancel decides (only targets nothing was sent for).
func (h *Handler) cancelPost(w http.ResponseWriter, r *http.Request, s *session) {
	id := post.ID(r.PathValue("id"))
	outcomes, err := h.cfg.API.Desk.Cancel(r.Context(), id, post.AccountID(r.PostFormValue("account")))
	h.afterAction(w, r, s, "/posts/"+string(id), "Cancel", outcomes, err)
}

// afterAction redirects back with the action's outcome per target as the
// flash (an error flash when any target refused), or the error: a field
// error is the flash too, an unknown post is 404.
func (h *Handler) afterAction(w http.ResponseWriter, r *http.Request, s *session, back, what string, outcomes []publishing.TargetOutcome, err error) {
	var fe *post.FieldError
	switch {
	case errors.Is(err, post.ErrNotFound):
		http.Error(w, "no such post", http.StatusNotFound)
		return
	case errors.As(err, &fe):
		h.back(w, r, s, back, what+": "+fe.Error(), true)
		return
	case err != nil && len(outcomes) == 0:
		h.fail(w, r, err)
		return
	}
	parts := []string{what + ":"}
	refused := err != nil
	for _, o := range outcomes {
		verdict := "done"
		if !o.Done {
			verdict, refused = "refused", true
		}
		parts = append(parts, fmt.Sprintf("%s %s — %s.", o.Account, verdict, o.Message))
	}
	if err != nil {
		h.log.ErrorContext(r.Context(), "console: action stopped", "path", r.URL.Path, "err", err)
		parts = append(parts, "Then it stopped on an error; see the server's log.")
	}
	h.back(w, r, s, back, strings.Join(parts, " "), refused)
}
