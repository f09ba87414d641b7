package dynamostore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/publishingtest"
)

// The conformance suites, unchanged, against dynalite. Every check gets
// fresh tables and two Stores on them, each with its own DynamoDB client
// (its own connections), used in turn call by call: the suites' races
// (16 writers on one key) run across both clients, as two processes
// would, and every read may come from the other client than the write
// before it.

func TestLedgerConformance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	next := e.pool(t, LedgerTable)
	publishingtest.TestLedger(t, func(t *testing.T) publishing.Ledger {
		prefix := next(t)
		clock := suiteClock()
		return &ledgerPair{pair{a: e.store(t, prefix, nil, Options{Now: clock}), b: e.store(t, prefix, nil, Options{Now: clock})}}
	})
}

func TestPostsConformance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	next := e.pool(t, PostsTable)
	publishingtest.TestPosts(t, func(t *testing.T) publishing.Posts {
		prefix := next(t)
		return &postsPair{pair{a: e.store(t, prefix, nil, Options{}), b: e.store(t, prefix, nil, Options{})}}
	})
}

func TestPostPagesConformance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	next := e.pool(t, PostsTable)
	publishingtest.TestPostPages(t, func(t *testing.T) (publishing.Posts, publishingtest.PostLister) {
		s := e.store(t, next(t), nil, Options{})
		return s, func(ctx context.Context, f publishing.PostFilter) ([]post.Post, string, error) {
			pg, err := s.ListPostPage(ctx, f)
			return pg.Posts, pg.Next, err
		}
	})
}

func TestIntakeConformance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	next := e.pool(t, PostsTable, WorkspaceTable)
	publishingtest.TestIntake(t, func(t *testing.T) publishingtest.Intake {
		prefix := next(t)
		a, b := e.store(t, prefix, nil, Options{}), e.store(t, prefix, nil, Options{})
		p := &intakePair{pair{a: a, b: b}}
		return publishingtest.Intake{Scheduler: p, Keys: p, Posts: &postsPair{pair{a: a, b: b}}, KeyFirst: true}
	})
}

// intakePair is the store's side of a keyed create as a
// publishing.PostScheduler without schedules (awsschedule adds those).
type intakePair struct{ pair }

func (p *intakePair) CreatePost(ctx context.Context, pp post.Post, key *publishing.IdempotencyRecord) error {
	return p.pick().CreatePostWithKey(ctx, pp, key)
}
func (p *intakePair) Reschedule(ctx context.Context, id post.ID, account post.AccountID, slot time.Time) error {
	_, err := p.pick().RescheduleTarget(ctx, id, account, slot, time.Now())
	return err
}
func (p *intakePair) Cancelled(context.Context, publishing.TargetRef) {}
func (p *intakePair) GetIdempotencyRecord(ctx context.Context, scope, key string) (publishing.IdempotencyRecord, error) {
	return p.pick().GetIdempotencyRecord(ctx, scope, key)
}

func TestAccountsConformance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	next := e.pool(t, WorkspaceTable, CredentialsTable)
	publishingtest.TestAccounts(t, func(t *testing.T) publishing.Accounts {
		prefix := next(t)
		key := NewStaticKey()
		return &accountsPair{pair{a: e.store(t, prefix, nil, Options{Keys: key}), b: e.store(t, prefix, nil, Options{Keys: key})}}
	})
}

func TestQueueSlotsConformance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	next := e.pool(t, PostsTable, WorkspaceTable, CredentialsTable, LedgerTable)
	publishingtest.TestQueueSlots(t, func(t *testing.T) publishingtest.QueueStore {
		prefix := next(t)
		key := NewStaticKey()
		a, b := e.store(t, prefix, nil, Options{Keys: key}), e.store(t, prefix, nil, Options{Keys: key})
		return publishingtest.QueueStore{Slots: &queueSlotsPair{pair{a: a, b: b}}, Posts: &postsPair{pair{a: a, b: b}},
			Accounts: &accountsPair{pair{a: a, b: b}}, Scheduler: &intakePair{pair{a: a, b: b}}}
	})
}

// queueSlotsPair claims through two clients of the same tables.
type queueSlotsPair struct{ pair }

func (p *queueSlotsPair) ClaimQueueSlot(ctx context.Context, account post.AccountID, slot time.Time, owner, prev post.ID, at time.Time) error {
	return p.pick().ClaimQueueSlot(ctx, account, slot, owner, prev, at)
}
func (p *queueSlotsPair) ReleaseQueueSlot(ctx context.Context, account post.AccountID, slot time.Time, owner post.ID) error {
	return p.pick().ReleaseQueueSlot(ctx, account, slot, owner)
}
func (p *queueSlotsPair) QueueSlotClaims(ctx context.Context, account post.AccountID, from time.Time, limit int) ([]publishing.SlotClaim, error) {
	return p.pick().QueueSlotClaims(ctx, account, from, limit)
}

