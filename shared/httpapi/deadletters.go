package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"oncepost/shared/publishing"
)

// deadLetterView is a dead-lettered job: the job decoded when it can be,
// else the start of its body.
type deadLetterView struct {
	ID           string          `json:"id"`
	At           time.Time       `json:"at,omitzero"`
	ReceiveCount int             `json:"receive_count"`
	Reason       string          `json:"reason"`
	Job          *publishing.Job `json:"job,omitempty"`
	Body         string          `json:"body,omitempty"`
}

// listDeadLetters is GET /v1/dead-letters, oldest first.
func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	dls, err := s.cfg.DeadLetters.DeadLetters(r.Context(), 0)
	if err != nil {
		return s.internal(r, err)
	}
	out := struct {
		DeadLetters []deadLetterView `json:"dead_letters"`
	}{DeadLetters: []deadLetterView{}}
	for _, d := range dls {
		v := deadLetterView{ID: d.ID, At: d.At, ReceiveCount: d.ReceiveCount, Reason: d.Reason}
		if job, err := publishing.DecodeJob(d.Body); err == nil {
			v.Job = &job
		} else {
			body := strings.ToValidUTF8(string(d.Body), "\uFFFD")
			if len(body) > 200 {
				body = strings.ToValidUTF8(body[:200], "") + "…"
			}
			v.Body = body
		}
		out.DeadLetters = append(out.DeadLetters, v)
	}
	return s.writeJSON(w, r, http.StatusOK, out)
}

// redriveDeadLetter is POST /v1/dead-letters/{id}/redrive: the job goes
// back to the queue (the ledger makes one that went out a no-op).
func (s *Server) redriveDeadLetter(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	return s.deadLetterOp(w, r, s.cfg.DeadLetters.Redrive)
}

// dropDeadLetter is DELETE /v1/dead-letters/{id}.
func (s *Server) dropDeadLetter(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	return s.deadLetterOp(w, r, s.cfg.DeadLetters.Drop)
}

func (s *Server) deadLetterOp(w http.ResponseWriter, r *http.Request, op func(ctx context.Context, id string) error) *Problem {
	id := r.PathValue("id")
	err := op(r.Context(), id)
	if errors.Is(err, publishing.ErrMessageNotFound) {
		return newProblem(r, http.StatusNotFound, typeBlank, "no dead letter "+strconv.Quote(id)+" (GET /v1/dead-letters lists them)")
	}
	if err != nil {
		return s.internal(r, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
