package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/infra/statemachine"
	"oncepost/shared/awsruntime/stacktest"
	"oncepost/shared/dynamostore"
	"oncepost/shared/emulatortest"
	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/platform/mastodon"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqsqueue"
)

// confirmFunctionARN is the ${ConfirmFunctionArn} both engines are given.
const confirmFunctionARN = "arn:aws:lambda:us-east-1:000000000000:function:oncepost-confirm"

// Engine names, as the test reports them.
const (
	engineLocalflow = "localflow"
	engineNode      = "aws-local-stepfunctions"
)

// confirmBody is every scenario's post text.
const confirmBody = "Posted while the client had given up."

// scenarioEnd is how a confirm workflow ended, engine and function
// together, with the scenario's own names (ledger key, account ids, remote
// ids) replaced by placeholders so that two engines' ends compare equal.
type scenarioEnd struct {
	// Status, Error, Cause and States are the execution's.
	Status       string
	Error, Cause string
	States       []string
	// Steps are the actions the confirm function ran, in order.
	Steps []string
	// HoldReason is the reason the hold step was given.
	HoldReason string
	// Ledger and LedgerReason are the entry's final state and reason, and
	// RemoteID its remote id ("POST" for the sandbox's post).
	Ledger       ledger.State
	LedgerReason string
	RemoteID     string
	// Target is the post target's final status.
	Target post.TargetStatus
	// Enqueued counts the jobs for the post the function put on the queue.
	Enqueued int
}

