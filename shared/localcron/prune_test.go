package localcron

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// scheduleNames lists the stored schedules by name.
func scheduleNames(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT name FROM localcron_schedules ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

func TestRunnerPrune(t *testing.T) {
	// At 2026-03-01 12:00, after the setup below:
	//   never-fired: a cron of 2025 only, Put on 2026-01-01: ended then
	//   fired-feb:   a cron of 2026-02-01 12:00 only, fired then
	//   fired-now:   a cron of 2026-03-01 12:00 only, just fired
	//   daily, failing (due, its Fire fails), later (a future at()) will fire.
	cutoff := utc(2026, 2, 15, 0, 0)
	kept := []string{"daily", "failing", "fired-now", "later"} // never pruned here
	plus := func(names ...string) []string { return slices.Sorted(slices.Values(append(names, kept...))) }
	tests := []struct {
		name        string
		before      time.Time
		limit       int
		wantDeleted int
		wantLeft    []string
	}{
		{"limit 1 takes the oldest", cutoff, 1, 1, plus("fired-feb")},
		{"limit above the count", cutoff, 10, 2, kept},
		{"no limit", cutoff, 0, 2, kept},
		{"negative limit is no limit", cutoff, -1, 2, kept},
		{"earlier cutoff", utc(2026, 1, 15, 0, 0), 0, 1, plus("fired-feb")},
		{"zero time prunes nothing", time.Time{}, 0, 0, plus("fired-feb", "never-fired")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			r, clk, tg, db := newRunner(t, utc(2026, 1, 1, 0, 0))
			mustPut(t, r, Entry{Name: "never-fired", Expression: "cron(0 12 * * ? 2025)"})
			mustPut(t, r, Entry{Name: "fired-feb", Expression: "cron(0 12 1 2 ? 2026)"})
			mustPut(t, r, Entry{Name: "fired-now", Expression: "cron(0 12 1 3 ? 2026)"})
			mustPut(t, r, Entry{Name: "daily", Expression: "rate(1 day)"})
			clk.Set(utc(2026, 2, 1, 12, 0))
			runDue(t, r)
			clk.Set(utc(2026, 3, 1, 12, 0))
			mustPut(t, r, Entry{Name: "failing", Expression: "at(2026-01-10T00:00:00)"})
			mustPut(t, r, Entry{Name: "later", Expression: "at(2026-04-01T00:00:00)"})
			tg.setFail("failing", errors.New("down"))
			if _, err := r.RunDue(ctx); err == nil {
				t.Fatal("RunDue: no error from the failing schedule")
			}
			if st := state(t, r, "fired-feb"); !st.NextFire.IsZero() || !st.LastFired.Equal(utc(2026, 2, 1, 12, 0)) {
				t.Fatalf("fired-feb: %+v, want fired on Feb 1st and ended", st)
			}

			n, err := r.Prune(ctx, tt.before, tt.limit)
			if err != nil || n != tt.wantDeleted {
				t.Errorf("Prune = %d, %v; want %d", n, err, tt.wantDeleted)
			}
			if diff := cmp.Diff(tt.wantLeft, scheduleNames(t, db)); diff != "" {
				t.Errorf("schedules left (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunnerPruneBatches(t *testing.T) {
	// More ended schedules than one batch: the limit holds across batches,
	// and no limit takes them all.
	ctx := context.Background()
	r, clk, _, db := newRunner(t, utc(2026, 1, 1, 0, 0))
	total := 2*pruneBatch + 17
	err := r.write(ctx, func(tx *sql.Tx) error {
		for i := range total {
			if err := r.PutTx(ctx, tx, Entry{Name: fmt.Sprintf("old-%04d", i), Expression: "cron(0 12 * * ? 2025)"}); err != nil {
				return err
			}
		}
		return r.PutTx(ctx, tx, Entry{Name: "live", Expression: "rate(1 hour)"})
	})
	if err != nil {
		t.Fatal(err)
	}
	clk.Set(utc(2026, 6, 1, 0, 0))
	limit := pruneBatch + 7
	if n, err := r.Prune(ctx, clk.Now(), limit); err != nil || n != limit {
		t.Fatalf("Prune(limit %d) = %d, %v", limit, n, err)
	}
	if got, want := len(scheduleNames(t, db)), total+1-limit; got != want {
		t.Errorf("%d schedules left after Prune(limit %d), want %d", got, limit, want)
	}
	if n, err := r.Prune(ctx, clk.Now(), 0); err != nil || n != total-limit {
		t.Fatalf("Prune(no limit) = %d, %v; want %d", n, err, total-limit)
	}
	if diff := cmp.Diff([]string{"live"}, scheduleNames(t, db)); diff != "" {
		t.Errorf("schedules left (-want +got):\n%s", diff)
	}
}
