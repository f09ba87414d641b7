package publishing_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// batchingQueue is the env's queue made a BatchSender: it records each
// SendBatch and sends its messages one by one.
type batchingQueue struct {
	publishing.Queue
	mu      sync.Mutex
	batches [][]publishing.Outgoing
}

func (q *batchingQueue) SendBatch(ctx context.Context, msgs []publishing.Outgoing) ([]string, error) {
	q.mu.Lock()
	q.batches = append(q.batches, msgs)
	q.mu.Unlock()
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		id, err := q.Send(ctx, m.Body, m.Delay)
		if err != nil {
			return ids, err
		}
		ids[i] = id
	}
	return ids, nil
}

// TestFireSlotEnqueuesEveryDueTargetOnce: a slot schedule firing a minute
// early sends the jobs of every target still scheduled at the slot in one
// batch, delayed until the slot, and leaves the targets scheduled (no
// write per post). Cancelled, earlier (the sweeper's) and later targets
// are not sent.
func TestFireSlotEnqueuesEveryDueTargetOnce(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	ctx := context.Background()
	now := e.clock.Now().Truncate(time.Second)
	slot := now.Add(40 * time.Second)
	a := e.scheduleAt("a", "First of the slot.", slot)
	b := e.scheduleAt("b", "Second of the slot.", slot)
	missed := e.scheduleAt("missed", "A slot whose schedule never fired.", now.Add(-3*time.Minute))
	e.scheduleAt("later", "Next slot.", slot.Add(time.Second))
	cancelled := e.scheduleAt("cancelled", "Never.", slot)
	if _, err := e.store.UpdateTarget(ctx, cancelled.Post, cancelled.Account, post.TargetUpdate{Status: post.Cancelled, At: now}); err != nil {
		t.Fatal(err)
	}
	q := &batchingQueue{Queue: e.queue}
	tr := &publishing.Trigger{Posts: e.store, Queue: q, Now: func() time.Time { return now }}
	rep, err := tr.FireSlot(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sent != 2 {
		t.Errorf("FireSlot sent %d, want 2", rep.Sent)
	}
	if len(q.batches) != 1 {
		t.Fatalf("%d SendBatch calls, want 1", len(q.batches))
	}
	delays := map[string]time.Duration{}
	for _, m := range q.batches[0] {
		j, err := publishing.DecodeJob(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		delays[string(j.Post)] = m.Delay
	}
	if diff := cmp.Diff(map[string]time.Duration{"a": 40 * time.Second, "b": 40 * time.Second}, delays); diff != "" {
		t.Errorf("jobs and delays (-want +got):\n%s", diff)
	}
	for _, j := range []publishing.Job{a, b} {
		if got := e.target(j).Status; got != post.Scheduled {
			t.Errorf("%s: status %s after FireSlot, want scheduled (no write per post)", j.Post, got)
		}
	}
	if got := e.target(missed).Status; got != post.Scheduled {
		t.Errorf("missed: status %s, want scheduled", got)
	}
	// Without batching, the same jobs go one by one; a slot in the past
	// has no delay.
	tr.Queue = e.queue
	if rep, err := tr.FireSlot(ctx, missed.Slot); err != nil || rep.Sent != 1 {
		t.Errorf("FireSlot of the missed slot on a plain queue = %+v, %v; want 1 sent", rep, err)
	}
	got := e.queued()
	want := []publishing.Job{missed}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(x, y publishing.Job) bool { return x.Post < y.Post })); diff != "" {
		t.Errorf("queued (-want +got):\n%s", diff)
	}
}

