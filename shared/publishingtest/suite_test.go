package publishingtest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"oncepost/shared/publishing"
)

// queueUnit is the in-memory queue's time unit in these tests.
const queueUnit = 20 * time.Millisecond

// The suites are satisfiable: correct in-memory adapters pass them.
func TestCorrectAdaptersPass(t *testing.T) {
	t.Run("Ledger", func(t *testing.T) {
		TestLedger(t, func(*testing.T) publishing.Ledger { return newMemLedger(ledgerBugs{}) })
	})
	t.Run("LedgerWithoutFirstWriteInHistory", func(t *testing.T) {
		TestLedger(t, func(*testing.T) publishing.Ledger { return newMemLedger(ledgerBugs{noCreateRecord: true}) })
	})
	t.Run("Posts", func(t *testing.T) {
		TestPosts(t, func(*testing.T) publishing.Posts { return newMemPosts(postsBugs{}) })
	})
	t.Run("Accounts", func(t *testing.T) {
		TestAccounts(t, func(*testing.T) publishing.Accounts { return newMemAccounts(accountsBugs{}) })
	})
	t.Run("Queue", func(t *testing.T) {
		TestQueue(t, func(_ *testing.T, maxReceives int) publishing.Queue { return newMemQueue(queueBugs{}, maxReceives) },
			QueueOptions{Unit: queueUnit})
	})
}

// recorder is a testing.TB that records failures instead of failing the
// test it wraps; FailNow ends the check's goroutine as testing.T does.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed bool
	lines  []string
}

func (r *recorder) note(fail bool, s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = r.failed || fail
	r.lines = append(r.lines, s)
}

