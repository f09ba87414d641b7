package publishingtest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

type outboxBugs struct {
	addOverwrites      bool // AddSubscription replaces an existing id
	dropsSecret        bool // the secret does not come back
	acceptsIncomplete  bool // no validation
	disableIgnored     bool // DisableSubscription changes nothing
	fanOutToAll        bool // ignores Wants
	recordTwice        bool // a second Record of one event adds deliveries again
	claimNoLease       bool // a claim does not hide what it returned
	claimIgnoresNext   bool // every pending delivery is due
	claimNotAtomic     bool // reads the due ones, then leases them in another step
	claimNewestFirst   bool
	claimIgnoresLimit  bool
	removeKeepsPending bool // RemoveSubscription leaves its deliveries
	recordRevives      bool // RecordDelivery of a removed delivery stores it again
	redriveAny         bool // redrives pending and delivered ones too
	redriveKeepsCount  bool // attempts and CreatedAt are not restarted
	listOldestFirst    bool
	listIgnoresState   bool
}

type memOutbox struct {
	bugs outboxBugs
	mu   sync.Mutex
	subs map[string]publishing.Subscription
	dels map[string]publishing.Delivery
}

func newMemOutbox(b outboxBugs) Outbox {
	m := &memOutbox{bugs: b, subs: map[string]publishing.Subscription{}, dels: map[string]publishing.Delivery{}}
	return Outbox{Subscriptions: m, Deliveries: m, Record: m.record}
}

