package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"oncepost/shared/post"
	"oncepost/shared/sqlitetx"
)

// queryPlan returns the detail lines of EXPLAIN QUERY PLAN for query.
func queryPlan(t *testing.T, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	plan, err := sqlitetx.QueryPlan(context.Background(), db, query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return plan
}

// fullScan matches a plan line that reads a whole table, not an index.
var fullScan = regexp.MustCompile(`SCAN (targets|ledger)\s*$`)

// The periodic and start-up queries read only their partial indexes: no
// scan of a whole table, no sort of every matching row.
func TestQueryPlans(t *testing.T) {
	s := openTest(t, Options{})
	type want struct {
		name    string
		query   string
		args    []any
		indexes []string
	}
	cases := []want{
		{"Open", openQuery, []any{"2026", 10}, []string{"ledger_open"}},
		{"Due", dueQuery, []any{"2026", 10}, []string{"targets_due"}},
		{"Unfinished", unfinishedQuery, []any{"2026", 10}, []string{"targets_unfinished", "targets_waiting"}},
		{"Unscheduled", unscheduledQuery, []any{10}, []string{"targets_unscheduled"}},
		{"PruneLedger", expiredQuery, []any{"2026", 10}, []string{"ledger_expires"}},
		{"ByState(held)", heldQuery, []any{10}, []string{"ledger_held"}},
	}
	statuses := []post.TargetStatus{post.Scheduled, post.Triggered, post.Publishing, post.Waiting,
		post.Published, post.Failed, post.Held, post.Cancelled}
	index := map[post.TargetStatus]string{post.Scheduled: "targets_due", post.Triggered: "targets_unfinished",
		post.Publishing: "targets_unfinished", post.Waiting: "targets_waiting", post.Published: "targets_settled",
		post.Failed: "targets_settled", post.Held: "targets_settled", post.Cancelled: "targets_settled"}
	for _, st := range statuses {
		cases = append(cases, want{fmt.Sprintf("CountTargets(%s)", st), targetCounts[st], nil, []string{index[st]}})
	}
	if len(targetCounts) != len(statuses) {
		t.Errorf("targetCounts has %d statuses, want the %d target statuses", len(targetCounts), len(statuses))
	}
	// The check itself: counting every status is a scan, and is seen as one.
	if plan := queryPlan(t, s.r, `SELECT status, count(*) FROM targets GROUP BY status`); !slices.ContainsFunc(plan, fullScan.MatchString) {
		t.Errorf("the scan of every target is not recognised as one:\n%s", strings.Join(plan, "\n"))
	}
	for _, tc := range cases {
		plan := queryPlan(t, s.r, tc.query, tc.args...)
		text := strings.Join(plan, "\n")
		t.Logf("%s:\n%s", tc.name, text)
		for _, ix := range tc.indexes {
			if !strings.Contains(text, "INDEX "+ix) {
				t.Errorf("%s does not use index %s:\n%s", tc.name, ix, text)
			}
		}
		if slices.ContainsFunc(plan, fullScan.MatchString) || strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("%s scans a table or sorts:\n%s", tc.name, text)
		}
	}
}
