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
