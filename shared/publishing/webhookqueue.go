package publishing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"oncepost/shared/post"
)

// Webhooks through a queue: the AWS runtime's outbox is the tables'
// change stream, and its deliveries are messages of a queue (SQS), one
// per event and subscription, each delivery of a message one attempt.
// The notifier makes the messages (WebhookMessages); QueuedWebhooks
// makes the attempts and says what becomes of the message: done, back
// after the backoff (its visibility), or dead-lettered with the reason,
// where an operator sees and redrives it like a dead job.

// WebhookMessage is one delivery on the webhook queue.
type WebhookMessage struct {
	Event        Event  `json:"event"`
	Subscription string `json:"subscription_id"`
	// CreatedAt is when the notifier made the delivery: its 24 h of
	// retries count from it (or from the message's send, if later: a
	// redriven dead letter starts again).
	CreatedAt time.Time `json:"created_at"`
}

// WebhookMessages are the deliveries of ev: one per subscription that
// wants it (not disabled, the type among its events), made at now.
func WebhookMessages(ev Event, subs []Subscription, now time.Time) []WebhookMessage {
	var out []WebhookMessage
	for _, s := range subs {
		if s.Wants(ev.Type) {
			out = append(out, WebhookMessage{Event: ev, Subscription: s.ID, CreatedAt: now.UTC()})
		}
	}
	return out
}

// Encode is the message's body.
func (m WebhookMessage) Encode() ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("webhook message %s: %w", DeliveryID(m.Event.ID, m.Subscription), err)
	}
	return b, nil
}

// DecodeWebhookMessage reads a message body, refusing unknown fields and
// a message without an event id, a known event type, a subscription or
// a creation time (the error names the field).
func DecodeWebhookMessage(b []byte) (WebhookMessage, error) {
	var m WebhookMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return WebhookMessage{}, fmt.Errorf("webhook message: %w", err)
	}
	switch {
	case m.Event.ID == "":
		return WebhookMessage{}, errors.New("webhook message: event.id is empty")
	case !ValidEventType(m.Event.Type):
		return WebhookMessage{}, fmt.Errorf("webhook message: event.type %q is not an event type", m.Event.Type)
	case m.Subscription == "":
		return WebhookMessage{}, errors.New("webhook message: subscription_id is empty")
	case m.CreatedAt.IsZero():
		return WebhookMessage{}, errors.New("webhook message: created_at is missing")
	}
	return m, nil
}

// Reasons a queued webhook is dead-lettered with; the text after the
// prefix says more.
const (
	// ReasonWebhookExpired: the receiver kept failing until the 24 h of
	// retries were over.
	ReasonWebhookExpired = "webhook_expired"
	// ReasonReceiverGone: the receiver answered 410 Gone; its subscription
	// is disabled.
	ReasonReceiverGone = "receiver_gone"
	// ReasonSubscriptionDisabled: the subscription was disabled before the
	// delivery was made.
	ReasonSubscriptionDisabled = "subscription_disabled"
	// ReasonUndecodableWebhook: the message is not a webhook message.
	ReasonUndecodableWebhook = "undecodable_webhook"
)

// WebhookStoreRetry is when a message comes back whose subscription
// could not be read (the store unreachable): the attempt was not made.
const WebhookStoreRetry = time.Minute

// WebhookVerdict is what becomes of a queued webhook after an attempt.
type WebhookVerdict struct {
	// Done: delete the message (delivered, or its subscription is gone).
	Done bool
	// Retry, if positive, is when the message comes back (its
	// visibility); the queue caps it at its longest.
	Retry time.Duration
	// DeadReason, if set, dead-letters the message with it.
	DeadReason string
}

// QueuedWebhooks makes the attempts of queued webhook deliveries.
type QueuedWebhooks struct {
	// Subscriptions are read for each message (GetSubscription, with the
	// secret) and disabled on a 410.
	Subscriptions interface {
		GetSubscription(ctx context.Context, id string) (Subscription, error)
		DisableSubscription(ctx context.Context, id, reason string) error
	}
	Sender WebhookSender
	// RetryAt is the backoff: when attempt attempts+1 is due, false when
	// the window from created is over.
	RetryAt func(created time.Time, attempts int, now time.Time, retryAfter time.Duration) (time.Time, bool)
	Now     func() time.Time
	Logger  *slog.Logger
}

