package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"oncepost/shared/publishing"
	"oncepost/shared/sqsqueue"
)

// batches turns an event source mapping's records into messages settled
// one by one (sqsqueue.Queue.NewDelivery).
type batches interface {
	NewDelivery(ctx context.Context, records []events.SQSMessage) *sqsqueue.Delivery
}

// attempter makes one attempt of a queued webhook.
type attempter interface {
	Attempt(ctx context.Context, m publishing.WebhookMessage, attempt int, windowStart time.Time) publishing.WebhookVerdict
}

// maxRetry is the longest a message is hidden: SQS's 12 h visibility,
// counted from the receive, less a margin for the time spent since.
const maxRetry = 12*time.Hour - 5*time.Minute

// handler serves the webhook queue's event source mapping.
type handler struct {
	batches  batches
	webhooks attempter
	log      *slog.Logger
	// need is the time one attempt may take: a message left with less
	// than that before the invocation's deadline is not tried (it comes
	// back after its visibility timeout, no attempt spent but a receive).
	need time.Duration
}

// handle makes one attempt of every message of the batch, concurrently,
// and settles each on its own: delivered → deleted; failed → hidden
// until its next try (ChangeMessageVisibility) and reported failed, so
// the mapping leaves it; given up (24 h over, the receiver gone, the
// subscription disabled) or undecodable → copied to the dead-letter
// queue with the reason, and deleted. The attempt number is the
// message's receive count (a receive the function never saw, a throttled
// batch, counts too: the backoff only grows). It never fails the
// invocation.
func (h handler) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	d := h.batches.NewDelivery(ctx, ev.Records)
	var wg sync.WaitGroup
	for _, m := range d.Messages() {
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < h.need {
			h.log.WarnContext(ctx, "webhooks: too little time left for an attempt; the message comes back", "message_id", m.ID)
			d.Fail(m.Receipt)
			continue
		}
		wg.Go(func() {
			if err := h.settle(ctx, d, m); err != nil {
				h.log.ErrorContext(ctx, "webhooks: message not settled; it comes back", "message_id", m.ID, "err", err)
				d.Fail(m.Receipt)
			}
		})
	}
	wg.Wait()
	return events.SQSEventResponse{BatchItemFailures: d.BatchItemFailures()}, nil
}

// settle attempts one message and tells the queue what became of it.
func (h handler) settle(ctx context.Context, d *sqsqueue.Delivery, m publishing.Message) error {
	wm, err := publishing.DecodeWebhookMessage(m.Body)
	if err != nil {
		return d.DeadLetter(ctx, m.Receipt, fmt.Sprintf("%s: %v", publishing.ReasonUndecodableWebhook, err))
	}
	// A redriven dead letter is a new message: its window starts again.
	start := wm.CreatedAt
	if m.SentAt.After(start) {
		start = m.SentAt
	}
	v := h.webhooks.Attempt(ctx, wm, max(m.ReceiveCount, 1), start)
	switch {
	case v.DeadReason != "":
		return d.DeadLetter(ctx, m.Receipt, v.DeadReason)
	case v.Retry > 0:
		return d.Retry(ctx, m.Receipt, min(v.Retry, maxRetry))
	default:
		return d.Ack(ctx, m.Receipt)
	}
}
