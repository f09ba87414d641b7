package localcron

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"oncepost/shared/clocktest"
)

// firing is one call of Fire.
type firing struct {
	Name        string
	ScheduledAt time.Time
	Payload     string
}

// target records firings and fails for the names in fail.
type target struct {
	mu    sync.Mutex
	calls []firing
	fail  map[string]error
}

func (tg *target) Fire(_ context.Context, name string, at time.Time, payload json.RawMessage) error {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	tg.calls = append(tg.calls, firing{name, at, string(payload)})
	return tg.fail[name]
}

// take returns and clears the calls so far.
func (tg *target) take() []firing {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	calls := tg.calls
	tg.calls = nil
	return calls
}

func (tg *target) setFail(name string, err error) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if tg.fail == nil {
		tg.fail = map[string]error{}
	}
	if err == nil {
		delete(tg.fail, name)
	} else {
		tg.fail[name] = err
	}
}

// testDB is the SQLite file a Runner works on, opened as the runtime's
// store opens its writer (sqlitestore's DSN: one connection, WAL,
// IMMEDIATE transactions, a busy timeout). Not through sqlitestore itself:
// it imports the publishing use cases, which use this package.
type testDB struct{ db *sql.DB }

func (d testDB) DB() *sql.DB { return d.db }

func (d testDB) Close() error { return d.db.Close() }

