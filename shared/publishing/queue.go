package publishing

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/schedexpr"
)

// The queue: an account's posting slots (post.Account.Slots, read in its
// time zone) and the posts added to it. A post added to the queue takes
// the account's next free slot; the queue is an ordered list of posts
// mapped onto the slots, so reordering, shuffling or changing the slots
// moves the queued posts to the first free slots in the new order.
//
// A slot is taken by a claim (QueueSlots.ClaimQueueSlot), a conditional
// write on (account, slot) made before the post is stored: two posts
// added at once never take the same slot. A claim whose post was never
// stored (the process died between the two writes) leaves the slot
// unused — a gap, never a second post — until the queue is arranged
// again after ClaimGrace.

// SlotClaim is one taken posting slot.
type SlotClaim struct {
	Slot time.Time
	Post post.ID
	// At is when the claim was written.
	At time.Time
}

// QueueSlots keeps the posting slots taken by queued posts. Every adapter
// passes publishingtest.TestQueueSlots.
type QueueSlots interface {
	// ClaimQueueSlot records that owner takes account's slot, if the slot
	// is free (prev == "") or still claimed by prev (prev != ""), in one
	// conditional write at time at; an error wrapping post.ErrConflict
	// otherwise.
	ClaimQueueSlot(ctx context.Context, account post.AccountID, slot time.Time, owner, prev post.ID, at time.Time) error
	// ReleaseQueueSlot frees account's slot if owner still claims it;
	// otherwise it does nothing.
	ReleaseQueueSlot(ctx context.Context, account post.AccountID, slot time.Time, owner post.ID) error
	// QueueSlotClaims lists account's claims of slots at or after from,
	// earliest first, at most limit (≤ 0: every one).
	QueueSlotClaims(ctx context.Context, account post.AccountID, from time.Time, limit int) ([]SlotClaim, error)
}

const (
	// MaxSlotRules is the most posting slot rules an account has.
	MaxSlotRules = 50
	// QueueHorizon is how far ahead a queued post may be placed: a queue
	// longer than its slots for this long is full.
	QueueHorizon = 2 * 366 * 24 * time.Hour
	// ClaimGrace is how long a claim whose post cannot be read is
	// respected when the queue is arranged: the post may still be being
	// stored.
	ClaimGrace = 10 * time.Minute
	// maxClaimTries bounds the claims one placement tries before it gives
	// up (each lost race moves to the next free slot).
	maxClaimTries = 10000
)

// slotAnchor anchors rate() slot rules: rate(4 hours) is every four hours
// from midnight, 1 January 2000, in the account's zone.
func slotAnchor(loc *time.Location) time.Time { return time.Date(2000, 1, 1, 0, 0, 0, 0, loc) }

// ValidateSlots checks an account's time zone and posting slot rules: a
// zone post.ValidTimeZone accepts, and cron() or rate() expressions of
// the scheduler's dialect (an at() is one time, not a slot). A refusal
// joins *post.FieldError on "time_zone" and "slots[i]".
func ValidateSlots(zone string, rules []string) error {
	var errs []error
	if err := post.ValidTimeZone(zone); err != nil {
		errs = append(errs, &post.FieldError{Field: "time_zone", Problem: err.Error(), Fix: "give an IANA zone name, e.g. Europe/Berlin, or none for UTC"})
		zone = ""
	}
	if len(rules) > MaxSlotRules {
		errs = append(errs, &post.FieldError{Field: "slots", Problem: fmt.Sprintf("has %d rules, more than %d", len(rules), MaxSlotRules), Fix: "merge rules (cron takes lists: cron(0 9,13,17 ? * MON-FRI *))"})
	}
	seen := map[string]bool{}
	for i, r := range rules {
		f := fmt.Sprintf("slots[%d]", i)
		r = strings.TrimSpace(r)
		switch {
		case r == "":
			errs = append(errs, &post.FieldError{Field: f, Problem: "is empty", Fix: "write a rule such as cron(0 9 ? * MON-FRI *)"})
			continue
		case strings.HasPrefix(r, "at("):
			errs = append(errs, &post.FieldError{Field: f, Problem: fmt.Sprintf("%s is one time, not a repeating slot", r), Fix: "use cron(...) or rate(...); schedule a post at that time instead"})
			continue
		case seen[r]:
			errs = append(errs, &post.FieldError{Field: f, Problem: fmt.Sprintf("%s is given twice", r), Fix: "remove one"})
			continue
		}
		seen[r] = true
		if _, err := schedexpr.Parse(r, zone, slotAnchor(time.UTC)); err != nil {
			errs = append(errs, &post.FieldError{Field: f, Problem: err.Error(), Fix: "write cron(minutes hours day-of-month month day-of-week year) or rate(value unit), e.g. cron(30 12 ? * MON-FRI *)"})
		}
	}
	return errors.Join(errs...)
}

