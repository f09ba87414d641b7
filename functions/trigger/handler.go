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
	FireSlot(ctx context.Context, slot time.Time) (int, error)
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
}

// handle is the Lambda handler. A malformed input is an error naming the
// field: the invocation fails, Scheduler retries it under the schedule's
// retry policy and then sends it to the schedule's dead-letter queue, and
// the function's Errors alarm fires meanwhile. A store or queue failure is
// an error too, so Scheduler retries; a retried firing that enqueues again
// is absorbed by the ledger.
func (h handler) handle(ctx context.Context, event json.RawMessage) (Response, error) {
	in, err := ebschedule.DecodeInput(event)
	if err != nil {
		h.log.ErrorContext(ctx, "trigger: bad schedule input", "err", err)
		return Response{}, err
	}
	res := Response{Slot: in.Slot.Format(time.RFC3339Nano)}
	if in.AllDue() {
		res.Sent, err = h.trigger.FireSlot(ctx, in.Slot)
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
