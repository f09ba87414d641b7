package mastodon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

// Every call goes through httpcall, which sends a write exactly once (no
// retry, no replay by net/http, no redirect followed) and classifies its
// outcome (every 5xx on a write is Ambiguous, 429/408/425 NotPerformed, 401
// Unauthorized, any other 4xx Rejected); reads are retried a little. What
// is Mastodon's own is here: the bearer token and Content-Type of each
// call, the error text (errorText, with the client's secrets redacted),
// the X-RateLimit-Reset hint on a 429, and the wording of a refusal.

// api is the httpcall client of every call. It is built on the first call,
// so that tests can replace now and readBackoff after New.
func (c *Client) api() *httpcall.Client {
	c.httpOnce.Do(func() {
		h := httpcall.New(c.httpClient)
		h.Describe = c.describe
		h.RetryAfter = func(resp *httpcall.Response, now time.Time) time.Duration {
			return rateLimitReset(resp.Status, resp.Header, now)
		}
		h.Now = c.now
		h.ReadBackoff = c.readBackoff
		c.http = h
	})
	return c.http
}

// call is a request to path on the server carrying the access token (the
// anonymous client, see anonymous, has none and sends no Authorization)
// and, when contentType is not empty, a Content-Type.
func (c *Client) call(method, path, contentType string, body []byte) httpcall.Request {
	h := http.Header{}
	if token := c.accessToken(); token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return httpcall.Request{Method: method, URL: c.baseURL + path, Header: h, Body: body}
}

// read sends a GET, retried on transient failures; see
// httpcall.Client.Read.
func (c *Client) read(ctx context.Context, op, path string, query url.Values) (*httpcall.Response, error) {
	r := c.call(http.MethodGet, path, "", nil)
	r.Query = query
	return c.api().Read(ctx, op, r)
}

// classify translates an unsuccessful answer (httpcall.Client.Classify;
// write selects the meaning of a 5xx). A refusal (Rejected) carries the
// server's text alone, as Mastodon words it ("Validation failed: …"), and
// a redirect names its target: only writes see one (reads follow them),
// the API does not redirect, and a proxy in front of it does when BaseURL
// is wrong (http instead of https, old domain).
func (c *Client) classify(op string, resp *httpcall.Response, write bool) error {
	err := c.api().Classify(op, resp, write)
	if rej, ok := err.(*platform.Rejected); ok {
		if resp.Status >= 300 && resp.Status < 400 {
			rej.Message = fmt.Sprintf("unexpected redirect to %q; check BaseURL", resp.Header.Get("Location"))
		} else {
			rej.Message = c.describe(resp)
		}
	}
	return err
}

// describe is errorText without the client's tokens and client secret: a
// proxy or server may echo the request's Authorization header in its error
// text, which ends up in logs and the ledger's reason.
func (c *Client) describe(resp *httpcall.Response) string {
	c.mu.Lock()
	cred := c.cred
	c.mu.Unlock()
	return httpcall.RedactString(errorText(resp), cred.AccessToken, cred.RefreshToken, cred.ClientSecret)
}

// errorText is the server's own explanation: the "error" field of a JSON
// error body (plus "error_description" when present), or the status text.
// Other bodies (HTML from a proxy) are not echoed.
func errorText(resp *httpcall.Response) string {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(resp.Body, &e) == nil && e.Error != "" {
		if e.Description != "" && e.Description != e.Error {
			return e.Error + ": " + e.Description
		}
		return e.Error
	}
	if t := http.StatusText(resp.Status); t != "" {
		return strings.ToLower(t)
	}
	return fmt.Sprintf("http %d", resp.Status)
}

// decodeCreated reads the entity in a 2xx answer to a write. An error means
// the write probably took effect but its result cannot be read.
func decodeCreated[T any](resp *httpcall.Response, valid func(T) bool) (T, error) {
	var v T
	if resp.BodyErr != nil {
		return v, fmt.Errorf("read response: %w", resp.BodyErr)
	}
	if err := json.Unmarshal(resp.Body, &v); err != nil {
		return v, fmt.Errorf("decode response: %w", err)
	}
	if !valid(v) {
		return v, errors.New("decode response: no id in the answer")
	}
	return v, nil
}

// retryAfter is the wait the server asked for: Retry-After in seconds or as
// an HTTP date (httpcall.StandardRetryAfter), otherwise, on a 429,
// Mastodon's X-RateLimit-Reset (see rateLimitReset). It is 0 when the
// server gave none or the time has passed. httpcall applies the same rule
// to the answers it classifies; this is for the OAuth grants, which
// golang.org/x/oauth2 sends.
func retryAfter(status int, h http.Header, now time.Time) time.Duration {
	if d, ok := httpcall.StandardRetryAfter(h, now); ok {
		return d
	}
	return httpcall.ClampWait(rateLimitReset(status, h, now))
}

// rateLimitReset is Mastodon's X-RateLimit-Reset as a wait: an ISO 8601
// time, or a number read as Unix seconds when it is large and as a delay
// otherwise. Mastodon sends it on most responses; it means "wait until
// then" only on a 429, so it is 0 for any other status (on a 5xx it would
// stall retries for minutes). The result may be negative (a time passed).
func rateLimitReset(status int, h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("X-RateLimit-Reset"))
	if v == "" || status != http.StatusTooManyRequests {
		return 0
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.Sub(now)
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n > 1e9 {
			return time.Unix(int64(n), 0).Sub(now)
		}
		return time.Duration(n * float64(time.Second))
	}
	return 0
}
