package sfnflow

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/clocktest"
	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// These tests check publishing's own expectations of the ports on the fake
// service: the Operator, the Confirmer's Hold step and the Sweeper, with a
// SQLite store, and this package's StateMachine as their Flows and Tasks.

// pubEnv is publishing's side of a confirm workflow run by the fake.
type pubEnv struct {
	t       *testing.T
	f       *fakeSFN
	m       *StateMachine
	store   *sqlitestore.Store
	clock   *clocktest.Clock
	account post.Account
	conf    *publishing.Confirmer
	op      *publishing.Operator
	pub     *publishing.Publisher
	sweeper *publishing.Sweeper
}

// readablePlatforms hands out a client that only declares it can read the
// account back; the use cases tested here never call the platform.
type readablePlatforms struct{}

func (readablePlatforms) Client(context.Context, post.Account, platform.Credential) (platform.Client, error) {
	return readableClient{}, nil
}

// readableClient panics on any call but Capabilities (nil embedded interface).
type readableClient struct{ platform.Client }

func (readableClient) Capabilities() platform.Capabilities {
	return platform.Capabilities{Platform: "stub", ReadableHistory: true}
}

func newPubEnv(t *testing.T) *pubEnv {
	t.Helper()
	ctx := context.Background()
	clock := clocktest.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	store, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "oncepost.db"), sqlitestore.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	acc := post.Account{ID: "news", Platform: "stub", Handle: "@news", BaseURL: "https://example.invalid", RemoteID: "1", CredentialRef: "news", Gate: post.GateAuto}
	if err := store.PutAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	if err := store.PutCredential(ctx, acc.ID, platform.Credential{AccessToken: "token"}); err != nil {
		t.Fatal(err)
	}
	f := newFakeSFN(t)
	m := f.adapter()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	queue := store.Queue("publish", 5)
	e := &pubEnv{t: t, f: f, m: m, store: store, clock: clock, account: acc}
	e.conf = &publishing.Confirmer{Ledger: store, Posts: store, Accounts: store, Queue: queue, Tasks: m, Now: clock.Now, Logger: logger}
	e.op = &publishing.Operator{Ledger: store, Confirmer: e.conf, Tasks: m, Now: clock.Now, Logger: logger}
	e.pub = &publishing.Publisher{Ledger: store, Posts: store, Accounts: store, Pacer: store, Flows: m, Platforms: readablePlatforms{}, Now: clock.Now, Owner: "worker-1", Logger: logger}
	e.sweeper = &publishing.Sweeper{Ledger: store, Posts: store, Queue: queue, Publisher: e.pub, Now: clock.Now, Logger: logger}
	return e
}

// unknownEntry stores a post due now and its publish entry at attempt 1,
// sent with an ambiguous outcome (unknown), its target publishing.
func (e *pubEnv) unknownEntry(id string) ledger.Entry {
	e.t.Helper()
	ctx := context.Background()
	now := e.clock.Now()
	p := post.Post{ID: post.ID(id), Body: "We launched.", CreatedAt: now,
		Targets: []post.Target{{Account: e.account.ID, Slot: now, Status: post.Scheduled, UpdatedAt: now}}}
	if err := e.store.CreatePost(ctx, p); err != nil {
		e.t.Fatal(err)
	}
	for _, s := range []post.TargetStatus{post.Triggered, post.Publishing} {
		if _, err := e.store.UpdateTarget(ctx, p.ID, e.account.ID, post.TargetUpdate{Status: s, At: now}); err != nil {
			e.t.Fatal(err)
		}
	}
	key := ledger.PublishKey(string(e.account.ID), id, now)
	pending := ledger.NewEntry(key, ledger.Publish, string(e.account.ID), id, now, "fp", "worker-1", now, time.Minute)
	if err := e.store.Create(ctx, pending); err != nil {
		e.t.Fatal(err)
	}
	unknown, err := pending.MarkUnknown("ambiguous: context deadline exceeded", now)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.store.Update(ctx, pending, unknown); err != nil {
		e.t.Fatal(err)
	}
	return unknown
}

