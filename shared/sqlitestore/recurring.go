package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/recurring"
)

var _ publishing.RecurringRules = (*Store)(nil)

// CreateRule stores a new rule at version 1 (one INSERT that does nothing
// when the id exists: post.ErrConflict then).
func (s *Store) CreateRule(ctx context.Context, r recurring.Rule) error {
	b, err := recurring.Encode(r)
	if err != nil {
		return err
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO recurring_rules (id, version, rule) VALUES (?, 1, ?) ON CONFLICT (id) DO NOTHING`, string(r.ID), string(b))
	if err != nil {
		return fmt.Errorf("create rule %s: %w", r.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("create rule %s: %w", r.ID, err)
	} else if n == 0 {
		return fmt.Errorf("create rule %s: the id exists: %w", r.ID, post.ErrConflict)
	}
	return nil
}

// GetRule reads a rule; post.ErrNotFound if there is none.
func (s *Store) GetRule(ctx context.Context, id recurring.ID) (recurring.Rule, error) {
	var (
		version int64
		raw     string
	)
	err := s.r.QueryRowContext(ctx, `SELECT version, rule FROM recurring_rules WHERE id = ?`, string(id)).Scan(&version, &raw)
	if errors.Is(err, sql.ErrNoRows) {
		return recurring.Rule{}, fmt.Errorf("rule %s: %w", id, post.ErrNotFound)
	}
	if err != nil {
		return recurring.Rule{}, fmt.Errorf("rule %s: %w", id, err)
	}
	return decodeRule(id, version, raw)
}

// UpdateRule replaces the rule if its stored version is r.Version (one
// UPDATE conditional on it; post.ErrConflict otherwise).
func (s *Store) UpdateRule(ctx context.Context, r recurring.Rule) error {
	b, err := recurring.Encode(r)
	if err != nil {
		return err
	}
	res, err := s.w.ExecContext(ctx, `UPDATE recurring_rules SET version = version + 1, rule = ? WHERE id = ? AND version = ?`, string(b), string(r.ID), r.Version)
	if err != nil {
		return fmt.Errorf("update rule %s: %w", r.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("update rule %s: %w", r.ID, err)
	} else if n == 0 {
		return fmt.Errorf("update rule %s: not at version %d: %w", r.ID, r.Version, post.ErrConflict)
	}
	return nil
}

// ListRules lists every rule by id (byte order).
func (s *Store) ListRules(ctx context.Context) ([]recurring.Rule, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, version, rule FROM recurring_rules ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	defer rows.Close()
	var out []recurring.Rule
	for rows.Next() {
		var (
			id      string
			version int64
			raw     string
		)
		if err := rows.Scan(&id, &version, &raw); err != nil {
			return nil, fmt.Errorf("list rules: %w", err)
		}
		r, err := decodeRule(recurring.ID(id), version, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	return out, nil
}

func decodeRule(id recurring.ID, version int64, raw string) (recurring.Rule, error) {
	r, err := recurring.Decode([]byte(raw))
	if err != nil {
		return recurring.Rule{}, fmt.Errorf("rule %s: %w", id, err)
	}
	r.Version = version
	return r, nil
}
