package mastodon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
)

func TestNewValidatesConfig(t *testing.T) {
	good := Config{BaseURL: "https://social.example", Credential: platform.Credential{AccessToken: "t"}}
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string // substring naming the field; "" means valid
	}{
		{"valid", func(*Config) {}, ""},
		{"valid with trailing slash and path", func(c *Config) { c.BaseURL = "http://127.0.0.1:8080/sandbox/" }, ""},
		{"missing base url", func(c *Config) { c.BaseURL = "" }, "BaseURL"},
		{"relative base url", func(c *Config) { c.BaseURL = "social.example" }, "BaseURL"},
		{"ftp base url", func(c *Config) { c.BaseURL = "ftp://social.example" }, "BaseURL"},
		{"base url with query", func(c *Config) { c.BaseURL = "https://social.example/?x=1" }, "BaseURL"},
		{"missing access token", func(c *Config) { c.Credential.AccessToken = "" }, "Credential.AccessToken"},
		{"negative max characters", func(c *Config) { c.MaxCharacters = -1 }, "MaxCharacters"},
		{"negative max media", func(c *Config) { c.MaxMedia = -1 }, "MaxMedia"},
		{"negative poll interval", func(c *Config) { c.MediaPollInterval = -time.Second }, "MediaPollInterval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.edit(&cfg)
			_, err := New(cfg)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("New succeeded, want an error naming %s", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("New error %q does not name %s", err, tt.wantErr)
			}
		})
	}
}

func TestCapabilities(t *testing.T) {
	c := newClient(t, "https://social.example")
	want := platform.Capabilities{Platform: "mastodon", NativeIdempotency: true, ReadableHistory: true, Replies: true, MaxTextGraphemes: 500, MaxMedia: 4,
		MaxMediaBytes: 16 << 20, MaxMediaPixels: 33_177_600, MaxAltText: 1500,
		Handle:        "Idempotency-Key header (the server keeps it 1 h)",
		ReadBack:      "the account's statuses newer than the one read before the send, matched by fingerprint",
		PostingLimits: []platform.Rate{{Count: 300, Per: 3 * time.Hour}}}
	if diff := cmp.Diff(want, c.Capabilities()); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	c = newClient(t, "https://social.example", func(cfg *Config) { cfg.MaxCharacters = 5000; cfg.MaxMedia = 8 })
	want.MaxTextGraphemes, want.MaxMedia = 5000, 8
	if diff := cmp.Diff(want, c.Capabilities()); diff != "" {
		t.Errorf("configured (-want +got):\n%s", diff)
	}
}

