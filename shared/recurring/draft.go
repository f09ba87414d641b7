package recurring

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/schedexpr"
)

// Draft is a rule as an operator writes it (the CLI's JSON file, the
// API's body): times are text, read as Parse says.
type Draft struct {
	ID       string            `json:"id,omitempty"`
	Body     string            `json:"body"`
	Variants []string          `json:"variants,omitempty"`
	Texts    map[string]string `json:"texts,omitempty"`
	Media    []post.DraftMedia `json:"media,omitempty"`
	Accounts []string          `json:"accounts"`
	// EveryDays with At ("HH:MM"), or Cron (cron(...)): one of them.
	EveryDays int    `json:"every_days,omitempty"`
	At        string `json:"at,omitempty"`
	Cron      string `json:"cron,omitempty"`
	// TimeZone is an IANA zone; empty: the accounts' zone, which they must
	// share.
	TimeZone string `json:"time_zone,omitempty"`
	// Start is an RFC 3339 time with an offset, or a date (YYYY-MM-DD:
	// that day's midnight in the rule's zone); empty: now.
	Start string `json:"start,omitempty"`
	// Until is an RFC 3339 time with an offset, or a date (the end of
	// that day in the rule's zone: its occurrences are included); Count a
	// number of occurrences. At most one; neither: the rule runs until it
	// is stopped.
	Until string `json:"until,omitempty"`
	Count int    `json:"count,omitempty"`
}

// DraftOf is the draft a rule was made from (its times as RFC 3339 in
// the rule's zone): the base an edit changes.
func DraftOf(r Rule) Draft {
	d := Draft{
		ID: string(r.ID), Body: r.Body, Variants: slices.Clone(r.Variants), Texts: maps.Clone(r.Texts),
		EveryDays: r.Repeat.EveryDays, At: r.Repeat.At, Cron: r.Repeat.Cron, TimeZone: r.TimeZone,
		Start: r.Start.In(r.Location()).Format(time.RFC3339), Count: r.Count,
	}
	for _, m := range r.Media {
		d.Media = append(d.Media, post.DraftMedia{Media: m})
	}
	for _, a := range r.Accounts {
		d.Accounts = append(d.Accounts, string(a))
	}
	if !r.Until.IsZero() {
		d.Until = r.Until.In(r.Location()).Format(time.RFC3339)
	}
	return d
}

// Patch changes some fields of a draft (an edit): a nil field is left as
// it is. Setting EveryDays or At clears Cron and the other way round;
// setting Until clears Count and the other way round ("" and 0 clear
// them alone).
type Patch struct {
	Body      *string            `json:"body,omitempty"`
	Variants  *[]string          `json:"variants,omitempty"`
	Texts     *map[string]string `json:"texts,omitempty"`
	Media     *[]post.DraftMedia `json:"media,omitempty"`
	Accounts  *[]string          `json:"accounts,omitempty"`
	EveryDays *int               `json:"every_days,omitempty"`
	At        *string            `json:"at,omitempty"`
	Cron      *string            `json:"cron,omitempty"`
	TimeZone  *string            `json:"time_zone,omitempty"`
	Start     *string            `json:"start,omitempty"`
	Until     *string            `json:"until,omitempty"`
	Count     *int               `json:"count,omitempty"`
}

// Empty reports whether p changes nothing.
func (p Patch) Empty() bool { return p == Patch{} }

// Apply returns d changed by p.
func (p Patch) Apply(d Draft) Draft {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&d.Body, p.Body)
	if p.Variants != nil {
		d.Variants = slices.Clone(*p.Variants)
	}
	if p.Texts != nil {
		d.Texts = maps.Clone(*p.Texts)
	}
	if p.Media != nil {
		d.Media = slices.Clone(*p.Media)
	}
	if p.Accounts != nil {
		d.Accounts = slices.Clone(*p.Accounts)
	}
	if p.EveryDays != nil || p.At != nil {
		d.Cron = ""
		if d.EveryDays == 0 && p.EveryDays == nil {
			d.EveryDays = 1
		}
	}
	if p.EveryDays != nil {
		d.EveryDays = *p.EveryDays
	}
	set(&d.At, p.At)
	if p.Cron != nil {
		d.Cron, d.EveryDays, d.At = *p.Cron, 0, ""
	}
	set(&d.TimeZone, p.TimeZone)
	set(&d.Start, p.Start)
	if p.Until != nil {
		d.Until = *p.Until
		if *p.Until != "" {
			d.Count = 0
		}
	}
	if p.Count != nil {
		d.Count = *p.Count
		if *p.Count != 0 {
			d.Until = ""
		}
	}
	return d
}

// MaxDraftBytes bounds a rule's JSON, as a post's.
const MaxDraftBytes = post.MaxDraftBytes

// DecodeDraft parses a JSON rule strictly: UTF-8, no unknown fields, one
// object.
func DecodeDraft(raw []byte) (Draft, error) {
	var d Draft
	return d, decodeStrict(raw, &d, "rule")
}

// DecodePatch parses a JSON edit strictly, as DecodeDraft.
func DecodePatch(raw []byte) (Patch, error) {
	var p Patch
	return p, decodeStrict(raw, &p, "edit")
}

