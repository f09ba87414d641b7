package localflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
	"unicode"

	"oncepost/shared/sqlitetx"
	"oncepost/shared/sqltime"
)

// Invoker calls the function a Task names (arn:aws:states:::lambda:invoke
// and its .waitForTaskToken form) and returns the function's response
// payload (JSON; empty means null).
//
// A returned error is the function's error, named by ErrorName (the way
// aws-lambda-go names it for Step Functions); the Invoker returns it as the
// function returned it, without wrapping, so that the name survives. An
// error of the Invoker's own transport is returned as a *TransportError
// (wrapping allowed) and named Lambda.ServiceException. A panic inside
// Invoke is recovered and named Lambda.Unknown. If ctx is done when Invoke
// returns, the outcome is not recorded: the task runs again later.
type Invoker interface {
	Invoke(ctx context.Context, functionName string, payload json.RawMessage) (json.RawMessage, error)
}

// Options configure an Engine.
type Options struct {
	// Now is the clock for Wait states, retry delays and timestamps;
	// default time.Now.
	Now func() time.Time
	// Invoker runs Task states; required.
	Invoker Invoker
	// Logger receives the engine's logs; default slog.Default(). Task
	// tokens and payloads are never logged.
	Logger *slog.Logger
	// Concurrency is how many executions RunDue advances at a time (their
	// tasks run in parallel, as Step Functions runs executions); default 1,
	// one at a time in due order.
	Concurrency int
	// Owner names this engine in task claims; default the host name.
	// Engines sharing a database file at the same time need distinct
	// owners: give each process its own (say "host/pid") and set
	// OwnerGone. An engine takes over at New the claims its owner left (a
	// previous run that died mid-task), so those tasks run again at once
	// instead of after the claim expires.
	Owner string
	// OwnerGone, if set, reports whether the engine named owner is gone for
	// good (its process exited), for instance by parsing a "host/pid" owner
	// and asking the operating system about the process on this host. New
	// calls it once for each other owner holding a Task claim, outside any
	// transaction, and takes over at once the claims of those reported
	// gone, as it does its own: the tasks run again now instead of when
	// their 15-minute lease ends. The claims of an owner not reported gone
	// (a live engine, an unknown or another host's owner) are left until
	// their lease ends. OwnerGone must not report a live engine gone, or its
	// task may run twice at the same time.
	OwnerGone func(owner string) bool
}

// Engine runs executions of a Machine, persisted in SQLite.
type Engine struct {
	db    *sql.DB
	m     *Machine
	now   func() time.Time
	inv   Invoker
	log   *slog.Logger
	owner string
	gone  func(owner string) bool
	wake  chan struct{}
	// concurrency is Options.Concurrency.
	concurrency int

	mu       sync.Mutex
	machines map[string]*Machine
}

// Execution describes one execution.
type Execution struct {
	Name string
	// Status is StatusRunning, StatusSucceeded or StatusFailed.
	Status string
	// State is the current state, or the last one once stopped.
	State string
	// Input is the execution's input; StateInput the current state's input.
	Input      json.RawMessage
	StateInput json.RawMessage
	// Output is the execution's output once it succeeded.
	Output json.RawMessage
	// Error and Cause say why it failed.
	Error string
	Cause string
	// TaskToken is set while a .waitForTaskToken task waits for
	// SendTaskSuccess/SendTaskFailure.
	TaskToken string
	// DueAt is when its next step is due (now, a Wait's end, a retry, the
	// end of a running task's claim); zero while it waits on a task token
	// and once stopped.
	DueAt     time.Time
	StartedAt time.Time
	StoppedAt time.Time
	// History lists the states entered, in order (Describe only).
	History []string
}

// maxStepsPerRun bounds the steps one RunDue takes for one execution, so a
// loop without waits cannot hold RunDue forever.
const maxStepsPerRun = 1000

// maxSleep caps Run's sleep between passes.
const maxSleep = time.Second

