package schedexpr

import "time"

// wall is a wall-clock minute in a schedule's time zone.
type wall struct{ y, mo, d, h, mi int }

// wallOf is t's wall-clock minute in loc.
func wallOf(t time.Time, loc *time.Location) wall {
	t = t.In(loc)
	y, mo, d := t.Date()
	h, mi, _ := t.Clock()
	return wall{y, int(mo), d, h, mi}
}

// nextMinute is the wall-clock minute after w.
func (w wall) nextMinute() wall {
	w.mi++
	if w.mi < 60 {
		return w
	}
	w.mi, w.h = 0, w.h+1
	if w.h < 24 {
		return w
	}
	w.h, w.d = 0, w.d+1
	if w.d <= daysIn(w.y, w.mo) {
		return w
	}
	w.d, w.mo = 1, w.mo+1
	if w.mo <= 12 {
		return w
	}
	w.mo, w.y = 1, w.y+1
	return w
}

// shows reports whether t's wall clock (in t's location) reads w:00.
func (w wall) shows(t time.Time) bool {
	return wallOf(t, t.Location()) == w && t.Second() == 0
}

// firstInstant is the first instant at which loc's clocks read w:00, and
// false when they never do (w is in a spring-forward gap). In a fall-back
// overlap it is the earlier, daylight-time occurrence: Scheduler "runs the
// schedule only once at 2:30 a.m. before the shift occurs".
func firstInstant(w wall, loc *time.Location) (time.Time, bool) {
	t := time.Date(w.y, time.Month(w.mo), w.d, w.h, w.mi, 0, 0, loc)
	if !w.shows(t) {
		// time.Date normalised a time that does not exist.
		return time.Time{}, false
	}
	return earliest(t, w.shows), true
}

// earliest moves t, a valid reading of some wall time, to the earliest
// instant showing the same wall time: time.Date may pick either side of an
// overlap. Each step looks at the zone in force before t's zone began; an
// earlier reading exists there only if that zone's offset was larger.
func earliest(t time.Time, same func(time.Time) bool) time.Time {
	for range 4 { // zones do not overlap more than once in practice
		start, _ := t.ZoneBounds()
		if start.IsZero() {
			return t
		}
		_, off := t.Zone()
		_, prevOff := start.Add(-time.Nanosecond).Zone()
		if prevOff <= off {
			return t
		}
		u := t.Add(time.Duration(off-prevOff) * time.Second)
		if !u.Before(start) || !same(u) {
			return t
		}
		t = u
	}
	return t
}

// atInstant reads the wall time of t (whose location is ignored) in loc for
// an at() schedule: in an overlap the first occurrence, in a gap the offset
// in force before the jump, which moves the firing later by the gap.
func atInstant(t time.Time, loc *time.Location) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	u := time.Date(y, mo, d, h, mi, s, 0, loc)
	want := time.Date(y, mo, d, h, mi, s, 0, time.UTC) // the wall time as a comparable value
	got := func(v time.Time) time.Time {
		vy, vmo, vd := v.Date()
		vh, vmi, vs := v.Clock()
		return time.Date(vy, vmo, vd, vh, vmi, vs, 0, time.UTC)
	}
	shown := got(u)
	if shown.Equal(want) {
		return earliest(u, func(v time.Time) bool { return got(v).Equal(want) })
	}
	// A gap. time.Date read the wall time with one of the two offsets around
	// the jump. If the clock now shows less than asked, u lies before the
	// jump and its own offset is the one before; otherwise u lies after the
	// jump and the offset before is that of the zone preceding u's.
	_, before := u.Zone()
	if shown.After(want) {
		start, _ := u.ZoneBounds()
		if !start.IsZero() {
			_, before = start.Add(-time.Nanosecond).Zone()
		}
	}
	return want.Add(-time.Duration(before) * time.Second).In(loc)
}

// daysIn is the number of days in month mo of year y.
func daysIn(y, mo int) int {
	switch mo {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// InZone is the instant at which the clocks of loc show the wall time of
// wall (its location is ignored), read as an at() schedule reads it: in
// a fall-back overlap its first occurrence, in a spring-forward gap with
// the offset in force before the jump (so 02:30 on a New York
// spring-forward night is 03:30 EDT). The surfaces read an operator's
// time without an offset this way, in the zone the operator named.
func InZone(wall time.Time, loc *time.Location) time.Time { return atInstant(wall, loc).UTC() }
