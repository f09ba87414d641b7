package localflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"oncepost/shared/sqltime"
)

// schema is created idempotently by New, in one transaction.
var schema = []string{
	// Definitions by SHA-256 of their (substituted) text: an execution runs
	// to its end on the definition it started with.
	`CREATE TABLE IF NOT EXISTS localflow_machines (
		hash       TEXT PRIMARY KEY,
		definition TEXT NOT NULL,
		created_at TEXT NOT NULL
	) WITHOUT ROWID`,
	// One row per execution, rewritten at every step under a version check.
	`CREATE TABLE IF NOT EXISTS localflow_executions (
		name        TEXT PRIMARY KEY,
		machine     TEXT NOT NULL,
		input       TEXT NOT NULL,
		status      TEXT NOT NULL,
		state       TEXT NOT NULL,
		data        TEXT NOT NULL,
		phase       TEXT NOT NULL,
		retries     TEXT NOT NULL,
		due_at      TEXT NOT NULL,
		token       TEXT NOT NULL,
		owner       TEXT NOT NULL,
		output      TEXT NOT NULL,
		error       TEXT NOT NULL,
		cause       TEXT NOT NULL,
		started_at  TEXT NOT NULL,
		entered_at  TEXT NOT NULL,
		stopped_at  TEXT NOT NULL,
		updated_at  TEXT NOT NULL,
		history_len INTEGER NOT NULL,
		version     INTEGER NOT NULL
	) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS localflow_executions_due ON localflow_executions (due_at) WHERE status = 'RUNNING' AND due_at != ''`,
	`CREATE UNIQUE INDEX IF NOT EXISTS localflow_executions_token ON localflow_executions (token) WHERE token != ''`,
	`CREATE INDEX IF NOT EXISTS localflow_executions_status ON localflow_executions (status, started_at)`,
	// Task claims by owner, for New's take-over.
	`CREATE INDEX IF NOT EXISTS localflow_executions_claims ON localflow_executions (owner) WHERE ` + claimed,
	// Stopped executions by when they stopped, for Prune.
	`CREATE INDEX IF NOT EXISTS localflow_executions_stopped ON localflow_executions (stopped_at) WHERE stopped_at != ''`,
	// Executions by definition, so that Prune finds unused definitions
	// without reading the executions.
	`CREATE INDEX IF NOT EXISTS localflow_executions_machine ON localflow_executions (machine)`,
	// The states each execution entered, in order.
	`CREATE TABLE IF NOT EXISTS localflow_history (
		name  TEXT NOT NULL,
		n     INTEGER NOT NULL,
		state TEXT NOT NULL,
		at    TEXT NOT NULL,
		PRIMARY KEY (name, n)
	) WITHOUT ROWID`,
}

// claimed selects the executions whose Task an engine (owner) is invoking.
// The index localflow_executions_claims and the queries using it spell it
// alike, for SQLite to match them.
const claimed = `status = 'RUNNING' AND phase = '` + phaseInvoke + `'`

// The queries that run at New, on every pass of Run, or in bulk. Each names
// its index (INDEXED BY), so that it fails instead of scanning the table
// if the index is missing, and reads only the rows it needs however many
// stopped executions the file holds; plan_test.go checks their query
// plans.
const (
	// sqlClaimOwners lists the owners of Task claims.
	sqlClaimOwners = `SELECT DISTINCT owner FROM localflow_executions INDEXED BY localflow_executions_claims
		WHERE ` + claimed
	// sqlTakeOver makes the claims of owner ?2 due at ?1.
	sqlTakeOver = `UPDATE localflow_executions INDEXED BY localflow_executions_claims
		SET due_at = ?1, version = version + 1 WHERE ` + claimed + ` AND owner = ?2`
	// sqlDueNames lists up to 1000 running executions due at ?1.
	sqlDueNames = `SELECT name FROM localflow_executions INDEXED BY localflow_executions_due
		WHERE status = 'RUNNING' AND due_at != '' AND due_at <= ?1 ORDER BY due_at, name LIMIT 1000`
	// sqlNextDue is the earliest due time of a running execution.
	sqlNextDue = `SELECT MIN(due_at) FROM localflow_executions INDEXED BY localflow_executions_due
		WHERE status = 'RUNNING' AND due_at != ''`
	// sqlStopped lists up to ?2 executions stopped before ?1, oldest first.
	sqlStopped = `SELECT name FROM localflow_executions INDEXED BY localflow_executions_stopped
		WHERE stopped_at != '' AND stopped_at < ?1 AND status IN ('SUCCEEDED', 'FAILED')
		ORDER BY stopped_at LIMIT ?2`
	// sqlDeleteHistory deletes the history of execution ?1.
	sqlDeleteHistory = `DELETE FROM localflow_history WHERE name = ?1`
	// sqlDeleteStopped deletes execution ?1 if it stopped.
	sqlDeleteStopped = `DELETE FROM localflow_executions WHERE name = ?1 AND status IN ('SUCCEEDED', 'FAILED')`
	// sqlPruneMachines deletes the definitions, other than ?1, that no
	// execution uses.
	sqlPruneMachines = `DELETE FROM localflow_machines WHERE hash != ?1 AND NOT EXISTS (
		SELECT 1 FROM localflow_executions INDEXED BY localflow_executions_machine
		WHERE localflow_executions.machine = localflow_machines.hash)`
)

