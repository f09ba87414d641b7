package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Checkpoints off the write path. SQLite checkpoints the WAL into the
// database file in the commit that passes wal_autocheckpoint pages, so
// that one commit, and every writer queued behind the single write
// connection, waits for a copy of up to 32 MiB: at 2,000 creates a second
// through the HTTP API, that stall was most of the 99th percentile (40 ms
// with it, 22-27 ms with checkpoints out of the way, on 2 cores). A
// PASSIVE checkpoint on its own connection needs no writer lock: it copies
// the frames every reader is done with while writers go on appending.

// RunCheckpointer checkpoints the WAL every interval (PASSIVE, on a
// connection of its own) until ctx is done. While it runs, commits no
// longer checkpoint at walCheckpointPages but only at four times that,
// a safety net for a checkpointer that cannot keep up; a long-running
// process (the runtime, the API) runs it, a CLI command does not need to.
func (s *Store) RunCheckpointer(ctx context.Context, interval time.Duration) error {
	db, err := sql.Open("sqlite", dsn(s.path, true))
	if err != nil {
		return fmt.Errorf("sqlitestore: checkpointer: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := s.w.ExecContext(ctx, fmt.Sprintf(`PRAGMA wal_autocheckpoint = %d`, 4*walCheckpointPages)); err != nil {
		return fmt.Errorf("sqlitestore: checkpointer: %w", err)
	}
	defer s.w.Exec(fmt.Sprintf(`PRAGMA wal_autocheckpoint = %d`, walCheckpointPages))
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := checkpoint(ctx, db); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "WAL checkpoint", "err", err)
		}
	}
}

// checkpointResult is what a checkpoint did: busy is 1 when it could not
// finish (a reader still needs old frames); log is the WAL's frames and
// copied those now in the database file.
type checkpointResult struct{ busy, log, copied int }

func checkpoint(ctx context.Context, db *sql.DB) (checkpointResult, error) {
	var r checkpointResult
	err := db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&r.busy, &r.log, &r.copied)
	return r, err
}
