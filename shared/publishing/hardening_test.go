package publishing_test

// The hardening of issue 6: each test here failed on the code before it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/clocktest"
	"oncepost/shared/emf"
	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// viaProxy points the env's account at baseURL (a proxy in front of the sandbox).
func (e *env) viaProxy(baseURL string) {
	e.t.Helper()
	e.account.BaseURL = baseURL
	if err := e.store.PutAccount(context.Background(), e.account); err != nil {
		e.t.Fatal(err)
	}
}

// startProxy is a reverse proxy on 127.0.0.1 in front of upstream that
// answers 503 itself when upstream has not answered within firstByte, as
// a CDN or service mesh does; the upstream request goes on (the sandbox
// commits a delayed create even when its client has gone).
func startProxy(t *testing.T, upstream string, firstByte time.Duration) string {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{ResponseHeaderTimeout: firstByte}
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("<html><body>503 upstream timeout</body></html>"))
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// ourStatuses are the sandbox's statuses with text body.
func (e *env) ourStatuses(body string) []sandbox.Status {
	var out []sandbox.Status
	for _, st := range e.sb.Statuses(e.sbAcct.ID) {
		if st.Text == body {
			out = append(out, st)
		}
	}
	return out
}

// metricsRecorder keeps every EMF line.
type metricsRecorder struct {
	mu    sync.Mutex
	lines []map[string]any
	buf   bytes.Buffer
}

func (m *metricsRecorder) Emit(metrics ...emf.Metric) error {
	return m.EmitAt(time.Time{}, metrics...)
}

func (m *metricsRecorder) EmitAt(_ time.Time, metrics ...emf.Metric) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	line := map[string]any{}
	for _, mt := range metrics {
		line[mt.Name] = mt.Value
	}
	m.lines = append(m.lines, line)
	return nil
}

// count sums a metric over every line.
func (m *metricsRecorder) count(name string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0.0
	for _, l := range m.lines {
		if v, ok := l[name].(float64); ok {
			n += v
		}
	}
	return n
}

func (m *metricsRecorder) has(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.lines {
		if _, ok := l[name]; ok {
			return true
		}
	}
	return false
}

// A CDN in front of the instance forwards the create, gives up waiting and
// answers 503 itself; the instance commits afterwards. A 503 on a write is
// ambiguous: the confirm loop looks (soon: the first look comes after the
// quick wait) and finds the post instead of sending it again.
func TestProxy503AfterForwardPostsOnce(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.viaProxy(startProxy(t, e.sb.URL(), 2*unit))
	e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: 5 * unit})
	job := e.schedule("proxied", "Ferry cancelled today.")
	out := e.publish(job)
	if out.Result != publishing.Confirming {
		t.Fatalf("publish after the proxy's 503 = %+v, want confirming: a 5xx on a write proves nothing", out)
	}
	name := publishing.ConfirmName(out.Key, 1)
	in, _ := e.flows.input(name)
	if in.FirstWaitSeconds >= in.WaitSeconds || in.MaxChecks != 4 {
		t.Errorf("confirm input %+v, want a quick first look (first wait < wait) and one extra look", in)
	}
	e.waitCommitted(1)
	if looks := e.runConfirm(name); looks != 1 {
		t.Errorf("found after %d looks, want 1", looks)
	}
	e.drain()
	if got := e.ourStatuses("Ferry cancelled today."); len(got) != 1 {
		t.Fatalf("sandbox has %d copies of the post, want 1", len(got))
	}
	if st := e.sb.Stats(); st.CreateRequests != 1 || st.Duplicates != 0 {
		t.Errorf("sandbox stats %+v, want 1 create and no duplicate", st)
	}
	if tg := e.target(job); tg.Status != post.Published {
		t.Errorf("target %s, want published", tg.Status)
	}
}

// Mastodon renders a lone "\r" as a line break: the fingerprint must too,
// or the confirm loop does not find the post and sends it again.
func TestLoneCarriageReturnIsFound(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: 11 * unit})
	body := "Line one\rLine two"
	job := e.schedule("cr", body)
	out := e.publish(job)
	if out.Result != publishing.Confirming {
		t.Fatalf("publish = %+v, want confirming", out)
	}
	e.waitCommitted(1)
	if looks := e.runConfirm(publishing.ConfirmName(out.Key, 1)); looks != 1 {
		t.Errorf("found after %d looks, want 1", looks)
	}
	if en := e.entry(job); en.State != ledger.Confirmed {
		t.Fatalf("entry %s (%s), want confirmed", en.State, en.Reason)
	}
	if st := e.sb.Stats(); st.CreateRequests != 1 || st.Committed != 1 {
		t.Errorf("sandbox stats %+v, want one create and one commit", st)
	}
	// Pre-publish dedup reads the rendered text too: the same words again
	// are held as a duplicate, not posted a second time.
	again := e.schedule("cr-again", body)
	if out := e.publish(again); out.Result != publishing.Held || out.Reason != publishing.ReasonDuplicateOnAccount {
		t.Errorf("the same text again = %+v, want held %s", out, publishing.ReasonDuplicateOnAccount)
	}
}

// Lookup reads from the newest post seen before the send, not from a time
// window: a busy account (1,000 newer posts) and a platform clock an hour
// behind ours still find the post.
func TestLookFromAPoint(t *testing.T) {
	for _, tc := range []struct {
		name  string
		newer int
		skew  time.Duration
	}{
		{"1000 newer posts on the account", 1000, 0},
		{"platform clock an hour behind", 3, -time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := sandbox.Options{DisableIdempotency: true}
			if tc.skew != 0 {
				opts.Now = func() time.Time { return time.Now().Add(tc.skew) }
			}
			e := newEnv(t, opts)
			var before sandbox.Status
			for i := range 5 {
				before = e.sb.InjectStatus(e.sbAcct.ID, fmt.Sprintf("Older post %d.", i))
			}
			e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: 11 * unit})
			job := e.schedule("busy", "Market update at noon.")
			out := e.publish(job)
			if out.Result != publishing.Confirming {
				t.Fatalf("publish = %+v, want confirming", out)
			}
			if got := e.entry(job).LookAfter; got != before.ID {
				t.Errorf("entry looks after %q, want the newest post before the send %q", got, before.ID)
			}
			e.waitCommitted(6)
			for i := range tc.newer {
				e.sb.InjectStatus(e.sbAcct.ID, fmt.Sprintf("Newer post %d.", i))
			}
			e.runConfirm(publishing.ConfirmName(out.Key, 1))
			if en := e.entry(job); en.State != ledger.Confirmed {
				t.Fatalf("entry %s (%s), want confirmed", en.State, en.Reason)
			}
			if got := e.ourStatuses("Market update at noon."); len(got) != 1 {
				t.Errorf("%d copies on the sandbox, want 1", len(got))
			}
		})
	}
}

