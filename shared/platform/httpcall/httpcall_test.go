package httpcall_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform/adaptertest"
	"oncepost/shared/platform/httpcall"
)

func rejected(status int, msg string) outcome {
	return outcome{Class: classRejected, Status: status, Reason: fmt.Sprintf("http_%d", status), Message: op + ": " + msg}
}

func notPerformed(status int, retryAfter time.Duration, msg string) outcome {
	return outcome{Class: classNotPerformed, Status: status, RetryAfter: retryAfter, Message: op + ": " + msg}
}

func unauthorized(msg string) outcome {
	return outcome{Class: classUnauthorized, Message: op + ": " + msg}
}

func ambiguous(status int, msg string) outcome {
	return outcome{Class: classAmbiguous, Status: status, Message: op + ": " + msg}
}

const redirectMsg = "unexpected redirect; check the account's base URL"

// unix is the X-Rate-Limit-Reset value d after the test clock.
func unix(d time.Duration) string { return strconv.FormatInt(fixedNow.Add(d).Unix(), 10) }

// classifyCase is one answer and its meaning for a write and for a read.
type classifyCase struct {
	name   string
	hooks  bool // the client has Describe and RetryAfter hooks (withHooks)
	status int
	header http.Header
	body   string
	write  outcome
	read   outcome
	// reads is how many requests Read sends for this answer before it
	// returns (1 when it is not retried or the server asks for more than
	// 2 s; 4 when it is retried to the end); 0 skips the Read check
	// (redirects, which reads follow: see TestRedirects).
	reads int
}

var classifyCases = []classifyCase{
	{
		name: "401", status: 401,
		write: unauthorized("unauthorized"), read: unauthorized("unauthorized"), reads: 1,
	},
	{
		name: "401 described by the platform hook", hooks: true, status: 401, body: `{"error":"token revoked"}`,
		write: unauthorized("token revoked"), read: unauthorized("token revoked"), reads: 1,
	},
	{
		name: "403", status: 403,
		write: rejected(403, "forbidden"), read: rejected(403, "forbidden"), reads: 1,
	},
	{
		name: "404 described by the platform hook", hooks: true, status: 404, body: `{"error":"chat not found"}`,
		write: rejected(404, "chat not found"), read: rejected(404, "chat not found"), reads: 1,
	},
	{
		name: "404 hook returns nothing: status text", hooks: true, status: 404, body: `<html>nginx</html>`,
		write: rejected(404, "not found"), read: rejected(404, "not found"), reads: 1,
	},
	{
		name: "408", status: 408,
		write: notPerformed(408, 0, "request timeout"), read: notPerformed(408, 0, "request timeout"), reads: 4,
	},
	{
		name: "409", status: 409,
		write: rejected(409, "conflict"), read: rejected(409, "conflict"), reads: 1,
	},
	{
		name: "422 without hook: status text", status: 422, body: `{"error":"text is too long"}`,
		write: rejected(422, "unprocessable entity"), read: rejected(422, "unprocessable entity"), reads: 1,
	},
	{
		name: "422 described by the platform hook", hooks: true, status: 422, body: `{"error":"text is too long"}`,
		write: rejected(422, "text is too long"), read: rejected(422, "text is too long"), reads: 1,
	},
	{
		name: "425", status: 425,
		write: notPerformed(425, 0, "too early"), read: notPerformed(425, 0, "too early"), reads: 4,
	},
	{
		name: "429 Retry-After seconds", status: 429, header: http.Header{"Retry-After": {"3"}},
		write: notPerformed(429, 3*time.Second, "too many requests"), read: notPerformed(429, 3*time.Second, "too many requests"), reads: 1,
	},
	{
		name: "429 Retry-After HTTP date", status: 429, header: http.Header{"Retry-After": {fixedNow.Add(90 * time.Second).Format(http.TimeFormat)}},
		write: notPerformed(429, 90*time.Second, "too many requests"), read: notPerformed(429, 90*time.Second, "too many requests"), reads: 1,
	},
	{
		name: "429 without Retry-After", status: 429,
		write: notPerformed(429, 0, "too many requests"), read: notPerformed(429, 0, "too many requests"), reads: 4,
	},
	{
		name: "429 without Retry-After, hook present but silent", hooks: true, status: 429,
		write: notPerformed(429, 0, "too many requests"), read: notPerformed(429, 0, "too many requests"), reads: 4,
	},
	{
		name: "429 platform hook value", hooks: true, status: 429, header: http.Header{"X-Rate-Limit-Reset": {unix(5 * time.Second)}},
		write: notPerformed(429, 5*time.Second, "too many requests"), read: notPerformed(429, 5*time.Second, "too many requests"), reads: 1,
	},
	{
		name: "429 Retry-After wins over the hook", hooks: true, status: 429,
		header: http.Header{"Retry-After": {"3"}, "X-Rate-Limit-Reset": {unix(time.Minute)}},
		write:  notPerformed(429, 3*time.Second, "too many requests"), read: notPerformed(429, 3*time.Second, "too many requests"), reads: 1,
	},
	{
		name: "429 unreadable Retry-After falls back to the hook", hooks: true, status: 429,
		header: http.Header{"Retry-After": {"soon"}, "X-Rate-Limit-Reset": {unix(5 * time.Second)}},
		write:  notPerformed(429, 5*time.Second, "too many requests"), read: notPerformed(429, 5*time.Second, "too many requests"), reads: 1,
	},
	{
		name: "429 hook time already passed is 0", hooks: true, status: 429, header: http.Header{"X-Rate-Limit-Reset": {unix(-30 * time.Second)}},
		write: notPerformed(429, 0, "too many requests"), read: notPerformed(429, 0, "too many requests"), reads: 4,
	},
	{
		name: "429 described by the platform hook", hooks: true, status: 429, header: http.Header{"Retry-After": {"3"}}, body: `{"error":"slow down"}`,
		write: notPerformed(429, 3*time.Second, "slow down"), read: notPerformed(429, 3*time.Second, "slow down"), reads: 1,
	},
	{
		name: "500", status: 500,
		write: ambiguous(500, "internal server error"), read: notPerformed(500, 0, "internal server error"), reads: 4,
	},
	{
		name: "500 described by the platform hook", hooks: true, status: 500, body: `{"error":"boom"}`,
		write: ambiguous(500, "boom"), read: notPerformed(500, 0, "boom"), reads: 4,
	},
	{
		name: "502", status: 502,
		write: ambiguous(502, "bad gateway"), read: notPerformed(502, 0, "bad gateway"), reads: 4,
	},
	{
		name: "503 with Retry-After", status: 503, header: http.Header{"Retry-After": {"0.02"}},
		write: ambiguous(503, "service unavailable"), read: notPerformed(503, 20*time.Millisecond, "service unavailable"), reads: 4,
	},
	{
		name: "503 platform hook value", hooks: true, status: 503, header: http.Header{"X-Rate-Limit-Reset": {unix(5 * time.Second)}},
		write: ambiguous(503, "service unavailable"), read: notPerformed(503, 5*time.Second, "service unavailable"), reads: 1,
	},
	{
		name: "504", status: 504,
		write: ambiguous(504, "gateway timeout"), read: notPerformed(504, 0, "gateway timeout"), reads: 4,
	},
	{
		name: "301", status: 301, header: http.Header{"Location": {"/elsewhere"}},
		write: rejected(301, redirectMsg), read: rejected(301, redirectMsg),
	},
	{
		name: "302", status: 302, header: http.Header{"Location": {"/elsewhere"}},
		write: rejected(302, redirectMsg), read: rejected(302, redirectMsg),
	},
	{
		name: "unknown status 499: number as text", status: 499,
		write: rejected(499, "http 499"), read: rejected(499, "http 499"), reads: 1,
	},
}

