package sqlitestore

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/publishingtest"
)

func TestQueueSlotsConformance(t *testing.T) {
	publishingtest.TestQueueSlots(t, func(t *testing.T) publishingtest.QueueStore {
		s := openTest(t, Options{})
		return publishingtest.QueueStore{Slots: s, Posts: s, Accounts: s, Scheduler: queueScheduler{s}}
	})
}

// queueScheduler is the store as a publishing.PostScheduler whose
// schedules are no-ops (the runtime's write localcron rows).
type queueScheduler struct{ s *Store }

func (q queueScheduler) CreatePost(ctx context.Context, p post.Post, key *publishing.IdempotencyRecord) error {
	return q.s.CreatePostKeyed(ctx, p, key, nil)
}

func (q queueScheduler) Reschedule(ctx context.Context, id post.ID, account post.AccountID, slot time.Time) error {
	_, err := q.s.RescheduleTarget(ctx, id, account, slot, time.Now(), func(*sql.Tx, publishing.TargetRef, publishing.TargetRef) error { return nil })
	return err
}

func (queueScheduler) Cancelled(context.Context, publishing.TargetRef) {}
