package awsruntime

import (
	"context"
	"errors"
	"testing"
	"time"

	"oncepost/shared/clocktest"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// memSubscriptions is a subscription store counting its reads.
type memSubscriptions struct {
	subs        map[string]publishing.Subscription
	lists, gets int
}

func (m *memSubscriptions) ListSubscriptionsWithoutSecrets(context.Context) ([]publishing.Subscription, error) {
	m.lists++
	var out []publishing.Subscription
	for _, s := range m.subs {
		s.Secret = ""
		out = append(out, s)
	}
	return out, nil
}

func (m *memSubscriptions) GetSubscription(_ context.Context, id string) (publishing.Subscription, error) {
	m.gets++
	s, ok := m.subs[id]
	if !ok {
		return s, post.ErrNotFound
	}
	return s, nil
}

func (m *memSubscriptions) DisableSubscription(_ context.Context, id, reason string) error {
	s, ok := m.subs[id]
	if !ok {
		return post.ErrNotFound
	}
	s.Disabled, s.DisabledReason = true, reason
	m.subs[id] = s
	return nil
}

// The notifier's list and the webhooks function's subscriptions are read
// once per CacheFor in a warm instance; disabling one drops what is kept,
// so the next read sees it disabled; a subscription not found is not
// kept (one added later is found).
func TestCachedSubscriptions(t *testing.T) {
	ctx := context.Background()
	clock := clocktest.New(time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC))
	store := &memSubscriptions{subs: map[string]publishing.Subscription{"wh_1": {ID: "wh_1", Secret: "whsec_eA=="}}}
	c := NewCachedSubscriptions(store, clock.Now)
	for range 3 {
		if l, err := c.ListSubscriptionsWithoutSecrets(ctx); err != nil || len(l) != 1 {
			t.Fatalf("list: %v, %v", l, err)
		}
		if s, err := c.GetSubscription(ctx, "wh_1"); err != nil || s.Secret == "" {
			t.Fatalf("get: %+v, %v", s, err)
		}
	}
	if store.lists != 1 || store.gets != 1 {
		t.Errorf("%d lists and %d gets reached the store within CacheFor, want 1 each", store.lists, store.gets)
	}
	clock.Advance(CacheFor)
	_, _ = c.ListSubscriptionsWithoutSecrets(ctx)
	_, _ = c.GetSubscription(ctx, "wh_1")
	if store.lists != 2 || store.gets != 2 {
		t.Errorf("after CacheFor: %d lists, %d gets; want both read again", store.lists, store.gets)
	}
	if err := c.DisableSubscription(ctx, "wh_1", "410"); err != nil {
		t.Fatal(err)
	}
	if s, _ := c.GetSubscription(ctx, "wh_1"); !s.Disabled {
		t.Error("a disabled subscription is still kept enabled")
	}
	if l, _ := c.ListSubscriptionsWithoutSecrets(ctx); len(l) != 1 || !l[0].Disabled {
		t.Errorf("list after disabling: %+v", l)
	}
	if _, err := c.GetSubscription(ctx, "wh_2"); !errors.Is(err, post.ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	store.subs["wh_2"] = publishing.Subscription{ID: "wh_2"}
	if _, err := c.GetSubscription(ctx, "wh_2"); err != nil {
		t.Errorf("a subscription added after a miss: %v", err)
	}
}