func TestPacerConformance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	next := e.pool(t, WorkspaceTable)
	publishingtest.TestPacer(t, func(t *testing.T) publishing.Pacer {
		prefix := next(t)
		return &pacerPair{pair{a: e.store(t, prefix, nil, Options{}), b: e.store(t, prefix, nil, Options{})}}
	})
}

type pacerPair struct{ pair }

func (p *pacerPair) Pace(ctx context.Context, account post.AccountID, rates []platform.Rate, now time.Time) (time.Duration, error) {
	return p.pick().Pace(ctx, account, rates, now)
}

// pair is two Stores on the same tables, used in turn.
type pair struct {
	a, b *Store
	n    atomic.Uint64
}

func (p *pair) pick() *Store {
	if p.n.Add(1)%2 == 0 {
		return p.a
	}
	return p.b
}

type ledgerPair struct{ pair }

func (p *ledgerPair) Create(ctx context.Context, e ledger.Entry) error {
	return p.pick().Create(ctx, e)
}
func (p *ledgerPair) Get(ctx context.Context, key ledger.Key) (ledger.Entry, error) {
	return p.pick().Get(ctx, key)
}
func (p *ledgerPair) Update(ctx context.Context, prev, next ledger.Entry) error {
	return p.pick().Update(ctx, prev, next)
}
func (p *ledgerPair) Open(ctx context.Context, before time.Time, limit int) ([]ledger.Entry, error) {
	return p.pick().Open(ctx, before, limit)
}
func (p *ledgerPair) Held(ctx context.Context, limit int) ([]ledger.Entry, error) {
	return p.pick().Held(ctx, limit)
}
func (p *ledgerPair) History(ctx context.Context, key ledger.Key) ([]ledger.Transition, error) {
	return p.pick().History(ctx, key)
}
func (p *ledgerPair) RecordCheckpoint(ctx context.Context, e ledger.Entry, checkpoint string) error {
	return p.pick().RecordCheckpoint(ctx, e, checkpoint)
}

type postsPair struct{ pair }

func (p *postsPair) CreatePost(ctx context.Context, x post.Post) error {
	return p.pick().CreatePost(ctx, x)
}
func (p *postsPair) GetPost(ctx context.Context, id post.ID) (post.Post, error) {
	return p.pick().GetPost(ctx, id)
}
func (p *postsPair) UpdateTarget(ctx context.Context, id post.ID, account post.AccountID, u post.TargetUpdate) (post.Target, error) {
	return p.pick().UpdateTarget(ctx, id, account, u)
}
func (p *postsPair) Due(ctx context.Context, t time.Time, limit int) ([]publishing.TargetRef, error) {
	return p.pick().Due(ctx, t, limit)
}
func (p *postsPair) Unfinished(ctx context.Context, t time.Time, limit int) ([]publishing.TargetRef, error) {
	return p.pick().Unfinished(ctx, t, limit)
}
func (p *postsPair) CountTargets(ctx context.Context, statuses ...post.TargetStatus) (map[post.TargetStatus]int, error) {
	return p.pick().CountTargets(ctx, statuses...)
}

type accountsPair struct{ pair }

func (p *accountsPair) SetAccountSettings(ctx context.Context, id post.AccountID, st publishing.AccountChange) error {
	return p.pick().SetAccountSettings(ctx, id, st)
}
func (p *accountsPair) PutAccount(ctx context.Context, a post.Account) error {
	return p.pick().PutAccount(ctx, a)
}
func (p *accountsPair) GetAccount(ctx context.Context, id post.AccountID) (post.Account, error) {
	return p.pick().GetAccount(ctx, id)
}
func (p *accountsPair) ListAccounts(ctx context.Context) ([]post.Account, error) {
	return p.pick().ListAccounts(ctx)
}
func (p *accountsPair) Credential(ctx context.Context, id post.AccountID) (platform.Credential, error) {
	return p.pick().Credential(ctx, id)
}
func (p *accountsPair) PutCredential(ctx context.Context, id post.AccountID, c platform.Credential) error {
	return p.pick().PutCredential(ctx, id, c)
}
func (p *accountsPair) LeaseRefresh(ctx context.Context, id post.AccountID, owner string, now, until time.Time) error {
	return p.pick().LeaseRefresh(ctx, id, owner, now, until)
}
func (p *accountsPair) SaveRefreshed(ctx context.Context, id post.AccountID, owner string, c *platform.Credential) error {
	return p.pick().SaveRefreshed(ctx, id, owner, c)
}
func (p *accountsPair) MarkRefreshLost(ctx context.Context, id post.AccountID, owner string, at time.Time) error {
	return p.pick().MarkRefreshLost(ctx, id, owner, at)
}
