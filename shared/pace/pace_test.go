package pace

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"oncepost/shared/platform"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// sender keeps a budget's times as a store would.
type sender struct {
	rates []platform.Rate
	tats  map[string]time.Time
	sent  []time.Time
}

func (s *sender) take(at time.Time) (time.Duration, bool) {
	next, wait, ok := Take(s.tats, s.rates, at)
	if ok {
		for k, v := range next {
			s.tats[k] = v
		}
		s.sent = append(s.sent, at)
	}
	return wait, ok
}

// maxInWindow is the most sends in any window (t-per, t], the window a
// platform counts.
func maxInWindow(sent []time.Time, per time.Duration) int {
	sort.Slice(sent, func(i, j int) bool { return sent[i].Before(sent[j]) })
	most, j := 0, 0
	for i := range sent {
		for sent[i].Sub(sent[j]) >= per {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// Whatever the arrivals, no window of length Per ever holds more than
// Count sends (the platform's sliding window): random arrivals, bursts,
// and a sender that retries at exactly the wait it was given.
func TestNeverOverTheLimitInAnyWindow(t *testing.T) {
	for _, r := range []platform.Rate{{Count: 300, Per: 3 * time.Hour}, {Count: 100, Per: 15 * time.Minute}, {Count: 20, Per: time.Minute}, {Count: 3, Per: time.Minute}, {Count: 1, Per: time.Second}} {
		rng := rand.New(rand.NewPCG(7, uint64(r.Count)))
		s := &sender{rates: []platform.Rate{r}, tats: map[string]time.Time{}}
		at := t0
		for range 20 * r.Count {
			if rng.IntN(4) == 0 {
				// a burst: many at the same instant
				for range r.Count {
					s.take(at)
				}
			}
			wait, ok := s.take(at)
			if !ok {
				if wait <= 0 {
					t.Fatalf("%v: refused without a wait", r)
				}
				if _, ok := s.take(at.Add(wait)); !ok {
					t.Fatalf("%v: refused again at the wait it was given (%s)", r, wait)
				}
			}
			at = at.Add(time.Duration(rng.Int64N(int64(3 * r.Per / time.Duration(r.Count)))))
		}
		if got := maxInWindow(s.sent, r.Per); got > r.Count {
			t.Errorf("%d per %s: %d sends in one window", r.Count, r.Per, got)
		}
		if len(s.sent) < 2*r.Count {
			t.Errorf("%d per %s: only %d sends got through", r.Count, r.Per, len(s.sent))
		}
	}
}

// Half the budget goes at once: five posts at 9:00 on Mastodon all go at
// 9:00; the burst after that waits one interval.
func TestHalfTheBudgetIsABurst(t *testing.T) {
	s := &sender{rates: []platform.Rate{{Count: 300, Per: 3 * time.Hour}}, tats: map[string]time.Time{}}
	for i := range 150 {
		if _, ok := s.take(t0); !ok {
			t.Fatalf("send %d of a burst of 150 refused", i+1)
		}
	}
	wait, ok := s.take(t0)
	if ok || wait != 72*time.Second {
		t.Errorf("the 151st send: ok=%v wait=%s, want a wait of 72s (2·3h/300)", ok, wait)
	}
}

// With two limits the stricter decides, and a refused send spends nothing
// of the other limit.
func TestStricterLimitDecidesAndRefusalSpendsNothing(t *testing.T) {
	s := &sender{rates: []platform.Rate{{Count: 1, Per: time.Second}, {Count: 20, Per: time.Minute}}, tats: map[string]time.Time{}}
	if _, ok := s.take(t0); !ok {
		t.Fatal("first send refused")
	}
	before := s.tats[Key(platform.Rate{Count: 20, Per: time.Minute})]
	if _, ok := s.take(t0.Add(500 * time.Millisecond)); ok {
		t.Fatal("a second send within the second was allowed")
	}
	if after := s.tats[Key(platform.Rate{Count: 20, Per: time.Minute})]; !after.Equal(before) {
		t.Error("a refused send advanced the per-minute bucket")
	}
	for sec := 1; sec < 120; sec++ {
		s.take(t0.Add(time.Duration(sec) * time.Second))
	}
	if got := maxInWindow(s.sent, time.Minute); got > 20 {
		t.Errorf("%d sends in a minute, over 20", got)
	}
	if got := maxInWindow(s.sent, time.Second); got > 1 {
		t.Errorf("%d sends in a second, over 1", got)
	}
}

// No limits, or invalid ones, never wait.
func TestNoLimits(t *testing.T) {
	for _, rates := range [][]platform.Rate{nil, {{Count: 0, Per: time.Second}}, {{Count: 5, Per: 0}}} {
		if _, wait, ok := Take(nil, rates, t0); !ok || wait != 0 {
			t.Errorf("%v: ok=%v wait=%s", rates, ok, wait)
		}
	}
}
