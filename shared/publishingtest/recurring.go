package publishingtest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/recurring"
)

// TestRecurringRules runs the conformance suite of the RecurringRules
// port: what goes in comes out (every field, times to the nanosecond and
// in UTC), an id is created once, and an update is conditional on the
// version read, atomically.
func TestRecurringRules(t *testing.T, newRules func(t *testing.T) publishing.RecurringRules) {
	t.Helper()
	runChecks(t, recurringChecks(), newRules)
}

func recurringChecks() []check[publishing.RecurringRules] {
	return []check[publishing.RecurringRules]{
		{"Create/round_trip", rulesRoundTrip},
		{"Create/times_in_utc", rulesTimesInUTC},
		{"Create/existing_id_not_overwritten", rulesCreateExisting},
		{"Create/concurrent_same_id", rulesCreateConcurrent},
		{"Get/unknown_id", rulesGetUnknown},
		{"Update/next_version", rulesUpdate},
		{"Update/stale_version", rulesUpdateStale},
		{"Update/unknown_id", rulesUpdateUnknown},
		{"Update/concurrent_same_version", rulesUpdateConcurrent},
		{"List/every_rule_by_id", rulesList},
	}
}

// fullRule is a rule with every field set, times with nanoseconds.
func fullRule(id recurring.ID) recurring.Rule {
	c := newClock(base)
	prev := recurring.Rule{ID: id, Revision: 1, Content: recurring.Content{Body: "old"}, Accounts: []post.AccountID{"news"},
		Repeat: recurring.Repeat{Cron: "cron(0 9 ? * MON *)"}, TimeZone: "America/New_York", Start: c.next(), CreatedAt: c.next(), UpdatedAt: c.next(),
		Through: recurring.Position{Index: 3, Slot: c.next()}}
	return recurring.Rule{
		ID: id, Revision: 2,
		Content: recurring.Content{Body: "Tip of the day", Variants: []string{"Another tip", "Ünïcode tip ✨"},
			Texts: map[string]string{"x": "Short tip"},
			Media: []post.Media{{Ref: "ab.png", SHA256: "ab", ContentType: "image/png", Alt: "a chart",
				Fitted: map[string]post.Fitted{"x": {Ref: "cd.jpg", SHA256: "cd", ContentType: "image/jpeg"}}}}},
		Accounts:  []post.AccountID{"news", "x-news"},
		Repeat:    recurring.Repeat{EveryDays: 2, At: "09:30"},
		TimeZone:  "Europe/Berlin",
		Start:     c.next(),
		Until:     c.next(),
		Count:     0,
		StoppedAt: c.next(),
		CreatedAt: c.next(), UpdatedAt: c.next(),
		Author: "token-1", Fingerprint: "f00d",
		Through:  recurring.Position{Index: 7, Slot: c.next()},
		Keep:     []time.Time{c.next(), c.next()},
		Retiring: &recurring.Retiring{Rule: prev, From: c.next(), Through: c.next()},
		Problem:  &recurring.Problem{Slot: c.next(), Reason: "body: is too long", At: c.next()},
		Missed:   []recurring.Problem{{Slot: c.next(), Reason: "its time passed", At: c.next()}},
		Version:  99,
	}
}

// simpleRule is a small rule.
func simpleRule(id recurring.ID) recurring.Rule {
	return recurring.Rule{ID: id, Revision: 1, Content: recurring.Content{Body: "Hello " + string(id)}, Accounts: []post.AccountID{"news"},
		Repeat: recurring.Repeat{EveryDays: 1, At: "09:00"}, TimeZone: "UTC", Start: base, CreatedAt: base, UpdatedAt: base}
}

func mustCreateRule(t testing.TB, s publishing.RecurringRules, r recurring.Rule) {
	t.Helper()
	if err := s.CreateRule(t.Context(), r); err != nil {
		t.Fatalf("CreateRule(%s): %v", r.ID, err)
	}
}

