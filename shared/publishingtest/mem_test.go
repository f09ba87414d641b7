package publishingtest

// In-memory adapters for the suites' own tests: with no bugs they pass
// every suite (the suites are satisfiable); each bug switch breaks one
// promise, and the suites must notice. They are not a product.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// race widens the window of a deliberately non-atomic read-then-write.
func race() { time.Sleep(2 * time.Millisecond) }

// ---- Ledger ----

type ledgerBugs struct {
	noCreateRecord       bool // not a bug: History without the first write
	createOverwrites     bool
	createNotAtomic      bool
	createSkipsCheckNew  bool
	updateIgnoresState   bool
	updateIgnoresAttempt bool
	updateSkipsCheck     bool
	updateNotAtomic      bool
	updateUpserts        bool
	getTruncates         bool // keeps microseconds only
	getLocalTime         bool
	openIncludesClosed   bool
	openNewestFirst      bool
	openIgnoresLimit     bool
	openInclusive        bool
	historyNotRecorded   bool
	historyBeforeChecks  bool
	heldToHeldRefused    bool // an adapter with the old transition table
	dropsNewFields       bool // MaybeSent, LookAfter, RetryAt, DeferredSince, Decision not stored
	heldStaleAccepted    bool // the condition is state and attempt only
	checkpointAnyOwner   bool // RecordCheckpoint conditions on the key only
	checkpointAsMove     bool // RecordCheckpoint records a history transition
	heldNewestFirst      bool
	heldIncludesOpen     bool
}

type memLedger struct {
	bugs    ledgerBugs
	mu      sync.Mutex
	entries map[ledger.Key]ledger.Entry
	history map[ledger.Key][]ledger.Transition
}

var _ publishing.Ledger = (*memLedger)(nil)

func newMemLedger(b ledgerBugs) *memLedger {
	return &memLedger{bugs: b, entries: map[ledger.Key]ledger.Entry{}, history: map[ledger.Key][]ledger.Transition{}}
}

func (m *memLedger) Create(_ context.Context, e ledger.Entry) error {
	if !m.bugs.createSkipsCheckNew {
		if err := ledger.CheckNew(e); err != nil {
			return err
		}
	}
	e = m.store(e)
	m.mu.Lock()
	_, exists := m.entries[e.Key]
	if m.bugs.createNotAtomic {
		m.mu.Unlock()
		race()
		m.mu.Lock()
	}
	defer m.mu.Unlock()
	if exists && !m.bugs.createOverwrites {
		return fmt.Errorf("create %s: %w", e.Key, ledger.ErrConflict)
	}
	m.entries[e.Key] = e
	if !m.bugs.noCreateRecord {
		m.history[e.Key] = append(m.history[e.Key], ledger.Transition{Key: e.Key, To: e.State, Attempt: e.Attempt, At: e.UpdatedAt})
	}
	return nil
}

// store is what the adapter keeps of e.
func (m *memLedger) store(e ledger.Entry) ledger.Entry {
	if m.bugs.dropsNewFields {
		e.MaybeSent, e.LookAfter, e.RetryAt, e.DeferredSince, e.Decision = 0, "", time.Time{}, time.Time{}, ""
	}
	return e
}

func (m *memLedger) read(e ledger.Entry) ledger.Entry {
	conv := func(t *time.Time) {
		if m.bugs.getTruncates {
			*t = t.Truncate(time.Microsecond)
		}
		if m.bugs.getLocalTime && !t.IsZero() {
			*t = t.In(time.FixedZone("CET", 3600))
		}
	}
	for _, t := range []*time.Time{&e.Slot, &e.LeaseUntil, &e.OpenSince, &e.SentAt, &e.RetryAt, &e.DeferredSince, &e.UpdatedAt, &e.ExpiresAt} {
		conv(t)
	}
	return e
}

func (m *memLedger) Get(_ context.Context, key ledger.Key) (ledger.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[key]
	if !ok {
		return ledger.Entry{}, fmt.Errorf("get %s: %w", key, ledger.ErrNotFound)
	}
	return m.read(e), nil
}

