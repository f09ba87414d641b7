// Package ebeventstest is a fake Amazon EventBridge for tests: an HTTP
// server on 127.0.0.1 that speaks PutEvents in the AWS JSON 1.1 protocol
// the SDK uses (point the SDK at it with BaseEndpoint, or a function with
// AWS_ENDPOINT_URL_EVENTBRIDGE), keeps the entries it accepts, and fails
// the entries a test asks it to fail the way EventBridge does: HTTP 200,
// FailedEntryCount, an ErrorCode on each failed entry in request order.
// Only PutEvents is served; rules and targets are not.
package ebeventstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
)

// Entry is one PutEvents entry as the server received it.
type Entry struct {
	EventBusName string
	Source       string
	DetailType   string
	Detail       string
	// Time is the entry's time in epoch seconds (0 if none was given).
	Time float64
}

// Server is the fake.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	accepted []Entry
	calls    [][]Entry // every call's entries, accepted or not
	// failing decides, per entry of a call, whether it fails.
	failing func(call, index int, e Entry) bool
	status  int // if not 0, the next call answers this HTTP status
}

// Start starts a server for t, stopped when t ends.
func Start(t testing.TB) *Server {
	s := &Server{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the endpoint, "http://127.0.0.1:PORT".
func (s *Server) URL() string { return s.srv.URL }

// FailEntries makes the server fail the entries for which fail returns
// true (call counts PutEvents calls from 0, index is the entry's place in
// its call); nil fails none.
func (s *Server) FailEntries(fail func(call, index int, e Entry) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = fail
}

// FailNextCall makes the next call fail as a whole with the HTTP status
// (500: an InternalException).
func (s *Server) FailNextCall(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = status
}

// Accepted are the entries put so far, in order.
func (s *Server) Accepted() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Entry(nil), s.accepted...)
}

// Calls are every call's entries, in order.
func (s *Server) Calls() [][]Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]Entry(nil), s.calls...)
}

type result struct {
	EventID      string `json:"EventId,omitempty"`
	ErrorCode    string `json:"ErrorCode,omitempty"`
	ErrorMessage string `json:"ErrorMessage,omitempty"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if target := r.Header.Get("X-Amz-Target"); target != "AWSEvents.PutEvents" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"UnknownOperationException","message":"the fake serves PutEvents only, not %s"}`, target)
		return
	}
	var in struct{ Entries []Entry }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"ValidationException","message":%q}`, err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	call := len(s.calls)
	s.calls = append(s.calls, in.Entries)
	if st := s.status; st != 0 {
		s.status = 0
		w.WriteHeader(st)
		fmt.Fprint(w, `{"__type":"InternalException","message":"the fake failed the call"}`)
		return
	}
	if len(in.Entries) == 0 || len(in.Entries) > 10 {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"ValidationException","message":"%d entries: want 1 to 10"}`, len(in.Entries))
		return
	}
	out := struct {
		FailedEntryCount int
		Entries          []result
	}{}
	for i, e := range in.Entries {
		if s.failing != nil && s.failing(call, i, e) {
			out.FailedEntryCount++
			out.Entries = append(out.Entries, result{ErrorCode: "InternalFailure", ErrorMessage: "the fake failed this entry"})
			continue
		}
		s.accepted = append(s.accepted, e)
		out.Entries = append(out.Entries, result{EventID: "fake-" + strconv.Itoa(len(s.accepted))})
	}
	_ = json.NewEncoder(w).Encode(out)
}
