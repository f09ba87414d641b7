package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"oncepost/shared/publishing"
	"oncepost/shared/sqsqueue"
)

// batches turns an event source mapping's records into a queue whose
// messages are settled one by one (sqsqueue.Queue.NewDelivery).
type batches interface {
	NewDelivery(ctx context.Context, records []events.SQSMessage) *sqsqueue.Delivery
}

// handler serves the SQS event source mapping.
type handler struct {
	batches   batches
	publisher *publishing.Publisher
	log       *slog.Logger
	// need is the time one message may take: one left with less than
	// that before the invocation's deadline is not started (it comes back
	// after its visibility timeout) rather than cut off mid-send.
	need time.Duration
	// maxReceives is the queue's maxReceiveCount (0: the default): the
	// redeliveries of a job that cannot reach the store are spread over it.
	maxReceives int
}

// handle publishes every job of the batch concurrently and answers with
// the messages SQS must deliver again. It never fails the invocation: a
// malformed body is dead-lettered with the reason, a job that cannot be
// processed now is retried on its own, and one whose result could not be
// told to the queue is reported failed; the others are deleted by the
// event source mapping.
func (h handler) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	d := h.batches.NewDelivery(ctx, ev.Records)
	loop := &publishing.Loop{Queue: d, Publisher: h.publisher, Logger: h.log, MaxReceives: h.maxReceives}
	var wg sync.WaitGroup
	for _, m := range d.Messages() {
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < h.need {
			h.log.WarnContext(ctx, "publisher: too little time left for a job; it comes back", "message_id", m.ID, "left", time.Until(deadline).String())
			d.Fail(m.Receipt)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loop.Handle(ctx, m); err != nil {
				h.log.ErrorContext(ctx, "publisher: job not settled; it comes back", "message_id", m.ID, "err", err)
				d.Fail(m.Receipt)
			}
		}()
	}
	wg.Wait()
	return events.SQSEventResponse{BatchItemFailures: d.BatchItemFailures()}, nil
}
