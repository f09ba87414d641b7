package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// TestGetTargetReadsOneTargetAsGetPostSeesIt checks GetTarget against
// GetPost: the same post and target, nothing of the post's other
// targets, and the same visibility (no post, a creation that crashed
// half-way, an account the post does not target).
func TestGetTargetReadsOneTargetAsGetPostSeesIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, PostsTable)
	clock := &fixedClock{t: t0}
	s := e.store(t, prefix, nil, Options{Now: clock.now})
	ctx := t.Context()
	mustDo(t, s.CreatePost(ctx, twoTargets("p-two", "Two accounts.", "acct-a", "acct-b")))
	crashed := &Store{db: &crashAfter{API: s.db}, now: clock.now, tables: s.tables}
	crashed.db.(*crashAfter).n.Store(2)
	if err := crashed.CreatePost(ctx, twoTargets("p-half", "Half made.", "acct-a", "acct-b")); !errors.Is(err, errCrashed) {
		t.Fatalf("CreatePost crashing = %v", err)
	}
	full, err := s.GetPost(ctx, "p-two")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		id      post.ID
		account post.AccountID
		want    post.Post
		wantErr error
	}{
		{"first target", "p-two", "acct-a", post.Post{ID: full.ID, Body: full.Body, CreatedAt: full.CreatedAt, Media: full.Media, Targets: full.Targets[:1]}, nil},
		{"second target", "p-two", "acct-b", post.Post{ID: full.ID, Body: full.Body, CreatedAt: full.CreatedAt, Media: full.Media, Targets: full.Targets[1:]}, nil},
		{"account not targeted", "p-two", "acct-z", post.Post{ID: full.ID, Body: full.Body, CreatedAt: full.CreatedAt, Media: full.Media}, nil},
		{"no post", "p-none", "acct-a", post.Post{}, post.ErrNotFound},
		{"creation crashed", "p-half", "acct-a", post.Post{}, post.ErrNotFound},
	}
	for _, tt := range tests {
		got, err := s.GetTarget(ctx, tt.id, tt.account)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: GetTarget error = %v, want %v", tt.name, err, tt.wantErr)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: GetTarget (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestGetTargetSharesRequests: concurrent reads within the window share
// one BatchGetItem, and each gets its own target.
func TestGetTargetSharesRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, PostsTable)
	rec := &recorder{}
	s := e.store(t, prefix, rec, Options{ReadWindow: 200 * time.Millisecond})
	ctx := t.Context()
	const n = 30
	for i := range n {
		mustDo(t, s.CreatePost(ctx, twoTargets(post.ID(fmt.Sprintf("p%02d", i)), fmt.Sprintf("Post %d.", i), "acct-a", "acct-b")))
	}
	rec.take()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			acct := post.AccountID("acct-a")
			if i%2 == 1 {
				acct = "acct-b"
			}
			p, err := s.GetTarget(ctx, post.ID(fmt.Sprintf("p%02d", i)), acct)
			switch {
			case err != nil:
				errs[i] = err
			case p.Body != fmt.Sprintf("Post %d.", i) || len(p.Targets) != 1 || p.Targets[0].Account != acct:
				errs[i] = fmt.Errorf("read %d: got %+v", i, p)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if diff := cmp.Diff([]string{"BatchGetItem"}, ops(rec.take())); diff != "" {
		t.Errorf("requests for %d concurrent reads (-want +got):\n%s", n, diff)
	}
}

// TestDueAtListsOneSlot: the targets scheduled at exactly the slot, not
// those of an earlier slot still scheduled (Due would list them) nor a
// later one, nor one that moved on.
func TestDueAtListsOneSlot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, PostsTable)
	s := e.store(t, prefix, nil, Options{})
	ctx := t.Context()
	slot := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	at := func(id post.ID, when time.Time) {
		p := twoTargets(id, "Post "+string(id)+".", "acct-a")
		p.Targets[0].Slot = when
		mustDo(t, s.CreatePost(ctx, p))
	}
	at("earlier", slot.Add(-time.Minute))
	at("exact-1", slot)
	at("exact-2", slot)
	at("sub-second-later", slot.Add(time.Millisecond))
	at("published", slot)
	if _, err := s.UpdateTarget(ctx, "published", "acct-a", post.TargetUpdate{Status: post.Published, RemoteID: "1", At: slot}); err != nil {
		t.Fatal(err)
	}
	page, err := s.DueAt(ctx, slot, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if page.Next != "" {
		t.Errorf("DueAt without a limit: next %q, want none", page.Next)
	}
	var ids []post.ID
	for _, r := range page.Targets {
		ids = append(ids, r.Post)
		if !r.Slot.Equal(slot) {
			t.Errorf("%s listed with slot %s", r.Post, r.Slot)
		}
	}
	if diff := cmp.Diff([]post.ID{"exact-1", "exact-2"}, ids); diff != "" {
		t.Errorf("DueAt (-want +got):\n%s", diff)
	}
	if due, err := s.Due(ctx, slot, 0); err != nil || len(due) != 3 {
		t.Errorf("Due = %d targets, %v; want 3 (earlier slots too)", len(due), err)
	}
}

