package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"oncepost/shared/publishing"
)

// redriveDeadLetter is POST /inbox/dead-letters/{id}/redrive: the job
// goes back to the publish queue (the ledger makes a job that went out a
// no-op), as POST /v1/dead-letters/{id}/redrive does.
func (h *Handler) redriveDeadLetter(w http.ResponseWriter, r *http.Request, s *session) {
	h.deadLetterOp(w, r, s, "Redriven", h.cfg.API.DeadLetters.Redrive)
}

// dropDeadLetter is POST /inbox/dead-letters/{id}/drop: the dead letter
// is deleted, as DELETE /v1/dead-letters/{id} does.
func (h *Handler) dropDeadLetter(w http.ResponseWriter, r *http.Request, s *session) {
	h.deadLetterOp(w, r, s, "Dropped", h.cfg.API.DeadLetters.Drop)
}

func (h *Handler) deadLetterOp(w http.ResponseWriter, r *http.Request, s *session, done string, op func(ctx context.Context, id string) error) {
	id := r.PathValue("id")
	err := op(r.Context(), id)
	switch {
	case errors.Is(err, publishing.ErrMessageNotFound):
		h.back(w, r, s, "/inbox#dead-letters", fmt.Sprintf("No dead letter %s: it was redriven or dropped already.", id), true)
	case err != nil:
		h.log.ErrorContext(r.Context(), "console: dead letter", "id", id, "err", err)
		h.back(w, r, s, "/inbox#dead-letters", fmt.Sprintf("%s failed on dead letter %s; see the server's log.", done, id), true)
	default:
		h.back(w, r, s, "/inbox#dead-letters", fmt.Sprintf("%s dead letter %s.", done, id), false)
	}
}
