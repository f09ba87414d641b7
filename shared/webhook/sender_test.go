package webhook

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/publishing"
)

// received is one request a test receiver got.
type received struct {
	Method  string
	Path    string
	Headers map[string]string
	Body    string
}

// receiver is an HTTP server on 127.0.0.1 that records what it gets and
// answers with answer (200 when nil).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(w http.ResponseWriter, r *http.Request)
}

func newReceiver(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h := map[string]string{}
		for _, k := range []string{"Content-Type", "User-Agent", HeaderID, HeaderTimestamp, HeaderSignature} {
			h[strings.ToLower(k)] = r.Header.Get(k)
		}
		rc.mu.Lock()
		rc.got = append(rc.got, received{Method: r.Method, Path: r.URL.RequestURI(), Headers: h, Body: string(body)})
		rc.mu.Unlock()
		if rc.answer != nil {
			rc.answer(w, r)
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

// requests returns what the receiver got so far.
func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// localhostURL is the receiver's URL by the name localhost (which
// resolves to 127.0.0.1), with path appended.
func (rc *receiver) localhostURL(path string) string {
	u, _ := url.Parse(rc.URL)
	return "http://localhost:" + u.Port() + path
}

// delivery is a delivery of a sample event.
func delivery(t *testing.T) (publishing.Delivery, []byte) {
	t.Helper()
	ev := publishing.Event{
		ID: publishing.EventID("test", t.Name()), Type: publishing.EventPublished,
		At: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), Post: "p_1", Account: "a_1", Status: "published",
	}
	body, err := ev.Body()
	if err != nil {
		t.Fatal(err)
	}
	return publishing.Delivery{ID: publishing.DeliveryID(ev.ID, "wh_1"), Event: ev, Subscription: "wh_1"}, body
}

func subscription(t *testing.T, url string, allowPrivate bool) publishing.Subscription {
	t.Helper()
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return publishing.Subscription{ID: "wh_1", URL: url, Secret: secret, AllowPrivate: allowPrivate}
}

// TestSendAsTheReferenceVerifier: a delivery is a POST of the exact body
// with the Standard Webhooks headers, and the npm reference verifier
// accepts it with the subscription's secret (and refuses it with the body
// changed).
func TestSendAsTheReferenceVerifier(t *testing.T) {
	verify := referenceVerifier(t)
	rc := newReceiver(t, nil)
	at := time.Now().Truncate(time.Second)
	s := NewSender(Options{Now: func() time.Time { return at }})
	sub := subscription(t, rc.URL+"/hooks/in?tenant=7", true)
	d, body := delivery(t)

	res := s.Send(context.Background(), sub, d, body)
	if res.Err != nil || res.Status != http.StatusOK {
		t.Fatalf("Send = %+v, want 200 and no error", res)
	}
	got := rc.requests()
	if len(got) != 1 {
		t.Fatalf("receiver got %d requests, want 1", len(got))
	}
	r := got[0]
	sig := r.Headers[HeaderSignature]
	want := received{Method: http.MethodPost, Path: "/hooks/in?tenant=7", Body: string(body), Headers: map[string]string{
		"content-type": "application/json", "user-agent": UserAgent,
		HeaderID: d.Event.ID, HeaderTimestamp: strconv.FormatInt(at.Unix(), 10), HeaderSignature: sig,
	}}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if err := verify(sub.Secret, r.Headers, []byte(r.Body)); err != nil {
		t.Errorf("reference verifier refused the delivery: %v", err)
	}
	tampered := strings.Replace(r.Body, `"published"`, `"failed"`, 1)
	if tampered == r.Body {
		t.Fatal("test bug: the body was not changed")
	}
	if err := verify(sub.Secret, r.Headers, []byte(tampered)); err == nil {
		t.Error("reference verifier accepted a tampered body")
	}
}

// TestSendTimestampIsTheAttempts: each attempt signs with its own time,
// and keeps the event's id.
func TestSendTimestampIsTheAttempts(t *testing.T) {
	rc := newReceiver(t, nil)
	now := time.Now()
	s := NewSender(Options{Now: func() time.Time { return now }})
	sub := subscription(t, rc.URL, true)
	d, body := delivery(t)
	for range 2 {
		if res := s.Send(context.Background(), sub, d, body); res.Err != nil {
			t.Fatal(res.Err)
		}
		now = now.Add(time.Minute)
	}
	got := rc.requests()
	if got[0].Headers[HeaderID] != got[1].Headers[HeaderID] {
		t.Errorf("webhook-id changed between attempts: %q, %q", got[0].Headers[HeaderID], got[1].Headers[HeaderID])
	}
	if a, b := got[0].Headers[HeaderTimestamp], got[1].Headers[HeaderTimestamp]; a == b {
		t.Errorf("webhook-timestamp %s on both attempts a minute apart", a)
	}
	if got[0].Headers[HeaderSignature] == got[1].Headers[HeaderSignature] {
		t.Error("the same signature for two timestamps")
	}
}

func TestSendStatuses(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name           string
		status         int
		retryAfter     string
		wantStatus     int
		wantRetryAfter time.Duration
		wantErr        string // "" for success
	}{
		{name: "200", status: 200, wantStatus: 200},
		{name: "204", status: 204, wantStatus: 204},
		{name: "202", status: 202, wantStatus: 202},
		{name: "410 Gone", status: 410, wantStatus: 410, wantErr: "answered 410 Gone"},
		{name: "429 seconds", status: 429, retryAfter: "120", wantStatus: 429, wantRetryAfter: 2 * time.Minute, wantErr: "answered 429 Too Many Requests"},
		{name: "503 date", status: 503, retryAfter: at.Add(90 * time.Second).Format(http.TimeFormat), wantStatus: 503, wantRetryAfter: 90 * time.Second, wantErr: "answered 503 Service Unavailable"},
		{name: "503 past date", status: 503, retryAfter: at.Add(-time.Hour).Format(http.TimeFormat), wantStatus: 503, wantErr: "503"},
		{name: "429 garbage", status: 429, retryAfter: "soon", wantStatus: 429, wantErr: "429"},
		{name: "429 without", status: 429, wantStatus: 429, wantErr: "429"},
		{name: "500 ignores Retry-After", status: 500, retryAfter: "120", wantStatus: 500, wantErr: "answered 500 Internal Server Error"},
		{name: "404", status: 404, wantStatus: 404, wantErr: "answered 404 Not Found"},
		{name: "400", status: 400, wantStatus: 400, wantErr: "400 Bad Request"},
		{name: "304", status: 304, wantStatus: 304, wantErr: "304 Not Modified, a redirect (not followed)"},
		{name: "unknown code", status: 599, wantStatus: 599, wantErr: "answered 599"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, `{"error":"nope"}`)
			})
			s := NewSender(Options{Now: func() time.Time { return at }})
			sub := subscription(t, rc.URL+"/in?token=receivers-own-token", true)
			d, body := delivery(t)
			res := s.Send(context.Background(), sub, d, body)
			if res.Status != tc.wantStatus || res.RetryAfter != tc.wantRetryAfter {
				t.Errorf("Send = status %d, Retry-After %v; want %d, %v", res.Status, res.RetryAfter, tc.wantStatus, tc.wantRetryAfter)
			}
			if tc.wantErr == "" {
				if res.Err != nil {
					t.Errorf("Send error = %v, want none", res.Err)
				}
				return
			}
			if res.Err == nil || !strings.Contains(res.Err.Error(), tc.wantErr) {
				t.Fatalf("Send error = %v, want one saying %q", res.Err, tc.wantErr)
			}
			sig := rc.requests()[0].Headers[HeaderSignature]
			for _, secretish := range []string{sub.Secret, strings.TrimPrefix(sub.Secret, SecretPrefix), strings.TrimPrefix(sig, "v1,"), "receivers-own-token"} {
				if strings.Contains(res.Err.Error(), secretish) {
					t.Errorf("error %q holds a secret, signature or the URL's query", res.Err)
				}
			}
		})
	}
}

