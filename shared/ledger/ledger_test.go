package ledger

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var allStates = []State{"", Pending, Confirmed, Released, Failed, Unknown, Held}

func TestAllowedIsExactlyDesignTable(t *testing.T) {
	// DESIGN §3, written out pair by pair so a change to the table must
	// change this test too.
	want := map[[2]State]bool{
		{"", Pending}:        true,
		{Pending, Confirmed}: true,
		{Pending, Released}:  true,
		{Pending, Failed}:    true,
		{Pending, Unknown}:   true,
		{Pending, Held}:      true,
		{Unknown, Confirmed}: true,
		{Unknown, Released}:  true,
		{Unknown, Held}:      true,
		{Released, Pending}:  true,
		{Held, Released}:     true,
		{Held, Confirmed}:    true,
		{Held, Failed}:       true,
		// A newer task token or an operator's decision on a held entry.
		{Held, Held}: true,
	}
	for _, from := range allStates {
		for _, to := range allStates {
			if got := Allowed(from, to); got != want[[2]State{from, to}] {
				t.Errorf("Allowed(%q, %q) = %v, want %v", from, to, got, !got)
			}
		}
	}
}

func TestKeysAreStableAndDistinct(t *testing.T) {
	slot := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	k := PublishKey("acc", "post-1", slot)
	if k != PublishKey("acc", "post-1", slot.In(time.FixedZone("CET", 3600))) {
		t.Errorf("PublishKey depends on the slot's zone")
	}
	distinct := []Key{
		k,
		PublishKey("acc", "post-1", slot.Add(time.Minute)),
		PublishKey("acc2", "post-1", slot),
		PublishKey("acc", "post-2", slot),
		UploadKey("acc", "post-1", k),
		UploadKey("acc", "post-1", PublishKey("acc", "post-2", slot)),
		DeleteKey("acc", "post-1"),
	}
	seen := map[Key]int{}
	for i, key := range distinct {
		if j, dup := seen[key]; dup {
			t.Errorf("key %d equals key %d: %s", i, j, key)
		}
		seen[key] = i
		if len(key) != 52 {
			t.Errorf("key %s has length %d, want 52 base32 characters", key, len(key))
		}
	}
}

func TestCheck(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	p := NewEntry("k", Publish, "acc", "post", now, "fp", "w1", now, time.Minute)
	released, _ := p.Release("429", now)
	reacquired, err := released.Reacquire("w2", now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		prev, next Entry
		ok         bool
	}{
		{"re-acquire grows attempt", released, reacquired, true},
		{"re-acquire without attempt+1", released, with(reacquired, func(e *Entry) { e.Attempt = 1 }), false},
		{"confirm keeps attempt", p, with(p, func(e *Entry) { e.State = Confirmed }), true},
		{"confirm with attempt+1", p, with(p, func(e *Entry) { e.State = Confirmed; e.Attempt = 2 }), false},
		{"handle change", released, with(reacquired, func(e *Entry) { e.Handle = "other" }), false},
		{"post change", released, with(reacquired, func(e *Entry) { e.Post = "another-post" }), false},
		{"key change", p, with(p, func(e *Entry) { e.State = Unknown; e.Key = "k2" }), false},
		{"confirmed is terminal", with(p, func(e *Entry) { e.State = Confirmed }), with(p, func(e *Entry) { e.State = Released }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.prev, tt.next)
			if (err == nil) != tt.ok {
				t.Fatalf("Check = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrTransition) {
				t.Errorf("Check error %v does not wrap ErrTransition", err)
			}
		})
	}
}

func with(e Entry, f func(*Entry)) Entry { f(&e); return e }

