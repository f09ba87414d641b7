package schedexpr

import (
	"errors"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the same zone data on every test machine

	"github.com/google/go-cmp/cmp"
)

func utc(y int, mo time.Month, d, h, mi int) time.Time {
	return time.Date(y, mo, d, h, mi, 0, 0, time.UTC)
}

func TestNext(t *testing.T) {
	const (
		ny     = "America/New_York"
		berlin = "Europe/Berlin"
	)
	tests := []struct {
		name  string
		expr  string
		tz    string
		start time.Time
		after time.Time
		// want are successive firings: Next(after), Next(want[0]), …
		want []time.Time
		// ends: after the last of want, Next reports no firing.
		ends bool
	}{
		// DST, New York: spring forward 2026-03-08 02:00 EST → 03:00 EDT.
		{name: "NY spring-forward gap is skipped", expr: "cron(30 2 * * ? *)", tz: ny, after: utc(2026, 3, 7, 0, 0),
			want: []time.Time{utc(2026, 3, 7, 7, 30), utc(2026, 3, 9, 6, 30), utc(2026, 3, 10, 6, 30)}},
		{name: "NY whole gap hour is skipped minute by minute", expr: "cron(* 2 * * ? *)", tz: ny, after: utc(2026, 3, 8, 6, 58),
			want: []time.Time{utc(2026, 3, 9, 6, 0), utc(2026, 3, 9, 6, 1)}},
		// DST, New York: fall back 2026-11-01 02:00 EDT → 01:00 EST.
		{name: "NY fall-back overlap fires once, at the first 01:30", expr: "cron(30 1 * * ? *)", tz: ny, after: utc(2026, 10, 31, 0, 0),
			want: []time.Time{utc(2026, 10, 31, 5, 30), utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)}},
		{name: "NY 02:30 on fall-back day is after the overlap", expr: "cron(30 2 * * ? *)", tz: ny, after: utc(2026, 10, 31, 12, 0),
			want: []time.Time{utc(2026, 11, 1, 7, 30), utc(2026, 11, 2, 7, 30)}},
		{name: "NY repeated hour does not fire again", expr: "cron(0/30 1 * * ? *)", tz: ny, after: utc(2026, 11, 1, 4, 0),
			want: []time.Time{utc(2026, 11, 1, 5, 0), utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 0)}},
		{name: "NY from inside the repeated hour", expr: "cron(30 1 * * ? *)", tz: ny, after: utc(2026, 11, 1, 6, 10),
			want: []time.Time{utc(2026, 11, 2, 6, 30)}},
		// DST, Berlin: spring forward 2026-03-29 02:00 CET → 03:00 CEST.
		{name: "Berlin spring-forward gap is skipped", expr: "cron(30 2 * * ? *)", tz: berlin, after: utc(2026, 3, 28, 0, 0),
			want: []time.Time{utc(2026, 3, 28, 1, 30), utc(2026, 3, 30, 0, 30)}},
		// DST, Berlin: fall back 2026-10-25 03:00 CEST → 02:00 CET.
		{name: "Berlin fall-back overlap fires once", expr: "cron(30 2 * * ? *)", tz: berlin, after: utc(2026, 10, 24, 0, 0),
			want: []time.Time{utc(2026, 10, 24, 0, 30), utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)}},
		{name: "Berlin repeated hour, every 20 minutes", expr: "cron(0/20 2 * * ? *)", tz: berlin, after: utc(2026, 10, 24, 23, 0),
			want: []time.Time{utc(2026, 10, 25, 0, 0), utc(2026, 10, 25, 0, 20), utc(2026, 10, 25, 0, 40), utc(2026, 10, 26, 1, 0)}},
		// Half-hour and whole-day shifts.
		{name: "Lord Howe half-hour fall-back fires the first 01:45", expr: "cron(45 1 * * ? *)", tz: "Australia/Lord_Howe", after: utc(2026, 4, 3, 0, 0),
			want: []time.Time{utc(2026, 4, 3, 14, 45), utc(2026, 4, 4, 14, 45), utc(2026, 4, 5, 15, 15)}},
		{name: "Samoa skipped 30 December 2011", expr: "cron(0 12 * * ? *)", tz: "Pacific/Apia", after: utc(2011, 12, 29, 0, 0),
			want: []time.Time{utc(2011, 12, 29, 22, 0), utc(2011, 12, 30, 22, 0), utc(2011, 12, 31, 22, 0)}},
		// Rates are absolute durations.
		{name: "rate(1 hour) across NY spring forward", expr: "rate(1 hour)", tz: ny, start: utc(2026, 3, 8, 5, 0), after: utc(2026, 3, 8, 4, 59),
			want: []time.Time{utc(2026, 3, 8, 5, 0), utc(2026, 3, 8, 6, 0), utc(2026, 3, 8, 7, 0), utc(2026, 3, 8, 8, 0)}},
		{name: "rate(1 hour) across Berlin fall back", expr: "rate(1 hour)", tz: berlin, start: utc(2026, 10, 24, 23, 0), after: utc(2026, 10, 24, 23, 0),
			want: []time.Time{utc(2026, 10, 25, 0, 0), utc(2026, 10, 25, 1, 0), utc(2026, 10, 25, 2, 0)}},
		{name: "rate(1 days) is 24 hours across a change", expr: "rate(1 days)", tz: ny, start: utc(2026, 3, 7, 14, 0), after: utc(2026, 3, 7, 14, 0),
			want: []time.Time{utc(2026, 3, 8, 14, 0), utc(2026, 3, 9, 14, 0)}},
		{name: "rate(5 minutes) from a start", expr: "rate(5 minutes)", start: utc(2026, 1, 1, 0, 0).Add(3 * time.Second), after: utc(2026, 1, 1, 0, 7),
			want: []time.Time{utc(2026, 1, 1, 0, 10).Add(3 * time.Second), utc(2026, 1, 1, 0, 15).Add(3 * time.Second)}},
		{name: "rate before its start fires at the start", expr: "rate(5 minutes)", start: utc(2026, 1, 1, 0, 0), after: utc(2025, 1, 1, 0, 0),
			want: []time.Time{utc(2026, 1, 1, 0, 0), utc(2026, 1, 1, 0, 5)}},
		{name: "rate(1 minute)", expr: "rate(1 minute)", start: utc(2026, 1, 1, 0, 0), after: utc(2026, 1, 1, 0, 0).Add(time.Nanosecond),
			want: []time.Time{utc(2026, 1, 1, 0, 1)}},
		// Time zones.
		{name: "06:00 in Shanghai is 22:00 UTC the day before", expr: "cron(0 6 * * ? *)", tz: "Asia/Shanghai", after: utc(2026, 1, 1, 0, 0),
			want: []time.Time{utc(2026, 1, 1, 22, 0), utc(2026, 1, 2, 22, 0)}},
		{name: "at() in New York", expr: "at(2026-06-01T09:00:00)", tz: ny, after: utc(2026, 1, 1, 0, 0),
			want: []time.Time{utc(2026, 6, 1, 13, 0)}, ends: true},
		{name: "at() in the past", expr: "at(2026-06-01T09:00:00)", after: utc(2026, 6, 1, 9, 0), ends: true},
		{name: "at() in the spring-forward gap moves by the gap", expr: "at(2026-03-08T02:30:00)", tz: ny, after: utc(2026, 1, 1, 0, 0),
			want: []time.Time{utc(2026, 3, 8, 7, 30)}, ends: true},
		{name: "at() in the Berlin gap moves by the gap", expr: "at(2026-03-29T02:30:00)", tz: berlin, after: utc(2026, 1, 1, 0, 0),
			want: []time.Time{utc(2026, 3, 29, 1, 30)}, ends: true},
		{name: "at() in the Lord Howe half-hour gap", expr: "at(2026-10-04T02:15:00)", tz: "Australia/Lord_Howe", after: utc(2026, 1, 1, 0, 0),
			want: []time.Time{utc(2026, 10, 3, 15, 45)}, ends: true},
		{name: "at() on the day Samoa skipped", expr: "at(2011-12-30T12:00:00)", tz: "Pacific/Apia", after: utc(2011, 1, 1, 0, 0),
			want: []time.Time{utc(2011, 12, 30, 22, 0)}, ends: true},
		{name: "at() in the fall-back overlap takes the first", expr: "at(2026-11-01T01:30:15)", tz: ny, after: utc(2026, 1, 1, 0, 0),
			want: []time.Time{utc(2026, 11, 1, 5, 30).Add(15 * time.Second)}, ends: true},
		// L, W, #.
		{name: "L in leap February 2028", expr: "cron(0 12 L * ? *)", after: utc(2028, 1, 31, 12, 0),
			want: []time.Time{utc(2028, 2, 29, 12, 0), utc(2028, 3, 31, 12, 0), utc(2028, 4, 30, 12, 0)}},
		{name: "L in February 2027", expr: "cron(0 12 L * ? *)", after: utc(2027, 2, 1, 0, 0),
			want: []time.Time{utc(2027, 2, 28, 12, 0)}},
		{name: "6L is the last Friday", expr: "cron(15 10 ? * 6L *)", after: utc(2028, 1, 1, 0, 0),
			want: []time.Time{utc(2028, 1, 28, 10, 15), utc(2028, 2, 25, 10, 15), utc(2028, 3, 31, 10, 15)}},
		{name: "FRIL is the last Friday", expr: "cron(15 10 ? * fril *)", after: utc(2028, 1, 1, 0, 0),
			want: []time.Time{utc(2028, 1, 28, 10, 15)}},
		{name: "L in day-of-week is Saturday", expr: "cron(0 9 ? * L *)", after: utc(2026, 8, 1, 0, 0),
			want: []time.Time{utc(2026, 8, 1, 9, 0), utc(2026, 8, 8, 9, 0)}},
		{name: "15W: Saturday 15th → Friday, Sunday 15th → Monday", expr: "cron(0 9 15W * ? *)", after: utc(2026, 8, 1, 0, 0),
			want: []time.Time{utc(2026, 8, 14, 9, 0), utc(2026, 9, 15, 9, 0), utc(2026, 10, 15, 9, 0), utc(2026, 11, 16, 9, 0)}},
		{name: "1W on a Saturday 1st is Monday the 3rd", expr: "cron(0 9 1W * ? *)", after: utc(2026, 7, 31, 0, 0),
			want: []time.Time{utc(2026, 8, 3, 9, 0), utc(2026, 9, 1, 9, 0), utc(2026, 10, 1, 9, 0), utc(2026, 11, 2, 9, 0)}},
		{name: "31W on a Sunday 31st is Friday the 29th; 30-day months skipped", expr: "cron(0 9 31W * ? *)", after: utc(2026, 5, 1, 0, 0),
			want: []time.Time{utc(2026, 5, 29, 9, 0), utc(2026, 7, 31, 9, 0), utc(2026, 8, 31, 9, 0)}},
		{name: "LW is the last weekday", expr: "cron(0 9 LW * ? *)", after: utc(2026, 5, 1, 0, 0),
			want: []time.Time{utc(2026, 5, 29, 9, 0), utc(2026, 6, 30, 9, 0), utc(2026, 7, 31, 9, 0)}},
		{name: "3#2 is the second Tuesday", expr: "cron(0 10 ? * 3#2 *)", after: utc(2026, 1, 1, 0, 0),
			want: []time.Time{utc(2026, 1, 13, 10, 0), utc(2026, 2, 10, 10, 0), utc(2026, 3, 10, 10, 0), utc(2026, 4, 14, 10, 0)}},
		{name: "5#5 skips months without a fifth Thursday", expr: "cron(0 10 ? * 5#5 *)", after: utc(2026, 1, 1, 0, 0),
			want: []time.Time{utc(2026, 1, 29, 10, 0), utc(2026, 4, 30, 10, 0), utc(2026, 7, 30, 10, 0), utc(2026, 10, 29, 10, 0)}},
		{name: "MON#1 by name", expr: "cron(0 9 ? * MON#1 *)", after: utc(2026, 1, 1, 0, 0),
			want: []time.Time{utc(2026, 1, 5, 9, 0), utc(2026, 2, 2, 9, 0)}},
		// Years.
		{name: "year range: three firings then none", expr: "cron(0 0 1 1 ? 2027-2029)", after: utc(2026, 6, 1, 0, 0),
			want: []time.Time{utc(2027, 1, 1, 0, 0), utc(2028, 1, 1, 0, 0), utc(2029, 1, 1, 0, 0)}, ends: true},
		{name: "years over", expr: "cron(0 0 1 1 ? 2020)", after: utc(2026, 1, 1, 0, 0), ends: true},
		{name: "the last minute there is", expr: "cron(59 23 31 12 ? 2199)", after: utc(2199, 1, 1, 0, 0),
			want: []time.Time{utc(2199, 12, 31, 23, 59)}, ends: true},
		{name: "year step", expr: "cron(0 0 1 1 ? 2026/2)", after: utc(2025, 1, 1, 0, 0),
			want: []time.Time{utc(2026, 1, 1, 0, 0), utc(2028, 1, 1, 0, 0)}},
		{name: "February 31st never comes", expr: "cron(0 0 31 2 ? *)", after: utc(2026, 1, 1, 0, 0), ends: true},
		{name: "29 February", expr: "cron(0 0 29 2 ? *)", after: utc(2026, 1, 1, 0, 0),
			want: []time.Time{utc(2028, 2, 29, 0, 0), utc(2032, 2, 29, 0, 0)}},
		{name: "before 1970 starts in 1970", expr: "cron(0 0 1 1 ? *)", after: utc(1900, 1, 1, 0, 0),
			want: []time.Time{utc(1970, 1, 1, 0, 0)}},
		// Steps, lists, ranges, names.
		{name: "0/15 minutes", expr: "cron(0/15 * * * ? *)", after: utc(2026, 1, 1, 0, 0),
			want: []time.Time{utc(2026, 1, 1, 0, 15), utc(2026, 1, 1, 0, 30), utc(2026, 1, 1, 0, 45), utc(2026, 1, 1, 1, 0)}},
		{name: "*/5 hours", expr: "cron(0 */5 * * ? *)", after: utc(2026, 1, 1, 0, 0),
			want: []time.Time{utc(2026, 1, 1, 5, 0), utc(2026, 1, 1, 10, 0), utc(2026, 1, 1, 15, 0), utc(2026, 1, 1, 20, 0), utc(2026, 1, 2, 0, 0)}},
		{name: "5/20 minutes", expr: "cron(5/20 * * * ? *)", after: utc(2026, 1, 1, 0, 0),
			want: []time.Time{utc(2026, 1, 1, 0, 5), utc(2026, 1, 1, 0, 25), utc(2026, 1, 1, 0, 45), utc(2026, 1, 1, 1, 5)}},
		{name: "range with a step", expr: "cron(0 8-17/3 * * ? *)", after: utc(2026, 1, 1, 0, 0),
			want: []time.Time{utc(2026, 1, 1, 8, 0), utc(2026, 1, 1, 11, 0), utc(2026, 1, 1, 14, 0), utc(2026, 1, 1, 17, 0), utc(2026, 1, 2, 8, 0)}},
		{name: "wrapping hour range on weekdays", expr: "cron(0/30 22-1 ? * MON-FRI *)", after: utc(2026, 1, 2, 21, 0),
			want: []time.Time{utc(2026, 1, 2, 22, 0), utc(2026, 1, 2, 22, 30), utc(2026, 1, 2, 23, 0), utc(2026, 1, 2, 23, 30), utc(2026, 1, 5, 0, 0), utc(2026, 1, 5, 0, 30)}},
		{name: "wrapping day-of-month range", expr: "cron(0 0 30-2 * ? *)", after: utc(2026, 4, 28, 0, 0),
			want: []time.Time{utc(2026, 4, 30, 0, 0), utc(2026, 5, 1, 0, 0), utc(2026, 5, 2, 0, 0), utc(2026, 5, 30, 0, 0), utc(2026, 5, 31, 0, 0), utc(2026, 6, 1, 0, 0)}},
		{name: "lists and names", expr: "cron(15 9,17 ? JAN,jul MON,wed *)", after: utc(2026, 6, 30, 0, 0),
			want: []time.Time{utc(2026, 7, 1, 9, 15), utc(2026, 7, 1, 17, 15), utc(2026, 7, 6, 9, 15), utc(2026, 7, 6, 17, 15), utc(2026, 7, 8, 9, 15)}},
		{name: "day numbers 2-6 are MON-FRI", expr: "cron(0 18 ? * 2-6 *)", after: utc(2026, 1, 2, 18, 0),
			want: []time.Time{utc(2026, 1, 5, 18, 0), utc(2026, 1, 6, 18, 0)}},
		{name: "month range by name", expr: "cron(0 0 1 NOV-FEB ? *)", after: utc(2026, 2, 2, 0, 0),
			want: []time.Time{utc(2026, 11, 1, 0, 0), utc(2026, 12, 1, 0, 0), utc(2027, 1, 1, 0, 0), utc(2027, 2, 1, 0, 0), utc(2027, 11, 1, 0, 0)}},
		// Strictly after, and StartDate.
		{name: "a firing at after is not returned", expr: "cron(0 12 * * ? *)", after: utc(2026, 1, 1, 12, 0),
			want: []time.Time{utc(2026, 1, 2, 12, 0)}},
		{name: "cron honours its start", expr: "cron(0 12 * * ? *)", start: utc(2026, 5, 10, 12, 0), after: utc(2026, 1, 1, 0, 0),
			want: []time.Time{utc(2026, 5, 10, 12, 0), utc(2026, 5, 11, 12, 0)}},
		{name: "sub-minute after", expr: "cron(* * * * ? *)", after: utc(2026, 1, 1, 0, 0).Add(59 * time.Second),
			want: []time.Time{utc(2026, 1, 1, 0, 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.expr, tt.tz, tt.start)
			if err != nil {
				t.Fatalf("Parse(%q, %q): %v", tt.expr, tt.tz, err)
			}
			var got []time.Time
			after := tt.after
			for range len(tt.want) {
				next, ok := s.Next(after)
				if !ok {
					break
				}
				if next.Location() != time.UTC {
					t.Errorf("Next(%v) = %v, not in UTC", after, next)
				}
				got = append(got, next)
				after = next
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("firings of %s in %q after %v (-want +got):\n%s", tt.expr, tt.tz, tt.after, diff)
			}
			if len(got) == len(tt.want) {
				next, ok := s.Next(after)
				if tt.ends && ok {
					t.Errorf("Next(%v) = %v, want no further firing", after, next)
				}
				if !tt.ends && !ok {
					t.Errorf("Next(%v): no further firing, want one", after)
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		expr, tz string
		// want is the whole message, or with a trailing "…" its beginning.
		want string
		// field and token are the ExprError's, if it is one.
		field, token string
	}{
		{expr: "cron(0 25 * * ? *)", want: `cron(0 25 * * ? *): hours field: "25" is out of range 0-23`, field: "hours", token: "25"},
		{expr: "rate(0 minutes)", want: `rate(0 minutes): value must be ≥ 1`, field: "value", token: "0"},
		{expr: "cron(0 0 * * ? *)", tz: "Mars/Base", want: `unknown timezone "Mars/Base": …`},
		{expr: "cron(0 0 * * ? *)", tz: "Local", want: `unknown timezone "Local": …`},
		// Shape.
		{expr: "", want: `: want at(yyyy-mm-ddThh:mm:ss), rate(value unit) or cron(…`, token: ""},
		{expr: "every(5 minutes)", want: `every(5 minutes): unknown expression type "every": want at, rate or cron`, token: "every"},
		{expr: "cron(0 0 * * ? *) ", want: `cron(0 0 * * ? *) : want at(…`, token: "cron(0 0 * * ? *) "},
		{expr: "CRON(0 0 * * ? *)", want: `CRON(0 0 * * ? *): unknown expression type "CRON"…`, token: "CRON"},
		{expr: "cron(" + strings.Repeat("0,", 130) + "0 0 * * ? *)", want: `cron(0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0…: expression is 277 bytes long, more than 256`},
		// Field count and "?".
		{expr: "cron(* * * * *)", want: `cron(* * * * *): want 6 fields (minutes hours day-of-month month day-of-week year), got 5`, token: "* * * * *"},
		{expr: "cron(0 0 * * ? * *)", want: `cron(0 0 * * ? * *): want 6 fields (…`},
		{expr: "cron(0 12 * * * *)", want: `cron(0 12 * * * *): one of day-of-month ("*") and day-of-week ("*") must be "?"`, token: "*"},
		{expr: "cron(0 12 1 * MON *)", want: `cron(0 12 1 * MON *): one of day-of-month ("1") and day-of-week ("MON") must be "?"`, token: "MON"},
		{expr: "cron(0 12 ? * ? *)", want: `cron(0 12 ? * ? *): day-of-month and day-of-week cannot both be "?": give one of them`, token: "?"},
		{expr: "cron(? 0 * * ? *)", want: `cron(? 0 * * ? *): minutes field: "?" is allowed only in day-of-month and day-of-week`, field: "minutes", token: "?"},
		{expr: "cron(0 0 * ? ? *)", want: `cron(0 0 * ? ? *): month field: "?" is allowed only in day-of-month and day-of-week`, field: "month", token: "?"},
		// Ranges of values.
		{expr: "cron(60 * * * ? *)", want: `cron(60 * * * ? *): minutes field: "60" is out of range 0-59`, field: "minutes", token: "60"},
		{expr: "cron(0 0 32 * ? *)", want: `cron(0 0 32 * ? *): day-of-month field: "32" is out of range 1-31`, field: "day-of-month", token: "32"},
		{expr: "cron(0 0 0 * ? *)", want: `cron(0 0 0 * ? *): day-of-month field: "0" is out of range 1-31`, field: "day-of-month", token: "0"},
		{expr: "cron(0 0 ? 13 MON *)", want: `cron(0 0 ? 13 MON *): month field: "13" is out of range 1-12`, field: "month", token: "13"},
		{expr: "cron(0 0 ? * 0 *)", want: `cron(0 0 ? * 0 *): day-of-week field: "0" is out of range 1-7`, field: "day-of-week", token: "0"},
		{expr: "cron(0 0 ? * 8 *)", want: `cron(0 0 ? * 8 *): day-of-week field: "8" is out of range 1-7`, field: "day-of-week", token: "8"},
		{expr: "cron(0 0 1 1 ? 1969)", want: `cron(0 0 1 1 ? 1969): year field: "1969" is out of range 1970-2199`, field: "year", token: "1969"},
		{expr: "cron(0 0 1 1 ? 2200)", want: `cron(0 0 1 1 ? 2200): year field: "2200" is out of range 1970-2199`, field: "year", token: "2200"},
		{expr: "cron(0 0 1-40 * ? *)", want: `cron(0 0 1-40 * ? *): day-of-month field: "40" is out of range 1-31`, field: "day-of-month", token: "1-40"},
		{expr: "cron(0 0 1 1 ? 2029-2027)", want: `cron(0 0 1 1 ? 2029-2027): year field: "2029-2027": the range starts after it ends`, field: "year", token: "2029-2027"},
		{expr: "cron(0 0 ? FOO * *)", want: `cron(0 0 ? FOO * *): month field: "FOO" is not a valid month value`, field: "month", token: "FOO"},
		{expr: "cron(0 0 ? * FUN *)", want: `cron(0 0 ? * FUN *): day-of-week field: "FUN" is not a valid day-of-week value`, field: "day-of-week", token: "FUN"},
		{expr: "cron(0 JAN * * ? *)", want: `cron(0 JAN * * ? *): hours field: "JAN" is not a valid hours value`, field: "hours", token: "JAN"},
		{expr: "cron(0 1,,2 * * ? *)", want: `cron(0 1,,2 * * ? *): hours field: "1,,2" has an empty list element`, field: "hours", token: "1,,2"},
		{expr: "cron(0 -1 * * ? *)", want: `cron(0 -1 * * ? *): hours field: "-1" is missing a value`, field: "hours", token: "-1"},
		{expr: "cron(0 1-2-3 * * ? *)", want: `cron(0 1-2-3 * * ? *): hours field: "2-3" is not a valid hours value`, field: "hours", token: "1-2-3"},
		// Steps.
		{expr: "cron(*/0 * * * ? *)", want: `cron(*/0 * * * ? *): minutes field: "*/0": the step after / must be a number 1-59`, field: "minutes", token: "*/0"},
		{expr: "cron(*/60 * * * ? *)", want: `cron(*/60 * * * ? *): minutes field: "*/60": the step after / must be a number 1-59`, field: "minutes", token: "*/60"},
		{expr: "cron(0/x * * * ? *)", want: `cron(0/x * * * ? *): minutes field: "0/x": the step after / must be a number 1-59`, field: "minutes", token: "0/x"},
		{expr: "cron(1/2/3 * * * ? *)", want: `cron(1/2/3 * * * ? *): minutes field: "1/2/3": the step after / must be a number 1-59`, field: "minutes", token: "1/2/3"},
		{expr: "cron(0 */24 * * ? *)", want: `cron(0 */24 * * ? *): hours field: "*/24": the step after / must be a number 1-23`, field: "hours", token: "*/24"},
		{expr: "cron(0 0 ? * 1/2 *)", want: `cron(0 0 ? * 1/2 *): day-of-week field: "1/2": "/" is not allowed in the day-of-week field`, field: "day-of-week", token: "1/2"},
		// L, W, #.
		{expr: "cron(0 L * * ? *)", want: `cron(0 L * * ? *): hours field: "L": the hours field allows only digits and , - * /`, field: "hours", token: "L"},
		{expr: "cron(0 0 1 1 ? 2027#1)", want: `cron(0 0 1 1 ? 2027#1): year field: "2027#1": the year field allows only digits and , - * /`, field: "year", token: "2027#1"},
		{expr: "cron(0 0 1 L ? *)", want: `cron(0 0 1 L ? *): month field: "L" is not a valid month value`, field: "month", token: "L"},
		{expr: "cron(0 0 L-3 * ? *)", want: `cron(0 0 L-3 * ? *): day-of-month field: "L-3": only L and LW may start with L (no L-n offsets)`, field: "day-of-month", token: "L-3"},
		{expr: "cron(0 0 L,15 * ? *)", want: `cron(0 0 L,15 * ? *): day-of-month field: "L,15": L must stand alone in the day-of-month field, not in a list`, field: "day-of-month", token: "L,15"},
		{expr: "cron(0 0 1-5W * ? *)", want: `cron(0 0 1-5W * ? *): day-of-month field: "1-5W": W needs a single day before it, as in 15W`, field: "day-of-month", token: "1-5W"},
		{expr: "cron(0 0 32W * ? *)", want: `cron(0 0 32W * ? *): day-of-month field: "32W": 32 is out of range 1-31`, field: "day-of-month", token: "32W"},
		{expr: "cron(0 0 1#2 * ? *)", want: `cron(0 0 1#2 * ? *): day-of-month field: "1#2": L and W are allowed only as L, LW or nW`, field: "day-of-month", token: "1#2"},
		{expr: "cron(0 0 ? * 2W *)", want: `cron(0 0 ? * 2W *): day-of-week field: "2W" is not a valid day-of-week value`, field: "day-of-week", token: "2W"},
		{expr: "cron(0 0 ? * 3#6 *)", want: `cron(0 0 ? * 3#6 *): day-of-week field: "3#6": the occurrence after # must be 1-5`, field: "day-of-week", token: "3#6"},
		{expr: "cron(0 0 ? * 3#0 *)", want: `cron(0 0 ? * 3#0 *): day-of-week field: "3#0": the occurrence after # must be 1-5`, field: "day-of-week", token: "3#0"},
		{expr: "cron(0 0 ? * 8#1 *)", want: `cron(0 0 ? * 8#1 *): day-of-week field: "8" is out of range 1-7`, field: "day-of-week", token: "8#1"},
		{expr: "cron(0 0 ? * 3#1,6#3 *)", want: `cron(0 0 ? * 3#1,6#3 *): day-of-week field: "3#1,6#3": 3#1 must stand alone in the day-of-week field, not in a list`, field: "day-of-week", token: "3#1,6#3"},
		{expr: "cron(0 0 ? * 2,6L *)", want: `cron(0 0 ? * 2,6L *): day-of-week field: "2,6L": 6L must stand alone in the day-of-week field, not in a list`, field: "day-of-week", token: "2,6L"},
		{expr: "cron(0 0 ? * 9L *)", want: `cron(0 0 ? * 9L *): day-of-week field: "9" is out of range 1-7`, field: "day-of-week", token: "9L"},
		// at().
		{expr: "at(2026-02-30T00:00:00)", want: `at(2026-02-30T00:00:00): "2026-02-30T00:00:00" is not a valid date and time: …`, token: "2026-02-30T00:00:00"},
		{expr: "at(2026-01-01T24:00:00)", want: `at(2026-01-01T24:00:00): "2026-01-01T24:00:00" is not a valid date and time: …`},
		{expr: "at(2026-13-01T00:00:00)", want: `at(2026-13-01T00:00:00): "2026-13-01T00:00:00" is not a valid date and time: …`},
		{expr: "at(2026-01-01 00:00:00)", want: `at(2026-01-01 00:00:00): "2026-01-01 00:00:00" is not yyyy-mm-ddThh:mm:ss`, token: "2026-01-01 00:00:00"},
		{expr: "at(2026-01-01T00:00)", want: `at(2026-01-01T00:00): "2026-01-01T00:00" is not yyyy-mm-ddThh:mm:ss`},
		{expr: "at(2026-01-01T00:00:00.5)", want: `at(2026-01-01T00:00:00.5): "2026-01-01T00:00:00.5" is not yyyy-mm-ddThh:mm:ss`},
		{expr: "at(2026-01-01T00:00:00Z)", want: `at(2026-01-01T00:00:00Z): "2026-01-01T00:00:00Z" is not yyyy-mm-ddThh:mm:ss`},
		{expr: "at(2026-1-01T00:00:00)", want: `at(2026-1-01T00:00:00): "2026-1-01T00:00:00" is not yyyy-mm-ddThh:mm:ss`},
		{expr: "at(2300-01-01T00:00:00)", want: `at(2300-01-01T00:00:00): year 2300 is out of range 1970-2199`},
		{expr: "at()", want: `at(): "" is not yyyy-mm-ddThh:mm:ss`},
		// rate().
		{expr: "rate(5 minute)", want: `rate(5 minute): unit "minute" is singular: with value 5 write minutes`, field: "unit", token: "minute"},
		{expr: "rate(2 day)", want: `rate(2 day): unit "day" is singular: with value 2 write days`, field: "unit", token: "day"},
		{expr: "rate(5 seconds)", want: `rate(5 seconds): unit "seconds" is not one of minute, minutes, hour, hours, day, days`, field: "unit", token: "seconds"},
		{expr: "rate(5 Minutes)", want: `rate(5 Minutes): unit "Minutes" is not one of …`, field: "unit", token: "Minutes"},
		{expr: "rate(-1 minutes)", want: `rate(-1 minutes): value must be ≥ 1`, field: "value", token: "-1"},
		{expr: "rate(+1 minutes)", want: `rate(+1 minutes): value "+1" is not a whole number`, field: "value", token: "+1"},
		{expr: "rate(1.5 hours)", want: `rate(1.5 hours): value "1.5" is not a whole number`, field: "value", token: "1.5"},
		{expr: "rate(99999999999999999999 days)", want: `rate(99999999999999999999 days): value "99999999999999999999" is too large`, field: "value", token: "99999999999999999999"},
		{expr: "rate(200000 days)", want: `rate(200000 days): value 200000 is too large: the period must be under 292 years`, field: "value", token: "200000"},
		{expr: "rate(5)", want: `rate(5): "5" is not "value unit"`, token: "5"},
		{expr: "rate(5 minutes now)", want: `rate(5 minutes now): "5 minutes now" is not "value unit"`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			s, err := Parse(tt.expr, tt.tz, utc(2026, 1, 1, 0, 0))
			if err == nil {
				t.Fatalf("Parse(%q, %q) = %#v, want an error", tt.expr, tt.tz, s)
			}
			msg := err.Error()
			if prefix, ok := strings.CutSuffix(tt.want, "…"); ok {
				if !strings.HasPrefix(msg, prefix) {
					t.Errorf("error = %q, want it to start with %q", msg, prefix)
				}
			} else if msg != tt.want {
				t.Errorf("error = %q\n        want %q", msg, tt.want)
			}
			var ee *ExprError
			if errors.As(err, &ee) {
				if tt.field != "" && ee.Field != tt.field {
					t.Errorf("Field = %q, want %q", ee.Field, tt.field)
				}
				if tt.token != "" && ee.Token != tt.token {
					t.Errorf("Token = %q, want %q", ee.Token, tt.token)
				}
			} else if tt.field != "" || tt.token != "" {
				t.Errorf("error %v is not an *ExprError", err)
			}
		})
	}
}

// TestParseAccepts covers forms that must parse, in particular the rate
// units the API reference lists and the examples of the AWS guides.
func TestParseAccepts(t *testing.T) {
	for _, expr := range []string{
		"rate(1 minute)", "rate(1 minutes)", "rate(5 minutes)", "rate(1 hour)", "rate(2 hours)", "rate(1 day)", "rate(1 days)", "rate(7 days)",
		"cron(15 10 ? * 6L 2022-2023)", "cron(0 18 ? * MON-FRI *)", "cron(0 8 1 * ? *)", "cron(0/10 * ? * MON-FRI *)",
		"cron(0/5 8-17 ? * MON-FRI *)", "cron(0/30 20-2 ? * MON-FRI *)", "cron(5,35 14 * * ? *)", "cron(0 9 ? * 2#1 *)",
		"cron(0 0 LW * ? *)", "cron(0 0 l * ? *)", "cron(0 0 15w * ? *)", "cron(0 0 ? * sun-sat *)", "cron(0\t0  * *   ? *)",
		"cron(*,5 * * * ? *)", "cron(0 0 1 JUL-DEC ? *)", "at(2026-01-01T00:00:00)",
	} {
		if _, err := Parse(expr, "Europe/Berlin", time.Time{}); err != nil {
			t.Errorf("Parse(%q): %v", expr, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"cron(0 12 * * ? *)", "cron(0/15 * * * ? *)", "cron(0 12 L * ? *)", "cron(0 12 LW * ? *)", "cron(0 12 15W * ? *)",
		"cron(0 10 ? * 3#2 *)", "cron(15 10 ? * 6L 2022-2023)", "cron(0/30 20-2 ? * MON-FRI *)", "cron(0 0 1 NOV-FEB ? *)",
		"cron(0 0 31W * ? *)", "cron(* * * * ? *)", "cron(0 0 29 2 ? *)", "cron(0 0 31 2 ? *)", "cron(0 0 ? * L 2199)",
		"rate(5 minutes)", "rate(1 day)", "rate(106751 days)", "at(2026-03-08T02:30:00)", "at(2026-11-01T01:30:00)",
		"", "cron()", "cron(* * * * *)", "cron(99 99 99 99 99 99)", "cron(0/0 * * * ? *)", "cron(0 0 ? * 3#1,6#3 *)",
		"cron(0 0 1-5W * ? *)", "rate(0 minutes)", "rate(-1 hours)", "at(2026-02-30T00:00:00)", "cron(,,, ? ? *)",
		"cron(0 0 L-3 * ? *)", "cron(#/- L W ? #)", "rate(99999999999999999999 days)",
	} {
		f.Add(seed, uint8(0), int64(1767225600))
	}
	zones := []string{"", "UTC", "America/New_York", "Europe/Berlin", "Asia/Shanghai", "Australia/Lord_Howe", "Pacific/Apia", "Asia/Kathmandu"}
	f.Fuzz(func(t *testing.T, expr string, zone uint8, afterUnix int64) {
		tz := zones[int(zone)%len(zones)]
		after := time.Unix(afterUnix%(1<<35), 0) // about ±1000 years around 1970
		s, err := Parse(expr, tz, after)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("Parse(%q): empty error", expr)
			}
			return
		}
		for range 3 {
			next, ok := s.Next(after)
			if !ok {
				return
			}
			if !next.After(after) {
				t.Fatalf("Parse(%q, %q).Next(%v) = %v, not after", expr, tz, after, next)
			}
			after = next
		}
	})
}

func BenchmarkNext(b *testing.B) {
	for _, bc := range []struct{ expr, tz string }{
		{"cron(0/15 * * * ? *)", "UTC"},
		{"cron(30 2 * * ? *)", "America/New_York"},
		{"cron(15 10 ? * 6L *)", "Europe/Berlin"},
		{"cron(0 9 15W * ? *)", "Asia/Shanghai"},
		{"cron(0 0 29 2 ? *)", "UTC"},
		{"cron(0 0 1 1 ? 2199)", "UTC"},
		{"rate(5 minutes)", "UTC"},
	} {
		b.Run(bc.expr, func(b *testing.B) {
			s, err := Parse(bc.expr, bc.tz, utc(2026, 1, 1, 0, 0))
			if err != nil {
				b.Fatal(err)
			}
			after := utc(2026, 1, 1, 0, 0)
			for b.Loop() {
				next, ok := s.Next(after)
				if !ok {
					after = utc(2026, 1, 1, 0, 0)
					continue
				}
				after = next
			}
		})
	}
}
