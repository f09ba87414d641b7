package publishingtest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/ledger"
	"oncepost/shared/publishing"
)

// TestLedger checks that a ledger store keeps the promise of DESIGN §3: a
// first write happens once, every move is a conditional write on (state,
// attempt) that ledger.Check approves, nothing outside the transition table
// is ever stored, open entries are listed for the sweeper, and every move is
// recorded in the entry's history. newLedger must return an empty ledger.
//
// History may or may not start with the first write (From empty, To
// pending, attempt 1); both are accepted, the moves made by Update must
// follow it in order. A held → held move (a new task token, an operator's
// decision) is a move like any other: stored, and recorded in the history.
func TestLedger(t *testing.T, newLedger func(t *testing.T) publishing.Ledger) {
	t.Helper()
	runChecks(t, ledgerChecks(), newLedger)
}

// ledgerStates are the six states, in the order of DESIGN §3.
var ledgerStates = []ledger.State{ledger.Pending, ledger.Confirmed, ledger.Released, ledger.Failed, ledger.Unknown, ledger.Held}

// designMoves is the transition table of DESIGN §3, written out again so
// the suite does not trust the ledger package it checks stores against.
var designMoves = map[ledger.State][]ledger.State{
	ledger.Pending:  {ledger.Confirmed, ledger.Released, ledger.Failed, ledger.Unknown, ledger.Held},
	ledger.Unknown:  {ledger.Confirmed, ledger.Released, ledger.Held},
	ledger.Released: {ledger.Pending},
	// Held → held records a newer task token or an operator's decision.
	ledger.Held: {ledger.Released, ledger.Confirmed, ledger.Failed, ledger.Held},
}

func designAllows(from, to ledger.State) bool {
	for _, s := range designMoves[from] {
		if s == to {
			return true
		}
	}
	return false
}

func ledgerChecks() []check[publishing.Ledger] {
	cs := []check[publishing.Ledger]{
		{"Create/concurrent_same_key", ledgerCreateRace},
		{"Create/round_trip_every_field", ledgerRoundTrip},
		{"Create/existing_key_not_overwritten", ledgerCreateExisting},
		{"Create/refuses_what_CheckNew_refuses", ledgerCreateInvalid},
		{"Get/missing_key", ledgerGetMissing},
	}
	for _, from := range ledgerStates {
		for _, to := range designMoves[from] {
			cs = append(cs, check[publishing.Ledger]{
				name: fmt.Sprintf("Update/allowed_%s_to_%s", from, to),
				run:  func(t testing.TB, l publishing.Ledger) { ledgerAllowed(t, l, from, to) },
			})
		}
	}
	for _, from := range ledgerStates {
		cs = append(cs, check[publishing.Ledger]{
			name: fmt.Sprintf("Update/refused_from_%s", from),
			run:  func(t testing.TB, l publishing.Ledger) { ledgerRefusedFrom(t, l, from) },
		})
	}
	return append(cs, []check[publishing.Ledger]{
		{"Update/refused_attempt_handle_key_changes", ledgerRefusedFields},
		{"Update/stale_state", ledgerStaleState},
		{"Update/stale_attempt", ledgerStaleAttempt},
		{"Update/missing_entry", ledgerUpdateMissing},
		{"Update/concurrent_same_prev", ledgerUpdateRace},
		{"Update/new_fields_round_trip", ledgerNewFields},
		{"Update/held_to_held_stale_prev", ledgerHeldStale},
		{"Update/concurrent_held_to_held", ledgerHeldRace},
		{"Lease/expired_moves_to_unknown", ledgerLeaseExpired},
		{"Lease/live_lease_waits", ledgerLeaseLive},
		{"Open/pending_and_unknown_oldest_first", ledgerOpen},
		{"Held/least_recently_updated_first", ledgerHeld},
		{"History/transitions_in_order", ledgerHistory},
		{"RecordCheckpoint/stored_kept_no_history", ledgerCheckpointKept},
		{"RecordCheckpoint/refused_unless_pending_owner", ledgerCheckpointRefused},
	}...)
}

// A checkpoint is stored on the pending entry without a state move (no
// history), read back by Get, and kept by the moves that carry it.
func ledgerCheckpointKept(t testing.TB, l publishing.Ledger) {
	clk := newClock(base)
	e := reach(t, l, "checkpoint-kept", ledger.Pending, clk)
	if err := l.RecordCheckpoint(t.Context(), e, "container-1"); err != nil {
		t.Fatalf("RecordCheckpoint: %v", err)
	}
	got := mustGet(t, l, e.Key)
	if got.Checkpoint != "container-1" || got.State != ledger.Pending || got.Attempt != e.Attempt {
		t.Fatalf("after RecordCheckpoint: %s attempt %d checkpoint %q", got.State, got.Attempt, got.Checkpoint)
	}
	wantMoves(t, l, e.Key, nil)
	// A second step of the same attempt may replace it (a container that
	// expired is replaced by a new one).
	if err := l.RecordCheckpoint(t.Context(), e, "container-2"); err != nil {
		t.Fatalf("second RecordCheckpoint: %v", err)
	}
	next, err := got.MarkUnknown("timeout", clk.next())
	if err != nil {
		t.Fatal(err)
	}
	next.Checkpoint = "container-2"
	got.Checkpoint = "container-2"
	mustUpdate(t, l, got, next)
	if after := mustGet(t, l, e.Key); after.Checkpoint != "container-2" {
		t.Errorf("checkpoint after pending → unknown = %q, want container-2", after.Checkpoint)
	}
}