// started starts the entry's confirm workflow on the fake, as the
// Publisher does, and returns its input and name.
func (e *pubEnv) started(x ledger.Entry) (publishing.ConfirmInput, string) {
	e.t.Helper()
	in := publishing.ConfirmInput{Key: x.Key, Attempt: x.Attempt, Policy: publishing.PolicyManual, FirstWaitSeconds: 20, WaitSeconds: 20, MaxChecks: 3}
	name := publishing.ConfirmName(x.Key, x.Attempt)
	if err := e.m.StartConfirm(context.Background(), name, in); err != nil {
		e.t.Fatal(err)
	}
	return in, name
}

// held runs an entry to the workflow's Hold step: unknown, workflow
// started, looks exhausted, the real Hold step records the fake's task
// token on the entry.
func (e *pubEnv) held(id string) (publishing.ConfirmInput, string, string) {
	e.t.Helper()
	in, name := e.started(e.unknownEntry(id))
	token := e.f.wait(name)
	if err := e.conf.Hold(context.Background(), in, token, publishing.ReasonNotFoundAfterLooks); err != nil {
		e.t.Fatal(err)
	}
	return in, name, token
}

func (e *pubEnv) entry(key ledger.Key) ledger.Entry {
	e.t.Helper()
	x, err := e.store.Get(context.Background(), key)
	if err != nil {
		e.t.Fatal(err)
	}
	return x
}

func (e *pubEnv) target(id string) post.TargetStatus {
	e.t.Helper()
	p, err := e.store.GetPost(context.Background(), post.ID(id))
	if err != nil {
		e.t.Fatal(err)
	}
	return p.Targets[0].Status
}

