package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/localflow"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// storeSwitch makes the wrapped store fail while it is down.
type storeSwitch struct{ down atomic.Bool }

var errStoreDown = errors.New("disk I/O error")

type flakyLedger struct {
	publishing.Ledger
	s *storeSwitch
}

func (l flakyLedger) Get(ctx context.Context, k ledger.Key) (ledger.Entry, error) {
	if l.s.down.Load() {
		return ledger.Entry{}, errStoreDown
	}
	return l.Ledger.Get(ctx, k)
}

func (l flakyLedger) Update(ctx context.Context, prev, next ledger.Entry) error {
	if l.s.down.Load() {
		return errStoreDown
	}
	return l.Ledger.Update(ctx, prev, next)
}

// A confirm workflow that stopped without settling its entry (the store
// failed past every retry) is replaced by the sweeper with a new one under
// a new name; the entry ends confirmed instead of unknown for ever.
func TestFailedConfirmWorkflowIsReplaced(t *testing.T) {
	sw := &storeSwitch{}
	f := newFlowFixtureWith(t, post.GateAuto, false, func(p ports) ports {
		p.ledger = flakyLedger{Ledger: p.ledger, s: sw}
		return p
	})
	f.ws.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: time.Second})
	job := f.due("p1", "Road works on the bridge.")
	if out := f.publish(job); out.Result != publishing.Confirming {
		t.Fatalf("publish = %+v, want confirming", out)
	}
	f.waitCommitted(1)
	name := publishing.ConfirmName(f.entry(job).Key, 1)
	sw.down.Store(true)
	for i := 0; i < 100 && f.describe(name).Status == localflow.StatusRunning; i++ {
		f.clock.Advance(10 * time.Second)
		f.runDue()
	}
	if ex := f.describe(name); ex.Status != localflow.StatusFailed {
		t.Fatalf("workflow %s in %s, want FAILED while the store is down", ex.Status, ex.State)
	}
	if e := f.entry(job); e.State != ledger.Unknown {
		t.Fatalf("entry %s, want still unknown", e.State)
	}
	sw.down.Store(false)
	f.clock.Advance(publishing.StaleAfter + time.Second)
	rep, err := f.rt.sweeper.Sweep(context.Background())
	if err != nil || rep.ConfirmsStarted != 1 {
		t.Fatalf("sweep = %+v, %v; want one confirm workflow started", rep, err)
	}
	replacement := name + "-r2"
	for i := 0; i < 20 && f.describe(replacement).Status == localflow.StatusRunning; i++ {
		f.clock.Advance(time.Second)
		f.runDue()
	}
	if e := f.entry(job); e.State != ledger.Confirmed {
		t.Fatalf("entry %s after the replacement workflow %s, want confirmed", e.State, f.describe(replacement).State)
	}
	if st := f.ws.sb.Stats(); st.CreateRequests != 1 || st.Duplicates != 0 {
		t.Errorf("sandbox stats %+v, want one create", st)
	}
}

// failHeldOnce fails the first move of a target to held: the Hold step's
// target update, after its ledger write, so the workflow retries the step
// with a new task token.
type failHeldOnce struct {
	publishing.Posts
	failed atomic.Bool
}

func (p *failHeldOnce) UpdateTarget(ctx context.Context, id post.ID, a post.AccountID, u post.TargetUpdate) (post.Target, error) {
	if u.Status == post.Held && p.failed.CompareAndSwap(false, true) {
		return post.Target{}, errStoreDown
	}
	return p.Posts.UpdateTarget(ctx, id, a, u)
}

