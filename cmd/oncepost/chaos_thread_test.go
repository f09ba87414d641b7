package main

import (
	"context"
	"testing"
	"time"
)

// chaosDefaults is `oncepost chaos`'s default profile (its flags').
func chaosDefaults() chaosProfile {
	return chaosProfile{Rounds: 1000, Accounts: 1, Delay: 120 * time.Millisecond, DelayRate: 0.3, Timeout: 100 * time.Millisecond,
		Loss: 0.2, ResponseLoss: 0.1, Seed: 1, Platform: "mastodon", Thread: 1}
}

// The drill with threads of four parts through the ledger: every part
// of every thread on the platform once, in order, each replying to the
// one before (checkThreadRound, against the sandbox's own records), with
// the confirm branch taken; nothing lost or left open.
func TestChaosThreadsThroughTheLedger(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the drill")
	}
	t.Parallel() // mostly waits for the confirm loop's looks
	got, code, line := runChaos(t, "--thread", "4", "--rounds", "30")
	if code != exitOK || got["duplicates"] != 0 || got["lost"] != 0 || got["leaked-pending"] != 0 || got["unexplained"] != 0 ||
		got["published"]+got["held"] != 30 || got["held"] > 2 {
		t.Errorf("chaos --thread 4 exit %d: %s", code, line)
	}
	if got["confirm-branch"] == 0 {
		t.Errorf("no part took the confirm branch: the faults did not bite (%s)", line)
	}
}

// The naive template against the same faults posts a thread's part
// twice (a retry after a lost answer is a second create), so the drill's
// check can fail: the ledger's threads have no duplicate part
// (TestChaosThreadsThroughTheLedger), the naive template's do.
func TestChaosNaiveThreadDuplicatesAPart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the drill")
	}
	t.Parallel()
	p := chaosDefaults()
	p.Rounds, p.Thread, p.Naive = 60, 4, true
	res, err := chaosNaive(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.DuplicateParts == 0 {
		t.Errorf("the naive template duplicated no part after the first: %s", res)
	}
}
