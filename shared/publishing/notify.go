package publishing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"oncepost/shared/post"
)

// Webhook retry schedule. A delivery is tried first when its event is
// recorded; after the n-th failed attempt it is tried again
// WebhookRetryDelays[n-1] later (the last delay repeating): 5 s, 30 s,
// 2 min, 5 min, 15 min, 30 min, 1 h, 2 h, 4 h, 8 h, then every 8 h. No
// try is scheduled after WebhookWindow from the delivery's creation but
// one final attempt at its very end; a failure then makes the delivery
// dead. Without Retry-After and with attempts made on time, that is 13
// attempts: the 12th about 23 h 53 min in, the 13th at 24 h. The delays
// are fixed (no jitter): deliveries fail together only when their
// receiver does, and each receiver's deliveries are already spread by
// when their events happened.
var WebhookRetryDelays = []time.Duration{
	5 * time.Second, 30 * time.Second, 2 * time.Minute, 5 * time.Minute, 15 * time.Minute,
	30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour,
}

// WebhookWindow is how long a delivery is retried, from its creation.
const WebhookWindow = 24 * time.Hour

// WebhookRetryAt is when a delivery created at created, whose attempts-th
// attempt (counting from 1) failed at now, is tried next: now plus the
// schedule's delay (WebhookRetryDelays), or now plus retryAfter (the
// receiver's Retry-After) when that is later, but never past
// created+WebhookWindow, where one final attempt is made. ok is false
// when the window is over (now is at or past its end): the delivery is
// dead. Both runtimes use it (the embedded notifier, and the AWS delivery
// path).
func WebhookRetryAt(created time.Time, attempts int, now time.Time, retryAfter time.Duration) (next time.Time, ok bool) {
	end := created.Add(WebhookWindow)
	if !now.Before(end) {
		return time.Time{}, false
	}
	delay := WebhookRetryDelays[len(WebhookRetryDelays)-1]
	if attempts >= 1 && attempts <= len(WebhookRetryDelays) {
		delay = WebhookRetryDelays[attempts-1]
	} else if attempts < 1 {
		delay = WebhookRetryDelays[0]
	}
	next = now.Add(max(delay, retryAfter))
	if next.After(end) {
		next = end
	}
	return next, true
}

// Defaults of a Notifier.
const (
	DefaultNotifierLease       = time.Minute
	DefaultNotifierBatch       = 100
	DefaultNotifierConcurrency = 8
)

// Notifier delivers the outbox's due webhook deliveries: it claims them,
// sends each to its subscription and records the outcome — delivered;
// due again later on the retry schedule (WebhookRetryAt); or dead, when
// the window is over, the subscription was removed or disabled, or its
// receiver answered 410 Gone (which also disables the subscription). A
// delivery keeps its event's id as webhook-id on every attempt, so a
// receiver that got an attempt whose answer was lost can tell the retry
// for what it is.
type Notifier struct {
	Deliveries    Deliveries
	Subscriptions Subscriptions
	Sender        WebhookSender
	// Now is the clock; default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// Lease is how long a claim keeps a delivery from other claims;
	// default 1 min. A delivery whose lease ended before its turn came is
	// left to the next claim, not sent; keep Lease above the sender's
	// timeout.
	Lease time.Duration
	// Batch bounds the deliveries claimed at once; default 100.
	Batch int
	// Concurrency bounds the attempts in flight; default 8.
	Concurrency int
}

func (n *Notifier) log() *slog.Logger { return loggerOr(n.Logger) }

func (n *Notifier) now() time.Time {
	if n.Now != nil {
		return n.Now()
	}
	return time.Now()
}

// Run delivers what is due until ctx is done: at once, then whenever wake
// receives (an event was recorded) or poll has passed since the last round
// (default 1 s), and again at once while rounds claim full batches. Errors
// are logged (without secrets) and never end it.
func (n *Notifier) Run(ctx context.Context, poll time.Duration, wake <-chan struct{}) {
	poll = orDefault(poll, time.Second)
	timer := time.NewTimer(poll)
	defer timer.Stop()
	for ctx.Err() == nil {
		delivered, claimed, err := n.deliverDue(ctx)
		if err != nil && ctx.Err() == nil {
			n.log().ErrorContext(ctx, "webhook deliveries", "err", err, "delivered", delivered, "claimed", claimed)
		}
		if err == nil && claimed >= orDefault(n.Batch, DefaultNotifierBatch) {
			continue
		}
		timer.Reset(poll)
		select {
		case <-ctx.Done():
		case <-wake:
		case <-timer.C:
		}
	}
}

// DeliverDue makes one attempt at each delivery due now (up to Batch of
// them, Concurrency at a time) and records the outcomes. It returns how
// many were delivered. An error (the store could not be reached) leaves
// the deliveries concerned to a later claim, once their lease ends.
func (n *Notifier) DeliverDue(ctx context.Context) (delivered int, err error) {
	delivered, _, err = n.deliverDue(ctx)
	return delivered, err
}

