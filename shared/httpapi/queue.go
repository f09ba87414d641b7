package httpapi

import (
	"net/http"
	"strconv"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// An account's settings and its queue: PATCH /v1/accounts/{id} sets its
// time zone and posting slots; GET …/queue shows its queued posts and
// free slots; POST …/queue/reorder and …/queue/shuffle move them.

// accountSettingsView is an account's scheduling settings.
type accountSettingsView struct {
	ID       post.AccountID `json:"id"`
	TimeZone string         `json:"time_zone"`
	Slots    []string       `json:"slots"`
	// RequireApproval: its posts wait for approval before they are
	// scheduled.
	RequireApproval bool                   `json:"require_approval"`
	Moves           []publishing.QueueMove `json:"moves"`
}

// accountOr404 is a 404 problem when the account in the path does not
// exist, nil when it does.
func (s *Server) accountOr404(r *http.Request) (post.Account, *Problem) {
	id := post.AccountID(r.PathValue("id"))
	list, err := s.cfg.Accounts.ListAccounts(r.Context())
	if err != nil {
		return post.Account{}, s.internal(r, err)
	}
	for _, a := range list {
		if a.ID == id {
			return a, nil
		}
	}
	return post.Account{}, newProblem(r, http.StatusNotFound, typeBlank, "no account "+strconv.Quote(string(id))+" (GET /v1/accounts lists them)")
}

// patchAccount is PATCH /v1/accounts/{id} {"time_zone": …, "slots": […]}:
// members left out stay; the queued posts move to the new slots.
func (s *Server) patchAccount(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	if s.cfg.AccountsReadOnly {
		return newProblem(r, http.StatusNotImplemented, typeBlank,
			"this API changes no account; an operator sets an account's zone and slots with `oncepost account set ID --backend aws`")
	}
	if _, prob := s.accountOr404(r); prob != nil {
		return prob
	}
	var in struct {
		TimeZone *string   `json:"time_zone"`
		Slots    *[]string `json:"slots"`
	}
	if prob := decodeJSON(r, &in, false); prob != nil {
		return prob
	}
	if in.TimeZone == nil && in.Slots == nil {
		return fieldProblem(r, "time_zone", "nothing to change", "give time_zone, slots or both")
	}
	a, moves, err := s.cfg.Desk.ChangeAccount(r.Context(), post.AccountID(r.PathValue("id")), publishing.AccountChange{TimeZone: in.TimeZone, Slots: in.Slots})
	if err != nil && (a.ID == "" || len(fieldErrors(err)) > 0) {
		return s.postError(r, err)
	}
	if err != nil {
		// Stored, but the queue could not follow: say so with the moves
		// made.
		prob := newProblem(r, http.StatusConflict, typeConflict, err.Error())
		return prob
	}
	if moves == nil {
		moves = []publishing.QueueMove{}
	}
	slots := a.Slots
	if slots == nil {
		slots = []string{}
	}
	return s.writeJSON(w, r, http.StatusOK, accountSettingsView{ID: a.ID, TimeZone: a.TimeZone, Slots: slots, RequireApproval: a.RequireApproval, Moves: moves})
}

// getQueue is GET /v1/accounts/{id}/queue?free=N.
func (s *Server) getQueue(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	if _, prob := s.accountOr404(r); prob != nil {
		return prob
	}
	free := 5
	if v := r.URL.Query().Get("free"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1000 {
			return badRequest(r, "free", strconv.Quote(v)+" is not a number from 0 to 1000", "give how many free slots to list")
		}
		free = n
	}
	v, err := s.cfg.Desk.ShowQueue(r.Context(), post.AccountID(r.PathValue("id")), free)
	if err != nil {
		return s.postError(r, err)
	}
	return s.writeJSON(w, r, http.StatusOK, queueAnswer(v, nil))
}

// queueView is an account's queue as the API shows it.
type queueView struct {
	Account   post.AccountID          `json:"account"`
	TimeZone  string                  `json:"time_zone"`
	Slots     []string                `json:"slots"`
	Entries   []publishing.QueueEntry `json:"entries"`
	FreeSlots []string                `json:"free_slots"`
	// Seed is the shuffle's seed (shuffle only).
	Seed  *string                `json:"seed,omitempty"`
	Moves []publishing.QueueMove `json:"moves,omitempty"`
}

func queueAnswer(v publishing.QueueView, moves []publishing.QueueMove) queueView {
	out := queueView{Account: v.Account.ID, TimeZone: v.Account.TimeZone, Slots: v.Account.Slots, Entries: v.Entries, FreeSlots: []string{}, Moves: moves}
	if out.Slots == nil {
		out.Slots = []string{}
	}
	if out.Entries == nil {
		out.Entries = []publishing.QueueEntry{}
	}
	for _, f := range v.FreeSlots {
		out.FreeSlots = append(out.FreeSlots, f.UTC().Format("2006-01-02T15:04:05Z07:00"))
	}
	return out
}

// reorderQueue is POST /v1/accounts/{id}/queue/reorder {"posts": […]}.
func (s *Server) reorderQueue(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	if _, prob := s.accountOr404(r); prob != nil {
		return prob
	}
	var in struct {
		Posts []post.ID `json:"posts"`
	}
	if prob := decodeJSON(r, &in, false); prob != nil {
		return prob
	}
	if len(in.Posts) == 0 {
		return fieldProblem(r, "posts", "is empty", "name the posts to put first, in order")
	}
	account := post.AccountID(r.PathValue("id"))
	moves, err := s.cfg.Desk.ReorderQueue(r.Context(), account, in.Posts)
	return s.answerQueue(w, r, account, moves, err, nil)
}

// shuffleQueue is POST /v1/accounts/{id}/queue/shuffle {"seed": "…"}: the
// seed (a decimal string: it may not fit a JSON number) is derived from
// the queue when left out, and answered.
func (s *Server) shuffleQueue(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	if _, prob := s.accountOr404(r); prob != nil {
		return prob
	}
	var in struct {
		Seed string `json:"seed"`
	}
	if prob := decodeJSON(r, &in, true); prob != nil {
		return prob
	}
	account := post.AccountID(r.PathValue("id"))
	var seed uint64
	if in.Seed != "" {
		n, err := strconv.ParseUint(in.Seed, 10, 64)
		if err != nil {
			return fieldProblem(r, "seed", strconv.Quote(in.Seed)+" is not a decimal number from 0 to 18446744073709551615", "give a number as a string, or leave it out")
		}
		seed = n
	} else {
		v, err := s.cfg.Desk.ShowQueue(r.Context(), account, 0)
		if err != nil {
			return s.postError(r, err)
		}
		seed = publishing.QueueSeed(v)
	}
	moves, err := s.cfg.Desk.ShuffleQueue(r.Context(), account, seed)
	used := strconv.FormatUint(seed, 10)
	return s.answerQueue(w, r, account, moves, err, &used)
}

// answerQueue answers an arrangement: the queue after it, with its moves;
// a conflict (a slot taken meanwhile) is a 409 naming what moved.
func (s *Server) answerQueue(w http.ResponseWriter, r *http.Request, account post.AccountID, moves []publishing.QueueMove, err error, seed *string) *Problem {
	if err != nil {
		prob := s.postError(r, err)
		return prob
	}
	v, err := s.cfg.Desk.ShowQueue(r.Context(), account, 5)
	if err != nil {
		return s.postError(r, err)
	}
	if moves == nil {
		moves = []publishing.QueueMove{}
	}
	out := queueAnswer(v, moves)
	out.Seed = seed
	return s.writeJSON(w, r, http.StatusOK, out)
}
