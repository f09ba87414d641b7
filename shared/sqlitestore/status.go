package sqlitestore

import (
	"context"
	"fmt"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
)

// Summary counts targets by status and ledger entries by state: the
// operator's view behind `oncepost status`.
type Summary struct {
	Targets map[post.TargetStatus]int `json:"targets"`
	Ledger  map[ledger.State]int      `json:"ledger"`
}

// CountTargets counts targets by status.
func (s *Store) CountTargets(ctx context.Context) (map[post.TargetStatus]int, error) {
	out := map[post.TargetStatus]int{}
	rows, err := s.r.QueryContext(ctx, `SELECT status, count(*) FROM targets GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("count targets: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("count targets: %w", err)
		}
		out[post.TargetStatus(st)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count targets: %w", err)
	}
	return out, nil
}

// Summary reads the counts in one snapshot.
func (s *Store) Summary(ctx context.Context) (Summary, error) {
	out := Summary{Targets: map[post.TargetStatus]int{}, Ledger: map[ledger.State]int{}}
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("summary: %w", err)
	}
	defer tx.Rollback()
	for _, q := range []struct {
		sql string
		put func(string, int)
	}{
		{`SELECT status, count(*) FROM targets GROUP BY status`, func(k string, n int) { out.Targets[post.TargetStatus(k)] = n }},
		{`SELECT state, count(*) FROM ledger GROUP BY state`, func(k string, n int) { out.Ledger[ledger.State(k)] = n }},
	} {
		rows, err := tx.QueryContext(ctx, q.sql)
		if err != nil {
			return out, fmt.Errorf("summary: %w", err)
		}
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				rows.Close()
				return out, fmt.Errorf("summary: %w", err)
			}
			q.put(k, n)
		}
		if err := rows.Close(); err != nil {
			return out, fmt.Errorf("summary: %w", err)
		}
		if err := rows.Err(); err != nil {
			return out, fmt.Errorf("summary: %w", err)
		}
	}
	return out, nil
}