func (m *memLedger) Update(_ context.Context, prev, next ledger.Entry) error {
	record := func() {
		m.history[next.Key] = append(m.history[next.Key], ledger.Transition{
			Key: next.Key, From: prev.State, To: next.State, Attempt: next.Attempt, Reason: next.Reason, At: next.UpdatedAt})
	}
	m.mu.Lock()
	if m.bugs.historyBeforeChecks {
		record()
	}
	m.mu.Unlock()
	if !m.bugs.updateSkipsCheck {
		if err := ledger.Check(prev, next); err != nil {
			return err
		}
	}
	if m.bugs.heldToHeldRefused && prev.State == ledger.Held && next.State == ledger.Held {
		return fmt.Errorf("update %s: held → held: %w", prev.Key, ledger.ErrTransition)
	}
	next = m.store(next)
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.entries[prev.Key]
	if !ok && !m.bugs.updateUpserts {
		return fmt.Errorf("update %s: %w", prev.Key, ledger.ErrConflict)
	}
	if ok && (!m.bugs.updateIgnoresState && cur.State != prev.State || !m.bugs.updateIgnoresAttempt && cur.Attempt != prev.Attempt) {
		return fmt.Errorf("update %s: stored %s attempt %d: %w", prev.Key, cur.State, cur.Attempt, ledger.ErrConflict)
	}
	if ok && !m.bugs.heldStaleAccepted && (cur.TaskToken != prev.TaskToken || cur.Decision != prev.Decision) {
		return fmt.Errorf("update %s: task token or decision changed: %w", prev.Key, ledger.ErrConflict)
	}
	if m.bugs.updateNotAtomic {
		m.mu.Unlock()
		race()
		m.mu.Lock()
	}
	m.entries[next.Key] = next
	if !m.bugs.historyNotRecorded && !m.bugs.historyBeforeChecks {
		record()
	}
	return nil
}

func (m *memLedger) Open(_ context.Context, before time.Time, limit int) ([]ledger.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ledger.Entry
	for _, e := range m.entries {
		if !e.State.Open() && !m.bugs.openIncludesClosed {
			continue
		}
		if e.OpenSince.Before(before) || m.bugs.openInclusive && e.OpenSince.Equal(before) {
			out = append(out, m.read(e))
		}
	}
	slices.SortFunc(out, func(a, b ledger.Entry) int {
		if m.bugs.openNewestFirst {
			a, b = b, a
		}
		return cmp.Or(a.OpenSince.Compare(b.OpenSince), cmp.Compare(a.Key, b.Key))
	})
	if len(out) > limit && !m.bugs.openIgnoresLimit {
		out = out[:limit]
	}
	return out, nil
}

