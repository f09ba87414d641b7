package pipeline

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"oncepost/shared/awsruntime/stacktest"
	"oncepost/shared/ebschedule"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/recurring"
)

// The sweeper function, built as for Lambda and run under the RIE on the
// stack, materializes a recurring rule stored in DynamoDB: the
// occurrences within the horizon become posts with their rule's ids and
// their slots' schedules; a second sweep (a duplicate delivery of the
// schedule) creates nothing more.
func TestSweeperMaterializesRecurringRules(t *testing.T) {
	s := stacktest.New(t)
	ctx := context.Background()
	acc, _ := s.AddAccount(t, "news")
	now := time.Now().UTC()
	r := recurring.Rule{ID: "tips", Revision: 1, Content: recurring.Content{Body: "Tip A", Variants: []string{"Tip B"}}, Accounts: []post.AccountID{acc.ID},
		Repeat: recurring.Repeat{EveryDays: 1, At: now.Add(3 * time.Hour).Format("15:04")}, TimeZone: "UTC", Start: now, Count: 10,
		CreatedAt: now, UpdatedAt: now}
	if err := s.Store.CreateRule(ctx, r); err != nil {
		t.Fatal(err)
	}
	sweep, _ := function(t, s, "sweeper")
	var rep publishing.SweepReport
	for i := range 2 {
		out, err := sweep(map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatal(err)
		}
		if want := []int{2, 0}[i]; rep.Recurring.Created != want || rep.Recurring.Problems != 0 {
			t.Fatalf("sweep %d: recurring %+v, want %d created", i+1, rep.Recurring, want)
		}
	}
	sched, err := r.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, o := range sched.After(recurring.Position{}, now.Add(publishing.DefaultHorizon), 0) {
		id := r.OccurrenceID(o.Slot)
		p, err := s.Store.GetPost(ctx, id)
		if err != nil || p.Targets[0].Status != post.Scheduled || !p.Targets[0].Slot.Equal(o.Slot) || p.Body != r.BodyAt(o.Index) {
			t.Errorf("occurrence %s: %+v, %v", id, p, err)
		}
		want = append(want, ebschedule.SlotName(o.Slot))
	}
	if names := s.Schedules.Names(); !slices.Equal(want, names) {
		t.Errorf("slot schedules %v, want %v", names, want)
	}
	stored, err := s.Store.GetRule(ctx, "tips")
	if err != nil || stored.Through.Index != 1 {
		t.Errorf("the rule after the sweeps: through %+v, %v; want its second occurrence", stored.Through, err)
	}
}