// The first create commits only after the looks gave up, so the re-send
// reuses an upload already attached to that post: Mastodon answers 422
// "already attached". That is evidence the earlier post exists: look for
// it (the operator decides if it cannot be found), never fail the post.
func TestMediaAlreadyAttachedIsEvidence(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true, MediaProcessingPolls: -1})
	img := []byte("\x89PNG photo essay")
	e.media["essay.png"] = img
	m := post.Media{Ref: "essay.png", SHA256: sha256hex(img), ContentType: "image/png"}
	e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: 20 * unit})
	body := "Photo essay: the harbour."
	job := e.schedule("consumed", body, m)
	out := e.publish(job)
	if out.Result != publishing.Confirming {
		t.Fatalf("publish = %+v, want confirming", out)
	}
	e.runConfirm(publishing.ConfirmName(out.Key, 1)) // not there yet: released
	e.waitCommitted(1)
	for i := range 25 { // push the late post out of the dedup window
		e.sb.InjectStatus(e.sbAcct.ID, fmt.Sprintf("Filler %d.", i))
	}
	e.drain()
	en := e.entry(job)
	if en.State != ledger.Unknown || en.Attempt != 2 || !strings.HasPrefix(en.Reason, platform.ReasonMediaConsumed) {
		t.Fatalf("entry after the 422 = %s attempt %d %q, want unknown attempt 2 %s", en.State, en.Attempt, en.Reason, platform.ReasonMediaConsumed)
	}
	name := publishing.ConfirmName(en.Key, 2)
	if in, _ := e.flows.input(name); in.Policy != publishing.PolicyManual {
		t.Errorf("confirm policy %q, want manual: a re-send would be refused the same way", in.Policy)
	}
	e.runConfirm(name)
	ours := e.ourStatuses(body)
	if len(ours) != 1 {
		t.Fatalf("%d copies of the post, want 1", len(ours))
	}
	if en := e.entry(job); en.State != ledger.Confirmed || en.RemoteID != ours[0].ID {
		t.Errorf("entry %s remote %q, want confirmed %q", en.State, en.RemoteID, ours[0].ID)
	}
}

// slowRefresh advances the clock while a token refresh runs: the create
// repeated after a 401 must check the lease again.
type slowRefresh struct {
	publishing.Platforms
	clock *clocktest.Clock
	d     time.Duration
}

func (s slowRefresh) Client(ctx context.Context, a post.Account, c platform.Credential) (platform.Client, error) {
	cl, err := s.Platforms.Client(ctx, a, c)
	return refreshAdvances{Client: cl, clock: s.clock, d: s.d}, err
}

type refreshAdvances struct {
	platform.Client
	clock *clocktest.Clock
	d     time.Duration
}

func (r refreshAdvances) Refresh(ctx context.Context, c platform.Credential) (platform.Credential, error) {
	r.clock.Advance(r.d)
	return r.Client.Refresh(ctx, c)
}

func TestLeaseCheckedBeforeTheCreateRepeatedAfterRefresh(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.pub.Platforms = slowRefresh{Platforms: mastodonPlatforms, clock: e.clock, d: e.pub.Lease}
	e.sb.Script(sandbox.Fault{Kind: sandbox.Fault401})
	job := e.schedule("slow-refresh", "Hello after a slow refresh.")
	out := e.publish(job)
	if out.Result != publishing.Retry || out.Reason != publishing.ReasonLeaseTooShort {
		t.Fatalf("outcome %+v, want retry %s", out, publishing.ReasonLeaseTooShort)
	}
	if st := e.sb.Stats(); st.CreateRequests != 1 || st.Committed != 0 {
		t.Errorf("sandbox stats %+v, want only the create that got the 401", st)
	}
}

// A 429 with a long Retry-After: the entry records when it may be sent
// again, nothing (a stray delivery, the sweeper) sends or re-enqueues it
// before then, and throttling spends no attempt.
func TestThrottlingIsNotAnAttempt(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.pub.MaxAttempts = 1
	e.sb.Script(sandbox.Fault{Kind: sandbox.Fault429, RetryAfter: 30 * time.Minute})
	job := e.schedule("throttled", "Big announcement.")
	e.enqueue(job)
	e.drain()
	en := e.entry(job)
	if en.State != ledger.Released || en.MaybeSent != 0 || en.RetryAt.Sub(e.clock.Now()) < 29*time.Minute || en.DeferredSince.IsZero() {
		t.Fatalf("entry %s maybe_sent %d retry_at in %s deferred_since %v, want released for 30 min, no attempt spent",
			en.State, en.MaybeSent, en.RetryAt.Sub(e.clock.Now()), en.DeferredSince)
	}
	if tg := e.target(job); tg.Status != post.Waiting || !tg.NextTry.Equal(en.RetryAt) {
		t.Errorf("target %s next try %v, want waiting until %v", tg.Status, tg.NextTry, en.RetryAt)
	}
	if out := e.publish(job); out.Result != publishing.Retry || out.RetryAfter < 29*time.Minute {
		t.Errorf("a stray delivery before the next try = %+v, want retry in ~30 min", out)
	}
	var metrics bytes.Buffer
	sw := e.sweeper(&metrics)
	e.clock.Advance(20 * time.Minute) // past StaleAfter, before the next try
	if rep, err := sw.Sweep(context.Background()); err != nil || rep.Requeued != 0 {
		t.Errorf("sweep before the next try requeued %d (err %v), want 0", rep.Requeued, err)
	}
	if st := e.sb.Stats(); st.CreateRequests != 1 {
		t.Fatalf("sandbox saw %d creates before the next try, want 1", st.CreateRequests)
	}
	e.clock.Advance(11 * time.Minute)
	if out := e.publish(job); out.Result != publishing.Published {
		t.Fatalf("after the next try = %+v, want published despite MaxAttempts 1", out)
	}
	if en := e.entry(job); en.MaybeSent != 0 || en.Attempt != 2 {
		t.Errorf("entry maybe_sent %d attempt %d, want 0 and 2", en.MaybeSent, en.Attempt)
	}
}