func (m *memLedger) Held(_ context.Context, limit int) ([]ledger.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ledger.Entry
	for _, e := range m.entries {
		if e.State == ledger.Held || m.bugs.heldIncludesOpen && e.State.Open() {
			out = append(out, m.read(e))
		}
	}
	slices.SortFunc(out, func(a, b ledger.Entry) int {
		if m.bugs.heldNewestFirst {
			a, b = b, a
		}
		return cmp.Or(a.UpdatedAt.Compare(b.UpdatedAt), cmp.Compare(a.Key, b.Key))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (m *memLedger) RecordCheckpoint(_ context.Context, e ledger.Entry, checkpoint string) error {
	if e.State != ledger.Pending || checkpoint == "" {
		return fmt.Errorf("checkpoint %s: %w", e.Key, ledger.ErrTransition)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.entries[e.Key]
	if !ok || !m.bugs.checkpointAnyOwner && (cur.State != ledger.Pending || cur.Attempt != e.Attempt || cur.LeaseOwner != e.LeaseOwner) {
		return fmt.Errorf("checkpoint %s: %w", e.Key, ledger.ErrConflict)
	}
	cur.Checkpoint = checkpoint
	m.entries[e.Key] = cur
	if m.bugs.checkpointAsMove {
		m.history[e.Key] = append(m.history[e.Key], ledger.Transition{Key: e.Key, From: cur.State, To: cur.State, Attempt: cur.Attempt})
	}
	return nil
}

func (m *memLedger) History(_ context.Context, key ledger.Key) ([]ledger.Transition, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.history[key]), nil
}

// ---- Posts ----

type postsBugs struct {
	createOverwrites          bool
	updateSkipsApply          bool
	updateNotAtomic           bool
	dueAnyStatus              bool
	dueIgnoresLimit           bool
	dueBefore                 bool // slot before t instead of not after t
	updateIgnoresFrom         bool
	dropsNextTry              bool
	unfinishedIgnoresWaiting  bool
	unfinishedWaitingByUpdate bool // a waiting target is unfinished by UpdatedAt, not NextTry
	countIgnoresStatuses      bool // always counts every status
	countFirstStatusOnly      bool
}

type memPosts struct {
	bugs  postsBugs
	mu    sync.Mutex
	posts map[post.ID]post.Post
}

var _ publishing.Posts = (*memPosts)(nil)

func newMemPosts(b postsBugs) *memPosts { return &memPosts{bugs: b, posts: map[post.ID]post.Post{}} }

func clonePost(p post.Post) post.Post {
	p.Media = slices.Clone(p.Media)
	p.Targets = slices.Clone(p.Targets)
	return p
}

func (m *memPosts) CreatePost(_ context.Context, p post.Post) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.posts[p.ID]; ok && !m.bugs.createOverwrites {
		return fmt.Errorf("create post %s: %w", p.ID, post.ErrConflict)
	}
	p = clonePost(p)
	for i := range p.Targets {
		p.Targets[i] = m.store(p.Targets[i])
	}
	m.posts[p.ID] = p
	return nil
}

// store is what the adapter keeps of tg.
func (m *memPosts) store(tg post.Target) post.Target {
	if m.bugs.dropsNextTry {
		tg.NextTry = time.Time{}
	}
	return tg
}

func (m *memPosts) GetPost(_ context.Context, id post.ID) (post.Post, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.posts[id]
	if !ok {
		return post.Post{}, fmt.Errorf("post %s: %w", id, post.ErrNotFound)
	}
	return clonePost(p), nil
}

func (m *memPosts) UpdateTarget(_ context.Context, id post.ID, account post.AccountID, u post.TargetUpdate) (post.Target, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.posts[id]
	if !ok {
		return post.Target{}, fmt.Errorf("post %s: %w", id, post.ErrNotFound)
	}
	i := slices.IndexFunc(p.Targets, func(t post.Target) bool { return t.Account == account })
	if i < 0 {
		return post.Target{}, fmt.Errorf("post %s has no target %s: %w", id, account, post.ErrNotFound)
	}
	cur := p.Targets[i]
	if m.bugs.updateNotAtomic {
		m.mu.Unlock()
		race()
		m.mu.Lock()
	}
	if m.bugs.updateIgnoresFrom {
		u.From = nil
	}
	next, err := cur.Apply(u)
	if m.bugs.updateSkipsApply {
		next, err = cur, nil
		next.Status, next.Reason, next.NextTry, next.UpdatedAt = u.Status, u.Reason, u.NextTry.UTC(), u.At.UTC()
		if u.RemoteID != "" {
			next.RemoteID = u.RemoteID
		}
	}
	if err != nil {
		return post.Target{}, err
	}
	next = m.store(next)
	p = clonePost(m.posts[id])
	p.Targets[i] = next
	m.posts[id] = p
	return next, nil
}

func (m *memPosts) Due(_ context.Context, t time.Time, limit int) ([]publishing.TargetRef, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []publishing.TargetRef
	for _, p := range m.posts {
		for _, tg := range p.Targets {
			due := !tg.Slot.After(t)
			if m.bugs.dueBefore {
				due = tg.Slot.Before(t)
			}
			if (tg.Status == post.Scheduled || m.bugs.dueAnyStatus) && due {
				out = append(out, publishing.TargetRef{Post: p.ID, Account: tg.Account, Slot: tg.Slot})
			}
		}
	}
	slices.SortFunc(out, func(a, b publishing.TargetRef) int {
		return cmp.Or(a.Slot.Compare(b.Slot), cmp.Compare(a.Post, b.Post), cmp.Compare(a.Account, b.Account))
	})
	if len(out) > limit && !m.bugs.dueIgnoresLimit {
		out = out[:limit]
	}
	return out, nil
}

func (m *memPosts) CountTargets(_ context.Context, statuses ...post.TargetStatus) (map[post.TargetStatus]int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bugs.countIgnoresStatuses {
		statuses = nil
	}
	if m.bugs.countFirstStatusOnly && len(statuses) > 1 {
		statuses = statuses[:1]
	}
	out := map[post.TargetStatus]int{}
	for _, p := range m.posts {
		for _, tg := range p.Targets {
			if len(statuses) == 0 || slices.Contains(statuses, tg.Status) {
				out[tg.Status]++
			}
		}
	}
	return out, nil
}

func (m *memPosts) Unfinished(_ context.Context, t time.Time, limit int) ([]publishing.TargetRef, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	type row struct {
		ref publishing.TargetRef
		at  time.Time
	}
	var rows []row
	for _, p := range m.posts {
		for _, tg := range p.Targets {
			at := tg.UpdatedAt
			switch {
			case tg.Status == post.Triggered || tg.Status == post.Publishing:
			case tg.Status == post.Waiting && !m.bugs.unfinishedIgnoresWaiting:
				if !m.bugs.unfinishedWaitingByUpdate {
					at = tg.NextTry
				}
			default:
				continue
			}
			if at.Before(t) {
				rows = append(rows, row{publishing.TargetRef{Post: p.ID, Account: tg.Account, Slot: tg.Slot}, at})
			}
		}
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.ref.Post, b.ref.Post), cmp.Compare(a.ref.Account, b.ref.Account))
	})
	var out []publishing.TargetRef
	for _, r := range rows {
		if len(out) == limit {
			break
		}
		out = append(out, r.ref)
	}
	return out, nil
}

