package sqlitestore

import (
	"context"
	"testing"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/publishingtest"
)

func TestLedgerConformance(t *testing.T) {
	publishingtest.TestLedger(t, func(t *testing.T) publishing.Ledger { return openTest(t, Options{}) })
}

func TestPostsConformance(t *testing.T) {
	publishingtest.TestPosts(t, func(t *testing.T) publishing.Posts { return openTest(t, Options{}) })
}

func TestPostPagesConformance(t *testing.T) {
	publishingtest.TestPostPages(t, func(t *testing.T) (publishing.Posts, publishingtest.PostLister) {
		s := openTest(t, Options{})
		return s, func(ctx context.Context, f publishing.PostFilter) ([]post.Post, string, error) {
			pg, err := s.ListPostPage(ctx, f)
			return pg.Posts, pg.Next, err
		}
	})
}

func TestAccountsConformance(t *testing.T) {
	publishingtest.TestAccounts(t, func(t *testing.T) publishing.Accounts { return openTest(t, Options{}) })
}

func TestPacerConformance(t *testing.T) {
	publishingtest.TestPacer(t, func(t *testing.T) publishing.Pacer { return openTest(t, Options{}) })
}

func TestQueueConformance(t *testing.T) {
	publishingtest.TestQueue(t, func(t *testing.T, maxReceives int) publishing.Queue {
		return openTest(t, Options{}).Queue("conformance", maxReceives)
	}, publishingtest.QueueOptions{Unit: 20 * time.Millisecond, Sibling: func(q publishing.Queue) publishing.Queue {
		sq := q.(*Queue)
		return sq.s.Queue(sq.name+"-sibling", sq.maxReceives)
	}})
}

func TestIntakeConformance(t *testing.T) {
	publishingtest.TestIntake(t, func(t *testing.T) publishingtest.Intake {
		s := openTest(t, Options{})
		return publishingtest.Intake{Scheduler: keyedPosts{s}, Keys: s, Posts: s}
	})
}

// keyedPosts is the store's CreatePostKeyed as a publishing.PostScheduler
// without schedules (the runtime's adds them, in the same transaction).
type keyedPosts struct{ s *Store }

func (k keyedPosts) CreatePost(ctx context.Context, p post.Post, key *publishing.IdempotencyRecord) error {
	return k.s.CreatePostKeyed(ctx, p, key, nil)
}

func (keyedPosts) Reschedule(context.Context, post.ID, post.AccountID, time.Time) error { return nil }

func (keyedPosts) Cancelled(context.Context, publishing.TargetRef) {}