// New returns an engine for m on db, creating its tables (localflow_*) if
// needed, and takes over the Task claims of its own Owner and of the owners
// Options.OwnerGone reports gone. db must be a write pool like
// sqlitestore.Store.DB(): one connection whose transactions are BEGIN
// IMMEDIATE. The engine never holds a transaction or open rows while a task
// runs or while it sleeps, so a task may use the same store.
func New(ctx context.Context, db *sql.DB, m *Machine, opts Options) (*Engine, error) {
	if db == nil || m == nil || opts.Invoker == nil {
		return nil, errors.New("localflow: new engine: db, machine and Options.Invoker are required")
	}
	e := &Engine{
		db: db, m: m, now: opts.Now, inv: opts.Invoker, log: opts.Logger, owner: opts.Owner, gone: opts.OwnerGone, concurrency: opts.Concurrency,
		wake:     make(chan struct{}, 1),
		machines: map[string]*Machine{m.hash: m},
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.owner == "" {
		if h, err := os.Hostname(); err == nil && h != "" {
			e.owner = h
		} else {
			e.owner = "localflow"
		}
	}
	err := e.write(ctx, func(tx *sql.Tx) error {
		for _, stmt := range schema {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
		}
		now := e.clock()
		if err := e.recordMachine(ctx, tx, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, sqlTakeOver, sqltime.Encode(now), e.owner); err != nil {
			return fmt.Errorf("take over own claims: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("localflow: new engine: %w", err)
	}
	if err := e.takeOverGone(ctx); err != nil {
		return nil, fmt.Errorf("localflow: new engine: %w", err)
	}
	return e, nil
}

// recordMachine stores the engine's definition if it is not stored yet
// (Prune deletes definitions no execution uses).
func (e *Engine) recordMachine(ctx context.Context, tx *sql.Tx, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO localflow_machines (hash, definition, created_at) VALUES (?, ?, ?)`,
		e.m.hash, string(e.m.definition), sqltime.Encode(now)); err != nil {
		return fmt.Errorf("record definition: %w", err)
	}
	return nil
}

// takeOverGone makes the Task claims of the other owners that OwnerGone
// reports gone due now. The owners are read first and OwnerGone is asked
// outside any transaction; a gone owner writes no new claims meanwhile.
func (e *Engine) takeOverGone(ctx context.Context) error {
	if e.gone == nil {
		return nil
	}
	owners, err := e.claimOwners(ctx)
	if err != nil {
		return err
	}
	var gone []string
	for _, o := range owners {
		if o != e.owner && e.gone(o) {
			gone = append(gone, o)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	taken := map[string]int64{}
	err = e.write(ctx, func(tx *sql.Tx) error {
		now := sqltime.Encode(e.clock())
		for _, o := range gone {
			res, err := tx.ExecContext(ctx, sqlTakeOver, now, o)
			if err != nil {
				return fmt.Errorf("take over claims of %q: %w", o, err)
			}
			if taken[o], err = res.RowsAffected(); err != nil {
				return fmt.Errorf("take over claims of %q: %w", o, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, o := range gone {
		if taken[o] > 0 {
			e.log.InfoContext(ctx, "localflow: took over the task claims of a gone owner", "owner", o, "executions", taken[o])
		}
	}
	return nil
}

// claimOwners lists the owners holding Task claims.
func (e *Engine) claimOwners(ctx context.Context) ([]string, error) {
	rows, err := e.db.QueryContext(ctx, sqlClaimOwners)
	if err != nil {
		return nil, fmt.Errorf("list claim owners: %w", err)
	}
	defer rows.Close()
	var owners []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return nil, fmt.Errorf("list claim owners: %w", err)
		}
		owners = append(owners, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list claim owners: %w", err)
	}
	return owners, nil
}

func (e *Engine) clock() time.Time { return e.now().UTC() }

// write runs fn in a write transaction (see sqlitetx.Write).
func (e *Engine) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return sqlitetx.Write(ctx, e.db, fn)
}

// notify wakes Run.
func (e *Engine) notify() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// machineFor returns the definition an execution started with.
func (e *Engine) machineFor(ctx context.Context, tx *sql.Tx, hash string) (*Machine, error) {
	e.mu.Lock()
	m := e.machines[hash]
	e.mu.Unlock()
	if m != nil {
		return m, nil
	}
	var def string
	if err := tx.QueryRowContext(ctx, `SELECT definition FROM localflow_machines WHERE hash = ?`, hash).Scan(&def); err != nil {
		return nil, fmt.Errorf("definition %s: %w", hash, err)
	}
	m, err := Load([]byte(def), nil)
	if err != nil {
		return nil, &badDefinitionError{fmt.Errorf("definition %s: %w", hash, err)}
	}
	e.mu.Lock()
	e.machines[hash] = m
	e.mu.Unlock()
	return m, nil
}

// badDefinitionError: a stored definition no longer loads.
type badDefinitionError struct{ err error }

func (e *badDefinitionError) Error() string { return e.err.Error() }
func (e *badDefinitionError) Unwrap() error { return e.err }

// validName follows StartExecution's rules: 1 to 80 characters, no
// whitespace, brackets, wildcards, special or control characters.
func validName(name string) bool {
	if name == "" || len(name) > 80 {
		return false
	}
	for _, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("<>{}[]?*\"#%\\^|~`$&,;:/", r) {
			return false
		}
	}
	return true
}

// Start starts the execution name with input (empty means {}). Like Step
// Functions Standard, it is idempotent by name: while an execution with the
// same name and the same input (compared as JSON) is running, Start returns
// nil; a different input, or an execution of that name that has already
// stopped, gives ErrExecutionAlreadyExists.
func (e *Engine) Start(ctx context.Context, name string, input json.RawMessage) error {
	if !validName(name) {
		return fmt.Errorf("localflow: start %q: invalid execution name", name)
	}
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	canon, err := canonicalJSON(input)
	if err != nil {
		return fmt.Errorf("localflow: start %s: input is not JSON: %w", name, err)
	}
	data, err := decodeJSON(canon)
	if err != nil {
		return fmt.Errorf("localflow: start %s: %w", name, err)
	}
	started := false
	err = e.write(ctx, func(tx *sql.Tx) error {
		var status, stored string
		err := tx.QueryRowContext(ctx, `SELECT status, input FROM localflow_executions WHERE name = ?`, name).Scan(&status, &stored)
		switch {
		case err == nil:
			if status == StatusRunning && stored == string(canon) {
				return nil
			}
			if status == StatusRunning {
				return fmt.Errorf("%w: running with a different input", ErrExecutionAlreadyExists)
			}
			return fmt.Errorf("%w: %s", ErrExecutionAlreadyExists, strings.ToLower(status))
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("read execution: %w", err)
		}
		now := e.clock()
		if err := e.recordMachine(ctx, tx, now); err != nil {
			return err
		}
		x := &execution{
			name: name, machine: e.m.hash, input: canon, status: StatusRunning,
			state: e.m.startAt, data: data, phase: phaseEnter, due: now,
			startedAt: now, enteredAt: now, newHistory: []string{e.m.startAt},
		}
		started = true
		return x.insert(ctx, tx, now)
	})
	if err != nil {
		return fmt.Errorf("localflow: start %s: %w", name, err)
	}
	if started {
		e.log.InfoContext(ctx, "localflow: execution started", "execution", name, "state", e.m.startAt)
		e.notify()
	}
	return nil
}

// RunDue advances every execution whose next step is due at Now() until
// each blocks on a Wait or a retry in the future, on a task token, or ends.
// steps counts the transitions recorded. Tasks run here, outside any
// transaction. An execution that cannot be advanced (a database error) is
// left for the next pass and its error returned, joined with the others',
// after the rest were advanced; a done ctx stops the pass. What was
// recorded stays recorded.
func (e *Engine) RunDue(ctx context.Context) (steps int, err error) {
	var (
		mu           sync.Mutex
		perExecution = map[string]int{}
		failed       = map[string]error{}
	)
	for {
		names, err := e.dueNames(ctx)
		if err != nil {
			return steps, errors.Join(append(joinable(failed), err)...)
		}
		var todo []string
		for _, name := range names {
			if maxStepsPerRun-perExecution[name] > 0 && failed[name] == nil {
				todo = append(todo, name)
			}
		}
		progressed := false
		run := func(name string) {
			mu.Lock()
			budget := maxStepsPerRun - perExecution[name]
			mu.Unlock()
			n, err := e.advance(ctx, name, budget)
			mu.Lock()
			steps += n
			perExecution[name] += n
			progressed = progressed || n > 0
			if err != nil && ctx.Err() == nil {
				// One execution's trouble must not hold up the others.
				failed[name] = err
			}
			mu.Unlock()
		}
		if e.concurrency <= 1 {
			// One at a time, in due order, in the caller's goroutine.
			for _, name := range todo {
				if ctx.Err() != nil {
					break
				}
				run(name)
			}
		} else {
			// Executions advance independently: up to Concurrency at a
			// time, their tasks running in parallel outside any transaction.
			work := make(chan string)
			var wg sync.WaitGroup
			for range min(e.concurrency, max(len(todo), 1)) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for name := range work {
						run(name)
					}
				}()
			}
			for _, name := range todo {
				if ctx.Err() != nil {
					break
				}
				work <- name
			}
			close(work)
			wg.Wait()
		}
		if ctx.Err() != nil {
			return steps, ctx.Err()
		}
		if !progressed {
			return steps, errors.Join(joinable(failed)...)
		}
	}
}

