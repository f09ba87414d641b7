// Package recurring holds what an operator writes to repeat a post: a Rule
// (the post's content, the accounts it goes to, a repeat rule read in an
// IANA time zone, a start and an end) and how a rule unfolds into
// occurrences, each of which becomes a post of its own.
//
// A rule repeats every N days at a local time, or on a cron expression in
// the scheduler's dialect (package schedexpr, the dialect of EventBridge
// Scheduler), and either way its wall-clock times follow the scheduler's
// daylight-saving rule: a time that does not exist on a spring-forward
// night is skipped, a time that happens twice on a fall-back night fires
// once, at its first occurrence. Every N days is built on the same cron
// evaluator, one day at a time, so the two kinds cannot disagree.
//
// An occurrence's post id is derived from the rule's id, its revision and
// the occurrence's slot (OccurrenceID): creating it twice is a conflict in
// the store, never a second post.
package recurring

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/schedexpr"
)

// ID identifies a rule.
type ID string

// MaxIDLen is the longest rule id: the occurrence ids derived from it
// (OccurrenceID) stay within a post id's 128 characters.
const MaxIDLen = 64

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidID reports whether id can name a rule: 1-64 letters, digits, '.',
// '_' or '-', starting with a letter or digit.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// Repeat is when a rule repeats: every EveryDays days at At (a local
// "HH:MM"), or on Cron, a cron(...) expression in the scheduler's dialect.
// Exactly one of EveryDays and Cron is set.
type Repeat struct {
	EveryDays int    `json:"every_days,omitempty"`
	At        string `json:"at,omitempty"`
	Cron      string `json:"cron,omitempty"`
}

// String says the repeat rule in words, e.g. "every day at 09:00".
func (r Repeat) String() string {
	switch {
	case r.Cron != "":
		return r.Cron
	case r.EveryDays == 1:
		return "every day at " + r.At
	default:
		return fmt.Sprintf("every %d days at %s", r.EveryDays, r.At)
	}
}

// Content is what each occurrence says: the post's body, its texts per
// platform and its attachments, as a post.Draft has them, and Variants
// that rotate with the body.
type Content struct {
	Body string `json:"body"`
	// Variants are further texts that take turns with the body:
	// occurrence k (counting from 0 at the rule's first occurrence) goes
	// out with the k-th of [Body, Variants...], round and round. A
	// platform with a text of its own (Texts) always gets that text.
	Variants []string          `json:"variants,omitempty"`
	Texts    map[string]string `json:"texts,omitempty"`
	Media    []post.Media      `json:"media,omitempty"`
}

// Rotation is the number of texts that take turns: the body and its
// variants.
func (c Content) Rotation() int { return 1 + len(c.Variants) }

// BodyAt is the body of occurrence index: the index-th of [Body,
// Variants...], round and round.
func (c Content) BodyAt(index int) string {
	n := c.Rotation()
	k := index % n
	if k < 0 {
		k += n
	}
	if k == 0 {
		return c.Body
	}
	return c.Variants[k-1]
}

// TextAt is the text occurrence index goes out with on a platform: the
// platform's own text, or BodyAt(index); field names where it is written
// ("texts.<platform>", "body" or "variants[i]").
func (c Content) TextAt(platform string, index int) (text, field string) {
	if t, ok := c.Texts[platform]; ok {
		return t, "texts." + platform
	}
	k := index % c.Rotation()
	if k == 0 {
		return c.Body, "body"
	}
	return c.Variants[k-1], fmt.Sprintf("variants[%d]", k-1)
}

