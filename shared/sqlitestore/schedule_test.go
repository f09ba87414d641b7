package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// schedules is a stand-in for the runtime's schedule table, in the store's
// file: the schedule functions write to it through the store's transaction.
type schedules struct {
	t     *testing.T
	s     *Store
	calls []publishing.TargetRef
}

func newSchedules(t *testing.T, s *Store) *schedules {
	t.Helper()
	if _, err := s.DB().Exec(`CREATE TABLE test_schedules (name TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return &schedules{t: t, s: s}
}

func scheduleName(ref publishing.TargetRef) string {
	return fmt.Sprintf("%s/%s@%s", ref.Post, ref.Account, ref.Slot.Format(time.RFC3339Nano))
}

var errScheduler = errors.New("scheduler refused")

// put returns a schedule function that stores ref's schedule, or fails
// for the account failOn.
func (sc *schedules) put(failOn post.AccountID) func(tx *sql.Tx, ref publishing.TargetRef) error {
	return func(tx *sql.Tx, ref publishing.TargetRef) error {
		sc.calls = append(sc.calls, ref)
		if _, err := tx.Exec(`INSERT INTO test_schedules (name) VALUES (?)`, scheduleName(ref)); err != nil {
			return err
		}
		if ref.Account == failOn {
			return errScheduler
		}
		return nil
	}
}

// stored lists the schedules committed to the file.
func (sc *schedules) stored() []string {
	sc.t.Helper()
	rows, err := sc.s.r.Query(`SELECT name FROM test_schedules ORDER BY name`)
	if err != nil {
		sc.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			sc.t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func wantUnscheduled(t *testing.T, s *Store, limit int, want []publishing.TargetRef, what string) {
	t.Helper()
	got, err := s.Unscheduled(context.Background(), limit)
	if err != nil {
		t.Fatalf("%s: Unscheduled = %v", what, err)
	}
	if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("%s: Unscheduled(%d) (-want +got):\n%s", what, limit, d)
	}
}

func TestCreatePostScheduled(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	sc := newSchedules(t, s)
	paris := time.FixedZone("CET", 3600)
	p := post.Post{ID: "p-sched", Body: "b", CreatedAt: t0, Targets: []post.Target{
		{Account: "a", Slot: t0.Add(2 * time.Hour).In(paris), Status: post.Scheduled, UpdatedAt: t0},
		{Account: "b", Slot: t0.Add(time.Hour), Status: post.Scheduled, UpdatedAt: t0},
		{Account: "c", Slot: t0.Add(time.Hour), Status: post.Held, Reason: "dedup", UpdatedAt: t0},
	}}
	refA := publishing.TargetRef{Post: p.ID, Account: "a", Slot: t0.Add(2 * time.Hour)}
	refB := publishing.TargetRef{Post: p.ID, Account: "b", Slot: t0.Add(time.Hour)}

	// A failing schedule rolls back the post and the schedules made before.
	if err := s.CreatePostScheduled(ctx, p, sc.put("b")); !errors.Is(err, errScheduler) {
		t.Fatalf("CreatePostScheduled with a failing schedule = %v, want errScheduler", err)
	}
	if _, err := s.GetPost(ctx, p.ID); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("after the failed CreatePostScheduled: GetPost = %v, want post.ErrNotFound", err)
	}
	if got := sc.stored(); len(got) != 0 {
		t.Errorf("after the failed CreatePostScheduled: schedules %v, want none", got)
	}

	sc.calls = nil
	if err := s.CreatePostScheduled(ctx, p, sc.put("")); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]publishing.TargetRef{refA, refB}, sc.calls); d != "" {
		t.Errorf("schedule calls (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{scheduleName(refA), scheduleName(refB)}, sc.stored()); d != "" {
		t.Errorf("stored schedules (-want +got):\n%s", d)
	}
	got, err := s.GetPost(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(p, got); d != "" {
		t.Errorf("GetPost (-want +got):\n%s", d)
	}
	wantUnscheduled(t, s, 0, nil, "after CreatePostScheduled")

	// An existing id: nothing is scheduled.
	sc.calls = nil
	if err := s.CreatePostScheduled(ctx, p, sc.put("")); !errors.Is(err, post.ErrConflict) {
		t.Errorf("CreatePostScheduled(existing id) = %v, want post.ErrConflict", err)
	}
	if len(sc.calls) != 0 {
		t.Errorf("CreatePostScheduled(existing id) called schedule for %v", sc.calls)
	}
}

func TestUnscheduledAndMarkScheduled(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	sc := newSchedules(t, s)
	p := post.Post{ID: "p-plain", Body: "b", CreatedAt: t0}
	for i, a := range []post.AccountID{"a", "b", "c", "d", "e"} {
		st := post.Scheduled
		if a == "e" {
			st = post.Held
		}
		p.Targets = append(p.Targets, post.Target{Account: a, Slot: t0.Add(time.Duration(5-i) * time.Hour), Status: st, UpdatedAt: t0})
	}
	if err := s.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	ref := func(a post.AccountID) publishing.TargetRef {
		tg, _ := p.Target(a)
		return publishing.TargetRef{Post: p.ID, Account: a, Slot: tg.Slot}
	}
	wantUnscheduled(t, s, 0, []publishing.TargetRef{ref("d"), ref("c"), ref("b"), ref("a")}, "after CreatePost")
	wantUnscheduled(t, s, 2, []publishing.TargetRef{ref("d"), ref("c")}, "after CreatePost")

	once := func(r publishing.TargetRef, fail bool) func(tx *sql.Tx) error {
		failOn := post.AccountID("")
		if fail {
			failOn = r.Account
		}
		put := sc.put(failOn)
		return func(tx *sql.Tx) error { return put(tx, r) }
	}
	moved := ref("b")
	if _, err := s.UpdateTarget(ctx, p.ID, "b", post.TargetUpdate{Status: post.Triggered, At: t0}); err != nil {
		t.Fatal(err)
	}
	wrongSlot := ref("c")
	wrongSlot.Slot = wrongSlot.Slot.Add(time.Nanosecond)
	for _, tc := range []struct {
		name      string
		ref       publishing.TargetRef
		fail      bool
		wantErr   error
		wantCall  bool
		wantLeft  []publishing.TargetRef
		wantSaved []string
	}{
		{"schedule fails", ref("d"), true, errScheduler, true,
			[]publishing.TargetRef{ref("d"), ref("c"), ref("a")}, nil},
		{"scheduled", ref("d"), false, nil, true,
			[]publishing.TargetRef{ref("c"), ref("a")}, []string{scheduleName(ref("d"))}},
		{"no longer scheduled", moved, false, nil, false,
			[]publishing.TargetRef{ref("c"), ref("a")}, []string{scheduleName(ref("d"))}},
		{"another slot", wrongSlot, false, nil, false,
			[]publishing.TargetRef{ref("c"), ref("a")}, []string{scheduleName(ref("d"))}},
		{"missing post", publishing.TargetRef{Post: "nope", Account: "a", Slot: t0}, false, nil, false,
			[]publishing.TargetRef{ref("c"), ref("a")}, []string{scheduleName(ref("d"))}},
		{"held target", ref("e"), false, nil, false,
			[]publishing.TargetRef{ref("c"), ref("a")}, []string{scheduleName(ref("d"))}},
		{"second target", ref("a"), false, nil, true,
			[]publishing.TargetRef{ref("c")}, []string{scheduleName(ref("a")), scheduleName(ref("d"))}},
	} {
		sc.calls = nil
		err := s.MarkScheduled(ctx, tc.ref, once(tc.ref, tc.fail))
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: MarkScheduled = %v, want %v", tc.name, err, tc.wantErr)
		}
		if called := len(sc.calls) > 0; called != tc.wantCall {
			t.Errorf("%s: schedule called = %v, want %v", tc.name, called, tc.wantCall)
		}
		wantUnscheduled(t, s, 0, tc.wantLeft, tc.name)
		if d := cmp.Diff(tc.wantSaved, sc.stored(), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: stored schedules (-want +got):\n%s", tc.name, d)
		}
	}
}

// DataVersion changes when another connection (another process) commits,
// not when the store itself writes.
func TestDataVersion(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	a, b := openAt(t, path), openAt(t, path)
	last := map[string]int64{}
	for i, tc := range []struct {
		writer                     *Store
		name                       string
		wantAChanged, wantBChanged bool
	}{
		{nil, "nothing", false, false},
		{a, "a writes", false, true},
		{a, "a writes again", false, true},
		{b, "b writes", true, false},
		{nil, "nothing", false, false},
	} {
		if tc.writer != nil {
			if err := tc.writer.PutAccount(ctx, post.Account{ID: post.AccountID(fmt.Sprint("acct-", i))}); err != nil {
				t.Fatal(err)
			}
		}
		for name, st := range map[string]*Store{"a": a, "b": b} {
			v, err := st.DataVersion(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.wantAChanged
			if name == "b" {
				want = tc.wantBChanged
			}
			if prev, ok := last[name]; ok && (v != prev) != want {
				t.Errorf("step %d (%s): %s's data version %d → %d, want changed = %v", i, tc.name, name, prev, v, want)
			}
			last[name] = v
		}
	}
}

func TestPruneLedger(t *testing.T) {
	ctx := context.Background()
	now := t0.Add(ledger.TerminalTTL + 10*24*time.Hour)
	s := openTest(t, Options{})
	mk := func(subject string, at time.Time, moves ...func(e ledger.Entry) (ledger.Entry, error)) ledger.Entry {
		t.Helper()
		e := ledger.NewEntry(ledger.PublishKey("acct", subject, t0), ledger.Publish, "acct", subject, t0, "", "w", at, time.Minute)
		if err := s.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		for _, mv := range moves {
			next, err := mv(e)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Update(ctx, e, next); err != nil {
				t.Fatal(err)
			}
			e = next
		}
		return e
	}
	confirm := func(at time.Time) func(ledger.Entry) (ledger.Entry, error) {
		return func(e ledger.Entry) (ledger.Entry, error) { return e.Confirm("r-"+e.Subject, at) }
	}
	fail := func(at time.Time) func(ledger.Entry) (ledger.Entry, error) {
		return func(e ledger.Entry) (ledger.Entry, error) { return e.Fail("422", at) }
	}
	// A TTL on an entry that can still move is never honoured.
	withTTL := func(mv func(ledger.Entry) (ledger.Entry, error)) func(ledger.Entry) (ledger.Entry, error) {
		return func(e ledger.Entry) (ledger.Entry, error) {
			n, err := mv(e)
			n.ExpiresAt = t0
			return n, err
		}
	}
	expired := []ledger.Entry{
		mk("confirmed-old", t0, confirm(t0)),
		mk("failed-old", t0, fail(t0.Add(time.Hour))),
	}
	kept := []ledger.Entry{
		mk("confirmed-recent", t0, confirm(now.Add(-ledger.TerminalTTL+time.Nanosecond))),
		mk("confirmed-exactly-now", t0, confirm(now.Add(-ledger.TerminalTTL))),
		mk("held", t0, withTTL(func(e ledger.Entry) (ledger.Entry, error) { return e.Hold("dedup", "", t0) })),
		mk("released", t0, withTTL(func(e ledger.Entry) (ledger.Entry, error) { return e.Release("429", t0) })),
		mk("unknown", t0, withTTL(func(e ledger.Entry) (ledger.Entry, error) { return e.MarkUnknown("timeout", t0) })),
		mk("pending", t0),
	}
	n, err := s.PruneLedger(ctx, now, 0)
	if err != nil || n != len(expired) {
		t.Fatalf("PruneLedger = %d, %v; want %d, nil", n, err, len(expired))
	}
	for _, e := range expired {
		if _, err := s.Get(ctx, e.Key); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("%s after PruneLedger: Get = %v, want ledger.ErrNotFound", e.Subject, err)
		}
		if h, err := s.History(ctx, e.Key); err != nil || len(h) != 0 {
			t.Errorf("%s after PruneLedger: %d history rows (%v), want none", e.Subject, len(h), err)
		}
	}
	for _, e := range kept {
		got, err := s.Get(ctx, e.Key)
		if err != nil {
			t.Errorf("%s after PruneLedger: Get = %v", e.Subject, err)
			continue
		}
		if d := cmp.Diff(e, got); d != "" {
			t.Errorf("%s after PruneLedger (-want +got):\n%s", e.Subject, d)
		}
		if h, err := s.History(ctx, e.Key); err != nil || len(h) == 0 {
			t.Errorf("%s after PruneLedger: %d history rows (%v), want its history", e.Subject, len(h), err)
		}
	}
	if n, err := s.PruneLedger(ctx, now, 0); err != nil || n != 0 {
		t.Errorf("second PruneLedger = %d, %v; want 0, nil", n, err)
	}
}

// More expired entries than one batch: the limit caps one call, and the
// next call goes on, soonest expired first.
func TestPruneLedgerInBatches(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	const total = 2*pruneBatch + 50
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	// Rows written directly, in one transaction: the test is about
	// deleting them.
	err := s.write(ctx, func(tx *sql.Tx) error {
		for i := range total {
			e := ledger.NewEntry(ledger.Key(fmt.Sprintf("k%04d", i)), ledger.Publish, "a", "p", t0, "", "w", t0, time.Minute)
			e, _ = e.Confirm("r", at(total-i)) // the last keys expire first
			if _, err := tx.Stmt(s.ws.ledgerInsert).Exec(entryArgs(e)...); err != nil {
				return err
			}
			if _, err := tx.Stmt(s.ws.historyInsert).Exec(string(e.Key), "", "pending", 1, "", "x"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	now := at(total).Add(ledger.TerminalTTL + time.Second)
	for _, tc := range []struct {
		limit, want int
		firstLeft   string
	}{
		{1, 1, "k0000"},
		{pruneBatch + 10, pruneBatch + 10, "k0000"},
		{0, total - pruneBatch - 11, ""},
	} {
		n, err := s.PruneLedger(ctx, now, tc.limit)
		if err != nil || n != tc.want {
			t.Errorf("PruneLedger(limit %d) = %d, %v; want %d, nil", tc.limit, n, err, tc.want)
		}
		var left int
		var first sql.NullString
		if err := s.r.QueryRow(`SELECT count(*), min(key) FROM ledger`).Scan(&left, &first); err != nil {
			t.Fatal(err)
		}
		var history int
		if err := s.r.QueryRow(`SELECT count(*) FROM ledger_history`).Scan(&history); err != nil {
			t.Fatal(err)
		}
		if history != left || first.String != tc.firstLeft {
			t.Errorf("after PruneLedger(limit %d): %d entries from %q, %d history rows; want as many history rows, from %q",
				tc.limit, left, first.String, history, tc.firstLeft)
		}
	}
}

func TestByState(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	entries := map[string]ledger.Entry{}
	for i, tc := range []struct {
		subject string
		move    func(e ledger.Entry, now time.Time) (ledger.Entry, error)
	}{
		{"held-late", func(e ledger.Entry, now time.Time) (ledger.Entry, error) {
			return e.Hold("dedup", "r", now.Add(time.Hour))
		}},
		{"held-early", func(e ledger.Entry, now time.Time) (ledger.Entry, error) { return e.Hold("not found", "", now) }},
		{"confirmed", func(e ledger.Entry, now time.Time) (ledger.Entry, error) { return e.Confirm("r", now) }},
		{"released", func(e ledger.Entry, now time.Time) (ledger.Entry, error) { return e.Release("429", now) }},
		{"pending", nil},
	} {
		e := ledger.NewEntry(ledger.PublishKey("acct", tc.subject, t0), ledger.Publish, "acct", tc.subject, t0, "", "w", t0, time.Minute)
		if err := s.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		if tc.move != nil {
			next, err := tc.move(e, t0.Add(time.Duration(i)*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Update(ctx, e, next); err != nil {
				t.Fatal(err)
			}
			e = next
		}
		entries[tc.subject] = e
	}
	for _, tc := range []struct {
		state ledger.State
		limit int
		want  []string
	}{
		{ledger.Held, 0, []string{"held-early", "held-late"}},
		{ledger.Held, 1, []string{"held-early"}},
		{ledger.Released, 0, []string{"released"}},
		{ledger.Pending, 0, []string{"pending"}},
		{ledger.Failed, 0, nil},
	} {
		got, err := s.ByState(ctx, tc.state, tc.limit)
		if err != nil {
			t.Fatalf("ByState(%s) = %v", tc.state, err)
		}
		var want []ledger.Entry
		for _, subject := range tc.want {
			want = append(want, entries[subject])
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("ByState(%s, %d) (-want +got):\n%s", tc.state, tc.limit, d)
		}
	}
}
