package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/awsruntime"
	"oncepost/shared/awsruntime/stacktest"
	"oncepost/shared/clocktest"
	"oncepost/shared/dynamostore"
	"oncepost/shared/dynamostore/streamtest"
	"oncepost/shared/emulatortest"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqsesm"
	"oncepost/shared/webhook"
)

// request is one request a receiver got.
type request struct {
	header http.Header
	body   []byte
}

// receiver is a webhook receiver on 127.0.0.1 answering each request with
// the status answer gives (by request number, from 1).
type receiver struct {
	srv    *httptest.Server
	answer func(n int) int

	mu  sync.Mutex
	got []request
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	t.Helper()
	r := &receiver{answer: answer}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, request{header: req.Header.Clone(), body: body})
		n := len(r.got)
		r.mu.Unlock()
		w.WriteHeader(r.answer(n))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.got...)
}

// rig is the webhooks function on the shared stack, fed by a played
// event source mapping, its clock in the test's hands.
type rig struct {
	stack  *stacktest.Stack
	events *stacktest.Events
	clock  *clocktest.Clock
	esm    *sqsesm.Mapping
	// webhooks is the use case as the runtime wires it.
	webhooks *publishing.QueuedWebhooks
	// sqsAhead translates SQS's clock, which a test cannot set, into the
	// test's: the played mapping adds it to every record's SentTimestamp
	// (set it to how far the test's clock is ahead of the real one when a
	// message is sent).
	sqsAhead time.Duration

	mu       sync.Mutex
	verdicts []publishing.WebhookVerdict
	records  []events.SQSMessage
}

// recording records the verdicts of the attempts.
type recording struct {
	attempter
	r *rig
}

func (a recording) Attempt(ctx context.Context, m publishing.WebhookMessage, attempt int, start time.Time) publishing.WebhookVerdict {
	v := a.attempter.Attempt(ctx, m, attempt, start)
	a.r.mu.Lock()
	a.r.verdicts = append(a.r.verdicts, v)
	a.r.mu.Unlock()
	return v
}

func newRig(t *testing.T, stack *stacktest.Stack, ev *stacktest.Events, start time.Time) *rig {
	t.Helper()
	r := &rig{stack: stack, events: ev, clock: clocktest.New(start)}
	rt := &awsruntime.Runtime{Store: stack.Store, Now: r.clock.Now, Logger: slog.New(slog.DiscardHandler)}
	r.webhooks = rt.QueuedWebhooks(webhook.NewSender(webhook.Options{Now: r.clock.Now}))
	h := handler{batches: ev.WebhookQueue, webhooks: recording{r.webhooks, r}, log: rt.Logger, need: time.Second}
	r.esm = &sqsesm.Mapping{Client: stack.SQS, QueueURL: ev.WebhookQueueURL, QueueARN: "arn:aws:sqs:us-east-1:000000000000:webhooks", BatchSize: 1,
		Function: func(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
			r.mu.Lock()
			for i, rec := range e.Records {
				if ms, err := strconv.ParseInt(rec.Attributes["SentTimestamp"], 10, 64); err == nil && r.sqsAhead != 0 {
					e.Records[i].Attributes["SentTimestamp"] = strconv.FormatInt(ms+r.sqsAhead.Milliseconds(), 10)
				}
			}
			r.records = append(r.records, e.Records...)
			r.mu.Unlock()
			return h.handle(ctx, e)
		}}
	return r
}

// poll is one receive of the mapping: at most one message, attempted.
func (r *rig) poll(t *testing.T) sqsesm.Result {
	t.Helper()
	res, err := r.esm.PollOnce(context.Background())
	if err != nil || res.InvokeErr != nil {
		t.Fatalf("poll: %v, %v", err, res.InvokeErr)
	}
	return res
}

func (r *rig) lastVerdict(t *testing.T) publishing.WebhookVerdict {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.verdicts) == 0 {
		t.Fatal("no attempt was made")
	}
	return r.verdicts[len(r.verdicts)-1]
}

