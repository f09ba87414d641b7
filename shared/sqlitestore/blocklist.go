package sqlitestore

import (
	"context"
	"errors"
	"fmt"

	"oncepost/shared/post"
	"oncepost/shared/sqltime"
)

// ErrEmptyKey is returned (wrapped) by AddBlockedTerm for a term without a
// key.
var ErrEmptyKey = errors.New("blocked term has no key")

// AddBlockedTerm adds a term to the blocklist under its key, as given (the
// caller normalises: Key is post.NormalizeTerm of Term). It returns false,
// and changes nothing, if a term with that key is already listed: adding
// twice is a no-op, and the first term's wording and time are kept. A term
// without a key is refused with an error wrapping ErrEmptyKey.
func (s *Store) AddBlockedTerm(ctx context.Context, t post.BlockedTerm) (added bool, err error) {
	if t.Key == "" {
		return false, fmt.Errorf("add blocked term %q: %w", t.Term, ErrEmptyKey)
	}
	res, err := s.ws.blockedAdd.ExecContext(ctx, t.Key, t.Term, sqltime.Encode(t.AddedAt))
	if err != nil {
		return false, fmt.Errorf("add blocked term %q: %w", t.Key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("add blocked term %q: %w", t.Key, err)
	}
	if n == 1 {
		s.blocklistWrites.Add(1)
	}
	return n == 1, nil
}

// RemoveBlockedTerm removes the term with the key; it returns false, with
// no error, if there is none.
func (s *Store) RemoveBlockedTerm(ctx context.Context, key string) (removed bool, err error) {
	res, err := s.ws.blockedRemove.ExecContext(ctx, key)
	if err != nil {
		return false, fmt.Errorf("remove blocked term %q: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("remove blocked term %q: %w", key, err)
	}
	if n == 1 {
		s.blocklistWrites.Add(1)
	}
	return n == 1, nil
}

// BlockedTerms lists the blocklist ordered by key (byte order).
func (s *Store) BlockedTerms(ctx context.Context) ([]post.BlockedTerm, error) {
	rows, err := s.rs.blocked.QueryContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("blocked terms: %w", err)
	}
	defer rows.Close()
	var out []post.BlockedTerm
	for rows.Next() {
		var t post.BlockedTerm
		var at string
		if err := rows.Scan(&t.Key, &t.Term, &at); err != nil {
			return nil, fmt.Errorf("blocked terms: %w", err)
		}
		if t.AddedAt, err = sqltime.Decode(at); err != nil {
			return nil, fmt.Errorf("blocked term %q: %w", t.Key, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("blocked terms: %w", err)
	}
	return out, nil
}