func decisionJSON(t *testing.T, d publishing.Decision) string {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOperatorDecides runs publishing.Operator.Decide against the fake
// service through StateMachine: a held entry's token is accepted once; a
// decision no task waits for any more (TaskTimedOut) is applied to the
// ledger directly; a delivery Step Functions throttled is reported and
// delivered when decided again.
func TestOperatorDecides(t *testing.T) {
	release := publishing.Decision{Action: publishing.DecisionRelease}
	reject := publishing.Decision{Action: publishing.DecisionReject, Reason: "wrong account"}
	confirm := publishing.Decision{Action: publishing.DecisionConfirm, RemoteID: "109"}
	type result struct {
		How   string
		Class string
	}
	tests := []struct {
		name       string
		before     func(e *pubEnv, name string)
		decisions  []publishing.Decision
		want       []result
		wantState  ledger.State
		wantTarget post.TargetStatus
		wantLog    []string // calls made by the decisions
		wantTask   func(t *testing.T, exec string) fakeTask
	}{
		{
			// The fake does not run the workflow's Release step: as if it had
			// failed after the decision reached it. The same decision again
			// finds no task waiting and applies it.
			name:       "delivered once through the waiting task; the same decision again makes it converge",
			decisions:  []publishing.Decision{release, release},
			want:       []result{{publishing.DecisionDelivered, "ok"}, {publishing.DecisionApplied, "ok"}},
			wantState:  ledger.Released,
			wantTarget: post.Triggered,
			wantLog:    []string{"SendTaskSuccess 200", "SendTaskSuccess 400 TaskTimedOut"},
			wantTask: func(t *testing.T, exec string) fakeTask {
				return fakeTask{Exec: exec, Answer: "success", Output: decisionJSON(t, release)}
			},
		},
		{
			name:       "another decision after delivery is refused",
			decisions:  []publishing.Decision{release, reject},
			want:       []result{{publishing.DecisionDelivered, "ok"}, {"", "error"}},
			wantState:  ledger.Held,
			wantTarget: post.Held,
			wantLog:    []string{"SendTaskSuccess 200"},
			wantTask: func(t *testing.T, exec string) fakeTask {
				return fakeTask{Exec: exec, Answer: "success", Output: decisionJSON(t, release)}
			},
		},
		{
			name:       "the workflow timed out: the token no longer waits, the decision is applied directly",
			before:     func(e *pubEnv, name string) { e.f.stop(name, "TIMED_OUT") },
			decisions:  []publishing.Decision{reject},
			want:       []result{{publishing.DecisionApplied, "ok"}},
			wantState:  ledger.Failed,
			wantTarget: post.Failed,
			wantLog:    []string{"SendTaskSuccess 400 TaskTimedOut"},
			wantTask:   func(t *testing.T, exec string) fakeTask { return fakeTask{Exec: exec} },
		},
		{
			name:       "the workflow was aborted: an approval is applied directly and the job re-enqueued",
			before:     func(e *pubEnv, name string) { e.f.stop(name, "ABORTED") },
			decisions:  []publishing.Decision{release},
			want:       []result{{publishing.DecisionApplied, "ok"}},
			wantState:  ledger.Released,
			wantTarget: post.Triggered,
			wantLog:    []string{"SendTaskSuccess 400 TaskTimedOut"},
			wantTask:   func(t *testing.T, exec string) fakeTask { return fakeTask{Exec: exec} },
		},
		{
			name: "throttled delivery: recorded and reported, delivered when decided again",
			before: func(e *pubEnv, name string) {
				e.f.fail("SendTaskSuccess", fault{status: 400, code: "ThrottlingException"})
			},
			decisions:  []publishing.Decision{confirm, confirm},
			want:       []result{{"", "unavailable"}, {publishing.DecisionDelivered, "ok"}},
			wantState:  ledger.Held,
			wantTarget: post.Held,
			wantLog:    []string{"SendTaskSuccess 400 ThrottlingException", "SendTaskSuccess 200"},
			wantTask: func(t *testing.T, exec string) fakeTask {
				return fakeTask{Exec: exec, Answer: "success", Output: decisionJSON(t, confirm)}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newPubEnv(t)
			in, name, token := e.held("launch")
			if tt.before != nil {
				tt.before(e, name)
			}
			before := len(e.f.log())
			var got []result
			for _, d := range tt.decisions {
				res, err := e.op.Decide(context.Background(), in.Key, d)
				got = append(got, result{res.How, class(err)})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
			x := e.entry(in.Key)
			if x.State != tt.wantState || e.target("launch") != tt.wantTarget {
				t.Errorf("entry %s (%s), target %s; want %s, target %s", x.State, x.Reason, e.target("launch"), tt.wantState, tt.wantTarget)
			}
			if diff := cmp.Diff(tt.wantLog, e.f.log()[before:]); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantTask(t, name), e.f.task(token)); diff != "" {
				t.Errorf("task (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHoldAnswersItself: the Hold step answers its own token through
// StateMachine when nobody else will — an operator decided before a
// retried Hold got its new token, or the entry settled before the hold.
func TestHoldAnswersItself(t *testing.T) {
	release := publishing.Decision{Action: publishing.DecisionRelease}
	tests := []struct {
		name       string
		run        func(e *pubEnv) (string, string) // returns the execution and the token the last Hold got
		wantOutput string
		wantState  ledger.State
	}{
		{
			name: "decided while the delivery failed; the retried Hold gets the decision",
			run: func(e *pubEnv) (string, string) {
				in, name, _ := e.held("launch")
				e.f.fail("SendTaskSuccess", fault{status: 500, code: "InternalFailure"})
				if _, err := e.op.Decide(context.Background(), in.Key, release); !errors.Is(err, ErrUnavailable) {
					e.t.Fatalf("Decide = %v, want ErrUnavailable", err)
				}
				retried := e.f.wait(name) // the workflow retries Hold: a new token
				if err := e.conf.Hold(context.Background(), in, retried, publishing.ReasonNotFoundAfterLooks); err != nil {
					e.t.Fatal(err)
				}
				return name, retried
			},
			wantOutput: `{"decision":"release"}`,
			wantState:  ledger.Held,
		},
		{
			name: "confirmed before the hold: the Hold answers resolved",
			run: func(e *pubEnv) (string, string) {
				in, name := e.started(e.unknownEntry("launch"))
				if err := e.conf.Confirm(context.Background(), in, "109"); err != nil {
					e.t.Fatal(err)
				}
				token := e.f.wait(name)
				if err := e.conf.Hold(context.Background(), in, token, publishing.ReasonNotFoundAfterLooks); err != nil {
					e.t.Fatal(err)
				}
				return name, token
			},
			wantOutput: `{"decision":"resolved"}`,
			wantState:  ledger.Confirmed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newPubEnv(t)
			name, token := tt.run(e)
			if diff := cmp.Diff(fakeTask{Exec: name, Answer: "success", Output: tt.wantOutput}, e.f.task(token)); diff != "" {
				t.Errorf("task (-want +got):\n%s", diff)
			}
			key := ledger.PublishKey(string(e.account.ID), "launch", e.clock.Now())
			if got := e.entry(key).State; got != tt.wantState {
				t.Errorf("entry %s, want %s", got, tt.wantState)
			}
		})
	}
}

// TestSweeperReplacesStoppedWorkflows runs publishing.Sweeper on a stale
// unknown entry: a workflow that stopped without settling it
// (ErrConfirmClosed) is replaced by key-attempt-r2, one still running is
// left alone (the same start is Step Functions' idempotent success), and a
// stopped replacement is replaced in turn.
func TestSweeperReplacesStoppedWorkflows(t *testing.T) {
	e := newPubEnv(t)
	x := e.unknownEntry("launch")
	name := publishing.ConfirmName(x.Key, x.Attempt)
	e.f.put(name, `{"key":"earlier"}`, "FAILED") // store errors past its retries
	e.clock.Advance(publishing.StaleAfter + time.Minute)
	steps := []struct {
		name     string
		before   func()
		wantLog  []string
		wantExec map[string]string
	}{
		{
			name:     "the stopped workflow is replaced",
			wantLog:  []string{"StartExecution 400 ExecutionAlreadyExists", "DescribeExecution 200", "StartExecution 200"},
			wantExec: map[string]string{name: "FAILED", name + "-r2": "RUNNING"},
		},
		{
			name:     "the replacement runs: started again, nothing new",
			wantLog:  []string{"StartExecution 400 ExecutionAlreadyExists", "DescribeExecution 200", "StartExecution 200"},
			wantExec: map[string]string{name: "FAILED", name + "-r2": "RUNNING"},
		},
		{
			name:   "the replacement stopped too: -r3",
			before: func() { e.f.stop(name+"-r2", "ABORTED") },
			wantLog: []string{
				"StartExecution 400 ExecutionAlreadyExists", "DescribeExecution 200",
				"StartExecution 400 ExecutionAlreadyExists", "DescribeExecution 200", "StartExecution 200",
			},
			wantExec: map[string]string{name: "FAILED", name + "-r2": "ABORTED", name + "-r3": "RUNNING"},
		},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		before := len(e.f.log())
		rep, err := e.sweeper.Sweep(context.Background())
		if err != nil || rep.ConfirmsStarted != 1 || rep.StaleUnknown != 1 {
			t.Errorf("%s: sweep = %+v, %v; want one stale unknown entry, its confirm ensured", st.name, rep, err)
		}
		if diff := cmp.Diff(st.wantLog, e.f.log()[before:]); diff != "" {
			t.Errorf("%s: calls (-want +got):\n%s", st.name, diff)
		}
		if diff := cmp.Diff(st.wantExec, e.f.executions()); diff != "" {
			t.Errorf("%s: executions (-want +got):\n%s", st.name, diff)
		}
	}
	var in publishing.ConfirmInput
	r3, _ := e.f.execution(name + "-r3")
	if err := json.Unmarshal([]byte(r3.Input), &in); err != nil {
		t.Fatal(err)
	}
	if in.Key != x.Key || in.Attempt != x.Attempt || in.Policy != publishing.PolicyAuto {
		t.Errorf("replacement input %+v, want key %s attempt %d policy auto", in, x.Key, x.Attempt)
	}
}
