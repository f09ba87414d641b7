// Package awswebhooks is a stack's webhooks as an operator reaches them
// (the CLI's `oncepost webhook` and the api function's /v1/webhooks):
// the subscriptions in the workspace table (dynamostore) and the dead
// deliveries, which are the webhook queue's dead letters (sqsqueue).
// Pending deliveries are messages of the webhook queue, in flight between
// the notifier and the webhooks function, and delivered ones are not
// kept, so only dead ones are listed.
package awswebhooks

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

// ErrNoWebhookQueue: the stack has no webhook queue (deployed from an
// older template), so it has no deliveries to list or redrive.
var ErrNoWebhookQueue = errors.New("the stack has no webhook queue")

// ErrDeliveredByFunction: on AWS the webhooks function makes the
// deliveries, from the webhook queue; nothing else claims them.
var ErrDeliveredByFunction = errors.New("on AWS the webhooks function delivers from the webhook queue")

// Admin is a stack's subscriptions and its dead deliveries.
type Admin struct {
	store *dynamostore.Store
	// dead is the webhook queue and its dead letters; nil for a stack
	// without them.
	dead *sqsqueue.Queue
}

var (
	_ publishing.Subscriptions = (*Admin)(nil)
	_ publishing.Deliveries    = (*Admin)(nil)
)

// New is the stack's webhooks: subscriptions in store, dead deliveries on
// queue's dead-letter queue (nil for a stack without a webhook queue:
// the deliveries' methods then return ErrNoWebhookQueue).
func New(store *dynamostore.Store, queue *sqsqueue.Queue) *Admin {
	return &Admin{store: store, dead: queue}
}

// AddSubscription stores s, its secret sealed with the stack's data key.
func (a *Admin) AddSubscription(ctx context.Context, s publishing.Subscription) error {
	return a.store.AddSubscription(ctx, s)
}

// GetSubscription reads one, its secret opened.
func (a *Admin) GetSubscription(ctx context.Context, id string) (publishing.Subscription, error) {
	return a.store.GetSubscription(ctx, id)
}

// ListSubscriptions lists every subscription, by id, without its secret:
// a listing never shows one, and so needs no data key (no kms:Decrypt).
func (a *Admin) ListSubscriptions(ctx context.Context) ([]publishing.Subscription, error) {
	return a.store.ListSubscriptionsWithoutSecrets(ctx)
}

// RemoveSubscription deletes it; its queued deliveries are dropped by the
// webhooks function when it finds the subscription gone.
func (a *Admin) RemoveSubscription(ctx context.Context, id string) error {
	return a.store.RemoveSubscription(ctx, id)
}

// DisableSubscription marks it disabled with a reason.
func (a *Admin) DisableSubscription(ctx context.Context, id, reason string) error {
	return a.store.DisableSubscription(ctx, id, reason)
}

// ClaimDeliveries returns ErrDeliveredByFunction.
func (*Admin) ClaimDeliveries(context.Context, time.Time, time.Duration, int) ([]publishing.Delivery, error) {
	return nil, ErrDeliveredByFunction
}

// RecordDelivery returns ErrDeliveredByFunction.
func (*Admin) RecordDelivery(context.Context, publishing.Delivery) error {
	return ErrDeliveredByFunction
}

// ListDeliveries lists the dead deliveries, most recently given up
// first; for any state but dead (or all), an error wrapping
// publishing.ErrDeliveryStateNotKept.
func (a *Admin) ListDeliveries(ctx context.Context, state publishing.DeliveryState, limit int) ([]publishing.Delivery, error) {
	if state != "" && state != publishing.DeliveryDead {
		return nil, fmt.Errorf("%s: on AWS only dead deliveries are kept where they can be listed (pending ones are messages of the webhook queue, delivered ones are not kept): %w",
			state, publishing.ErrDeliveryStateNotKept)
	}
	dead, err := a.deadDeliveries(ctx)
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
func (a *Admin) RedriveDelivery(ctx context.Context, id string, _ time.Time) error {
	dead, err := a.deadDeliveries(ctx)
	if err != nil {
		return err
	}
	redriven := false
	for _, d := range dead {
		if d.ID != id {
			continue
		}
		op := a.dead.Redrive
		if redriven {
			op = a.dead.Drop
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
// one that is not a delivery is left out (`oncepost dlq list --queue
// webhooks` shows it).
func (a *Admin) deadDeliveries(ctx context.Context) ([]deadDelivery, error) {
	if a.dead == nil {
		return nil, ErrNoWebhookQueue
	}
	dls, err := a.dead.DeadLetters(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("read the webhook dead letters: %w", err)
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