func TestThrottledPastTheLimitFails(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.pub.ThrottleLimit = time.Hour
	for range 3 {
		e.sb.Script(sandbox.Fault{Kind: sandbox.Fault429, RetryAfter: 40 * time.Minute})
	}
	rec := &metricsRecorder{}
	e.pub.Metrics = rec
	job := e.schedule("throttled-long", "Announcement.")
	var out publishing.Outcome
	for range 3 {
		out = e.publish(job)
		e.clock.Advance(41 * time.Minute)
	}
	if out.Result != publishing.Failed || !strings.HasPrefix(out.Reason, publishing.ReasonThrottled) {
		t.Fatalf("outcome %+v, want failed %s after an hour of 429s", out, publishing.ReasonThrottled)
	}
	if tg := e.target(job); tg.Status != post.Failed || !strings.HasPrefix(tg.Reason, publishing.ReasonThrottled) {
		t.Errorf("target %s %q, want failed throttled", tg.Status, tg.Reason)
	}
	if got := rec.count(publishing.MetricThrottled); got != 3 {
		t.Errorf("Throttled counted %v times, want 3", got)
	}
}

// A sweeper that cannot read the store must not report zeros: no gauge
// (their alarms fire on missing data) and a SweepErrors count.
func TestFailedSweepEmitsNoGauges(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	var buf bytes.Buffer
	sw := e.sweeper(&buf)
	sw.Ledger = failingOpen{e.store}
	rep, err := sw.Sweep(context.Background())
	if err == nil || !rep.ReadFailed {
		t.Fatalf("sweep = %+v, %v; want an error and ReadFailed", rep, err)
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("metrics %q: %v", buf.String(), err)
	}
	if line[publishing.MetricSweepErrors] != 1.0 {
		t.Errorf("SweepErrors = %v, want 1", line[publishing.MetricSweepErrors])
	}
	for _, gauge := range []string{"StalePending", "StaleUnknown", "StuckTargets", "HeldTargets", "DeadLetters"} {
		if _, ok := line[gauge]; ok {
			t.Errorf("gauge %s emitted by a sweep that could not read the store", gauge)
		}
	}
	// A healthy sweep emits the gauges and SweepErrors 0.
	buf.Reset()
	sw.Ledger = e.store
	if _, err := sw.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	line = nil
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil || line["StalePending"] != 0.0 || line[publishing.MetricSweepErrors] != 0.0 {
		t.Errorf("healthy sweep metrics %v (err %v), want gauges and SweepErrors 0", line, err)
	}
}

type failingOpen struct{ publishing.Ledger }

func (failingOpen) Open(context.Context, time.Time, int) ([]ledger.Entry, error) {
	return nil, errors.New("disk I/O error")
}

// A refresh whose answer was lost may have spent the single-use refresh
// token. It is recorded; the stored token is tried once more, and its
// refusal then marks the account reconnect_needed: refresh_answer_lost.
func TestLostRefreshAnswer(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	rec := &metricsRecorder{}
	e.pub.Metrics = rec
	e.sb.ExpireAccessToken(e.sbAcct.ID)
	e.sb.ScriptRoute(sandbox.RouteOAuthToken, sandbox.Fault{Kind: sandbox.FaultDropResponse})
	job := e.schedule("lost-refresh", "Hello.")
	if out := e.publish(job); out.Result != publishing.Retry {
		t.Fatalf("first delivery = %+v, want retry", out)
	}
	cred, err := e.store.Credential(context.Background(), e.account.ID)
	if err != nil || cred.RefreshLostAt.IsZero() || cred.RefreshToken != e.sbAcct.RefreshToken {
		t.Fatalf("credential after the lost answer: lost at %v, refresh kept %v (err %v); want the loss recorded, tokens kept",
			cred.RefreshLostAt, cred.RefreshToken == e.sbAcct.RefreshToken, err)
	}
	e.clock.Advance(time.Minute)
	out := e.publish(job)
	if out.Result != publishing.Held || !strings.Contains(out.Reason, publishing.ReasonRefreshAnswerLost) {
		t.Fatalf("second delivery = %+v, want held with %s", out, publishing.ReasonRefreshAnswerLost)
	}
	acc, err := e.store.GetAccount(context.Background(), e.account.ID)
	if err != nil || acc.Status != post.AccountReconnectNeeded || acc.StatusReason != publishing.ReasonRefreshAnswerLost {
		t.Errorf("account %s %q (err %v), want reconnect_needed %s", acc.Status, acc.StatusReason, err, publishing.ReasonRefreshAnswerLost)
	}
	if rec.count(publishing.MetricReconnectNeeded) != 1 {
		t.Errorf("ReconnectNeeded counted %v times, want 1", rec.count(publishing.MetricReconnectNeeded))
	}
	if st := e.sb.Stats(); st.CreateRequests != 0 {
		t.Errorf("sandbox saw %d creates", st.CreateRequests)
	}
}

// flakyCredentials fails credential writes while down is set.
type flakyCredentials struct {
	publishing.Accounts
	mu   sync.Mutex
	down bool
}

func (f *flakyCredentials) isDown() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down
}

func (f *flakyCredentials) SaveRefreshed(ctx context.Context, id post.AccountID, owner string, c *platform.Credential) error {
	if c != nil && f.isDown() {
		return errors.New("database is locked")
	}
	return f.Accounts.SaveRefreshed(ctx, id, owner, c)
}

func (f *flakyCredentials) PutCredential(ctx context.Context, id post.AccountID, c platform.Credential) error {
	if f.isDown() {
		return errors.New("database is locked")
	}
	return f.Accounts.PutCredential(ctx, id, c)
}