func (tt classifyCase) client(t *testing.T) *httpcall.Client {
	if tt.hooks {
		return newClient(t, withHooks)
	}
	return newClient(t)
}

// TestClassify checks the meaning of each answer for a write and for a
// read, on the Response alone.
func TestClassify(t *testing.T) {
	for _, tt := range classifyCases {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.client(t)
			resp := &httpcall.Response{Status: tt.status, Header: tt.header, Body: []byte(tt.body)}
			if resp.OK() {
				t.Fatalf("Response{Status: %d}.OK() = true", tt.status)
			}
			if diff := cmp.Diff(tt.write, outcomeOf(t, c.Classify(op, resp, true))); diff != "" {
				t.Errorf("write (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.read, outcomeOf(t, c.Classify(op, resp, false))); diff != "" {
				t.Errorf("read (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClassifyOverHTTP sends each answer of TestClassify from a real
// server. A write reaches the server once and gets the answer back as it
// came (Classify then gives the write meaning); a read is retried as the
// package doc says and ends with the read meaning.
func TestClassifyOverHTTP(t *testing.T) {
	for _, tt := range classifyCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var n, elsewhere atomic.Int32
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if r.URL.Path == "/elsewhere" {
					elsewhere.Add(1)
					io.WriteString(w, `{"ok":true}`)
					return
				}
				n.Add(1)
				for k, vs := range tt.header {
					w.Header()[k] = vs
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}), nil)
			c := tt.client(t)
			ctx := context.Background()

			t.Run("write", func(t *testing.T) {
				n.Store(0)
				resp, err := c.Write(ctx, op, httpcall.Request{
					Method: http.MethodPost,
					URL:    srv.URL + "/sendMessage",
					Header: http.Header{"Content-Type": {"application/json"}},
					Body:   []byte(`{"text":"hi"}`),
				})
				if err != nil {
					t.Fatalf("Write: %v, want the answer", err)
				}
				if resp.Status != tt.status || string(resp.Body) != tt.body || resp.BodyErr != nil {
					t.Errorf("Write answer = %d %q (body error %v), want %d %q", resp.Status, resp.Body, resp.BodyErr, tt.status, tt.body)
				}
				if diff := cmp.Diff(tt.write, outcomeOf(t, c.Classify(op, resp, true))); diff != "" {
					t.Errorf("Classify (-want +got):\n%s", diff)
				}
				if got := n.Load(); got != 1 {
					t.Errorf("server received %d requests, want exactly 1", got)
				}
				if got := elsewhere.Load(); got != 0 {
					t.Errorf("redirect target received %d requests, want 0", got)
				}
			})

			if tt.reads == 0 {
				return
			}
			t.Run("read", func(t *testing.T) {
				n.Store(0)
				resp, err := c.Read(ctx, op, httpcall.Request{Method: http.MethodGet, URL: srv.URL + "/getChat"})
				got := outcomeOf(t, err)
				if err == nil {
					if resp.Status != tt.status || string(resp.Body) != tt.body {
						t.Errorf("Read answer = %d %q, want %d %q", resp.Status, resp.Body, tt.status, tt.body)
					}
					got = outcomeOf(t, c.Classify(op, resp, false))
				}
				if diff := cmp.Diff(tt.read, got); diff != "" {
					t.Errorf("Read (-want +got):\n%s", diff)
				}
				if got := n.Load(); got != int32(tt.reads) {
					t.Errorf("server received %d requests, want %d", got, tt.reads)
				}
			})
		})
	}
}