// errConflict: the execution changed since it was read.
var errConflict = errors.New("execution changed concurrently")

const execColumns = `name, machine, input, status, state, data, phase, retries, due_at, token, owner,
	output, error, cause, started_at, entered_at, stopped_at, history_len, version`

type scanner interface{ Scan(dest ...any) error }

// scanExecution reads a row selected with execColumns.
func scanExecution(sc scanner) (*execution, error) {
	var (
		x                              execution
		input, data, retries, output   string
		due, started, entered, stopped string
	)
	if err := sc.Scan(&x.name, &x.machine, &input, &x.status, &x.state, &data, &x.phase, &retries, &due,
		&x.token, &x.owner, &output, &x.errName, &x.cause, &started, &entered, &stopped, &x.historyLen, &x.version); err != nil {
		return nil, err
	}
	x.input = []byte(input)
	if output != "" {
		x.output = []byte(output)
	}
	var err error
	if x.data, err = decodeJSON([]byte(data)); err != nil {
		return nil, fmt.Errorf("execution %s: stored data: %w", x.name, err)
	}
	if err := json.Unmarshal([]byte(retries), &x.retries); err != nil {
		return nil, fmt.Errorf("execution %s: stored retries: %w", x.name, err)
	}
	for _, f := range []struct {
		dst *time.Time
		src string
	}{{&x.due, due}, {&x.startedAt, started}, {&x.enteredAt, entered}, {&x.stoppedAt, stopped}} {
		if *f.dst, err = sqltime.Decode(f.src); err != nil {
			return nil, fmt.Errorf("execution %s: %w", x.name, err)
		}
	}
	return &x, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// loadExecution reads one execution; ErrExecutionDoesNotExist if absent.
func loadExecution(ctx context.Context, q querier, name string) (*execution, error) {
	x, err := scanExecution(q.QueryRowContext(ctx, `SELECT `+execColumns+` FROM localflow_executions WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrExecutionDoesNotExist
	}
	if err != nil {
		return nil, fmt.Errorf("read execution: %w", err)
	}
	return x, nil
}

// values are the row's columns after name, in execColumns order, minus
// history_len and version.
func (x *execution) values() ([]any, error) {
	data, err := encodeJSON(x.data)
	if err != nil {
		return nil, fmt.Errorf("encode state input: %w", err)
	}
	retries := x.retries
	if retries == nil {
		retries = []int{}
	}
	rb, err := json.Marshal(retries)
	if err != nil {
		return nil, fmt.Errorf("encode retries: %w", err)
	}
	return []any{x.machine, string(x.input), x.status, x.state, string(data), x.phase, string(rb),
		sqltime.Encode(x.due), x.token, x.owner, string(x.output), x.errName, x.cause,
		sqltime.Encode(x.startedAt), sqltime.Encode(x.enteredAt), sqltime.Encode(x.stoppedAt)}, nil
}

// insert writes a new execution and its first history entries.
func (x *execution) insert(ctx context.Context, tx *sql.Tx, now time.Time) error {
	vals, err := x.values()
	if err != nil {
		return err
	}
	args := append([]any{x.name}, vals...)
	args = append(args, sqltime.Encode(now), len(x.newHistory), 1)
	if _, err := tx.ExecContext(ctx, `INSERT INTO localflow_executions (name, machine, input, status, state, data, phase,
		retries, due_at, token, owner, output, error, cause, started_at, entered_at, stopped_at, updated_at, history_len, version)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...); err != nil {
		return fmt.Errorf("insert execution: %w", err)
	}
	x.version = 1
	return x.appendHistory(ctx, tx, now, 0)
}

// update writes x over the version it was read at (errConflict if the row
// moved on) and appends its new history entries.
func (x *execution) update(ctx context.Context, tx *sql.Tx, now time.Time) error {
	vals, err := x.values()
	if err != nil {
		return err
	}
	args := append(vals, sqltime.Encode(now), x.historyLen+len(x.newHistory), x.name, x.version)
	res, err := tx.ExecContext(ctx, `UPDATE localflow_executions SET machine = ?, input = ?, status = ?, state = ?,
		data = ?, phase = ?, retries = ?, due_at = ?, token = ?, owner = ?, output = ?, error = ?, cause = ?,
		started_at = ?, entered_at = ?, stopped_at = ?, updated_at = ?, history_len = ?, version = version + 1
		WHERE name = ? AND version = ?`, args...)
	if err != nil {
		return fmt.Errorf("update execution: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("update execution: %w", err)
	} else if n != 1 {
		return errConflict
	}
	x.version++
	return x.appendHistory(ctx, tx, now, x.historyLen)
}

func (x *execution) appendHistory(ctx context.Context, tx *sql.Tx, now time.Time, from int) error {
	for i, s := range x.newHistory {
		if _, err := tx.ExecContext(ctx, `INSERT INTO localflow_history (name, n, state, at) VALUES (?, ?, ?, ?)`,
			x.name, from+i+1, s, sqltime.Encode(now)); err != nil {
			return fmt.Errorf("append history: %w", err)
		}
	}
	x.historyLen = from + len(x.newHistory)
	x.newHistory = nil
	return nil
}
