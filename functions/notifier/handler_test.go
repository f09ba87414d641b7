package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/awsruntime/stacktest"
	"oncepost/shared/dynamostore"
	"oncepost/shared/dynamostore/streamtest"
	"oncepost/shared/ebevents"
	"oncepost/shared/ebevents/ebeventstest"
	"oncepost/shared/emulatortest"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// world is a stack (dynalite, fauxqs, a fake EventBridge) with
// subscriptions, a post of two targets, and the tables' stream played by
// streamtest.
type world struct {
	stack  *stacktest.Stack
	events *stacktest.Events
	rec    *streamtest.Recorder
	post   post.Post
	now    time.Time
}

// newStack is the stack the notifier's tests share, with three
// subscriptions: one wanting everything, one wanting failures only, one
// disabled.
func newStack(t *testing.T) *stacktest.Stack {
	t.Helper()
	stack := stacktest.New(t)
	now := time.Now().UTC()
	for _, s := range []publishing.Subscription{
		{ID: "wh_all", URL: "https://all.example/hook", Secret: "whsec_YWxs", CreatedAt: now},
		{ID: "wh_failed", URL: "https://failed.example/hook", Secret: "whsec_ZmFpbA==", CreatedAt: now, Events: []publishing.EventType{publishing.EventFailed}},
		{ID: "wh_off", URL: "https://off.example/hook", Secret: "whsec_b2Zm", CreatedAt: now, Disabled: true, DisabledReason: "410"},
	} {
		if err := stack.Store.AddSubscription(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	return stack
}

// newWorld makes a post of two targets on the shared stack, a fake
// EventBridge of its own, and an empty webhook queue.
func newWorld(t *testing.T, stack *stacktest.Stack) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{stack: stack, now: time.Now().UTC().Truncate(time.Second)}
	w.events = w.stack.Events(t)
	w.queued(t)
	w.post = w.stack.Schedule(t, post.ID("p-"+t.Name()), "hello", w.now.Add(time.Minute), "acct-a", "acct-b")
	w.rec = streamtest.New(w.stack.DynamoDB, stacktest.Prefix+dynamostore.LedgerTable, stacktest.Prefix+dynamostore.PostsTable, stacktest.Prefix+dynamostore.WorkspaceTable)
	if err := w.rec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return w
}

// The notifier's cases share one stack (its emulators take a second or
// two to start).
func TestNotifier(t *testing.T) {
	stack := newStack(t)
	for _, tt := range []struct {
		name string
		test func(t *testing.T, w *world)
	}{
		{"published becomes one event per subscription", testPublishedBecomesOneEventPerSubscription},
		{"partial PutEvents failure resends only failed entries", testPartialPutEventsFailureResendsOnlyFailedEntries},
		{"failed records are reported", testFailedRecordsAreReported},
		{"queue and store failures are reported", testQueueAndStoreFailuresAreReported},
		{"under the runtime interface emulator", testUnderTheRuntimeInterfaceEmulator},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.test(t, newWorld(t, stack)) })
	}
}

