package schedexpr

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxExprLen is the API's length limit for ScheduleExpression.
const maxExprLen = 256

// Schedule is a parsed schedule expression.
type Schedule interface {
	// Next returns the first firing strictly after after, in UTC, and false
	// when there is none (a past at(), a cron whose years are over).
	Next(after time.Time) (time.Time, bool)
}

// ExprError reports a malformed schedule expression.
type ExprError struct {
	// Expr is the whole expression.
	Expr string
	// Field is the cron field ("minutes", "hours", "day-of-month", "month",
	// "day-of-week", "year"), or "value" or "unit" of a rate, or "" when the
	// expression as a whole is wrong.
	Field string
	// Token is the offending text.
	Token string
	// Msg says what is wrong, naming the token.
	Msg string
}

// Error returns the expression, the field if any, and what is wrong.
func (e *ExprError) Error() string {
	if isCronField(e.Field) {
		return e.Expr + ": " + e.Field + " field: " + e.Msg
	}
	return e.Expr + ": " + e.Msg
}

// Parse parses a Scheduler expression (at, rate or cron) evaluated in the
// IANA time zone timezone ("" is UTC). start anchors a rate (its first
// firing is start) and is a cron's StartDate (no firing before it); at()
// ignores it, as Scheduler ignores StartDate for one-time schedules.
func Parse(expr, timezone string, start time.Time) (Schedule, error) {
	if len(expr) > maxExprLen {
		return nil, &ExprError{Expr: shorten(expr), Token: expr, Msg: fmt.Sprintf("expression is %d bytes long, more than %d", len(expr), maxExprLen)}
	}
	kind, body, ok := splitCall(expr)
	if !ok {
		return nil, &ExprError{Expr: expr, Token: expr, Msg: "want at(yyyy-mm-ddThh:mm:ss), rate(value unit) or cron(minutes hours day-of-month month day-of-week year)"}
	}
	var parse func(expr, body string, loc *time.Location, start time.Time) (Schedule, error)
	switch kind {
	case "at":
		parse = parseAt
	case "rate":
		parse = parseRate
	case "cron":
		parse = parseCron
	default:
		return nil, &ExprError{Expr: expr, Token: kind, Msg: fmt.Sprintf("unknown expression type %q: want at, rate or cron", kind)}
	}
	// The expression first: its syntax does not depend on the zone.
	if _, err := parse(expr, body, time.UTC, start); err != nil {
		return nil, err
	}
	loc, err := loadZone(timezone)
	if err != nil {
		return nil, err
	}
	return parse(expr, body, loc, start)
}