// replayServer answers GET /warm normally, leaving the keep-alive
// connection open, and reads every other request in full, records it and
// closes the connection without answering: the server crashed or an idle
// timeout fired just after the request arrived. On a reused connection that
// is exactly when net/http's Transport replays a request it deems
// replayable (errServerClosedIdle, see shouldRetryRequest).
type replayServer struct {
	t      *testing.T
	warm   recorder
	writes recorder
}

func (s *replayServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/warm" {
		s.warm.add(r)
		io.WriteString(w, `{"ok":true}`)
		return
	}
	s.writes.add(r)
	adaptertest.HijackClose(s.t, w)
}

// TestWriteIsSentExactlyOnce proves that a write whose connection dies
// after the server read it in full reaches the server once and is
// Ambiguous, on a fresh connection and on a reused keep-alive connection,
// whatever the method and with the Idempotency-Key headers that make
// net/http replay a request. The control subtest shows that the same
// transport does replay an ordinary keyed request in the same situation,
// so the count of 1 means something.
func TestWriteIsSentExactlyOnce(t *testing.T) {
	writes := []struct {
		name   string
		method string
		header http.Header
		body   []byte
	}{
		{"POST with Idempotency-Key", http.MethodPost, http.Header{"Idempotency-Key": {"entry-1"}}, []byte(`{"text":"once"}`)},
		{"POST with X-Idempotency-Key", http.MethodPost, http.Header{"X-Idempotency-Key": {"entry-1"}}, []byte(`{"text":"once"}`)},
		{"POST without key", http.MethodPost, nil, []byte(`{"text":"once"}`)},
		{"PUT with Idempotency-Key", http.MethodPut, http.Header{"Idempotency-Key": {"entry-1"}}, []byte(`{"text":"once"}`)},
		{"PATCH with Idempotency-Key", http.MethodPatch, http.Header{"Idempotency-Key": {"entry-1"}}, []byte(`{"text":"once"}`)},
		{"DELETE without body, with Idempotency-Key", http.MethodDelete, http.Header{"Idempotency-Key": {"entry-1"}}, nil},
		{"GET sent as a write", http.MethodGet, nil, nil},
	}
	for _, reuse := range []bool{false, true} {
		conn := "fresh connection"
		if reuse {
			conn = "reused keep-alive connection"
		}
		t.Run(conn, func(t *testing.T) {
			for _, tt := range writes {
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel()
					var conns atomic.Int32
					rs := &replayServer{t: t}
					srv := newServer(t, rs, &conns)
					c := newClient(t)
					ctx := context.Background()
					if reuse {
						if _, err := c.Read(ctx, "warm up", httpcall.Request{Method: http.MethodGet, URL: srv.URL + "/warm"}); err != nil {
							t.Fatalf("warm-up read: %v", err)
						}
					}

					resp, err := c.Write(ctx, op, httpcall.Request{Method: tt.method, URL: srv.URL + "/statuses", Header: tt.header, Body: tt.body})
					if resp != nil {
						t.Errorf("Write returned an answer (%d), want none", resp.Status)
					}
					if diff := cmp.Diff(outcome{Class: classAmbiguous}, classOf(t, err)); diff != "" {
						t.Errorf("outcome (-want +got):\n%s", diff)
					}
					got := rs.writes.all()
					if len(got) != 1 {
						t.Fatalf("server received %d copies of the write, want exactly 1: %+v", len(got), got)
					}
					if got[0].Method != tt.method || got[0].Body != string(tt.body) {
						t.Errorf("server received %s %q, want %s %q", got[0].Method, got[0].Body, tt.method, tt.body)
					}
					for k := range tt.header {
						if got[0].Header.Get(k) != tt.header.Get(k) {
							t.Errorf("server received %s %q, want %q", k, got[0].Header.Get(k), tt.header.Get(k))
						}
					}
					if n := conns.Load(); n != 1 {
						t.Errorf("server accepted %d connections, want 1", n)
					}
					if reuse {
						if warm := rs.warm.all(); len(warm) != 1 || got[0].RemoteAddr != warm[0].RemoteAddr {
							t.Fatalf("the write came on %s, the warm-up on %+v: the test did not exercise connection reuse", got[0].RemoteAddr, warm)
						}
					}
				})
			}
		})
	}

	t.Run("control: the same transport replays an ordinary keyed request", func(t *testing.T) {
		var conns atomic.Int32
		rs := &replayServer{t: t}
		srv := newServer(t, rs, &conns)
		c := newClient(t)
		if _, err := c.Read(context.Background(), "warm up", httpcall.Request{Method: http.MethodGet, URL: srv.URL + "/warm"}); err != nil {
			t.Fatalf("warm-up read: %v", err)
		}
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/statuses", bytes.NewReader([]byte(`{"text":"twice"}`)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Idempotency-Key", "entry-1")
		if resp, err := c.HTTPClient().Do(req); err == nil {
			resp.Body.Close()
		}
		if n := len(rs.writes.all()); n < 2 {
			t.Skipf("net/http no longer replays keyed requests (server saw %d); the guard in writeBody is now belt and braces", n)
		}
		if n := conns.Load(); n < 2 {
			t.Errorf("server accepted %d connections, want the replay on a second one", n)
		}
	})
}

