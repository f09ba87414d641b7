package localflow_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/clocktest"
	"oncepost/shared/localflow"
)

func TestDataFlowOrder(t *testing.T) {
	// InputPath → Parameters (paths, context, nested) → task → ResultSelector
	// → ResultPath (into the raw input) → OutputPath.
	h := newHarness(t, `{"StartAt": "T", "States": {"T": {
		"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
		"InputPath": "$.in",
		"Parameters": {"FunctionName": "fn", "Payload": {
			"v.$": "$.v", "lit": "x", "arr": [1, {"k.$": "not evaluated in arrays"}],
			"nested": {"name.$": "$$.Execution.Name"},
			"id.$": "$$.Execution.Id", "state.$": "$$.State.Name", "retries.$": "$$.State.RetryCount",
			"start.$": "$$.Execution.StartTime", "entered.$": "$$.State.EnteredTime", "orig.$": "$$.Execution.Input.other"}},
		"ResultSelector": {"echoed.$": "$.Payload.v", "status.$": "$.StatusCode", "version.$": "$.ExecutedVersion"},
		"ResultPath": "$.in.result",
		"OutputPath": "$.in",
		"End": true}}}`)
	h.inv.reply = func(_ context.Context, c call, _ int) (any, error) { return c.Payload, nil }
	h.start("flow-1", `{"in": {"v": 7}, "other": "o"}`)
	if n := h.runDue(); n != 2 {
		t.Errorf("RunDue steps = %d, want 2 (claim, record)", n)
	}
	calls := h.inv.Calls()
	if len(calls) != 1 {
		t.Fatalf("calls = %d, want 1", len(calls))
	}
	want := map[string]any{
		"v": 7.0, "lit": "x", "arr": []any{1.0, map[string]any{"k.$": "not evaluated in arrays"}},
		"nested": map[string]any{"name": "flow-1"},
		"id":     "localflow:execution:flow-1", "state": "T", "retries": 0.0,
		"start": "2026-01-02T03:04:05.000Z", "entered": "2026-01-02T03:04:05.000Z", "orig": "o",
	}
	if diff := cmp.Diff(want, calls[0].Payload); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
	ex := h.describe("flow-1")
	if ex.Status != localflow.StatusSucceeded {
		t.Fatalf("status = %s (%s: %s)", ex.Status, ex.Error, ex.Cause)
	}
	jsonEqual(t, `{"v": 7, "result": {"echoed": 7, "status": 200, "version": "$LATEST"}}`, ex.Output)
}

func TestPass(t *testing.T) {
	tests := []struct {
		name, state, input, want, wantErr string
	}{
		{name: "parameters at a result path", state: `"Parameters": {"x.$": "$.a", "c": 1}, "ResultPath": "$.p"`, input: `{"a": 2}`, want: `{"a": 2, "p": {"c": 1, "x": 2}}`},
		{name: "result wins over parameters", state: `"Parameters": {"x": 1}, "Result": {"r": 1}, "ResultPath": "$.res"`, input: `{"a": 2}`, want: `{"a": 2, "res": {"r": 1}}`},
		{name: "result path null keeps the input", state: `"Result": 1, "ResultPath": null`, input: `{"a": 2}`, want: `{"a": 2}`},
		{name: "input path null", state: `"InputPath": null, "ResultPath": "$.e"`, input: `{"a": 2}`, want: `{"a": 2, "e": {}}`},
		{name: "output path null", state: `"OutputPath": null`, input: `{"a": 2}`, want: `{}`},
		{name: "output path selects", state: `"Result": {"r": [5, 6]}, "ResultPath": "$.x", "OutputPath": "$.x.r[1]"`, input: `{}`, want: `6`},
		{name: "effective input is the result", state: `"InputPath": "$.o"`, input: `{"o": {"k": 1}, "p": 2}`, want: `{"k": 1}`},
		{name: "intrinsics", state: `"Parameters": {"n.$": "States.MathAdd($.a, 40)", "s.$": "States.Format('a={} name={}', $.a, $$.Execution.Name)"}`, input: `{"a": 2}`, want: `{"n": 42, "s": "a=2 name=p-1"}`},
		{name: "parameter path missing", state: `"Parameters": {"x.$": "$.nope"}`, input: `{}`, wantErr: `the JSONPath "$.nope" could not be found`},
		{name: "input path missing", state: `"InputPath": "$.nope"`, input: `{}`, wantErr: `InputPath "$.nope"`},
		{name: "output path missing", state: `"OutputPath": "$.nope"`, input: `{}`, wantErr: `OutputPath "$.nope"`},
		{name: "result path through a string", state: `"Result": 1, "ResultPath": "$.s.x"`, input: `{"s": "str"}`, wantErr: "not an object"},
		{name: "intrinsic on a string", state: `"Parameters": {"n.$": "States.MathAdd($.s, 1)"}`, input: `{"s": "x"}`, wantErr: "not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, `{"StartAt": "P", "States": {"P": {"Type": "Pass", `+tt.state+`, "End": true}}}`)
			h.start("p-1", tt.input)
			h.runDue()
			ex := h.describe("p-1")
			if tt.wantErr != "" {
				if ex.Status != localflow.StatusFailed || ex.Error != localflow.ErrorRuntime || !strings.Contains(ex.Cause, tt.wantErr) {
					t.Errorf("got %s %s %q, want FAILED States.Runtime containing %q", ex.Status, ex.Error, ex.Cause, tt.wantErr)
				}
				return
			}
			if ex.Status != localflow.StatusSucceeded {
				t.Fatalf("status = %s (%s: %s)", ex.Status, ex.Error, ex.Cause)
			}
			jsonEqual(t, tt.want, ex.Output)
		})
	}
}