func decodeStrict(raw []byte, v any, what string) error {
	if len(raw) > MaxDraftBytes {
		return fmt.Errorf("%s is larger than %d bytes", what, MaxDraftBytes)
	}
	if off := post.InvalidUTF8(string(raw)); off >= 0 {
		return fmt.Errorf("%s: byte %d is not valid UTF-8; save the file as UTF-8", what, off)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%s is empty; write one JSON object", what)
		}
		return fmt.Errorf("%s: %s", what, strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: data after the JSON object; a %s is one object", what, what)
	}
	return nil
}

// Bounds of a rule.
const (
	// MaxEveryDays is the longest every_days: a year.
	MaxEveryDays = 366
	// MinGap is the shortest time between two occurrences: a rule is a
	// schedule of posts, not a feed.
	MinGap = 15 * time.Minute
	// MaxVariants bounds the variants.
	MaxVariants = 100
)

// Env is what Parse checks a draft against.
type Env struct {
	// Accounts are the workspace's accounts.
	Accounts map[post.AccountID]post.Account
	// Now: a rule without a start starts now; an until before it is
	// refused.
	Now time.Time
}

// Parse checks a draft's shape (id, accounts, repeat rule, zone, start,
// end) and returns the rule it describes, at revision 1. The content is
// checked against the platforms by the caller (it is a post's). The error
// joins one *post.FieldError per problem.
func (d Draft) Parse(env Env) (Rule, error) {
	var errs []error
	bad := func(field, problem, fix string) {
		errs = append(errs, &post.FieldError{Field: field, Problem: problem, Fix: fix})
	}
	r := Rule{ID: ID(d.ID), Revision: 1, Content: Content{Body: d.Body, Variants: slices.Clone(d.Variants), Texts: maps.Clone(d.Texts)},
		Repeat: Repeat{EveryDays: d.EveryDays, At: d.At, Cron: d.Cron}, Count: d.Count, CreatedAt: env.Now.UTC(), UpdatedAt: env.Now.UTC()}
	for _, m := range d.Media {
		r.Media = append(r.Media, m.Media)
	}
	if !ValidID(d.ID) {
		bad("id", fmt.Sprintf("%q is not a valid rule id", d.ID), "use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if len(d.Variants) > MaxVariants {
		bad("variants", fmt.Sprintf("has %d texts, over %d", len(d.Variants), MaxVariants), "rotate fewer texts")
	}
	for i, v := range d.Variants {
		if strings.TrimSpace(v) == "" && len(d.Media) == 0 {
			bad(fmt.Sprintf("variants[%d]", i), "is empty", "write the text, or remove it")
		}
	}

	// Accounts, and the zone they share.
	zones := map[string][]string{}
	if len(d.Accounts) == 0 {
		bad("accounts", "is empty", "name at least one account")
	}
	seen := map[string]bool{}
	for i, a := range d.Accounts {
		f := fmt.Sprintf("accounts[%d]", i)
		acc, ok := env.Accounts[post.AccountID(a)]
		switch {
		case a == "":
			bad(f, "is empty", "name one of the workspace's accounts")
			continue
		case !ok:
			bad(f, fmt.Sprintf("unknown account %q", a), "add the account first or fix the name")
			continue
		case seen[a]:
			bad(f, fmt.Sprintf("account %q is named twice", a), "name each account once")
			continue
		}
		seen[a] = true
		r.Accounts = append(r.Accounts, acc.ID)
		zones[acc.TimeZone] = append(zones[acc.TimeZone], a)
	}
	r.TimeZone = d.TimeZone
	zoneOK := true
	switch {
	case d.TimeZone != "":
		if err := post.ValidTimeZone(d.TimeZone); err != nil {
			bad("time_zone", err.Error(), "give an IANA zone name such as Europe/Berlin")
			zoneOK = false
		}
	case len(zones) > 1:
		var parts []string
		for _, z := range slices.Sorted(maps.Keys(zones)) {
			name := z
			if name == "" {
				name = "UTC"
			}
			parts = append(parts, fmt.Sprintf("%s (%s)", strings.Join(zones[z], ", "), name))
		}
		bad("time_zone", "the accounts are in different zones: "+strings.Join(parts, "; "),
			"give the zone the rule's times are read in, e.g. \"time_zone\": \"Europe/Berlin\"")
		zoneOK = false
	case len(zones) == 1:
		for z := range zones {
			r.TimeZone = z
		}
	}
	loc := time.UTC
	if zoneOK && r.TimeZone != "" {
		if l, err := time.LoadLocation(r.TimeZone); err == nil {
			loc = l
		} else {
			// Checked above; a zone database without it (a build without
			// time/tzdata on a host without /usr/share/zoneinfo) is
			// refused here, never read as UTC.
			bad("time_zone", fmt.Sprintf("%q cannot be loaded here: %v", r.TimeZone, err), "give another IANA zone name")
			zoneOK = false
		}
	}

	// The repeat rule.
	switch {
	case d.Cron != "" && (d.EveryDays != 0 || d.At != ""):
		bad("cron", "is given with every_days/at", "give either every_days with at, or cron")
	case d.Cron != "":
		if _, err := schedexpr.Parse(d.Cron, "", time.Time{}); err != nil {
			bad("cron", err.Error(), "write cron(minutes hours day-of-month month day-of-week year), e.g. cron(0 9 ? * MON-FRI *)")
		} else if !strings.HasPrefix(d.Cron, "cron(") {
			bad("cron", fmt.Sprintf("%q is not a cron(...) expression", d.Cron), "write cron(minutes hours day-of-month month day-of-week year); for every N days use every_days and at")
		}
	case d.EveryDays == 0 && d.At == "":
		bad("every_days", "no repeat rule is given", "give every_days with at (e.g. every_days 1, at 09:00), or cron")
	default:
		if d.EveryDays < 1 || d.EveryDays > MaxEveryDays {
			bad("every_days", fmt.Sprintf("%d is not from 1 to %d", d.EveryDays, MaxEveryDays), "repeat every 1 to 366 days")
		}
		if _, _, err := parseClock(d.At); err != nil {
			bad("at", err.Error(), "write the local time of day, e.g. 09:00")
		}
	}

	// Start and end.
	r.Start = env.Now.UTC()
	if d.Start != "" {
		if t, err := parseTime(d.Start, loc, false); err != nil {
			bad("start", err.Error(), "write an RFC 3339 time with an offset, or a date (YYYY-MM-DD) in the rule's zone")
		} else {
			r.Start = t
		}
	}
	switch {
	case d.Until != "" && d.Count != 0:
		bad("until", "is given with count", "end the rule by a time (until) or a number of occurrences (count), not both")
	case d.Count < 0:
		bad("count", fmt.Sprintf("%d is negative", d.Count), "give the number of occurrences, or leave it out")
	case d.Until != "":
		t, err := parseTime(d.Until, loc, true)
		switch {
		case err != nil:
			bad("until", err.Error(), "write an RFC 3339 time with an offset, or a date (YYYY-MM-DD), whose occurrences are included")
		case t.Before(r.Start):
			bad("until", fmt.Sprintf("%s is before the start (%s)", t.Format(time.RFC3339), r.Start.Format(time.RFC3339)), "end the rule after it starts")
		case t.Before(env.Now):
			bad("until", fmt.Sprintf("%s is in the past", t.Format(time.RFC3339)), "end the rule in the future, or stop it instead")
		default:
			r.Until = t
		}
	}
	if len(errs) > 0 {
		return Rule{}, fmt.Errorf("rule %q refused: %w", d.ID, errors.Join(errs...))
	}
	return r, r.checkSchedule(env.Now)
}

// checkSchedule refuses a rule that has no occurrence from now on, or
// whose occurrences come closer than MinGap (looked at over its first
// year or 1,000 occurrences).
func (r Rule) checkSchedule(now time.Time) error {
	s, err := r.Schedule()
	if err != nil {
		return fmt.Errorf("rule %q refused: %w", r.ID, &post.FieldError{Field: "cron", Problem: err.Error(), Fix: "fix the repeat rule"})
	}
	field := "every_days"
	if r.Repeat.Cron != "" {
		field = "cron"
	}
	occ := s.After(Position{}, r.Start.AddDate(1, 0, 0), 1000)
	for i := 1; i < len(occ); i++ {
		if gap := occ[i].Slot.Sub(occ[i-1].Slot); gap < MinGap {
			return fmt.Errorf("rule %q refused: %w", r.ID, &post.FieldError{Field: field,
				Problem: fmt.Sprintf("occurrences at %s and %s are %s apart, under the %s a rule may repeat at most", occ[i-1].Slot.Format(time.RFC3339), occ[i].Slot.Format(time.RFC3339), gap, MinGap),
				Fix:     "repeat less often"})
		}
	}
	if next := s.After(s.Position(Position{}, now), time.Date(post.MaxSlotYear, 12, 31, 23, 59, 0, 0, time.UTC), 1); len(next) == 0 {
		end := "its end"
		switch {
		case r.Count > 0:
			end = fmt.Sprintf("count (%d)", r.Count)
		case !r.Until.IsZero():
			end = "until"
		}
		return fmt.Errorf("rule %q refused: %w", r.ID, &post.FieldError{Field: field,
			Problem: fmt.Sprintf("the rule has no occurrence from now on, between its start and %s", end),
			Fix:     "move the start or the end, or change the repeat rule"})
	}
	return nil
}

// parseTime reads a rule's start or until: RFC 3339 with an offset, or a
// date (its midnight in loc; with endOfDay, the last instant before the
// next day's midnight).
func parseTime(s string, loc *time.Location, endOfDay bool) (time.Time, error) {
	if day, err := time.ParseInLocation("2006-01-02", s, loc); err == nil {
		if endOfDay {
			y, m, d := day.Date()
			return time.Date(y, m, d+1, 0, 0, 0, 0, loc).Add(-time.Nanosecond).UTC(), nil
		}
		return day.UTC(), nil
	}
	return post.ParseSlot(s)
}
