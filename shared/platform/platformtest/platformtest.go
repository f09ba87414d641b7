// Package platformtest is test support for the platform adapters whose
// tokens expire and are refreshed (Mastodon, Bluesky, X, Threads,
// LinkedIn). It drives an adapter, pointed at the adapter's own fake
// server, through the publishing use case — publishing.Publisher and its
// publishing.Credentials on a real SQLite store (sqlitestore) — and checks
// two guarantees every such adapter must give there:
//
//   - RefreshConcurrency: workers that all meet an expired access token at
//     once spend the refresh token once; every post still goes out, once;
//     the rotated pair is what is stored.
//   - NoSecretsInOutput: no token and no client secret appears in a log
//     line, an error, an outcome or a recorded reason, after a publish
//     that refreshes, one the platform refuses and (when the fake can)
//     one whose refresh is refused.
//
// An adapter's test builds a Fake from its fake server and calls both;
// each call needs a Fake of its own (a fresh server and account). The
// functions do not call t.Parallel, and NoSecretsInOutput swaps the
// process's default slog logger (and so the log package's output) for the
// duration of the test: run them in tests that are not parallel.
package platformtest

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"oncepost/shared/clocktest"
	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// Fake is a platform's fake server for one account, as an adapter's tests
// provide it. The account's access token (Credential.AccessToken) must
// already be refused by the fake as expired, and its refresh must work.
type Fake struct {
	// Platforms is the adapter's Connector pointed at the fake.
	Platforms publishing.Platforms
	// Account names the platform, the fake (BaseURL) and the account on it
	// (RemoteID). ID, Handle, CredentialRef and Gate are filled in when empty.
	Account post.Account
	// Credential is the initial, expired credential.
	Credential platform.Credential
	// RefreshCalls counts the refresh requests the fake received.
	RefreshCalls func() int
	// Posts counts the posts the fake stores.
	Posts func() int
	// Secrets are further values to search the output for (the client
	// secret of the Connector, a Basic authorization value…). The initial
	// credential's tokens and client secret, the tokens the fake issued and
	// the stored credential's are searched without being listed.
	Secrets []string
	// Issued returns the tokens of the fake's latest successful refresh.
	// refresh is "" when the platform does not rotate refresh tokens
	// (Threads): the stored refresh token must then be the initial one.
	Issued func() (access, refresh string)
	// FailNextPublish makes the fake answer the next create (the call that
	// makes the post) with a platform error. NoSecretsInOutput needs it.
	FailNextPublish func()
	// RefuseRefresh, when set, makes the fake refuse the current access
	// token as expired and refuse the next refresh (an OAuth error). It
	// adds a third publish to NoSecretsInOutput, which must end held with
	// the account marked reconnect_needed.
	RefuseRefresh func()
}

// Timings of the publishers under test. HTTP deadlines run on the wall
// clock, leases on the fake clock.
const (
	callTimeout  = 10 * time.Second
	recordMargin = 2 * time.Second
	entryLease   = 2 * time.Minute
	// gateWait bounds how long the first refresh is held for the other
	// workers to meet the 401 and lose the lease (well inside callTimeout).
	gateWait = 3 * time.Second
	// maxRetries bounds the re-publishes of one released post.
	maxRetries = 10
)

