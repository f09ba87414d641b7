package adaptertest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
)

func TestLocalServerAndClosedURL(t *testing.T) {
	srv := LocalServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		WriteJSON(w, http.StatusTeapot, map[string]string{"path": r.URL.Path})
	}))
	if host, _, _ := net.SplitHostPort(srv.Listener.Addr().String()); host != "127.0.0.1" {
		t.Errorf("server listens on %s, want 127.0.0.1", srv.Listener.Addr())
	}
	resp, err := http.Get(srv.URL + "/p")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" || string(body) != "{\"path\":\"/p\"}\n" {
		t.Errorf("answer %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}

	if _, err := http.Get(ClosedURL(t)); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("GET of ClosedURL: %v, want connection refused", err)
	}
}

func TestWriteJSONDefaultContentType(t *testing.T) {
	srv := LocalServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { WriteJSON(w, http.StatusOK, 1) }))
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type %q, want application/json", got)
	}
}

func TestOutcomeOf(t *testing.T) {
	tests := []struct {
		err            error
		want, detailed Outcome
	}{
		{nil, Outcome{Class: ClassOK}, Outcome{Class: ClassOK}},
		{fmt.Errorf("post: %w", &platform.Rejected{Status: 400, Reason: "r", Message: "m"}),
			Outcome{Class: ClassRejected, Status: 400, Reason: "r", Message: "m"},
			Outcome{Class: ClassRejected, Status: 400, Reason: "r", Message: "m"}},
		{&platform.NotPerformed{Status: 429, RetryAfter: time.Second, Message: "m"},
			Outcome{Class: ClassNotPerformed, Status: 429, RetryAfter: time.Second},
			Outcome{Class: ClassNotPerformed, Status: 429, RetryAfter: time.Second, Message: "m"}},
		{&platform.Unauthorized{Message: "m"}, Outcome{Class: ClassUnauthorized}, Outcome{Class: ClassUnauthorized, Message: "m"}},
		{&platform.Ambiguous{Status: 502, Err: errors.New("m")}, Outcome{Class: ClassAmbiguous, Status: 502}, Outcome{Class: ClassAmbiguous, Status: 502, Message: "m"}},
		{&platform.Ambiguous{}, Outcome{Class: ClassAmbiguous}, Outcome{Class: ClassAmbiguous}},
		{&platform.Inconclusive{Message: "m"}, Outcome{Class: ClassInconclusive}, Outcome{Class: ClassInconclusive, Message: "m"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, OutcomeOf(t, tt.err)); diff != "" {
			t.Errorf("OutcomeOf(%v) (-want +got):\n%s", tt.err, diff)
		}
		if diff := cmp.Diff(tt.detailed, DetailedOutcomeOf(t, tt.err)); diff != "" {
			t.Errorf("DetailedOutcomeOf(%v) (-want +got):\n%s", tt.err, diff)
		}
		if got := DetailedOutcomeOf(t, tt.err).WithoutMessage(); got.Message != "" || got.Class != tt.want.Class {
			t.Errorf("WithoutMessage = %+v", got)
		}
	}
}

// fatalRecorder notes a Fatalf and ends its goroutine, as testing does,
// without failing the test, for the cases where OutcomeOf must fail it.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestOutcomeOfWantsExactlyOneClass(t *testing.T) {
	for _, err := range []error{
		errors.New("plain"),
		errors.Join(&platform.Rejected{Status: 400}, &platform.Unauthorized{}),
	} {
		r := &fatalRecorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			OutcomeOf(r, err)
		}()
		<-done
		if !strings.Contains(r.fatal, "want exactly 1") {
			t.Errorf("OutcomeOf(%v): Fatalf %q, want the class count", err, r.fatal)
		}
	}
}

func TestErrors(t *testing.T) {
	var e Errors
	if e.Add(nil) != nil || e.Len() != 0 {
		t.Fatalf("nil was recorded")
	}
	err := fmt.Errorf("refresh: %w", &platform.Rejected{Status: 400, Reason: "tok-SECRET"})
	if e.Add(err) != err {
		t.Fatalf("Add does not return its error")
	}
	if e.Len() != 1 || len(e.Texts()) != 3 {
		t.Fatalf("Len %d, %d texts; want 1 error written three ways", e.Len(), len(e.Texts()))
	}
	e.CheckNoSecrets(t, "not-there")
	CheckErrorNoSecrets(t, err, "not-there")
	if got := leaks(e.Texts(), []string{"SECRET"}); len(got) != 3 {
		t.Errorf("leaks = %q, want the secret in all three texts", got)
	}
}
