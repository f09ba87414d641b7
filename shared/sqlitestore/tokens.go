package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"oncepost/shared/apitoken"
	"oncepost/shared/post"
	"oncepost/shared/sqltime"
)

var _ apitoken.Store = (*Store)(nil)

// tokenColumns are the columns scanToken reads, in order.
const tokenColumns = `id, name, hash, scopes, rate, created_at, revoked_at, last_used_at`

// AddToken stores a token (its hash, never the token); an error wrapping
// post.ErrConflict when its id, name or hash is taken, by a revoked token
// too.
func (s *Store) AddToken(ctx context.Context, t apitoken.Token) error {
	if t.ID == "" || t.Name == "" || t.Hash == "" || len(t.Scopes) == 0 {
		return fmt.Errorf("add token %q: id, name, hash and scopes are required", t.Name)
	}
	scopes := make([]string, len(t.Scopes))
	for i, sc := range t.Scopes {
		scopes[i] = string(sc)
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO api_tokens (`+tokenColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		t.ID, t.Name, t.Hash, strings.Join(scopes, ","), t.Rate, sqltime.Encode(t.CreatedAt), sqltime.Encode(t.RevokedAt), sqltime.Encode(t.LastUsedAt))
	if err != nil {
		return fmt.Errorf("add token %q: %w", t.Name, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("add token %q: %w", t.Name, err)
	} else if n != 1 {
		return fmt.Errorf("add token %q: the name is taken: %w", t.Name, post.ErrConflict)
	}
	return nil
}

// TokenByHash returns the token with the hash, revoked or not;
// post.ErrNotFound when none has it.
func (s *Store) TokenByHash(ctx context.Context, hash string) (apitoken.Token, error) {
	t, err := scanToken(s.r.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM api_tokens WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return apitoken.Token{}, fmt.Errorf("token: %w", post.ErrNotFound)
	}
	if err != nil {
		return apitoken.Token{}, fmt.Errorf("token: %w", err)
	}
	return t, nil
}

// ListTokens lists every token by name, revoked ones too.
func (s *Store) ListTokens(ctx context.Context) ([]apitoken.Token, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+tokenColumns+` FROM api_tokens ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	var out []apitoken.Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return out, nil
}

// RevokeToken revokes the named token at at (a token revoked before keeps
// its first time) and returns it; post.ErrNotFound for an unknown name.
func (s *Store) RevokeToken(ctx context.Context, name string, at time.Time) (apitoken.Token, error) {
	var t apitoken.Token
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE api_tokens SET revoked_at = ? WHERE name = ? AND revoked_at = ''`, sqltime.Encode(at), name); err != nil {
			return err
		}
		var err error
		t, err = scanToken(tx.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM api_tokens WHERE name = ?`, name))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return apitoken.Token{}, fmt.Errorf("revoke token %q: %w", name, post.ErrNotFound)
	}
	if err != nil {
		return apitoken.Token{}, fmt.Errorf("revoke token %q: %w", name, err)
	}
	return t, nil
}

// TouchToken records when the token with the id was last used.
func (s *Store) TouchToken(ctx context.Context, id string, at time.Time) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE api_tokens SET last_used_at = ? WHERE id = ?`, sqltime.Encode(at), id); err != nil {
		return fmt.Errorf("touch token %s: %w", id, err)
	}
	return nil
}

// scanToken reads one row of tokenColumns.
func scanToken(row interface{ Scan(...any) error }) (apitoken.Token, error) {
	var t apitoken.Token
	var scopes, created, revoked, used string
	if err := row.Scan(&t.ID, &t.Name, &t.Hash, &scopes, &t.Rate, &created, &revoked, &used); err != nil {
		return t, err
	}
	for _, sc := range strings.Split(scopes, ",") {
		if sc != "" {
			t.Scopes = append(t.Scopes, apitoken.Scope(sc))
		}
	}
	var d decoder
	t.CreatedAt, t.RevokedAt, t.LastUsedAt = d.time(created), d.time(revoked), d.time(used)
	if d.err != nil {
		return t, fmt.Errorf("token %s: %w", t.Name, d.err)
	}
	return t, nil
}