// cancelAfterFirstRead cancels the job's target right after the
// publisher's first GetTarget, as an operator's `post cancel` landing
// between the publisher's first read and its ledger write would.
type cancelAfterFirstRead struct {
	*Store
	reads int
}

func (c *cancelAfterFirstRead) GetTarget(ctx context.Context, id post.ID, account post.AccountID) (post.Post, error) {
	p, err := c.Store.GetTarget(ctx, id, account)
	c.reads++
	if err == nil && c.reads == 1 {
		if _, err := c.Store.UpdateTarget(ctx, id, account, post.TargetUpdate{Status: post.Cancelled, At: time.Now()}); err != nil {
			return p, err
		}
	}
	return p, err
}

// TestPublisherRereadsTheTargetAfterItsLedgerWrite: on DynamoDB the
// publisher reads its target through GetTarget, batched; the read after
// the ledger write must still be a fresh one, so a cancel that landed in
// between stops the send (G1: the post never reaches the platform).
func TestPublisherRereadsTheTargetAfterItsLedgerWrite(t *testing.T) {
	env := newBenchEnv(t)
	f := newOnceFixture(t, env)
	job := f.schedule(t, "cancelled-meanwhile")
	pub := f.publisher("worker", 5*time.Second, time.Second, time.Minute)
	wrapped := &cancelAfterFirstRead{Store: f.store}
	pub.Posts = wrapped
	out := publishJob(t, pub, job)
	if wrapped.reads != 2 {
		t.Errorf("%d target reads, want 2 (before and after the ledger write)", wrapped.reads)
	}
	if n := f.sb.Stats().CreateRequests; n != 0 {
		t.Errorf("%d creates reached the platform for a post cancelled before the send; outcome %+v", n, out)
	}
	if out.Reason != publishing.ReasonCancelled {
		t.Errorf("outcome %+v, want reason %s", out, publishing.ReasonCancelled)
	}
}

// TestDueAtPages: a slot of 23 targets (one post stale in the index: its
// creation never finished) listed 5 at a time, each page from where the
// last one stopped, lists every target once, in one order, and the last
// page says nothing follows.
func TestDueAtPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, PostsTable)
	s := e.store(t, prefix, nil, Options{})
	ctx := t.Context()
	slot := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	want := map[post.ID]bool{}
	for i := range 23 {
		id := post.ID(fmt.Sprintf("top-%02d", i))
		p := twoTargets(id, "At nine.", "acct-a")
		p.Targets[0].Slot = slot
		mustDo(t, s.CreatePost(ctx, p))
		want[id] = true
	}
	seen := map[post.ID]int{}
	after, pages := "", 0
	for {
		page, err := s.DueAt(ctx, slot, after, 5)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range page.Targets {
			seen[r.Post]++
		}
		if page.Next == "" {
			break
		}
		if page.Next <= after {
			t.Fatalf("page %d: next %q does not move on from %q", pages, page.Next, after)
		}
		after = page.Next
	}
	if len(seen) != len(want) {
		t.Errorf("listed %d posts, want %d", len(seen), len(want))
	}
	for id, n := range seen {
		if n != 1 || !want[id] {
			t.Errorf("%s listed %d times", id, n)
		}
	}
	if pages != 5 {
		t.Errorf("%d pages of 5 for 23 targets, want 5", pages)
	}
	if _, err := s.DueAt(ctx, slot, "2026-12-01T08:00:00.000000000Z#x", 5); err == nil {
		t.Error("DueAt from a position of another slot succeeded")
	}
}