func TestPublishSendsOneKeyedRequest(t *testing.T) {
	created := time.Date(2026, 3, 1, 11, 59, 58, 123e6, time.UTC)
	type seen struct {
		Method, Path, Key, Auth, ContentType string
		ContentLength                        int64
		TransferEncoding                     []string
		Body                                 map[string]any
	}
	var got []seen
	var mu sync.Mutex
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("decode request: %v", err)
		}
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), r.Header.Get("Authorization"),
			r.Header.Get("Content-Type"), r.ContentLength, r.TransferEncoding, body})
		mu.Unlock()
		writeJSON(w, http.StatusOK, statusJSON("1001", "<p>hello</p>", created))
	}))
	c := newClient(t, srv.URL)

	receipt, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "entry-7f3a", Text: "hello", MediaIDs: []string{"m1", "m2"}})
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	wantReceipt := platform.Receipt{RemoteID: "1001", URL: "https://social.example/@me/1001", CreatedAt: created}
	if diff := cmp.Diff(wantReceipt, receipt); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}
	body := `{"status":"hello","media_ids":["m1","m2"],"visibility":"public"}`
	want := []seen{{
		Method: "POST", Path: "/api/v1/statuses", Key: "entry-7f3a", Auth: "Bearer access-1",
		ContentType: "application/json", ContentLength: int64(len(body)),
		Body: map[string]any{"status": "hello", "media_ids": []any{"m1", "m2"}, "visibility": "public"},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestPublishWithoutHandleSendsNothing(t *testing.T) {
	var n atomic.Int32
	srv := newServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
	c := newClient(t, srv.URL)
	_, err := c.Publish(context.Background(), platform.PublishRequest{Text: "hello"})
	if diff := cmp.Diff(outcome{Class: "rejected", Reason: "missing_handle", Message: "post status: the request has no idempotency handle"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if n.Load() != 0 {
		t.Errorf("server received %d requests, want 0", n.Load())
	}
}

// TestWriteStatusClassification runs every answer class through Publish,
// Delete and UploadMedia: all three are writes and classify alike.
func TestWriteStatusClassification(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   outcome
	}{
		{"400 bad request", 400, nil, `{"error":"Bad request"}`, outcome{Class: "rejected", Status: 400, Reason: "http_400", Message: "Bad request"}},
		{"403 forbidden", 403, nil, `{"error":"This action is not allowed"}`, outcome{Class: "rejected", Status: 403, Reason: "http_403", Message: "This action is not allowed"}},
		{"410 gone", 410, nil, `{"error":"Gone"}`, outcome{Class: "rejected", Status: 410, Reason: "http_410", Message: "Gone"}},
		{"422 validation", 422, nil, `{"error":"Validation failed: Text character limit of 500 exceeded"}`, outcome{Class: "rejected", Status: 422, Reason: "http_422", Message: "Validation failed: Text character limit of 500 exceeded"}},
		{"418 other 4xx, html body not echoed", 418, nil, `<html>teapot</html>`, outcome{Class: "rejected", Status: 418, Reason: "http_418", Message: "i'm a teapot"}},
		{"302 redirect not followed", 302, map[string]string{"Location": "/elsewhere"}, ``, outcome{Class: "rejected", Status: 302, Reason: "http_302", Message: `unexpected redirect to "/elsewhere"; check BaseURL`}},
		{"401 unauthorized", 401, nil, `{"error":"The access token is invalid"}`, outcome{Class: "unauthorized"}},
		{"429 with retry-after seconds", 429, map[string]string{"Retry-After": "30"}, `{"error":"Too many requests"}`, outcome{Class: "not_performed", Status: 429, RetryAfter: 30 * time.Second}},
		{"429 with x-ratelimit-reset only", 429, map[string]string{"X-RateLimit-Reset": "2026-03-01T12:05:00.000Z"}, ``, outcome{Class: "not_performed", Status: 429, RetryAfter: 5 * time.Minute}},
		{"429 without hints", 429, nil, ``, outcome{Class: "not_performed", Status: 429}},
		// A CDN or mesh may answer 503 after forwarding the write.
		{"503 unavailable", 503, nil, ``, outcome{Class: "ambiguous", Status: 503}},
		{"503 with retry-after date", 503, map[string]string{"Retry-After": "Sun, 01 Mar 2026 12:02:00 GMT"}, ``, outcome{Class: "ambiguous", Status: 503}},
		{"503 from mastodon's own maintenance page", 503, nil, `{"error":"There was a temporary problem serving your request, please try again"}`, outcome{Class: "ambiguous", Status: 503}},
		{"408 request timeout", 408, nil, ``, outcome{Class: "not_performed", Status: 408}},
		{"425 too early", 425, map[string]string{"Retry-After": "3"}, ``, outcome{Class: "not_performed", Status: 425, RetryAfter: 3 * time.Second}},
		{"500 internal error", 500, nil, `{"error":"NoMethodError"}`, outcome{Class: "ambiguous", Status: 500}},
		{"502 bad gateway", 502, nil, `<html>bad gateway</html>`, outcome{Class: "ambiguous", Status: 502}},
		{"504 gateway timeout", 504, nil, ``, outcome{Class: "ambiguous", Status: 504}},
		{"507 other 5xx", 507, nil, ``, outcome{Class: "ambiguous", Status: 507}},
	}
	calls := map[string]func(*Client) error{
		"publish": func(c *Client) error {
			_, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "x"})
			return err
		},
		"delete": func(c *Client) error { return c.Delete(context.Background(), "77") },
		"upload": func(c *Client) error {
			_, err := c.UploadMedia(context.Background(), platform.MediaUpload{Filename: "a.png", ContentType: "image/png", Data: []byte("png")})
			return err
		},
	}
	for _, tt := range tests {
		for name, call := range calls {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				var n atomic.Int32
				srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/elsewhere" {
						t.Errorf("write followed a redirect: %s %s", r.Method, r.URL.Path)
					}
					n.Add(1)
					io.Copy(io.Discard, r.Body)
					for k, v := range tt.header {
						w.Header().Set(k, v)
					}
					w.WriteHeader(tt.status)
					io.WriteString(w, tt.body)
				}))
				err := call(newClient(t, srv.URL))
				want := tt.want
				if name == "delete" && tt.status == http.StatusForbidden {
					// The delete protocol tells a 403 apart (see TestDeleteAnswers).
					want.Reason = ReasonForbidden
				}
				if diff := cmp.Diff(want, outcomeOf(t, err)); diff != "" {
					t.Errorf("outcome (-want +got):\n%s", diff)
				}
				if n.Load() != 1 {
					t.Errorf("server received %d requests, want exactly 1", n.Load())
				}
			})
		}
	}
}

