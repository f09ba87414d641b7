package publishingtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// QueueStore is a store's side of the posting queue: its slot claims, and
// the posts, accounts and scheduler a Desk adds queued posts through (all
// the same store).
type QueueStore struct {
	Slots     publishing.QueueSlots
	Posts     publishing.Posts
	Accounts  publishing.Accounts
	Scheduler publishing.PostScheduler
}

// TestQueueSlots checks a store's posting-slot claims
// (publishing.QueueSlots): a slot is claimed once, passes from one post
// to another only from the post that holds it, is released only by its
// holder, and claims list in slot order from a time; of many concurrent
// claims of the same slots each slot goes to one post. Then, through a
// publishing.Desk on the store: 100 posts added to one account's queue
// at once take 100 distinct slots of its rules, none in the past, and a
// cancelled post's slot is taken by the next one. newStore must return
// an empty store.
func TestQueueSlots(t *testing.T, newStore func(t *testing.T) QueueStore) {
	t.Helper()
	runChecks(t, queueSlotsChecks(), newStore)
}

func queueSlotsChecks() []check[QueueStore] {
	return []check[QueueStore]{
		{"ClaimQueueSlot/once", queueClaimOnce},
		{"ClaimQueueSlot/passes_only_from_its_holder", queueClaimTakeOver},
		{"ClaimQueueSlot/concurrent", queueClaimConcurrent},
		{"ReleaseQueueSlot/only_its_holder", queueRelease},
		{"QueueSlotClaims/from_in_order_limit", queueClaimsList},
		{"Desk/100_concurrent_adds_distinct_slots", queueDeskConcurrent},
		{"Desk/cancel_frees_the_slot", queueDeskCancel},
	}
}

// queueAt is the queue checks' slot n: a minute boundary after base.
func queueAt(n int) time.Time {
	return base.Truncate(time.Minute).Add(time.Duration(n+1) * time.Minute)
}

func mustClaimSlot(t testing.TB, s publishing.QueueSlots, account post.AccountID, slot time.Time, owner, prev post.ID) {
	t.Helper()
	if err := s.ClaimQueueSlot(t.Context(), account, slot, owner, prev, base); err != nil {
		t.Fatalf("ClaimQueueSlot(%s, %s, %s, prev %q) = %v", account, slot.Format(time.RFC3339), owner, prev, err)
	}
}

func claimsOf(t testing.TB, s publishing.QueueSlots, account post.AccountID, from time.Time, limit int) []publishing.SlotClaim {
	t.Helper()
	got, err := s.QueueSlotClaims(t.Context(), account, from, limit)
	if err != nil {
		t.Fatalf("QueueSlotClaims(%s) = %v", account, err)
	}
	return got
}

func queueClaimOnce(t testing.TB, qs QueueStore) {
	s := qs.Slots
	mustClaimSlot(t, s, "acct-a", queueAt(0), "p1", "")
	if err := s.ClaimQueueSlot(t.Context(), "acct-a", queueAt(0), "p2", "", base); !errors.Is(err, post.ErrConflict) {
		t.Errorf("second claim of a taken slot = %v, want post.ErrConflict", err)
	}
	// The same slot of another account is another slot.
	mustClaimSlot(t, s, "acct-b", queueAt(0), "p2", "")
	want := []publishing.SlotClaim{{Slot: queueAt(0), Post: "p1", At: base}}
	if diff := cmp.Diff(want, claimsOf(t, s, "acct-a", queueAt(0), 0)); diff != "" {
		t.Errorf("claims of acct-a (-want +got):\n%s", diff)
	}
}

func queueClaimTakeOver(t testing.TB, qs QueueStore) {
	s := qs.Slots
	mustClaimSlot(t, s, "acct-a", queueAt(0), "p1", "")
	if err := s.ClaimQueueSlot(t.Context(), "acct-a", queueAt(0), "p3", "p2", base); !errors.Is(err, post.ErrConflict) {
		t.Errorf("claim from a post that does not hold the slot = %v, want post.ErrConflict", err)
	}
	if err := s.ClaimQueueSlot(t.Context(), "acct-a", queueAt(1), "p3", "p1", base); !errors.Is(err, post.ErrConflict) {
		t.Errorf("claim of a free slot from a holder = %v, want post.ErrConflict (nothing holds it)", err)
	}
	mustClaimSlot(t, s, "acct-a", queueAt(0), "p2", "p1")
	got := claimsOf(t, s, "acct-a", queueAt(0), 0)
	if len(got) != 1 || got[0].Post != "p2" {
		t.Errorf("claims after the pass = %v, want the slot held by p2", got)
	}
	if err := s.ClaimQueueSlot(t.Context(), "acct-a", queueAt(0), "p3", "p1", base); !errors.Is(err, post.ErrConflict) {
		t.Errorf("a second pass from the first holder = %v, want post.ErrConflict", err)
	}
}