// Rotated tokens that cannot be saved are kept in memory and used, and
// saved once the store answers again: never thrown away.
func TestRotatedTokensKeptUntilSaved(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	flaky := &flakyCredentials{Accounts: e.store, down: true}
	e.pub.Accounts = flaky
	e.sb.ExpireAccessToken(e.sbAcct.ID)
	first := e.schedule("first", "First post.")
	if out := e.publish(first); out.Result != publishing.Published {
		t.Fatalf("first = %+v, want published with the fresh token", out)
	}
	second := e.schedule("second", "Second post.")
	if out := e.publish(second); out.Result != publishing.Published {
		t.Fatalf("second = %+v, want published with the token kept in memory", out)
	}
	flaky.mu.Lock()
	flaky.down = false
	flaky.mu.Unlock()
	third := e.schedule("third", "Third post.")
	if out := e.publish(third); out.Result != publishing.Published {
		t.Fatalf("third = %+v, want published", out)
	}
	cred, err := e.store.Credential(context.Background(), e.account.ID)
	if err != nil || cred.AccessToken == e.sbAcct.AccessToken || cred.RefreshToken == e.sbAcct.RefreshToken {
		t.Errorf("stored credential not the rotated one once the store answered (err %v)", err)
	}
}

// A job that reaches the queue before its slot (a foreign producer, a
// replay, a clock jump) is not published early: it waits.
func TestEarlyJobWaitsForItsSlot(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	slot := e.clock.Now().Add(time.Hour).Truncate(time.Second)
	job := e.scheduleAt("early", "Due in an hour.", slot)
	out := e.publish(job)
	if out.Result != publishing.Retry || out.Reason != publishing.ReasonEarly || out.RetryAfter <= 59*time.Minute {
		t.Fatalf("early delivery = %+v, want retry until the slot", out)
	}
	if _, err := e.store.Get(context.Background(), out.Key); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("an early delivery wrote a ledger entry (err %v)", err)
	}
	e.enqueue(job)
	e.drain()
	if st := e.sb.Stats(); st.CreateRequests != 0 {
		t.Fatalf("sandbox saw %d creates an hour early", st.CreateRequests)
	}
	e.clock.Advance(time.Hour)
	if out := e.publish(job); out.Result != publishing.Published {
		t.Errorf("at the slot = %+v, want published", out)
	}
}