func TestChoice(t *testing.T) {
	input := `{"s": "a", "n": 3, "m": 5, "f": 2.5, "b": true, "o": {"x": 1}}`
	tests := []struct {
		name, rule string
		want       string // "Yes", "No", or an error name
	}{
		{"StringEquals match", `{"Variable": "$.s", "StringEquals": "a"}`, "Yes"},
		{"StringEquals other", `{"Variable": "$.s", "StringEquals": "b"}`, "No"},
		{"StringEquals on a number", `{"Variable": "$.n", "StringEquals": "3"}`, "No"},
		{"NumericLessThan true", `{"Variable": "$.n", "NumericLessThan": 4}`, "Yes"},
		{"NumericLessThan equal", `{"Variable": "$.n", "NumericLessThan": 3}`, "No"},
		{"NumericLessThan decimals", `{"Variable": "$.f", "NumericLessThan": 2.51}`, "Yes"},
		{"NumericLessThan on a string", `{"Variable": "$.s", "NumericLessThan": 4}`, "No"},
		{"NumericLessThanPath true", `{"Variable": "$.n", "NumericLessThanPath": "$.m"}`, "Yes"},
		{"NumericLessThanPath false", `{"Variable": "$.m", "NumericLessThanPath": "$.n"}`, "No"},
		{"NumericLessThanPath missing", `{"Variable": "$.n", "NumericLessThanPath": "$.nope"}`, localflow.ErrorRuntime},
		{"BooleanEquals true", `{"Variable": "$.b", "BooleanEquals": true}`, "Yes"},
		{"BooleanEquals false", `{"Variable": "$.b", "BooleanEquals": false}`, "No"},
		{"BooleanEquals on a string", `{"Variable": "$.s", "BooleanEquals": true}`, "No"},
		{"IsPresent present", `{"Variable": "$.o.x", "IsPresent": true}`, "Yes"},
		{"IsPresent absent", `{"Variable": "$.o.y", "IsPresent": true}`, "No"},
		{"IsPresent false on absent", `{"Variable": "$.o.y", "IsPresent": false}`, "Yes"},
		{"And both", `{"And": [{"Variable": "$.s", "StringEquals": "a"}, {"Variable": "$.b", "BooleanEquals": true}]}`, "Yes"},
		{"And one", `{"And": [{"Variable": "$.s", "StringEquals": "a"}, {"Variable": "$.b", "BooleanEquals": false}]}`, "No"},
		{"Or one", `{"Or": [{"Variable": "$.s", "StringEquals": "z"}, {"Variable": "$.n", "NumericLessThan": 9}]}`, "Yes"},
		{"Or none", `{"Or": [{"Variable": "$.s", "StringEquals": "z"}, {"Variable": "$.n", "NumericLessThan": 1}]}`, "No"},
		{"Not false", `{"Not": {"Variable": "$.s", "StringEquals": "z"}}`, "Yes"},
		{"Not true", `{"Not": {"Variable": "$.s", "StringEquals": "a"}}`, "No"},
		{"nested", `{"And": [{"Not": {"Variable": "$.q", "IsPresent": true}}, {"Or": [{"Variable": "$.b", "BooleanEquals": false}, {"Variable": "$.m", "NumericLessThan": 6}]}]}`, "Yes"},
		{"Variable missing", `{"Variable": "$.nope", "StringEquals": "a"}`, localflow.ErrorRuntime},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rule map[string]any
			if err := json.Unmarshal([]byte(tt.rule), &rule); err != nil {
				t.Fatal(err)
			}
			rule["Next"] = "Yes"
			rb, _ := json.Marshal(rule)
			h := newHarness(t, `{"StartAt": "C", "States": {
				"C": {"Type": "Choice", "Choices": [`+string(rb)+`], "Default": "No", "OutputPath": "$.o"},
				"Yes": {"Type": "Succeed"}, "No": {"Type": "Succeed"}}}`)
			h.start("c-1", input)
			h.runDue()
			ex := h.describe("c-1")
			switch tt.want {
			case "Yes", "No":
				if ex.Status != localflow.StatusSucceeded {
					t.Fatalf("status = %s (%s: %s)", ex.Status, ex.Error, ex.Cause)
				}
				if diff := cmp.Diff([]string{"C", tt.want}, ex.History); diff != "" {
					t.Errorf("history (-want +got):\n%s", diff)
				}
				jsonEqual(t, `{"x": 1}`, ex.Output)
			default:
				if ex.Status != localflow.StatusFailed || ex.Error != tt.want {
					t.Errorf("got %s %s %q, want FAILED %s", ex.Status, ex.Error, ex.Cause, tt.want)
				}
			}
		})
	}
}

func TestChoiceNoMatch(t *testing.T) {
	h := newHarness(t, `{"StartAt": "C", "States": {
		"C": {"Type": "Choice", "Choices": [{"Variable": "$.s", "StringEquals": "z", "Next": "Yes"}]},
		"Yes": {"Type": "Succeed"}}}`)
	h.start("c-1", `{"s": "a"}`)
	h.runDue()
	if ex := h.describe("c-1"); ex.Status != localflow.StatusFailed || ex.Error != localflow.ErrorNoChoiceMatched {
		t.Errorf("got %s %s, want FAILED States.NoChoiceMatched", ex.Status, ex.Error)
	}
}

