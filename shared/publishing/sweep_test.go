package publishing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/emf"
	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

func (e *env) trigger() *publishing.Trigger {
	return &publishing.Trigger{Posts: e.store, Queue: e.queue, Now: e.clock.Now, Logger: e.pub.Logger}
}

func (e *env) sweeper(metrics *bytes.Buffer) *publishing.Sweeper {
	return &publishing.Sweeper{
		Ledger: e.store, Posts: e.store, Queue: e.queue, Trigger: e.trigger(), Publisher: e.pub,
		Metrics: &emf.Emitter{W: metrics, Namespace: "oncepost", Dimensions: map[string]string{"Runtime": "test"}, Now: e.clock.Now},
		Now:     e.clock.Now, Logger: e.pub.Logger,
	}
}

// scheduleAt stores a scheduled (not yet triggered) post due at slot.
func (e *env) scheduleAt(id, body string, slot time.Time) publishing.Job {
	e.t.Helper()
	p := post.Post{ID: post.ID(id), Body: body, CreatedAt: e.clock.Now(),
		Targets: []post.Target{{Account: e.account.ID, Slot: slot, Status: post.Scheduled, UpdatedAt: e.clock.Now()}}}
	if err := e.store.CreatePost(context.Background(), p); err != nil {
		e.t.Fatal(err)
	}
	return publishing.Job{Post: p.ID, Account: e.account.ID, Slot: slot}
}