// RefreshConcurrency has workers publishers (one per worker, each with its
// own Owner and Credentials, sharing one SQLite store) publish one post
// each at the same moment with the expired credential. The one refresh
// call is held at the adapter's boundary until every worker has met the
// 401 and every other worker has lost the account's refresh lease, so all
// of them contend. It then re-publishes each post that was released (its
// outcome Retry), advancing the fake clock by its RetryAfter, until it is
// published, and asserts:
//
//   - exactly one refresh call reached the fake (and one Client.Refresh
//     was made);
//   - every post is published, with its own remote id, and the fake
//     stores exactly workers posts;
//   - the stored credential is the pair the fake issued (the refresh
//     token unchanged when the platform does not rotate it), the account
//     needs no reconnect and the refresh lease was released.
func RefreshConcurrency(t *testing.T, f Fake, workers int) {
	t.Helper()
	if workers < 2 {
		t.Fatalf("platformtest: RefreshConcurrency needs at least 2 workers, got %d", workers)
	}
	r := start(t, f)
	defer r.dumpLogsOnFailure()
	ctx := r.ctx

	jobs := make([]publishing.Job, workers)
	pubs := make([]*publishing.Publisher, workers)
	for i := range workers {
		jobs[i] = r.schedule(fmt.Sprintf("Concurrent post %d of %d", i+1, workers))
		pubs[i] = r.publisher(fmt.Sprintf("worker-%d", i+1))
	}
	var gateTimedOut atomic.Bool
	r.calls.setGate(func() {
		deadline := time.Now().Add(gateWait)
		for r.calls.unauthorized.Load() < int32(workers) || r.accounts.conflicts.Load() < int32(workers-1) {
			if time.Now().After(deadline) {
				gateTimedOut.Store(true)
				return
			}
			time.Sleep(time.Millisecond)
		}
	})

	first := make([]publishing.Outcome, workers)
	begin := make(chan struct{})
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			<-begin
			out, err := pubs[i].Publish(ctx, jobs[i])
			if err != nil {
				t.Errorf("worker %d: publish: %v", i+1, err)
			}
			first[i] = out
		})
	}
	close(begin)
	wg.Wait()
	if gateTimedOut.Load() {
		t.Logf("the refresh was let go after %s with %d of %d workers past the expired token and %d lease conflicts",
			gateWait, r.calls.unauthorized.Load(), workers, r.accounts.conflicts.Load())
	}
	unauthorized, leases, conflicts := r.calls.unauthorized.Load(), r.accounts.leases.Load(), r.accounts.conflicts.Load()

	var publishedAtOnce, released int
	for i, out := range first {
		switch out.Result {
		case publishing.Published:
			publishedAtOnce++
		case publishing.Retry:
			released++
		default:
			t.Errorf("worker %d: first outcome %s (%s), want published or retry: a lost refresh race must only delay a post", i+1, out.Result, out.Reason)
		}
	}

	final := slices.Clone(first)
	retries := 0
	for i := range workers {
		for try := 0; final[i].Result == publishing.Retry && try < maxRetries; try++ {
			r.clock.Advance(max(final[i].RetryAfter, time.Second))
			out, err := pubs[i].Publish(ctx, jobs[i])
			if err != nil {
				t.Errorf("worker %d: re-publish: %v", i+1, err)
			}
			final[i] = out
			retries++
		}
	}

	refreshCalls, clientRefreshes := f.RefreshCalls(), int(r.calls.refreshes.Load())
	stored := f.Posts()
	t.Logf("%d workers: %d met the expired token (Unauthorized), %d took the refresh lease, %d lost it; %d published at once, "+
		"%d released and published after %d re-publishes; %d refresh request(s) reached the fake (%d Client.Refresh call(s)); the fake stores %d posts",
		workers, unauthorized, leases, conflicts, publishedAtOnce, released, retries, refreshCalls, clientRefreshes, stored)

	if refreshCalls != 1 {
		t.Errorf("the fake received %d refresh requests, want exactly 1", refreshCalls)
	}
	if clientRefreshes != 1 {
		t.Errorf("the use case called Client.Refresh %d times, want exactly 1", clientRefreshes)
	}
	if stored != workers {
		t.Errorf("the fake stores %d posts, want %d (each post exactly once)", stored, workers)
	}
	remote := map[string]int{}
	for i, out := range final {
		if out.Result != publishing.Published || out.RemoteID == "" {
			t.Errorf("worker %d: final outcome %s (%q, remote id %q), want published", i+1, out.Result, out.Reason, out.RemoteID)
			continue
		}
		if j, dup := remote[out.RemoteID]; dup {
			t.Errorf("workers %d and %d both report remote id %q", j+1, i+1, out.RemoteID)
		}
		remote[out.RemoteID] = i
		if tg := r.target(jobs[i]); tg.Status != post.Published || tg.RemoteID != out.RemoteID {
			t.Errorf("worker %d: target %s with remote id %q, want published with %q", i+1, tg.Status, tg.RemoteID, out.RemoteID)
		}
	}

	r.checkRotated()
	acc, err := r.store.GetAccount(ctx, r.acc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if acc.Status != post.AccountOK {
		t.Errorf("account status %q (%s), want ok", acc.Status, acc.StatusReason)
	}
	// The winner released the lease: another refresh can start at once.
	now := r.clock.Now()
	if err := r.store.LeaseRefresh(ctx, r.acc.ID, "platformtest-probe", now, now.Add(time.Second)); err != nil {
		t.Errorf("the account's refresh lease is still held after the refresh: %v", err)
	} else if err := r.store.SaveRefreshed(ctx, r.acc.ID, "platformtest-probe", nil); err != nil {
		t.Errorf("drop the probe's lease: %v", err)
	}
}

