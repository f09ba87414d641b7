package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqltime"
)

var _ publishing.Approvals = (*Store)(nil)

// settingApprovalPolicy names the approval policy's row in settings.
const settingApprovalPolicy = "approval_policy"

// ApprovalPolicy reads the workspace's approval policy from the settings
// table: the zero policy when none was stored.
func (s *Store) ApprovalPolicy(ctx context.Context) (publishing.ApprovalPolicy, error) {
	var value string
	err := s.r.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = ?`, settingApprovalPolicy).Scan(&value)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return publishing.ApprovalPolicy{}, nil
	case err != nil:
		return publishing.ApprovalPolicy{}, fmt.Errorf("read approval policy: %w", err)
	}
	var p publishing.ApprovalPolicy
	if err := json.Unmarshal([]byte(value), &p); err != nil {
		return publishing.ApprovalPolicy{}, fmt.Errorf("decode approval policy: %w", err)
	}
	return p, nil
}

// PutApprovalPolicy stores the workspace's approval policy, replacing the
// one stored.
func (s *Store) PutApprovalPolicy(ctx context.Context, p publishing.ApprovalPolicy) error {
	value, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode approval policy: %w", err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO settings (name, value, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
			settingApprovalPolicy, string(value), sqltime.Encode(s.now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("store approval policy: %w", err)
	}
	return nil
}

// MoveApproval writes m over one target that waits for approval, in one
// write transaction: one UPDATE conditioned on the status needs_approval
// and the slot m.Read, so of concurrent moves exactly one changes the row.
// A move to scheduled leaves has_schedule 0: the runtime's scheduler makes
// the schedule next (MarkScheduled), and a crash before it leaves the
// target to Unscheduled, which the runtime reads at every start and
// sweep. The event the move causes (publishing.TargetEvent) is recorded in
// the transaction. A refusal wraps post.ErrConflict and says what the
// target is; a missing post or target wraps post.ErrNotFound.
func (s *Store) MoveApproval(ctx context.Context, id post.ID, account post.AccountID, m publishing.ApprovalMove) (post.Target, error) {
	wrap := func(err error) error {
		return fmt.Errorf("move post %s target %s waiting for approval: %w", id, account, err)
	}
	switch {
	case m.Status != post.Scheduled && m.Status != post.NeedsApproval:
		return post.Target{}, wrap(fmt.Errorf("to %s: only scheduled or needs_approval", m.Status))
	case m.Read.IsZero() || m.Slot.IsZero():
		return post.Target{}, wrap(errors.New("zero slot"))
	}
	var out post.Target
	err := s.writeChange(ctx, func(tx *sql.Tx, record recordFunc) error {
		cur, err := s.readTarget(ctx, tx, id, account)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE targets SET status = ?, slot = ?, reason = ?, next_try = '', updated_at = ?, has_schedule = 0
			WHERE post_id = ? AND account = ? AND status = 'needs_approval' AND slot = ?`,
			string(m.Status), sqltime.Encode(m.Slot.UTC()), m.Reason, sqltime.Encode(m.At.UTC()),
			string(id), string(account), sqltime.Encode(m.Read.UTC()))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return fmt.Errorf("target is %s at %s, not needs_approval at %s: %w", cur.Status, cur.Slot.Format(time.RFC3339Nano),
				m.Read.UTC().Format(time.RFC3339Nano), post.ErrConflict)
		}
		next := post.Target{Account: account, Slot: m.Slot.UTC(), Status: m.Status, RemoteID: cur.RemoteID, Reason: m.Reason, UpdatedAt: m.At.UTC()}
		if err := record(publishing.TargetEvent(id, cur, next)); err != nil {
			return err
		}
		out = next
		return nil
	})
	if err != nil {
		return post.Target{}, wrap(err)
	}
	s.postWrites.Add(1)
	return out, nil
}

// AwaitingApproval lists targets in needs_approval whose slot is before
// before (any when zero), earliest slot first, ties by post id and
// account: a range of the partial index targets_approval, which holds
// those targets only. A limit ≤ 0 means no limit.
func (s *Store) AwaitingApproval(ctx context.Context, before time.Time, limit int) ([]publishing.TargetRef, error) {
	bound := "9999" // after every encoded time
	if !before.IsZero() {
		bound = sqltime.Encode(before)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT post_id, account, slot FROM targets INDEXED BY targets_approval
		WHERE status = 'needs_approval' AND slot < ? ORDER BY slot, post_id, account LIMIT ?`, bound, sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("targets awaiting approval: %w", err)
	}
	defer rows.Close()
	var out []publishing.TargetRef
	for rows.Next() {
		var id, account, slot string
		if err := rows.Scan(&id, &account, &slot); err != nil {
			return nil, fmt.Errorf("targets awaiting approval: %w", err)
		}
		t, err := sqltime.Decode(slot)
		if err != nil {
			return nil, fmt.Errorf("targets awaiting approval: post %s: %w", id, err)
		}
		out = append(out, publishing.TargetRef{Post: post.ID(id), Account: post.AccountID(account), Slot: t})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("targets awaiting approval: %w", err)
	}
	return out, nil
}
