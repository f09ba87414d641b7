package dynamostore

// The side-effect scenarios of the comparison with Powertools idempotency:
// a side effect (a status create on the sandbox platform) whose caller
// (a) gets a timeout after the platform committed, or (b) is killed with
// SIGKILL after the platform committed, and the same event delivered again
// afterwards, as SQS and the Lambda service do. oncepost runs its real use
// cases (publishing.Publisher and Confirmer on this store); Powertools runs
// in the Node harness. The sandbox's own Idempotency-Key support is off on
// both sides, so the count of posts it committed is the side-effect counter.

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/emulatortest"
	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// benchEnv is one dynalite with the counting proxy in front of it: both
// clients of the comparison reach dynalite through the proxy.
type benchEnv struct {
	proxy *countingProxy
	// admin reaches dynalite directly (tables), uncounted.
	admin *dynamodb.Client
}

// newBenchEnv starts dynalite (emulatortest) and the counting proxy.
func newBenchEnv(tb testing.TB) *benchEnv {
	tb.Helper()
	endpoint := emulatortest.Dynalite(tb)
	return &benchEnv{
		proxy: startCountingProxy(tb, endpoint),
		admin: dynamodb.NewFromConfig(emulatortest.AWSConfig(tb, endpoint)),
	}
}

// client is a DynamoDB client that goes through the proxy.
func (e *benchEnv) client(tb testing.TB) *dynamodb.Client {
	tb.Helper()
	return dynamodb.NewFromConfig(emulatortest.AWSConfig(tb, e.proxy.endpoint))
}

// powertoolsTable creates a table as the Powertools documentation
// describes it (partition key "id", a string; on-demand) and returns its
// name.
func (e *benchEnv) powertoolsTable(tb testing.TB) string {
	tb.Helper()
	name := newPrefix() + "powertools-idempotency"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := e.admin.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		tb.Fatalf("create table %s: %v", name, err)
	}
	if err := waitActive(ctx, e.admin, name); err != nil {
		tb.Fatal(err)
	}
	return name
}

// benchPostText is the post both sides publish.
const benchPostText = "Doors open at 9."

// platformCounts is what the sandbox platform saw in one scenario.
type platformCounts struct {
	// Committed counts posts the platform stored: the side-effect counter.
	Committed int
	// Duplicates counts posts stored twice (same text, same account).
	Duplicates int
}

// platformCountsOf reads sb's counters.
func platformCountsOf(sb *sandbox.Server) platformCounts {
	st := sb.Stats()
	return platformCounts{Committed: st.Committed, Duplicates: st.Duplicates}
}

// sideEffectScenario is one side in one failure.
type sideEffectScenario struct {
	name string
	// side is "oncepost" or "powertools", fault "timeout" or "kill": the
	// comparison table's column and row.
	side, fault string
	run         func(tb testing.TB, env *benchEnv) platformCounts
	want        platformCounts
}

// sideEffectScenarios are the four scenarios. oncepost's side effect
// happens once; Powertools runs it again (this is its documented
// behaviour, not a bug: it deletes its record when the handler throws, and
// lets a new invocation in once in_progress_expiration has passed). If
// Powertools gave 1 here, the comparison would be measuring something else.
var sideEffectScenarios = []sideEffectScenario{
	{name: "oncepost/timeout after the side effect", side: "oncepost", fault: "timeout", run: onceAfterTimeout, want: platformCounts{Committed: 1}},
	{name: "oncepost/SIGKILL after the side effect", side: "oncepost", fault: "kill", run: onceAfterKill, want: platformCounts{Committed: 1}},
	{name: "powertools/timeout after the side effect", side: "powertools", fault: "timeout", run: powertoolsAfterTimeout, want: platformCounts{Committed: 2, Duplicates: 1}},
	{name: "powertools/SIGKILL after the side effect", side: "powertools", fault: "kill", run: powertoolsAfterKill, want: platformCounts{Committed: 2, Duplicates: 1}},
}

