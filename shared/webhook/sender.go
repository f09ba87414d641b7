package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"oncepost/shared/publishing"
)

// Request and response limits of one attempt.
const (
	// DefaultTimeout bounds one attempt, connecting to reading the
	// answer (the spec suggests 15 to 30 s).
	DefaultTimeout = 15 * time.Second
	// MaxResponseBytes is how much of an answer's body is read (and
	// discarded) before the connection is closed.
	MaxResponseBytes = 64 << 10
	// UserAgent identifies oncepost's deliveries.
	UserAgent = "oncepost-webhooks/1"
)

// Headers of a Standard Webhooks request.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Options configure a Sender; the zero value is ready to use.
type Options struct {
	// Timeout bounds each attempt; default DefaultTimeout.
	Timeout time.Duration
	// Now is the clock the webhook-timestamp is read from; default
	// time.Now.
	Now func() time.Time
	// TLSClientConfig replaces the default TLS settings (a private CA,
	// tests); nil uses the system's roots.
	TLSClientConfig *tls.Config
}

// Sender posts deliveries to their subscriptions' URLs. It keeps two
// HTTP clients, one whose dialer refuses every non-public address and one
// for subscriptions that allow private receivers, so a connection made
// for one is never reused for the other. Neither uses a proxy (whatever
// HTTP_PROXY or HTTPS_PROXY say) or follows a redirect. Safe for
// concurrent use.
type Sender struct {
	public, private *http.Client
	now             func() time.Time
}

var _ publishing.WebhookSender = (*Sender)(nil)

// NewSender returns a Sender with opts.
func NewSender(opts Options) *Sender {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Sender{
		public:  newClient(opts, true),
		private: newClient(opts, false),
		now:     opts.Now,
	}
}

// newClient is an HTTP client without proxy or redirects; with
// publicOnly its dialer refuses the blocked ranges.
func newClient(opts Options, publicOnly bool) *http.Client {
	dialer := &net.Dialer{Timeout: opts.Timeout, KeepAlive: 30 * time.Second}
	if publicOnly {
		dialer.Control = checkDial
	}
	var tlsConf *tls.Config
	if opts.TLSClientConfig != nil {
		tlsConf = opts.TLSClientConfig.Clone()
	}
	transport := &http.Transport{
		// No proxy: with one, the dialer would only ever see the proxy's
		// address, and the receiver's would go unchecked.
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		TLSClientConfig:        tlsConf,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: MaxResponseBytes,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   opts.Timeout,
		// A 3xx is a failure (the spec): the redirect is not followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Send makes one attempt: it posts body to sub.URL, signed with
// sub.Secret, with d.Event.ID as webhook-id and this attempt's time as
// webhook-timestamp. A 2xx is success; 410 comes back with Status 410 for
// the notifier to disable the subscription; 429 and 503 carry their
// Retry-After; anything else is an error naming the status. Errors never
// hold the secret, the signature or the URL's path and query.
func (s *Sender) Send(ctx context.Context, sub publishing.Subscription, d publishing.Delivery, body []byte) publishing.SendResult {
	u, err := parseReceiverURL(sub.URL)
	if err != nil {
		return publishing.SendResult{Err: fmt.Errorf("subscription %s: %w", sub.ID, err)}
	}
	at := s.now()
	sig, err := Sign(sub.Secret, d.Event.ID, at, body)
	if err != nil {
		return publishing.SendResult{Err: fmt.Errorf("subscription %s: sign: %w", sub.ID, err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return publishing.SendResult{Err: fmt.Errorf("subscription %s: request: %w", sub.ID, unwrapURLError(err))}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set(HeaderID, d.Event.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(at.Unix(), 10))
	req.Header.Set(HeaderSignature, sig)

	client := s.public
	if sub.AllowPrivate {
		client = s.private
	}
	resp, err := client.Do(req)
	if err != nil {
		return publishing.SendResult{Err: fmt.Errorf("post to %s: %w", u.Host, unwrapURLError(err))}
	}
	// The answer's body means nothing; read a little of it so a short one
	// leaves the connection reusable, and close it.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes))
	_ = resp.Body.Close()

	res := publishing.SendResult{Status: resp.StatusCode}
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
	case code == http.StatusGone:
		res.Err = fmt.Errorf("%s answered %s", u.Host, statusText(code))
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		res.RetryAfter = RetryAfter(resp.Header.Get("Retry-After"), at)
		res.Err = fmt.Errorf("%s answered %s", u.Host, statusText(code))
	case code >= 300 && code <= 399:
		res.Err = fmt.Errorf("%s answered %s, a redirect (not followed)", u.Host, statusText(code))
	default:
		res.Err = fmt.Errorf("%s answered %s", u.Host, statusText(code))
	}
	return res
}

// RetryAfter parses a Retry-After value, delay seconds or an HTTP date
// (RFC 9110 §10.2.3), as the time to wait from now; zero when it is
// absent, unparsable or past.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 || n > int64(365*24*time.Hour/time.Second) {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// statusText is "503 Service Unavailable" (or the bare code).
func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code)
}

// unwrapURLError drops url.Error's "Post \"<url>\"" prefix: a receiver's
// path or query may carry a token of theirs.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
