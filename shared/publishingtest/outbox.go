package publishingtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// TestSubscriptions checks that a subscription store keeps subscriptions
// with every field (the secret too), never overwrites one, refuses one
// without an id, a URL or a secret or with an event type that is not one
// of publishing.EventTypes, disables and removes them. newSubscriptions
// must return an empty store.
//
// ListSubscriptions may return subscriptions in any order; a nil and an
// empty Events list are equal.
func TestSubscriptions(t *testing.T, newSubscriptions func(t *testing.T) publishing.Subscriptions) {
	t.Helper()
	runChecks(t, subscriptionsChecks(), newSubscriptions)
}

func subscriptionsChecks() []check[publishing.Subscriptions] {
	return []check[publishing.Subscriptions]{
		{"Add/round_trip_every_field", subsRoundTrip},
		{"Add/existing_id_not_overwritten", subsAddExisting},
		{"Add/refuses_incomplete", subsAddRefused},
		{"Get/missing", subsMissing},
		{"Disable/marks_with_reason", subsDisable},
		{"Remove/gone_from_get_and_list", subsRemove},
	}
}

// Outbox is a store's outbox as TestDeliveries drives it.
type Outbox struct {
	Subscriptions publishing.Subscriptions
	Deliveries    publishing.Deliveries
	// Record makes the store record e as the state change that causes it
	// does, fanned out to the subscriptions that want it at that moment.
	// The suite makes e with publishing.TargetEvent from a target of post
	// e.Post to e.Account at e.Slot that moves from publishing to
	// e.Status at e.At (with e.Reason and e.RemoteID), so a store can
	// record it through a real change (the embedded store: CreatePost,
	// then UpdateTarget). Record may be called twice with one event (a
	// change seen twice, e.g. a change-stream record delivered again):
	// the second call must then give no second delivery.
	Record func(ctx context.Context, e publishing.Event) error
}

// TestDeliveries checks the delivery side of an outbox: a recorded event
// becomes one delivery per subscription that wants it (once, however
// often the event is recorded); ClaimDeliveries leases due deliveries,
// oldest NextTry first, each to one claimer until the lease ends;
// RecordDelivery stores an attempt's outcome (ErrDeliveryGone once the
// subscription is removed); dead deliveries, and only those, can be
// redriven; ListDeliveries lists by state, most recently updated first.
// newOutbox must return an empty store.
//
// A delivery is created at its event's At: its CreatedAt and NextTry are
// e.At, so it is due at once. The NextTry of a claimed delivery (e.g. the
// end of its lease) is the store's choice and is not compared.
func TestDeliveries(t *testing.T, newOutbox func(t *testing.T) Outbox) {
	t.Helper()
	runChecks(t, deliveriesChecks(), newOutbox)
}

func deliveriesChecks() []check[Outbox] {
	return []check[Outbox]{
		{"Record/fan_out_to_subscriptions_that_want_it", outboxFanOut},
		{"Record/same_event_once", outboxSameEventOnce},
		{"Record/no_subscription_no_delivery", outboxNoSubscription},
		{"Claim/lease_hides_until_it_ends", outboxLease},
		{"Claim/oldest_next_try_first_up_to_limit", outboxClaimOrder},
		{"Claim/concurrent_claims_disjoint", outboxClaimRace},
		{"RecordDelivery/pending_waits_for_next_try", outboxRetryLater},
		{"RecordDelivery/delivered_and_dead_not_claimed", outboxFinal},
		{"RecordDelivery/removed_subscription_gone", outboxGone},
		{"Redrive/dead_only", outboxRedrive},
		{"List/by_state_most_recently_updated_first", outboxList},
	}
}

// Subscription ids the suites use.
const (
	subAll       = "wh_all"
	subPublished = "wh_published"
	subFailures  = "wh_failures"
	subOff       = "wh_off"
)

func sampleSubscription(id string, events ...publishing.EventType) publishing.Subscription {
	return publishing.Subscription{
		ID: id, URL: "https://hooks.example.com/" + id, Events: events,
		Secret:      "whsec_" + strings.Repeat(id, 3),
		Description: "receiver " + id, CreatedAt: base,
	}
}