// ---- Accounts ----

type accountsBugs struct {
	emptyAccessAccepted   bool
	putOverwritesRefresh  bool
	saveOverwritesRefresh bool
	leaseNotExclusive     bool
	leaseNeverExpires     bool
	saveIgnoresOwner      bool
	saveKeepsLease        bool
	dropsAccountStatus    bool
	markLostIgnoresOwner  bool
	markLostKeepsLease    bool
	saveKeepsLost         bool // SaveRefreshed leaves RefreshLostAt as it was
	putKeepsLost          bool // PutCredential leaves RefreshLostAt as it was
	dropsLimits           bool // an adapter from before schema 3
	dropsClientApp        bool // ClientID and ClientSecret not stored
}

type refreshLease struct {
	owner string
	until time.Time
}

type memAccounts struct {
	bugs     accountsBugs
	mu       sync.Mutex
	accounts map[post.AccountID]post.Account
	creds    map[post.AccountID]platform.Credential
	leases   map[post.AccountID]refreshLease
}

var _ publishing.Accounts = (*memAccounts)(nil)

func newMemAccounts(b accountsBugs) *memAccounts {
	return &memAccounts{bugs: b, accounts: map[post.AccountID]post.Account{},
		creds: map[post.AccountID]platform.Credential{}, leases: map[post.AccountID]refreshLease{}}
}

func (m *memAccounts) PutAccount(_ context.Context, a post.Account) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bugs.dropsAccountStatus {
		a.Status, a.StatusReason = "", ""
	}
	if m.bugs.dropsLimits {
		a.Limits = post.Limits{}
	}
	m.accounts[a.ID] = a
	return nil
}

func (m *memAccounts) GetAccount(_ context.Context, id post.AccountID) (post.Account, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.accounts[id]
	if !ok {
		return post.Account{}, fmt.Errorf("account %s: %w", id, post.ErrNotFound)
	}
	return a, nil
}

func (m *memAccounts) ListAccounts(context.Context) ([]post.Account, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]post.Account, 0, len(m.accounts))
	for _, a := range m.accounts {
		out = append(out, a)
	}
	return out, nil
}

func (m *memAccounts) Credential(_ context.Context, id post.AccountID) (platform.Credential, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.creds[id]
	if !ok {
		return platform.Credential{}, fmt.Errorf("credential %s: %w", id, post.ErrNotFound)
	}
	return c, nil
}

// store merges c into the stored credential; the caller holds mu. A new
// credential clears a lost refresh unless keepLost.
func (m *memAccounts) store(id post.AccountID, c platform.Credential, keepRefresh, keepLost bool) {
	if c.RefreshToken == "" && keepRefresh {
		c.RefreshToken = m.creds[id].RefreshToken
	}
	c.ExpiresAt = c.ExpiresAt.UTC()
	if m.bugs.dropsClientApp {
		c.ClientID, c.ClientSecret = "", ""
	}
	c.RefreshLostAt = time.Time{}
	if keepLost {
		c.RefreshLostAt = m.creds[id].RefreshLostAt
	}
	m.creds[id] = c
}