func TestWait(t *testing.T) {
	tests := []struct {
		name, state, input string
		wait               time.Duration
		wantErr            string
	}{
		{name: "Seconds", state: `"Seconds": 10`, input: `{}`, wait: 10 * time.Second},
		{name: "Seconds zero", state: `"Seconds": 0`, input: `{}`},
		{name: "SecondsPath", state: `"SecondsPath": "$.w"`, input: `{"w": 20}`, wait: 20 * time.Second},
		{name: "SecondsPath after InputPath", state: `"InputPath": "$.in", "SecondsPath": "$.w"`, input: `{"in": {"w": 3}}`, wait: 3 * time.Second},
		{name: "Timestamp", state: `"Timestamp": "2026-01-02T03:05:05Z"`, input: `{}`, wait: time.Minute},
		{name: "TimestampPath", state: `"TimestampPath": "$.at"`, input: `{"at": "2026-01-02T04:04:05.250Z"}`, wait: time.Hour + 250*time.Millisecond},
		{name: "TimestampPath with offset", state: `"TimestampPath": "$.at"`, input: `{"at": "2026-01-02T05:04:05+02:00"}`, wait: 0},
		{name: "Timestamp in the past", state: `"Timestamp": "2020-01-01T00:00:00Z"`, input: `{}`},
		{name: "SecondsPath not an integer", state: `"SecondsPath": "$.w"`, input: `{"w": "5"}`, wantErr: "not an integer"},
		{name: "SecondsPath negative", state: `"SecondsPath": "$.w"`, input: `{"w": -1}`, wantErr: "not an integer"},
		{name: "SecondsPath missing", state: `"SecondsPath": "$.w"`, input: `{}`, wantErr: "could not be found"},
		{name: "TimestampPath lowercase", state: `"TimestampPath": "$.at"`, input: `{"at": "2026-01-02t04:04:05z"}`, wantErr: "RFC 3339"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, `{"StartAt": "W", "States": {"W": {"Type": "Wait", `+tt.state+`, "Next": "Done"}, "Done": {"Type": "Succeed"}}}`)
			h.start("w-1", tt.input)
			h.runDue()
			ex := h.describe("w-1")
			if tt.wantErr != "" {
				if ex.Status != localflow.StatusFailed || ex.Error != localflow.ErrorRuntime || !strings.Contains(ex.Cause, tt.wantErr) {
					t.Errorf("got %s %s %q, want FAILED States.Runtime containing %q", ex.Status, ex.Error, ex.Cause, tt.wantErr)
				}
				return
			}
			if tt.wait <= 0 {
				if ex.Status != localflow.StatusSucceeded {
					t.Errorf("status = %s, want SUCCEEDED without waiting", ex.Status)
				}
				return
			}
			if ex.Status != localflow.StatusRunning || ex.State != "W" || !ex.DueAt.Equal(t0.Add(tt.wait)) {
				t.Fatalf("got %s in %s due %v, want RUNNING in W due %v", ex.Status, ex.State, ex.DueAt, t0.Add(tt.wait))
			}
			h.clock.Advance(tt.wait - time.Millisecond)
			if n := h.runDue(); n != 0 {
				t.Errorf("RunDue before the end of the wait took %d steps", n)
			}
			h.clock.Advance(time.Millisecond)
			h.runDue()
			if ex := h.describe("w-1"); ex.Status != localflow.StatusSucceeded {
				t.Errorf("status after the wait = %s, want SUCCEEDED", ex.Status)
			}
		})
	}
}

// retryDef retries Flaky with 2 s × 3^(n-1) capped at 10 s, 3 times; then
// catches everything into Caught.
const retryDef = `{"StartAt": "T", "States": {
	"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
		"Parameters": {"FunctionName": "fn", "Payload": {"retries.$": "$$.State.RetryCount"}},
		"Retry": [{"ErrorEquals": ["Flaky"], "IntervalSeconds": 2, "BackoffRate": 3, "MaxAttempts": 3, "MaxDelaySeconds": 10}],
		"Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.err", "Next": "Caught"}],
		"End": true},
	"Caught": {"Type": "Succeed"}}}`

func TestRetryBackoff(t *testing.T) {
	tests := []struct {
		name      string
		failures  int
		wantAt    []time.Duration // invocation times after t0
		wantState string
	}{
		{name: "succeeds on the last retry", failures: 3, wantAt: []time.Duration{0, 2 * time.Second, 8 * time.Second, 18 * time.Second}, wantState: "T"},
		{name: "exhausted, then caught", failures: 4, wantAt: []time.Duration{0, 2 * time.Second, 8 * time.Second, 18 * time.Second}, wantState: "Caught"},
		{name: "first try", failures: 0, wantAt: []time.Duration{0}, wantState: "T"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, retryDef)
			h.inv.reply = func(_ context.Context, _ call, n int) (any, error) {
				if n < tt.failures {
					return nil, &namedError{name: "Flaky", msg: fmt.Sprintf("flake %d", n)}
				}
				return map[string]any{"ok": true}, nil
			}
			h.start("r-1", `{"in": 1}`)
			for i := 0; i < 30*10; i++ { // 30 s in 100 ms steps
				h.runDue()
				h.clock.Advance(100 * time.Millisecond)
			}
			var at []time.Duration
			var retries []any
			for _, c := range h.inv.Calls() {
				at = append(at, c.At.Sub(t0))
				retries = append(retries, c.Payload["retries"])
			}
			if diff := cmp.Diff(tt.wantAt, at); diff != "" {
				t.Errorf("invocation times (-want +got):\n%s", diff)
			}
			wantRetries := []any{}
			for i := range tt.wantAt {
				wantRetries = append(wantRetries, float64(i))
			}
			if diff := cmp.Diff(wantRetries, retries, cmp.Comparer(func(a, b []any) bool { return cmp.Equal(a, b) })); len(at) > 0 && diff != "" {
				t.Errorf("$$.State.RetryCount per call (-want +got):\n%s", diff)
			}
			ex := h.describe("r-1")
			if ex.Status != localflow.StatusSucceeded || ex.History[len(ex.History)-1] != tt.wantState {
				t.Fatalf("got %s, history %v; want SUCCEEDED ending in %s", ex.Status, ex.History, tt.wantState)
			}
			if tt.wantState == "Caught" {
				jsonEqual(t, `{"in": 1, "err": {"Error": "Flaky", "Cause": "{\"errorMessage\":\"flake 3\",\"errorType\":\"Flaky\"}"}}`, ex.Output)
			}
		})
	}
}