// joinable lists errors in a stable order.
func joinable(m map[string]error) []error {
	var errs []error
	for _, name := range sortedKeys(m) {
		errs = append(errs, m[name])
	}
	return errs
}

// dueNames lists running executions whose next step is due.
func (e *Engine) dueNames(ctx context.Context) ([]string, error) {
	rows, err := e.db.QueryContext(ctx, sqlDueNames, sqltime.Encode(e.clock()))
	if err != nil {
		return nil, fmt.Errorf("localflow: list due executions: %w", err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("localflow: list due executions: %w", err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("localflow: list due executions: %w", err)
	}
	return names, nil
}

// advance takes up to budget steps of one execution. Each step is read,
// computed and written in one transaction; a Task's invocation runs
// between two transactions, and its outcome is recorded only if nobody
// else moved the execution meanwhile.
func (e *Engine) advance(ctx context.Context, name string, budget int) (int, error) {
	steps := 0
	for steps < budget {
		var inv *invocation
		blocked := false
		err := e.write(ctx, func(tx *sql.Tx) error {
			x, err := loadExecution(ctx, tx, name)
			if err != nil {
				return err
			}
			now := e.clock()
			if x.status != StatusRunning || x.due.IsZero() || x.due.After(now) {
				blocked = true
				return nil
			}
			m, err := e.machineFor(ctx, tx, x.machine)
			var bad *badDefinitionError
			switch {
			case errors.As(err, &bad):
				// The definition it started with no longer loads: it cannot
				// go on, and retrying will not help.
				x.fail(ErrorRuntime, err.Error(), now)
			case err != nil:
				return err
			}
			from := x.state
			if x.status == StatusRunning {
				if inv, err = x.step(m, now, e.owner); err != nil {
					return err
				}
			}
			if err := x.update(ctx, tx, now); err != nil {
				return err
			}
			if inv != nil {
				inv.version = x.version
			}
			e.logStep(ctx, x, from)
			return nil
		})
		if errors.Is(err, errConflict) {
			return steps, nil
		}
		if err != nil {
			return steps, fmt.Errorf("localflow: advance %s: %w", name, err)
		}
		if blocked {
			return steps, nil
		}
		steps++
		if inv == nil {
			continue
		}
		recorded, err := e.runTask(ctx, name, inv)
		if err != nil {
			return steps, err
		}
		if !recorded {
			return steps, nil
		}
		steps++
	}
	return steps, nil
}

// runTask invokes a claimed task and records its outcome. recorded is
// false when the execution moved on meanwhile (another engine took the
// claim over, or a callback answered first).
func (e *Engine) runTask(ctx context.Context, name string, inv *invocation) (recorded bool, err error) {
	e.log.DebugContext(ctx, "localflow: invoke", "execution", name, "state", inv.state, "function", inv.function)
	out, ierr := e.invoke(ctx, inv)
	if ctx.Err() != nil {
		return false, fmt.Errorf("localflow: advance %s: task %s interrupted: %w", name, inv.state, ctx.Err())
	}
	err = e.write(ctx, func(tx *sql.Tx) error {
		x, err := loadExecution(ctx, tx, name)
		if err != nil {
			return err
		}
		if x.version != inv.version {
			return errConflict
		}
		m, err := e.machineFor(ctx, tx, x.machine)
		if err != nil {
			return err
		}
		st := m.states[x.state]
		now := e.clock()
		switch {
		case ierr != nil:
			errName := ErrorName(ierr)
			var pe *panicError
			if errors.As(ierr, &pe) {
				errName = ErrorUnknown
			}
			cause := errorCause(ierr, errName)
			e.log.WarnContext(ctx, "localflow: task failed", "execution", name, "state", st.name, "error", errName, "cause", cause)
			x.taskFailed(st, errName, cause, now)
		case inv.callback:
			x.phase, x.due, x.owner = phaseCallback, time.Time{}, ""
		default:
			x.taskSucceeded(st, lambdaEnvelope(out), now)
		}
		if err := x.update(ctx, tx, now); err != nil {
			return err
		}
		e.logStep(ctx, x, st.name)
		return nil
	})
	if errors.Is(err, errConflict) {
		e.log.InfoContext(ctx, "localflow: task outcome dropped; the execution moved on", "execution", name, "state", inv.state)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("localflow: advance %s: record task %s: %w", name, inv.state, err)
	}
	return true, nil
}

// panicError is a recovered panic of an Invoker.
type panicError struct{ v any }

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.v) }