func (m *memAccounts) PutCredential(_ context.Context, id post.AccountID, c platform.Credential) error {
	if c.AccessToken == "" && !m.bugs.emptyAccessAccepted {
		return errors.New("credential without an access token")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.store(id, c, !m.bugs.putOverwritesRefresh, m.bugs.putKeepsLost)
	return nil
}

func (m *memAccounts) LeaseRefresh(_ context.Context, id post.AccountID, owner string, now, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.leases[id]; ok && !m.bugs.leaseNotExclusive && (now.Before(l.until) || m.bugs.leaseNeverExpires) {
		return fmt.Errorf("refresh lease of %s held by %s: %w", id, l.owner, post.ErrConflict)
	}
	m.leases[id] = refreshLease{owner: owner, until: until}
	return nil
}

func (m *memAccounts) SaveRefreshed(_ context.Context, id post.AccountID, owner string, c *platform.Credential) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.leases[id]; (!ok || l.owner != owner) && !m.bugs.saveIgnoresOwner {
		return fmt.Errorf("refresh lease of %s not held by %s: %w", id, owner, post.ErrConflict)
	}
	if c != nil {
		m.store(id, *c, !m.bugs.saveOverwritesRefresh, m.bugs.saveKeepsLost)
	}
	if !m.bugs.saveKeepsLease {
		delete(m.leases, id)
	}
	return nil
}

func (m *memAccounts) MarkRefreshLost(_ context.Context, id post.AccountID, owner string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.leases[id]; (!ok || l.owner != owner) && !m.bugs.markLostIgnoresOwner {
		return fmt.Errorf("refresh lease of %s not held by %s: %w", id, owner, post.ErrConflict)
	}
	if c, ok := m.creds[id]; ok {
		c.RefreshLostAt = at.UTC()
		m.creds[id] = c
	}
	if !m.bugs.markLostKeepsLease {
		delete(m.leases, id)
	}
	return nil
}

// ---- Queue ----

type queueBugs struct {
	receiveNoHide     bool
	neverDeadLetter   bool
	staleAckDeletes   bool
	ackKeeps          bool
	ignoresSendDelay  bool
	retryIgnoresDelay bool
	reuseReceipt      bool
	sharesBody        bool
	dropsReason       bool
	acceptsOversized  bool
	reasonUncut       bool
	reasonCutMidRune  bool
	redriveKeepsCount bool // the redriven message keeps its receive count
	redriveKeepsDead  bool // Redrive leaves the dead letter listed
	dropKeeps         bool // Drop answers nil and deletes nothing
	depthCountsAll    bool // every message counted visible
}

type memMsg struct {
	id        string
	body      []byte
	sentAt    time.Time
	visibleAt time.Time
	count     int
	receipt   string
	old       []string
}

type memQueue struct {
	bugs        queueBugs
	maxReceives int
	mu          sync.Mutex
	seq         int
	msgs        []*memMsg
	dead        []publishing.DeadLetter
}

var (
	_ publishing.Queue           = (*memQueue)(nil)
	_ publishing.DeadLetterAdmin = (*memQueue)(nil)
)

func newMemQueue(b queueBugs, maxReceives int) *memQueue {
	return &memQueue{bugs: b, maxReceives: maxReceives}
}

