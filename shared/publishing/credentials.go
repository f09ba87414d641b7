package publishing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"oncepost/shared/emf"
	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// Reasons recorded on accounts (and the targets they fail) when a
// credential cannot be renewed.
const (
	// ReasonRefreshRefused: the platform refused the refresh token.
	ReasonRefreshRefused = "refresh_refused"
	// ReasonRefreshAnswerLost: a refresh was sent, its answer lost, and the
	// platform then refused the stored refresh token: it had rotated it.
	ReasonRefreshAnswerLost = "refresh_answer_lost"
)

// defaultRefreshLease is the shortest refresh lease; a longer call timeout
// lengthens it (see Credentials.lease).
const defaultRefreshLease = 30 * time.Second

// Credentials reads accounts' credentials and renews them after a 401,
// for Publish and for the confirm workflow's Look alike.
//
// A refresh runs under the account's refresh lease, so two workers never
// spend one single-use refresh token. A refresh whose answer was lost is
// recorded on the credential (the token may have been spent): the next
// refresh tries the stored token once more, and a refusal then marks the
// account reconnect_needed with reason refresh_answer_lost. Rotated tokens
// that cannot be saved are kept in memory and saved again on next use,
// never thrown away.
type Credentials struct {
	Accounts Accounts
	// Owner names this process in refresh leases.
	Owner string
	// CallTimeout bounds the token call; the lease outlasts two of them.
	CallTimeout  time.Duration
	RecordMargin time.Duration
	Now          func() time.Time
	Metrics      MetricsEmitter
	Logger       *slog.Logger

	mu      sync.Mutex
	unsaved map[post.AccountID]platform.Credential
}

func (c *Credentials) now() time.Time { return nowFrom(c.Now) }

func (c *Credentials) log() *slog.Logger { return loggerOr(c.Logger) }

func (c *Credentials) callTimeout() time.Duration { return orDefault(c.CallTimeout, 10*time.Second) }

func (c *Credentials) recordMargin() time.Duration { return orDefault(c.RecordMargin, 2*time.Second) }

// lease is how long a refresh may hold the account: never shorter than the
// token call plus the time to save its answer, twice over.
func (c *Credentials) lease() time.Duration {
	return max(defaultRefreshLease, 2*(c.callTimeout()+c.recordMargin()))
}

// Get returns the account's credential: a rotated one not yet saved if
// this process holds one (it tries to save it again first), else the
// stored one.
func (c *Credentials) Get(ctx context.Context, id post.AccountID) (platform.Credential, error) {
	c.mu.Lock()
	cred, ok := c.unsaved[id]
	c.mu.Unlock()
	if ok {
		c.saveUnsaved(ctx, id, cred)
		return cred, nil
	}
	cred, err := c.Accounts.Credential(ctx, id)
	if err != nil {
		return platform.Credential{}, fmt.Errorf("credential of %s: %w", id, err)
	}
	return cred, nil
}

// saveUnsaved stores a rotated credential kept in memory and forgets it
// once stored. Its refresh lease may have expired meanwhile; nobody else
// can have rotated the tokens since (the old refresh token is spent), so
// it is written unconditionally.
func (c *Credentials) saveUnsaved(ctx context.Context, id post.AccountID, cred platform.Credential) {
	if err := c.Accounts.PutCredential(ctx, id, cred); err != nil {
		c.log().ErrorContext(ctx, "rotated credential still not saved; kept in memory", "account", id, "err", err)
		return
	}
	c.mu.Lock()
	if cur, ok := c.unsaved[id]; ok && cur.AccessToken == cred.AccessToken {
		delete(c.unsaved, id)
	}
	c.mu.Unlock()
	c.log().InfoContext(ctx, "rotated credential saved", "account", id)
}

