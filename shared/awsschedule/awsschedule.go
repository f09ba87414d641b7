// Package awsschedule is the AWS runtime's publishing.PostScheduler: a
// post is written to DynamoDB (dynamostore, with its idempotency record
// when it has a key), then each of its distinct slots gets its one-time
// EventBridge Scheduler schedule (ebschedule.PutSlot), which fires the
// stack's trigger for every target due at the slot. The CLI's AWS backend
// and the api function schedule posts through it.
package awsschedule

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"oncepost/shared/dynamostore"
	"oncepost/shared/ebschedule"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

var (
	_ publishing.PostScheduler     = (*PostScheduler)(nil)
	_ publishing.ApprovalScheduler = (*PostScheduler)(nil)
)

// SweeperMissedAfter is how late a scheduled target may be before the
// stack's sweeper triggers it: a slot's schedule fires a minute early and
// the trigger does not mark targets (Trigger.FireSlot), so a target is
// still scheduled until the publisher moves it; two minutes past its slot
// it is missed (awsruntime's Sweeper uses it).
const SweeperMissedAfter = 2 * time.Minute

// PostScheduler writes posts, then their slots' schedules. A crash
// between the two writes is repaired by the stack's sweeper, which
// triggers targets their schedule missed SweeperMissedAfter past their
// slot.
type PostScheduler struct {
	Store *dynamostore.Store
	Slots *ebschedule.Client
	// Trigger enqueues the targets of a slot too near to schedule.
	Trigger *publishing.Trigger
	// Now is AWS's clock (Scheduler fires by it): the time a reschedule
	// is recorded at. Default time.Now; the CLI gives awsclock's, measured
	// on the stack's answers. The slots' "too near" is the Slots client's
	// clock, and the delay of a job the Trigger's.
	Now func() time.Time
}

func (s *PostScheduler) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// CreatePost writes the post (with key's record if key is not nil:
// dynamostore.Store.CreatePostWithKey), then the schedules of its
// scheduled targets' slots: a target waiting for approval gets none until
// it is approved (Approved). A key used before writes nothing and
// schedules nothing: the error wraps the *publishing.KeyExistsError.
func (s *PostScheduler) CreatePost(ctx context.Context, p post.Post, key *publishing.IdempotencyRecord) error {
	if err := s.Store.CreatePostWithKey(ctx, p, key); err != nil {
		return err
	}
	var scheduled []post.Target
	for _, t := range p.Targets {
		if t.Status == post.Scheduled {
			scheduled = append(scheduled, t)
		}
	}
	return s.schedule(ctx, p.ID, scheduled)
}

// Approved puts the schedule of an approved target's slot (or, too near
// to schedule, triggers it now), as CreatePost does for a scheduled one.
// A slot's schedule is shared and put idempotently, so a second call
// changes nothing.
func (s *PostScheduler) Approved(ctx context.Context, ref publishing.TargetRef) error {
	return s.schedule(ctx, ref.Post, []post.Target{{Account: ref.Account, Slot: ref.Slot, Status: post.Scheduled}})
}

// Reschedule moves the target, then puts its new slot's schedule. The old
// slot's schedule stays (other posts may share it); when it fires, the
// trigger skips this target, whose slot moved.
func (s *PostScheduler) Reschedule(ctx context.Context, id post.ID, account post.AccountID, slot time.Time) error {
	t, err := s.Store.RescheduleTarget(ctx, id, account, slot, s.now())
	if err != nil {
		return err
	}
	return s.schedule(ctx, id, []post.Target{t})
}

// Cancelled leaves the slot's schedule: other posts may share it, and
// the trigger skips a cancelled target.
func (*PostScheduler) Cancelled(context.Context, publishing.TargetRef) {}

// schedule puts the schedule of each distinct slot of the targets. A
// slot too near to schedule (ebschedule.ErrDue) has its targets
// triggered now, as the embedded runtime fires an at() in the past at
// once: the job goes on the queue, delayed to its slot, and the publisher
// puts a job that arrives before its slot back until then. Both "too
// near" and the delay are reckoned by AWS's clock, which Scheduler fires
// by.
func (s *PostScheduler) schedule(ctx context.Context, id post.ID, targets []post.Target) error {
	bySlot := map[time.Time][]post.Target{}
	var slots []time.Time
	for _, t := range targets {
		k := t.Slot.UTC()
		if _, ok := bySlot[k]; !ok {
			slots = append(slots, k)
		}
		bySlot[k] = append(bySlot[k], t)
	}
	sort.Slice(slots, func(i, j int) bool { return slots[i].Before(slots[j]) })
	var errs []error
	for _, slot := range slots {
		err := s.Slots.PutSlot(ctx, slot)
		if errors.Is(err, ebschedule.ErrDue) {
			for _, t := range bySlot[slot] {
				if _, err := s.Trigger.Fire(ctx, publishing.TargetRef{Post: id, Account: t.Account, Slot: t.Slot}); err != nil {
					errs = append(errs, err)
				}
			}
			continue
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("post %s is stored, but not every target was scheduled (%w); the stack's sweeper triggers a target its schedule missed, %s after its slot", id, errors.Join(errs...), SweeperMissedAfter)
	}
	return nil
}
