package httpcall_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"oncepost/shared/platform/adaptertest"
	"oncepost/shared/platform/httpcall"
)

// fixedNow is the clock of every test client.
var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// op is the operation name every test call passes.
const op = "send message"

// connWatch counts the connections a server accepted and reports each one
// it closed.
type connWatch struct {
	accepted atomic.Int32
	closed   chan struct{}
}

func newConnWatch() *connWatch { return &connWatch{closed: make(chan struct{}, 64)} }

// waitClosed waits until the server has closed n connections.
func (w *connWatch) waitClosed(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-w.closed:
		case <-time.After(5 * time.Second):
			t.Fatal("the server never closed the connection")
		}
	}
}

// newServer starts an httptest server on 127.0.0.1 and counts the TCP
// connections it accepts in conns (when not nil).
func newServer(t *testing.T, h http.Handler, conns *atomic.Int32) *httptest.Server {
	t.Helper()
	return newWatchedServer(t, h, conns, nil)
}

// newWatchedServer is newServer, reporting connections to watch too (when
// not nil).
func newWatchedServer(t *testing.T, h http.Handler, conns *atomic.Int32, watch *connWatch) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close() // the one httptest opened, replaced by ours
	srv.Listener = adaptertest.LocalListener(t)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch {
		case s == http.StateNew && conns != nil:
			conns.Add(1)
		case s == http.StateNew && watch != nil:
			watch.accepted.Add(1)
		case s == http.StateClosed && watch != nil:
			watch.closed <- struct{}{}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// newClient returns a Client with its own transport (tests do not share
// keep-alive connections), the fixed clock and a 1 ms read backoff.
func newClient(t *testing.T, edit ...func(*httpcall.Client)) *httpcall.Client {
	t.Helper()
	return newClientWith(t, &http.Transport{}, edit...)
}

func newClientWith(t *testing.T, tr *http.Transport, edit ...func(*httpcall.Client)) *httpcall.Client {
	t.Helper()
	t.Cleanup(tr.CloseIdleConnections)
	c := httpcall.New(&http.Client{Transport: tr})
	c.Now = func() time.Time { return fixedNow }
	c.ReadBackoff = time.Millisecond
	for _, e := range edit {
		e(c)
	}
	return c
}

// withHooks installs platform hooks in the style of the adapters: Describe
// reads the "error" field of a JSON body; RetryAfter reads an
// X-Rate-Limit-Reset header holding Unix seconds (X's convention), relative
// to the clock the client passes in.
func withHooks(c *httpcall.Client) {
	c.Describe = func(resp *httpcall.Response) string {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(resp.Body, &e) != nil {
			return ""
		}
		return e.Error
	}
	c.RetryAfter = func(resp *httpcall.Response, now time.Time) time.Duration {
		n, err := strconv.ParseInt(resp.Header.Get("X-Rate-Limit-Reset"), 10, 64)
		if err != nil {
			return 0
		}
		return time.Unix(n, 0).Sub(now)
	}
}

// outcome is an error reduced to its failure class and fields, for cmp.
// Message is Rejected.Message, NotPerformed.Message, Unauthorized.Message
// or Ambiguous.Err.Error(): this layer writes them all.
type outcome = adaptertest.Outcome

const (
	classOK           = adaptertest.ClassOK
	classRejected     = adaptertest.ClassRejected
	classNotPerformed = adaptertest.ClassNotPerformed
	classUnauthorized = adaptertest.ClassUnauthorized
	classAmbiguous    = adaptertest.ClassAmbiguous
)

// outcomeOf classifies err; it fails the test unless err is nil or matches
// exactly one of the platform error types.
var outcomeOf = adaptertest.DetailedOutcomeOf

// classOf is outcomeOf reduced to the class and status, for transport
// errors whose messages carry addresses and ports.
func classOf(t *testing.T, err error) outcome {
	t.Helper()
	o := outcomeOf(t, err)
	return outcome{Class: o.Class, Status: o.Status}
}

// errorStrings returns the Error text of err and of every error it wraps.
func errorStrings(err error) []string {
	if err == nil {
		return nil
	}
	out := []string{err.Error()}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		out = append(out, errorStrings(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, errorStrings(e)...)
		}
	}
	return out
}

// holdServer reads each request in full, reports it on read and then holds
// the answer until the client goes away or the test ends.
func holdServer(t *testing.T, n *atomic.Int32) (srv *httptest.Server, read <-chan struct{}) {
	t.Helper()
	release := make(chan struct{})
	got := make(chan struct{}, 16)
	srv = newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n.Add(1)
		got <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}), nil)
	t.Cleanup(func() { close(release) })
	return srv, got
}

// record is one request as a server saw it.
type record struct {
	Method        string
	Path          string
	RawQuery      string
	ContentLength int64
	RemoteAddr    string
	Body          string
	Header        http.Header
}

// recorder keeps the requests a handler saw.
type recorder struct {
	mu   sync.Mutex
	reqs []record
}

// add reads r's body in full and records it.
func (rc *recorder) add(r *http.Request) record {
	body, _ := io.ReadAll(r.Body)
	rec := record{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, ContentLength: r.ContentLength, RemoteAddr: r.RemoteAddr, Body: string(body), Header: r.Header.Clone()}
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, rec)
	rc.mu.Unlock()
	return rec
}

func (rc *recorder) all() []record {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]record(nil), rc.reqs...)
}

// failingConn passes the first allow bytes written to it through to the
// real connection and fails every write after that, as a connection reset
// by the peer before the request left the client would.
type failingConn struct {
	net.Conn
	mu    sync.Mutex
	allow int
}

func (c *failingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	if c.allow > 0 {
		k := min(c.allow, len(p))
		var err error
		n, err = c.Conn.Write(p[:k])
		c.allow -= n
		if err != nil || n == len(p) {
			return n, err
		}
	}
	return n, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("write", syscall.ECONNRESET)}
}

// failingTransport dials for real and wraps each connection in a
// failingConn that lets allow bytes through. It counts its dials in dials
// (when not nil).
func failingTransport(allow int, dials *atomic.Int32) *http.Transport {
	return &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if dials != nil {
			dials.Add(1)
		}
		return &failingConn{Conn: conn, allow: allow}, nil
	}}
}