func (n *Notifier) deliverDue(ctx context.Context) (delivered, claimed int, err error) {
	now := n.now()
	lease := orDefault(n.Lease, DefaultNotifierLease)
	due, err := n.Deliveries.ClaimDeliveries(ctx, now, lease, orDefault(n.Batch, DefaultNotifierBatch))
	if err != nil {
		return 0, 0, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	leaseEnd := now.Add(lease)
	subs := &subscriptionCache{store: n.Subscriptions, entries: map[string]*cachedSubscription{}}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	concurrency := n.Concurrency
	if concurrency <= 0 {
		concurrency = DefaultNotifierConcurrency
	}
	slots := make(chan struct{}, concurrency)
	for _, d := range due {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break // the rest stay leased, and come back when the lease ends
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			ok, err := n.deliver(ctx, subs, d, leaseEnd)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				delivered++
			}
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	return delivered, len(due), errors.Join(errs...)
}

// deliver makes one attempt at d and records its outcome; it reports
// whether d was delivered. An error means the store could not be read or
// written: d stays as it was, leased until leaseEnd.
func (n *Notifier) deliver(ctx context.Context, subs *subscriptionCache, d Delivery, leaseEnd time.Time) (bool, error) {
	if !n.now().Before(leaseEnd) {
		// Its turn came after its lease: another claim may have it now.
		return false, nil
	}
	sub, err := subs.get(ctx, d.Subscription)
	switch {
	case errors.Is(err, post.ErrNotFound):
		return false, n.record(ctx, n.dead(d, 0, "subscription removed"))
	case err != nil:
		return false, fmt.Errorf("webhook delivery %s: read subscription %s: %w", d.ID, d.Subscription, err)
	case sub.Disabled:
		return false, n.record(ctx, n.dead(d, 0, "subscription disabled: "+sub.DisabledReason))
	}
	body, err := d.Event.Body()
	if err != nil {
		return false, n.record(ctx, n.dead(d, 0, fmt.Sprintf("event cannot be encoded: %v", err)))
	}

	res := n.Sender.Send(ctx, sub, d, body)
	if res.Err == nil && (res.Status < 200 || res.Status > 299) && res.Status != 0 {
		res.Err = fmt.Errorf("receiver answered %d", res.Status)
	}
	if res.Err != nil && ctx.Err() != nil {
		// Stopped mid-attempt: not counted; the delivery comes back when
		// its lease ends.
		return false, nil
	}
	// The attempt was made: its outcome is recorded even if ctx ends now.
	rctx := context.WithoutCancel(ctx)
	done := n.now()
	d.Attempts++
	d.LastStatus = res.Status
	d.UpdatedAt = done
	switch {
	case res.Err == nil:
		d.State, d.NextTry, d.LastError = DeliveryDelivered, time.Time{}, ""
		if err := n.record(rctx, d); err != nil {
			return false, err
		}
		return true, nil
	case res.Status == 410:
		reason := "receiver answered 410 Gone at " + done.UTC().Format(time.RFC3339)
		var disableErr error
		if err := n.Subscriptions.DisableSubscription(rctx, sub.ID, reason); err != nil && !errors.Is(err, post.ErrNotFound) {
			disableErr = fmt.Errorf("disable webhook subscription %s: %w", sub.ID, err)
		}
		subs.disable(sub.ID, reason)
		n.log().WarnContext(ctx, "webhook subscription disabled: its receiver answered 410 Gone", "subscription", sub.ID, "delivery", d.ID)
		d.State, d.NextTry, d.LastError = DeliveryDead, time.Time{}, res.Err.Error()+"; subscription disabled"
		return false, errors.Join(disableErr, n.record(rctx, d))
	}
	if next, ok := WebhookRetryAt(d.CreatedAt, d.Attempts, done, res.RetryAfter); ok {
		d.State, d.NextTry, d.LastError = DeliveryPending, next, res.Err.Error()
		n.log().InfoContext(ctx, "webhook attempt failed; tried again later", "delivery", d.ID, "attempts", d.Attempts,
			"status", res.Status, "err", res.Err, "next_try", next)
		return false, n.record(rctx, d)
	}
	d.State, d.NextTry = DeliveryDead, time.Time{}
	d.LastError = fmt.Sprintf("gave up after %d attempts in %s: %v", d.Attempts, WebhookWindow, res.Err)
	n.log().WarnContext(ctx, "webhook delivery dead", "delivery", d.ID, "attempts", d.Attempts, "status", res.Status, "err", res.Err)
	return false, n.record(rctx, d)
}

// dead is d given up for reason without an attempt.
func (n *Notifier) dead(d Delivery, status int, reason string) Delivery {
	d.State, d.NextTry, d.LastError, d.LastStatus, d.UpdatedAt = DeliveryDead, time.Time{}, reason, status, n.now()
	n.log().Warn("webhook delivery dead", "delivery", d.ID, "reason", reason)
	return d
}

// record stores d's outcome; a delivery removed meanwhile (its
// subscription was) is no error.
func (n *Notifier) record(ctx context.Context, d Delivery) error {
	err := n.Deliveries.RecordDelivery(ctx, d)
	if errors.Is(err, ErrDeliveryGone) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("record webhook delivery %s (%s): %w", d.ID, d.State, err)
	}
	return nil
}

// subscriptionCache reads each subscription once per round, and learns of
// a subscription disabled during the round.
type subscriptionCache struct {
	store   Subscriptions
	mu      sync.Mutex
	entries map[string]*cachedSubscription
}

type cachedSubscription struct {
	once sync.Once
	sub  Subscription
	err  error
}

func (c *subscriptionCache) get(ctx context.Context, id string) (Subscription, error) {
	c.mu.Lock()
	e, ok := c.entries[id]
	if !ok {
		e = &cachedSubscription{}
		c.entries[id] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		sub, err := c.store.GetSubscription(ctx, id)
		c.mu.Lock()
		e.sub, e.err = sub, err
		c.mu.Unlock()
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	return e.sub, e.err
}

func (c *subscriptionCache) disable(id, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[id]; ok && e.err == nil {
		e.sub.Disabled, e.sub.DisabledReason = true, reason
	}
}