func mustGetRule(t testing.TB, s publishing.RecurringRules, id recurring.ID) recurring.Rule {
	t.Helper()
	r, err := s.GetRule(t.Context(), id)
	if err != nil {
		t.Fatalf("GetRule(%s): %v", id, err)
	}
	return r
}

// Every field comes back as stored, times to the nanosecond; the
// version is 1 whatever the rule said.
func rulesRoundTrip(t testing.TB, s publishing.RecurringRules) {
	r := fullRule("tips")
	mustCreateRule(t, s, r)
	want := r
	want.Version = 1
	if diff := cmp.Diff(want, mustGetRule(t, s, "tips")); diff != "" {
		t.Errorf("rule read back (-stored +read):\n%s", diff)
	}
}

// Times given in another zone come back the same instants, in UTC.
func rulesTimesInUTC(t testing.TB, s publishing.RecurringRules) {
	kolkata := time.FixedZone("IST", 5*3600+1800)
	r := fullRule("zoned")
	r.Start, r.Until, r.CreatedAt = r.Start.In(kolkata), r.Until.In(kolkata), r.CreatedAt.In(kolkata)
	r.Keep[0] = r.Keep[0].In(kolkata)
	r.Retiring.From = r.Retiring.From.In(kolkata)
	mustCreateRule(t, s, r)
	got := mustGetRule(t, s, "zoned")
	for name, tm := range map[string]time.Time{"start": got.Start, "until": got.Until, "created_at": got.CreatedAt, "keep[0]": got.Keep[0], "retiring.from": got.Retiring.From} {
		if tm.Location() != time.UTC {
			t.Errorf("%s comes back in %s, want UTC", name, tm.Location())
		}
	}
	if !got.Start.Equal(r.Start) || !got.Keep[0].Equal(r.Keep[0]) {
		t.Errorf("instants changed: start %s → %s, keep %s → %s", r.Start, got.Start, r.Keep[0], got.Keep[0])
	}
}

// A second create with the same id is a conflict and changes nothing.
func rulesCreateExisting(t testing.TB, s publishing.RecurringRules) {
	first := simpleRule("tips")
	mustCreateRule(t, s, first)
	second := simpleRule("tips")
	second.Body = "another"
	if err := s.CreateRule(t.Context(), second); !errors.Is(err, post.ErrConflict) {
		t.Fatalf("second CreateRule: %v, want post.ErrConflict", err)
	}
	if got := mustGetRule(t, s, "tips"); got.Body != first.Body || got.Version != 1 {
		t.Errorf("after the refused create: body %q version %d, want %q version 1", got.Body, got.Version, first.Body)
	}
}

// Of many creates of one id at once, exactly one wins.
func rulesCreateConcurrent(t testing.TB, s publishing.RecurringRules) {
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			r := simpleRule("race")
			r.Body = fmt.Sprintf("writer %d", i)
			errs[i] = s.CreateRule(t.Context(), r)
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("writers %d and %d both created the rule", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, post.ErrConflict):
			t.Fatalf("writer %d: %v, want nil or post.ErrConflict", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no writer created the rule")
	}
	if got := mustGetRule(t, s, "race"); got.Body != fmt.Sprintf("writer %d", won) {
		t.Errorf("stored %q, want the winner's (writer %d)", got.Body, won)
	}
}

func rulesGetUnknown(t testing.TB, s publishing.RecurringRules) {
	if _, err := s.GetRule(t.Context(), "nobody"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("GetRule of an unknown id: %v, want post.ErrNotFound", err)
	}
}

