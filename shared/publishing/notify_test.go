package publishing_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/clocktest"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/webhook"
)

// memOutbox is an in-memory Subscriptions and Deliveries for the
// notifier's tests (the stores' own suites test theirs).
type memOutbox struct {
	mu       sync.Mutex
	subs     map[string]publishing.Subscription
	dels     map[string]publishing.Delivery
	leased   map[string]time.Time
	claimErr error // returned by the next claim, once
	getErr   error // returned by the next GetSubscription, once
}

var (
	_ publishing.Subscriptions = (*memOutbox)(nil)
	_ publishing.Deliveries    = (*memOutbox)(nil)
)

func newMemOutbox() *memOutbox {
	return &memOutbox{subs: map[string]publishing.Subscription{}, dels: map[string]publishing.Delivery{}, leased: map[string]time.Time{}}
}

func (m *memOutbox) AddSubscription(_ context.Context, s publishing.Subscription) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.subs[s.ID]; ok {
		return post.ErrConflict
	}
	m.subs[s.ID] = s
	return nil
}

func (m *memOutbox) GetSubscription(_ context.Context, id string) (publishing.Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.getErr; err != nil {
		m.getErr = nil
		return publishing.Subscription{}, err
	}
	s, ok := m.subs[id]
	if !ok {
		return publishing.Subscription{}, post.ErrNotFound
	}
	return s, nil
}

func (m *memOutbox) ListSubscriptions(context.Context) ([]publishing.Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []publishing.Subscription
	for _, s := range m.subs {
		out = append(out, s)
	}
	return out, nil
}

func (m *memOutbox) RemoveSubscription(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.subs[id]; !ok {
		return post.ErrNotFound
	}
	delete(m.subs, id)
	for k, d := range m.dels {
		if d.Subscription == id && d.State == publishing.DeliveryPending {
			delete(m.dels, k)
		}
	}
	return nil
}

func (m *memOutbox) DisableSubscription(_ context.Context, id, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.subs[id]
	if !ok {
		return post.ErrNotFound
	}
	s.Disabled, s.DisabledReason = true, reason
	m.subs[id] = s
	return nil
}

func (m *memOutbox) ClaimDeliveries(_ context.Context, now time.Time, lease time.Duration, limit int) ([]publishing.Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.claimErr; err != nil {
		m.claimErr = nil
		return nil, err
	}
	var due []publishing.Delivery
	for _, d := range m.dels {
		if d.State == publishing.DeliveryPending && !d.NextTry.After(now) && !m.leased[d.ID].After(now) {
			due = append(due, d)
		}
	}
	slices.SortFunc(due, func(a, b publishing.Delivery) int { return a.NextTry.Compare(b.NextTry) })
	due = due[:min(len(due), limit)]
	for _, d := range due {
		m.leased[d.ID] = now.Add(lease)
	}
	return due, nil
}

func (m *memOutbox) RecordDelivery(_ context.Context, d publishing.Delivery) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.dels[d.ID]; !ok {
		return publishing.ErrDeliveryGone
	}
	m.dels[d.ID] = d
	delete(m.leased, d.ID)
	return nil
}

