package apitest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// MemMedia keeps uploads in memory, for tests of the API and the
// console: a MediaWriter that can say the size of, and read back, what
// was written. Its zero value is ready.
type MemMedia struct {
	mu sync.Mutex
	m  map[string][]byte
}

// WriteMedia keeps a copy of data under md.Ref.
func (m *MemMedia) WriteMedia(_ context.Context, md post.Media, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string][]byte{}
	}
	m.m[md.Ref] = bytes.Clone(data)
	return nil
}

// MediaSize is the size of what is kept under ref; post.ErrNotFound if
// nothing is.
func (m *MemMedia) MediaSize(_ context.Context, ref string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.m[ref]
	if !ok {
		return 0, post.ErrNotFound
	}
	return int64(len(b)), nil
}

// ReadMedia is what is kept under ref; an error wrapping post.ErrNotFound
// if nothing is.
func (m *MemMedia) ReadMedia(_ context.Context, ref string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.m[ref]
	if !ok {
		return nil, fmt.Errorf("media %s: %w", ref, post.ErrNotFound)
	}
	return b, nil
}

// Len is how many files are kept.
func (m *MemMedia) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

// Get is what is kept under ref (nil if nothing is).
func (m *MemMedia) Get(ref string) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[ref]
}

// StoreScheduler is publishing.PostScheduler on a SQLite store alone: a
// post and its key in one transaction, no schedules (nothing fires in
// the tests that use it).
type StoreScheduler struct{ Store *sqlitestore.Store }

var (
	_ publishing.PostScheduler     = StoreScheduler{}
	_ publishing.ApprovalScheduler = StoreScheduler{}
)

// CreatePost stores the post with its key's record.
func (x StoreScheduler) CreatePost(ctx context.Context, p post.Post, key *publishing.IdempotencyRecord) error {
	return x.Store.CreatePostKeyed(ctx, p, key, nil)
}

// Reschedule moves the target in the store.
func (x StoreScheduler) Reschedule(ctx context.Context, id post.ID, account post.AccountID, slot time.Time) error {
	_, err := x.Store.RescheduleTarget(ctx, id, account, slot, time.Now(), func(*sql.Tx, publishing.TargetRef, publishing.TargetRef) error { return nil })
	return err
}

// Approved records that the approved target has its schedule (there is
// none to make).
func (x StoreScheduler) Approved(ctx context.Context, ref publishing.TargetRef) error {
	return x.Store.MarkScheduled(ctx, ref, func(*sql.Tx) error { return nil })
}

// Cancelled does nothing: there is no schedule to remove.
func (StoreScheduler) Cancelled(context.Context, publishing.TargetRef) {}
