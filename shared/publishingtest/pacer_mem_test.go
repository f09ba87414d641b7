package publishingtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"oncepost/shared/pace"
	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

type pacerBugs struct {
	notAtomic    bool // reads, then writes in another step
	refusalTakes bool // a refused send still advances the limits that allowed it
	sharedBudget bool // one budget for every account
}

type memPacer struct {
	bugs pacerBugs
	mu   sync.Mutex
	tats map[post.AccountID]map[string]time.Time
}

func newMemPacer(b pacerBugs) *memPacer {
	return &memPacer{bugs: b, tats: map[post.AccountID]map[string]time.Time{}}
}

func (m *memPacer) Pace(_ context.Context, account post.AccountID, rates []platform.Rate, now time.Time) (time.Duration, error) {
	if m.bugs.sharedBudget {
		account = "*"
	}
	m.mu.Lock()
	cur := map[string]time.Time{}
	for k, v := range m.tats[account] {
		cur[k] = v
	}
	if m.bugs.notAtomic {
		m.mu.Unlock()
		race()
		m.mu.Lock()
	}
	defer m.mu.Unlock()
	next, wait, ok := pace.Take(cur, rates, now)
	if !ok && m.bugs.refusalTakes {
		for _, r := range rates {
			if n, _, ok := pace.Take(cur, []platform.Rate{r}, now); ok {
				for k, v := range n {
					cur[k] = v
				}
			}
		}
		m.tats[account] = cur
		return wait, nil
	}
	if !ok {
		return wait, nil
	}
	if m.tats[account] == nil {
		m.tats[account] = map[string]time.Time{}
	}
	for k, v := range next {
		m.tats[account][k] = v
	}
	return 0, nil
}

func TestPacerSuitePassesACorrectAdapter(t *testing.T) {
	TestPacer(t, func(*testing.T) publishing.Pacer { return newMemPacer(pacerBugs{}) })
}

func TestPacerSuiteCatchesBrokenAdapters(t *testing.T) {
	p := func(b pacerBugs) func() publishing.Pacer { return func() publishing.Pacer { return newMemPacer(b) } }
	testBroken(t, pacerChecks(), []brokenCase[publishing.Pacer]{
		{"Pace reads and writes in two steps", p(pacerBugs{notAtomic: true}), []string{"Pace/concurrent_takes"}},
		{"a refusal takes from the limits that allowed it", p(pacerBugs{refusalTakes: true}), []string{"Pace/refusal_takes_nothing"}},
		{"one budget for every account", p(pacerBugs{sharedBudget: true}), []string{"Pace/accounts_apart"}},
	}, false)
}
