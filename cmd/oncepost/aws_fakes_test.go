package main

// Stand-ins, on 127.0.0.1, for the AWS services that have no emulator
// here: EventBridge Scheduler (REST-JSON), Step Functions (JSON 1.0, the
// two calls the operator commands make) and CloudFormation (query
// protocol, DescribeStacks). Each decodes the SDK's real requests, answers
// as the service's API reference documents, records what it was asked,
// and fails the test on a request it does not expect.

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
)

// schedulerSchedule is what a CreateSchedule or UpdateSchedule body
// carries (API_CreateSchedule.html), as far as the tests look.
type schedulerSchedule struct {
	Name                       string `json:"-"`
	GroupName                  string
	ScheduleExpression         string
	ScheduleExpressionTimezone string
	ActionAfterCompletion      string
	State                      string
	ClientToken                string
	Description                string
	FlexibleTimeWindow         struct{ Mode string }
	Target                     struct {
		Arn, RoleArn, Input string
		DeadLetterConfig    struct{ Arn string }
		RetryPolicy         struct{ MaximumEventAgeInSeconds, MaximumRetryAttempts int }
	}
}

// fakeScheduler is EventBridge Scheduler's schedule calls for one group.
type fakeScheduler struct {
	t     *testing.T
	url   string
	group string

	mu        sync.Mutex
	schedules map[string]schedulerSchedule // by name
	ops       []string                     // "POST name", "PUT name", "DELETE name"
}

func newFakeScheduler(t *testing.T, group string) *fakeScheduler {
	f := &fakeScheduler{t: t, group: group, schedules: map[string]schedulerSchedule{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /schedules/{name}", func(w http.ResponseWriter, r *http.Request) { f.write(w, r, true) })
	mux.HandleFunc("PUT /schedules/{name}", func(w http.ResponseWriter, r *http.Request) { f.write(w, r, false) })
	mux.HandleFunc("DELETE /schedules/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		f.record("DELETE " + name)
		f.mu.Lock()
		_, ok := f.schedules[name]
		delete(f.schedules, name)
		f.mu.Unlock()
		if !ok {
			f.fail(w, http.StatusNotFound, "ResourceNotFoundException", "Schedule "+name+" does not exist.")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("scheduler fake: unexpected request %s %s", r.Method, r.URL)
		f.fail(w, http.StatusNotFound, "UnknownOperationException", "no such operation")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *fakeScheduler) record(op string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops = append(f.ops, op)
}

func (f *fakeScheduler) fail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"Message": msg})
}

// write is CreateSchedule (create: 409 ConflictException for a name that
// exists) or UpdateSchedule (404 for one that does not).
func (f *fakeScheduler) write(w http.ResponseWriter, r *http.Request, create bool) {
	name := r.PathValue("name")
	op := "PUT "
	if create {
		op = "POST "
	}
	f.record(op + name)
	var s schedulerSchedule
	if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
		f.t.Errorf("scheduler fake: %s%s: body: %v", op, name, err)
		f.fail(w, http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	s.Name = name
	if s.GroupName != f.group {
		f.fail(w, http.StatusNotFound, "ResourceNotFoundException", "Schedule group "+s.GroupName+" does not exist.")
		return
	}
	f.mu.Lock()
	_, exists := f.schedules[name]
	switch {
	case create && exists:
		f.mu.Unlock()
		f.fail(w, http.StatusConflict, "ConflictException", "Schedule "+name+" already exists.")
		return
	case !create && !exists:
		f.mu.Unlock()
		f.fail(w, http.StatusNotFound, "ResourceNotFoundException", "Schedule "+name+" does not exist.")
		return
	}
	f.schedules[name] = s
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"ScheduleArn": "arn:aws:scheduler:us-east-1:000000000000:schedule/" + f.group + "/" + name})
}

// names lists the schedules that exist, sorted.
func (f *fakeScheduler) names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []string{}
	for n := range f.schedules {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (f *fakeScheduler) get(name string) (schedulerSchedule, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.schedules[name]
	return s, ok
}

// writes lists the methods of the calls made for the named schedule
// (POST create, PUT update, DELETE).
func (f *fakeScheduler) writes(name string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, op := range f.ops {
		if method, n, _ := strings.Cut(op, " "); n == name {
			out = append(out, method)
		}
	}
	return out
}

// deletes lists the DeleteSchedule calls made.
func (f *fakeScheduler) deletes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, op := range f.ops {
		if strings.HasPrefix(op, "DELETE ") {
			out = append(out, op)
		}
	}
	return out
}

// sfnEvent is one history event the Step Functions fake serves.
type sfnEvent struct {
	Type  string // e.g. TaskStateEntered
	State string // the state's name
}