// checkRotated asserts that the stored credential is the pair the fake
// issued last.
func (r *run) checkRotated() {
	t := r.t
	t.Helper()
	cred, err := r.store.Credential(r.ctx, r.acc.ID)
	if err != nil {
		t.Fatalf("stored credential: %v", err)
	}
	access, refresh := r.f.Issued()
	if access == "" {
		t.Fatalf("the fake reports no issued access token")
	}
	wantRefresh, what := refresh, "the fake's new refresh token"
	if refresh == "" {
		wantRefresh, what = r.f.Credential.RefreshToken, "the initial refresh token (the platform does not rotate it)"
	}
	switch {
	case cred.AccessToken == r.f.Credential.AccessToken:
		t.Errorf("the stored access token is still the expired one")
	case cred.AccessToken != access:
		t.Errorf("the stored access token is not the one the fake issued last")
	}
	if cred.RefreshToken != wantRefresh {
		t.Errorf("the stored refresh token is not %s", what)
	}
	if !cred.RefreshLostAt.IsZero() {
		t.Errorf("the stored credential says a refresh answer was lost at %s", cred.RefreshLostAt)
	}
}

// NoSecretsInOutput publishes through the use case with every output
// captured, and searches it for every secret:
//
//  1. a post with the expired credential: a 401, one refresh, published;
//  2. a post the fake refuses (FailNextPublish): not published;
//  3. when the fake has RefuseRefresh: a post whose refresh is refused:
//     held, the account marked reconnect_needed.
//
// The output is every line logged, at Debug level and up, through the
// slog logger given to the Publisher and its Credentials (and through the
// default slog logger and the log package, swapped for the test): the
// JSON a handler writes and the raw value of every attribute; every error
// a platform client returned to the use case and every error Publish
// returned (Error, %+v and %#v); the outcomes (Reason included); and what
// the store recorded: targets, ledger entries and their history, the
// account. The secrets are the tokens of the initial credential, of the
// fake's refresh and of the stored credential, every client secret, and
// Fake.Secrets, each as is and URL-encoded (query and path escaping).
func NoSecretsInOutput(t *testing.T, f Fake) {
	t.Helper()
	if f.FailNextPublish == nil {
		t.Fatalf("platformtest: NoSecretsInOutput needs Fake.FailNextPublish")
	}
	r := start(t, f)
	defer r.dumpLogsOnFailure()
	r.captureDefaultLoggers()
	ctx := r.ctx
	p := r.publisher("worker-1")
	var jobs []publishing.Job

	job := r.schedule("A post published after a refresh")
	jobs = append(jobs, job)
	out, err := p.Publish(ctx, job)
	r.note("publish with the expired token", out, err)
	if out.Result != publishing.Published {
		t.Errorf("publish with the expired token: %s (%s), want published", out.Result, redact(out.Reason, r.secrets()))
	}
	if n := f.RefreshCalls(); n != 1 {
		t.Errorf("publish with the expired token: the fake received %d refresh requests, want 1", n)
	}
	r.refreshed.access, r.refreshed.refresh = f.Issued()

	f.FailNextPublish()
	job = r.schedule("A post the platform refuses")
	jobs = append(jobs, job)
	out, err = p.Publish(ctx, job)
	r.note("publish refused by the platform", out, err)
	if out.Result == publishing.Published {
		t.Errorf("publish refused by the platform: published; FailNextPublish did not make the fake fail it")
	}
	t.Logf("the refused publish ended %s: %s", out.Result, redact(out.Reason, r.secrets()))

	if f.RefuseRefresh != nil {
		before := f.RefreshCalls()
		f.RefuseRefresh()
		job = r.schedule("A post whose refresh is refused")
		jobs = append(jobs, job)
		out, err = p.Publish(ctx, job)
		r.note("publish with a refused refresh", out, err)
		if out.Result != publishing.Held {
			t.Errorf("publish with a refused refresh: %s (%s), want held", out.Result, redact(out.Reason, r.secrets()))
		}
		if n := f.RefreshCalls() - before; n != 1 {
			t.Errorf("publish with a refused refresh: the fake received %d refresh requests, want 1", n)
		}
		if acc, err := r.store.GetAccount(ctx, r.acc.ID); err != nil {
			t.Fatal(err)
		} else if acc.Status != post.AccountReconnectNeeded {
			t.Errorf("after a refused refresh the account status is %q, want reconnect_needed", acc.Status)
		}
	}

	r.noteStore(jobs)
	secrets := r.secrets()
	texts := r.outputs()
	found := 0
	for _, s := range secrets {
		for _, form := range forms(s.value) {
			for _, tx := range texts {
				if i := strings.Index(tx.text, form.value); i >= 0 {
					found++
					t.Errorf("%s carries %s (%s): …%s…", tx.where, s.name, form.name, redact(excerpt(tx.text, i, len(form.value)), secrets))
				}
			}
		}
	}
	lines, errs := r.logs.count(), r.calls.errorCount()
	t.Logf("searched %d texts (%d log records, %d platform errors, outcomes and store records) for %d secrets: %d found",
		len(texts), lines, errs, len(secrets), found)
	if lines == 0 {
		t.Errorf("no log record was captured; the search proves nothing")
	}
}

