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

// fullScan matches a plan line that reads a whole table, or the whole of
// an index that holds every row of its table (not a partial one). (The
// events log is read in its own order from one end, up to a limit: a
// "SCAN events" there stops at the limit; no sort says it is in order.)
var fullScan = regexp.MustCompile(`SCAN (targets|ledger|deliveries)(\s*$| USING (COVERING )?INDEX targets_by_account\b)`)

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
		{"ListPosts(held)", listQuery([]post.TargetStatus{post.Held}, false, false, false), nil, []string{"targets_settled"}},
		{"ListPosts(scheduled, held, failed; account)", listQuery([]post.TargetStatus{post.Scheduled, post.Held, post.Failed}, true, false, false),
			[]any{"acct"}, []string{"targets_due", "targets_settled"}},
		{"ListPosts(account)", listQuery(nil, true, false, false), []any{"acct"}, []string{"targets_by_account"}},
		{"ListPostPage(held; after)", listQuery([]post.TargetStatus{post.Held}, false, true, false), []any{"", "2026", "p"}, []string{"targets_settled"}},
		{"ListPostPage(scheduled, held; account; after)", listQuery([]post.TargetStatus{post.Scheduled, post.Held}, true, true, false),
			[]any{"acct", "2026", "p"}, []string{"targets_due", "targets_settled"}},
		{"ListPostPage(account; after)", listQuery(nil, true, true, false), []any{"acct", "2026", "p"}, []string{"targets_by_account"}},
		{"ListPostPage(scheduled, published, failed; window)", listQuery([]post.TargetStatus{post.Scheduled, post.Published, post.Failed}, false, false, true),
			[]any{"", "", "", "2026-12-01", "2026-12-08"},
			[]string{"targets_due", "targets_settled"}},
		{"ListPostPage(account; window; after)", listQuery(nil, true, true, true), []any{"acct", "2026-12-02", "p", "2026-12-01", "2026-12-08"},
			[]string{"targets_by_account"}},
		{"ListPostPage(scheduled; account; window)", listQuery([]post.TargetStatus{post.Scheduled}, true, false, true),
			[]any{"acct", "", "", "2026-12-01", "2026-12-08"}, []string{"targets_due"}},
		{"NextVisible", nextVisibleQuery, []any{"publish"}, []string{"queue_messages_visible"}},
		{"ClaimDeliveries", claimQuery, []any{"2026", 10}, []string{"deliveries_due"}},
		{"ListDeliveries(dead)", listDeliveriesQuery, []any{"dead", 10}, []string{"deliveries_by_state"}},
		{"ListDeliveries(every state)", listAllDeliveriesQuery, []any{10}, []string{"deliveries_by_state"}},
		{"PruneOutbox(deliveries)", pruneDeliveriesQuery, []any{"delivered", "2026", 10}, []string{"deliveries_by_state"}},
		{"PruneOutbox(events)", pruneEventsQuery, []any{"2026", 10}, nil},
		{"RemoveSubscription(pending)", removePendingQuery, []any{"wh_a"}, []string{"deliveries_due"}},
		{"RemoveSubscription(dead)", removeDeadQuery, []any{"wh_a"}, []string{"deliveries_by_state"}},
		{"RecentEvents", recentEventsQuery, []any{10}, nil},
		{"NextDeliveryDue", nextDueQuery, nil, []string{"deliveries_due"}},
		{"PruneIdempotencyKeys", keysPruneQuery, []any{"2026", 10}, []string{"idempotency_keys_created"}},
	}
	statuses := []post.TargetStatus{post.NeedsApproval, post.Scheduled, post.Triggered, post.Publishing, post.Waiting,
		post.Published, post.Failed, post.Held, post.Cancelled, post.Deleted}
	index := map[post.TargetStatus]string{post.NeedsApproval: "targets_approval", post.Scheduled: "targets_due", post.Triggered: "targets_unfinished",
		post.Publishing: "targets_unfinished", post.Waiting: "targets_waiting", post.Published: "targets_settled",
		post.Failed: "targets_settled", post.Held: "targets_settled", post.Cancelled: "targets_settled", post.Deleted: "targets_settled"}
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
	// Listing every status (or the transient ones) sorts the triggered,
	// publishing and waiting targets, and only those.
	all := queryPlan(t, s.r, listQuery(allStatuses, false, false, false))
	t.Logf("ListPosts(every status):\n%s", strings.Join(all, "\n"))
	for _, ix := range []string{"targets_due", "targets_unfinished", "targets_waiting", "targets_settled"} {
		if !slices.ContainsFunc(all, func(l string) bool { return strings.Contains(l, "INDEX "+ix) }) {
			t.Errorf("ListPosts(every status) does not use index %s", ix)
		}
	}
	if slices.ContainsFunc(all, fullScan.MatchString) {
		t.Errorf("ListPosts(every status) scans a table")
	}
	if n := len(slices.DeleteFunc(slices.Clone(all), func(l string) bool { return !strings.Contains(l, "TEMP B-TREE") })); n != 3 {
		t.Errorf("ListPosts(every status) sorts %d ranges, want 3 (triggered, publishing, waiting)", n)
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
		// A window is a range of the index, not a filter of what it reads.
		if strings.Contains(tc.name, "window") && !strings.Contains(text, "slot>? AND slot<?") {
			t.Errorf("%s reads more than the window's slots:\n%s", tc.name, text)
		}
		if slices.ContainsFunc(plan, fullScan.MatchString) || strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("%s scans a table or sorts:\n%s", tc.name, text)
		}
	}
}