// TestWriteTransportFailures checks the transport errors of a write: what
// certainly did not reach the server is NotPerformed, what was completely
// written is Ambiguous. Do's wrote result is checked alongside.
func TestWriteTransportFailures(t *testing.T) {
	body := []byte(`{"text":"x"}`)

	t.Run("refused connection is not performed", func(t *testing.T) {
		c := newClient(t)
		u := adaptertest.ClosedURL(t) + "/sendMessage"
		_, err := c.Write(context.Background(), op, httpcall.Request{Method: http.MethodPost, URL: u, Body: body})
		if diff := cmp.Diff(outcome{Class: classNotPerformed}, classOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if msg := outcomeOf(t, err).Message; !strings.HasPrefix(msg, op+": request not sent: post: dial tcp") || !strings.Contains(msg, "refused") {
			t.Errorf("message = %q, want the dial error", msg)
		}
		resp, wrote, err := c.Do(context.Background(), c.HTTPClient(), httpcall.Request{Method: http.MethodPost, URL: u, Body: body})
		if resp != nil || wrote || err == nil {
			t.Errorf("Do = %v, wrote %t, %v; want nil, false, an error", resp, wrote, err)
		}
	})

	t.Run("deadline while the server holds the answer is ambiguous", func(t *testing.T) {
		for _, call := range []string{"Write", "Do"} {
			t.Run(call, func(t *testing.T) {
				var n atomic.Int32
				srv, read := holdServer(t, &n)
				c := newClient(t)
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				r := httpcall.Request{Method: http.MethodPost, URL: srv.URL + "/sendMessage", Body: body}
				var err error
				if call == "Write" {
					_, err = c.Write(ctx, op, r)
					if diff := cmp.Diff(outcome{Class: classAmbiguous}, classOf(t, err)); diff != "" {
						t.Errorf("outcome (-want +got):\n%s", diff)
					}
				} else {
					var wrote bool
					_, wrote, err = c.Do(ctx, c.HTTPClient(), r)
					if !wrote || err == nil {
						t.Errorf("Do: wrote %t, %v; want true and an error", wrote, err)
					}
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("error %q does not wrap context.DeadlineExceeded", err)
				}
				select {
				case <-read:
				case <-time.After(5 * time.Second):
					t.Fatal("the server never read the request")
				}
				if got := n.Load(); got != 1 {
					t.Errorf("server received %d requests, want exactly 1", got)
				}
			})
		}
	})

	t.Run("context cancelled before sending is not performed", func(t *testing.T) {
		var n, conns atomic.Int32
		srv := newServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }), &conns)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		c := newClient(t)
		_, err := c.Write(ctx, op, httpcall.Request{Method: http.MethodPost, URL: srv.URL + "/sendMessage", Body: body})
		if diff := cmp.Diff(outcome{Class: classNotPerformed}, classOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if msg := outcomeOf(t, err).Message; !strings.Contains(msg, "context canceled") {
			t.Errorf("message = %q, want it to name the cancellation", msg)
		}
		if got := n.Load(); got != 0 {
			t.Errorf("server received %d requests, want 0", got)
		}
		if got := conns.Load(); got != 0 {
			t.Errorf("server accepted %d connections, want 0", got)
		}
	})

	// A connection that fails the request's writes (reset by the peer)
	// delivers nothing, or only part of the request, and the server cannot
	// act on it. The HTTP/1 transport reports WroteRequest once the request
	// is in its write buffer, before its final flush: when a small request
	// fails there it reads as written, so Ambiguous (the safe side; see
	// Do). A request larger than the buffer fails while the transport is
	// still writing it, and is NotPerformed.
	resets := []struct {
		name  string
		allow int // bytes the connection lets through
		body  []byte
		want  string
	}{
		{"small request reset before anything left: ambiguous (conservative)", 0, body, classAmbiguous},
		{"small request reset in the middle: ambiguous (conservative)", 20, body, classAmbiguous},
		{"large request reset before anything left: not performed", 0, bytes.Repeat([]byte("x"), 64<<10), classNotPerformed},
		{"large request reset in the middle: not performed", 10 << 10, bytes.Repeat([]byte("x"), 64<<10), classNotPerformed},
	}
	for _, tt := range resets {
		t.Run(tt.name, func(t *testing.T) {
			var n, dials atomic.Int32
			watch := newConnWatch()
			// n counts the requests the server received in full (the
			// handler starts once the headers are in).
			srv := newWatchedServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				if _, err := io.Copy(io.Discard, r.Body); err == nil {
					n.Add(1)
				}
			}), nil, watch)
			c := newClientWith(t, failingTransport(tt.allow, &dials))
			r := httpcall.Request{Method: http.MethodPost, URL: srv.URL + "/sendMessage", Header: http.Header{"Idempotency-Key": {"entry-1"}}, Body: tt.body}
			_, err := c.Write(context.Background(), op, r)
			if diff := cmp.Diff(outcome{Class: tt.want}, classOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			_, wrote, err := c.Do(context.Background(), c.HTTPClient(), r)
			if wrote != (tt.want == classAmbiguous) || err == nil {
				t.Errorf("Do: wrote %t, %v; want wrote %t and an error", wrote, err, tt.want == classAmbiguous)
			}
			if got := dials.Load(); got != 2 {
				t.Fatalf("client dialled %d connections, want 2 (one per call): the test did not exercise a failed write", got)
			}
			// The server has seen both connections end: a request it
			// had received in full would have been handled by now.
			watch.waitClosed(t, 2)
			if got := n.Load(); got != 0 {
				t.Errorf("server received %d complete requests, want 0", got)
			}
		})
	}
}

