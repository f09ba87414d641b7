package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"oncepost/shared/clocktest"
	"oncepost/shared/localcron"
	"oncepost/shared/platform"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// metricLines collects the runtime's metric lines.
type metricLines struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *metricLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// take returns the lines written since the last take.
func (l *metricLines) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

// approvalWorld is the embedded runtime on a fake clock with the sandbox,
// one account that requires approval, and the desk the CLI uses.
type approvalWorld struct {
	t       *testing.T
	clock   *clocktest.Clock
	sb      *sandbox.Server
	sbID    string
	rt      *runtime
	desk    *publishing.Desk
	metrics *metricLines
	last    publishing.SweepReport
}

func newApprovalWorld(t *testing.T) *approvalWorld {
	t.Helper()
	ctx := context.Background()
	clock := clocktest.New(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	sb := sandbox.New(sandbox.Options{Now: clock.Now})
	if err := sb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	dir := t.TempDir()
	w := &approvalWorld{t: t, clock: clock, sb: sb, metrics: &metricLines{}}
	cfg := defaultConfig()
	cfg.DBPath, cfg.MediaDir = filepath.Join(dir, "oncepost.db"), filepath.Join(dir, "media")
	cfg.Logger, cfg.Metrics, cfg.Now = discardLogger(), w.metrics, clock.Now
	// One step at a time on a clock that moves only between passes: a
	// job prepared before its slot would wait for a clock that never
	// moves (as in the crash test).
	cfg.Workers, cfg.PrepareBefore = 1, 0
	cfg.CallTimeout, cfg.RecordMargin, cfg.Lease, cfg.Visibility = 5*time.Second, time.Second, 30*time.Second, 40*time.Second
	rt, err := openRuntime(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	sa := sb.AddAccount("news")
	acc := post.Account{ID: "news", Platform: "sandbox", Handle: "@news", BaseURL: sb.URL(), RemoteID: sa.ID, CredentialRef: "news",
		Gate: post.GateAuto, RequireApproval: true}
	if err := rt.store.PutAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	if err := rt.store.PutCredential(ctx, acc.ID, platform.Credential{AccessToken: sa.AccessToken, RefreshToken: sa.RefreshToken}); err != nil {
		t.Fatal(err)
	}
	w.sbID, w.rt = sa.ID, rt
	w.desk = embeddedBackend(rt).desk()
	w.desk.Now, w.desk.Logger = clock.Now, discardLogger()
	return w
}

// passes runs n passes of the whole runtime — schedules, publishers,
// confirm workflows, sweeper — the clock moving a second after each.
func (w *approvalWorld) passes(n int) {
	w.t.Helper()
	ctx := context.Background()
	loop := w.rt.newLoop()
	for range n {
		if _, err := w.rt.cron.RunDue(ctx); err != nil {
			w.t.Fatal(err)
		}
		for range 50 {
			if n, _ := loop.RunOnce(ctx); n == 0 {
				break
			}
		}
		_, _ = w.rt.flows.RunDue(ctx)
		rep, err := w.rt.sweeper.Sweep(ctx)
		if err != nil {
			w.t.Fatalf("sweep: %v", err)
		}
		w.last = rep
		w.clock.Advance(time.Second)
	}
}

func (w *approvalWorld) target(id post.ID) post.Target {
	w.t.Helper()
	p, err := w.rt.store.GetPost(context.Background(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	return p.Targets[0]
}

// hasSchedule reports whether the target has its one-time schedule.
func (w *approvalWorld) hasSchedule(ref publishing.TargetRef) bool {
	w.t.Helper()
	_, _, err := w.rt.cron.Get(context.Background(), scheduleName(ref))
	if err != nil && !errors.Is(err, localcron.ErrNotFound) {
		w.t.Fatal(err)
	}
	return err == nil
}

// The acceptance: a post approved 1 s after its slot is not sent without
// a new time. Through the embedded runtime on a fake clock — schedules,
// publisher, sandbox, sweeper — nothing is published while it waits, the
// sweeper counts it as an approval overdue once its slot passed, an
// approval without a new time is refused naming "at", and one with a new
// time publishes it once, at that time.
func TestApprovalAfterTheSlotNeedsANewTime(t *testing.T) {
	w := newApprovalWorld(t)
	ctx := context.Background()
	slot := w.clock.Now().Add(30 * time.Second)
	res, err := w.desk.Schedule(ctx, post.Draft{ID: "launch", Body: "We launched.", Author: "tok_alice",
		Targets: []post.DraftTarget{{Account: "news", At: slot.Format(time.RFC3339)}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := publishing.TargetRef{Post: res.Post.ID, Account: "news", Slot: slot}
	if tg := w.target("launch"); tg.Status != post.NeedsApproval {
		t.Fatalf("created %s, want needs_approval", tg.Status)
	}
	if w.hasSchedule(ref) {
		t.Error("a target waiting for approval has a schedule")
	}
	if refs, err := w.rt.store.Unscheduled(ctx, 0); err != nil || len(refs) != 0 {
		t.Errorf("Unscheduled = %v, %v; want none (a waiting target is not due a schedule)", refs, err)
	}

	// Up to 1 s after the slot: nothing goes out, and once the slot
	// passed the sweeper alarms.
	w.passes(int(slot.Sub(w.clock.Now())/time.Second) + 1)
	if !w.clock.Now().Equal(slot.Add(time.Second)) {
		t.Fatalf("clock at %s, want the slot + 1 s", w.clock.Now())
	}
	if n := len(w.sb.Statuses(w.sbID)); n != 0 {
		t.Fatalf("%d statuses published before the approval, want 0", n)
	}
	if w.last.ApprovalOverdue != 1 || !w.last.Alarming() {
		t.Errorf("last sweep: approval overdue %d, alarming %v; want 1, true", w.last.ApprovalOverdue, w.last.Alarming())
	}
	if m := w.metrics.take(); !strings.Contains(m, `"ApprovalOverdue":1`) {
		t.Errorf("the sweeper's metric lines hold no ApprovalOverdue 1:\n%.2000s", m)
	}

	// Approved 1 s after the slot, without a new time: refused on "at".
	_, err = w.desk.Approve(ctx, publishing.ApproveRequest{Post: "launch", By: "tok_bob"})
	var fe *post.FieldError
	if !errors.As(err, &fe) || fe.Field != "at" || !strings.Contains(fe.Problem, "passed") {
		t.Fatalf("approval 1 s after the slot = %v, want a field error on at saying the slot passed", err)
	}
	t.Logf("refused: %v", fe)
	w.passes(60)
	if n := len(w.sb.Statuses(w.sbID)); n != 0 {
		t.Fatalf("%d statuses published after the refused approval, want 0", n)
	}
	if tg := w.target("launch"); tg.Status != post.NeedsApproval || !tg.Slot.Equal(slot) {
		t.Fatalf("after the refused approval: %s at %s, want needs_approval at %s", tg.Status, tg.Slot, slot)
	}
	if w.hasSchedule(ref) || w.last.ApprovalOverdue != 1 {
		t.Errorf("after the refused approval: schedule %v, approvals overdue %d; want none, 1", w.hasSchedule(ref), w.last.ApprovalOverdue)
	}

	// With a new time: published once, at it.
	newAt := w.clock.Now().Add(10 * time.Second)
	out, err := w.desk.Approve(ctx, publishing.ApproveRequest{Post: "launch", At: newAt.Format(time.RFC3339), By: "tok_bob"})
	if err != nil || len(out) != 1 || !out[0].Done {
		t.Fatalf("approval with a new time = %+v, %v", out, err)
	}
	if !w.hasSchedule(publishing.TargetRef{Post: "launch", Account: "news", Slot: newAt}) {
		t.Error("the approved target has no schedule at its new time")
	}
	w.passes(9)
	if n := len(w.sb.Statuses(w.sbID)); n != 0 {
		t.Fatalf("%d statuses before the new time, want 0", n)
	}
	w.passes(20)
	statuses := w.sb.Statuses(w.sbID)
	if len(statuses) != 1 {
		t.Fatalf("%d statuses after the new time, want 1", len(statuses))
	}
	if at := statuses[0].CreatedAt; at.Before(newAt) {
		t.Errorf("published at %s, before the new time %s", at, newAt)
	}
	tg := w.target("launch")
	if tg.Status != post.Published || !tg.Slot.Equal(newAt) {
		t.Errorf("target %s at %s, want published at %s", tg.Status, tg.Slot, newAt)
	}
	if w.last.ApprovalOverdue != 0 {
		t.Errorf("approvals overdue after the approval: %d, want 0", w.last.ApprovalOverdue)
	}

	// Approving again changes nothing.
	out, err = w.desk.Approve(ctx, publishing.ApproveRequest{Post: "launch", By: "tok_carol"})
	if err != nil || len(out) != 1 || !out[0].Done || !strings.HasPrefix(out[0].Message, "already approved") {
		t.Errorf("approving again = %+v, %v; want already approved", out, err)
	}
	w.passes(10)
	if n := len(w.sb.Statuses(w.sbID)); n != 1 {
		t.Errorf("%d statuses in the end, want 1", n)
	}
}

// The CLI: the policy is set and shown; a post added to a workspace that
// requires approval waits; `held`, `post approvals` and `status` list it
// (overdue once its slot passed); approving it without a new time after
// its slot exits 2 naming --at; the author cannot approve it when the
// workspace forbids that; reject cancels it with the reason.
func TestApprovalFromTheCLI(t *testing.T) {
	w := newWorkspace(t, sandbox.Options{}, 1)
	ctx := context.Background()
	acct := string(w.accounts[0])
	run := func(want int, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := runCLI(ctx, append(args, "--db", w.db), &stdout, &stderr); code != want {
			t.Fatalf("oncepost %v: exit %d, want %d: %s%s", args, code, want, stdout.String(), stderr.String())
		}
		return stdout.String() + stderr.String()
	}
	if out := run(exitOK, "approval", "set", "--required", "--no-self-approval"); !strings.Contains(out, "every post waits for approval: yes") ||
		!strings.Contains(out, "authors may approve their own posts: no") {
		t.Errorf("approval set:\n%s", out)
	}
	run(exitUsage, "approval", "set")
	run(exitUsage, "approval", "set", "--account", "nobody", "--required")
	if out := run(exitOK, "approval", "set", "--account", acct, "--required"); !strings.Contains(out, "accounts that require approval: "+acct) {
		t.Errorf("approval set --account:\n%s", out)
	}

	later := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	run(exitOK, "post", "add", "--id", "later", "--account", acct, "--at", later.Format(time.RFC3339), "--body", "Later.")
	// A post whose slot passed while it waited, as a store holds it.
	store := w.open(t)
	passed := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	if err := store.CreatePost(ctx, post.Post{ID: "missed", Body: "Missed its time.", Author: "tok_alice", CreatedAt: passed.Add(-time.Hour),
		Targets: []post.Target{{Account: w.accounts[0], Slot: passed, Status: post.NeedsApproval, UpdatedAt: passed}}}); err != nil {
		t.Fatal(err)
	}
	p, err := store.GetPost(ctx, "later")
	store.Close()
	if err != nil || p.Targets[0].Status != post.NeedsApproval || p.Author != publishing.CLIPrincipal {
		t.Fatalf("the added post: %+v, %v; want needs_approval by cli", p, err)
	}

	for _, args := range [][]string{{"held"}, {"post", "approvals"}} {
		out := run(exitOK, args...)
		if !strings.Contains(out, "missed") || !strings.Contains(out, "OVERDUE") || !strings.Contains(out, "later") {
			t.Errorf("oncepost %v lists no approval queue:\n%s", args, out)
		}
	}
	if out := run(exitOK, "status"); !strings.Contains(out, "APPROVAL OVERDUE") || !strings.Contains(out, "missed") || !strings.Contains(out, "needs_approval") {
		t.Errorf("status shows no overdue approval:\n%s", out)
	}

	if out := run(exitUsage, "post", "approve", "missed"); !strings.Contains(out, "--at: the slot passed") {
		t.Errorf("approving after the slot without --at:\n%s", out)
	}
	if out := run(exitUsage, "post", "approve", "later"); !strings.Contains(out, "does not let authors approve") {
		t.Errorf("the author (cli) approving its own post:\n%s", out)
	}
	run(exitOK, "approval", "set", "--no-self-approval=false")
	if out := run(exitOK, "post", "approve", "later"); !strings.Contains(out, "approved; scheduled for "+later.Format(time.RFC3339)) {
		t.Errorf("approve:\n%s", out)
	}
	rt, err := openTool(ctx, w.db)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = rt.cron.Get(ctx, scheduleName(publishing.TargetRef{Post: "later", Account: w.accounts[0], Slot: later}))
	rt.Close()
	if err != nil {
		t.Errorf("the approved post's schedule: %v", err)
	}
	run(exitUsage, "post", "reject", "missed")
	if out := run(exitOK, "post", "reject", "missed", "--reason", "too late now"); !strings.Contains(out, "rejected; it will not be sent") {
		t.Errorf("reject:\n%s", out)
	}
	if out := run(exitOK, "post", "approvals"); !strings.Contains(out, "no post waits for approval") {
		t.Errorf("the queue after approve and reject:\n%s", out)
	}
}

// --require-approval sets the account's rule when given; left out, a
// reconnected account keeps its own and a new one requires none.
func TestRequireApprovalFlag(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		existing bool
		want     bool
	}{
		{nil, false, false},
		{nil, true, true},
		{[]string{"--require-approval"}, false, true},
		{[]string{"--require-approval=false"}, true, false},
		{[]string{"--require-approval=true"}, true, true},
	} {
		fs := newFlags("account add")
		f := defineRequireApproval(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		var acc post.Account
		f.apply(&acc, post.Account{RequireApproval: tc.existing})
		if acc.RequireApproval != tc.want {
			t.Errorf("%v over an account requiring approval: %v → %v, want %v", tc.args, tc.existing, acc.RequireApproval, tc.want)
		}
	}
	fs := newFlags("account add")
	defineRequireApproval(fs)
	if err := fs.Parse([]string{"--require-approval=maybe"}); err == nil {
		t.Error("--require-approval=maybe was accepted")
	}
}