// A Publisher with PrepareBefore prepares a job delivered that close to
// its slot: the dedup read and the pending entry with its lease are done
// then, and it waits for the slot before the re-read and the create. A
// post cancelled while it waits is not sent; a job delivered earlier goes
// back on the queue until it can be prepared, and one stopped while it
// waits (the runtime shuts down) is released unsent, to come back at its
// slot.
func TestJobPreparedBeforeItsSlot(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	e.pub.PrepareBefore = 2 * time.Second
	ctx := context.Background()
	slot := e.clock.Now().Truncate(time.Second).Add(10 * time.Second)
	sent, cancelled := e.scheduleAt("sent", "Prepared, then sent at the slot.", slot), e.scheduleAt("cancelled", "Prepared, then cancelled.", slot)
	stopped := e.scheduleAt("stopped", "Prepared, then stopped.", slot)

	type step struct {
		Result     publishing.Result
		Reason     string
		RetryAfter time.Duration
		Entry      ledger.State // "" when there is none
		Creates    int
	}
	entryState := func(job publishing.Job) ledger.State {
		en, err := e.store.Get(ctx, ledger.PublishKey(string(job.Account), string(job.Post), job.Slot))
		if errors.Is(err, ledger.ErrNotFound) {
			return ""
		}
		if err != nil {
			t.Fatal(err)
		}
		return en.State
	}
	var got []step
	e.clock.Set(slot.Add(-10 * time.Second))
	out := e.publish(sent)
	got = append(got, step{out.Result, out.Reason, out.RetryAfter, entryState(sent), e.sb.Stats().CreateRequests})

	// 30 ms before the slot, by the Publisher's clock: both are prepared
	// and wait for the clock to reach the slot.
	e.clock.Set(slot.Add(-30 * time.Millisecond))
	outs := make(chan publishing.Outcome, 3)
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, job := range []publishing.Job{sent, cancelled, stopped} {
		go func() {
			jobCtx := ctx
			if job == stopped {
				jobCtx = stop
			}
			out, err := e.pub.Publish(jobCtx, job)
			if err != nil {
				t.Error(err)
			}
			outs <- out
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for entryState(sent) != ledger.Pending || entryState(cancelled) != ledger.Pending || entryState(stopped) != ledger.Pending {
		if time.Now().After(deadline) {
			t.Fatalf("entries %q, %q and %q, want all pending before the slot", entryState(sent), entryState(cancelled), entryState(stopped))
		}
		time.Sleep(5 * time.Millisecond)
	}
	got = append(got, step{Entry: entryState(sent), Creates: e.sb.Stats().CreateRequests})
	cancel()
	o := <-outs
	got = append(got, step{o.Result, o.Reason, o.RetryAfter, entryState(stopped), e.sb.Stats().CreateRequests})
	if _, err := e.store.UpdateTarget(ctx, cancelled.Post, cancelled.Account, post.TargetUpdate{Status: post.Cancelled, At: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	e.clock.Set(slot)
	byResult := map[publishing.Result]publishing.Outcome{}
	for range 2 {
		o := <-outs
		byResult[o.Result] = o
	}
	for _, r := range []publishing.Result{publishing.Published, publishing.Skipped} {
		o := byResult[r]
		job := sent
		if r == publishing.Skipped {
			job = cancelled
		}
		got = append(got, step{o.Result, o.Reason, o.RetryAfter, entryState(job), e.sb.Stats().CreateRequests})
	}
	want := []step{
		{Result: publishing.Retry, Reason: publishing.ReasonEarly, RetryAfter: 8 * time.Second},
		{Entry: ledger.Pending},
		{Result: publishing.Retry, Reason: publishing.ReasonEarly, RetryAfter: 30 * time.Millisecond, Entry: ledger.Released},
		{Result: publishing.Published, Entry: ledger.Confirmed, Creates: 1},
		{Result: publishing.Skipped, Reason: publishing.ReasonCancelled, Entry: ledger.Released, Creates: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("10 s early; prepared 30 ms early; stopped; at the slot: sent, cancelled (-want +got):\n%s", diff)
	}
}

// Upload trouble (503s, a dropped request, a 429) never spends the attempt
// budget, leaves no upload row open, and says which upload failed.
func TestUploadTroubleDoesNotBurnAttempts(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.pub.MaxAttempts = 1
	img := []byte("\x89PNG upload trouble")
	e.media["trouble.png"] = img
	m := post.Media{Ref: "trouble.png", SHA256: sha256hex(img), ContentType: "image/png"}
	e.sb.ScriptRoute(sandbox.RouteUploadMedia,
		sandbox.Fault{Kind: sandbox.Fault503}, sandbox.Fault{Kind: sandbox.Fault503}, sandbox.Fault{Kind: sandbox.Fault500AfterCommit},
		sandbox.Fault{Kind: sandbox.FaultDropRequest}, sandbox.Fault{Kind: sandbox.Fault429, RetryAfter: time.Second})
	job := e.schedule("upload-trouble", "Photo of the day.", m)
	var reasons []string
	for i := 0; i < 10 && e.target(job).Status != post.Published; i++ {
		out := e.publish(job)
		// An upload that did not certainly succeed never lingers open.
		if open, err := e.store.Open(context.Background(), e.clock.Now().Add(time.Hour), 0); err != nil || len(open) != 0 {
			t.Fatalf("delivery %d left %d ledger rows open (err %v): %+v", i+1, len(open), err, open)
		}
		if out.Result == publishing.Retry {
			reasons = append(reasons, out.Reason)
		}
		if out.Result == publishing.Held || out.Result == publishing.Failed {
			t.Fatalf("delivery %d = %+v: upload trouble held or failed the post", i+1, out)
		}
		e.clock.Advance(out.RetryAfter + time.Second)
	}
	if tg := e.target(job); tg.Status != post.Published {
		t.Fatalf("target %s after the upload trouble, want published", tg.Status)
	}
	if en := e.entry(job); en.MaybeSent != 0 {
		t.Errorf("entry maybe_sent %d, want 0: no create went out ambiguously", en.MaybeSent)
	}
	if len(reasons) == 0 || !strings.Contains(reasons[0], "upload of media[0] trouble.png") {
		t.Errorf("retry reasons %q, want them to name the upload", reasons)
	}
	open, err := e.store.Open(context.Background(), e.clock.Now().Add(time.Hour), 0)
	if err != nil || len(open) != 0 {
		t.Errorf("open ledger rows after publishing: %d (err %v), want none", len(open), err)
	}
}

// An upload whose owner died (expired lease) is taken over and uploaded
// within the same attempt, not left for another delivery.
func TestExpiredUploadLeaseUploadsAtOnce(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	img := []byte("\x89PNG dead owner")
	e.media["dead.png"] = img
	m := post.Media{Ref: "dead.png", SHA256: sha256hex(img), ContentType: "image/png"}
	job := e.schedule("dead-upload", "Photo.", m)
	key := ledger.PublishKey(string(job.Account), string(job.Post), job.Slot)
	dead := ledger.NewEntry(ledger.UploadKey(string(job.Account), m.SHA256, key), ledger.Upload, string(job.Account), m.SHA256, job.Slot, m.SHA256,
		"dead-worker", e.clock.Now().Add(-time.Hour), time.Minute)
	if err := e.store.Create(context.Background(), dead); err != nil {
		t.Fatal(err)
	}
	if out := e.publish(job); out.Result != publishing.Published || out.Attempt != 1 {
		t.Fatalf("outcome %+v, want published at attempt 1", out)
	}
}

// holdOnQueueSend holds the target the moment the trigger's job is sent,
// as an operator (or a hold) racing the trigger would.
type holdOnQueueSend struct {
	publishing.Queue
	posts publishing.Posts
	ref   publishing.TargetRef
}

func (h holdOnQueueSend) Send(ctx context.Context, body []byte, delay time.Duration) (string, error) {
	id, err := h.Queue.Send(ctx, body, delay)
	if _, uerr := h.posts.UpdateTarget(ctx, h.ref.Post, h.ref.Account, post.TargetUpdate{Status: post.Held, Reason: "operator", At: time.Now()}); uerr != nil {
		return id, uerr
	}
	return id, err
}

func TestTriggerMarksOnlyAScheduledTarget(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	job := e.scheduleAt("raced", "Raced.", e.clock.Now())
	tr := e.trigger()
	tr.Queue = holdOnQueueSend{Queue: e.queue, posts: e.store, ref: job}
	if _, err := tr.Fire(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	if tg := e.target(job); tg.Status != post.Held {
		t.Errorf("target %s after the trigger, want still held", tg.Status)
	}
}

// Events are counted when they happen, not only by the sweeper.
func TestEventMetrics(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	rec := &metricsRecorder{}
	e.pub.Metrics, e.conf.Metrics = rec, rec
	// Published three seconds after its slot, with its lateness.
	first := e.schedule("m1", "Metrics one.")
	e.clock.Advance(3 * time.Second)
	if out := e.publish(first); out.Result != publishing.Published {
		t.Fatal(out)
	}
	// Throttled.
	e.sb.Script(sandbox.Fault{Kind: sandbox.Fault429})
	e.publish(e.schedule("m2", "Metrics two."))
	// Ambiguous, then not found and released.
	e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: time.Minute})
	out := e.publish(e.schedule("m3", "Metrics three."))
	e.runConfirm(publishing.ConfirmName(out.Key, 1))
	// A duplicate blocked.
	e.sb.InjectStatus(e.sbAcct.ID, "Metrics four.")
	e.publish(e.schedule("m4", "Metrics four."))
	got := map[string]float64{}
	for _, name := range []string{publishing.MetricPublished, publishing.MetricThrottled, publishing.MetricAmbiguous, publishing.MetricReleased, publishing.MetricDuplicateBlocked} {
		got[name] = rec.count(name)
	}
	want := map[string]float64{publishing.MetricPublished: 1, publishing.MetricThrottled: 1, publishing.MetricAmbiguous: 1, publishing.MetricReleased: 1, publishing.MetricDuplicateBlocked: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event counts (-want +got):\n%s", diff)
	}
	if !rec.has(publishing.MetricPublishLateness) || rec.count(publishing.MetricPublishLateness) < 3 {
		t.Errorf("PublishLatenessSeconds = %v, want ≥ 3", rec.count(publishing.MetricPublishLateness))
	}
}

// Log records never carry a field named like slog's own keys ("msg",
// "time", "level") or "message", which log pipelines read as the message.
func TestLogKeysDoNotCollide(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	var buf bytes.Buffer
	e.loop.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
	if _, err := e.queue.Send(context.Background(), []byte(`{"bad":`), 0); err != nil {
		t.Fatal(err)
	}
	e.drain()
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		if _, ok := rec["message"]; ok {
			t.Errorf("log record has a field named message: %s", l)
		}
	}
	if !strings.Contains(buf.String(), `"message_id"`) {
		t.Errorf("dead-letter log %q does not name the message id", buf.String())
	}
}

// The confirm Look refreshes an expired token as Publish does, instead of
// failing until the workflow holds the entry.
func TestLookRefreshesOn401(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: 11 * unit})
	job := e.schedule("look-401", "Look with an expired token.")
	out := e.publish(job)
	e.waitCommitted(1)
	e.sb.ExpireAccessToken(e.sbAcct.ID)
	e.runConfirm(publishing.ConfirmName(out.Key, 1))
	if en := e.entry(job); en.State != ledger.Confirmed {
		t.Errorf("entry %s (%s), want confirmed after a refresh", en.State, en.Reason)
	}
}

// recordingTasks answers task tokens like Step Functions: only the token a
// task currently waits on is accepted.
type recordingTasks struct {
	mu      sync.Mutex
	waiting string
	got     map[string]string
}

func (r *recordingTasks) SendTaskSuccess(_ context.Context, token string, output json.RawMessage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token != r.waiting {
		return publishing.ErrTaskNotWaiting
	}
	if r.got == nil {
		r.got = map[string]string{}
	}
	r.got[token] = string(output)
	r.waiting = ""
	return nil
}

// A Hold step retried by the workflow waits on a new token; the entry
// records it, and an operator's decision reaches that one. Deciding the
// same twice makes it converge; deciding otherwise is refused.
func TestHeldDecisionReachesTheCurrentToken(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.account.Gate = post.GateManual
	if err := e.store.PutAccount(context.Background(), e.account); err != nil {
		t.Fatal(err)
	}
	tasks := &recordingTasks{}
	e.conf.Tasks = tasks
	op := &publishing.Operator{Ledger: e.store, Confirmer: e.conf, Tasks: tasks, Now: e.clock.Now}
	e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: time.Minute})
	job := e.schedule("held", "Board meeting moved.")
	out := e.publish(job)
	in, _ := e.flows.input(publishing.ConfirmName(out.Key, 1))
	ctx := context.Background()
	if err := e.conf.Hold(ctx, in, "token-1", "not found after 3 looks"); err != nil {
		t.Fatal(err)
	}
	// The step is retried (its target update failed, say): a new token.
	if err := e.conf.Hold(ctx, in, "token-2", "not found after 3 looks"); err != nil {
		t.Fatal(err)
	}
	if en := e.entry(job); en.State != ledger.Held || en.TaskToken != "token-2" {
		t.Fatalf("entry %s token %q, want held with the newer token", en.State, en.TaskToken)
	}
	tasks.waiting = "token-2"
	res, err := op.Decide(ctx, out.Key, publishing.Decision{Action: publishing.DecisionRelease})
	if err != nil || res.How != publishing.DecisionDelivered {
		t.Fatalf("decide = %+v, %v; want delivered", res, err)
	}
	if got := tasks.got["token-2"]; got != `{"decision":"release"}` {
		t.Errorf("task token-2 got %q, want the release decision", got)
	}
	if _, err := op.Decide(ctx, out.Key, publishing.Decision{Action: publishing.DecisionReject, Reason: "changed my mind"}); !errors.Is(err, publishing.ErrDecidedOtherwise) {
		t.Errorf("reject after approve: %v, want ErrDecidedOtherwise", err)
	}
	// The Hold step retried once more after the decision answers itself.
	tasks.waiting = "token-3"
	if err := e.conf.Hold(ctx, in, "token-3", "not found after 3 looks"); err != nil {
		t.Fatal(err)
	}
	if got := tasks.got["token-3"]; got != `{"decision":"release"}` {
		t.Errorf("retried hold answered %q, want the recorded decision", got)
	}
	// Approved again while nothing waits on the token (the workflow took
	// the decision and is applying it, or failed): applied directly, which
	// the workflow's own Release finds done.
	again, err := op.Decide(ctx, out.Key, publishing.Decision{Action: publishing.DecisionRelease})
	if err != nil || again.How != publishing.DecisionApplied || again.Entry.State != ledger.Released {
		t.Errorf("second approve = %+v, %v; want the recorded decision applied", again, err)
	}
	if err := e.conf.Release(ctx, in); err != nil {
		t.Errorf("the workflow's Release step after the second approve: %v", err)
	}
	if _, err := op.Decide(ctx, out.Key, publishing.Decision{Action: publishing.DecisionReject, Reason: "changed my mind"}); !errors.Is(err, publishing.ErrDecidedOtherwise) {
		t.Errorf("reject after the approval was applied: %v, want ErrDecidedOtherwise", err)
	}
}