// An update at the version read stores the rule, one version on.
func rulesUpdate(t testing.TB, s publishing.RecurringRules) {
	mustCreateRule(t, s, simpleRule("tips"))
	r := mustGetRule(t, s, "tips")
	next := fullRule("tips")
	next.Version = r.Version
	if err := s.UpdateRule(t.Context(), next); err != nil {
		t.Fatalf("UpdateRule at version %d: %v", r.Version, err)
	}
	want := next
	want.Version = r.Version + 1
	if diff := cmp.Diff(want, mustGetRule(t, s, "tips")); diff != "" {
		t.Errorf("after the update (-want +got):\n%s", diff)
	}
	// Fields cleared by an update are cleared.
	cleared := simpleRule("tips")
	cleared.Version = want.Version
	if err := s.UpdateRule(t.Context(), cleared); err != nil {
		t.Fatalf("second UpdateRule: %v", err)
	}
	want = cleared
	want.Version = cleared.Version + 1
	if diff := cmp.Diff(want, mustGetRule(t, s, "tips"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("after clearing (-want +got):\n%s", diff)
	}
}

// An update at a version that is no longer stored changes nothing.
func rulesUpdateStale(t testing.TB, s publishing.RecurringRules) {
	mustCreateRule(t, s, simpleRule("tips"))
	r := mustGetRule(t, s, "tips")
	first := r
	first.Body = "first edit"
	if err := s.UpdateRule(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	stale := r
	stale.Body = "stale edit"
	if err := s.UpdateRule(t.Context(), stale); !errors.Is(err, post.ErrConflict) {
		t.Fatalf("UpdateRule at the old version %d: %v, want post.ErrConflict", r.Version, err)
	}
	if got := mustGetRule(t, s, "tips"); got.Body != "first edit" || got.Version != r.Version+1 {
		t.Errorf("stored %q at version %d, want %q at %d", got.Body, got.Version, "first edit", r.Version+1)
	}
}

func rulesUpdateUnknown(t testing.TB, s publishing.RecurringRules) {
	r := simpleRule("nobody")
	r.Version = 1
	if err := s.UpdateRule(t.Context(), r); !errors.Is(err, post.ErrConflict) {
		t.Errorf("UpdateRule of an unknown id: %v, want post.ErrConflict", err)
	}
	if _, err := s.GetRule(t.Context(), "nobody"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("the refused update created the rule: %v", err)
	}
}

// Of many updates at the same version at once, exactly one wins.
func rulesUpdateConcurrent(t testing.TB, s publishing.RecurringRules) {
	mustCreateRule(t, s, simpleRule("race"))
	r := mustGetRule(t, s, "race")
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			next := r
			next.Body = fmt.Sprintf("writer %d", i)
			errs[i] = s.UpdateRule(t.Context(), next)
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("writers %d and %d both updated version %d", won, i, r.Version)
		case err == nil:
			won = i
		case !errors.Is(err, post.ErrConflict):
			t.Fatalf("writer %d: %v, want nil or post.ErrConflict", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no writer updated the rule")
	}
	if got := mustGetRule(t, s, "race"); got.Body != fmt.Sprintf("writer %d", won) || got.Version != r.Version+1 {
		t.Errorf("stored %q at version %d, want writer %d's at %d", got.Body, got.Version, won, r.Version+1)
	}
}

func rulesList(t testing.TB, s publishing.RecurringRules) {
	if got, err := s.ListRules(t.Context()); err != nil || len(got) != 0 {
		t.Fatalf("ListRules of an empty store: %v, %v", got, err)
	}
	for _, id := range []recurring.ID{"weekly", "daily", "b-2", "b-10"} {
		mustCreateRule(t, s, simpleRule(id))
	}
	got, err := s.ListRules(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []recurring.ID
	for _, r := range got {
		ids = append(ids, r.ID)
		if r.Body != "Hello "+string(r.ID) || r.Version != 1 {
			t.Errorf("listed %s with body %q version %d", r.ID, r.Body, r.Version)
		}
	}
	if diff := cmp.Diff([]recurring.ID{"b-10", "b-2", "daily", "weekly"}, ids); diff != "" {
		t.Errorf("ids listed (-want +got):\n%s", diff)
	}
}
