package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/sqltime"
)

// Create writes a new ledger entry if no entry has its key, with its first
// audit row ("" → pending). It returns an error wrapping ledger.ErrTransition
// for an entry ledger.CheckNew refuses and ledger.ErrConflict when the key
// exists.
func (s *Store) Create(ctx context.Context, e ledger.Entry) error {
	if err := ledger.CheckNew(e); err != nil {
		return fmt.Errorf("ledger create %s: %w", e.Key, err)
	}
	at := sqltime.Encode(s.now())
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, s.ws.ledgerInsert).ExecContext(ctx, entryArgs(e)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return fmt.Errorf("key exists: %w", ledger.ErrConflict)
		}
		_, err = tx.StmtContext(ctx, s.ws.historyInsert).ExecContext(ctx,
			string(e.Key), "", string(e.State), e.Attempt, e.Reason, at)
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger create %s: %w", e.Key, err)
	}
	s.ledgerWrites.Add(1)
	s.auditRows.Add(1)
	return nil
}

// Get reads an entry or returns an error wrapping ledger.ErrNotFound.
func (s *Store) Get(ctx context.Context, key ledger.Key) (ledger.Entry, error) {
	e, err := scanEntry(s.rs.ledgerGet.QueryRowContext(ctx, string(key)))
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Entry{}, fmt.Errorf("ledger get %s: %w", key, ledger.ErrNotFound)
	}
	if err != nil {
		return ledger.Entry{}, fmt.Errorf("ledger get %s: %w", key, err)
	}
	return e, nil
}

// Update replaces prev by next if the stored entry still has prev's state
// and attempt, and records the move in the entry's history, in one
// transaction. It returns an error wrapping ledger.ErrTransition for a move
// ledger.Check refuses, ledger.ErrNotFound for a missing key and
// ledger.ErrConflict when the stored entry has moved on.
func (s *Store) Update(ctx context.Context, prev, next ledger.Entry) error {
	if err := ledger.Check(prev, next); err != nil {
		return fmt.Errorf("ledger update %s: %w", prev.Key, err)
	}
	at := sqltime.Encode(s.now())
	err := s.write(ctx, func(tx *sql.Tx) error {
		args := append(entryArgs(next)[1:], string(next.Key), string(prev.State), prev.Attempt)
		res, err := tx.StmtContext(ctx, s.ws.ledgerUpdate).ExecContext(ctx, args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n != 1 {
			var state string
			var attempt int
			err := tx.StmtContext(ctx, s.ws.ledgerExists).QueryRowContext(ctx, string(prev.Key)).Scan(&state, &attempt)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				return ledger.ErrNotFound
			case err != nil:
				return err
			}
			return fmt.Errorf("expected %s attempt %d, stored %s attempt %d: %w",
				prev.State, prev.Attempt, state, attempt, ledger.ErrConflict)
		}
		_, err = tx.StmtContext(ctx, s.ws.historyInsert).ExecContext(ctx,
			string(next.Key), string(prev.State), string(next.State), next.Attempt, next.Reason, at)
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger update %s: %w", prev.Key, err)
	}
	s.ledgerWrites.Add(1)
	s.auditRows.Add(1)
	return nil
}

// Open lists pending and unknown entries open since before t, oldest first,
// through the partial index on open_since. A limit ≤ 0 means no limit.
func (s *Store) Open(ctx context.Context, before time.Time, limit int) ([]ledger.Entry, error) {
	rows, err := s.rs.ledgerOpen.QueryContext(ctx, sqltime.Encode(before), sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("ledger open before %s: %w", sqltime.Encode(before), err)
	}
	defer rows.Close()
	var out []ledger.Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, fmt.Errorf("ledger open before %s: %w", sqltime.Encode(before), err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger open before %s: %w", sqltime.Encode(before), err)
	}
	return out, nil
}

// History lists an entry's transitions, oldest first. A key without
// history has an empty history, not an error.
func (s *Store) History(ctx context.Context, key ledger.Key) ([]ledger.Transition, error) {
	rows, err := s.rs.ledgerHistory.QueryContext(ctx, string(key))
	if err != nil {
		return nil, fmt.Errorf("ledger history %s: %w", key, err)
	}
	defer rows.Close()
	var out []ledger.Transition
	for rows.Next() {
		var from, to, reason, at string
		var attempt int
		if err := rows.Scan(&from, &to, &attempt, &reason, &at); err != nil {
			return nil, fmt.Errorf("ledger history %s: %w", key, err)
		}
		t, err := sqltime.Decode(at)
		if err != nil {
			return nil, fmt.Errorf("ledger history %s: %w", key, err)
		}
		out = append(out, ledger.Transition{
			Key: key, From: ledger.State(from), To: ledger.State(to), Attempt: attempt, Reason: reason, At: t,
		})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger history %s: %w", key, err)
	}
	return out, nil
}

// entryArgs are e's values in ledgerColumns order.
func entryArgs(e ledger.Entry) []any {
	return []any{
		string(e.Key), string(e.Action), e.Account, e.Subject, sqltime.Encode(e.Slot),
		string(e.State), e.Attempt, e.Handle, e.Fingerprint,
		e.LeaseOwner, sqltime.Encode(e.LeaseUntil), sqltime.Encode(e.OpenSince), sqltime.Encode(e.SentAt),
		e.RemoteID, e.Reason, e.TaskToken, sqltime.Encode(e.UpdatedAt), sqltime.Encode(e.ExpiresAt),
	}
}

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanEntry reads one row of ledgerColumns.
func scanEntry(sc scanner) (ledger.Entry, error) {
	var e ledger.Entry
	var key, action, state, slot, leaseUntil, openSince, sentAt, updatedAt, expiresAt string
	err := sc.Scan(&key, &action, &e.Account, &e.Subject, &slot, &state, &e.Attempt, &e.Handle, &e.Fingerprint,
		&e.LeaseOwner, &leaseUntil, &openSince, &sentAt, &e.RemoteID, &e.Reason, &e.TaskToken, &updatedAt, &expiresAt)
	if err != nil {
		return ledger.Entry{}, err
	}
	e.Key, e.Action, e.State = ledger.Key(key), ledger.Action(action), ledger.State(state)
	var d decoder
	e.Slot, e.LeaseUntil, e.OpenSince = d.time(slot), d.time(leaseUntil), d.time(openSince)
	e.SentAt, e.UpdatedAt, e.ExpiresAt = d.time(sentAt), d.time(updatedAt), d.time(expiresAt)
	if d.err != nil {
		return ledger.Entry{}, fmt.Errorf("entry %s: %w", key, d.err)
	}
	return e, nil
}
