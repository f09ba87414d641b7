package localflow

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"oncepost/shared/sqltime"
)

// pruneBatch is how many executions one Prune transaction deletes, with
// their history, so that Prune never holds the write lock for long.
const pruneBatch = 100

// Prune deletes up to limit executions (all if limit ≤ 0) that stopped
// (SUCCEEDED or FAILED) before stoppedBefore, oldest first, with their
// history, and returns how many it deleted. It then deletes the stored
// definitions that no execution uses any more, except the engine's own.
// Running executions are never deleted. It works in short transactions of
// at most a hundred executions each, reading only the rows it deletes
// (through an index of stopped executions), so the engine and the other
// users of the file go on meanwhile. A pruned execution's name can be
// started again.
//
// Step Functions keeps a Standard workflow's closed executions for 90 days,
// after which their names can be reused; the runtime calls Prune to keep
// the file from growing forever, with a retention period of its choice.
func (e *Engine) Prune(ctx context.Context, stoppedBefore time.Time, limit int) (int, error) {
	deleted := 0
	for limit <= 0 || deleted < limit {
		n := pruneBatch
		if limit > 0 {
			n = min(n, limit-deleted)
		}
		var k int
		err := e.write(ctx, func(tx *sql.Tx) error {
			var err error
			k, err = pruneBatchTx(ctx, tx, stoppedBefore, n)
			return err
		})
		if err != nil {
			return deleted, fmt.Errorf("localflow: prune: %w", err)
		}
		deleted += k
		if k < n {
			break
		}
	}
	res, err := e.db.ExecContext(ctx, sqlPruneMachines, e.m.hash)
	if err != nil {
		return deleted, fmt.Errorf("localflow: prune: unused definitions: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n > 0 {
		e.log.InfoContext(ctx, "localflow: pruned unused definitions", "definitions", n)
	}
	if deleted > 0 {
		e.log.InfoContext(ctx, "localflow: pruned stopped executions", "executions", deleted,
			"stopped_before", stoppedBefore.UTC().Format(time.RFC3339))
	}
	return deleted, nil
}

// pruneBatchTx deletes up to n executions stopped before t, with their
// history, in tx.
func pruneBatchTx(ctx context.Context, tx *sql.Tx, t time.Time, n int) (int, error) {
	rows, err := tx.QueryContext(ctx, sqlStopped, sqltime.Encode(t), n)
	if err != nil {
		return 0, fmt.Errorf("list stopped executions: %w", err)
	}
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return 0, fmt.Errorf("list stopped executions: %w", err)
		}
		names = append(names, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("list stopped executions: %w", err)
	}
	for _, name := range names {
		if _, err := tx.ExecContext(ctx, sqlDeleteHistory, name); err != nil {
			return 0, fmt.Errorf("delete history of %s: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx, sqlDeleteStopped, name); err != nil {
			return 0, fmt.Errorf("delete execution %s: %w", name, err)
		}
	}
	return len(names), nil
}
