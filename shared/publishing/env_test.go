package publishing_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"oncepost/shared/clocktest"
	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/platform/mastodon"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// unit scales the incident down: the seed's 10 s client timeout is 10 units.
const unit = 20 * time.Millisecond

// env is a real publishing path: SQLite store and queue, the sandbox
// platform reached through the real Mastodon adapter, and a fake clock for
// leases (HTTP deadlines use real time).
type env struct {
	t       testing.TB
	store   *sqlitestore.Store
	queue   *sqlitestore.Queue
	sb      *sandbox.Server
	sbAcct  sandbox.Account
	account post.Account
	clock   *clocktest.Clock
	flows   *recordingFlows
	pub     *publishing.Publisher
	conf    *publishing.Confirmer
	loop    *publishing.Loop
	media   mapMedia
}

func newEnv(t testing.TB, opts sandbox.Options) *env {
	t.Helper()
	ctx := context.Background()
	sb := sandbox.New(opts)
	if err := sb.Start(); err != nil {
		t.Fatalf("start sandbox: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	store, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "oncepost.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { store.Close() })

	e := &env{t: t, store: store, queue: store.Queue("publish", 5), sb: sb, clock: clocktest.New(time.Now().UTC().Truncate(time.Millisecond)), flows: &recordingFlows{}, media: mapMedia{}}
	e.sbAcct = sb.AddAccount("news")
	e.account = post.Account{ID: "news", Platform: "mastodon", Handle: "@news", BaseURL: sb.URL(), RemoteID: e.sbAcct.ID, CredentialRef: "news", Gate: post.GateAuto}
	if err := store.PutAccount(ctx, e.account); err != nil {
		t.Fatal(err)
	}
	if err := store.PutCredential(ctx, e.account.ID, platform.Credential{AccessToken: e.sbAcct.AccessToken, RefreshToken: e.sbAcct.RefreshToken}); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if tt, ok := t.(*testing.T); ok && testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(testWriter{tt}, nil))
	}
	plat := mastodonPlatforms
	e.pub = &publishing.Publisher{
		Ledger: store, Posts: store, Accounts: store, Pacer: store, Flows: e.flows, Platforms: plat, Media: e.media,
		Now: e.clock.Now, Owner: "worker-1", CallTimeout: 10 * unit, RecordMargin: 10 * unit, Lease: time.Minute, Logger: logger,
	}
	e.conf = &publishing.Confirmer{
		Ledger: store, Posts: store, Accounts: store, Platforms: plat, Queue: e.queue, Now: e.clock.Now, Logger: logger,
	}
	e.loop = &publishing.Loop{Queue: e.queue, Publisher: e.pub, Visibility: time.Minute, Logger: logger, Jitter: func(time.Duration) time.Duration { return 0 }}
	return e
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// mastodonPlatforms reaches the sandbox through the real Mastodon adapter.
var mastodonPlatforms = mastodon.Connector{ClientID: "sandbox-client", ClientSecret: "sandbox-secret", MediaPollInterval: time.Millisecond}

type mapMedia map[string][]byte

func (m mapMedia) ReadMedia(_ context.Context, ref string) ([]byte, error) {
	b, ok := m[ref]
	if !ok {
		return nil, fmt.Errorf("media %s: %w", ref, post.ErrNotFound)
	}
	return b, nil
}

// recordingFlows records confirm workflow starts, idempotent by name like
// Step Functions Standard. Tests run the steps themselves (runConfirm), in
// the order infra/statemachine/confirm.asl.json runs them.
type recordingFlows struct {
	mu     sync.Mutex
	starts map[string]publishing.ConfirmInput
	order  []string
}

func (f *recordingFlows) StartConfirm(_ context.Context, name string, in publishing.ConfirmInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.starts == nil {
		f.starts = map[string]publishing.ConfirmInput{}
	}
	if _, ok := f.starts[name]; !ok {
		f.starts[name] = in
		f.order = append(f.order, name)
	}
	return nil
}

func (f *recordingFlows) names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.order...)
}

func (f *recordingFlows) input(name string) (publishing.ConfirmInput, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in, ok := f.starts[name]
	return in, ok
}

