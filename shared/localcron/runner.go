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

	"oncepost/shared/schedexpr"
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

	wake chan struct{} // Wake pokes Run
	due  sync.Mutex    // serialises firing, so concurrent RunDue calls do not fire twice

	mu      sync.Mutex
	backoff map[string]retry // Run's failing schedules

	// Put's statements, prepared once: a post's transaction puts a
	// schedule per slot, and parsing the SQL each time was half the cost
	// of an API create.
	loadStmt, upsertStmt *sql.Stmt
}

const (
	sqlLoadRow = `SELECT ` + rowColumns + ` FROM localcron_schedules WHERE name = ?`
	sqlUpsert  = `INSERT INTO localcron_schedules
		(name, expression, timezone, start, payload, version, last_fired, next_fire, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET expression = excluded.expression, timezone = excluded.timezone,
			start = excluded.start, payload = excluded.payload, version = excluded.version,
			last_fired = excluded.last_fired, next_fire = excluded.next_fire, updated_at = excluded.updated_at`
)

// retry is a failing schedule's backoff in Run.
type retry struct {
	failures int
	until    time.Time
}

// schema is created idempotently by NewRunner. next_fire is empty when the
// schedule has no further firing; the partial index localcron_schedules_next
// holds the others, in firing order, and localcron_schedules_ended holds the
// ended ones by when they ended (endedAt), for Prune.
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
	`CREATE INDEX IF NOT EXISTS localcron_schedules_ended ON localcron_schedules (` + endedAt + `) WHERE next_fire = ''`,
}

// endedAt is when a schedule without a next firing ended: its last firing,
// or its last update if it never fired. The index localcron_schedules_ended
// and sqlPrune must spell it alike for SQLite to match them.
const endedAt = `CASE last_fired WHEN '' THEN updated_at ELSE last_fired END`

// The queries that run while Run is idle, on every pass, or in bulk. Each
// names its index (INDEXED BY), so that it fails instead of scanning the
// table if the index is missing, and touches only the rows it returns or
// deletes, however many schedules the table holds; plan_test.go checks
// their query plans.
const (
	// sqlNextDue is the earliest next firing.
	sqlNextDue = `SELECT next_fire FROM localcron_schedules INDEXED BY localcron_schedules_next
		WHERE next_fire <> '' ORDER BY next_fire LIMIT 1`
	// sqlEarliest lists the ?1 earliest schedules that will fire.
	sqlEarliest = `SELECT name, next_fire FROM localcron_schedules INDEXED BY localcron_schedules_next
		WHERE next_fire <> '' ORDER BY next_fire, name LIMIT ?1`
	// sqlLoadDue reads up to ?4 schedules due at ?1 that come after the
	// cursor (?2, ?3) in (next_fire, name) order.
	sqlLoadDue = `SELECT ` + rowColumns + ` FROM localcron_schedules INDEXED BY localcron_schedules_next
		WHERE next_fire <> '' AND next_fire <= ?1 AND (next_fire, name) > (?2, ?3)
		ORDER BY next_fire, name LIMIT ?4`
	// sqlPrune deletes up to ?2 schedules that ended before ?1, oldest first.
	sqlPrune = `DELETE FROM localcron_schedules WHERE name IN (
		SELECT name FROM localcron_schedules INDEXED BY localcron_schedules_ended
		WHERE next_fire = '' AND ` + endedAt + ` < ?1 ORDER BY ` + endedAt + ` LIMIT ?2)`
)

// Batch sizes: how many due schedules runDue reads at a time (bounding its
// memory however many are due after downtime), and how many schedules one
// Prune statement deletes (bounding how long it holds the write lock).
const (
	dueBatch   = 256
	pruneBatch = 500
)

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
	var err error
	if r.loadStmt, err = db.PrepareContext(ctx, sqlLoadRow); err != nil {
		return nil, fmt.Errorf("localcron: prepare: %w", err)
	}
	if r.upsertStmt, err = db.PrepareContext(ctx, sqlUpsert); err != nil {
		r.loadStmt.Close()
		return nil, fmt.Errorf("localcron: prepare: %w", err)
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
	now := r.now()
	if err := validate(e, now); err != nil {
		return err
	}
	err := r.write(ctx, func(tx *sql.Tx) error { return r.put(ctx, tx, e, now) })
	if err != nil {
		return fmt.Errorf("localcron: put %q: %w", e.Name, err)
	}
	r.forget(e.Name)
	r.Wake()
	return nil
}