func TestRetryFirstMatchDecides(t *testing.T) {
	// The first retrier naming the error decides, even when exhausted; a
	// later States.ALL retrier is not consulted. MaxAttempts 0 never retries.
	def := `{"StartAt": "T", "States": {
		"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "fn"},
			"Retry": [
				{"ErrorEquals": ["A"], "IntervalSeconds": 1, "MaxAttempts": 1},
				{"ErrorEquals": ["Never"], "MaxAttempts": 0},
				{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 4, "BackoffRate": 1}],
			"Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
			"End": true},
		"Caught": {"Type": "Succeed"}}}`
	tests := []struct {
		errName   string
		wantCalls int
	}{
		{"A", 2},
		{"Never", 1},
		{"B", 5},
	}
	for _, tt := range tests {
		t.Run(tt.errName, func(t *testing.T) {
			h := newHarness(t, def)
			h.inv.reply = func(context.Context, call, int) (any, error) {
				return nil, &namedError{name: tt.errName, msg: "no"}
			}
			h.start("r-1", `{}`)
			for i := 0; i < 20; i++ {
				h.runDue()
				h.clock.Advance(time.Second)
			}
			if got := len(h.inv.Calls()); got != tt.wantCalls {
				t.Errorf("calls = %d, want %d", got, tt.wantCalls)
			}
			if ex := h.describe("r-1"); ex.State != "Caught" || ex.Status != localflow.StatusSucceeded {
				t.Errorf("got %s in %s, want SUCCEEDED in Caught", ex.Status, ex.State)
			}
		})
	}
}

func TestCatch(t *testing.T) {
	twoCatchers := `[{"ErrorEquals": ["Other"], "Next": "Wrong"}, {"ErrorEquals": ["%s"], "ResultPath": "$.err", "Next": "Handled"}]`
	tests := []struct {
		name    string
		catch   string
		params  string
		err     error
		resp    json.RawMessage
		want    string // output, when Handled
		wantErr string // execution error name, when not caught
	}{
		{
			name: "named error", catch: fmt.Sprintf(twoCatchers, "Boom"), err: &namedError{name: "Boom", msg: "it broke"},
			want: `{"in": 1, "err": {"Error": "Boom", "Cause": "{\"errorMessage\":\"it broke\",\"errorType\":\"Boom\"}"}}`,
		},
		{
			name: "error named by its type", catch: fmt.Sprintf(twoCatchers, "PlatformUnavailable"), err: &PlatformUnavailable{Msg: "down"},
			want: `{"in": 1, "err": {"Error": "PlatformUnavailable", "Cause": "{\"errorMessage\":\"down\",\"errorType\":\"PlatformUnavailable\"}"}}`,
		},
		{
			name: "transport error", catch: fmt.Sprintf(twoCatchers, "Lambda.ServiceException"),
			err:  fmt.Errorf("call: %w", &localflow.TransportError{Err: errors.New("connection refused")}),
			want: `{"in": 1, "err": {"Error": "Lambda.ServiceException", "Cause": "call: invoke transport: connection refused"}}`,
		},
		{
			name: "States.TaskFailed", catch: fmt.Sprintf(twoCatchers, "States.TaskFailed"), err: &namedError{name: "Boom", msg: "x"},
			want: `{"in": 1, "err": {"Error": "Boom", "Cause": "{\"errorMessage\":\"x\",\"errorType\":\"Boom\"}"}}`,
		},
		{
			name: "default ResultPath replaces the input", catch: `[{"ErrorEquals": ["Other"], "Next": "Wrong"}, {"ErrorEquals": ["States.ALL"], "Next": "Handled"}]`, err: errors.New("plain"),
			want: `{"Error": "errorString", "Cause": "{\"errorMessage\":\"plain\",\"errorType\":\"errorString\"}"}`,
		},
		{
			name: "response that is not JSON", catch: fmt.Sprintf(twoCatchers, "Lambda.Unknown"), resp: json.RawMessage(`{oops`),
			want: `{"in": 1, "err": {"Error": "Lambda.Unknown", "Cause": "{\"errorMessage\":\"panic: function response is not JSON: invalid character 'o' looking for beginning of object key string\",\"errorType\":\"Lambda.Unknown\"}"}}`,
		},
		{
			name: "no catcher matches", catch: fmt.Sprintf(twoCatchers, "Else"), err: &namedError{name: "Boom", msg: "it broke"},
			wantErr: "Boom",
		},
		{
			name: "States.Runtime is not caught by States.ALL", catch: `[{"ErrorEquals": ["Other"], "Next": "Wrong"}, {"ErrorEquals": ["States.ALL"], "Next": "Handled"}]`,
			params: `, "Payload": {"x.$": "$.missing"}`, wantErr: localflow.ErrorRuntime,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, `{"StartAt": "T", "States": {
				"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "fn"`+tt.params+`},
					"Catch": `+tt.catch+`, "End": true},
				"Handled": {"Type": "Succeed"}, "Wrong": {"Type": "Succeed"}}}`)
			h.inv.reply = func(context.Context, call, int) (any, error) {
				if tt.err != nil {
					return nil, tt.err
				}
				return tt.resp, nil
			}
			h.start("c-1", `{"in": 1}`)
			h.runDue()
			ex := h.describe("c-1")
			if tt.wantErr != "" {
				if ex.Status != localflow.StatusFailed || ex.Error != tt.wantErr {
					t.Errorf("got %s %s %q, want FAILED %s", ex.Status, ex.Error, ex.Cause, tt.wantErr)
				}
				return
			}
			if ex.Status != localflow.StatusSucceeded || ex.State != "Handled" {
				t.Fatalf("got %s in %s (%s: %s), want SUCCEEDED in Handled", ex.Status, ex.State, ex.Error, ex.Cause)
			}
			jsonEqual(t, tt.want, ex.Output)
		})
	}
}

func TestInvokerPanic(t *testing.T) {
	h := newHarness(t, `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
		"Parameters": {"FunctionName": "fn"}, "End": true}}}`)
	h.inv.reply = func(context.Context, call, int) (any, error) { panic("kaboom") }
	h.start("p-1", `{}`)
	h.runDue()
	if ex := h.describe("p-1"); ex.Status != localflow.StatusFailed || ex.Error != localflow.ErrorUnknown || !strings.Contains(ex.Cause, "kaboom") {
		t.Errorf("got %s %s %q, want FAILED Lambda.Unknown mentioning the panic", ex.Status, ex.Error, ex.Cause)
	}
}