func TestPublishUnreadableSuccessIsAmbiguous(t *testing.T) {
	tests := []struct {
		name    string
		handler func(t *testing.T, w http.ResponseWriter)
	}{
		{"truncated json", func(t *testing.T, w http.ResponseWriter) {
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `{"id":"1001","url":"https://social.exa`)
		}},
		{"body shorter than content-length", func(t *testing.T, w http.ResponseWriter) {
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"id\":\"1001\",")
			buf.Flush()
			conn.Close()
		}},
		{"not json", func(t *testing.T, w http.ResponseWriter) {
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `<html>ok</html>`)
		}},
		{"json without id", func(t *testing.T, w http.ResponseWriter) {
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `{"content":"<p>x</p>"}`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				io.Copy(io.Discard, r.Body)
				tt.handler(t, w)
			}))
			_, err := newClient(t, srv.URL).Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "x"})
			if diff := cmp.Diff(outcome{Class: "ambiguous", Status: 200}, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if n.Load() != 1 {
				t.Errorf("server received %d requests, want exactly 1", n.Load())
			}
		})
	}
}

func TestPublishTransportFailures(t *testing.T) {
	t.Run("timeout after the server read the request is ambiguous", func(t *testing.T) {
		var n atomic.Int32
		srv := silentServer(t, &n)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := newClient(t, srv.URL).Publish(ctx, platform.PublishRequest{Handle: "h", Text: "x"})
		if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %q does not wrap context.DeadlineExceeded", err)
		}
		if n.Load() != 1 {
			t.Errorf("server received %d requests, want exactly 1", n.Load())
		}
	})

	t.Run("connection refused is not performed", func(t *testing.T) {
		_, err := newClient(t, refusedURL(t)).Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "x"})
		if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})

	t.Run("context cancelled before sending is not performed", func(t *testing.T) {
		var n atomic.Int32
		srv := newServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := newClient(t, srv.URL).Publish(ctx, platform.PublishRequest{Handle: "h", Text: "x"})
		if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if n.Load() != 0 {
			t.Errorf("server received %d requests, want 0", n.Load())
		}
	})

	t.Run("server closes a fresh connection after reading the request", func(t *testing.T) {
		var n atomic.Int32
		srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			n.Add(1)
			hijackClose(t, w)
		}))
		_, err := newClient(t, srv.URL).Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "x"})
		if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if n.Load() != 1 {
			t.Errorf("server received %d requests, want exactly 1", n.Load())
		}
	})
}

// replayServer answers GET /api/v1/statuses/warm normally (leaving the
// keep-alive connection open) and, for every other request, reads it in
// full and closes the connection without answering. It records the remote
// address of each request so a test can check that the write travelled on
// the reused connection, the case in which net/http replays requests.
type replayServer struct {
	t     *testing.T
	mu    sync.Mutex
	warm  []string // remote addresses of warm-up GETs
	write []string // remote addresses of write attempts
}

