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

// CreatePost stores a new post with its targets in one transaction; an
// error wrapping post.ErrConflict if the id exists.
func (s *Store) CreatePost(ctx context.Context, p post.Post) error {
	seen := make(map[post.AccountID]bool, len(p.Targets))
	for _, t := range p.Targets {
		if seen[t.Account] {
			return fmt.Errorf("create post %s: account %s is targeted twice", p.ID, t.Account)
		}
		seen[t.Account] = true
	}
	media, err := json.Marshal(p.Media)
	if err != nil {
		return fmt.Errorf("create post %s: encode media: %w", p.ID, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, s.ws.postInsert).ExecContext(ctx,
			string(p.ID), p.Body, string(media), sqltime.Encode(p.CreatedAt))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return fmt.Errorf("id exists: %w", post.ErrConflict)
		}
		ins := tx.StmtContext(ctx, s.ws.targetInsert)
		for i, t := range p.Targets {
			if _, err := ins.ExecContext(ctx, string(p.ID), string(t.Account), i, sqltime.Encode(t.Slot),
				string(t.Status), t.RemoteID, t.Reason, sqltime.Encode(t.UpdatedAt)); err != nil {
				return fmt.Errorf("target %s: %w", t.Account, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("create post %s: %w", p.ID, err)
	}
	s.postWrites.Add(1)
	return nil
}

// GetPost reads a post and its targets in one statement (one snapshot), or
// returns an error wrapping post.ErrNotFound.
func (s *Store) GetPost(ctx context.Context, id post.ID) (post.Post, error) {
	rows, err := s.rs.postGet.QueryContext(ctx, string(id))
	if err != nil {
		return post.Post{}, fmt.Errorf("get post %s: %w", id, err)
	}
	defer rows.Close()
	p := post.Post{ID: id}
	found := false
	for rows.Next() {
		var media, createdAt string
		var account, slot, status, remoteID, reason, updatedAt sql.NullString
		if err := rows.Scan(&p.Body, &media, &createdAt,
			&account, &slot, &status, &remoteID, &reason, &updatedAt); err != nil {
			return post.Post{}, fmt.Errorf("get post %s: %w", id, err)
		}
		var d decoder
		if !found {
			found = true
			if err := json.Unmarshal([]byte(media), &p.Media); err != nil {
				return post.Post{}, fmt.Errorf("get post %s: decode media: %w", id, err)
			}
			p.CreatedAt = d.time(createdAt)
		}
		if account.Valid {
			p.Targets = append(p.Targets, post.Target{
				Account:   post.AccountID(account.String),
				Slot:      d.time(slot.String),
				Status:    post.TargetStatus(status.String),
				RemoteID:  remoteID.String,
				Reason:    reason.String,
				UpdatedAt: d.time(updatedAt.String),
			})
		}
		if d.err != nil {
			return post.Post{}, fmt.Errorf("get post %s: %w", id, d.err)
		}
	}
	if err := rows.Err(); err != nil {
		return post.Post{}, fmt.Errorf("get post %s: %w", id, err)
	}
	if !found {
		return post.Post{}, fmt.Errorf("get post %s: %w", id, post.ErrNotFound)
	}
	return p, nil
}

// UpdateTarget moves one target's status in one transaction: it reads the
// target, applies u with post.Target.Apply and writes the result on the
// condition that the status is still the one read. It returns the new
// target, an error wrapping post.ErrNotFound for a missing target, or one
// wrapping post.ErrConflict when the move is not allowed.
func (s *Store) UpdateTarget(ctx context.Context, id post.ID, account post.AccountID, u post.TargetUpdate) (post.Target, error) {
	var out post.Target
	err := s.write(ctx, func(tx *sql.Tx) error {
		var slot, status, remoteID, reason, updatedAt string
		err := tx.StmtContext(ctx, s.ws.targetSelect).QueryRowContext(ctx, string(id), string(account)).
			Scan(&slot, &status, &remoteID, &reason, &updatedAt)
		if errors.Is(err, sql.ErrNoRows) {
			return post.ErrNotFound
		}
		if err != nil {
			return err
		}
		var d decoder
		cur := post.Target{
			Account: account, Slot: d.time(slot), Status: post.TargetStatus(status),
			RemoteID: remoteID, Reason: reason, UpdatedAt: d.time(updatedAt),
		}
		if d.err != nil {
			return d.err
		}
		next, err := cur.Apply(u)
		if err != nil {
			return err
		}
		res, err := tx.StmtContext(ctx, s.ws.targetUpdate).ExecContext(ctx,
			string(next.Status), next.RemoteID, next.Reason, sqltime.Encode(next.UpdatedAt),
			string(id), string(account), string(cur.Status))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return fmt.Errorf("status changed from %s: %w", cur.Status, post.ErrConflict)
		}
		out = next
		return nil
	})
	if err != nil {
		return post.Target{}, fmt.Errorf("update post %s target %s: %w", id, account, err)
	}
	s.postWrites.Add(1)
	return out, nil
}

// Due lists targets in status scheduled whose slot is not after t, earliest
// first (ties by post id and account). A limit ≤ 0 means no limit.
func (s *Store) Due(ctx context.Context, t time.Time, limit int) ([]publishing.TargetRef, error) {
	return s.targetRefs(ctx, "due", s.rs.due, t, limit)
}

// Unfinished lists triggered or publishing targets last updated before t,
// oldest update first. A limit ≤ 0 means no limit.
func (s *Store) Unfinished(ctx context.Context, t time.Time, limit int) ([]publishing.TargetRef, error) {
	return s.targetRefs(ctx, "unfinished", s.rs.unfinished, t, limit)
}

func (s *Store) targetRefs(ctx context.Context, what string, stmt *sql.Stmt, t time.Time, limit int) ([]publishing.TargetRef, error) {
	at := sqltime.Encode(t)
	rows, err := stmt.QueryContext(ctx, at, sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %w", what, at, err)
	}
	defer rows.Close()
	var out []publishing.TargetRef
	for rows.Next() {
		var id, account, slot string
		if err := rows.Scan(&id, &account, &slot); err != nil {
			return nil, fmt.Errorf("%s at %s: %w", what, at, err)
		}
		st, err := sqltime.Decode(slot)
		if err != nil {
			return nil, fmt.Errorf("%s at %s: %w", what, at, err)
		}
		out = append(out, publishing.TargetRef{Post: post.ID(id), Account: post.AccountID(account), Slot: st})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s at %s: %w", what, at, err)
	}
	return out, nil
}