// Rule is a stored recurring rule.
type Rule struct {
	ID ID `json:"id"`
	// Revision counts the rule's versions, from 1: an edit makes a new
	// revision, whose occurrences get ids of their own.
	Revision int `json:"revision"`
	Content
	Accounts []post.AccountID `json:"accounts"`
	Repeat   Repeat           `json:"repeat"`
	// TimeZone is the IANA zone the repeat rule is read in, resolved when
	// the rule was written (from the accounts' zone when none was given).
	TimeZone string `json:"time_zone"`
	// Start: no occurrence before it. Until (zero: none) and Count (0:
	// none) end the rule: no occurrence after Until, none after the
	// Count-th from Start.
	Start time.Time `json:"start"`
	Until time.Time `json:"until,omitzero"`
	Count int       `json:"count,omitempty"`
	// StoppedAt is when the rule was stopped; zero while it runs.
	StoppedAt time.Time `json:"stopped_at,omitzero"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Author is who wrote the rule (as post.Post.Author).
	Author string `json:"author,omitempty"`
	// Fingerprint identifies the keyed request that created the rule (an
	// API create with an Idempotency-Key): its key, hashed, and its
	// request's fingerprint; its retry is answered with the rule.
	Fingerprint string `json:"fingerprint,omitempty"`

	// What the materializer keeps on the rule.

	// Through is the position up to which every occurrence of this
	// revision is settled: created (or found created), or recorded in
	// Missed. Zero before the first.
	Through Position `json:"through,omitzero"`
	// Keep are slots where an earlier revision's occurrence was kept
	// (it could not be cancelled: it was being sent): this revision
	// creates none there.
	Keep []time.Time `json:"keep,omitempty"`
	// Retiring is the revision an edit replaced, whose future
	// occurrences are still to be cancelled; nil once done.
	Retiring *Retiring `json:"retiring,omitempty"`
	// Problem is the latest occurrence that could not be created, if it
	// is still to come; nil otherwise.
	Problem *Problem `json:"problem,omitempty"`
	// Missed are occurrences never created (their time passed before they
	// could be), the latest MaxMissed.
	Missed []Problem `json:"missed,omitempty"`

	// Version is the store's: every write adds one, and a write is
	// refused unless the stored rule still has the version read.
	Version int64 `json:"version"`
}

// MaxMissed is how many missed occurrences a rule remembers.
const MaxMissed = 20

// Position is an occurrence's place in its rule: its index (from 0 at
// the first occurrence from Start) and its slot. The zero Position is
// before the first occurrence.
type Position struct {
	Index int       `json:"index"`
	Slot  time.Time `json:"slot"`
}

// IsZero reports whether p is before the first occurrence.
func (p Position) IsZero() bool { return p.Slot.IsZero() }

// Occurrence is one occurrence of a rule.
type Occurrence = Position

// Retiring is an earlier revision whose occurrences after From are
// cancelled (those not created yet up to Through are written cancelled,
// so that a materializer still holding that revision cannot create them).
type Retiring struct {
	Rule    Rule      `json:"rule"`
	From    time.Time `json:"from"`
	Through time.Time `json:"through"`
}

// Problem is an occurrence that could not be created, and why.
type Problem struct {
	Slot   time.Time `json:"slot"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// Active reports whether the rule still makes occurrences: not stopped.
func (r Rule) Active() bool { return r.StoppedAt.IsZero() }

// Location is the rule's time zone (UTC when it does not load).
func (r Rule) Location() *time.Location {
	a := post.Account{TimeZone: r.TimeZone}
	return a.Location()
}

// OccurrenceID is the post id of the rule's occurrence at slot:
// "<rule>-<slot as 20061203T0800Z>", and "-r<revision>" after it from
// revision 2 on. Deterministic: the same rule, revision and slot always
// name the same post, so creating it again is a conflict, never a second
// post.
func OccurrenceID(rule ID, revision int, slot time.Time) post.ID {
	id := string(rule) + "-" + slot.UTC().Format("20060102T1504Z")
	if revision > 1 {
		id += fmt.Sprintf("-r%d", revision)
	}
	return post.ID(id)
}

// OccurrenceID is the post id of r's occurrence at slot.
func (r Rule) OccurrenceID(slot time.Time) post.ID { return OccurrenceID(r.ID, r.Revision, slot) }

// Schedule is a rule's occurrences.
type Schedule struct {
	rule Rule
	loc  *time.Location
	cron schedexpr.Schedule
	// every N days: the first day (in loc) and the time of day.
	firstDay   time.Time // midnight UTC of the start's date in loc
	hour, mins int
}

// Schedule parses the rule's repeat rule in its zone.
func (r Rule) Schedule() (*Schedule, error) {
	s := &Schedule{rule: r}
	loc, err := time.LoadLocation(r.TimeZone)
	if r.TimeZone == "" {
		loc, err = time.UTC, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rule %s: time zone %q: %w", r.ID, r.TimeZone, err)
	}
	s.loc = loc
	switch {
	case r.Repeat.Cron != "" && r.Repeat.EveryDays == 0:
		c, err := schedexpr.Parse(r.Repeat.Cron, r.TimeZone, r.Start)
		if err != nil {
			return nil, fmt.Errorf("rule %s: %w", r.ID, err)
		}
		s.cron = c
	case r.Repeat.Cron == "" && r.Repeat.EveryDays > 0:
		h, m, err := parseClock(r.Repeat.At)
		if err != nil {
			return nil, fmt.Errorf("rule %s: at: %w", r.ID, err)
		}
		s.hour, s.mins = h, m
		y, mo, d := r.Start.In(loc).Date()
		s.firstDay = time.Date(y, mo, d, 0, 0, 0, 0, time.UTC)
	default:
		return nil, fmt.Errorf("rule %s: repeat needs every_days or cron, one of them", r.ID)
	}
	return s, nil
}

// next is the first firing strictly after after, ignoring the rule's end.
func (s *Schedule) next(after time.Time) (time.Time, bool) {
	if s.cron != nil {
		return s.cron.Next(after)
	}
	if after.Before(s.rule.Start) {
		after = s.rule.Start.Add(-time.Nanosecond)
	}
	// The first candidate day: the one after's date falls on in the zone,
	// moved to a day of the rule (firstDay + k·N).
	y, mo, d := after.In(s.loc).Date()
	day := time.Date(y, mo, d, 0, 0, 0, 0, time.UTC)
	n := s.rule.Repeat.EveryDays
	k := int(day.Sub(s.firstDay).Hours()/24) / n
	if k < 0 {
		k = 0
	}
	// A day's time may be skipped (a spring-forward gap) or already
	// passed: a few more days always find one.
	for range 8 {
		cand := s.firstDay.AddDate(0, 0, k*n)
		if cand.Year() > post.MaxSlotYear {
			return time.Time{}, false
		}
		if t, ok := wallTime(cand, s.hour, s.mins, s.rule.TimeZone); ok && t.After(after) {
			return t, true
		}
		k++
	}
	return time.Time{}, false
}

// wallTime is the instant a day's hh:mm happens in zone, as the scheduler
// reads it (schedexpr: the first occurrence in a fall-back overlap, none
// in a spring-forward gap).
func wallTime(day time.Time, h, m int, zone string) (time.Time, bool) {
	expr := fmt.Sprintf("cron(%d %d %d %d ? %d)", m, h, day.Day(), int(day.Month()), day.Year())
	c, err := schedexpr.Parse(expr, zone, time.Time{})
	if err != nil {
		return time.Time{}, false
	}
	// The day's time is at most 14 hours off UTC midnight.
	return c.Next(day.Add(-15 * time.Hour))
}

// After lists the occurrences after p (p itself excluded; the zero
// Position: from the first), up to and including through, at most limit
// (≤ 0: no limit), within the rule's start and end.
func (s *Schedule) After(p Position, through time.Time, limit int) []Occurrence {
	var out []Occurrence
	index, at := p.Index+1, p.Slot
	if p.IsZero() {
		index, at = 0, s.rule.Start.Add(-time.Nanosecond)
	}
	for limit <= 0 || len(out) < limit {
		if s.rule.Count > 0 && index >= s.rule.Count {
			break
		}
		t, ok := s.next(at)
		if !ok || t.After(through) || (!s.rule.Until.IsZero() && t.After(s.rule.Until)) {
			break
		}
		out = append(out, Occurrence{Index: index, Slot: t})
		index, at = index+1, t
	}
	return out
}

// Position is the last occurrence at or before t (the zero Position when
// there is none), counted from the first: its cost grows with the
// occurrences before t.
func (s *Schedule) Position(from Position, t time.Time) Position {
	p := from
	for {
		o := s.After(p, t, 256)
		if len(o) == 0 {
			return p
		}
		p = o[len(o)-1]
	}
}

// parseClock parses "HH:MM" (24-hour).
func parseClock(s string) (h, m int, err error) {
	t, err := time.Parse("15:04", s)
	if err != nil || len(s) != 5 {
		return 0, 0, fmt.Errorf("%q is not a time of day as HH:MM (24-hour), e.g. 09:00", s)
	}
	return t.Hour(), t.Minute(), nil
}

// Describe says the rule's repeat, zone and end in words, e.g. "every day
// at 09:00 (Europe/Berlin), 30 times from 2026-10-12".
func (r Rule) Describe() string {
	zone := r.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s)", r.Repeat, zone)
	if r.Count > 0 {
		fmt.Fprintf(&b, ", %d times", r.Count)
	}
	fmt.Fprintf(&b, " from %s", r.Start.In(r.Location()).Format("2006-01-02 15:04"))
	if !r.Until.IsZero() {
		fmt.Fprintf(&b, " until %s", r.Until.In(r.Location()).Format("2006-01-02 15:04"))
	}
	if !r.Active() {
		fmt.Fprintf(&b, "; stopped %s", r.StoppedAt.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// Encode is a rule as the stores keep it: JSON, every time in UTC.
func Encode(r Rule) ([]byte, error) {
	b, err := json.Marshal(r.UTC())
	if err != nil {
		return nil, fmt.Errorf("encode rule %s: %w", r.ID, err)
	}
	return b, nil
}

// Decode reads a rule Encode wrote.
func Decode(b []byte) (Rule, error) {
	var r Rule
	if err := json.Unmarshal(b, &r); err != nil {
		return Rule{}, fmt.Errorf("decode rule: %w", err)
	}
	return r.UTC(), nil
}

// UTC is r with every time in UTC.
func (r Rule) UTC() Rule {
	u := func(t *time.Time) {
		if !t.IsZero() {
			*t = t.UTC()
		}
	}
	for _, t := range []*time.Time{&r.Start, &r.Until, &r.StoppedAt, &r.CreatedAt, &r.UpdatedAt, &r.Through.Slot} {
		u(t)
	}
	r.Keep = slices.Clone(r.Keep)
	for i := range r.Keep {
		u(&r.Keep[i])
	}
	if r.Problem != nil {
		p := *r.Problem
		u(&p.Slot)
		u(&p.At)
		r.Problem = &p
	}
	r.Missed = slices.Clone(r.Missed)
	for i := range r.Missed {
		u(&r.Missed[i].Slot)
		u(&r.Missed[i].At)
	}
	if r.Retiring != nil {
		ret := *r.Retiring
		ret.Rule = ret.Rule.UTC()
		u(&ret.From)
		u(&ret.Through)
		r.Retiring = &ret
	}
	return r
}
