package publishingtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// ApprovalStore is a post store with the store side of approval
// (publishing.Approvals): both stores are.
type ApprovalStore interface {
	publishing.Posts
	publishing.Approvals
}

// ApprovalRacers is how many approvals of one post TestApprovals runs at
// once.
const ApprovalRacers = 20

// TestApprovals checks the store side of approval: the workspace's policy
// is kept; MoveApproval moves a target only from needs_approval at the
// slot read, in one conditional write, so that of ApprovalRacers
// concurrent moves exactly one is applied; a target moved to scheduled is
// due at its (new) slot and no longer awaits approval; AwaitingApproval
// lists the waiting targets by slot. And, through publishing.Desk on the
// store with a scheduler that counts: ApprovalRacers concurrent approvals
// of one post make exactly one schedule, and every other approval answers
// "already approved", done, without an error. newStore must return an
// empty store.
func TestApprovals(t *testing.T, newStore func(t *testing.T) ApprovalStore) {
	t.Helper()
	runChecks(t, approvalChecks(), newStore)
}

func approvalChecks() []check[ApprovalStore] {
	return []check[ApprovalStore]{
		{"Policy/zero_when_none_stored", approvalPolicyZero},
		{"Policy/round_trip", approvalPolicyRoundTrip},
		{"MoveApproval/approve_at_its_slot", approvalMoveKeepsSlot},
		{"MoveApproval/approve_at_a_new_slot", approvalMoveNewSlot},
		{"MoveApproval/move_and_keep_waiting", approvalMoveWaiting},
		{"MoveApproval/refused_unless_needs_approval", approvalMoveRefused},
		{"MoveApproval/refused_when_moved_since_read", approvalMoveStaleRead},
		{"MoveApproval/missing_post_or_target", approvalMoveMissing},
		{"MoveApproval/concurrent_exactly_one", approvalMoveRace},
		{"AwaitingApproval/by_slot_before_bound", approvalAwaiting},
		{"Desk/concurrent_approvals_one_schedule", approvalDeskRace},
	}
}

func approvalPolicyZero(t testing.TB, s ApprovalStore) {
	p, err := s.ApprovalPolicy(t.Context())
	if err != nil {
		t.Fatalf("ApprovalPolicy() = %v, want nil", err)
	}
	if p != (publishing.ApprovalPolicy{}) {
		t.Errorf("ApprovalPolicy() of an empty store = %+v, want the zero policy", p)
	}
}

func approvalPolicyRoundTrip(t testing.TB, s ApprovalStore) {
	for _, want := range []publishing.ApprovalPolicy{
		{Required: true, NoSelfApproval: true},
		{Required: false, NoSelfApproval: true},
		{Required: true},
		{},
	} {
		if err := s.PutApprovalPolicy(t.Context(), want); err != nil {
			t.Fatalf("PutApprovalPolicy(%+v) = %v, want nil", want, err)
		}
		got, err := s.ApprovalPolicy(t.Context())
		if err != nil {
			t.Fatalf("ApprovalPolicy() = %v, want nil", err)
		}
		if got != want {
			t.Errorf("ApprovalPolicy() after PutApprovalPolicy(%+v) = %+v", want, got)
		}
	}
}

// waitingPost is a post with a target waiting for approval on acct-a and
// a scheduled one on acct-b, an hour later.
func waitingPost(id string, slot time.Time) post.Post {
	p := simplePost(id, slot, post.NeedsApproval, "acct-a", "acct-b")
	p.Targets[1].Status = post.Scheduled
	p.Author = "tok_author"
	return p
}

// wantDue checks whether the target is listed by Due at its slot.
func wantDue(t testing.TB, s publishing.Posts, ref publishing.TargetRef, due bool, what string) {
	t.Helper()
	refs, err := s.Due(t.Context(), ref.Slot, 1000)
	if err != nil {
		t.Fatalf("Due(%s) = %v", ref.Slot.Format(time.RFC3339Nano), err)
	}
	found := false
	for _, r := range refs {
		found = found || r.Post == ref.Post && r.Account == ref.Account && r.Slot.Equal(ref.Slot)
	}
	if found != due {
		t.Errorf("%s: Due(%s) lists %s/%s at that slot: %v, want %v (listed: %v)", what, ref.Slot.Format(time.RFC3339Nano), ref.Post, ref.Account, found, due, refs)
	}
}