func (m *memOutbox) ListDeliveries(_ context.Context, state publishing.DeliveryState, limit int) ([]publishing.Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []publishing.Delivery
	for _, d := range m.dels {
		if state == "" || d.State == state {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b publishing.Delivery) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	if limit > 0 {
		out = out[:min(len(out), limit)]
	}
	return out, nil
}

func (m *memOutbox) RedriveDelivery(_ context.Context, id string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.dels[id]
	switch {
	case !ok:
		return post.ErrNotFound
	case d.State != publishing.DeliveryDead:
		return post.ErrConflict
	}
	d.State, d.Attempts, d.CreatedAt, d.NextTry, d.UpdatedAt = publishing.DeliveryPending, 0, now, now, now
	m.dels[id] = d
	return nil
}

// record fans ev out to subscription sub as the stores do: pending, due
// at once, its window starting now.
func (m *memOutbox) record(ev publishing.Event, sub string, now time.Time) publishing.Delivery {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := publishing.Delivery{
		ID: publishing.DeliveryID(ev.ID, sub), Event: ev, Subscription: sub, State: publishing.DeliveryPending,
		CreatedAt: now, NextTry: now, UpdatedAt: now,
	}
	m.dels[d.ID] = d
	return d
}

func (m *memOutbox) delivery(t *testing.T, id string) publishing.Delivery {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.dels[id]
	if !ok {
		t.Fatalf("delivery %s is gone", id)
	}
	return d
}

// attempt is one request a test receiver got.
type attempt struct {
	ID, Timestamp string
}

// notifyEnv is a notifier with the real webhook sender, an in-memory
// outbox, a fake clock, and a receiver on 127.0.0.1 that answers each
// attempt with answer(n) (n counting from 1).
type notifyEnv struct {
	clock    *clocktest.Clock
	outbox   *memOutbox
	notifier *publishing.Notifier
	sub      publishing.Subscription
	logs     *syncBuffer
	mu       sync.Mutex
	got      []attempt
}

// syncBuffer is a bytes.Buffer safe for the notifier's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var notifyT0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

func newNotifyEnv(t *testing.T, answer func(n int, w http.ResponseWriter)) *notifyEnv {
	t.Helper()
	e := &notifyEnv{clock: clocktest.New(notifyT0), outbox: newMemOutbox(), logs: &syncBuffer{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.got = append(e.got, attempt{ID: r.Header.Get("webhook-id"), Timestamp: r.Header.Get("webhook-timestamp")})
		n := len(e.got)
		e.mu.Unlock()
		answer(n, w)
	}))
	t.Cleanup(srv.Close)
	secret, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	e.sub = publishing.Subscription{ID: "wh_1", URL: srv.URL + "/hooks", Secret: secret, AllowPrivate: true, CreatedAt: notifyT0}
	if err := e.outbox.AddSubscription(context.Background(), e.sub); err != nil {
		t.Fatal(err)
	}
	e.notifier = &publishing.Notifier{
		Deliveries: e.outbox, Subscriptions: e.outbox,
		Sender: webhook.NewSender(webhook.Options{Now: e.clock.Now, Timeout: 10 * time.Second}),
		Now:    e.clock.Now, Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	t.Cleanup(func() {
		if strings.Contains(e.logs.String(), strings.TrimPrefix(e.sub.Secret, webhook.SecretPrefix)) {
			t.Errorf("the logs hold the subscription's secret:\n%s", e.logs.String())
		}
	})
	return e
}

func (e *notifyEnv) attempts() []attempt {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]attempt(nil), e.got...)
}

// event is a sample event, distinct per name.
func event(name string) publishing.Event {
	return publishing.Event{
		ID: publishing.EventID("notify-test", name), Type: publishing.EventPublished, At: notifyT0,
		Post: post.ID("p_" + name), Account: "a_1", Status: "published",
	}
}

// untilSettled runs DeliverDue, moving the clock to each next try, until d
// is no longer pending (or max rounds pass).
func (e *notifyEnv) untilSettled(t *testing.T, id string, max int) publishing.Delivery {
	t.Helper()
	for range max {
		if _, err := e.notifier.DeliverDue(context.Background()); err != nil {
			t.Fatalf("DeliverDue: %v", err)
		}
		d := e.outbox.delivery(t, id)
		if d.State != publishing.DeliveryPending {
			return d
		}
		if !d.NextTry.After(e.clock.Now()) {
			t.Fatalf("pending delivery due at %v, not after now %v", d.NextTry, e.clock.Now())
		}
		e.clock.Set(d.NextTry)
	}
	t.Fatalf("delivery %s still pending after %d rounds", id, max)
	return publishing.Delivery{}
}

func unixAt(d time.Duration) string { return strconv.FormatInt(notifyT0.Add(d).Unix(), 10) }

