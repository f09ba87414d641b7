package publishing_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// slotStore is the env's store with what the trigger uses on AWS: a slot
// listed a page at a time (SlotLister: positions are "post\x00account")
// and slot firings recorded (SlotFirings), in memory, with the semantics
// dynamostore implements (its own tests check those).
type slotStore struct {
	*sqlitestore.Store
	mu      sync.Mutex
	firings map[time.Time]*slotRecord
	// claims and records count the writes a firing makes.
	claims, records int
	listed          atomic.Int32
}

type slotRecord struct {
	publishing.SlotFiring
	owner string
	until time.Time
}

func (s *slotStore) DueAt(ctx context.Context, slot time.Time, after string, limit int) (publishing.SlotPage, error) {
	s.listed.Add(1)
	due, err := s.Due(ctx, slot, 0)
	if err != nil {
		return publishing.SlotPage{}, err
	}
	pos := func(r publishing.TargetRef) string { return string(r.Post) + "\x00" + string(r.Account) }
	var exact []publishing.TargetRef
	for _, r := range due {
		if r.Slot.Equal(slot) && pos(r) > after {
			exact = append(exact, r)
		}
	}
	slices.SortFunc(exact, func(a, b publishing.TargetRef) int { return cmp.Compare(pos(a), pos(b)) })
	page := publishing.SlotPage{Targets: exact}
	if limit > 0 && len(exact) >= limit {
		page.Targets = exact[:limit]
		page.Next = pos(exact[limit-1])
	}
	return page, nil
}

func (s *slotStore) ClaimSlot(_ context.Context, slot time.Time, owner string, now, until time.Time, plan publishing.SlotFiring) (publishing.SlotFiring, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claims++
	r := s.firings[slot]
	switch {
	case r == nil:
		s.firings[slot] = &slotRecord{SlotFiring: plan, owner: owner, until: until}
		return publishing.SlotFiring{}, plan != (publishing.SlotFiring{}), nil
	case r.Done:
		return r.SlotFiring, false, nil
	case r.owner != "" && r.owner != owner && now.Before(r.until):
		return r.SlotFiring, false, publishing.ErrSlotBusy
	}
	r.owner, r.until = owner, until
	return r.SlotFiring, false, nil
}

func (s *slotStore) RecordSlot(_ context.Context, slot time.Time, owner string, f publishing.SlotFiring, release bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.firings[slot]
	if r == nil || r.owner != owner {
		return post.ErrConflict
	}
	s.records++
	r.SlotFiring = f
	if f.Done || release {
		r.owner, r.until = "", time.Time{}
	}
	return nil
}

// failingBatches fails, whole, a batch send holding a job whose post is
// in fail (SQS answering 500 to the request).
type failingBatches struct {
	publishing.Queue
	mu   sync.Mutex
	fail map[post.ID]bool
}

func (q *failingBatches) SendBatch(ctx context.Context, msgs []publishing.Outgoing) ([]string, error) {
	ids := make([]string, len(msgs))
	for _, m := range msgs {
		j, err := publishing.DecodeJob(m.Body)
		if err != nil {
			return ids, err
		}
		q.mu.Lock()
		fail := q.fail[j.Post]
		q.mu.Unlock()
		if fail {
			return ids, errors.New("SQS answered 500 to SendMessageBatch")
		}
	}
	for i, m := range msgs {
		var err error
		if ids[i], err = q.Send(ctx, m.Body, m.Delay); err != nil {
			return ids, err
		}
	}
	return ids, nil
}

type recordingContinuer struct{ slots []time.Time }

func (c *recordingContinuer) ContinueSlot(_ context.Context, slot time.Time) error {
	c.slots = append(c.slots, slot)
	return nil
}

// slotWith stores n posts due at slot, named p00, p01 …
func (e *env) slotWith(n int, slot time.Time) {
	e.t.Helper()
	for i := range n {
		e.scheduleAt(string(rune('a'+i/10))+string(rune('0'+i%10)), "One of the top of the hour.", slot)
	}
}

// jobsByPost counts the queued jobs of each post.
func (e *env) jobsByPost() map[post.ID]int {
	e.t.Helper()
	out := map[post.ID]int{}
	for _, j := range e.queued() {
		out[j.Post]++
	}
	return out
}

