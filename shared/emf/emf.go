// Package emf writes CloudWatch Embedded Metric Format lines: one JSON
// object per Emit, with the metric values as top-level members and an
// "_aws" directive naming them. On Lambda, lines on stdout become metrics
// without an API call; on one machine the same lines are the metric log.
//
// Hand-written because the format is one small JSON shape and the AWS
// libraries for it (Powertools) have no Go port; see the spec:
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
package emf

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// Units used by oncepost's metrics.
const (
	Count        = "Count"
	Seconds      = "Seconds"
	Milliseconds = "Milliseconds"
)

// Metric is one named value.
type Metric struct {
	Name  string
	Unit  string
	Value float64
}

// Emitter writes EMF lines to W. It is safe for concurrent use.
type Emitter struct {
	W         io.Writer
	Namespace string
	// Dimensions are low-cardinality labels on every metric (never a post id).
	Dimensions map[string]string
	// Now is the clock; default time.Now.
	Now func() time.Time

	mu sync.Mutex
}

type definition struct {
	Name string `json:"Name"`
	Unit string `json:"Unit,omitempty"`
}

type directive struct {
	Namespace  string       `json:"Namespace"`
	Dimensions [][]string   `json:"Dimensions"`
	Metrics    []definition `json:"Metrics"`
}

type metadata struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// Emit writes one line with every metric, timestamped now. Metric names
// must not collide with dimension names or "_aws"; at most 100 metrics
// per line.
func (e *Emitter) Emit(metrics ...Metric) error {
	return e.EmitAt(time.Time{}, metrics...)
}

// EmitAt is Emit with the line's timestamp (_aws.Timestamp, the time
// CloudWatch files the values under) set to at; the zero time is now. A
// gauge measured at some moment is emitted at that moment, so that it
// lands in the minute it describes even when the line is written in the
// next one.
func (e *Emitter) EmitAt(at time.Time, metrics ...Metric) error {
	if len(metrics) == 0 {
		return nil
	}
	if len(metrics) > 100 {
		return fmt.Errorf("emf: %d metrics in one line, the limit is 100", len(metrics))
	}
	if at.IsZero() {
		at = time.Now()
		if e.Now != nil {
			at = e.Now()
		}
	}
	root := map[string]any{}
	dims := make([]string, 0, len(e.Dimensions))
	for k, v := range e.Dimensions {
		root[k] = v
		dims = append(dims, k)
	}
	slices.Sort(dims)
	defs := make([]definition, 0, len(metrics))
	for _, m := range metrics {
		if _, taken := root[m.Name]; taken || m.Name == "_aws" || m.Name == "" {
			return fmt.Errorf("emf: metric name %q is empty or used twice", m.Name)
		}
		root[m.Name] = m.Value
		defs = append(defs, definition{Name: m.Name, Unit: m.Unit})
	}
	root["_aws"] = metadata{
		Timestamp:         at.UnixMilli(),
		CloudWatchMetrics: []directive{{Namespace: e.Namespace, Dimensions: [][]string{dims}, Metrics: defs}},
	}
	line, err := json.Marshal(root)
	if err != nil {
		return fmt.Errorf("emf: encode: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.W.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("emf: write: %w", err)
	}
	return nil
}