// TestNotifierRetriesWithTheSameID: a receiver that fails three times
// gets the event on the fourth attempt, every attempt with the event's id
// as webhook-id (a notifier making a new id per attempt fails this) and
// its own time as webhook-timestamp, on the schedule's first delays.
func TestNotifierRetriesWithTheSameID(t *testing.T) {
	e := newNotifyEnv(t, func(n int, w http.ResponseWriter) {
		if n <= 3 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	ev := event("retried")
	d := e.outbox.record(ev, e.sub.ID, notifyT0)

	got := e.untilSettled(t, d.ID, 10)
	want := []attempt{
		{ev.ID, unixAt(0)}, {ev.ID, unixAt(5 * time.Second)}, {ev.ID, unixAt(35 * time.Second)}, {ev.ID, unixAt(2*time.Minute + 35*time.Second)},
	}
	if diff := cmp.Diff(want, e.attempts()); diff != "" {
		t.Errorf("attempts (webhook-id, webhook-timestamp) (-want +got):\n%s", diff)
	}
	wantD := d
	wantD.State, wantD.Attempts, wantD.NextTry, wantD.LastStatus, wantD.LastError = publishing.DeliveryDelivered, 4, time.Time{}, 200, ""
	wantD.UpdatedAt = notifyT0.Add(2*time.Minute + 35*time.Second)
	if diff := cmp.Diff(wantD, got); diff != "" {
		t.Errorf("delivery (-want +got):\n%s", diff)
	}
	// Delivered is final: nothing more is sent.
	e.clock.Advance(time.Hour)
	if n, err := e.notifier.DeliverDue(context.Background()); err != nil || n != 0 {
		t.Errorf("DeliverDue after delivery = %d, %v; want 0, nil", n, err)
	}
	if n := len(e.attempts()); n != 4 {
		t.Errorf("receiver got %d attempts, want 4", n)
	}
}

// TestNotifierGivesUpAfter24Hours: a receiver that always fails is tried
// on the schedule, a last time at 24 h, and the delivery is then dead
// with the reason.
func TestNotifierGivesUpAfter24Hours(t *testing.T) {
	e := newNotifyEnv(t, func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) })
	d := e.outbox.record(event("failing"), e.sub.ID, notifyT0)

	got := e.untilSettled(t, d.ID, 30)
	var offsets []time.Duration
	for _, a := range e.attempts() {
		unix, err := strconv.ParseInt(a.Timestamp, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, time.Unix(unix, 0).Sub(notifyT0))
	}
	var wantOffsets []time.Duration
	for at, k := time.Duration(0), 0; at < 24*time.Hour; k++ {
		wantOffsets = append(wantOffsets, at)
		at += publishing.WebhookRetryDelays[min(k, len(publishing.WebhookRetryDelays)-1)]
	}
	wantOffsets = append(wantOffsets, 24*time.Hour)
	if diff := cmp.Diff(wantOffsets, offsets); diff != "" {
		t.Errorf("attempt times after creation (-want +got):\n%s", diff)
	}
	if len(offsets) != 13 {
		t.Errorf("%d attempts, want 13", len(offsets))
	}
	if got.State != publishing.DeliveryDead || got.Attempts != 13 || got.LastStatus != 500 || !got.NextTry.IsZero() ||
		!strings.Contains(got.LastError, "gave up after 13 attempts in 24h0m0s") || !strings.Contains(got.LastError, "500 Internal Server Error") {
		t.Errorf("delivery = %+v, want dead after 13 attempts with the reason", got)
	}
	e.clock.Advance(48 * time.Hour)
	if _, err := e.notifier.DeliverDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(e.attempts()); n != 13 {
		t.Errorf("receiver got %d attempts, want no more than 13", n)
	}
}

// TestNotifierDisablesOnGone: a 410 disables the subscription and makes
// the delivery dead; the next delivery to it is dead without a request.
func TestNotifierDisablesOnGone(t *testing.T) {
	e := newNotifyEnv(t, func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusGone) })
	e.notifier.Concurrency = 1
	first := e.outbox.record(event("first"), e.sub.ID, notifyT0)
	second := e.outbox.record(event("second"), e.sub.ID, notifyT0.Add(time.Second))
	third := e.outbox.record(event("third"), e.sub.ID, notifyT0.Add(time.Second))
	e.clock.Set(notifyT0.Add(time.Second))

	if _, err := e.notifier.DeliverDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	sub, err := e.outbox.GetSubscription(context.Background(), e.sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantReason := "receiver answered 410 Gone at 2026-12-01T08:00:01Z"
	if !sub.Disabled || sub.DisabledReason != wantReason {
		t.Errorf("subscription disabled %v, %q; want disabled, %q", sub.Disabled, sub.DisabledReason, wantReason)
	}
	if n := len(e.attempts()); n != 1 {
		t.Errorf("receiver got %d requests, want 1", n)
	}
	d := e.outbox.delivery(t, first.ID)
	if d.State != publishing.DeliveryDead || d.LastStatus != 410 || d.Attempts != 1 || !strings.Contains(d.LastError, "410 Gone; subscription disabled") {
		t.Errorf("first delivery = %+v, want dead after the 410", d)
	}
	for _, id := range []string{second.ID, third.ID} {
		d := e.outbox.delivery(t, id)
		if d.State != publishing.DeliveryDead || d.Attempts != 0 || d.LastError != "subscription disabled: "+wantReason {
			t.Errorf("delivery %s = %+v, want dead unsent, the subscription disabled", id, d)
		}
	}
}

