// Package pace is the arithmetic of an account's posting budget: each of
// a platform's posting limits (platform.Rate: Count posts per Per) is a
// GCRA bucket (the generic cell rate algorithm) kept as one time, the
// "theoretical arrival time" (TAT). A send is allowed when every bucket
// allows it, and then advances every bucket; a refused send changes none.
//
// GCRA keeps one timestamp per limit instead of a log of sends, so a
// store can keep a budget in one row or item and update it with one
// conditional write. A GCRA bucket of n sends per Per with a burst of n
// lets through up to 2n sends in some windows of length Per (a full
// burst at the end of one period and another at the start of the next),
// so each limit is run as a bucket of Count/2 sends per Per with a burst
// of Count/2: at most Count sends in any window of length Per, which is
// what a platform's sliding window counts, with half the budget free for
// a burst (five posts scheduled for 9:00 on Mastodon, 300 per 3 h, all go
// at 9:00) and then one send every 2·Per/Count. A limit of one send per
// Per is one send per Per. The stores (sqlitestore, dynamostore) keep the
// times and make Take atomic; this package only computes.
package pace

import (
	"fmt"
	"time"

	"oncepost/shared/platform"
)

// Key names a limit in a store: "COUNT/PER", e.g. "300/3h0m0s".
func Key(r platform.Rate) string { return fmt.Sprintf("%d/%s", r.Count, r.Per) }

// Take spends one send from every limit at now. tats are the stored times
// by Key (missing: never used). It returns the times to store and ok, or,
// when a limit refuses, ok false and the wait until all of them allow a
// send (nothing is to be stored then). Invalid limits (Count or Per not
// positive) are ignored.
func Take(tats map[string]time.Time, rates []platform.Rate, now time.Time) (next map[string]time.Time, wait time.Duration, ok bool) {
	next = make(map[string]time.Time, len(rates))
	for _, r := range rates {
		if r.Count <= 0 || r.Per <= 0 {
			continue
		}
		interval := r.Per
		if r.Count >= 2 {
			interval = 2 * r.Per / time.Duration(r.Count)
		}
		tat := tats[Key(r)]
		if tat.Before(now) {
			tat = now
		}
		// The send is allowed when the bucket, after it, is not more
		// than Per ahead of now: Count/2 sends fit in an empty bucket.
		after := tat.Add(interval)
		if over := after.Sub(now) - r.Per; over > 0 {
			wait = max(wait, over)
			continue
		}
		next[Key(r)] = after
	}
	if wait > 0 {
		return nil, wait, false
	}
	return next, 0, true
}

// Left is, for each of rates, how many sends Take would allow at now
// with no send between: the budget left under that limit (0 for an
// invalid limit). Take allows a send when every limit has one left.
func Left(tats map[string]time.Time, rates []platform.Rate, now time.Time) []int {
	out := make([]int, len(rates))
	for i, r := range rates {
		if r.Count <= 0 || r.Per <= 0 {
			continue
		}
		interval := r.Per
		if r.Count >= 2 {
			interval = 2 * r.Per / time.Duration(r.Count)
		}
		ahead := max(tats[Key(r)].Sub(now), 0)
		out[i] = max(int((r.Per-ahead)/interval), 0)
	}
	return out
}
