package publishing_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/post"
)

// queueEnv is a desk env whose account "news" posts daily at 09:00 and
// 12:00 in Berlin (deskNow is 09:00 there), with q1..qn in its queue.
func queueEnv(t *testing.T, n int, slots ...string) *deskEnv {
	t.Helper()
	e := newDeskEnv(t)
	e.desk.Queue = e.store
	setSlots(t, e, "Europe/Berlin", slots...)
	for i := 1; i <= n; i++ {
		d := post.Draft{ID: fmt.Sprintf("q%d", i), Body: fmt.Sprintf("queued %d", i), Queue: true, Targets: []post.DraftTarget{{Account: "news"}}}
		if _, err := e.desk.Schedule(t.Context(), d, nil, nil); err != nil {
			t.Fatalf("Schedule(%s) = %v", d.ID, err)
		}
	}
	return e
}

func setSlots(t *testing.T, e *deskEnv, zone string, slots ...string) {
	t.Helper()
	a, err := e.store.GetAccount(t.Context(), "news")
	if err != nil {
		t.Fatal(err)
	}
	a.TimeZone, a.Slots = zone, slots
	if err := e.store.PutAccount(t.Context(), a); err != nil {
		t.Fatal(err)
	}
}

// queueOf is the account's queue as "post@local time", in slot order,
// after checking that every queued post holds the claim of its slot and
// no claim is left over.
func queueOf(t *testing.T, e *deskEnv) []string {
	t.Helper()
	v, err := e.desk.ShowQueue(t.Context(), "news", 0)
	if err != nil {
		t.Fatalf("ShowQueue = %v", err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	var out []string
	for _, q := range v.Entries {
		out = append(out, string(q.Post)+"@"+q.Slot.In(berlin).Format("Jan 2 15:04"))
	}
	claims, err := e.store.QueueSlotClaims(t.Context(), "news", deskNow, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != len(v.Entries) {
		t.Errorf("%d claims for %d queued posts: %v", len(claims), len(v.Entries), claims)
	}
	return out
}

var twoDaily = []string{"cron(0 9 * * ? *)", "cron(0 12 * * ? *)"}

func TestQueueTakesTheNextFreeSlots(t *testing.T) {
	e := queueEnv(t, 4, twoDaily...)
	want := []string{"q1@Dec 1 12:00", "q2@Dec 2 09:00", "q3@Dec 2 12:00", "q4@Dec 3 09:00"}
	if diff := cmp.Diff(want, queueOf(t, e)); diff != "" {
		t.Errorf("queue (-want +got):\n%s", diff)
	}
	// A post at a time given by hand is not in the queue, and leaves its
	// slots alone.
	d := post.Draft{ID: "fixed", Body: "fixed", Targets: []post.DraftTarget{{Account: "news", At: "2026-12-01T12:00:00+01:00"}}}
	if _, err := e.desk.Schedule(t.Context(), d, nil, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, queueOf(t, e)); diff != "" {
		t.Errorf("queue after an exact-time post (-want +got):\n%s", diff)
	}
	// Cancelling frees the slot for the next post; rescheduling by hand
	// takes the post out of the queue.
	if _, err := e.desk.Cancel(t.Context(), "q2", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.desk.Reschedule(t.Context(), "q3", "", deskNow.Add(30*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"q5", "q6", "q7"} {
		d := post.Draft{ID: id, Body: id, Queue: true, Targets: []post.DraftTarget{{Account: "news"}}}
		if _, err := e.desk.Schedule(t.Context(), d, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	want = []string{"q1@Dec 1 12:00", "q5@Dec 2 09:00", "q6@Dec 2 12:00", "q4@Dec 3 09:00", "q7@Dec 3 12:00"}
	if diff := cmp.Diff(want, queueOf(t, e)); diff != "" {
		t.Errorf("queue after a cancel and a move by hand (-want +got):\n%s", diff)
	}
}

func TestQueueReorder(t *testing.T) {
	e := queueEnv(t, 4, twoDaily...)
	moves, err := e.desk.ReorderQueue(t.Context(), "news", []post.ID{"q4", "q2"})
	if err != nil {
		t.Fatalf("ReorderQueue = %v", err)
	}
	want := []string{"q4@Dec 1 12:00", "q2@Dec 2 09:00", "q1@Dec 2 12:00", "q3@Dec 3 09:00"}
	if diff := cmp.Diff(want, queueOf(t, e)); diff != "" {
		t.Errorf("queue after reorder q4, q2 (-want +got):\n%s", diff)
	}
	if len(moves) != 3 { // q2 stays at Dec 2 09:00
		t.Errorf("%d moves, want 3: %+v", len(moves), moves)
	}
	// Reordering into the order it has moves nothing.
	moves, err = e.desk.ReorderQueue(t.Context(), "news", []post.ID{"q4"})
	if err != nil || len(moves) != 0 {
		t.Errorf("ReorderQueue(same order) = %+v, %v; want no moves", moves, err)
	}
	_, err = e.desk.ReorderQueue(t.Context(), "news", []post.ID{"q1", "nope", "q1"})
	if diff := cmp.Diff([]string{"posts[1]", "posts[2]"}, fields(err)); diff != "" {
		t.Errorf("ReorderQueue(bad names) fields (-want +got):\n%s\n%v", diff, err)
	}
}

func TestQueueShuffleIsDeterministic(t *testing.T) {
	var orders [][]string
	for range 2 {
		e := queueEnv(t, 6, twoDaily...)
		if _, err := e.desk.ShuffleQueue(t.Context(), "news", 42); err != nil {
			t.Fatalf("ShuffleQueue = %v", err)
		}
		orders = append(orders, queueOf(t, e))
	}
	if diff := cmp.Diff(orders[0], orders[1]); diff != "" {
		t.Errorf("the same queue shuffled with the same seed differs (-first +second):\n%s", diff)
	}
	var ids []string
	for _, q := range orders[0] {
		ids = append(ids, q[:2])
	}
	if slices.IsSorted(ids) {
		t.Errorf("shuffle left the order as it was: %v", orders[0])
	}
	slices.Sort(ids)
	if diff := cmp.Diff([]string{"q1", "q2", "q3", "q4", "q5", "q6"}, ids); diff != "" {
		t.Errorf("shuffle lost or doubled posts (-want +got):\n%s", diff)
	}
}

// Removing a slot rule moves the queued posts, in their order, onto the
// slots that are left; adding one moves them earlier.
func TestQueueFollowsItsSlots(t *testing.T) {
	e := queueEnv(t, 4, twoDaily...)
	setSlots(t, e, "Europe/Berlin", "cron(0 9 * * ? *)")
	if _, err := e.desk.ArrangeQueue(t.Context(), "news"); err != nil {
		t.Fatalf("ArrangeQueue = %v", err)
	}
	want := []string{"q1@Dec 2 09:00", "q2@Dec 3 09:00", "q3@Dec 4 09:00", "q4@Dec 5 09:00"}
	if diff := cmp.Diff(want, queueOf(t, e)); diff != "" {
		t.Errorf("queue after the 12:00 slot was removed (-want +got):\n%s", diff)
	}
	setSlots(t, e, "Europe/Berlin", "cron(0 9,12,17 * * ? *)")
	if _, err := e.desk.ArrangeQueue(t.Context(), "news"); err != nil {
		t.Fatalf("ArrangeQueue = %v", err)
	}
	want = []string{"q1@Dec 1 12:00", "q2@Dec 1 17:00", "q3@Dec 2 09:00", "q4@Dec 2 12:00"}
	if diff := cmp.Diff(want, queueOf(t, e)); diff != "" {
		t.Errorf("queue after slots were added (-want +got):\n%s", diff)
	}
}

// A queue with no slots, or a post queued to an account without any, is
// refused naming the target.
func TestQueueRefusals(t *testing.T) {
	e := newDeskEnv(t)
	e.desk.Queue = e.store
	d := post.Draft{ID: "q", Body: "q", Queue: true, Targets: []post.DraftTarget{{Account: "news"}}}
	_, err := e.desk.Schedule(t.Context(), d, nil, nil)
	if diff := cmp.Diff([]string{"targets[0].at"}, fields(err)); diff != "" {
		t.Errorf("Schedule(queue, no slots) fields (-want +got):\n%s\n%v", diff, err)
	}
	d.Queue = false
	_, err = e.desk.Schedule(t.Context(), d, nil, nil)
	if diff := cmp.Diff([]string{"targets[0].at"}, fields(err)); diff != "" {
		t.Errorf("Schedule(no time, not queued) fields (-want +got):\n%s\n%v", diff, err)
	}
}

// A time without an offset is refused unless the draft says to read it
// in the account's zone; then it is read there, DST included.
func TestDraftTimesInTheAccountZone(t *testing.T) {
	e := newDeskEnv(t)
	setSlots(t, e, "America/New_York")
	tests := []struct {
		at, timesIn string
		want        string // UTC, or "" for a refusal on targets[0].at
	}{
		{"2026-12-05T09:00", "", ""},
		{"2026-12-05T09:00", "account", "2026-12-05T14:00:00Z"},
		{"2026-12-05 09:00", "account", "2026-12-05T14:00:00Z"},
		{"2026-12-05T09:00:00+01:00", "account", "2026-12-05T08:00:00Z"}, // an offset given wins
		{"2027-03-14T02:30", "account", "2027-03-14T07:30:00Z"},          // in the spring-forward gap: 03:30 EDT
		{"2027-11-07T01:30", "account", "2027-11-07T05:30:00Z"},          // in the fall-back overlap: the first, EDT
	}
	for i, tt := range tests {
		d := post.Draft{ID: fmt.Sprintf("tz%d", i), Body: "b", TimesIn: tt.timesIn, Targets: []post.DraftTarget{{Account: "news", At: tt.at}}}
		p, err := e.desk.Validate(context.Background(), d, nil)
		if tt.want == "" {
			if diff := cmp.Diff([]string{"targets[0].at"}, fields(err)); diff != "" {
				t.Errorf("%q times_in %q: fields (-want +got):\n%s\n%v", tt.at, tt.timesIn, diff, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q times_in %q: %v", tt.at, tt.timesIn, err)
			continue
		}
		if got := p.Targets[0].Slot.Format(time.RFC3339); got != tt.want {
			t.Errorf("%q times_in %q: slot %s, want %s", tt.at, tt.timesIn, got, tt.want)
		}
	}
	_, err := e.desk.Validate(context.Background(), post.Draft{ID: "x", Body: "b", TimesIn: "local", Targets: []post.DraftTarget{{Account: "news", At: "2026-12-05T09:00:00Z"}}}, nil)
	if diff := cmp.Diff([]string{"times_in"}, fields(err)); diff != "" {
		t.Errorf("times_in local: fields (-want +got):\n%s\n%v", diff, err)
	}
}