// awaiting lists every target waiting for approval.
func awaiting(t testing.TB, s publishing.Approvals) []publishing.TargetRef {
	t.Helper()
	refs, err := s.AwaitingApproval(t.Context(), time.Time{}, 0)
	if err != nil {
		t.Fatalf("AwaitingApproval() = %v, want nil", err)
	}
	checkUTC(t, "AwaitingApproval", refTimes(refs))
	return refs
}

func refTimes(refs []publishing.TargetRef) map[string]time.Time {
	m := map[string]time.Time{}
	for i, r := range refs {
		m[fmt.Sprintf("[%d].Slot", i)] = r.Slot
	}
	return m
}

func approvalMoveKeepsSlot(t testing.TB, s ApprovalStore) {
	p := waitingPost("post-approve", base.Add(time.Hour))
	mustCreatePost(t, s, p)
	wantDue(t, s, publishing.TargetRef{Post: p.ID, Account: "acct-a", Slot: p.Targets[0].Slot}, false, "waiting for approval")
	at := base.Add(5)
	m := publishing.ApprovalMove{Read: p.Targets[0].Slot, Slot: p.Targets[0].Slot, Status: post.Scheduled, Reason: "approved by tok_b", At: at}
	got, err := s.MoveApproval(t.Context(), p.ID, "acct-a", m)
	if err != nil {
		t.Fatalf("MoveApproval(→ scheduled) = %v, want nil", err)
	}
	want := post.Target{Account: "acct-a", Slot: p.Targets[0].Slot, Status: post.Scheduled, Reason: "approved by tok_b", UpdatedAt: at}
	checkUTC(t, "MoveApproval", targetTimes(got))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MoveApproval returned (-want +got):\n%s", diff)
	}
	wantPost(t, s, withTarget(p, want), "after MoveApproval")
	wantDue(t, s, publishing.TargetRef{Post: p.ID, Account: "acct-a", Slot: want.Slot}, true, "approved")
	if refs := awaiting(t, s); len(refs) != 0 {
		t.Errorf("AwaitingApproval() after the approval = %v, want none", refs)
	}
}

func approvalMoveNewSlot(t testing.TB, s ApprovalStore) {
	p := waitingPost("post-approve-new", base.Add(-time.Minute))
	mustCreatePost(t, s, p)
	slot := base.Add(3*time.Hour + 11)
	at := base.Add(7)
	got, err := s.MoveApproval(t.Context(), p.ID, "acct-a", publishing.ApprovalMove{Read: p.Targets[0].Slot, Slot: slot.In(time.FixedZone("CET", 3600)),
		Status: post.Scheduled, Reason: "approved by tok_b", At: at})
	if err != nil {
		t.Fatalf("MoveApproval(→ scheduled at a new slot) = %v, want nil", err)
	}
	want := post.Target{Account: "acct-a", Slot: slot, Status: post.Scheduled, Reason: "approved by tok_b", UpdatedAt: at}
	checkUTC(t, "MoveApproval", targetTimes(got))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MoveApproval returned (-want +got):\n%s", diff)
	}
	wantPost(t, s, withTarget(p, want), "after MoveApproval")
	wantDue(t, s, publishing.TargetRef{Post: p.ID, Account: "acct-a", Slot: slot}, true, "approved at the new slot")
	// Not at the old one: Due up to the old slot lists nothing of it.
	refs, err := s.Due(t.Context(), p.Targets[0].Slot, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		if r.Post == p.ID && r.Account == "acct-a" {
			t.Errorf("Due(old slot) lists the target moved to a new slot: %v", r)
		}
	}
}

func approvalMoveWaiting(t testing.TB, s ApprovalStore) {
	p := waitingPost("post-move-waiting", base.Add(time.Hour))
	mustCreatePost(t, s, p)
	slot := base.Add(2*time.Hour + 3)
	got, err := s.MoveApproval(t.Context(), p.ID, "acct-a", publishing.ApprovalMove{Read: p.Targets[0].Slot, Slot: slot, Status: post.NeedsApproval, At: base.Add(9)})
	if err != nil {
		t.Fatalf("MoveApproval(→ needs_approval at a new slot) = %v, want nil", err)
	}
	want := post.Target{Account: "acct-a", Slot: slot, Status: post.NeedsApproval, UpdatedAt: base.Add(9)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MoveApproval returned (-want +got):\n%s", diff)
	}
	wantPost(t, s, withTarget(p, want), "after MoveApproval")
	wantDue(t, s, publishing.TargetRef{Post: p.ID, Account: "acct-a", Slot: slot}, false, "moved, still waiting")
	if diff := cmp.Diff([]publishing.TargetRef{{Post: p.ID, Account: "acct-a", Slot: slot}}, awaiting(t, s)); diff != "" {
		t.Errorf("AwaitingApproval() after the move (-want +got):\n%s", diff)
	}
}

