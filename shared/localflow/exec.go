package localflow

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Execution statuses.
const (
	StatusRunning   = "RUNNING"
	StatusSucceeded = "SUCCEEDED"
	StatusFailed    = "FAILED"
)

// Phases of a running execution within its current state.
const (
	// phaseEnter: the state was just entered; due now.
	phaseEnter = "enter"
	// phaseWait: a Wait state waits until due.
	phaseWait = "wait"
	// phaseRetry: a Task waits until due to be attempted again.
	phaseRetry = "retry"
	// phaseInvoke: an engine (owner) is invoking the Task; due is when its
	// claim expires and another engine may invoke it again.
	phaseInvoke = "invoke"
	// phaseCallback: a .waitForTaskToken Task was invoked and waits for
	// SendTaskSuccess/SendTaskFailure with token; never due.
	phaseCallback = "callback"
)

// claimLease is how long an engine owns a Task invocation before another
// engine sharing the file may invoke it again (Lambda's maximum timeout).
const claimLease = 15 * time.Minute

// maxRetryDelay bounds a computed retry delay.
const maxRetryDelay = 366 * 24 * time.Hour

// execution is the persisted state of one execution.
type execution struct {
	name    string
	machine string
	input   []byte
	status  string
	state   string
	// data is the current state's raw input.
	data    any
	phase   string
	retries []int
	due     time.Time
	token   string
	owner   string
	output  []byte
	errName string
	cause   string

	startedAt, enteredAt, stoppedAt time.Time

	version    int64
	historyLen int
	// newHistory lists states entered since the last write.
	newHistory []string
}

// invocation is a Task invocation prepared by step, run outside any
// transaction.
type invocation struct {
	state    string
	function string
	payload  []byte
	callback bool
	// version is the execution's version once the claim was written; the
	// outcome is recorded only if it is unchanged.
	version int64
}

// step advances x by one step at now. Pass, Choice, Wait, Succeed and Fail
// steps complete here; for a Task it writes the claim into x and returns
// the invocation to run. Data errors fail the execution (States.Runtime);
// the returned error is for internal failures only.
func (x *execution) step(m *Machine, now time.Time, owner string) (*invocation, error) {
	st := m.states[x.state]
	if st == nil {
		x.fail(ErrorRuntime, fmt.Sprintf("state %q is not in the state machine", x.state), now)
		return nil, nil
	}
	eff, err := applyInputPath(st.inputPath, x.data)
	if err != nil {
		x.runtimeFail(st, err, now)
		return nil, nil
	}
	switch st.typ {
	case "Pass":
		result := eff
		if st.parameters != nil {
			if result, err = st.parameters.eval(x.env(st, eff)); err != nil {
				x.runtimeFail(st, err, now)
				return nil, nil
			}
		}
		if st.hasResult {
			result = st.result
		}
		x.complete(st, result, now)
	case "Choice":
		next := st.deflt
		for _, r := range st.choices {
			ok, err := r.match(x.env(st, eff))
			if err != nil {
				x.runtimeFail(st, err, now)
				return nil, nil
			}
			if ok {
				next = r.next
				break
			}
		}
		if next == "" {
			x.fail(ErrorNoChoiceMatched, fmt.Sprintf("state %q: no choice rule matched and there is no Default", st.name), now)
			return nil, nil
		}
		out, err := applyOutputPath(st.outputPath, eff)
		if err != nil {
			x.runtimeFail(st, err, now)
			return nil, nil
		}
		x.goTo(next, out, now)
	case "Wait":
		if x.phase == phaseEnter {
			until, err := st.waitUntil(eff, now)
			if err != nil {
				x.runtimeFail(st, err, now)
				return nil, nil
			}
			x.phase, x.due = phaseWait, until
			return nil, nil
		}
		out, err := applyOutputPath(st.outputPath, eff)
		if err != nil {
			x.runtimeFail(st, err, now)
			return nil, nil
		}
		x.transition(st, out, now)
	case "Succeed":
		out, err := applyOutputPath(st.outputPath, eff)
		if err != nil {
			x.runtimeFail(st, err, now)
			return nil, nil
		}
		x.succeed(out, now)
	case "Fail":
		name, err := failField(st.errorName, st.errorPath, x.env(st, x.data))
		if err != nil {
			x.runtimeFail(st, err, now)
			return nil, nil
		}
		cause, err := failField(st.cause, st.causePath, x.env(st, x.data))
		if err != nil {
			x.runtimeFail(st, err, now)
			return nil, nil
		}
		x.fail(name, cause, now)
	case "Task":
		return x.prepareTask(st, eff, now, owner)
	default:
		return nil, fmt.Errorf("state %q: type %q has no step", st.name, st.typ)
	}
	return nil, nil
}