func TestFailState(t *testing.T) {
	tests := []struct {
		name, state, input, wantError, wantCause string
	}{
		{"literal", `"Error": "E", "Cause": "c"`, `{}`, "E", "c"},
		{"paths", `"ErrorPath": "$.e.Error", "CausePath": "$.e.Cause"`, `{"e": {"Error": "A", "Cause": "b"}}`, "A", "b"},
		{"format", `"Error": "X", "CausePath": "States.Format('{}: {}', $.e.Error, $.e.Cause)"`, `{"e": {"Error": "A", "Cause": "b"}}`, "X", "A: b"},
		{"path missing", `"Error": "X", "CausePath": "$.nope"`, `{}`, localflow.ErrorRuntime, `"$.nope" could not be found`},
		{"path not a string", `"ErrorPath": "$.n"`, `{"n": 1}`, localflow.ErrorRuntime, "must give a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, `{"StartAt": "F", "States": {"F": {"Type": "Fail", `+tt.state+`}}}`)
			h.start("f-1", tt.input)
			h.runDue()
			ex := h.describe("f-1")
			if ex.Status != localflow.StatusFailed || ex.Error != tt.wantError || !strings.Contains(ex.Cause, tt.wantCause) {
				t.Errorf("got %s %s %q, want FAILED %s %q", ex.Status, ex.Error, ex.Cause, tt.wantError, tt.wantCause)
			}
			if ex.Output != nil {
				t.Errorf("output = %s, want none", ex.Output)
			}
		})
	}
}

// callbackDef parks on a task token; Transient is retried once, Denied is
// caught into Refused.
const callbackDef = `{"StartAt": "H", "States": {
	"H": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
		"Parameters": {"FunctionName": "fn", "Payload": {"token.$": "$$.Task.Token", "in.$": "$.in"}},
		"ResultSelector": {"d.$": "$.decision"}, "ResultPath": "$.answer",
		"Retry": [{"ErrorEquals": ["Transient"], "IntervalSeconds": 1, "MaxAttempts": 1}],
		"Catch": [{"ErrorEquals": ["Denied"], "ResultPath": "$.err", "Next": "Refused"}],
		"End": true},
	"Refused": {"Type": "Succeed"}}}`

func TestWaitForTaskToken(t *testing.T) {
	ctx := context.Background()
	park := func(t *testing.T) (*harness, string) {
		t.Helper()
		h := newHarness(t, callbackDef)
		h.start("cb-1", `{"in": 1}`)
		h.runDue()
		calls := h.inv.Calls()
		if len(calls) != 1 {
			t.Fatalf("calls = %d, want 1", len(calls))
		}
		token, _ := calls[0].Payload["token"].(string)
		ex := h.describe("cb-1")
		if token == "" || ex.Status != localflow.StatusRunning || ex.State != "H" || ex.TaskToken != token || !ex.DueAt.IsZero() {
			t.Fatalf("parked = %+v with token %q; want RUNNING in H waiting on the token", ex, token)
		}
		h.clock.Advance(24 * time.Hour)
		if n := h.runDue(); n != 0 || len(h.inv.Calls()) != 1 {
			t.Fatalf("a parked execution moved: %d steps, %d calls", n, len(h.inv.Calls()))
		}
		return h, token
	}

	t.Run("success", func(t *testing.T) {
		h, token := park(t)
		if err := h.e.SendTaskSuccess(ctx, token, json.RawMessage(`{"decision": "ok", "extra": 1}`)); err != nil {
			t.Fatalf("SendTaskSuccess: %v", err)
		}
		ex := h.describe("cb-1")
		if ex.Status != localflow.StatusSucceeded || ex.TaskToken != "" {
			t.Fatalf("got %+v, want SUCCEEDED", ex)
		}
		jsonEqual(t, `{"in": 1, "answer": {"d": "ok"}}`, ex.Output)
		if err := h.e.SendTaskSuccess(ctx, token, json.RawMessage(`{}`)); !errors.Is(err, localflow.ErrTaskDoesNotExist) {
			t.Errorf("second SendTaskSuccess = %v, want ErrTaskDoesNotExist", err)
		}
	})
	t.Run("failure caught", func(t *testing.T) {
		h, token := park(t)
		if err := h.e.SendTaskFailure(ctx, token, "Denied", "operator said no"); err != nil {
			t.Fatalf("SendTaskFailure: %v", err)
		}
		if ex := h.describe("cb-1"); ex.Status != localflow.StatusRunning || ex.State != "Refused" || ex.TaskToken != "" {
			t.Fatalf("after SendTaskFailure: %s in %s, want RUNNING in Refused until the next pass", ex.Status, ex.State)
		}
		h.runDue()
		ex := h.describe("cb-1")
		if ex.Status != localflow.StatusSucceeded || ex.State != "Refused" {
			t.Fatalf("got %s in %s, want SUCCEEDED in Refused", ex.Status, ex.State)
		}
		jsonEqual(t, `{"in": 1, "err": {"Error": "Denied", "Cause": "operator said no"}}`, ex.Output)
	})
	t.Run("failure retried with a new token", func(t *testing.T) {
		h, token := park(t)
		if err := h.e.SendTaskFailure(ctx, token, "Transient", "try again"); err != nil {
			t.Fatalf("SendTaskFailure: %v", err)
		}
		h.runDue()
		if got := len(h.inv.Calls()); got != 1 {
			t.Fatalf("retried before its interval: %d calls", got)
		}
		h.clock.Advance(time.Second)
		h.runDue()
		calls := h.inv.Calls()
		if len(calls) != 2 {
			t.Fatalf("calls = %d, want 2", len(calls))
		}
		token2, _ := calls[1].Payload["token"].(string)
		if token2 == "" || token2 == token {
			t.Fatalf("retry token %q, want a new one", token2)
		}
		if err := h.e.SendTaskSuccess(ctx, token, json.RawMessage(`{"decision": "old"}`)); !errors.Is(err, localflow.ErrTaskDoesNotExist) {
			t.Errorf("old token = %v, want ErrTaskDoesNotExist", err)
		}
		if err := h.e.SendTaskSuccess(ctx, token2, json.RawMessage(`{"decision": "new"}`)); err != nil {
			t.Fatalf("SendTaskSuccess: %v", err)
		}
		jsonEqual(t, `{"in": 1, "answer": {"d": "new"}}`, h.describe("cb-1").Output)
	})
	t.Run("failure not caught", func(t *testing.T) {
		h, token := park(t)
		if err := h.e.SendTaskFailure(ctx, token, "Nope", "c"); err != nil {
			t.Fatalf("SendTaskFailure: %v", err)
		}
		if ex := h.describe("cb-1"); ex.Status != localflow.StatusFailed || ex.Error != "Nope" || ex.Cause != "c" {
			t.Errorf("got %s %s %q, want FAILED Nope", ex.Status, ex.Error, ex.Cause)
		}
	})
	t.Run("unknown token and bad output", func(t *testing.T) {
		h, token := park(t)
		for _, tok := range []string{"", "nope"} {
			if err := h.e.SendTaskSuccess(ctx, tok, json.RawMessage(`{}`)); !errors.Is(err, localflow.ErrTaskDoesNotExist) {
				t.Errorf("SendTaskSuccess(%q) = %v, want ErrTaskDoesNotExist", tok, err)
			}
			if err := h.e.SendTaskFailure(ctx, tok, "E", ""); !errors.Is(err, localflow.ErrTaskDoesNotExist) {
				t.Errorf("SendTaskFailure(%q) = %v, want ErrTaskDoesNotExist", tok, err)
			}
		}
		if err := h.e.SendTaskSuccess(ctx, token, json.RawMessage(`{bad`)); err == nil {
			t.Error("SendTaskSuccess with bad JSON = nil")
		}
		if ex := h.describe("cb-1"); ex.Status != localflow.StatusRunning {
			t.Errorf("status = %s, want still RUNNING", ex.Status)
		}
	})
	t.Run("answered during the invocation", func(t *testing.T) {
		// The function answers its own token before returning (it calls back
		// into the engine and so into the same store): no deadlock, and the
		// late "invoked" record is dropped.
		h := newHarness(t, callbackDef)
		h.inv.reply = func(ctx context.Context, c call, _ int) (any, error) {
			return nil, h.e.SendTaskSuccess(ctx, c.Payload["token"].(string), json.RawMessage(`{"decision": "self"}`))
		}
		h.start("cb-1", `{"in": 1}`)
		h.runDue()
		ex := h.describe("cb-1")
		if ex.Status != localflow.StatusSucceeded {
			t.Fatalf("got %s (%s: %s), want SUCCEEDED", ex.Status, ex.Error, ex.Cause)
		}
		jsonEqual(t, `{"in": 1, "answer": {"d": "self"}}`, ex.Output)
	})
	t.Run("invoke error goes through Catch", func(t *testing.T) {
		h := newHarness(t, callbackDef)
		h.inv.reply = func(context.Context, call, int) (any, error) { return nil, &namedError{name: "Denied", msg: "no"} }
		h.start("cb-1", `{"in": 1}`)
		h.runDue()
		if ex := h.describe("cb-1"); ex.State != "Refused" || ex.Status != localflow.StatusSucceeded {
			t.Errorf("got %s in %s, want SUCCEEDED in Refused", ex.Status, ex.State)
		}
	})
}

