package x

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
	"oncepost/shared/platform/adaptertest"
	"oncepost/shared/post"
)

func TestNewValidatesConfig(t *testing.T) {
	good := Config{Credential: platform.Credential{AccessToken: "t"}}
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string // substring naming the field; "" means valid
	}{
		{"valid with defaults", func(*Config) {}, ""},
		{"valid test base url with slash", func(c *Config) { c.BaseURL = "http://127.0.0.1:8080/x/" }, ""},
		{"valid user id and pages", func(c *Config) { c.UserID = "2244994945"; c.LookupPages = 32 }, ""},
		{"relative base url", func(c *Config) { c.BaseURL = "api.x.com" }, "BaseURL"},
		{"base url with query", func(c *Config) { c.BaseURL = "https://api.x.com/?a=1" }, "BaseURL"},
		{"ftp token url", func(c *Config) { c.TokenURL = "ftp://api.x.com/token" }, "TokenURL"},
		{"missing access token", func(c *Config) { c.Credential.AccessToken = "" }, "Credential.AccessToken"},
		{"user id that is not a number", func(c *Config) { c.UserID = "../2/tweets" }, "UserID"},
		{"negative lookup pages", func(c *Config) { c.LookupPages = -1 }, "LookupPages"},
		{"too many lookup pages", func(c *Config) { c.LookupPages = 33 }, "LookupPages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.edit(&cfg)
			_, err := New(cfg)
			adaptertest.CheckNewError(t, err, tt.wantErr)
		})
	}
}