var subCmp = cmp.Options{cmpopts.EquateEmpty()}

func mustAddSubscription(t testing.TB, s publishing.Subscriptions, sub publishing.Subscription) {
	t.Helper()
	if err := s.AddSubscription(t.Context(), sub); err != nil {
		t.Fatalf("AddSubscription(%s) = %v, want nil", sub.ID, err)
	}
}

func subscriptionTimes(s publishing.Subscription) map[string]time.Time {
	return map[string]time.Time{"CreatedAt": s.CreatedAt}
}

// Every field comes back, the secret too, from Get and from List.
func subsRoundTrip(t testing.TB, s publishing.Subscriptions) {
	a := sampleSubscription(subAll)
	a.AllowPrivate = true
	b := sampleSubscription(subPublished, publishing.EventPublished, publishing.EventReconnectNeeded)
	b.Description = ""
	mustAddSubscription(t, s, a)
	mustAddSubscription(t, s, b)
	for _, want := range []publishing.Subscription{a, b} {
		got, err := s.GetSubscription(t.Context(), want.ID)
		if err != nil {
			t.Fatalf("GetSubscription(%s) = %v", want.ID, err)
		}
		if diff := cmp.Diff(want, got, subCmp); diff != "" {
			t.Errorf("GetSubscription(%s) (-want +got):\n%s", want.ID, diff)
		}
		if got.Secret != want.Secret {
			t.Errorf("GetSubscription(%s): the secret did not come back", want.ID)
		}
		checkUTC(t, "GetSubscription("+want.ID+")", subscriptionTimes(got))
	}
	list, err := s.ListSubscriptions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list, func(x, y publishing.Subscription) int { return strings.Compare(x.ID, y.ID) })
	if diff := cmp.Diff([]publishing.Subscription{a, b}, list, subCmp); diff != "" {
		t.Errorf("ListSubscriptions (-want +got):\n%s", diff)
	}
}

func subsAddExisting(t testing.TB, s publishing.Subscriptions) {
	a := sampleSubscription(subAll)
	mustAddSubscription(t, s, a)
	other := sampleSubscription(subAll, publishing.EventFailed)
	other.URL, other.Secret = "https://elsewhere.example.com/", "whsec_other"
	if err := s.AddSubscription(t.Context(), other); !errors.Is(err, post.ErrConflict) {
		t.Errorf("AddSubscription with an id in use = %v, want post.ErrConflict", err)
	}
	got, err := s.GetSubscription(t.Context(), subAll)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, got, subCmp); diff != "" || got.Secret != a.Secret {
		t.Errorf("the first subscription was overwritten (-want +got):\n%s", diff)
	}
}

// A subscription without an id, URL or secret, or with an unknown event
// type, is refused with an error naming the field; nothing is stored.
func subsAddRefused(t testing.TB, s publishing.Subscriptions) {
	for _, tc := range []struct {
		field string
		edit  func(*publishing.Subscription)
	}{
		{"id", func(x *publishing.Subscription) { x.ID = "" }},
		{"url", func(x *publishing.Subscription) { x.URL = "" }},
		{"secret", func(x *publishing.Subscription) { x.Secret = "" }},
		{"events", func(x *publishing.Subscription) { x.Events = []publishing.EventType{"post.exploded"} }},
	} {
		sub := sampleSubscription(subAll)
		tc.edit(&sub)
		err := s.AddSubscription(t.Context(), sub)
		if err == nil {
			t.Errorf("AddSubscription without a valid %s = nil, want an error", tc.field)
		} else if !strings.Contains(strings.ToLower(err.Error()), tc.field) {
			t.Errorf("AddSubscription without a valid %s = %q, want an error naming %q", tc.field, err, tc.field)
		}
	}
	list, err := s.ListSubscriptions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Errorf("refused subscriptions were stored: %+v", list)
	}
}

