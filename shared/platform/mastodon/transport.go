package mastodon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	// maxBodyBytes bounds how much of an answer is read.
	maxBodyBytes = 4 << 20
	// readAttempts is one try plus three retries.
	readAttempts = 4
	// maxReadWait is the longest pause a read accepts before its next try;
	// a server asking for more gets a NotPerformed carrying its RetryAfter.
	maxReadWait = 2 * time.Second
)

// request is one HTTP call to the server.
type request struct {
	method      string
	path        string
	query       url.Values
	contentType string
	// body is nil for calls without one. Writes always set it (an empty
	// slice for DELETE), see writeBody.
	body    []byte
	idemKey string
}

// response is the server's answer, read in full.
type response struct {
	status int
	header http.Header
	body   []byte
	// bodyErr is set when the body could not be read completely.
	bodyErr error
}

func success(status int) bool { return status >= 200 && status < 300 }

// writeBody is the body of every write: an in-memory reader set on the
// request after http.NewRequest, so that the request's GetBody stays nil.
//
// Why GetBody must stay nil: net/http's Transport silently sends a request a
// second time, on a new connection, when a reused keep-alive connection
// turns out to be dead after the request went out (the server closed it,
// EOF before the first response byte). It does so for requests it deems
// "replayable", and a POST counts as replayable when it carries an
// Idempotency-Key header and its body can be rewound through GetBody, which
// http.NewRequest sets for *bytes.Reader, *bytes.Buffer and *strings.Reader
// bodies. Every Publish carries an Idempotency-Key, so a plain request
// would be re-sent by the transport behind our back: a transport-level
// retry of a create, which DESIGN §1 forbids (the server may have acted on
// the first copy, and the key only deduplicates for an hour and not on
// every server version). Without GetBody the transport cannot rewind the
// body and does not replay; the same holds for the HTTP/2 transport, which
// then only retries a request on a connection that never became usable,
// i.e. when nothing was sent.
//
// Why io.NopCloser over a *bytes.Reader: net/http recognises that wrapping
// as an in-memory body and writes the headers and the body together. For a
// body type it does not recognise it flushes the headers first
// (net/http/transfer.go, "conservatively flush the headers", golang/go
// issue 22088), and then a server or proxy that drops the connection as
// soon as it has read the headers races the body write: the client reports
// "not completely written" for a request the server did see, and the same
// fault gives NotPerformed one time and Ambiguous the next. Both are
// correct for what the client saw, but a drill cannot explain them.
//
// DELETE gets an empty writeBody rather than none: a request with a nil
// body counts as rewindable, and the HTTP/2 transport re-sends those after
// some stream errors. The transport probes the empty body, finds it empty
// and sends the DELETE without a body or Content-Length.
func writeBody(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// do sends one request and reads the answer. wrote reports whether the
// transport finished writing the request (httptrace WroteRequest without an
// error); it is what tells "not performed" from "ambiguous" when err is set.
func (c *Client) do(ctx context.Context, hc *http.Client, r request) (resp *response, wrote bool, err error) {
	var written atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				written.Store(true)
			}
		},
	})
	u := c.baseURL + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, nil)
	if err != nil {
		return nil, false, fmt.Errorf("build request: %w", err)
	}
	if r.body != nil {
		req.Body = writeBody(r.body)
		req.ContentLength = int64(len(r.body))
		req.GetBody = nil
	}
	if token := c.accessToken(); token != "" {
		// Only the anonymous client (see anonymous) has none.
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "oncepost")
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if r.idemKey != "" {
		req.Header.Set("Idempotency-Key", r.idemKey)
	}

	hr, err := hc.Do(req)
	if err != nil {
		// Do returns after the transport's write loop has finished with the
		// request, so the trace has already reported the write.
		return nil, written.Load(), err
	}
	defer hr.Body.Close()
	resp = &response{status: hr.StatusCode, header: hr.Header}
	resp.body, resp.bodyErr = io.ReadAll(io.LimitReader(hr.Body, maxBodyBytes+1))
	if resp.bodyErr == nil && len(resp.body) > maxBodyBytes {
		resp.bodyErr = fmt.Errorf("response body exceeds %d bytes", maxBodyBytes)
	}
	return resp, true, nil
}

