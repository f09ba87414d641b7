package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/clocktest"
	"oncepost/shared/ledger"
	"oncepost/shared/localflow"
	"oncepost/shared/platform"
	"oncepost/shared/platform/mastodon"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// Every path of confirm.asl.json, run by localflow against the real
// confirm steps, publisher, SQLite store and sandbox, with a fake clock
// for the workflow's Waits and the ledger's leases.
func TestConfirmWorkflowPaths(t *testing.T) {
	for _, tc := range []struct {
		name   string
		gate   post.GatePolicy
		unread bool
		// commitAfterLooks: the platform commits after this many looks
		// (0: before the first; -1: never while the test looks).
		commitAfterLooks int
		operator         string // decision sent to a held workflow
		wantHistory      []string
		wantCreates      int
		wantAttempt      int
		wantTarget       post.TargetStatus
	}{
		{name: "found at the first look", gate: post.GateAuto, commitAfterLooks: 0,
			wantHistory: []string{"Readable", "Begin", "FirstWait", "Look", "Looked", "Found", "Confirm", "Done"},
			wantCreates: 1, wantAttempt: 1, wantTarget: post.Published},
		{name: "found at the third look", gate: post.GateAuto, commitAfterLooks: 2,
			wantHistory: []string{"Readable", "Begin", "FirstWait", "Look", "Looked", "Count", "Wait", "Look", "Looked", "Count", "Wait", "Look", "Looked", "Found", "Confirm", "Done"},
			wantCreates: 1, wantAttempt: 1, wantTarget: post.Published},
		{name: "never found, auto: released and re-sent once", gate: post.GateAuto, commitAfterLooks: -1,
			wantHistory: []string{"Readable", "Begin", "FirstWait", "Look", "Looked", "Count", "Wait", "Look", "Looked", "Count", "Wait", "Look", "Looked", "Release", "Done"},
			wantCreates: 2, wantAttempt: 2, wantTarget: post.Published},
		{name: "never found, manual: held until released", gate: post.GateManual, commitAfterLooks: -1, operator: "release",
			wantHistory: []string{"Readable", "Begin", "FirstWait", "Look", "Looked", "Count", "Wait", "Look", "Looked", "Count", "Wait", "Look", "Looked", "NotFound", "Hold", "Decided", "Release", "Done"},
			wantCreates: 2, wantAttempt: 2, wantTarget: post.Published},
		{name: "unreadable platform: held directly", gate: post.GateAuto, unread: true, commitAfterLooks: -1, operator: "reject",
			wantHistory: []string{"Readable", "Unreadable", "Hold", "Decided", "Reject", "Done"},
			wantCreates: 1, wantAttempt: 1, wantTarget: post.Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFlowFixture(t, tc.gate, tc.unread)
			// The first create is slow: the client gives up after 100 ms and
			// the platform commits at 2 s, or never while the test looks.
			delay := 2 * time.Second
			if tc.commitAfterLooks < 0 {
				delay = time.Hour
			}
			f.ws.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: delay})
			job := f.due("p1", "Storm warning for the coast.")
			if out := f.publish(job); out.Result != publishing.Confirming {
				t.Fatalf("first send = %+v, want confirming", out)
			}
			name := publishing.ConfirmName(f.entry(job).Key, 1)
			f.runDue()
			if countState(f.describe(name).History, "Look") != 0 {
				t.Fatalf("a look ran before its wait elapsed: %v", f.describe(name).History)
			}
			for step := 0; step < 10; step++ {
				ex := f.describe(name)
				if ex.Status != localflow.StatusRunning || ex.TaskToken != "" {
					break
				}
				if countState(ex.History, "Look") == tc.commitAfterLooks {
					f.waitCommitted(1)
				}
				f.clock.Advance(time.Second) // the workflow's Wait
				f.runDue()
			}
			if ex := f.describe(name); ex.TaskToken != "" {
				if got := f.target(job).Status; got != post.Held {
					t.Errorf("target %s while the workflow waits for an operator, want held", got)
				}
				if e := f.entry(job); e.State != ledger.Held {
					t.Errorf("entry %s while held", e.State)
				}
				out, _ := json.Marshal(map[string]string{"decision": tc.operator})
				if err := f.rt.flows.SendTaskSuccess(context.Background(), ex.TaskToken, out); err != nil {
					t.Fatal(err)
				}
				f.runDue()
			}
			ex := f.describe(name)
			if ex.Status != localflow.StatusSucceeded {
				t.Fatalf("workflow %s in state %s (%s: %s)", ex.Status, ex.State, ex.Error, ex.Cause)
			}
			if diff := cmp.Diff(tc.wantHistory, ex.History); diff != "" {
				t.Errorf("workflow path (-want +got):\n%s", diff)
			}
			f.drain() // a release re-enqueued the job
			en, st := f.entry(job), f.ws.sb.Stats()
			if st.CreateRequests != tc.wantCreates || en.Attempt != tc.wantAttempt {
				t.Errorf("sandbox saw %d creates, entry attempt %d; want %d and %d", st.CreateRequests, en.Attempt, tc.wantCreates, tc.wantAttempt)
			}
			if got := f.target(job).Status; got != tc.wantTarget {
				t.Errorf("target %s, want %s", got, tc.wantTarget)
			}
			if st.Duplicates != 0 {
				t.Errorf("sandbox counted %d duplicates", st.Duplicates)
			}
			if statuses := f.ws.sb.Statuses(f.remoteID); tc.wantTarget == post.Published && (len(statuses) != 1 || statuses[0].IdempotencyKey != en.Handle) {
				t.Errorf("sandbox statuses %d (handle %q), want one sent with the entry's handle %q", len(statuses), firstKey(statuses), en.Handle)
			}
		})
	}
}