func TestCapabilities(t *testing.T) {
	c := newClient(t, "https://api.x.com")
	got := c.Capabilities()
	want := platform.Capabilities{
		Platform: "x", NativeIdempotency: false, LookupByHandle: false, ReadableHistory: true, Replies: true,
		MaxTextGraphemes: 280, MaxMedia: 4, MaxMediaBytes: 5 << 20, MaxAltText: 1000,
		PostingLimits:   []platform.Rate{{Count: 100, Per: 15 * time.Minute}},
		DuplicateWindow: 36 * time.Hour,
	}
	if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool {
		n := p.Last().String()
		return n == ".Handle" || n == ".ReadBack"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("capabilities (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(got.Handle, "none") || !strings.Contains(got.ReadBack, "500 posts") {
		t.Errorf("Handle %q / ReadBack %q do not say what the handle becomes and how far Lookup reads", got.Handle, got.ReadBack)
	}
	if got.Guarantee() != platform.ReadBack {
		t.Errorf("guarantee = %q, want %q", got.Guarantee(), platform.ReadBack)
	}
	var _ platform.TextMeasurer = c
}

func TestConnectorBuildsClientForAccount(t *testing.T) {
	f := newFakeX(t)
	srv := newServer(t, f)
	pc, err := Connector{ClientID: "client-id"}.Client(context.Background(),
		post.Account{Platform: "x", BaseURL: srv.URL, RemoteID: testUserID}, platform.Credential{AccessToken: testAccess})
	if err != nil {
		t.Fatalf("Client: %v", err)
	}
	c := pc.(*Client)
	if c.tokenURL != srv.URL+"/2/oauth2/token" || c.userID != testUserID {
		t.Errorf("token URL %q, user %q; want the account's base URL's token endpoint and its remote id", c.tokenURL, c.userID)
	}
	if _, err := (Connector{}).Client(context.Background(), post.Account{RemoteID: "not-an-id"}, platform.Credential{AccessToken: "t"}); err == nil {
		t.Error("Connector accepted a remote id that is not an X user id")
	}
	c, err = New(Config{Credential: platform.Credential{AccessToken: "t"}})
	if err != nil || c.base != DefaultBaseURL || c.tokenURL != DefaultTokenURL {
		t.Errorf("defaults: base %q token %q err %v", c.base, c.tokenURL, err)
	}
}

// TestPublishSendsOneRequest checks the create's shape against
// https://docs.x.com/x-api/posts/manage-tweets/quickstart and
// https://docs.x.com/x-api/posts/create-post: POST /2/tweets, a user
// access token as Bearer, a JSON body of text and media.media_ids, 201
// {"data": {"id", "text"}}. X has no idempotency key: the ledger's handle
// must not be sent anywhere (nothing X would read).
func TestPublishSendsOneRequest(t *testing.T) {
	type seen struct {
		Method, Path, Auth, ContentType string
		Body                            map[string]any
	}
	const handle = "entry-7f3a-handle"
	tests := []struct {
		name     string
		req      platform.PublishRequest
		wantBody map[string]any
	}{
		{"text and media",
			platform.PublishRequest{Handle: handle, Text: "hello", MediaIDs: []string{"1880028106020515841", "1880028106020515842"}},
			map[string]any{"text": "hello", "media": map[string]any{"media_ids": []any{"1880028106020515841", "1880028106020515842"}}}},
		{"text only has no media field",
			platform.PublishRequest{Handle: handle, Text: "hello again"},
			map[string]any{"text": "hello again"}},
		{"media only sends empty text",
			platform.PublishRequest{Handle: handle, MediaIDs: []string{"1880028106020515841"}},
			map[string]any{"text": "", "media": map[string]any{"media_ids": []any{"1880028106020515841"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu  sync.Mutex
				got []seen
			)
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				raw, _ := io.ReadAll(r.Body)
				var body map[string]any
				if err := json.Unmarshal(raw, &body); err != nil {
					t.Errorf("decode request: %v", err)
				}
				for k, vs := range r.Header {
					if strings.Contains(strings.Join(vs, ","), handle) {
						t.Errorf("header %s carries the ledger handle; X has no idempotency header", k)
					}
				}
				if strings.Contains(string(raw), handle) {
					t.Errorf("body %s carries the ledger handle", raw)
				}
				mu.Lock()
				got = append(got, seen{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), body})
				mu.Unlock()
				writeJSON(w, http.StatusCreated, map[string]any{"data": map[string]any{"id": "1445880548472328192", "text": "hello"}})
			}))
			receipt, err := newClient(t, srv.URL).Publish(context.Background(), tt.req)
			if diff := cmp.Diff(outcome{Class: "ok"}, outcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(platform.Receipt{RemoteID: "1445880548472328192", URL: "https://x.com/i/web/status/1445880548472328192"}, receipt); diff != "" {
				t.Errorf("receipt (-want +got):\n%s", diff)
			}
			want := []seen{{Method: "POST", Path: "/2/tweets", Auth: "Bearer " + testAccess, ContentType: "application/json", Body: tt.wantBody}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPublishRefusesLocally: what X would refuse is refused before any
// request; exactly 280 weighted characters is sent.
func TestPublishRefusesLocally(t *testing.T) {
	at280 := strings.Repeat("a", 256) + " https://example.com/a/very/long/path/that/counts/as/23" // 256 + 1 + 23 = 280
	tests := []struct {
		name     string
		req      platform.PublishRequest
		want     outcome
		requests int32
	}{
		{"exactly 280 weighted characters is sent", platform.PublishRequest{Text: at280}, outcome{Class: "ok"}, 1},
		{"281 weighted characters", platform.PublishRequest{Text: at280 + "!"}, outcome{Class: "rejected", Reason: "text_too_long",
			Message: "post tweet: the text weighs 281 characters as X counts them, X allows 280"}, 0},
		{"141 CJK characters weigh 282", platform.PublishRequest{Text: strings.Repeat("字", 141)}, outcome{Class: "rejected", Reason: "text_too_long",
			Message: "post tweet: the text weighs 282 characters as X counts them, X allows 280"}, 0},
		{"five attachments", platform.PublishRequest{Text: "x", MediaIDs: []string{"1", "2", "3", "4", "5"}}, outcome{Class: "rejected", Reason: "too_many_media",
			Message: "post tweet: 5 attachments, X allows 4"}, 0},
		{"no text and no media", platform.PublishRequest{Text: "  \n"}, outcome{Class: "rejected", Reason: "invalid_request",
			Message: "post tweet: a post needs text or media"}, 0},
		{"media id that is not X's", platform.PublishRequest{Text: "x", MediaIDs: []string{"../../2/users"}}, outcome{Class: "rejected", Reason: "invalid_request",
			Message: `post tweet: media id "../../2/users" is not an X media id`}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				writeJSON(w, http.StatusCreated, map[string]any{"data": map[string]any{"id": "1445880548472328192", "text": "x"}})
			}))
			_, err := newClient(t, srv.URL).Publish(context.Background(), tt.req)
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if n.Load() != tt.requests {
				t.Errorf("server received %d requests, want %d", n.Load(), tt.requests)
			}
		})
	}
}

