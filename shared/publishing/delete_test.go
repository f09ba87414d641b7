package publishing_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/platform/mastodon"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// deleteEnv is a real env with one post published on the sandbox, and a
// Deleter whose HTTP traffic goes through deleteTransport, which counts
// the DELETE requests it sends.
type deleteEnv struct {
	*env
	tr       *deleteTransport
	del      *publishing.Deleter
	op       *publishing.Operator
	metrics  *metricsRecorder
	job      publishing.Job
	remoteID string
	key      ledger.Key
}

const deleteBody = "Typo in this one, sorry."

func newDeleteEnv(t *testing.T) *deleteEnv {
	t.Helper()
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	job := e.schedule("to-delete", deleteBody)
	if out := e.publish(job); out.Result != publishing.Published {
		t.Fatalf("setup: publish = %+v", out)
	}
	tg := e.target(job)
	tr := &deleteTransport{base: http.DefaultTransport}
	metrics := &metricsRecorder{}
	de := &deleteEnv{
		env: e, tr: tr, metrics: metrics, job: job, remoteID: tg.RemoteID,
		key: ledger.DeleteKey(string(job.Account), tg.RemoteID),
		del: &publishing.Deleter{
			Ledger: e.store, Posts: e.store, Accounts: e.store,
			Platforms: mastodon.Connector{ClientID: "sandbox-client", ClientSecret: "sandbox-secret", HTTPClient: &http.Client{Transport: tr}},
			Metrics:   metrics, Now: e.clock.Now, Owner: "deleter-1",
			CallTimeout: 10 * unit, RecordMargin: 10 * unit, Lease: time.Minute,
			ReadBacks: 3, ReadBackWait: unit / 4, Logger: e.pub.Logger,
		},
	}
	de.op = &publishing.Operator{Ledger: e.store, Confirmer: e.conf, Tasks: &recordingTasks{}, Now: e.clock.Now, Logger: e.pub.Logger}
	return de
}

// request asks for the delete of the env's post.
func (de *deleteEnv) request(approved bool) publishing.DeleteRequest {
	de.t.Helper()
	req, err := de.del.Request(context.Background(), de.job.Post, "", approved)
	if err != nil {
		de.t.Fatalf("request delete: %v", err)
	}
	return req
}

func (de *deleteEnv) approve() {
	de.t.Helper()
	res, err := de.op.Decide(context.Background(), de.key, publishing.Decision{Action: publishing.DecisionRelease})
	if err != nil {
		de.t.Fatalf("approve: %v", err)
	}
	if res.Entry.State != ledger.Released {
		de.t.Fatalf("approve left the entry %s, want released", res.Entry.State)
	}
}

func (de *deleteEnv) run() (publishing.DeleteResult, error) {
	return de.del.Run(context.Background(), de.key)
}

func (de *deleteEnv) entry() ledger.Entry {
	de.t.Helper()
	en, err := de.store.Get(context.Background(), de.key)
	if err != nil {
		de.t.Fatalf("delete entry: %v", err)
	}
	return en
}

// onPlatform reports whether the sandbox still shows the post.
func (de *deleteEnv) onPlatform() bool {
	for _, st := range de.sb.Statuses(de.sbAcct.ID) {
		if st.ID == de.remoteID {
			return true
		}
	}
	return false
}

// history is the entry's moves, as [from, to] pairs.
func (de *deleteEnv) history() [][2]ledger.State {
	de.t.Helper()
	hist, err := de.store.History(context.Background(), de.key)
	if err != nil {
		de.t.Fatal(err)
	}
	var out [][2]ledger.State
	for _, h := range hist {
		out = append(out, [2]ledger.State{h.From, h.To})
	}
	return out
}

// sweeper is the env's sweeper with the Deleter wired in.
func (de *deleteEnv) sweeper() *publishing.Sweeper {
	sw := de.env.sweeper(&bytes.Buffer{})
	sw.Deleter = de.del
	return sw
}

// deleteTransport sits between the Deleter's Mastodon client and the
// sandbox. It counts DELETE requests, can answer them itself (a 403 the
// sandbox cannot produce), and can keep a deleted status visible to reads
// for a while, as Mastodon does: its DELETE answers 200 and a background
// job removes the status.
type deleteTransport struct {
	base    http.RoundTripper
	deletes atomic.Int32

	mu sync.Mutex
	// answerDelete, when set, answers every DELETE without forwarding it.
	answerDelete *cannedAnswer
	// visibleReads is how many more reads of a gone status answer 200.
	visibleReads int
	// failReads, once a DELETE went through, answers reads of a status 503.
	failReads bool
	deleted   bool
}

type cannedAnswer struct {
	status int
	body   string
}

var statusPath = regexp.MustCompile(`^/api/v1/statuses/[0-9]+$`)