// TestNotifierHonoursRetryAfter: a 429's or 503's Retry-After moves the
// next try past the schedule's, but never past the window's end.
func TestNotifierHonoursRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		retryAfter string
		at         time.Duration // of the attempt, after the delivery was created
		want       time.Duration // next try, after the delivery was created
	}{
		{"429 seconds", 429, "600", 0, 10 * time.Minute},
		{"503 date", 503, notifyT0.Add(2 * time.Hour).Format(http.TimeFormat), 0, 2 * time.Hour},
		{"shorter than the schedule", 429, "1", 0, 5 * time.Second},
		{"past the window", 503, "172800", 20 * time.Hour, 24 * time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newNotifyEnv(t, func(_ int, w http.ResponseWriter) {
				w.Header().Set("Retry-After", tc.retryAfter)
				w.WriteHeader(tc.status)
			})
			d := e.outbox.record(event(tc.name), e.sub.ID, notifyT0.Add(-tc.at))
			if _, err := e.notifier.DeliverDue(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := e.outbox.delivery(t, d.ID)
			if want := notifyT0.Add(-tc.at).Add(tc.want); got.State != publishing.DeliveryPending || !got.NextTry.Equal(want) || got.LastStatus != tc.status {
				t.Errorf("delivery = %s, next try %v, status %d; want pending, %v, %d", got.State, got.NextTry, got.LastStatus, want, tc.status)
			}
		})
	}
}

// TestNotifierDropsDeliveriesOfRemovedSubscriptions: a delivery whose
// subscription is gone is dead unsent; one removed while its attempt was
// in flight (the store answers ErrDeliveryGone) is no error.
func TestNotifierDropsDeliveriesOfRemovedSubscriptions(t *testing.T) {
	e := newNotifyEnv(t, func(int, http.ResponseWriter) {})
	orphan := e.outbox.record(event("orphan"), "wh_removed", notifyT0)
	if _, err := e.notifier.DeliverDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := e.outbox.delivery(t, orphan.ID); d.State != publishing.DeliveryDead || d.LastError != "subscription removed" || d.Attempts != 0 {
		t.Errorf("orphan delivery = %+v, want dead, subscription removed", d)
	}
	if n := len(e.attempts()); n != 0 {
		t.Errorf("receiver got %d requests", n)
	}

	e.outbox.record(event("removed in flight"), e.sub.ID, notifyT0)
	e.notifier.Sender = removingSender{next: e.notifier.Sender, outbox: e.outbox}
	if _, err := e.notifier.DeliverDue(context.Background()); err != nil {
		t.Errorf("DeliverDue with the delivery removed in flight: %v", err)
	}
}

// removingSender removes the subscription while sending.
type removingSender struct {
	next   publishing.WebhookSender
	outbox *memOutbox
}

func (s removingSender) Send(ctx context.Context, sub publishing.Subscription, d publishing.Delivery, body []byte) publishing.SendResult {
	res := s.next.Send(ctx, sub, d, body)
	_ = s.outbox.RemoveSubscription(ctx, sub.ID)
	return res
}