// openStore opens a store file in a temporary directory, as the runtime does.
func openStore(t testing.TB, path string) testDB {
	t.Helper()
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(ON)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	t.Cleanup(func() { db.Close() })
	return testDB{db}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newRunner opens a fresh store and a Runner on its write pool with a fake
// clock at now.
func newRunner(t *testing.T, now time.Time) (*Runner, *clocktest.Clock, *target, *sql.DB) {
	t.Helper()
	db := openStore(t, filepath.Join(t.TempDir(), "x.db")).DB()
	clk := clocktest.New(now)
	tg := &target{}
	r, err := NewRunner(context.Background(), db, Options{Now: clk.Now, Fire: tg.Fire, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return r, clk, tg, db
}

func mustPut(t *testing.T, r *Runner, e Entry) {
	t.Helper()
	if err := r.Put(context.Background(), e); err != nil {
		t.Fatalf("Put(%+v): %v", e, err)
	}
}

func runDue(t *testing.T, r *Runner) int {
	t.Helper()
	n, err := r.RunDue(context.Background())
	if err != nil {
		t.Fatalf("RunDue: %v", err)
	}
	return n
}

func state(t *testing.T, r *Runner, name string) State {
	t.Helper()
	_, st, err := r.Get(context.Background(), name)
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	return st
}

func TestRunnerFiresAtDueTime(t *testing.T) {
	r, clk, tg, _ := newRunner(t, utc(2026, 1, 1, 8, 0))
	mustPut(t, r, Entry{Name: "daily", Expression: "cron(0 9 * * ? *)", Timezone: "Europe/Berlin", Payload: json.RawMessage(`{"post":"p1"}`)})
	if diff := cmp.Diff(State{NextFire: utc(2026, 1, 1, 8, 0)}, state(t, r, "daily")); diff != "" {
		t.Fatalf("state after Put (-want +got):\n%s", diff)
	}
	next, ok, err := r.NextDue(context.Background())
	if err != nil || !ok || !next.Equal(utc(2026, 1, 1, 8, 0)) {
		t.Fatalf("NextDue = %v, %v, %v; want 08:00Z", next, ok, err)
	}
	// 09:00 in Berlin is 08:00Z; nothing is due a second before.
	clk.Set(utc(2026, 1, 1, 7, 59).Add(59 * time.Second))
	if n := runDue(t, r); n != 0 {
		t.Fatalf("RunDue before the firing fired %d", n)
	}
	clk.Set(utc(2026, 1, 1, 8, 0))
	if n := runDue(t, r); n != 1 {
		t.Fatalf("RunDue at the firing fired %d, want 1", n)
	}
	want := []firing{{"daily", utc(2026, 1, 1, 8, 0), `{"post":"p1"}`}}
	if diff := cmp.Diff(want, tg.take()); diff != "" {
		t.Errorf("firings (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(State{LastFired: utc(2026, 1, 1, 8, 0), NextFire: utc(2026, 1, 2, 8, 0)}, state(t, r, "daily")); diff != "" {
		t.Errorf("state after firing (-want +got):\n%s", diff)
	}
	if n := runDue(t, r); n != 0 {
		t.Errorf("a second RunDue at the same time fired %d", n)
	}
}

func TestRunnerCatchesUpOnce(t *testing.T) {
	r, clk, tg, _ := newRunner(t, utc(2026, 1, 1, 8, 0))
	mustPut(t, r, Entry{Name: "rate", Expression: "rate(5 minutes)"}) // starts now
	mustPut(t, r, Entry{Name: "quarter", Expression: "cron(0/15 * * * ? *)"})
	mustPut(t, r, Entry{Name: "weekly", Expression: "cron(0 9 ? * MON *)", Timezone: "America/New_York"})
	if n := runDue(t, r); n != 2 {
		t.Fatalf("first RunDue fired %d, want 2 (the rate at its start, the cron at 08:00)", n)
	}
	tg.take()

	// Down for three weeks and a bit: dozens of missed slots each.
	clk.Set(utc(2026, 1, 22, 11, 7))
	if n := runDue(t, r); n != 3 {
		t.Fatalf("RunDue after downtime fired %d, want 3 (once each)", n)
	}
	got := tg.take()
	slices.SortFunc(got, func(a, b firing) int { return strings.Compare(a.Name, b.Name) })
	want := []firing{
		{"quarter", utc(2026, 1, 22, 11, 0), ""},
		{"rate", utc(2026, 1, 22, 11, 5), ""},
		{"weekly", utc(2026, 1, 19, 14, 0), ""}, // Monday 19th, 09:00 EST
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("catch-up firings (-want +got):\n%s", diff)
	}
	for name, next := range map[string]time.Time{
		"quarter": utc(2026, 1, 22, 11, 15),
		"rate":    utc(2026, 1, 22, 11, 10),
		"weekly":  utc(2026, 1, 26, 14, 0),
	} {
		if st := state(t, r, name); !st.NextFire.Equal(next) {
			t.Errorf("%s: NextFire = %v, want %v", name, st.NextFire, next)
		}
	}
	if n := runDue(t, r); n != 0 {
		t.Errorf("RunDue again fired %d, want 0", n)
	}
}

func TestRunnerRetriesFailingFire(t *testing.T) {
	r, clk, tg, _ := newRunner(t, utc(2026, 3, 1, 0, 0))
	mustPut(t, r, Entry{Name: "good", Expression: "cron(0 12 * * ? *)"})
	mustPut(t, r, Entry{Name: "bad", Expression: "cron(0 12 * * ? *)"})
	boom := errors.New("queue unavailable")
	tg.setFail("bad", boom)

	clk.Set(utc(2026, 3, 1, 12, 0))
	n, err := r.RunDue(context.Background())
	if n != 1 {
		t.Errorf("RunDue fired %d, want 1", n)
	}
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `fire "bad" (scheduled 2026-03-01T12:00:00Z)`) {
		t.Errorf("RunDue error = %v, want the failure of \"bad\"", err)
	}
	if st := state(t, r, "bad"); !st.NextFire.Equal(utc(2026, 3, 1, 12, 0)) || !st.LastFired.IsZero() {
		t.Errorf("bad after a failed Fire: %+v, want still due at 12:00", st)
	}
	if st := state(t, r, "good"); !st.LastFired.Equal(utc(2026, 3, 1, 12, 0)) {
		t.Errorf("good after RunDue: %+v, want fired at 12:00", st)
	}

	// Still failing a minute later: retried, same slot.
	clk.Set(utc(2026, 3, 1, 12, 1))
	if _, err := r.RunDue(context.Background()); !errors.Is(err, boom) {
		t.Errorf("second RunDue error = %v, want the failure again", err)
	}
	// Recovered: fires the slot it missed, once.
	tg.setFail("bad", nil)
	clk.Set(utc(2026, 3, 1, 12, 2))
	if n := runDue(t, r); n != 1 {
		t.Errorf("RunDue after recovery fired %d, want 1", n)
	}
	want := []firing{
		{"bad", utc(2026, 3, 1, 12, 0), ""}, {"good", utc(2026, 3, 1, 12, 0), ""},
		{"bad", utc(2026, 3, 1, 12, 0), ""},
		{"bad", utc(2026, 3, 1, 12, 0), ""},
	}
	got := tg.take()
	slices.SortStableFunc(got[:2], func(a, b firing) int { return strings.Compare(a.Name, b.Name) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("firings (-want +got):\n%s", diff)
	}
	if st := state(t, r, "bad"); !st.NextFire.Equal(utc(2026, 3, 2, 12, 0)) {
		t.Errorf("bad after recovery: %+v, want next firing tomorrow", st)
	}
}

func TestRunnerDeletesFiredAt(t *testing.T) {
	r, clk, tg, _ := newRunner(t, utc(2026, 6, 1, 0, 0))
	ctx := context.Background()
	mustPut(t, r, Entry{Name: "once", Expression: "at(2026-06-01T09:30:00)", Timezone: "Europe/Berlin", Payload: json.RawMessage(`1`)})
	mustPut(t, r, Entry{Name: "late", Expression: "at(2026-05-31T23:00:00)"}) // already past: due at once
	if n := runDue(t, r); n != 1 {
		t.Fatalf("RunDue fired %d, want the past at() only", n)
	}
	clk.Set(utc(2026, 6, 1, 7, 30))
	if n := runDue(t, r); n != 1 {
		t.Fatalf("RunDue at 09:30 Berlin fired %d, want 1", n)
	}
	want := []firing{{"late", utc(2026, 5, 31, 23, 0), ""}, {"once", utc(2026, 6, 1, 7, 30), "1"}}
	if diff := cmp.Diff(want, tg.take()); diff != "" {
		t.Errorf("firings (-want +got):\n%s", diff)
	}
	for _, name := range []string{"once", "late"} {
		if _, _, err := r.Get(ctx, name); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) after firing: %v, want ErrNotFound", name, err)
		}
	}
	if _, ok, err := r.NextDue(ctx); ok || err != nil {
		t.Errorf("NextDue with no schedules = %v, %v; want none", ok, err)
	}

	// A failing at() is kept until it fires.
	mustPut(t, r, Entry{Name: "flaky", Expression: "at(2026-06-01T08:00:00)"})
	tg.setFail("flaky", errors.New("down"))
	clk.Set(utc(2026, 6, 1, 8, 0))
	if _, err := r.RunDue(ctx); err == nil {
		t.Fatal("RunDue with a failing Fire returned no error")
	}
	if _, _, err := r.Get(ctx, "flaky"); err != nil {
		t.Errorf("Get(flaky) after a failed firing: %v, want it kept", err)
	}
}

func TestRunnerStateSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	clk := clocktest.New(utc(2026, 1, 1, 0, 0))
	tg := &target{}

	store := openStore(t, path)
	r, err := NewRunner(context.Background(), store.DB(), Options{Now: clk.Now, Fire: tg.Fire})
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, r, Entry{Name: "hourly", Expression: "cron(0 * * * ? *)", Payload: json.RawMessage(`"x"`)})
	mustPut(t, r, Entry{Name: "rate", Expression: "rate(2 hours)", Start: utc(2025, 12, 31, 22, 30)})
	clk.Set(utc(2026, 1, 1, 1, 0))
	if n := runDue(t, r); n != 2 {
		t.Fatalf("RunDue fired %d, want 2", n)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	// The process is down until 05:40; a new one opens the same file.
	clk.Set(utc(2026, 1, 1, 5, 40))
	store = openStore(t, path)
	r, err = NewRunner(context.Background(), store.DB(), Options{Now: clk.Now, Fire: tg.Fire})
	if err != nil {
		t.Fatal(err)
	}
	e, st, err := r.Get(context.Background(), "rate")
	if err != nil {
		t.Fatal(err)
	}
	wantEntry := Entry{Name: "rate", Expression: "rate(2 hours)", Start: utc(2025, 12, 31, 22, 30)}
	if diff := cmp.Diff(wantEntry, e); diff != "" {
		t.Errorf("entry after restart (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(State{LastFired: utc(2026, 1, 1, 0, 30), NextFire: utc(2026, 1, 1, 2, 30)}, st); diff != "" {
		t.Errorf("state after restart (-want +got):\n%s", diff)
	}
	if n := runDue(t, r); n != 2 {
		t.Fatalf("RunDue after restart fired %d, want 2", n)
	}
	got := tg.take()
	slices.SortFunc(got, func(a, b firing) int { return a.ScheduledAt.Compare(b.ScheduledAt) })
	want := []firing{
		{"hourly", utc(2026, 1, 1, 1, 0), `"x"`}, {"rate", utc(2026, 1, 1, 0, 30), ""}, // before the restart
		{"rate", utc(2026, 1, 1, 4, 30), ""}, {"hourly", utc(2026, 1, 1, 5, 0), `"x"`}, // caught up once each
	}
	slices.SortFunc(want, func(a, b firing) int { return a.ScheduledAt.Compare(b.ScheduledAt) })
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("firings (-want +got):\n%s", diff)
	}
}

func TestRunnerPutReplaces(t *testing.T) {
	ctx := context.Background()
	r, clk, tg, _ := newRunner(t, utc(2026, 1, 1, 10, 30))
	mustPut(t, r, Entry{Name: "x", Expression: "cron(0 * * * ? *)", Payload: json.RawMessage(`"v1"`)})
	if st := state(t, r, "x"); !st.NextFire.Equal(utc(2026, 1, 1, 11, 0)) {
		t.Fatalf("NextFire = %v, want 11:00", st.NextFire)
	}

	// The same times again (a start-up re-registration) keep the missed
	// 11:00 firing due.
	clk.Set(utc(2026, 1, 1, 11, 20))
	mustPut(t, r, Entry{Name: "x", Expression: "cron(0 * * * ? *)", Payload: json.RawMessage(`"v1"`)})
	mustPut(t, r, Entry{Name: "x", Expression: "cron(0 * * * ? *)", Payload: json.RawMessage(`"v2"`)})
	if n := runDue(t, r); n != 1 {
		t.Fatalf("RunDue fired %d, want the missed 11:00", n)
	}
	if diff := cmp.Diff([]firing{{"x", utc(2026, 1, 1, 11, 0), `"v2"`}}, tg.take()); diff != "" {
		t.Errorf("firings (-want +got):\n%s", diff)
	}

	// New times: the next firing is the first from now on.
	clk.Set(utc(2026, 1, 1, 13, 10))
	mustPut(t, r, Entry{Name: "x", Expression: "cron(30 * * * ? *)", Timezone: "Asia/Kathmandu"})
	e, st, err := r.Get(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Entry{Name: "x", Expression: "cron(30 * * * ? *)", Timezone: "Asia/Kathmandu", Start: utc(2026, 1, 1, 10, 30)}, e); diff != "" {
		t.Errorf("replaced entry (-want +got):\n%s", diff)
	}
	// Kathmandu is UTC+05:45: minute 30 there is minute 45 in UTC.
	if diff := cmp.Diff(State{LastFired: utc(2026, 1, 1, 11, 0), NextFire: utc(2026, 1, 1, 13, 45)}, st); diff != "" {
		t.Errorf("replaced state (-want +got):\n%s", diff)
	}
	if n := runDue(t, r); n != 0 {
		t.Errorf("RunDue after replacing fired %d, want 0", n)
	}
}

func TestRunnerDeleteStopsFiring(t *testing.T) {
	ctx := context.Background()
	r, clk, tg, _ := newRunner(t, utc(2026, 1, 1, 0, 0))
	mustPut(t, r, Entry{Name: "gone", Expression: "rate(1 minute)", Start: utc(2026, 1, 1, 0, 1)})
	mustPut(t, r, Entry{Name: "kept", Expression: "rate(1 minute)", Start: utc(2026, 1, 1, 0, 1)})
	if err := r.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	clk.Set(utc(2026, 1, 1, 0, 5))
	if n := runDue(t, r); n != 1 {
		t.Errorf("RunDue fired %d, want 1", n)
	}
	if diff := cmp.Diff([]firing{{"kept", utc(2026, 1, 1, 0, 5), ""}}, tg.take()); diff != "" {
		t.Errorf("firings (-want +got):\n%s", diff)
	}
	if err := r.Delete(ctx, "gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete: %v, want ErrNotFound", err)
	}
}