// runConfirm drives one confirm workflow the way the ASL does: look up to
// MaxChecks times (the first after FirstWaitSeconds, the others after
// WaitSeconds); found → Confirm; exhausted → Release (auto) or Hold.
// It returns how many looks it made.
func (e *env) runConfirm(name string) int {
	e.t.Helper()
	ctx := context.Background()
	in, ok := e.flows.input(name)
	if !ok {
		e.t.Fatalf("confirm workflow %s was never started (started: %v)", name, e.flows.names())
	}
	if in.Policy == publishing.PolicyUnreadable {
		if err := e.conf.Hold(ctx, in, "token-"+name, "unreadable platform"); err != nil {
			e.t.Fatal(err)
		}
		return 0
	}
	for look := 1; look <= in.MaxChecks; look++ {
		wait := in.WaitSeconds
		if look == 1 {
			wait = in.FirstWaitSeconds
		}
		e.clock.Advance(time.Duration(wait) * time.Second)
		res, err := e.conf.Look(ctx, in)
		if err != nil {
			e.t.Fatalf("look %d: %v", look, err)
		}
		if res.Resolved {
			return look
		}
		if res.Found {
			if err := e.conf.Confirm(ctx, in, res.RemoteID); err != nil {
				e.t.Fatal(err)
			}
			return look
		}
	}
	var err error
	if in.Policy == publishing.PolicyAuto {
		err = e.conf.Release(ctx, in)
	} else {
		err = e.conf.Hold(ctx, in, "token-"+name, publishing.ReasonNotFoundAfterLooks)
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return in.MaxChecks
}

// schedule stores a post for the env's account, due now, and returns its job.
func (e *env) schedule(id, body string, media ...post.Media) publishing.Job {
	e.t.Helper()
	slot := e.clock.Now().Truncate(time.Second)
	p := post.Post{ID: post.ID(id), Body: body, Media: media, CreatedAt: slot,
		Targets: []post.Target{{Account: e.account.ID, Slot: slot, Status: post.Scheduled, UpdatedAt: slot}}}
	if err := e.store.CreatePost(context.Background(), p); err != nil {
		e.t.Fatalf("create post: %v", err)
	}
	if _, err := e.store.UpdateTarget(context.Background(), p.ID, e.account.ID, post.TargetUpdate{Status: post.Triggered, At: slot}); err != nil {
		e.t.Fatalf("trigger: %v", err)
	}
	return publishing.Job{Post: p.ID, Account: e.account.ID, Slot: slot}
}

func (e *env) enqueue(job publishing.Job) {
	e.t.Helper()
	body, err := json.Marshal(job)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.queue.Send(context.Background(), body, 0); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) entry(job publishing.Job) ledger.Entry {
	e.t.Helper()
	en, err := e.store.Get(context.Background(), ledger.PublishKey(string(job.Account), string(job.Post), job.Slot))
	if err != nil {
		e.t.Fatalf("ledger entry of %s: %v", job.Post, err)
	}
	return en
}

func (e *env) target(job publishing.Job) post.Target {
	e.t.Helper()
	p, err := e.store.GetPost(context.Background(), job.Post)
	if err != nil {
		e.t.Fatal(err)
	}
	tg, _ := p.Target(job.Account)
	return tg
}

func (e *env) publish(job publishing.Job) publishing.Outcome {
	e.t.Helper()
	out, err := e.pub.Publish(context.Background(), job)
	if err != nil {
		e.t.Fatalf("publish %s: %v", job.Post, err)
	}
	return out
}

// drain runs the publisher loop until the queue has nothing visible.
func (e *env) drain() {
	e.t.Helper()
	for i := 0; i < 50; i++ {
		n, err := e.loop.RunOnce(context.Background())
		if err != nil {
			e.t.Fatalf("loop: %v", err)
		}
		if n == 0 {
			return
		}
	}
	e.t.Fatalf("queue never drained")
}

// waitCommitted waits (real time, bounded) until the sandbox has committed n posts.
func (e *env) waitCommitted(n int) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for e.sb.Stats().Committed < n {
		if time.Now().After(deadline) {
			e.t.Fatalf("sandbox committed %d posts, want %d", e.sb.Stats().Committed, n)
		}
		time.Sleep(unit / 4)
	}
}

func wantErrIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}