// RecordCheckpoint is refused when the stored entry is not this worker's
// pending attempt: another owner, another attempt, or no longer pending.
func ledgerCheckpointRefused(t testing.TB, l publishing.Ledger) {
	clk := newClock(base)
	e := reach(t, l, "checkpoint-refused", ledger.Pending, clk)
	other := e
	other.LeaseOwner = "someone-else"
	if err := l.RecordCheckpoint(t.Context(), other, "c"); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("another owner's checkpoint = %v, want ledger.ErrConflict", err)
	}
	stale := e
	stale.Attempt++
	if err := l.RecordCheckpoint(t.Context(), stale, "c"); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("another attempt's checkpoint = %v, want ledger.ErrConflict", err)
	}
	next, err := e.MarkUnknown("timeout", clk.next())
	if err != nil {
		t.Fatal(err)
	}
	mustUpdate(t, l, e, next)
	if err := l.RecordCheckpoint(t.Context(), e, "c"); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("checkpoint of an entry no longer pending = %v, want ledger.ErrConflict", err)
	}
	if err := l.RecordCheckpoint(t.Context(), next, "c"); !errors.Is(err, ledger.ErrTransition) {
		t.Errorf("checkpoint of an unknown entry = %v, want ledger.ErrTransition", err)
	}
	if got := mustGet(t, l, e.Key); got.Checkpoint != "" {
		t.Errorf("refused checkpoints stored %q", got.Checkpoint)
	}
}

// pendingEntry is a first write for subject, acquired at now with a
// one-minute lease.
func pendingEntry(subject string, now time.Time) ledger.Entry {
	return ledger.NewEntry(ledger.PublishKey("acct-suite", subject, base), ledger.Publish, "acct-suite", subject, base,
		"fingerprint-"+subject, "worker-1", now, time.Minute)
}

// step moves e to state with the Entry method that makes that move.
func step(e ledger.Entry, to ledger.State, now time.Time) (ledger.Entry, error) {
	switch to {
	case ledger.Pending:
		return e.Reacquire("worker-2", now, time.Minute)
	case ledger.Confirmed:
		return e.Confirm("remote-"+string(e.Key[:10]), now)
	case ledger.Released:
		return e.Release("503 before processing", now)
	case ledger.Failed:
		return e.Fail("422 text too long", now)
	case ledger.Unknown:
		return e.MarkUnknown("timeout after the request was written", now)
	case ledger.Held:
		if e.State == ledger.Held {
			return e.Retoken("task-token-"+now.Format(time.RFC3339Nano), now)
		}
		return e.Hold("dedup found the same content", "remote-dup", now)
	}
	return e, fmt.Errorf("suite bug: no step to %q", to)
}

func mustCreate(t testing.TB, l publishing.Ledger, e ledger.Entry) {
	t.Helper()
	if err := l.Create(t.Context(), e); err != nil {
		t.Fatalf("Create(%s %s) = %v, want nil", e.Key, e.State, err)
	}
}

func mustGet(t testing.TB, l publishing.Ledger, key ledger.Key) ledger.Entry {
	t.Helper()
	e, err := l.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%s) = %v, want nil", key, err)
	}
	checkUTC(t, "Get("+string(key)+")", entryTimes(e))
	return e
}

func entryTimes(e ledger.Entry) map[string]time.Time {
	return map[string]time.Time{"Slot": e.Slot, "LeaseUntil": e.LeaseUntil, "OpenSince": e.OpenSince,
		"SentAt": e.SentAt, "RetryAt": e.RetryAt, "DeferredSince": e.DeferredSince,
		"UpdatedAt": e.UpdatedAt, "ExpiresAt": e.ExpiresAt}
}

// wantStored checks that the stored entry is exactly want.
func wantStored(t testing.TB, l publishing.Ledger, want ledger.Entry, what string) {
	t.Helper()
	got := mustGet(t, l, want.Key)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: Get(%s) mismatch (-want +got):\n%s", what, want.Key, diff)
	}
}

// mustUpdate moves prev to next and checks the store shows next.
func mustUpdate(t testing.TB, l publishing.Ledger, prev, next ledger.Entry) {
	t.Helper()
	if err := l.Update(t.Context(), prev, next); err != nil {
		t.Fatalf("Update(%s → %s) = %v, want nil", prev.State, next.State, err)
	}
	wantStored(t, l, next, fmt.Sprintf("after Update(%s → %s)", prev.State, next.State))
}

// reach stores a new entry for subject and moves it to state in one step.
func reach(t testing.TB, l publishing.Ledger, subject string, state ledger.State, clk *clock) ledger.Entry {
	t.Helper()
	e := pendingEntry(subject, clk.next())
	mustCreate(t, l, e)
	if state == ledger.Pending {
		return e
	}
	n, err := step(e, state, clk.next())
	if err != nil {
		t.Fatalf("suite bug: pending → %s: %v", state, err)
	}
	mustUpdate(t, l, e, n)
	return n
}

func mustHistory(t testing.TB, l publishing.Ledger, key ledger.Key) []ledger.Transition {
	t.Helper()
	h, err := l.History(t.Context(), key)
	if err != nil {
		t.Fatalf("History(%s) = %v, want nil", key, err)
	}
	return h
}