// TestSlotFirings: a slot is claimed by one firing at a time; what it
// records is what the next claim gets back; a done slot is returned done
// to anyone; a claim that ran out is taken over; only the holder records.
func TestSlotFirings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, WorkspaceTable)
	s := e.store(t, prefix, nil, Options{})
	ctx := t.Context()
	slot := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	now := slot.Add(-time.Minute)
	f, planned, err := s.ClaimSlot(ctx, slot, "a", now, now.Add(30*time.Second), publishing.SlotFiring{})
	if err != nil || f != (publishing.SlotFiring{}) || planned {
		t.Fatalf("first claim = %+v, %v; want a fresh slot", f, err)
	}
	if _, _, err := s.ClaimSlot(ctx, slot, "b", now.Add(time.Second), now.Add(time.Minute), publishing.SlotFiring{Sent: 3, Done: true}); !errors.Is(err, publishing.ErrSlotBusy) {
		t.Errorf("a second claim while a holds it = %v, want ErrSlotBusy", err)
	}
	if err := s.RecordSlot(ctx, slot, "b", publishing.SlotFiring{Sent: 1}, false); !errors.Is(err, post.ErrConflict) {
		t.Errorf("a record by b, who holds nothing = %v, want post.ErrConflict", err)
	}
	mustDo(t, s.RecordSlot(ctx, slot, "a", publishing.SlotFiring{After: "p1", Sent: 10}, false))
	// a's claim runs out (it died): b takes over where a got.
	f, _, err = s.ClaimSlot(ctx, slot, "b", now.Add(31*time.Second), now.Add(time.Minute), publishing.SlotFiring{})
	if err != nil || f != (publishing.SlotFiring{After: "p1", Sent: 10}) {
		t.Errorf("claim after a's ran out = %+v, %v; want a's progress", f, err)
	}
	mustDo(t, s.RecordSlot(ctx, slot, "b", publishing.SlotFiring{After: "p2", Sent: 20}, true))
	f, _, err = s.ClaimSlot(ctx, slot, "c", now.Add(32*time.Second), now.Add(time.Minute), publishing.SlotFiring{})
	if err != nil || f.After != "p2" {
		t.Errorf("claim after b released = %+v, %v; want b's progress", f, err)
	}
	mustDo(t, s.RecordSlot(ctx, slot, "c", publishing.SlotFiring{Sent: 25, Done: true}, false))
	for _, who := range []string{"a", "d"} {
		f, _, err = s.ClaimSlot(ctx, slot, who, now.Add(33*time.Second), now.Add(time.Minute), publishing.SlotFiring{})
		if err != nil || !f.Done || f.Sent != 25 {
			t.Errorf("claim of a done slot by %s = %+v, %v; want done, 25 sent", who, f, err)
		}
	}
	if err := s.RecordSlot(ctx, slot, "d", publishing.SlotFiring{Sent: 99}, false); !errors.Is(err, post.ErrConflict) {
		t.Errorf("a record on a done slot = %v, want post.ErrConflict", err)
	}
}

// TestSlotFiringPlanned: a slot never fired takes its plan with the claim
// (one write); the plan is written into a new record only, and the holder
// can take it back.
func TestSlotFiringPlanned(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, WorkspaceTable)
	s := e.store(t, prefix, nil, Options{})
	ctx := t.Context()
	slot := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := slot.Add(-time.Minute)
	plan := publishing.SlotFiring{Sent: 4, Done: true}
	prev, planned, err := s.ClaimSlot(ctx, slot, "a", now, now.Add(time.Minute), plan)
	if err != nil || !planned || prev != (publishing.SlotFiring{}) {
		t.Fatalf("planned claim of a new slot = %+v, %v, %v; want planned", prev, planned, err)
	}
	if f, planned, err := s.ClaimSlot(ctx, slot, "b", now, now.Add(time.Minute), plan); err != nil || planned || !f.Done || f.Sent != 4 {
		t.Errorf("a second planned claim = %+v, %v, %v; want the first's plan, done, not planned again", f, planned, err)
	}
	// The send failed: a takes the record back.
	mustDo(t, s.RecordSlot(ctx, slot, "a", publishing.SlotFiring{Sent: 1}, true))
	f, planned, err := s.ClaimSlot(ctx, slot, "b", now, now.Add(time.Minute), plan)
	if err != nil || planned || f.Done || f.Sent != 1 {
		t.Errorf("claim after the record was taken back = %+v, %v, %v; want claimed, not done, not planned", f, planned, err)
	}
}
