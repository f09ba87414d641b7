package emf

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEmitShape(t *testing.T) {
	var buf bytes.Buffer
	e := &Emitter{W: &buf, Namespace: "oncepost", Dimensions: map[string]string{"Runtime": "embedded"},
		Now: func() time.Time { return time.UnixMilli(1735689600000) }}
	if err := e.Emit(Metric{"StalePending", Count, 3}, Metric{"OldestOpenAgeSeconds", Seconds, 912}); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("line %q is not JSON: %v", buf.String(), err)
	}
	want := map[string]any{
		"Runtime": "embedded", "StalePending": 3.0, "OldestOpenAgeSeconds": 912.0,
		"_aws": map[string]any{
			"Timestamp": 1735689600000.0,
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace":  "oncepost",
				"Dimensions": []any{[]any{"Runtime"}},
				"Metrics": []any{
					map[string]any{"Name": "StalePending", "Unit": "Count"},
					map[string]any{"Name": "OldestOpenAgeSeconds", "Unit": "Seconds"},
				},
			}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("EMF line (-want +got):\n%s", diff)
	}
	if n := bytes.Count(buf.Bytes(), []byte("\n")); n != 1 {
		t.Errorf("%d lines, want 1", n)
	}
}

func TestEmitRefusesCollisions(t *testing.T) {
	e := &Emitter{W: &bytes.Buffer{}, Namespace: "oncepost", Dimensions: map[string]string{"Runtime": "x"}}
	for _, ms := range [][]Metric{
		{{"Runtime", Count, 1}},
		{{"A", Count, 1}, {"A", Count, 2}},
		{{"_aws", Count, 1}},
		{{"", Count, 1}},
	} {
		if err := e.Emit(ms...); err == nil {
			t.Errorf("Emit(%v) accepted a colliding or empty name", ms)
		}
	}
}

// A line emitted with EmitAt carries the time given, not the clock's: a
// gauge measured at the start of a sweep belongs to the minute the sweep
// started, whenever the line is written. The zero time is the clock's.
func TestEmitAtCarriesTheTimeGiven(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 58, 0, time.UTC)
	emitted := start.Add(5 * time.Second) // the next minute
	tests := []struct {
		name string
		at   time.Time
		want time.Time
	}{
		{"the time given", start, start},
		{"the zero time is now", time.Time{}, emitted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			e := &Emitter{W: &buf, Namespace: "oncepost", Now: func() time.Time { return emitted }}
			if err := e.EmitAt(tt.at, Metric{"StalePending", Count, 0}); err != nil {
				t.Fatal(err)
			}
			var line struct {
				AWS struct{ Timestamp int64 } `json:"_aws"`
			}
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("line %q is not JSON: %v", buf.String(), err)
			}
			if got := time.UnixMilli(line.AWS.Timestamp).UTC(); !got.Equal(tt.want) {
				t.Errorf("_aws.Timestamp is %s, want %s", got.Format(time.RFC3339Nano), tt.want.Format(time.RFC3339Nano))
			}
		})
	}
}
