package httpapi

import (
	"context"
	"database/sql"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// storeScheduler is publishing.PostScheduler on the store alone: the
// post and its key in one transaction (sqlitestore.CreatePostKeyed), no
// schedules (nothing fires in these tests).
type storeScheduler struct{ s *sqlitestore.Store }

var _ publishing.PostScheduler = storeScheduler{}

func (x storeScheduler) CreatePost(ctx context.Context, p post.Post, key *publishing.IdempotencyRecord) error {
	return x.s.CreatePostKeyed(ctx, p, key, nil)
}

func (x storeScheduler) Reschedule(ctx context.Context, id post.ID, account post.AccountID, slot time.Time) error {
	_, err := x.s.RescheduleTarget(ctx, id, account, slot, time.Now(), func(*sql.Tx, publishing.TargetRef, publishing.TargetRef) error { return nil })
	return err
}

func (storeScheduler) Cancelled(context.Context, publishing.TargetRef) {}