// comeBack plays the time until the last message's next try: it checks
// the handler hid the message (the queue's own visibility is 0, so only
// the handler's ChangeMessageVisibility hides it), moves the clock by d
// and makes the message visible.
func (r *rig) comeBack(t *testing.T, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	out, err := r.stack.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(r.events.WebhookQueueURL), MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 0 {
		t.Fatalf("a failed delivery is visible at once: the handler did not hide it until its next try")
	}
	r.clock.Advance(d)
	r.mu.Lock()
	receipt := r.records[len(r.records)-1].ReceiptHandle
	r.mu.Unlock()
	if _, err := r.stack.SQS.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(r.events.WebhookQueueURL), ReceiptHandle: aws.String(receipt), VisibilityTimeout: 0,
	}); err != nil {
		t.Fatal(err)
	}
}

// subscribe stores a subscription to url (a receiver on 127.0.0.1, so
// AllowPrivate) with a new secret.
func subscribe(t *testing.T, stack *stacktest.Stack, id, url string, at time.Time) publishing.Subscription {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	s := publishing.Subscription{ID: id, URL: url, Secret: "whsec_" + base64.StdEncoding.EncodeToString(key), AllowPrivate: true, CreatedAt: at}
	if err := stack.Store.AddSubscription(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

// enqueue queues a delivery of a post.published event for sub, made at
// the rig's now, as the notifier does.
func (r *rig) enqueue(t *testing.T, sub publishing.Subscription, p post.ID) publishing.Event {
	t.Helper()
	now := r.clock.Now()
	ev, _ := publishing.TargetEvent(p, post.Target{Status: post.Scheduled}, post.Target{Account: "acct", Slot: now, Status: post.Published, RemoteID: "r1", UpdatedAt: now})
	body, err := publishing.WebhookMessage{Event: ev, Subscription: sub.ID, CreatedAt: now}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.events.WebhookQueue.Send(context.Background(), body, 0); err != nil {
		t.Fatal(err)
	}
	return ev
}

// verify checks requests with the reference verifier (npm
// standardwebhooks, run by testdata/verify.cjs) and returns its verdicts.
func verify(t *testing.T, secret string, reqs []request) []string {
	t.Helper()
	modules := filepath.Join(emulatortest.ModuleRoot(t), "infra", "emulators", "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "standardwebhooks", "package.json")); err != nil {
		emulatortest.Unavailable(t, "the reference verifier standardwebhooks is not installed in infra/emulators: run `"+emulatortest.InstallCommand+"`")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		emulatortest.Unavailable(t, "node is not on PATH; the reference verifier needs it")
	}
	type item struct {
		Secret  string            `json:"secret"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	var in []item
	for _, r := range reqs {
		h := map[string]string{}
		for _, k := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
			h[k] = r.header.Get(k)
		}
		in = append(in, item{Secret: secret, Headers: h, Body: string(r.body)})
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join("testdata", "verify.cjs"), modules)
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("verify.cjs: %v", err)
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("verify.cjs answered %s: %v", out, err)
	}
	return got
}

// The webhooks function's cases share one stack; the webhook queue's own
// visibility is 0, so a message is hidden only when the handler hides it.
func TestWebhooks(t *testing.T) {
	stack := stacktest.New(t)
	ev := stack.Events(t)
	if _, err := stack.SQS.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{
		QueueUrl: aws.String(ev.WebhookQueueURL), Attributes: map[string]string{string(types.QueueAttributeNameVisibilityTimeout): "0"},
	}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		test func(t *testing.T, stack *stacktest.Stack, ev *stacktest.Events)
	}{
		// First: the notifier fans out to every subscription there is.
		{"a published target reaches the receiver signed", testPublishedReachesTheReceiverSigned},
		{"a receiver failing three times gets the fourth try", testFailingThreeTimesThenDelivered},
		{"410 disables the subscription", testGoneDisables},
		{"given up after 24 h, redriven for another 24 h", testExpiredThenRedriven},
		{"removed subscriptions and bad messages", testRemovedAndUndecodable},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.test(t, stack, ev) })
	}
}

// A target published in dynamostore (the change read back by streamtest,
// as the stream would carry it) goes through the notifier — built and run
// under the RIE unless -short, else its steps in the test — onto the
// webhook queue, and the webhooks function sends it: the receiver gets
// the event, signed as the reference verifier checks, webhook-id the
// event's id.
func testPublishedReachesTheReceiverSigned(t *testing.T, stack *stacktest.Stack, ev *stacktest.Events) {
	ctx := context.Background()
	now := time.Now().UTC()
	rcv := newReceiver(t, func(int) int { return http.StatusNoContent })
	sub := subscribe(t, stack, "wh_chain", rcv.srv.URL+"/hook", now)
	r := newRig(t, stack, ev, now)
	p := stack.Schedule(t, "p-chain", "hello", now.Add(time.Minute), "acct-a")
	rec := streamtest.New(stack.DynamoDB, stacktest.Prefix+dynamostore.PostsTable)
	if err := rec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := stack.Store.UpdateTarget(ctx, p.ID, "acct-a", post.TargetUpdate{Status: post.Published, RemoteID: "109", At: now}); err != nil {
		t.Fatal(err)
	}
	recs, err := rec.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, ok, err := dynamostore.RecordEvent(recs[0])
	if err != nil || !ok {
		t.Fatalf("RecordEvent: %v, %v", ok, err)
	}
	if testing.Short() {
		for _, m := range publishing.WebhookMessages(want, []publishing.Subscription{sub}, now) {
			body, _ := m.Encode()
			if _, err := ev.WebhookQueue.Send(ctx, body, 0); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		env := stack.Env()
		maps.Copy(env, ev.Env())
		invoke := emulatortest.Lambda(t, emulatortest.BuildBootstrap(t, "../notifier"), env)
		payload, _ := json.Marshal(events.DynamoDBEvent{Records: recs})
		if out := invoke(payload); string(out) != `{"batchItemFailures":[]}` {
			t.Fatalf("the notifier answered %s", out)
		}
	}
	if res := r.poll(t); res.Received != 1 || res.Failed != 0 {
		t.Fatalf("poll %+v, want one delivery, done", res)
	}
	got := rcv.requests()
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	if v := verify(t, sub.Secret, got); !cmp.Equal(v, []string{"verified"}) {
		t.Errorf("reference verifier: %v", v)
	}
	if id := got[0].header.Get("webhook-id"); id != want.ID {
		t.Errorf("webhook-id %q, want the event's id %q", id, want.ID)
	}
	wantBody, _ := want.Body()
	if !bytes.Equal(got[0].body, wantBody) {
		t.Errorf("body %s, want %s", got[0].body, wantBody)
	}
	r.assertEmpty(t)
}

// A receiver failing three times gets the event on the fourth try, with
// the same webhook-id and body and a timestamp of each attempt's: between
// tries the message is hidden for the backoff (publishing's schedule from
// the delivery's creation), and the clock is moved by it, not slept.
func testFailingThreeTimesThenDelivered(t *testing.T, stack *stacktest.Stack, ev *stacktest.Events) {
	start := time.Now().UTC().Add(-time.Minute)
	rcv := newReceiver(t, func(n int) int {
		if n <= 3 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	sub := subscribe(t, stack, "wh_flaky", rcv.srv.URL, start)
	r := newRig(t, stack, ev, start)
	want := r.enqueue(t, sub, "p-flaky")
	var wantDelays []time.Duration
	for attempt := 1; attempt <= 4; attempt++ {
		if res := r.poll(t); res.Received != 1 {
			t.Fatalf("attempt %d: received %d messages", attempt, res.Received)
		}
		v := r.lastVerdict(t)
		if attempt == 4 {
			if !v.Done {
				t.Fatalf("the fourth attempt: %+v, want done", v)
			}
			break
		}
		next, ok := publishing.WebhookRetryAt(start, attempt, r.clock.Now(), 0)
		if !ok || v.Retry != next.Sub(r.clock.Now()) {
			t.Fatalf("attempt %d: verdict %+v, want a retry in %s", attempt, v, next.Sub(r.clock.Now()))
		}
		wantDelays = append(wantDelays, v.Retry)
		r.comeBack(t, v.Retry)
	}
	got := rcv.requests()
	if len(got) != 4 {
		t.Fatalf("%d requests, want 4", len(got))
	}
	wantBody, _ := want.Body()
	var stamps []string
	for i, req := range got {
		if id := req.header.Get("webhook-id"); id != want.ID {
			t.Errorf("attempt %d: webhook-id %q, want %q on every attempt", i+1, id, want.ID)
		}
		if !bytes.Equal(req.body, wantBody) {
			t.Errorf("attempt %d: another body", i+1)
		}
		stamps = append(stamps, req.header.Get("webhook-timestamp"))
	}
	var wantStamps []string
	at := start
	for i := range 4 {
		wantStamps = append(wantStamps, itoa(at.Unix()))
		if i < len(wantDelays) {
			at = at.Add(wantDelays[i])
		}
	}
	if diff := cmp.Diff(wantStamps, stamps); diff != "" {
		t.Errorf("webhook-timestamps: each attempt's own (-want +got):\n%s", diff)
	}
	for i, v := range verify(t, sub.Secret, got) {
		if v != "verified" {
			t.Errorf("attempt %d: reference verifier: %s", i+1, v)
		}
	}
	r.assertEmpty(t)
}

// assertEmpty checks the queue and its dead-letter queue are empty (the
// queue's visibility is 0: whatever is left is visible).
func (r *rig) assertEmpty(t *testing.T) {
	t.Helper()
	for _, url := range []string{r.events.WebhookQueueURL, r.events.WebhookDeadLetterURL} {
		out, err := r.stack.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 0})
		if err != nil || len(out.Messages) != 0 {
			t.Errorf("%s holds %d messages (%v), want none", url, len(out.Messages), err)
		}
	}
}

// takeDead lists the dead letters (as `oncepost dlq list --queue
// webhooks` does) and empties the dead-letter queue.
func (r *rig) takeDead(t *testing.T) []publishing.DeadLetter {
	t.Helper()
	ctx := context.Background()
	dls, err := r.events.WebhookQueue.DeadLetters(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.stack.SQS.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(r.events.WebhookDeadLetterURL)}); err != nil {
		t.Fatal(err)
	}
	return dls
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// A 410 disables the subscription and dead-letters the delivery with
// the reason; a later delivery to it is dead-lettered unsent.
func testGoneDisables(t *testing.T, stack *stacktest.Stack, ev *stacktest.Events) {
	ctx := context.Background()
	now := time.Now().UTC()
	rcv := newReceiver(t, func(int) int { return http.StatusGone })
	sub := subscribe(t, stack, "wh_gone", rcv.srv.URL, now)
	r := newRig(t, stack, ev, now)
	r.enqueue(t, sub, "p-gone-1")
	r.poll(t)
	stored, err := stack.Store.GetSubscription(ctx, sub.ID)
	if err != nil || !stored.Disabled || !strings.Contains(stored.DisabledReason, "410") {
		t.Errorf("after a 410: %+v, %v; want it disabled", stored, err)
	}
	r.enqueue(t, sub, "p-gone-2")
	r.poll(t)
	if n := len(rcv.requests()); n != 1 {
		t.Errorf("%d requests, want 1: nothing is sent to a disabled subscription", n)
	}
	dls := r.takeDead(t)
	if len(dls) != 2 {
		t.Fatalf("dead letters %+v; want 2", dls)
	}
	for i, prefix := range []string{publishing.ReasonReceiverGone, publishing.ReasonSubscriptionDisabled} {
		if !strings.HasPrefix(dls[i].Reason, prefix+": ") {
			t.Errorf("dead letter %d: reason %q, want %s", i, dls[i].Reason, prefix)
		}
	}
	r.assertEmpty(t)
}

// Past its 24 hours a failing delivery is dead-lettered with the reason
// and the last error, where `oncepost dlq list --queue webhooks` sees
// it; redriven (`dlq redrive --queue webhooks`), it is tried again with
// the same webhook-id and 24 hours from the redrive: a failure then is
// retried, not dead-lettered again.
func testExpiredThenRedriven(t *testing.T, stack *stacktest.Stack, ev *stacktest.Events) {
	ctx := context.Background()
	start := time.Now().UTC()
	var up bool
	var mu sync.Mutex
	rcv := newReceiver(t, func(int) int {
		mu.Lock()
		defer mu.Unlock()
		if up {
			return http.StatusOK
		}
		return http.StatusServiceUnavailable
	})
	sub := subscribe(t, stack, "wh_down", rcv.srv.URL, start)
	r := newRig(t, stack, ev, start)
	want := r.enqueue(t, sub, "p-down")
	r.poll(t)
	if v := r.lastVerdict(t); v.Retry <= 0 {
		t.Fatalf("first attempt: %+v, want a retry", v)
	}
	r.comeBack(t, 24*time.Hour+time.Minute)
	r.poll(t)
	v := r.lastVerdict(t)
	if !strings.HasPrefix(v.DeadReason, publishing.ReasonWebhookExpired+": 2 attempts") || !strings.Contains(v.DeadReason, "503") {
		t.Fatalf("past 24 h: %+v, want dead-lettered as expired with the last error", v)
	}
	dls, err := ev.WebhookQueue.DeadLetters(ctx, 0)
	if err != nil || len(dls) != 1 || dls[0].Reason != v.DeadReason {
		t.Fatalf("dead letters %+v, %v", dls, err)
	}
	dead, err := publishing.DecodeWebhookMessage(dls[0].Body)
	if err != nil || dead.Event.ID != want.ID || dead.Subscription != sub.ID {
		t.Fatalf("dead letter body %s: %v", dls[0].Body, err)
	}

	// Redriven a day after the delivery was made (SQS's clock put in the
	// test's): tried again, and still inside its new 24 hours.
	r.sqsAhead = r.clock.Now().Sub(time.Now())
	if err := ev.WebhookQueue.Redrive(ctx, dls[0].ID); err != nil {
		t.Fatal(err)
	}
	if res := r.poll(t); res.Received != 1 || r.lastVerdict(t).Retry <= 0 {
		t.Fatalf("the redriven delivery failing: %+v, %+v; want a retry, not dead again", res, r.lastVerdict(t))
	}
	mu.Lock()
	up = true
	mu.Unlock()
	r.comeBack(t, r.lastVerdict(t).Retry)
	if r.poll(t); !r.lastVerdict(t).Done {
		t.Fatalf("the redriven delivery: %+v, want delivered", r.lastVerdict(t))
	}
	got := rcv.requests()
	if len(got) != 4 || got[3].header.Get("webhook-id") != want.ID {
		t.Errorf("%d requests, the last with webhook-id %q; want 4, all %q", len(got), got[len(got)-1].header.Get("webhook-id"), want.ID)
	}
	r.assertEmpty(t)
}

// A delivery to a removed subscription is dropped unsent; a message that
// is not a delivery is dead-lettered with the reason, the others of its
// batch unaffected.
func testRemovedAndUndecodable(t *testing.T, stack *stacktest.Stack, ev *stacktest.Events) {
	ctx := context.Background()
	now := time.Now().UTC()
	rcv := newReceiver(t, func(int) int { return http.StatusOK })
	sub := subscribe(t, stack, "wh_removed", rcv.srv.URL, now)
	r := newRig(t, stack, ev, now)
	r.enqueue(t, sub, "p-removed")
	if err := stack.Store.RemoveSubscription(ctx, sub.ID); err != nil {
		t.Fatal(err)
	}
	r.poll(t)
	if v := r.lastVerdict(t); !v.Done || len(rcv.requests()) != 0 {
		t.Errorf("a removed subscription's delivery: %+v, %d requests; want dropped unsent", v, len(rcv.requests()))
	}
	if _, err := ev.WebhookQueue.Send(ctx, []byte(`{"event":{"id":"evt_x","type":"post.exploded"},"subscription_id":"wh_1","created_at":"2026-03-14T09:00:00Z"}`), 0); err != nil {
		t.Fatal(err)
	}
	r.poll(t)
	if dls := r.takeDead(t); len(dls) != 1 || !strings.HasPrefix(dls[0].Reason, publishing.ReasonUndecodableWebhook+": webhook message: event.type \"post.exploded\"") {
		t.Fatalf("dead letters %+v; want the bad message with its reason", dls)
	}
	r.assertEmpty(t)
}
