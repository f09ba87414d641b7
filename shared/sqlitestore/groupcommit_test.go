package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// Creates made at the same moment share a transaction, and each is its
// own: a refused one (its id or its key exists) is rolled back alone,
// every other commits, and each caller hears its own outcome.
func TestConcurrentCreatesAreEachTheirOwn(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "oncepost.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC()
	const n = 60
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every third create reuses the id of the one before it; every
			// fifth reuses key "k0".
			id := i
			if i%3 == 2 {
				id = i - 1
			}
			key := &publishing.IdempotencyRecord{Scope: "t", Key: fmt.Sprintf("k%d", i), Fingerprint: "f", Status: 201, Response: []byte("{}")}
			if i%5 == 4 {
				key.Key = "k0"
			}
			p := post.Post{ID: post.ID(fmt.Sprintf("g%02d", id)), Body: "grouped", CreatedAt: now,
				Targets: []post.Target{{Account: "a", Slot: now.Add(time.Hour), Status: post.Scheduled, UpdatedAt: now}}}
			errs[i] = s.CreatePostKeyed(ctx, p, key, func(*sql.Tx, publishing.TargetRef) error { return nil })
		}()
	}
	wg.Wait()
	created := map[post.ID]int{}
	for i, err := range errs {
		var exists *publishing.KeyExistsError
		switch {
		case err == nil:
			id := i
			if i%3 == 2 {
				id = i - 1
			}
			created[post.ID(fmt.Sprintf("g%02d", id))]++
		case errors.As(err, &exists), errors.Is(err, post.ErrConflict):
		default:
			t.Errorf("create %d: %v, want nil, a conflict or the key's record", i, err)
		}
	}
	for id, k := range created {
		if k != 1 {
			t.Errorf("post %s: %d creates succeeded, want 1", id, k)
		}
		if _, err := s.GetPost(ctx, id); err != nil {
			t.Errorf("post %s: reported created, but %v", id, err)
		}
	}
	// A create that shares neither its id nor its key with another
	// succeeds, whatever the others in its transaction did.
	for i := 3; i < n; i += 3 {
		if i%5 != 4 && errs[i] != nil {
			t.Errorf("create %d (its id and key its own): %v, want it committed", i, errs[i])
		}
	}
	if len(created) == 0 {
		t.Fatal("no create succeeded")
	}
}