// The confirm workflow (infra/statemachine/confirm.asl.json) run on
// aws-local-stepfunctions (infra/emulators/run-state-machine.mjs) and on
// localflow, both calling the confirm function built as `bootstrap` and
// run by the Lambda Runtime Interface Emulator against dynalite, fauxqs and
// a sandbox platform, end the same way in every scenario localflow's own
// tests run: the same status, error, states, function steps, ledger entry
// and target. Each engine works on ledger entries of its own.
func TestConfirmStateMachineEndsTheSameOnAWSLocalStepFunctionsAndLocalflow(t *testing.T) {
	ctx := context.Background()
	root := emulatortest.ModuleRoot(t)
	definitionFile := filepath.Join(root, "infra", "statemachine", "confirm.asl.json")
	// Before anything starts: a missing tool skips (or fails) at once.
	newNodeRunner(t, root)

	stack := stacktest.New(t)
	store, queue, sb := stack.Store, stack.Queue, stack.Sandbox

	endpoint := startFunctionEndpoint(t, bootstrap(t), stack.Env())
	proxy := newFunctionProxy(t, endpoint)
	local := newLocalflowEngine(t, statemachine.Confirm, map[string]string{"ConfirmFunctionArn": confirmFunctionARN},
		httpInvoker{function: confirmFunctionARN, url: proxy.URL(), client: &http.Client{Timeout: time.Minute}})
	runner := newNodeRunner(t, root, "--definition", definitionFile,
		"--substitute", "ConfirmFunctionArn="+confirmFunctionARN,
		"--function", confirmFunctionARN+"="+proxy.URL(),
		// Waits and retry pauses take no time; localflow's fake clock
		// jumps over them. Retry counts and every other rule are kept.
		"--wait-ms", "0", "--retry-ms", "0")

	looks := func(n int) []string {
		var s []string
		for i := range n {
			if i > 0 {
				s = append(s, "Count", "Wait")
			}
			s = append(s, "Look", "Looked")
		}
		return s
	}
	states := func(parts ...[]string) []string {
		var s []string
		for _, p := range parts {
			s = append(s, p...)
		}
		return s
	}
	begin := []string{"Readable", "Begin", "FirstWait"}
	repeat := func(step string, n int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = step
		}
		return s
	}

	tests := []struct {
		name   string
		policy string
		// down: the account's instance does not answer.
		down bool
		// appearsBeforeLook: the post appears on the platform just before
		// this look (1: it is there from the start; 0: never).
		appearsBeforeLook int
		// noEntry: the ledger entry does not exist (expired, or a wrong key).
		noEntry bool
		// decision is the operator's, when the workflow holds.
		decision string
		// answer, if set, is sent to the waiting task instead of a decision
		// (an operator's tool that does not speak the workflow's language).
		answer string
		// failStep fails every call of that step with the error failWith
		// (the function never runs it); the sweeper then makes the
		// operator's recorded decision converge, and wantAfterSweep is
		// what it leaves.
		failStep, failWith string
		wantAfterSweep     *scenarioEnd
		want               scenarioEnd
	}{
		{
			name: "found at the first look", policy: publishing.PolicyAuto, appearsBeforeLook: 1,
			want: scenarioEnd{
				Status: "SUCCEEDED", States: states(begin, looks(1), []string{"Found", "Confirm", "Done"}),
				Steps:  []string{"look", "confirm"},
				Ledger: ledger.Confirmed, LedgerReason: "ambiguous: timeout", RemoteID: "POST", Target: post.Published,
			},
		},
		{
			name: "found at the third look", policy: publishing.PolicyAuto, appearsBeforeLook: 3,
			want: scenarioEnd{
				Status: "SUCCEEDED", States: states(begin, looks(3), []string{"Found", "Confirm", "Done"}),
				Steps:  []string{"look", "look", "look", "confirm"},
				Ledger: ledger.Confirmed, LedgerReason: "ambiguous: timeout", RemoteID: "POST", Target: post.Published,
			},
		},
		{
			name: "never found, gate auto: released for a re-send", policy: publishing.PolicyAuto,
			want: scenarioEnd{
				Status: "SUCCEEDED", States: states(begin, looks(3), []string{"Release", "Done"}),
				Steps:  []string{"look", "look", "look", "release"},
				Ledger: ledger.Released, LedgerReason: publishing.ReasonNotFoundAfterLooks, Target: post.Publishing, Enqueued: 1,
			},
		},
		{
			name: "never found, gate manual: held, the operator releases", policy: publishing.PolicyManual, decision: publishing.DecisionRelease,
			want: scenarioEnd{
				Status: "SUCCEEDED", States: states(begin, looks(3), []string{"NotFound", "Hold", "Decided", "Release", "Done"}),
				Steps:      []string{"look", "look", "look", "hold", "release"},
				HoldReason: "not found after 3 looks",
				Ledger:     ledger.Released, LedgerReason: publishing.ReasonOperatorReleased, Target: post.Triggered, Enqueued: 1,
			},
		},
		{
			name: "unreadable platform: held without looking, the operator rejects", policy: publishing.PolicyUnreadable, decision: publishing.DecisionReject,
			want: scenarioEnd{
				Status: "SUCCEEDED", States: []string{"Readable", "Unreadable", "Hold", "Decided", "Reject", "Done"},
				Steps:      []string{"hold", "reject"},
				HoldReason: "the platform cannot be read back; an operator decides",
				Ledger:     ledger.Failed, LedgerReason: publishing.ReasonOperatorRejected, Target: post.Failed,
			},
		},
		{
			// PlatformUnavailable crosses the Runtime API as the error type:
			// retried 5 times by the Look's Retry, then caught.
			name: "the instance does not answer: looks retried, then held, the operator releases", policy: publishing.PolicyAuto, down: true, decision: publishing.DecisionRelease,
			want: scenarioEnd{
				Status: "SUCCEEDED", States: states(begin, []string{"Look", "LookFailed", "Hold", "Decided", "Release", "Done"}),
				Steps:      append(repeat("look", 6), "hold", "release"),
				HoldReason: `could not read the platform back: {"errorMessage":"look KEY: `,
				Ledger:     ledger.Released, LedgerReason: publishing.ReasonOperatorReleased, Target: post.Triggered, Enqueued: 1,
			},
		},
		{
			name: "the answer to the hold has no decision: the workflow fails, the entry stays held", policy: publishing.PolicyUnreadable, answer: `{"reason": "looks fine"}`,
			want: scenarioEnd{
				Status: "FAILED", Error: "InvalidDecision",
				Cause:      "the operator's answer is not {decision: release | confirm with remote_id | reject | resolved}",
				States:     []string{"Readable", "Unreadable", "Hold", "Decided", "BadDecision"},
				Steps:      []string{"hold"},
				HoldReason: "the platform cannot be read back; an operator decides",
				Ledger:     ledger.Held, LedgerReason: "the platform cannot be read back; an operator decides", Target: post.Held,
			},
		},
		{
			// The decision reached the workflow; its Release step then
			// failed past the store retries: the execution fails with the
			// entry held and decided, and the sweeper applies the decision.
			name: "the operator releases, the Release step's store retries run out: the sweeper applies it", policy: publishing.PolicyManual,
			decision: publishing.DecisionRelease, failStep: publishing.ActionRelease, failWith: publishing.ErrNameStoreUnavailable,
			want: scenarioEnd{
				Status: "FAILED", Error: "ConfirmStepFailed", Cause: "StoreUnavailable: ",
				States:     states(begin, looks(3), []string{"NotFound", "Hold", "Decided", "Release", "Failed"}),
				Steps:      append([]string{"look", "look", "look", "hold"}, repeat("release", 1+5)...),
				HoldReason: "not found after 3 looks",
				Ledger:     ledger.Held, LedgerReason: "not found after 3 looks", Target: post.Held,
			},
			wantAfterSweep: &scenarioEnd{Ledger: ledger.Released, LedgerReason: publishing.ReasonOperatorReleased, Target: post.Triggered, Enqueued: 1},
		},
		{
			name: "the operator releases, the Release step times out: the sweeper applies it", policy: publishing.PolicyManual,
			decision: publishing.DecisionRelease, failStep: publishing.ActionRelease, failWith: "Sandbox.Timedout",
			want: scenarioEnd{
				Status: "FAILED", Error: "ConfirmStepFailed", Cause: "Sandbox.Timedout: ",
				States:     states(begin, looks(3), []string{"NotFound", "Hold", "Decided", "Release", "Failed"}),
				Steps:      append([]string{"look", "look", "look", "hold"}, repeat("release", 1+2)...),
				HoldReason: "not found after 3 looks",
				Ledger:     ledger.Held, LedgerReason: "not found after 3 looks", Target: post.Held,
			},
			wantAfterSweep: &scenarioEnd{Ledger: ledger.Released, LedgerReason: publishing.ReasonOperatorReleased, Target: post.Triggered, Enqueued: 1},
		},
		{
			name: "the operator rejects, the Reject step fails with Lambda.Unknown: the sweeper applies it", policy: publishing.PolicyUnreadable,
			decision: publishing.DecisionReject, failStep: publishing.ActionReject, failWith: "Lambda.Unknown",
			want: scenarioEnd{
				Status: "FAILED", Error: "ConfirmStepFailed", Cause: "Lambda.Unknown: ",
				States:     []string{"Readable", "Unreadable", "Hold", "Decided", "Reject", "Failed"},
				Steps:      append([]string{"hold"}, repeat("reject", 1+2)...),
				HoldReason: "the platform cannot be read back; an operator decides",
				Ledger:     ledger.Held, LedgerReason: "the platform cannot be read back; an operator decides", Target: post.Held,
			},
			wantAfterSweep: &scenarioEnd{Ledger: ledger.Failed, LedgerReason: publishing.ReasonOperatorRejected, Target: post.Failed},
		},
		{
			name: "no ledger entry: the step error fails the workflow", policy: publishing.PolicyAuto, noEntry: true,
			want: scenarioEnd{
				Status: "FAILED", Error: "ConfirmStepFailed",
				Cause:  `InvalidStepRequest: {"errorMessage":"confirm KEY: `,
				States: states(begin, []string{"Look", "Failed"}),
				Steps:  []string{"look"},
				Target: post.Publishing,
			},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ends := map[string]scenarioEnd{}
			for _, engine := range []string{engineLocalflow, engineNode} {
				// An account, post and ledger entry of its own per scenario and engine.
				account := post.AccountID(fmt.Sprintf("scenario%d-%s", i, map[string]string{engineLocalflow: "lf", engineNode: "sfn"}[engine]))
				fx := setUpEntry(t, store, sb, account, tt.policy, tt.down, tt.noEntry, tt.appearsBeforeLook == 1)
				if tt.failStep != "" {
					proxy.fail(fx.key, tt.failStep, tt.failWith)
				}
				if tt.appearsBeforeLook > 1 {
					proxy.before(fx.key, func(req publishing.StepRequest, n int) {
						if req.Action == publishing.ActionLook && n == tt.appearsBeforeLook {
							sb.InjectStatus(fx.sandboxAccount, confirmBody)
						}
					})
				}
				input, err := json.Marshal(publishing.ConfirmInput{Key: fx.key, Attempt: 1, Policy: tt.policy, FirstWaitSeconds: 20, WaitSeconds: 20, MaxChecks: 3})
				if err != nil {
					t.Fatal(err)
				}
				var decide decideFunc
				if tt.answer != "" {
					decide = func(token string, tasks publishing.Tasks) {
						if err := tasks.SendTaskSuccess(ctx, token, json.RawMessage(tt.answer)); err != nil {
							t.Fatalf("%s: answer the hold: %v", engine, err)
						}
					}
				}
				if tt.decision != "" {
					decide = func(token string, tasks publishing.Tasks) {
						t.Helper()
						e, err := store.Get(ctx, fx.key)
						if err != nil {
							t.Fatal(err)
						}
						if e.State != ledger.Held || e.TaskToken != token {
							t.Errorf("%s: while the workflow waits on %s the entry is %s with token %q; want held with that token", engine, token, e.State, e.TaskToken)
						}
						op := publishing.Operator{Ledger: store, Tasks: tasks, Logger: slog.New(slog.DiscardHandler),
							Confirmer: &publishing.Confirmer{Ledger: store, Posts: store, Accounts: store, Platforms: mastodon.Connector{}, Queue: queue, Tasks: tasks}}
						res, err := op.Decide(ctx, fx.key, publishing.Decision{Action: tt.decision})
						if err != nil {
							t.Fatalf("%s: operator decision %s: %v", engine, tt.decision, err)
						}
						if res.How != publishing.DecisionDelivered {
							t.Errorf("%s: decision %s: %s (%s); want it delivered to the waiting workflow", engine, tt.decision, res.How, res.Message)
						}
					}
				}
				var end flowEnd
				started := time.Now()
				switch engine {
				case engineLocalflow:
					end = local.run(t, string(fx.key)+"-1", input, decide)
				case engineNode:
					end = runner.run(t, input, decide)
				}
				t.Logf("%s: %s in %s", engine, end.Status, time.Since(started).Round(time.Millisecond))
				ends[engine] = observe(t, store, sb, proxy, queue, fx, end)
				if tt.wantAfterSweep == nil {
					continue
				}
				// The execution is over: nothing waits on the entry's token
				// (the engine's SendTaskSuccess says so: localflow's, or, for
				// the finished runner, Step Functions' TaskTimedOut).
				var tasks publishing.Tasks = notWaitingTasks{}
				if engine == engineLocalflow {
					tasks = local
				}
				sw := &publishing.Sweeper{Ledger: store, Now: func() time.Time { return time.Now().Add(3 * time.Minute) }, Logger: slog.New(slog.DiscardHandler),
					Operator: &publishing.Operator{Ledger: store, Tasks: tasks, Logger: slog.New(slog.DiscardHandler),
						Confirmer: &publishing.Confirmer{Ledger: store, Posts: store, Accounts: store, Platforms: mastodon.Connector{}, Queue: queue, Tasks: tasks}}}
				if _, err := sw.ConvergeDecisions(ctx); err != nil {
					t.Errorf("%s: the sweeper's decisions: %v", engine, err)
				}
				after := observe(t, store, sb, proxy, queue, fx, end)
				got := scenarioEnd{Ledger: after.Ledger, LedgerReason: after.LedgerReason, RemoteID: after.RemoteID, Target: after.Target, Enqueued: after.Enqueued}
				if diff := cmp.Diff(*tt.wantAfterSweep, got); diff != "" {
					t.Errorf("%s: after the sweep (-want +got):\n%s", engine, diff)
				}
			}
			localEnd, nodeEnd := ends[engineLocalflow], ends[engineNode]
			ignorePrefixes := cmpopts.IgnoreFields(scenarioEnd{}, "Cause", "HoldReason")
			for engine, got := range ends {
				if diff := cmp.Diff(tt.want, got, ignorePrefixes); diff != "" {
					t.Errorf("%s ended (-want +got):\n%s", engine, diff)
				}
				if !strings.HasPrefix(got.Cause, tt.want.Cause) || (tt.want.Cause == "") != (got.Cause == "") {
					t.Errorf("%s: cause %q, want it to begin with %q", engine, got.Cause, tt.want.Cause)
				}
				if !strings.HasPrefix(got.HoldReason, tt.want.HoldReason) || (tt.want.HoldReason == "") != (got.HoldReason == "") {
					t.Errorf("%s: hold reason %q, want it to begin with %q", engine, got.HoldReason, tt.want.HoldReason)
				}
			}
			// aws-local-stepfunctions 3.0.0 deletes every backslash from an
			// intrinsic function's result (BaseIntrinsicFunction.call), the
			// backslashes of a value read from a path included: the
			// LookFailed reason, States.Format of the function's error
			// document, loses the escapes of its JSON there. localflow keeps
			// the value as it is: escapes belong to the definition's string
			// literals, not to the data. Apart from these, the reasons are
			// equal.
			if strings.ReplaceAll(localEnd.HoldReason, `\`, "") == nodeEnd.HoldReason {
				nodeEnd.HoldReason = localEnd.HoldReason
			}
			if diff := cmp.Diff(localEnd, nodeEnd); diff != "" {
				t.Errorf("the engines ended differently (-%s +%s):\n%s", engineLocalflow, engineNode, diff)
			}
		})
	}
}

// entryFixture is one scenario's account, post and ledger entry for one
// engine.
type entryFixture struct {
	account        post.AccountID
	sandboxAccount string // the sandbox's account id; "" when the instance does not answer
	post           post.ID
	key            ledger.Key
}

// setUpEntry stores an account (on the sandbox, or on an instance that
// does not answer), its credential, a post whose target is publishing,
// and, unless noEntry, its ledger entry, unknown after a timeout. posted
// puts the post on the sandbox.
func setUpEntry(t *testing.T, store *dynamostore.Store, sb *sandbox.Server, id post.AccountID, policy string, down, noEntry, posted bool) entryFixture {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	fx := entryFixture{account: id, post: post.ID("p-" + id)}
	acc := post.Account{ID: id, Platform: "mastodon", Handle: "@" + string(id), BaseURL: "http://127.0.0.1:1", RemoteID: "1", Gate: post.GateAuto}
	if policy == publishing.PolicyManual {
		acc.Gate = post.GateManual
	}
	token := "unused"
	if !down {
		sa := sb.AddAccount(string(id))
		fx.sandboxAccount, acc.BaseURL, acc.RemoteID, token = sa.ID, sb.URL(), sa.ID, sa.AccessToken
		if posted {
			sb.InjectStatus(sa.ID, confirmBody)
		}
	}
	if err := store.PutAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	if err := store.PutCredential(ctx, id, platform.Credential{AccessToken: token}); err != nil {
		t.Fatal(err)
	}
	p := post.Post{ID: fx.post, Body: confirmBody, CreatedAt: now,
		Targets: []post.Target{{Account: id, Slot: now, Status: post.Publishing, UpdatedAt: now}}}
	if err := store.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	fx.key = ledger.PublishKey(string(id), string(p.ID), now)
	if noEntry {
		return fx
	}
	e := ledger.NewEntry(fx.key, ledger.Publish, string(id), string(p.ID), now, platform.Fingerprint(confirmBody, nil), "worker", now, time.Minute)
	e.LookAfter = platform.StartOfHistory
	if err := store.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	unknown, err := e.MarkUnknown("ambiguous: timeout", now)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Update(ctx, e, unknown); err != nil {
		t.Fatal(err)
	}
	return fx
}

// observe reads what the execution left behind: the ledger entry, the
// target, the function's steps and the jobs on the queue (which it
// drains), with the fixture's names replaced by placeholders.
func observe(t *testing.T, store *dynamostore.Store, sb *sandbox.Server, proxy *functionProxy, queue *sqsqueue.Queue, fx entryFixture, end flowEnd) scenarioEnd {
	t.Helper()
	ctx := context.Background()
	names := strings.NewReplacer(string(fx.key), "KEY", string(fx.account), "ACCOUNT")
	got := scenarioEnd{Status: end.Status, Error: end.Error, Cause: names.Replace(end.Cause), States: end.States}
	for _, req := range proxy.calls(fx.key) {
		got.Steps = append(got.Steps, req.Action)
		if req.Action == publishing.ActionHold {
			got.HoldReason = names.Replace(req.Reason)
		}
	}
	e, err := store.Get(ctx, fx.key)
	switch {
	case err == nil:
		got.Ledger, got.LedgerReason, got.RemoteID = e.State, e.Reason, e.RemoteID
		if fx.sandboxAccount != "" {
			if sts := sb.Statuses(fx.sandboxAccount); len(sts) == 1 && e.RemoteID == sts[0].ID {
				got.RemoteID = "POST"
			}
		}
	case !errors.Is(err, ledger.ErrNotFound):
		t.Fatalf("read the ledger entry: %v", err)
	}
	p, err := store.GetPost(ctx, fx.post)
	if err != nil {
		t.Fatal(err)
	}
	got.Target = p.Targets[0].Status
	for {
		msgs, err := queue.Receive(ctx, 10, time.Minute)
		if err != nil {
			t.Fatalf("receive the re-sent jobs: %v", err)
		}
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			var job publishing.Job
			if err := json.Unmarshal(m.Body, &job); err != nil || job.Post != fx.post || job.Account != fx.account {
				t.Errorf("queue holds %s, want only jobs for %s on %s", m.Body, fx.post, fx.account)
			} else {
				got.Enqueued++
			}
			if err := queue.Ack(ctx, m.Receipt); err != nil {
				t.Fatal(err)
			}
		}
	}
	return got
}

// notWaitingTasks is Step Functions' SendTaskSuccess for the token of an
// execution that has stopped: TaskTimedOut, as sfnflow reports it.
type notWaitingTasks struct{}

func (notWaitingTasks) SendTaskSuccess(context.Context, string, json.RawMessage) error {
	return fmt.Errorf("TaskTimedOut: %w", publishing.ErrTaskNotWaiting)
}

// functionProxy sits between both engines and the function's endpoint:
// it records every step request by ledger key, runs a scenario's hook
// before forwarding (the platform changing between two looks), fails the
// steps a scenario says with the error it names (the function never runs
// them), and forwards the request and the answer unchanged.
type functionProxy struct {
	target string
	client *http.Client
	server *httptest.Server

	mu       sync.Mutex
	steps    map[ledger.Key][]publishing.StepRequest
	hooks    map[ledger.Key]func(req publishing.StepRequest, n int)
	failures map[ledger.Key]map[string]string
}

// fail answers every call of action for key with a function error named
// errorType, as the RIE answers a function error: 200 and the error
// document, which both engines throw under that name.
func (p *functionProxy) fail(key ledger.Key, action, errorType string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failures[key] == nil {
		p.failures[key] = map[string]string{}
	}
	p.failures[key][action] = errorType
}

// newFunctionProxy serves a proxy to target on a free port of 127.0.0.1
// until the test ends.
func newFunctionProxy(t *testing.T, target string) *functionProxy {
	t.Helper()
	p := &functionProxy{target: target, client: &http.Client{Timeout: time.Minute},
		steps: map[ledger.Key][]publishing.StepRequest{}, hooks: map[ledger.Key]func(publishing.StepRequest, int){},
		failures: map[ledger.Key]map[string]string{}}
	p.server = httptest.NewServer(http.HandlerFunc(p.forward))
	t.Cleanup(p.server.Close)
	return p
}

// URL is the proxy's invoke URL.
func (p *functionProxy) URL() string {
	return p.server.URL + "/2015-03-31/functions/function/invocations"
}

// before runs hook before each step request for key is forwarded, with
// the count of that action for key so far (1 for the first).
func (p *functionProxy) before(key ledger.Key, hook func(req publishing.StepRequest, n int)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hooks[key] = hook
}

// calls returns the step requests recorded for key, in order.
func (p *functionProxy) calls(key ledger.Key) []publishing.StepRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]publishing.StepRequest(nil), p.steps[key]...)
}

func (p *functionProxy) forward(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read the event: "+err.Error(), http.StatusBadRequest)
		return
	}
	var req publishing.StepRequest
	if err := json.Unmarshal(body, &req); err == nil {
		p.mu.Lock()
		p.steps[req.Key] = append(p.steps[req.Key], req)
		n := 0
		for _, s := range p.steps[req.Key] {
			if s.Action == req.Action {
				n++
			}
		}
		hook := p.hooks[req.Key]
		failWith := p.failures[req.Key][req.Action]
		p.mu.Unlock()
		if hook != nil {
			hook(req, n)
		}
		if failWith != "" {
			doc, _ := json.Marshal(map[string]string{"errorType": failWith, "errorMessage": "injected: the " + req.Action + " step failed"})
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(doc)
			return
		}
	}
	out, err := http.NewRequestWithContext(r.Context(), http.MethodPost, p.target, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header.Set("Content-Type", r.Header.Get("Content-Type"))
	resp, err := p.client.Do(out)
	if err != nil {
		http.Error(w, "forward to the function: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for _, h := range []string{"Content-Type", "X-Amz-Function-Error"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}
