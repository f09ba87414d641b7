package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"oncepost/shared/dynamostore"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqsqueue"
)

// stackWebhooks are a stack's subscriptions (in its workspace table) and
// the deliveries an operator can reach: the dead ones, which are the
// webhook queue's dead letters. Pending deliveries are messages of the
// webhook queue, in flight between the notifier and the webhooks
// function, and delivered ones are not kept (docs/webhooks-aws.md).
type stackWebhooks struct {
	*dynamostore.Store
	// dead is the webhook queue and its dead letters; nil for a stack
	// without them.
	dead *sqsqueue.Queue
}

var _ webhookStore = stackWebhooks{}

// errDeliveredByFunction: the stack's webhooks function, not the CLI,
// makes the deliveries.
var errDeliveredByFunction = errors.New("on AWS the webhooks function delivers from the webhook queue; the CLI does not")

// ClaimDeliveries is not for a stack.
func (stackWebhooks) ClaimDeliveries(context.Context, time.Time, time.Duration, int) ([]publishing.Delivery, error) {
	return nil, errDeliveredByFunction
}

// RecordDelivery is not for a stack.
func (stackWebhooks) RecordDelivery(context.Context, publishing.Delivery) error {
	return errDeliveredByFunction
}

// ListDeliveries lists the dead deliveries, most recently given up
// first; other states are not kept where the CLI can list them.
func (w stackWebhooks) ListDeliveries(ctx context.Context, state publishing.DeliveryState, limit int) ([]publishing.Delivery, error) {
	if state != "" && state != publishing.DeliveryDead {
		return nil, usageError("state", "%s: on AWS only dead deliveries are kept where the CLI lists them (pending ones are messages of the webhook queue, delivered ones are not kept); use --state dead", state)
	}
	dead, err := w.deadDeliveries(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]publishing.Delivery, 0, len(dead))
	for i := len(dead) - 1; i >= 0; i-- { // most recent first
		out = append(out, dead[i].Delivery)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out, nil
}

// RedriveDelivery sends the dead delivery id back to the webhook queue
// (its attempts and 24 h start again, its webhook-id is kept) and drops
// any other copy of it; post.ErrNotFound when no dead delivery has the
// id.
func (w stackWebhooks) RedriveDelivery(ctx context.Context, id string, _ time.Time) error {
	dead, err := w.deadDeliveries(ctx)
	if err != nil {
		return err
	}
	redriven := false
	for _, d := range dead {
		if d.ID != id {
			continue
		}
		op := w.dead.Redrive
		if redriven {
			op = w.dead.Drop
		}
		if err := op(ctx, d.message); err != nil {
			return fmt.Errorf("redrive delivery %s: %w", id, err)
		}
		redriven = true
	}
	if !redriven {
		return fmt.Errorf("redrive delivery %s: %w", id, post.ErrNotFound)
	}
	return nil
}

// deadDelivery is a dead letter of the webhook queue as a delivery.
type deadDelivery struct {
	publishing.Delivery
	message string // the dead letter's id
}

// deadDeliveries reads the webhook queue's dead letters, oldest first;
// one that is not a delivery is left out (`dlq list --queue webhooks`
// shows it).
func (w stackWebhooks) deadDeliveries(ctx context.Context) ([]deadDelivery, error) {
	if w.dead == nil {
		return nil, usageError("outputs", "the stack has no webhook queue (outputs %s and %s): deploy the current template.yaml", outWebhookQueueURL, outWebhookDeadLetterQueueURL)
	}
	dls, err := w.dead.DeadLetters(ctx, 0)
	if err != nil {
		return nil, err
	}
	var out []deadDelivery
	for _, dl := range dls {
		m, err := publishing.DecodeWebhookMessage(dl.Body)
		if err != nil {
			continue
		}
		out = append(out, deadDelivery{message: dl.ID, Delivery: publishing.Delivery{
			ID: publishing.DeliveryID(m.Event.ID, m.Subscription), Event: m.Event, Subscription: m.Subscription,
			State: publishing.DeliveryDead, Attempts: dl.ReceiveCount, CreatedAt: m.CreatedAt, LastError: dl.Reason, UpdatedAt: dl.At,
		}})
	}
	return out, nil
}