// SlotTimes are the account's posting slots after after (strictly), in
// order, at most n, none past until: the union of its rules, read in its
// zone (DST as the scheduler does: a slot in the spring-forward gap does
// not exist, one in the fall-back overlap is taken once, at its first
// occurrence).
func SlotTimes(a post.Account, after, until time.Time, n int) ([]time.Time, error) {
	loc := a.Location()
	scheds := make([]schedexpr.Schedule, 0, len(a.Slots))
	next := make([]time.Time, 0, len(a.Slots))
	for _, r := range a.Slots {
		s, err := schedexpr.Parse(strings.TrimSpace(r), a.TimeZone, slotAnchor(loc))
		if err != nil {
			return nil, fmt.Errorf("account %s: slot rule %q: %w", a.ID, r, err)
		}
		t, ok := s.Next(after)
		if !ok {
			continue
		}
		scheds, next = append(scheds, s), append(next, t)
	}
	var out []time.Time
	for len(out) < n && len(next) > 0 {
		i := 0
		for j := range next {
			if next[j].Before(next[i]) {
				i = j
			}
		}
		t := next[i]
		if t.After(until) {
			break
		}
		if len(out) == 0 || !out[len(out)-1].Equal(t) {
			out = append(out, t)
		}
		if nt, ok := scheds[i].Next(t); ok {
			next[i] = nt
		} else {
			scheds, next = slices.Delete(scheds, i, i+1), slices.Delete(next, i, i+1)
		}
	}
	return out, nil
}

// ErrQueueFull is returned (wrapped) when an account has no free posting
// slot within QueueHorizon.
var ErrQueueFull = errors.New("no free posting slot")

// placeQueued gives every queued target of p (Queued, no slot yet) its
// account's next free posting slot, claiming it for p. The claims are
// made before the post is stored; release frees them when it is not.
func (d *Desk) placeQueued(ctx context.Context, p *post.Post, accounts map[post.AccountID]post.Account) (release func(), err error) {
	var claimed []SlotClaim
	var accs []post.AccountID
	release = func() {
		// Without the caller's cancellation: a client gone must not leave
		// its claims behind.
		ctx := context.WithoutCancel(ctx)
		for i, c := range claimed {
			if err := d.Queue.ReleaseQueueSlot(ctx, accs[i], c.Slot, c.Post); err != nil {
				d.log().WarnContext(ctx, "queue slot not released", "account", string(accs[i]), "slot", c.Slot.Format(time.RFC3339), "err", err)
			}
		}
	}
	for i := range p.Targets {
		t := &p.Targets[i]
		if !t.Queued || !t.Slot.IsZero() {
			continue
		}
		if d.Queue == nil {
			release()
			return nil, errors.New("add to queue: posting slots are not kept here")
		}
		slot, err := d.claimNextSlot(ctx, accounts[t.Account], p.ID)
		if err != nil {
			release()
			return nil, err
		}
		t.Slot = slot
		claimed, accs = append(claimed, SlotClaim{Slot: slot, Post: p.ID}), append(accs, t.Account)
	}
	return release, nil
}