func (t *deleteTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	canned := t.answerDelete
	failRead := t.failReads && t.deleted && r.Method == http.MethodGet && statusPath.MatchString(r.URL.Path)
	if r.Method == http.MethodDelete {
		t.deleted = true
	}
	t.mu.Unlock()
	if failRead {
		return answer(r, http.StatusServiceUnavailable, `{"error":"There was a temporary problem serving your request, please try again"}`), nil
	}
	if r.Method == http.MethodDelete {
		t.deletes.Add(1)
		if canned != nil {
			if r.Body != nil {
				_ = r.Body.Close()
			}
			return answer(r, canned.status, canned.body), nil
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil || r.Method != http.MethodGet || !statusPath.MatchString(r.URL.Path) || resp.StatusCode != http.StatusNotFound {
		return resp, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.visibleReads == 0 {
		return resp, nil
	}
	t.visibleReads--
	_ = resp.Body.Close()
	id := strings.TrimPrefix(r.URL.Path, "/api/v1/statuses/")
	return answer(r, http.StatusOK, fmt.Sprintf(`{"id":%q,"content":"<p>still here</p>","media_attachments":[]}`, id)), nil
}

func (t *deleteTransport) setVisibleReads(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.visibleReads = n
}

func answer(r *http.Request, status int, body string) *http.Response {
	return &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json; charset=utf-8"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       r,
	}
}

// The whole path: a delete is requested and held, a Run refuses it, the
// operator approves, the Run deletes and reads the post back gone, the
// target is deleted; running again sends nothing.
//
// Breakage it catches: a Run that sends a held (unapproved) delete; a
// second Request that writes again; a delete that leaves the target
// published; a second Run that sends a second DELETE.
func TestDeleteApproveThenRun(t *testing.T) {
	de := newDeleteEnv(t)
	ctx := context.Background()

	req := de.request(false)
	if !req.New || req.Entry.State != ledger.Held || req.Entry.Reason != publishing.ReasonAwaitingApproval {
		t.Fatalf("request = new %v, %s %q; want a new entry held awaiting_approval", req.New, req.Entry.State, req.Entry.Reason)
	}
	if req.Entry.Key != de.key || req.Entry.Action != ledger.Delete || req.Entry.Subject != de.remoteID || req.Entry.Attempt != 1 {
		t.Errorf("entry %+v, want key %s, action delete, subject %s, attempt 1", req.Entry, de.key, de.remoteID)
	}
	again := de.request(false)
	if again.New {
		t.Errorf("second request wrote a new entry")
	}
	if diff := cmp.Diff(req.Entry, again.Entry); diff != "" {
		t.Errorf("second request changed the entry (-first +second):\n%s", diff)
	}

	_, err := de.run()
	if !errors.Is(err, publishing.ErrNotApproved) || !strings.Contains(err.Error(), "oncepost approve "+string(de.key)) {
		t.Fatalf("run before approval: %v; want ErrNotApproved naming `oncepost approve %s`", err, de.key)
	}
	if n := de.tr.deletes.Load(); n != 0 || !de.onPlatform() {
		t.Fatalf("a run before approval sent %d DELETEs", n)
	}

	de.approve()
	res, err := de.run()
	if err != nil || res.Outcome != publishing.DeleteDone || res.Sent != 1 {
		t.Fatalf("run after approval = %+v, %v; want deleted with one DELETE", res, err)
	}
	if de.onPlatform() || de.sb.Stats().Deleted != 1 {
		t.Errorf("sandbox still shows the post (stats %+v)", de.sb.Stats())
	}
	if tg := de.target(de.job); tg.Status != post.Deleted || tg.RemoteID != de.remoteID {
		t.Errorf("target %s remote %q, want deleted keeping %q", tg.Status, tg.RemoteID, de.remoteID)
	}
	if en := de.entry(); en.State != ledger.Confirmed || en.RemoteID != de.remoteID || en.Reason != publishing.ReasonDeleted {
		t.Errorf("entry %s remote %q reason %q, want confirmed %q %q", en.State, en.RemoteID, en.Reason, de.remoteID, publishing.ReasonDeleted)
	}
	if got := de.metrics.count(publishing.MetricDeleted); got != 1 {
		t.Errorf("metric %s = %v, want 1", publishing.MetricDeleted, got)
	}

	res, err = de.run()
	if err != nil || res.Outcome != publishing.DeleteAlready || res.Sent != 0 {
		t.Errorf("second run = %+v, %v; want already deleted, nothing sent", res, err)
	}
	if n := de.tr.deletes.Load(); n != 1 {
		t.Errorf("%d DELETEs sent in all, want 1", n)
	}
	want := [][2]ledger.State{
		{"", ledger.Pending}, {ledger.Pending, ledger.Held}, // requested, held for approval
		{ledger.Held, ledger.Held}, {ledger.Held, ledger.Released}, // decision recorded, applied
		{ledger.Released, ledger.Pending}, {ledger.Pending, ledger.Confirmed}, // acquired, deleted
	}
	if diff := cmp.Diff(want, de.history()); diff != "" {
		t.Errorf("ledger history (-want +got):\n%s", diff)
	}
	if _, err := de.op.Decide(ctx, de.key, publishing.Decision{Action: publishing.DecisionReject}); !errors.Is(err, publishing.ErrDecidedOtherwise) {
		t.Errorf("reject after the delete: %v, want ErrDecidedOtherwise", err)
	}
}

// Deleting twice is a no-op: the second Request finds the entry and writes
// nothing, the second Run sends no DELETE.
//
// Breakage it catches: a Request that creates a second entry or fails on
// the existing one; a Run that re-sends a confirmed delete (which the
// platform would answer 404).
func TestDeleteTwiceIsANoOp(t *testing.T) {
	de := newDeleteEnv(t)
	first := de.request(true)
	if !first.New || first.Entry.State != ledger.Released || first.Entry.Reason != publishing.ReasonApprovedOnRequest {
		t.Fatalf("approved request = new %v, %s %q; want a new entry released approved_on_request", first.New, first.Entry.State, first.Entry.Reason)
	}
	if res, err := de.run(); err != nil || res.Outcome != publishing.DeleteDone {
		t.Fatalf("first run = %+v, %v", res, err)
	}
	histLen := len(de.history())

	second := de.request(true)
	if second.New || second.Entry.State != ledger.Confirmed {
		t.Errorf("second request = new %v, %s; want the confirmed entry, nothing new", second.New, second.Entry.State)
	}
	res, err := de.run()
	if err != nil || res.Outcome != publishing.DeleteAlready {
		t.Errorf("second run = %+v, %v; want already deleted", res, err)
	}
	if n, st := de.tr.deletes.Load(), de.sb.Stats(); n != 1 || st.Deleted != 1 {
		t.Errorf("%d DELETEs sent, sandbox deleted %d; want 1 and 1", n, st.Deleted)
	}
	if got := len(de.history()); got != histLen {
		t.Errorf("the second request and run wrote %d ledger moves, want none", got-histLen)
	}
}

// One approved Run against each answer the platform can give. The answer
// to a DELETE is data: only a read back says whether the post is gone.
func TestDeleteOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name string
		// breaks names the naive implementation the case catches.
		breaks  string
		setup   func(*deleteEnv)
		outcome publishing.DeleteOutcome
		wantErr error
		state   ledger.State
		reason  string // prefix of the entry's reason
		deletes int32  // DELETE requests the Run sent
		gone    bool   // the sandbox no longer shows the post
		target  post.TargetStatus
		through []ledger.State // states the entry passed through, besides the first two
	}{
		{
			name:   "already gone before the DELETE",
			breaks: "no exists check: a DELETE sent for a post that is not there",
			setup: func(de *deleteEnv) {
				c, err := mastodonPlatforms.Client(context.Background(), de.account, platform.Credential{AccessToken: de.sbAcct.AccessToken})
				if err != nil {
					de.t.Fatal(err)
				}
				if err := c.Delete(context.Background(), de.remoteID); err != nil {
					de.t.Fatal(err)
				}
			},
			outcome: publishing.DeleteDone, state: ledger.Confirmed, reason: publishing.ReasonAlreadyGone,
			deletes: 0, gone: true, target: post.Deleted,
		},
		{
			name:    "accepted and gone at once",
			breaks:  "none in particular: the happy path",
			outcome: publishing.DeleteDone, state: ledger.Confirmed, reason: publishing.ReasonDeleted,
			deletes: 1, gone: true, target: post.Deleted,
		},
		{
			name:    "accepted, removed by a background job within the read backs",
			breaks:  "a single read back taken as the truth: still visible once is not still visible",
			setup:   func(de *deleteEnv) { de.tr.setVisibleReads(2) },
			outcome: publishing.DeleteDone, state: ledger.Confirmed, reason: publishing.ReasonDeleted,
			deletes: 1, gone: true, target: post.Deleted,
		},
		{
			name:    "accepted but still visible after every read back",
			breaks:  "a 2xx taken as done without reading back",
			setup:   func(de *deleteEnv) { de.tr.setVisibleReads(1000) },
			outcome: publishing.DeleteUnknown, state: ledger.Unknown, reason: publishing.ReasonDeletedButStillVisible,
			deletes: 1, gone: true, target: post.Published,
		},
		{
			name:   "500 after the server deleted",
			breaks: "a 5xx taken as a failure, or as not performed and sent again",
			setup: func(de *deleteEnv) {
				de.sb.ScriptRoute(sandbox.RouteDeleteStatus, sandbox.Fault{Kind: sandbox.Fault500AfterCommit})
			},
			outcome: publishing.DeleteDone, state: ledger.Confirmed, reason: publishing.ReasonGoneAfterReadBack,
			deletes: 1, gone: true, target: post.Deleted, through: []ledger.State{ledger.Unknown},
		},
		{
			name:   "response lost after the server deleted",
			breaks: "a lost response taken as a failure, or the DELETE sent again without reading back",
			setup: func(de *deleteEnv) {
				de.sb.ScriptRoute(sandbox.RouteDeleteStatus, sandbox.Fault{Kind: sandbox.FaultDropResponse})
			},
			outcome: publishing.DeleteDone, state: ledger.Confirmed, reason: publishing.ReasonGoneAfterReadBack,
			deletes: 1, gone: true, target: post.Deleted, through: []ledger.State{ledger.Unknown},
		},
		{
			name:   "503 before the server acted: read back, still there, sent again",
			breaks: "an unknown outcome left unresolved, or resolved as done without reading back",
			setup: func(de *deleteEnv) {
				de.sb.ScriptRoute(sandbox.RouteDeleteStatus, sandbox.Fault{Kind: sandbox.Fault503})
			},
			outcome: publishing.DeleteDone, state: ledger.Confirmed, reason: publishing.ReasonDeleted,
			deletes: 2, gone: true, target: post.Deleted,
			through: []ledger.State{ledger.Unknown, ledger.Released, ledger.Pending},
		},
		{
			name:   "throttled",
			breaks: "a 429 taken as a failure",
			setup: func(de *deleteEnv) {
				de.sb.ScriptRoute(sandbox.RouteDeleteStatus, sandbox.Fault{Kind: sandbox.Fault429, RetryAfter: 30 * time.Second})
			},
			outcome: publishing.DeleteRetry, state: ledger.Released, reason: "platform did not perform",
			deletes: 1, gone: false, target: post.Published,
		},
		{
			name:   "403",
			breaks: "a refusal reported as done, or retried",
			setup: func(de *deleteEnv) {
				de.tr.answerDelete = &cannedAnswer{http.StatusForbidden, `{"error":"This action is outside the authorized scopes"}`}
			},
			outcome: publishing.DeleteFailed, wantErr: publishing.ErrDeleteFailed, state: ledger.Failed, reason: "",
			deletes: 1, gone: false, target: post.Published,
		},
		{
			name:   "404 while the post is still there",
			breaks: "a 404 trusted as \"already deleted\"",
			setup: func(de *deleteEnv) {
				de.tr.answerDelete = &cannedAnswer{http.StatusNotFound, `{"error":"Record not found"}`}
			},
			outcome: publishing.DeleteFailed, wantErr: publishing.ErrDeleteFailed, state: ledger.Failed, reason: publishing.ReasonNotFoundButStillThere,
			deletes: 1, gone: false, target: post.Published,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Logf("catches: %s", tc.breaks)
			de := newDeleteEnv(t)
			de.request(true)
			if tc.setup != nil {
				tc.setup(de)
			}
			res, err := de.run()
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("run: %v, want %v", err, tc.wantErr)
			}
			en := de.entry()
			if res.Outcome != tc.outcome || en.State != tc.state || !strings.HasPrefix(en.Reason, tc.reason) {
				t.Errorf("run = %s, entry %s %q; want %s, entry %s with reason %q…", res.Outcome, en.State, en.Reason, tc.outcome, tc.state, tc.reason)
			}
			if n := de.tr.deletes.Load(); n != tc.deletes || int32(res.Sent) != tc.deletes {
				t.Errorf("DELETEs sent: %d (result says %d), want %d", n, res.Sent, tc.deletes)
			}
			if gone := !de.onPlatform(); gone != tc.gone {
				t.Errorf("post gone from the sandbox: %v, want %v", gone, tc.gone)
			}
			if de.sb.Stats().Deleted > 1 {
				t.Errorf("sandbox deleted %d statuses", de.sb.Stats().Deleted)
			}
			if tg := de.target(de.job); tg.Status != tc.target {
				t.Errorf("target %s, want %s", tg.Status, tc.target)
			}
			var through []ledger.State
			for _, h := range de.history()[3:] { // after "" → pending → released → pending
				through = append(through, h[1])
			}
			if len(through) > 0 {
				through = through[:len(through)-1] // the final state is checked above
			}
			if diff := cmp.Diff(tc.through, through, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("states passed through (-want +got):\n%s", diff)
			}
		})
	}
}