// newBenchSandbox starts a sandbox platform with its Idempotency-Key support
// off and one account, stopped when tb ends.
func newBenchSandbox(tb testing.TB) (*sandbox.Server, sandbox.Account) {
	tb.Helper()
	sb := sandbox.New(sandbox.Options{DisableIdempotency: true})
	if err := sb.Start(); err != nil {
		tb.Fatalf("start sandbox: %v", err)
	}
	tb.Cleanup(func() { sb.Close() })
	return sb, sb.AddAccount("news")
}

// benchWaitFor polls cond every 5 ms until it holds, failing tb after timeout.
func benchWaitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// onceFixture is oncepost's publish path on this store, against a sandbox
// account: tables of its own, the account and its sealed credential.
type onceFixture struct {
	env     *benchEnv
	sb      *sandbox.Server
	prefix  string
	dataKey StaticKey
	store   *Store
	account post.Account
	flows   *startedFlows
}

func newOnceFixture(tb testing.TB, env *benchEnv) *onceFixture {
	tb.Helper()
	ctx := context.Background()
	sb, acct := newBenchSandbox(tb)
	prefix := newPrefix()
	if err := CreateTables(ctx, env.admin, prefix); err != nil {
		tb.Fatal(err)
	}
	f := &onceFixture{env: env, sb: sb, prefix: prefix, dataKey: NewStaticKey(), flows: &startedFlows{}}
	var err error
	if f.store, err = New(env.client(tb), Options{Prefix: prefix, Keys: f.dataKey}); err != nil {
		tb.Fatal(err)
	}
	f.account = post.Account{ID: "news", Platform: "mastodon", Handle: "@news", BaseURL: sb.URL(), RemoteID: acct.ID, CredentialRef: "news", Gate: post.GateAuto}
	if err := f.store.PutAccount(ctx, f.account); err != nil {
		tb.Fatal(err)
	}
	if err := f.store.PutCredential(ctx, f.account.ID, sandboxCredential(acct)); err != nil {
		tb.Fatal(err)
	}
	return f
}

// schedule stores a post due now and triggers its target, as the trigger
// does before it enqueues the job, and returns the job.
func (f *onceFixture) schedule(tb testing.TB, id string) publishing.Job {
	tb.Helper()
	ctx := context.Background()
	slot := time.Now().UTC().Truncate(time.Second)
	p := post.Post{ID: post.ID(id), Body: benchPostText, CreatedAt: slot,
		Targets: []post.Target{{Account: f.account.ID, Slot: slot, Status: post.Scheduled, UpdatedAt: slot}}}
	if err := f.store.CreatePost(ctx, p); err != nil {
		tb.Fatalf("create post: %v", err)
	}
	if _, err := f.store.UpdateTarget(ctx, p.ID, f.account.ID, post.TargetUpdate{Status: post.Triggered, At: slot}); err != nil {
		tb.Fatalf("trigger: %v", err)
	}
	return publishing.Job{Post: p.ID, Account: f.account.ID, Slot: slot}
}

// publisher is a Publisher on the fixture's store.
func (f *onceFixture) publisher(owner string, callTimeout, recordMargin, lease time.Duration) *publishing.Publisher {
	return &publishing.Publisher{
		Ledger: f.store, Posts: f.store, Accounts: f.store, Pacer: f.store, Flows: f.flows, Platforms: benchPlatforms,
		Owner: owner, CallTimeout: callTimeout, RecordMargin: recordMargin, Lease: lease, Logger: slog.New(slog.DiscardHandler),
	}
}

// publishJob delivers job to pub.
func publishJob(tb testing.TB, pub *publishing.Publisher, job publishing.Job) publishing.Outcome {
	tb.Helper()
	out, err := pub.Publish(context.Background(), job)
	if err != nil {
		tb.Fatalf("publish %s: %v", job.Post, err)
	}
	return out
}