// Refresh renews the account's credential after a 401 with stale. If
// another worker already rotated it, that credential is used. Errors are
// platform classes: Rejected with reason reconnect_needed when the account
// must be connected again, NotPerformed when a later try may succeed.
func (c *Credentials) Refresh(ctx context.Context, acc post.Account, client platform.Client, stale platform.Credential) (platform.Credential, error) {
	now := c.now()
	// Unique per call: workers of one process share Owner, and the lease
	// must keep them from spending one single-use refresh token twice.
	owner := c.Owner + "/refresh/" + ledger.NewHandle()
	if err := c.Accounts.LeaseRefresh(ctx, acc.ID, owner, now, now.Add(c.lease())); err != nil {
		if errors.Is(err, post.ErrConflict) {
			return stale, &platform.NotPerformed{RetryAfter: time.Second, Message: "credential refresh in progress elsewhere"}
		}
		return stale, fmt.Errorf("lease refresh of %s: %w", acc.ID, err)
	}
	cur, err := c.Accounts.Credential(ctx, acc.ID)
	if err != nil {
		c.dropLease(ctx, acc.ID, owner)
		return stale, fmt.Errorf("credential of %s: %w", acc.ID, err)
	}
	if cur.AccessToken != stale.AccessToken {
		// Rotated by someone else since we read it.
		c.dropLease(ctx, acc.ID, owner)
		return cur, nil
	}
	cctx, cancel := context.WithTimeout(ctx, c.callTimeout())
	fresh, err := client.Refresh(cctx, cur)
	cancel()
	var (
		rej *platform.Rejected
		amb *platform.Ambiguous
	)
	switch {
	case errors.As(err, &amb):
		// The platform may have rotated the tokens and spent the refresh
		// token: say so on the credential, so that a refusal of the same
		// token next time is understood.
		if merr := c.Accounts.MarkRefreshLost(context.WithoutCancel(ctx), acc.ID, owner, now); merr != nil {
			c.log().ErrorContext(ctx, "could not record a lost refresh answer", "account", acc.ID, "err", merr)
		}
		c.log().WarnContext(ctx, "credential refresh answer lost; the stored refresh token will be tried once more", "account", acc.ID)
		return stale, &platform.NotPerformed{RetryAfter: time.Second, Message: "credential refresh answer lost: " + amb.Error()}
	case errors.As(err, &rej):
		c.dropLease(ctx, acc.ID, owner)
		reason := ReasonRefreshRefused
		if !cur.RefreshLostAt.IsZero() {
			reason = ReasonRefreshAnswerLost
		}
		c.reconnectNeeded(ctx, acc, reason)
		return stale, &platform.Rejected{Status: rej.Status, Reason: ReasonReconnectNeeded, Message: reason + ": " + rej.Message}
	case err != nil:
		c.dropLease(ctx, acc.ID, owner)
		return stale, &platform.NotPerformed{Message: "credential refresh: " + err.Error()}
	}
	if fresh.RefreshToken == "" {
		// Never overwrite a refresh token with nothing (postiz #1884).
		fresh.RefreshToken = cur.RefreshToken
	}
	fresh.RefreshLostAt = time.Time{}
	if fresh.AccessToken == "" {
		c.dropLease(ctx, acc.ID, owner)
		c.reconnectNeeded(ctx, acc, ReasonRefreshRefused)
		return stale, &platform.Rejected{Reason: ReasonReconnectNeeded, Message: "refresh returned no access token"}
	}
	c.save(ctx, acc.ID, owner, fresh)
	c.log().InfoContext(ctx, "credential refreshed", "account", acc.ID)
	return fresh, nil
}

// save stores a rotated credential: a few tries, and if the store stays
// unreachable the credential is kept in memory (Get tries again). The
// platform has rotated the tokens: losing them means reconnecting.
func (c *Credentials) save(ctx context.Context, id post.AccountID, owner string, fresh platform.Credential) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*c.recordMargin())
	defer cancel()
	var err error
	for try := range 3 {
		if try > 0 {
			if sleep(sctx, time.Duration(try)*100*time.Millisecond) != nil {
				break
			}
		}
		if err = c.Accounts.SaveRefreshed(sctx, id, owner, &fresh); err == nil {
			return
		}
		if errors.Is(err, post.ErrConflict) {
			// The lease ran out while we refreshed: nobody can have used
			// the spent refresh token since, so store ours unconditionally.
			if err = c.Accounts.PutCredential(sctx, id, fresh); err == nil {
				return
			}
		}
	}
	c.log().ErrorContext(ctx, "rotated credential could not be saved; kept in memory and saved again on next use", "account", id, "err", err)
	c.mu.Lock()
	if c.unsaved == nil {
		c.unsaved = map[post.AccountID]platform.Credential{}
	}
	c.unsaved[id] = fresh
	c.mu.Unlock()
}