// moves returns the key's history without its first write, if the store
// records one, and checks what every transition must satisfy.
func moves(t testing.TB, l publishing.Ledger, key ledger.Key) []ledger.Transition {
	t.Helper()
	h := mustHistory(t, l, key)
	var prev time.Time
	for i, tr := range h {
		if tr.At.IsZero() {
			t.Errorf("History(%s)[%d].At is zero", key, i)
		}
		if tr.At.Before(prev) {
			t.Errorf("History(%s)[%d].At = %s is before the previous transition's %s", key, i,
				tr.At.Format(time.RFC3339Nano), prev.Format(time.RFC3339Nano))
		}
		prev = tr.At
		checkUTC(t, fmt.Sprintf("History(%s)[%d]", key, i), map[string]time.Time{"At": tr.At})
		if tr.Key != key {
			t.Errorf("History(%s)[%d].Key = %s", key, i, tr.Key)
		}
	}
	if len(h) > 0 && h[0].From == "" {
		if h[0].To != ledger.Pending || h[0].Attempt != 1 {
			t.Errorf("History(%s)[0] = first write to %s attempt %d, want pending attempt 1", key, h[0].To, h[0].Attempt)
		}
		h = h[1:]
	}
	return h
}

// wantMoves checks the key's moves (without At) are want.
func wantMoves(t testing.TB, l publishing.Ledger, key ledger.Key, want []ledger.Transition) {
	t.Helper()
	got := moves(t, l, key)
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(ledger.Transition{}, "At"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("History(%s) moves mismatch (-want +got):\n%s", key, diff)
	}
}

func transition(prev, next ledger.Entry) ledger.Transition {
	return ledger.Transition{Key: next.Key, From: prev.State, To: next.State, Attempt: next.Attempt, Reason: next.Reason}
}

// 16 workers acquire the same key with their own handles; one wins.
func ledgerCreateRace(t testing.TB, l publishing.Ledger) {
	const n = 16
	entries := make([]ledger.Entry, n)
	for i := range entries {
		entries[i] = ledger.NewEntry(ledger.PublishKey("acct-race", "post-race", base), ledger.Publish, "acct-race", "post-race", base,
			"fingerprint", fmt.Sprintf("worker-%d", i), base, time.Minute)
		if i > 0 && entries[i].Handle == entries[0].Handle {
			t.Fatalf("suite bug: NewEntry reused a handle")
		}
	}
	errs := runTogether(n, func(i int) error { return l.Create(t.Context(), entries[i]) })
	winner := exactlyOneWinner(t, errs, func(err error) bool { return errors.Is(err, ledger.ErrConflict) })
	if winner < 0 {
		return
	}
	got := mustGet(t, l, entries[winner].Key)
	if got.Handle != entries[winner].Handle {
		t.Errorf("stored handle %q, want the winner's %q", got.Handle, entries[winner].Handle)
	}
	wantStored(t, l, entries[winner], "after the race")
}

// Every field of an entry survives Create and Get, to the nanosecond.
func ledgerRoundTrip(t testing.TB, l publishing.Ledger) {
	e := ledger.Entry{
		Key:           ledger.UploadKey("acct-rt", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "publish-key"),
		Action:        ledger.Upload,
		Account:       "acct-rt",
		Subject:       "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Post:          "post-rt/ü",
		Slot:          base.Add(time.Hour + 1),
		State:         ledger.Pending,
		Attempt:       1,
		MaybeSent:     2,
		Handle:        ledger.NewHandle(),
		Fingerprint:   "fp:Grüße, \"quoted\" 🎉\n",
		Checkpoint:    "container-17841405822304914",
		LeaseOwner:    "worker-rt/λ",
		LeaseUntil:    base.Add(90*time.Second + 3),
		OpenSince:     base.Add(-5),
		SentAt:        base.Add(7),
		LookAfter:     "110123456789000000",
		RetryAt:       base.Add(2*time.Minute + 17),
		DeferredSince: base.Add(-time.Minute - 19),
		RemoteID:      "110123456789012345",
		Reason:        "reason with 'quotes', % and \\ backslash",
		TaskToken:     "AQCEAAAAKgAAAAMAAAAAAAAAAY+token==",
		Decision:      `{"decision":"approve","by":"ops@example.org","note":"ünïcödé"}`,
		UpdatedAt:     base.Add(11),
		ExpiresAt:     base.Add(ledger.TerminalTTL + 13),
	}
	v := reflect.ValueOf(e)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("suite bug: round-trip entry leaves field %s zero", v.Type().Field(i).Name)
		}
	}
	mustCreate(t, l, e)
	wantStored(t, l, e, "after Create")

	// A second action kind, with the zero times most entries carry.
	d := ledger.NewEntry(ledger.DeleteKey("acct-rt", "110123456789012345"), ledger.Delete, "acct-rt", "110123456789012345",
		time.Time{}, "", "worker-rt", base, time.Minute)
	mustCreate(t, l, d)
	wantStored(t, l, d, "after Create of a delete entry")
}

// Create never overwrites, whatever state the existing entry is in.
func ledgerCreateExisting(t testing.TB, l publishing.Ledger) {
	clk := newClock(base)
	for _, state := range ledgerStates {
		subject := "existing-" + string(state)
		stored := reach(t, l, subject, state, clk)
		again := pendingEntry(subject, clk.next())
		again.LeaseOwner = "worker-intruder"
		err := l.Create(t.Context(), again)
		if !errors.Is(err, ledger.ErrConflict) {
			t.Errorf("Create over a %s entry = %v, want ledger.ErrConflict", state, err)
		}
		wantStored(t, l, stored, fmt.Sprintf("after Create over a %s entry", state))
	}
}

