package post

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A target's JSON leaves out a next try it does not have: a zero time
// would read as 0001-01-01T00:00:00Z, a date an operator may take at its
// word.
func TestTargetJSONOmitsZeroNextTry(t *testing.T) {
	slot := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		target Target
		want   string // "" when next_try must be absent
	}{
		{"scheduled", Target{Account: "news", Slot: slot, Status: Scheduled, UpdatedAt: slot}, ""},
		{"waiting", Target{Account: "news", Slot: slot, Status: Waiting, NextTry: slot.Add(time.Minute), UpdatedAt: slot},
			`"next_try":"2026-12-01T09:01:00Z"`},
	}
	for _, tt := range tests {
		raw, err := json.Marshal(tt.target)
		if err != nil {
			t.Fatal(err)
		}
		got := string(raw)
		if strings.Contains(got, "0001-01-01") {
			t.Errorf("%s: %s shows a zero time", tt.name, got)
		}
		if tt.want == "" && strings.Contains(got, "next_try") {
			t.Errorf("%s: %s has a next_try; want none", tt.name, got)
		}
		if tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("%s: %s; want %s", tt.name, got, tt.want)
		}
	}
}