func approvalMoveRefused(t testing.TB, s ApprovalStore) {
	for _, from := range postStatuses {
		if from == post.NeedsApproval {
			continue
		}
		p := simplePost("post-refused-"+string(from), base.Add(time.Hour), from, "acct-a")
		mustCreatePost(t, s, p)
		for _, to := range []post.TargetStatus{post.Scheduled, post.NeedsApproval} {
			_, err := s.MoveApproval(t.Context(), p.ID, "acct-a", publishing.ApprovalMove{Read: p.Targets[0].Slot, Slot: base.Add(4 * time.Hour), Status: to, At: base.Add(3)})
			if !errors.Is(err, post.ErrConflict) {
				t.Errorf("MoveApproval(%s → %s) = %v, want post.ErrConflict", from, to, err)
			}
		}
		wantPost(t, s, p, "after a refused MoveApproval from "+string(from))
	}
}

func approvalMoveStaleRead(t testing.TB, s ApprovalStore) {
	p := waitingPost("post-stale", base.Add(time.Hour))
	mustCreatePost(t, s, p)
	_, err := s.MoveApproval(t.Context(), p.ID, "acct-a", publishing.ApprovalMove{Read: p.Targets[0].Slot.Add(time.Nanosecond), Slot: p.Targets[0].Slot,
		Status: post.Scheduled, At: base.Add(3)})
	if !errors.Is(err, post.ErrConflict) {
		t.Errorf("MoveApproval(read another slot) = %v, want post.ErrConflict", err)
	}
	wantPost(t, s, p, "after a refused MoveApproval")
}

func approvalMoveMissing(t testing.TB, s ApprovalStore) {
	p := waitingPost("post-present", base.Add(time.Hour))
	mustCreatePost(t, s, p)
	m := publishing.ApprovalMove{Read: p.Targets[0].Slot, Slot: p.Targets[0].Slot, Status: post.Scheduled, At: base.Add(3)}
	if _, err := s.MoveApproval(t.Context(), "post-missing", "acct-a", m); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("MoveApproval(missing post) = %v, want post.ErrNotFound", err)
	}
	if _, err := s.MoveApproval(t.Context(), p.ID, "acct-z", m); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("MoveApproval(missing target) = %v, want post.ErrNotFound", err)
	}
	wantPost(t, s, p, "after MoveApproval of missing ones")
}

// ApprovalRacers moves of one target at once: exactly one is applied,
// and the target is where that one put it. First every mover keeps the
// slot (only the condition on needs_approval can stop the second one),
// then each moves it to another new slot.
func approvalMoveRace(t testing.TB, s ApprovalStore) {
	for _, newSlots := range []bool{false, true} {
		p := waitingPost(fmt.Sprintf("post-move-race-%v", newSlots), base.Add(time.Hour))
		mustCreatePost(t, s, p)
		moves := make([]publishing.ApprovalMove, ApprovalRacers)
		for i := range moves {
			moves[i] = publishing.ApprovalMove{Read: p.Targets[0].Slot, Slot: p.Targets[0].Slot, Status: post.Scheduled,
				Reason: fmt.Sprintf("approved by racer %d", i), At: base.Add(time.Duration(i))}
			if newSlots {
				moves[i].Slot = base.Add(2*time.Hour + time.Duration(i)*time.Second)
			}
		}
		errs := runTogether(ApprovalRacers, func(i int) error {
			_, err := s.MoveApproval(t.Context(), p.ID, "acct-a", moves[i])
			return err
		})
		winner := exactlyOneWinner(t, errs, func(err error) bool { return errors.Is(err, post.ErrConflict) })
		if winner < 0 {
			continue
		}
		m := moves[winner]
		wantPost(t, s, withTarget(p, post.Target{Account: "acct-a", Slot: m.Slot, Status: post.Scheduled, Reason: m.Reason, UpdatedAt: m.At}), "after the race")
	}
}