func TestStartIdempotent(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, `{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 5, "End": true}}}`)
	if err := h.e.Start(ctx, "k-1", json.RawMessage(`{"a": 1, "b": [1, 2]}`)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	tests := []struct {
		name, exec, input string
		want              error // nil, ErrExecutionAlreadyExists, or any error (errAny)
	}{
		{"same input", "k-1", `{"a": 1, "b": [1, 2]}`, nil},
		{"same JSON, other text", "k-1", "{ \"b\": [1,2],\n \"a\": 1 }", nil},
		{"different input", "k-1", `{"a": 2}`, localflow.ErrExecutionAlreadyExists},
		{"invalid name", "has space", `{}`, errAny},
		{"name too long", strings.Repeat("x", 81), `{}`, errAny},
		{"invalid input", "k-2", `{"a":`, errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := h.e.Start(ctx, tt.exec, json.RawMessage(tt.input))
			switch {
			case tt.want == nil && err != nil:
				t.Errorf("Start = %v, want nil", err)
			case tt.want == errAny && err == nil:
				t.Error("Start = nil, want an error")
			case tt.want != nil && tt.want != errAny && !errors.Is(err, tt.want):
				t.Errorf("Start = %v, want %v", err, tt.want)
			}
		})
	}
	if list, err := h.e.List(ctx, ""); err != nil || len(list) != 1 {
		t.Fatalf("List = %d executions, %v; want 1", len(list), err)
	}
	h.runDue()
	h.clock.Advance(5 * time.Second)
	h.runDue()
	if err := h.e.Start(ctx, "k-1", json.RawMessage(`{"a": 1, "b": [1, 2]}`)); !errors.Is(err, localflow.ErrExecutionAlreadyExists) {
		t.Errorf("Start after the execution ended = %v, want ErrExecutionAlreadyExists", err)
	}
	if _, err := h.e.Describe(ctx, "nope"); !errors.Is(err, localflow.ErrExecutionDoesNotExist) {
		t.Errorf("Describe(nope) = %v, want ErrExecutionDoesNotExist", err)
	}
}

var errAny = errors.New("any error")

func TestList(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, `{"StartAt": "C", "States": {
		"C": {"Type": "Choice", "Choices": [{"Variable": "$.wait", "BooleanEquals": true, "Next": "W"}], "Default": "Done"},
		"W": {"Type": "Wait", "Seconds": 60, "Next": "Done"}, "Done": {"Type": "Succeed"}}}`)
	h.start("a", `{"wait": false}`)
	h.clock.Advance(time.Second)
	h.start("b", `{"wait": true}`)
	h.runDue()
	names := func(status string) []string {
		list, err := h.e.List(ctx, status)
		if err != nil {
			t.Fatalf("List(%q): %v", status, err)
		}
		var out []string
		for _, ex := range list {
			out = append(out, ex.Name+":"+ex.Status)
		}
		return out
	}
	if diff := cmp.Diff([]string{"a:SUCCEEDED", "b:RUNNING"}, names("")); diff != "" {
		t.Errorf("List all (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b:RUNNING"}, names(localflow.StatusRunning)); diff != "" {
		t.Errorf("List RUNNING (-want +got):\n%s", diff)
	}
	if _, err := h.e.List(ctx, "BOGUS"); err == nil {
		t.Error("List(BOGUS) = nil error")
	}
}

