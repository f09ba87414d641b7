package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/sqltime"
)

// Summary counts targets by status and ledger entries by state: the
// operator's view behind `oncepost status`.
type Summary struct {
	Targets map[post.TargetStatus]int `json:"targets"`
	Ledger  map[ledger.State]int      `json:"ledger"`
}

// CountTargets counts targets by status. With statuses given it counts
// only those, each through the partial index that holds it (targetCounts),
// so the cost is the number of targets in those statuses, not in the
// store; every status asked for is in the result, with 0 if it has no
// target. A status that is not a post.TargetStatus constant is refused.
// With none given it counts every status in one scan of the targets (for
// the status page); statuses without targets are then absent. The counts
// are read in one snapshot.
func (s *Store) CountTargets(ctx context.Context, statuses ...post.TargetStatus) (map[post.TargetStatus]int, error) {
	out := map[post.TargetStatus]int{}
	for _, st := range statuses {
		if _, ok := s.rs.count[st]; !ok {
			return nil, fmt.Errorf("count targets: unknown status %q", st)
		}
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("count targets: %w", err)
	}
	defer tx.Rollback()
	if len(statuses) == 0 {
		if err := countByStatus(ctx, tx.StmtContext(ctx, s.rs.countAll), out); err != nil {
			return nil, fmt.Errorf("count targets: %w", err)
		}
		return out, nil
	}
	for _, st := range statuses {
		if _, done := out[st]; done {
			continue
		}
		var n int
		if err := tx.StmtContext(ctx, s.rs.count[st]).QueryRowContext(ctx).Scan(&n); err != nil {
			return nil, fmt.Errorf("count %s targets: %w", st, err)
		}
		out[st] = n
	}
	return out, nil
}

// countByStatus adds the rows of a (status, count) query to out.
func countByStatus(ctx context.Context, st *sql.Stmt, out map[post.TargetStatus]int) error {
	rows, err := st.QueryContext(ctx)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return err
		}
		out[post.TargetStatus(status)] = n
	}
	return rows.Err()
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

// WaitingTarget is a target waiting for its next try, for the status page.
type WaitingTarget struct {
	Post    post.ID        `json:"post_id"`
	Account post.AccountID `json:"account_id"`
	NextTry time.Time      `json:"next_try"`
	Reason  string         `json:"reason,omitempty"`
}

// Waiting lists waiting targets, next try first, through targets_waiting.
// A limit ≤ 0 means no limit.
func (s *Store) Waiting(ctx context.Context, limit int) ([]WaitingTarget, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT post_id, account, next_try, reason FROM targets INDEXED BY targets_waiting
		WHERE status = 'waiting' ORDER BY next_try LIMIT ?`, sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("waiting targets: %w", err)
	}
	defer rows.Close()
	var out []WaitingTarget
	for rows.Next() {
		var w WaitingTarget
		var id, account, next string
		if err := rows.Scan(&id, &account, &next, &w.Reason); err != nil {
			return nil, fmt.Errorf("waiting targets: %w", err)
		}
		w.Post, w.Account = post.ID(id), post.AccountID(account)
		if w.NextTry, err = sqltime.Decode(next); err != nil {
			return nil, fmt.Errorf("waiting target %s/%s: %w", id, account, err)
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("waiting targets: %w", err)
	}
	return out, nil
}
