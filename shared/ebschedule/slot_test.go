package ebschedule_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ebschedule"
	"oncepost/shared/publishing"
)

// TestPutSlotSendsCreateSchedule checks a slot schedule's request and that
// every post of a slot writes the same schedule: the second PutSlot of a
// slot carries the same ClientToken (a no-op for Scheduler), so there is
// one schedule per slot.
// API reference: API_CreateSchedule.html, API_UpdateSchedule.html.
func TestPutSlotSendsCreateSchedule(t *testing.T) {
	tests := []struct {
		name     string
		slot     string
		wantName string
		wantAt   string
	}{
		{"on the minute", "2026-12-01T09:00:00Z", "slot.20261201T090000Z", "2026-12-01T08:59:00"},
		{"mid-minute", "2026-12-01T09:00:30Z", "slot.20261201T090030Z", "2026-12-01T08:59:00"},
		{"another zone", "2026-12-01T10:00:59+01:00", "slot.20261201T090059Z", "2026-12-01T08:59:00"},
		{"sub-second", "2026-12-01T09:00:00.5Z", ebschedule.SlotName(at("2026-12-01T09:00:00.5Z")), "2026-12-01T08:59:00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, testGroup)
			c := newClient(t, f, 1, nil)
			slot := at(tt.slot)
			for range 2 {
				if err := c.PutSlot(bg, slot); err != nil {
					t.Fatalf("PutSlot: %v", err)
				}
			}
			if diff := cmp.Diff([]string{"POST " + tt.wantName, "POST " + tt.wantName}, methods(f.Calls())); diff != "" {
				t.Fatalf("calls (-want +got):\n%s", diff)
			}
			body := f.Calls()[0].Body
			stamp := slot.UTC().Format(time.RFC3339Nano)
			want := wireSchedule{
				ActionAfterCompletion: "DELETE", Description: "oncepost slot " + stamp,
				FlexibleTimeWindow: &wireFlexibleWindow{Mode: "OFF"}, GroupName: testGroup,
				ScheduleExpression: "at(" + tt.wantAt + ")", ScheduleExpressionTimezone: "UTC", State: "ENABLED",
				Target: &wireTarget{
					Arn: testFunction, RoleArn: testRole,
					Input:            ptr(`{"slot":"` + stamp + `","scheduled_time":"<aws.scheduler.scheduled-time>"}`),
					DeadLetterConfig: &wireDeadLetter{Arn: testDLQ},
					RetryPolicy:      &wireRetryPolicy{MaximumEventAgeInSeconds: ptr(7200), MaximumRetryAttempts: ptr(10)},
				},
			}
			if diff := cmp.Diff(want, *body, ignoreToken); diff != "" {
				t.Errorf("CreateSchedule body (-want +got):\n%s", diff)
			}
			if len(f.Names()) != 1 {
				t.Errorf("schedules = %v, want one for the slot", f.Names())
			}
			// What Scheduler hands the trigger decodes as a slot input.
			input, err := f.Fire(testGroup, tt.wantName)
			if err != nil {
				t.Fatal(err)
			}
			in, err := ebschedule.DecodeInput([]byte(input))
			if err != nil {
				t.Fatalf("DecodeInput(%s): %v", input, err)
			}
			if !in.AllDue() || !in.Slot.Equal(slot) {
				t.Errorf("decoded %+v: want a slot input for %s", in, stamp)
			}
		})
	}
}

// TestSlotNames checks that slot names are valid, distinct per slot and
// never collide with target or recurring schedules.
func TestSlotNames(t *testing.T) {
	base := at("2026-12-01T09:00:00Z")
	seen := map[string]time.Time{}
	for _, d := range []time.Duration{0, time.Nanosecond, time.Millisecond, 500 * time.Millisecond, time.Second, time.Minute} {
		slot := base.Add(d)
		n := ebschedule.SlotName(slot)
		if len(n) > ebschedule.MaxNameLen || !strings.HasPrefix(n, "slot.") {
			t.Errorf("SlotName(%s) = %q", slot.Format(time.RFC3339Nano), n)
		}
		if prev, ok := seen[n]; ok {
			t.Errorf("SlotName(%s) = SlotName(%s) = %q", slot.Format(time.RFC3339Nano), prev.Format(time.RFC3339Nano), n)
		}
		seen[n] = slot
		if ebschedule.Name(publishing.TargetRef{Post: "slot", Account: "x", Slot: slot}) == n {
			t.Errorf("a target schedule is named like slot %q", n)
		}
	}
	f := newFake(t, testGroup)
	c := newClient(t, f, 1, nil)
	if err := c.PutRecurring(bg, "slot.20261201T090000Z", "rate(1 minute)", "", []byte(`{}`)); !errors.Is(err, ebschedule.ErrInvalid) {
		t.Errorf("PutRecurring with a slot name = %v, want ErrInvalid", err)
	}
}

// TestPutSlotDue checks that a slot too close to schedule writes nothing.
func TestPutSlotDue(t *testing.T) {
	f := newFake(t, testGroup)
	c := newClient(t, f, 1, nil)
	if err := c.PutSlot(bg, testNow.Add(2*time.Minute-time.Second)); !errors.Is(err, ebschedule.ErrDue) {
		t.Fatalf("PutSlot = %v, want ErrDue", err)
	}
	if err := c.PutSlot(bg, time.Time{}); !errors.Is(err, ebschedule.ErrInvalid) {
		t.Errorf("PutSlot(zero) = %v, want ErrInvalid", err)
	}
	if n := len(f.Calls()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}
