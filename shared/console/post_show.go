package console

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// postData is the post page.
type postData struct {
	*view
	Post    post.Post
	Missing post.ID
	Targets []postTarget
	// At is the reschedule form's first value: the earliest slot of a
	// target that can still move (else the earliest), in the viewer's
	// zone as datetime-local wants it.
	At string
	// Movable are the accounts whose target may move or be cancelled
	// (scheduled, waiting or held): the forms' choices.
	Movable   []post.AccountID
	CanChange bool
	// Back is the calendar week of the post's first slot.
	Back string
}

// postTarget is one target on the post page, with its ledger entries.
type postTarget struct {
	calTarget
	Reason   string
	RemoteID string
	NextTry  time.Time
	Ledger   []publishing.EntryView
	// Parts are a thread's parts on this target (none without a thread).
	Parts []publishing.PartView
}

// Badge is the target's status badge data.
func (t postTarget) Badge() calTarget { return t.calTarget }

// showPost is GET /posts/{id}: the post, its targets and each target's
// ledger entries with their history (Desk.Show), and the forms that move
// or cancel its targets.
func (h *Handler) showPost(w http.ResponseWriter, r *http.Request, s *session) {
	id := post.ID(r.PathValue("id"))
	v := h.newView(s, "post", "Post "+string(id))
	pv, err := h.cfg.API.Desk.Show(r.Context(), id)
	if errors.Is(err, post.ErrNotFound) {
		v.Title = "No such post"
		h.render(w, r, http.StatusNotFound, "post", postData{view: v, Missing: id})
		return
	}
	if err != nil {
		h.fail(w, r, fmt.Errorf("post %s: %w", id, err))
		return
	}
	accounts, err := h.cfg.API.Accounts.ListAccounts(r.Context())
	if err != nil {
		h.fail(w, r, fmt.Errorf("post %s: %w", id, err))
		return
	}
	d := postData{view: v, Post: pv.Post, CanChange: v.Can("posts")}
	var first, firstMovable time.Time
	for _, tv := range pv.Targets {
		ct := calTarget{Post: pv.Post.ID, Account: tv.Account, Slot: tv.Slot, Status: tv.Status}
		if i := slices.IndexFunc(accounts, func(a post.Account) bool { return a.ID == tv.Account }); i >= 0 {
			if z := accountZone(accounts[i]); z != nil {
				ct.AccountTime = otherZoneTime(tv.Slot, v.Zone, z)
			}
		}
		d.Targets = append(d.Targets, postTarget{calTarget: ct, Reason: tv.Reason, RemoteID: tv.RemoteID, NextTry: tv.NextTry, Ledger: tv.Ledger, Parts: tv.Parts})
		if first.IsZero() || tv.Slot.Before(first) {
			first = tv.Slot
		}
		if slices.Contains([]post.TargetStatus{post.NeedsApproval, post.Scheduled, post.Waiting, post.Held}, tv.Status) {
			d.Movable = append(d.Movable, tv.Account)
			if firstMovable.IsZero() || tv.Slot.Before(firstMovable) {
				firstMovable = tv.Slot
			}
		}
	}
	if !firstMovable.IsZero() {
		first = firstMovable
	}
	if !first.IsZero() {
		d.At = first.In(v.Zone).Format(datetimeLocal)
		d.Back = calendarQuery{}.url(viewWeek, first.In(v.Zone))
	}
	h.render(w, r, http.StatusOK, "post", d)
}

// Short is the first 12 characters of a ledger key, as the CLI shows it.
func (postData) Short(k ledger.Key) string {
	if len(k) > 12 {
		return string(k[:12])
	}
	return string(k)
}