func (w *QueuedWebhooks) log() *slog.Logger {
	if w.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return w.Logger
}

// Attempt makes attempt number attempt (1 for the first) of the
// delivery m, whose window began at windowStart (m.CreatedAt, or the
// message's send if later), and says what becomes of the message:
//
//   - a 2xx: done;
//   - a 410: the subscription is disabled and the message dead-lettered
//     (ReasonReceiverGone);
//   - another failure: back at the next try (RetryAt, the receiver's
//     Retry-After honoured), or dead-lettered when the window is over
//     (ReasonWebhookExpired) with the last error;
//   - a subscription disabled meanwhile: dead-lettered unsent
//     (ReasonSubscriptionDisabled); one removed: done, unsent;
//   - a subscription that cannot be read: back after WebhookStoreRetry,
//     unsent.
//
// Every attempt carries the event id as webhook-id and the same body
// (Event.Body), so a receiver dedupes retries and redeliveries alike.
func (w *QueuedWebhooks) Attempt(ctx context.Context, m WebhookMessage, attempt int, windowStart time.Time) WebhookVerdict {
	id := DeliveryID(m.Event.ID, m.Subscription)
	sub, err := w.Subscriptions.GetSubscription(ctx, m.Subscription)
	switch {
	case errors.Is(err, post.ErrNotFound):
		w.log().InfoContext(ctx, "webhook: subscription removed; delivery dropped", "delivery", id)
		return WebhookVerdict{Done: true}
	case err != nil:
		w.log().ErrorContext(ctx, "webhook: subscription unreadable; the delivery comes back", "delivery", id, "err", err)
		return WebhookVerdict{Retry: WebhookStoreRetry}
	case sub.Disabled:
		return WebhookVerdict{DeadReason: fmt.Sprintf("%s: subscription %s is disabled (%s); not sent", ReasonSubscriptionDisabled, sub.ID, sub.DisabledReason)}
	}
	body, err := m.Event.Body()
	if err != nil {
		return WebhookVerdict{DeadReason: fmt.Sprintf("%s: %v", ReasonUndecodableWebhook, err)}
	}
	d := Delivery{ID: id, Event: m.Event, Subscription: sub.ID, State: DeliveryPending, Attempts: attempt - 1, CreatedAt: windowStart}
	res := w.Sender.Send(ctx, sub, d, body)
	now := w.Now()
	if res.Err == nil && res.Status >= 200 && res.Status < 300 {
		w.log().InfoContext(ctx, "webhook delivered", "delivery", id, "attempt", attempt, "status", res.Status)
		return WebhookVerdict{Done: true}
	}
	why := "no answer"
	if res.Err != nil {
		why = res.Err.Error()
	} else if res.Status != 0 {
		why = fmt.Sprintf("status %d", res.Status)
	}
	if res.Status == 410 {
		reason := fmt.Sprintf("the receiver answered 410 Gone at %s", now.UTC().Format(time.RFC3339))
		if err := w.Subscriptions.DisableSubscription(ctx, sub.ID, reason); err != nil && !errors.Is(err, post.ErrNotFound) {
			// Not disabled: the message comes back and the next 410
			// tries again.
			w.log().ErrorContext(ctx, "webhook: receiver gone, subscription not disabled; the delivery comes back", "delivery", id, "err", err)
			return WebhookVerdict{Retry: WebhookStoreRetry}
		}
		w.log().WarnContext(ctx, "webhook receiver gone (410); subscription disabled", "delivery", id, "subscription", sub.ID)
		return WebhookVerdict{DeadReason: fmt.Sprintf("%s: %s; subscription %s disabled", ReasonReceiverGone, reason, sub.ID)}
	}
	next, ok := w.RetryAt(windowStart, attempt, now, res.RetryAfter)
	if !ok {
		w.log().WarnContext(ctx, "webhook given up after its window; dead-lettered", "delivery", id, "attempts", attempt, "err", why)
		return WebhookVerdict{DeadReason: fmt.Sprintf("%s: %d attempts from %s, the last: %s", ReasonWebhookExpired, attempt, windowStart.UTC().Format(time.RFC3339), why)}
	}
	w.log().InfoContext(ctx, "webhook attempt failed; tried again later", "delivery", id, "attempt", attempt, "next_try", next.UTC().Format(time.RFC3339), "err", why)
	return WebhookVerdict{Retry: max(next.Sub(now), time.Second)}
}