// PutTx is Put inside the caller's transaction tx, so that a schedule is
// written together with what it belongs to (a post and its schedules, all
// or nothing). It validates e first, as Put does, with the same errors,
// then writes through tx only. tx must be a write transaction on the
// Runner's database: the same SQLite file, begun on the write pool
// (BEGIN IMMEDIATE), like sqlitetx.Write's.
//
// PutTx does not wake Run, since the schedule is not visible until tx
// commits: call Wake after the commit (nothing is needed after a rollback).
// Without Wake, Run notices the schedule at its next pass, within a minute.
func (r *Runner) PutTx(ctx context.Context, tx *sql.Tx, e Entry) error {
	if tx == nil {
		return fmt.Errorf("localcron: put %q: no transaction", e.Name)
	}
	now := r.now()
	if err := validate(e, now); err != nil {
		return err
	}
	if err := r.put(ctx, tx, e, now); err != nil {
		return fmt.Errorf("localcron: put %q: %w", e.Name, err)
	}
	// Ending a backoff early is harmless if tx rolls back.
	r.forget(e.Name)
	return nil
}

// Wake makes a running Run re-read the schedules at once rather than when
// its timer ends (at the earliest next firing, at most a minute). Put and
// Delete call it; call it after committing a transaction in which PutTx
// wrote, and when another process sharing the file may have written
// schedules. It never blocks, and a Wake while Run is busy is not lost.
func (r *Runner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// validate checks what Put and PutTx check before they write, with the
// errors they return.
func validate(e Entry, now time.Time) error {
	if err := checkName(e.Name); err != nil {
		return fmt.Errorf("localcron: put: %w", err)
	}
	if len(e.Payload) > 0 && !json.Valid(e.Payload) {
		return fmt.Errorf("localcron: put %q: payload is not valid JSON", e.Name)
	}
	if _, err := Parse(e.Expression, e.Timezone, now); err != nil {
		return fmt.Errorf("localcron: put %q: %w", e.Name, err)
	}
	return nil
}

// put writes a validated entry through tx at now: Put's and PutTx's
// shared body.
func (r *Runner) put(ctx context.Context, tx *sql.Tx, e Entry, now time.Time) error {
	old, found, err := loadRow(ctx, tx.StmtContext(ctx, r.loadStmt), e.Name)
	if err != nil {
		return fmt.Errorf("read schedule: %w", err)
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
	_, err = tx.StmtContext(ctx, r.upsertStmt).ExecContext(ctx,
		nr.Name, nr.Expression, nr.Timezone, sqltime.Encode(nr.Start), append([]byte{}, nr.Payload...), nr.version,
		sqltime.Encode(nr.LastFired), sqltime.Encode(nr.NextFire), sqltime.Encode(now))
	if err != nil {
		return fmt.Errorf("write schedule: %w", err)
	}
	return nil
}

// firstFiring is a new or changed schedule's next firing: the first at or
// after now, and after the last firing; for at(), its time even if past.
func firstFiring(s Schedule, now, lastFired time.Time) time.Time {
	if at, ok := schedexpr.OneTime(s); ok {
		return at
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
	r.Wake()
	return nil
}

// Prune deletes up to limit schedules (all if limit ≤ 0) that will not
// fire again (no next firing) and whose last firing, or last update if
// they never fired, is before firedBefore, oldest first, and returns how
// many it deleted. It deletes in batches, each a short statement of its
// own, so it never holds the write lock for long, and it reads only the
// schedules it deletes (through an index of ended schedules). Schedules
// that will fire, including due and failing ones, are never pruned.
//
// A one-time at() schedule is deleted as soon as it fired, like an
// EventBridge schedule with ActionAfterCompletion DELETE, so what Prune
// finds are the rest: a cron or rate schedule whose expression has no
// firing left (a cron limited to past years, or one beyond year 9999),
// which EventBridge Scheduler (ActionAfterCompletion NONE, the default)
// would also keep until deleted.
func (r *Runner) Prune(ctx context.Context, firedBefore time.Time, limit int) (int, error) {
	deleted := 0
	for limit <= 0 || deleted < limit {
		n := pruneBatch
		if limit > 0 {
			n = min(n, limit-deleted)
		}
		res, err := r.db.ExecContext(ctx, sqlPrune, sqltime.Encode(firedBefore), n)
		if err != nil {
			return deleted, fmt.Errorf("localcron: prune: %w", err)
		}
		k, err := res.RowsAffected()
		if err != nil {
			return deleted, fmt.Errorf("localcron: prune: %w", err)
		}
		deleted += int(k)
		if k < int64(n) {
			break
		}
	}
	return deleted, nil
}

// Get returns a schedule and its state.
func (r *Runner) Get(ctx context.Context, name string) (Entry, State, error) {
	row, found, err := loadRow(ctx, r.loadStmt, name)
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
	err := r.db.QueryRowContext(ctx, sqlNextDue).Scan(&s)
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
// one-time at() schedule is deleted once it fired. The due schedules are
// read a batch at a time, so however many are due, RunDue holds only a
// batch in memory.
func (r *Runner) RunDue(ctx context.Context) (int, error) {
	fired, errs, err := r.runDue(ctx, false)
	return fired, errors.Join(errs, err)
}

// runDue is RunDue. err reports that due schedules could not be read (then
// fired counts those fired before); errs joins the failures of single
// schedules. With backoff (Run), it skips schedules whose retry time has
// not come and puts failing ones in backoff.
func (r *Runner) runDue(ctx context.Context, backoff bool) (fired int, errs, err error) {
	r.due.Lock()
	defer r.due.Unlock()
	now := r.now()
	var all []error
	fail := func(name string, err error) {
		all = append(all, err)
		if backoff {
			r.failed(name, now)
		}
	}
	// stillDue collects the schedules in backoff met on the way; the
	// backoff of the others ends after a complete pass.
	stillDue := map[string]bool{}
	var after row // cursor: the last schedule read, in (next_fire, name) order
	complete := false
pass:
	for {
		due, err := r.loadDue(ctx, now, after.NextFire, after.Name)
		if err != nil {
			return fired, errors.Join(all...), err
		}
		if len(due) == 0 {
			complete = true
			break
		}
		after = due[len(due)-1]
		for _, d := range due {
			if err := ctx.Err(); err != nil {
				all = append(all, fmt.Errorf("localcron: run due: %w", err))
				break pass
			}
			if backoff && r.waiting(d.Name, now) {
				stillDue[d.Name] = true
				continue
			}
			s, err := Parse(d.Expression, d.Timezone, d.Start)
			if err != nil {
				// Stored expressions were valid when Put; a zone can vanish
				// from the zone database, though.
				fail(d.Name, fmt.Errorf("localcron: schedule %q: %w", d.Name, err))
				stillDue[d.Name] = true
				continue
			}
			at := latestFiring(s, d.NextFire, now)
			if err := r.fire(ctx, d.Name, at, d.Payload); err != nil {
				fail(d.Name, fmt.Errorf("localcron: fire %q (scheduled %s): %w", d.Name, at.Format(time.RFC3339), err))
				stillDue[d.Name] = true
				continue
			}
			fired++
			if err := r.record(ctx, d, s, at, now); err != nil {
				// Still due: it fires again (at least once), after a backoff in Run.
				fail(d.Name, fmt.Errorf("localcron: record firing of %q: %w", d.Name, err))
				stillDue[d.Name] = true
				continue
			}
			if backoff {
				r.forget(d.Name)
			}
		}
		if len(due) < dueBatch {
			complete = true
			break
		}
	}
	if backoff && complete {
		r.pruneBackoff(stillDue)
	}
	return fired, errors.Join(all...), nil
}

// loadDue reads up to dueBatch schedules due at now that come after
// (afterNext, afterName) in firing order. The rows are closed before any
// Fire runs: the write pool has one connection.
func (r *Runner) loadDue(ctx context.Context, now, afterNext time.Time, afterName string) ([]row, error) {
	rows, err := r.db.QueryContext(ctx, sqlLoadDue, sqltime.Encode(now), sqltime.Encode(afterNext), afterName, dueBatch)
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
	if _, ok := schedexpr.OneTime(s); ok {
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
	rows, err := r.db.QueryContext(ctx, sqlEarliest, len(waiting)+1)
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

// pruneBackoff ends the backoff of every schedule not in stillDue: those
// no longer due (replaced, deleted, or fired by another process).
func (r *Runner) pruneBackoff(stillDue map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.backoff {
		if !stillDue[name] {
			delete(r.backoff, name)
		}
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

// loadRow reads one schedule with the prepared sqlLoadRow (the
// runner's, or its copy in a transaction).
func loadRow(ctx context.Context, q *sql.Stmt, name string) (row, bool, error) {
	d, err := scanRow(q.QueryRowContext(ctx, name))
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
