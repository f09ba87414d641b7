// Package httpcall is the HTTP layer every platform adapter sends its calls
// through. It holds the one classification rule of DESIGN §4 so that each
// adapter states only what differs on its platform (where the error text
// is, which headers say when to come back):
//
//   - a write is sent exactly once: never retried here, never replayed by
//     net/http behind our back (see writeBody);
//   - a write whose request was completely written and whose answer was
//     lost, or any 5xx answer to a write, is platform.Ambiguous;
//   - a write that certainly did not reach the platform (dial error,
//     refused connection, 429, 408, 425) is platform.NotPerformed;
//   - 401 is platform.Unauthorized; any other 4xx is platform.Rejected;
//   - a read is retried a few times with backoff, and a read that keeps
//     failing is NotPerformed (a read has no effect to be ambiguous about).
//
// Written by hand because no HTTP client library makes the distinction the
// ledger depends on (was the request completely written before the error?)
// or refuses net/http's silent replay of idempotent-looking requests.
package httpcall

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"oncepost/shared/platform"
)

const (
	// MaxBodyBytes bounds how much of an answer is read.
	MaxBodyBytes = 4 << 20
	// readAttempts is one try plus three retries.
	readAttempts = 4
	// maxReadWait is the longest pause a read accepts before its next try;
	// a server asking for more gets a NotPerformed carrying its RetryAfter.
	maxReadWait = 2 * time.Second
	// DefaultReadBackoff is the first pause between read attempts.
	DefaultReadBackoff = 200 * time.Millisecond
)

// Request is one HTTP call.
type Request struct {
	Method string
	// URL is the full address without the query.
	URL   string
	Query url.Values
	// Header is sent as given (Authorization, Content-Type, platform
	// headers); Accept and User-Agent are added when absent.
	Header http.Header
	// Body is nil for calls without one. Writes always set it (an empty
	// slice for DELETE), see writeBody.
	Body []byte
}

// Response is the server's answer, read in full.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	// BodyErr is set when the body could not be read completely.
	BodyErr error
}

// OK reports a 2xx answer.
func (r *Response) OK() bool { return r.Status >= 200 && r.Status < 300 }

// Client sends calls for one adapter. The zero value is not usable: build
// it with New.
type Client struct {
	// Describe is the platform's own explanation in an error answer (a
	// field of its JSON error body). Nil, or "" returned, means the status
	// text. Never return tokens or request data from it.
	Describe func(*Response) string
	// RetryAfter is the wait the platform asked for in an answer whose
	// status is 429 or 5xx, beyond the standard Retry-After header (which
	// is always honoured first): X's x-rate-limit-reset, Discord's
	// retry_after, Telegram's parameters.retry_after, Mastodon's
	// X-RateLimit-Reset (on a 429 only). Nil means none.
	RetryAfter func(resp *Response, now time.Time) time.Duration
	// Now and ReadBackoff are replaced by tests.
	Now         func() time.Time
	ReadBackoff time.Duration

	reads  *http.Client
	writes *http.Client
}

// New returns a Client sending through hc (nil: a client with no timeout;
// deadlines come from ctx). Reads follow redirects; writes do not (a
// redirected POST would be re-sent to the new address as a GET, or with
// its body again).
func New(hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{}
	}
	wc := *hc
	wc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{Now: time.Now, ReadBackoff: DefaultReadBackoff, reads: hc, writes: &wc}
}

// HTTPClient is the client reads go through (it follows redirects).
func (c *Client) HTTPClient() *http.Client { return c.reads }

// TokenClient is the client writes go through, for token endpoints driven
// by another library (golang.org/x/oauth2). It follows no redirect: a 307
// or 308 would send the grant's form — a refresh token or code, and the
// client secret — again, to wherever Location points.
func (c *Client) TokenClient() *http.Client { return c.writes }