// Create refuses a first write that is not pending attempt 1 with a handle.
func ledgerCreateInvalid(t testing.TB, l publishing.Ledger) {
	clk := newClock(base)
	for _, tc := range []struct {
		name   string
		modify func(*ledger.Entry)
	}{
		{"state confirmed", func(e *ledger.Entry) { e.State = ledger.Confirmed; e.RemoteID = "r" }},
		{"state unknown", func(e *ledger.Entry) { e.State = ledger.Unknown }},
		{"state released", func(e *ledger.Entry) { e.State = ledger.Released }},
		{"state empty", func(e *ledger.Entry) { e.State = "" }},
		{"attempt 2", func(e *ledger.Entry) { e.Attempt = 2 }},
		{"attempt 0", func(e *ledger.Entry) { e.Attempt = 0 }},
		{"no handle", func(e *ledger.Entry) { e.Handle = "" }},
	} {
		e := pendingEntry("invalid-"+tc.name, clk.next())
		tc.modify(&e)
		err := l.Create(t.Context(), e)
		if !errors.Is(err, ledger.ErrTransition) {
			t.Errorf("Create(%s) = %v, want ledger.ErrTransition", tc.name, err)
		}
		if _, err := l.Get(t.Context(), e.Key); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("after refused Create(%s): Get = %v, want ledger.ErrNotFound", tc.name, err)
		}
	}
	e := pendingEntry("invalid-no-key", clk.next())
	e.Key = ""
	if err := l.Create(t.Context(), e); !errors.Is(err, ledger.ErrTransition) {
		t.Errorf("Create(no key) = %v, want ledger.ErrTransition", err)
	}
}

func ledgerGetMissing(t testing.TB, l publishing.Ledger) {
	_, err := l.Get(t.Context(), ledger.PublishKey("acct-none", "post-none", base))
	if !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Get(missing) = %v, want ledger.ErrNotFound", err)
	}
	mustCreate(t, l, pendingEntry("present", base))
	_, err = l.Get(t.Context(), ledger.PublishKey("acct-suite", "absent", base))
	if !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Get(missing, another key stored) = %v, want ledger.ErrNotFound", err)
	}
}

// One allowed move of DESIGN §3, made with the Entry method that makes it.
func ledgerAllowed(t testing.TB, l publishing.Ledger, from, to ledger.State) {
	clk := newClock(base)
	prev := reach(t, l, fmt.Sprintf("allowed-%s-%s", from, to), from, clk)
	next, err := step(prev, to, clk.next())
	if err != nil {
		t.Fatalf("suite bug: %s → %s: %v", from, to, err)
	}
	mustUpdate(t, l, prev, next)
	got := mustGet(t, l, prev.Key)
	if got.State != to {
		t.Errorf("state %s, want %s", got.State, to)
	}
	if from == ledger.Released && to == ledger.Pending {
		if got.Attempt != prev.Attempt+1 || got.Handle != prev.Handle {
			t.Errorf("re-acquired attempt %d handle %q, want attempt 2 and handle %q", got.Attempt, got.Handle, prev.Handle)
		}
	}
	wantMoves(t, l, prev.Key, append(firstMoves(from, prev), transition(prev, next)))
}

// firstMoves is the history reach left for an entry now in state from.
func firstMoves(from ledger.State, e ledger.Entry) []ledger.Transition {
	if from == ledger.Pending {
		return nil
	}
	return []ledger.Transition{{Key: e.Key, From: ledger.Pending, To: from, Attempt: e.Attempt, Reason: e.Reason}}
}

// refuse tries prev → next, which must be refused with ErrTransition and
// leave the entry and its history as they were.
func refuse(t testing.TB, l publishing.Ledger, prev, next ledger.Entry, what string) {
	t.Helper()
	before := mustHistory(t, l, prev.Key)
	err := l.Update(t.Context(), prev, next)
	if !errors.Is(err, ledger.ErrTransition) {
		t.Errorf("Update(%s) = %v, want ledger.ErrTransition", what, err)
	}
	wantStored(t, l, prev, "after refused Update("+what+")")
	if diff := cmp.Diff(before, mustHistory(t, l, prev.Key), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("refused Update(%s) changed the history (-before +after):\n%s", what, diff)
	}
}

// Every move from one state that is not in the table is refused.
func ledgerRefusedFrom(t testing.TB, l publishing.Ledger, from ledger.State) {
	clk := newClock(base)
	for _, to := range ledgerStates {
		if designAllows(from, to) {
			continue
		}
		prev := reach(t, l, fmt.Sprintf("refused-%s-%s", from, to), from, clk)
		next := prev
		next.State = to
		next.UpdatedAt = clk.next()
		refuse(t, l, prev, next, fmt.Sprintf("%s → %s", from, to))
	}
}

