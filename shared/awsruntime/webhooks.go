package awsruntime

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"oncepost/shared/awswebhooks"
	"oncepost/shared/ebevents"
	"oncepost/shared/publishing"
	"oncepost/shared/sqsqueue"
)

// The notifier's and the webhooks function's settings. With
// AWS_ENDPOINT_URL_EVENTBRIDGE set, the bus is an emulator's.
const (
	// EnvEventBusName is the EventBridge bus the notifier puts events on.
	EnvEventBusName = "ONCEPOST_EVENT_BUS_NAME"
	// EnvWebhookQueueURL is the webhook queue: one message per event and
	// subscription, sent by the notifier, consumed by the webhooks
	// function.
	EnvWebhookQueueURL = "ONCEPOST_WEBHOOK_QUEUE_URL"
	// EnvWebhookDeadLetterURL is its dead-letter queue: deliveries given
	// up, with the reason (`oncepost dlq list --queue webhooks`).
	EnvWebhookDeadLetterURL = "ONCEPOST_WEBHOOK_DEAD_LETTER_URL"
)

// WebhookMaxReceives is the webhook queue's RedrivePolicy
// maxReceiveCount, which the webhooks function's queue dead-letters at
// too: far above the attempts 24 h of backoff makes (a receive is one
// attempt), so a delivery is given up by its window, with the reason,
// not by SQS.
const WebhookMaxReceives = 100

// WebhookQueue is the webhook queue and its dead letters.
func (rt *Runtime) WebhookQueue() (*sqsqueue.Queue, error) {
	if err := require(EnvWebhookQueueURL, rt.Env.WebhookQueueURL, EnvWebhookDeadLetterURL, rt.Env.WebhookDeadLetterURL); err != nil {
		return nil, err
	}
	return sqsqueue.New(sqs.NewFromConfig(rt.AWS), rt.Env.WebhookQueueURL, rt.Env.WebhookDeadLetterURL,
		sqsqueue.Options{MaxReceives: WebhookMaxReceives, Logger: rt.Logger})
}

// Webhooks is the stack's subscriptions and dead deliveries as an
// operator reaches them (the api function's /v1/webhooks): the store's
// subscriptions and the webhook queue's dead letters.
func (rt *Runtime) Webhooks() (*awswebhooks.Admin, error) {
	q, err := rt.WebhookQueue()
	if err != nil {
		return nil, err
	}
	return awswebhooks.New(rt.Store, q), nil
}

// EventBus is the EventBridge bus events go to.
func (rt *Runtime) EventBus() (*ebevents.Bus, error) {
	if err := require(EnvEventBusName, rt.Env.EventBusName); err != nil {
		return nil, err
	}
	return ebevents.New(eventbridge.NewFromConfig(rt.AWS), rt.Env.EventBusName, ebevents.Options{})
}

// Subscriptions are the store's webhook subscriptions, read through an
// instance cache: the list (without secrets) for CacheFor, each one read
// with its secret for CacheFor; disabling one drops what is kept. A
// subscription added or changed meanwhile takes effect within CacheFor.
func (rt *Runtime) Subscriptions() *CachedSubscriptions {
	if rt.subs == nil {
		rt.subs = &CachedSubscriptions{store: rt.Store, now: rt.Now}
	}
	return rt.subs
}

// QueuedWebhooks makes the webhook queue's attempts with sender.
func (rt *Runtime) QueuedWebhooks(sender publishing.WebhookSender) *publishing.QueuedWebhooks {
	return &publishing.QueuedWebhooks{Subscriptions: rt.Subscriptions(), Sender: sender, RetryAt: publishing.WebhookRetryAt, Now: rt.Now, Logger: rt.Logger}
}

// subscriptionStore is what CachedSubscriptions reads.
type subscriptionStore interface {
	ListSubscriptionsWithoutSecrets(ctx context.Context) ([]publishing.Subscription, error)
	GetSubscription(ctx context.Context, id string) (publishing.Subscription, error)
	DisableSubscription(ctx context.Context, id, reason string) error
}

// CachedSubscriptions keeps the store's subscriptions for CacheFor.
type CachedSubscriptions struct {
	store subscriptionStore
	now   func() time.Time

	mu   sync.Mutex
	list cached[[]publishing.Subscription]
	one  map[string]cached[publishing.Subscription]
}

// NewCachedSubscriptions caches store's subscriptions on the clock now.
func NewCachedSubscriptions(store subscriptionStore, now func() time.Time) *CachedSubscriptions {
	return &CachedSubscriptions{store: store, now: now}
}

// ListSubscriptionsWithoutSecrets is the store's, kept CacheFor.
func (c *CachedSubscriptions) ListSubscriptionsWithoutSecrets(ctx context.Context) ([]publishing.Subscription, error) {
	c.mu.Lock()
	l := c.list
	c.mu.Unlock()
	if c.now().Before(l.until) {
		return l.v, nil
	}
	subs, err := c.store.ListSubscriptionsWithoutSecrets(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.list = cached[[]publishing.Subscription]{v: subs, until: c.now().Add(CacheFor)}
	c.mu.Unlock()
	return subs, nil
}

// GetSubscription is the store's, kept CacheFor (a subscription that
// is not found is not kept).
func (c *CachedSubscriptions) GetSubscription(ctx context.Context, id string) (publishing.Subscription, error) {
	c.mu.Lock()
	e, ok := c.one[id]
	c.mu.Unlock()
	if ok && c.now().Before(e.until) {
		return e.v, nil
	}
	s, err := c.store.GetSubscription(ctx, id)
	if err != nil {
		return s, err
	}
	c.mu.Lock()
	if c.one == nil {
		c.one = map[string]cached[publishing.Subscription]{}
	}
	c.one[id] = cached[publishing.Subscription]{v: s, until: c.now().Add(CacheFor)}
	c.mu.Unlock()
	return s, nil
}

// DisableSubscription disables it in the store and drops what is kept.
func (c *CachedSubscriptions) DisableSubscription(ctx context.Context, id, reason string) error {
	c.mu.Lock()
	delete(c.one, id)
	c.list = cached[[]publishing.Subscription]{}
	c.mu.Unlock()
	return c.store.DisableSubscription(ctx, id, reason)
}
