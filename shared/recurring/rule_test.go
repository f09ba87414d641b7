package recurring

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/post"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func slots(occ []Occurrence) []string {
	var out []string
	for _, o := range occ {
		out = append(out, o.Slot.UTC().Format(time.RFC3339))
	}
	return out
}

// The occurrences of a rule, as the scheduler reads its wall-clock times:
// across DST changes, in gaps and overlaps, every N days and on a cron,
// within the rule's start and end.
func TestScheduleOccurrences(t *testing.T) {
	tests := []struct {
		name    string
		rule    Rule
		through string
		want    []string
	}{
		{
			name: "daily 09:00 in Berlin across the end of DST keeps 09:00 local",
			rule: Rule{Repeat: Repeat{EveryDays: 1, At: "09:00"}, TimeZone: "Europe/Berlin", Start: utc("2026-10-23T00:00:00+02:00")},
			// DST ends 2026-10-25 at 03:00 CEST.
			through: "2026-10-27T23:00:00Z",
			want:    []string{"2026-10-23T07:00:00Z", "2026-10-24T07:00:00Z", "2026-10-25T08:00:00Z", "2026-10-26T08:00:00Z", "2026-10-27T08:00:00Z"},
		},
		{
			name:    "a time in the spring-forward gap is skipped that day (EventBridge's rule)",
			rule:    Rule{Repeat: Repeat{EveryDays: 1, At: "02:30"}, TimeZone: "Europe/Berlin", Start: utc("2026-03-28T00:00:00+01:00")},
			through: "2026-03-31T00:00:00Z",
			want:    []string{"2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z"},
		},
		{
			name:    "a time in the fall-back overlap fires once, at its first occurrence",
			rule:    Rule{Repeat: Repeat{EveryDays: 1, At: "02:30"}, TimeZone: "Europe/Berlin", Start: utc("2026-10-24T12:00:00Z")},
			through: "2026-10-26T12:00:00Z",
			want:    []string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"},
		},
		{
			name:    "every 3 days counts days from the start's date, whatever the month",
			rule:    Rule{Repeat: Repeat{EveryDays: 3, At: "18:15"}, TimeZone: "America/New_York", Start: utc("2026-10-30T00:00:00-04:00")},
			through: "2026-11-10T00:00:00Z",
			// DST ends in New York on 2026-11-01.
			want: []string{"2026-10-30T22:15:00Z", "2026-11-02T23:15:00Z", "2026-11-05T23:15:00Z", "2026-11-08T23:15:00Z"},
		},
		{
			name:    "the start's own day is skipped when its time has passed",
			rule:    Rule{Repeat: Repeat{EveryDays: 2, At: "09:00"}, TimeZone: "UTC", Start: utc("2026-12-01T10:00:00Z")},
			through: "2026-12-06T00:00:00Z",
			want:    []string{"2026-12-03T09:00:00Z", "2026-12-05T09:00:00Z"},
		},
		{
			name:    "cron on weekdays, read in the zone",
			rule:    Rule{Repeat: Repeat{Cron: "cron(30 8 ? * MON-FRI *)"}, TimeZone: "Asia/Kolkata", Start: utc("2026-12-04T00:00:00Z")},
			through: "2026-12-09T00:00:00Z",
			want:    []string{"2026-12-04T03:00:00Z", "2026-12-07T03:00:00Z", "2026-12-08T03:00:00Z"},
		},
		{
			name:    "count ends it",
			rule:    Rule{Repeat: Repeat{EveryDays: 1, At: "09:00"}, TimeZone: "UTC", Start: utc("2026-12-01T00:00:00Z"), Count: 2},
			through: "2027-01-01T00:00:00Z",
			want:    []string{"2026-12-01T09:00:00Z", "2026-12-02T09:00:00Z"},
		},
		{
			name:    "until ends it, its own instant included",
			rule:    Rule{Repeat: Repeat{EveryDays: 1, At: "09:00"}, TimeZone: "UTC", Start: utc("2026-12-01T00:00:00Z"), Until: utc("2026-12-03T09:00:00Z")},
			through: "2027-01-01T00:00:00Z",
			want:    []string{"2026-12-01T09:00:00Z", "2026-12-02T09:00:00Z", "2026-12-03T09:00:00Z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tt.rule.Schedule()
			if err != nil {
				t.Fatal(err)
			}
			got := s.After(Position{}, utc(tt.through), 0)
			if diff := cmp.Diff(tt.want, slots(got)); diff != "" {
				t.Errorf("occurrences (-want +got):\n%s", diff)
			}
			for i, o := range got {
				if o.Index != i {
					t.Errorf("occurrence %d has index %d", i, o.Index)
				}
			}
			// Resuming from any position gives the rest, indexed alike.
			for i := range got {
				rest := s.After(got[i], utc(tt.through), 0)
				if diff := cmp.Diff(got[i+1:], rest, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("after occurrence %d (-want +got):\n%s", i, diff)
				}
				if p := s.Position(Position{}, got[i].Slot); p != got[i] {
					t.Errorf("Position at occurrence %d = %+v, want %+v", i, p, got[i])
				}
			}
		})
	}
}

