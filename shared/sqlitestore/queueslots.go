package sqlitestore

import (
	"context"
	"fmt"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqltime"
)

// The posting slots queued posts took (publishing.QueueSlots): one row per
// (account, slot), so a second claim of a slot is refused by the primary
// key, and a claim passes from one post to another only on the condition
// that the row still names the first.

const (
	queueSlotInsert = `INSERT INTO queue_slots (account, slot, post_id, claimed_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (account, slot) DO NOTHING`
	queueSlotTakeOver = `UPDATE queue_slots SET post_id = ?, claimed_at = ?
		WHERE account = ? AND slot = ? AND post_id = ?`
	queueSlotDelete = `DELETE FROM queue_slots WHERE account = ? AND slot = ? AND post_id = ?`
	queueSlotList   = `SELECT slot, post_id, claimed_at FROM queue_slots
		WHERE account = ? AND slot >= ? ORDER BY slot LIMIT ?`
)

// ClaimQueueSlot records that owner takes account's slot: if no claim
// holds it (prev ""), or if prev still does; post.ErrConflict otherwise.
func (s *Store) ClaimQueueSlot(ctx context.Context, account post.AccountID, slot time.Time, owner, prev post.ID, at time.Time) error {
	var err error
	var n int64
	if prev == "" {
		n, err = s.execN(ctx, queueSlotInsert, string(account), sqltime.Encode(slot), string(owner), sqltime.Encode(at))
	} else {
		n, err = s.execN(ctx, queueSlotTakeOver, string(owner), sqltime.Encode(at), string(account), sqltime.Encode(slot), string(prev))
	}
	if err != nil {
		return fmt.Errorf("claim queue slot %s of %s: %w", sqltime.Encode(slot), account, err)
	}
	if n != 1 {
		return fmt.Errorf("claim queue slot %s of %s for %s: taken: %w", sqltime.Encode(slot), account, owner, post.ErrConflict)
	}
	return nil
}

// ReleaseQueueSlot deletes account's claim of slot if owner holds it.
func (s *Store) ReleaseQueueSlot(ctx context.Context, account post.AccountID, slot time.Time, owner post.ID) error {
	if _, err := s.execN(ctx, queueSlotDelete, string(account), sqltime.Encode(slot), string(owner)); err != nil {
		return fmt.Errorf("release queue slot %s of %s: %w", sqltime.Encode(slot), account, err)
	}
	return nil
}

// QueueSlotClaims lists account's claims from from on, earliest first
// (the primary key's order).
func (s *Store) QueueSlotClaims(ctx context.Context, account post.AccountID, from time.Time, limit int) ([]publishing.SlotClaim, error) {
	rows, err := s.r.QueryContext(ctx, queueSlotList, string(account), sqltime.Encode(from), sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("queue slot claims of %s: %w", account, err)
	}
	defer rows.Close()
	var out []publishing.SlotClaim
	for rows.Next() {
		var slot, id, at string
		if err := rows.Scan(&slot, &id, &at); err != nil {
			return nil, fmt.Errorf("queue slot claims of %s: %w", account, err)
		}
		var d decoder
		out = append(out, publishing.SlotClaim{Slot: d.time(slot), Post: post.ID(id), At: d.time(at)})
		if d.err != nil {
			return nil, fmt.Errorf("queue slot claims of %s: %w", account, d.err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("queue slot claims of %s: %w", account, err)
	}
	return out, nil
}

// execN runs a write statement and returns the rows it changed.
func (s *Store) execN(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := s.w.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