// An operator decides on a held post from the CLI while the runtime is
// stopped: the decision reaches the workflow through the token of its
// retried Hold step; deciding the same again, with no task waiting any
// more, applies it at once (the workflow, when the runtime runs, finds it
// done); deciding otherwise is refused. The post goes out once.
func TestHeldDecisionFromTheCLI(t *testing.T) {
	flaky := &failHeldOnce{}
	f := newFlowFixtureWith(t, post.GateManual, false, func(p ports) ports {
		flaky.Posts = p.posts
		p.posts = flaky
		return p
	})
	f.ws.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: time.Hour})
	job := f.due("p1", "Storm warning for the coast.")
	f.publish(job)
	key := f.entry(job).Key
	name := publishing.ConfirmName(key, 1)
	for i := 0; i < 30 && f.describe(name).TaskToken == ""; i++ {
		f.clock.Advance(time.Second)
		f.runDue()
	}
	ex := f.describe(name)
	if ex.TaskToken == "" || !flaky.failed.Load() {
		t.Fatalf("workflow at %s (first hold failed: %v), want waiting in its retried Hold step", ex.State, flaky.failed.Load())
	}
	if e := f.entry(job); e.State != ledger.Held || e.TaskToken != ex.TaskToken {
		t.Fatalf("entry %s keeps token %.8s…, the workflow waits on %.8s…: a decision would not reach it", e.State, e.TaskToken, ex.TaskToken)
	}

	cli := func(args ...string) (int, string) {
		var out bytes.Buffer
		code := runCLI(context.Background(), append(args, "--db", f.ws.db), &out, &out)
		return code, out.String()
	}
	code, out := cli("held", "--json")
	var rows []heldRow
	if code != exitOK || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 || rows[0].Looks != 3 || !strings.Contains(rows[0].Reason, "not found after 3 looks") {
		t.Fatalf("held --json: exit %d, %s", code, out)
	}
	if code, out := cli("approve", string(key)[:12]); code != exitOK || !strings.Contains(out, "delivered") {
		t.Fatalf("approve: exit %d, %s", code, out)
	}
	if code, out := cli("reject", string(key), "--reason", "changed my mind"); code != exitFailure || !strings.Contains(out, "decided otherwise") {
		t.Errorf("reject after approve: exit %d, %s; want refused", code, out)
	}
	if e := f.entry(job); e.State != ledger.Held || e.Decision == "" {
		t.Fatalf("entry %s (decision %q) before the runtime ran, want held with the decision recorded", e.State, e.Decision)
	}
	if code, out := cli("approve", string(key)); code != exitOK || !strings.Contains(out, "decision applied") {
		t.Errorf("second approve: exit %d, %s; want the recorded decision applied", code, out)
	}
	if e := f.entry(job); e.State != ledger.Released {
		t.Fatalf("entry %s after the second approve, want released", e.State)
	}
	// The runtime runs again: the workflow releases, the job is re-sent.
	f.runDue()
	f.drain()
	if tg := f.target(job); tg.Status != post.Published {
		t.Fatalf("target %s after the approval ran, want published", tg.Status)
	}
	if e := f.entry(job); e.Attempt != 2 || e.State != ledger.Confirmed {
		t.Errorf("entry %s attempt %d, want confirmed attempt 2", e.State, e.Attempt)
	}
}

// A post added by another process while `oncepost run` runs is scheduled
// within 2 s: the runtime sees the file change, not only once a minute.
func TestPostAddedByAnotherProcessIsScheduledSoon(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a runtime process")
	}
	w := newWorkspace(t, sandbox.Options{}, 1)
	logs, err := os.Create(filepath.Join(w.dir, "run.log"))
	if err != nil {
		t.Fatal(err)
	}
	run := oncepostCmd(t, runtimeArgs(w.db)...)
	run.Stdout, run.Stderr = logs, logs
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		run.Process.Kill()
		run.Wait()
	}()
	time.Sleep(1500 * time.Millisecond) // the runtime is up and its scheduler asleep
	slot := time.Now().Add(2 * time.Second).Truncate(time.Second).Add(time.Second)
	draft := `{"id":"late-comer","body":"Added while the runtime runs.","targets":[{"account":"acct0","at":"` + slot.UTC().Format(time.RFC3339) + `"}]}`
	path := filepath.Join(w.dir, "draft.json")
	if err := os.WriteFile(path, []byte(draft), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := runCLI(context.Background(), []string{"post", "add", "--db", w.db, path}, &out, &out); code != exitOK {
		t.Fatalf("post add: exit %d, %s", code, out.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !waitUntil(ctx, 20*time.Millisecond, func() bool { return w.sb.Stats().Committed == 1 }) {
		raw, _ := os.ReadFile(logs.Name())
		t.Fatalf("not published within 10 s; runtime log:\n%s", tail(raw, 3000))
	}
	st := w.sb.Statuses(w.remoteID(t, 0))
	if late := st[0].CreatedAt.Sub(slot); late > 2*time.Second || late < 0 {
		t.Errorf("published %s after its slot, want within 2 s", late)
	}
}

// remoteID is the sandbox id of the workspace's i-th account.
func (w *workspace) remoteID(t *testing.T, i int) string {
	t.Helper()
	store := w.open(t)
	defer store.Close()
	acc, err := store.GetAccount(context.Background(), w.accounts[i])
	if err != nil {
		t.Fatal(err)
	}
	return acc.RemoteID
}

// A throttled target shows as waiting, with its next try, in `status`.
func TestStatusShowsWaiting(t *testing.T) {
	f := newFlowFixture(t, post.GateAuto, false)
	f.ws.sb.Script(sandbox.Fault{Kind: sandbox.Fault429, RetryAfter: 30 * time.Minute})
	job := f.due("p1", "Big announcement.")
	if out := f.publish(job); out.Result != publishing.Retry {
		t.Fatalf("publish = %+v, want retry", out)
	}
	var out bytes.Buffer
	if code := runCLI(context.Background(), []string{"status", "--db", f.ws.db, "--json"}, &out, &out); code != exitOK {
		t.Fatalf("status: exit %d, %s", code, out.String())
	}
	var rep statusReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Targets[post.Waiting] != 1 || len(rep.Waiting) != 1 || !rep.Waiting[0].NextTry.Equal(f.clock.Now().Add(30*time.Minute)) {
		t.Errorf("status: waiting %d %+v, want one target waiting 30 min", rep.Targets[post.Waiting], rep.Waiting)
	}
}
