// Package sqlitetx runs write transactions on the embedded runtime's SQLite
// write pool (one connection, BEGIN IMMEDIATE), shared by sqlitestore,
// localflow and localcron, which keep their tables in one file.
package sqlitetx

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Write runs fn in a transaction on db and commits if fn returns nil;
// otherwise it rolls back and returns fn's error. fn must not do I/O or
// call back into the store: the pool has one connection.
func Write(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback() // fn's error is the one to report
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// QueryPlan returns the detail lines of SQLite's EXPLAIN QUERY PLAN for
// query, a nested step indented by two spaces per level: what tests of the
// three packages sharing the file check so that no periodic query scans a
// table that grows.
func QueryPlan(ctx context.Context, db *sql.DB, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		return nil, fmt.Errorf("explain query plan: %w", err)
	}
	defer rows.Close()
	depth := map[int]int{}
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return nil, fmt.Errorf("explain query plan: %w", err)
		}
		depth[id] = depth[parent] + 1
		plan = append(plan, strings.Repeat("  ", depth[id]-1)+detail)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("explain query plan: %w", err)
	}
	return plan, nil
}