// TestReadRetries checks the retry rule of reads.
func TestReadRetries(t *testing.T) {
	get := func(srv string) httpcall.Request {
		return httpcall.Request{Method: http.MethodGet, URL: srv + "/getUpdates"}
	}
	// scripted answers the i-th request (from 1) with script(i).
	scripted := func(t *testing.T, n *atomic.Int32, script func(i int32, w http.ResponseWriter, r *http.Request)) string {
		srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			script(n.Add(1), w, r)
		}), nil)
		return srv.URL
	}

	t.Run("503 twice then 200 succeeds after 3 requests", func(t *testing.T) {
		var n atomic.Int32
		u := scripted(t, &n, func(i int32, w http.ResponseWriter, _ *http.Request) {
			if i <= 2 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			io.WriteString(w, `{"ok":true}`)
		})
		resp, err := newClient(t).Read(context.Background(), op, get(u))
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if resp.Status != 200 || string(resp.Body) != `{"ok":true}` || !resp.OK() {
			t.Errorf("answer = %d %q, want 200 {\"ok\":true}", resp.Status, resp.Body)
		}
		if got := n.Load(); got != 3 {
			t.Errorf("server received %d requests, want 3", got)
		}
	})

	t.Run("429 asking for more than 2 s is not performed at once", func(t *testing.T) {
		var n atomic.Int32
		u := scripted(t, &n, func(_ int32, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
		})
		start := time.Now()
		_, err := newClient(t).Read(context.Background(), op, get(u))
		if diff := cmp.Diff(notPerformed(429, 3*time.Second, "too many requests"), outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if got := n.Load(); got != 1 {
			t.Errorf("server received %d requests, want 1", got)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("Read took %s, want it to give up without waiting", d)
		}
	})

	t.Run("Retry-After within 2 s is waited for", func(t *testing.T) {
		var n atomic.Int32
		u := scripted(t, &n, func(i int32, w http.ResponseWriter, _ *http.Request) {
			if i == 1 {
				w.Header().Set("Retry-After", "0.2")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			io.WriteString(w, "ok")
		})
		start := time.Now()
		resp, err := newClient(t).Read(context.Background(), op, get(u))
		if err != nil || resp.Status != 200 {
			t.Fatalf("Read = %v, %v; want 200", resp, err)
		}
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Errorf("Read took %s, want at least the 200ms the server asked for", d)
		}
		if got := n.Load(); got != 2 {
			t.Errorf("server received %d requests, want 2", got)
		}
	})

	t.Run("persistent 500 is not performed after 4 attempts with growing backoff", func(t *testing.T) {
		var n atomic.Int32
		u := scripted(t, &n, func(_ int32, w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
		})
		c := newClient(t)
		c.ReadBackoff = 20 * time.Millisecond
		start := time.Now()
		_, err := c.Read(context.Background(), op, get(u))
		if diff := cmp.Diff(notPerformed(500, 0, "internal server error"), outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if got := n.Load(); got != 4 {
			t.Errorf("server received %d requests, want 4", got)
		}
		if d := time.Since(start); d < (20+40+80)*time.Millisecond {
			t.Errorf("Read took %s, want at least 20+40+80 ms of backoff", d)
		}
	})

	t.Run("404 is returned to the caller without a retry", func(t *testing.T) {
		var n atomic.Int32
		u := scripted(t, &n, func(_ int32, w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"no such chat"}`)
		})
		resp, err := newClient(t).Read(context.Background(), op, get(u))
		if err != nil {
			t.Fatalf("Read: %v, want the 404 answer", err)
		}
		if resp.Status != 404 || string(resp.Body) != `{"error":"no such chat"}` || resp.OK() {
			t.Errorf("answer = %d %q, want 404 with its body", resp.Status, resp.Body)
		}
		if got := n.Load(); got != 1 {
			t.Errorf("server received %d requests, want 1", got)
		}
	})

	t.Run("transport error then 200 succeeds after 2 requests", func(t *testing.T) {
		var n atomic.Int32
		u := scripted(t, &n, func(i int32, w http.ResponseWriter, _ *http.Request) {
			if i == 1 {
				adaptertest.HijackClose(t, w)
				return
			}
			io.WriteString(w, "ok")
		})
		resp, err := newClient(t).Read(context.Background(), op, get(u))
		if err != nil || resp.Status != 200 {
			t.Fatalf("Read = %v, %v; want 200", resp, err)
		}
		if got := n.Load(); got != 2 {
			t.Errorf("server received %d requests, want 2", got)
		}
	})

	t.Run("persistent transport error is not performed after 4 attempts", func(t *testing.T) {
		var n atomic.Int32
		u := scripted(t, &n, func(_ int32, w http.ResponseWriter, _ *http.Request) { adaptertest.HijackClose(t, w) })
		_, err := newClient(t).Read(context.Background(), op, get(u))
		if diff := cmp.Diff(outcome{Class: classNotPerformed}, classOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if got := n.Load(); got != 4 {
			t.Errorf("server received %d requests, want 4", got)
		}
	})

	t.Run("context ending during the backoff stops the read", func(t *testing.T) {
		var n atomic.Int32
		u := scripted(t, &n, func(_ int32, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := newClient(t).Read(ctx, op, get(u))
		want := notPerformed(503, time.Second, "service unavailable; gave up: context deadline exceeded")
		if diff := cmp.Diff(want, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if d := time.Since(start); d > 900*time.Millisecond {
			t.Errorf("Read took %s, want it to stop at the context deadline", d)
		}
		if got := n.Load(); got != 1 {
			t.Errorf("server received %d requests, want 1", got)
		}
	})

	t.Run("context already cancelled sends nothing", func(t *testing.T) {
		var n atomic.Int32
		u := scripted(t, &n, func(int32, http.ResponseWriter, *http.Request) {})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := newClient(t).Read(ctx, op, get(u))
		if diff := cmp.Diff(outcome{Class: classNotPerformed}, classOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if !strings.Contains(err.Error(), "context canceled") {
			t.Errorf("error %q does not name the cancellation", err)
		}
		if got := n.Load(); got != 0 {
			t.Errorf("server received %d requests, want 0", got)
		}
	})
}

// TestRedirects checks that writes do not follow redirects (the answer is
// Rejected, the target never sees the request) and reads do.
func TestRedirects(t *testing.T) {
	for _, code := range []int{301, 302, 303, 307, 308} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			var origin, target recorder
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/new" {
					target.add(r)
					io.WriteString(w, "moved here")
					return
				}
				origin.add(r)
				http.Redirect(w, r, "/new", code)
			}), nil)
			c := newClient(t)
			ctx := context.Background()

			resp, err := c.Write(ctx, op, httpcall.Request{Method: http.MethodPost, URL: srv.URL + "/old", Body: []byte(`{"text":"x"}`)})
			if err != nil {
				t.Fatalf("Write: %v, want the redirect answer", err)
			}
			if resp.Status != code || resp.Header.Get("Location") != "/new" {
				t.Errorf("Write answer = %d to %q, want %d to /new", resp.Status, resp.Header.Get("Location"), code)
			}
			if diff := cmp.Diff(rejected(code, redirectMsg), outcomeOf(t, c.Classify(op, resp, true))); diff != "" {
				t.Errorf("Classify (-want +got):\n%s", diff)
			}
			if o, g := len(origin.all()), len(target.all()); o != 1 || g != 0 {
				t.Errorf("write: origin received %d requests and target %d, want 1 and 0", o, g)
			}

			resp, err = c.Read(ctx, op, httpcall.Request{Method: http.MethodGet, URL: srv.URL + "/old"})
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if resp.Status != 200 || string(resp.Body) != "moved here" {
				t.Errorf("Read answer = %d %q, want 200 from the target", resp.Status, resp.Body)
			}
			if o, g := len(origin.all()), len(target.all()); o != 2 || g != 1 {
				t.Errorf("after the read: origin received %d requests and target %d, want 2 and 1", o, g)
			}
		})
	}

	t.Run("HTTPClient follows redirects and New leaves the caller's client alone", func(t *testing.T) {
		srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/new" {
				io.WriteString(w, "moved here")
				return
			}
			http.Redirect(w, r, "/new", http.StatusFound)
		}), nil)
		hc := adaptertest.HTTPClient(t)
		c := httpcall.New(hc)
		if c.HTTPClient() != hc {
			t.Error("HTTPClient is not the client given to New")
		}
		if hc.CheckRedirect != nil {
			t.Error("New changed the caller's CheckRedirect")
		}
		resp, err := c.HTTPClient().Get(srv.URL + "/old")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Request.URL.Path != "/new" {
			t.Errorf("HTTPClient ended at %s, want /new", resp.Request.URL.Path)
		}
	})

	t.Run("TokenClient follows no redirect", func(t *testing.T) {
		var moved atomic.Int32
		srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/new" {
				moved.Add(1)
				return
			}
			http.Redirect(w, r, "/new", http.StatusPermanentRedirect)
		}), nil)
		resp, err := httpcall.New(adaptertest.HTTPClient(t)).TokenClient().Post(srv.URL+"/old", "application/x-www-form-urlencoded", strings.NewReader("refresh_token=r"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusPermanentRedirect || moved.Load() != 0 {
			t.Errorf("TokenClient answered %d with %d requests at the new address, want 308 and 0", resp.StatusCode, moved.Load())
		}
	})
}

// Secrets that a platform (Telegram) carries in the request URL.
const (
	pathSecret  = "AAHpathSECRET"
	querySecret = "QquerySECRET"
)

// TestTransportErrorsOmitTheURL makes calls whose URL carries a token in
// the path and in the query fail in every way a transport can, and checks
// that no error text (of the error or anything it wraps) contains them.
func TestTransportErrorsOmitTheURL(t *testing.T) {
	secretReq := func(base string) httpcall.Request {
		return httpcall.Request{
			Method: http.MethodPost,
			URL:    base + "/bot123:" + pathSecret + "/sendMessage",
			Query:  url.Values{"access_token": {querySecret}},
			Body:   []byte(`{"text":"x"}`),
		}
	}
	get := func(r httpcall.Request) httpcall.Request {
		r.Method, r.Body = http.MethodGet, nil
		return r
	}
	refused := func(t *testing.T) string { return adaptertest.ClosedURL(t) }
	closing := func(t *testing.T) string {
		return newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			adaptertest.HijackClose(t, w)
		}), nil).URL
	}
	holding := func(t *testing.T) string {
		var n atomic.Int32
		srv, _ := holdServer(t, &n)
		return srv.URL
	}
	short := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 200*time.Millisecond)
	}
	bg := func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }

	tests := []struct {
		name  string
		class string
		call  func(t *testing.T) error
	}{
		{"write: dial refused", classNotPerformed, func(t *testing.T) error {
			_, err := newClient(t).Write(context.Background(), op, secretReq(refused(t)))
			return err
		}},
		{"read: dial refused", classNotPerformed, func(t *testing.T) error {
			_, err := newClient(t).Read(context.Background(), op, get(secretReq(refused(t))))
			return err
		}},
		{"Do: dial refused", "", func(t *testing.T) error {
			c := newClient(t)
			_, _, err := c.Do(context.Background(), c.HTTPClient(), secretReq(refused(t)))
			return err
		}},
		{"write: connection closed after the request was read", classAmbiguous, func(t *testing.T) error {
			_, err := newClient(t).Write(context.Background(), op, secretReq(closing(t)))
			return err
		}},
		{"read: connection closed after the request was read", classNotPerformed, func(t *testing.T) error {
			_, err := newClient(t).Read(context.Background(), op, get(secretReq(closing(t))))
			return err
		}},
		{"write: deadline waiting for the answer", classAmbiguous, func(t *testing.T) error {
			ctx, cancel := short()
			defer cancel()
			_, err := newClient(t).Write(ctx, op, secretReq(holding(t)))
			return err
		}},
		{"read: deadline waiting for the answer", classNotPerformed, func(t *testing.T) error {
			ctx, cancel := short()
			defer cancel()
			_, err := newClient(t).Read(ctx, op, get(secretReq(holding(t))))
			return err
		}},
		{"write: connection reset while sending", classAmbiguous, func(t *testing.T) error {
			ctx, cancel := bg()
			defer cancel()
			_, err := newClientWith(t, failingTransport(0, nil)).Write(ctx, op, secretReq(closing(t)))
			return err
		}},
		{"read: redirected to a refused address carrying the token", classNotPerformed, func(t *testing.T) error {
			to := secretReq(refused(t))
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, to.URL+"?"+to.Query.Encode(), http.StatusFound)
			}), nil)
			_, err := newClient(t).Read(context.Background(), op, get(secretReq(srv.URL)))
			return err
		}},
		// A token read from a file with its trailing newline.
		{"write: invalid URL", classNotPerformed, func(t *testing.T) error {
			r := secretReq("http://127.0.0.1:1")
			r.URL = strings.Replace(r.URL, pathSecret, pathSecret+"\n", 1)
			_, err := newClient(t).Write(context.Background(), op, r)
			return err
		}},
		{"read: invalid URL", classNotPerformed, func(t *testing.T) error {
			r := get(secretReq("http://127.0.0.1:1"))
			r.URL = strings.Replace(r.URL, pathSecret, pathSecret+"\n", 1)
			_, err := newClient(t).Read(context.Background(), op, r)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.call(t)
			if err == nil {
				t.Fatal("call succeeded, want a transport error")
			}
			if tt.class != "" {
				if got := classOf(t, err).Class; got != tt.class {
					t.Errorf("class = %s, want %s (%v)", got, tt.class, err)
				}
			}
			for _, s := range append(errorStrings(err), fmt.Sprintf("%+v", err)) {
				for _, secret := range []string{pathSecret, querySecret, "sendMessage", "access_token"} {
					if strings.Contains(s, secret) {
						t.Errorf("error text %q contains %q", s, secret)
					}
				}
			}
		})
	}
}

// TestBodyLimit checks that answers are read up to MaxBodyBytes: a longer
// or truncated body sets BodyErr, and a read with such a body is retried
// and ends NotPerformed.
func TestBodyLimit(t *testing.T) {
	serve := func(t *testing.T, n *atomic.Int32, size int, truncate bool) string {
		return newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			if truncate {
				conn, buf, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Errorf("hijack: %v", err)
					return
				}
				fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", size, strings.Repeat("x", size/2))
				buf.Flush()
				conn.Close()
				return
			}
			w.Header().Set("Content-Length", strconv.Itoa(size))
			io.Copy(w, io.LimitReader(repeatReader('x'), int64(size)))
		}), nil).URL
	}
	tooLong := fmt.Sprintf("response body exceeds %d bytes", httpcall.MaxBodyBytes)

	tests := []struct {
		name     string
		size     int
		truncate bool
		wantLen  int
		wantErr  string // text of BodyErr, "" for none
	}{
		{"exactly MaxBodyBytes", httpcall.MaxBodyBytes, false, httpcall.MaxBodyBytes, ""},
		{"one byte over MaxBodyBytes", httpcall.MaxBodyBytes + 1, false, httpcall.MaxBodyBytes + 1, tooLong},
		{"far over MaxBodyBytes", 2 * httpcall.MaxBodyBytes, false, httpcall.MaxBodyBytes + 1, tooLong},
		{"shorter than its Content-Length", 1000, true, 500, io.ErrUnexpectedEOF.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			u := serve(t, &n, tt.size, tt.truncate)
			c := newClient(t)

			resp, err := c.Write(context.Background(), op, httpcall.Request{Method: http.MethodPost, URL: u, Body: []byte("{}")})
			if err != nil {
				t.Fatalf("Write: %v, want the answer with BodyErr", err)
			}
			gotErr := ""
			if resp.BodyErr != nil {
				gotErr = resp.BodyErr.Error()
			}
			if resp.Status != 200 || len(resp.Body) != tt.wantLen || gotErr != tt.wantErr {
				t.Errorf("Write answer = %d, %d bytes, BodyErr %q; want 200, %d bytes, %q", resp.Status, len(resp.Body), gotErr, tt.wantLen, tt.wantErr)
			}

			n.Store(0)
			resp, err = c.Read(context.Background(), op, httpcall.Request{Method: http.MethodGet, URL: u})
			if tt.wantErr == "" {
				if err != nil || len(resp.Body) != tt.wantLen {
					t.Errorf("Read = %v, %v; want %d bytes", resp, err, tt.wantLen)
				}
				if got := n.Load(); got != 1 {
					t.Errorf("server received %d reads, want 1", got)
				}
				return
			}
			if diff := cmp.Diff(notPerformed(200, 0, "read response: "+tt.wantErr), outcomeOf(t, err)); diff != "" {
				t.Errorf("Read outcome (-want +got):\n%s", diff)
			}
			if got := n.Load(); got != 4 {
				t.Errorf("server received %d reads, want 4", got)
			}
		})
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// TestStandardRetryAfter checks the reading of the Retry-After header.
func TestStandardRetryAfter(t *testing.T) {
	type result struct {
		D  time.Duration
		OK bool
	}
	tests := []struct {
		name  string
		value []string // nil: no header
		want  result
	}{
		{"absent", nil, result{0, false}},
		{"empty", []string{""}, result{0, false}},
		{"seconds", []string{"120"}, result{2 * time.Minute, true}},
		{"seconds with spaces", []string{" 7 "}, result{7 * time.Second, true}},
		{"zero", []string{"0"}, result{0, true}},
		{"fractional seconds", []string{"1.5"}, result{1500 * time.Millisecond, true}},
		{"small fraction", []string{"0.25"}, result{250 * time.Millisecond, true}},
		{"negative seconds are 0", []string{"-5"}, result{0, true}},
		{"HTTP date in the future", []string{fixedNow.Add(90 * time.Second).Format(http.TimeFormat)}, result{90 * time.Second, true}},
		{"RFC 850 date", []string{fixedNow.Add(time.Hour).Format(time.RFC850)}, result{time.Hour, true}},
		{"HTTP date in the past is 0", []string{fixedNow.Add(-time.Hour).Format(http.TimeFormat)}, result{0, true}},
		{"HTTP date now is 0", []string{fixedNow.Format(http.TimeFormat)}, result{0, true}},
		{"garbage", []string{"soon"}, result{0, false}},
		{"date-like garbage", []string{"Sun, 99 Foo 2026 25:61:00 GMT"}, result{0, false}},
		{"seconds with unit", []string{"30s"}, result{0, false}},
		{"NaN", []string{"NaN"}, result{0, false}},
		{"Inf", []string{"Inf"}, result{0, false}},
		{"seconds beyond time.Duration saturate", []string{"99999999999"}, result{math.MaxInt64, true}},
		{"seconds beyond float64 times 1e9 saturate", []string{"1e300"}, result{math.MaxInt64, true}},
		{"seconds beyond float64 saturate", []string{"1e400"}, result{math.MaxInt64, true}},
		{"negative infinity", []string{"-Inf"}, result{0, false}},
		{"first value is read", []string{"3", "9"}, result{3 * time.Second, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.value != nil {
				h["Retry-After"] = tt.value
			}
			d, ok := httpcall.StandardRetryAfter(h, fixedNow)
			if diff := cmp.Diff(tt.want, result{d, ok}); diff != "" {
				t.Errorf("StandardRetryAfter(%q) (-want +got):\n%s", tt.value, diff)
			}
		})
	}

	t.Run("read gives up at once on a Retry-After beyond time.Duration", func(t *testing.T) {
		var n atomic.Int32
		srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			w.Header().Set("Retry-After", "99999999999")
			w.WriteHeader(http.StatusTooManyRequests)
		}), nil)
		_, err := newClient(t).Read(context.Background(), op, httpcall.Request{Method: http.MethodGet, URL: srv.URL})
		if diff := cmp.Diff(notPerformed(429, math.MaxInt64, "too many requests"), outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if got := n.Load(); got != 1 {
			t.Errorf("server received %d requests, want 1", got)
		}
	})
}

// TestRequestShape checks what a call puts on the wire: the caller's
// headers as given, Accept and User-Agent only when absent, the query
// encoded, the body with its length.
func TestRequestShape(t *testing.T) {
	var rec recorder
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rec.add(r) }), nil)
	c := newClient(t)
	ctx := context.Background()

	header := httpcall.Bearer("tok-1")
	header.Set("Content-Type", "application/json")
	if _, err := c.Write(ctx, op, httpcall.Request{
		Method: http.MethodPost,
		URL:    srv.URL + "/statuses",
		Query:  url.Values{"b": {"2 3"}, "a": {"1"}},
		Header: header,
		Body:   []byte(`{"text":"hi"}`),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(ctx, op, httpcall.Request{
		Method: http.MethodGet,
		URL:    srv.URL + "/me",
		Header: http.Header{"Accept": {"application/activity+json"}, "User-Agent": {"adapter/1"}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(ctx, op, httpcall.Request{Method: http.MethodDelete, URL: srv.URL + "/statuses/1"}); err != nil {
		t.Fatal(err)
	}
	type shape struct {
		Method, Path, Query, Body            string
		ContentLength                        int64
		Auth, ContentType, Accept, UserAgent string
	}
	var got []shape
	for _, r := range rec.all() {
		got = append(got, shape{r.Method, r.Path, r.RawQuery, r.Body, r.ContentLength,
			r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.Header.Get("Accept"), r.Header.Get("User-Agent")})
	}
	want := []shape{
		{"POST", "/statuses", "a=1&b=2+3", `{"text":"hi"}`, 13, "Bearer tok-1", "application/json", "application/json", "oncepost"},
		{"GET", "/me", "", "", 0, "", "", "application/activity+json", "adapter/1"},
		{"DELETE", "/statuses/1", "", "", 0, "", "", "application/json", "oncepost"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestSleepAndClampWait(t *testing.T) {
	if err := httpcall.Sleep(context.Background(), 0); err != nil {
		t.Errorf("Sleep(0) = %v", err)
	}
	if err := httpcall.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep(1ms) = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := httpcall.Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep on a cancelled context = %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := httpcall.Sleep(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Sleep past the deadline = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Sleep took %s, want it to end at the deadline", d)
	}
	for in, want := range map[time.Duration]time.Duration{-time.Second: 0, 0: 0, time.Second: time.Second} {
		if got := httpcall.ClampWait(in); got != want {
			t.Errorf("ClampWait(%s) = %s, want %s", in, got, want)
		}
	}
}