// TestDuplicateContentIsASignalToLook: a re-send of a post that X has
// already got is refused with the duplicate-content 403
// (akrherz/iembot#163: {"detail":"You are not allowed to create a Tweet
// with duplicate content.","type":"about:blank","title":"Forbidden",
// "status":403}); the adapter returns ReasonDuplicate, and a Lookup then
// finds the earlier post. The fake holds one post.
func TestDuplicateContentIsASignalToLook(t *testing.T) {
	f := newFakeX(t)
	before := f.seed("an older post")
	srv := newServer(t, f)
	c := newClient(t, srv.URL)
	ctx := context.Background()
	const text = "Release 2.1 is out: https://example.org/releases/2.1 & more"

	first, err := c.Publish(ctx, platform.PublishRequest{Handle: "h1", Text: text})
	if err != nil {
		t.Fatalf("first Publish: %v", err)
	}
	_, err = c.Publish(ctx, platform.PublishRequest{Handle: "h1", Text: text})
	want := outcome{Class: "rejected", Status: 403, Reason: platform.ReasonDuplicate, Message: "You are not allowed to create a Tweet with duplicate content."}
	if diff := cmp.Diff(want, outcomeOf(t, err)); diff != "" {
		t.Fatalf("re-send outcome (-want +got):\n%s", diff)
	}
	got, found, err := c.Lookup(ctx, platform.LookupQuery{Fingerprint: platform.Fingerprint(text, nil), After: before[0], Text: text})
	if err != nil || !found {
		t.Fatalf("Lookup: found %v, err %v; want the first post", found, err)
	}
	if got.RemoteID != first.RemoteID || got.Text != text {
		t.Errorf("found %q %q, want %q %q", got.RemoteID, got.Text, first.RemoteID, text)
	}
	if f.postCount() != 2 {
		t.Errorf("fake holds %d posts, want 2 (the older one and ours)", f.postCount())
	}
}

