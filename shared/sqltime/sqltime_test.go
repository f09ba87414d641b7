package sqltime

import (
	"slices"
	"testing"
	"time"
)

func TestRoundTripAndOrder(t *testing.T) {
	times := []time.Time{
		{},
		time.Date(2026, 12, 1, 8, 0, 0, 1, time.UTC),
		time.Date(2026, 12, 1, 9, 0, 0, 0, time.FixedZone("CET", 3600)), // 08:00 UTC
		time.Date(2026, 12, 1, 8, 0, 0, 999999999, time.UTC),
		time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	var enc []string
	for _, tm := range times {
		s := Encode(tm)
		got, err := Decode(s)
		if err != nil || !got.Equal(tm) || (!tm.IsZero() && got.Location() != time.UTC) {
			t.Errorf("Decode(Encode(%v)) = %v, %v", tm, got, err)
		}
		if !tm.IsZero() && len(s) != len(Layout) {
			t.Errorf("Encode(%v) = %q: not fixed width", tm, s)
		}
		enc = append(enc, s)
	}
	sorted := slices.Clone(enc)
	slices.Sort(sorted)
	want := []string{"", Encode(times[2]), Encode(times[1]), Encode(times[3]), Encode(times[4])}
	if !slices.Equal(sorted, want) {
		t.Errorf("text order %q, want time order %q", sorted, want)
	}
	if _, err := Decode("yesterday"); err == nil {
		t.Errorf("Decode accepted garbage")
	}
}