// confirm runs the confirm workflow started for out's attempt with the
// real Confirmer steps, as infra/statemachine/confirm.asl.json orders them
// (Look, then Confirm when found). The ASL's waits before each look are
// left out: the platform committed the post before the scenario went on.
func (f *onceFixture) confirm(tb testing.TB, out publishing.Outcome) {
	tb.Helper()
	ctx := context.Background()
	name := publishing.ConfirmName(out.Key, out.Attempt)
	in, ok := f.flows.input(name)
	if !ok {
		tb.Fatalf("confirm workflow %s was never started", name)
	}
	conf := &publishing.Confirmer{Ledger: f.store, Posts: f.store, Accounts: f.store, Platforms: benchPlatforms, Logger: slog.New(slog.DiscardHandler)}
	for look := 1; look <= in.MaxChecks; look++ {
		res, err := conf.Look(ctx, in)
		if err != nil {
			tb.Fatalf("look %d of %s: %v", look, name, err)
		}
		if res.Resolved {
			tb.Fatalf("look %d of %s: the entry moved on meanwhile (%s)", look, name, res.State)
		}
		if res.Found {
			if err := conf.Confirm(ctx, in, res.RemoteID); err != nil {
				tb.Fatalf("confirm %s: %v", name, err)
			}
			return
		}
	}
	tb.Fatalf("%s: the post the platform committed was not found in %d looks", name, in.MaxChecks)
}

// settled checks that job's entry went through want (its history) to
// confirmed with the post the platform has, and its target is published.
func (f *onceFixture) settled(tb testing.TB, job publishing.Job, want [][2]ledger.State) {
	tb.Helper()
	ctx := context.Background()
	key := ledger.PublishKey(string(job.Account), string(job.Post), job.Slot)
	e, err := f.store.Get(ctx, key)
	if err != nil {
		tb.Fatal(err)
	}
	remote := f.sb.Statuses(f.account.RemoteID)
	if len(remote) == 0 || e.State != ledger.Confirmed || e.RemoteID != remote[0].ID {
		tb.Errorf("entry %s remote %q; the platform has %d posts; want confirmed with the platform's newest", e.State, e.RemoteID, len(remote))
	}
	hist, err := f.store.History(ctx, key)
	if err != nil {
		tb.Fatal(err)
	}
	var got [][2]ledger.State
	for _, h := range hist {
		got = append(got, [2]ledger.State{h.From, h.To})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		tb.Errorf("ledger history (-want +got):\n%s", diff)
	}
	p, err := f.store.GetPost(ctx, job.Post)
	if err != nil {
		tb.Fatal(err)
	}
	if tg, _ := p.Target(job.Account); tg.Status != post.Published {
		tb.Errorf("target is %s, want published", tg.Status)
	}
}

// onceAfterTimeout: the platform commits, then answers after the client's
// timeout. Publish records the entry unknown and starts its confirm
// workflow; the job delivered again sends nothing (the entry is unknown);
// the workflow's look finds the post and confirms it.
func onceAfterTimeout(tb testing.TB, env *benchEnv) platformCounts {
	tb.Helper()
	f := newOnceFixture(tb, env)
	f.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayAfterCommit, Delay: 6 * time.Second})
	job := f.schedule(tb, "after-timeout")
	pub := f.publisher("worker-1", 2*time.Second, time.Second, time.Minute)
	out := publishJob(tb, pub, job)
	if out.Result != publishing.Confirming || !strings.HasPrefix(out.Reason, publishing.ReasonAmbiguous) {
		tb.Fatalf("publish after a timeout = %+v, want confirming (ambiguous)", out)
	}
	benchWaitFor(tb, time.Minute, "the platform commits the create", func() bool { return f.sb.Stats().Committed >= 1 })
	if again := publishJob(tb, pub, job); again.Result != publishing.Confirming {
		tb.Fatalf("the job delivered again = %+v, want confirming without a send", again)
	}
	f.confirm(tb, out)
	f.settled(tb, job, [][2]ledger.State{{"", ledger.Pending}, {ledger.Pending, ledger.Unknown}, {ledger.Unknown, ledger.Confirmed}})
	return platformCountsOf(f.sb)
}