// write sends a write exactly once. A transport error becomes Ambiguous when
// the request had been completely written (the server may have acted on it:
// timeout while waiting for the answer, reset, closed connection) and
// NotPerformed when it had not (dial error, refused connection, DNS, TLS,
// context ended before sending): a server does not act on a request it has
// not received in full.
func (c *Client) write(ctx context.Context, op string, r request) (*response, error) {
	resp, wrote, err := c.do(ctx, c.writeClient, r)
	if err == nil {
		return resp, nil
	}
	if wrote {
		return nil, &platform.Ambiguous{Err: fmt.Errorf("%s: %w", op, err)}
	}
	return nil, &platform.NotPerformed{Message: fmt.Sprintf("%s: request not sent: %v", op, err)}
}

// read sends a GET and retries transient failures (transport errors, 408,
// 425, 429, 5xx, an unreadable body) with a short backoff bounded by ctx.
// Any other answer is returned for the caller to interpret; a failure that
// outlasts the retries is returned as NotPerformed (a read has no effect to
// be ambiguous about).
func (c *Client) read(ctx context.Context, op, path string, query url.Values) (*response, error) {
	var last *platform.NotPerformed
	for attempt := range readAttempts {
		if attempt > 0 {
			wait := c.readBackoff << (attempt - 1)
			if last.RetryAfter > wait {
				wait = last.RetryAfter
			}
			if err := sleep(ctx, wait); err != nil {
				return nil, &platform.NotPerformed{Status: last.Status, RetryAfter: last.RetryAfter, Message: fmt.Sprintf("%s; gave up: %v", last.Message, err)}
			}
		}
		resp, _, err := c.do(ctx, c.httpClient, request{method: http.MethodGet, path: path, query: query})
		switch {
		case err != nil:
			last = &platform.NotPerformed{Message: fmt.Sprintf("%s: %v", op, err)}
			if ctx.Err() != nil {
				return nil, last
			}
		case transientRead(resp.status):
			np, ok := c.classify(op, resp, false).(*platform.NotPerformed)
			if !ok {
				np = &platform.NotPerformed{Status: resp.status, Message: fmt.Sprintf("%s: %s", op, errorText(resp))}
			}
			last = np
			if last.RetryAfter > maxReadWait {
				return nil, last
			}
		case resp.bodyErr != nil:
			last = &platform.NotPerformed{Status: resp.status, Message: fmt.Sprintf("%s: read response: %v", op, resp.bodyErr)}
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

// classify translates an unsuccessful answer. write selects the meaning of
// a 5xx.
//
// For a write (create status, upload media, delete status) every 5xx is
// Ambiguous, 503 included: the status may come from a CDN, load balancer
// or service mesh that had already forwarded the request and gave up
// waiting for the instance, which then commits anyway; and the instance
// itself may have acted before failing (mastodon/mastodon#40399 answered a
// replayed Idempotency-Key with 500). Only answers that prove the request
// was not processed keep a write NotPerformed: 429 (rate limited before
// any work, Retry-After), 401 (Unauthorized: the token was refused before
// any work) and 408/425 (see below). Every other 4xx is Rejected.
//
// For a read a 5xx is just a failed read, NotPerformed: a read has no
// effect to be ambiguous about.
func (c *Client) classify(op string, resp *response, write bool) error {
	// A proxy or server may echo the request's Authorization header in
	// its error text; the text ends up in logs and the ledger's reason.
	c.mu.Lock()
	msg := redact(errorText(resp), c.cred.AccessToken, c.cred.RefreshToken, c.cred.ClientSecret)
	c.mu.Unlock()
	switch s := resp.status; {
	case s == http.StatusUnauthorized:
		return &platform.Unauthorized{Message: fmt.Sprintf("%s: %s", op, msg)}
	case s == http.StatusTooManyRequests,
		// 408 says the server did not receive the complete request in
		// time and closed without processing it (RFC 9110 §15.5.9); 425
		// says it refused to process a request that might be replayed
		// (RFC 8470 §5.2). A proxy answering 408 never received the whole
		// request either, so it cannot have forwarded a complete one.
		s == http.StatusRequestTimeout, s == http.StatusTooEarly:
		return &platform.NotPerformed{Status: s, RetryAfter: retryAfter(s, resp.header, c.now()), Message: fmt.Sprintf("%s: %s", op, msg)}
	case s >= 500:
		if write {
			return &platform.Ambiguous{Status: s, Err: fmt.Errorf("%s: %s", op, msg)}
		}
		return &platform.NotPerformed{Status: s, RetryAfter: retryAfter(s, resp.header, c.now()), Message: fmt.Sprintf("%s: %s", op, msg)}
	case s >= 300 && s < 400:
		// Only writes see a redirect (reads follow them). The API does not
		// redirect; a proxy in front of it does when BaseURL is wrong
		// (http instead of https, old domain), and it will do it again.
		return &platform.Rejected{Status: s, Reason: fmt.Sprintf("http_%d", s), Message: fmt.Sprintf("unexpected redirect to %q; check BaseURL", resp.header.Get("Location"))}
	default:
		return &platform.Rejected{Status: s, Reason: fmt.Sprintf("http_%d", s), Message: msg}
	}
}

// errorText is the server's own explanation: the "error" field of a JSON
// error body (plus "error_description" when present), or the status text.
// Other bodies (HTML from a proxy) are not echoed.
func errorText(resp *response) string {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(resp.body, &e) == nil && e.Error != "" {
		if e.Description != "" && e.Description != e.Error {
			return e.Error + ": " + e.Description
		}
		return e.Error
	}
	if t := http.StatusText(resp.status); t != "" {
		return strings.ToLower(t)
	}
	return fmt.Sprintf("http %d", resp.status)
}

// decodeCreated reads the entity in a 2xx answer to a write. An error means
// the write probably took effect but its result cannot be read.
func decodeCreated[T any](resp *response, valid func(T) bool) (T, error) {
	var v T
	if resp.bodyErr != nil {
		return v, fmt.Errorf("read response: %w", resp.bodyErr)
	}
	if err := json.Unmarshal(resp.body, &v); err != nil {
		return v, fmt.Errorf("decode response: %w", err)
	}
	if !valid(v) {
		return v, errors.New("decode response: no id in the answer")
	}
	return v, nil
}

// retryAfter is the wait the server asked for: Retry-After in seconds or as
// an HTTP date, otherwise Mastodon's X-RateLimit-Reset (an ISO 8601 time; a
// number is read as Unix seconds when it is large and as a delay otherwise).
// It is 0 when the server gave none or the time has passed.
func retryAfter(status int, h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
			return clampWait(time.Duration(secs) * time.Second)
		}
		if t, err := http.ParseTime(v); err == nil {
			return clampWait(t.Sub(now))
		}
	}
	// Mastodon sends X-RateLimit-Reset on most responses; it means "wait
	// until then" only on a 429. On a 5xx it would stall retries for minutes.
	if v := strings.TrimSpace(h.Get("X-RateLimit-Reset")); v != "" && status == http.StatusTooManyRequests {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return clampWait(t.Sub(now))
		}
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			if n > 1e9 {
				return clampWait(time.Unix(int64(n), 0).Sub(now))
			}
			return clampWait(time.Duration(n * float64(time.Second)))
		}
	}
	return 0
}

func clampWait(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// sleep waits for d or until ctx ends, whichever is first.
func sleep(ctx context.Context, d time.Duration) error {
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
