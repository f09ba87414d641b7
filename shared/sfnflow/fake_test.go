package sfnflow

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// fakeSFN is a Step Functions endpoint on 127.0.0.1 for one Standard state
// machine. It decodes the requests the SDK really sends (AWS JSON 1.0: POST
// /, X-Amz-Target AWSStepFunctions.<Operation>, a SigV4 Authorization for
// the service "states") and answers as the API reference describes:
//
//   - StartExecution
//     https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html
//     Standard workflows are idempotent by name: the same name and input
//     while the execution runs returns the original response; a different
//     input, or an execution that has closed, is 400 ExecutionAlreadyExists.
//     Names: 1–80 characters, without white space, brackets, wildcards,
//     special characters or control characters.
//   - DescribeExecution
//     https://docs.aws.amazon.com/step-functions/latest/apireference/API_DescribeExecution.html
//     status RUNNING | SUCCEEDED | FAILED | TIMED_OUT | ABORTED |
//     PENDING_REDRIVE; no input with includedData METADATA_ONLY; an
//     unknown execution is ExecutionDoesNotExist.
//   - SendTaskSuccess
//     https://docs.aws.amazon.com/step-functions/latest/apireference/API_SendTaskSuccess.html
//     and SendTaskFailure
//     https://docs.aws.amazon.com/step-functions/latest/apireference/API_SendTaskFailure.html
//     200 with an empty body; InvalidToken for a malformed token,
//     TaskDoesNotExist for one never issued, TaskTimedOut ("the task token
//     has either expired or the task associated with the token has already
//     been closed") for a task answered before, replaced by a retry, or whose
//     execution stopped; InvalidOutput for output that is not JSON.
//   - Errors are JSON 1.0 error documents ({"__type", "message"}); common
//     errors (ThrottlingException, 5xx) per
//     https://docs.aws.amazon.com/step-functions/latest/apireference/CommonErrors.html
//
// The fake does not run the state machine: an execution stays where the
// test puts it (wait issues the Hold step's task token, stop closes it).
type fakeSFN struct {
	t       testing.TB
	srv     *httptest.Server
	region  string
	account string
	machine string

	mu     sync.Mutex
	clock  time.Time
	gone   bool // the state machine was deleted
	execs  map[string]*fakeExec
	tasks  map[string]*fakeTask
	seq    int
	faults map[string][]fault
	calls  []string
	bodies []any
}

// fakeExec is one execution as the service keeps it.
type fakeExec struct {
	Name   string
	Input  string
	Status string
	Start  time.Time
	Stop   time.Time
}

// fakeTask is one task token the service issued.
type fakeTask struct {
	Exec string
	Open bool
	// Answer is "success" or "failure" once answered; Output, Error and
	// Cause are what the answer carried.
	Answer string
	Output string
	Error  string
	Cause  string
}

// fault replaces the service's answer to the next call of one operation.
type fault struct {
	status int
	code   string
	// commit applies the call first: the answer is lost after the effect.
	commit bool
}

// Request bodies, field for field as in the API reference's request syntax.
type startExecutionRequest struct {
	StateMachineArn string `json:"stateMachineArn"`
	Name            string `json:"name,omitempty"`
	Input           string `json:"input,omitempty"`
	TraceHeader     string `json:"traceHeader,omitempty"`
}

type describeExecutionRequest struct {
	ExecutionArn string `json:"executionArn"`
	IncludedData string `json:"includedData,omitempty"`
}

type sendTaskSuccessRequest struct {
	TaskToken string `json:"taskToken"`
	Output    string `json:"output"`
}

type sendTaskFailureRequest struct {
	TaskToken string `json:"taskToken"`
	Error     string `json:"error,omitempty"`
	Cause     string `json:"cause,omitempty"`
}

// required fields per operation (the reference's "Required: Yes").
var requiredFields = map[string][]string{
	"StartExecution":    {"stateMachineArn"},
	"DescribeExecution": {"executionArn"},
	"SendTaskSuccess":   {"taskToken", "output"},
	"SendTaskFailure":   {"taskToken"},
}

