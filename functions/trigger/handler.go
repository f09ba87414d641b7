package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"oncepost/shared/ebschedule"
	"oncepost/shared/publishing"
)

// trigger enqueues due targets (publishing.Trigger). Neither call writes
// a post: the function's IAM policy lets it read posts only.
type trigger interface {
	Enqueue(ctx context.Context, ref publishing.TargetRef) (bool, error)
	FireSlot(ctx context.Context, slot time.Time) (publishing.SlotReport, error)
}

// handler serves Scheduler's invocations: it decodes the schedule's input
// and fires the slot, or the one target.
type handler struct {
	trigger trigger
	log     *slog.Logger
}

// Response says what an invocation did; Scheduler ignores it, a person
// invoking the function reads it.
type Response struct {
	Slot string `json:"slot"`
	// Sent is how many jobs were enqueued.
	Sent int `json:"sent"`
	// Already is "done" for a slot an earlier firing sent whole (a
	// retried firing), "busy" for one another firing is sending now.
	Already string `json:"already,omitempty"`
	// Continued: the slot was too large for this invocation's time; a new
	// invocation fires the rest.
	Continued bool `json:"continued,omitempty"`
}

// handle is the Lambda handler. Scheduler invokes it asynchronously: an
// error fails the invocation, Lambda retries it (the function's
// EventInvokeConfig: twice, within the maximum event age) and then sends
// the event to the on-failure destination, whose alarm pages; Scheduler's
// own retry policy and dead-letter queue only see invocations Lambda did
// not accept. A malformed input is an error naming the field. A store or
// queue failure is an error too, so the firing is retried; a retried slot
// firing resumes where the last one recorded it got (Trigger.FireSlot),
// and a job sent twice is absorbed by the ledger.
func (h handler) handle(ctx context.Context, event json.RawMessage) (Response, error) {
	in, err := ebschedule.DecodeInput(event)
	if err != nil {
		h.log.ErrorContext(ctx, "trigger: bad schedule input", "err", err)
		return Response{}, err
	}
	res := Response{Slot: in.Slot.Format(time.RFC3339Nano)}
	if in.AllDue() {
		rep, err := h.trigger.FireSlot(ctx, in.Slot)
		res.Sent, res.Already, res.Continued = rep.Sent, rep.Already, rep.Continued
		if err != nil {
			return res, err
		}
		return res, nil
	}
	sent, err := h.trigger.Enqueue(ctx, in.TargetRef)
	if err != nil {
		return res, fmt.Errorf("fire %s/%s: %w", in.Post, in.Account, err)
	}
	if sent {
		res.Sent = 1
	}
	return res, nil
}