// A 403 is reported as a failure with the platform's words, the target
// stays published, and no later Run sends again.
//
// Breakage it catches: a failure that a later Run turns into a retry, or
// a reason that drops the platform's message.
func TestDeleteForbiddenStaysFailed(t *testing.T) {
	de := newDeleteEnv(t)
	de.request(true)
	de.tr.answerDelete = &cannedAnswer{http.StatusForbidden, `{"error":"This action is outside the authorized scopes"}`}
	for i := range 2 {
		res, err := de.run()
		if !errors.Is(err, publishing.ErrDeleteFailed) || res.Outcome != publishing.DeleteFailed {
			t.Fatalf("run %d = %+v, %v; want failed", i+1, res, err)
		}
		if !strings.Contains(err.Error(), "This action is outside the authorized scopes") {
			t.Errorf("run %d error %q lacks the platform's message", i+1, err)
		}
	}
	if n := de.tr.deletes.Load(); n != 1 {
		t.Errorf("%d DELETEs, want 1", n)
	}
	if en := de.entry(); !strings.Contains(en.Reason, "403") && !strings.Contains(en.Reason, "forbidden") {
		t.Errorf("reason %q names neither the status nor the platform's reason", en.Reason)
	}
	if got := de.metrics.count(publishing.MetricDeleteFailed); got != 1 {
		t.Errorf("metric %s = %v, want 1", publishing.MetricDeleteFailed, got)
	}
}

