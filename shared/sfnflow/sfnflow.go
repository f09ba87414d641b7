// Package sfnflow runs the confirm workflow (infra/statemachine/confirm.asl.json)
// on AWS Step Functions Standard: it is the publishing.Flows port
// (StartExecution, idempotent by execution name) and the publishing.Tasks
// port (SendTaskSuccess on the Hold step's task token) for the AWS runtime,
// as localflow is for the embedded one (DESIGN §6).
//
// AWS errors stop here: callers see publishing.ErrConfirmClosed,
// publishing.ErrTaskNotWaiting, ErrUnavailable (throttling, 5xx, a service
// that could not be reached: try again later) or a plain error naming the
// call, never an SDK type.
package sfnflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"

	"oncepost/shared/publishing"
)

// ErrUnavailable marks a call Step Functions did not serve for now: it was
// throttled, answered 5xx, could not be reached, had too many executions
// open, or described an execution it had just reported to exist
// (DescribeExecution is eventually consistent). The same call may succeed
// later; a StartConfirm or a decision is safe to repeat.
var ErrUnavailable = errors.New("step functions unavailable; try again later")

// Limits of the Step Functions API (API reference: StartExecution,
// SendTaskFailure).
const (
	// MaxNameLength is the longest execution name StartExecution takes.
	MaxNameLength = 80
	// MaxErrorLength bounds SendTaskFailure's error name.
	MaxErrorLength = 256
	// MaxCauseLength bounds SendTaskFailure's cause; a longer one is cut.
	MaxCauseLength = 32768
)

// StateMachine starts and answers confirm workflows of one Step Functions
// Standard state machine. It is safe for concurrent use.
type StateMachine struct {
	client     *sfn.Client
	machineARN string
	// execPrefix + name is an execution's ARN:
	// arn:partition:states:region:account:execution:machine:
	execPrefix string
}

var (
	_ publishing.Flows = (*StateMachine)(nil)
	_ publishing.Tasks = (*StateMachine)(nil)
)

// New returns the adapter for the state machine with the unqualified ARN
// machineARN (arn:partition:states:region:account:stateMachine:name),
// called through client. A version, alias or Distributed Map ARN is
// refused: executions are described by an ARN derived from the machine's
// name, and a redeployed alias must not change it.
func New(client *sfn.Client, machineARN string) (*StateMachine, error) {
	if client == nil {
		return nil, errors.New("sfnflow: no Step Functions client")
	}
	prefix, region, err := executionPrefix(machineARN)
	if err != nil {
		return nil, err
	}
	if r := client.Options().Region; r != "" && r != region {
		return nil, fmt.Errorf("sfnflow: state machine %s is in region %s, the client calls %s", machineARN, region, r)
	}
	return &StateMachine{client: client, machineARN: machineARN, execPrefix: prefix}, nil
}

// executionPrefix checks an unqualified state machine ARN and returns the
// prefix of its executions' ARNs and its region.
func executionPrefix(machineARN string) (prefix, region string, err error) {
	p := strings.Split(machineARN, ":")
	bad := func(why string) (string, string, error) {
		return "", "", fmt.Errorf("sfnflow: state machine ARN %q: %s; want arn:aws:states:REGION:ACCOUNT:stateMachine:NAME", machineARN, why)
	}
	switch {
	case len(p) == 8 && p[0] == "arn" && p[5] == "stateMachine":
		return bad("a version or alias ARN is not accepted")
	case len(p) != 7 || p[0] != "arn" || p[2] != "states":
		return bad("not a Step Functions ARN")
	case p[5] != "stateMachine":
		return bad(fmt.Sprintf("resource type %q is not stateMachine", p[5]))
	case p[1] == "" || p[3] == "":
		return bad("partition and region are required")
	case len(p[4]) != 12 || strings.Trim(p[4], "0123456789") != "":
		return bad("the account is not 12 digits")
	}
	if err := checkName(p[6]); err != nil {
		return bad("machine name: " + err.Error())
	}
	return strings.Join([]string{"arn", p[1], "states", p[3], p[4], "execution", p[6], ""}, ":"), p[3], nil
}

// checkName applies StartExecution's rules for names: 1 to 80 characters,
// none of white space, brackets < > { } [ ], wildcards ? *, the special
// characters " # % \ ^ | ~ ` $ & , ; : /, control characters (U+0000–001F,
// U+007F–009F), U+FFFE–FFFF, surrogates or invalid UTF-8.
func checkName(name string) error {
	switch n := utf8.RuneCountInString(name); {
	case name == "":
		return errors.New("empty name")
	case !utf8.ValidString(name):
		return errors.New("name is not valid UTF-8")
	case n > MaxNameLength:
		return fmt.Errorf("name is %d characters, over %d", n, MaxNameLength)
	}
	for i, r := range name {
		switch {
		case unicode.IsSpace(r), unicode.IsControl(r), r == 0xfffe, r == 0xffff:
			return fmt.Errorf("character %U at byte %d is not allowed", r, i)
		case strings.ContainsRune("<>{}[]?*\"#%\\^|~`$&,;:/", r):
			return fmt.Errorf("character %q at byte %d is not allowed", r, i)
		}
	}
	return nil
}