// TestSendDoesNotFollowRedirects: a 302 is a failure, and where it points
// gets nothing.
func TestSendDoesNotFollowRedirects(t *testing.T) {
	target := newReceiver(t, nil)
	redirector := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/stolen", http.StatusFound)
	})
	s := NewSender(Options{})
	d, body := delivery(t)
	res := s.Send(context.Background(), subscription(t, redirector.URL, true), d, body)
	if res.Err == nil || res.Status != http.StatusFound || !strings.Contains(res.Err.Error(), "302 Found, a redirect (not followed)") {
		t.Errorf("Send = %+v, want a failure naming the 302", res)
	}
	if n := len(target.requests()); n != 0 {
		t.Errorf("the redirect's target got %d requests, want 0", n)
	}
}

// TestSendReadsLittleOfTheAnswer: a receiver that answers 200 with an
// endless body has the connection closed on it after a little: it never
// gets to write 32 MiB (more than socket buffers hold), which a sender
// reading the whole answer would let it (and then wait for the rest).
func TestSendReadsLittleOfTheAnswer(t *testing.T) {
	const bound = 32 << 20
	var written atomic.Int64
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 32<<10))
		for written.Load() < bound {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	s := NewSender(Options{})
	d, body := delivery(t)
	res := s.Send(context.Background(), subscription(t, rc.URL, true), d, body)
	if res.Err != nil || res.Status != http.StatusOK {
		t.Errorf("Send = %+v, want 200 and no error", res)
	}
	if n := written.Load(); n >= bound {
		t.Errorf("the receiver wrote %d bytes of answer, want the connection closed well before %d", n, bound)
	}
}

