package ebschedule_test

// A stand-in for EventBridge Scheduler's REST-JSON API on 127.0.0.1 (there
// is no Scheduler emulator). It decodes the SDK's real requests strictly
// (unknown fields and wrong JSON types are refused), validates them as the
// API reference documents, keeps schedules per group, and answers like the
// service, including 409 ConflictException for a create of an existing
// name and 404 ResourceNotFoundException.
//
// API reference: https://docs.aws.amazon.com/scheduler/latest/APIReference/
//   CreateSchedule  POST   /schedules/Name                          API_CreateSchedule.html
//   UpdateSchedule  PUT    /schedules/Name                          API_UpdateSchedule.html
//   DeleteSchedule  DELETE /schedules/Name?clientToken=&groupName=  API_DeleteSchedule.html
//   GetSchedule     GET    /schedules/Name?groupName=               API_GetSchedule.html
//   types: API_Target.html, API_RetryPolicy.html, API_DeadLetterConfig.html, API_FlexibleTimeWindow.html
//   errors: X-Amzn-ErrorType header and {"Message": ...}, with the status codes each operation lists.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"oncepost/shared/ebschedule"
	"oncepost/shared/localcron"
)

// wireSchedule is the body of CreateSchedule and UpdateSchedule, with the
// JSON types the API reference gives (strings, numbers, objects).
type wireSchedule struct {
	ActionAfterCompletion      string              `json:",omitempty"`
	ClientToken                string              `json:",omitempty"`
	Description                string              `json:",omitempty"`
	EndDate                    *float64            `json:",omitempty"`
	FlexibleTimeWindow         *wireFlexibleWindow `json:",omitempty"`
	GroupName                  string              `json:",omitempty"`
	KmsKeyArn                  string              `json:",omitempty"`
	ScheduleExpression         string              `json:",omitempty"`
	ScheduleExpressionTimezone string              `json:",omitempty"`
	StartDate                  *float64            `json:",omitempty"`
	State                      string              `json:",omitempty"`
	Target                     *wireTarget         `json:",omitempty"`
}

type wireFlexibleWindow struct {
	MaximumWindowInMinutes *int `json:",omitempty"`
	Mode                   string
}

type wireTarget struct {
	Arn              string
	RoleArn          string
	Input            *string          `json:",omitempty"`
	DeadLetterConfig *wireDeadLetter  `json:",omitempty"`
	RetryPolicy      *wireRetryPolicy `json:",omitempty"`
}

type wireDeadLetter struct{ Arn string }

type wireRetryPolicy struct {
	MaximumEventAgeInSeconds *int `json:",omitempty"`
	MaximumRetryAttempts     *int `json:",omitempty"`
}

// call is one request the fake received.
type call struct {
	Method string
	Name   string
	Query  url.Values
	Body   *wireSchedule
}

// stored is a schedule as the fake keeps it.
type stored struct {
	wireSchedule
	Name        string
	ARN         string
	createToken string
}

// fault is an answer the fake gives instead of (or after) handling the
// next request with Method.
type fault struct {
	Method string
	Status int
	Code   string
	// Apply performs the request before answering with the error: the
	// response is "lost" after the service acted.
	Apply bool
}

type fakeScheduler struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	groups    map[string]bool
	schedules map[string]*stored // group + "/" + name
	calls     []call
	faults    []fault
}

