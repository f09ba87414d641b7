package ebevents

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ebevents/ebeventstest"
	"oncepost/shared/emulatortest"
	"oncepost/shared/publishing"
)

var t0 = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

func testEvents(n int) []publishing.Event {
	evs := make([]publishing.Event, n)
	for i := range evs {
		at := t0.Add(time.Duration(i) * time.Second)
		evs[i] = publishing.Event{ID: publishing.EventID("t", fmt.Sprint(i)), Type: publishing.EventPublished, At: at,
			Post: "p-1", Account: "acct", Slot: t0, Status: "published", RemoteID: fmt.Sprint("r", i)}
	}
	return evs
}

// newBus is a Bus on the fake, its SDK client trying each call once (so
// a failed call is the Bus's to handle), no pause between rounds.
func newBus(t *testing.T, fake *ebeventstest.Server) *Bus {
	t.Helper()
	cfg := emulatortest.AWSConfig(t, fake.URL())
	cfg.RetryMaxAttempts = 1
	cfg.Retryer = nil
	b, err := New(eventbridge.NewFromConfig(cfg), "oncepost-test-bus", Options{Pause: func(int) time.Duration { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every event is put once, ten per call, with the fields rules match on:
// source, detail-type the event type, detail the event's JSON, the time.
func TestPutEntries(t *testing.T) {
	fake := ebeventstest.Start(t)
	b := newBus(t, fake)
	evs := testEvents(23)
	for i, err := range b.Put(context.Background(), evs) {
		if err != nil {
			t.Errorf("event %d: %v", i, err)
		}
	}
	var sizes []int
	for _, c := range fake.Calls() {
		sizes = append(sizes, len(c))
	}
	if diff := cmp.Diff([]int{10, 10, 3}, sizes); diff != "" {
		t.Errorf("entries per call (-want +got):\n%s", diff)
	}
	got := fake.Accepted()
	if len(got) != len(evs) {
		t.Fatalf("%d entries accepted, want %d", len(got), len(evs))
	}
	for i, e := range got {
		var detail publishing.Event
		if err := json.Unmarshal([]byte(e.Detail), &detail); err != nil {
			t.Fatal(err)
		}
		want := ebeventstest.Entry{EventBusName: "oncepost-test-bus", Source: "oncepost", DetailType: "post.published", Detail: e.Detail, Time: float64(evs[i].At.Unix())}
		if diff := cmp.Diff(want, e); diff != "" {
			t.Errorf("entry %d (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff(evs[i], detail); diff != "" {
			t.Errorf("entry %d's detail (-want +got):\n%s", i, diff)
		}
	}
}

// A partial failure (HTTP 200, FailedEntryCount) sends again only the
// entries that failed: nothing is put twice, nothing is lost.
func TestPutResendsOnlyFailedEntries(t *testing.T) {
	fake := ebeventstest.Start(t)
	b := newBus(t, fake)
	fake.FailEntries(func(call, i int, _ ebeventstest.Entry) bool { return call == 0 && (i == 1 || i == 4) })
	evs := testEvents(12)
	for i, err := range b.Put(context.Background(), evs) {
		if err != nil {
			t.Errorf("event %d: %v", i, err)
		}
	}
	calls := fake.Calls()
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3 (10, 2, then the 2 that failed)", len(calls))
	}
	if diff := cmp.Diff([]string{calls[0][1].Detail, calls[0][4].Detail}, []string{calls[2][0].Detail, calls[2][1].Detail}); diff != "" || len(calls[2]) != 2 {
		t.Errorf("the resend is not exactly the failed entries (-failed +resent):\n%s", diff)
	}
	seen := map[string]int{}
	for _, e := range fake.Accepted() {
		seen[e.Detail]++
	}
	for _, ev := range evs {
		d, _ := json.Marshal(ev)
		if seen[string(d)] != 1 {
			t.Errorf("event %s put %d times, want once", ev.ID, seen[string(d)])
		}
	}
}

// An entry that keeps failing gives its event an error after the rounds
// allowed; the others are put. A call that fails as a whole is sent
// again.
func TestPutGivesUp(t *testing.T) {
	fake := ebeventstest.Start(t)
	b := newBus(t, fake)
	evs := testEvents(3)
	fake.FailEntries(func(_, _ int, e ebeventstest.Entry) bool { return strings.Contains(e.Detail, `"r1"`) })
	fake.FailNextCall(http.StatusInternalServerError)
	errs := b.Put(context.Background(), evs)
	if errs[0] != nil || errs[2] != nil {
		t.Errorf("errors %v, want the first and last put", errs)
	}
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "InternalFailure") {
		t.Errorf("error of the failing event = %v, want its ErrorCode", errs[1])
	}
	if n := len(fake.Calls()); n != DefaultRounds {
		t.Errorf("%d calls, want %d rounds", n, DefaultRounds)
	}
	if n := len(fake.Accepted()); n != 2 {
		t.Errorf("%d accepted, want 2", n)
	}
}

// The entry itself: Entry is what the notifier's rules match.
func TestEntry(t *testing.T) {
	ev := testEvents(1)[0]
	e, err := Entry("bus", ev)
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(e.Source) != "oncepost" || aws.ToString(e.DetailType) != "post.published" || aws.ToString(e.EventBusName) != "bus" || !e.Time.Equal(ev.At) {
		t.Errorf("entry %+v", e)
	}
	if _, err := New(nil, "bus", Options{}); err == nil {
		t.Error("New without a client accepted")
	}
	if _, err := New(eventbridge.New(eventbridge.Options{}), "", Options{}); err == nil {
		t.Error("New without a bus name accepted")
	}
}