// TestWriteStatusClassification runs X's error answers through Publish,
// Delete and UploadMedia (all writes). Bodies follow
// https://docs.x.com/x-api/fundamentals/response-codes-and-errors; the
// 429's x-rate-limit-reset is a Unix time
// (https://docs.x.com/x-api/fundamentals/rate-limits).
func TestWriteStatusClassification(t *testing.T) {
	reset := strconv.FormatInt(fixedNow.Add(90*time.Second).Unix(), 10)
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   outcome
	}{
		{"400 invalid request", 400, nil, `{"errors":[{"parameters":{"text":[""]},"message":"Invalid text"}],"title":"Invalid Request","detail":"One or more parameters to your request was invalid.","type":"https://api.x.com/2/problems/invalid-request"}`,
			outcome{Class: "rejected", Status: 400, Reason: "http_400", Message: "%s: One or more parameters to your request was invalid."}},
		{"403 forbidden", 403, nil, `{"title":"Forbidden","detail":"You are not permitted to perform this action.","type":"about:blank","status":403}`,
			outcome{Class: "rejected", Status: 403, Reason: "http_403", Message: "%s: You are not permitted to perform this action."}},
		{"html body is not echoed", 418, nil, `<html>teapot</html>`, outcome{Class: "rejected", Status: 418, Reason: "http_418", Message: "%s: i'm a teapot"}},
		{"401 unauthorized", 401, nil, `{"title":"Unauthorized","type":"about:blank","status":401,"detail":"Unauthorized"}`, outcome{Class: "unauthorized"}},
		{"429 with x-rate-limit-reset", 429, map[string]string{"x-rate-limit-limit": "100", "x-rate-limit-remaining": "0", "x-rate-limit-reset": reset},
			`{"title":"Too Many Requests","detail":"Too Many Requests","type":"about:blank","status":429}`, outcome{Class: "not_performed", Status: 429, RetryAfter: 90 * time.Second}},
		{"429 with a reset in the past", 429, map[string]string{"x-rate-limit-reset": strconv.FormatInt(fixedNow.Add(-time.Minute).Unix(), 10)}, ``,
			outcome{Class: "not_performed", Status: 429}},
		{"429 without headers", 429, nil, ``, outcome{Class: "not_performed", Status: 429}},
		{"500 internal error", 500, map[string]string{"x-rate-limit-reset": reset}, `{"title":"Internal Server Error","type":"about:blank","status":500}`, outcome{Class: "ambiguous", Status: 500}},
		{"503 over capacity", 503, nil, `{"title":"Service Unavailable","detail":"Service Unavailable","type":"about:blank","status":503}`, outcome{Class: "ambiguous", Status: 503}},
		{"504 gateway timeout", 504, nil, ``, outcome{Class: "ambiguous", Status: 504}},
	}
	calls := map[string]struct {
		op   string
		call func(*Client) error
	}{
		"publish": {"post tweet", func(c *Client) error {
			_, err := c.Publish(context.Background(), platform.PublishRequest{Text: "x"})
			return err
		}},
		"delete": {"delete tweet", func(c *Client) error { return c.Delete(context.Background(), "1445880548472328192") }},
		"upload": {"upload media: initialize", func(c *Client) error {
			_, err := c.UploadMedia(context.Background(), platform.MediaUpload{ContentType: "image/png", Data: []byte("png")})
			return err
		}},
	}
	for _, tt := range tests {
		for name, call := range calls {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				var n atomic.Int32
				srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					n.Add(1)
					io.Copy(io.Discard, r.Body)
					for k, v := range tt.header {
						w.Header().Set(k, v)
					}
					w.WriteHeader(tt.status)
					io.WriteString(w, tt.body)
				}))
				err := call.call(newClient(t, srv.URL))
				want := tt.want
				if want.Message != "" {
					want.Message = strings.Replace(want.Message, "%s", call.op, 1)
				}
				if diff := cmp.Diff(want, outcomeOf(t, err)); diff != "" {
					t.Errorf("outcome (-want +got):\n%s", diff)
				}
				if n.Load() != 1 {
					t.Errorf("server received %d requests, want exactly 1 (writes are never re-sent)", n.Load())
				}
			})
		}
	}
}

// TestRateLimitOnReads: a 429 on a timeline read is NotPerformed with the
// reset as RetryAfter, without waiting that long. The answer is X's
// (https://docs.x.com/x-api/fundamentals/rate-limits: x-rate-limit-reset
// in Unix seconds; body per …/response-codes-and-errors).
func TestRateLimitOnReads(t *testing.T) {
	var n atomic.Int32
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("x-rate-limit-reset", strconv.FormatInt(fixedNow.Add(7*time.Minute).Unix(), 10))
		writeJSON(w, http.StatusTooManyRequests, problemJSON(429, "Too Many Requests", "Too Many Requests"))
	}))
	_, _, err := newClient(t, srv.URL).Lookup(context.Background(), platform.LookupQuery{Fingerprint: "f", After: "1846000000000000100"})
	if diff := cmp.Diff(outcome{Class: "not_performed", Status: 429, RetryAfter: 7 * time.Minute}, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if n.Load() != 1 {
		t.Errorf("server received %d reads, want 1 (a wait beyond the read retry budget is returned at once)", n.Load())
	}
}

