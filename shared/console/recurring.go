package console

import (
	"errors"
	"net/http"
	"strings"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/recurring"
)

// recurringData is the recurring rules page.
type recurringData struct {
	*view
	// Off: this runtime keeps no recurring rules (Config.API.Recurring).
	Off   bool
	Rules []publishing.RuleView
}

// showRecurring is GET /recurring: every rule, read only (the CLI and
// the API write them), with its repeat rule in words, its next
// occurrences and the post each one is, and what it could not create.
func (h *Handler) showRecurring(w http.ResponseWriter, r *http.Request, s *session) {
	d := recurringData{view: h.newView(s, "recurring", "Recurring")}
	if h.cfg.API.Recurring == nil {
		d.Off = true
		h.render(w, r, http.StatusOK, "recurring", d)
		return
	}
	rules, err := h.cfg.API.Recurring.List(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d.Rules = rules
	h.render(w, r, http.StatusOK, "recurring", d)
}

// stopRule is POST /recurring/{id}/stop: the rule stops (Recurring.Stop,
// as `oncepost recurring stop`), its occurrences still to come are
// cancelled; the outcome is the flash of the rules page.
func (h *Handler) stopRule(w http.ResponseWriter, r *http.Request, s *session) {
	if h.cfg.API.Recurring == nil {
		http.Error(w, "this runtime keeps no recurring rules", http.StatusNotImplemented)
		return
	}
	id := recurring.ID(r.PathValue("id"))
	v, err := h.cfg.API.Recurring.Stop(r.Context(), id)
	switch {
	case errors.Is(err, post.ErrNotFound):
		http.Error(w, "no such rule", http.StatusNotFound)
		return
	case err != nil:
		h.fail(w, r, err)
		return
	}
	h.back(w, r, s, "/recurring", "Rule "+string(v.Rule.ID)+" stopped: no occurrence will be created, and those to come are cancelled.", false)
}

// State says where a rule stands: running, ended (no occurrence left) or
// stopped.
func (recurringData) State(v publishing.RuleView) string {
	switch {
	case !v.Rule.Active():
		return "stopped"
	case len(v.Next) == 0:
		return "ended"
	}
	return "running"
}

// Accounts are a rule's accounts, comma-separated.
func (recurringData) Accounts(ids []post.AccountID) string {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = string(id)
	}
	return strings.Join(names, ", ")
}

// LastMissed is the latest of a rule's missed occurrences.
func (recurringData) LastMissed(m []recurring.Problem) recurring.Problem {
	if len(m) == 0 {
		return recurring.Problem{}
	}
	return m[len(m)-1]
}
