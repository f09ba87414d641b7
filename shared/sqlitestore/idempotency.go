package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqltime"
)

// Idempotency keys: a create request's key and its first answer
// (publishing.IdempotencyRecord), inserted in the transaction that inserts
// the post (CreatePostKeyed). The transaction is atomic, so a record is
// never seen without its post: KeyExistsError.InFlight is never true here.

// keyColumns are the idempotency_keys table's columns in the order
// scanKeyRecord reads them.
const keyColumns = `scope, key, fingerprint, post_id, status, response, created_at`

const (
	keyQuery = `SELECT ` + keyColumns + ` FROM idempotency_keys WHERE scope = ? AND key = ?`
	// keysPruneQuery deletes the oldest records created before a time,
	// a batch at a time, through the index by age.
	keysPruneQuery = `DELETE FROM idempotency_keys WHERE (scope, key) IN (
		SELECT scope, key FROM idempotency_keys INDEXED BY idempotency_keys_created
		WHERE created_at < ? ORDER BY created_at LIMIT ?)`
)

// GetIdempotencyRecord reads the record of a key in its scope, or returns
// an error wrapping post.ErrNotFound.
func (s *Store) GetIdempotencyRecord(ctx context.Context, scope, key string) (publishing.IdempotencyRecord, error) {
	rec, err := scanKeyRecord(s.rs.keyGet.QueryRowContext(ctx, scope, key))
	if errors.Is(err, sql.ErrNoRows) {
		return publishing.IdempotencyRecord{}, fmt.Errorf("idempotency key %q: %w", key, post.ErrNotFound)
	}
	if err != nil {
		return publishing.IdempotencyRecord{}, fmt.Errorf("idempotency key %q: %w", key, err)
	}
	return rec, nil
}

// PruneIdempotencyKeys deletes up to limit records created before
// before, oldest first (a limit ≤ 0 means all), in one transaction, and
// returns how many it deleted. The runtime calls it with
// now − publishing.IdempotencyKeep.
func (s *Store) PruneIdempotencyKeys(ctx context.Context, before time.Time, limit int) (int, error) {
	at := sqltime.Encode(before)
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, s.ws.keysPrune).ExecContext(ctx, at, sqlLimit(limit))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune idempotency keys before %s: %w", at, err)
	}
	return int(n), nil
}

// insertKey inserts a key's record inside tx, unless a record with its
// scope and key exists: then it returns a *publishing.KeyExistsError
// holding the stored record, and the caller rolls back.
func (s *Store) insertKey(ctx context.Context, tx *sql.Tx, rec publishing.IdempotencyRecord) error {
	if rec.Scope == "" || rec.Key == "" {
		return errors.New("idempotency record without its scope or key")
	}
	response := rec.Response
	if response == nil {
		response = []byte{} // the column is NOT NULL
	}
	res, err := tx.StmtContext(ctx, s.ws.keyInsert).ExecContext(ctx, rec.Scope, rec.Key, rec.Fingerprint, string(rec.Post),
		rec.Status, response, sqltime.Encode(rec.CreatedAt))
	if err != nil {
		return fmt.Errorf("idempotency key %q: %w", rec.Key, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("idempotency key %q: %w", rec.Key, err)
	} else if n == 1 {
		return nil
	}
	stored, err := scanKeyRecord(tx.StmtContext(ctx, s.ws.keySelect).QueryRowContext(ctx, rec.Scope, rec.Key))
	if err != nil {
		return fmt.Errorf("idempotency key %q: read the stored record: %w", rec.Key, err)
	}
	return &publishing.KeyExistsError{Record: stored}
}

// scanKeyRecord reads one row of keyColumns.
func scanKeyRecord(row *sql.Row) (publishing.IdempotencyRecord, error) {
	var rec publishing.IdempotencyRecord
	var postID, createdAt string
	if err := row.Scan(&rec.Scope, &rec.Key, &rec.Fingerprint, &postID, &rec.Status, &rec.Response, &createdAt); err != nil {
		return publishing.IdempotencyRecord{}, err
	}
	rec.Post = post.ID(postID)
	var d decoder
	rec.CreatedAt = d.time(createdAt)
	if d.err != nil {
		return publishing.IdempotencyRecord{}, d.err
	}
	return rec, nil
}