// invoke calls the Invoker, recovering a panic, and decodes the response.
func (e *Engine) invoke(ctx context.Context, inv *invocation) (out any, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{v: v}
		}
	}()
	resp, err := e.inv.Invoke(ctx, inv.function, json.RawMessage(inv.payload))
	if err != nil {
		return nil, err
	}
	if len(resp) == 0 {
		return nil, nil
	}
	out, derr := decodeJSON(resp)
	if derr != nil {
		return nil, &panicError{v: fmt.Sprintf("function response is not JSON: %v", derr)}
	}
	return out, nil
}

// logStep logs what a step did: the end of an execution, a retry, a new state.
func (e *Engine) logStep(ctx context.Context, x *execution, from string) {
	switch {
	case x.status == StatusSucceeded:
		e.log.InfoContext(ctx, "localflow: execution succeeded", "execution", x.name, "state", x.state)
	case x.status == StatusFailed:
		e.log.WarnContext(ctx, "localflow: execution failed", "execution", x.name, "state", x.state, "error", x.errName, "cause", x.cause)
	case x.phase == phaseRetry:
		e.log.InfoContext(ctx, "localflow: task retry scheduled", "execution", x.name, "state", x.state, "due", x.due.Format(time.RFC3339Nano))
	case x.state != from:
		e.log.DebugContext(ctx, "localflow: state entered", "execution", x.name, "state", x.state, "from", from)
	}
}