// claimNextSlot claims the account's first posting slot after now that no
// claim holds, for owner; a lost race moves on to the next free one.
func (d *Desk) claimNextSlot(ctx context.Context, a post.Account, owner post.ID) (time.Time, error) {
	now := d.now()
	until := now.Add(QueueHorizon)
	after := now
	for tries := 0; tries < maxClaimTries; {
		claims, err := d.Queue.QueueSlotClaims(ctx, a.ID, after, 0)
		if err != nil {
			return time.Time{}, fmt.Errorf("add to queue of %s: read the taken slots: %w", a.ID, err)
		}
		taken := make(map[time.Time]bool, len(claims))
		for _, c := range claims {
			taken[c.Slot] = true
		}
		slots, err := SlotTimes(a, after, until, len(claims)+64)
		if err != nil {
			return time.Time{}, err
		}
		if len(slots) == 0 {
			return time.Time{}, fmt.Errorf("add to queue of %s: %w until %s", a.ID, ErrQueueFull, until.Format(time.RFC3339))
		}
		lost := false
		for _, s := range slots {
			if taken[s] {
				continue
			}
			tries++
			err := d.Queue.ClaimQueueSlot(ctx, a.ID, s, owner, "", d.now())
			if err == nil {
				return s, nil
			}
			if !errors.Is(err, post.ErrConflict) {
				return time.Time{}, fmt.Errorf("add to queue of %s: claim %s: %w", a.ID, s.Format(time.RFC3339), err)
			}
			// Another post took it: read the claims again from here,
			// since the others may have taken the next ones too.
			after, lost = s, true
			break
		}
		if !lost {
			after = slots[len(slots)-1]
		}
	}
	return time.Time{}, fmt.Errorf("add to queue of %s: gave up after %d taken slots", a.ID, maxClaimTries)
}

// QueueEntry is one post in an account's queue.
type QueueEntry struct {
	Post   post.ID           `json:"post_id"`
	Slot   time.Time         `json:"slot"`
	Status post.TargetStatus `json:"status"`
	// Text is the start of the post's text on the account's platform.
	Text string `json:"text"`
}

// QueueView is an account's queue: its posts in slot order and its next
// free slots.
type QueueView struct {
	Account   post.Account `json:"account"`
	Entries   []QueueEntry `json:"entries"`
	FreeSlots []time.Time  `json:"free_slots"`
}

// queueState is what an arrangement reads: the queue's movable posts (in
// slot order), who holds each claimed slot, and the slots that are not
// free to move into.
type queueState struct {
	account post.Account
	entries []QueueEntry
	owner   map[time.Time]post.ID
	// fixed are slots held by a claim that stays (a post waiting for
	// approval, a claim younger than ClaimGrace whose post is not
	// readable yet).
	fixed map[time.Time]bool
}

// readQueue reads the account's claims from now and checks each against
// its post: a claim is live when the post's target on the account is
// queued, at that slot and not sent yet.
func (d *Desk) readQueue(ctx context.Context, id post.AccountID) (queueState, error) {
	if d.Queue == nil {
		return queueState{}, errors.New("posting slots are not kept here")
	}
	a, err := d.Accounts.GetAccount(ctx, id)
	if errors.Is(err, post.ErrNotFound) {
		return queueState{}, &post.FieldError{Field: "account", Problem: fmt.Sprintf("unknown account %q", id), Fix: "name one of the workspace's accounts"}
	}
	if err != nil {
		return queueState{}, fmt.Errorf("read account %s: %w", id, err)
	}
	now := d.now()
	claims, err := d.Queue.QueueSlotClaims(ctx, id, now, 0)
	if err != nil {
		return queueState{}, fmt.Errorf("read the queue of %s: %w", id, err)
	}
	st := queueState{account: a, owner: map[time.Time]post.ID{}, fixed: map[time.Time]bool{}}
	for _, c := range claims {
		st.owner[c.Slot] = c.Post
		p, err := d.Posts.GetPost(ctx, c.Post)
		switch {
		case errors.Is(err, post.ErrNotFound):
			if now.Sub(c.At) < ClaimGrace {
				st.fixed[c.Slot] = true
			}
			continue
		case err != nil:
			return queueState{}, fmt.Errorf("read the queue of %s: post %s: %w", id, c.Post, err)
		}
		t, ok := p.Target(id)
		if !ok || !t.Queued || !t.Slot.Equal(c.Slot) {
			continue // stale: the post moved or has no target here
		}
		switch t.Status {
		case post.Scheduled:
			st.entries = append(st.entries, QueueEntry{Post: p.ID, Slot: t.Slot, Status: t.Status, Text: excerpt(p.TextFor(a.Platform), 80)})
		case post.NeedsApproval:
			st.fixed[c.Slot] = true
			st.entries = append(st.entries, QueueEntry{Post: p.ID, Slot: t.Slot, Status: t.Status, Text: excerpt(p.TextFor(a.Platform), 80)})
		case post.Cancelled:
			// Its slot is free (a cancel that did not release the claim).
		default:
			// Triggered, sent or settled at that slot (a job queued ahead
			// of a near slot): the slot stays its own.
			st.fixed[c.Slot] = true
		}
	}
	return st, nil
}