// Moves in the table are still refused when the attempt, handle or key is
// wrong (ledger.Check).
func ledgerRefusedFields(t testing.TB, l publishing.Ledger) {
	clk := newClock(base)
	for _, tc := range []struct {
		name string
		from ledger.State
		next func(prev ledger.Entry, now time.Time) ledger.Entry
	}{
		{"released → pending without attempt+1", ledger.Released, func(p ledger.Entry, now time.Time) ledger.Entry {
			n := p
			n.State, n.UpdatedAt = ledger.Pending, now
			return n
		}},
		{"released → pending with attempt+2", ledger.Released, func(p ledger.Entry, now time.Time) ledger.Entry {
			n, _ := p.Reacquire("worker-2", now, time.Minute)
			n.Attempt++
			return n
		}},
		{"released → pending with a new handle", ledger.Released, func(p ledger.Entry, now time.Time) ledger.Entry {
			n, _ := p.Reacquire("worker-2", now, time.Minute)
			n.Handle = ledger.NewHandle()
			return n
		}},
		{"pending → unknown with attempt+1", ledger.Pending, func(p ledger.Entry, now time.Time) ledger.Entry {
			n, _ := p.MarkUnknown("timeout", now)
			n.Attempt++
			return n
		}},
		{"pending → confirmed with a new handle", ledger.Pending, func(p ledger.Entry, now time.Time) ledger.Entry {
			n, _ := p.Confirm("remote-1", now)
			n.Handle = ledger.NewHandle()
			return n
		}},
		{"held → confirmed with attempt-1", ledger.Held, func(p ledger.Entry, now time.Time) ledger.Entry {
			n, _ := p.Confirm("remote-1", now)
			n.Attempt--
			return n
		}},
	} {
		prev := reach(t, l, "fields-"+tc.name, tc.from, clk)
		refuse(t, l, prev, tc.next(prev, clk.next()), tc.name)
	}

	// A next with another key must neither touch prev's entry nor create one.
	prev := reach(t, l, "fields-key", ledger.Pending, clk)
	next, _ := prev.Confirm("remote-1", clk.next())
	next.Key = ledger.PublishKey("acct-suite", "fields-other-key", base)
	refuse(t, l, prev, next, "pending → confirmed under another key")
	if _, err := l.Get(t.Context(), next.Key); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("refused Update under another key: Get(other key) = %v, want ledger.ErrNotFound", err)
	}
}

// Two workers move from the same prev: the second finds the state changed.
func ledgerStaleState(t testing.TB, l publishing.Ledger) {
	clk := newClock(base)
	prev := reach(t, l, "stale-state", ledger.Pending, clk)
	first, _ := prev.MarkUnknown("timeout", clk.next())
	mustUpdate(t, l, prev, first)
	second, _ := prev.Confirm("remote-late", clk.next())
	if err := l.Update(t.Context(), prev, second); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("second Update from the same pending prev = %v, want ledger.ErrConflict", err)
	}
	wantStored(t, l, first, "after the stale Update")
	wantMoves(t, l, prev.Key, []ledger.Transition{transition(prev, first)})

	// The stale writer's next also differs in state from the stored one.
	held := reach(t, l, "stale-held", ledger.Held, clk)
	released, _ := held.Release("operator approved", clk.next())
	mustUpdate(t, l, held, released)
	failed, _ := held.Fail("operator rejected", clk.next())
	if err := l.Update(t.Context(), held, failed); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("held → failed after held → released = %v, want ledger.ErrConflict", err)
	}
	wantStored(t, l, released, "after the stale operator decision")
}

// The condition covers the attempt: a prev from an earlier attempt in the
// same state is stale.
func ledgerStaleAttempt(t testing.TB, l publishing.Ledger) {
	clk := newClock(base)
	first := reach(t, l, "stale-attempt", ledger.Pending, clk)
	released, _ := first.Release("429", clk.next())
	mustUpdate(t, l, first, released)
	second, _ := released.Reacquire("worker-2", clk.next(), time.Minute)
	mustUpdate(t, l, released, second)

	// first is pending attempt 1; the store holds pending attempt 2.
	late, _ := first.Confirm("remote-from-attempt-1", clk.next())
	if err := l.Update(t.Context(), first, late); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("Update from pending attempt 1 while attempt 2 is stored = %v, want ledger.ErrConflict", err)
	}
	wantStored(t, l, second, "after the stale-attempt Update")
	wantMoves(t, l, first.Key, []ledger.Transition{transition(first, released), transition(released, second)})
}

// Update never creates an entry.
func ledgerUpdateMissing(t testing.TB, l publishing.Ledger) {
	prev := pendingEntry("update-missing", base)
	next, _ := prev.Confirm("remote-1", base.Add(time.Second))
	err := l.Update(t.Context(), prev, next)
	if !errors.Is(err, ledger.ErrConflict) && !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Update of a missing entry = %v, want ledger.ErrConflict (or ledger.ErrNotFound)", err)
	}
	if _, err := l.Get(t.Context(), prev.Key); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("after Update of a missing entry: Get = %v, want ledger.ErrNotFound", err)
	}
}

// 16 workers move the same pending entry to different outcomes; one wins
// and its next is what the store holds.
func ledgerUpdateRace(t testing.TB, l publishing.Ledger) {
	const n = 16
	clk := newClock(base)
	prev := reach(t, l, "update-race", ledger.Pending, clk)
	outcomes := []ledger.State{ledger.Confirmed, ledger.Released, ledger.Failed, ledger.Unknown, ledger.Held}
	nexts := make([]ledger.Entry, n)
	for i := range nexts {
		now := base.Add(time.Minute/2 + time.Duration(i))
		var err error
		if outcomes[i%len(outcomes)] == ledger.Confirmed {
			nexts[i], err = prev.Confirm(fmt.Sprintf("remote-%d", i), now)
		} else {
			nexts[i], err = step(prev, outcomes[i%len(outcomes)], now)
		}
		if err != nil {
			t.Fatalf("suite bug: %v", err)
		}
	}
	errs := runTogether(n, func(i int) error { return l.Update(t.Context(), prev, nexts[i]) })
	winner := exactlyOneWinner(t, errs, func(err error) bool { return errors.Is(err, ledger.ErrConflict) })
	if winner < 0 {
		return
	}
	wantStored(t, l, nexts[winner], "after the race")
	wantMoves(t, l, prev.Key, []ledger.Transition{transition(prev, nexts[winner])})
}

