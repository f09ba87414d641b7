package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// heldEntry is an entry waiting for an operator, or still unresolved
// (`oncepost held`).
type heldEntry struct {
	Key     ledger.Key    `json:"key"`
	Action  ledger.Action `json:"action"`
	State   ledger.State  `json:"state"`
	Post    string        `json:"post_id"`
	Account string        `json:"account"`
	Attempt int           `json:"attempt"`
	// MaybeSent counts the sends that may have reached the platform.
	MaybeSent int       `json:"maybe_sent"`
	Since     time.Time `json:"since"`
	Reason    string    `json:"reason,omitempty"`
	// RemoteID is the evidence (a post found with the same content), or
	// for a delete the remote post it deletes.
	RemoteID string `json:"remote_id,omitempty"`
	// Decision is an operator's decision recorded and not yet applied.
	Decision string `json:"decision,omitempty"`
}

// listHeld is GET /v1/held: held entries, then open ones, oldest first
// (publishing.ListHeld, as `oncepost held` lists them).
func (s *Server) listHeld(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	list, err := publishing.ListHeld(r.Context(), s.cfg.Held, publishing.HeldQuery{Now: s.cfg.Now()})
	if err != nil {
		return s.internal(r, err)
	}
	out := struct {
		Entries []heldEntry `json:"entries"`
	}{Entries: make([]heldEntry, 0, len(list.Items))}
	for _, it := range list.Items {
		e := it.Entry
		out.Entries = append(out.Entries, heldEntry{Key: e.Key, Action: e.Action, State: e.State, Post: it.PostID, Account: e.Account,
			Attempt: e.Attempt, MaybeSent: e.MaybeSent, Since: it.Since.UTC(), Reason: e.Reason, RemoteID: it.RemoteID, Decision: e.Decision})
	}
	return s.writeJSON(w, r, http.StatusOK, out)
}

// decisionAnswer is what a decision did.
type decisionAnswer struct {
	Key ledger.Key `json:"key"`
	// How is delivered (to the waiting workflow), applied (to the ledger)
	// or already_decided.
	How     string       `json:"how"`
	State   ledger.State `json:"state"`
	Message string       `json:"message"`
}

// decide is POST /v1/held/{key}/approve|confirm|reject.
func (s *Server) decide(action string) func(w http.ResponseWriter, r *http.Request, p Principal) *Problem {
	return func(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
		var in struct {
			RemoteID string `json:"remote_id"`
			Reason   string `json:"reason"`
		}
		var d publishing.Decision
		switch action {
		case publishing.DecisionRelease:
			var none struct{}
			if prob := decodeJSON(r, &none, true); prob != nil {
				return prob
			}
		case publishing.DecisionConfirm:
			if prob := decodeJSON(r, &struct {
				RemoteID *string `json:"remote_id"`
			}{&in.RemoteID}, false); prob != nil {
				return prob
			}
		case publishing.DecisionReject:
			if prob := decodeJSON(r, &struct {
				Reason *string `json:"reason"`
			}{&in.Reason}, true); prob != nil {
				return prob
			}
		}
		d = publishing.Decision{Action: action, RemoteID: in.RemoteID, Reason: in.Reason}
		// The use case's limits (Decision.Validate), answered before it
		// reads anything.
		var fe *post.FieldError
		if err := d.Validate(); errors.As(err, &fe) {
			return fieldProblem(r, fe.Field, fe.Problem, fe.Fix)
		} else if err != nil {
			return s.internal(r, err)
		}
		key := ledger.Key(r.PathValue("key"))
		res, err := s.cfg.Decider.Decide(r.Context(), key, d)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			return newProblem(r, http.StatusNotFound, typeBlank, "no ledger entry "+strconv.Quote(string(key))+" (GET /v1/held lists them)")
		case errors.Is(err, publishing.ErrNotHeld), errors.Is(err, publishing.ErrDecidedOtherwise), errors.Is(err, publishing.ErrDeleteNotConfirmable):
			return newProblem(r, http.StatusConflict, typeConflict, err.Error())
		case errors.Is(err, publishing.ErrRemoteNotFound):
			return fieldProblem(r, "remote_id", err.Error(), "give the id of the post as the platform shows it")
		case err != nil:
			return s.internal(r, err)
		}
		return s.writeJSON(w, r, http.StatusOK, decisionAnswer{Key: key, How: res.How, State: res.Entry.State, Message: res.Message})
	}
}
