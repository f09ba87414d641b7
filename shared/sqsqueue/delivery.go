package sqsqueue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"oncepost/shared/publishing"
)

// Interface guard.
var _ publishing.Queue = (*Delivery)(nil)

// Delivery is one Lambda invocation's batch from an SQS event source
// mapping (ESM), seen as a publishing.Queue so that publishing.Loop.Handle
// settles each message the way it does on a polled queue. The ESM
// receives and deletes; the function says per message what happened, in
// the response's batchItemFailures (FunctionResponseTypes
// ReportBatchItemFailures):
//
//   - Ack marks the message done: no call; the ESM deletes every message
//     not reported as failed, in one DeleteMessageBatch per batch.
//   - Retry changes the message's visibility to the delay
//     (ChangeMessageVisibility) and reports it failed, so the ESM leaves
//     it to come back then.
//   - DeadLetter sends the copy with the reason to the dead-letter queue
//     (as Queue.DeadLetter does) and marks the message done, so the ESM
//     deletes it. If the copy fails, the message is reported failed and
//     comes back.
//   - Send is the queue's Send (a job put back with a delay).
//
// A message that is never settled (the invocation ran out of time before
// handling it, or Fail was called) is reported failed: the ESM leaves it
// in the queue and SQS delivers it again after its visibility timeout.
// Nothing in a batch is lost, and one bad message never fails the others.
//
// NewDelivery settles some messages before the handler sees them: one
// that cannot be decoded, and one delivered more than Options.MaxReceives
// times, are dead-lettered with the reason at once (as Receive does), so
// a malformed body never fails the batch.
type Delivery struct {
	q    *Queue
	msgs []publishing.Message

	mu      sync.Mutex
	records map[string]*record // by receipt
	order   []*record
}

// record is one message of the batch and what became of it.
type record struct {
	sqsID   string // SQS's MessageId: the ESM's itemIdentifier
	w       wire
	count   int
	settled bool // done: the ESM may delete it
	failed  bool // to be reported in batchItemFailures
}

// NewDelivery reads an ESM batch. It dead-letters at once the records that
// cannot be decoded or were delivered too often (see Delivery); the rest
// are Messages.
func (q *Queue) NewDelivery(ctx context.Context, records []events.SQSMessage) *Delivery {
	d := &Delivery{q: q, records: map[string]*record{}}
	for _, r := range records {
		rec := &record{sqsID: r.MessageId, w: wireOf(r)}
		d.order = append(d.order, rec)
		d.records[r.ReceiptHandle] = rec
		count, sentAt, body, problem := inboundRecord(r, rec.w)
		rec.count = count
		if reason := q.deadOnArrival(count, problem); reason != "" {
			if err := q.copyToDead(ctx, rec.w, max(count-1, 0), reason); err != nil {
				q.log.ErrorContext(ctx, "sqsqueue: could not dead-letter a message; it comes back after its visibility timeout",
					"queue", q.name, "message_id", rec.w.id, "reason", reason, "err", err)
				rec.failed = true
				continue
			}
			q.log.WarnContext(ctx, "sqsqueue: message dead-lettered on delivery", "queue", q.name, "message_id", rec.w.id, "reason", reason)
			rec.settled = true
			continue
		}
		d.msgs = append(d.msgs, publishing.Message{ID: rec.w.id, Body: body, ReceiveCount: count, Receipt: r.ReceiptHandle, SentAt: sentAt})
	}
	return d
}

// wireOf reads the adapter's wire fields of an ESM record.
func wireOf(r events.SQSMessage) wire {
	attr := func(name string) string {
		if v, ok := r.MessageAttributes[name]; ok && v.StringValue != nil {
			return *v.StringValue
		}
		return ""
	}
	w := wire{id: attr(attrID), body: r.Body, encoding: attr(attrEncoding)}
	if w.id == "" {
		w.id = r.MessageId
	}
	return w
}

// inboundRecord is inbound for an ESM record: its system attributes come
// as a map of strings.
func inboundRecord(r events.SQSMessage, w wire) (count int, sentAt time.Time, body []byte, problem string) {
	m := types.Message{Attributes: map[string]string{
		string(types.MessageSystemAttributeNameApproximateReceiveCount): r.Attributes["ApproximateReceiveCount"],
		string(types.MessageSystemAttributeNameSentTimestamp):           r.Attributes["SentTimestamp"],
	}}
	return inbound(m, w)
}