func (r *recorder) Helper()                         {}
func (r *recorder) Log(args ...any)                 { r.note(false, fmt.Sprint(args...)) }
func (r *recorder) Logf(format string, args ...any) { r.note(false, fmt.Sprintf(format, args...)) }
func (r *recorder) Error(args ...any)               { r.note(true, fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) {
	r.note(true, fmt.Sprintf(format, args...))
}
func (r *recorder) Fail()    { r.note(true, "Fail") }
func (r *recorder) FailNow() { r.note(true, "FailNow"); runtime.Goexit() }
func (r *recorder) Fatal(args ...any) {
	r.note(true, fmt.Sprint(args...))
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.note(true, fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// runRecorded runs one check against a and reports whether it failed, and
// what it said.
func runRecorded[A any](t *testing.T, checks []check[A], name string, a A) (bool, string) {
	t.Helper()
	for _, c := range checks {
		if c.name != name {
			continue
		}
		r := &recorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.run(r, a)
		}()
		<-done
		return r.Failed(), strings.Join(r.lines, "\n")
	}
	t.Fatalf("no check named %q", name)
	return false, ""
}

// brokenCase is an adapter with one bug and the checks that must catch it.
type brokenCase[A any] struct {
	bug   string
	newA  func() A
	catch []string
}

func testBroken[A any](t *testing.T, checks []check[A], cases []brokenCase[A], parallel bool) {
	for _, bc := range cases {
		t.Run(bc.bug, func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			for _, name := range bc.catch {
				failed, said := runRecorded(t, checks, name, bc.newA())
				if !failed {
					t.Errorf("check %s passed against an adapter that %s", name, bc.bug)
				} else if testing.Verbose() {
					t.Logf("check %s caught it:\n%s", name, said)
				}
			}
		})
	}
}

func TestLedgerSuiteCatchesBrokenAdapters(t *testing.T) {
	l := func(b ledgerBugs) func() publishing.Ledger {
		return func() publishing.Ledger { return newMemLedger(b) }
	}
	var refusedFrom []string
	for _, s := range ledgerStates {
		refusedFrom = append(refusedFrom, "Update/refused_from_"+string(s))
	}
	testBroken(t, ledgerChecks(), []brokenCase[publishing.Ledger]{
		{"Create overwrites an existing entry", l(ledgerBugs{createOverwrites: true}),
			[]string{"Create/existing_key_not_overwritten", "Create/concurrent_same_key"}},
		{"Create checks existence outside the write", l(ledgerBugs{createNotAtomic: true}),
			[]string{"Create/concurrent_same_key"}},
		{"Create skips CheckNew", l(ledgerBugs{createSkipsCheckNew: true}),
			[]string{"Create/refuses_what_CheckNew_refuses"}},
		{"Update ignores the state condition", l(ledgerBugs{updateIgnoresState: true}),
			[]string{"Update/stale_state", "Update/concurrent_same_prev"}},
		{"Update ignores the attempt condition", l(ledgerBugs{updateIgnoresAttempt: true}),
			[]string{"Update/stale_attempt"}},
		{"Update skips ledger.Check", l(ledgerBugs{updateSkipsCheck: true}),
			append(refusedFrom, "Update/refused_attempt_handle_key_changes")},
		{"Update checks the condition outside the write", l(ledgerBugs{updateNotAtomic: true}),
			[]string{"Update/concurrent_same_prev"}},
		{"Update creates a missing entry", l(ledgerBugs{updateUpserts: true}),
			[]string{"Update/missing_entry"}},
		{"Get drops nanoseconds", l(ledgerBugs{getTruncates: true}),
			[]string{"Create/round_trip_every_field"}},
		{"Get returns local time", l(ledgerBugs{getLocalTime: true}),
			[]string{"Create/round_trip_every_field", "Open/pending_and_unknown_oldest_first"}},
		{"Open lists closed entries", l(ledgerBugs{openIncludesClosed: true}),
			[]string{"Open/pending_and_unknown_oldest_first"}},
		{"Open lists newest first", l(ledgerBugs{openNewestFirst: true}),
			[]string{"Open/pending_and_unknown_oldest_first"}},
		{"Open ignores the limit", l(ledgerBugs{openIgnoresLimit: true}),
			[]string{"Open/pending_and_unknown_oldest_first"}},
		{"Open includes entries open since exactly before", l(ledgerBugs{openInclusive: true}),
			[]string{"Open/pending_and_unknown_oldest_first"}},
		{"Update records no history", l(ledgerBugs{historyNotRecorded: true}),
			[]string{"History/transitions_in_order", "Update/allowed_pending_to_confirmed"}},
		{"Update records history before its checks", l(ledgerBugs{historyBeforeChecks: true}),
			[]string{"Update/stale_state", "Update/refused_from_confirmed", "Update/concurrent_same_prev"}},
		{"Update refuses held → held", l(ledgerBugs{heldToHeldRefused: true}),
			[]string{"Update/allowed_held_to_held", "Update/new_fields_round_trip", "Update/concurrent_held_to_held"}},
		{"drops the fields added in schema 2", l(ledgerBugs{dropsNewFields: true}),
			[]string{"Create/round_trip_every_field", "Update/new_fields_round_trip"}},
		{"Update conditions a move from held on state and attempt only", l(ledgerBugs{heldStaleAccepted: true}),
			[]string{"Update/held_to_held_stale_prev", "Update/concurrent_held_to_held"}},
		{"Get returns local time for the new fields too", l(ledgerBugs{getLocalTime: true}),
			[]string{"Update/new_fields_round_trip"}},
		{"RecordCheckpoint conditions on the key only", l(ledgerBugs{checkpointAnyOwner: true}),
			[]string{"RecordCheckpoint/refused_unless_pending_owner"}},
		{"RecordCheckpoint records a transition", l(ledgerBugs{checkpointAsMove: true}),
			[]string{"RecordCheckpoint/stored_kept_no_history"}},
		{"Held lists newest first", l(ledgerBugs{heldNewestFirst: true}),
			[]string{"Held/least_recently_updated_first"}},
		{"Held lists open entries too", l(ledgerBugs{heldIncludesOpen: true}),
			[]string{"Held/least_recently_updated_first"}},
	}, false)
}

func TestPostsSuiteCatchesBrokenAdapters(t *testing.T) {
	p := func(b postsBugs) func() publishing.Posts { return func() publishing.Posts { return newMemPosts(b) } }
	testBroken(t, postsChecks(), []brokenCase[publishing.Posts]{
		{"CreatePost overwrites", p(postsBugs{createOverwrites: true}),
			[]string{"CreatePost/existing_id_not_overwritten"}},
		{"UpdateTarget skips Apply", p(postsBugs{updateSkipsApply: true}),
			[]string{"UpdateTarget/every_status_pair", "UpdateTarget/sequence", "UpdateTarget/concurrent_published_or_cancelled",
				"UpdateTarget/published_clears_reason"}},
		{"UpdateTarget reads outside the write", p(postsBugs{updateNotAtomic: true}),
			[]string{"UpdateTarget/concurrent_published_or_cancelled"}},
		{"Due lists every status", p(postsBugs{dueAnyStatus: true}),
			[]string{"Due/scheduled_not_after_t_earliest_first"}},
		{"Due ignores the limit", p(postsBugs{dueIgnoresLimit: true}),
			[]string{"Due/scheduled_not_after_t_earliest_first"}},
		{"Due leaves out a slot equal to t", p(postsBugs{dueBefore: true}),
			[]string{"Due/scheduled_not_after_t_earliest_first"}},
		{"UpdateTarget ignores From", p(postsBugs{updateIgnoresFrom: true}),
			[]string{"UpdateTarget/from_refused_when_status_differs", "UpdateTarget/concurrent_from_scheduled"}},
		{"UpdateTarget checks From outside the write", p(postsBugs{updateNotAtomic: true}),
			[]string{"UpdateTarget/concurrent_from_scheduled"}},
		{"drops NextTry", p(postsBugs{dropsNextTry: true}),
			[]string{"CreatePost/round_trip", "UpdateTarget/waiting_next_try", "UpdateTarget/every_status_pair"}},
		{"Unfinished leaves out waiting targets", p(postsBugs{unfinishedIgnoresWaiting: true}),
			[]string{"Unfinished/waiting_once_next_try_passed"}},
		{"Unfinished lists waiting targets by their last update", p(postsBugs{unfinishedWaitingByUpdate: true}),
			[]string{"Unfinished/waiting_once_next_try_passed"}},
		{"CountTargets counts every status whatever is asked", p(postsBugs{countIgnoresStatuses: true}),
			[]string{"CountTargets/given_statuses_only"}},
		{"CountTargets counts the first status asked only", p(postsBugs{countFirstStatusOnly: true}),
			[]string{"CountTargets/given_statuses_only"}},
	}, false)
}

func TestAccountsSuiteCatchesBrokenAdapters(t *testing.T) {
	a := func(b accountsBugs) func() publishing.Accounts {
		return func() publishing.Accounts { return newMemAccounts(b) }
	}
	testBroken(t, accountsChecks(), []brokenCase[publishing.Accounts]{
		{"PutCredential accepts an empty access token", a(accountsBugs{emptyAccessAccepted: true}),
			[]string{"Credential/empty_access_token_refused"}},
		{"PutCredential drops the refresh token", a(accountsBugs{putOverwritesRefresh: true}),
			[]string{"Credential/empty_refresh_token_keeps_stored"}},
		{"SaveRefreshed drops the refresh token", a(accountsBugs{saveOverwritesRefresh: true}),
			[]string{"Refresh/empty_refresh_token_keeps_stored"}},
		{"LeaseRefresh is not exclusive", a(accountsBugs{leaseNotExclusive: true}),
			[]string{"Refresh/lease_exclusive_until_saved", "Refresh/non_owner_save_refused"}},
		{"LeaseRefresh never expires", a(accountsBugs{leaseNeverExpires: true}),
			[]string{"Refresh/expired_lease_taken_over"}},
		{"SaveRefreshed ignores the owner", a(accountsBugs{saveIgnoresOwner: true}),
			[]string{"Refresh/non_owner_save_refused", "Refresh/save_without_lease_refused", "Refresh/expired_lease_taken_over"}},
		{"SaveRefreshed keeps the lease", a(accountsBugs{saveKeepsLease: true}),
			[]string{"Refresh/lease_exclusive_until_saved", "Refresh/nil_credential_drops_lease"}},
		{"PutAccount drops the status", a(accountsBugs{dropsAccountStatus: true}),
			[]string{"Account/put_get_list"}},
		{"MarkRefreshLost ignores the owner", a(accountsBugs{markLostIgnoresOwner: true}),
			[]string{"Refresh/mark_lost_owner_only"}},
		{"MarkRefreshLost keeps the lease", a(accountsBugs{markLostKeepsLease: true}),
			[]string{"Refresh/mark_lost_owner_only"}},
		{"SaveRefreshed keeps RefreshLostAt", a(accountsBugs{saveKeepsLost: true}),
			[]string{"Refresh/lost_refresh_cleared_by_save"}},
		{"PutCredential keeps RefreshLostAt", a(accountsBugs{putKeepsLost: true}),
			[]string{"Credential/lost_refresh_cleared_by_put"}},
		{"PutAccount drops the limits", a(accountsBugs{dropsLimits: true}),
			[]string{"Account/put_get_list"}},
		{"does not store the OAuth client", a(accountsBugs{dropsClientApp: true}),
			[]string{"Credential/round_trip", "Refresh/lease_exclusive_until_saved"}},
	}, false)
}

func TestQueueSuiteCatchesBrokenAdapters(t *testing.T) {
	q := func(b queueBugs) func() queueFactory {
		return func() queueFactory {
			return func(maxReceives int) publishing.Queue { return newMemQueue(b, maxReceives) }
		}
	}
	checks := queueChecks(QueueOptions{Unit: queueUnit})
	cases := []brokenCase[queueFactory]{
		{"Receive never hides messages", q(queueBugs{receiveNoHide: true}),
			[]string{"Receive/hidden_then_redelivered", "Receive/concurrent_receivers_disjoint", "Receive/send_receive_ack"}},
		{"never dead-letters", q(queueBugs{neverDeadLetter: true}), []string{"DeadLetter/after_max_receives"}},
		{"Ack accepts a stale receipt", q(queueBugs{staleAckDeletes: true}), []string{"Ack/stale_receipt_refused"}},
		{"Ack does not delete", q(queueBugs{ackKeeps: true}), []string{"Receive/send_receive_ack"}},
		{"Send ignores the delay", q(queueBugs{ignoresSendDelay: true}), []string{"Send/delay"}},
		{"Retry ignores the delay", q(queueBugs{retryIgnoresDelay: true}), []string{"Retry/delay"}},
		{"receipts are reused", q(queueBugs{reuseReceipt: true}), []string{"Receive/hidden_then_redelivered", "Ack/stale_receipt_refused"}},
		{"Send keeps the caller's body", q(queueBugs{sharesBody: true}), []string{"Send/arbitrary_bytes"}},
		{"DeadLetter drops the reason", q(queueBugs{dropsReason: true}), []string{"DeadLetter/explicit_reason", "DeadLetter/after_max_receives"}},
		{"Send accepts an oversized body", q(queueBugs{acceptsOversized: true}), []string{"Send/oversized_refused"}},
		{"DeadLetter keeps a long reason whole", q(queueBugs{reasonUncut: true}), []string{"DeadLetter/long_reason_cut"}},
		{"DeadLetter cuts a reason inside a rune", q(queueBugs{reasonCutMidRune: true}), []string{"DeadLetter/long_reason_cut"}},
		{"Redrive keeps the receive count", q(queueBugs{redriveKeepsCount: true}), []string{"DeadLetterAdmin/redrive"}},
		{"Redrive keeps the dead letter", q(queueBugs{redriveKeepsDead: true}), []string{"DeadLetterAdmin/redrive"}},
		{"Drop deletes nothing", q(queueBugs{dropKeeps: true}), []string{"DeadLetterAdmin/drop"}},
		{"Depth counts every message visible", q(queueBugs{depthCountsAll: true}), []string{"Depth/visible_delayed_in_flight"}},
	}
	testBroken(t, checks, cases, true)
}

// The recorder itself: a failing check is recorded, a passing one is not.
func TestRecorder(t *testing.T) {
	checks := []check[int]{
		{"pass", func(t testing.TB, _ int) { t.Log("fine") }},
		{"error", func(t testing.TB, _ int) { t.Errorf("bad") }},
		{"fatal", func(t testing.TB, _ int) { t.Fatalf("worse"); panic("not reached") }},
	}
	for name, want := range map[string]bool{"pass": false, "error": true, "fatal": true} {
		if got, said := runRecorded(t, checks, name, 0); got != want {
			t.Errorf("check %s: failed = %v (%s), want %v", name, got, said, want)
		}
	}
}
