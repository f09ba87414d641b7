package publishing_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/publishing"
)

// scriptedSender answers every attempt with res and counts attempts.
type scriptedSender struct {
	res   publishing.SendResult
	calls []publishing.Delivery
}

func (s *scriptedSender) Send(_ context.Context, _ publishing.Subscription, d publishing.Delivery, _ []byte) publishing.SendResult {
	s.calls = append(s.calls, d)
	return s.res
}

// disableFailing is an outbox whose DisableSubscription fails.
type disableFailing struct{ *memOutbox }

func (disableFailing) DisableSubscription(context.Context, string, string) error {
	return errors.New("dynamodb: throttled")
}

// An attempt of a queued webhook says what becomes of its message, by
// the attempt's outcome and the subscription's state.
func TestQueuedWebhookVerdicts(t *testing.T) {
	created := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	ev := publishing.Event{ID: publishing.EventID("x"), Type: publishing.EventPublished, At: created, Post: "p", Account: "a"}
	msg := publishing.WebhookMessage{Event: ev, Subscription: "wh_1", CreatedAt: created}
	fail := func(status int) publishing.SendResult {
		return publishing.SendResult{Status: status, Err: errors.New("receiver answered " + strconv.Itoa(status))}
	}
	tests := []struct {
		name    string
		res     publishing.SendResult
		sub     *publishing.Subscription // nil: removed
		getErr  error
		disable bool // DisableSubscription fails
		attempt int
		now     time.Time
		want    publishing.WebhookVerdict
		sent    bool
	}{
		{name: "delivered", res: publishing.SendResult{Status: 204}, attempt: 1, now: created, want: publishing.WebhookVerdict{Done: true}, sent: true},
		{name: "failed: the schedule's next try", res: fail(500), attempt: 1, now: created,
			want: publishing.WebhookVerdict{Retry: publishing.WebhookRetryDelays[0]}, sent: true},
		{name: "third failure", res: fail(502), attempt: 3, now: created.Add(time.Minute),
			want: publishing.WebhookVerdict{Retry: publishing.WebhookRetryDelays[2]}, sent: true},
		{name: "Retry-After honoured", res: publishing.SendResult{Status: 429, Err: errors.New("429"), RetryAfter: time.Hour}, attempt: 1, now: created,
			want: publishing.WebhookVerdict{Retry: time.Hour}, sent: true},
		{name: "no answer", res: publishing.SendResult{Err: errors.New("dial tcp: connection refused")}, attempt: 2, now: created,
			want: publishing.WebhookVerdict{Retry: publishing.WebhookRetryDelays[1]}, sent: true},
		{name: "window over", res: fail(503), attempt: 13, now: created.Add(24 * time.Hour),
			want: publishing.WebhookVerdict{DeadReason: "webhook_expired: 13 attempts from 2026-03-14T09:00:00Z, the last: receiver answered 503"}, sent: true},
		{name: "gone", res: fail(410), attempt: 1, now: created,
			want: publishing.WebhookVerdict{DeadReason: "receiver_gone: the receiver answered 410 Gone at 2026-03-14T09:00:00Z; subscription wh_1 disabled"}, sent: true},
		{name: "gone, not disabled", res: fail(410), disable: true, attempt: 1, now: created,
			want: publishing.WebhookVerdict{Retry: publishing.WebhookStoreRetry}, sent: true},
		{name: "subscription removed", sub: nil, attempt: 1, now: created, want: publishing.WebhookVerdict{Done: true}},
		{name: "subscription unreadable", getErr: errors.New("dynamodb: 500"), attempt: 1, now: created,
			want: publishing.WebhookVerdict{Retry: publishing.WebhookStoreRetry}},
		{name: "subscription disabled", sub: &publishing.Subscription{ID: "wh_1", URL: "https://r.example", Disabled: true, DisabledReason: "410 Gone"}, attempt: 1, now: created,
			want: publishing.WebhookVerdict{DeadReason: "subscription_disabled: subscription wh_1 is disabled (410 Gone); not sent"}},
	}
	active := &publishing.Subscription{ID: "wh_1", URL: "https://r.example", Secret: "whsec_eA=="}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := newMemOutbox()
			sub := tt.sub
			if sub == nil && tt.name != "subscription removed" {
				sub = active
			}
			if sub != nil {
				if err := out.AddSubscription(context.Background(), *sub); err != nil {
					t.Fatal(err)
				}
			}
			out.getErr = tt.getErr
			var subs interface {
				GetSubscription(ctx context.Context, id string) (publishing.Subscription, error)
				DisableSubscription(ctx context.Context, id, reason string) error
			} = out
			if tt.disable {
				subs = disableFailing{out}
			}
			sender := &scriptedSender{res: tt.res}
			w := &publishing.QueuedWebhooks{Subscriptions: subs, Sender: sender, RetryAt: publishing.WebhookRetryAt, Now: func() time.Time { return tt.now }}
			got := w.Attempt(context.Background(), msg, tt.attempt, created)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
			if (len(sender.calls) == 1) != tt.sent {
				t.Fatalf("%d attempts sent, want sent=%t", len(sender.calls), tt.sent)
			}
			if tt.sent {
				d := sender.calls[0]
				if d.ID != publishing.DeliveryID(ev.ID, "wh_1") || d.Event.ID != ev.ID || d.Attempts != tt.attempt-1 || !d.CreatedAt.Equal(created) {
					t.Errorf("the delivery sent: %+v", d)
				}
			}
			if tt.name == "gone" {
				if s, _ := out.GetSubscription(context.Background(), "wh_1"); !s.Disabled {
					t.Error("a 410 left the subscription enabled")
				}
			}
		})
	}
}