// run is one harness run: a store, an account, a clock, and what the
// publishers said.
type run struct {
	t        *testing.T
	f        Fake
	ctx      context.Context
	store    *sqlitestore.Store
	clock    *clocktest.Clock
	acc      post.Account
	accounts *countingAccounts
	calls    *recorder
	logs     *capture
	logger   *slog.Logger
	flows    *flows

	// refreshed is the pair the fake issued in NoSecretsInOutput's refresh.
	refreshed struct{ access, refresh string }

	mu    sync.Mutex
	notes []text
	seq   int
}

// text is one piece of output and where it came from.
type text struct{ where, text string }

func start(t *testing.T, f Fake) *run {
	t.Helper()
	switch {
	case f.Platforms == nil, f.RefreshCalls == nil, f.Posts == nil, f.Issued == nil:
		t.Fatalf("platformtest: Fake needs Platforms, RefreshCalls, Posts and Issued")
	case f.Credential.AccessToken == "":
		t.Fatalf("platformtest: Fake.Credential has no access token")
	case f.Account.Platform == "":
		t.Fatalf("platformtest: Fake.Account has no Platform")
	}
	ctx := t.Context()
	store, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "oncepost.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { store.Close() })
	acc := f.Account
	if acc.ID == "" {
		acc.ID = post.AccountID("platformtest-" + acc.Platform)
	}
	if acc.Handle == "" {
		acc.Handle = "@platformtest"
	}
	if acc.CredentialRef == "" {
		acc.CredentialRef = string(acc.ID)
	}
	if acc.Gate == "" {
		acc.Gate = post.GateAuto
	}
	if err := store.PutAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	if err := store.PutCredential(ctx, acc.ID, f.Credential); err != nil {
		t.Fatal(err)
	}
	logs := &capture{}
	r := &run{
		t: t, f: f, ctx: ctx, store: store, acc: acc, logs: logs,
		clock:    clocktest.New(time.Now().UTC().Truncate(time.Millisecond)),
		accounts: &countingAccounts{Accounts: store},
		calls:    &recorder{},
		logger:   slog.New(logs.handler()),
		flows:    &flows{},
	}
	return r
}