// The fields the later moves set (RetryAt, DeferredSince, MaybeSent,
// TaskToken, Decision) and LookAfter, kept from the first write, are
// stored by Update, to the nanosecond, and held → held moves are recorded.
func ledgerNewFields(t testing.TB, l publishing.Ledger) {
	clk := newClock(base)
	e := pendingEntry("new-fields", clk.next())
	e.LookAfter = "110000000000000042"
	mustCreate(t, l, e)
	var want []ledger.Transition
	cur := e
	for _, mv := range []struct {
		name string
		move func(e ledger.Entry, now time.Time) (ledger.Entry, error)
		set  func(e ledger.Entry) bool // the field this move must have set
	}{
		{"defer", func(e ledger.Entry, now time.Time) (ledger.Entry, error) {
			return e.Defer("429 rate limited", now.Add(90*time.Second+3), now)
		}, func(e ledger.Entry) bool { return !e.RetryAt.IsZero() && !e.DeferredSince.IsZero() }},
		{"reacquire", func(e ledger.Entry, now time.Time) (ledger.Entry, error) {
			return e.Reacquire("worker-2", now, time.Minute)
		}, func(e ledger.Entry) bool { return e.RetryAt.IsZero() && !e.DeferredSince.IsZero() }},
		{"defer again", func(e ledger.Entry, now time.Time) (ledger.Entry, error) {
			return e.Defer("connection refused", now.Add(time.Minute+5), now)
		}, func(e ledger.Entry) bool { return !e.RetryAt.IsZero() && e.DeferredSince.Before(e.UpdatedAt) }},
		{"reacquire again", func(e ledger.Entry, now time.Time) (ledger.Entry, error) {
			return e.Reacquire("worker-3", now, time.Minute)
		}, func(e ledger.Entry) bool { return e.Attempt == 3 }},
		{"unknown", func(e ledger.Entry, now time.Time) (ledger.Entry, error) {
			return e.MarkUnknown("timeout after the request was written", now)
		}, func(e ledger.Entry) bool { return e.MaybeSent == 1 && e.DeferredSince.IsZero() }},
		{"hold", func(e ledger.Entry, now time.Time) (ledger.Entry, error) {
			n, err := e.Hold("not found after 3 looks", "", now)
			n.TaskToken = "task-token-1"
			return n, err
		}, func(e ledger.Entry) bool { return e.TaskToken != "" }},
		{"retoken", func(e ledger.Entry, now time.Time) (ledger.Entry, error) {
			return e.Retoken("task-token-2", now)
		}, func(e ledger.Entry) bool { return e.TaskToken == "task-token-2" }},
		{"decide", func(e ledger.Entry, now time.Time) (ledger.Entry, error) {
			return e.WithDecision(`{"decision":"approve"}`, now)
		}, func(e ledger.Entry) bool { return e.Decision != "" && e.TaskToken == "task-token-2" }},
		{"retoken after the decision", func(e ledger.Entry, now time.Time) (ledger.Entry, error) {
			return e.Retoken("task-token-3", now)
		}, func(e ledger.Entry) bool { return e.Decision != "" && e.TaskToken == "task-token-3" }},
		{"release", func(e ledger.Entry, now time.Time) (ledger.Entry, error) {
			return e.Release("operator approved", now)
		}, func(e ledger.Entry) bool { return e.Decision == "" && e.MaybeSent == 1 && e.LookAfter != "" }},
	} {
		next, err := mv.move(cur, clk.next())
		if err != nil || !mv.set(next) {
			t.Fatalf("suite bug: %s: %v, %+v", mv.name, err, next)
		}
		mustUpdate(t, l, cur, next)
		want = append(want, transition(cur, next))
		cur = next
	}
	wantMoves(t, l, e.Key, want)
}

// heldEntry stores an entry held with a task token.
func heldEntry(t testing.TB, l publishing.Ledger, subject string, clk *clock) ledger.Entry {
	t.Helper()
	e := pendingEntry(subject, clk.next())
	mustCreate(t, l, e)
	h, err := e.Hold("not found after 3 looks", "", clk.next())
	if err != nil {
		t.Fatalf("suite bug: %v", err)
	}
	h.TaskToken = "task-token-1"
	mustUpdate(t, l, e, h)
	return h
}

// A held → held move leaves state and attempt as they were, so the
// condition on them alone cannot tell a stale prev: the suite requires
// that a move from held is refused when the stored task token or decision
// differ from prev's. Otherwise a retried Hold step (Retoken) working from
// an entry read before an operator's decision would erase the decision,
// and a decision written from an entry read before a Retoken would bring
// back the old token, which the workflow no longer waits on.
func ledgerHeldStale(t testing.TB, l publishing.Ledger) {
	clk := newClock(base)
	h := heldEntry(t, l, "held-stale-retoken", clk)
	decided, _ := h.WithDecision(`{"decision":"approve"}`, clk.next())
	mustUpdate(t, l, h, decided)
	retoken, _ := h.Retoken("task-token-2", clk.next())
	if err := l.Update(t.Context(), h, retoken); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("Retoken from the entry read before the decision = %v, want ledger.ErrConflict", err)
	}
	wantStored(t, l, decided, "after the stale Retoken")

	h = heldEntry(t, l, "held-stale-decision", clk)
	retoken, _ = h.Retoken("task-token-2", clk.next())
	mustUpdate(t, l, h, retoken)
	decided, _ = h.WithDecision(`{"decision":"reject"}`, clk.next())
	if err := l.Update(t.Context(), h, decided); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("decision from the entry read before a Retoken = %v, want ledger.ErrConflict", err)
	}
	wantStored(t, l, retoken, "after the stale decision")
	wantMoves(t, l, h.Key, []ledger.Transition{
		{Key: h.Key, From: ledger.Pending, To: ledger.Held, Attempt: 1, Reason: h.Reason}, transition(h, retoken)})

	// A move out of held from a stale prev is refused as well.
	released, _ := h.Release("operator approved", clk.next())
	if err := l.Update(t.Context(), h, released); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("held → released from the entry read before a Retoken = %v, want ledger.ErrConflict", err)
	}
	wantStored(t, l, retoken, "after the stale release")
}

