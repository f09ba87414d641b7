package localflow_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/localflow"
)

// endings ends as its input's "end" says: "fail", "wait" (a day, then
// succeed), any other string succeeds.
const endings = `{"StartAt": "C", "States": {
	"C": {"Type": "Choice", "Choices": [
		{"Variable": "$.end", "StringEquals": "fail", "Next": "F"},
		{"Variable": "$.end", "StringEquals": "wait", "Next": "W"}], "Default": "S"},
	"F": {"Type": "Fail", "Error": "Boom"},
	"W": {"Type": "Wait", "Seconds": 86400, "Next": "S"},
	"S": {"Type": "Succeed"}}}`

// executionNames lists every execution, sorted by name.
func executionNames(t *testing.T, e *localflow.Engine) []string {
	t.Helper()
	list, err := e.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range list {
		names = append(names, x.Name)
	}
	slices.Sort(names)
	return names
}

// countRows counts the rows of table (optionally of one execution name).
func countRows(t *testing.T, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestPrune(t *testing.T) {
	// done-1 succeeds at t0, failed-1 fails at t0+1m, done-2 succeeds at
	// t0+2m; waiting (in a day-long Wait) and claimed (its task in flight)
	// keep running whatever the cutoff.
	running := []string{"claimed", "waiting"}
	all := func(names ...string) []string { return slices.Sorted(slices.Values(append(names, running...))) }
	tests := []struct {
		name        string
		before      time.Time
		limit       int
		wantDeleted int
		wantLeft    []string
	}{
		{"before the second minute", t0.Add(90 * time.Second), 0, 2, all("done-2")},
		{"limit 1 takes the oldest", t0.Add(90 * time.Second), 1, 1, all("done-2", "failed-1")},
		{"everything stopped", t0.Add(time.Hour), 0, 3, all()},
		{"limit above the count", t0.Add(time.Hour), 50, 3, all()},
		{"cutoff at a stop time excludes it", t0, 0, 0, all("done-1", "done-2", "failed-1")},
		{"zero time prunes nothing", time.Time{}, 0, 0, all("done-1", "done-2", "failed-1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			m, err := localflow.Load([]byte(endings), nil)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarnessFor(t, m)
			h.start("waiting", `{"end": "wait"}`)
			h.start("done-1", `{"end": "ok"}`)
			h.runDue()
			h.clock.Advance(time.Minute)
			h.start("failed-1", `{"end": "fail"}`)
			h.runDue()
			h.clock.Advance(time.Minute)
			h.start("done-2", `{"end": "ok"}`)
			h.runDue()
			// A task claimed by an engine that died, on the same file.
			mt, err := localflow.Load([]byte(namedTask), nil)
			if err != nil {
				t.Fatal(err)
			}
			h.leaveClaim(mt, "dead", "claimed")
			historyOf := func(name string) int {
				return countRows(t, h.db, `SELECT count(*) FROM localflow_history WHERE name = ?`, name)
			}
			if n := historyOf("done-1"); n != 2 {
				t.Fatalf("done-1 has %d history entries before Prune, want 2", n)
			}

			n, err := h.e.Prune(ctx, tt.before, tt.limit)
			if err != nil || n != tt.wantDeleted {
				t.Errorf("Prune = %d, %v; want %d", n, err, tt.wantDeleted)
			}
			left := executionNames(t, h.e)
			if diff := cmp.Diff(tt.wantLeft, left); diff != "" {
				t.Errorf("executions left (-want +got):\n%s", diff)
			}
			for _, name := range []string{"done-1", "done-2", "failed-1"} {
				if slices.Contains(left, name) {
					continue
				}
				if n := historyOf(name); n != 0 {
					t.Errorf("pruned %s still has %d history entries", name, n)
				}
				if _, err := h.e.Describe(ctx, name); !errors.Is(err, localflow.ErrExecutionDoesNotExist) {
					t.Errorf("Describe(%s) after Prune = %v, want ErrExecutionDoesNotExist", name, err)
				}
			}
			if ex := h.describe("waiting"); ex.Status != localflow.StatusRunning || len(ex.History) != 2 {
				t.Errorf("waiting after Prune: %s with history %q, want RUNNING with 2 states", ex.Status, ex.History)
			}
		})
	}
}

func TestPruneNameReusable(t *testing.T) {
	// As in Step Functions once the closed execution is removed, a pruned
	// name can be started again.
	m, err := localflow.Load([]byte(endings), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessFor(t, m)
	h.start("x", `{"end": "fail"}`)
	h.runDue()
	if err := h.e.Start(context.Background(), "x", json.RawMessage(`{}`)); !errors.Is(err, localflow.ErrExecutionAlreadyExists) {
		t.Fatalf("Start of a stopped name = %v, want ErrExecutionAlreadyExists", err)
	}
	h.clock.Advance(time.Second)
	if n, err := h.e.Prune(context.Background(), h.clock.Now(), 0); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want 1", n, err)
	}
	h.start("x", `{"end": "ok"}`)
	h.runDue()
	ex := h.describe("x")
	if diff := cmp.Diff([]string{"C", "S"}, ex.History); ex.Status != localflow.StatusSucceeded || diff != "" {
		t.Errorf("restarted x: %s, history (-want +got):\n%s", ex.Status, diff)
	}
}

func TestPruneBatches(t *testing.T) {
	// More stopped executions than one transaction deletes: the limit
	// holds across batches, and no limit takes them all.
	ctx := context.Background()
	m, err := localflow.Load([]byte(endings), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessFor(t, m)
	total := 2*localflow.PruneBatch + 13
	for i := range total {
		h.start(fmt.Sprintf("x-%04d", i), `{"end": "ok"}`)
	}
	h.runDue()
	h.clock.Advance(time.Second)
	limit := localflow.PruneBatch + 5
	if n, err := h.e.Prune(ctx, h.clock.Now(), limit); err != nil || n != limit {
		t.Fatalf("Prune(limit %d) = %d, %v", limit, n, err)
	}
	if got := len(executionNames(t, h.e)); got != total-limit {
		t.Errorf("%d executions left, want %d", got, total-limit)
	}
	if n, err := h.e.Prune(ctx, h.clock.Now(), 0); err != nil || n != total-limit {
		t.Fatalf("Prune(no limit) = %d, %v; want %d", n, err, total-limit)
	}
	if n := countRows(t, h.db, `SELECT count(*) FROM localflow_history`); n != 0 {
		t.Errorf("%d history rows left, want 0", n)
	}
}

func TestPruneDefinitions(t *testing.T) {
	// A definition stays while an execution uses it, and the engine's own
	// always; an engine whose definition was pruned stores it again when
	// it starts an execution, so that other engines can run it.
	ctx := context.Background()
	defV := func(v string) *localflow.Machine {
		m, err := localflow.Load([]byte(`{"StartAt": "W", "States": {
			"W": {"Type": "Wait", "Seconds": 10, "Next": "P"},
			"P": {"Type": "Pass", "Result": "`+v+`", "End": true}}}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	v1, v2 := defV("v1"), defV("v2")
	h := newHarnessFor(t, v1)
	definitions := func() int { return countRows(t, h.db, `SELECT count(*) FROM localflow_machines`) }
	h.start("old", `{}`)
	h.runDue()
	eV1 := h.e
	h.e = h.engine(v2, h.inv, "test") // the upgraded process
	if n := definitions(); n != 2 {
		t.Fatalf("%d definitions stored, want 2", n)
	}
	if _, err := h.e.Prune(ctx, h.clock.Now(), 0); err != nil {
		t.Fatal(err)
	}
	if n := definitions(); n != 2 {
		t.Errorf("%d definitions after Prune while old runs on v1, want 2", n)
	}
	h.clock.Advance(10 * time.Second)
	h.runDue()
	h.clock.Advance(time.Second)
	if n, err := h.e.Prune(ctx, h.clock.Now(), 0); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want old pruned", n, err)
	}
	if n := definitions(); n != 1 {
		t.Errorf("%d definitions after old was pruned, want 1 (v2, the engine's own)", n)
	}

	// A process still on v1 starts an execution; a fresh v2 engine runs it.
	if err := eV1.Start(ctx, "late", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	h.e = h.engine(v2, h.inv, "test")
	h.runDue()
	h.clock.Advance(10 * time.Second)
	h.runDue()
	ex := h.describe("late")
	if ex.Status != localflow.StatusSucceeded {
		t.Fatalf("late: %s (%s: %s), want SUCCEEDED", ex.Status, ex.Error, ex.Cause)
	}
	jsonEqual(t, `"v1"`, ex.Output)
}