// publisher is one worker: its own Owner and its own Credentials (as two
// processes would have), sharing the store.
func (r *run) publisher(owner string) *publishing.Publisher {
	creds := &publishing.Credentials{
		Accounts: r.accounts, Owner: owner, CallTimeout: callTimeout, RecordMargin: recordMargin,
		Now: r.clock.Now, Logger: r.logger,
	}
	return &publishing.Publisher{
		Ledger: r.store, Posts: r.store, Accounts: r.accounts, Flows: r.flows,
		Platforms: recordingPlatforms{next: r.f.Platforms, rec: r.calls}, Credentials: creds,
		Now: r.clock.Now, Owner: owner, CallTimeout: callTimeout, RecordMargin: recordMargin, Lease: entryLease,
		Logger: r.logger,
	}
}

// schedule stores a post for the account, due now and triggered, and
// returns its job. Every body is different (X refuses a text the account
// posted already; the publisher holds a duplicate) and plain (no
// characters any platform escapes).
func (r *run) schedule(body string) publishing.Job {
	r.t.Helper()
	r.mu.Lock()
	r.seq++
	n := r.seq
	r.mu.Unlock()
	slot := r.clock.Now().Truncate(time.Second)
	p := post.Post{
		ID:        post.ID(fmt.Sprintf("platformtest-%d", n)),
		Body:      fmt.Sprintf("%s, number %d of the %s platform test.", body, n, r.acc.Platform),
		CreatedAt: slot,
		Targets:   []post.Target{{Account: r.acc.ID, Slot: slot, Status: post.Scheduled, UpdatedAt: slot}},
	}
	if err := r.store.CreatePost(r.ctx, p); err != nil {
		r.t.Fatalf("create post: %v", err)
	}
	if _, err := r.store.UpdateTarget(r.ctx, p.ID, r.acc.ID, post.TargetUpdate{Status: post.Triggered, At: slot}); err != nil {
		r.t.Fatalf("trigger post: %v", err)
	}
	return publishing.Job{Post: p.ID, Account: r.acc.ID, Slot: slot}
}

func (r *run) target(job publishing.Job) post.Target {
	r.t.Helper()
	p, err := r.store.GetPost(r.ctx, job.Post)
	if err != nil {
		r.t.Fatal(err)
	}
	tg, _ := p.Target(job.Account)
	return tg
}

// note keeps an outcome and an error of Publish for the search.
func (r *run) note(what string, out publishing.Outcome, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, text{what + ": outcome", fmt.Sprintf("%+v", out)}, text{what + ": outcome", fmt.Sprintf("%#v", out)})
	if err != nil {
		r.notes = append(r.notes, errorTexts(what+": error", err)...)
	}
}

