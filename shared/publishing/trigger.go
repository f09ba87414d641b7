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

// Trigger turns a due target into a queued job. It runs when a schedule
// fires (EventBridge Scheduler, or localcron) and when the sweeper finds a
// due target that was never triggered. It sends first, then marks the
// target triggered: a crash in between sends again, which the ledger absorbs;
// the other order could mark a target triggered that never reached the queue.
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
// slot. It reports whether it sent a job. A target that is already
// triggered, final, cancelled or rescheduled is left alone.
func (t *Trigger) Fire(ctx context.Context, ref TargetRef) (bool, error) {
	p, err := t.Posts.GetPost(ctx, ref.Post)
	if errors.Is(err, post.ErrNotFound) {
		t.log().WarnContext(ctx, "trigger for a post that does not exist", "post", ref.Post, "account", ref.Account)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("trigger %s/%s: %w", ref.Post, ref.Account, err)
	}
	tg, ok := p.Target(ref.Account)
	if !ok || tg.Status != post.Scheduled || !tg.Slot.Equal(ref.Slot) {
		return false, nil
	}
	body, err := json.Marshal(Job{Post: p.ID, Account: tg.Account, Slot: tg.Slot})
	if err != nil {
		return false, fmt.Errorf("trigger %s/%s: encode job: %w", ref.Post, ref.Account, err)
	}
	if _, err := t.Queue.Send(ctx, body, 0); err != nil {
		return false, fmt.Errorf("trigger %s/%s: enqueue: %w", ref.Post, ref.Account, err)
	}
	// Only a target still scheduled for this slot is marked: one held,
	// cancelled or moved to another time meanwhile is left alone (its new
	// schedule triggers it).
	_, err = t.Posts.UpdateTarget(ctx, p.ID, tg.Account, post.TargetUpdate{Status: post.Triggered, From: []post.TargetStatus{post.Scheduled}, Slot: tg.Slot, At: t.now()})
	if err != nil && !errors.Is(err, post.ErrConflict) {
		// The job is queued; the publisher does not need the mark.
		return true, fmt.Errorf("trigger %s/%s: mark triggered: %w", ref.Post, ref.Account, err)
	}
	t.log().InfoContext(ctx, "triggered", "post", p.ID, "account", tg.Account, "slot", tg.Slot.Format(time.RFC3339))
	return true, nil
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