func approvalAwaiting(t testing.TB, s ApprovalStore) {
	// Waiting targets at base-2h (x), base-1h (y, z: ties by post id),
	// base+1h; other statuses at the same slots are never listed.
	mustCreatePost(t, s, simplePost("post-y", base.Add(-time.Hour), post.NeedsApproval, "acct-a"))
	mustCreatePost(t, s, simplePost("post-x", base.Add(-2*time.Hour), post.NeedsApproval, "acct-a", "acct-b"))
	mustCreatePost(t, s, simplePost("post-z", base.Add(-time.Hour), post.NeedsApproval, "acct-a"))
	mustCreatePost(t, s, simplePost("post-w", base.Add(time.Hour), post.NeedsApproval, "acct-a"))
	for _, st := range postStatuses {
		if st != post.NeedsApproval {
			mustCreatePost(t, s, simplePost("post-other-"+string(st), base.Add(-2*time.Hour), st, "acct-a", "acct-b"))
		}
	}
	all := []publishing.TargetRef{
		{Post: "post-x", Account: "acct-a", Slot: base.Add(-2 * time.Hour)},
		{Post: "post-x", Account: "acct-b", Slot: base.Add(-time.Hour)},
		{Post: "post-y", Account: "acct-a", Slot: base.Add(-time.Hour)},
		{Post: "post-z", Account: "acct-a", Slot: base.Add(-time.Hour)},
		{Post: "post-w", Account: "acct-a", Slot: base.Add(time.Hour)},
	}
	for _, tc := range []struct {
		before time.Time
		limit  int
		want   []publishing.TargetRef
	}{
		{time.Time{}, 0, all},
		{base, 0, all[:4]},
		{base.Add(-time.Hour), 0, all[:1]}, // before, not at
		{base.Add(-time.Hour + 1), 0, all[:4]},
		{base, 2, all[:2]},
		{time.Time{}, 10, all},
	} {
		got, err := s.AwaitingApproval(t.Context(), tc.before, tc.limit)
		if err != nil {
			t.Fatalf("AwaitingApproval(%s, %d) = %v, want nil", tc.before.Format(time.RFC3339Nano), tc.limit, err)
		}
		checkUTC(t, "AwaitingApproval", refTimes(got))
		if diff := cmp.Diff(tc.want, got, postCmp); diff != "" {
			t.Errorf("AwaitingApproval(%s, %d) (-want +got):\n%s", tc.before.Format(time.RFC3339Nano), tc.limit, diff)
		}
	}
}

// CountingScheduler is a publishing.PostScheduler and
// publishing.ApprovalScheduler that writes posts to a store and counts
// the schedules it is asked for: what the approval checks count. It makes
// no schedule itself.
type CountingScheduler struct {
	Posts publishing.Posts
	mu    sync.Mutex
	// approved counts Approved calls by target.
	approved map[publishing.TargetRef]int
	total    atomic.Int64
}

var (
	_ publishing.PostScheduler     = (*CountingScheduler)(nil)
	_ publishing.ApprovalScheduler = (*CountingScheduler)(nil)
)

// CreatePost stores the post.
func (c *CountingScheduler) CreatePost(ctx context.Context, p post.Post, _ *publishing.IdempotencyRecord) error {
	return c.Posts.CreatePost(ctx, p)
}

// Reschedule is not used by the checks.
func (c *CountingScheduler) Reschedule(context.Context, post.ID, post.AccountID, time.Time) error {
	return errors.New("CountingScheduler does not reschedule")
}

// Cancelled does nothing.
func (c *CountingScheduler) Cancelled(context.Context, publishing.TargetRef) {}

// Approved counts a schedule made for ref.
func (c *CountingScheduler) Approved(_ context.Context, ref publishing.TargetRef) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.approved == nil {
		c.approved = map[publishing.TargetRef]int{}
	}
	c.approved[ref]++
	c.total.Add(1)
	return nil
}

// Schedules is how many schedules were asked for, of every target.
func (c *CountingScheduler) Schedules() int { return int(c.total.Load()) }

// ApprovalRace is what RaceApprovals saw.
type ApprovalRace struct {
	// Schedules is how many schedules the approvals asked for.
	Schedules int
	// Approved and Already count the approvals answered "approved" and
	// "already approved" (both done).
	Approved, Already int
	// Other are the other answers, and Errors the errors, by racer.
	Other  []string
	Errors []error
	// Target is the target after the race.
	Target post.Target
}