// Messages are the batch's messages for the handler, in order.
func (d *Delivery) Messages() []publishing.Message { return d.msgs }

// Send enqueues body on the queue (Queue.Send).
func (d *Delivery) Send(ctx context.Context, body []byte, delay time.Duration) (string, error) {
	return d.q.Send(ctx, body, delay)
}

// Receive returns nothing: a Delivery's messages came with the invocation.
func (d *Delivery) Receive(context.Context, int, time.Duration) ([]publishing.Message, error) {
	return nil, nil
}

// Depth is the queue's Depth.
func (d *Delivery) Depth(ctx context.Context) (publishing.QueueDepth, error) { return d.q.Depth(ctx) }

// DeadLetters lists the queue's dead letters (Queue.DeadLetters).
func (d *Delivery) DeadLetters(ctx context.Context, limit int) ([]publishing.DeadLetter, error) {
	return d.q.DeadLetters(ctx, limit)
}

func (d *Delivery) record(receipt string) (*record, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	rec, ok := d.records[receipt]
	if !ok || rec.settled || rec.failed {
		return nil, fmt.Errorf("sqsqueue %s: receipt not in this batch or already settled: %w", d.q.name, ErrStaleReceipt)
	}
	return rec, nil
}

func (d *Delivery) mark(rec *record, settled, failed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	rec.settled, rec.failed = settled, failed
}

// Ack marks the message done; the ESM deletes it.
func (d *Delivery) Ack(_ context.Context, receipt string) error {
	rec, err := d.record(receipt)
	if err != nil {
		return err
	}
	d.mark(rec, true, false)
	return nil
}

// Retry hides the message for delay (rounded up to whole seconds) and
// reports it failed, so the ESM leaves it in the queue. If the visibility
// change fails, the message is still reported failed: it comes back after
// the queue's visibility timeout instead, and the error says so.
func (d *Delivery) Retry(ctx context.Context, receipt string, delay time.Duration) error {
	rec, err := d.record(receipt)
	if err != nil {
		return err
	}
	d.mark(rec, false, true)
	secs := seconds(delay)
	if secs > maxVisibilitySeconds {
		return fmt.Errorf("sqsqueue %s retry: delay %s is over SQS's 12 h: %w", d.q.name, delay, ErrDelayTooLong)
	}
	_, err = d.q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(d.q.url), ReceiptHandle: aws.String(receipt), VisibilityTimeout: int32(secs),
	})
	if err != nil {
		return fmt.Errorf("sqsqueue %s retry %s: %w", d.q.name, rec.w.id, translate(err))
	}
	return nil
}

// DeadLetter sends the message's copy with the reason to the dead-letter
// queue and marks it done, so the ESM deletes it; if the copy fails, the
// message is reported failed and comes back.
func (d *Delivery) DeadLetter(ctx context.Context, receipt, reason string) error {
	rec, err := d.record(receipt)
	if err != nil {
		return err
	}
	if err := d.q.copyToDead(ctx, rec.w, rec.count, reason); err != nil {
		d.mark(rec, false, true)
		return fmt.Errorf("sqsqueue %s dead-letter %s: %w", d.q.name, rec.w.id, err)
	}
	d.mark(rec, true, false)
	return nil
}

// Fail reports the message failed: the ESM leaves it in the queue. It is
// for a message whose handling could not finish (the queue could not be
// told its result).
func (d *Delivery) Fail(receipt string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if rec, ok := d.records[receipt]; ok {
		rec.settled, rec.failed = false, true
	}
}

// BatchItemFailures is the response's batchItemFailures: every message
// reported failed or never settled, by SQS message id.
func (d *Delivery) BatchItemFailures() []events.SQSBatchItemFailure {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []events.SQSBatchItemFailure
	for _, rec := range d.order {
		if rec.failed || !rec.settled {
			out = append(out, events.SQSBatchItemFailure{ItemIdentifier: rec.sqsID})
		}
	}
	return out
}