func (m *memOutbox) AddSubscription(_ context.Context, s publishing.Subscription) error {
	if !m.bugs.acceptsIncomplete {
		switch {
		case s.ID == "":
			return errors.New("subscription: no id")
		case s.URL == "":
			return errors.New("subscription: no url")
		case s.Secret == "":
			return errors.New("subscription: no secret")
		}
		for _, e := range s.Events {
			if !publishing.ValidEventType(e) {
				return fmt.Errorf("subscription: events: unknown %q", e)
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.subs[s.ID]; ok && !m.bugs.addOverwrites {
		return post.ErrConflict
	}
	s.Events = slices.Clone(s.Events)
	if m.bugs.dropsSecret {
		s.Secret = ""
	}
	m.subs[s.ID] = s
	return nil
}

func (m *memOutbox) GetSubscription(_ context.Context, id string) (publishing.Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.subs[id]
	if !ok {
		return s, post.ErrNotFound
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
	if !m.bugs.removeKeepsPending {
		for k, d := range m.dels {
			if d.Subscription == id && d.State != publishing.DeliveryDelivered {
				delete(m.dels, k)
			}
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
	if !m.bugs.disableIgnored {
		s.Disabled, s.DisabledReason = true, reason
		m.subs[id] = s
	}
	return nil
}

func (m *memOutbox) record(_ context.Context, e publishing.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.subs {
		if !s.Wants(e.Type) && !m.bugs.fanOutToAll {
			continue
		}
		id := publishing.DeliveryID(e.ID, s.ID)
		if m.bugs.recordTwice {
			if _, ok := m.dels[id]; ok {
				id += "-again"
			}
		}
		if _, ok := m.dels[id]; ok {
			continue
		}
		m.dels[id] = publishing.Delivery{ID: id, Event: e, Subscription: s.ID, State: publishing.DeliveryPending,
			CreatedAt: e.At, NextTry: e.At, UpdatedAt: e.At}
	}
	return nil
}

func (m *memOutbox) ClaimDeliveries(_ context.Context, now time.Time, lease time.Duration, limit int) ([]publishing.Delivery, error) {
	m.mu.Lock()
	var due []publishing.Delivery
	for _, d := range m.dels {
		if d.State == publishing.DeliveryPending && (m.bugs.claimIgnoresNext || !d.NextTry.After(now)) {
			due = append(due, d)
		}
	}
	slices.SortFunc(due, func(a, b publishing.Delivery) int {
		if m.bugs.claimNewestFirst {
			a, b = b, a
		}
		return cmp.Or(a.NextTry.Compare(b.NextTry), cmp.Compare(a.ID, b.ID))
	})
	if limit > 0 && len(due) > limit && !m.bugs.claimIgnoresLimit {
		due = due[:limit]
	}
	if m.bugs.claimNotAtomic {
		m.mu.Unlock()
		race()
		m.mu.Lock()
	}
	defer m.mu.Unlock()
	for i, d := range due {
		if !m.bugs.claimNoLease {
			d.NextTry = now.Add(lease)
			m.dels[d.ID] = d
		}
		due[i] = d
	}
	return due, nil
}

func (m *memOutbox) RecordDelivery(_ context.Context, d publishing.Delivery) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.dels[d.ID]; !ok && !m.bugs.recordRevives {
		return publishing.ErrDeliveryGone
	}
	m.dels[d.ID] = d
	return nil
}

func (m *memOutbox) ListDeliveries(_ context.Context, state publishing.DeliveryState, limit int) ([]publishing.Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []publishing.Delivery
	for _, d := range m.dels {
		if state == "" || d.State == state || m.bugs.listIgnoresState {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b publishing.Delivery) int {
		c := cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), cmp.Compare(b.ID, a.ID))
		if m.bugs.listOldestFirst {
			return -c
		}
		return c
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
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
	case d.State != publishing.DeliveryDead && !m.bugs.redriveAny:
		return post.ErrConflict
	}
	d.State, d.NextTry, d.UpdatedAt = publishing.DeliveryPending, now, now
	if !m.bugs.redriveKeepsCount {
		d.Attempts, d.CreatedAt = 0, now
	}
	m.dels[id] = d
	return nil
}

func TestOutboxSuitesPassACorrectAdapter(t *testing.T) {
	t.Run("Subscriptions", func(t *testing.T) {
		TestSubscriptions(t, func(*testing.T) publishing.Subscriptions { return newMemOutbox(outboxBugs{}).Subscriptions })
	})
	t.Run("Deliveries", func(t *testing.T) {
		TestDeliveries(t, func(*testing.T) Outbox { return newMemOutbox(outboxBugs{}) })
	})
}

func TestSubscriptionsSuiteCatchesBrokenAdapters(t *testing.T) {
	s := func(b outboxBugs) func() publishing.Subscriptions {
		return func() publishing.Subscriptions { return newMemOutbox(b).Subscriptions }
	}
	testBroken(t, subscriptionsChecks(), []brokenCase[publishing.Subscriptions]{
		{"AddSubscription overwrites", s(outboxBugs{addOverwrites: true}), []string{"Add/existing_id_not_overwritten"}},
		{"drops the secret", s(outboxBugs{dropsSecret: true}), []string{"Add/round_trip_every_field"}},
		{"accepts incomplete subscriptions", s(outboxBugs{acceptsIncomplete: true}), []string{"Add/refuses_incomplete"}},
		{"DisableSubscription changes nothing", s(outboxBugs{disableIgnored: true}), []string{"Disable/marks_with_reason"}},
	}, false)
}

func TestDeliveriesSuiteCatchesBrokenAdapters(t *testing.T) {
	d := func(b outboxBugs) func() Outbox { return func() Outbox { return newMemOutbox(b) } }
	testBroken(t, deliveriesChecks(), []brokenCase[Outbox]{
		{"fans out to every subscription", d(outboxBugs{fanOutToAll: true}), []string{"Record/fan_out_to_subscriptions_that_want_it"}},
		{"records an event twice", d(outboxBugs{recordTwice: true}), []string{"Record/same_event_once"}},
		{"leases nothing", d(outboxBugs{claimNoLease: true}),
			[]string{"Claim/lease_hides_until_it_ends", "Claim/oldest_next_try_first_up_to_limit", "Claim/concurrent_claims_disjoint"}},
		{"ignores NextTry", d(outboxBugs{claimIgnoresNext: true}),
			[]string{"Claim/lease_hides_until_it_ends", "Claim/oldest_next_try_first_up_to_limit", "RecordDelivery/pending_waits_for_next_try"}},
		{"claims in two steps", d(outboxBugs{claimNotAtomic: true}), []string{"Claim/concurrent_claims_disjoint"}},
		{"claims the newest first", d(outboxBugs{claimNewestFirst: true}), []string{"Claim/oldest_next_try_first_up_to_limit"}},
		{"claims past the limit", d(outboxBugs{claimIgnoresLimit: true}), []string{"Claim/oldest_next_try_first_up_to_limit"}},
		{"RemoveSubscription keeps its deliveries", d(outboxBugs{removeKeepsPending: true}), []string{"RecordDelivery/removed_subscription_gone"}},
		{"RecordDelivery revives a removed delivery", d(outboxBugs{recordRevives: true}), []string{"RecordDelivery/removed_subscription_gone"}},
		{"redrives any delivery", d(outboxBugs{redriveAny: true}), []string{"Redrive/dead_only"}},
		{"redrive keeps attempts and window", d(outboxBugs{redriveKeepsCount: true}), []string{"Redrive/dead_only"}},
		{"lists oldest first", d(outboxBugs{listOldestFirst: true}), []string{"List/by_state_most_recently_updated_first"}},
		{"lists every state", d(outboxBugs{listIgnoresState: true}),
			[]string{"List/by_state_most_recently_updated_first", "RecordDelivery/delivered_and_dead_not_claimed"}},
	}, true)
}