func newFakeSFN(t testing.TB) *fakeSFN {
	t.Helper()
	f := &fakeSFN{
		t: t, region: "eu-west-1", account: "123456789012", machine: "oncepost-confirm",
		clock: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC),
		execs: map[string]*fakeExec{}, tasks: map[string]*fakeTask{}, faults: map[string][]fault{},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve)) // listens on 127.0.0.1
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSFN) machineARN() string {
	return fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", f.region, f.account, f.machine)
}

func (f *fakeSFN) executionARN(name string) string {
	return fmt.Sprintf("arn:aws:states:%s:%s:execution:%s:%s", f.region, f.account, f.machine, name)
}

// client is a real SDK client for the fake: static credentials (requests
// are signed), no retries unless opts set them.
func (f *fakeSFN) client(opts ...func(*sfn.Options)) *sfn.Client {
	return sfn.New(sfn.Options{
		Region:       f.region,
		BaseEndpoint: aws.String(f.srv.URL),
		HTTPClient:   f.srv.Client(),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDFAKESFN", SecretAccessKey: "fake-secret", Source: "test"}, nil
		}),
		RetryMaxAttempts: 1,
	}, opts...)
}

// adapter is the StateMachine under test, on the fake.
func (f *fakeSFN) adapter(opts ...func(*sfn.Options)) *StateMachine {
	f.t.Helper()
	m, err := New(f.client(opts...), f.machineARN())
	if err != nil {
		f.t.Fatalf("New: %v", err)
	}
	return m
}

// put stores an execution as if it had been started earlier.
func (f *fakeSFN) put(name, input, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := &fakeExec{Name: name, Input: input, Status: status, Start: f.tick()}
	if status != "RUNNING" && status != "PENDING_REDRIVE" {
		x.Stop = f.tick()
	}
	f.execs[name] = x
}

// wait moves the running execution name into a .waitForTaskToken task
// and returns its token; a task it waited in before (a Hold step retried)
// is closed.
func (f *fakeSFN) wait(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	x, ok := f.execs[name]
	if !ok || x.Status != "RUNNING" {
		f.t.Fatalf("fake: wait: execution %s is not running", name)
	}
	for _, tk := range f.tasks {
		if tk.Exec == name {
			tk.Open = false
		}
	}
	f.seq++
	token := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "fake-sfn-task|%s|%d", name, f.seq))
	f.tasks[token] = &fakeTask{Exec: name, Open: true}
	return token
}

// stop closes the execution with status (SUCCEEDED, FAILED, TIMED_OUT,
// ABORTED) and the task it waited in.
func (f *fakeSFN) stop(name, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x, ok := f.execs[name]
	if !ok {
		f.t.Fatalf("fake: stop: no execution %s", name)
	}
	x.Status, x.Stop = status, f.tick()
	for _, tk := range f.tasks {
		if tk.Exec == name {
			tk.Open = false
		}
	}
}

// fail makes the next call of op answer with flt.
func (f *fakeSFN) fail(op string, flt fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[op] = append(f.faults[op], flt)
}

func (f *fakeSFN) deleteMachine() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gone = true
}

// log returns the calls served so far, "Operation status [code]".
func (f *fakeSFN) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string{}, f.calls...)
}

// requests returns the decoded request bodies so far.
func (f *fakeSFN) requests() []any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]any{}, f.bodies...)
}

func (f *fakeSFN) execution(name string) (fakeExec, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x, ok := f.execs[name]
	if !ok {
		return fakeExec{}, false
	}
	return *x, true
}

// executions maps every execution's name to its status.
func (f *fakeSFN) executions() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for n, x := range f.execs {
		out[n] = x.Status
	}
	return out
}

func (f *fakeSFN) task(token string) fakeTask {
	f.mu.Lock()
	defer f.mu.Unlock()
	tk, ok := f.tasks[token]
	if !ok {
		f.t.Fatalf("fake: no task %q", token)
	}
	return *tk
}

func (f *fakeSFN) tick() time.Time {
	f.clock = f.clock.Add(time.Second)
	return f.clock
}

// answer is one HTTP answer.
type answer struct {
	status int
	code   string // error code; "" for success
	msg    string
	body   any
}

func success(body any) answer { return answer{status: http.StatusOK, body: body} }

func apiErr(code, format string, args ...any) answer {
	return answer{status: http.StatusBadRequest, code: code, msg: fmt.Sprintf(format, args...)}
}