func (q *memQueue) Send(_ context.Context, body []byte, delay time.Duration) (string, error) {
	if len(body) > publishing.MaxMessageBytes && !q.bugs.acceptsOversized {
		return "", fmt.Errorf("body of %d bytes is over the limit of %d", len(body), publishing.MaxMessageBytes)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	now := time.Now()
	if q.bugs.ignoresSendDelay {
		delay = 0
	}
	if !q.bugs.sharesBody {
		body = slices.Clone(body)
	}
	m := &memMsg{id: fmt.Sprintf("msg-%d", q.seq), body: body, sentAt: now.UTC(), visibleAt: now.Add(delay)}
	q.msgs = append(q.msgs, m)
	return m.id, nil
}

func (q *memQueue) Receive(_ context.Context, max int, visibility time.Duration) ([]publishing.Message, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	var out []publishing.Message
	keep := q.msgs[:0]
	for _, m := range q.msgs {
		if len(out) == max || now.Before(m.visibleAt) {
			keep = append(keep, m)
			continue
		}
		if m.count >= q.maxReceives && !q.bugs.neverDeadLetter {
			q.bury(m, fmt.Sprintf("received %d times, the maximum is %d", m.count, q.maxReceives), now)
			continue
		}
		keep = append(keep, m)
		m.count++
		if m.receipt != "" {
			m.old = append(m.old, m.receipt)
		}
		m.receipt = fmt.Sprintf("%s/%d", m.id, m.count)
		if q.bugs.reuseReceipt {
			m.receipt = m.id
		}
		if !q.bugs.receiveNoHide {
			m.visibleAt = now.Add(visibility)
		}
		out = append(out, publishing.Message{ID: m.id, Body: slices.Clone(m.body), ReceiveCount: m.count, Receipt: m.receipt, SentAt: m.sentAt})
	}
	q.msgs = keep
	return out, nil
}

func (q *memQueue) Depth(context.Context) (publishing.QueueDepth, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	d := publishing.QueueDepth{DeadLetters: len(q.dead)}
	for _, m := range q.msgs {
		switch {
		case !now.Before(m.visibleAt) || q.bugs.depthCountsAll:
			d.Visible++
		case m.count == 0:
			d.Delayed++
		default:
			d.InFlight++
		}
	}
	return d, nil
}

func (q *memQueue) bury(m *memMsg, reason string, now time.Time) {
	if q.bugs.dropsReason {
		reason = "dead"
	}
	if len(reason) > publishing.MaxReasonBytes && !q.bugs.reasonUncut {
		const marker = " [cut]"
		end := publishing.MaxReasonBytes - len(marker)
		for !q.bugs.reasonCutMidRune && !utf8.RuneStart(reason[end]) {
			end--
		}
		reason = reason[:end] + marker
	}
	q.dead = append(q.dead, publishing.DeadLetter{ID: m.id, Body: slices.Clone(m.body), ReceiveCount: m.count, Reason: reason, At: now.UTC()})
}

// find returns the index of the message delivered with receipt; the
// caller holds mu.
func (q *memQueue) find(receipt string) (int, error) {
	for i, m := range q.msgs {
		if m.receipt == receipt || q.bugs.staleAckDeletes && slices.Contains(m.old, receipt) {
			return i, nil
		}
	}
	return -1, fmt.Errorf("receipt %q is not the latest delivery of any message", receipt)
}

func (q *memQueue) Ack(_ context.Context, receipt string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	i, err := q.find(receipt)
	if err != nil {
		return err
	}
	if !q.bugs.ackKeeps {
		q.msgs = slices.Delete(q.msgs, i, i+1)
	}
	return nil
}

func (q *memQueue) Retry(_ context.Context, receipt string, delay time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	i, err := q.find(receipt)
	if err != nil {
		return err
	}
	if q.bugs.retryIgnoresDelay {
		delay = 0
	}
	q.msgs[i].visibleAt = time.Now().Add(delay)
	return nil
}

func (q *memQueue) DeadLetter(_ context.Context, receipt, reason string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	i, err := q.find(receipt)
	if err != nil {
		return err
	}
	q.bury(q.msgs[i], reason, time.Now())
	q.msgs = slices.Delete(q.msgs, i, i+1)
	return nil
}

func (q *memQueue) DeadLetters(_ context.Context, limit int) ([]publishing.DeadLetter, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.dead[:min(limit, len(q.dead))]), nil
}

// deadIndex returns the index of the dead letter with id; the caller holds mu.
func (q *memQueue) deadIndex(id string) (int, error) {
	i := slices.IndexFunc(q.dead, func(d publishing.DeadLetter) bool { return d.ID == id })
	if i < 0 {
		return -1, fmt.Errorf("no dead letter %s: %w", id, publishing.ErrMessageNotFound)
	}
	return i, nil
}

func (q *memQueue) Redrive(_ context.Context, id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	i, err := q.deadIndex(id)
	if err != nil {
		return err
	}
	d := q.dead[i]
	now := time.Now()
	m := &memMsg{id: d.ID, body: slices.Clone(d.Body), sentAt: now.UTC(), visibleAt: now}
	if q.bugs.redriveKeepsCount {
		m.count = d.ReceiveCount
	}
	q.msgs = append(q.msgs, m)
	if !q.bugs.redriveKeepsDead {
		q.dead = slices.Delete(q.dead, i, i+1)
	}
	return nil
}

func (q *memQueue) Drop(_ context.Context, id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	i, err := q.deadIndex(id)
	if err != nil {
		return err
	}
	if !q.bugs.dropKeeps {
		q.dead = slices.Delete(q.dead, i, i+1)
	}
	return nil
}