// move moves a target and returns the stream records of the change.
func (w *world) move(t *testing.T, account post.AccountID, to post.TargetStatus, at time.Time) []events.DynamoDBEventRecord {
	t.Helper()
	ctx := context.Background()
	if _, err := w.stack.Store.UpdateTarget(ctx, w.post.ID, account, post.TargetUpdate{Status: to, RemoteID: "r-" + string(account), Reason: "why", At: at}); err != nil {
		t.Fatal(err)
	}
	recs, err := w.rec.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// handler is the notifier as main wires it, on the world's parts.
func (w *world) handler(t *testing.T) handler {
	t.Helper()
	cfg := emulatortest.AWSConfig(t, w.events.Bus.URL())
	cfg.RetryMaxAttempts, cfg.Retryer = 1, nil
	bus, err := ebevents.New(eventbridge.NewFromConfig(cfg), stacktest.BusName, ebevents.Options{Pause: func(int) time.Duration { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	return handler{routes: w.stack.Store, webhook: w.events.WebhookQueue, bus: bus, now: func() time.Time { return w.now }, log: slog.New(slog.DiscardHandler)}
}

// queued drains the webhook queue: the messages' deliveries.
func (w *world) queued(t *testing.T) []publishing.WebhookMessage {
	t.Helper()
	ctx := context.Background()
	var out []publishing.WebhookMessage
	for {
		msgs, err := w.events.WebhookQueue.Receive(ctx, 10, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			return out
		}
		for _, m := range msgs {
			wm, err := publishing.DecodeWebhookMessage(m.Body)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, wm)
			if err := w.events.WebhookQueue.Ack(ctx, m.Receipt); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func handle(t *testing.T, h handler, recs ...events.DynamoDBEventRecord) []string {
	t.Helper()
	resp, err := h.handle(context.Background(), events.DynamoDBEvent{Records: recs})
	if err != nil {
		t.Fatalf("handle returned an error (the whole batch would be retried): %v", err)
	}
	var seqs []string
	for _, f := range resp.BatchItemFailures {
		seqs = append(seqs, f.ItemIdentifier)
	}
	return seqs
}

// A target published in the store becomes one post.published event: on
// the bus (source oncepost, detail-type the type, detail the event) and
// queued for the one subscription that wants it (not the one that wants
// failures only, not the disabled one). The same records seen again (the
// stream redelivers) give the same event id.
func testPublishedBecomesOneEventPerSubscription(t *testing.T, w *world) {
	h := w.handler(t)
	at := w.now.Add(time.Minute + 2*time.Second)
	recs := w.move(t, "acct-a", post.Published, at)
	if failed := handle(t, h, recs...); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	stored, err := w.stack.Store.GetPost(context.Background(), w.post.ID)
	if err != nil {
		t.Fatal(err)
	}
	want, ok := publishing.TargetEvent(w.post.ID, w.post.Targets[0], stored.Targets[0])
	if !ok {
		t.Fatal("publishing.TargetEvent derived no event from the store's change")
	}
	got := w.queued(t)
	if diff := cmp.Diff([]publishing.WebhookMessage{{Event: want, Subscription: "wh_all", CreatedAt: w.now}}, got); diff != "" {
		t.Errorf("queued deliveries (-want +got):\n%s", diff)
	}
	entries := w.events.Bus.Accepted()
	if len(entries) != 1 {
		t.Fatalf("%d bus entries, want 1", len(entries))
	}
	var detail publishing.Event
	if err := json.Unmarshal([]byte(entries[0].Detail), &detail); err != nil {
		t.Fatal(err)
	}
	if entries[0].Source != "oncepost" || entries[0].DetailType != "post.published" || entries[0].EventBusName != stacktest.BusName || !cmp.Equal(want, detail) {
		t.Errorf("bus entry %+v, want the event %+v", entries[0], want)
	}

	// Redelivered: the same event, the same id.
	if failed := handle(t, h, recs...); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	again := w.queued(t)
	if len(again) != 1 || again[0].Event.ID != want.ID {
		t.Errorf("redelivered records queued %+v, want the event %s again", again, want.ID)
	}

	// A failure goes to both subscriptions that want it.
	if failed := handle(t, h, w.move(t, "acct-b", post.Failed, at)...); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	var subs []string
	for _, m := range w.queued(t) {
		subs = append(subs, m.Subscription)
		if m.Event.Type != publishing.EventFailed || m.Event.Account != "acct-b" {
			t.Errorf("queued %+v, want acct-b's post.failed", m.Event)
		}
	}
	slices.Sort(subs)
	if diff := cmp.Diff([]string{"wh_all", "wh_failed"}, subs); diff != "" {
		t.Errorf("subscriptions of post.failed (-want +got):\n%s", diff)
	}
}

// A partial PutEvents failure sends again only the entries that failed:
// each event is on the bus once, and no record fails.
func testPartialPutEventsFailureResendsOnlyFailedEntries(t *testing.T, w *world) {
	h := w.handler(t)
	at := w.now.Add(time.Minute)
	recs := append(w.move(t, "acct-a", post.Published, at), w.move(t, "acct-b", post.Held, at)...)
	w.events.Bus.FailEntries(func(call, i int, _ ebeventstest.Entry) bool { return call == 0 && i == 1 })
	if failed := handle(t, h, recs...); len(failed) != 0 {
		t.Fatalf("failed records %v", failed)
	}
	calls := w.events.Bus.Calls()
	if len(calls) != 2 || len(calls[0]) != 2 || len(calls[1]) != 1 || calls[1][0] != calls[0][1] {
		t.Fatalf("PutEvents calls %+v, want both entries, then the failed one alone", calls)
	}
	var types []string
	for _, e := range w.events.Bus.Accepted() {
		types = append(types, e.DetailType)
	}
	if diff := cmp.Diff([]string{"post.published", "post.held"}, types); diff != "" {
		t.Errorf("events on the bus (-want +got):\n%s", diff)
	}
}

// A record whose event cannot be put on the bus (after the resends), or
// whose image does not decode, is reported: the stream retries from it.
// The records before it are done (their deliveries queued); a record
// causing no event costs nothing.
func testFailedRecordsAreReported(t *testing.T, w *world) {
	h := w.handler(t)
	at := w.now.Add(time.Minute)
	first := w.move(t, "acct-a", post.Published, at)
	second := w.move(t, "acct-b", post.Failed, at)
	w.events.Bus.FailEntries(func(_, _ int, e ebeventstest.Entry) bool { return e.DetailType == "post.failed" })
	if failed := handle(t, h, append(first, second...)...); !cmp.Equal(failed, []string{second[0].Change.SequenceNumber}) {
		t.Errorf("failed records %v, want the second's %s", failed, second[0].Change.SequenceNumber)
	}
	w.events.Bus.FailEntries(nil)
	w.queued(t)

	bad := second[0]
	bad.Change.NewImage = map[string]events.DynamoDBAttributeValue{"post": events.NewStringAttribute("p"), "item": events.NewStringAttribute("target#acct-b"),
		"status": events.NewStringAttribute("failed"), "updated_at": events.NewStringAttribute("not a time")}
	bad.Change.SequenceNumber = "bad-seq"
	if failed := handle(t, h, first[0], bad, second[0]); !cmp.Equal(failed, []string{"bad-seq"}) {
		t.Errorf("failed records %v, want the undecodable one", failed)
	}
	if got := w.queued(t); len(got) != 1 || got[0].Event.Type != publishing.EventPublished {
		t.Errorf("queued %+v, want only the first record's delivery", got)
	}

	// No event: no call.
	calls := len(w.events.Bus.Calls())
	w.stack.Schedule(t, "p-other", "scheduled", at, "acct-a") // a new post: nothing to tell
	recs, err := w.rec.Changes(context.Background())
	if err != nil || len(recs) == 0 {
		t.Fatalf("records of a new post: %d, %v", len(recs), err)
	}
	if failed := handle(t, h, recs...); len(failed) != 0 || len(w.events.Bus.Calls()) != calls {
		t.Errorf("a change causing no event: failed %v, %d bus calls made", failed, len(w.events.Bus.Calls())-calls)
	}
}

// queueFailing is a webhook queue that sends nothing: SQS failing.
type queueFailing struct{}

func (queueFailing) SendBatch(_ context.Context, msgs []publishing.Outgoing) ([]string, error) {
	return make([]string, len(msgs)), errors.New("sqs: service unavailable")
}

// routesFailing cannot read the subscriptions.
type routesFailing struct{}

func (routesFailing) ListSubscriptionsWithoutSecrets(context.Context) ([]publishing.Subscription, error) {
	return nil, errors.New("dynamodb: throttled")
}

// Deliveries that could not be queued, or subscriptions that could not
// be read, fail the first record with an event (the SQS and DynamoDB
// failures are played by the ports: the emulators do not fail on
// demand).
func testQueueAndStoreFailuresAreReported(t *testing.T, w *world) {
	at := w.now.Add(time.Minute)
	noEvent := w.move(t, "acct-a", post.Triggered, at)
	published := w.move(t, "acct-a", post.Published, at)
	h := w.handler(t)
	h.webhook = queueFailing{}
	if failed := handle(t, h, append(noEvent, published...)...); !cmp.Equal(failed, []string{published[0].Change.SequenceNumber}) {
		t.Errorf("SQS failing: failed records %v, want the published record's", failed)
	}
	h = w.handler(t)
	h.routes = routesFailing{}
	if failed := handle(t, h, append(noEvent, published...)...); !cmp.Equal(failed, []string{published[0].Change.SequenceNumber}) {
		t.Errorf("store failing: failed records %v, want the published record's", failed)
	}
}