// A slot's firing is retried (Lambda retries a failed or timed-out
// asynchronous invocation, and may deliver one twice): the second firing
// must not send again the jobs the first one sent. It finds the slot
// recorded done and sends nothing.
func TestRetriedSlotFiringSendsNothingAgain(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	ctx := context.Background()
	slot := e.clock.Now().Truncate(time.Second) // due now: the jobs are visible at once
	e.slotWith(25, slot)
	st := &slotStore{Store: e.store, firings: map[time.Time]*slotRecord{}}
	tr := &publishing.Trigger{Posts: st, Queue: &batchingQueue{Queue: e.queue}, Owner: "first", PageSize: 10, Now: e.clock.Now}
	rep, err := tr.FireSlot(ctx, slot)
	if err != nil || rep.Sent != 25 {
		t.Fatalf("first firing = %+v, %v; want 25 sent", rep, err)
	}
	tr.Owner = "retry"
	rep, err = tr.FireSlot(ctx, slot)
	if err != nil || rep.Sent != 0 || rep.Already != "done" {
		t.Errorf("retried firing = %+v, %v; want nothing sent, already done", rep, err)
	}
	jobs := e.jobsByPost()
	dups := 0
	for _, n := range jobs {
		dups += n - 1
	}
	if len(jobs) != 25 || dups != 0 {
		t.Errorf("queue holds jobs for %d posts with %d duplicates, want 25 and 0", len(jobs), dups)
	}
}

// A firing that failed part-way (SQS refused a batch) is retried: the
// retry resumes after the last page recorded, so the pages sent before the
// failure are not sent again.
func TestSlotFiringResumesAfterTheLastRecordedPage(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	ctx := context.Background()
	slot := e.clock.Now().Truncate(time.Second) // due now: the jobs are visible at once
	e.slotWith(25, slot)
	st := &slotStore{Store: e.store, firings: map[time.Time]*slotRecord{}}
	q := &failingBatches{Queue: e.queue, fail: map[post.ID]bool{"b5": true}} // the second page
	tr := &publishing.Trigger{Posts: st, Queue: q, Owner: "first", PageSize: 10, Now: e.clock.Now}
	if rep, err := tr.FireSlot(ctx, slot); err == nil || rep.Sent != 10 {
		t.Fatalf("firing with a refused batch = %+v, %v; want an error after the first page", rep, err)
	}
	q.fail = nil
	tr.Owner = "retry"
	rep, err := tr.FireSlot(ctx, slot)
	if err != nil || rep.Sent != 15 {
		t.Errorf("retried firing = %+v, %v; want the 15 jobs not sent yet", rep, err)
	}
	jobs := e.jobsByPost()
	for p, n := range jobs {
		if n != 1 {
			t.Errorf("post %s: %d jobs, want 1", p, n)
		}
	}
	if len(jobs) != 25 {
		t.Errorf("jobs for %d posts, want 25", len(jobs))
	}
}

// slowBatches takes delay for every batch send: a slow queue.
type slowBatches struct {
	publishing.Queue
	delay time.Duration
}

func (q slowBatches) SendBatch(ctx context.Context, msgs []publishing.Outgoing) ([]string, error) {
	time.Sleep(q.delay)
	return (&batchingQueue{Queue: q.Queue}).SendBatch(ctx, msgs)
}

