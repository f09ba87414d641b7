package localcron

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/sqlitetx"
)

// utc is a minute in UTC.
func utc(y int, mo time.Month, d, h, mi int) time.Time {
	return time.Date(y, mo, d, h, mi, 0, 0, time.UTC)
}

// queryPlan returns the detail lines of EXPLAIN QUERY PLAN for query.
func queryPlan(t *testing.T, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	plan, err := sqlitetx.QueryPlan(context.Background(), db, query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return plan
}

// TestQueryPlans checks that the queries of Run's idle loop, of RunDue and
// of Prune go through an index to the rows they need (a SEARCH, or a SCAN
// of an index in its order under a LIMIT), never scan the table and never
// sort: their cost must not grow with the number of schedules.
func TestQueryPlans(t *testing.T) {
	_, _, _, db := newRunner(t, utc(2026, 1, 1, 0, 0))
	now := "2026-01-01T00:00:00.000000000Z"
	tests := []struct {
		name  string
		query string
		args  []any
		want  []string
	}{
		{"NextDue", sqlNextDue, nil, []string{
			"SCAN localcron_schedules USING COVERING INDEX localcron_schedules_next",
		}},
		{"sleepFor", sqlEarliest, []any{1}, []string{
			"SCAN localcron_schedules USING COVERING INDEX localcron_schedules_next",
		}},
		{"loadDue", sqlLoadDue, []any{now, "", "", dueBatch}, []string{
			"SEARCH localcron_schedules USING INDEX localcron_schedules_next ((next_fire,name)>(?,?) AND next_fire<?)",
		}},
		{"Prune", sqlPrune, []any{now, pruneBatch}, []string{
			"SEARCH localcron_schedules USING PRIMARY KEY (name=?)",
			"LIST SUBQUERY 1",
			"  SEARCH localcron_schedules USING INDEX localcron_schedules_ended (<expr><?)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, queryPlan(t, db, tt.query, tt.args...)); diff != "" {
				t.Errorf("query plan (-want +got):\n%s", diff)
			}
		})
	}
}