// excerpt is the first n characters of s on one line.
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// ShowQueue is the account's queue: its queued posts from now in slot
// order and its next free slots (at most free).
func (d *Desk) ShowQueue(ctx context.Context, account post.AccountID, free int) (QueueView, error) {
	st, err := d.readQueue(ctx, account)
	if err != nil {
		return QueueView{}, fmt.Errorf("show queue: %w", err)
	}
	v := QueueView{Account: st.account, Entries: st.entries}
	if v.Entries == nil {
		v.Entries = []QueueEntry{}
	}
	now := d.now()
	slots, err := SlotTimes(st.account, now, now.Add(QueueHorizon), len(st.owner)+free)
	if err != nil {
		return QueueView{}, fmt.Errorf("show queue: %w", err)
	}
	v.FreeSlots = []time.Time{}
	for _, s := range slots {
		if _, held := st.owner[s]; !held && len(v.FreeSlots) < free {
			v.FreeSlots = append(v.FreeSlots, s)
		}
	}
	return v, nil
}

// QueueMove is one queued post an arrangement moved.
type QueueMove struct {
	Post post.ID   `json:"post_id"`
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	Done bool      `json:"done"`
	// Message says what happened when it could not move.
	Message string `json:"message,omitempty"`
}

// ReorderQueue puts the named posts first in the account's queue, in the
// order given, the others after them in their order, and moves every
// scheduled queued post to the first free slots in that order. A post
// not in the queue is refused on "posts". See ArrangeQueue.
func (d *Desk) ReorderQueue(ctx context.Context, account post.AccountID, first []post.ID) ([]QueueMove, error) {
	st, err := d.readQueue(ctx, account)
	if err != nil {
		return nil, fmt.Errorf("reorder queue: %w", err)
	}
	in := map[post.ID]bool{}
	for _, e := range st.movable() {
		in[e.Post] = true
	}
	var errs []error
	seen := map[post.ID]bool{}
	for i, id := range first {
		f := fmt.Sprintf("posts[%d]", i)
		switch {
		case seen[id]:
			errs = append(errs, &post.FieldError{Field: f, Problem: fmt.Sprintf("post %s is named twice", id), Fix: "name each post once"})
		case !in[id]:
			errs = append(errs, &post.FieldError{Field: f, Problem: fmt.Sprintf("post %s is not scheduled in %s's queue", id, account), Fix: "name posts `queue show` lists as scheduled"})
		}
		seen[id] = true
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("reorder queue: %w", errors.Join(errs...))
	}
	order := slices.Clone(first)
	for _, e := range st.movable() {
		if !seen[e.Post] {
			order = append(order, e.Post)
		}
	}
	return d.arrange(ctx, st, order)
}