// RaceApprovals stores a post whose one target on acct-a waits for
// approval at slot (after now), then approves it ApprovalRacers times at
// once through a publishing.Desk on s with a CountingScheduler, each
// approval by another approver; with newAt, each approval also gives that
// new time. It reports what the approvals answered and how many
// schedules they made: exactly one, and every other approval "already
// approved" without an error, is the promise. A store tests its own
// broken variants with it.
func RaceApprovals(ctx context.Context, s ApprovalStore, id post.ID, now, slot time.Time, newAt string) (ApprovalRace, error) {
	p := post.Post{ID: id, Body: "Body of " + string(id), CreatedAt: now, Author: "tok_author",
		Targets: []post.Target{{Account: "acct-a", Slot: slot, Status: post.NeedsApproval, UpdatedAt: now}}}
	if err := s.CreatePost(ctx, p); err != nil {
		return ApprovalRace{}, fmt.Errorf("create post %s: %w", id, err)
	}
	sched := &CountingScheduler{Posts: s}
	// Every approver reads the post before any writes: the interleaving
	// that finds a missing condition, made certain rather than left to
	// the scheduler's luck.
	b := &readBarrier{ApprovalStore: s, n: ApprovalRacers, all: make(chan struct{})}
	desk := &publishing.Desk{Posts: b, Scheduler: sched, Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler)}
	outs := make([][]publishing.TargetOutcome, ApprovalRacers)
	errs := runTogether(ApprovalRacers, func(i int) (err error) {
		outs[i], err = desk.Approve(ctx, publishing.ApproveRequest{Post: id, At: newAt, By: fmt.Sprintf("tok_approver%d", i)})
		return err
	})
	var r ApprovalRace
	r.Schedules = sched.Schedules()
	for i, o := range outs {
		if errs[i] != nil {
			r.Errors = append(r.Errors, fmt.Errorf("approval %d: %w", i, errs[i]))
			continue
		}
		switch {
		case len(o) != 1 || !o[0].Done:
			r.Other = append(r.Other, fmt.Sprintf("approval %d: %+v", i, o))
		case strings.HasPrefix(o[0].Message, "approved"):
			r.Approved++
		case strings.HasPrefix(o[0].Message, "already approved"):
			r.Already++
		default:
			r.Other = append(r.Other, fmt.Sprintf("approval %d: %q", i, o[0].Message))
		}
	}
	got, err := s.GetPost(ctx, id)
	if err != nil {
		return r, fmt.Errorf("read post %s after the race: %w", id, err)
	}
	r.Target = got.Targets[0]
	if r.Target.Status == post.Scheduled {
		sched.mu.Lock()
		if n := sched.approved[publishing.TargetRef{Post: id, Account: "acct-a", Slot: r.Target.Slot}]; n != 1 {
			r.Other = append(r.Other, fmt.Sprintf("the target's slot %s was scheduled %d times", r.Target.Slot.Format(time.RFC3339Nano), n))
		}
		sched.mu.Unlock()
	}
	return r, nil
}

// readBarrier holds the first n GetPost calls until all n are made (or a
// second has passed, should fewer come), then lets every read through.
type readBarrier struct {
	ApprovalStore
	mu  sync.Mutex
	n   int
	all chan struct{}
}

func (b *readBarrier) GetPost(ctx context.Context, id post.ID) (post.Post, error) {
	p, err := b.ApprovalStore.GetPost(ctx, id)
	b.mu.Lock()
	wait := b.n > 0
	if wait {
		b.n--
		if b.n == 0 {
			close(b.all)
		}
	}
	b.mu.Unlock()
	if wait {
		select {
		case <-b.all:
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
	return p, err
}

// approvalDeskRace: ApprovalRacers approvals of one post at once through
// the Desk, at its slot, then (another post) with a new time: one
// schedule each; every approval done, all but one "already approved".
func approvalDeskRace(t testing.TB, s ApprovalStore) {
	for _, newAt := range []string{"", base.Add(2 * time.Hour).Format(time.RFC3339Nano)} {
		r, err := RaceApprovals(t.Context(), s, post.ID(fmt.Sprintf("post-desk-race-%d", len(newAt))), base, base.Add(time.Hour), newAt)
		if err != nil {
			t.Fatal(err)
		}
		what := "at the slot"
		if newAt != "" {
			what = "with a new time"
		}
		for _, err := range r.Errors {
			t.Errorf("%s: %v, want none (a lost race is an answer, not an error)", what, err)
		}
		for _, o := range r.Other {
			t.Errorf("%s: %s, want approved or already approved", what, o)
		}
		if r.Schedules != 1 {
			t.Errorf("%s: %d concurrent approvals made %d schedules, want 1", what, ApprovalRacers, r.Schedules)
		}
		if r.Approved != 1 || r.Already != ApprovalRacers-1 {
			t.Errorf("%s: %d approved and %d already approved, want 1 and %d", what, r.Approved, r.Already, ApprovalRacers-1)
		}
		if r.Target.Status != post.Scheduled {
			t.Errorf("%s: after the approvals the target is %s, want scheduled", what, r.Target.Status)
		}
	}
}