// writeBody is the body of every write: an in-memory reader set on the
// request after http.NewRequest, so that the request's GetBody stays nil.
//
// net/http's Transport silently sends a request again, on a new
// connection, when a reused keep-alive connection turns out to be dead
// after the request went out, if it deems the request replayable: a POST
// with an Idempotency-Key header and a rewindable body (GetBody, which
// http.NewRequest sets for bytes and strings readers). That would be a
// transport-level retry of a create, which DESIGN §1 forbids. Without
// GetBody the transport cannot rewind the body and does not replay; the
// HTTP/2 transport then only retries a request on a connection that never
// became usable, i.e. when nothing was sent.
//
// io.NopCloser over a *bytes.Reader is a body net/http recognises as in
// memory: it writes headers and body together. For other body types it
// flushes the headers first (golang/go#22088), and a server that drops the
// connection after reading the headers races the body write, so the same
// fault would read as NotPerformed one time and Ambiguous the next.
//
// DELETE gets an empty body rather than none: a nil body counts as
// rewindable, and the HTTP/2 transport re-sends those after some stream
// errors.
func writeBody(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// Do sends one request and reads the answer. wrote reports whether the
// transport finished writing the request (httptrace WroteRequest without
// an error); it is what tells "not performed" from "ambiguous" when err is
// set. The HTTP/1 transport reports WroteRequest once the request is in
// its write buffer, before its final flush to the connection: a request
// smaller than that buffer (4 KiB by default) whose flush fails (a
// connection reset before anything left) reads as written, so Ambiguous,
// the safe side. It cannot be told apart from outside net/http: the error
// Do returns is then the write error or, depending on a race inside the
// transport, the read error of the connection the failed write closed.
func (c *Client) Do(ctx context.Context, hc *http.Client, r Request) (resp *Response, wrote bool, err error) {
	var written atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				written.Store(true)
			}
		},
	})
	u := r.URL
	if len(r.Query) > 0 {
		u += "?" + r.Query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u, nil)
	if err != nil {
		// A parse error quotes the whole URL (a token read with its
		// trailing newline would be logged).
		return nil, false, fmt.Errorf("build request: %w", scrub(err))
	}
	if r.Body != nil {
		req.Body = writeBody(r.Body)
		req.ContentLength = int64(len(r.Body))
		req.GetBody = nil
	}
	for k, vs := range r.Header {
		req.Header[k] = vs
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "oncepost")
	}
	hr, err := hc.Do(req)
	if err != nil {
		// Do returns after the transport's write loop has finished with the
		// request, so the trace has already reported the write.
		return nil, written.Load(), scrub(err)
	}
	defer hr.Body.Close()
	resp = &Response{Status: hr.StatusCode, Header: hr.Header}
	resp.Body, resp.BodyErr = io.ReadAll(io.LimitReader(hr.Body, MaxBodyBytes+1))
	if resp.BodyErr == nil && len(resp.Body) > MaxBodyBytes {
		resp.BodyErr = fmt.Errorf("response body exceeds %d bytes", MaxBodyBytes)
	}
	return resp, true, nil
}

// scrub drops the URL from a transport error: some platforms (Telegram)
// carry the token in the path, and an error ends up in logs and in the
// ledger's reason.
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", strings.ToLower(ue.Op), ue.Err)
	}
	return err
}

// Write sends a write exactly once and returns any HTTP answer as it came
// (the caller checks OK and otherwise calls Classify). A transport error
// is Ambiguous when the request had been completely written (the server
// may have acted on it: a timeout waiting for the answer, a reset) and
// NotPerformed when it had not (dial error, refused connection, DNS, TLS,
// ctx ended before sending).
func (c *Client) Write(ctx context.Context, op string, r Request) (*Response, error) {
	if r.Body == nil {
		r.Body = []byte{}
	}
	resp, wrote, err := c.Do(ctx, c.writes, r)
	if err == nil {
		return resp, nil
	}
	if wrote {
		return nil, &platform.Ambiguous{Err: fmt.Errorf("%s: %w", op, err)}
	}
	return nil, &platform.NotPerformed{Message: fmt.Sprintf("%s: request not sent: %v", op, err)}
}

// Read sends a read (a GET, or a POST that only reads) and retries
// transient failures (transport errors, 408, 425, 429, 5xx, an unreadable
// body) with a short backoff bounded by ctx. Any other answer is returned
// for the caller to interpret; a failure that outlasts the retries is
// NotPerformed.
func (c *Client) Read(ctx context.Context, op string, r Request) (*Response, error) {
	var last *platform.NotPerformed
	for attempt := range readAttempts {
		if attempt > 0 {
			wait := c.ReadBackoff << (attempt - 1)
			if last.RetryAfter > wait {
				wait = last.RetryAfter
			}
			if err := Sleep(ctx, wait); err != nil {
				return nil, &platform.NotPerformed{Status: last.Status, RetryAfter: last.RetryAfter, Message: fmt.Sprintf("%s; gave up: %v", last.Message, err)}
			}
		}
		resp, _, err := c.Do(ctx, c.reads, r)
		switch {
		case err != nil:
			last = &platform.NotPerformed{Message: fmt.Sprintf("%s: %v", op, err)}
			if ctx.Err() != nil {
				return nil, last
			}
		case transientRead(resp.Status):
			np, ok := c.Classify(op, resp, false).(*platform.NotPerformed)
			if !ok {
				np = &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: %s", op, c.describe(resp))}
			}
			last = np
			if last.RetryAfter > maxReadWait {
				return nil, last
			}
		case resp.BodyErr != nil:
			last = &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: read response: %v", op, resp.BodyErr)}
		default:
			return resp, nil
		}
	}
	return nil, last
}

