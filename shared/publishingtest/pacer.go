package publishingtest

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// TestPacer runs the conformance suite of the Pacer port.
func TestPacer(t *testing.T, newPacer func(t *testing.T) publishing.Pacer) {
	t.Helper()
	runChecks(t, pacerChecks(), newPacer)
}

func pacerChecks() []check[publishing.Pacer] {
	return []check[publishing.Pacer]{
		{"Pace/burst_then_wait", pacerBurst},
		{"Pace/refusal_takes_nothing", pacerRefusal},
		{"Pace/accounts_apart", pacerAccounts},
		{"Pace/concurrent_takes", pacerConcurrent},
	}
}

// fourPerMinute lets two sends through at once, then one every 30 s.
var fourPerMinute = []platform.Rate{{Count: 4, Per: time.Minute}}

func mustPace(t testing.TB, p publishing.Pacer, acc post.AccountID, rates []platform.Rate, at time.Time) time.Duration {
	t.Helper()
	wait, err := p.Pace(t.Context(), acc, rates, at)
	if err != nil {
		t.Fatalf("Pace(%s, %s): %v", acc, at, err)
	}
	return wait
}

// Half the budget goes at once; the next send waits one interval, to the
// nanosecond the store was given, and is taken once that has passed.
func pacerBurst(t testing.TB, p publishing.Pacer) {
	for i := range 2 {
		if w := mustPace(t, p, "news", fourPerMinute, base); w != 0 {
			t.Fatalf("send %d of the burst waits %s", i+1, w)
		}
	}
	if w := mustPace(t, p, "news", fourPerMinute, base); w != 30*time.Second {
		t.Fatalf("third send at once waits %s, want 30s", w)
	}
	if w := mustPace(t, p, "news", fourPerMinute, base.Add(30*time.Second)); w != 0 {
		t.Errorf("the send after the wait was refused for %s more", w)
	}
	if w := mustPace(t, p, "news", fourPerMinute, base.Add(30*time.Second)); w != 30*time.Second {
		t.Errorf("a second send at the same instant waits %s, want 30s", w)
	}
}

// A send refused by one limit takes nothing from the others.
func pacerRefusal(t testing.TB, p publishing.Pacer) {
	rates := []platform.Rate{{Count: 1, Per: time.Second}, {Count: 4, Per: time.Minute}}
	if w := mustPace(t, p, "news", rates, base); w != 0 {
		t.Fatalf("first send waits %s", w)
	}
	for range 5 {
		if w := mustPace(t, p, "news", rates, base.Add(100*time.Millisecond)); w == 0 {
			t.Fatal("a second send within the second was taken")
		}
	}
	// Had the refusals spent the per-minute budget, this one would wait.
	if w := mustPace(t, p, "news", rates, base.Add(time.Second)); w != 0 {
		t.Errorf("the second send a second later waits %s: refused sends took from the per-minute budget", w)
	}
}

// Each account has its own budget.
func pacerAccounts(t testing.TB, p publishing.Pacer) {
	one := []platform.Rate{{Count: 1, Per: time.Hour}}
	if w := mustPace(t, p, "news", one, base); w != 0 {
		t.Fatalf("news waits %s", w)
	}
	if w := mustPace(t, p, "events", one, base); w != 0 {
		t.Errorf("events waits %s after news sent", w)
	}
	if w := mustPace(t, p, "news", one, base); w != time.Hour {
		t.Errorf("news again waits %s, want 1h", w)
	}
}

// Sixteen workers at once on a budget of ten per hour: five sends are
// taken (the burst), never more.
func pacerConcurrent(t testing.TB, p publishing.Pacer) {
	rates := []platform.Rate{{Count: 10, Per: time.Hour}}
	var taken atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			w, err := p.Pace(t.Context(), "news", rates, base)
			if err != nil {
				t.Error(err)
				return
			}
			if w == 0 {
				taken.Add(1)
			}
		})
	}
	wg.Wait()
	if n := taken.Load(); n != 5 {
		t.Errorf("%d of 16 concurrent sends taken, want 5", n)
	}
}