func TestRunnerPutValidates(t *testing.T) {
	r, _, _, _ := newRunner(t, utc(2026, 1, 1, 0, 0))
	tests := []struct {
		e    Entry
		want string
	}{
		{Entry{Name: "a", Expression: "cron(0 25 * * ? *)"}, `localcron: put "a": cron(0 25 * * ? *): hours field: "25" is out of range 0-23`},
		{Entry{Name: "a", Expression: "rate(0 minutes)"}, `localcron: put "a": rate(0 minutes): value must be ≥ 1`},
		{Entry{Name: "a", Expression: "cron(0 0 * * ? *)", Timezone: "Mars/Base"}, `localcron: put "a": unknown timezone "Mars/Base"`},
		{Entry{Name: "a", Expression: "rate(1 hour)", Payload: json.RawMessage(`{`)}, `localcron: put "a": payload is not valid JSON`},
		{Entry{Expression: "rate(1 hour)"}, `localcron: put: empty schedule name`},
		{Entry{Name: "a", Expression: "rate(1 hour)", Start: time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC)}, `localcron: put "a": start: -0005-01-01T00:00:00Z is outside years 0-9999`},
	}
	for _, tt := range tests {
		err := r.Put(context.Background(), tt.e)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Put(%+v) = %v, want %q", tt.e, err, tt.want)
		}
	}
	var ee *ExprError
	if err := r.Put(context.Background(), Entry{Name: "a", Expression: "cron(0 0 ? * 3#9 *)"}); !errors.As(err, &ee) || ee.Token != "3#9" {
		t.Errorf("Put error %v: want an *ExprError naming 3#9", err)
	}
	if _, _, err := r.Get(context.Background(), "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after failed Puts: %v, want ErrNotFound", err)
	}
}

