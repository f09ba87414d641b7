package sqsqueue

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/publishing"
)

// TestDepth counts the queue's messages by where they are (visible, in
// flight, delayed) and its dead-letter queue's, without receiving any.
func TestDepth(t *testing.T) {
	e := newEnv(t)
	q := e.pair(t, pairSpec{})
	ctx := t.Context()
	if d, err := q.Depth(ctx); err != nil || d != (publishing.QueueDepth{}) {
		t.Fatalf("Depth of an empty queue = %+v, %v", d, err)
	}
	for _, delay := range []time.Duration{0, 0, 0, time.Minute} {
		if _, err := q.Send(ctx, []byte("m"), delay); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := q.Receive(ctx, 2, time.Minute)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("Receive = %d, %v", len(msgs), err)
	}
	if err := q.DeadLetter(ctx, msgs[1].Receipt, "refused"); err != nil {
		t.Fatal(err)
	}
	got, err := q.Depth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(publishing.QueueDepth{Visible: 1, InFlight: 1, Delayed: 1, DeadLetters: 1}, got); d != "" {
		t.Errorf("Depth (-want +got):\n%s", d)
	}
}
