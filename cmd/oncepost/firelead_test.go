package main

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/clocktest"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// A target's schedule fires FireLead before its slot, so that a burst's
// firings are done when it is due: the job is queued then, visible to the
// publishers PrepareBefore before the slot to the nanosecond (not before,
// and not up to a second after as with whole-second delays), and the
// target is not written (it stays scheduled, so it can still be moved).
func TestScheduleFiresBeforeTheSlot(t *testing.T) {
	w := newWorkspace(t, sandbox.Options{}, 1)
	ctx := context.Background()
	clock := clocktest.New(time.Now().UTC().Truncate(time.Second))
	cfg := defaultConfig()
	cfg.DBPath, cfg.MediaDir, cfg.Logger, cfg.Metrics, cfg.Now = w.db, t.TempDir(), discardLogger(), discardWriter{}, clock.Now
	rt, err := openRuntime(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	// A slot between whole seconds: at() fires on whole seconds.
	slot := clock.Now().Add(10*time.Minute + 300*time.Millisecond)
	p := post.Post{ID: "p", Body: "Due at the top of the hour.", CreatedAt: clock.Now(),
		Targets: []post.Target{{Account: w.accounts[0], Slot: slot, Status: post.Scheduled, UpdatedAt: clock.Now()}}}
	if err := rt.createPost(ctx, p); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		Fired    int
		Depth    publishing.QueueDepth
		Received int
		Status   post.TargetStatus
	}
	look := func(at time.Time) seen {
		t.Helper()
		clock.Set(at)
		fired, err := rt.cron.RunDue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		d, err := rt.queue.Depth(ctx)
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := rt.queue.Receive(ctx, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rt.store.GetPost(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		return seen{Fired: fired, Depth: d, Received: len(msgs), Status: got.Targets[0].Status}
	}
	lead, prepare := cfg.FireLead, cfg.PrepareBefore
	if lead <= prepare+time.Second || prepare <= 0 {
		t.Fatalf("FireLead %s, PrepareBefore %s: want a lead over a second longer than a positive preparation", lead, prepare)
	}
	got := []seen{
		look(slot.Add(-lead - time.Second)),
		look(slot.Add(-lead)),
		look(slot.Add(-prepare - time.Nanosecond)),
		look(slot.Add(-prepare)),
	}
	want := []seen{
		{Status: post.Scheduled},
		{Fired: 1, Depth: publishing.QueueDepth{Delayed: 1}, Status: post.Scheduled},
		{Depth: publishing.QueueDepth{Delayed: 1}, Status: post.Scheduled},
		{Depth: publishing.QueueDepth{Visible: 1}, Received: 1, Status: post.Scheduled},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("before the lead, at it, a nanosecond before the preparation, at it (-want +got):\n%s", diff)
	}
}