// ShuffleQueue puts the account's scheduled queued posts in an order
// drawn from seed (the same queue and seed give the same order) and moves
// them to the first free slots in that order.
func (d *Desk) ShuffleQueue(ctx context.Context, account post.AccountID, seed uint64) ([]QueueMove, error) {
	st, err := d.readQueue(ctx, account)
	if err != nil {
		return nil, fmt.Errorf("shuffle queue: %w", err)
	}
	var order []post.ID
	for _, e := range st.movable() {
		order = append(order, e.Post)
	}
	r := rand.New(rand.NewPCG(seed, 0x6f6e6365706f7374)) // "oncepost"
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return d.arrange(ctx, st, order)
}

// ArrangeQueue moves the account's scheduled queued posts, in their
// order, to the first free slots of its current rules: what changing the
// account's slots or zone does to its queue.
func (d *Desk) ArrangeQueue(ctx context.Context, account post.AccountID) ([]QueueMove, error) {
	st, err := d.readQueue(ctx, account)
	if err != nil {
		return nil, fmt.Errorf("arrange queue: %w", err)
	}
	var order []post.ID
	for _, e := range st.movable() {
		order = append(order, e.Post)
	}
	return d.arrange(ctx, st, order)
}

// movable are the queue's scheduled entries (a post waiting for approval
// keeps its slot).
func (st queueState) movable() []QueueEntry {
	var out []QueueEntry
	for _, e := range st.entries {
		if e.Status == post.Scheduled {
			out = append(out, e)
		}
	}
	return out
}

// arrange moves the posts of order to the first len(order) free slots
// after now, in order. A slot is free unless fixed. Each move claims the
// new slot from whoever holds it (a conditional write on that holder), moves the
// target, then frees the old slot if the post still holds it; a lost race
// (a post added meanwhile took a slot) stops the arrangement with the
// moves done so far, every post still on one slot it holds.
func (d *Desk) arrange(ctx context.Context, st queueState, order []post.ID) ([]QueueMove, error) {
	moves, err := d.arrangeMoves(ctx, st, order)
	if err != nil || slices.ContainsFunc(moves, func(m QueueMove) bool { return !m.Done }) {
		// Stopped part-way: a post whose slot was taken over by one that
		// moved before it may not have moved on. Put every such post on
		// a free slot of its own.
		moves = append(moves, d.repairDisplaced(ctx, st.account, order)...)
	}
	return moves, err
}

// repairDisplaced moves each post of ids that is scheduled in the
// account's queue but does not hold the claim of its own slot (another
// post took it over) to the account's next free slot.
func (d *Desk) repairDisplaced(ctx context.Context, a post.Account, ids []post.ID) []QueueMove {
	ctx = context.WithoutCancel(ctx)
	var out []QueueMove
	for _, id := range ids {
		p, err := d.Posts.GetPost(ctx, id)
		if err != nil {
			continue
		}
		t, ok := p.Target(a.ID)
		if !ok || !t.Queued || t.Status != post.Scheduled {
			continue
		}
		claims, err := d.Queue.QueueSlotClaims(ctx, a.ID, t.Slot, 1)
		if err != nil {
			d.log().WarnContext(ctx, "queue repair: read the claims", "account", string(a.ID), "err", err)
			continue
		}
		if len(claims) > 0 && claims[0].Slot.Equal(t.Slot) && claims[0].Post == id {
			continue // it holds its slot
		}
		m := QueueMove{Post: id, From: t.Slot}
		slot, err := d.claimNextSlot(ctx, a, id)
		if err == nil {
			m.To = slot
			if err = d.Scheduler.Reschedule(ctx, id, a.ID, slot); err != nil {
				if rerr := d.Queue.ReleaseQueueSlot(ctx, a.ID, slot, id); rerr != nil {
					d.log().WarnContext(ctx, "queue slot not released", "account", string(a.ID), "slot", slot.Format(time.RFC3339), "err", rerr)
				}
			}
		}
		if err != nil {
			m.Message = "shares its slot with another post and could not move: " + err.Error()
			d.log().ErrorContext(ctx, "queue repair: a post shares its slot", "account", string(a.ID), "post", string(id), "slot", t.Slot.Format(time.RFC3339), "err", err)
		} else {
			m.Done = true
		}
		out = append(out, m)
	}
	return out
}

