package sqsqueue

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/sqsesm"
)

// TestDeliverySettlesEachMessageOfAnESMBatch plays the Lambda event source
// mapping (sqsesm) against fauxqs: a handler acks, retries, dead-letters
// or leaves each message of one batch, and an undecodable message never
// reaches it. Only the retried and the unsettled messages stay in the
// queue; the dead letters carry their reasons; the retried one, delivered
// again past MaxReceives, is dead-lettered on delivery.
func TestDeliverySettlesEachMessageOfAnESMBatch(t *testing.T) {
	e := newEnv(t)
	q := e.pair(t, pairSpec{opts: Options{MaxReceives: 1}})
	ctx := t.Context()
	for _, body := range []string{"ack", "retry", "bury", "leave"} {
		if _, err := q.Send(ctx, []byte(body), 0); err != nil {
			t.Fatal(err)
		}
	}
	sendRaw(t, e.client, q.url, "garbled", map[string]string{attrEncoding: "rot13"})

	var seen []string
	handle := func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		d := q.NewDelivery(ctx, ev.Records)
		for _, m := range d.Messages() {
			seen = append(seen, string(m.Body))
			var err error
			switch string(m.Body) {
			case "ack":
				err = d.Ack(ctx, m.Receipt)
			case "retry":
				err = d.Retry(ctx, m.Receipt, 2*time.Second)
			case "bury":
				err = d.DeadLetter(ctx, m.Receipt, "bad job: post_id is missing")
			case "leave":
				// The invocation ran out of time before this one.
			}
			if err != nil {
				t.Errorf("%s: %v", m.Body, err)
			}
		}
		if err := d.Ack(ctx, "not-a-receipt"); err == nil {
			t.Error("Ack of a receipt not in the batch succeeded")
		}
		return events.SQSEventResponse{BatchItemFailures: d.BatchItemFailures()}, nil
	}
	esm := &sqsesm.Mapping{Client: e.client, QueueURL: q.url, QueueARN: "arn:aws:sqs:us-east-1:000000000000:q", Function: handle}

	// fauxqs may hand out fewer than ten at once: poll until all five came.
	received, failed := 0, 0
	for deadline := time.Now().Add(10 * time.Second); received < 5 && time.Now().Before(deadline); {
		res, err := esm.PollOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		received, failed = received+res.Received, failed+res.Failed
	}
	if received != 5 || failed != 2 {
		t.Fatalf("received %d, failed %d; want 5 and 2 (retry, leave)", received, failed)
	}
	if diff := cmp.Diff([]string{"ack", "bury", "leave", "retry"}, slices.Sorted(slices.Values(seen))); diff != "" {
		t.Errorf("handler saw (-want +got):\n%s", diff)
	}
	reasons := func() map[string]string {
		dls, err := q.DeadLetters(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, dl := range dls {
			out[string(dl.Body)] = dl.Reason
		}
		return out
	}
	got := reasons()
	if len(got) != 2 || got["bury"] != "bad job: post_id is missing" || !strings.HasPrefix(got["garbled"], ReasonUndecodable) {
		t.Errorf("dead letters = %v, want bury with its reason and garbled as undecodable", got)
	}

	// The retried message comes back after its 2 s, for delivery 2: past
	// MaxReceives, so it is dead-lettered on delivery and the handler never
	// sees it. "leave" comes back after the queue's visibility timeout
	// (fauxqs: 30 s), which this test does not wait for.
	seen = nil
	time.Sleep(2500 * time.Millisecond)
	res, err := esm.PollOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Received != 1 || res.Failed != 0 || len(seen) != 0 {
		t.Errorf("second poll = %+v, handler saw %v; want the retried message, dead-lettered on delivery", res, seen)
	}
	if got := reasons(); !strings.HasPrefix(got["retry"], ReasonMaxReceives) {
		t.Errorf("dead letters = %v, want retry as %s", got, ReasonMaxReceives)
	}
}

// TestCountDeadLettersReadsNothing: the count follows the dead-letter
// queue and leaves its messages visible for the operator's list.
func TestCountDeadLettersReadsNothing(t *testing.T) {
	e := newEnv(t)
	q := e.pair(t, pairSpec{})
	ctx := t.Context()
	if n, err := q.CountDeadLetters(ctx); err != nil || n != 0 {
		t.Fatalf("CountDeadLetters on an empty queue = %d, %v", n, err)
	}
	for _, body := range []string{"one", "two"} {
		if err := q.copyToDead(ctx, outgoing([]byte(body), false), 1, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := q.CountDeadLetters(ctx); err != nil || n != 2 {
		t.Errorf("CountDeadLetters = %d, %v; want 2", n, err)
	}
	dls, err := q.DeadLetters(ctx, 10)
	if err != nil || len(dls) != 2 {
		t.Errorf("DeadLetters after counting = %d, %v; want both, visible", len(dls), err)
	}
}