func (e *env) queued() []publishing.Job {
	e.t.Helper()
	msgs, err := e.queue.Receive(context.Background(), 100, time.Millisecond)
	if err != nil {
		e.t.Fatal(err)
	}
	var jobs []publishing.Job
	for _, m := range msgs {
		j, err := publishing.DecodeJob(m.Body)
		if err != nil {
			e.t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	time.Sleep(5 * time.Millisecond) // let the 1 ms visibility lapse: they stay queued
	return jobs
}

func TestTriggerSendsThenMarksOnce(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	ctx := context.Background()
	slot := e.clock.Now().Add(time.Minute).Truncate(time.Second)
	job := e.scheduleAt("trig", "Quarterly results are out.", slot)
	later := e.scheduleAt("later", "Not yet.", slot.Add(time.Hour))
	cancelled := e.scheduleAt("cancelled", "Never.", slot)
	if _, err := e.store.UpdateTarget(ctx, cancelled.Post, cancelled.Account, post.TargetUpdate{Status: post.Cancelled, At: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	tr := e.trigger()
	if n, err := tr.FireDue(ctx, 100); err != nil || n != 0 {
		t.Fatalf("FireDue before the slot sent %d (err %v), want 0", n, err)
	}
	e.clock.Advance(time.Minute)
	if n, err := tr.FireDue(ctx, 100); err != nil || n != 1 {
		t.Fatalf("FireDue at the slot sent %d (err %v), want 1", n, err)
	}
	// A duplicate schedule firing (at-least-once upstream) sends nothing more.
	if sent, err := tr.Fire(ctx, job); err != nil || sent {
		t.Fatalf("second Fire sent=%v err=%v, want nothing sent", sent, err)
	}
	if diff := cmp.Diff([]publishing.Job{job}, e.queued()); diff != "" {
		t.Errorf("queued jobs (-want +got):\n%s", diff)
	}
	if tg := e.target(job); tg.Status != post.Triggered {
		t.Errorf("target %s, want triggered", tg.Status)
	}
	if tg := e.target(later); tg.Status != post.Scheduled {
		t.Errorf("later target %s, want scheduled", tg.Status)
	}
	// A stale trigger for an old slot (the post was rescheduled) sends nothing.
	if sent, _ := tr.Fire(ctx, publishing.TargetRef{Post: later.Post, Account: later.Account, Slot: slot}); sent {
		t.Errorf("Fire for a stale slot sent a job")
	}
}

func TestSweepRepairsWithoutSending(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	ctx := context.Background()

	// 1. A worker acquired and died before sending.
	dead := e.schedule("dead-worker", "Pool closed for cleaning.")
	p, _ := e.store.GetPost(ctx, dead.Post)
	deadEntry := ledger.NewEntry(ledger.PublishKey(string(dead.Account), string(dead.Post), dead.Slot), ledger.Publish,
		string(dead.Account), string(dead.Post), dead.Slot, platform.Fingerprint(p.Body, nil), "dead", e.clock.Now(), time.Minute)
	if err := e.store.Create(ctx, deadEntry); err != nil {
		t.Fatal(err)
	}
	// 2. An unknown entry whose confirm workflow never started.
	e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: 11 * unit})
	lost := e.schedule("lost-confirm", "Library opens late.")
	if out := e.publish(lost); out.Result != publishing.Confirming {
		t.Fatalf("setup: %+v", out)
	}
	e.flows.starts, e.flows.order = nil, nil // the start was lost
	// 3. A target triggered whose job never reached the queue.
	stuck := e.schedule("stuck", "Parking lot repainted.")
	// 4. A scheduled target whose schedule never fired.
	missed := e.scheduleAt("missed", "Snow day.", e.clock.Now().Truncate(time.Second))

	var metrics bytes.Buffer
	sw := e.sweeper(&metrics)
	// Young problems are not counted yet (except the missed schedule after a minute).
	rep, err := sw.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Alarming() {
		t.Errorf("fresh state alarms: %+v", rep)
	}

	e.clock.Advance(publishing.StaleAfter + time.Second)
	creates := e.sb.Stats().CreateRequests
	rep, err = sw.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e.sb.Stats().CreateRequests != creates {
		t.Fatalf("the sweeper sent to the platform")
	}
	// The dead worker's entry is moved to unknown and confirmed directly
	// (its target becomes publishing, so it is no longer stuck); the lost
	// confirm is restarted; the stuck target is requeued with the lost one.
	want := publishing.SweepReport{StalePending: 1, StaleUnknown: 1, StuckTargets: 2, MissedSchedules: 1,
		Requeued: 2, ConfirmsStarted: 2, Triggered: 1, OldestOpenAge: rep.OldestOpenAge}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Errorf("sweep report (-want +got):\n%s", diff)
	}
	if rep.OldestOpenAge < publishing.StaleAfter {
		t.Errorf("oldest open age %s, want > %s", rep.OldestOpenAge, publishing.StaleAfter)
	}
	wantFlows := []string{publishing.ConfirmName(e.entry(dead).Key, 1), publishing.ConfirmName(e.entry(lost).Key, 1)}
	if diff := cmp.Diff(wantFlows, e.flows.names(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("confirm workflows started (-want +got):\n%s", diff)
	}
	if en := e.entry(dead); en.State != ledger.Unknown || en.Reason != ledger.ReasonLeaseExpired {
		t.Errorf("dead worker's entry %s %q, want unknown lease_expired", en.State, en.Reason)
	}
	var line map[string]any
	lines := strings.Split(strings.TrimSpace(metrics.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &line); err != nil {
		t.Fatalf("metric line: %v", err)
	}
	for name, v := range map[string]float64{"StalePending": 1, "StaleUnknown": 1, "StuckTargets": 2, "MissedSchedules": 1} {
		if line[name] != v {
			t.Errorf("metric %s = %v, want %v", name, line[name], v)
		}
	}

	// The requeued and triggered jobs go through the publisher.
	e.drain()
	for _, j := range []publishing.Job{stuck, missed} {
		if tg := e.target(j); tg.Status != post.Published {
			t.Errorf("%s: target %s, want published", j.Post, tg.Status)
		}
	}
	if st := e.sb.Stats(); st.Duplicates != 0 {
		t.Errorf("sandbox counted %d duplicates", st.Duplicates)
	}
}

// A held post raises the alarm until an operator decides (G2).
func TestSweepAlarmsOnHeld(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	e.sb.InjectStatus(e.sbAcct.ID, "Already posted by hand.")
	job := e.schedule("dup", "Already posted by hand.")
	if out := e.publish(job); out.Result != publishing.Held {
		t.Fatalf("setup: %+v", out)
	}
	var metrics bytes.Buffer
	rep, err := e.sweeper(&metrics).Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.HeldTargets != 1 || !rep.Alarming() {
		t.Errorf("report %+v, want one held target and an alarm", rep)
	}
	if !strings.Contains(metrics.String(), `"HeldTargets":1`) {
		t.Errorf("metric line %s lacks HeldTargets 1", metrics.String())
	}
}

// At the top of the hour thousands of jobs wait their turn on the queue;
// their targets are triggered and, five minutes on, look stuck. Jobs that
// are in line must not be sent again (each copy lengthens the line): the
// sweeper re-enqueues stuck targets only when nothing waits to be
// received, i.e. when a job really may have been lost. They are counted
// either way.
func TestSweepDoesNotRequeueIntoABacklog(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	ctx := context.Background()
	inLine := e.schedule("in-line", "Waiting its turn.")
	e.enqueue(inLine)
	lost := e.schedule("lost", "Its job was lost.")
	missed := e.scheduleAt("missed", "Its schedule never fired.", e.clock.Now())
	e.clock.Advance(10 * time.Minute)
	var metrics bytes.Buffer
	sw := e.sweeper(&metrics)
	rep, err := sw.Sweep(ctx)
	if err != nil || rep.StuckTargets != 2 || rep.Requeued != 0 || rep.MissedSchedules != 1 || rep.Triggered != 0 {
		t.Fatalf("sweep with a backlog: stuck %d requeued %d, missed %d triggered %d (err %v), want 2 and 1 counted, nothing sent",
			rep.StuckTargets, rep.Requeued, rep.MissedSchedules, rep.Triggered, err)
	}
	if rep.QueueVisible != 1 {
		t.Errorf("sweep saw %d visible jobs, want 1", rep.QueueVisible)
	}
	e.drain() // the line moves: in-line is published
	if tg := e.target(inLine); tg.Status != post.Published {
		t.Fatalf("in-line target %s, want published", tg.Status)
	}
	rep, err = sw.Sweep(ctx)
	if err != nil || rep.StuckTargets != 1 || rep.Requeued != 1 || rep.Triggered != 1 {
		t.Fatalf("sweep with nothing in line: stuck %d requeued %d triggered %d (err %v), want the lost one re-enqueued, the missed one triggered",
			rep.StuckTargets, rep.Requeued, rep.Triggered, err)
	}
	jobs := e.queued()
	slices.SortFunc(jobs, func(a, b publishing.Job) int { return strings.Compare(string(a.Post), string(b.Post)) })
	if diff := cmp.Diff([]publishing.Job{lost, missed}, jobs); diff != "" {
		t.Errorf("queued (-want +got):\n%s", diff)
	}
}

// The gauges describe the store as the sweep found it, so they carry the
// sweep's start time: a sweep that starts at 12:00:58 and emits at
// 12:01:05 fills the 12:00 minute. Filed by the emission time, it would
// leave 12:00 without a datapoint, which the gauges' alarms count as
// breaching (TreatMissingData), and put two in 12:01.
func TestSweepGaugesCarryTheStartTime(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	start := time.Date(2026, 3, 1, 12, 0, 58, 0, time.UTC)
	e.clock.Set(start)
	var metrics bytes.Buffer
	sw := e.sweeper(&metrics)
	sw.Now = func() time.Time { // every look at the clock takes time
		now := e.clock.Now()
		e.clock.Advance(7 * time.Second)
		return now
	}
	if _, err := sw.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !e.clock.Now().After(start.Add(2 * time.Second)) {
		t.Fatalf("the clock did not move during the sweep (%s): the test proves nothing", e.clock.Now().Format(time.RFC3339))
	}
	var line struct {
		StalePending *float64
		AWS          struct{ Timestamp int64 } `json:"_aws"`
	}
	if err := json.Unmarshal(metrics.Bytes(), &line); err != nil || line.StalePending == nil {
		t.Fatalf("the sweep's metric line %q has no gauges (%v)", metrics.String(), err)
	}
	if got := time.UnixMilli(line.AWS.Timestamp).UTC(); !got.Equal(start) {
		t.Errorf("the gauges carry %s, want the sweep's start %s (emitted at %s)", got.Format(time.RFC3339), start.Format(time.RFC3339), e.clock.Now().Format(time.RFC3339))
	}
}
