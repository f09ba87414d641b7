package console

import "net/http"

// The pages below are placeholders, each replaced by its own file.

func (h *Handler) showCompose(w http.ResponseWriter, r *http.Request, s *session) {
	h.render(w, r, http.StatusOK, "compose", h.newView(s, "compose", "Compose"))
}

func (h *Handler) showInbox(w http.ResponseWriter, r *http.Request, s *session) {
	h.render(w, r, http.StatusOK, "inbox", h.newView(s, "inbox", "Inbox"))
}

func (h *Handler) showAccounts(w http.ResponseWriter, r *http.Request, s *session) {
	h.render(w, r, http.StatusOK, "accounts", h.newView(s, "accounts", "Accounts"))
}

func (h *Handler) showStatus(w http.ResponseWriter, r *http.Request, s *session) {
	h.render(w, r, http.StatusOK, "status", h.newView(s, "status", "Status"))
}
