package dynamostore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// Interface guards.
var (
	_ publishing.TargetReader = (*Store)(nil)
	_ publishing.SlotLister   = (*Store)(nil)
)

// DefaultReadWindow is how long GetTarget waits for other reads to share
// its BatchGetItem (Options.ReadWindow's default).
const DefaultReadWindow = 5 * time.Millisecond

// maxTargetsPerBatch is how many GetTarget reads one BatchGetItem serves:
// two keys each (the post item and the target item), 100 keys a request.
const maxTargetsPerBatch = 50

// GetTarget reads the post item and one target item, strongly
// consistent, with the same visibility rules as GetPost (a post still
// being created is not found; a target left by an earlier creation is not
// the post's). Reads made within Options.ReadWindow of each other, up to
// 50, share one BatchGetItem: the publisher handles an SQS batch's jobs
// concurrently and reads each job's target twice (before and after its
// ledger entry is written), so a batch of ten costs a few requests instead
// of twenty Queries. Cost: at most one read request per call, usually a
// fraction; the wait adds at most ReadWindow to a read.
func (s *Store) GetTarget(ctx context.Context, id post.ID, account post.AccountID) (post.Post, error) {
	r := &targetRead{id: id, account: account, done: make(chan struct{})}
	s.reads.add(ctx, s, r)
	select {
	case <-r.done:
	case <-ctx.Done():
		return post.Post{}, fmt.Errorf("get target %s/%s: %w", id, account, ctx.Err())
	}
	if r.err != nil {
		return post.Post{}, fmt.Errorf("get target %s/%s: %w", id, account, r.err)
	}
	return r.p, nil
}

// targetRead is one GetTarget waiting for its batch.
type targetRead struct {
	id      post.ID
	account post.AccountID
	p       post.Post
	err     error
	done    chan struct{}
}

// readBatcher gathers GetTarget reads into BatchGetItem requests.
type readBatcher struct {
	window time.Duration
	mu     sync.Mutex
	queue  []*targetRead
	timer  *time.Timer
}

// add queues r; the first read of a batch starts its window, and a full
// batch goes at once.
func (b *readBatcher) add(ctx context.Context, s *Store, r *targetRead) {
	b.mu.Lock()
	b.queue = append(b.queue, r)
	switch {
	case len(b.queue) >= maxTargetsPerBatch:
		batch := b.take()
		b.mu.Unlock()
		go s.readTargets(context.WithoutCancel(ctx), batch)
		return
	case len(b.queue) == 1:
		b.timer = time.AfterFunc(b.window, func() {
			b.mu.Lock()
			batch := b.take()
			b.mu.Unlock()
			if len(batch) > 0 {
				s.readTargets(context.WithoutCancel(ctx), batch)
			}
		})
	}
	b.mu.Unlock()
}

// take empties the queue; b.mu is held.
func (b *readBatcher) take() []*targetRead {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	batch := b.queue
	b.queue = nil
	return batch
}

// readTargets serves a batch with one BatchGetItem (more if DynamoDB
// leaves keys unprocessed) and wakes every read.
func (s *Store) readTargets(ctx context.Context, batch []*targetRead) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	keys := make([]item, 0, 2*len(batch))
	for _, r := range batch {
		keys = append(keys, postKey(r.id), targetKey(r.id, r.account))
	}
	got, err := s.batchGet(ctx, s.tables.posts, keys, func(it item) string { return sval(it, attrPost) + "\x00" + sval(it, attrItem) })
	for _, r := range batch {
		if err != nil {
			r.err = err
		} else {
			var items []item
			for _, k := range []item{postKey(r.id), targetKey(r.id, r.account)} {
				if it, ok := got[sval(k, attrPost)+"\x00"+sval(k, attrItem)]; ok {
					items = append(items, it)
				}
			}
			r.p, r.err = assemblePost(r.id, items)
		}
		close(r.done)
	}
}
