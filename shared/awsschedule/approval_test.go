package awsschedule_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/awsruntime/stacktest"
	"oncepost/shared/awsschedule"
	"oncepost/shared/ebschedule"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// countingApprovals counts the Approved calls that reach the scheduler.
type countingApprovals struct {
	*awsschedule.PostScheduler
	n atomic.Int32
}

func (c *countingApprovals) Approved(ctx context.Context, ref publishing.TargetRef) error {
	c.n.Add(1)
	return c.PostScheduler.Approved(ctx, ref)
}

// A target waiting for approval gets no slot schedule and no job, even
// when its slot is too near to schedule; its approval puts the slot's
// schedule (or queues its job when near), once for 20 concurrent
// approvals.
func TestWaitingTargetsAreScheduledWhenApproved(t *testing.T) {
	s := stacktest.New(t)
	ps := newScheduler(t, s)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	far := now.Add(time.Hour)
	p := post.Post{ID: "p-wait", Body: "b", CreatedAt: now, Targets: []post.Target{
		{Account: "a", Slot: far, Status: post.NeedsApproval, UpdatedAt: now},
		{Account: "b", Slot: now.Add(2 * time.Hour), Status: post.Scheduled, UpdatedAt: now},
	}}
	near := post.Post{ID: "p-wait-near", Body: "b", CreatedAt: now, Targets: []post.Target{{Account: "a", Slot: now, Status: post.NeedsApproval, UpdatedAt: now}}}
	for _, pp := range []post.Post{p, near} {
		if err := ps.CreatePost(ctx, pp, nil); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{ebschedule.SlotName(now.Add(2 * time.Hour))}, s.Schedules.Names()); diff != "" {
		t.Errorf("schedules after the creates (-want +got):\n%s", diff)
	}
	if got := queued(t, s); len(got) != 0 {
		t.Errorf("queued after the creates: %v, want nothing", got)
	}

	sched := &countingApprovals{PostScheduler: ps}
	desk := &publishing.Desk{Posts: s.Store, Scheduler: sched, Logger: slog.New(slog.DiscardHandler)}
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = desk.Approve(ctx, publishing.ApproveRequest{Post: "p-wait", Account: "a", By: fmt.Sprintf("arn:aws:iam::000000000000:user/u%d", i)})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("approval %d: %v", i, err)
		}
	}
	if n := sched.n.Load(); n != 1 {
		t.Errorf("20 concurrent approvals asked for %d schedules, want 1", n)
	}
	if diff := cmp.Diff([]string{ebschedule.SlotName(far), ebschedule.SlotName(now.Add(2 * time.Hour))}, s.Schedules.Names()); diff != "" {
		t.Errorf("schedules after the approval (-want +got):\n%s", diff)
	}
	// The near one, approved for a new time a few seconds ahead: too near
	// to schedule, so its job is queued now (delayed to its slot).
	soon := time.Now().UTC().Add(5 * time.Second).Truncate(time.Second)
	if _, err := desk.Approve(ctx, publishing.ApproveRequest{Post: "p-wait-near", At: soon.Format(time.RFC3339), By: "arn:aws:iam::000000000000:user/u"}); err != nil {
		t.Fatal(err)
	}
	if d, err := s.Queue.Depth(ctx); err != nil || d.Delayed+d.Visible != 1 {
		t.Errorf("queue after approving the near one: %+v, %v; want its job (delayed to its slot)", d, err)
	}
}
