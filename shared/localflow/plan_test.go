package localflow_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/sqlitetx"

	"oncepost/shared/localflow"
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

// TestQueryPlans checks that the queries of New, of every pass of Run
// (RunDue and its sleep) and of Prune reach their rows through an index,
// never scan localflow_executions or localflow_history and never sort:
// their cost must not grow with the number of stopped executions. The
// SCANs read a partial index of claimed executions, and localflow_machines
// (one row per stored definition).
func TestQueryPlans(t *testing.T) {
	h := newHarness(t, waitThenTask)
	now := "2026-01-01T00:00:00.000000000Z"
	tests := []struct {
		name  string
		query string
		args  []any
		want  []string
	}{
		{"New: claim owners", localflow.SQLClaimOwners, nil, []string{
			// The partial index holds the claimed executions only.
			"SCAN localflow_executions USING COVERING INDEX localflow_executions_claims",
		}},
		{"New: take over", localflow.SQLTakeOver, []any{now, "a"}, []string{
			"SEARCH localflow_executions USING INDEX localflow_executions_claims (owner=?)",
		}},
		{"RunDue", localflow.SQLDueNames, []any{now}, []string{
			"SEARCH localflow_executions USING COVERING INDEX localflow_executions_due (due_at<?)",
		}},
		{"sleepFor", localflow.SQLNextDue, nil, []string{
			"SEARCH localflow_executions USING COVERING INDEX localflow_executions_due",
		}},
		{"Prune: stopped", localflow.SQLStopped, []any{now, 100}, []string{
			"SEARCH localflow_executions USING INDEX localflow_executions_stopped (stopped_at<?)",
		}},
		{"Prune: history", localflow.SQLDeleteHistory, []any{"x"}, []string{
			"SEARCH localflow_history USING PRIMARY KEY (name=?)",
		}},
		{"Prune: execution", localflow.SQLDeleteStopped, []any{"x"}, []string{
			"SEARCH localflow_executions USING PRIMARY KEY (name=?)",
		}},
		{"Prune: definitions", localflow.SQLPruneMachines, []any{"h"}, []string{
			"SCAN localflow_machines",
			"CORRELATED SCALAR SUBQUERY 1",
			"  SEARCH localflow_executions USING COVERING INDEX localflow_executions_machine (machine=?)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, queryPlan(t, h.db, tt.query, tt.args...)); diff != "" {
				t.Errorf("query plan (-want +got):\n%s", diff)
			}
		})
	}
}
