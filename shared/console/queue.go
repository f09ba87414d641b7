package console

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// An account's queue: GET /accounts/{id}/queue lists its queued posts in
// its own time zone and its next free slots; POST …/queue/top puts one
// post first, POST …/queue/shuffle shuffles them (Desk.ReorderQueue and
// ShuffleQueue decide, as `oncepost queue` does).

// queueFree is how many free slots the page lists.
const queueFree = 5

// queueData is the queue page.
type queueData struct {
	*view
	Queue publishing.QueueView
	// Zone is the account's zone, in which its slots are shown.
	AccountZone *time.Location
}

// InAccount is t in the account's zone, with the zone's abbreviation.
func (d queueData) InAccount(t time.Time) string {
	return t.In(d.AccountZone).Format("Mon 2 Jan 2006 15:04 MST")
}

// showQueue is GET /accounts/{id}/queue.
func (h *Handler) showQueue(w http.ResponseWriter, r *http.Request, s *session) {
	id := post.AccountID(r.PathValue("id"))
	v, err := h.cfg.API.Desk.ShowQueue(r.Context(), id, queueFree)
	if len(publishing.FieldErrors(err)) > 0 {
		http.Error(w, "no such account", http.StatusNotFound)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d := queueData{view: h.newView(s, "accounts", "Queue of "+string(id)), Queue: v, AccountZone: v.Account.Location()}
	h.render(w, r, http.StatusOK, "queue", d)
}

// queueTop is POST /accounts/{id}/queue/top: field post, put first.
func (h *Handler) queueTop(w http.ResponseWriter, r *http.Request, s *session) {
	id := post.AccountID(r.PathValue("id"))
	p := post.ID(r.PostFormValue("post"))
	moves, err := h.cfg.API.Desk.ReorderQueue(r.Context(), id, []post.ID{p})
	h.afterQueue(w, r, s, id, "Move "+string(p)+" to the top", moves, err)
}

// queueShuffle is POST /accounts/{id}/queue/shuffle: optional field seed;
// without one, the queue's own (publishing.QueueSeed).
func (h *Handler) queueShuffle(w http.ResponseWriter, r *http.Request, s *session) {
	id := post.AccountID(r.PathValue("id"))
	back := "/accounts/" + string(id) + "/queue"
	var seed uint64
	if raw := strings.TrimSpace(r.PostFormValue("seed")); raw != "" {
		n, err := strconv.ParseUint(raw, 10, 64)
		if err != nil {
			h.back(w, r, s, back, fmt.Sprintf("seed: %q is not a whole number", raw), true)
			return
		}
		seed = n
	} else {
		v, err := h.cfg.API.Desk.ShowQueue(r.Context(), id, 0)
		if err != nil {
			h.afterQueue(w, r, s, id, "Shuffle", nil, err)
			return
		}
		seed = publishing.QueueSeed(v)
	}
	moves, err := h.cfg.API.Desk.ShuffleQueue(r.Context(), id, seed)
	h.afterQueue(w, r, s, id, fmt.Sprintf("Shuffle (seed %d)", seed), moves, err)
}

// afterQueue redirects back to the queue with what moved as the flash.
func (h *Handler) afterQueue(w http.ResponseWriter, r *http.Request, s *session, id post.AccountID, what string, moves []publishing.QueueMove, err error) {
	back := "/accounts/" + string(id) + "/queue"
	var fe *post.FieldError
	switch {
	case errors.As(err, &fe):
		h.back(w, r, s, back, what+": "+fe.Error(), true)
		return
	case err != nil && len(moves) == 0 && !errors.Is(err, post.ErrConflict):
		h.fail(w, r, err)
		return
	}
	done := 0
	for _, m := range moves {
		if m.Done {
			done++
		}
	}
	msg := fmt.Sprintf("%s: %d posts moved.", what, done)
	if err != nil {
		msg += " Then it stopped: " + err.Error()
	}
	h.back(w, r, s, back, msg, err != nil)
}