// noteStore keeps what the store recorded for the jobs and the account.
func (r *run) noteStore(jobs []publishing.Job) {
	ctx := r.ctx
	var notes []text
	for _, job := range jobs {
		p, err := r.store.GetPost(ctx, job.Post)
		if err != nil {
			r.t.Fatal(err)
		}
		notes = append(notes, text{"stored post " + string(job.Post), fmt.Sprintf("%+v", p)})
		key := ledger.PublishKey(string(job.Account), string(job.Post), job.Slot)
		e, err := r.store.Get(ctx, key)
		if errors.Is(err, ledger.ErrNotFound) {
			continue
		}
		if err != nil {
			r.t.Fatal(err)
		}
		notes = append(notes, text{"ledger entry " + string(key), fmt.Sprintf("%+v", e)})
		h, err := r.store.History(ctx, key)
		if err != nil {
			r.t.Fatal(err)
		}
		notes = append(notes, text{"ledger history " + string(key), fmt.Sprintf("%+v", h)})
	}
	acc, err := r.store.GetAccount(ctx, r.acc.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	notes = append(notes, text{"stored account", fmt.Sprintf("%+v", acc)})
	r.mu.Lock()
	r.notes = append(r.notes, notes...)
	r.mu.Unlock()
}

// outputs is every text to search.
func (r *run) outputs() []text {
	out := r.logs.texts()
	out = append(out, r.calls.texts()...)
	r.mu.Lock()
	out = append(out, r.notes...)
	r.mu.Unlock()
	return out
}

// secret is a value to search for, named for the failure message (the
// value itself is never printed).
type secret struct{ name, value string }

func (r *run) secrets() []secret {
	var out []secret
	add := func(name, v string) {
		if v == "" {
			return
		}
		if len(v) < 8 {
			r.t.Fatalf("platformtest: %s %q is too short to be searched for without false alarms", name, v)
		}
		if !slices.ContainsFunc(out, func(s secret) bool { return s.value == v }) {
			out = append(out, secret{name, v})
		}
	}
	c := r.f.Credential
	add("the initial access token", c.AccessToken)
	add("the initial refresh token", c.RefreshToken)
	add("the initial credential's client secret", c.ClientSecret)
	add("the refreshed access token", r.refreshed.access)
	add("the refreshed refresh token", r.refreshed.refresh)
	access, refresh := r.f.Issued()
	add("the access token the fake issued last", access)
	add("the refresh token the fake issued last", refresh)
	if s, err := r.store.Credential(r.ctx, r.acc.ID); err == nil {
		add("the stored access token", s.AccessToken)
		add("the stored refresh token", s.RefreshToken)
		add("the stored client secret", s.ClientSecret)
	}
	for i, s := range r.f.Secrets {
		add(fmt.Sprintf("Fake.Secrets[%d]", i), s)
	}
	return out
}

type form struct{ name, value string }

// forms are the ways a secret can be written out: as is, and URL-encoded.
func forms(v string) []form {
	out := []form{{"as is", v}}
	for _, f := range []form{{"query-escaped", url.QueryEscape(v)}, {"path-escaped", url.PathEscape(v)}} {
		if !slices.ContainsFunc(out, func(o form) bool { return o.value == f.value }) {
			out = append(out, f)
		}
	}
	return out
}

// excerpt is the text around a match.
func excerpt(s string, i, n int) string {
	from, to := max(i-60, 0), min(i+n+60, len(s))
	return s[from:to]
}

// redact hides the secrets in a failure message: it says where a secret
// was, never what it is.
func redact(s string, secrets []secret) string {
	for _, sec := range secrets {
		for _, f := range forms(sec.value) {
			s = strings.ReplaceAll(s, f.value, "<"+sec.name+">")
		}
	}
	return s
}

// dumpLogsOnFailure writes the captured log records (secrets redacted)
// when the test failed.
func (r *run) dumpLogsOnFailure() {
	if !r.t.Failed() {
		return
	}
	secrets := r.secrets()
	for _, l := range r.logs.jsonLines() {
		r.t.Log(redact(l, secrets))
	}
}

// captureDefaultLoggers sends the default slog logger and the log
// package's output to the capture until the test ends.
func (r *run) captureDefaultLoggers() {
	prev, prevOut, prevFlags := slog.Default(), log.Writer(), log.Flags()
	slog.SetDefault(r.logger)
	r.t.Cleanup(func() {
		slog.SetDefault(prev)
		log.SetOutput(prevOut)
		log.SetFlags(prevFlags)
	})
}

// errorTexts are the ways an error can be written out.
func errorTexts(where string, err error) []text {
	return []text{{where, err.Error()}, {where, fmt.Sprintf("%+v", err)}, {where, fmt.Sprintf("%#v", err)}}
}

// flows accepts every confirm workflow start.
type flows struct{}

func (*flows) StartConfirm(context.Context, string, publishing.ConfirmInput) error { return nil }

// countingAccounts counts the refresh leases taken and refused.
type countingAccounts struct {
	publishing.Accounts
	leases, conflicts atomic.Int32
}

func (a *countingAccounts) LeaseRefresh(ctx context.Context, id post.AccountID, owner string, now, until time.Time) error {
	err := a.Accounts.LeaseRefresh(ctx, id, owner, now, until)
	switch {
	case err == nil:
		a.leases.Add(1)
	case errors.Is(err, post.ErrConflict):
		a.conflicts.Add(1)
	}
	return err
}
