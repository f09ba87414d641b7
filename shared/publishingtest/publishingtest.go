// Package publishingtest holds the conformance suites every store and queue
// adapter must pass (DESIGN §6): TestLedger, TestPosts, TestAccounts and
// TestQueue, TestPostPages for the operator's post listing, and
// TestSubscriptions and TestDeliveries for the outbox of webhook events. An
// adapter's own _test.go calls them with a factory that returns a fresh,
// empty adapter:
//
//	func TestConformance(t *testing.T) {
//		publishingtest.TestLedger(t, func(t *testing.T) publishing.Ledger {
//			return openStore(t)
//		})
//	}
//
// Each suite runs one subtest per check and calls the factory inside every
// subtest, so no check sees another's data. The subtests do not call
// t.Parallel.
//
// Times are compared exactly, to the nanosecond, with time.Time.Equal: the
// stores keep RFC 3339 with nanoseconds, so what goes in comes back out.
// Times read back from a store must also be in UTC. Queue
// suites run in real time, measured in QueueOptions.Unit.
//
// The suites follow the doc comments of the ports in package publishing;
// where a comment leaves a choice open the suite accepts every reasonable
// answer and says so at the check.
package publishingtest

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// base is the suites' reference instant: UTC, with nanoseconds, so a store
// that drops precision or the zone is caught.
var base = time.Date(2026, time.March, 14, 9, 26, 53, 589793238, time.UTC)

// check is one named conformance check against one adapter instance. Names
// are "Group/name"; the suite runs them as nested subtests.
type check[A any] struct {
	name string
	run  func(t testing.TB, a A)
}

// runChecks runs every check in a subtest of its group, with a fresh
// adapter from newA.
func runChecks[A any](t *testing.T, checks []check[A], newA func(t *testing.T) A) {
	t.Helper()
	var groups []string
	byGroup := map[string][]check[A]{}
	for _, c := range checks {
		g, _, _ := strings.Cut(c.name, "/")
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], c)
	}
	for _, g := range groups {
		t.Run(g, func(t *testing.T) {
			for _, c := range byGroup[g] {
				_, name, _ := strings.Cut(c.name, "/")
				t.Run(name, func(t *testing.T) {
					c.run(t, newA(t))
				})
			}
		})
	}
}

// clock hands out strictly increasing instants after base, one second and
// a few nanoseconds apart, so stored times keep their nanoseconds.
type clock struct{ t time.Time }

func newClock(start time.Time) *clock { return &clock{t: start} }

func (c *clock) next() time.Time {
	c.t = c.t.Add(time.Second + 7)
	return c.t
}

// checkUTC reports every non-zero time that is not in UTC.
func checkUTC(t testing.TB, what string, times map[string]time.Time) {
	t.Helper()
	names := make([]string, 0, len(times))
	for n := range times {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if tm := times[n]; !tm.IsZero() && tm.Location() != time.UTC {
			t.Errorf("%s: %s = %s is in %s, want UTC", what, n, tm.Format(time.RFC3339Nano), tm.Location())
		}
	}
}

// runTogether runs call(0) … call(n-1) in n goroutines released at the same
// moment, and returns their errors in order.
func runTogether(n int, call func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = call(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// exactlyOneWinner checks that exactly one of errs is nil and every other
// one wraps conflict; it returns the winner's index, or -1.
func exactlyOneWinner(t testing.TB, errs []error, isConflict func(error) bool) int {
	t.Helper()
	winner := -1
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
			if winner < 0 {
				winner = i
			}
		case !isConflict(err):
			t.Errorf("racer %d: error %v, want nil or a conflict", i, err)
		}
	}
	if wins != 1 {
		t.Errorf("%d of %d racers succeeded, want exactly 1", wins, len(errs))
	}
	return winner
}