// shorten cuts a long expression for an error message.
func shorten(s string) string {
	const keep = 40
	if len(s) <= keep {
		return s
	}
	cut := keep
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// splitCall splits "name(body)".
func splitCall(expr string) (name, body string, ok bool) {
	open := strings.IndexByte(expr, '(')
	if open <= 0 || !strings.HasSuffix(expr, ")") {
		return "", "", false
	}
	return expr[:open], expr[open+1 : len(expr)-1], true
}

// loadZone loads an IANA time zone; "" is UTC. The process-local zone is
// refused: a schedule must mean the same on every machine.
func loadZone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if name == "Local" {
		return nil, fmt.Errorf("unknown timezone %q: want an IANA name such as Europe/Berlin", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown timezone %q: %w", name, err)
	}
	return loc, nil
}

// atSchedule fires once.
type atSchedule struct{ at time.Time }

// Next returns the schedule's one time if it is after after.
func (s atSchedule) Next(after time.Time) (time.Time, bool) {
	if s.at.After(after) {
		return s.at, true
	}
	return time.Time{}, false
}

// parseAt parses the body of at(yyyy-mm-ddThh:mm:ss).
func parseAt(expr, body string, loc *time.Location, _ time.Time) (Schedule, error) {
	const layout = "2006-01-02T15:04:05"
	bad := func(msg string) error { return &ExprError{Expr: expr, Token: body, Msg: msg} }
	// time.Parse alone would also take a fractional second; check the shape.
	if len(body) != len(layout) {
		return nil, bad(fmt.Sprintf("%q is not yyyy-mm-ddThh:mm:ss", body))
	}
	for i := range len(layout) {
		c, want := body[i], layout[i]
		if want >= '0' && want <= '9' {
			if c < '0' || c > '9' {
				return nil, bad(fmt.Sprintf("%q is not yyyy-mm-ddThh:mm:ss", body))
			}
		} else if c != want {
			return nil, bad(fmt.Sprintf("%q is not yyyy-mm-ddThh:mm:ss", body))
		}
	}
	t, err := time.Parse(layout, body)
	if err != nil {
		// Out-of-range parts: month 13, February 30, hour 24.
		return nil, bad(fmt.Sprintf("%q is not a valid date and time: %v", body, err))
	}
	if y := t.Year(); y < minYear || y > maxYear {
		return nil, bad(fmt.Sprintf("year %d is out of range %d-%d", y, minYear, maxYear))
	}
	return atSchedule{at: atInstant(t, loc).UTC()}, nil
}

// rateSchedule fires at start + k·period, k ≥ 0.
type rateSchedule struct {
	start  time.Time
	period int64 // whole seconds
}

// Next returns the first start + k·period after after.
func (s rateSchedule) Next(after time.Time) (time.Time, bool) {
	if after.Before(s.start) {
		return s.start.UTC(), true
	}
	// Whole seconds from start to after, rounded down: periods are whole
	// seconds, so the fraction cannot cross a firing. Seconds, not
	// time.Duration, which saturates after 292 years.
	sec := after.Unix() - s.start.Unix()
	if after.Nanosecond() < s.start.Nanosecond() {
		sec--
	}
	k := sec/s.period + 1
	t := time.Unix(s.start.Unix()+k*s.period, int64(s.start.Nanosecond())).UTC()
	if !t.After(after) { // only on arithmetic overflow, for absurd times
		return time.Time{}, false
	}
	return t, true
}

// rateUnits are the units of rate(value unit), in seconds.
var rateUnits = map[string]int64{
	"minute": 60, "minutes": 60,
	"hour": 3600, "hours": 3600,
	"day": 86400, "days": 86400,
}

// parseRate parses the body of rate(value unit).
func parseRate(expr, body string, _ *time.Location, start time.Time) (Schedule, error) {
	f := strings.Fields(body)
	if len(f) != 2 {
		return nil, &ExprError{Expr: expr, Token: body, Msg: fmt.Sprintf("%q is not \"value unit\"", body)}
	}
	value, unit := f[0], f[1]
	if strings.HasPrefix(value, "-") && isDigits(value[1:]) {
		return nil, &ExprError{Expr: expr, Field: "value", Token: value, Msg: "value must be ≥ 1"}
	}
	if !isDigits(value) {
		return nil, &ExprError{Expr: expr, Field: "value", Token: value, Msg: fmt.Sprintf("value %q is not a whole number", value)}
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return nil, &ExprError{Expr: expr, Field: "value", Token: value, Msg: fmt.Sprintf("value %q is too large", value)}
	}
	if n < 1 {
		return nil, &ExprError{Expr: expr, Field: "value", Token: value, Msg: "value must be ≥ 1"}
	}
	secs, ok := rateUnits[unit]
	if !ok {
		return nil, &ExprError{Expr: expr, Field: "unit", Token: unit, Msg: fmt.Sprintf("unit %q is not one of minute, minutes, hour, hours, day, days", unit)}
	}
	if n != 1 && !strings.HasSuffix(unit, "s") {
		return nil, &ExprError{Expr: expr, Field: "unit", Token: unit, Msg: fmt.Sprintf("unit %q is singular: with value %d write %ss", unit, n, unit)}
	}
	// Periods must fit a time.Duration (about 292 years).
	if n > int64(maxDuration/time.Second)/secs {
		return nil, &ExprError{Expr: expr, Field: "value", Token: value, Msg: fmt.Sprintf("value %d is too large: the period must be under 292 years", n)}
	}
	return rateSchedule{start: start, period: n * secs}, nil
}

// maxDuration is the largest time.Duration.
const maxDuration = time.Duration(1<<63 - 1)

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// OneTime reports whether s is an at() schedule, and its one time: a
// one-time schedule fires then even when that is past (its time is what
// it says), where a recurring one fires only from now on.
func OneTime(s Schedule) (time.Time, bool) {
	at, ok := s.(atSchedule)
	return at.at, ok
}
