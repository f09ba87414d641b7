package localflow_test

import (
	"errors"
	"strings"
	"testing"

	"oncepost/shared/localflow"
)

const invoke = `"Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "fn"}`

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name      string
		def       string
		subs      map[string]string
		wantState string
		wantField string
		wantMsg   string
	}{
		{
			name:      "unsupported state type",
			def:       `{"StartAt": "Fan", "States": {"Fan": {"Type": "Parallel", "Branches": [], "End": true}}}`,
			wantState: "Fan", wantField: "Type",
			wantMsg: `state "Fan": type "Parallel" is not supported`,
		},
		{
			name:      "missing type",
			def:       `{"StartAt": "A", "States": {"A": {"End": true}}}`,
			wantState: "A", wantField: "Type",
			wantMsg: `state "A": field "Type": is required`,
		},
		{
			name:      "unsupported field on a task",
			def:       `{"StartAt": "Look", "States": {"Look": {"Type": "Task", ` + invoke + `, "TimeoutSecondsPath": "$.t", "End": true}}}`,
			wantState: "Look", wantField: "TimeoutSecondsPath",
			wantMsg: `state "Look": field "TimeoutSecondsPath" is not supported`,
		},
		{
			name:      "unsupported field on a pass",
			def:       `{"StartAt": "P", "States": {"P": {"Type": "Pass", "ResultSelector": {}, "End": true}}}`,
			wantState: "P", wantField: "ResultSelector", wantMsg: "is not supported",
		},
		{
			name:      "unknown Next",
			def:       `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "Nope"}}}`,
			wantState: "A", wantField: "Next", wantMsg: `unknown state "Nope"`,
		},
		{
			name:      "unknown Default",
			def:       `{"StartAt": "C", "States": {"C": {"Type": "Choice", "Choices": [{"Variable": "$.a", "IsPresent": true, "Next": "D"}], "Default": "Nope"}, "D": {"Type": "Succeed"}}}`,
			wantState: "C", wantField: "Default", wantMsg: `unknown state "Nope"`,
		},
		{
			name:      "unknown Catch target",
			def:       `{"StartAt": "T", "States": {"T": {"Type": "Task", ` + invoke + `, "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Nope"}], "End": true}}}`,
			wantState: "T", wantField: "Catch[0].Next", wantMsg: `unknown state "Nope"`,
		},
		{
			name:      "missing StartAt",
			def:       `{"States": {"A": {"Type": "Succeed"}}}`,
			wantField: "StartAt", wantMsg: "is required",
		},
		{
			name:      "StartAt unknown",
			def:       `{"StartAt": "B", "States": {"A": {"Type": "Succeed"}}}`,
			wantField: "StartAt", wantMsg: `unknown state "B"`,
		},
		{
			name:      "unreachable state",
			def:       `{"StartAt": "A", "States": {"A": {"Type": "Succeed"}, "Lost": {"Type": "Succeed"}}}`,
			wantState: "Lost", wantMsg: "not reachable",
		},
		{
			name:      "bad JSONPath in InputPath",
			def:       `{"StartAt": "A", "States": {"A": {"Type": "Pass", "InputPath": "$..x", "End": true}}}`,
			wantState: "A", wantField: "InputPath", wantMsg: "invalid JSONPath",
		},
		{
			name:      "bad JSONPath in a payload field",
			def:       `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "fn", "Payload": {"k.$": "$.a[*]"}}, "End": true}}}`,
			wantState: "T", wantField: "Parameters.Payload.k.$", wantMsg: "invalid JSONPath",
		},
		{
			name:      "bad Choice variable",
			def:       `{"StartAt": "C", "States": {"C": {"Type": "Choice", "Choices": [{"Variable": "a.b", "IsPresent": true, "Next": "D"}]}, "D": {"Type": "Succeed"}}}`,
			wantState: "C", wantField: "Choices[0].Variable", wantMsg: "invalid JSONPath",
		},
		{
			name:      "ResultPath with an index",
			def:       `{"StartAt": "A", "States": {"A": {"Type": "Pass", "ResultPath": "$.a[0]", "End": true}}}`,
			wantState: "A", wantField: "ResultPath", wantMsg: "field names only",
		},
		{
			name:      "unsupported intrinsic",
			def:       `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Parameters": {"n.$": "States.ArrayLength($.a)"}, "End": true}}}`,
			wantState: "A", wantField: "Parameters.n.$", wantMsg: `"States.ArrayLength" is not supported`,
		},
		{
			name:      "unsupported intrinsic in CausePath",
			def:       `{"StartAt": "F", "States": {"F": {"Type": "Fail", "CausePath": "States.JsonToString($.a)"}}}`,
			wantState: "F", wantField: "CausePath", wantMsg: `"States.JsonToString" is not supported`,
		},
		{
			name:      "unsupported comparator",
			def:       `{"StartAt": "C", "States": {"C": {"Type": "Choice", "Choices": [{"Variable": "$.n", "NumericGreaterThan": 1, "Next": "D"}]}, "D": {"Type": "Succeed"}}}`,
			wantState: "C", wantField: "Choices[0].NumericGreaterThan",
			wantMsg: `state "C": field "Choices[0].NumericGreaterThan" is not supported`,
		},
		{
			name:      "unsupported nested comparator",
			def:       `{"StartAt": "C", "States": {"C": {"Type": "Choice", "Choices": [{"Not": {"Variable": "$.s", "StringMatches": "a*"}, "Next": "D"}]}, "D": {"Type": "Succeed"}}}`,
			wantState: "C", wantField: "Choices[0].Not.StringMatches", wantMsg: "is not supported",
		},
		{
			name:      "comparator value of the wrong type",
			def:       `{"StartAt": "C", "States": {"C": {"Type": "Choice", "Choices": [{"Variable": "$.n", "NumericLessThan": "3", "Next": "D"}]}, "D": {"Type": "Succeed"}}}`,
			wantState: "C", wantField: "Choices[0].NumericLessThan", wantMsg: "must be a number",
		},
		{
			name:      "unsupported resource",
			def:       `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage", "Parameters": {}, "End": true}}}`,
			wantState: "T", wantField: "Resource", wantMsg: "is not supported",
		},
		{
			name:      "unsupported invoke parameter",
			def:       `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "fn", "Qualifier": "1"}, "End": true}}}`,
			wantState: "T", wantField: "Parameters.Qualifier", wantMsg: "is not supported",
		},
		{
			name:      "callback task without its token",
			def:       `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken", "Parameters": {"FunctionName": "fn"}, "End": true}}}`,
			wantState: "T", wantField: "Parameters", wantMsg: "must pass $$.Task.Token",
		},
		{
			name:      "task token outside a callback task",
			def:       `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "fn", "Payload": {"t.$": "$$.Task.Token"}}, "End": true}}}`,
			wantState: "T", wantField: "Parameters", wantMsg: "only available in a .waitForTaskToken",
		},
		{
			name:      "unsupported context path",
			def:       `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Parameters": {"x.$": "$$.Map.Item.Value"}, "End": true}}}`,
			wantState: "A", wantField: "Parameters", wantMsg: `context path "$$.Map.Item.Value" is not supported`,
		},
		{
			name:      "unsupported retrier field",
			def:       `{"StartAt": "T", "States": {"T": {"Type": "Task", ` + invoke + `, "Retry": [{"ErrorEquals": ["X"], "JitterStrategy": "FULL"}], "End": true}}}`,
			wantState: "T", wantField: "Retry[0].JitterStrategy", wantMsg: "is not supported",
		},
		{
			name:      "BackoffRate below 1",
			def:       `{"StartAt": "T", "States": {"T": {"Type": "Task", ` + invoke + `, "Retry": [{"ErrorEquals": ["X"], "BackoffRate": 0.5}], "End": true}}}`,
			wantState: "T", wantField: "Retry[0].BackoffRate", wantMsg: ">= 1.0",
		},
		{
			name:      "States.ALL not last",
			def:       `{"StartAt": "T", "States": {"T": {"Type": "Task", ` + invoke + `, "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "T"}, {"ErrorEquals": ["X"], "Next": "T"}], "End": true}}}`,
			wantState: "T", wantField: "Catch[0].ErrorEquals", wantMsg: "States.ALL must appear alone",
		},
		{
			name:      "Wait with two durations",
			def:       `{"StartAt": "W", "States": {"W": {"Type": "Wait", "Seconds": 1, "SecondsPath": "$.s", "End": true}}}`,
			wantState: "W", wantField: "SecondsPath", wantMsg: "exactly one of",
		},
		{
			name:      "Wait with a bad timestamp",
			def:       `{"StartAt": "W", "States": {"W": {"Type": "Wait", "Timestamp": "2026-01-02 03:04:05Z", "End": true}}}`,
			wantState: "W", wantField: "Timestamp", wantMsg: "RFC 3339",
		},
		{
			name:      "Next and End",
			def:       `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "A", "End": true}}}`,
			wantState: "A", wantField: "End", wantMsg: "cannot be combined with Next",
		},
		{
			name:      "neither Next nor End",
			def:       `{"StartAt": "A", "States": {"A": {"Type": "Pass"}}}`,
			wantState: "A", wantField: "Next", wantMsg: "is required",
		},
		{
			name:      "Cause and CausePath",
			def:       `{"StartAt": "F", "States": {"F": {"Type": "Fail", "Cause": "x", "CausePath": "$.c"}}}`,
			wantState: "F", wantField: "CausePath", wantMsg: "cannot be combined",
		},
		{
			name:      "JSONata",
			def:       `{"QueryLanguage": "JSONata", "StartAt": "A", "States": {"A": {"Type": "Succeed"}}}`,
			wantField: "QueryLanguage", wantMsg: "not supported",
		},
		{
			name:      "top-level TimeoutSeconds",
			def:       `{"TimeoutSeconds": 60, "StartAt": "A", "States": {"A": {"Type": "Succeed"}}}`,
			wantField: "TimeoutSeconds", wantMsg: `definition: field "TimeoutSeconds" is not supported`,
		},
		{
			name:      "missing substitution",
			def:       `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "${ConfirmFunctionArn}"}, "End": true}}}`,
			subs:      map[string]string{"Other": "x"},
			wantField: "${ConfirmFunctionArn}", wantMsg: "substitution has no value",
		},
		{
			name:    "not JSON",
			def:     `{"StartAt": `,
			wantMsg: "not valid JSON",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := localflow.Load([]byte(tt.def), tt.subs)
			if err == nil {
				t.Fatalf("Load = %v, want an error", m)
			}
			var de *localflow.DefinitionError
			if !errors.As(err, &de) {
				t.Fatalf("Load error %v is not a *DefinitionError", err)
			}
			if de.State != tt.wantState || de.Field != tt.wantField {
				t.Errorf("state, field = %q, %q; want %q, %q (error %v)", de.State, de.Field, tt.wantState, tt.wantField, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tt.wantMsg)
			}
			if tt.wantState != "" && !strings.Contains(err.Error(), `state "`+tt.wantState+`"`) {
				t.Errorf("error %q does not name state %q", err, tt.wantState)
			}
		})
	}
}

func TestLoadSubstitutes(t *testing.T) {
	def := `{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
		"Parameters": {"FunctionName": "${Fn}", "Payload": {"q": "${Quote}"}}, "End": true}}}`
	m, err := localflow.Load([]byte(def), map[string]string{"Fn": "arn:aws:lambda:us-east-1:1:function:f", "Quote": `say "hi"\`})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	h := newHarnessFor(t, m)
	h.start("sub-1", `{}`)
	h.runDue()
	calls := h.inv.Calls()
	if len(calls) != 1 || calls[0].Function != "arn:aws:lambda:us-east-1:1:function:f" || calls[0].Payload["q"] != `say "hi"\` {
		t.Errorf("calls = %+v, want one call of the substituted function with the quoted payload", calls)
	}
}