func transientRead(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return status >= 500
}

// Classify translates an answer that is not a success. write selects the
// meaning of a 5xx.
//
// For a write every 5xx is Ambiguous, 503 included: the status may come
// from a CDN, load balancer or mesh that had already forwarded the
// request and gave up waiting, and the platform itself may have acted
// before failing (Mastodon answered a replayed Idempotency-Key with 500;
// a Bluesky createRecord of an existing key answers 500). Only answers
// that prove the request was not processed keep a write NotPerformed: 429
// (Retry-After), 408 (the server did not receive the whole request, RFC
// 9110 §15.5.9) and 425 (refused as a possible replay, RFC 8470 §5.2).
// 401 is Unauthorized (the token was refused before any work), a redirect
// is Rejected (the API does not redirect; a proxy does when the base URL
// is wrong, and will again), and every other 4xx is Rejected. For a read
// a 5xx is NotPerformed.
func (c *Client) Classify(op string, resp *Response, write bool) error {
	msg := c.describe(resp)
	switch s := resp.Status; {
	case s == http.StatusUnauthorized:
		return &platform.Unauthorized{Message: fmt.Sprintf("%s: %s", op, msg)}
	case s == http.StatusTooManyRequests, s == http.StatusRequestTimeout, s == http.StatusTooEarly:
		return &platform.NotPerformed{Status: s, RetryAfter: c.retryAfter(resp), Message: fmt.Sprintf("%s: %s", op, msg)}
	case s >= 500:
		if write {
			return &platform.Ambiguous{Status: s, Err: fmt.Errorf("%s: %s", op, msg)}
		}
		return &platform.NotPerformed{Status: s, RetryAfter: c.retryAfter(resp), Message: fmt.Sprintf("%s: %s", op, msg)}
	case s >= 300 && s < 400:
		return &platform.Rejected{Status: s, Reason: fmt.Sprintf("http_%d", s), Message: fmt.Sprintf("%s: unexpected redirect; check the account's base URL", op)}
	default:
		return &platform.Rejected{Status: s, Reason: fmt.Sprintf("http_%d", s), Message: fmt.Sprintf("%s: %s", op, msg)}
	}
}

func (c *Client) describe(resp *Response) string {
	if c.Describe != nil {
		if m := c.Describe(resp); m != "" {
			return m
		}
	}
	if t := http.StatusText(resp.Status); t != "" {
		return strings.ToLower(t)
	}
	return fmt.Sprintf("http %d", resp.Status)
}

// retryAfter is Retry-After (seconds or an HTTP date), else the
// platform's own hint; 0 when none was given or it has passed.
func (c *Client) retryAfter(resp *Response) time.Duration {
	now := c.Now()
	if d, ok := StandardRetryAfter(resp.Header, now); ok {
		return d
	}
	if c.RetryAfter != nil {
		return ClampWait(c.RetryAfter(resp, now))
	}
	return 0
}

// StandardRetryAfter reads the Retry-After header, in seconds or as an
// HTTP date. ok is false when the header is absent or unreadable (NaN and
// infinities included); a wait beyond time.Duration is the longest one.
func StandardRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	secs, err := strconv.ParseFloat(v, 64)
	if err == nil && (math.IsNaN(secs) || math.IsInf(secs, 0)) {
		// "NaN", "Inf": not a number of seconds.
		return 0, false
	}
	if err == nil || errors.Is(err, strconv.ErrRange) {
		// Converting a float out of int64's range gives an
		// implementation-defined value (math.MinInt64 on amd64, clamped
		// to 0: "retry now" to a server asking for years).
		switch d := secs * float64(time.Second); {
		case d <= 0:
			return 0, true
		case d >= math.MaxInt64:
			return math.MaxInt64, true
		default:
			return time.Duration(d), true
		}
	}
	if t, err := http.ParseTime(v); err == nil {
		return ClampWait(t.Sub(now)), true
	}
	return 0, false
}

// ClampWait turns a negative wait into 0.
func ClampWait(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// Sleep waits for d or until ctx ends, whichever is first.
func Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Bearer is the Authorization header of an OAuth bearer token.
func Bearer(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}}
}