// A hold by pre-publish dedup has no workflow: approving it applies the
// decision directly, and the re-send skips dedup (the operator said so).
func TestApproveADuplicateHold(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	op := &publishing.Operator{Ledger: e.store, Confirmer: e.conf, Tasks: &recordingTasks{}, Now: e.clock.Now}
	e.sb.InjectStatus(e.sbAcct.ID, "Daily reminder: drink water.")
	job := e.schedule("reminder", "Daily reminder: drink water.")
	if out := e.publish(job); out.Result != publishing.Held {
		t.Fatalf("outcome %+v, want held", out)
	}
	res, err := op.Decide(context.Background(), e.entry(job).Key, publishing.Decision{Action: publishing.DecisionRelease})
	if err != nil || res.How != publishing.DecisionApplied || res.Entry.State != ledger.Released {
		t.Fatalf("approve = %+v, %v; want applied, released", res, err)
	}
	e.drain()
	if tg := e.target(job); tg.Status != post.Published {
		t.Errorf("target %s, want published after the approval", tg.Status)
	}
	if got := e.ourStatuses("Daily reminder: drink water."); len(got) != 2 {
		t.Errorf("%d copies, want 2 (the operator approved a repeat)", len(got))
	}
}

// The point a lookup reads from is fixed only while no send may have
// reached the platform: an entry whose first attempt went out without one
// (a dead owner of an older version) never gets a point after it, which
// would hide that attempt's post from every later look.
func TestNoPointAfterASendThatMayHaveLanded(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	job := e.schedule("no-point", "Posted by a worker that died.")
	ctx := context.Background()
	dead := ledger.NewEntry(ledger.PublishKey(string(job.Account), string(job.Post), job.Slot), ledger.Publish,
		string(job.Account), string(job.Post), job.Slot, platform.Fingerprint("Posted by a worker that died.", nil), "dead", e.clock.Now(), time.Minute)
	if err := e.store.Create(ctx, dead); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	if out := e.publish(job); out.Result != publishing.Confirming {
		t.Fatalf("after the lease = %+v, want confirming", out)
	}
	e.runConfirm(publishing.ConfirmName(dead.Key, 1)) // not found: released
	e.drain()                                         // attempt 2 goes out
	if en := e.entry(job); en.Attempt != 2 || en.LookAfter != "" {
		t.Errorf("entry attempt %d looks after %q, want attempt 2 without a point", en.Attempt, en.LookAfter)
	}
}

