package console

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// decideHeld is POST /inbox/held/{key}/approve|confirm|reject: the
// inbox's decision on a held entry, through the API's Decider (the one
// POST /v1/held/{key}/… calls: on one machine it reaches the waiting
// workflow, and performs an approved delete). Form fields: remote_id
// (confirm), reason (reject). The page comes back with what was done.
func (h *Handler) decideHeld(action string) pageFunc {
	verb := map[string]string{publishing.DecisionRelease: "Approved", publishing.DecisionConfirm: "Confirmed", publishing.DecisionReject: "Rejected"}[action]
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		key := ledger.Key(r.PathValue("key"))
		back := func(msg string, isErr bool) { h.back(w, r, s, "/inbox#held", msg, isErr) }
		d := publishing.Decision{Action: action}
		switch action {
		case publishing.DecisionConfirm:
			d.RemoteID = strings.TrimSpace(r.PostFormValue("remote_id"))
		case publishing.DecisionReject:
			d.Reason = strings.TrimSpace(r.PostFormValue("reason"))
		}
		// The use case's limits (Decision.Validate), said in the form's
		// words before it reads anything.
		var fe *post.FieldError
		if err := d.Validate(); errors.As(err, &fe) {
			back(decisionFieldText(fe), true)
			return
		} else if err != nil {
			h.fail(w, r, err)
			return
		}
		res, err := h.cfg.API.Decider.Decide(r.Context(), key, d)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			back(fmt.Sprintf("No ledger entry %s: it may have been removed; the inbox lists what waits now.", key), true)
		case errors.Is(err, publishing.ErrNotHeld), errors.Is(err, publishing.ErrDecidedOtherwise), errors.Is(err, publishing.ErrDeleteNotConfirmable):
			back(fmt.Sprintf("Nothing done on %s: %v", key, err), true)
		case errors.Is(err, publishing.ErrRemoteNotFound):
			back(fmt.Sprintf("Remote id: %v", err), true)
		case err != nil:
			h.log.ErrorContext(r.Context(), "console: decision failed", "key", key, "decision", action, "err", err)
			back(fmt.Sprintf("The decision on %s failed; see the server's log. Nothing may have been recorded: look at the entry and try again.", key), true)
		default:
			back(fmt.Sprintf("%s %s: %s", verb, key, res.Message), false)
		}
	}
}

// decisionFieldText is a refused decision field as the inbox's flash
// says it: the form's label, the problem, the fix.
func decisionFieldText(fe *post.FieldError) string {
	label := map[string]string{"remote_id": "Remote id", "reason": "Reason", "decision": "Decision"}[fe.Field]
	if label == "" {
		label = fe.Field
	}
	msg := label + ": " + fe.Problem + "."
	if fe.Fix != "" {
		msg += " " + strings.ToUpper(fe.Fix[:1]) + fe.Fix[1:] + "."
	}
	return msg
}