// 16 writers move the same held entry to held (half a new token, half a
// decision); one wins.
func ledgerHeldRace(t testing.TB, l publishing.Ledger) {
	const n = 16
	clk := newClock(base)
	h := heldEntry(t, l, "held-race", clk)
	nexts := make([]ledger.Entry, n)
	for i := range nexts {
		now := clk.next()
		var err error
		if i%2 == 0 {
			nexts[i], err = h.Retoken(fmt.Sprintf("task-token-%d", i+2), now)
		} else {
			nexts[i], err = h.WithDecision(fmt.Sprintf(`{"decision":"approve","by":"operator-%d"}`, i), now)
		}
		if err != nil {
			t.Fatalf("suite bug: %v", err)
		}
	}
	errs := runTogether(n, func(i int) error { return l.Update(t.Context(), h, nexts[i]) })
	winner := exactlyOneWinner(t, errs, func(err error) bool { return errors.Is(err, ledger.ErrConflict) })
	if winner < 0 {
		return
	}
	wantStored(t, l, nexts[winner], "after the race")
}

// A pending entry whose owner died is moved to unknown (DESIGN §3: "pending
// with an expired lease → move to unknown").
func ledgerLeaseExpired(t testing.TB, l publishing.Ledger) {
	now := base
	for _, tc := range []struct {
		name     string
		acquired time.Time
		lease    time.Duration
	}{
		{"expired ten minutes ago", now.Add(-10 * time.Minute), 30 * time.Second},
		{"expiring exactly now", now.Add(-30 * time.Second), 30 * time.Second},
	} {
		e := ledger.NewEntry(ledger.PublishKey("acct-lease", tc.name, base), ledger.Publish, "acct-lease", tc.name, base,
			"fp", "dead-worker", tc.acquired, tc.lease)
		mustCreate(t, l, e)
		got := mustGet(t, l, e.Key)
		if d := ledger.Decide(got, now); d != ledger.DecideExpire {
			t.Errorf("%s: Decide(stored entry, now) = %s, want %s (stored lease until %s)", tc.name, d, ledger.DecideExpire,
				got.LeaseUntil.Format(time.RFC3339Nano))
			continue
		}
		next, err := got.ExpireLease(now)
		if err != nil {
			t.Fatalf("%s: ExpireLease = %v", tc.name, err)
		}
		mustUpdate(t, l, got, next)
		stored := mustGet(t, l, e.Key)
		if stored.State != ledger.Unknown || stored.Reason != ledger.ReasonLeaseExpired {
			t.Errorf("%s: stored %s (%q), want unknown (%q)", tc.name, stored.State, stored.Reason, ledger.ReasonLeaseExpired)
		}
		if !stored.OpenSince.Equal(e.OpenSince) || stored.LeaseOwner != "" || !stored.LeaseUntil.IsZero() {
			t.Errorf("%s: stored open since %s, lease %q until %s; want open since %s and no lease", tc.name,
				stored.OpenSince, stored.LeaseOwner, stored.LeaseUntil, e.OpenSince)
		}
		if d := ledger.Decide(stored, now); d != ledger.DecideConfirm {
			t.Errorf("%s: Decide after expiry = %s, want %s", tc.name, d, ledger.DecideConfirm)
		}
		wantMoves(t, l, e.Key, []ledger.Transition{transition(got, next)})
	}
}

// A pending entry with a live lease is left alone.
func ledgerLeaseLive(t testing.TB, l publishing.Ledger) {
	now := base
	e := ledger.NewEntry(ledger.PublishKey("acct-lease", "live", base), ledger.Publish, "acct-lease", "live", base,
		"fp", "live-worker", now.Add(-10*time.Second), time.Minute)
	mustCreate(t, l, e)
	got := mustGet(t, l, e.Key)
	if d := ledger.Decide(got, now); d != ledger.DecideWait {
		t.Errorf("Decide(live lease) = %s, want %s (stored lease until %s)", d, ledger.DecideWait, got.LeaseUntil.Format(time.RFC3339Nano))
	}
	if _, err := got.ExpireLease(now); !errors.Is(err, ledger.ErrTransition) {
		t.Errorf("ExpireLease(live lease) = %v, want ledger.ErrTransition", err)
	}
	wantStored(t, l, e, "after a live lease was checked")
}