// StartConfirm starts the confirm workflow named name with in as its input
// (publishing.Flows). Step Functions Standard answers a start of a name
// that is still running with the same input with success; a different
// input, or an execution of that name that has stopped, gives
// ExecutionAlreadyExists, which DescribeExecution resolves: still running
// (or pending a redrive) is success, SUCCEEDED, FAILED, TIMED_OUT or
// ABORTED is publishing.ErrConfirmClosed.
func (m *StateMachine) StartConfirm(ctx context.Context, name string, in publishing.ConfirmInput) error {
	if err := checkName(name); err != nil {
		return fmt.Errorf("sfnflow: start %q: invalid execution name: %w", name, err)
	}
	input, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("sfnflow: start %s: encode input: %w", name, err)
	}
	_, err = m.client.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(m.machineARN),
		Name:            aws.String(name),
		Input:           aws.String(string(input)),
	})
	var exists *types.ExecutionAlreadyExists
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &exists):
		return translate("start "+name, err)
	}
	out, err := m.client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{
		ExecutionArn: aws.String(m.execPrefix + name),
		// The status is all it needs: no input or output, nor the KMS
		// permission to decrypt them.
		IncludedData: types.IncludedDataMetadataOnly,
	})
	var missing *types.ExecutionDoesNotExist
	switch {
	case errors.As(err, &missing):
		// It was just reported to exist: the read is behind.
		return fmt.Errorf("sfnflow: describe %s: %w: it exists but cannot be described yet", name, ErrUnavailable)
	case err != nil:
		return translate("describe "+name, err)
	}
	switch out.Status {
	case types.ExecutionStatusRunning, types.ExecutionStatusPendingRedrive:
		return nil
	case types.ExecutionStatusSucceeded, types.ExecutionStatusFailed, types.ExecutionStatusTimedOut, types.ExecutionStatusAborted:
		return fmt.Errorf("sfnflow: execution %s is %s: %w", name, out.Status, publishing.ErrConfirmClosed)
	default:
		return fmt.Errorf("sfnflow: execution %s exists with status %q, neither running nor stopped", name, out.Status)
	}
}

// SendTaskSuccess completes the task waiting on token with output, JSON
// (publishing.Tasks). A token no task waits on any more — answered
// already, expired, its execution stopped (TaskTimedOut), unknown
// (TaskDoesNotExist) or malformed (InvalidToken) — gives
// publishing.ErrTaskNotWaiting, so that an operator's decision is applied
// to the ledger directly.
func (m *StateMachine) SendTaskSuccess(ctx context.Context, token string, output json.RawMessage) error {
	if token == "" {
		return fmt.Errorf("sfnflow: send task success: empty token: %w", publishing.ErrTaskNotWaiting)
	}
	_, err := m.client.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{
		TaskToken: aws.String(token),
		Output:    aws.String(string(output)),
	})
	return taskError("send task success", err)
}

// SendTaskFailure fails the task waiting on token with the error name
// errorName (at most MaxErrorLength bytes; the state's Retry and Catch
// match on it) and cause (cut to MaxCauseLength bytes). Errors as
// SendTaskSuccess.
func (m *StateMachine) SendTaskFailure(ctx context.Context, token, errorName, cause string) error {
	if token == "" {
		return fmt.Errorf("sfnflow: send task failure: empty token: %w", publishing.ErrTaskNotWaiting)
	}
	if len(errorName) > MaxErrorLength {
		return fmt.Errorf("sfnflow: send task failure: error name is %d bytes, over %d", len(errorName), MaxErrorLength)
	}
	_, err := m.client.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{
		TaskToken: aws.String(token),
		Error:     aws.String(errorName),
		Cause:     aws.String(cut(cause, MaxCauseLength)),
	})
	return taskError("send task failure", err)
}

// taskError translates the answer to a SendTask* call.
func taskError(op string, err error) error {
	var (
		timedOut *types.TaskTimedOut
		noTask   *types.TaskDoesNotExist
		invalid  *types.InvalidToken
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &timedOut), errors.As(err, &noTask), errors.As(err, &invalid):
		return fmt.Errorf("sfnflow: %s: %s: %w", op, code(err), publishing.ErrTaskNotWaiting)
	default:
		return translate(op, err)
	}
}

// translate turns an SDK error into ErrUnavailable (retry later) or a
// plain error, keeping the SDK's message (operation, status, request id)
// as text only. A cancelled or expired context stays visible to errors.Is.
func translate(op string, err error) error {
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("sfnflow: %s: %w", op, err)
	case retryable(err):
		return fmt.Errorf("sfnflow: %s: %w: %v", op, ErrUnavailable, err)
	default:
		return fmt.Errorf("sfnflow: %s: %v", op, err)
	}
}

// retryable reports whether err is one the SDK's standard retryer would
// retry (throttling, 5xx, connection errors) or a limit that frees up
// with time, possibly after the SDK's own retries ran out.
func retryable(err error) bool {
	var (
		quota    ratelimit.QuotaExceededError
		limit    *types.ExecutionLimitExceeded
		kmsLimit *types.KmsThrottlingException
	)
	if errors.As(err, &quota) || errors.As(err, &limit) || errors.As(err, &kmsLimit) {
		return true
	}
	if retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary {
		return true
	}
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// code is the API error code of err, or "error".
func code(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return "error"
}

// cut bounds s to n bytes on a UTF-8 boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}
