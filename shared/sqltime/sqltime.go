// Package sqltime is how the embedded runtime's SQLite tables store times:
// RFC 3339 in UTC with nanoseconds, fixed width, so that the text sorts like
// the time and range queries can use plain string comparison. The zero time
// is the empty string. sqlitestore, localflow and localcron share it, since
// they keep their tables in one file.
package sqltime

import (
	"fmt"
	"time"
)

// Layout is the stored form.
const Layout = "2006-01-02T15:04:05.000000000Z"

// Encode stores t; the zero time is "".
func Encode(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(Layout)
}

// Decode reverses Encode.
func Decode(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(Layout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t, nil
}