func TestSendTimesOut(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) }) // before rc.Close (cleanups run last first)
	s := NewSender(Options{Timeout: 200 * time.Millisecond})
	d, body := delivery(t)
	res := s.Send(context.Background(), subscription(t, rc.URL, true), d, body)
	if res.Err == nil || res.Status != 0 || !strings.Contains(res.Err.Error(), "Timeout") {
		t.Errorf("Send = %+v, want a timeout and no status", res)
	}
}

func TestSendRefusesBadSubscriptions(t *testing.T) {
	s := NewSender(Options{})
	d, body := delivery(t)
	good := subscription(t, "https://hooks.example.com/in", false)
	tests := []struct {
		name    string
		sub     publishing.Subscription
		wantErr string
	}{
		{"ftp", publishing.Subscription{ID: "wh_1", URL: "ftp://hooks.example.com/in", Secret: good.Secret}, "subscription wh_1: url: scheme \"ftp\""},
		{"http off loopback", publishing.Subscription{ID: "wh_1", URL: "http://hooks.example.com/in", Secret: good.Secret}, "http is allowed only to a loopback host"},
		{"no secret", publishing.Subscription{ID: "wh_1", URL: good.URL}, "subscription wh_1: sign: webhook secret is empty"},
		{"bad secret", publishing.Subscription{ID: "wh_1", URL: good.URL, Secret: "whsec_dG9vc2hvcnQ="}, "webhook secret is 8 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := s.Send(context.Background(), tc.sub, d, body)
			if res.Err == nil || !strings.Contains(res.Err.Error(), tc.wantErr) {
				t.Errorf("Send error = %v, want one saying %q", res.Err, tc.wantErr)
			}
		})
	}
}