// prepareTask builds the Task's payload and claims the invocation for
// owner. A claim that expired (phaseInvoke) is a replay: a callback task
// keeps its token, so the function's copy stays valid.
func (x *execution) prepareTask(st *state, eff any, now time.Time, owner string) (*invocation, error) {
	if st.callback && (x.phase != phaseInvoke || x.token == "") {
		tok, err := newToken()
		if err != nil {
			return nil, err
		}
		x.token = tok
	} else if !st.callback {
		x.token = ""
	}
	params, err := st.parameters.eval(x.env(st, eff))
	if err != nil {
		x.runtimeFail(st, err, now)
		return nil, nil
	}
	fn, ok := params["FunctionName"].(string)
	if !ok || fn == "" {
		x.runtimeFail(st, errors.New("Parameters.FunctionName is not a non-empty string"), now)
		return nil, nil
	}
	payload := params["Payload"]
	if _, ok := params["Payload"]; !ok {
		payload = map[string]any{}
	}
	body, err := encodeJSON(payload)
	if err != nil {
		return nil, fmt.Errorf("encode payload: %w", err)
	}
	x.phase, x.owner, x.due = phaseInvoke, owner, now.Add(claimLease)
	return &invocation{state: st.name, function: fn, payload: body, callback: st.callback}, nil
}

// taskSucceeded applies a Task's result: ResultSelector, ResultPath,
// OutputPath, then the transition.
func (x *execution) taskSucceeded(st *state, result any, now time.Time) {
	if st.resultSelector != nil {
		var err error
		if result, err = st.resultSelector.eval(x.env(st, result)); err != nil {
			x.runtimeFail(st, err, now)
			return
		}
	}
	x.complete(st, result, now)
}

// taskFailed handles a Task error: the first retrier whose ErrorEquals
// matches decides (retry after its delay unless it is exhausted), then the
// first matching catcher, else the execution fails with the error.
func (x *execution) taskFailed(st *state, name, cause string, now time.Time) {
	if len(x.retries) != len(st.retry) {
		x.retries = make([]int, len(st.retry))
	}
	for i, r := range st.retry {
		if !errorMatches(r.errorEquals, name) {
			continue
		}
		if x.retries[i] < r.maxAttempts {
			x.retries[i]++
			x.phase, x.due, x.owner, x.token = phaseRetry, now.Add(r.delay(x.retries[i])), "", ""
			return
		}
		break
	}
	for _, c := range st.catch {
		if !errorMatches(c.errorEquals, name) {
			continue
		}
		out, err := applyResultPath(c.resultPath, x.data, map[string]any{"Error": name, "Cause": cause})
		if err != nil {
			x.runtimeFail(st, err, now)
			return
		}
		x.goTo(c.next, out, now)
		return
	}
	x.fail(name, cause, now)
}

// errorMatches reports whether an ErrorEquals list matches the error name.
// States.ALL matches everything but States.Runtime; States.TaskFailed
// matches every task error but States.Timeout (and States.Runtime).
func errorMatches(list []string, name string) bool {
	for _, e := range list {
		switch {
		case e == name:
			return true
		case e == errorAll && name != ErrorRuntime:
			return true
		case e == errorTaskFailed && name != errorTimeout && name != ErrorRuntime:
			return true
		}
	}
	return false
}

// delay is the wait before retry number n (1-based).
func (r retrier) delay(n int) time.Duration {
	s := r.interval * math.Pow(r.backoff, float64(n-1))
	if r.maxDelay > 0 && s > r.maxDelay {
		s = r.maxDelay
	}
	if s > maxRetryDelay.Seconds() || math.IsInf(s, 0) || math.IsNaN(s) {
		return maxRetryDelay
	}
	return time.Duration(s * float64(time.Second))
}

// complete applies ResultPath and OutputPath to a state's result and
// moves on.
func (x *execution) complete(st *state, result any, now time.Time) {
	out, err := applyResultPath(st.resultPath, x.data, result)
	if err == nil {
		out, err = applyOutputPath(st.outputPath, out)
	}
	if err != nil {
		x.runtimeFail(st, err, now)
		return
	}
	x.transition(st, out, now)
}

// transition follows Next, or ends the execution successfully on End.
func (x *execution) transition(st *state, out any, now time.Time) {
	if st.end {
		x.succeed(out, now)
		return
	}
	x.goTo(st.next, out, now)
}

// goTo enters state next with input data.
func (x *execution) goTo(next string, data any, now time.Time) {
	x.state, x.data, x.phase = next, data, phaseEnter
	x.retries, x.token, x.owner = nil, "", ""
	x.due, x.enteredAt = now, now
	x.newHistory = append(x.newHistory, next)
}