// waitThenTask waits 60 s, invokes, succeeds.
const waitThenTask = `{"StartAt": "W", "States": {
	"W": {"Type": "Wait", "Seconds": 60, "Next": "T"},
	"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "fn"}, "ResultPath": "$.r", "Next": "Done"},
	"Done": {"Type": "Succeed"}}}`

func TestRestartResumes(t *testing.T) {
	h := newHarness(t, waitThenTask)
	h.start("x-1", `{"in": 1}`)
	h.runDue()
	if ex := h.describe("x-1"); ex.State != "W" || ex.Status != localflow.StatusRunning {
		t.Fatalf("got %s in %s, want RUNNING in W", ex.Status, ex.State)
	}
	// Drop the engine; a new one on the same file takes over.
	inv2 := &fakeInvoker{clock: h.clock, reply: func(context.Context, call, int) (any, error) { return map[string]any{"by": 2}, nil }}
	h.e = h.engine(h.m, inv2, "test")
	h.clock.Advance(60 * time.Second)
	h.runDue()
	ex := h.describe("x-1")
	if ex.Status != localflow.StatusSucceeded {
		t.Fatalf("status = %s (%s: %s), want SUCCEEDED", ex.Status, ex.Error, ex.Cause)
	}
	if diff := cmp.Diff([]string{"W", "T", "Done"}, ex.History); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if len(h.inv.Calls()) != 0 || len(inv2.Calls()) != 1 {
		t.Errorf("calls: old engine %d, new engine %d; want 0, 1", len(h.inv.Calls()), len(inv2.Calls()))
	}
	jsonEqual(t, `{"in": 1, "r": {"ExecutedVersion": "$LATEST", "Payload": {"by": 2}, "StatusCode": 200}}`, ex.Output)
}

func TestCrashDuringTask(t *testing.T) {
	// The process dies while the task runs (its context is cancelled): the
	// outcome is not recorded and the task runs again, at once for the same
	// owner, after the claim's lease for another owner.
	tests := []struct {
		owner     string
		wantAfter time.Duration
	}{
		{"test", 0},
		{"other", 15 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.owner, func(t *testing.T) {
			h := newHarness(t, waitThenTask)
			ctx, cancel := context.WithCancel(context.Background())
			h.inv.reply = func(context.Context, call, int) (any, error) {
				cancel()
				return map[string]any{"lost": true}, nil
			}
			if err := h.e.Start(ctx, "x-1", json.RawMessage(`{}`)); err != nil {
				t.Fatal(err)
			}
			h.runDue()
			h.clock.Advance(60 * time.Second)
			if _, err := h.e.RunDue(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("RunDue = %v, want context.Canceled", err)
			}
			if ex := h.describe("x-1"); ex.State != "T" || ex.Status != localflow.StatusRunning {
				t.Fatalf("got %s in %s, want RUNNING in T", ex.Status, ex.State)
			}
			inv2 := &fakeInvoker{clock: h.clock}
			h.e = h.engine(h.m, inv2, tt.owner)
			if tt.wantAfter > 0 {
				h.clock.Advance(tt.wantAfter - time.Second)
				h.runDue()
				if n := len(inv2.Calls()); n != 0 {
					t.Fatalf("another owner invoked a claimed task before the lease ended (%d calls)", n)
				}
				h.clock.Advance(time.Second)
			}
			h.runDue()
			if n := len(inv2.Calls()); n != 1 {
				t.Fatalf("calls after restart = %d, want 1", n)
			}
			if ex := h.describe("x-1"); ex.Status != localflow.StatusSucceeded {
				t.Errorf("status = %s, want SUCCEEDED", ex.Status)
			}
		})
	}
}

