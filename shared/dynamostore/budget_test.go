package dynamostore

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
)

// Budget reads what Pace took: an account's budget shrinks by each send
// paced at the same time, another account's stays whole.
func TestBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.store(t, e.tables(t, WorkspaceTable), nil, Options{})
	ctx := t.Context()
	rates := []platform.Rate{{Count: 10, Per: time.Minute}, {Count: 300, Per: 3 * time.Hour}}
	whole, err := s.Budget(ctx, "acct-a", rates, t0)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if wait, err := s.Pace(ctx, "acct-a", rates, t0); err != nil || wait != 0 {
			t.Fatalf("Pace = %v, %v", wait, err)
		}
	}
	got, err := s.Budget(ctx, "acct-a", rates, t0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{whole[0] - 3, whole[1] - 3}, got); diff != "" || whole[0] < 3 {
		t.Errorf("Budget after 3 sends (-want +got), the whole budget %v:\n%s", whole, diff)
	}
	if other, err := s.Budget(ctx, "acct-b", rates, t0); err != nil || !cmp.Equal(whole, other) {
		t.Errorf("another account's Budget = %v, %v; want the whole %v", other, err, whole)
	}
}