// queueClaimConcurrent: 100 posts each claim the first free slot of 0..199
// at once, walking on when they lose; every post ends with one slot, and
// no slot has two.
func queueClaimConcurrent(t testing.TB, qs QueueStore) {
	s := qs.Slots
	const n = 100
	got := make([]int, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := post.ID(fmt.Sprintf("p%03d", i))
			for k := 0; k < 2*n; k++ {
				err := s.ClaimQueueSlot(context.Background(), "acct-a", queueAt(k), owner, "", base)
				if err == nil {
					got[i] = k
					return
				}
				if !errors.Is(err, post.ErrConflict) {
					errs <- err
					return
				}
			}
			errs <- fmt.Errorf("%s found no free slot", owner)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	claims := claimsOf(t, s, "acct-a", queueAt(0), 0)
	if len(claims) != n {
		t.Fatalf("%d claims stored, want %d", len(claims), n)
	}
	owners := map[post.ID]bool{}
	for i, c := range claims {
		if !c.Slot.Equal(queueAt(i)) {
			t.Errorf("claim %d is of %s, want %s (the first %d slots, each once)", i, c.Slot.Format(time.RFC3339), queueAt(i).Format(time.RFC3339), n)
		}
		if owners[c.Post] {
			t.Errorf("post %s holds two slots", c.Post)
		}
		owners[c.Post] = true
	}
	seen := map[int]bool{}
	for i, k := range got {
		if seen[k] {
			t.Errorf("post p%03d was told it took slot %d, which another was told too", i, k)
		}
		seen[k] = true
	}
}

func queueRelease(t testing.TB, qs QueueStore) {
	s := qs.Slots
	mustClaimSlot(t, s, "acct-a", queueAt(0), "p1", "")
	if err := s.ReleaseQueueSlot(t.Context(), "acct-a", queueAt(0), "p2"); err != nil {
		t.Errorf("ReleaseQueueSlot by a post that does not hold it = %v, want nil (nothing done)", err)
	}
	if got := claimsOf(t, s, "acct-a", queueAt(0), 0); len(got) != 1 {
		t.Errorf("claims after another post's release = %v, want p1's still there", got)
	}
	if err := s.ReleaseQueueSlot(t.Context(), "acct-a", queueAt(0), "p1"); err != nil {
		t.Fatalf("ReleaseQueueSlot by its holder = %v", err)
	}
	if got := claimsOf(t, s, "acct-a", queueAt(0), 0); len(got) != 0 {
		t.Errorf("claims after the release = %v, want none", got)
	}
	mustClaimSlot(t, s, "acct-a", queueAt(0), "p2", "")
}

func queueClaimsList(t testing.TB, qs QueueStore) {
	s := qs.Slots
	for _, k := range []int{5, 1, 3, 0, 4} {
		mustClaimSlot(t, s, "acct-a", queueAt(k), post.ID(fmt.Sprintf("p%d", k)), "")
	}
	mustClaimSlot(t, s, "acct-b", queueAt(2), "other", "")
	var got []string
	for _, c := range claimsOf(t, s, "acct-a", queueAt(1), 3) {
		got = append(got, string(c.Post))
		if c.Slot.Location() != time.UTC {
			t.Errorf("claim slot %v is not in UTC", c.Slot)
		}
	}
	if diff := cmp.Diff([]string{"p1", "p3", "p4"}, got); diff != "" {
		t.Errorf("QueueSlotClaims(from slot 1, limit 3) (-want +got):\n%s", diff)
	}
	if got := claimsOf(t, s, "acct-a", queueAt(6), 0); len(got) != 0 {
		t.Errorf("claims from after the last = %v, want none", got)
	}
}

// queueDesk is a Desk on the store, at now, with one account whose slots
// are every five minutes in Berlin.
func queueDesk(t testing.TB, qs QueueStore, now time.Time) *publishing.Desk {
	t.Helper()
	a := sampleAccount("acct-q")
	a.TimeZone, a.Slots = "Europe/Berlin", []string{"cron(0/5 * * * ? *)"}
	mustPutAccount(t, qs.Accounts, a)
	return &publishing.Desk{
		Posts: qs.Posts, Accounts: qs.Accounts, Scheduler: qs.Scheduler, Queue: qs.Slots, Blocklist: noBlocklist{}, Ledger: noLedger{},
		Limits: func(string) (post.Limits, bool) { return post.Limits{MaxTextGraphemes: 500, MaxMedia: 4}, true },
		Now:    func() time.Time { return now },
	}
}

// noLedger is a ledger without entries: nothing was ever sent.
type noLedger struct{ publishing.Ledger }

func (noLedger) Get(_ context.Context, key ledger.Key) (ledger.Entry, error) {
	return ledger.Entry{}, fmt.Errorf("entry %s: %w", key, ledger.ErrNotFound)
}

type noBlocklist struct{}

func (noBlocklist) BlockedTerms(context.Context) ([]post.BlockedTerm, error) { return nil, nil }

func queuedDraft(id string) post.Draft {
	return post.Draft{ID: id, Body: "queued " + id, Queue: true, Targets: []post.DraftTarget{{Account: "acct-q"}}}
}

func queueDeskConcurrent(t testing.TB, qs QueueStore) {
	now := base
	d := queueDesk(t, qs, now)
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := d.Schedule(context.Background(), queuedDraft(fmt.Sprintf("q%03d", i)), nil, nil); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Schedule(queue) = %v", err)
	}
	var slots []time.Time
	for i := range n {
		p, err := qs.Posts.GetPost(t.Context(), post.ID(fmt.Sprintf("q%03d", i)))
		if err != nil {
			t.Fatalf("GetPost = %v", err)
		}
		tg := p.Targets[0]
		if !tg.Queued || tg.Status != post.Scheduled {
			t.Errorf("%s: target %+v, want queued and scheduled", p.ID, tg)
		}
		if !tg.Slot.After(now) {
			t.Errorf("%s: slot %s is not after now %s", p.ID, tg.Slot.Format(time.RFC3339), now.Format(time.RFC3339))
		}
		if tg.Slot.Minute()%5 != 0 || tg.Slot.Second() != 0 || tg.Slot.Nanosecond() != 0 {
			t.Errorf("%s: slot %s is not one of the account's slots", p.ID, tg.Slot.Format(time.RFC3339Nano))
		}
		slots = append(slots, tg.Slot)
	}
	slices.SortFunc(slots, func(a, b time.Time) int { return a.Compare(b) })
	first := now.Truncate(5 * time.Minute).Add(5 * time.Minute)
	for i, s := range slots {
		if i > 0 && s.Equal(slots[i-1]) {
			t.Errorf("two posts took slot %s", s.Format(time.RFC3339))
		}
		if want := first.Add(time.Duration(i) * 5 * time.Minute); !s.Equal(want) {
			t.Errorf("slot %d is %s, want %s (the first %d free slots)", i, s.Format(time.RFC3339), want.Format(time.RFC3339), n)
			break
		}
	}
	if got := claimsOf(t, qs.Slots, "acct-q", now, 0); len(got) != n {
		t.Errorf("%d claims stored, want %d", len(got), n)
	}
}

func queueDeskCancel(t testing.TB, qs QueueStore) {
	now := base
	d := queueDesk(t, qs, now)
	for _, id := range []string{"c1", "c2"} {
		if _, err := d.Schedule(t.Context(), queuedDraft(id), nil, nil); err != nil {
			t.Fatalf("Schedule(%s) = %v", id, err)
		}
	}
	first, err := qs.Posts.GetPost(t.Context(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Cancel(t.Context(), "c1", ""); err != nil {
		t.Fatalf("Cancel(c1) = %v", err)
	}
	if _, err := d.Schedule(t.Context(), queuedDraft("c3"), nil, nil); err != nil {
		t.Fatalf("Schedule(c3) = %v", err)
	}
	third, err := qs.Posts.GetPost(t.Context(), "c3")
	if err != nil {
		t.Fatal(err)
	}
	if !third.Targets[0].Slot.Equal(first.Targets[0].Slot) {
		t.Errorf("c3 took %s, want c1's freed slot %s", third.Targets[0].Slot.Format(time.RFC3339), first.Targets[0].Slot.Format(time.RFC3339))
	}
}
