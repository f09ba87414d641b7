package localflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Errors returned by the Engine; they wrap with the execution name or
// token's context, so test them with errors.Is.
var (
	// ErrExecutionAlreadyExists: Start with a name that exists with a
	// different input, or whose execution has already stopped (Step
	// Functions Standard semantics).
	ErrExecutionAlreadyExists = errors.New("execution already exists")
	// ErrExecutionDoesNotExist: Describe of an unknown name.
	ErrExecutionDoesNotExist = errors.New("execution does not exist")
	// ErrTaskDoesNotExist: SendTaskSuccess or SendTaskFailure with a token
	// that no running execution is waiting on (unknown, already answered,
	// or its task was retried with a new token).
	ErrTaskDoesNotExist = errors.New("task does not exist")
)

// Error names the engine raises or matches specially.
const (
	// ErrorRuntime is raised for data errors (a path not found, a bad
	// intrinsic argument, a ResultPath that cannot be applied). Like Step
	// Functions, it is neither retried nor caught, even by States.ALL: the
	// execution fails.
	ErrorRuntime = "States.Runtime"
	// ErrorNoChoiceMatched is raised by a Choice state without Default
	// when no rule matches.
	ErrorNoChoiceMatched = "States.NoChoiceMatched"
	// ErrorServiceException names transport errors of the Invoker (see
	// TransportError).
	ErrorServiceException = "Lambda.ServiceException"
	// ErrorUnknown names a function error without a usable name (a panic,
	// an anonymous error type, a response that is not JSON).
	ErrorUnknown = "Lambda.Unknown"

	errorAll        = "States.ALL"
	errorTaskFailed = "States.TaskFailed"
	errorTimeout    = "States.Timeout"
)

// TransportError marks an error of the Invoker's own transport (the call
// did not reach the function, or its answer was lost), as opposed to an
// error the function returned. An Invoker signals one by returning
// &TransportError{Err: err}, possibly wrapped; the engine names it
// Lambda.ServiceException, which the confirm workflow retries.
type TransportError struct {
	Err error
}

// Error implements error.
func (e *TransportError) Error() string {
	return fmt.Sprintf("invoke transport: %v", e.Err)
}

// Unwrap returns the transport's error.
func (e *TransportError) Unwrap() error { return e.Err }

// ErrorName is the Step Functions error name of an error returned by an
// Invoker:
//
//   - a TransportError anywhere in the chain: Lambda.ServiceException;
//   - an error whose own type has an `ErrorName() string` method returning a
//     non-empty name: that name (this project's convention);
//   - otherwise the name of the error's own dynamic type, pointer stripped
//     (*fmt.wrapError → "wrapError", errors.New → "errorString"), which is
//     how aws-lambda-go names a Go function's error;
//   - a type without a name: Lambda.Unknown.
//
// Only the returned error itself is named, not what it wraps. Note that
// aws-lambda-go's own naming (lambda/errors.go) looks at the type name, or
// passes a messages.InvokeResponse_Error value through with its Type; it
// does not call ErrorName. A Lambda handler that must show Step Functions
// the same name as localflow does converts its error accordingly.
func ErrorName(err error) string {
	if err == nil {
		return ""
	}
	var te *TransportError
	if errors.As(err, &te) {
		return ErrorServiceException
	}
	if n, ok := err.(interface{ ErrorName() string }); ok {
		if name := n.ErrorName(); name != "" {
			return name
		}
	}
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() != "" {
		return t.Name()
	}
	return ErrorUnknown
}

// errorCause is the Cause recorded for an Invoker error: the Lambda error
// document for a function error, the message for a transport error.
func errorCause(err error, name string) string {
	if name == ErrorServiceException {
		return err.Error()
	}
	b, merr := json.Marshal(struct {
		Message string `json:"errorMessage"`
		Type    string `json:"errorType"`
	}{err.Error(), name})
	if merr != nil {
		return err.Error()
	}
	return string(b)
}

// DefinitionError is why Load refused a definition: the state (empty for a
// top-level field) and the field at fault.
type DefinitionError struct {
	State  string
	Field  string
	Reason string
}

// Error renders e.g. `state "Look": field "TimeoutSecondsPath" is not
// supported` or `state "Fan": type "Parallel" is not supported`.
func (e *DefinitionError) Error() string {
	prefix := "definition: "
	if e.State != "" {
		prefix = fmt.Sprintf("state %q: ", e.State)
	}
	switch {
	case e.Field == "" || strings.HasPrefix(e.Reason, "type "):
		return prefix + e.Reason
	case e.Reason == "is not supported":
		return fmt.Sprintf("%sfield %q %s", prefix, e.Field, e.Reason)
	default:
		return fmt.Sprintf("%sfield %q: %s", prefix, e.Field, e.Reason)
	}
}

// runtimeError is a States.Runtime error raised while processing data.
type runtimeError struct{ msg string }

func (e *runtimeError) Error() string { return e.msg }

func runtimeErrorf(format string, args ...any) error {
	return &runtimeError{msg: fmt.Sprintf(format, args...)}
}