// reconnectNeeded marks the account and raises the ReconnectNeeded alarm.
func (c *Credentials) reconnectNeeded(ctx context.Context, acc post.Account, reason string) {
	emitCount(ctx, c.Metrics, c.log(), MetricReconnectNeeded)
	c.log().ErrorContext(ctx, "credential refresh refused; the account needs reconnecting", "account", acc.ID, "reason", reason)
	cur, err := c.Accounts.GetAccount(ctx, acc.ID)
	if err != nil {
		c.log().ErrorContext(ctx, "could not mark the account reconnect_needed", "account", acc.ID, "err", err)
		return
	}
	cur.Status, cur.StatusReason = post.AccountReconnectNeeded, reason
	if err := c.Accounts.PutAccount(ctx, cur); err != nil {
		c.log().ErrorContext(ctx, "could not mark the account reconnect_needed", "account", acc.ID, "err", err)
	}
}

// dropLease frees the account's refresh lease; a failure only delays the
// next refresh until the lease expires.
func (c *Credentials) dropLease(ctx context.Context, id post.AccountID, owner string) {
	if err := c.Accounts.SaveRefreshed(context.WithoutCancel(ctx), id, owner, nil); err != nil {
		c.log().WarnContext(ctx, "drop refresh lease", "account", id, "err", err)
	}
}

// newAuthed returns a platform client for the account, with its current
// credential, that refreshes it on a 401; timeout bounds each call.
func newAuthed(ctx context.Context, creds *Credentials, platforms Platforms, acc post.Account,
	timeout func(context.Context) (context.Context, context.CancelFunc)) (*authedClient, error) {
	cred, err := creds.Get(ctx, acc.ID)
	if err != nil {
		return nil, err
	}
	client, err := platforms.Client(ctx, acc, cred)
	if err != nil {
		return nil, fmt.Errorf("platform client for %s: %w", acc.ID, err)
	}
	return &authedClient{creds: creds, platforms: platforms, acc: acc, client: client, cred: cred, timeout: timeout}, nil
}

// authedClient runs platform calls for one use case, refreshing the
// credential once on a 401 and repeating the call that got it. A 401 means
// the platform did not act, so repeating a create within the same attempt
// (same handle) is safe; the create's own checks (the lease) run again. A
// second 401 after a refresh is reconnect_needed.
type authedClient struct {
	creds     *Credentials
	platforms Platforms
	acc       post.Account
	client    platform.Client
	cred      platform.Credential
	// timeout bounds each call (see callContext).
	timeout   func(context.Context) (context.Context, context.CancelFunc)
	refreshed bool
}

func (a *authedClient) do(ctx context.Context, call func(context.Context, platform.Client) error) error {
	err := a.call(ctx, call)
	var unauth *platform.Unauthorized
	if !errors.As(err, &unauth) {
		return err
	}
	if a.refreshed {
		return &platform.Rejected{Status: 401, Reason: ReasonReconnectNeeded, Message: unauth.Message}
	}
	a.refreshed = true
	cred, err := a.creds.Refresh(ctx, a.acc, a.client, a.cred)
	if err != nil {
		// The call got a 401, so it did not act; nor did the refresh.
		return notPerformedUnlessRejected(err)
	}
	client, err := a.platforms.Client(ctx, a.acc, cred)
	if err != nil {
		return &platform.NotPerformed{Message: "platform client after refresh: " + err.Error()}
	}
	a.client, a.cred = client, cred
	err = a.call(ctx, call)
	if errors.As(err, &unauth) {
		return &platform.Rejected{Status: 401, Reason: ReasonReconnectNeeded, Message: unauth.Message}
	}
	return err
}

func (a *authedClient) call(ctx context.Context, call func(context.Context, platform.Client) error) error {
	ctx, cancel := a.timeout(ctx)
	defer cancel()
	return call(ctx, a.client)
}

// emitCount writes one count of a metric; a metrics failure is logged,
// never allowed to change an outcome.
func emitCount(ctx context.Context, m MetricsEmitter, log *slog.Logger, name string) {
	emitMetrics(ctx, m, log, emf.Metric{Name: name, Unit: emf.Count, Value: 1})
}

func emitMetrics(ctx context.Context, m MetricsEmitter, log *slog.Logger, metrics ...emf.Metric) {
	if m == nil {
		return
	}
	if err := m.Emit(metrics...); err != nil {
		log.WarnContext(ctx, "emit metrics", "err", err)
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