// TestPublishUnreadableSuccessIsAmbiguous: a 201 whose body is not the
// documented {"data": {"id", "text"}} (https://docs.x.com/x-api/posts/create-post)
// means the post probably exists.
func TestPublishUnreadableSuccessIsAmbiguous(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"truncated json", `{"data":{"id":"14458805484`},
		{"not json", `<html>ok</html>`},
		{"json without id", `{"data":{"text":"x"}}`},
		{"errors only", `{"errors":[{"title":"Internal Error"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, tt.body)
			}))
			_, err := newClient(t, srv.URL).Publish(context.Background(), platform.PublishRequest{Text: "x"})
			if diff := cmp.Diff(outcome{Class: "ambiguous", Status: 201}, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

// Test5xxAfterCommitThenLookupFinds: the fake stores the post, then
// answers 500 (X failed after the write). Publish is Ambiguous and sends
// exactly one create (an implementation that retried a create on 5xx
// would make two); Lookup from the pre-send newest post finds it.
func Test5xxAfterCommitThenLookupFinds(t *testing.T) {
	f := newFakeX(t)
	before := f.seed("yesterday's post", "this morning's post")
	f.afterCreate = func(w http.ResponseWriter, r *http.Request) bool {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"title": "Internal Server Error", "type": "about:blank", "status": 500})
		return true
	}
	srv := newServer(t, f)
	c := newClient(t, srv.URL)
	const text = "Our café opens at 9 <today> — menu: https://example.com/menu?day=mon&lang=en"
	mediaSHA := map[string]string{"1880028106020515841": "aa11"}

	_, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: text, MediaIDs: []string{"1880028106020515841"}})
	if diff := cmp.Diff(outcome{Class: "ambiguous", Status: 500}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("outcome (-want +got):\n%s", diff)
	}
	got, found, err := c.Lookup(context.Background(), platform.LookupQuery{
		Fingerprint: platform.Fingerprint(text, []string{"aa11"}), MediaSHA256: mediaSHA, After: before[1], Text: text})
	if err != nil || !found {
		t.Fatalf("Lookup: found %v, err %v", found, err)
	}
	want := platform.RemotePost{RemoteID: "1846000000000000103", Text: text, MediaIDs: []string{"1880028106020515841"},
		URL: "https://x.com/i/web/status/1846000000000000103", CreatedAt: fixedNow.Add(-time.Minute + 3*time.Second)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("found (-want +got):\n%s", diff)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.creates != 1 || len(f.posts) != 3 {
		t.Errorf("fake received %d creates and holds %d posts, want 1 create and 3 posts", f.creates, len(f.posts))
	}
	if len(f.reads) != 1 || !strings.Contains(f.reads[0], "since_id="+before[1]) {
		t.Errorf("timeline reads %q, want one read with since_id=%s", f.reads, before[1])
	}
}

// TestTimeoutAfterCommitThenLookupFinds: the fake stores the post and
// then holds the answer past the client's deadline. Publish is Ambiguous
// (the request was written), wraps the deadline, and Lookup finds the
// post.
func TestTimeoutAfterCommitThenLookupFinds(t *testing.T) {
	f := newFakeX(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f.afterCreate = func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return true
	}
	srv := newServer(t, f)
	c := newClient(t, srv.URL)
	const text = "timeout after commit"
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.Publish(ctx, platform.PublishRequest{Handle: "h", Text: text})
	if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("outcome (-want +got):\n%s", diff)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %q does not wrap context.DeadlineExceeded", err)
	}
	got, found, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: platform.Fingerprint(text, nil), After: platform.StartOfHistory})
	if err != nil || !found || got.Text != text {
		t.Fatalf("Lookup: %+v found %v err %v", got, found, err)
	}
	if f.postCount() != 1 {
		t.Errorf("fake holds %d posts, want 1", f.postCount())
	}
}

// TestRequestNeverSentIsNotPerformed: a refused connection and a context
// that ended before sending are NotPerformed for every write.
func TestRequestNeverSentIsNotPerformed(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name string
		base string
		ctx  context.Context
	}{
		{"closed listener", refusedURL(t), context.Background()},
		{"context ended first", "http://127.0.0.1:1", cancelled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, tt.base)
			_, perr := c.Publish(tt.ctx, platform.PublishRequest{Text: "x"})
			derr := c.Delete(tt.ctx, "1445880548472328192")
			_, uerr := c.UploadMedia(tt.ctx, platform.MediaUpload{ContentType: "image/png", Data: []byte("png")})
			for name, err := range map[string]error{"publish": perr, "delete": derr, "upload": uerr} {
				if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
					t.Errorf("%s outcome (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

// TestExists reads GET /2/tweets/:id (https://docs.x.com/x-api/posts/get-post-by-id):
// the fake first, then single answers shaped per
// https://docs.x.com/x-api/fundamentals/response-codes-and-errors (a 404
// problem body, a 200 with only partial errors, 401, 5xx) and a proxy's
// HTML 404.
func TestExists(t *testing.T) {
	f := newFakeX(t)
	ids := f.seed("there")
	srv := newServer(t, f)
	c := newClient(t, srv.URL)
	if ok, err := c.Exists(context.Background(), ids[0]); !ok || err != nil {
		t.Errorf("Exists(stored) = %v, %v; want true", ok, err)
	}
	// X answers 200 with only a resource-not-found error for a missing post.
	if ok, err := c.Exists(context.Background(), "1846000000000009999"); ok || err != nil {
		t.Errorf("Exists(missing) = %v, %v; want false, nil", ok, err)
	}

	tests := []struct {
		name   string
		status int
		body   string
		want   bool
		out    outcome
	}{
		{"404 with X's problem body", 404, `{"title":"Not Found Error","detail":"Could not find tweet","type":"https://api.x.com/2/problems/resource-not-found"}`, false, outcome{Class: "ok"}},
		{"404 from a proxy", 404, `<html>not found</html>`, false, outcome{Class: "rejected", Status: 404, Reason: "http_404",
			Message: "read tweet 1445880548472328192: 404 without X's error body (a proxy's page? check the base URL); cannot tell whether the post exists"}},
		{"200 with another error", 200, `{"errors":[{"title":"Authorization Error","type":"https://api.x.com/2/problems/not-authorized-for-resource","resource_id":"1445880548472328192"}]}`, false, outcome{Class: "not_performed", Status: 200}},
		{"401", 401, `{"title":"Unauthorized","status":401}`, false, outcome{Class: "unauthorized"}},
		{"500 keeps failing", 500, ``, false, outcome{Class: "not_performed", Status: 500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			got, err := newClient(t, srv.URL).Exists(context.Background(), "1445880548472328192")
			if got != tt.want {
				t.Errorf("Exists = %v, want %v", got, tt.want)
			}
			if diff := cmp.Diff(tt.out, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeleteTwice: deleting a post twice is nil both times; the fake
// removed it once and answered the second DELETE 404.
func TestDeleteTwice(t *testing.T) {
	f := newFakeX(t)
	ids := f.seed("to be deleted", "to stay")
	srv := newServer(t, f)
	c := newClient(t, srv.URL)
	for i := range 2 {
		if err := c.Delete(context.Background(), ids[0]); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deleted[ids[0]] != 1 || f.gone404[ids[0]] != 1 {
		t.Errorf("fake deleted %d times and answered 404 %d times, want 1 and 1", f.deleted[ids[0]], f.gone404[ids[0]])
	}
	if len(f.posts) != 1 || f.posts[0].id != ids[1] {
		t.Errorf("fake holds %+v, want only the other post", f.posts)
	}
}

// TestDeleteAnswers: DELETE /2/tweets/:id answers other than the
// documented {"data": {"deleted": true}} (https://docs.x.com/x-api/posts/delete-post):
// deleted false, no data, a bare 404; and an id that is not X's is never
// sent.
func TestDeleteAnswers(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   outcome
	}{
		{"deleted false", 200, `{"data":{"deleted":false}}`, outcome{Class: "rejected", Status: 200, Reason: "not_deleted", Message: "delete tweet 1445880548472328192: X answered deleted: false"}},
		{"2xx without answer", 200, `{}`, outcome{Class: "ambiguous", Status: 200}},
		{"404 from anywhere is gone", 404, ``, outcome{Class: "ok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodDelete || r.URL.Path != "/2/tweets/1445880548472328192" {
					t.Errorf("request %s %s", r.Method, r.URL.Path)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			err := newClient(t, srv.URL).Delete(context.Background(), "1445880548472328192")
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
	err := newClient(t, refusedURL(t)).Delete(context.Background(), "12/../../2/users/me")
	if diff := cmp.Diff(outcome{Class: "rejected", Reason: "invalid_request", Message: `delete tweet: "12/../../2/users/me" is not an X post id`}, outcomeOf(t, err)); diff != "" {
		t.Errorf("bad id outcome (-want +got):\n%s", diff)
	}
}