// sigV4 is the Authorization header the SDK writes for Step Functions.
var sigV4 = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=AKIDFAKESFN/\d{8}/([a-z0-9-]+)/states/aws4_request, SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}$`)

func (f *fakeSFN) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	op, a := f.handle(r)
	line := fmt.Sprintf("%s %d", op, a.status)
	if a.code != "" {
		line += " " + a.code
	}
	f.calls = append(f.calls, line)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-RequestId", fmt.Sprintf("fake-%d", len(f.calls)))
	w.WriteHeader(a.status)
	switch {
	case a.code != "":
		typ := a.code
		if a.status < 500 && a.code != "ThrottlingException" {
			typ = "com.amazonaws.swf.service.v2.model#" + a.code // as the service names its modelled errors
		}
		json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": a.msg})
	case a.body != nil:
		json.NewEncoder(w).Encode(a.body)
	}
	// SendTaskSuccess/SendTaskFailure: "an HTTP 200 response with an empty HTTP body".
}

// handle checks the protocol, decodes the body and runs the operation.
func (f *fakeSFN) handle(r *http.Request) (string, answer) {
	const prefix = "AWSStepFunctions."
	target := r.Header.Get("X-Amz-Target")
	op := strings.TrimPrefix(target, prefix)
	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/":
		f.t.Errorf("fake: %s %s, want POST /", r.Method, r.URL.Path)
		return op, apiErr("UnknownOperationException", "POST / only")
	case r.Header.Get("Content-Type") != "application/x-amz-json-1.0":
		f.t.Errorf("fake: Content-Type %q, want application/x-amz-json-1.0", r.Header.Get("Content-Type"))
		return op, apiErr("ValidationException", "bad content type")
	case !strings.HasPrefix(target, prefix) || requiredFields[op] == nil:
		f.t.Errorf("fake: X-Amz-Target %q is not an operation the fake serves", target)
		return op, apiErr("UnknownOperationException", "unknown operation %s", target)
	}
	if m := sigV4.FindStringSubmatch(r.Header.Get("Authorization")); m == nil || m[1] != f.region || r.Header.Get("X-Amz-Date") == "" {
		f.t.Errorf("fake: %s: Authorization %q is not SigV4 for states in %s", op, r.Header.Get("Authorization"), f.region)
		return op, answer{status: http.StatusForbidden, code: "IncompleteSignature", msg: "bad signature"}
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return op, apiErr("SerializationException", "read body: %v", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		f.t.Errorf("fake: %s: body is not a JSON object: %s", op, raw)
		return op, apiErr("SerializationException", "body is not JSON")
	}
	for _, k := range requiredFields[op] {
		if _, ok := fields[k]; !ok {
			f.t.Errorf("fake: %s without required field %s: %s", op, k, raw)
			return op, apiErr("MissingRequiredParameter", "%s is required", k)
		}
	}
	var (
		body any
		run  func() answer
	)
	switch op {
	case "StartExecution":
		var req startExecutionRequest
		body, run = &req, func() answer { return f.startExecution(req) }
	case "DescribeExecution":
		var req describeExecutionRequest
		body, run = &req, func() answer { return f.describeExecution(req) }
	case "SendTaskSuccess":
		var req sendTaskSuccessRequest
		body, run = &req, func() answer { return f.sendTask(req.TaskToken, "success", &req.Output, "", "") }
	case "SendTaskFailure":
		var req sendTaskFailureRequest
		body, run = &req, func() answer { return f.sendTask(req.TaskToken, "failure", nil, req.Error, req.Cause) }
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(body); err != nil {
		f.t.Errorf("fake: %s: body %s does not match the reference's request syntax: %v", op, raw, err)
		return op, apiErr("SerializationException", "%v", err)
	}
	f.bodies = append(f.bodies, body)
	if q := f.faults[op]; len(q) > 0 {
		flt := q[0]
		f.faults[op] = q[1:]
		if flt.commit {
			run()
		}
		return op, answer{status: flt.status, code: flt.code, msg: "injected"}
	}
	return op, run()
}

// forbiddenInName is what StartExecution's reference says a name must not
// contain, other than white space and control characters.
var forbiddenInName = regexp.MustCompile("[<>{}\\[\\]?*\"#%\\\\^|~`$&,;:/\\s\\x00-\\x1f\\x7f-\\x9f\\x{fffe}\\x{ffff}]")

