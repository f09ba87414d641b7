package publishing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"oncepost/shared/post"
)

// MaxDelay is the longest delay a queued job can have (SQS's
// DelaySeconds stops at 900 s).
const MaxDelay = 900 * time.Second

// SlotLimit bounds how many targets one FireSlot enqueues; the rest stay
// scheduled and the sweeper triggers them MissedAfter past their slot.
const SlotLimit = 10000

// DelayUntil is the queue delay of a job for slot sent at now: the time
// left until slot rounded up to a whole second, so the job becomes
// visible at the slot or less than a second after it (never before),
// bounded to [0, MaxDelay]. A slot already past gives 0.
func DelayUntil(slot, now time.Time) time.Duration {
	d := slot.Sub(now) // saturates instead of overflowing
	if d <= 0 {
		return 0
	}
	if d >= MaxDelay {
		return MaxDelay
	}
	return (d + time.Second - 1) / time.Second * time.Second
}

// Trigger turns a due target into a queued job. It runs when a schedule
// fires (EventBridge Scheduler, or localcron) and when the sweeper finds a
// due target that was never triggered. Fire sends first, then marks the
// target triggered: a crash in between sends again, which the ledger absorbs;
// the other order could mark a target triggered that never reached the queue.
// A schedule may fire before the slot (EventBridge Scheduler fires a
// minute early, see ebschedule): the job is then delayed until the slot.
type Trigger struct {
	Posts Posts
	Queue Queue
	// Now is the clock; default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

func (t *Trigger) now() time.Time { return nowFrom(t.Now) }

func (t *Trigger) log() *slog.Logger { return loggerOr(t.Logger) }

// Fire queues one target's job if the target is still scheduled for that
// slot, then marks it triggered. It reports whether it sent a job. A
// target that is already triggered, final, cancelled or rescheduled is
// left alone. The sweeper (a missed target) and the CLI (a slot too close
// to schedule) fire targets this way.
func (t *Trigger) Fire(ctx context.Context, ref TargetRef) (bool, error) {
	tg, sent, err := t.enqueue(ctx, ref)
	if err != nil || !sent {
		return sent, err
	}
	// Only a target still scheduled for this slot is marked: one held,
	// cancelled or moved to another time meanwhile is left alone (its new
	// schedule triggers it).
	_, err = t.Posts.UpdateTarget(ctx, ref.Post, tg.Account, post.TargetUpdate{Status: post.Triggered, From: []post.TargetStatus{post.Scheduled}, Slot: tg.Slot, At: t.now()})
	if err != nil && !errors.Is(err, post.ErrConflict) {
		// The job is queued; the publisher does not need the mark.
		return true, fmt.Errorf("trigger %s/%s: mark triggered: %w", ref.Post, ref.Account, err)
	}
	return true, nil
}

// Enqueue is Fire without the mark: a per-target schedule's firing on
// AWS, where the trigger function only reads posts (its IAM policy allows
// no write). As with FireSlot, the queued job is the record: a target
// whose job was lost stays scheduled and the sweeper triggers it, and a
// job sent twice is absorbed by the ledger.
func (t *Trigger) Enqueue(ctx context.Context, ref TargetRef) (bool, error) {
	_, sent, err := t.enqueue(ctx, ref)
	return sent, err
}

// enqueue sends the target's job if the target is still scheduled for
// ref's slot, and returns the target.
func (t *Trigger) enqueue(ctx context.Context, ref TargetRef) (post.Target, bool, error) {
	p, err := t.Posts.GetPost(ctx, ref.Post)
	if errors.Is(err, post.ErrNotFound) {
		t.log().WarnContext(ctx, "trigger for a post that does not exist", "post", ref.Post, "account", ref.Account)
		return post.Target{}, false, nil
	}
	if err != nil {
		return post.Target{}, false, fmt.Errorf("trigger %s/%s: %w", ref.Post, ref.Account, err)
	}
	tg, ok := p.Target(ref.Account)
	if !ok || tg.Status != post.Scheduled || !tg.Slot.Equal(ref.Slot) {
		return post.Target{}, false, nil
	}
	body, err := json.Marshal(Job{Post: p.ID, Account: tg.Account, Slot: tg.Slot})
	if err != nil {
		return post.Target{}, false, fmt.Errorf("trigger %s/%s: encode job: %w", ref.Post, ref.Account, err)
	}
	if _, err := t.Queue.Send(ctx, body, DelayUntil(tg.Slot, t.now())); err != nil {
		return post.Target{}, false, fmt.Errorf("trigger %s/%s: enqueue: %w", ref.Post, ref.Account, err)
	}
	t.log().InfoContext(ctx, "triggered", "post", p.ID, "account", tg.Account, "slot", tg.Slot.Format(time.RFC3339))
	return tg, true, nil
}

// FireDue triggers every target due at now, up to limit, and reports how
// many jobs it sent.
func (t *Trigger) FireDue(ctx context.Context, limit int) (int, error) {
	due, err := t.Posts.Due(ctx, t.now(), limit)
	if err != nil {
		return 0, fmt.Errorf("due targets: %w", err)
	}
	sent := 0
	var errs []error
	for _, ref := range due {
		ok, err := t.Fire(ctx, ref)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			sent++
		}
	}
	return sent, errors.Join(errs...)
}