func TestTwoEnginesOneFile(t *testing.T) {
	// Two engines on two connections pools to one file (as two processes):
	// every task runs exactly once and every execution ends.
	def := `{"StartAt": "T", "States": {
		"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
			"Parameters": {"FunctionName": "fn", "Payload": {"name.$": "$$.Execution.Name"}}, "Next": "P"},
		"P": {"Type": "Pass", "Next": "Done"}, "Done": {"Type": "Succeed"}}}`
	m, err := localflow.Load([]byte(def), nil)
	if err != nil {
		t.Fatal(err)
	}
	dbA, path := openDB(t)
	dbB := openDBAt(t, path)
	clock := clocktest.New(t0)
	var mu sync.Mutex
	counts := map[string]int{}
	newEngine := func(db *sql.DB, owner string) *localflow.Engine {
		inv := &fakeInvoker{clock: clock, reply: func(_ context.Context, c call, _ int) (any, error) {
			mu.Lock()
			counts[c.Payload["name"].(string)]++
			mu.Unlock()
			return map[string]any{}, nil
		}}
		e, err := localflow.New(context.Background(), db, m, localflow.Options{Now: clock.Now, Invoker: inv, Logger: quietLogger(), Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	eA := newEngine(dbA, "a")
	eB := newEngine(dbB, "b")
	const n = 30
	for i := range n {
		e := eA
		if i%2 == 1 {
			e = eB
		}
		if err := e.Start(context.Background(), fmt.Sprintf("e-%02d", i), json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, e := range []*localflow.Engine{eA, eB} {
		wg.Go(func() {
			for range 3 {
				if _, err := e.RunDue(context.Background()); err != nil {
					t.Errorf("RunDue: %v", err)
				}
			}
		})
	}
	wg.Wait()
	list, err := eA.List(context.Background(), localflow.StatusSucceeded)
	if err != nil || len(list) != n {
		t.Fatalf("succeeded = %d, %v; want %d", len(list), err, n)
	}
	for i := range n {
		if c := counts[fmt.Sprintf("e-%02d", i)]; c != 1 {
			t.Errorf("e-%02d: task ran %d times, want 1", i, c)
		}
	}
}

func TestDefinitionKeptPerExecution(t *testing.T) {
	// An execution ends on the definition it started with.
	defV := func(v string) string {
		return `{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 10, "Next": "P"},
			"P": {"Type": "Pass", "Result": "` + v + `", "End": true}}}`
	}
	h := newHarness(t, defV("v1"))
	h.start("old", `{}`)
	h.runDue()
	m2, err := localflow.Load([]byte(defV("v2")), nil)
	if err != nil {
		t.Fatal(err)
	}
	h.e = h.engine(m2, h.inv, "test")
	h.start("new", `{}`)
	h.runDue()
	h.clock.Advance(10 * time.Second)
	h.runDue()
	jsonEqual(t, `"v1"`, h.describe("old").Output)
	jsonEqual(t, `"v2"`, h.describe("new").Output)
}

func TestRun(t *testing.T) {
	// Run wakes on Start and on SendTaskSuccess, and returns when ctx ends.
	h := newHarness(t, callbackDef)
	tokens := make(chan string, 1)
	h.inv.reply = func(_ context.Context, c call, _ int) (any, error) {
		tokens <- c.Payload["token"].(string)
		return map[string]any{}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.e.Run(ctx) }()
	h.start("run-1", `{"in": 1}`)
	var token string
	select {
	case token = <-tokens:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not invoke the task")
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.describe("run-1").TaskToken == "" {
		if time.Now().After(deadline) {
			t.Fatal("the execution did not park on its token")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := h.e.SendTaskSuccess(context.Background(), token, json.RawMessage(`{"decision": "go"}`)); err != nil {
		t.Fatal(err)
	}
	if ex := h.describe("run-1"); ex.Status != localflow.StatusSucceeded {
		t.Errorf("status = %s, want SUCCEEDED", ex.Status)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestErrorName(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&namedError{name: "Custom"}, "Custom"},
		{&namedError{name: ""}, "namedError"},
		{&PlatformUnavailable{}, "PlatformUnavailable"},
		{valueError{}, "valueError"},
		{errors.New("x"), "errorString"},
		{fmt.Errorf("ctx: %w", &PlatformUnavailable{}), "wrapError"},
		{&localflow.TransportError{Err: errors.New("x")}, "Lambda.ServiceException"},
		{fmt.Errorf("ctx: %w", &localflow.TransportError{Err: errors.New("x")}), "Lambda.ServiceException"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := localflow.ErrorName(tt.err); got != tt.want {
				t.Errorf("ErrorName(%#v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

type valueError struct{}

func (valueError) Error() string { return "value" }

func TestStoredDefinitionNoLongerLoads(t *testing.T) {
	// An execution whose definition cannot be loaded any more fails with
	// States.Runtime instead of blocking the others.
	defV := func(v string) string {
		return `{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 10, "Next": "P"},
			"P": {"Type": "Pass", "Result": "` + v + `", "End": true}}}`
	}
	h := newHarness(t, defV("v1"))
	h.start("old", `{}`)
	h.runDue()
	if _, err := h.db.Exec(`UPDATE localflow_machines SET definition = '{"StartAt": "W"}' WHERE definition LIKE '%v1%'`); err != nil {
		t.Fatal(err)
	}
	m2, err := localflow.Load([]byte(defV("v2")), nil)
	if err != nil {
		t.Fatal(err)
	}
	h.e = h.engine(m2, h.inv, "test") // a new process: nothing cached
	h.start("new", `{}`)
	h.runDue()
	h.clock.Advance(10 * time.Second)
	h.runDue()
	if ex := h.describe("old"); ex.Status != localflow.StatusFailed || ex.Error != localflow.ErrorRuntime || !strings.Contains(ex.Cause, "definition") {
		t.Errorf("old: got %s %s %q, want FAILED States.Runtime about its definition", ex.Status, ex.Error, ex.Cause)
	}
	jsonEqual(t, `"v2"`, h.describe("new").Output)
}

// With Concurrency, RunDue runs the tasks of several executions at once,
// as Step Functions runs executions; each execution still moves one step
// at a time, and every one finishes.
func TestRunDueConcurrency(t *testing.T) {
	const def = `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
		"Parameters":{"FunctionName":"f","Payload":{}},"End":true}}}`
	for _, tc := range []struct {
		concurrency int
		wantMax     int32
	}{{1, 1}, {4, 4}} {
		h := newHarness(t, def)
		var inFlight, most atomic.Int32
		all := make(chan struct{})
		var arrived atomic.Int32
		inv := &fakeInvoker{clock: h.clock, reply: func(ctx context.Context, c call, n int) (any, error) {
			cur := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				m := most.Load()
				if cur <= m || most.CompareAndSwap(m, cur) {
					break
				}
			}
			if arrived.Add(1) == int32(tc.concurrency) && tc.concurrency > 1 {
				close(all) // the last of the first wave lets everyone go
			}
			select {
			case <-all:
			case <-time.After(2 * time.Second): // one at a time never gets here
			}
			return map[string]any{}, nil
		}}
		e, err := localflow.New(context.Background(), h.db, h.m, localflow.Options{Now: h.clock.Now, Invoker: inv, Logger: quietLogger(), Owner: "c", Concurrency: tc.concurrency})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if err := e.Start(context.Background(), fmt.Sprintf("x%d", i), nil); err != nil {
				t.Fatal(err)
			}
		}
		if tc.concurrency == 1 {
			close(all) // nothing to wait for
		}
		if _, err := e.RunDue(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := most.Load(); got != tc.wantMax {
			t.Errorf("concurrency %d: at most %d tasks ran at once, want %d", tc.concurrency, got, tc.wantMax)
		}
		list, err := e.List(context.Background(), localflow.StatusSucceeded)
		if err != nil || len(list) != 4 {
			t.Errorf("concurrency %d: %d executions succeeded (err %v), want 4", tc.concurrency, len(list), err)
		}
	}
}