// The acceptance rule: 09:00 in Berlin from 2026-10-12, 30 times: 13 at
// 07:00Z, then 17 at 08:00Z after DST ends on 2026-10-25.
func TestThirtyDaysAcrossDST(t *testing.T) {
	r := Rule{Repeat: Repeat{EveryDays: 1, At: "09:00"}, TimeZone: "Europe/Berlin", Start: utc("2026-10-12T00:00:00+02:00"), Count: 30}
	s, err := r.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	occ := s.After(Position{}, utc("2027-01-01T00:00:00Z"), 0)
	if len(occ) != 30 {
		t.Fatalf("%d occurrences, want 30", len(occ))
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	byHour := map[int]int{}
	for i, o := range occ {
		if local := o.Slot.In(berlin); local.Hour() != 9 || local.Minute() != 0 {
			t.Errorf("occurrence %d at %s local", i, local)
		}
		byHour[o.Slot.Hour()]++
		if i > 0 && o.Slot.In(berlin).YearDay() != occ[i-1].Slot.In(berlin).YearDay()+1 {
			t.Errorf("occurrence %d is not the day after the one before", i)
		}
	}
	if diff := cmp.Diff(map[int]int{7: 13, 8: 17}, byHour); diff != "" {
		t.Errorf("UTC hours (-want +got):\n%s", diff)
	}
}

func TestOccurrenceID(t *testing.T) {
	slot := utc("2026-12-03T08:00:00Z")
	if got := OccurrenceID("tips", 1, slot); got != "tips-20261203T0800Z" {
		t.Errorf("revision 1: %s", got)
	}
	if got := OccurrenceID("tips", 3, slot); got != "tips-20261203T0800Z-r3" {
		t.Errorf("revision 3: %s", got)
	}
	long := ID(strings.Repeat("a", MaxIDLen))
	if got := OccurrenceID(long, 99999, slot); len(got) > 128 {
		t.Errorf("the longest id is %d characters, over a post id's 128", len(got))
	}
}

var parseEnv = Env{
	Accounts: map[post.AccountID]post.Account{
		"berlin":  {ID: "berlin", Platform: "mastodon", TimeZone: "Europe/Berlin"},
		"berlin2": {ID: "berlin2", Platform: "x", TimeZone: "Europe/Berlin"},
		"ny":      {ID: "ny", Platform: "mastodon", TimeZone: "America/New_York"},
		"plain":   {ID: "plain", Platform: "mastodon"},
	},
	Now: utc("2026-10-01T12:00:00Z"),
}

func fieldNames(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *post.FieldError:
			out = append(out, e.Field)
		case interface{ Unwrap() []error }:
			for _, in := range e.Unwrap() {
				walk(in)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

func TestParse(t *testing.T) {
	ok := Draft{ID: "tips", Body: "Tip", Accounts: []string{"berlin", "berlin2"}, EveryDays: 1, At: "09:00", Start: "2026-10-12", Count: 30}
	r, err := ok.Parse(parseEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := Rule{ID: "tips", Revision: 1, Content: Content{Body: "Tip"}, Accounts: []post.AccountID{"berlin", "berlin2"},
		Repeat: Repeat{EveryDays: 1, At: "09:00"}, TimeZone: "Europe/Berlin", Start: utc("2026-10-12T00:00:00+02:00"), Count: 30,
		CreatedAt: parseEnv.Now, UpdatedAt: parseEnv.Now}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("rule (-want +got):\n%s", diff)
	}
	if d := DraftOf(r); d.Start != "2026-10-12T00:00:00+02:00" || d.TimeZone != "Europe/Berlin" || d.Count != 30 {
		t.Errorf("DraftOf: %+v", d)
	}

	until, err := Draft{ID: "u", Body: "x", Accounts: []string{"berlin"}, EveryDays: 1, At: "09:00", Start: "2026-10-12", Until: "2026-10-14"}.Parse(parseEnv)
	if err != nil {
		t.Fatal(err)
	}
	if want := utc("2026-10-14T21:59:59.999999999Z"); !until.Until.Equal(want) {
		t.Errorf("until a date = %s, want the day's last instant in Berlin %s", until.Until, want)
	}

	tests := []struct {
		name  string
		patch func(d *Draft)
		want  []string
	}{
		{"accounts in two zones need a zone", func(d *Draft) { d.Accounts = []string{"berlin", "ny"} }, []string{"time_zone"}},
		{"an explicit zone settles it", func(d *Draft) { d.Accounts, d.TimeZone = []string{"berlin", "ny"}, "Europe/Berlin" }, nil},
		{"unknown zone", func(d *Draft) { d.TimeZone = "Mars/Base" }, []string{"time_zone"}},
		{"unknown and repeated accounts", func(d *Draft) { d.Accounts = []string{"nobody", "berlin", "berlin"} }, []string{"accounts[0]", "accounts[2]"}},
		{"no repeat rule", func(d *Draft) { d.EveryDays, d.At = 0, "" }, []string{"every_days"}},
		{"both repeat rules", func(d *Draft) { d.Cron = "cron(0 9 * * ? *)" }, []string{"cron"}},
		{"a bad cron names its field", func(d *Draft) { d.EveryDays, d.At, d.Cron = 0, "", "cron(0 25 * * ? *)" }, []string{"cron"}},
		{"rate is not a repeat rule", func(d *Draft) { d.EveryDays, d.At, d.Cron = 0, "", "rate(1 days)" }, []string{"cron"}},
		{"cron more often than every 15 minutes", func(d *Draft) { d.EveryDays, d.At, d.Cron = 0, "", "cron(0/5 * * * ? *)" }, []string{"cron"}},
		{"a bad time of day", func(d *Draft) { d.At = "9am" }, []string{"at"}},
		{"every 0 days", func(d *Draft) { d.EveryDays = -1 }, []string{"every_days"}},
		{"a start without an offset", func(d *Draft) { d.Start = "2026-10-12T09:00" }, []string{"start"}},
		{"until and count", func(d *Draft) { d.Until = "2026-12-01" }, []string{"until"}},
		{"until in the past", func(d *Draft) { d.Start, d.Count, d.Until = "2026-09-01", 0, "2026-09-10" }, []string{"until"}},
		{"every occurrence is past", func(d *Draft) { d.Start, d.Count = "2026-09-01", 3 }, []string{"every_days"}},
		{"bad id", func(d *Draft) { d.ID = "-x" }, []string{"id"}},
		{"empty variant", func(d *Draft) { d.Variants = []string{"ok", " "} }, []string{"variants[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := ok
			tt.patch(&d)
			_, err := d.Parse(parseEnv)
			if diff := cmp.Diff(tt.want, fieldNames(err)); diff != "" {
				t.Errorf("fields refused (-want +got):\n%s\n%v", diff, err)
			}
		})
	}
}

func TestPatchApply(t *testing.T) {
	base := Draft{ID: "tips", Body: "Tip", Accounts: []string{"berlin"}, EveryDays: 2, At: "09:00", Count: 5}
	cron, at, until, count := "cron(0 9 ? * MON *)", "10:00", "2026-12-01", 7
	tests := []struct {
		name  string
		patch Patch
		want  Draft
	}{
		{"nothing", Patch{}, base},
		{"cron replaces every_days", Patch{Cron: &cron}, Draft{ID: "tips", Body: "Tip", Accounts: []string{"berlin"}, Cron: cron, Count: 5}},
		{"at keeps every_days", Patch{At: &at}, Draft{ID: "tips", Body: "Tip", Accounts: []string{"berlin"}, EveryDays: 2, At: at, Count: 5}},
		{"until replaces count", Patch{Until: &until}, Draft{ID: "tips", Body: "Tip", Accounts: []string{"berlin"}, EveryDays: 2, At: "09:00", Until: until}},
		{"count replaces count", Patch{Count: &count}, Draft{ID: "tips", Body: "Tip", Accounts: []string{"berlin"}, EveryDays: 2, At: "09:00", Count: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.patch.Apply(base)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	onCron := Draft{ID: "w", Body: "x", Accounts: []string{"berlin"}, Cron: cron}
	if got := (Patch{At: &at}).Apply(onCron); got.Cron != "" || got.EveryDays != 1 || got.At != at {
		t.Errorf("at on a cron rule: %+v, want every day at %s", got, at)
	}
}

func TestDecodeDraft(t *testing.T) {
	if _, err := DecodeDraft([]byte(`{"id":"a","body":"b","accounts":["x"],"every_day":1}`)); err == nil || !strings.Contains(err.Error(), "every_day") {
		t.Errorf("unknown field: %v", err)
	}
	if _, err := DecodeDraft([]byte(`{"id":"a"} {}`)); err == nil {
		t.Error("two objects accepted")
	}
	if _, err := DecodePatch([]byte("{\"body\":\"\xff\"}")); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
	d, err := DecodeDraft([]byte(`{"id":"a","body":"b","variants":["c"],"accounts":["x"],"cron":"cron(0 9 ? * MON *)","count":3}`))
	if err != nil || d.Cron == "" || d.Count != 3 || len(d.Variants) != 1 {
		t.Errorf("DecodeDraft = %+v, %v", d, err)
	}
	if errors.Is(err, nil) && d.ID != "a" {
		t.Error(d.ID)
	}
}

func TestContentRotation(t *testing.T) {
	c := Content{Body: "a", Variants: []string{"b", "c"}, Texts: map[string]string{"x": "own"}}
	var got []string
	var fields []string
	for i := range 5 {
		text, f := c.TextAt("mastodon", i)
		got, fields = append(got, text), append(fields, f)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "a", "b"}, got); diff != "" {
		t.Errorf("texts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"body", "variants[0]", "variants[1]", "body", "variants[0]"}, fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	if text, f := c.TextAt("x", 1); text != "own" || f != "texts.x" {
		t.Errorf("x gets %q from %s", text, f)
	}
}

func TestFirstClashAndMostWithin(t *testing.T) {
	var daily []Occurrence
	for i := range 10 {
		daily = append(daily, Occurrence{Index: i, Slot: utc("2026-12-01T09:00:00Z").AddDate(0, 0, i)})
	}
	const window = 48 * time.Hour
	if n := MostWithin(daily, window); n != 2 {
		t.Errorf("daily within 48h: %d, want 2", n)
	}
	same := func(int) string { return "Same  text" }
	c, ok := FirstClash(daily, window, same)
	if !ok || c.First.Index != 0 || c.Second.Index != 1 {
		t.Errorf("the same text daily: %+v %v, want occurrences 0 and 1", c, ok)
	}
	two := Content{Body: "Tip one", Variants: []string{"tip ONE "}}
	if _, ok := FirstClash(daily, window, two.BodyAt); !ok {
		t.Error("variants that differ in case and spacing only do not clash")
	}
	rot := Content{Body: "one", Variants: []string{"two"}}
	if c, ok := FirstClash(daily, window, rot.BodyAt); ok {
		t.Errorf("two texts in turn, one a day, clash within 48h: %+v", c)
	}
	if c, ok := FirstClash(daily, 49*time.Hour, rot.BodyAt); !ok || c.First.Index != 0 || c.Second.Index != 2 {
		t.Errorf("within 49h the first text comes back after 48h: %+v %v", c, ok)
	}
	if _, ok := FirstClash(daily, window, func(int) string { return " " }); ok {
		t.Error("empty texts clash")
	}
}