// arrangeMoves makes arrange's moves, stopping at the first that fails.
func (d *Desk) arrangeMoves(ctx context.Context, st queueState, order []post.ID) ([]QueueMove, error) {
	now := d.now()
	want := make([]time.Time, 0, len(order))
	after := now
	for len(want) < len(order) {
		slots, err := SlotTimes(st.account, after, now.Add(QueueHorizon), len(order)-len(want)+len(st.fixed)+1)
		if err != nil {
			return nil, err
		}
		if len(slots) == 0 {
			return nil, fmt.Errorf("arrange queue of %s: %d posts: %w until %s", st.account.ID, len(order), ErrQueueFull, now.Add(QueueHorizon).Format(time.RFC3339))
		}
		for _, s := range slots {
			if !st.fixed[s] && len(want) < len(order) {
				want = append(want, s)
			}
		}
		after = slots[len(slots)-1]
	}
	slotOf := map[post.ID]time.Time{}
	for _, e := range st.entries {
		slotOf[e.Post] = e.Slot
	}
	var moves []QueueMove
	for i, id := range order {
		from, to := slotOf[id], want[i]
		if from.Equal(to) {
			continue
		}
		m := QueueMove{Post: id, From: from, To: to}
		if err := d.Queue.ClaimQueueSlot(ctx, st.account.ID, to, id, st.owner[to], d.now()); err != nil {
			if errors.Is(err, post.ErrConflict) {
				return moves, fmt.Errorf("arrange queue of %s: slot %s was taken meanwhile; show the queue and try again: %w", st.account.ID, to.Format(time.RFC3339), err)
			}
			return moves, fmt.Errorf("arrange queue of %s: claim %s for %s: %w", st.account.ID, to.Format(time.RFC3339), id, err)
		}
		st.owner[to] = id
		if err := d.Scheduler.Reschedule(ctx, id, st.account.ID, to); err != nil {
			// The target did not move: give the slot back to nobody (its
			// old holder moved or moves too, or was stale).
			if rerr := d.Queue.ReleaseQueueSlot(ctx, st.account.ID, to, id); rerr != nil {
				d.log().WarnContext(ctx, "queue slot not released", "account", string(st.account.ID), "slot", to.Format(time.RFC3339), "err", rerr)
			}
			delete(st.owner, to)
			if errors.Is(err, post.ErrConflict) {
				m.Message = err.Error()
				moves = append(moves, m)
				continue
			}
			return moves, fmt.Errorf("arrange queue of %s: move %s: %w", st.account.ID, id, err)
		}
		if st.owner[from] == id {
			if err := d.Queue.ReleaseQueueSlot(ctx, st.account.ID, from, id); err != nil {
				return moves, fmt.Errorf("arrange queue of %s: free %s: %w", st.account.ID, from.Format(time.RFC3339), err)
			}
			delete(st.owner, from)
		}
		m.Done = true
		moves = append(moves, m)
	}
	return moves, nil
}

// releaseQueued frees the posting slot a queued target held, when the
// target leaves it (cancelled, moved to another time by hand).
func (d *Desk) releaseQueued(ctx context.Context, id post.ID, t post.Target) {
	if !t.Queued || d.Queue == nil {
		return
	}
	if err := d.Queue.ReleaseQueueSlot(ctx, t.Account, t.Slot, id); err != nil {
		d.log().WarnContext(ctx, "queue slot not released", "account", string(t.Account), "slot", t.Slot.Format(time.RFC3339), "err", err)
	}
}

// AccountSettings are how an account is scheduled: its time zone, its
// posting slots and whether its posts need approval.
type AccountSettings struct {
	TimeZone        string   `json:"time_zone"`
	Slots           []string `json:"slots"`
	RequireApproval bool     `json:"require_approval"`
}