func subsMissing(t testing.TB, s publishing.Subscriptions) {
	ctx := t.Context()
	if _, err := s.GetSubscription(ctx, "wh_nobody"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("GetSubscription(unknown) = %v, want post.ErrNotFound", err)
	}
	if err := s.RemoveSubscription(ctx, "wh_nobody"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("RemoveSubscription(unknown) = %v, want post.ErrNotFound", err)
	}
	if err := s.DisableSubscription(ctx, "wh_nobody", "410 Gone"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("DisableSubscription(unknown) = %v, want post.ErrNotFound", err)
	}
}

func subsDisable(t testing.TB, s publishing.Subscriptions) {
	a, b := sampleSubscription(subAll), sampleSubscription(subPublished, publishing.EventPublished)
	mustAddSubscription(t, s, a)
	mustAddSubscription(t, s, b)
	if err := s.DisableSubscription(t.Context(), subAll, "receiver answered 410 Gone"); err != nil {
		t.Fatalf("DisableSubscription = %v", err)
	}
	want := a
	want.Disabled, want.DisabledReason = true, "receiver answered 410 Gone"
	got, err := s.GetSubscription(t.Context(), subAll)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, subCmp); diff != "" || got.Secret != a.Secret {
		t.Errorf("disabled subscription (-want +got):\n%s", diff)
	}
	if got, err := s.GetSubscription(t.Context(), subPublished); err != nil || got.Disabled {
		t.Errorf("the other subscription: disabled %v (%v), want untouched", got.Disabled, err)
	}
}

func subsRemove(t testing.TB, s publishing.Subscriptions) {
	a, b := sampleSubscription(subAll), sampleSubscription(subPublished, publishing.EventPublished)
	mustAddSubscription(t, s, a)
	mustAddSubscription(t, s, b)
	if err := s.RemoveSubscription(t.Context(), subAll); err != nil {
		t.Fatalf("RemoveSubscription = %v", err)
	}
	if _, err := s.GetSubscription(t.Context(), subAll); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("GetSubscription(removed) = %v, want post.ErrNotFound", err)
	}
	list, err := s.ListSubscriptions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]publishing.Subscription{b}, list, subCmp); diff != "" {
		t.Errorf("ListSubscriptions after the removal (-want +got):\n%s", diff)
	}
	if err := s.RemoveSubscription(t.Context(), subAll); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("RemoveSubscription twice = %v, want post.ErrNotFound", err)
	}
}

// outboxEvent is the event of post id's target to account "news" moving
// from publishing to status at at (what Outbox.Record is given).
func outboxEvent(t testing.TB, id post.ID, status post.TargetStatus, at time.Time) publishing.Event {
	t.Helper()
	slot := base.Truncate(time.Minute)
	prev := post.Target{Account: "news", Slot: slot, Status: post.Publishing, UpdatedAt: at.Add(-time.Second)}
	next := prev
	next.Status, next.UpdatedAt = status, at
	switch status {
	case post.Published:
		next.RemoteID = "remote-" + string(id)
	default:
		next.Reason = "why " + string(id) + " is " + string(status)
	}
	e, ok := publishing.TargetEvent(id, prev, next)
	if !ok {
		t.Fatalf("no event for a target moving to %s", status)
	}
	return e
}

func mustRecord(t testing.TB, o Outbox, e publishing.Event) {
	t.Helper()
	if err := o.Record(t.Context(), e); err != nil {
		t.Fatalf("Record(%s %s) = %v", e.Type, e.Post, err)
	}
}

func mustList(t testing.TB, d publishing.Deliveries, state publishing.DeliveryState) []publishing.Delivery {
	t.Helper()
	out, err := d.ListDeliveries(t.Context(), state, 0)
	if err != nil {
		t.Fatalf("ListDeliveries(%q) = %v", state, err)
	}
	return out
}

func mustClaim(t testing.TB, d publishing.Deliveries, now time.Time, lease time.Duration, limit int) []publishing.Delivery {
	t.Helper()
	out, err := d.ClaimDeliveries(t.Context(), now, lease, limit)
	if err != nil {
		t.Fatalf("ClaimDeliveries(%s) = %v", now.Format(time.RFC3339Nano), err)
	}
	return out
}

func mustRecordDelivery(t testing.TB, d publishing.Deliveries, dl publishing.Delivery) {
	t.Helper()
	if err := d.RecordDelivery(t.Context(), dl); err != nil {
		t.Fatalf("RecordDelivery(%s, %s) = %v", dl.ID, dl.State, err)
	}
}