func (f *fakeSFN) startExecution(req startExecutionRequest) answer {
	switch {
	case req.StateMachineArn != f.machineARN():
		return apiErr("StateMachineDoesNotExist", "State Machine Does Not Exist: '%s'", req.StateMachineArn)
	case f.gone:
		return apiErr("StateMachineDoesNotExist", "State Machine Does Not Exist: '%s'", req.StateMachineArn)
	case req.Name == "" || utf8.RuneCountInString(req.Name) > 80 || forbiddenInName.MatchString(req.Name):
		return apiErr("InvalidName", "Invalid Name: '%s'", req.Name)
	case req.Input != "" && !json.Valid([]byte(req.Input)):
		return apiErr("InvalidExecutionInput", "Invalid Execution Input")
	}
	input := req.Input
	if input == "" {
		input = "{}"
	}
	if x, found := f.execs[req.Name]; found {
		if x.Status == "RUNNING" && x.Input == input {
			return success(f.startResponse(x)) // "the same response as the original request"
		}
		return apiErr("ExecutionAlreadyExists", "Execution Already Exists: '%s'", f.executionARN(req.Name))
	}
	x := &fakeExec{Name: req.Name, Input: input, Status: "RUNNING", Start: f.tick()}
	f.execs[req.Name] = x
	return success(f.startResponse(x))
}

func (f *fakeSFN) startResponse(x *fakeExec) map[string]any {
	return map[string]any{"executionArn": f.executionARN(x.Name), "startDate": epoch(x.Start)}
}

func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

func (f *fakeSFN) describeExecution(req describeExecutionRequest) answer {
	prefix := strings.TrimSuffix(f.executionARN("x"), "x")
	if !strings.HasPrefix(req.ExecutionArn, "arn:aws:states:") || strings.Count(req.ExecutionArn, ":") != 7 {
		return apiErr("InvalidArn", "Invalid Arn: '%s'", req.ExecutionArn)
	}
	x, found := f.execs[strings.TrimPrefix(req.ExecutionArn, prefix)]
	if !strings.HasPrefix(req.ExecutionArn, prefix) || !found {
		return apiErr("ExecutionDoesNotExist", "Execution Does Not Exist: '%s'", req.ExecutionArn)
	}
	out := map[string]any{
		"executionArn": req.ExecutionArn, "stateMachineArn": f.machineARN(), "name": x.Name,
		"status": x.Status, "startDate": epoch(x.Start),
	}
	switch req.IncludedData {
	case "", "ALL_DATA":
		out["input"], out["inputDetails"] = x.Input, map[string]bool{"included": true}
	case "METADATA_ONLY":
	default:
		return apiErr("ValidationException", "includedData %q is not ALL_DATA or METADATA_ONLY", req.IncludedData)
	}
	if !x.Stop.IsZero() {
		out["stopDate"] = epoch(x.Stop)
	}
	return success(out)
}

func (f *fakeSFN) sendTask(token, kind string, output *string, errName, cause string) answer {
	dec, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || !strings.HasPrefix(string(dec), "fake-sfn-task|") || len(token) > 2048 {
		return apiErr("InvalidToken", "Invalid Token: 'Provided task token is malformed'")
	}
	tk, found := f.tasks[token]
	switch {
	case !found:
		return apiErr("TaskDoesNotExist", "Task Does Not Exist")
	case !tk.Open || f.execs[tk.Exec].Status != "RUNNING":
		return apiErr("TaskTimedOut", "Task Timed Out: 'Provided task does not exist anymore'")
	case output != nil && (len(*output) > 262144 || !json.Valid([]byte(*output))):
		return apiErr("InvalidOutput", "Invalid Output: 'Output is not valid JSON'")
	case len(errName) > 256 || len(cause) > 32768:
		return apiErr("ValidationException", "error or cause too long")
	}
	tk.Open, tk.Answer, tk.Error, tk.Cause = false, kind, errName, cause
	if output != nil {
		tk.Output = *output
	}
	// The execution goes on (Decided, then Release/Confirm/Reject); the
	// fake leaves it running.
	return answer{status: http.StatusOK}
}