// SettingsOf are an account's settings.
func SettingsOf(a post.Account) AccountSettings {
	return AccountSettings{TimeZone: a.TimeZone, Slots: slices.Clone(a.Slots), RequireApproval: a.RequireApproval}
}

// AccountSettingsWriter is an Accounts that writes an account's settings
// alone, in one conditional write that leaves its status (a concurrent
// reconnect_needed), its credential and the settings the change does not
// name as they are: two operators changing different settings at once
// both keep theirs.
type AccountSettingsWriter interface {
	// SetAccountSettings writes the settings c names (nil fields stay);
	// an error wrapping post.ErrNotFound if there is no such account.
	SetAccountSettings(ctx context.Context, id post.AccountID, c AccountChange) error
}

// AccountChange is a change to an account's settings: nil fields stay.
type AccountChange struct {
	TimeZone        *string
	Slots           *[]string
	RequireApproval *bool
}

// ChangeAccount changes an account's settings (ValidateSlots refuses a
// bad zone or rule, naming the field) and, when its zone or slots changed,
// moves its queued posts onto the new slots in their order (ArrangeQueue).
// It returns the account as stored and the moves.
func (d *Desk) ChangeAccount(ctx context.Context, id post.AccountID, c AccountChange) (post.Account, []QueueMove, error) {
	a, err := d.Accounts.GetAccount(ctx, id)
	if errors.Is(err, post.ErrNotFound) {
		return post.Account{}, nil, fmt.Errorf("change account: %w", &post.FieldError{Field: "account", Problem: fmt.Sprintf("unknown account %q", id), Fix: "name one of the workspace's accounts"})
	}
	if err != nil {
		return post.Account{}, nil, fmt.Errorf("change account %s: %w", id, err)
	}
	s := SettingsOf(a)
	if c.TimeZone != nil {
		s.TimeZone = *c.TimeZone
	}
	if c.Slots != nil {
		s.Slots = nil
		for _, r := range *c.Slots {
			s.Slots = append(s.Slots, strings.TrimSpace(r))
		}
	}
	if c.RequireApproval != nil {
		s.RequireApproval = *c.RequireApproval
	}
	if err := ValidateSlots(s.TimeZone, s.Slots); err != nil {
		return post.Account{}, nil, fmt.Errorf("change account %s: %w", id, err)
	}
	moved := s.TimeZone != a.TimeZone || !slices.Equal(s.Slots, a.Slots)
	if w, ok := d.Accounts.(AccountSettingsWriter); ok {
		named := AccountChange{RequireApproval: c.RequireApproval}
		if c.TimeZone != nil {
			named.TimeZone = &s.TimeZone
		}
		if c.Slots != nil {
			named.Slots = &s.Slots
		}
		err = w.SetAccountSettings(ctx, id, named)
	} else {
		a.TimeZone, a.Slots, a.RequireApproval = s.TimeZone, s.Slots, s.RequireApproval
		err = d.Accounts.PutAccount(ctx, a)
	}
	if err != nil {
		return post.Account{}, nil, fmt.Errorf("change account %s: %w", id, err)
	}
	a.TimeZone, a.Slots, a.RequireApproval = s.TimeZone, s.Slots, s.RequireApproval
	if !moved || d.Queue == nil || len(a.Slots) == 0 {
		// Without slots the queued posts have nowhere to go: they keep
		// theirs.
		return a, nil, nil
	}
	moves, err := d.ArrangeQueue(ctx, id)
	if err != nil {
		return a, moves, fmt.Errorf("change account %s: the settings are stored; its queue: %w", id, err)
	}
	return a, moves, nil
}

// QueueSeed is the shuffle seed a queue gets when none is given: derived
// from the account and its entries (FNV-1a), so the same queue shuffles
// the same way.
func QueueSeed(v QueueView) uint64 {
	h := fnv.New64a()
	fmt.Fprint(h, v.Account.ID)
	for _, e := range v.Entries {
		fmt.Fprint(h, "\x00", e.Post, "@", e.Slot.UnixNano())
	}
	return h.Sum64()
}