// FireSlot enqueues the job of every target still scheduled at slot — a
// slot schedule's firing (ebschedule.PutSlot) — each delayed until the
// slot, and reports how many it sent. With a BatchSender queue the jobs go
// out ten per request. Targets of earlier slots that are still scheduled
// are left alone: their own firing sent them (their jobs may be in the
// queue still) or, if it never came, the sweeper triggers them MissedAfter
// past their slot.
//
// Unlike Fire it does not mark the targets triggered: the queued job is
// the record, and marking would cost a write (and two index writes) per
// post on the publish path. A target whose job was lost stays scheduled,
// and the sweeper triggers it; a job that is sent twice (a retried
// invocation) is absorbed by the ledger. The targets come from Posts.Due,
// which reads them back consistently, so a target cancelled or moved
// before the firing is not sent; one cancelled after it is stopped by the
// publisher's re-read.
func (t *Trigger) FireSlot(ctx context.Context, slot time.Time) (int, error) {
	var due []TargetRef
	var err error
	if l, ok := t.Posts.(SlotLister); ok {
		due, err = l.DueAt(ctx, slot, SlotLimit)
	} else {
		due, err = t.Posts.Due(ctx, slot, SlotLimit)
	}
	if err != nil {
		return 0, fmt.Errorf("trigger slot %s: due targets: %w", slot.UTC().Format(time.RFC3339Nano), err)
	}
	if len(due) == SlotLimit {
		t.log().WarnContext(ctx, "slot has more due targets than one firing sends; the sweeper triggers the rest", "slot", slot.UTC().Format(time.RFC3339Nano), "limit", SlotLimit)
	}
	now := t.now()
	msgs := make([]Outgoing, 0, len(due))
	for _, ref := range due {
		if !ref.Slot.Equal(slot) {
			continue
		}
		body, err := json.Marshal(Job{Post: ref.Post, Account: ref.Account, Slot: ref.Slot.UTC()})
		if err != nil {
			return 0, fmt.Errorf("trigger slot: encode job %s/%s: %w", ref.Post, ref.Account, err)
		}
		msgs = append(msgs, Outgoing{Body: body, Delay: DelayUntil(ref.Slot, now)})
	}
	sent, err := t.send(ctx, msgs)
	t.log().InfoContext(ctx, "slot triggered", "slot", slot.UTC().Format(time.RFC3339Nano), "due", len(msgs), "sent", sent)
	if err != nil {
		return sent, fmt.Errorf("trigger slot %s: %w", slot.UTC().Format(time.RFC3339Nano), err)
	}
	return sent, nil
}

// send sends msgs in batches when the queue can, one by one otherwise,
// and counts what was sent.
func (t *Trigger) send(ctx context.Context, msgs []Outgoing) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	if b, ok := t.Queue.(BatchSender); ok {
		ids, err := b.SendBatch(ctx, msgs)
		sent := 0
		for _, id := range ids {
			if id != "" {
				sent++
			}
		}
		return sent, err
	}
	sent := 0
	var errs []error
	for _, m := range msgs {
		if _, err := t.Queue.Send(ctx, m.Body, m.Delay); err != nil {
			errs = append(errs, err)
			continue
		}
		sent++
	}
	return sent, errors.Join(errs...)
}