// TestEnqueueSendsWithoutMarking: a per-target schedule's firing sends the
// job of a target still scheduled at the slot, delayed until it, and
// writes nothing (the target stays scheduled: the trigger function may
// only read posts); a cancelled target, a stale slot and a missing post
// send nothing.
func TestEnqueueSendsWithoutMarking(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	ctx := context.Background()
	now := e.clock.Now().Truncate(time.Second)
	slot := now.Add(50 * time.Second)
	job := e.scheduleAt("one", "One target, one schedule.", slot)
	cancelled := e.scheduleAt("cancelled", "Never.", slot)
	if _, err := e.store.UpdateTarget(ctx, cancelled.Post, cancelled.Account, post.TargetUpdate{Status: post.Cancelled, At: now}); err != nil {
		t.Fatal(err)
	}
	q := &sendRecorder{Queue: e.queue}
	tr := &publishing.Trigger{Posts: e.store, Queue: q, Now: func() time.Time { return now }}
	for _, tt := range []struct {
		name string
		ref  publishing.TargetRef
		want bool
	}{
		{"scheduled", job, true},
		{"cancelled", cancelled, false},
		{"stale slot", publishing.TargetRef{Post: job.Post, Account: job.Account, Slot: slot.Add(-time.Hour)}, false},
		{"no such post", publishing.TargetRef{Post: "missing", Account: job.Account, Slot: slot}, false},
	} {
		if sent, err := tr.Enqueue(ctx, tt.ref); err != nil || sent != tt.want {
			t.Errorf("%s: Enqueue = %v, %v; want %v, nil", tt.name, sent, err, tt.want)
		}
	}
	if diff := cmp.Diff([]sentJob{{job, 50 * time.Second}}, q.sent); diff != "" {
		t.Errorf("jobs sent and their delays (-want +got):\n%s", diff)
	}
	if got := e.target(job).Status; got != post.Scheduled {
		t.Errorf("status %s after Enqueue, want scheduled (no write)", got)
	}
}

// sentJob is a job a Send carried, and its delay.
type sentJob struct {
	Job   publishing.Job
	Delay time.Duration
}

// sendRecorder is a queue that records every job Send carries.
type sendRecorder struct {
	publishing.Queue
	sent []sentJob
}

func (q *sendRecorder) Send(ctx context.Context, body []byte, delay time.Duration) (string, error) {
	j, err := publishing.DecodeJob(body)
	if err != nil {
		return "", err
	}
	q.sent = append(q.sent, sentJob{j, delay})
	return q.Queue.Send(ctx, body, delay)
}

// TestDelayUntil: whole seconds, rounded up, never before the slot,
// bounded by SQS's 900 s.
func TestDelayUntil(t *testing.T) {
	slot := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		now  time.Time
		want time.Duration
	}{
		{slot.Add(-60 * time.Second), 60 * time.Second},
		{slot.Add(-1500 * time.Millisecond), 2 * time.Second},
		{slot.Add(-time.Nanosecond), time.Second},
		{slot, 0},
		{slot.Add(time.Hour), 0},
		{slot.Add(-time.Hour), publishing.MaxDelay},
	}
	for _, tt := range tests {
		if got := publishing.DelayUntil(slot, tt.now); got != tt.want {
			t.Errorf("DelayUntil(slot, slot%+v) = %s, want %s", tt.now.Sub(slot), got, tt.want)
		}
	}
}

// TestTriggerDelayReplacesWholeSeconds: a Trigger given a queue delay of
// its own (a queue that delays to the nanosecond) sends every job with it,
// from a per-target firing and from a slot's, instead of DelayUntil's
// whole seconds.
func TestTriggerDelayReplacesWholeSeconds(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	ctx := context.Background()
	slot := e.clock.Now().Truncate(time.Second).Add(time.Minute)
	now := slot.Add(-1500 * time.Millisecond)
	one := e.scheduleAt("one", "Fired on its own.", slot)
	two := e.scheduleAt("two", "Fired with its slot.", slot.Add(time.Second))
	q := &sendRecorder{Queue: e.queue}
	exact := func(slot, now time.Time) time.Duration { return max(slot.Sub(now), 0) }
	tr := &publishing.Trigger{Posts: e.store, Queue: q, Now: func() time.Time { return now }, Delay: exact}
	if sent, err := tr.Enqueue(ctx, one); err != nil || !sent {
		t.Fatalf("Enqueue = %v, %v; want sent", sent, err)
	}
	if rep, err := tr.FireSlot(ctx, two.Slot); err != nil || rep.Sent != 1 {
		t.Fatalf("FireSlot = %+v, %v; want 1 sent", rep, err)
	}
	want := []sentJob{{one, 1500 * time.Millisecond}, {two, 2500 * time.Millisecond}}
	if diff := cmp.Diff(want, q.sent); diff != "" {
		t.Errorf("jobs sent and their delays (-want +got):\n%s", diff)
	}
}