// Run advances due executions until ctx is done: RunDue, then sleep (a real
// timer) until the earliest due time by the clock, at most about a second,
// or until Start or SendTask* wakes it. An error of a pass is logged and
// the loop goes on. Run returns ctx's error.
func (e *Engine) Run(ctx context.Context) error {
	for {
		if _, err := e.RunDue(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			e.log.ErrorContext(ctx, "localflow: run", "err", err)
		}
		d := e.sleepFor(ctx)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-e.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// sleepFor is how long Run sleeps: until the earliest due step, between
// 10 ms and maxSleep.
func (e *Engine) sleepFor(ctx context.Context) time.Duration {
	var next sql.NullString
	err := e.db.QueryRowContext(ctx, sqlNextDue).Scan(&next)
	if err != nil || !next.Valid || next.String == "" {
		return maxSleep
	}
	t, err := sqltime.Decode(next.String)
	if err != nil {
		return maxSleep
	}
	return min(max(t.Sub(e.clock()), 10*time.Millisecond), maxSleep)
}

// SendTaskSuccess completes the .waitForTaskToken task waiting on token
// with output (JSON) as its result, which then goes through the task's
// ResultSelector, ResultPath and OutputPath. ErrTaskDoesNotExist if no
// running execution waits on token.
func (e *Engine) SendTaskSuccess(ctx context.Context, token string, output json.RawMessage) error {
	v, err := decodeJSON(output)
	if err != nil {
		return fmt.Errorf("localflow: send task success: output is not JSON: %w", err)
	}
	return e.answer(ctx, "send task success", token, func(x *execution, st *state, now time.Time) {
		x.taskSucceeded(st, v, now)
	})
}

// SendTaskFailure fails the .waitForTaskToken task waiting on token with
// errorName and cause; the failure goes through the task's Retry and
// Catch. ErrTaskDoesNotExist if no running execution waits on token.
func (e *Engine) SendTaskFailure(ctx context.Context, token, errorName, cause string) error {
	return e.answer(ctx, "send task failure", token, func(x *execution, st *state, now time.Time) {
		x.taskFailed(st, errorName, cause, now)
	})
}

func (e *Engine) answer(ctx context.Context, op, token string, apply func(x *execution, st *state, now time.Time)) error {
	var name string
	err := e.write(ctx, func(tx *sql.Tx) error {
		if token == "" {
			return ErrTaskDoesNotExist
		}
		err := tx.QueryRowContext(ctx, `SELECT name FROM localflow_executions WHERE token = ?`, token).Scan(&name)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrTaskDoesNotExist
		}
		if err != nil {
			return fmt.Errorf("find task: %w", err)
		}
		x, err := loadExecution(ctx, tx, name)
		if err != nil {
			return err
		}
		if x.status != StatusRunning || (x.phase != phaseInvoke && x.phase != phaseCallback) {
			return ErrTaskDoesNotExist
		}
		m, err := e.machineFor(ctx, tx, x.machine)
		if err != nil {
			return err
		}
		st := m.states[x.state]
		if st == nil || !st.callback {
			return ErrTaskDoesNotExist
		}
		now := e.clock()
		apply(x, st, now)
		if err := x.update(ctx, tx, now); err != nil {
			return err
		}
		e.logStep(ctx, x, st.name)
		return nil
	})
	if err != nil {
		return fmt.Errorf("localflow: %s: %w", op, err)
	}
	e.notify()
	return nil
}

// Describe returns the execution name, with its history.
func (e *Engine) Describe(ctx context.Context, name string) (Execution, error) {
	x, err := loadExecution(ctx, e.db, name)
	if err != nil {
		return Execution{}, fmt.Errorf("localflow: describe %s: %w", name, err)
	}
	out, err := x.public()
	if err != nil {
		return Execution{}, fmt.Errorf("localflow: describe %s: %w", name, err)
	}
	rows, err := e.db.QueryContext(ctx, `SELECT state FROM localflow_history WHERE name = ? ORDER BY n`, name)
	if err != nil {
		return Execution{}, fmt.Errorf("localflow: describe %s: history: %w", name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return Execution{}, fmt.Errorf("localflow: describe %s: history: %w", name, err)
		}
		out.History = append(out.History, s)
	}
	if err := rows.Err(); err != nil {
		return Execution{}, fmt.Errorf("localflow: describe %s: history: %w", name, err)
	}
	return out, nil
}

// List returns the executions with the given status (all for ""), oldest
// first, without their history.
func (e *Engine) List(ctx context.Context, status string) ([]Execution, error) {
	switch status {
	case "", StatusRunning, StatusSucceeded, StatusFailed:
	default:
		return nil, fmt.Errorf("localflow: list: unknown status %q", status)
	}
	rows, err := e.db.QueryContext(ctx, `SELECT `+execColumns+` FROM localflow_executions
		WHERE ? = '' OR status = ? ORDER BY started_at, name`, status, status)
	if err != nil {
		return nil, fmt.Errorf("localflow: list: %w", err)
	}
	defer rows.Close()
	var list []Execution
	for rows.Next() {
		x, err := scanExecution(rows)
		if err != nil {
			return nil, fmt.Errorf("localflow: list: %w", err)
		}
		pub, err := x.public()
		if err != nil {
			return nil, fmt.Errorf("localflow: list: %w", err)
		}
		list = append(list, pub)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("localflow: list: %w", err)
	}
	return list, nil
}

// public converts the stored form to Execution (without history).
func (x *execution) public() (Execution, error) {
	data, err := encodeJSON(x.data)
	if err != nil {
		return Execution{}, fmt.Errorf("encode state input: %w", err)
	}
	pub := Execution{
		Name: x.name, Status: x.status, State: x.state,
		Input: json.RawMessage(x.input), StateInput: json.RawMessage(data),
		Error: x.errName, Cause: x.cause,
		DueAt: x.due, StartedAt: x.startedAt, StoppedAt: x.stoppedAt,
	}
	if x.output != nil {
		pub.Output = json.RawMessage(x.output)
	}
	if x.status == StatusRunning && (x.phase == phaseCallback || x.phase == phaseInvoke) {
		pub.TaskToken = x.token
	}
	if x.phase == phaseCallback {
		pub.DueAt = time.Time{}
	}
	return pub, nil
}