// TestSendRefusesPrivateAtDial: localhost passes the URL's shape check
// (http to loopback) but resolves to 127.0.0.1, which the dialer refuses
// unless the subscription allows private receivers; a connection kept
// from an allowed subscription is not reused for one that is not.
func TestSendRefusesPrivateAtDial(t *testing.T) {
	rc := newReceiver(t, nil)
	s := NewSender(Options{})
	d, body := delivery(t)
	url := rc.localhostURL("/in")

	res := s.Send(context.Background(), subscription(t, url, false), d, body)
	var ae *AddressError
	if !errors.As(res.Err, &ae) || ae.Addr != "127.0.0.1" || res.Status != 0 {
		t.Fatalf("Send to localhost, private not allowed = %+v, want the dialer's AddressError for 127.0.0.1", res)
	}
	if !strings.Contains(res.Err.Error(), "127.0.0.1 is a loopback address; receivers must be public unless private ones are allowed (--allow-private, or allow_private in the API)") {
		t.Errorf("error %q does not say why", res.Err)
	}
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("receiver got %d requests from a refused send", n)
	}

	if res := s.Send(context.Background(), subscription(t, url, true), d, body); res.Err != nil || res.Status != 200 {
		t.Fatalf("Send to localhost, private allowed = %+v, want 200", res)
	}
	if res := s.Send(context.Background(), subscription(t, url, false), d, body); !errors.As(res.Err, &ae) {
		t.Errorf("Send after an allowed one reused its connection: %+v", res)
	}
	if n := len(rc.requests()); n != 1 {
		t.Errorf("receiver got %d requests, want 1 (the allowed one)", n)
	}
}

// TestPublicClientRefusesLiteralsAtDial: the public client refuses a
// literal blocked address by itself (without Send's URL check first).
func TestPublicClientRefusesLiteralsAtDial(t *testing.T) {
	rc := newReceiver(t, nil)
	s := NewSender(Options{})
	for _, u := range []string{rc.URL, strings.Replace(rc.URL, "127.0.0.1", "[::ffff:127.0.0.1]", 1)} {
		resp, err := s.public.Post(u, "application/json", strings.NewReader("{}"))
		if err == nil {
			_ = resp.Body.Close()
		}
		var ae *AddressError
		if !errors.As(err, &ae) {
			t.Errorf("public client to %s: %v, want an AddressError", u, err)
		}
	}
	if n := len(rc.requests()); n != 0 {
		t.Errorf("receiver got %d requests", n)
	}
}

// TestSendIgnoresProxyEnvironment: with every proxy variable pointing at
// a test proxy, nothing goes through it: not a delivery to a reachable
// receiver, not one to a name that does not resolve (which a client
// honouring HTTPS_PROXY would hand to the proxy to resolve).
func TestSendIgnoresProxyEnvironment(t *testing.T) {
	proxy := newReceiver(t, nil)
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"} {
		t.Setenv(k, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	rc := newReceiver(t, nil)
	s := NewSender(Options{Timeout: 3 * time.Second})
	for name, c := range map[string]*http.Client{"public": s.public, "private": s.private} {
		if c.Transport.(*http.Transport).Proxy != nil {
			t.Errorf("the %s client's transport has a Proxy", name)
		}
	}
	d, body := delivery(t)
	if res := s.Send(context.Background(), subscription(t, rc.URL, true), d, body); res.Err != nil {
		t.Errorf("Send to the receiver: %v", res.Err)
	}
	if res := s.Send(context.Background(), subscription(t, "https://receiver.invalid/in", true), d, body); res.Err == nil {
		t.Errorf("Send to receiver.invalid succeeded")
	}
	if n := len(proxy.requests()); n != 0 {
		t.Errorf("the proxy got %d requests, want 0", n)
	}
	if n := len(rc.requests()); n != 1 {
		t.Errorf("the receiver got %d requests, want 1", n)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-5", 0},
		{"30", 30 * time.Second},
		{" 30 ", 30 * time.Second},
		{"3600", time.Hour},
		{"99999999999", 0},
		{"1.5", 0},
		{now.Add(5 * time.Minute).Format(http.TimeFormat), 5 * time.Minute},
		{now.Add(-5 * time.Minute).Format(http.TimeFormat), 0},
		{"Tuesday", 0},
	}
	for _, tc := range tests {
		if got := RetryAfter(tc.in, now); got != tc.want {
			t.Errorf("RetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