// onceAfterKill: a publisher process is killed (SIGKILL) after the
// platform committed and before the answer came. Its entry stays pending
// until its lease expires; the job delivered again then finds the lease
// expired, moves the entry to unknown and starts the confirm workflow,
// whose look finds the post.
func onceAfterKill(tb testing.TB, env *benchEnv) platformCounts {
	tb.Helper()
	ctx := context.Background()
	f := newOnceFixture(tb, env)
	f.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayAfterCommit, Delay: time.Minute})
	job := f.schedule(tb, "after-kill")
	const owner = "worker-killed"
	child := startChild(tb, childPublish, publishChildConfig{
		Endpoint: env.proxy.endpoint, Prefix: f.prefix, DataKey: f.dataKey, Job: job, Owner: owner,
		// The lease outlasts the call and its recording, as Publish
		// requires, with time to spare for the steps before the call;
		// short, so the scenario waits little for it.
		CallTimeout: 2 * time.Second, RecordMargin: 500 * time.Millisecond, Lease: 4 * time.Second,
	})
	if l := child.line(tb, time.Minute); l != "publishing" {
		tb.Fatalf("publish child: first line %q", l)
	}
	benchWaitFor(tb, time.Minute, "the platform commits the child's create", func() bool { return f.sb.Stats().Committed >= 1 })
	child.kill(tb)

	key := ledger.PublishKey(string(job.Account), string(job.Post), job.Slot)
	e, err := f.store.Get(ctx, key)
	if err != nil {
		tb.Fatal(err)
	}
	if e.State != ledger.Pending || e.LeaseOwner != owner {
		tb.Fatalf("after the kill the entry is %s (owner %q), want pending with the killed owner's lease: the kill came too late", e.State, e.LeaseOwner)
	}
	time.Sleep(time.Until(e.LeaseUntil) + 50*time.Millisecond)

	out := publishJob(tb, f.publisher("worker-2", time.Second, time.Second, time.Minute), job)
	if out.Result != publishing.Confirming || out.Reason != ledger.ReasonLeaseExpired {
		tb.Fatalf("the job delivered after the lease expired = %+v, want confirming (%s)", out, ledger.ReasonLeaseExpired)
	}
	f.confirm(tb, out)
	f.settled(tb, job, [][2]ledger.State{{"", ledger.Pending}, {ledger.Pending, ledger.Unknown}, {ledger.Unknown, ledger.Confirmed}})
	return platformCountsOf(f.sb)
}

// powertoolsEvent is the event both Powertools deliveries carry (the
// whole event is hashed into the idempotency key, Powertools' default).
func powertoolsEvent(id string) map[string]any {
	return map[string]any{"post_id": id, "account_id": "news"}
}

// powertoolsAfterTimeout: the handler's create times out after the
// platform committed and the handler throws. Powertools deletes its record
// (DeleteItem) and rethrows; the event delivered again runs the handler,
// and the create, again. A third delivery gets the stored response.
func powertoolsAfterTimeout(tb testing.TB, env *benchEnv) platformCounts {
	tb.Helper()
	sb, acct := newBenchSandbox(tb)
	table := env.powertoolsTable(tb)
	h := startPowertoolsHarness(tb, env.proxy.endpoint, table)
	sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayAfterCommit, Delay: 6 * time.Second})
	event := powertoolsEvent("after-timeout")
	target := harnessPlatform{URL: sb.URL(), Token: acct.AccessToken, Text: benchPostText, TimeoutMS: 2000}

	before := env.proxy.calls(tb)
	first := h.invoke(tb, event, time.Minute, target)
	if first.Error == nil || first.Error.Name != "TimeoutError" {
		tb.Fatalf("first delivery = %v, want the handler's TimeoutError", first)
	}
	benchWaitFor(tb, time.Minute, "the platform commits the create", func() bool { return sb.Stats().Committed >= 1 })
	if diff := cmp.Diff(map[string]int{"PutItem": 1, "DeleteItem": 1}, env.proxy.calls(tb).since(before).onTable(table)); diff != "" {
		tb.Errorf("calls of the throwing delivery (-want +got):\n%s", diff)
	}
	second := h.invoke(tb, event, time.Minute, target)
	if second.Error != nil || second.Result["remote_id"] == nil {
		tb.Fatalf("second delivery = %v, want the handler's result", second)
	}
	third := h.invoke(tb, event, time.Minute, target)
	if diff := cmp.Diff(second, third); diff != "" {
		tb.Errorf("third delivery, want the stored result (-second +third):\n%s", diff)
	}
	return platformCountsOf(sb)
}