func (s *replayServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	if r.Method == http.MethodGet {
		s.warm = append(s.warm, r.RemoteAddr)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, statusJSON("warm", "<p>warm</p>", fixedNow))
		return
	}
	s.write = append(s.write, r.RemoteAddr)
	s.mu.Unlock()
	hijackClose(s.t, w)
}

func (s *replayServer) writes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.write...)
}

// TestWritesAreNotReplayedOnReusedConnection proves that a write whose
// keep-alive connection dies after the server read it reaches the server
// exactly once. The control subtest shows that the transport does replay
// an ordinary request in the same situation, so the check can fail.
func TestWritesAreNotReplayedOnReusedConnection(t *testing.T) {
	writes := map[string]func(ctx context.Context, c *Client) error{
		"publish": func(ctx context.Context, c *Client) error {
			_, err := c.Publish(ctx, platform.PublishRequest{Handle: "entry-1", Text: "once"})
			return err
		},
		"delete": func(ctx context.Context, c *Client) error { return c.Delete(ctx, "42") },
		"upload": func(ctx context.Context, c *Client) error {
			_, err := c.UploadMedia(ctx, platform.MediaUpload{Filename: "a.png", ContentType: "image/png", Data: []byte("png")})
			return err
		},
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			rs := &replayServer{t: t}
			srv := newServer(t, rs)
			c := newClient(t, srv.URL)
			ctx := context.Background()
			if _, err := c.Exists(ctx, "warm"); err != nil {
				t.Fatalf("warm-up read: %v", err)
			}
			err := write(ctx, c)
			if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			got := rs.writes()
			if len(got) != 1 {
				t.Fatalf("server received %d copies of the write, want exactly 1 (from %v)", len(got), got)
			}
			if got[0] != rs.warm[0] {
				t.Fatalf("the write came on a new connection (%s, warm-up %s): the test did not exercise connection reuse", got[0], rs.warm[0])
			}
		})
	}

	t.Run("control: an ordinary keyed request is replayed", func(t *testing.T) {
		rs := &replayServer{t: t}
		srv := newServer(t, rs)
		hc := &http.Client{Transport: &http.Transport{}}
		t.Cleanup(hc.CloseIdleConnections)
		warm, err := hc.Get(srv.URL + "/api/v1/statuses/warm")
		if err != nil {
			t.Fatalf("warm-up: %v", err)
		}
		io.Copy(io.Discard, warm.Body)
		warm.Body.Close()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/statuses", bytes.NewReader([]byte(`{"status":"twice"}`)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Idempotency-Key", "entry-1")
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
		}
		if n := len(rs.writes()); n < 2 {
			t.Skipf("net/http no longer replays keyed requests (server saw %d); the guard in writeBody is now belt and braces", n)
		}
	})
}

func TestWritesAreNotFollowedAcrossRedirect(t *testing.T) {
	var target atomic.Int32
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			target.Add(1)
			writeJSON(w, http.StatusOK, statusJSON("1", "<p>x</p>", fixedNow))
			return
		}
		http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
	}))
	_, err := newClient(t, srv.URL).Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "x"})
	if got := outcomeOf(t, err); got.Class != "rejected" || got.Status != 307 {
		t.Errorf("outcome = %+v, want rejected 307", got)
	}
	if target.Load() != 0 {
		t.Errorf("redirect target received %d requests, want 0", target.Load())
	}
}

