// Package sqlitetx runs write transactions on the embedded runtime's SQLite
// write pool (one connection, BEGIN IMMEDIATE), shared by sqlitestore,
// localflow and localcron, which keep their tables in one file.
package sqlitetx

import (
	"context"
	"database/sql"
	"fmt"
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