// A slot that one invocation cannot fire in its time is handed over, with
// where it stopped, to a new invocation, which sends the rest; while a
// firing holds the slot, another one sends nothing; an invocation that
// cannot fit even one page fails (its retries are bounded) instead of
// handing over for ever.
func TestSlotFiringHandsOverWhatItHasNoTimeFor(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	slot := e.clock.Now().Truncate(time.Second)
	e.slotWith(25, slot)
	st := &slotStore{Store: e.store, firings: map[time.Time]*slotRecord{}}
	cont := &recordingContinuer{}
	// Each page of 10 takes 2.5 s to send: with 8 s left the first fits,
	// the second (twice the slowest page, plus the margin) does not.
	tr := &publishing.Trigger{Posts: st, Queue: slowBatches{Queue: e.queue, delay: 2500 * time.Millisecond}, Owner: "short", PageSize: 10, Continuer: cont, Now: e.clock.Now}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	rep, err := tr.FireSlot(ctx, slot)
	if err != nil || !rep.Continued || rep.Sent != 10 {
		t.Fatalf("firing with 8 s left = %+v, %v; want one page sent, the rest handed over", rep, err)
	}
	if len(cont.slots) != 1 || !cont.slots[0].Equal(slot) {
		t.Errorf("continuations %v, want the slot once", cont.slots)
	}
	// Another firing while a live one holds the slot sends nothing.
	if _, _, err := st.ClaimSlot(context.Background(), slot, "live", e.clock.Now(), e.clock.Now().Add(time.Minute), publishing.SlotFiring{}); err != nil {
		t.Fatal(err)
	}
	tr.Owner, tr.Queue = "other", &batchingQueue{Queue: e.queue}
	if rep, err := tr.FireSlot(context.Background(), slot); err != nil || rep.Already != "busy" || rep.Sent != 0 {
		t.Errorf("firing while another holds the slot = %+v, %v; want busy, nothing sent", rep, err)
	}
	if err := st.RecordSlot(context.Background(), slot, "live", st.firings[slot].SlotFiring, true); err != nil {
		t.Fatal(err)
	}
	// Too little time for even one page: no endless chain of handovers.
	short, cancelShort := context.WithTimeout(context.Background(), time.Second)
	defer cancelShort()
	tr.Owner = "too-short"
	if rep, err := tr.FireSlot(short, slot); err == nil || rep.Continued || rep.Sent != 0 {
		t.Errorf("firing with 1 s left = %+v, %v; want an error, no continuation", rep, err)
	}
	tr.Owner = "continuation"
	if rep, err := tr.FireSlot(context.Background(), slot); err != nil || rep.Sent != 15 {
		t.Errorf("the continuation = %+v, %v; want the 15 left", rep, err)
	}
	jobs := e.jobsByPost()
	for p, n := range jobs {
		if n != 1 {
			t.Errorf("post %s: %d jobs, want 1", p, n)
		}
	}
	if len(jobs) != 25 {
		t.Errorf("jobs for %d posts, want 25", len(jobs))
	}
}

// A slot that fits one page costs one write: its claim records it done
// before the jobs go. If the send fails the record is taken back and the
// retry sends the slot; once sent, a retried firing sends nothing.
func TestSmallSlotFiringIsOneWrite(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	ctx := context.Background()
	slot := e.clock.Now().Truncate(time.Second)
	e.slotWith(5, slot)
	st := &slotStore{Store: e.store, firings: map[time.Time]*slotRecord{}}
	q := &failingBatches{Queue: e.queue, fail: map[post.ID]bool{"a3": true}}
	tr := &publishing.Trigger{Posts: st, Queue: q, Owner: "first", Now: e.clock.Now}
	if rep, err := tr.FireSlot(ctx, slot); err == nil || rep.Sent != 0 {
		t.Fatalf("firing with its batch refused = %+v, %v; want an error, nothing sent", rep, err)
	}
	if r := st.firings[slot]; r == nil || r.Done || r.owner != "" {
		t.Fatalf("record after the refused send = %+v, want taken back: not done, not held", r)
	}
	q.fail = nil
	st.claims, st.records = 0, 0
	tr.Owner = "retry"
	if rep, err := tr.FireSlot(ctx, slot); err != nil || rep.Sent != 5 {
		t.Fatalf("retried firing = %+v, %v; want 5 sent", rep, err)
	}
	tr.Owner = "again"
	if rep, err := tr.FireSlot(ctx, slot); err != nil || rep.Already != "done" || rep.Sent != 0 {
		t.Errorf("a further firing = %+v, %v; want already done", rep, err)
	}
	// The retry claims and records (its record existed); the further
	// firing's claim finds the slot done.
	if st.records != 1 || st.claims != 2 {
		t.Errorf("%d claims and %d records for the retry and the further firing, want 2 and 1", st.claims, st.records)
	}
	fresh := slot.Add(time.Second)
	for i := range 3 {
		e.scheduleAt(fmt.Sprintf("fresh-%d", i), "Another slot.", fresh)
	}
	st.claims, st.records = 0, 0
	if rep, err := tr.FireSlot(ctx, fresh); err != nil || rep.Sent != 3 || st.claims+st.records != 1 {
		t.Errorf("a fresh small slot = %+v, %v with %d claims and %d records; want 3 sent in one write", rep, err, st.claims, st.records)
	}
}