// Patterns from the API reference.
var (
	namePattern    = regexp.MustCompile(`^[0-9a-zA-Z-_.]{1,64}$`)
	tokenPattern   = regexp.MustCompile(`^[a-zA-Z0-9-_]{1,64}$`)
	rolePattern    = regexp.MustCompile(`^arn:aws(-[a-z]+)?:iam::\d{12}:role\/[\w+=,.@\/-]+$`)
	dlqPattern     = regexp.MustCompile(`^arn:aws(-[a-z]+)?:sqs:[a-z0-9\-]+:\d{12}:[a-zA-Z0-9\-_]+$`)
	signingPattern = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=AKIDTEST/\d{8}/us-east-1/scheduler/aws4_request, SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$`)
)

func newFake(t *testing.T, groups ...string) *fakeScheduler {
	t.Helper()
	f := &fakeScheduler{t: t, groups: map[string]bool{"default": true}, schedules: map[string]*stored{}}
	for _, g := range groups {
		f.groups[g] = true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /schedules/{name}", f.create)
	mux.HandleFunc("PUT /schedules/{name}", f.update)
	mux.HandleFunc("DELETE /schedules/{name}", f.delete)
	mux.HandleFunc("GET /schedules/{name}", f.get)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
		f.fail(w, http.StatusNotFound, "UnknownOperationException", "no such operation")
	})
	f.srv = httptest.NewServer(f.checkSigned(mux))
	t.Cleanup(f.srv.Close)
	return f
}

// checkSigned refuses requests without a SigV4 signature for the
// scheduler service in us-east-1.
func (f *fakeScheduler) checkSigned(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth := r.Header.Get("Authorization"); !signingPattern.MatchString(auth) {
			f.t.Errorf("%s %s: Authorization %q is not a SigV4 signature for scheduler", r.Method, r.URL.Path, auth)
			f.fail(w, http.StatusForbidden, "UnrecognizedClientException", "bad signature")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// client returns an SDK client for the fake: static credentials,
// BaseEndpoint the server, and at most attempts attempts per call with no
// backoff.
func (f *fakeScheduler) client(attempts int) *scheduler.Client {
	return scheduler.NewFromConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRETTEST", ""),
		BaseEndpoint: aws.String(f.srv.URL),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = attempts
				o.Backoff = noBackoff{}
				o.RateLimiter = ratelimit.None
			})
		},
	})
}

type noBackoff struct{}

func (noBackoff) BackoffDelay(int, error) (time.Duration, error) { return 0, nil }

// inject queues faults, answered in order to requests with their method.
func (f *fakeScheduler) inject(fs ...fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, fs...)
}

// takeFault removes and returns the first fault for method.
func (f *fakeScheduler) takeFault(method string) (fault, bool) {
	for i, ft := range f.faults {
		if ft.Method == method {
			f.faults = append(f.faults[:i:i], f.faults[i+1:]...)
			return ft, true
		}
	}
	return fault{}, false
}

// Calls returns the requests received so far.
func (f *fakeScheduler) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// Schedule returns a stored schedule.
func (f *fakeScheduler) Schedule(group, name string) (stored, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.schedules[group+"/"+name]
	if !ok {
		return stored{}, false
	}
	return *s, true
}

// Names returns the stored schedules' group/name keys.
func (f *fakeScheduler) Names() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	for k := range f.schedules {
		out[k] = true
	}
	return out
}

// Fire plays Scheduler invoking a schedule: it returns the target's Input
// with <aws.scheduler.scheduled-time> replaced by the schedule's at()
// time, and deletes a one-time schedule whose ActionAfterCompletion is
// DELETE
// (https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-context-attributes.html).
func (f *fakeScheduler) Fire(group, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.schedules[group+"/"+name]
	if !ok {
		return "", fmt.Errorf("no schedule %s/%s", group, name)
	}
	body, ok := strings.CutPrefix(s.ScheduleExpression, "at(")
	if !ok {
		return "", fmt.Errorf("%s is not a one-time schedule", name)
	}
	scheduled := strings.TrimSuffix(body, ")") + "Z"
	in := strings.ReplaceAll(*s.Target.Input, "<aws.scheduler.scheduled-time>", scheduled)
	if s.ActionAfterCompletion == "DELETE" {
		delete(f.schedules, group+"/"+name)
	}
	return in, nil
}

func (f *fakeScheduler) fail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"Message": msg})
}

func (f *fakeScheduler) ok(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-RequestId", "req-1")
	json.NewEncoder(w).Encode(v)
}

// decode reads a create or update body strictly.
func (f *fakeScheduler) decode(w http.ResponseWriter, r *http.Request) (*wireSchedule, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		f.t.Errorf("%s %s: Content-Type %q, want application/json", r.Method, r.URL.Path, ct)
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	var body wireSchedule
	if err := dec.Decode(&body); err != nil {
		f.t.Errorf("%s %s: body does not decode as the API's types: %v", r.Method, r.URL.Path, err)
		f.fail(w, http.StatusBadRequest, "SerializationException", err.Error())
		return nil, false
	}
	return &body, true
}

// validate checks a create or update body as the API reference
// documents it; it returns a ValidationException message or "".
func validate(name string, b *wireSchedule) string {
	switch {
	case !namePattern.MatchString(name):
		return "Name must match [0-9a-zA-Z-_.]+ and be 1-64 characters"
	case b.GroupName != "" && !namePattern.MatchString(b.GroupName):
		return "GroupName must match [0-9a-zA-Z-_.]+ and be 1-64 characters"
	case b.ClientToken != "" && !tokenPattern.MatchString(b.ClientToken):
		return "ClientToken must match [a-zA-Z0-9-_]+ and be 1-64 characters"
	case len(b.Description) > 512:
		return "Description is longer than 512"
	case b.ScheduleExpression == "" || len(b.ScheduleExpression) > 256:
		return "ScheduleExpression is required, 1-256 characters"
	case len(b.ScheduleExpressionTimezone) > 50:
		return "ScheduleExpressionTimezone is longer than 50"
	case b.FlexibleTimeWindow == nil:
		return "FlexibleTimeWindow is required"
	case b.FlexibleTimeWindow.Mode == "OFF" && b.FlexibleTimeWindow.MaximumWindowInMinutes != nil:
		return "MaximumWindowInMinutes must not be set when Mode is OFF"
	case b.FlexibleTimeWindow.Mode == "FLEXIBLE" && (b.FlexibleTimeWindow.MaximumWindowInMinutes == nil || *b.FlexibleTimeWindow.MaximumWindowInMinutes < 1 || *b.FlexibleTimeWindow.MaximumWindowInMinutes > 1440):
		return "MaximumWindowInMinutes must be 1-1440 when Mode is FLEXIBLE"
	case b.FlexibleTimeWindow.Mode != "OFF" && b.FlexibleTimeWindow.Mode != "FLEXIBLE":
		return "FlexibleTimeWindow.Mode must be OFF or FLEXIBLE"
	case b.ActionAfterCompletion != "" && b.ActionAfterCompletion != "NONE" && b.ActionAfterCompletion != "DELETE":
		return "ActionAfterCompletion must be NONE or DELETE"
	case b.State != "" && b.State != "ENABLED" && b.State != "DISABLED":
		return "State must be ENABLED or DISABLED"
	case b.Target == nil:
		return "Target is required"
	case b.Target.Arn == "" || len(b.Target.Arn) > 1600:
		return "Target.Arn is required, 1-1600 characters"
	case !rolePattern.MatchString(b.Target.RoleArn):
		return "Target.RoleArn must be an IAM role ARN"
	case b.Target.DeadLetterConfig != nil && !dlqPattern.MatchString(b.Target.DeadLetterConfig.Arn):
		return "DeadLetterConfig.Arn must be an SQS queue ARN"
	}
	if rp := b.Target.RetryPolicy; rp != nil {
		if a := rp.MaximumEventAgeInSeconds; a != nil && (*a < 60 || *a > 86400) {
			return "MaximumEventAgeInSeconds must be 60-86400"
		}
		if n := rp.MaximumRetryAttempts; n != nil && (*n < 0 || *n > 185) {
			return "MaximumRetryAttempts must be 0-185"
		}
	}
	if strings.Contains(b.Target.Arn, ":lambda:") && (b.Target.Input == nil || !json.Valid([]byte(*b.Target.Input))) {
		return "Input must be well-formed JSON for a Lambda target"
	}
	zone := b.ScheduleExpressionTimezone
	if _, err := localcron.Parse(b.ScheduleExpression, zone, time.Now()); err != nil {
		return "Invalid Schedule Expression " + b.ScheduleExpression + ": " + err.Error()
	}
	return ""
}

func groupOf(g string) string {
	if g == "" {
		return "default"
	}
	return g
}

func (f *fakeScheduler) create(w http.ResponseWriter, r *http.Request) { f.write(w, r, f.createLocked) }

func (f *fakeScheduler) update(w http.ResponseWriter, r *http.Request) { f.write(w, r, f.updateLocked) }

// write is what CreateSchedule and UpdateSchedule share: decode the body,
// record the call, answer an injected fault that applies nothing, refuse
// an invalid schedule; then apply runs with f.mu held.
func (f *fakeScheduler) write(w http.ResponseWriter, r *http.Request, apply func(w http.ResponseWriter, name string, body *wireSchedule, ft fault, faulty bool)) {
	name := r.PathValue("name")
	body, ok := f.decode(w, r)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{Method: r.Method, Name: name, Query: r.URL.Query(), Body: body})
	ft, faulty := f.takeFault(r.Method)
	if faulty && !ft.Apply {
		f.fail(w, ft.Status, ft.Code, "injected")
		return
	}
	if msg := validate(name, body); msg != "" {
		f.fail(w, http.StatusBadRequest, "ValidationException", msg)
		return
	}
	apply(w, name, body, ft, faulty)
}

func (f *fakeScheduler) createLocked(w http.ResponseWriter, name string, body *wireSchedule, ft fault, faulty bool) {
	group := groupOf(body.GroupName)
	if !f.groups[group] {
		f.fail(w, http.StatusNotFound, "ResourceNotFoundException", "Schedule group "+group+" does not exist.")
		return
	}
	key := group + "/" + name
	if s, ok := f.schedules[key]; ok {
		// The same ClientToken repeats the earlier create (idempotency);
		// anything else is a conflict.
		if body.ClientToken != "" && body.ClientToken == s.createToken {
			if faulty {
				f.fail(w, ft.Status, ft.Code, "injected")
				return
			}
			f.ok(w, map[string]string{"ScheduleArn": s.ARN})
			return
		}
		f.fail(w, http.StatusConflict, "ConflictException", "Schedule "+name+" already exists.")
		return
	}
	s := &stored{wireSchedule: *body, Name: name, ARN: "arn:aws:scheduler:us-east-1:123456789012:schedule/" + key, createToken: body.ClientToken}
	s.GroupName = group
	f.schedules[key] = s
	if faulty {
		f.fail(w, ft.Status, ft.Code, "injected after the create")
		return
	}
	f.ok(w, map[string]string{"ScheduleArn": s.ARN})
}

func (f *fakeScheduler) updateLocked(w http.ResponseWriter, name string, body *wireSchedule, ft fault, faulty bool) {
	key := groupOf(body.GroupName) + "/" + name
	s, ok := f.schedules[key]
	if !ok {
		f.fail(w, http.StatusNotFound, "ResourceNotFoundException", "Schedule "+name+" does not exist.")
		return
	}
	// UpdateSchedule replaces every field.
	s.wireSchedule = *body
	s.GroupName = groupOf(body.GroupName)
	if faulty {
		f.fail(w, ft.Status, ft.Code, "injected after the update")
		return
	}
	f.ok(w, map[string]string{"ScheduleArn": s.ARN})
}

func (f *fakeScheduler) delete(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	q := r.URL.Query()
	if b, _ := readAll(r); len(b) != 0 {
		f.t.Errorf("DELETE %s: the request has a body %q; DeleteSchedule has none", name, b)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{Method: r.Method, Name: name, Query: q})
	if ft, faulty := f.takeFault(r.Method); faulty && !ft.Apply {
		f.fail(w, ft.Status, ft.Code, "injected")
		return
	}
	if tok := q.Get("clientToken"); tok != "" && !tokenPattern.MatchString(tok) {
		f.fail(w, http.StatusBadRequest, "ValidationException", "clientToken must match [a-zA-Z0-9-_]+")
		return
	}
	key := groupOf(q.Get("groupName")) + "/" + name
	if _, ok := f.schedules[key]; !ok {
		f.fail(w, http.StatusNotFound, "ResourceNotFoundException", "Schedule "+name+" does not exist.")
		return
	}
	delete(f.schedules, key)
	w.WriteHeader(http.StatusOK) // empty body
}

// get answers GetSchedule (API_GetSchedule.html): the schedule's fields,
// dates as epoch seconds.
func (f *fakeScheduler) get(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	q := r.URL.Query()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{Method: r.Method, Name: name, Query: q})
	s, ok := f.schedules[groupOf(q.Get("groupName"))+"/"+name]
	if !ok {
		f.fail(w, http.StatusNotFound, "ResourceNotFoundException", "Schedule "+name+" does not exist.")
		return
	}
	f.ok(w, map[string]any{
		"Arn": s.ARN, "Name": s.Name, "GroupName": s.GroupName, "Description": s.Description,
		"ScheduleExpression": s.ScheduleExpression, "ScheduleExpressionTimezone": s.ScheduleExpressionTimezone,
		"State": s.State, "ActionAfterCompletion": s.ActionAfterCompletion,
		"FlexibleTimeWindow": s.FlexibleTimeWindow, "Target": s.Target,
		"CreationDate": 1.7645e9, "LastModificationDate": 1.7645e9,
	})
}

func readAll(r *http.Request) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r.Body)
	return b.Bytes(), err
}

// Test configuration.
const (
	testFunction = "arn:aws:lambda:us-east-1:123456789012:function:oncepost-trigger"
	testRole     = "arn:aws:iam::123456789012:role/oncepost-scheduler"
	testDLQ      = "arn:aws:sqs:us-east-1:123456789012:oncepost-schedule-dlq"
	testGroup    = "oncepost"
)

// testNow is the clock of every test client.
var testNow = time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)

func testConfig() ebschedule.Config {
	return ebschedule.Config{
		Group: testGroup, FunctionARN: testFunction, RoleARN: testRole, DeadLetterARN: testDLQ,
		Retry: &ebschedule.RetryPolicy{MaxEventAge: 2 * time.Hour, MaxAttempts: 10},
		Now:   func() time.Time { return testNow },
	}
}

// newClient returns a client on the fake with testConfig changed by mod,
// the SDK making at most attempts attempts per call.
func newClient(t *testing.T, f *fakeScheduler, attempts int, mod func(*ebschedule.Config)) *ebschedule.Client {
	t.Helper()
	cfg := testConfig()
	if mod != nil {
		mod(&cfg)
	}
	c, err := ebschedule.New(f.client(attempts), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var bg = context.Background()
