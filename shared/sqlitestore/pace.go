package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"oncepost/shared/pace"
	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqltime"
)

var _ publishing.Pacer = (*Store)(nil)

// Pace takes one send from the account's posting budget at now, in one
// write transaction: the writer connection serialises every Pace, so two
// workers never both take the last send.
func (s *Store) Pace(ctx context.Context, account post.AccountID, rates []platform.Rate, now time.Time) (time.Duration, error) {
	var wait time.Duration
	err := s.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT rate, tat FROM pace WHERE account = ?`, string(account))
		if err != nil {
			return err
		}
		tats := map[string]time.Time{}
		for rows.Next() {
			var rate, tat string
			if err := rows.Scan(&rate, &tat); err != nil {
				rows.Close()
				return err
			}
			t, err := sqltime.Decode(tat)
			if err != nil {
				rows.Close()
				return fmt.Errorf("pace %s %s: %w", account, rate, err)
			}
			tats[rate] = t
		}
		if err := rows.Close(); err != nil {
			return err
		}
		next, w, ok := pace.Take(tats, rates, now)
		if !ok {
			wait = w
			return nil
		}
		for rate, tat := range next {
			if _, err := tx.ExecContext(ctx, `INSERT INTO pace (account, rate, tat) VALUES (?, ?, ?)
				ON CONFLICT (account, rate) DO UPDATE SET tat = excluded.tat`, string(account), rate, sqltime.Encode(tat)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("pace %s: %w", account, err)
	}
	if wait == 0 {
		s.paceWrites.Add(1)
	}
	return wait, nil
}

// PaceTimes reads an account's posting budget as Pace keeps it: the
// GCRA time of each limit, by pace.Key (none for a limit never used).
// It takes nothing.
func (s *Store) PaceTimes(ctx context.Context, account post.AccountID) (map[string]time.Time, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT rate, tat FROM pace WHERE account = ?`, string(account))
	if err != nil {
		return nil, fmt.Errorf("pace times %s: %w", account, err)
	}
	defer rows.Close()
	tats := map[string]time.Time{}
	for rows.Next() {
		var rate, tat string
		if err := rows.Scan(&rate, &tat); err != nil {
			return nil, fmt.Errorf("pace times %s: %w", account, err)
		}
		t, err := sqltime.Decode(tat)
		if err != nil {
			return nil, fmt.Errorf("pace %s %s: %w", account, rate, err)
		}
		tats[rate] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pace times %s: %w", account, err)
	}
	return tats, nil
}

// Budget is, for each of rates, how many sends the account may make at
// now (pace.Left of PaceTimes): what GET /v1/accounts shows.
func (s *Store) Budget(ctx context.Context, account post.AccountID, rates []platform.Rate, now time.Time) ([]int, error) {
	tats, err := s.PaceTimes(ctx, account)
	if err != nil {
		return nil, err
	}
	return pace.Left(tats, rates, now), nil
}