// The deliveries of an event go to the subscriptions that want it, and a
// message refuses what is not a delivery, naming the field.
func TestWebhookMessages(t *testing.T) {
	now := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	ev := publishing.Event{ID: publishing.EventID("y"), Type: publishing.EventFailed, At: now, Post: "p", Account: "a", Status: "failed", Reason: "refused"}
	subs := []publishing.Subscription{
		{ID: "wh_all"}, {ID: "wh_failed", Events: []publishing.EventType{publishing.EventFailed}},
		{ID: "wh_published", Events: []publishing.EventType{publishing.EventPublished}}, {ID: "wh_off", Disabled: true},
	}
	got := publishing.WebhookMessages(ev, subs, now.In(time.FixedZone("CET", 3600)))
	want := []publishing.WebhookMessage{{Event: ev, Subscription: "wh_all", CreatedAt: now}, {Event: ev, Subscription: "wh_failed", CreatedAt: now}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WebhookMessages (-want +got):\n%s", diff)
	}
	b, err := got[0].Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := publishing.DecodeWebhookMessage(b)
	if err != nil || !cmp.Equal(got[0], back) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	for _, tt := range []struct{ body, want string }{
		{`{"event":{"type":"post.failed"},"subscription_id":"s","created_at":"2026-03-14T09:00:00Z"}`, "event.id is empty"},
		{`{"event":{"id":"e","type":"post.lost"},"subscription_id":"s","created_at":"2026-03-14T09:00:00Z"}`, `event.type "post.lost"`},
		{`{"event":{"id":"e","type":"post.failed"},"created_at":"2026-03-14T09:00:00Z"}`, "subscription_id is empty"},
		{`{"event":{"id":"e","type":"post.failed"},"subscription_id":"s"}`, "created_at is missing"},
		{`{"event":{"id":"e","type":"post.failed"},"subscription_id":"s","created_at":"2026-03-14T09:00:00Z","extra":1}`, `unknown field "extra"`},
		{`not json`, "webhook message"},
	} {
		if _, err := publishing.DecodeWebhookMessage([]byte(tt.body)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("DecodeWebhookMessage(%s) = %v, want an error containing %q", tt.body, err, tt.want)
		}
	}
}