func firstKey(s []sandbox.Status) string {
	if len(s) == 0 {
		return ""
	}
	return s[0].IdempotencyKey
}

func countState(history []string, state string) int {
	n := 0
	for _, h := range history {
		if h == state {
			n++
		}
	}
	return n
}

// flowFixture is the embedded runtime on a fake clock, driven step by step.
type flowFixture struct {
	t        *testing.T
	ws       *workspace
	rt       *runtime
	clock    *clocktest.Clock
	remoteID string
}

func newFlowFixture(t *testing.T, gate post.GatePolicy, unreadable bool) *flowFixture {
	return newFlowFixtureWith(t, gate, unreadable, nil)
}

// newFlowFixtureWith is newFlowFixture with the use cases' ports wrapped.
func newFlowFixtureWith(t *testing.T, gate post.GatePolicy, unreadable bool, wrap func(ports) ports) *flowFixture {
	ws := newWorkspace(t, sandbox.Options{DisableIdempotency: true}, 1)
	f := &flowFixture{t: t, ws: ws, clock: clocktest.New(time.Now().UTC().Truncate(time.Second))}
	cfg := defaultConfig()
	cfg.DBPath, cfg.MediaDir, cfg.Logger, cfg.Metrics = ws.db, t.TempDir(), discardLogger(), discardWriter{}
	cfg.CallTimeout, cfg.RecordMargin, cfg.Lease = 100*time.Millisecond, 100*time.Millisecond, 10*time.Second
	cfg.ConfirmWait, cfg.ConfirmChecks, cfg.Now = time.Second, 3, f.clock.Now
	var plat publishing.Platforms = mastodon.Connector{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret}
	if unreadable {
		plat = unreadablePlatforms{plat}
	}
	cfg.Platforms = plat
	cfg.wrap = wrap
	rt, err := openRuntime(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	f.rt = rt
	acc, err := rt.store.GetAccount(context.Background(), ws.accounts[0])
	if err != nil {
		t.Fatal(err)
	}
	acc.Gate = gate
	if err := rt.store.PutAccount(context.Background(), acc); err != nil {
		t.Fatal(err)
	}
	f.remoteID = acc.RemoteID
	return f
}

// due stores a post due now and triggers it.
func (f *flowFixture) due(id, body string) publishing.Job {
	f.t.Helper()
	now := f.clock.Now()
	p := post.Post{ID: post.ID(id), Body: body, CreatedAt: now,
		Targets: []post.Target{{Account: f.ws.accounts[0], Slot: now, Status: post.Scheduled, UpdatedAt: now}}}
	if err := f.rt.store.CreatePost(context.Background(), p); err != nil {
		f.t.Fatal(err)
	}
	job := publishing.Job{Post: p.ID, Account: f.ws.accounts[0], Slot: now}
	if sent, err := f.rt.trigger.Fire(context.Background(), job); err != nil || !sent {
		f.t.Fatalf("trigger: sent=%v err=%v", sent, err)
	}
	// The test publishes the job itself; take it off the queue.
	msgs, err := f.rt.queue.Receive(context.Background(), 10, time.Minute)
	if err != nil || len(msgs) != 1 {
		f.t.Fatalf("queue after trigger: %d messages, err %v", len(msgs), err)
	}
	if err := f.rt.queue.Ack(context.Background(), msgs[0].Receipt); err != nil {
		f.t.Fatal(err)
	}
	return job
}

func (f *flowFixture) publish(job publishing.Job) publishing.Outcome {
	f.t.Helper()
	out, err := f.rt.publisher.Publish(context.Background(), job)
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

func (f *flowFixture) runDue() {
	f.t.Helper()
	if _, err := f.rt.flows.RunDue(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}

func (f *flowFixture) describe(name string) localflow.Execution {
	f.t.Helper()
	ex, err := f.rt.flows.Describe(context.Background(), name)
	if err != nil {
		f.t.Fatal(err)
	}
	return ex
}

func (f *flowFixture) entry(job publishing.Job) ledger.Entry {
	f.t.Helper()
	e, err := f.rt.store.Get(context.Background(), ledger.PublishKey(string(job.Account), string(job.Post), job.Slot))
	if err != nil {
		f.t.Fatal(err)
	}
	return e
}

func (f *flowFixture) target(job publishing.Job) post.Target {
	f.t.Helper()
	p, err := f.rt.store.GetPost(context.Background(), job.Post)
	if err != nil {
		f.t.Fatal(err)
	}
	tg, _ := p.Target(job.Account)
	return tg
}

// drain publishes whatever the workflow put back on the queue.
func (f *flowFixture) drain() {
	f.t.Helper()
	loop := &publishing.Loop{Queue: f.rt.queue, Publisher: f.rt.publisher, Logger: discardLogger()}
	for i := 0; i < 10; i++ {
		n, err := loop.RunOnce(context.Background())
		if err != nil {
			f.t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

func (f *flowFixture) waitCommitted(n int) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !waitUntil(ctx, 10*time.Millisecond, func() bool { return f.ws.sb.Stats().Committed >= n }) {
		f.t.Fatalf("sandbox committed %d posts, want %d", f.ws.sb.Stats().Committed, n)
	}
}

// unreadablePlatforms wraps the real adapter but declares the platform
// unreadable (as Telegram is), to drive the workflow's direct hold.
type unreadablePlatforms struct{ publishing.Platforms }

func (u unreadablePlatforms) Client(ctx context.Context, a post.Account, c platform.Credential) (platform.Client, error) {
	cl, err := u.Platforms.Client(ctx, a, c)
	return unreadableClient{cl}, err
}

type unreadableClient struct{ platform.Client }

func (u unreadableClient) Capabilities() platform.Capabilities {
	c := u.Client.Capabilities()
	c.ReadableHistory = false
	return c
}