// TestRunnerFireCallsBack checks that Fire may use the same single-connection
// pool (the trigger writes the post, and may Put or Delete schedules).
func TestRunnerFireCallsBack(t *testing.T) {
	db := openStore(t, filepath.Join(t.TempDir(), "x.db")).DB()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	clk := clocktest.New(utc(2026, 1, 1, 0, 0))
	var r *Runner
	fire := func(ctx context.Context, name string, at time.Time, _ json.RawMessage) error {
		if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS fired (name TEXT)`); err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO fired VALUES (?)`, name); err != nil {
			return err
		}
		if _, _, err := r.Get(ctx, name); err != nil {
			return err
		}
		return r.Put(ctx, Entry{Name: name + "-followup", Expression: "at(2026-01-02T00:00:00)"})
	}
	var err error
	if r, err = NewRunner(ctx, db, Options{Now: clk.Now, Fire: fire}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		mustPut(t, r, Entry{Name: fmt.Sprint("s", i), Expression: "rate(1 day)"})
	}
	n, err := r.RunDue(ctx)
	if n != 3 || err != nil {
		t.Fatalf("RunDue = %d, %v; want 3 firings", n, err)
	}
	var count int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM localcron_schedules WHERE name LIKE '%-followup'`).Scan(&count); err != nil || count != 3 {
		t.Errorf("follow-up schedules = %d, %v; want 3", count, err)
	}
}

func TestNewRunnerNeedsFire(t *testing.T) {
	db := openStore(t, filepath.Join(t.TempDir(), "x.db")).DB()
	if _, err := NewRunner(context.Background(), db, Options{}); err == nil {
		t.Error("NewRunner without Fire: no error")
	}
	if _, err := NewRunner(context.Background(), nil, Options{Fire: (&target{}).Fire}); err == nil {
		t.Error("NewRunner without a database: no error")
	}
}

// realTarget records when each firing arrived, on the real clock.
type realTarget struct {
	mu      sync.Mutex
	arrived map[string][]time.Time
	fails   map[string]int // failures left per name
	signal  chan string
}

func newRealTarget() *realTarget {
	return &realTarget{arrived: map[string][]time.Time{}, fails: map[string]int{}, signal: make(chan string, 100)}
}

func (tg *realTarget) Fire(_ context.Context, name string, _ time.Time, _ json.RawMessage) error {
	tg.mu.Lock()
	tg.arrived[name] = append(tg.arrived[name], time.Now())
	failing := tg.fails[name] > 0
	if failing {
		tg.fails[name]--
	}
	tg.mu.Unlock()
	tg.signal <- name
	if failing {
		return errors.New("target down")
	}
	return nil
}

func (tg *realTarget) wait(t *testing.T, name string, d time.Duration) time.Time {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case got := <-tg.signal:
			if got == name {
				tg.mu.Lock()
				defer tg.mu.Unlock()
				return tg.arrived[name][len(tg.arrived[name])-1]
			}
		case <-deadline:
			t.Fatalf("no firing of %q within %v", name, d)
		}
	}
}

// startRun runs r.Run until the test ends and checks that it stops.
func startRun(t *testing.T, r *Runner) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not stop after cancel")
		}
	})
}

func TestRunWakesForEarlierPut(t *testing.T) {
	db := openStore(t, filepath.Join(t.TempDir(), "x.db")).DB()
	tg := newRealTarget()
	r, err := NewRunner(context.Background(), db, Options{Fire: tg.Fire, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, r, Entry{Name: "far", Expression: "rate(1 day)", Start: time.Now().Add(time.Hour)})
	startRun(t, r)
	time.Sleep(50 * time.Millisecond) // Run is asleep until "far", at most a minute

	due := time.Now().Add(150 * time.Millisecond)
	mustPut(t, r, Entry{Name: "soon", Expression: "rate(1 day)", Start: due})
	got := tg.wait(t, "soon", 5*time.Second)
	if late := got.Sub(due); late < 0 || late > 250*time.Millisecond {
		t.Errorf("soon fired %v after its time, want within 250ms", late)
	}
}

func TestRunRetriesWithBackoff(t *testing.T) {
	db := openStore(t, filepath.Join(t.TempDir(), "x.db")).DB()
	tg := newRealTarget()
	tg.fails["flaky"] = 2
	r, err := NewRunner(context.Background(), db, Options{Fire: tg.Fire, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, r, Entry{Name: "flaky", Expression: "rate(1 day)"}) // starts now
	e, _, err := r.Get(context.Background(), "flaky")
	if err != nil {
		t.Fatal(err)
	}
	start := e.Start
	steady := start.Add(200 * time.Millisecond)
	mustPut(t, r, Entry{Name: "steady", Expression: "rate(1 day)", Start: steady})
	startRun(t, r)

	first := tg.wait(t, "flaky", 5*time.Second)
	// The failing schedule does not delay the other one.
	if late := tg.wait(t, "steady", 5*time.Second).Sub(steady); late > 250*time.Millisecond {
		t.Errorf("steady fired %v late while flaky was failing", late)
	}
	second := tg.wait(t, "flaky", 5*time.Second)
	third := tg.wait(t, "flaky", 5*time.Second)
	// Backoff: 0.5 s then 1 s, each less up to a fifth.
	if gap := second.Sub(first); gap < 400*time.Millisecond || gap > 2*time.Second {
		t.Errorf("first retry after %v, want about 0.5s", gap)
	}
	if gap := third.Sub(second); gap < 800*time.Millisecond || gap > 3*time.Second {
		t.Errorf("second retry after %v, want about 1s", gap)
	}
	// Succeeded on the third try: recorded, next firing tomorrow.
	deadline := time.Now().Add(2 * time.Second)
	for {
		_, st, err := r.Get(context.Background(), "flaky")
		if err != nil {
			t.Fatal(err)
		}
		if st.NextFire.Equal(start.Add(24 * time.Hour)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("flaky state %+v, want next firing a day after its start", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case name := <-tg.signal:
		t.Errorf("unexpected extra firing of %q", name)
	case <-time.After(100 * time.Millisecond):
	}
}

// BenchmarkRunLateness measures, on the real clock, the delay between a
// schedule's time and its Fire while Run is running and schedules, Put
// 20 ms ahead, fall due every 2 ms.
func BenchmarkRunLateness(b *testing.B) {
	db := openStore(b, filepath.Join(b.TempDir(), "x.db")).DB()
	var (
		mu       sync.Mutex
		lateness []time.Duration
	)
	all := make(chan struct{})
	n := b.N
	fire := func(_ context.Context, _ string, at time.Time, _ json.RawMessage) error {
		late := time.Since(at)
		mu.Lock()
		defer mu.Unlock()
		lateness = append(lateness, late)
		if len(lateness) == n {
			close(all)
		}
		return nil
	}
	r, err := NewRunner(context.Background(), db, Options{Fire: fire, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	b.ResetTimer()
	for i := range n {
		if err := r.Put(ctx, Entry{Name: fmt.Sprint("s", i), Expression: "rate(1 hour)", Start: time.Now().Add(20 * time.Millisecond)}); err != nil {
			b.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		b.Fatalf("only %d of %d schedules fired", len(lateness), n)
	}
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	slices.Sort(lateness)
	pct := func(p float64) float64 {
		return float64(lateness[min(len(lateness)-1, int(p*float64(len(lateness))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-lateness-ms")
	b.ReportMetric(pct(0.99), "p99-lateness-ms")
	b.ReportMetric(pct(1), "max-lateness-ms")
}

// TestRunnerPutDuringFire checks that a schedule replaced while its Fire
// runs keeps the replacement: the firing is not recorded over it.
func TestRunnerPutDuringFire(t *testing.T) {
	db := openStore(t, filepath.Join(t.TempDir(), "x.db")).DB()
	clk := clocktest.New(utc(2026, 1, 1, 12, 0))
	var r *Runner
	fire := func(ctx context.Context, name string, _ time.Time, _ json.RawMessage) error {
		switch name {
		case "cron":
			return r.Put(ctx, Entry{Name: name, Expression: "cron(0 18 * * ? *)"})
		case "once":
			return r.Put(ctx, Entry{Name: name, Expression: "at(2026-01-05T00:00:00)"})
		}
		return nil
	}
	var err error
	if r, err = NewRunner(context.Background(), db, Options{Now: clk.Now, Fire: fire}); err != nil {
		t.Fatal(err)
	}
	mustPut(t, r, Entry{Name: "cron", Expression: "cron(0 12 * * ? *)"})
	mustPut(t, r, Entry{Name: "once", Expression: "at(2026-01-01T12:00:00)"})
	if n := runDue(t, r); n != 2 {
		t.Fatalf("RunDue fired %d, want 2", n)
	}
	if diff := cmp.Diff(State{NextFire: utc(2026, 1, 1, 18, 0)}, state(t, r, "cron")); diff != "" {
		t.Errorf("cron replaced during Fire (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(State{NextFire: utc(2026, 1, 5, 0, 0)}, state(t, r, "once")); diff != "" {
		t.Errorf("at() replaced during Fire, want it kept (-want +got):\n%s", diff)
	}
}

// TestRunnerPutTx checks that a schedule written with PutTx is part of the
// caller's transaction: gone with a rollback, as is the row written with
// it, and firing once committed.
func TestRunnerPutTx(t *testing.T) {
	for _, tt := range []struct {
		name   string
		commit bool
	}{
		{"rolled back", false},
		{"committed", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			r, clk, tg, db := newRunner(t, utc(2026, 1, 1, 0, 0))
			if _, err := db.ExecContext(ctx, `CREATE TABLE app_rows (id TEXT PRIMARY KEY)`); err != nil {
				t.Fatal(err)
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO app_rows VALUES ('p1')`); err != nil {
				t.Fatal(err)
			}
			e := Entry{Name: "post/p1", Expression: "at(2026-01-01T09:00:00)", Payload: json.RawMessage(`{"post":"p1"}`)}
			if err := r.PutTx(ctx, tx, e); err != nil {
				t.Fatalf("PutTx: %v", err)
			}
			if tt.commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			r.Wake()

			want := 0 // rows, schedules and firings
			var wantFirings []firing
			if tt.commit {
				want = 1
				wantFirings = []firing{{"post/p1", utc(2026, 1, 1, 9, 0), `{"post":"p1"}`}}
			}
			var rows int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM app_rows`).Scan(&rows); err != nil {
				t.Fatal(err)
			}
			if schedules := len(scheduleNames(t, db)); rows != want || schedules != want {
				t.Errorf("after the transaction: %d rows, %d schedules; want %d of each", rows, schedules, want)
			}
			clk.Set(utc(2026, 1, 1, 9, 0))
			if n := runDue(t, r); n != want {
				t.Errorf("RunDue fired %d, want %d", n, want)
			}
			if diff := cmp.Diff(wantFirings, tg.take()); diff != "" {
				t.Errorf("firings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunnerPutTxValidates checks that PutTx refuses what Put refuses,
// with the same error, before writing anything.
func TestRunnerPutTxValidates(t *testing.T) {
	ctx := context.Background()
	r, _, _, db := newRunner(t, utc(2026, 1, 1, 0, 0))
	for _, e := range []Entry{
		{Name: "a", Expression: "cron(0 25 * * ? *)"},
		{Name: "a", Expression: "cron(0 0 * * ? *)", Timezone: "Mars/Base"},
		{Name: "a", Expression: "rate(1 hour)", Payload: json.RawMessage(`{`)},
		{Expression: "rate(1 hour)"},
		{Name: "a", Expression: "rate(1 hour)", Start: time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		putErr := r.Put(ctx, e)
		var txErr error
		err := r.write(ctx, func(tx *sql.Tx) error {
			txErr = r.PutTx(ctx, tx, e)
			return nil // commit: whatever PutTx wrote would stay
		})
		if err != nil {
			t.Fatal(err)
		}
		if putErr == nil || txErr == nil || putErr.Error() != txErr.Error() {
			t.Errorf("Entry %+v: Put = %v, PutTx = %v; want the same error", e, putErr, txErr)
		}
	}
	if names := scheduleNames(t, db); len(names) != 0 {
		t.Errorf("schedules after failed PutTx calls: %q, want none", names)
	}
	if err := r.PutTx(ctx, nil, Entry{Name: "a", Expression: "rate(1 hour)"}); err == nil {
		t.Error("PutTx without a transaction: no error")
	}
}

// TestRunWakeSeesOtherProcess checks that Wake makes Run read a schedule
// that another process (another connection pool on the file) wrote, rather
// than at the end of its minute-long sleep.
func TestRunWakeSeesOtherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	tg := newRealTarget()
	r, err := NewRunner(context.Background(), openStore(t, path).DB(), Options{Fire: tg.Fire, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewRunner(context.Background(), openStore(t, path).DB(), Options{Fire: tg.Fire, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, r, Entry{Name: "far", Expression: "rate(1 day)", Start: time.Now().Add(time.Hour)})
	startRun(t, r)
	time.Sleep(50 * time.Millisecond) // Run is asleep until "far", at most a minute

	due := time.Now().Add(100 * time.Millisecond)
	mustPut(t, other, Entry{Name: "soon", Expression: "rate(1 day)", Start: due})
	r.Wake()
	got := tg.wait(t, "soon", 5*time.Second)
	if late := got.Sub(due); late < 0 || late > 250*time.Millisecond {
		t.Errorf("soon fired %v after its time, want within 250ms", late)
	}
}

// TestRunnerRunDueManyDue checks RunDue across several batches of due
// schedules: each fires exactly once, a failing one included, and none is
// skipped.
func TestRunnerRunDueManyDue(t *testing.T) {
	ctx := context.Background()
	r, clk, tg, _ := newRunner(t, utc(2026, 1, 1, 0, 0))
	total := 2*dueBatch + 10
	err := r.write(ctx, func(tx *sql.Tx) error {
		for i := range total {
			// Pairs share a firing time, so batches end inside a tie.
			at := utc(2026, 1, 1, 0, 0).Add(time.Duration(i/2) * time.Second).Format("2006-01-02T15:04:05")
			if err := r.PutTx(ctx, tx, Entry{Name: fmt.Sprintf("s%04d", i), Expression: "at(" + at + ")"}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("down")
	tg.setFail("s0007", boom)
	clk.Set(utc(2026, 1, 2, 0, 0))
	n, err := r.RunDue(ctx)
	if !errors.Is(err, boom) || n != total-1 {
		t.Errorf("RunDue = %d, %v; want %d and the failure of s0007", n, err, total-1)
	}
	count := map[string]int{}
	for _, f := range tg.take() {
		count[f.Name]++
	}
	for i := range total {
		if name := fmt.Sprintf("s%04d", i); count[name] != 1 {
			t.Errorf("%s fired %d times, want 1", name, count[name])
		}
	}
	tg.setFail("s0007", nil)
	if n := runDue(t, r); n != 1 {
		t.Errorf("second RunDue fired %d, want the failed one", n)
	}
}
