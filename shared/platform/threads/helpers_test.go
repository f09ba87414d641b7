package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"oncepost/shared/platform"
)

// newServer starts an httptest server on 127.0.0.1.
func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// newClient returns a client for baseURL acting as fakeUserID with
// fakeToken, with its own transport (no keep-alive shared between tests),
// a fixed clock and fast read backoff.
func newClient(t *testing.T, baseURL string, edit ...func(*Config)) *Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cfg := Config{
		BaseURL:    baseURL,
		UserID:     fakeUserID,
		Credential: platform.Credential{AccessToken: fakeToken},
		HTTPClient: &http.Client{Transport: tr},
	}
	for _, e := range edit {
		e(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.now = func() time.Time { return fixedNow }
	c.hc.Now = c.now
	c.hc.ReadBackoff = time.Millisecond
	return c
}

// fakeClient starts a fake Threads API and a client for it.
func fakeClient(t *testing.T) (*fakeThreads, *Client) {
	t.Helper()
	f := newFake(t)
	srv := newServer(t, f)
	return f, newClient(t, srv.URL)
}

// outcome is an error reduced to its failure class and fields, for cmp.
type outcome struct {
	Class      string
	Status     int
	Reason     string
	RetryAfter time.Duration
}

// outcomeOf classifies err into exactly one class and records it for the
// token-leak check.
func outcomeOf(t *testing.T, err error) outcome {
	t.Helper()
	recordErr(err)
	if err == nil {
		return outcome{Class: "ok"}
	}
	var (
		rej *platform.Rejected
		np  *platform.NotPerformed
		un  *platform.Unauthorized
		amb *platform.Ambiguous
		inc *platform.Inconclusive
	)
	var got []outcome
	if errors.As(err, &rej) {
		got = append(got, outcome{Class: "rejected", Status: rej.Status, Reason: rej.Reason})
	}
	if errors.As(err, &np) {
		got = append(got, outcome{Class: "not_performed", Status: np.Status, RetryAfter: np.RetryAfter})
	}
	if errors.As(err, &un) {
		got = append(got, outcome{Class: "unauthorized"})
	}
	if errors.As(err, &amb) {
		got = append(got, outcome{Class: "ambiguous", Status: amb.Status})
	}
	if errors.As(err, &inc) {
		got = append(got, outcome{Class: "inconclusive"})
	}
	if len(got) != 1 {
		t.Fatalf("error %q matches %d failure classes, want exactly 1: %+v", err, len(got), got)
	}
	return got[0]
}

// seenErrors collects every error the tests classified, for
// TestNoTokenInErrors.
var seenErrors struct {
	sync.Mutex
	list []string
}

func recordErr(err error) {
	if err == nil {
		return
	}
	seenErrors.Lock()
	defer seenErrors.Unlock()
	seenErrors.list = append(seenErrors.list, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		panic(fmt.Sprintf("encode: %v", err))
	}
}

// hijackClose takes the connection from the server and closes it without
// an answer, as a crashed server would.
func hijackClose(t *testing.T, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	conn.Close()
}

// blockUntilGone waits until the client gives up on the request (its
// deadline closes the connection) or the test ends.
func blockUntilGone(t *testing.T, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-t.Context().Done():
	}
}

// refusedURL is the address of a listener that has been closed again, so
// connecting to it is refused.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// shortCtx is a context that ends after d.
func shortCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
