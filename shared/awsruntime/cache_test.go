package awsruntime

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/sqlitestore"
)

// countingStore counts the reads that reach the real store.
type countingStore struct {
	*sqlitestore.Store
	accounts, creds, terms atomic.Int32
}

func (s *countingStore) GetAccount(ctx context.Context, id post.AccountID) (post.Account, error) {
	s.accounts.Add(1)
	return s.Store.GetAccount(ctx, id)
}

func (s *countingStore) Credential(ctx context.Context, id post.AccountID) (platform.Credential, error) {
	s.creds.Add(1)
	return s.Store.Credential(ctx, id)
}

func (s *countingStore) BlockedTerms(ctx context.Context) ([]post.BlockedTerm, error) {
	s.terms.Add(1)
	return s.Store.BlockedTerms(ctx)
}

// TestInstanceCache: reads within CacheFor are served from memory, a
// later one reads the store again, and a refresh lease, or any write for
// the account, drops what is kept so the next read sees the store (a
// refresh must never work from a stale copy of a single-use token).
func TestInstanceCache(t *testing.T) {
	ctx := context.Background()
	db, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "o.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := &countingStore{Store: db}
	if err := store.PutAccount(ctx, post.Account{ID: "news", Platform: "mastodon", Handle: "@news", BaseURL: "http://127.0.0.1:1", Gate: post.GateAuto}); err != nil {
		t.Fatal(err)
	}
	if err := store.PutCredential(ctx, "news", platform.Credential{AccessToken: "old", RefreshToken: "r1"}); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	accts := newCachedAccounts(store, clock)
	terms := &cachedBlocklist{list: store, now: clock}

	read := func() platform.Credential {
		t.Helper()
		if _, err := accts.GetAccount(ctx, "news"); err != nil {
			t.Fatal(err)
		}
		c, err := accts.Credential(ctx, "news")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := terms.BlockedTerms(ctx); err != nil {
			t.Fatal(err)
		}
		return c
	}
	want := func(step string, accounts, creds, blocked int32) {
		t.Helper()
		if a, c, b := store.accounts.Load(), store.creds.Load(), store.terms.Load(); a != accounts || c != creds || b != blocked {
			t.Errorf("%s: store reads (account, credential, blocklist) = %d, %d, %d; want %d, %d, %d", step, a, c, b, accounts, creds, blocked)
		}
	}
	read()
	read()
	want("two reads at once", 1, 1, 1)
	now = now.Add(CacheFor + time.Second)
	read()
	want("after CacheFor", 2, 2, 2)

	// Another instance rotates the token; this one still has the old copy
	// until it takes the refresh lease, which drops it.
	if err := store.PutCredential(ctx, "news", platform.Credential{AccessToken: "new", RefreshToken: "r2"}); err != nil {
		t.Fatal(err)
	}
	if c := read(); c.AccessToken != "old" {
		t.Fatalf("cached credential = %q, want the old copy", c.AccessToken)
	}
	if err := accts.LeaseRefresh(ctx, "news", "me", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	c, err := accts.Credential(ctx, "news")
	if err != nil || c.AccessToken != "new" || c.RefreshToken != "r2" {
		t.Errorf("credential after the lease = %+v, %v; want the rotated one from the store", c, err)
	}
	want("after the lease", 2, 3, 2)
}
