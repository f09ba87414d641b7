package sfnflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/publishing"
)

// class names how a caller of the ports sees an error.
func class(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, publishing.ErrConfirmClosed):
		return "closed"
	case errors.Is(err, publishing.ErrTaskNotWaiting):
		return "not waiting"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	default:
		return "error"
	}
}

var testKey = ledger.PublishKey("news", "launch", time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))

func confirmInput(policy string) publishing.ConfirmInput {
	return publishing.ConfirmInput{Key: testKey, Attempt: 1, Policy: policy, FirstWaitSeconds: 3, WaitSeconds: 20, MaxChecks: 4}
}

func inputJSON(t *testing.T, in publishing.ConfirmInput) string {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestStartConfirm checks publishing.Flows on Step Functions Standard's
// name rules (API_StartExecution.html: same name and input while open →
// success; different input → ExecutionAlreadyExists; closed →
// ExecutionAlreadyExists whatever the input) resolved by DescribeExecution
// (API_DescribeExecution.html).
func TestStartConfirm(t *testing.T) {
	name := publishing.ConfirmName(testKey, 1)
	in := confirmInput(publishing.PolicyAuto)
	other := confirmInput(publishing.PolicyManual)
	tests := []struct {
		name     string
		setup    func(t *testing.T, f *fakeSFN)
		start    string // default name
		want     string
		wantLog  []string
		wantExec map[string]string // every execution's status afterwards
	}{
		{
			name:     "a new name starts a workflow",
			want:     "ok",
			wantLog:  []string{"StartExecution 200"},
			wantExec: map[string]string{name: "RUNNING"},
		},
		{
			name:     "running with the same input: the service's own success is passed through",
			setup:    func(t *testing.T, f *fakeSFN) { f.put(name, inputJSON(t, in), "RUNNING") },
			want:     "ok",
			wantLog:  []string{"StartExecution 200"},
			wantExec: map[string]string{name: "RUNNING"},
		},
		{
			name:     "running with another input: described, still running, so started",
			setup:    func(t *testing.T, f *fakeSFN) { f.put(name, inputJSON(t, other), "RUNNING") },
			want:     "ok",
			wantLog:  []string{"StartExecution 400 ExecutionAlreadyExists", "DescribeExecution 200"},
			wantExec: map[string]string{name: "RUNNING"},
		},
		{
			name:     "pending a redrive counts as running",
			setup:    func(t *testing.T, f *fakeSFN) { f.put(name, inputJSON(t, in), "PENDING_REDRIVE") },
			want:     "ok",
			wantLog:  []string{"StartExecution 400 ExecutionAlreadyExists", "DescribeExecution 200"},
			wantExec: map[string]string{name: "PENDING_REDRIVE"},
		},
		{
			name:     "succeeded, same input: closed",
			setup:    func(t *testing.T, f *fakeSFN) { f.put(name, inputJSON(t, in), "SUCCEEDED") },
			want:     "closed",
			wantLog:  []string{"StartExecution 400 ExecutionAlreadyExists", "DescribeExecution 200"},
			wantExec: map[string]string{name: "SUCCEEDED"},
		},
		{
			name:     "failed, same input: closed",
			setup:    func(t *testing.T, f *fakeSFN) { f.put(name, inputJSON(t, in), "FAILED") },
			want:     "closed",
			wantLog:  []string{"StartExecution 400 ExecutionAlreadyExists", "DescribeExecution 200"},
			wantExec: map[string]string{name: "FAILED"},
		},
		{
			name:     "failed, another input: closed",
			setup:    func(t *testing.T, f *fakeSFN) { f.put(name, inputJSON(t, other), "FAILED") },
			want:     "closed",
			wantLog:  []string{"StartExecution 400 ExecutionAlreadyExists", "DescribeExecution 200"},
			wantExec: map[string]string{name: "FAILED"},
		},
		{
			name:     "timed out: closed",
			setup:    func(t *testing.T, f *fakeSFN) { f.put(name, inputJSON(t, in), "TIMED_OUT") },
			want:     "closed",
			wantLog:  []string{"StartExecution 400 ExecutionAlreadyExists", "DescribeExecution 200"},
			wantExec: map[string]string{name: "TIMED_OUT"},
		},
		{
			name:     "aborted: closed",
			setup:    func(t *testing.T, f *fakeSFN) { f.put(name, inputJSON(t, in), "ABORTED") },
			want:     "closed",
			wantLog:  []string{"StartExecution 400 ExecutionAlreadyExists", "DescribeExecution 200"},
			wantExec: map[string]string{name: "ABORTED"},
		},
		{
			name: "throttled: unavailable, nothing started",
			setup: func(t *testing.T, f *fakeSFN) {
				f.fail("StartExecution", fault{status: 400, code: "ThrottlingException"})
			},
			want:     "unavailable",
			wantLog:  []string{"StartExecution 400 ThrottlingException"},
			wantExec: map[string]string{},
		},
		{
			name: "5xx: unavailable",
			setup: func(t *testing.T, f *fakeSFN) {
				f.fail("StartExecution", fault{status: 503, code: "ServiceUnavailable"})
			},
			want:     "unavailable",
			wantLog:  []string{"StartExecution 503 ServiceUnavailable"},
			wantExec: map[string]string{},
		},
		{
			name: "too many open executions: unavailable",
			setup: func(t *testing.T, f *fakeSFN) {
				f.fail("StartExecution", fault{status: 400, code: "ExecutionLimitExceeded"})
			},
			want:     "unavailable",
			wantLog:  []string{"StartExecution 400 ExecutionLimitExceeded"},
			wantExec: map[string]string{},
		},
		{
			name: "describe throttled: unavailable",
			setup: func(t *testing.T, f *fakeSFN) {
				f.put(name, inputJSON(t, in), "FAILED")
				f.fail("DescribeExecution", fault{status: 400, code: "ThrottlingException"})
			},
			want:     "unavailable",
			wantLog:  []string{"StartExecution 400 ExecutionAlreadyExists", "DescribeExecution 400 ThrottlingException"},
			wantExec: map[string]string{name: "FAILED"},
		},
		{
			name: "exists but not described yet (eventually consistent): unavailable",
			setup: func(t *testing.T, f *fakeSFN) {
				f.put(name, inputJSON(t, in), "FAILED")
				f.fail("DescribeExecution", fault{status: 400, code: "ExecutionDoesNotExist"})
			},
			want:     "unavailable",
			wantLog:  []string{"StartExecution 400 ExecutionAlreadyExists", "DescribeExecution 400 ExecutionDoesNotExist"},
			wantExec: map[string]string{name: "FAILED"},
		},
		{
			name:     "state machine deleted: an error, not worth retrying",
			setup:    func(t *testing.T, f *fakeSFN) { f.deleteMachine() },
			want:     "error",
			wantLog:  []string{"StartExecution 400 StateMachineDoesNotExist"},
			wantExec: map[string]string{},
		},
		{
			name:     "a name Step Functions refuses is never sent",
			start:    name + " r2",
			want:     "error",
			wantLog:  []string{},
			wantExec: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSFN(t)
			if tt.setup != nil {
				tt.setup(t, f)
			}
			start := tt.start
			if start == "" {
				start = name
			}
			err := f.adapter().StartConfirm(context.Background(), start, in)
			if got := class(err); got != tt.want {
				t.Errorf("StartConfirm = %v (%s), want %s", err, got, tt.want)
			}
			if diff := cmp.Diff(tt.wantLog, f.log()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantExec, f.executions()); diff != "" {
				t.Errorf("executions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStartConfirmRequests checks the request bodies against the
// reference's request syntax: StartExecution {stateMachineArn, name,
// input} (API_StartExecution.html) and DescribeExecution {executionArn,
// includedData METADATA_ONLY} with the execution ARN
// arn:aws:states:REGION:ACCOUNT:execution:MACHINE:NAME (API_DescribeExecution.html).
func TestStartConfirmRequests(t *testing.T) {
	f := newFakeSFN(t)
	name := publishing.ConfirmName(testKey, 2) + "-r3"
	in := confirmInput(publishing.PolicyUnreadable)
	f.put(name, `{"key":"other"}`, "RUNNING")
	if err := f.adapter().StartConfirm(context.Background(), name, in); err != nil {
		t.Fatal(err)
	}
	want := []any{
		&startExecutionRequest{StateMachineArn: f.machineARN(), Name: name, Input: inputJSON(t, in)},
		&describeExecutionRequest{ExecutionArn: "arn:aws:states:eu-west-1:123456789012:execution:oncepost-confirm:" + name, IncludedData: "METADATA_ONLY"},
	}
	if diff := cmp.Diff(want, f.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	// The input is the ConfirmInput the state machine reads ($.key, $.policy …).
	var got publishing.ConfirmInput
	if err := json.Unmarshal([]byte(f.requests()[0].(*startExecutionRequest).Input), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, got); diff != "" {
		t.Errorf("input (-want +got):\n%s", diff)
	}
}

// cloudWatchSafe is the character set with which an execution's name can
// also be logged to CloudWatch Logs (API_StartExecution.html).
var cloudWatchSafe = regexp.MustCompile(`^[0-9A-Za-z_-]+$`)

// TestConfirmNames checks the names publishing produces (key-attempt, then
// key-attempt-rN up to MaxConfirmRuns) against StartExecution's rules, the
// longest first: a 52-character key, the largest attempt an int holds, and
// the last replacement run.
func TestConfirmNames(t *testing.T) {
	if len(testKey) != 52 {
		t.Fatalf("a ledger key is %d characters, this test assumes 52", len(testKey))
	}
	longest := fmt.Sprintf("%s-r%d", publishing.ConfirmName(testKey, math.MaxInt), publishing.MaxConfirmRuns)
	names := []string{longest, publishing.ConfirmName(testKey, 1)}
	for run := 2; run <= publishing.MaxConfirmRuns; run++ {
		names = append(names, fmt.Sprintf("%s-r%d", publishing.ConfirmName(testKey, 1), run))
	}
	t.Logf("longest confirm name: %d characters: %s", len(longest), longest)
	f := newFakeSFN(t)
	m := f.adapter()
	for _, name := range names {
		if err := checkName(name); err != nil {
			t.Errorf("checkName(%q) = %v", name, err)
		}
		if len(name) > MaxNameLength || !cloudWatchSafe.MatchString(name) {
			t.Errorf("%q (%d characters) is not a CloudWatch-safe name of at most %d", name, len(name), MaxNameLength)
		}
		if err := m.StartConfirm(context.Background(), name, confirmInput(publishing.PolicyAuto)); err != nil {
			t.Errorf("StartConfirm(%q) = %v", name, err)
		}
	}
	if got := len(f.executions()); got != len(names) {
		t.Errorf("%d executions started, want %d", got, len(names))
	}
}

// TestCheckName checks StartExecution's name rules (API_StartExecution.html:
// 1–80 characters; no white space, brackets < > { } [ ], wildcards ? *,
// special characters " # % \ ^ | ~ ` $ & , ; : /, control characters
// U+0000–001F and U+007F–009F, U+FFFE–FFFF).
func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{strings.Repeat("a", 80), true},
		{"Key_1-2.x", true},
		{"", false},
		{strings.Repeat("a", 81), false},
		{"a b", false},
		{"a\tb", false},
		{"a\u00a0b", false},
		{"a\u2028b", false},
		{"a\x00b", false},
		{"a\x1fb", false},
		{"a\x7fb", false},
		{"a\u0085b", false},
		{"a\u009fb", false},
		{"a\ufffeb", false},
		{"a\uffffb", false},
		{"a\xffb", false},
	}
	for _, c := range "<>{}[]?*\"#%\\^|~`$&,;:/" {
		tests = append(tests, struct {
			name string
			ok   bool
		}{"a" + string(c) + "b", false})
	}
	for _, tt := range tests {
		if got := checkName(tt.name) == nil; got != tt.ok {
			t.Errorf("checkName(%q) valid = %v, want %v", tt.name, got, tt.ok)
		}
	}
}

// TestNew checks the state machine ARNs New accepts and the execution ARN
// it derives (arn:PARTITION:states:REGION:ACCOUNT:execution:MACHINE:NAME).
func TestNew(t *testing.T) {
	tests := []struct {
		arn, region string
		wantPrefix  string // "" when refused
	}{
		{"arn:aws:states:eu-west-1:123456789012:stateMachine:confirm", "eu-west-1", "arn:aws:states:eu-west-1:123456789012:execution:confirm:"},
		{"arn:aws-cn:states:cn-north-1:123456789012:stateMachine:confirm", "cn-north-1", "arn:aws-cn:states:cn-north-1:123456789012:execution:confirm:"},
		{"arn:aws-us-gov:states:us-gov-west-1:123456789012:stateMachine:c_1", "", "arn:aws-us-gov:states:us-gov-west-1:123456789012:execution:c_1:"},
		{"arn:aws:states:eu-west-1:123456789012:stateMachine:confirm", "us-east-1", ""}, // client in another region
		{"arn:aws:states:eu-west-1:123456789012:stateMachine:confirm:1", "", ""},        // version
		{"arn:aws:states:eu-west-1:123456789012:stateMachine:confirm:PROD", "", ""},     // alias
		{"arn:aws:states:eu-west-1:123456789012:stateMachine:confirm/map", "", ""},      // Distributed Map
		{"arn:aws:states:eu-west-1:123456789012:activity:confirm", "", ""},
		{"arn:aws:states:eu-west-1:123456789012:execution:confirm:x", "", ""},
		{"arn:aws:lambda:eu-west-1:123456789012:function:confirm", "", ""},
		{"arn:aws:states::123456789012:stateMachine:confirm", "", ""},
		{"arn:aws:states:eu-west-1:1234:stateMachine:confirm", "", ""},
		{"confirm", "", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		client := sfn.New(sfn.Options{Region: tt.region})
		m, err := New(client, tt.arn)
		switch {
		case tt.wantPrefix == "" && err == nil:
			t.Errorf("New(%q) in %q accepted, want refused", tt.arn, tt.region)
		case tt.wantPrefix != "" && err != nil:
			t.Errorf("New(%q) in %q = %v", tt.arn, tt.region, err)
		case err == nil && m.execPrefix != tt.wantPrefix:
			t.Errorf("New(%q): execution ARN prefix %q, want %q", tt.arn, m.execPrefix, tt.wantPrefix)
		}
	}
	if _, err := New(nil, tests[0].arn); err == nil {
		t.Error("New(nil client) accepted")
	}
}

// TestSendTaskSuccess checks publishing.Tasks on SendTaskSuccess
// (API_SendTaskSuccess.html): a waiting task completes once; a token no
// task waits on any more — answered (TaskTimedOut), of a Hold step retried
// with a new token, of a stopped execution, never issued
// (TaskDoesNotExist), malformed (InvalidToken) — is ErrTaskNotWaiting;
// throttling and 5xx are ErrUnavailable and leave the task waiting.
func TestSendTaskSuccess(t *testing.T) {
	exec := publishing.ConfirmName(testKey, 1)
	decision := `{"decision":"release"}`
	never := "ZmFrZS1zZm4tdGFza3xub3BlfDk5" // well formed ("fake-sfn-task|nope|99"), never issued
	tests := []struct {
		name     string
		setup    func(f *fakeSFN, m *StateMachine, token string) string // returns the token to send
		output   string
		want     string
		wantLog  []string
		wantTask fakeTask // the task first issued, afterwards
	}{
		{
			name:     "a waiting task completes",
			want:     "ok",
			wantLog:  []string{"SendTaskSuccess 200"},
			wantTask: fakeTask{Exec: exec, Answer: "success", Output: decision},
		},
		{
			name: "answered before: TaskTimedOut",
			setup: func(f *fakeSFN, m *StateMachine, token string) string {
				if err := m.SendTaskSuccess(context.Background(), token, json.RawMessage(`{"decision":"reject"}`)); err != nil {
					f.t.Fatal(err)
				}
				return token
			},
			want:     "not waiting",
			wantLog:  []string{"SendTaskSuccess 200", "SendTaskSuccess 400 TaskTimedOut"},
			wantTask: fakeTask{Exec: exec, Answer: "success", Output: `{"decision":"reject"}`},
		},
		{
			name: "the Hold step was retried with a new token: the old one is TaskTimedOut",
			setup: func(f *fakeSFN, m *StateMachine, token string) string {
				f.wait(exec)
				return token
			},
			want:     "not waiting",
			wantLog:  []string{"SendTaskSuccess 400 TaskTimedOut"},
			wantTask: fakeTask{Exec: exec},
		},
		{
			name: "the execution stopped: TaskTimedOut",
			setup: func(f *fakeSFN, m *StateMachine, token string) string {
				f.stop(exec, "ABORTED")
				return token
			},
			want:     "not waiting",
			wantLog:  []string{"SendTaskSuccess 400 TaskTimedOut"},
			wantTask: fakeTask{Exec: exec},
		},
		{
			name:     "never issued: TaskDoesNotExist",
			setup:    func(*fakeSFN, *StateMachine, string) string { return never },
			want:     "not waiting",
			wantLog:  []string{"SendTaskSuccess 400 TaskDoesNotExist"},
			wantTask: fakeTask{Exec: exec, Open: true},
		},
		{
			name:     "malformed: InvalidToken",
			setup:    func(*fakeSFN, *StateMachine, string) string { return "token-from-another-runtime" },
			want:     "not waiting",
			wantLog:  []string{"SendTaskSuccess 400 InvalidToken"},
			wantTask: fakeTask{Exec: exec, Open: true},
		},
		{
			name:     "empty: not waiting, never sent",
			setup:    func(*fakeSFN, *StateMachine, string) string { return "" },
			want:     "not waiting",
			wantLog:  []string{},
			wantTask: fakeTask{Exec: exec, Open: true},
		},
		{
			name: "throttled: unavailable, the task still waits",
			setup: func(f *fakeSFN, m *StateMachine, token string) string {
				f.fail("SendTaskSuccess", fault{status: 400, code: "ThrottlingException"})
				return token
			},
			want:     "unavailable",
			wantLog:  []string{"SendTaskSuccess 400 ThrottlingException"},
			wantTask: fakeTask{Exec: exec, Open: true},
		},
		{
			name: "5xx: unavailable, the task still waits",
			setup: func(f *fakeSFN, m *StateMachine, token string) string {
				f.fail("SendTaskSuccess", fault{status: 500, code: "InternalFailure"})
				return token
			},
			want:     "unavailable",
			wantLog:  []string{"SendTaskSuccess 500 InternalFailure"},
			wantTask: fakeTask{Exec: exec, Open: true},
		},
		{
			name:     "output that is not JSON: InvalidOutput, an error",
			output:   `{"decision":`,
			want:     "error",
			wantLog:  []string{"SendTaskSuccess 400 InvalidOutput"},
			wantTask: fakeTask{Exec: exec, Open: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSFN(t)
			m := f.adapter()
			f.put(exec, "{}", "RUNNING")
			issued := f.wait(exec)
			token := issued
			if tt.setup != nil {
				token = tt.setup(f, m, issued)
			}
			output := tt.output
			if output == "" {
				output = decision
			}
			err := m.SendTaskSuccess(context.Background(), token, json.RawMessage(output))
			if got := class(err); got != tt.want {
				t.Errorf("SendTaskSuccess = %v (%s), want %s", err, got, tt.want)
			}
			if diff := cmp.Diff(tt.wantLog, f.log()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantTask, f.task(issued)); diff != "" {
				t.Errorf("task (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSendTaskFailure checks SendTaskFailure (API_SendTaskFailure.html:
// {taskToken, error ≤ 256, cause ≤ 32768}; same errors as SendTaskSuccess).
func TestSendTaskFailure(t *testing.T) {
	exec := publishing.ConfirmName(testKey, 1)
	longCause := strings.Repeat("é", MaxCauseLength) // 2 bytes each: cut on a rune boundary
	tests := []struct {
		name       string
		errName    string
		cause      string
		twice      bool
		want       string
		wantLog    []string
		wantTask   fakeTask
		wantCauseN int
	}{
		{
			name: "a waiting task fails with the error and cause", errName: "OperatorRejected", cause: "wrong account",
			want: "ok", wantLog: []string{"SendTaskFailure 200"},
			wantTask: fakeTask{Exec: exec, Answer: "failure", Error: "OperatorRejected", Cause: "wrong account"},
		},
		{
			name: "answered before: TaskTimedOut", errName: "OperatorRejected", twice: true,
			want: "not waiting", wantLog: []string{"SendTaskFailure 200", "SendTaskFailure 400 TaskTimedOut"},
			wantTask: fakeTask{Exec: exec, Answer: "failure", Error: "OperatorRejected"},
		},
		{
			name: "a long cause is cut to the limit", errName: "E", cause: longCause,
			want: "ok", wantLog: []string{"SendTaskFailure 200"},
			wantTask: fakeTask{Exec: exec, Answer: "failure", Error: "E", Cause: longCause[:MaxCauseLength]}, wantCauseN: MaxCauseLength,
		},
		{
			name: "an error name over 256 bytes is refused, never sent", errName: strings.Repeat("E", MaxErrorLength+1),
			want: "error", wantLog: []string{}, wantTask: fakeTask{Exec: exec, Open: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSFN(t)
			m := f.adapter()
			f.put(exec, "{}", "RUNNING")
			token := f.wait(exec)
			if tt.twice {
				if err := m.SendTaskFailure(context.Background(), token, tt.errName, tt.cause); err != nil {
					t.Fatal(err)
				}
			}
			err := m.SendTaskFailure(context.Background(), token, tt.errName, tt.cause)
			if got := class(err); got != tt.want {
				t.Errorf("SendTaskFailure = %v (%s), want %s", err, got, tt.want)
			}
			if diff := cmp.Diff(tt.wantLog, f.log()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			got := f.task(token)
			if diff := cmp.Diff(tt.wantTask, got); diff != "" {
				t.Errorf("task (-want +got):\n%s", diff)
			}
			if tt.wantCauseN > 0 && (len(got.Cause) != tt.wantCauseN || !utf8.ValidString(got.Cause)) {
				t.Errorf("cause is %d bytes (valid UTF-8: %v), want %d", len(got.Cause), utf8.ValidString(got.Cause), tt.wantCauseN)
			}
		})
	}
	f := newFakeSFN(t)
	f.put(exec, "{}", "RUNNING")
	token := f.wait(exec)
	if err := f.adapter().SendTaskFailure(context.Background(), token, "E", "why"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{&sendTaskFailureRequest{TaskToken: token, Error: "E", Cause: "why"}}, f.requests()); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

// TestSDKRetries runs the SDK's standard retryer (without its backoff)
// against the fake: the fake's throttling answers are ones the SDK
// retries, and what is left when its attempts run out is ErrUnavailable.
func TestSDKRetries(t *testing.T) {
	noBackoff := func(o *sfn.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 3
			so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		})
		o.RetryMaxAttempts = 0
	}
	throttle := fault{status: 400, code: "ThrottlingException"}
	name := publishing.ConfirmName(testKey, 1)
	tests := []struct {
		name    string
		faults  int
		want    string
		wantLog []string
	}{
		{"one throttle, retried by the SDK", 1, "ok", []string{"StartExecution 400 ThrottlingException", "StartExecution 200"}},
		{"throttled past the SDK's attempts", 3, "unavailable", []string{"StartExecution 400 ThrottlingException", "StartExecution 400 ThrottlingException", "StartExecution 400 ThrottlingException"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeSFN(t)
			for range tt.faults {
				f.fail("StartExecution", throttle)
			}
			err := f.adapter(noBackoff).StartConfirm(context.Background(), name, confirmInput(publishing.PolicyAuto))
			if got := class(err); got != tt.want {
				t.Errorf("StartConfirm = %v (%s), want %s", err, got, tt.want)
			}
			if diff := cmp.Diff(tt.wantLog, f.log()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLostAnswers: the service acted and its answer was lost (a 500 after
// the effect). Repeating is safe: StartExecution finds its own execution
// running with the same input; SendTaskSuccess finds the task closed
// (TaskTimedOut → not waiting), which is why a decision whose delivery
// answer was lost is then applied directly — the confirm steps are
// idempotent, so the workflow and the direct application agree.
func TestLostAnswers(t *testing.T) {
	ctx := context.Background()
	lost := fault{status: 500, code: "InternalFailure", commit: true}
	name := publishing.ConfirmName(testKey, 1)

	t.Run("start", func(t *testing.T) {
		f := newFakeSFN(t)
		m := f.adapter()
		f.fail("StartExecution", lost)
		in := confirmInput(publishing.PolicyAuto)
		got := []string{class(m.StartConfirm(ctx, name, in)), class(m.StartConfirm(ctx, name, in))}
		if diff := cmp.Diff([]string{"unavailable", "ok"}, got); diff != "" {
			t.Errorf("StartConfirm twice (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"StartExecution 500 InternalFailure", "StartExecution 200"}, f.log()); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]string{name: "RUNNING"}, f.executions()); diff != "" {
			t.Errorf("executions (-want +got):\n%s", diff)
		}
	})
	t.Run("task success", func(t *testing.T) {
		f := newFakeSFN(t)
		m := f.adapter()
		f.put(name, "{}", "RUNNING")
		token := f.wait(name)
		f.fail("SendTaskSuccess", lost)
		out := json.RawMessage(`{"decision":"confirm","remote_id":"109"}`)
		got := []string{class(m.SendTaskSuccess(ctx, token, out)), class(m.SendTaskSuccess(ctx, token, out))}
		if diff := cmp.Diff([]string{"unavailable", "not waiting"}, got); diff != "" {
			t.Errorf("SendTaskSuccess twice (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(fakeTask{Exec: name, Answer: "success", Output: string(out)}, f.task(token)); diff != "" {
			t.Errorf("task (-want +got):\n%s", diff)
		}
	})
}

// TestContextErrors: a cancelled call stays visible as such, and is
// neither "closed" nor "not waiting".
func TestContextErrors(t *testing.T) {
	f := newFakeSFN(t)
	m := f.adapter()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := m.StartConfirm(ctx, publishing.ConfirmName(testKey, 1), confirmInput(publishing.PolicyAuto))
	if !errors.Is(err, context.Canceled) || class(err) != "error" {
		t.Errorf("StartConfirm with a cancelled context = %v, want context.Canceled only", err)
	}
	err = m.SendTaskSuccess(ctx, "token", json.RawMessage(`{}`))
	if !errors.Is(err, context.Canceled) || class(err) != "error" {
		t.Errorf("SendTaskSuccess with a cancelled context = %v, want context.Canceled only", err)
	}
}
