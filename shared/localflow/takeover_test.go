package localflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/localflow"
)

// namedTask is a Task whose payload carries the execution's name.
const namedTask = `{"StartAt": "T", "States": {
	"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
		"Parameters": {"FunctionName": "fn", "Payload": {"name.$": "$$.Execution.Name"}}, "End": true}}}`

// leaveClaim starts execution name of m on an engine of owner whose
// process "dies" while the task runs: the claim stays, due when its lease
// ends.
func (h *harness) leaveClaim(m *localflow.Machine, owner, name string) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inv := &fakeInvoker{clock: h.clock, reply: func(context.Context, call, int) (any, error) {
		cancel()
		return map[string]any{"lost": true}, nil
	}}
	e := h.engine(m, inv, owner)
	if err := e.Start(ctx, name, json.RawMessage(`{}`)); err != nil {
		h.t.Fatal(err)
	}
	if _, err := e.RunDue(ctx); !errors.Is(err, context.Canceled) {
		h.t.Fatalf("RunDue of %s = %v, want context.Canceled", owner, err)
	}
	if len(inv.Calls()) != 1 {
		h.t.Fatalf("%s: %d calls, want 1", owner, len(inv.Calls()))
	}
}

// invokedNames lists the execution names of the calls, sorted.
func invokedNames(calls []call) []string {
	var names []string
	for _, c := range calls {
		names = append(names, c.Payload["name"].(string))
	}
	slices.Sort(names)
	return names
}

func TestNewTakesOverGoneOwners(t *testing.T) {
	// Three processes died or live with a task in flight: "dead" (gone),
	// "alive" (still running), and "me", a previous run of the new engine's
	// own owner. The new engine runs at once the tasks of its own owner and
	// of the owners OwnerGone reports gone; the others when their lease
	// ends.
	tests := []struct {
		name    string
		gone    func(owner string) bool // nil: OwnerGone unset
		wantNow []string
	}{
		{"OwnerGone unset", nil, []string{"x-me"}},
		{"dead is gone", func(o string) bool { return o == "dead" }, []string{"x-dead", "x-me"}},
		{"nobody is gone", func(string) bool { return false }, []string{"x-me"}},
		{"everybody is gone", func(string) bool { return true }, []string{"x-alive", "x-dead", "x-me"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, namedTask)
			h.leaveClaim(h.m, "dead", "x-dead")
			h.leaveClaim(h.m, "alive", "x-alive")
			h.leaveClaim(h.m, "me", "x-me")
			h.clock.Advance(time.Minute)

			var (
				mu    sync.Mutex
				asked []string
			)
			opts := localflow.Options{Now: h.clock.Now, Invoker: h.inv, Logger: quietLogger(), Owner: "me"}
			if tt.gone != nil {
				opts.OwnerGone = func(owner string) bool {
					// Called outside any transaction: the single-connection
					// pool is free.
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					var one int
					if err := h.db.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
						t.Errorf("OwnerGone(%q): the database is busy: %v", owner, err)
					}
					mu.Lock()
					asked = append(asked, owner)
					mu.Unlock()
					return tt.gone(owner)
				}
			}
			e, err := localflow.New(context.Background(), h.db, h.m, opts)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if tt.gone != nil {
				slices.Sort(asked)
				if diff := cmp.Diff([]string{"alive", "dead"}, asked); diff != "" {
					t.Errorf("OwnerGone asked about (-want +got):\n%s", diff)
				}
			}
			h.e = e
			h.runDue()
			if diff := cmp.Diff(tt.wantNow, invokedNames(h.inv.Calls())); diff != "" {
				t.Errorf("tasks run at once (-want +got):\n%s", diff)
			}

			// The others when their lease ends, 15 minutes after the claim.
			h.clock.Advance(14*time.Minute - time.Second)
			h.runDue()
			if got := len(h.inv.Calls()); got != len(tt.wantNow) {
				t.Errorf("%d tasks ran before the leases ended, want %d", got, len(tt.wantNow))
			}
			h.clock.Advance(time.Second)
			h.runDue()
			if diff := cmp.Diff([]string{"x-alive", "x-dead", "x-me"}, invokedNames(h.inv.Calls())); diff != "" {
				t.Errorf("tasks run in all (-want +got):\n%s", diff)
			}
			list, err := h.e.List(context.Background(), localflow.StatusSucceeded)
			if err != nil || len(list) != 3 {
				t.Errorf("List(SUCCEEDED) = %d executions, %v; want 3", len(list), err)
			}
		})
	}
}