func deliveryIDs(ds []publishing.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func sortedIDs(ds []publishing.Delivery) []string {
	out := deliveryIDs(ds)
	slices.Sort(out)
	return out
}

// newDelivery is the delivery Record makes of e for sub.
func newDelivery(e publishing.Event, sub string) publishing.Delivery {
	return publishing.Delivery{
		ID: publishing.DeliveryID(e.ID, sub), Event: e, Subscription: sub, State: publishing.DeliveryPending,
		CreatedAt: e.At, NextTry: e.At,
	}
}

// deliveryCmp compares what a store must keep; UpdatedAt of a delivery
// never attempted is the store's choice.
var deliveryCmp = cmp.Options{cmpopts.EquateEmpty(), cmpopts.IgnoreFields(publishing.Delivery{}, "UpdatedAt")}

// withSubscriptions adds the suite's four subscriptions: every event,
// published only, failed and held, and a disabled one.
func withSubscriptions(t testing.TB, o Outbox) {
	t.Helper()
	mustAddSubscription(t, o.Subscriptions, sampleSubscription(subAll))
	mustAddSubscription(t, o.Subscriptions, sampleSubscription(subPublished, publishing.EventPublished))
	mustAddSubscription(t, o.Subscriptions, sampleSubscription(subFailures, publishing.EventFailed, publishing.EventHeld))
	mustAddSubscription(t, o.Subscriptions, sampleSubscription(subOff))
	if err := o.Subscriptions.DisableSubscription(t.Context(), subOff, "410 Gone"); err != nil {
		t.Fatal(err)
	}
}

// One delivery per subscription that wants the event, carrying the event
// whole (its body is the same bytes); none for the others.
func outboxFanOut(t testing.TB, o Outbox) {
	withSubscriptions(t, o)
	pub := outboxEvent(t, "p1", post.Published, base)
	held := outboxEvent(t, "p2", post.Held, base.Add(time.Second))
	mustRecord(t, o, pub)
	mustRecord(t, o, held)
	want := []publishing.Delivery{
		newDelivery(pub, subAll), newDelivery(pub, subPublished),
		newDelivery(held, subAll), newDelivery(held, subFailures),
	}
	got := mustList(t, o.Deliveries, publishing.DeliveryPending)
	byID := func(x, y publishing.Delivery) int { return strings.Compare(x.ID, y.ID) }
	slices.SortFunc(want, byID)
	slices.SortFunc(got, byID)
	if diff := cmp.Diff(want, got, deliveryCmp); diff != "" {
		t.Fatalf("pending deliveries (-want +got):\n%s", diff)
	}
	for _, d := range got {
		checkUTC(t, "delivery "+d.ID, map[string]time.Time{"CreatedAt": d.CreatedAt, "NextTry": d.NextTry, "Event.At": d.Event.At})
		wantBody, _ := pub.Body()
		if d.Event.ID == held.ID {
			wantBody, _ = held.Body()
		}
		if body, err := d.Event.Body(); err != nil || string(body) != string(wantBody) {
			t.Errorf("delivery %s body:\n%s\nwant\n%s", d.ID, body, wantBody)
		}
	}
}

// An event recorded twice is delivered once to each subscription.
func outboxSameEventOnce(t testing.TB, o Outbox) {
	mustAddSubscription(t, o.Subscriptions, sampleSubscription(subAll))
	e := outboxEvent(t, "p1", post.Failed, base)
	mustRecord(t, o, e)
	mustRecord(t, o, e)
	if got := sortedIDs(mustList(t, o.Deliveries, "")); !slices.Equal(got, []string{publishing.DeliveryID(e.ID, subAll)}) {
		t.Errorf("deliveries after recording one event twice: %v, want one", got)
	}
}

func outboxNoSubscription(t testing.TB, o Outbox) {
	mustRecord(t, o, outboxEvent(t, "p1", post.Published, base))
	if got := mustList(t, o.Deliveries, ""); len(got) != 0 {
		t.Errorf("deliveries without a subscription: %v", deliveryIDs(got))
	}
	if got := mustClaim(t, o.Deliveries, base.Add(time.Hour), time.Minute, 10); len(got) != 0 {
		t.Errorf("claimed without a subscription: %v", deliveryIDs(got))
	}
}

// A claimed delivery is not claimed again before its lease ends, and is
// claimed again after it (the worker that held it died).
func outboxLease(t testing.TB, o Outbox) {
	mustAddSubscription(t, o.Subscriptions, sampleSubscription(subAll))
	e := outboxEvent(t, "p1", post.Published, base)
	if got := mustClaim(t, o.Deliveries, base.Add(time.Hour), time.Minute, 10); len(got) != 0 {
		t.Fatalf("claimed before anything was recorded: %v", deliveryIDs(got))
	}
	mustRecord(t, o, e)
	if got := mustClaim(t, o.Deliveries, e.At.Add(-time.Nanosecond), time.Minute, 10); len(got) != 0 {
		t.Errorf("claimed before its NextTry (the event's At): %v", deliveryIDs(got))
	}
	now := e.At.Add(10 * time.Second)
	got := mustClaim(t, o.Deliveries, now, time.Minute, 10)
	if len(got) != 1 {
		t.Fatalf("first claim returned %v, want the one delivery", deliveryIDs(got))
	}
	if diff := cmp.Diff(newDelivery(e, subAll), got[0], deliveryCmp, cmpopts.IgnoreFields(publishing.Delivery{}, "NextTry")); diff != "" {
		t.Errorf("claimed delivery (-want +got):\n%s", diff)
	}
	for _, at := range []time.Time{now, now.Add(30 * time.Second), now.Add(time.Minute - time.Nanosecond)} {
		if again := mustClaim(t, o.Deliveries, at, time.Minute, 10); len(again) != 0 {
			t.Errorf("claimed again %s into its 1m lease: %v", at.Sub(now), deliveryIDs(again))
		}
	}
	again := mustClaim(t, o.Deliveries, now.Add(time.Minute+time.Nanosecond), time.Minute, 10)
	if !slices.Equal(deliveryIDs(again), deliveryIDs(got)) {
		t.Errorf("claim after the lease ended returned %v, want %v again", deliveryIDs(again), deliveryIDs(got))
	}
}

// Claims take the oldest NextTry first, at most limit; a delivery whose
// NextTry is after now waits.
func outboxClaimOrder(t testing.TB, o Outbox) {
	mustAddSubscription(t, o.Subscriptions, sampleSubscription(subAll))
	var events []publishing.Event
	// Recorded newest first, so insertion order is not claim order.
	for i := range 4 {
		events = append(events, outboxEvent(t, post.ID(fmt.Sprint("p", i)), post.Published, base.Add(time.Duration(3-i)*time.Minute)))
	}
	for _, e := range events {
		mustRecord(t, o, e)
	}
	id := func(i int) string { return publishing.DeliveryID(events[i].ID, subAll) }
	now := base.Add(2*time.Minute + time.Second) // events 3, 2, 1 are due; 0 is not
	if got := deliveryIDs(mustClaim(t, o.Deliveries, now, time.Hour, 2)); !slices.Equal(got, []string{id(3), id(2)}) {
		t.Errorf("claim of 2 = %v, want the two oldest %v", got, []string{id(3), id(2)})
	}
	if got := deliveryIDs(mustClaim(t, o.Deliveries, now, time.Hour, 2)); !slices.Equal(got, []string{id(1)}) {
		t.Errorf("next claim = %v, want %v (the last one is not due)", got, []string{id(1)})
	}
	if got := deliveryIDs(mustClaim(t, o.Deliveries, base.Add(3*time.Minute), time.Hour, 0)); !slices.Equal(got, []string{id(0)}) {
		t.Errorf("claim once the last is due = %v, want %v", got, []string{id(0)})
	}
}

// Claims at the same moment never return one delivery twice.
func outboxClaimRace(t testing.TB, o Outbox) {
	mustAddSubscription(t, o.Subscriptions, sampleSubscription(subAll))
	const n = 6
	for i := range n {
		mustRecord(t, o, outboxEvent(t, post.ID(fmt.Sprint("p", i)), post.Published, base))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	errs := runTogether(8, func(int) error {
		got, err := o.Deliveries.ClaimDeliveries(context.Background(), base.Add(time.Second), time.Hour, 2)
		mu.Lock()
		defer mu.Unlock()
		for _, d := range got {
			seen[d.ID]++
		}
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("claimer %d: %v", i, err)
		}
	}
	for _, d := range mustClaim(t, o.Deliveries, base.Add(time.Second), time.Hour, 0) {
		seen[d.ID]++ // what the racers left
	}
	if len(seen) != n {
		t.Errorf("%d distinct deliveries claimed, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("delivery %s claimed %d times within its lease", id, c)
		}
	}
}

// A failed attempt recorded as pending is not claimed before its NextTry,
// and comes back with what the attempt recorded.
func outboxRetryLater(t testing.TB, o Outbox) {
	mustAddSubscription(t, o.Subscriptions, sampleSubscription(subAll))
	e := outboxEvent(t, "p1", post.Published, base)
	mustRecord(t, o, e)
	now := base.Add(time.Second)
	got := mustClaim(t, o.Deliveries, now, time.Minute, 1)
	if len(got) != 1 {
		t.Fatalf("claim = %v", deliveryIDs(got))
	}
	d := got[0]
	d.State, d.Attempts, d.NextTry = publishing.DeliveryPending, 1, now.Add(time.Hour)
	d.LastError, d.LastStatus, d.UpdatedAt = "receiver answered 503", 503, now.Add(time.Second)
	mustRecordDelivery(t, o.Deliveries, d)
	listed := mustList(t, o.Deliveries, publishing.DeliveryPending)
	if len(listed) != 1 {
		t.Fatalf("pending = %v", deliveryIDs(listed))
	}
	if diff := cmp.Diff(d, listed[0], cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("after the failed attempt (-want +got):\n%s", diff)
	}
	// Long past the lease, before the NextTry: still waiting.
	if again := mustClaim(t, o.Deliveries, now.Add(30*time.Minute), time.Minute, 10); len(again) != 0 {
		t.Errorf("claimed before the NextTry the attempt recorded: %v", deliveryIDs(again))
	}
	again := mustClaim(t, o.Deliveries, now.Add(time.Hour), time.Minute, 10)
	if len(again) != 1 {
		t.Fatalf("claim at the NextTry = %v, want the delivery", deliveryIDs(again))
	}
	if diff := cmp.Diff(d, again[0], cmpopts.EquateEmpty(), cmpopts.IgnoreFields(publishing.Delivery{}, "NextTry")); diff != "" {
		t.Errorf("claimed again (-want +got):\n%s", diff)
	}
}

// Delivered and dead deliveries are never claimed again.
func outboxFinal(t testing.TB, o Outbox) {
	mustAddSubscription(t, o.Subscriptions, sampleSubscription(subAll))
	ok, bad := outboxEvent(t, "p1", post.Published, base), outboxEvent(t, "p2", post.Failed, base)
	mustRecord(t, o, ok)
	mustRecord(t, o, bad)
	now := base.Add(time.Second)
	got := mustClaim(t, o.Deliveries, now, time.Minute, 10)
	if len(got) != 2 {
		t.Fatalf("claim = %v", deliveryIDs(got))
	}
	want := map[publishing.DeliveryState]publishing.Delivery{}
	for _, d := range got {
		d.Attempts, d.UpdatedAt, d.NextTry = 1, now, time.Time{}
		if d.Event.ID == ok.ID {
			d.State, d.LastStatus = publishing.DeliveryDelivered, 204
		} else {
			d.State, d.LastStatus, d.LastError = publishing.DeliveryDead, 410, "receiver answered 410 Gone"
		}
		mustRecordDelivery(t, o.Deliveries, d)
		want[d.State] = d
	}
	for state, d := range want {
		listed := mustList(t, o.Deliveries, state)
		if len(listed) != 1 {
			t.Errorf("%s deliveries: %v, want %s", state, deliveryIDs(listed), d.ID)
			continue
		}
		if diff := cmp.Diff(d, listed[0], cmpopts.EquateEmpty(), cmpopts.IgnoreFields(publishing.Delivery{}, "NextTry")); diff != "" {
			t.Errorf("%s delivery (-want +got):\n%s", state, diff)
		}
	}
	if p := mustList(t, o.Deliveries, publishing.DeliveryPending); len(p) != 0 {
		t.Errorf("still pending: %v", deliveryIDs(p))
	}
	if again := mustClaim(t, o.Deliveries, now.Add(48*time.Hour), time.Minute, 10); len(again) != 0 {
		t.Errorf("claimed after delivered or dead: %v", deliveryIDs(again))
	}
}

// A subscription's removal takes its pending deliveries with it: its
// claimed delivery's outcome can no longer be recorded (ErrDeliveryGone),
// and another subscription's deliveries stay.
func outboxGone(t testing.TB, o Outbox) {
	mustAddSubscription(t, o.Subscriptions, sampleSubscription(subAll))
	mustAddSubscription(t, o.Subscriptions, sampleSubscription(subPublished, publishing.EventPublished))
	e := outboxEvent(t, "p1", post.Published, base)
	mustRecord(t, o, e)
	mustRecord(t, o, outboxEvent(t, "p2", post.Published, base.Add(time.Minute))) // not claimed
	got := mustClaim(t, o.Deliveries, base.Add(time.Second), time.Minute, 10)
	if len(got) != 2 {
		t.Fatalf("claim = %v", deliveryIDs(got))
	}
	if err := o.Subscriptions.RemoveSubscription(t.Context(), subAll); err != nil {
		t.Fatal(err)
	}
	for _, d := range got {
		d.State, d.Attempts, d.UpdatedAt, d.LastStatus = publishing.DeliveryDelivered, 1, base.Add(2*time.Second), 200
		err := o.Deliveries.RecordDelivery(t.Context(), d)
		switch {
		case d.Subscription == subAll && !errors.Is(err, publishing.ErrDeliveryGone):
			t.Errorf("RecordDelivery(%s) after its subscription was removed = %v, want ErrDeliveryGone", d.ID, err)
		case d.Subscription != subAll && err != nil:
			t.Errorf("RecordDelivery(%s) of the other subscription = %v", d.ID, err)
		}
	}
	for _, d := range mustList(t, o.Deliveries, "") {
		if d.Subscription == subAll {
			t.Errorf("delivery %s (%s) of the removed subscription is still there", d.ID, d.State)
		}
	}
	pending := mustList(t, o.Deliveries, publishing.DeliveryPending)
	if len(pending) != 1 || pending[0].Subscription != subPublished {
		t.Errorf("pending after the removal: %v, want the other subscription's", deliveryIDs(pending))
	}
}

// Only a dead delivery is redriven: pending again, due at now, its
// attempts and window (CreatedAt) restarted.
func outboxRedrive(t testing.TB, o Outbox) {
	mustAddSubscription(t, o.Subscriptions, sampleSubscription(subAll))
	dead, done, waiting := outboxEvent(t, "p1", post.Published, base), outboxEvent(t, "p2", post.Published, base), outboxEvent(t, "p3", post.Published, base)
	for _, e := range []publishing.Event{dead, done, waiting} {
		mustRecord(t, o, e)
	}
	now := base.Add(time.Second)
	for _, d := range mustClaim(t, o.Deliveries, now, time.Minute, 10) {
		d.Attempts, d.UpdatedAt = 7, now
		switch d.Event.ID {
		case dead.ID:
			d.State, d.LastStatus, d.LastError = publishing.DeliveryDead, 500, "receiver answered 500 for 24h"
		case done.ID:
			d.State, d.LastStatus = publishing.DeliveryDelivered, 200
		default:
			d.State, d.NextTry, d.LastStatus = publishing.DeliveryPending, now.Add(72*time.Hour), 503
		}
		mustRecordDelivery(t, o.Deliveries, d)
	}
	ctx := t.Context()
	for _, e := range []publishing.Event{done, waiting} {
		if err := o.Deliveries.RedriveDelivery(ctx, publishing.DeliveryID(e.ID, subAll), now); !errors.Is(err, post.ErrConflict) {
			t.Errorf("RedriveDelivery of a %s delivery = %v, want post.ErrConflict", e.Post, err)
		}
	}
	if err := o.Deliveries.RedriveDelivery(ctx, publishing.DeliveryID(dead.ID, "wh_nobody"), now); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("RedriveDelivery(unknown) = %v, want post.ErrNotFound", err)
	}
	at := base.Add(48 * time.Hour)
	id := publishing.DeliveryID(dead.ID, subAll)
	if err := o.Deliveries.RedriveDelivery(ctx, id, at); err != nil {
		t.Fatalf("RedriveDelivery(dead) = %v", err)
	}
	if got := mustList(t, o.Deliveries, publishing.DeliveryDead); len(got) != 0 {
		t.Errorf("still dead after the redrive: %v", deliveryIDs(got))
	}
	if got := mustClaim(t, o.Deliveries, at.Add(-time.Nanosecond), time.Minute, 10); len(got) != 0 {
		t.Errorf("claimed before the redrive's now: %v", deliveryIDs(got))
	}
	got := mustClaim(t, o.Deliveries, at, time.Minute, 10)
	if len(got) != 1 || got[0].ID != id {
		t.Fatalf("claim after the redrive = %v, want %s", deliveryIDs(got), id)
	}
	if d := got[0]; d.State != publishing.DeliveryPending || d.Attempts != 0 || !d.CreatedAt.Equal(at) {
		t.Errorf("redriven delivery: state %s, %d attempts, created %s; want pending, 0, %s",
			d.State, d.Attempts, d.CreatedAt.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano))
	}
}

