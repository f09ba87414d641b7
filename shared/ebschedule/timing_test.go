package ebschedule_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ebschedule"
	"oncepost/shared/publishing"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestFireTime checks the early firing time: the start of the last whole
// minute that ends at or before the slot.
// Reference: https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html
// ("60 second precision": a 1:00 schedule invokes between 1:00:00 and
// 1:00:59); API_CreateSchedule.html (at(yyyy-mm-ddThh:mm:ss)).
func TestFireTime(t *testing.T) {
	tests := []struct {
		slot, want string
	}{
		{"2026-12-01T09:00:00Z", "2026-12-01T08:59:00Z"},
		{"2026-12-01T09:00:00.000000001Z", "2026-12-01T08:59:00Z"},
		{"2026-12-01T09:00:30Z", "2026-12-01T08:59:00Z"},
		{"2026-12-01T09:00:59.999Z", "2026-12-01T08:59:00Z"},
		{"2026-12-01T09:01:00Z", "2026-12-01T09:00:00Z"},
		{"2026-12-01T10:00:30+01:00", "2026-12-01T08:59:00Z"},
		{"2026-12-01T04:30:15-04:30", "2026-12-01T08:59:00Z"},
		{"2027-01-01T00:00:00Z", "2026-12-31T23:59:00Z"},
		{"2028-03-01T00:00:45Z", "2028-02-29T23:59:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.slot, func(t *testing.T) {
			got := ebschedule.FireTime(at(tt.slot))
			if diff := cmp.Diff(at(tt.want), got); diff != "" {
				t.Errorf("FireTime (-want +got):\n%s", diff)
			}
			if got.Location() != time.UTC {
				t.Errorf("FireTime is in %s, want UTC", got.Location())
			}
		})
	}
}

// TestDelay checks the SQS DelaySeconds the trigger uses: the time left
// rounded up to a whole second, within 0-900 s.
// Reference: SQS SendMessage DelaySeconds, 0 to 900
// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html).
func TestDelay(t *testing.T) {
	slot := at("2026-12-01T09:00:00Z")
	tests := []struct {
		name string
		slot time.Time
		now  time.Time
		want time.Duration
	}{
		{"fired at the start of the early minute", slot, at("2026-12-01T08:59:00Z"), 60 * time.Second},
		{"fired at the end of the early minute", slot, at("2026-12-01T08:59:59.999Z"), time.Second},
		{"fraction rounds up", slot, at("2026-12-01T08:59:29.4Z"), 31 * time.Second},
		{"a nanosecond left", slot, slot.Add(-time.Nanosecond), time.Second},
		{"exactly at the slot", slot, slot, 0},
		{"late retry", slot, slot.Add(5 * time.Minute), 0},
		{"mid-minute slot", at("2026-12-01T09:00:59.5Z"), at("2026-12-01T08:59:00Z"), 120 * time.Second},
		{"just under the limit", slot, slot.Add(-899*time.Second - time.Millisecond), 900 * time.Second},
		{"exactly the limit", slot, slot.Add(-900 * time.Second), 900 * time.Second},
		{"over the limit", slot, slot.Add(-time.Hour), ebschedule.MaxDelay},
		{"centuries ahead (no overflow)", at("2199-12-31T23:59:59Z"), time.Unix(0, 0), ebschedule.MaxDelay},
		{"centuries behind", time.Unix(0, 0), at("2199-12-31T23:59:59Z"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ebschedule.Delay(tt.slot, tt.now)
			if got != tt.want {
				t.Errorf("Delay(%s, %s) = %s, want %s", tt.slot.Format(time.RFC3339Nano), tt.now.Format(time.RFC3339Nano), got, tt.want)
			}
			if got%time.Second != 0 || got < 0 || got > ebschedule.MaxDelay {
				t.Errorf("Delay = %s: not whole seconds in [0, 900s]", got)
			}
		})
	}
}

// TestEarlyFireThenDelayIsOnTime checks the whole timing design: for slots
// at every second of a minute (and fractions), wherever in its minute
// Scheduler invokes the early schedule, the invocation is never after the
// slot and the delayed job becomes visible at the slot or less than a
// second after it, never before.
// Reference: https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html
// (60 second precision).
func TestEarlyFireThenDelayIsOnTime(t *testing.T) {
	base := at("2026-12-01T09:00:00Z")
	offsets := []time.Duration{0, time.Nanosecond, 250 * time.Millisecond, 999 * time.Millisecond}
	for s := range 60 {
		for _, frac := range offsets {
			slot := base.Add(time.Duration(s)*time.Second + frac)
			fire := ebschedule.FireTime(slot)
			for inv := time.Duration(0); inv < ebschedule.Precision; inv += 137 * time.Millisecond {
				invoked := fire.Add(inv)
				if invoked.After(slot) {
					t.Fatalf("slot %s: invoked at %s, after the slot", slot.Format(time.RFC3339Nano), invoked.Format(time.RFC3339Nano))
				}
				visible := invoked.Add(ebschedule.Delay(slot, invoked))
				if visible.Before(slot) || !visible.Before(slot.Add(time.Second)) {
					t.Fatalf("slot %s, invoked %s: visible at %s, want within [slot, slot+1s)",
						slot.Format(time.RFC3339Nano), invoked.Format(time.RFC3339Nano), visible.Format(time.RFC3339Nano))
				}
			}
		}
	}
}

// TestFiredScheduleDelaysToSlot plays the whole path on the fake: Put, the
// fake Scheduler invokes the schedule somewhere in its minute and replaces
// <aws.scheduler.scheduled-time>, the trigger decodes the event and
// computes its delay; the one-time schedule is gone afterwards.
// API reference: API_CreateSchedule.html (ActionAfterCompletion DELETE);
// https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-context-attributes.html.
func TestFiredScheduleDelaysToSlot(t *testing.T) {
	tests := []struct {
		name    string
		slot    string
		invoked time.Duration // after the at() time
		want    time.Duration
	}{
		{"on the minute, invoked at once", "2026-12-01T09:00:00Z", 0, 60 * time.Second},
		{"on the minute, invoked late in the minute", "2026-12-01T09:00:00Z", 59*time.Second + 300*time.Millisecond, time.Second},
		{"mid-minute, invoked mid-minute", "2026-12-01T09:00:42Z", 30 * time.Second, 72 * time.Second},
		{"invoked by a late retry", "2026-12-01T09:00:42Z", 5 * time.Minute, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, testGroup)
			c := newClient(t, f, 1, nil)
			ref := publishing.TargetRef{Post: "launch", Account: "news", Slot: at(tt.slot)}
			if err := c.Put(bg, ref); err != nil {
				t.Fatal(err)
			}
			event, err := f.Fire(testGroup, ebschedule.Name(ref))
			if err != nil {
				t.Fatal(err)
			}
			in, err := ebschedule.DecodeInput([]byte(event))
			if err != nil {
				t.Fatalf("DecodeInput(%s): %v", event, err)
			}
			want := ebschedule.Input{TargetRef: ref, ScheduledTime: ebschedule.FireTime(ref.Slot)}
			if diff := cmp.Diff(want, in); diff != "" {
				t.Errorf("Input (-want +got):\n%s", diff)
			}
			if got := ebschedule.Delay(in.Slot, in.ScheduledTime.Add(tt.invoked)); got != tt.want {
				t.Errorf("Delay = %s, want %s", got, tt.want)
			}
			if len(f.Names()) != 0 {
				t.Errorf("schedules left after firing: %v (ActionAfterCompletion DELETE)", f.Names())
			}
		})
	}
}
