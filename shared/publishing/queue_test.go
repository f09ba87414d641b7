package publishing

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/post"
)

// TestSlotTimesAcrossDST: posting slots are wall-clock times in the
// account's zone, so the week of a DST change keeps them at the hours a
// person set (their UTC instants shift by the change); a slot in the
// spring-forward gap does not exist that night, and one in the fall-back
// overlap is taken once.
func TestSlotTimesAcrossDST(t *testing.T) {
	weekdays := []string{"cron(0 9 ? * MON-FRI *)", "cron(30 12 ? * MON-FRI *)", "cron(0 17 ? * MON-FRI *)"}
	tests := []struct {
		name  string
		zone  string
		slots []string
		after string // local wall time
		n     int
		want  []string // local wall time and offset
	}{
		{
			name: "Berlin, the week summer time ends (Sun 25 Oct 2026)", zone: "Europe/Berlin", slots: weekdays,
			after: "2026-10-22T18:00", n: 9,
			want: []string{
				"2026-10-23T09:00:00+02:00", "2026-10-23T12:30:00+02:00", "2026-10-23T17:00:00+02:00",
				"2026-10-26T09:00:00+01:00", "2026-10-26T12:30:00+01:00", "2026-10-26T17:00:00+01:00",
				"2026-10-27T09:00:00+01:00", "2026-10-27T12:30:00+01:00", "2026-10-27T17:00:00+01:00",
			},
		},
		{
			name: "Berlin, the week summer time starts (Sun 29 Mar 2026)", zone: "Europe/Berlin", slots: weekdays,
			after: "2026-03-27T13:00", n: 4,
			want: []string{"2026-03-27T17:00:00+01:00", "2026-03-30T09:00:00+02:00", "2026-03-30T12:30:00+02:00", "2026-03-30T17:00:00+02:00"},
		},
		{
			name: "New York, the week daylight time starts (Sun 8 Mar 2026)", zone: "America/New_York", slots: weekdays,
			after: "2026-03-06T12:00", n: 5,
			want: []string{"2026-03-06T12:30:00-05:00", "2026-03-06T17:00:00-05:00", "2026-03-09T09:00:00-04:00", "2026-03-09T12:30:00-04:00", "2026-03-09T17:00:00-04:00"},
		},
		{
			name: "New York, the week daylight time ends (Sun 1 Nov 2026)", zone: "America/New_York", slots: weekdays,
			after: "2026-10-30T17:00", n: 2,
			want: []string{"2026-11-02T09:00:00-05:00", "2026-11-02T12:30:00-05:00"},
		},
		{
			name: "New York, a nightly 02:30 slot: none on the spring-forward night", zone: "America/New_York", slots: []string{"cron(30 2 * * ? *)"},
			after: "2026-03-07T00:00", n: 3,
			want: []string{"2026-03-07T02:30:00-05:00", "2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"},
		},
		{
			name: "New York, a nightly 01:30 slot: once on the fall-back night", zone: "America/New_York", slots: []string{"cron(30 1 * * ? *)"},
			after: "2026-10-31T12:00", n: 2,
			want: []string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"},
		},
		{
			name: "two rules at the same time give one slot", zone: "Europe/Berlin", slots: []string{"cron(0 9 ? * MON-FRI *)", "cron(0 9 * * ? *)"},
			after: "2026-12-04T10:00", n: 3,
			want: []string{"2026-12-05T09:00:00+01:00", "2026-12-06T09:00:00+01:00", "2026-12-07T09:00:00+01:00"},
		},
		{
			name: "rate() runs from midnight in the zone, every 8 hours regardless of DST", zone: "Europe/Berlin", slots: []string{"rate(8 hours)"},
			after: "2026-12-02T07:00", n: 3,
			want: []string{"2026-12-02T08:00:00+01:00", "2026-12-02T16:00:00+01:00", "2026-12-03T00:00:00+01:00"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc, err := time.LoadLocation(tt.zone)
			if err != nil {
				t.Fatal(err)
			}
			after, err := time.ParseInLocation("2006-01-02T15:04", tt.after, loc)
			if err != nil {
				t.Fatal(err)
			}
			a := post.Account{ID: "news", TimeZone: tt.zone, Slots: tt.slots}
			got, err := SlotTimes(a, after, after.Add(QueueHorizon), tt.n)
			if err != nil {
				t.Fatalf("SlotTimes = %v", err)
			}
			var shown []string
			for _, s := range got {
				if s.Location() != time.UTC {
					t.Errorf("slot %v is not in UTC", s)
				}
				shown = append(shown, s.In(loc).Format(time.RFC3339))
			}
			if diff := cmp.Diff(tt.want, shown); diff != "" {
				t.Errorf("slots after %s in %s (-want +got):\n%s", tt.after, tt.zone, diff)
			}
		})
	}
}

func TestValidateSlots(t *testing.T) {
	tests := []struct {
		zone   string
		rules  []string
		fields []string
	}{
		{"Europe/Berlin", []string{"cron(0 9 ? * MON-FRI *)", "rate(4 hours)"}, nil},
		{"", nil, nil},
		{"Mars/Olympus", []string{"cron(0 9 ? * MON-FRI *)"}, []string{"time_zone"}},
		{"Local", nil, []string{"time_zone"}},
		{"UTC", []string{"at(2026-12-01T09:00:00)", "", "cron(0 25 * * ? *)", "cron(0 9 * * ? *)", "cron(0 9 * * ? *)"},
			[]string{"slots[0]", "slots[1]", "slots[2]", "slots[4]"}},
	}
	for _, tt := range tests {
		err := ValidateSlots(tt.zone, tt.rules)
		var fields []string
		for _, fe := range FieldErrors(err) {
			fields = append(fields, fe.Field)
		}
		if diff := cmp.Diff(tt.fields, fields); diff != "" {
			t.Errorf("ValidateSlots(%q, %q) fields (-want +got):\n%s\n%v", tt.zone, tt.rules, diff, err)
		}
	}
}