// ListDeliveries lists one state or all, most recently updated first, up
// to the limit.
func outboxList(t testing.TB, o Outbox) {
	mustAddSubscription(t, o.Subscriptions, sampleSubscription(subAll))
	var events []publishing.Event
	for i := range 4 {
		e := outboxEvent(t, post.ID(fmt.Sprint("p", i)), post.Published, base)
		events = append(events, e)
		mustRecord(t, o, e)
	}
	// Updated at base+1s … base+4s: p0 delivered, p1 dead, p2 delivered,
	// p3 pending.
	now := base.Add(time.Second)
	byEvent := map[string]publishing.Delivery{}
	for _, d := range mustClaim(t, o.Deliveries, now, time.Minute, 0) {
		byEvent[d.Event.ID] = d
	}
	states := []publishing.DeliveryState{publishing.DeliveryDelivered, publishing.DeliveryDead, publishing.DeliveryDelivered, publishing.DeliveryPending}
	for i, e := range events {
		d, ok := byEvent[e.ID]
		if !ok {
			t.Fatalf("delivery of %s not claimed", e.Post)
		}
		d.State, d.Attempts, d.UpdatedAt = states[i], 1, base.Add(time.Duration(i+1)*time.Second)
		if d.State == publishing.DeliveryPending {
			d.NextTry = base.Add(time.Hour)
		}
		mustRecordDelivery(t, o.Deliveries, d)
	}
	id := func(i int) string { return publishing.DeliveryID(events[i].ID, subAll) }
	for _, tc := range []struct {
		state publishing.DeliveryState
		limit int
		want  []string
	}{
		{"", 0, []string{id(3), id(2), id(1), id(0)}},
		{"", 2, []string{id(3), id(2)}},
		{publishing.DeliveryDelivered, 0, []string{id(2), id(0)}},
		{publishing.DeliveryDelivered, 1, []string{id(2)}},
		{publishing.DeliveryDead, 0, []string{id(1)}},
		{publishing.DeliveryPending, 0, []string{id(3)}},
	} {
		got, err := o.Deliveries.ListDeliveries(t.Context(), tc.state, tc.limit)
		if err != nil {
			t.Fatalf("ListDeliveries(%q, %d) = %v", tc.state, tc.limit, err)
		}
		if ids := deliveryIDs(got); !slices.Equal(ids, tc.want) {
			t.Errorf("ListDeliveries(%q, %d) = %v, want %v", tc.state, tc.limit, ids, tc.want)
		}
	}
}
