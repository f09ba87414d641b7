package sqlitetx_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"oncepost/shared/sqlitestore"
	"oncepost/shared/sqlitetx"
)

func TestWriteCommitsOrRollsBack(t *testing.T) {
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "x.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := s.DB()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	insert := func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (1)`); return err }
	if err := sqlitetx.Write(ctx, db, insert); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err = sqlitetx.Write(ctx, db, func(tx *sql.Tx) error {
		if err := insert(tx); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write = %v, want fn's error", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d rows (err %v), want 1: the failed transaction must roll back", n, err)
	}
}
