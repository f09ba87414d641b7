package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/publishing"
	"oncepost/shared/sqltime"
)

// Create writes a new ledger entry if no entry has its key, with its first
// audit row ("" → pending) and the event it causes, if any
// (publishing.LedgerEvent; see the outbox). It returns an error wrapping ledger.ErrTransition
// for an entry ledger.CheckNew refuses and ledger.ErrConflict when the key
// exists.
func (s *Store) Create(ctx context.Context, e ledger.Entry) error {
	if err := ledger.CheckNew(e); err != nil {
		return fmt.Errorf("ledger create %s: %w", e.Key, err)
	}
	at := sqltime.Encode(s.now())
	err := s.writeChange(ctx, func(tx *sql.Tx, record recordFunc) error {
		res, err := tx.StmtContext(ctx, s.ws.ledgerInsert).ExecContext(ctx, entryArgs(e)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return fmt.Errorf("key exists: %w", ledger.ErrConflict)
		}
		if _, err = tx.StmtContext(ctx, s.ws.historyInsert).ExecContext(ctx,
			string(e.Key), "", string(e.State), e.Attempt, e.Reason, at); err != nil {
			return err
		}
		return record(publishing.LedgerEvent(ledger.Entry{}, e))
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

// Update replaces prev by next if the stored entry still has prev's state,
// attempt, task token and decision, and records the move in the entry's
// history and the event it causes, if any (publishing.LedgerEvent; see the
// outbox), in one transaction. It returns an error wrapping
// ledger.ErrTransition for a move ledger.Check refuses, ledger.ErrNotFound
// for a missing key and ledger.ErrConflict when the stored entry has moved
// on.
//
// The task token and the decision are in the condition for held → held
// moves, which keep state and attempt: without them a Retoken computed
// from an entry read before an operator's decision would erase the
// decision, and a decision computed before a Retoken would restore the old
// token. Every other state has neither, so for other moves the condition
// is state and attempt.
func (s *Store) Update(ctx context.Context, prev, next ledger.Entry) error {
	if err := ledger.Check(prev, next); err != nil {
		return fmt.Errorf("ledger update %s: %w", prev.Key, err)
	}
	at := sqltime.Encode(s.now())
	err := s.writeChange(ctx, func(tx *sql.Tx, record recordFunc) error {
		args := append(entryArgs(next)[1:], string(next.Key), string(prev.State), prev.Attempt, prev.TaskToken, prev.Decision)
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
			if state == string(prev.State) && attempt == prev.Attempt {
				// Tokens stay out of errors.
				return fmt.Errorf("%s attempt %d: task token or decision changed: %w", state, attempt, ledger.ErrConflict)
			}
			return fmt.Errorf("expected %s attempt %d, stored %s attempt %d: %w",
				prev.State, prev.Attempt, state, attempt, ledger.ErrConflict)
		}
		if _, err = tx.StmtContext(ctx, s.ws.historyInsert).ExecContext(ctx,
			string(next.Key), string(prev.State), string(next.State), next.Attempt, next.Reason, at); err != nil {
			return err
		}
		return record(publishing.LedgerEvent(prev, next))
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

// ByState lists the entries in one state, least recently updated first
// (ties by key), for the operator's view. Held entries are read through
// the partial index ledger_held, so listing them costs what is held, not
// the size of the ledger; listing any other state reads the whole ledger
// and is not for periodic use (the sweeper uses Open). A limit ≤ 0 means
// no limit.
func (s *Store) ByState(ctx context.Context, state ledger.State, limit int) ([]ledger.Entry, error) {
	var rows *sql.Rows
	var err error
	if state == ledger.Held {
		rows, err = s.rs.ledgerHeld.QueryContext(ctx, sqlLimit(limit))
	} else {
		rows, err = s.rs.ledgerByState.QueryContext(ctx, string(state), sqlLimit(limit))
	}
	if err != nil {
		return nil, fmt.Errorf("ledger entries %s: %w", state, err)
	}
	defer rows.Close()
	var out []ledger.Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, fmt.Errorf("ledger entries %s: %w", state, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger entries %s: %w", state, err)
	}
	return out, nil
}

// Held lists held entries, least recently updated first (ties by key),
// through the partial index ledger_held (publishing.Ledger).
func (s *Store) Held(ctx context.Context, limit int) ([]ledger.Entry, error) {
	return s.ByState(ctx, ledger.Held, limit)
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

// pruneBatch is how many entries one PruneLedger transaction deletes: few
// enough that other writers wait for the write lock only briefly.
const pruneBatch = 200

// PruneLedger deletes terminal entries (confirmed or failed) whose TTL
// (ExpiresAt) is set and before now, with their history, and returns how
// many entries it deleted. It deletes at most limit entries (a limit ≤ 0
// means every expired one), soonest expired first, in transactions of at
// most pruneBatch entries found through the partial index ledger_expires.
// Open, released and held entries never expire, whatever their ExpiresAt.
func (s *Store) PruneLedger(ctx context.Context, now time.Time, limit int) (int, error) {
	at := sqltime.Encode(now)
	total := 0
	for limit <= 0 || total < limit {
		n := pruneBatch
		if limit > 0 {
			n = min(n, limit-total)
		}
		deleted := 0
		err := s.write(ctx, func(tx *sql.Tx) error {
			deleted = 0
			keys, err := expiredKeys(ctx, tx.StmtContext(ctx, s.ws.ledgerExpired), at, n)
			if err != nil {
				return err
			}
			del, hist := tx.StmtContext(ctx, s.ws.ledgerDelete), tx.StmtContext(ctx, s.ws.historyDelete)
			for _, k := range keys {
				if _, err := hist.ExecContext(ctx, k); err != nil {
					return fmt.Errorf("history of %s: %w", k, err)
				}
				if _, err := del.ExecContext(ctx, k); err != nil {
					return fmt.Errorf("entry %s: %w", k, err)
				}
			}
			deleted = len(keys)
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("prune ledger before %s: %w", at, err)
		}
		total += deleted
		if deleted > 0 {
			s.ledgerWrites.Add(1)
		}
		if deleted < n {
			break
		}
	}
	return total, nil
}

// expiredKeys lists up to n keys of terminal entries expired before at.
func expiredKeys(ctx context.Context, st *sql.Stmt, at string, n int) ([]string, error) {
	rows, err := st.QueryContext(ctx, at, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// RecordCheckpoint stores a platform-made handle on the pending entry e
// (same attempt and lease owner); it is not a state move, so no history
// row is written.
func (s *Store) RecordCheckpoint(ctx context.Context, e ledger.Entry, checkpoint string) error {
	if e.State != ledger.Pending || checkpoint == "" {
		return fmt.Errorf("ledger checkpoint %s: only a pending entry takes a checkpoint, and it must not be empty: %w", e.Key, ledger.ErrTransition)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, s.ws.ledgerCheckpoint).ExecContext(ctx, checkpoint, string(e.Key), e.Attempt, e.LeaseOwner)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return fmt.Errorf("not pending attempt %d owned by this worker: %w", e.Attempt, ledger.ErrConflict)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("ledger checkpoint %s: %w", e.Key, err)
	}
	s.ledgerWrites.Add(1)
	return nil
}

// entryArgs are e's values in ledgerColumns order.
func entryArgs(e ledger.Entry) []any {
	return []any{
		string(e.Key), string(e.Action), e.Account, e.Subject, sqltime.Encode(e.Slot),
		string(e.State), e.Attempt, e.Handle, e.Fingerprint,
		e.LeaseOwner, sqltime.Encode(e.LeaseUntil), sqltime.Encode(e.OpenSince), sqltime.Encode(e.SentAt),
		e.RemoteID, e.Reason, e.TaskToken, sqltime.Encode(e.UpdatedAt), sqltime.Encode(e.ExpiresAt),
		e.MaybeSent, e.LookAfter, sqltime.Encode(e.RetryAt), sqltime.Encode(e.DeferredSince), e.Decision, e.Post,
		e.Checkpoint,
	}
}

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanEntry reads one row of ledgerColumns.
func scanEntry(sc scanner) (ledger.Entry, error) {
	var e ledger.Entry
	var key, action, state, slot, leaseUntil, openSince, sentAt, updatedAt, expiresAt, retryAt, deferredSince string
	err := sc.Scan(&key, &action, &e.Account, &e.Subject, &slot, &state, &e.Attempt, &e.Handle, &e.Fingerprint,
		&e.LeaseOwner, &leaseUntil, &openSince, &sentAt, &e.RemoteID, &e.Reason, &e.TaskToken, &updatedAt, &expiresAt,
		&e.MaybeSent, &e.LookAfter, &retryAt, &deferredSince, &e.Decision, &e.Post, &e.Checkpoint)
	if err != nil {
		return ledger.Entry{}, err
	}
	e.Key, e.Action, e.State = ledger.Key(key), ledger.Action(action), ledger.State(state)
	var d decoder
	e.Slot, e.LeaseUntil, e.OpenSince = d.time(slot), d.time(leaseUntil), d.time(openSince)
	e.SentAt, e.UpdatedAt, e.ExpiresAt = d.time(sentAt), d.time(updatedAt), d.time(expiresAt)
	e.RetryAt, e.DeferredSince = d.time(retryAt), d.time(deferredSince)
	if d.err != nil {
		return ledger.Entry{}, fmt.Errorf("entry %s: %w", key, d.err)
	}
	return e, nil
}