// TestNotifierStoreErrors: a claim that fails is an error naming it; a
// subscription that cannot be read leaves its delivery untouched (leased)
// until the lease ends, then it is delivered.
func TestNotifierStoreErrors(t *testing.T) {
	e := newNotifyEnv(t, func(int, http.ResponseWriter) {})
	d := e.outbox.record(event("store errors"), e.sub.ID, notifyT0)

	e.outbox.claimErr = errors.New("database is locked")
	if _, err := e.notifier.DeliverDue(context.Background()); err == nil || !strings.Contains(err.Error(), "claim webhook deliveries: database is locked") {
		t.Errorf("DeliverDue with the claim failing = %v, want the claim's error", err)
	}
	e.outbox.getErr = errors.New("disk I/O error")
	if _, err := e.notifier.DeliverDue(context.Background()); err == nil || !strings.Contains(err.Error(), "read subscription wh_1: disk I/O error") {
		t.Errorf("DeliverDue with the subscription unreadable = %v, want its error", err)
	}
	if got := e.outbox.delivery(t, d.ID); got.State != publishing.DeliveryPending || got.Attempts != 0 {
		t.Errorf("delivery = %+v, want untouched", got)
	}
	if n, err := e.notifier.DeliverDue(context.Background()); err != nil || n != 0 {
		t.Errorf("DeliverDue within the lease = %d, %v; want 0, nil", n, err)
	}
	e.clock.Advance(publishing.DefaultNotifierLease)
	if n, err := e.notifier.DeliverDue(context.Background()); err != nil || n != 1 {
		t.Errorf("DeliverDue after the lease = %d, %v; want 1, nil", n, err)
	}
}

// TestNotifierRun: Run survives a failing claim (logged), delivers when
// woken, and returns when its context ends.
func TestNotifierRun(t *testing.T) {
	e := newNotifyEnv(t, func(int, http.ResponseWriter) {})
	e.outbox.claimErr = errors.New("database is locked")
	ctx, cancel := context.WithCancel(context.Background())
	wake := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.notifier.Run(ctx, time.Hour, wake)
	}()
	d := e.outbox.record(event("run"), e.sub.ID, notifyT0)
	for deadline := time.Now().Add(10 * time.Second); ; {
		select {
		case wake <- struct{}{}:
		case <-time.After(10 * time.Millisecond):
		}
		if e.outbox.delivery(t, d.ID).State == publishing.DeliveryDelivered {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered; logs:\n%s", e.logs.String())
		}
	}
	cancel()
	<-done
	if logs := e.logs.String(); !strings.Contains(logs, "database is locked") {
		t.Errorf("the failed claim was not logged:\n%s", logs)
	}
}

func TestWebhookRetryAt(t *testing.T) {
	created := notifyT0
	tests := []struct {
		name       string
		attempts   int
		now        time.Duration // after created
		retryAfter time.Duration
		want       time.Duration // after created
		wantOK     bool
	}{
		{"first failure", 1, 0, 0, 5 * time.Second, true},
		{"second", 2, 5 * time.Second, 0, 35 * time.Second, true},
		{"third", 3, time.Minute, 0, 3 * time.Minute, true},
		{"tenth", 10, 2 * time.Hour, 0, 10 * time.Hour, true},
		{"after the list, every 8 h", 11, 3 * time.Hour, 0, 11 * time.Hour, true},
		{"far past the list", 40, 4 * time.Hour, 0, 12 * time.Hour, true},
		{"capped at the window's end", 11, 20 * time.Hour, 0, 24 * time.Hour, true},
		{"Retry-After later", 1, 0, time.Hour, time.Hour, true},
		{"Retry-After sooner", 5, 0, time.Second, 15 * time.Minute, true},
		{"Retry-After past the end", 1, 23 * time.Hour, 48 * time.Hour, 24 * time.Hour, true},
		{"just before the end", 12, 24*time.Hour - time.Second, 0, 24 * time.Hour, true},
		{"at the end", 13, 24 * time.Hour, 0, 0, false},
		{"after the end", 3, 25 * time.Hour, 0, 0, false},
		{"zero attempts", 0, 0, 0, 5 * time.Second, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next, ok := publishing.WebhookRetryAt(created, tc.attempts, created.Add(tc.now), tc.retryAfter)
			var want time.Time
			if tc.wantOK {
				want = created.Add(tc.want)
			}
			if ok != tc.wantOK || !next.Equal(want) {
				t.Errorf("WebhookRetryAt = %v, %v; want %v, %v", next.Sub(created), ok, tc.want, tc.wantOK)
			}
		})
	}
	// The schedule as documented: 13 attempts in 24 h, with attempts made
	// when due.
	var at time.Duration
	attempts := 1
	for {
		next, ok := publishing.WebhookRetryAt(created, attempts, created.Add(at), 0)
		if !ok {
			break
		}
		at = next.Sub(created)
		attempts++
	}
	if attempts != 13 || at != 24*time.Hour {
		t.Errorf("the schedule makes %d attempts, the last at %v; documented: 13, the last at 24h", attempts, at)
	}
}