// fakeStepFunctions answers SendTaskSuccess for the tokens it knows and
// GetExecutionHistory for the executions it knows; anything else fails
// the test.
type fakeStepFunctions struct {
	t   *testing.T
	url string

	mu         sync.Mutex
	waiting    map[string]bool       // task tokens a task waits on
	executions map[string][]sfnEvent // by execution ARN
	successes  map[string]string     // token → output sent
}

func newFakeStepFunctions(t *testing.T) *fakeStepFunctions {
	f := &fakeStepFunctions{t: t, waiting: map[string]bool{}, executions: map[string][]sfnEvent{}, successes: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *fakeStepFunctions) fail(w http.ResponseWriter, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}

func (f *fakeStepFunctions) serve(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); r.Method != http.MethodPost || ct != "application/x-amz-json-1.0" {
		f.t.Errorf("step functions fake: %s with Content-Type %q", r.Method, ct)
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.t.Errorf("step functions fake: body: %v", err)
	}
	str := func(k string) string { s, _ := body[k].(string); return s }
	f.mu.Lock()
	defer f.mu.Unlock()
	switch target := r.Header.Get("X-Amz-Target"); target {
	case "AWSStepFunctions.SendTaskSuccess":
		token := str("taskToken")
		if !f.waiting[token] {
			f.fail(w, "TaskDoesNotExist", "Task does not exist anymore")
			return
		}
		delete(f.waiting, token)
		f.successes[token] = str("output")
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		io.WriteString(w, "{}")
	case "AWSStepFunctions.GetExecutionHistory":
		events, ok := f.executions[str("executionArn")]
		if !ok {
			f.fail(w, "ExecutionDoesNotExist", "Execution Does Not Exist: '"+str("executionArn")+"'")
			return
		}
		type detail struct {
			Name string `json:"name"`
		}
		type event struct {
			ID        int     `json:"id"`
			Timestamp float64 `json:"timestamp"`
			Type      string  `json:"type"`
			Entered   *detail `json:"stateEnteredEventDetails,omitempty"`
		}
		out := struct {
			Events []event `json:"events"`
		}{Events: []event{}}
		for i, ev := range events {
			e := event{ID: i + 1, Timestamp: 1.7e9 + float64(i), Type: ev.Type}
			if strings.HasSuffix(ev.Type, "StateEntered") {
				e.Entered = &detail{Name: ev.State}
			}
			out.Events = append(out.Events, e)
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		json.NewEncoder(w).Encode(out)
	default:
		f.t.Errorf("step functions fake: unexpected call %q", target)
		f.fail(w, "UnknownOperationException", target)
	}
}

// fakeCloudFormation answers DescribeStacks for the stacks it holds.
type fakeCloudFormation struct {
	t      *testing.T
	url    string
	stacks map[string]stackOutputs
}

func newFakeCloudFormation(t *testing.T, stacks map[string]stackOutputs) *fakeCloudFormation {
	f := &fakeCloudFormation{t: t, stacks: stacks}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *fakeCloudFormation) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost || r.PostForm.Get("Action") != "DescribeStacks" || r.PostForm.Get("Version") != "2010-05-15" {
		f.t.Errorf("cloudformation fake: unexpected request %s %v (%v)", r.Method, r.PostForm, err)
	}
	name := r.PostForm.Get("StackName")
	w.Header().Set("Content-Type", "text/xml")
	outs, ok := f.stacks[name]
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><Error><Type>Sender</Type><Code>ValidationError</Code><Message>Stack with id %s does not exist</Message></Error><RequestId>fake-1</RequestId></ErrorResponse>`, html.EscapeString(name))
		return
	}
	var members strings.Builder
	keys := make([]string, 0, len(outs))
	for k := range outs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		members.WriteString("<member><OutputKey>")
		xml.EscapeText(&members, []byte(k))
		members.WriteString("</OutputKey><OutputValue>")
		xml.EscapeText(&members, []byte(outs[k]))
		members.WriteString("</OutputValue></member>")
	}
	fmt.Fprintf(w, `<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><DescribeStacksResult><Stacks><member>`+
		`<StackName>%s</StackName><StackId>arn:aws:cloudformation:us-east-1:000000000000:stack/%s/1</StackId><StackStatus>CREATE_COMPLETE</StackStatus>`+
		`<CreationTime>2026-01-01T00:00:00Z</CreationTime><Outputs>%s</Outputs></member></Stacks></DescribeStacksResult>`+
		`<ResponseMetadata><RequestId>fake-2</RequestId></ResponseMetadata></DescribeStacksResponse>`, html.EscapeString(name), html.EscapeString(name), members.String())
}