func TestDelete(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   outcome
	}{
		{"deleted", 200, `{"id":"42","text":"hello"}`, outcome{Class: "ok"}},
		{"not found", 404, `{"error":"Record not found"}`, outcome{Class: "rejected", Status: 404, Reason: "not_found", Message: "Record not found"}},
		{"server error", 500, ``, outcome{Class: "ambiguous", Status: 500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type seen struct {
				Method, Path, Auth string
				ContentLength      int64
				TransferEncoding   []string
				Body               string
			}
			var got []seen
			var mu sync.Mutex
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				got = append(got, seen{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.ContentLength, r.TransferEncoding, string(b)})
				mu.Unlock()
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			err := newClient(t, srv.URL).Delete(context.Background(), "42")
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			want := []seen{{Method: "DELETE", Path: "/api/v1/statuses/42", Auth: "Bearer access-1"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "120"}, 2 * time.Minute},
		{"zero seconds", map[string]string{"Retry-After": "0"}, 0},
		{"http date", map[string]string{"Retry-After": "Sun, 01 Mar 2026 12:00:45 GMT"}, 45 * time.Second},
		{"http date in the past", map[string]string{"Retry-After": "Sun, 01 Mar 2026 11:00:00 GMT"}, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"x-ratelimit-reset iso 8601", map[string]string{"X-RateLimit-Reset": "2026-03-01T12:10:00.000Z"}, 10 * time.Minute},
		{"x-ratelimit-reset with offset", map[string]string{"X-RateLimit-Reset": "2026-03-01T13:01:00+01:00"}, time.Minute},
		{"x-ratelimit-reset unix seconds", map[string]string{"X-RateLimit-Reset": "1772366430"}, 30 * time.Second},
		{"x-ratelimit-reset delay seconds", map[string]string{"X-RateLimit-Reset": "15"}, 15 * time.Second},
		{"retry-after wins over reset", map[string]string{"Retry-After": "5", "X-RateLimit-Reset": "2026-03-01T12:10:00.000Z"}, 5 * time.Second},
		{"unparseable retry-after falls back to reset", map[string]string{"Retry-After": "soon", "X-RateLimit-Reset": "2026-03-01T12:00:20Z"}, 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := retryAfter(http.StatusTooManyRequests, h, fixedNow); got != tt.want {
				t.Errorf("retryAfter = %s, want %s", got, tt.want)
			}
		})
	}
	// X-RateLimit-Reset is sent on most responses; only a 429 means "wait for it".
	h := http.Header{}
	h.Set("X-RateLimit-Reset", "2026-03-01T12:10:00.000Z")
	if got := retryAfter(http.StatusServiceUnavailable, h, fixedNow); got != 0 {
		t.Errorf("retryAfter(503 with X-RateLimit-Reset) = %s, want 0", got)
	}
}

// TestPublishOverHTTP2 checks that the non-rewindable write body works on
// the HTTP/2 transport, which real servers negotiate over TLS.
func TestPublishOverHTTP2(t *testing.T) {
	var proto atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto.Store(int32(r.ProtoMajor))
		var body struct{ Status string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Status != "over h2" {
			t.Errorf("body = %+v, %v", body, err)
		}
		writeJSON(w, http.StatusOK, statusJSON("5", "<p>over h2</p>", fixedNow))
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL, func(cfg *Config) { cfg.HTTPClient = srv.Client() })
	got, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "over h2"})
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if got.RemoteID != "5" || proto.Load() != 2 {
		t.Errorf("receipt %+v over HTTP/%d, want id 5 over HTTP/2", got, proto.Load())
	}
}

// A server or proxy that echoes the Authorization header in its error
// text does not get the token into our errors (logged, and recorded as
// the ledger's reason).
func TestEchoedTokenIsRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "refused " + r.Header.Get("Authorization")})
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL)
	_, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h1", Text: "hello"})
	if err == nil || strings.Contains(err.Error(), "access-1") {
		t.Errorf("error %v carries the access token", err)
	}
}

// The refusals Mastodon's adapter words itself (a delete refused, media
// already attached) redact an echoed token too.
func TestEchoedTokenIsRedactedInOwnRefusals(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "refused " + r.Header.Get("Authorization")})
	}))
	t.Cleanup(srv.Close)
	err := newClient(t, srv.URL).Delete(context.Background(), "110")
	if err == nil || strings.Contains(err.Error(), "access-1") {
		t.Errorf("delete error %v carries the access token", err)
	}
}
