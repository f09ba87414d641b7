package localcron

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"sync"
	"time"

	"oncepost/shared/sqlitetx"
	"oncepost/shared/sqltime"
)

// ErrNotFound is returned (wrapped) by Get and Delete for a name that has
// no schedule.
var ErrNotFound = errors.New("schedule not found")

// maxNameLen bounds schedule names.
const maxNameLen = 512

// Loop timings of Run.
const (
	// maxSleep caps Run's sleep, so that a wall-clock jump or a schedule
	// written by another process is noticed within it.
	maxSleep = time.Minute
	// minBackoff and maxBackoff bound the wait before a schedule whose Fire
	// failed is tried again, and before Run retries after a database error.
	minBackoff = 500 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// Entry is a schedule.
type Entry struct {
	// Name identifies the schedule.
	Name string
	// Expression is an at, rate or cron expression (see Parse).
	Expression string
	// Timezone is the IANA zone the expression is evaluated in; "" is UTC.
	Timezone string
	// Start anchors a rate and is a cron's StartDate; the zero value means
	// when the schedule was first Put.
	Start time.Time
	// Payload is handed to Fire; if set it must be JSON.
	Payload json.RawMessage
}

// State is where a schedule stands.
type State struct {
	// LastFired is the scheduled time of the last successful firing; zero
	// if it never fired.
	LastFired time.Time
	// NextFire is the next firing; zero if there is none. It is in the past
	// while a firing is due or its Fire keeps failing.
	NextFire time.Time
}

// Options configure a Runner.
type Options struct {
	// Now is the clock deciding what is due; default time.Now. Run's
	// timer runs on the real clock.
	Now func() time.Time
	// Fire is the schedules' target, called for every firing; required.
	// scheduledAt is the firing delivered (after downtime, the latest one
	// missed). Fire may use the same database (the Runner holds no
	// transaction or open rows while it runs) and Put, Get or Delete
	// schedules, but must not call RunDue.
	Fire func(ctx context.Context, name string, scheduledAt time.Time, payload json.RawMessage) error
	// Logger receives Run's errors; default slog.Default().
	Logger *slog.Logger
}

// Runner fires persisted schedules. It is safe for concurrent use.
type Runner struct {
	db   *sql.DB
	now  func() time.Time
	fire func(ctx context.Context, name string, scheduledAt time.Time, payload json.RawMessage) error
	log  *slog.Logger

	wake chan struct{} // Put and Delete poke Run
	due  sync.Mutex    // serialises firing, so concurrent RunDue calls do not fire twice

	mu      sync.Mutex
	backoff map[string]retry // Run's failing schedules
}

// retry is a failing schedule's backoff in Run.
type retry struct {
	failures int
	until    time.Time
}

// schema is created idempotently by NewRunner. next_fire is ” when the
// schedule has no further firing; the partial index holds the others.
var schema = []string{
	`CREATE TABLE IF NOT EXISTS localcron_schedules (
		name       TEXT PRIMARY KEY,
		expression TEXT NOT NULL,
		timezone   TEXT NOT NULL,
		start      TEXT NOT NULL,
		payload    BLOB NOT NULL,
		version    INTEGER NOT NULL,
		last_fired TEXT NOT NULL,
		next_fire  TEXT NOT NULL,
		updated_at TEXT NOT NULL
	) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS localcron_schedules_next ON localcron_schedules (next_fire) WHERE next_fire <> ''`,
}

// NewRunner creates the Runner's table in db if needed. db is the
// project's SQLite write pool (sqlitestore.Store.DB): one connection,
// BEGIN IMMEDIATE transactions.
func NewRunner(ctx context.Context, db *sql.DB, opts Options) (*Runner, error) {
	if db == nil {
		return nil, errors.New("localcron: new runner: no database")
	}
	if opts.Fire == nil {
		return nil, errors.New("localcron: new runner: Options.Fire is required")
	}
	r := &Runner{db: db, now: opts.Now, fire: opts.Fire, log: opts.Logger, wake: make(chan struct{}, 1), backoff: map[string]retry{}}
	if r.now == nil {
		r.now = time.Now
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	for _, stmt := range schema {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return nil, fmt.Errorf("localcron: create schema: %w", err)
		}
	}
	return r, nil
}

// Put creates or replaces the schedule e.Name after validating its
// expression and time zone, and wakes Run. Replacing a schedule with one
// that fires at the same times (same expression, zone and start) keeps its
// state, so a missed firing is still caught up; otherwise the next firing
// is the first one from now on (never the one already fired). An at() in
// the past is due at once.
func (r *Runner) Put(ctx context.Context, e Entry) error {
	if err := checkName(e.Name); err != nil {
		return fmt.Errorf("localcron: put: %w", err)
	}
	if len(e.Payload) > 0 && !json.Valid(e.Payload) {
		return fmt.Errorf("localcron: put %q: payload is not valid JSON", e.Name)
	}
	now := r.now()
	if _, err := Parse(e.Expression, e.Timezone, now); err != nil {
		return fmt.Errorf("localcron: put %q: %w", e.Name, err)
	}
	err := r.write(ctx, func(tx *sql.Tx) error {
		old, found, err := loadRow(ctx, tx, e.Name)
		if err != nil {
			return err
		}
		start := e.Start
		if start.IsZero() {
			start = now
			if found {
				start = old.Start
			}
		}
		if err := checkTime(start); err != nil {
			return fmt.Errorf("start: %w", err)
		}
		sameTimes := found && old.Expression == e.Expression && old.Timezone == e.Timezone && old.Start.Equal(start)
		if sameTimes && bytes.Equal(old.Payload, e.Payload) {
			return nil // nothing changed; keep the version too
		}
		nr := row{Entry: e, version: 1}
		nr.Start = start
		if found {
			nr.version = old.version + 1
			nr.LastFired = old.LastFired
		}
		if sameTimes {
			nr.NextFire = old.NextFire
		} else {
			s, err := Parse(e.Expression, e.Timezone, start)
			if err != nil {
				return err
			}
			nr.NextFire = firstFiring(s, now, nr.LastFired)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO localcron_schedules
			(name, expression, timezone, start, payload, version, last_fired, next_fire, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET expression = excluded.expression, timezone = excluded.timezone,
				start = excluded.start, payload = excluded.payload, version = excluded.version,
				last_fired = excluded.last_fired, next_fire = excluded.next_fire, updated_at = excluded.updated_at`,
			nr.Name, nr.Expression, nr.Timezone, sqltime.Encode(nr.Start), append([]byte{}, nr.Payload...), nr.version,
			sqltime.Encode(nr.LastFired), sqltime.Encode(nr.NextFire), sqltime.Encode(now))
		return err
	})
	if err != nil {
		return fmt.Errorf("localcron: put %q: %w", e.Name, err)
	}
	r.forget(e.Name)
	r.poke()
	return nil
}

// firstFiring is a new or changed schedule's next firing: the first at or
// after now, and after the last firing; for at(), its time even if past.
func firstFiring(s Schedule, now, lastFired time.Time) time.Time {
	if at, ok := s.(atSchedule); ok {
		return at.at
	}
	from := now.Add(-time.Nanosecond)
	if lastFired.After(from) {
		from = lastFired
	}
	next, ok := s.Next(from)
	if !ok || checkTime(next) != nil {
		return time.Time{}
	}
	return next
}

// Delete removes a schedule and wakes Run.
func (r *Runner) Delete(ctx context.Context, name string) error {
	res, err := r.db.ExecContext(ctx, `DELETE FROM localcron_schedules WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("localcron: delete %q: %w", name, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("localcron: delete %q: %w", name, err)
	} else if n == 0 {
		return fmt.Errorf("localcron: delete %q: %w", name, ErrNotFound)
	}
	r.forget(name)
	r.poke()
	return nil
}

// Get returns a schedule and its state.
func (r *Runner) Get(ctx context.Context, name string) (Entry, State, error) {
	row, found, err := loadRow(ctx, r.db, name)
	if err != nil {
		return Entry{}, State{}, fmt.Errorf("localcron: get %q: %w", name, err)
	}
	if !found {
		return Entry{}, State{}, fmt.Errorf("localcron: get %q: %w", name, ErrNotFound)
	}
	return row.Entry, row.State, nil
}

// NextDue returns the earliest next firing of all schedules, and false if
// no schedule will fire again. It is in the past while a firing is due.
func (r *Runner) NextDue(ctx context.Context) (time.Time, bool, error) {
	var s string
	err := r.db.QueryRowContext(ctx, `SELECT next_fire FROM localcron_schedules WHERE next_fire <> '' ORDER BY next_fire LIMIT 1`).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("localcron: next due: %w", err)
	}
	t, err := sqltime.Decode(s)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("localcron: next due: %w", err)
	}
	return t, true, nil
}

// RunDue fires every schedule whose next firing is not after Now(). Each
// fires at most once per call, with scheduledAt its latest firing not
// after Now() (a schedule that missed several firings during downtime is
// caught up once), and then its next firing moves past Now(). Fire is
// called first and the firing recorded after, so a crash in between fires
// again. A failing Fire leaves its schedule due, to be retried by the next
// call; the others still fire, and the errors are returned joined. A
// one-time at() schedule is deleted once it fired.
func (r *Runner) RunDue(ctx context.Context) (int, error) {
	fired, errs, err := r.runDue(ctx, false)
	if err != nil {
		return 0, err
	}
	return fired, errs
}

// runDue is RunDue. err reports that the due schedules could not be read;
// errs joins the failures of single schedules. With backoff (Run), it skips
// schedules whose retry time has not come and puts failing ones in backoff.
func (r *Runner) runDue(ctx context.Context, backoff bool) (fired int, errs, err error) {
	r.due.Lock()
	defer r.due.Unlock()
	now := r.now()
	due, err := r.loadDue(ctx, now)
	if err != nil {
		return 0, nil, err
	}
	if backoff {
		r.pruneBackoff(due)
	}
	var all []error
	fail := func(name string, err error) {
		all = append(all, err)
		if backoff {
			r.failed(name, now)
		}
	}
	for _, d := range due {
		if err := ctx.Err(); err != nil {
			all = append(all, fmt.Errorf("localcron: run due: %w", err))
			break
		}
		if backoff && r.waiting(d.Name, now) {
			continue
		}
		s, err := Parse(d.Expression, d.Timezone, d.Start)
		if err != nil {
			// Stored expressions were valid when Put; a zone can vanish
			// from the zone database, though.
			fail(d.Name, fmt.Errorf("localcron: schedule %q: %w", d.Name, err))
			continue
		}
		at := latestFiring(s, d.NextFire, now)
		if err := r.fire(ctx, d.Name, at, d.Payload); err != nil {
			fail(d.Name, fmt.Errorf("localcron: fire %q (scheduled %s): %w", d.Name, at.Format(time.RFC3339), err))
			continue
		}
		fired++
		if err := r.record(ctx, d, s, at, now); err != nil {
			// Still due: it fires again (at least once), after a backoff in Run.
			fail(d.Name, fmt.Errorf("localcron: record firing of %q: %w", d.Name, err))
			continue
		}
		if backoff {
			r.forget(d.Name)
		}
	}
	return fired, errors.Join(all...), nil
}

// loadDue reads every schedule due at now. The rows are closed before any
// Fire runs: the write pool has one connection.
func (r *Runner) loadDue(ctx context.Context, now time.Time) ([]row, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT `+rowColumns+` FROM localcron_schedules
		WHERE next_fire <> '' AND next_fire <= ? ORDER BY next_fire, name`, sqltime.Encode(now))
	if err != nil {
		return nil, fmt.Errorf("localcron: load due schedules: %w", err)
	}
	defer rows.Close()
	var due []row
	for rows.Next() {
		d, err := scanRow(rows)
		if err != nil {
			return nil, fmt.Errorf("localcron: load due schedules: %w", err)
		}
		due = append(due, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("localcron: load due schedules: %w", err)
	}
	return due, nil
}

// latestFiring is the latest firing of s in [first, now], where first (the
// stored next firing, ≤ now) is one. A binary search on time: Next(t) ≤ now
// holds for t before the latest firing and fails from it on, so about 60
// calls of Next find it however many firings were missed.
func latestFiring(s Schedule, first, now time.Time) time.Time {
	lo := first.Add(-time.Nanosecond)
	if t, ok := s.Next(lo); !ok || t.After(now) {
		return first // first is not a firing of s (the zone data changed): deliver it as stored
	}
	hi := now // Next(now) > now
	for hi.Sub(lo) > time.Nanosecond {
		mid := lo.Add(hi.Sub(lo) / 2)
		if t, ok := s.Next(mid); ok && !t.After(now) {
			lo = mid
		} else {
			hi = mid
		}
	}
	t, _ := s.Next(lo)
	return t
}

// record stores a successful firing: an at() schedule is deleted, another
// one moves to its first firing after now. Both only if the schedule was
// not replaced while Fire ran.
func (r *Runner) record(ctx context.Context, d row, s Schedule, at, now time.Time) error {
	if _, ok := s.(atSchedule); ok {
		_, err := r.db.ExecContext(ctx, `DELETE FROM localcron_schedules WHERE name = ? AND version = ?`, d.Name, d.version)
		return err
	}
	next, ok := s.Next(now)
	if !ok || checkTime(next) != nil {
		next = time.Time{}
	}
	_, err := r.db.ExecContext(ctx, `UPDATE localcron_schedules SET last_fired = ?, next_fire = ?, updated_at = ?
		WHERE name = ? AND version = ? AND next_fire = ?`,
		sqltime.Encode(at), sqltime.Encode(next), sqltime.Encode(now), d.Name, d.version, sqltime.Encode(d.NextFire))
	return err
}

// Run fires schedules until ctx is done, then returns nil: RunDue, then
// sleep on the real clock until the earliest next firing (at most a
// minute), or until Put or Delete changes the schedules. A schedule whose
// Fire fails is logged and retried after a backoff (0.5 s doubling to
// 30 s, with jitter) while the others keep their times; database errors
// are logged and retried likewise.
func (r *Runner) Run(ctx context.Context) error {
	dbFailures := 0
	for {
		fired, errs, err := r.runDue(ctx, true)
		if ctx.Err() != nil {
			return nil
		}
		if errs != nil {
			r.log.ErrorContext(ctx, "localcron: firing schedules", "fired", fired, "err", errs)
		}
		var wait time.Duration
		if err == nil {
			wait, err = r.sleepFor(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			dbFailures++
			wait = backoffFor(dbFailures)
			r.log.ErrorContext(ctx, "localcron: reading schedules", "retry_in", wait, "err", err)
		} else {
			dbFailures = 0
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-r.wake:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// sleepFor is how long Run may sleep: until the earliest next firing of a
// schedule not in backoff, or the earliest end of a backoff, at most
// maxSleep.
func (r *Runner) sleepFor(ctx context.Context) (time.Duration, error) {
	r.mu.Lock()
	waiting := make(map[string]time.Time, len(r.backoff))
	for name, b := range r.backoff {
		waiting[name] = b.until
	}
	r.mu.Unlock()

	now := r.now()
	wake := now.Add(maxSleep)
	for _, until := range waiting {
		if until.Before(wake) {
			wake = until
		}
	}
	// The earliest schedules, skipping those in backoff: at most
	// len(waiting)+1 rows.
	rows, err := r.db.QueryContext(ctx, `SELECT name, next_fire FROM localcron_schedules
		WHERE next_fire <> '' ORDER BY next_fire, name LIMIT ?`, len(waiting)+1)
	if err != nil {
		return 0, fmt.Errorf("localcron: next firing: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, next string
		if err := rows.Scan(&name, &next); err != nil {
			return 0, fmt.Errorf("localcron: next firing: %w", err)
		}
		if _, ok := waiting[name]; ok {
			continue
		}
		t, err := sqltime.Decode(next)
		if err != nil {
			return 0, fmt.Errorf("localcron: next firing of %q: %w", name, err)
		}
		if t.Before(wake) {
			wake = t
		}
		break
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("localcron: next firing: %w", err)
	}
	return max(0, wake.Sub(now)), nil
}

// backoffFor is the wait after n consecutive failures: minBackoff doubling
// up to maxBackoff, less up to a fifth at random so retries spread out.
func backoffFor(n int) time.Duration {
	d := maxBackoff
	if n < 10 {
		d = min(maxBackoff, minBackoff<<(n-1))
	}
	return d - time.Duration(mathrand.Int64N(int64(d/5)+1))
}

// failed starts or extends the backoff of a schedule whose Fire failed.
func (r *Runner) failed(name string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.backoff[name]
	b.failures++
	b.until = now.Add(backoffFor(b.failures))
	r.backoff[name] = b
}

// waiting reports whether a schedule is in backoff at now.
func (r *Runner) waiting(name string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.backoff[name]
	return ok && now.Before(b.until)
}

// forget ends a schedule's backoff (it fired, or it was replaced or deleted).
func (r *Runner) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.backoff, name)
}

// pruneBackoff drops the backoff of schedules that are no longer due.
func (r *Runner) pruneBackoff(due []row) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.backoff) == 0 {
		return
	}
	keep := make(map[string]bool, len(due))
	for _, d := range due {
		keep[d.Name] = true
	}
	for name := range r.backoff {
		if !keep[name] {
			delete(r.backoff, name)
		}
	}
}

// poke wakes Run without blocking.
func (r *Runner) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// write runs fn in a write transaction (see sqlitetx.Write).
func (r *Runner) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return sqlitetx.Write(ctx, r.db, fn)
}

// row is a stored schedule.
type row struct {
	Entry
	State
	version int64
}

const rowColumns = `name, expression, timezone, start, payload, version, last_fired, next_fire`

// queryer is *sql.DB or *sql.Tx.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// loadRow reads one schedule.
func loadRow(ctx context.Context, q queryer, name string) (row, bool, error) {
	d, err := scanRow(q.QueryRowContext(ctx, `SELECT `+rowColumns+` FROM localcron_schedules WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return row{}, false, nil
	}
	if err != nil {
		return row{}, false, err
	}
	return d, true, nil
}

// scanRow reads the columns rowColumns.
func scanRow(s interface{ Scan(dest ...any) error }) (row, error) {
	var (
		d                          row
		start, lastFired, nextFire string
		payload                    []byte
	)
	if err := s.Scan(&d.Name, &d.Expression, &d.Timezone, &start, &payload, &d.version, &lastFired, &nextFire); err != nil {
		return row{}, err
	}
	if len(payload) > 0 {
		d.Payload = json.RawMessage(payload)
	}
	var err error
	if d.Start, err = sqltime.Decode(start); err != nil {
		return row{}, fmt.Errorf("schedule %q: %w", d.Name, err)
	}
	if d.LastFired, err = sqltime.Decode(lastFired); err != nil {
		return row{}, fmt.Errorf("schedule %q: %w", d.Name, err)
	}
	if d.NextFire, err = sqltime.Decode(nextFire); err != nil {
		return row{}, fmt.Errorf("schedule %q: %w", d.Name, err)
	}
	return d, nil
}

// checkName accepts any non-empty name up to maxNameLen bytes (the
// runtime names schedules after posts, with "/" and ":", which Scheduler's
// own name pattern would refuse; ebschedule maps names).
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty schedule name")
	case len(name) > maxNameLen:
		return fmt.Errorf("schedule name is %d bytes long, more than %d", len(name), maxNameLen)
	}
	return nil
}

// checkTime accepts the times sqltime.Layout stores in its fixed width.
func checkTime(t time.Time) error {
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		return fmt.Errorf("%s is outside years 0-9999", t.UTC().Format(time.RFC3339))
	}
	return nil
}
