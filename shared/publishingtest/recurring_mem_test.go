package publishingtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/recurring"
)

type rulesBugs struct {
	createOverwrites bool // a second create replaces the first
	createNotAtomic  bool // checks the id, then writes in another step
	updateIgnores    bool // updates whatever the stored version
	updateNotAtomic  bool // checks the version, then writes in another step
	noVersionBump    bool // stores the version given, not one more
	keepsZone        bool // times come back in the zone they went in
	truncates        bool // times lose their nanoseconds
	dropsRetiring    bool // an earlier revision being retired is not stored
	unsorted         bool // lists in insertion order
}

// memRules is the in-memory RecurringRules, with optional bugs.
type memRules struct {
	bugs  rulesBugs
	mu    sync.Mutex
	rules map[recurring.ID][]byte
	order []recurring.ID
}

func newMemRules(b rulesBugs) *memRules { return &memRules{bugs: b, rules: map[recurring.ID][]byte{}} }

func (m *memRules) encode(r recurring.Rule) []byte {
	if m.bugs.dropsRetiring {
		r.Retiring = nil
	}
	if m.bugs.truncates {
		r.Start = r.Start.Truncate(time.Second)
	}
	if m.bugs.keepsZone {
		b, _ := jsonMarshal(r)
		return b
	}
	b, err := recurring.Encode(r)
	if err != nil {
		panic(err)
	}
	return b
}

func (m *memRules) decode(b []byte) recurring.Rule {
	if m.bugs.keepsZone {
		var r recurring.Rule
		_ = jsonUnmarshal(b, &r)
		return r
	}
	r, err := recurring.Decode(b)
	if err != nil {
		panic(err)
	}
	return r
}

func (m *memRules) CreateRule(_ context.Context, r recurring.Rule) error {
	r.Version = 1
	m.mu.Lock()
	_, exists := m.rules[r.ID]
	if m.bugs.createNotAtomic {
		m.mu.Unlock()
		race()
		m.mu.Lock()
	}
	defer m.mu.Unlock()
	if exists && !m.bugs.createOverwrites {
		return fmt.Errorf("rule %s: %w", r.ID, post.ErrConflict)
	}
	if !exists {
		m.order = append(m.order, r.ID)
	}
	m.rules[r.ID] = m.encode(r)
	return nil
}

func (m *memRules) GetRule(_ context.Context, id recurring.ID) (recurring.Rule, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.rules[id]
	if !ok {
		return recurring.Rule{}, fmt.Errorf("rule %s: %w", id, post.ErrNotFound)
	}
	return m.decode(b), nil
}

func (m *memRules) UpdateRule(_ context.Context, r recurring.Rule) error {
	m.mu.Lock()
	b, ok := m.rules[r.ID]
	if m.bugs.updateNotAtomic {
		m.mu.Unlock()
		race()
		m.mu.Lock()
	}
	defer m.mu.Unlock()
	if !ok || (!m.bugs.updateIgnores && m.decode(b).Version != r.Version) {
		return fmt.Errorf("rule %s: %w", r.ID, post.ErrConflict)
	}
	if !m.bugs.noVersionBump {
		r.Version++
	}
	m.rules[r.ID] = m.encode(r)
	return nil
}

func (m *memRules) ListRules(context.Context) ([]recurring.Rule, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := slices.Clone(m.order)
	if !m.bugs.unsorted {
		slices.Sort(ids)
	}
	var out []recurring.Rule
	for _, id := range ids {
		out = append(out, m.decode(m.rules[id]))
	}
	return out, nil
}

func TestRecurringSuitePassesACorrectAdapter(t *testing.T) {
	TestRecurringRules(t, func(*testing.T) publishing.RecurringRules { return newMemRules(rulesBugs{}) })
}

func TestRecurringSuiteCatchesBrokenAdapters(t *testing.T) {
	r := func(b rulesBugs) func() publishing.RecurringRules {
		return func() publishing.RecurringRules { return newMemRules(b) }
	}
	testBroken(t, recurringChecks(), []brokenCase[publishing.RecurringRules]{
		{"a second create overwrites the first", r(rulesBugs{createOverwrites: true}), []string{"Create/existing_id_not_overwritten", "Create/concurrent_same_id"}},
		{"create checks the id outside the write", r(rulesBugs{createNotAtomic: true}), []string{"Create/concurrent_same_id"}},
		{"update ignores the version", r(rulesBugs{updateIgnores: true}), []string{"Update/stale_version", "Update/concurrent_same_version"}},
		{"update checks the version outside the write", r(rulesBugs{updateNotAtomic: true}), []string{"Update/concurrent_same_version"}},
		{"update keeps the version", r(rulesBugs{noVersionBump: true}), []string{"Update/next_version", "Update/stale_version"}},
		{"times keep their zone", r(rulesBugs{keepsZone: true}), []string{"Create/times_in_utc"}},
		{"times lose their nanoseconds", r(rulesBugs{truncates: true}), []string{"Create/round_trip"}},
		{"the revision being retired is dropped", r(rulesBugs{dropsRetiring: true}), []string{"Create/round_trip", "Update/next_version"}},
		{"listing is not by id", r(rulesBugs{unsorted: true}), []string{"List/every_rule_by_id"}},
	}, false)
}

func jsonMarshal(v any) ([]byte, error)   { return json.Marshal(v) }
func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