// powertoolsAfterKill: the Node process is killed (SIGKILL) after the
// platform committed and before the answer came. Its record stays
// INPROGRESS until in_progress_expiration (now + the Lambda's remaining
// time when it was written); a delivery before then is refused as in
// progress, a delivery after it runs the handler, and the create, again.
func powertoolsAfterKill(tb testing.TB, env *benchEnv) platformCounts {
	tb.Helper()
	sb, acct := newBenchSandbox(tb)
	table := env.powertoolsTable(tb)
	sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayAfterCommit, Delay: time.Minute})
	event := powertoolsEvent("after-kill")
	target := harnessPlatform{URL: sb.URL(), Token: acct.AccessToken, Text: benchPostText, TimeoutMS: 60_000}

	killed := startPowertoolsHarness(tb, env.proxy.endpoint, table)
	// The harness that delivers again is started first: its start must
	// not eat into the killed one's in-progress window.
	again := startPowertoolsHarness(tb, env.proxy.endpoint, table)
	const remaining = 3 * time.Second
	killed.startInvoke(tb, event, remaining, target)
	benchWaitFor(tb, time.Minute, "the platform commits the harness's create", func() bool { return sb.Stats().Committed >= 1 })
	killed.proc.kill(tb)

	rec := again.record(tb, event)
	if rec.Status != "INPROGRESS" || rec.InProgressExpiration == 0 {
		tb.Fatalf("record after the kill = %+v, want INPROGRESS with an in-progress expiration", rec)
	}
	expiry := time.UnixMilli(rec.InProgressExpiration)
	if left := time.Until(expiry); left > 500*time.Millisecond {
		early := again.invoke(tb, event, time.Minute, target)
		if early.Error == nil || early.Error.Name != "IdempotencyAlreadyInProgressError" {
			tb.Errorf("delivery before in_progress_expiration = %v, want IdempotencyAlreadyInProgressError", early)
		}
	} else {
		tb.Logf("the machine is slow: %s left of the in-progress window, too little to deliver inside it", left)
	}
	time.Sleep(time.Until(expiry) + 50*time.Millisecond)
	late := again.invoke(tb, event, time.Minute, target)
	if late.Error != nil || late.Result["remote_id"] == nil {
		tb.Fatalf("delivery after in_progress_expiration = %v, want the handler's result", late)
	}
	return platformCountsOf(sb)
}

// runSideEffectScenarios runs every scenario (as subtests of t, or in turn
// in a benchmark) and returns the side-effect counter of each, by side and
// fault. A count other than the scenario's want fails tb.
func runSideEffectScenarios(tb testing.TB, env *benchEnv) map[[2]string]int {
	tb.Helper()
	got := map[[2]string]int{}
	for _, sc := range sideEffectScenarios {
		check := func(tb testing.TB) {
			tb.Helper()
			counts := sc.run(tb, env)
			if diff := cmp.Diff(sc.want, counts); diff != "" {
				tb.Errorf("%s: platform counts (-want +got):\n%s", sc.name, diff)
			}
			got[[2]string{sc.side, sc.fault}] = counts.Committed
		}
		if t, ok := tb.(*testing.T); ok {
			t.Run(sc.name, func(t *testing.T) { check(t) })
			continue
		}
		check(tb)
	}
	return got
}

// sandboxCredential is the credential the sandbox issued to acct.
func sandboxCredential(acct sandbox.Account) platform.Credential {
	return platform.Credential{AccessToken: acct.AccessToken, RefreshToken: acct.RefreshToken}
}
