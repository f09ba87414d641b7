package publishingtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// intakeBugs are the mistakes TestIntake must catch.
type intakeBugs struct {
	keyAfterPost  bool // looks the key up, writes the post, then the key: three writes, not one
	idBeforeKey   bool // checks the post id before the key: a retry is refused as a duplicate id
	keyOverwrites bool // a second create with the key writes its post and replaces the record
	keyOnConflict bool // keeps the key of a create refused for its id
	scopeIgnored  bool // keys are looked up by key alone
}

// memIntake keeps posts (memPosts) and key records in memory.
type memIntake struct {
	bugs  intakeBugs
	posts *memPosts
	mu    sync.Mutex
	keys  map[[2]string]publishing.IdempotencyRecord
}

func newMemIntake(b intakeBugs) Intake {
	m := &memIntake{bugs: b, posts: newMemPosts(postsBugs{}), keys: map[[2]string]publishing.IdempotencyRecord{}}
	return Intake{Scheduler: m, Keys: m, Posts: m.posts}
}

func (m *memIntake) id(scope, key string) [2]string {
	if m.bugs.scopeIgnored {
		scope = ""
	}
	return [2]string{scope, key}
}

func (m *memIntake) GetIdempotencyRecord(_ context.Context, scope, key string) (publishing.IdempotencyRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.keys[m.id(scope, key)]
	if !ok {
		return publishing.IdempotencyRecord{}, fmt.Errorf("key %q: %w", key, post.ErrNotFound)
	}
	return rec, nil
}

func (m *memIntake) CreatePost(ctx context.Context, p post.Post, key *publishing.IdempotencyRecord) error {
	if key == nil {
		return m.posts.CreatePost(ctx, p)
	}
	rec := *key
	rec.Post = p.ID
	if m.bugs.keyAfterPost {
		if stored, err := m.GetIdempotencyRecord(ctx, rec.Scope, rec.Key); err == nil {
			return &publishing.KeyExistsError{Record: stored}
		}
		time.Sleep(time.Millisecond) // the window a concurrent create falls into
		if err := m.posts.CreatePost(ctx, p); err != nil {
			return err
		}
		m.mu.Lock()
		m.keys[m.id(rec.Scope, rec.Key)] = rec
		m.mu.Unlock()
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bugs.idBeforeKey {
		if _, err := m.posts.GetPost(ctx, p.ID); err == nil {
			return fmt.Errorf("create post %s: %w", p.ID, post.ErrConflict)
		}
	}
	if stored, ok := m.keys[m.id(rec.Scope, rec.Key)]; ok && !m.bugs.keyOverwrites {
		return &publishing.KeyExistsError{Record: stored}
	}
	if err := m.posts.CreatePost(ctx, p); err != nil {
		if m.bugs.keyOnConflict {
			m.keys[m.id(rec.Scope, rec.Key)] = rec
		}
		return err
	}
	m.keys[m.id(rec.Scope, rec.Key)] = rec
	return nil
}

func (m *memIntake) Reschedule(context.Context, post.ID, post.AccountID, time.Time) error { return nil }

func (m *memIntake) Cancelled(context.Context, publishing.TargetRef) {}

func TestIntakeSuite(t *testing.T) {
	t.Run("correct", func(t *testing.T) {
		TestIntake(t, func(*testing.T) Intake { return newMemIntake(intakeBugs{}) })
	})
	in := func(b intakeBugs) func() Intake { return func() Intake { return newMemIntake(b) } }
	testBroken(t, intakeChecks(), []brokenCase[Intake]{
		{"writes the key apart from the post", in(intakeBugs{keyAfterPost: true}),
			[]string{"CreatePost/concurrent_same_key"}},
		{"checks the id before the key", in(intakeBugs{idBeforeKey: true}),
			[]string{"CreatePost/existing_key_checked_before_the_id"}},
		{"overwrites an existing key", in(intakeBugs{keyOverwrites: true}),
			[]string{"CreatePost/existing_key_writes_nothing", "CreatePost/concurrent_same_key"}},
		{"keeps the key of a refused create", in(intakeBugs{keyOnConflict: true}),
			[]string{"CreatePost/existing_id_stores_no_key"}},
		{"ignores the scope", in(intakeBugs{scopeIgnored: true}),
			[]string{"CreatePost/scopes_apart"}},
	}, false)
}