func (x *execution) succeed(out any, now time.Time) {
	b, err := encodeJSON(out)
	if err != nil {
		x.fail(ErrorRuntime, fmt.Sprintf("encode output: %v", err), now)
		return
	}
	x.stop(StatusSucceeded, now)
	x.output = b
}

func (x *execution) fail(name, cause string, now time.Time) {
	x.stop(StatusFailed, now)
	x.errName, x.cause = name, cause
}

func (x *execution) stop(status string, now time.Time) {
	x.status, x.stoppedAt = status, now
	x.due, x.token, x.owner, x.phase = time.Time{}, "", "", ""
}

// runtimeFail fails the execution with States.Runtime for a data error.
func (x *execution) runtimeFail(st *state, err error, now time.Time) {
	x.fail(ErrorRuntime, fmt.Sprintf("state %q: %v", st.name, err), now)
}

// env is what st's templates and rules read: data, and the context object.
func (x *execution) env(st *state, data any) *evalEnv {
	return &evalEnv{data: data, context: func() any { return x.contextObject(st) }}
}

// contextObject is the context object (`$$`) for state st.
func (x *execution) contextObject(st *state) any {
	input, err := decodeJSON(x.input)
	if err != nil {
		input = nil
	}
	retries := 0
	for _, n := range x.retries {
		retries += n
	}
	c := map[string]any{
		"Execution": map[string]any{
			"Id":        "localflow:execution:" + x.name,
			"Name":      x.name,
			"Input":     input,
			"StartTime": x.startedAt.UTC().Format(contextTimeLayout),
		},
		"State": map[string]any{
			"Name":        st.name,
			"EnteredTime": x.enteredAt.UTC().Format(contextTimeLayout),
			"RetryCount":  json.Number(strconv.Itoa(retries)),
		},
	}
	if st.callback && x.token != "" {
		c["Task"] = map[string]any{"Token": x.token}
	}
	return c
}

// contextTimeLayout is how the context object renders times (like Step
// Functions: RFC 3339, UTC, milliseconds).
const contextTimeLayout = "2006-01-02T15:04:05.000Z"

// waitUntil is when a Wait state entered at now ends.
func (st *state) waitUntil(eff any, now time.Time) (time.Time, error) {
	switch {
	case st.seconds != nil:
		return now.Add(time.Duration(*st.seconds) * time.Second), nil
	case st.timestamp != nil:
		return *st.timestamp, nil
	case st.secondsPath != nil:
		v, err := st.secondsPath.get(eff)
		if err != nil {
			return time.Time{}, fmt.Errorf("SecondsPath %q could not be found in the input", st.secondsPath.src)
		}
		n, ok := intValue(v)
		if !ok || n < 0 || n > 99999999 {
			return time.Time{}, fmt.Errorf("SecondsPath %q: %v is not an integer from 0 to 99999999", st.secondsPath.src, v)
		}
		return now.Add(time.Duration(n) * time.Second), nil
	default:
		v, err := st.timestampPath.get(eff)
		if err != nil {
			return time.Time{}, fmt.Errorf("TimestampPath %q could not be found in the input", st.timestampPath.src)
		}
		s, ok := v.(string)
		if !ok {
			return time.Time{}, fmt.Errorf("TimestampPath %q: %v is not a timestamp string", st.timestampPath.src, v)
		}
		return parseTimestamp(s)
	}
}

// failField is a Fail state's Error or Cause: the literal, or its path or
// intrinsic evaluated on the state's input (it must give a string).
func failField(lit string, e expr, env *evalEnv) (string, error) {
	if e == nil {
		return lit, nil
	}
	v, err := e.eval(env)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("ErrorPath/CausePath must give a string, got %v", v)
	}
	return s, nil
}

func applyInputPath(p optPath, data any) (any, error) {
	if p.null {
		return map[string]any{}, nil
	}
	v, err := p.p.get(data)
	if err != nil {
		return nil, fmt.Errorf("InputPath %q could not be found in the input", p.p.src)
	}
	return v, nil
}

func applyOutputPath(p optPath, data any) (any, error) {
	if p.null {
		return map[string]any{}, nil
	}
	v, err := p.p.get(data)
	if err != nil {
		return nil, fmt.Errorf("OutputPath %q could not be found in the output", p.p.src)
	}
	return v, nil
}

func applyResultPath(p optPath, raw, result any) (any, error) {
	if p.null {
		return raw, nil
	}
	return p.p.set(raw, result)
}

// lambdaEnvelope is what arn:aws:states:::lambda:invoke returns for a
// function's response payload.
func lambdaEnvelope(payload any) any {
	return map[string]any{
		"ExecutedVersion": "$LATEST",
		"Payload":         payload,
		"StatusCode":      json.Number("200"),
	}
}

// newToken returns a fresh task token.
func newToken() (string, error) {
	b := make([]byte, 48)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("task token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