// Open lists pending and unknown entries open since before t, oldest first.
func ledgerOpen(t testing.TB, l publishing.Ledger) {
	at := func(d time.Duration) time.Time { return base.Add(d) }
	create := func(subject string, now time.Time) ledger.Entry {
		e := pendingEntry(subject, now)
		mustCreate(t, l, e)
		return e
	}
	move := func(prev ledger.Entry, to ledger.State, now time.Time) ledger.Entry {
		next, err := step(prev, to, now)
		if err != nil {
			t.Fatalf("suite bug: %v", err)
		}
		mustUpdate(t, l, prev, next)
		return next
	}
	// Created in an order that is not the OpenSince order.
	c := create("open-c", at(-30*time.Minute))
	late := create("open-late", at(10*time.Minute))
	a := create("open-a", at(-50*time.Minute+3))
	boundary := create("open-boundary", base)
	b := move(create("open-b", at(-40*time.Minute+1)), ledger.Unknown, at(-35*time.Minute))
	move(create("closed-confirmed", at(-45*time.Minute)), ledger.Confirmed, at(-44*time.Minute))
	move(create("closed-failed", at(-46*time.Minute)), ledger.Failed, at(-45*time.Minute))
	move(create("closed-held", at(-47*time.Minute)), ledger.Held, at(-46*time.Minute))
	move(create("closed-released", at(-48*time.Minute)), ledger.Released, at(-47*time.Minute))
	// Released long ago and re-acquired: open since the re-acquire.
	d := move(move(create("open-d", at(-55*time.Minute)), ledger.Released, at(-54*time.Minute)), ledger.Pending, at(-20*time.Minute))

	for _, tc := range []struct {
		before time.Time
		limit  int
		want   []ledger.Entry
	}{
		{base, 100, []ledger.Entry{a, b, c, d}},
		{base, 2, []ledger.Entry{a, b}},
		{base, 1, []ledger.Entry{a}},
		{at(-35 * time.Minute), 100, []ledger.Entry{a, b}},
		{at(-50*time.Minute + 3), 100, nil},
		{at(time.Hour), 100, []ledger.Entry{a, b, c, d, boundary, late}},
	} {
		got, err := l.Open(t.Context(), tc.before, tc.limit)
		if err != nil {
			t.Errorf("Open(%s, %d) = %v", tc.before.Format(time.RFC3339Nano), tc.limit, err)
			continue
		}
		for i, e := range got {
			checkUTC(t, fmt.Sprintf("Open()[%d]", i), entryTimes(e))
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Open(base%+v, %d) mismatch (-want +got):\n%s", tc.before.Sub(base), tc.limit, diff)
		}
	}
}

// Held lists held entries only, least recently updated first (a recorded
// decision is an update), with their decisions, up to the limit.
func ledgerHeld(t testing.TB, l publishing.Ledger) {
	at := func(d time.Duration) time.Time { return base.Add(d) }
	move := func(prev ledger.Entry, to ledger.State, now time.Time) ledger.Entry {
		next, err := step(prev, to, now)
		if err != nil {
			t.Fatalf("suite bug: %v", err)
		}
		mustUpdate(t, l, prev, next)
		return next
	}
	create := func(subject string, now time.Time) ledger.Entry {
		e := pendingEntry(subject, now)
		mustCreate(t, l, e)
		return e
	}
	b := move(create("held-b", at(-50*time.Minute)), ledger.Held, at(-30*time.Minute))
	a := move(create("held-a", at(-40*time.Minute)), ledger.Held, at(-35*time.Minute))
	// Held first of all, decided last: listed after the others.
	c := move(create("held-c", at(-60*time.Minute)), ledger.Held, at(-45*time.Minute))
	decided, err := c.WithDecision(`{"decision":"release"}`, at(-10*time.Minute))
	if err != nil {
		t.Fatalf("suite bug: %v", err)
	}
	mustUpdate(t, l, c, decided)
	create("open-pending", at(-70*time.Minute))
	move(create("open-unknown", at(-70*time.Minute)), ledger.Unknown, at(-69*time.Minute))
	move(move(create("was-held", at(-80*time.Minute)), ledger.Held, at(-79*time.Minute)), ledger.Released, at(-78*time.Minute))
	for _, tc := range []struct {
		limit int
		want  []ledger.Entry
	}{
		{0, []ledger.Entry{a, b, decided}},
		{100, []ledger.Entry{a, b, decided}},
		{2, []ledger.Entry{a, b}},
	} {
		got, err := l.Held(t.Context(), tc.limit)
		if err != nil {
			t.Errorf("Held(%d) = %v", tc.limit, err)
			continue
		}
		for i, e := range got {
			checkUTC(t, fmt.Sprintf("Held()[%d]", i), entryTimes(e))
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Held(%d) mismatch (-want +got):\n%s", tc.limit, diff)
		}
	}
}

// History lists one entry's transitions in order, and only that entry's.
func ledgerHistory(t testing.TB, l publishing.Ledger) {
	clk := newClock(base)
	e0 := pendingEntry("history-1", clk.next())
	mustCreate(t, l, e0)
	o0 := pendingEntry("history-2", clk.next())
	mustCreate(t, l, o0)

	var want []ledger.Transition
	cur := e0
	for i, to := range []ledger.State{ledger.Released, ledger.Pending, ledger.Unknown, ledger.Held, ledger.Confirmed} {
		next, err := step(cur, to, clk.next())
		if err != nil {
			t.Fatalf("suite bug: %v", err)
		}
		mustUpdate(t, l, cur, next)
		want = append(want, transition(cur, next))
		cur = next
		if i == 1 {
			o1, _ := o0.Fail("422", clk.next())
			mustUpdate(t, l, o0, o1)
		}
	}
	if want[1].Attempt != 2 || want[4].Attempt != 2 {
		t.Fatalf("suite bug: attempts %+v", want)
	}
	wantMoves(t, l, e0.Key, want)
	o1, _ := o0.Fail("422", base)
	wantMoves(t, l, o0.Key, []ledger.Transition{transition(o0, o1)})
}
