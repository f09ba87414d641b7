package awsruntime

import (
	"context"
	"sync"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// Interface guards.
var (
	_ publishing.Accounts  = (*cachedAccounts)(nil)
	_ publishing.Blocklist = (*cachedBlocklist)(nil)
)

// CacheFor is how long one function instance keeps an account, its
// credential and the blocklist before reading them again. A warm
// instance handles many jobs for the same few accounts; reading them per
// job would be most of the publish path's DynamoDB reads.
//
// What a stale copy can do, at most CacheFor long:
//   - an account edited meanwhile (its gate, limits) is used as it was;
//   - a credential rotated by another instance is sent once more, gets a
//     401, and the refresh path reads the stored one (LeaseRefresh drops
//     the cached copy first, so the refresh never spends a refresh token
//     that was already rotated);
//   - a term added to the blocklist does not hold a post due within
//     CacheFor (post add checks the text against the list when the post
//     is added; this check is for terms added later).
const CacheFor = 30 * time.Second

// cachedAccounts keeps GetAccount and Credential answers for CacheFor;
// every write for an account drops what is kept for it.
type cachedAccounts struct {
	publishing.Accounts
	now func() time.Time

	mu       sync.Mutex
	accounts map[post.AccountID]cached[post.Account]
	creds    map[post.AccountID]cached[platform.Credential]
}

type cached[T any] struct {
	v     T
	until time.Time
}

func newCachedAccounts(a publishing.Accounts, now func() time.Time) *cachedAccounts {
	return &cachedAccounts{Accounts: a, now: now, accounts: map[post.AccountID]cached[post.Account]{}, creds: map[post.AccountID]cached[platform.Credential]{}}
}

func (c *cachedAccounts) GetAccount(ctx context.Context, id post.AccountID) (post.Account, error) {
	c.mu.Lock()
	e, ok := c.accounts[id]
	c.mu.Unlock()
	if ok && c.now().Before(e.until) {
		return e.v, nil
	}
	a, err := c.Accounts.GetAccount(ctx, id)
	if err != nil {
		return a, err
	}
	c.mu.Lock()
	c.accounts[id] = cached[post.Account]{v: a, until: c.now().Add(CacheFor)}
	c.mu.Unlock()
	return a, nil
}

func (c *cachedAccounts) Credential(ctx context.Context, id post.AccountID) (platform.Credential, error) {
	c.mu.Lock()
	e, ok := c.creds[id]
	c.mu.Unlock()
	if ok && c.now().Before(e.until) {
		return e.v, nil
	}
	cred, err := c.Accounts.Credential(ctx, id)
	if err != nil {
		return cred, err
	}
	c.mu.Lock()
	c.creds[id] = cached[platform.Credential]{v: cred, until: c.now().Add(CacheFor)}
	c.mu.Unlock()
	return cred, nil
}

// forget drops what is kept for id.
func (c *cachedAccounts) forget(id post.AccountID) {
	c.mu.Lock()
	delete(c.accounts, id)
	delete(c.creds, id)
	c.mu.Unlock()
}

func (c *cachedAccounts) PutAccount(ctx context.Context, a post.Account) error {
	c.forget(a.ID)
	return c.Accounts.PutAccount(ctx, a)
}

func (c *cachedAccounts) PutCredential(ctx context.Context, id post.AccountID, cred platform.Credential) error {
	c.forget(id)
	return c.Accounts.PutCredential(ctx, id, cred)
}

func (c *cachedAccounts) LeaseRefresh(ctx context.Context, id post.AccountID, owner string, now, until time.Time) error {
	c.forget(id)
	return c.Accounts.LeaseRefresh(ctx, id, owner, now, until)
}

func (c *cachedAccounts) SaveRefreshed(ctx context.Context, id post.AccountID, owner string, cred *platform.Credential) error {
	c.forget(id)
	return c.Accounts.SaveRefreshed(ctx, id, owner, cred)
}

func (c *cachedAccounts) MarkRefreshLost(ctx context.Context, id post.AccountID, owner string, at time.Time) error {
	c.forget(id)
	return c.Accounts.MarkRefreshLost(ctx, id, owner, at)
}

// cachedBlocklist keeps the blocklist for CacheFor.
type cachedBlocklist struct {
	list publishing.Blocklist
	now  func() time.Time

	mu    sync.Mutex
	terms []post.BlockedTerm
	until time.Time
}

func (c *cachedBlocklist) BlockedTerms(ctx context.Context) ([]post.BlockedTerm, error) {
	c.mu.Lock()
	terms, until := c.terms, c.until
	c.mu.Unlock()
	if terms != nil && c.now().Before(until) {
		return terms, nil
	}
	terms, err := c.list.BlockedTerms(ctx)
	if err != nil {
		return nil, err
	}
	if terms == nil {
		terms = []post.BlockedTerm{}
	}
	c.mu.Lock()
	c.terms, c.until = terms, c.now().Add(CacheFor)
	c.mu.Unlock()
	return terms, nil
}