// lostCreateAnswer is a ledger whose first Create is stored but answered
// with a conflict: what a client sees when the answer to its conditional
// put is lost and its SDK sends the put again.
type lostCreateAnswer struct {
	publishing.Ledger
	lost bool
}

func (l *lostCreateAnswer) Create(ctx context.Context, e ledger.Entry) error {
	if err := l.Ledger.Create(ctx, e); err != nil || l.lost {
		return err
	}
	l.lost = true
	return l.Ledger.Create(ctx, e)
}

// A create whose answer was lost and resent finds the entry it wrote: it
// is the publisher's own (same handle, owner and attempt), so the post is
// sent now, once, instead of waiting for its own lease to expire.
func TestOwnCreateResentIsOurs(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	e.pub.Ledger = &lostCreateAnswer{Ledger: e.store}
	job := e.schedule("resent", "Library opens late on Monday.")
	out := e.publish(job)
	if out.Result != publishing.Published {
		t.Fatalf("publish = %+v, want published at once", out)
	}
	if got := e.ourStatuses("Library opens late on Monday."); len(got) != 1 {
		t.Errorf("sandbox has %d copies, want 1", len(got))
	}
}

// duplicatePlatforms answers one create with the platform's duplicate
// refusal (X's 403, LinkedIn's DUPLICATE_POST) after the post was stored:
// what a create looks like whose earlier attempt's post arrived late.
type duplicatePlatforms struct {
	publishing.Platforms
	once *atomic.Bool
}

func (d duplicatePlatforms) Client(ctx context.Context, a post.Account, c platform.Credential) (platform.Client, error) {
	cl, err := d.Platforms.Client(ctx, a, c)
	return duplicateClient{Client: cl, once: d.once}, err
}

type duplicateClient struct {
	platform.Client
	once *atomic.Bool
}

func (d duplicateClient) Publish(ctx context.Context, req platform.PublishRequest) (platform.Receipt, error) {
	rcpt, err := d.Client.Publish(ctx, req)
	if err == nil && d.once.CompareAndSwap(true, false) {
		return platform.Receipt{}, &platform.Rejected{Status: 403, Reason: platform.ReasonDuplicate, Message: "You are not allowed to create a Tweet with duplicate content."}
	}
	return rcpt, err
}

// A duplicate refusal is a signal to look, never a failure: the entry goes
// unknown, the confirm loop finds the post and confirms it, and the post
// is on the platform once. Not found, a human decides (a re-send would be
// refused the same way).
func TestDuplicateRefusalIsASignalToLook(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	once := &atomic.Bool{}
	once.Store(true)
	e.pub.Platforms = duplicatePlatforms{Platforms: mastodonPlatforms, once: once}
	body := "Quarterly numbers are out."
	job := e.schedule("dup", body)
	out := e.publish(job)
	if out.Result != publishing.Confirming {
		t.Fatalf("publish = %+v, want confirming", out)
	}
	en := e.entry(job)
	if en.State != ledger.Unknown || !strings.HasPrefix(en.Reason, platform.ReasonDuplicate) {
		t.Fatalf("entry after the duplicate refusal = %s %q, want unknown %s", en.State, en.Reason, platform.ReasonDuplicate)
	}
	name := publishing.ConfirmName(en.Key, 1)
	if in, _ := e.flows.input(name); in.Policy != publishing.PolicyManual {
		t.Errorf("confirm policy %q, want manual", in.Policy)
	}
	e.runConfirm(name)
	ours := e.ourStatuses(body)
	if len(ours) != 1 {
		t.Fatalf("%d copies, want 1", len(ours))
	}
	if en := e.entry(job); en.State != ledger.Confirmed || en.RemoteID != ours[0].ID {
		t.Errorf("entry %s remote %q, want confirmed %q", en.State, en.RemoteID, ours[0].ID)
	}
}

// twoStepPlatforms is a platform whose create has a first step that makes
// a handle (Threads' container): Publish records it through Checkpoint,
// then publishes. The scripted answers replace the answer of the publish
// step; Resume and Lookup's Checkpoint are recorded.
type twoStepPlatforms struct {
	publishing.Platforms
	s *twoStepScript
}

type twoStepScript struct {
	mu      sync.Mutex
	answers []error // answer of the n-th publish step, after it ran; nil: as the platform answered
	resumes []string
	looked  []string
	steps   int
}

func (p twoStepPlatforms) Client(ctx context.Context, a post.Account, c platform.Credential) (platform.Client, error) {
	cl, err := p.Platforms.Client(ctx, a, c)
	return twoStepClient{Client: cl, s: p.s}, err
}

type twoStepClient struct {
	platform.Client
	s *twoStepScript
}

func (c twoStepClient) Publish(ctx context.Context, req platform.PublishRequest) (platform.Receipt, error) {
	c.s.mu.Lock()
	c.s.steps++
	n := c.s.steps
	c.s.resumes = append(c.s.resumes, req.Resume)
	c.s.mu.Unlock()
	if req.Resume == "" {
		if err := req.Checkpoint(ctx, fmt.Sprintf("container-%d", n)); err != nil {
			return platform.Receipt{}, err
		}
	}
	c.s.mu.Lock()
	var scripted error
	if len(c.s.answers) > 0 {
		scripted, c.s.answers = c.s.answers[0], c.s.answers[1:]
	}
	c.s.mu.Unlock()
	if _, ok := scripted.(*platform.NotPerformed); ok {
		return platform.Receipt{}, scripted // the publish step did not run
	}
	rcpt, err := c.Client.Publish(ctx, req)
	if scripted != nil {
		return platform.Receipt{}, scripted
	}
	return rcpt, err
}

