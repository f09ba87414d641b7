package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"oncepost/shared/dynamostore"
	"oncepost/shared/publishing"
)

// routes lists the subscriptions events are routed to (no secrets).
type routes interface {
	ListSubscriptionsWithoutSecrets(ctx context.Context) ([]publishing.Subscription, error)
}

// bus puts events on the EventBridge bus; one error (or nil) per event.
type bus interface {
	Put(ctx context.Context, evs []publishing.Event) []error
}

// handler serves the tables' stream event source mappings.
type handler struct {
	routes  routes
	webhook publishing.BatchSender
	bus     bus
	now     func() time.Time
	log     *slog.Logger
}

// derived is one record's event and the deliveries it makes.
type derived struct {
	record int
	event  publishing.Event
}

// handle derives the event each record causes (dynamostore.RecordEvent:
// publishing's event functions on the old and new image), queues one
// webhook message per subscription that wants it, and puts it on the
// bus. It never fails the invocation: the first record that could not be
// decoded, or whose messages or bus entry could not be sent, is reported
// in batchItemFailures, so the stream retries from it (the records after
// it too: their events may go out twice, with the same ids, which
// receivers dedupe on); the records before it are done. Records that
// cause no event cost nothing but their decoding.
func (h handler) handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	failed := len(ev.Records) // the first failed record; none if len
	var got []derived
	for i, rec := range ev.Records {
		e, ok, err := dynamostore.RecordEvent(rec)
		if err != nil {
			h.log.ErrorContext(ctx, "notifier: stream record not decoded; retried, then sent to the failure destination",
				"event_id", rec.EventID, "sequence_number", rec.Change.SequenceNumber, "source", rec.EventSourceArn, "err", err)
			failed = i
			break
		}
		if ok {
			got = append(got, derived{record: i, event: e})
		}
	}
	if len(got) == 0 {
		return h.response(ev, failed), nil
	}
	subs, err := h.routes.ListSubscriptionsWithoutSecrets(ctx)
	if err != nil {
		h.log.ErrorContext(ctx, "notifier: subscriptions not read; the records come back", "err", err)
		return h.response(ev, min(failed, got[0].record)), nil
	}
	now := h.now()
	var msgs []publishing.Outgoing
	var msgRecord []int
	for _, d := range got {
		for _, m := range publishing.WebhookMessages(d.event, subs, now) {
			body, err := m.Encode()
			if err != nil {
				h.log.ErrorContext(ctx, "notifier: webhook message not encoded", "event", d.event.ID, "err", err)
				failed = min(failed, d.record)
				continue
			}
			msgs = append(msgs, publishing.Outgoing{Body: body})
			msgRecord = append(msgRecord, d.record)
		}
	}
	if len(msgs) > 0 {
		ids, err := h.webhook.SendBatch(ctx, msgs)
		for i := range msgs {
			if i >= len(ids) || ids[i] == "" {
				failed = min(failed, msgRecord[i])
			}
		}
		if err != nil {
			h.log.ErrorContext(ctx, "notifier: webhook messages not queued; their records come back", "err", err)
		}
	}
	evs := make([]publishing.Event, len(got))
	for i, d := range got {
		evs[i] = d.event
	}
	for i, err := range h.bus.Put(ctx, evs) {
		if err != nil {
			h.log.ErrorContext(ctx, "notifier: event not put on the bus; its record comes back", "event", evs[i].ID, "err", err)
			failed = min(failed, got[i].record)
		}
	}
	h.log.InfoContext(ctx, "notifier: events routed", "records", len(ev.Records), "events", len(got), "webhooks", len(msgs))
	return h.response(ev, failed), nil
}

// response reports the record at index failed (none if past the end):
// the mapping retries the batch from it.
func (h handler) response(ev events.DynamoDBEvent, failed int) events.DynamoDBEventResponse {
	if failed >= len(ev.Records) {
		return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	}
	return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
		{ItemIdentifier: ev.Records[failed].Change.SequenceNumber},
	}}
}