func TestHandleFixedAcrossAttempts(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	e := NewEntry("k", Publish, "acc", "post", now, "fp", "w1", now, time.Minute)
	if e.Handle == "" || e.Handle == NewEntry("k", Publish, "acc", "post", now, "fp", "w1", now, time.Minute).Handle {
		t.Fatalf("handles must be fresh per first write, got %q", e.Handle)
	}
	handle := e.Handle
	for attempt := 2; attempt <= 4; attempt++ {
		u, err := e.MarkUnknown("timeout", now)
		if err != nil {
			t.Fatal(err)
		}
		r, err := u.Release(ReasonNotFoundForTest, now)
		if err != nil {
			t.Fatal(err)
		}
		if e, err = r.Reacquire("w", now, time.Minute); err != nil {
			t.Fatal(err)
		}
		if e.Handle != handle || e.Attempt != attempt {
			t.Errorf("attempt %d: handle %q attempt %d, want %q attempt %d", attempt, e.Handle, e.Attempt, handle, attempt)
		}
	}
}

const ReasonNotFoundForTest = "not found"

func TestLeaseAndDecide(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	e := NewEntry("k", Publish, "acc", "post", t0, "fp", "w1", t0, time.Minute)
	tests := []struct {
		name  string
		entry Entry
		at    time.Time
		want  Decision
	}{
		{"live lease", e, t0.Add(59 * time.Second), DecideWait},
		{"lease ends", e, t0.Add(time.Minute), DecideExpire},
		{"confirmed", must(e.Confirm("r1", t0)), t0, DecideReuse},
		{"unknown", must(e.MarkUnknown("x", t0)), t0, DecideConfirm},
		{"released", must(e.Release("x", t0)), t0, DecideSend},
		{"failed", must(e.Fail("x", t0)), t0, DecideStop},
		{"held", must(e.Hold("x", "", t0)), t0, DecideStop},
	}
	for _, tt := range tests {
		if got := Decide(tt.entry, tt.at); got != tt.want {
			t.Errorf("%s: Decide = %s, want %s", tt.name, got, tt.want)
		}
	}
	if _, err := e.ExpireLease(t0.Add(30 * time.Second)); !errors.Is(err, ErrTransition) {
		t.Errorf("ExpireLease on a live lease = %v, want ErrTransition", err)
	}
	u, err := e.ExpireLease(t0.Add(2 * time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := Entry{State: Unknown, Reason: ReasonLeaseExpired, OpenSince: t0, Attempt: 1}
	got := Entry{State: u.State, Reason: u.Reason, OpenSince: u.OpenSince, Attempt: u.Attempt}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("expired entry (-want +got):\n%s", diff)
	}
	if u.LeaseOwner != "" || !u.LeaseUntil.IsZero() {
		t.Errorf("unknown entry keeps a lease: %q until %s", u.LeaseOwner, u.LeaseUntil)
	}
}

func TestTerminalGetsTTLAndClosesOpenSince(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	e := NewEntry("k", Publish, "acc", "post", t0, "fp", "w1", t0, time.Minute)
	c := must(e.Confirm("r1", t0.Add(time.Second)))
	if !c.ExpiresAt.Equal(t0.Add(time.Second + TerminalTTL)) {
		t.Errorf("ExpiresAt = %s, want 90 days after confirm", c.ExpiresAt)
	}
	if !c.OpenSince.IsZero() {
		t.Errorf("confirmed entry still open since %s", c.OpenSince)
	}
	if _, err := e.Confirm("", t0); !errors.Is(err, ErrTransition) {
		t.Errorf("Confirm without remote id = %v, want ErrTransition", err)
	}
	if _, err := c.Release("x", t0); !errors.Is(err, ErrTransition) {
		t.Errorf("confirmed → released = %v, want ErrTransition", err)
	}
}

func must(e Entry, err error) Entry {
	if err != nil {
		panic(err)
	}
	return e
}

func TestBudgetDeferralsAndHolds(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	e := NewEntry(PublishKey("acc", "p", now), Publish, "acc", "p", now, "fp", "w", now, time.Minute)

	// Deferred twice: the run starts at the first, RetryAt is recorded,
	// and no attempt of the budget is spent.
	d1, err := e.Defer("429", now.Add(time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := d1.Reacquire("w", now.Add(time.Hour), time.Minute)
	d2, _ := p2.Defer("429", now.Add(2*time.Hour), now.Add(time.Hour))
	got := []any{d1.State, d1.RetryAt, d1.DeferredSince, p2.RetryAt.IsZero(), d2.DeferredSince, d2.MaybeSent}
	want := []any{Released, now.Add(time.Hour), now, true, now, 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deferrals (-want +got):\n%s", diff)
	}

	// Postponed (our own budget or time): RetryAt is recorded, and the run
	// of deferrals is neither started nor ended by it.
	pp, err := e.Postpone("posting_limit", now.Add(time.Minute), now)
	if err != nil || pp.State != Released || !pp.RetryAt.Equal(now.Add(time.Minute)) || !pp.DeferredSince.IsZero() {
		t.Errorf("postpone a fresh entry: %s retry_at %v deferred_since %v (err %v), want released, +1m, zero", pp.State, pp.RetryAt, pp.DeferredSince, err)
	}
	p2b, _ := d2.Reacquire("w", now.Add(2*time.Hour), time.Minute)
	if pd, _ := p2b.Postpone("posting_limit", now.Add(3*time.Hour), now.Add(2*time.Hour)); !pd.DeferredSince.Equal(now) {
		t.Errorf("postpone during a run of deferrals: deferred_since %v, want %v kept", pd.DeferredSince, now)
	}

	// An ambiguous outcome spends the budget and ends the run of deferrals.
	p3, _ := d2.Reacquire("w", now.Add(2*time.Hour), time.Minute)
	u, err := p3.MarkUnknown("timeout", now.Add(2*time.Hour))
	if err != nil || u.MaybeSent != 1 || !u.DeferredSince.IsZero() {
		t.Errorf("unknown: maybe_sent %d deferred_since %v (err %v), want 1 and zero", u.MaybeSent, u.DeferredSince, err)
	}

	// Held: a newer token, then one decision; a second is refused, and
	// leaving held clears both.
	h, _ := u.Hold("not found", "", now)
	h.TaskToken = "t1"
	h2, err := h.Retoken("t2", now)
	if err != nil || h2.TaskToken != "t2" || h2.State != Held || Check(h, h2) != nil {
		t.Errorf("retoken: %+v (err %v, check %v)", h2, err, Check(h, h2))
	}
	h3, err := h2.WithDecision(`{"decision":"release"}`, now)
	if err != nil || h3.Decision == "" || h3.TaskToken != "t2" {
		t.Errorf("decision: %+v (err %v)", h3, err)
	}
	if _, err := h3.WithDecision(`{"decision":"reject"}`, now); !errors.Is(err, ErrTransition) {
		t.Errorf("second decision: %v, want ErrTransition", err)
	}
	if _, err := u.Retoken("t3", now); !errors.Is(err, ErrTransition) {
		t.Errorf("retoken of an unknown entry: %v, want ErrTransition", err)
	}
	r, _ := h3.Release("approved", now)
	if r.Decision != "" || r.TaskToken != "" {
		t.Errorf("released entry keeps decision %q token %q", r.Decision, r.TaskToken)
	}
}

// A thread's first part keeps the key of a post without a thread; every
// other part gets its own, and its subject splits back.
func TestPartKeys(t *testing.T) {
	slot := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if PartKey("acc", "p1", 1, slot) != PublishKey("acc", "p1", slot) {
		t.Error("part 1's key is not the post's publish key")
	}
	seen := map[Key]int{}
	for k := 1; k <= 25; k++ {
		key := PartKey("acc", "p1", k, slot)
		if prev, ok := seen[key]; ok {
			t.Errorf("parts %d and %d share key %s", prev, k, key)
		}
		seen[key] = k
		id, part := SubjectPart(PartSubject("p1", k))
		if id != "p1" || part != k {
			t.Errorf("SubjectPart(PartSubject(p1, %d)) = %s, %d", k, id, part)
		}
	}
	for _, s := range []string{"p1", "p1#", "p1#1", "p1#x", "p1#02", "p1#-3"} {
		if id, part := SubjectPart(s); id != s || part != 1 {
			t.Errorf("SubjectPart(%q) = %q, %d; want the subject itself, part 1", s, id, part)
		}
	}
}