// Mastodon answers 404 to a DELETE of a status that is not the account's.
// The post is still there: the delete failed, it is never "done".
//
// Breakage it catches: a 404 trusted as "already deleted".
func TestDeleteForeignPost(t *testing.T) {
	de := newDeleteEnv(t)
	ctx := context.Background()
	other := de.sb.AddAccount("other")
	foreign := de.sb.InjectStatus(other.ID, "Not ours to delete.")
	slot := de.clock.Now().Truncate(time.Second)
	p := post.Post{ID: "foreign", Body: "Not ours to delete.", CreatedAt: slot,
		Targets: []post.Target{{Account: de.account.ID, Slot: slot, Status: post.Triggered, UpdatedAt: slot}}}
	if err := de.store.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := de.store.UpdateTarget(ctx, p.ID, de.account.ID, post.TargetUpdate{Status: post.Published, RemoteID: foreign.ID, At: slot}); err != nil {
		t.Fatal(err)
	}
	req, err := de.del.Request(ctx, p.ID, de.account.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	res, err := de.del.Run(ctx, req.Entry.Key)
	if !errors.Is(err, publishing.ErrDeleteFailed) || res.Outcome != publishing.DeleteFailed {
		t.Fatalf("run = %+v, %v; want failed", res, err)
	}
	if !strings.Contains(err.Error(), "404 but the post is still there") {
		t.Errorf("error %q does not say the post is still there", err)
	}
	if n := de.tr.deletes.Load(); n != 1 {
		t.Errorf("%d DELETEs, want 1", n)
	}
	if len(de.sb.Statuses(other.ID)) != 1 {
		t.Errorf("the foreign status is gone")
	}
	pst, _ := de.store.GetPost(ctx, p.ID)
	if tg, _ := pst.Target(de.account.ID); tg.Status != post.Published {
		t.Errorf("target %s, want published", tg.Status)
	}
}

// A 429 releases the entry with the platform's Retry-After: not failed,
// nothing sent before it, sent after it.
//
// Breakage it catches: a 429 taken as a failure, or a Run that sends again
// before the Retry-After.
func TestDeleteThrottledWaits(t *testing.T) {
	de := newDeleteEnv(t)
	de.request(true)
	de.sb.ScriptRoute(sandbox.RouteDeleteStatus, sandbox.Fault{Kind: sandbox.Fault429, RetryAfter: 30 * time.Second})
	start := de.clock.Now()
	res, err := de.run()
	if err != nil || res.Outcome != publishing.DeleteRetry {
		t.Fatalf("run = %+v, %v; want retry", res, err)
	}
	en := de.entry()
	if en.State != ledger.Released || en.RetryAt.Before(start.Add(30*time.Second)) {
		t.Errorf("entry %s retry at %s, want released not before %s", en.State, en.RetryAt, start.Add(30*time.Second))
	}
	if res.RetryAfter < 30*time.Second {
		t.Errorf("retry after %s, want ≥ 30s", res.RetryAfter)
	}
	if res, err := de.run(); err != nil || res.Outcome != publishing.DeleteRetry || de.tr.deletes.Load() != 1 {
		t.Errorf("run before Retry-After = %+v, %v with %d DELETEs; want retry, nothing sent", res, err, de.tr.deletes.Load())
	}
	de.clock.Advance(31 * time.Second)
	if res, err := de.run(); err != nil || res.Outcome != publishing.DeleteDone {
		t.Errorf("run after Retry-After = %+v, %v; want deleted", res, err)
	}
	if n := de.tr.deletes.Load(); n != 2 || de.onPlatform() {
		t.Errorf("%d DELETEs, post on platform %v; want 2 and gone", n, de.onPlatform())
	}
	if got := de.metrics.count(publishing.MetricThrottled); got != 1 {
		t.Errorf("metric %s = %v, want 1", publishing.MetricThrottled, got)
	}
}

// A post still visible after the read backs is read again by the next
// Run — or by the sweeper — and confirmed without a second DELETE.
//
// Breakage it catches: an unknown delete that is sent again without
// reading back first.
func TestDeleteStillVisibleIsReadAgain(t *testing.T) {
	for _, by := range []string{"run", "sweeper"} {
		t.Run(by, func(t *testing.T) {
			de := newDeleteEnv(t)
			de.request(true)
			de.tr.setVisibleReads(1000)
			if res, err := de.run(); err != nil || res.Outcome != publishing.DeleteUnknown {
				t.Fatalf("run = %+v, %v; want unknown", res, err)
			}
			de.tr.setVisibleReads(0) // the background job ran
			switch by {
			case "run":
				if res, err := de.run(); err != nil || res.Outcome != publishing.DeleteDone {
					t.Fatalf("second run = %+v, %v; want deleted", res, err)
				}
			case "sweeper":
				de.clock.Advance(publishing.StaleAfter + time.Second)
				rep, err := de.sweeper().Sweep(context.Background())
				if err != nil || rep.DeletesResolved != 1 || rep.ConfirmsStarted != 0 {
					t.Fatalf("sweep = %+v, %v; want one delete resolved, no confirm workflow", rep, err)
				}
			}
			if en := de.entry(); en.State != ledger.Confirmed || en.Reason != publishing.ReasonGoneAfterReadBack {
				t.Errorf("entry %s %q, want confirmed %s", en.State, en.Reason, publishing.ReasonGoneAfterReadBack)
			}
			if tg := de.target(de.job); tg.Status != post.Deleted {
				t.Errorf("target %s, want deleted", tg.Status)
			}
			if n := de.tr.deletes.Load(); n != 1 {
				t.Errorf("%d DELETEs, want 1", n)
			}
			if names := de.flows.names(); len(names) != 0 {
				t.Errorf("confirm workflows started for a delete: %v", names)
			}
		})
	}
}

// A read back that fails is never "gone": the server deleted the post and
// answered 500, but while the post cannot be read the entry stays unknown
// and the target published; once reads work, the next Run confirms it
// without a second DELETE.
//
// Breakage it catches: a failed Exists read taken as "not there".
func TestDeleteUnreadableIsNeverGone(t *testing.T) {
	de := newDeleteEnv(t)
	de.request(true)
	de.sb.ScriptRoute(sandbox.RouteDeleteStatus, sandbox.Fault{Kind: sandbox.Fault500AfterCommit})
	de.tr.mu.Lock()
	de.tr.failReads = true
	de.tr.mu.Unlock()
	res, err := de.run()
	if err == nil || errors.Is(err, publishing.ErrDeleteFailed) || res.Outcome != publishing.DeleteUnknown {
		t.Fatalf("run while reads fail = %+v, %v; want unknown with the read's error", res, err)
	}
	if en := de.entry(); en.State != ledger.Unknown {
		t.Errorf("entry %s, want unknown", en.State)
	}
	if tg := de.target(de.job); tg.Status != post.Published {
		t.Errorf("target %s while nobody could read the post, want published", tg.Status)
	}
	de.tr.mu.Lock()
	de.tr.failReads = false
	de.tr.mu.Unlock()
	if res, err := de.run(); err != nil || res.Outcome != publishing.DeleteDone {
		t.Fatalf("run once reads work = %+v, %v; want deleted", res, err)
	}
	if n := de.tr.deletes.Load(); n != 1 {
		t.Errorf("%d DELETEs, want 1", n)
	}
}

// The invariant: a DELETE is never sent without an approval recorded,
// whatever crashes. Each case writes the entry a crashed process would
// have left, then lets a sweeper pass and Runs loose on it.
//
// Breakage it catches: resolving an open entry by reading back and
// re-sending (the post is still there, so a naive resolver releases and
// sends), a sweeper that hands delete entries to the publish confirm
// workflow, and a Run that sends a released entry nobody approved.
func TestDeleteNeverSentWithoutApproval(t *testing.T) {
	for _, tc := range []struct {
		name string
		// crash turns the freshly written pending entry into what the
		// crash left.
		crash func(de *deleteEnv, e ledger.Entry) ledger.Entry
	}{
		{"crash between the pending write and held", func(_ *deleteEnv, e ledger.Entry) ledger.Entry { return e }},
		{"another process expired the lease to unknown", func(de *deleteEnv, e ledger.Entry) ledger.Entry {
			de.clock.Advance(time.Minute)
			next, err := e.ExpireLease(de.clock.Now())
			if err != nil {
				de.t.Fatal(err)
			}
			de.update(e, next)
			return next
		}},
		{"released without an approval", func(de *deleteEnv, e ledger.Entry) ledger.Entry {
			next, err := e.Release("foreign_writer", de.clock.Now())
			if err != nil {
				de.t.Fatal(err)
			}
			de.update(e, next)
			return next
		}},
	} {
		for _, first := range []string{"sweeper", "run"} {
			t.Run(tc.name+"/"+first+" first", func(t *testing.T) {
				de := newDeleteEnv(t)
				ctx := context.Background()
				// What Request writes first, by a process that then dies.
				pending := ledger.NewEntry(de.key, ledger.Delete, string(de.account.ID), de.remoteID, time.Time{}, "post:"+string(de.job.Post),
					"dead-operator", de.clock.Now(), time.Minute)
				if err := de.store.Create(ctx, pending); err != nil {
					t.Fatal(err)
				}
				tc.crash(de, pending)
				de.clock.Advance(publishing.StaleAfter + time.Second)

				sweep := func() {
					rep, err := de.sweeper().Sweep(ctx)
					if err != nil {
						t.Fatalf("sweep: %v", err)
					}
					if rep.ConfirmsStarted != 0 || rep.Requeued != 0 {
						t.Errorf("sweep started %d confirms and requeued %d for a delete", rep.ConfirmsStarted, rep.Requeued)
					}
				}
				run := func() {
					if _, err := de.run(); !errors.Is(err, publishing.ErrNotApproved) {
						t.Errorf("run: %v, want ErrNotApproved", err)
					}
				}
				if first == "sweeper" {
					sweep()
					run()
				} else {
					run()
					sweep()
				}
				run()

				if n := de.tr.deletes.Load(); n != 0 || !de.onPlatform() {
					t.Fatalf("%d DELETEs sent without an approval", n)
				}
				if en := de.entry(); en.State != ledger.Held || en.Reason != publishing.ReasonAwaitingApproval {
					t.Errorf("entry %s %q, want held %s", en.State, en.Reason, publishing.ReasonAwaitingApproval)
				}
				if names := de.flows.names(); len(names) != 0 {
					t.Errorf("confirm workflows started for a delete: %v", names)
				}
				// Once approved, it goes.
				de.approve()
				if res, err := de.run(); err != nil || res.Outcome != publishing.DeleteDone || de.tr.deletes.Load() != 1 {
					t.Errorf("run after approval = %+v, %v; want deleted with one DELETE", res, err)
				}
			})
		}
	}
}

// update writes a move by hand, as another process would have.
func (de *deleteEnv) update(prev, next ledger.Entry) {
	de.t.Helper()
	if err := de.store.Update(context.Background(), prev, next); err != nil {
		de.t.Fatal(err)
	}
}

// A Run that acquired an approved delete and died, DELETE sent or not:
// the sweeper reads back and never sends; the approval stands, so the next
// Run sends (or finds it gone).
//
// Breakage it catches: a sweeper that sends, and an approval lost by a
// crash (the entry held again after the operator approved it).
func TestDeleteCrashAfterApprovedAcquire(t *testing.T) {
	for _, sent := range []bool{false, true} {
		t.Run(fmt.Sprintf("DELETE sent %v", sent), func(t *testing.T) {
			de := newDeleteEnv(t)
			ctx := context.Background()
			cur := de.request(true).Entry
			acq, err := cur.Reacquire("dead-deleter", de.clock.Now(), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			de.update(cur, acq)
			if sent {
				c, _ := mastodonPlatforms.Client(ctx, de.account, platform.Credential{AccessToken: de.sbAcct.AccessToken})
				if err := c.Delete(ctx, de.remoteID); err != nil {
					t.Fatal(err)
				}
			}
			de.clock.Advance(publishing.StaleAfter + time.Second)
			rep, err := de.sweeper().Sweep(ctx)
			if err != nil || rep.StalePending != 1 || rep.DeletesResolved != 1 {
				t.Fatalf("sweep = %+v, %v; want one stale pending delete resolved", rep, err)
			}
			if n := de.tr.deletes.Load(); n != 0 {
				t.Fatalf("the sweeper sent %d DELETEs", n)
			}
			en := de.entry()
			wantState, wantReason := ledger.Released, publishing.ReasonStillThereAfterReadBack
			if sent {
				wantState, wantReason = ledger.Confirmed, publishing.ReasonGoneAfterReadBack
			}
			if en.State != wantState || en.Reason != wantReason {
				t.Errorf("after the sweep: %s %q, want %s %q", en.State, en.Reason, wantState, wantReason)
			}
			res, err := de.run()
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if want := int32(btoi(!sent)); de.tr.deletes.Load() != want || res.Sent != int(want) {
				t.Errorf("run sent %d DELETEs, want %d", de.tr.deletes.Load(), want)
			}
			if de.onPlatform() || de.target(de.job).Status != post.Deleted {
				t.Errorf("post on platform %v, target %s; want gone and deleted", de.onPlatform(), de.target(de.job).Status)
			}
		})
	}
}

// Runs racing on one approved delete send one DELETE between them.
//
// Breakage it catches: an acquire that is not conditional (every Run
// sends), or a Run that re-sends an entry another one holds.
func TestDeleteConcurrentRuns(t *testing.T) {
	de := newDeleteEnv(t)
	de.request(true)
	// Widen the window: the server takes its time before it deletes, so
	// a second DELETE would find the post still there.
	de.sb.ScriptRoute(sandbox.RouteDeleteStatus, sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: 3 * unit})
	const n = 8
	// Every Run reads the entry released before any of them acquires it.
	gate := &gateLedger{Ledger: de.store, want: n, ready: make(chan struct{})}
	de.del.Ledger = gate
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		outcomes = map[publishing.DeleteOutcome]int{}
	)
	for range n {
		wg.Go(func() {
			res, err := de.run()
			if err != nil {
				t.Errorf("run: %v", err)
				return
			}
			mu.Lock()
			outcomes[res.Outcome]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if got := de.tr.deletes.Load(); got != 1 {
		t.Errorf("%d DELETEs sent, want 1", got)
	}
	if outcomes[publishing.DeleteDone] != 1 {
		t.Errorf("outcomes %v, want exactly one run that deleted", outcomes)
	}
	for o := range outcomes {
		if o != publishing.DeleteDone && o != publishing.DeleteInProgress && o != publishing.DeleteAlready {
			t.Errorf("outcome %s, want deleted, in progress or already deleted", o)
		}
	}
	if en := de.entry(); en.State != ledger.Confirmed {
		t.Errorf("entry %s, want confirmed", en.State)
	}
}

// gateLedger holds every acquire (released → pending) until want reads
// have been made, so racing Runs all see the entry released first.
type gateLedger struct {
	publishing.Ledger
	want  int32
	reads atomic.Int32
	once  sync.Once
	ready chan struct{}
}

func (g *gateLedger) Get(ctx context.Context, key ledger.Key) (ledger.Entry, error) {
	e, err := g.Ledger.Get(ctx, key)
	if g.reads.Add(1) >= g.want {
		g.once.Do(func() { close(g.ready) })
	}
	return e, err
}

func (g *gateLedger) Update(ctx context.Context, prev, next ledger.Entry) error {
	if prev.State == ledger.Released && next.State == ledger.Pending {
		select {
		case <-g.ready:
		case <-time.After(2 * time.Second):
		}
	}
	return g.Ledger.Update(ctx, prev, next)
}

// Operators' decisions on a delete entry are applied directly: reject
// fails it (never sent), confirm is refused, approving twice is a no-op,
// and a decision recorded by a Decide that stopped before applying it is
// applied by the next Run.
//
// Breakage it catches: Decide handing a delete to the publish confirm
// steps (which enqueue a publish job for a "post" named by the remote id),
// an operator "confirming" a delete nobody read back, and a recorded
// approval that is lost.
func TestDeleteDecisions(t *testing.T) {
	ctx := context.Background()
	t.Run("reject", func(t *testing.T) {
		de := newDeleteEnv(t)
		de.request(false)
		res, err := de.op.Decide(ctx, de.key, publishing.Decision{Action: publishing.DecisionReject, Reason: "keep it"})
		if err != nil || res.How != publishing.DecisionApplied || res.Entry.State != ledger.Failed {
			t.Fatalf("reject = %+v, %v; want applied, failed", res, err)
		}
		if want := publishing.ReasonOperatorRejected + ": keep it"; res.Entry.Reason != want {
			t.Errorf("reason %q, want %q", res.Entry.Reason, want)
		}
		if _, err := de.run(); !errors.Is(err, publishing.ErrDeleteFailed) {
			t.Errorf("run after reject: %v, want ErrDeleteFailed", err)
		}
		if n := de.tr.deletes.Load(); n != 0 || !de.onPlatform() || de.target(de.job).Status != post.Published {
			t.Errorf("rejected delete: %d DELETEs, post on platform %v, target %s", n, de.onPlatform(), de.target(de.job).Status)
		}
		if jobs := de.queued(); len(jobs) != 0 {
			t.Errorf("decision enqueued jobs %v", jobs)
		}
	})
	t.Run("confirm is refused", func(t *testing.T) {
		de := newDeleteEnv(t)
		de.request(false)
		_, err := de.op.Decide(ctx, de.key, publishing.Decision{Action: publishing.DecisionConfirm, RemoteID: de.remoteID})
		if !errors.Is(err, publishing.ErrDeleteNotConfirmable) {
			t.Errorf("confirm: %v, want ErrDeleteNotConfirmable", err)
		}
		if en := de.entry(); en.State != ledger.Held || en.Decision != "" {
			t.Errorf("entry %s decision %q after a refused confirm, want held, undecided", en.State, en.Decision)
		}
	})
	t.Run("approve twice", func(t *testing.T) {
		de := newDeleteEnv(t)
		de.request(false)
		de.approve()
		again, err := de.op.Decide(ctx, de.key, publishing.Decision{Action: publishing.DecisionRelease})
		if err != nil || again.How != publishing.DecisionAlready {
			t.Errorf("second approve = %+v, %v; want a no-op", again, err)
		}
		if jobs := de.queued(); len(jobs) != 0 {
			t.Errorf("approval enqueued jobs %v", jobs)
		}
		if res, err := de.run(); err != nil || res.Outcome != publishing.DeleteDone {
			t.Errorf("run = %+v, %v; want deleted", res, err)
		}
	})
	t.Run("decision recorded, not applied", func(t *testing.T) {
		de := newDeleteEnv(t)
		held := de.request(false).Entry
		decided, err := held.WithDecision(`{"decision":"release"}`, de.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		de.update(held, decided)
		res, err := de.run()
		if err != nil || res.Outcome != publishing.DeleteDone || de.tr.deletes.Load() != 1 {
			t.Errorf("run = %+v, %v with %d DELETEs; want the recorded approval applied and the post deleted", res, err, de.tr.deletes.Load())
		}
	})
}

// Request refuses what cannot be deleted and writes nothing for it.
func TestDeleteRequestRefuses(t *testing.T) {
	de := newDeleteEnv(t)
	ctx := context.Background()
	scheduled := de.scheduleAt("later", "Not out yet.", de.clock.Now().Add(time.Hour).Truncate(time.Second))
	two := post.Post{ID: "two", Body: "Two accounts.", CreatedAt: de.clock.Now(), Targets: []post.Target{
		{Account: "a", Slot: de.clock.Now(), Status: post.Scheduled}, {Account: "b", Slot: de.clock.Now(), Status: post.Scheduled}}}
	if err := de.store.CreatePost(ctx, two); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		post    post.ID
		account post.AccountID
		is      error
		says    string
	}{
		{scheduled.Post, "", publishing.ErrNotPublished, "is scheduled"},
		{de.job.Post, "nobody", publishing.ErrNotPublished, "no target on account nobody"},
		{"two", "", nil, "name the account"},
		{"missing", "", post.ErrNotFound, "missing"},
	} {
		_, err := de.del.Request(ctx, tc.post, tc.account, true)
		if err == nil || tc.is != nil && !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("request %s/%s: %v; want an error (%v) saying %q", tc.post, tc.account, err, tc.is, tc.says)
		}
	}
	open, err := de.store.Open(ctx, de.clock.Now().Add(time.Hour), 10)
	if err != nil || len(open) != 0 {
		t.Errorf("refused requests left open entries %v (%v)", open, err)
	}
}

// unreadableExists is a platform that cannot read a post by id (a
// Telegram bot): Exists is inconclusive, the DELETE itself works.
type unreadableExists struct{ publishing.Platforms }

func (u unreadableExists) Client(ctx context.Context, a post.Account, c platform.Credential) (platform.Client, error) {
	cl, err := u.Platforms.Client(ctx, a, c)
	return unreadableClient{cl}, err
}

type unreadableClient struct{ platform.Client }

func (unreadableClient) Exists(context.Context, string) (bool, error) {
	return false, &platform.Inconclusive{Message: "a bot cannot read the chat's messages"}
}

// On a platform that cannot read a post back, the approved DELETE is sent
// once without the checks around it, and its success is the evidence:
// confirmed as deleted-unverified. An ambiguous DELETE there is held for
// an operator, never retried on a guess.
//
// Breakage it catches: a Deleter that defers a delete forever because the
// exists check can never succeed.
func TestDeleteOnUnreadablePlatform(t *testing.T) {
	de := newDeleteEnv(t)
	de.del.Platforms = unreadableExists{de.del.Platforms}
	de.request(true)
	res, err := de.run()
	if err != nil || res.Outcome != publishing.DeleteDone || res.Sent != 1 {
		t.Fatalf("run = %+v, %v; want deleted with one DELETE", res, err)
	}
	if de.onPlatform() {
		t.Error("the post is still on the platform")
	}
	if en := de.entry(); en.State != ledger.Confirmed || en.Reason != publishing.ReasonDeletedUnverified {
		t.Errorf("entry %s %q, want confirmed %s", en.State, en.Reason, publishing.ReasonDeletedUnverified)
	}
	if tg := de.target(de.job); tg.Status != post.Deleted {
		t.Errorf("target %s, want deleted", tg.Status)
	}

	// A second post whose DELETE answer is lost: held, one DELETE.
	job := de.schedule("to-delete-2", "Second typo.")
	if out := de.publish(job); out.Result != publishing.Published {
		t.Fatalf("publish = %+v", out)
	}
	req2, err := de.del.Request(context.Background(), job.Post, "", true)
	if err != nil {
		t.Fatal(err)
	}
	de.sb.ScriptRoute(sandbox.RouteDeleteStatus, sandbox.Fault{Kind: sandbox.Fault500AfterCommit})
	before := de.tr.deletes.Load()
	res, err = de.del.Run(context.Background(), req2.Entry.Key)
	if res.Outcome != publishing.DeleteHeld {
		t.Fatalf("run with the answer lost = %+v, %v; want held", res, err)
	}
	if n := de.tr.deletes.Load() - before; n != 1 {
		t.Errorf("%d DELETEs, want 1", n)
	}
}

// A delete with too little of the invocation left is not sent: a DELETE
// cut off after the platform acted is an unknown outcome of our own
// making. The entry is postponed with its approval kept, and the next
// run, with the time, deletes the post.
func TestDeleteNotSentWithoutTheTimeToFinishIt(t *testing.T) {
	de := newDeleteEnv(t)
	de.request(true)
	ctx, cancel := context.WithTimeout(context.Background(), 15*unit)
	defer cancel()
	res, err := de.del.Run(ctx, de.key)
	if err != nil || res.Outcome != publishing.DeleteRetry {
		t.Fatalf("run with %s left = %+v, %v; want retry", 15*unit, res, err)
	}
	if n := de.tr.deletes.Load(); n != 0 {
		t.Errorf("%d DELETEs sent with %s left, want none", n, 15*unit)
	}
	if en := de.entry(); en.State != ledger.Released || en.Reason != publishing.ReasonNoTimeToSend || en.MaybeSent != 0 {
		t.Errorf("entry %s %q maybe_sent %d, want released %s, no attempt spent", en.State, en.Reason, en.MaybeSent, publishing.ReasonNoTimeToSend)
	}
	de.clock.Advance(time.Minute)
	if res, err := de.run(); err != nil || res.Outcome != publishing.DeleteDone || de.onPlatform() {
		t.Errorf("next run = %+v, %v (on platform: %v); want done, the approval kept", res, err, de.onPlatform())
	}
}