func (c twoStepClient) Lookup(ctx context.Context, q platform.LookupQuery) (platform.RemotePost, bool, error) {
	c.s.mu.Lock()
	c.s.looked = append(c.s.looked, q.Checkpoint)
	c.s.mu.Unlock()
	return c.Client.Lookup(ctx, q)
}

// The first step's handle is on the ledger entry before the publish step
// runs, and an unknown outcome's look gets it: the answer of the publish
// step is lost, the look asks about that container and confirms one post.
func TestCheckpointRecordedBeforePublishAndLookedUp(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	s := &twoStepScript{answers: []error{&platform.Ambiguous{Err: errors.New("answer lost")}}}
	e.pub.Platforms = twoStepPlatforms{Platforms: mastodonPlatforms, s: s}
	e.conf.Platforms = e.pub.Platforms
	body := "Two steps, one post."
	job := e.schedule("two-step", body)
	out := e.publish(job)
	if out.Result != publishing.Confirming {
		t.Fatalf("publish = %+v, want confirming", out)
	}
	en := e.entry(job)
	if en.State != ledger.Unknown || en.Checkpoint != "container-1" {
		t.Fatalf("entry %s checkpoint %q, want unknown with container-1", en.State, en.Checkpoint)
	}
	e.runConfirm(publishing.ConfirmName(en.Key, 1))
	if en := e.entry(job); en.State != ledger.Confirmed {
		t.Fatalf("entry %s (%s), want confirmed", en.State, en.Reason)
	}
	if len(s.looked) == 0 || s.looked[0] != "container-1" {
		t.Errorf("looks asked about %q, want container-1", s.looked)
	}
	if got := e.ourStatuses(body); len(got) != 1 {
		t.Errorf("%d copies, want 1", len(got))
	}
}

// A publish step that did not run (the container was not ready) releases
// the entry; the next attempt resumes the recorded container instead of
// making another.
func TestCheckpointResumedByTheNextAttempt(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	s := &twoStepScript{answers: []error{&platform.NotPerformed{Message: "container not ready", RetryAfter: time.Second}}}
	e.pub.Platforms = twoStepPlatforms{Platforms: mastodonPlatforms, s: s}
	body := "Resumed from its container."
	job := e.schedule("resume", body)
	if out := e.publish(job); out.Result == publishing.Published {
		t.Fatalf("first attempt published: %+v", out)
	}
	if en := e.entry(job); en.State != ledger.Released || en.Checkpoint != "container-1" {
		t.Fatalf("entry %s checkpoint %q, want released with container-1", en.State, en.Checkpoint)
	}
	e.clock.Advance(2 * time.Second)
	if out := e.publish(job); out.Result != publishing.Published {
		t.Fatalf("second attempt = %+v, want published", out)
	}
	if diff := cmp.Diff([]string{"", "container-1"}, s.resumes); diff != "" {
		t.Errorf("Resume per attempt (-want +got):\n%s", diff)
	}
	if got := e.ourStatuses(body); len(got) != 1 {
		t.Errorf("%d copies, want 1", len(got))
	}
}

// checkpointRefusingLedger cannot record a checkpoint: the entry is no
// longer ours, or the store is down.
type checkpointRefusingLedger struct{ publishing.Ledger }

func (checkpointRefusingLedger) RecordCheckpoint(context.Context, ledger.Entry, string) error {
	return ledger.ErrConflict
}

// A first-step handle that cannot be recorded stops the create before its
// publish step: a post published then could not be looked up by the
// handle after an unknown outcome. Nothing is posted and the attempt is
// given back, not spent.
func TestCheckpointNotRecordedStopsBeforePublishing(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	s := &twoStepScript{}
	e.pub.Platforms = twoStepPlatforms{Platforms: mastodonPlatforms, s: s}
	e.pub.Ledger = checkpointRefusingLedger{Ledger: e.store}
	body := "Not without its container recorded."
	job := e.schedule("no-checkpoint", body)
	if out := e.publish(job); out.Result != publishing.Retry {
		t.Errorf("publish = %+v, want retry", out)
	}
	if got := e.ourStatuses(body); len(got) != 0 {
		t.Errorf("%d copies posted, want none", len(got))
	}
	if en := e.entry(job); en.State != ledger.Released || en.Checkpoint != "" {
		t.Errorf("entry %s checkpoint %q, want released without one", en.State, en.Checkpoint)
	}
}

// After an ambiguous outcome the confirm loop looks, does not find the
// post and releases it; the re-send is throttled. The target must then be
// waiting with its next try, not left publishing: a publishing target
// counts as stuck every sweep (StuckTargets pages for the whole throttle
// window) and the sweeper re-enqueues it every minute.
func TestThrottledResendAfterUnknownIsWaiting(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.sb.Script(sandbox.Fault{Kind: sandbox.Fault503}, sandbox.Fault{Kind: sandbox.Fault429, RetryAfter: 30 * time.Minute})
	job := e.schedule("unknown-then-throttled", "Launch day.")
	if out := e.publish(job); out.Result != publishing.Confirming {
		t.Fatalf("first send = %+v, want confirming (a 503 on a write is ambiguous)", out)
	}
	if looks := e.runConfirm(publishing.ConfirmName(e.entry(job).Key, 1)); looks != 3+1 {
		t.Fatalf("confirm made %d looks, want 4 (quick first look, then 3)", looks)
	}
	if en := e.entry(job); en.State != ledger.Released {
		t.Fatalf("entry after the looks is %s, want released", en.State)
	}
	if out := e.publish(job); out.Result != publishing.Retry || out.RetryAfter < 29*time.Minute {
		t.Fatalf("re-send = %+v, want retry in ~30 min (throttled)", out)
	}
	en := e.entry(job)
	tg := e.target(job)
	if tg.Status != post.Waiting || !tg.NextTry.Equal(en.RetryAt) {
		t.Fatalf("target %s next try %v, want waiting until %v", tg.Status, tg.NextTry, en.RetryAt)
	}
	var metrics bytes.Buffer
	sw := e.sweeper(&metrics)
	e.clock.Advance(10 * time.Minute) // past StaleAfter, before the next try
	rep, err := sw.Sweep(context.Background())
	if err != nil || rep.StuckTargets != 0 || rep.Requeued != 0 || rep.WaitingTargets != 1 {
		t.Errorf("sweep in the throttle window: stuck %d requeued %d waiting %d (err %v), want 0, 0, 1",
			rep.StuckTargets, rep.Requeued, rep.WaitingTargets, err)
	}
}
