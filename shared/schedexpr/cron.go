package schedexpr

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Cron fields, in expression order.
const (
	fMinutes = iota
	fHours
	fDayOfMonth
	fMonth
	fDayOfWeek
	fYear
	nFields
)

// Years a cron expression can name.
const (
	minYear = 1970
	maxYear = 2199
)

var (
	fieldName = [nFields]string{"minutes", "hours", "day-of-month", "month", "day-of-week", "year"}
	fieldMin  = [nFields]int{0, 0, 1, 1, 1, minYear}
	fieldMax  = [nFields]int{59, 23, 31, 12, 7, maxYear}
	// fieldStep is the largest step after "/" (Quartz's limits); 0: no "/".
	fieldStep = [nFields]int{59, 23, 31, 12, 0, maxYear - minYear}
	// fieldSpecial lists the characters a field allows, for error messages.
	fieldSpecial = [nFields]string{", - * /", ", - * /", ", - * ? / L W", ", - * /", ", - * ? L #", ", - * /"}

	monthNames = map[string]int{"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6, "JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12}
	dayNames   = map[string]int{"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}
)

func isCronField(name string) bool {
	for _, f := range fieldName {
		if f == name {
			return true
		}
	}
	return false
}

// cronSchedule is a parsed cron expression: each field a bit set.
type cronSchedule struct {
	loc   *time.Location
	start time.Time // StartDate: no firing before it

	minutes uint64    // bit m, 0-59
	hours   uint32    // bit h, 0-23
	months  uint16    // bit m, 1-12
	years   [4]uint64 // bit y-minYear

	// byDOM: day-of-month is given and day-of-week is "?"; otherwise the
	// reverse.
	byDOM bool

	domDays        uint32 // bit d, 1-31
	domLast        bool   // L
	domLastWeekday bool   // LW
	domNearest     int    // nW: n, or 0

	dowDays    uint8 // bit d, 1-7 (1 = Sunday)
	dowLastOf  int   // nL: weekday n (1-7), or 0
	dowNth     int   // n#k: weekday n (1-7), or 0
	dowNthWeek int   // n#k: k (1-5)
}

// parseCron parses the body of cron(...).
func parseCron(expr, body string, loc *time.Location, start time.Time) (Schedule, error) {
	f := strings.Fields(body)
	if len(f) != nFields {
		return nil, &ExprError{Expr: expr, Token: body, Msg: fmt.Sprintf("want 6 fields (minutes hours day-of-month month day-of-week year), got %d", len(f))}
	}
	c := &cronSchedule{loc: loc, start: start}
	p := cronParser{expr: expr}
	var question [nFields]bool
	for i, text := range f {
		q, err := p.field(c, i, text)
		if err != nil {
			return nil, err
		}
		question[i] = q
	}
	switch dom, dow := question[fDayOfMonth], question[fDayOfWeek]; {
	case dom && dow:
		return nil, &ExprError{Expr: expr, Token: "?", Msg: `day-of-month and day-of-week cannot both be "?": give one of them`}
	case !dom && !dow:
		return nil, &ExprError{Expr: expr, Token: f[fDayOfWeek], Msg: fmt.Sprintf(`one of day-of-month (%q) and day-of-week (%q) must be "?"`, f[fDayOfMonth], f[fDayOfWeek])}
	}
	c.byDOM = question[fDayOfWeek]
	return c, nil
}

// cronParser parses the fields of one expression.
type cronParser struct{ expr string }

func (p cronParser) errf(field int, token, format string, args ...any) error {
	return &ExprError{Expr: p.expr, Field: fieldName[field], Token: token, Msg: fmt.Sprintf(format, args...)}
}

// field parses field i into c and reports whether it is "?".
func (p cronParser) field(c *cronSchedule, i int, text string) (bool, error) {
	if text == "?" {
		if i != fDayOfMonth && i != fDayOfWeek {
			return false, p.errf(i, text, `"?" is allowed only in day-of-month and day-of-week`)
		}
		return true, nil
	}
	items := strings.Split(text, ",")
	for _, item := range items {
		if item == "" {
			return false, p.errf(i, text, "%q has an empty list element", text)
		}
		special, err := p.special(c, i, item)
		if err != nil {
			return false, err
		}
		if special && len(items) > 1 {
			return false, p.errf(i, text, "%q: %s must stand alone in the %s field, not in a list", text, item, fieldName[i])
		}
		if special {
			continue
		}
		if err := p.item(c, i, item); err != nil {
			return false, err
		}
	}
	return false, nil
}

// special parses the day-of-month forms L, LW and nW and the day-of-week
// forms L, nL and n#k, and reports whether item was one of them. Any other
// use of L, W or # is an error.
func (p cronParser) special(c *cronSchedule, i int, item string) (bool, error) {
	up := strings.ToUpper(item)
	switch i {
	case fDayOfMonth:
		switch {
		case up == "L":
			c.domLast = true
			return true, nil
		case up == "LW":
			c.domLastWeekday = true
			return true, nil
		case strings.HasPrefix(up, "L"):
			return false, p.errf(i, item, "%q: only L and LW may start with L (no L-n offsets)", item)
		case strings.HasSuffix(up, "W"):
			n, ok := number(up[:len(up)-1])
			if !ok {
				return false, p.errf(i, item, "%q: W needs a single day before it, as in 15W", item)
			}
			if n < 1 || n > 31 {
				return false, p.errf(i, item, "%q: %d is out of range 1-31", item, n)
			}
			c.domNearest = n
			return true, nil
		case strings.ContainsAny(up, "LW#"):
			return false, p.errf(i, item, "%q: L and W are allowed only as L, LW or nW", item)
		}
	case fDayOfWeek:
		switch {
		case up == "L":
			c.dowDays |= 1 << 7 // the last day of the week: Saturday
			return true, nil
		case strings.Contains(up, "#"):
			day, nth, _ := strings.Cut(up, "#")
			d, err := p.value(i, item, day)
			if err != nil {
				return false, err
			}
			k, ok := number(nth)
			if !ok || k < 1 || k > 5 {
				return false, p.errf(i, item, "%q: the occurrence after # must be 1-5", item)
			}
			c.dowNth, c.dowNthWeek = d, k
			return true, nil
		case strings.HasSuffix(up, "L") && len(up) > 1:
			d, err := p.value(i, item, up[:len(up)-1])
			if err != nil {
				return false, err
			}
			c.dowLastOf = d
			return true, nil
		}
	case fMonth:
		// Month names contain L (JUL); a stray L, W or # fails as a value.
	default:
		if strings.ContainsAny(up, "LW#?") {
			return false, p.errf(i, item, "%q: the %s field allows only digits and %s", item, fieldName[i], fieldSpecial[i])
		}
	}
	return false, nil
}

// item parses *, v, a-b, */n, a/n or a-b/n and sets its bits.
func (p cronParser) item(c *cronSchedule, i int, item string) error {
	base, step, hasStep := strings.Cut(item, "/")
	lo, hi := fieldMin[i], fieldMax[i]
	inc := 1
	if hasStep {
		if fieldStep[i] == 0 {
			return p.errf(i, item, `%q: "/" is not allowed in the %s field`, item, fieldName[i])
		}
		n, ok := number(step)
		if !ok || n < 1 || n > fieldStep[i] {
			return p.errf(i, item, "%q: the step after / must be a number 1-%d", item, fieldStep[i])
		}
		inc = n
	}
	switch {
	case base == "*":
	case strings.Contains(base, "-"):
		a, b, _ := strings.Cut(base, "-")
		var err error
		if lo, err = p.value(i, item, a); err != nil {
			return err
		}
		if hi, err = p.value(i, item, b); err != nil {
			return err
		}
		if lo > hi && i == fYear {
			return p.errf(i, item, "%q: the range starts after it ends", item)
		}
	default:
		v, err := p.value(i, item, base)
		if err != nil {
			return err
		}
		lo = v
		if !hasStep {
			hi = v
		}
	}
	// Walk from lo to hi, wrapping past the field's maximum when lo > hi.
	span := fieldMax[i] - fieldMin[i] + 1
	n := (hi - lo + span) % span
	for k := 0; k <= n; k += inc {
		c.set(i, fieldMin[i]+(lo-fieldMin[i]+k)%span)
	}
	return nil
}

// value parses one value of field i: digits, or a month or day name.
func (p cronParser) value(i int, item, s string) (int, error) {
	v, ok := number(s)
	if !ok {
		names := map[string]int(nil)
		switch i {
		case fMonth:
			names = monthNames
		case fDayOfWeek:
			names = dayNames
		}
		if v, ok = names[strings.ToUpper(s)]; !ok {
			if s == "" {
				return 0, p.errf(i, item, "%q is missing a value", item)
			}
			return 0, p.errf(i, item, "%q is not a valid %s value", s, fieldName[i])
		}
	}
	if v < fieldMin[i] || v > fieldMax[i] {
		return 0, p.errf(i, item, "%q is out of range %d-%d", s, fieldMin[i], fieldMax[i])
	}
	return v, nil
}

// number parses a short run of digits.
func number(s string) (int, bool) {
	if !isDigits(s) || len(s) > 4 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// set sets value v of field i.
func (c *cronSchedule) set(i, v int) {
	switch i {
	case fMinutes:
		c.minutes |= 1 << v
	case fHours:
		c.hours |= 1 << v
	case fDayOfMonth:
		c.domDays |= 1 << v
	case fMonth:
		c.months |= 1 << v
	case fDayOfWeek:
		c.dowDays |= 1 << v
	case fYear:
		y := v - minYear
		c.years[y/64] |= 1 << (y % 64)
	}
}

func (c *cronSchedule) hasYear(y int) bool {
	if y < minYear || y > maxYear {
		return false
	}
	y -= minYear
	return c.years[y/64]&(1<<(y%64)) != 0
}

// Next returns the first firing strictly after after: the first wall-clock
// minute matching every field whose first occurrence in the zone is after
// after, skipping minutes that do not exist (spring-forward gap) and
// minutes whose first occurrence has passed (the repeated hour of a
// fall-back).
func (c *cronSchedule) Next(after time.Time) (time.Time, bool) {
	if after.Before(c.start) {
		after = c.start.Add(-time.Nanosecond)
	}
	w := wallOf(after, c.loc)
	for {
		m, ok := c.nextWall(w)
		if !ok {
			return time.Time{}, false
		}
		if t, ok := firstInstant(m, c.loc); ok && t.After(after) {
			return t.UTC(), true
		}
		w = m.nextMinute()
	}
}

// nextWall returns the first wall-clock minute at or after w that matches
// every field, stepping field by field with bit scans.
func (c *cronSchedule) nextWall(w wall) (wall, bool) {
	if w.y < minYear {
		w = wall{minYear, 1, 1, 0, 0}
	}
	for y := w.y; y <= maxYear; y++ {
		if !c.hasYear(y) {
			continue
		}
		mo := 1
		if y == w.y {
			mo = w.mo
		}
		for ; mo <= 12; mo++ {
			if c.months&(1<<mo) == 0 {
				continue
			}
			sameMonth := y == w.y && mo == w.mo
			days := c.days(y, mo)
			if sameMonth {
				days &^= 1<<w.d - 1
			}
			for days != 0 {
				d := bits.TrailingZeros32(days)
				days &^= 1 << d
				sameDay := sameMonth && d == w.d
				hours := c.hours
				if sameDay {
					hours &^= 1<<w.h - 1
				}
				for hours != 0 {
					h := bits.TrailingZeros32(hours)
					hours &^= 1 << h
					minutes := c.minutes
					if sameDay && h == w.h {
						minutes &^= 1<<w.mi - 1
					}
					if minutes != 0 {
						return wall{y, mo, d, h, bits.TrailingZeros64(minutes)}, true
					}
				}
			}
		}
	}
	return wall{}, false
}

// days is the set of matching days (bit d) of month mo in year y.
func (c *cronSchedule) days(y, mo int) uint32 {
	n := daysIn(y, mo)
	valid := uint32(1)<<(n+1) - 2
	// weekday of day d, 0 = Sunday.
	first := int(time.Date(y, time.Month(mo), 1, 0, 0, 0, 0, time.UTC).Weekday())
	weekday := func(d int) int { return (first + d - 1) % 7 }
	var set uint32
	if c.byDOM {
		set = c.domDays & valid
		if c.domLast {
			set |= 1 << n
		}
		if c.domLastWeekday {
			switch weekday(n) {
			case 6:
				set |= 1 << (n - 1)
			case 0:
				set |= 1 << (n - 2)
			default:
				set |= 1 << n
			}
		}
		if d := c.domNearest; d != 0 && d <= n {
			switch weekday(d) {
			case 6: // Saturday: the Friday before, or Monday the 3rd
				if d == 1 {
					d = 3
				} else {
					d--
				}
			case 0: // Sunday: the Monday after, or the Friday before the last day
				if d == n {
					d -= 2
				} else {
					d++
				}
			}
			set |= 1 << d
		}
		return set
	}
	if c.dowDays != 0 {
		for d := 1; d <= n; d++ {
			if c.dowDays&(1<<(weekday(d)+1)) != 0 {
				set |= 1 << d
			}
		}
	}
	if c.dowLastOf != 0 {
		set |= 1 << (n - (weekday(n)-(c.dowLastOf-1)+7)%7)
	}
	if c.dowNth != 0 {
		d := 1 + (c.dowNth-1-first+7)%7 + 7*(c.dowNthWeek-1)
		if d <= n {
			set |= 1 << d
		}
	}
	return set
}
