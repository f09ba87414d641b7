package localflow

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := decodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func mustEncode(t *testing.T, v any) string {
	t.Helper()
	b, err := encodeJSON(v)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return string(b)
}

func TestPathGet(t *testing.T) {
	doc := `{"a":{"b":[10,{"c":"deep"}],"x y":true},"n":null,"$odd":1}`
	tests := []struct {
		path    string
		want    string // JSON; "" means not found
		context bool
	}{
		{path: "$", want: doc},
		{path: "$.a.b[0]", want: "10"},
		{path: "$.a.b[1].c", want: `"deep"`},
		{path: "$['a']['x y']", want: "true"},
		{path: `$["a"].b[1]["c"]`, want: `"deep"`},
		{path: "$.n", want: "null"},
		{path: "$.missing"},
		{path: "$.a.b[2]"},
		{path: "$.a.b.c"},
		{path: "$.n.x"},
		{path: "$$.Execution.Name", want: doc, context: true},
	}
	v := mustDecode(t, doc)
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p, err := parsePath(tt.path)
			if err != nil {
				t.Fatalf("parsePath: %v", err)
			}
			if p.context != tt.context {
				t.Errorf("context = %v, want %v", p.context, tt.context)
			}
			if tt.context {
				return
			}
			got, err := p.get(v)
			if tt.want == "" {
				if !errors.Is(err, errPathNotFound) {
					t.Errorf("get = %v, %v; want not found", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if diff := cmp.Diff(mustEncode(t, mustDecode(t, tt.want)), mustEncode(t, got)); diff != "" {
				t.Errorf("get (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPathInvalid(t *testing.T) {
	for _, s := range []string{"", "a.b", "$..a", "$.a[*]", "$.*", "$.a[?(@.x)]", "$.", "$[-1]", "$[1:2]", "$.a b", "$['a'", "$[01]", "$x"} {
		t.Run(s, func(t *testing.T) {
			if p, err := parsePath(s); err == nil {
				t.Errorf("parsePath(%q) = %+v, want an error", s, p)
			} else if !strings.Contains(err.Error(), "invalid JSONPath") {
				t.Errorf("error %q does not say invalid JSONPath", err)
			}
		})
	}
}

func TestPathSet(t *testing.T) {
	tests := []struct {
		name, doc, path, val, want, wantErr string
	}{
		{name: "root replaces", doc: `{"a":1}`, path: "$", val: `{"b":2}`, want: `{"b":2}`},
		{name: "new field", doc: `{"a":1}`, path: "$.r", val: `"x"`, want: `{"a":1,"r":"x"}`},
		{name: "creates objects", doc: `{"a":1}`, path: "$.r.s.t", val: `1`, want: `{"a":1,"r":{"s":{"t":1}}}`},
		{name: "replaces nested", doc: `{"a":{"b":1,"c":2}}`, path: "$.a.b", val: `[3]`, want: `{"a":{"b":[3],"c":2}}`},
		{name: "through a number", doc: `{"a":1}`, path: "$.a.b", val: `1`, wantErr: "not an object"},
		{name: "into an array root", doc: `[1]`, path: "$.a", val: `1`, wantErr: "not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := mustDecode(t, tt.doc)
			p, err := parsePath(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.set(doc, mustDecode(t, tt.val))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("set error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, mustEncode(t, got)); diff != "" {
				t.Errorf("set (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(mustEncode(t, mustDecode(t, tt.doc)), mustEncode(t, doc)); diff != "" {
				t.Errorf("set modified its input (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIntrinsics(t *testing.T) {
	data := mustDecode(t, `{"n":41,"s":"str","b":true,"z":null,"f":1.5,"o":{"k":1}}`)
	ctx := map[string]any{"Execution": map[string]any{"Name": "exec-1"}}
	tests := []struct {
		expr, want, wantErr string
	}{
		{expr: "States.MathAdd($.n, 1)", want: "42"},
		{expr: "States.MathAdd(-3, 5)", want: "2"},
		{expr: "States.MathAdd($.n,-41)", want: "0"},
		{expr: "States.MathAdd($.f, 1)", wantErr: "not an integer"},
		{expr: "States.MathAdd($.s, 1)", wantErr: "not a number"},
		{expr: "States.MathAdd(9223372036854775807, 1)", wantErr: "overflow"},
		{expr: "States.MathAdd($.missing, 1)", wantErr: "could not be found"},
		{expr: "States.Format('not found after {} looks', $.n)", want: `"not found after 41 looks"`},
		{expr: "States.Format('{}-{}-{}-{}', $.s, $.b, $.z, 'lit')", want: `"str-true-null-lit"`},
		{expr: `States.Format('braces \{\} and \'quotes\' {}', $.s)`, want: `"braces {} and 'quotes' str"`},
		{expr: "States.Format('{} in {}', States.MathAdd($.n, 1), $$.Execution.Name)", want: `"42 in exec-1"`},
		{expr: "States.Format('x')", want: `"x"`},
		{expr: "States.Format('{}', $.o)", wantErr: "not a string, number, boolean or null"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			e, err := parseDynamic(tt.expr)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			got, err := e.eval(&evalEnv{data: data, context: func() any { return ctx }})
			if tt.wantErr != "" {
				var re *runtimeError
				if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("eval error = %v, want a runtime error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("eval: %v", err)
			}
			if diff := cmp.Diff(tt.want, mustEncode(t, got)); diff != "" {
				t.Errorf("eval (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIntrinsicParseErrors(t *testing.T) {
	tests := []struct{ expr, wantErr string }{
		{"States.ArrayLength($.a)", `"States.ArrayLength" is not supported`},
		{"States.MathAdd($.a)", "takes 2 arguments"},
		{"States.Format($.a)", "first argument must be a string literal"},
		{"States.Format('{} {}', 1)", "2 placeholders but 1 values"},
		{"States.Format('x'", "missing )"},
		{"States.Format('x) ", "unterminated string"},
		{"States.MathAdd(1, 2) extra", "after the call"},
		{"States.MathAdd(1, bogus)", "unsupported argument"},
		{"States.MathAdd(1, $..x)", "invalid JSONPath"},
		{"plain text", "neither a JSONPath nor an intrinsic"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			_, err := parseDynamic(tt.expr)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseDynamic error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestRetryDelay(t *testing.T) {
	r := retrier{interval: 2, backoff: 3, maxDelay: 10}
	var got []float64
	for n := 1; n <= 4; n++ {
		got = append(got, r.delay(n).Seconds())
	}
	if diff := cmp.Diff([]float64{2, 6, 10, 10}, got); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
	huge := retrier{interval: 99999999, backoff: 1000}
	if d := huge.delay(50); d != maxRetryDelay {
		t.Errorf("huge delay = %v, want the cap %v", d, maxRetryDelay)
	}
}

func TestCanonicalJSON(t *testing.T) {
	a, err := canonicalJSON(json.RawMessage(`{ "b": 1.50, "a": [1, {"y":2,"x":1}] }`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"a":[1,{"x":1,"y":2}],"b":1.50}`, string(a)); diff != "" {
		t.Errorf("canonical (-want +got):\n%s", diff)
	}
	if _, err := canonicalJSON([]byte(`{"a":1} {}`)); err == nil {
		t.Error("trailing data accepted")
	}
}
