package linkedin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
	"oncepost/shared/platform/adaptertest"
	"oncepost/shared/platform/httpcall"
	"oncepost/shared/post"
)

func TestNewValidatesConfig(t *testing.T) {
	good := Config{Author: testPerson, Credential: platform.Credential{AccessToken: "t"}}
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string // substring naming the field; "" means valid
	}{
		{"valid with defaults", func(*Config) {}, ""},
		{"valid organization", func(c *Config) { c.Author = testOrg }, ""},
		{"valid base url with trailing slash", func(c *Config) { c.BaseURL = "http://127.0.0.1:8080/" }, ""},
		{"valid version", func(c *Config) { c.APIVersion = "202611" }, ""},
		{"relative base url", func(c *Config) { c.BaseURL = "api.linkedin.com" }, "BaseURL"},
		{"base url with query", func(c *Config) { c.BaseURL = "https://api.linkedin.com/?x=1" }, "BaseURL"},
		{"token url not http", func(c *Config) { c.TokenURL = "ftp://www.linkedin.com/token" }, "TokenURL"},
		{"missing author", func(c *Config) { c.Author = "" }, "Author"},
		{"author not a urn", func(c *Config) { c.Author = "8675309" }, "Author"},
		{"author of another kind", func(c *Config) { c.Author = "urn:li:share:1" }, "Author"},
		{"missing access token", func(c *Config) { c.Credential.AccessToken = "" }, "Credential.AccessToken"},
		{"version with day", func(c *Config) { c.APIVersion = "20250401" }, "APIVersion"},
		{"version with month 13", func(c *Config) { c.APIVersion = "202613" }, "APIVersion"},
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
	yes, no := true, false
	tests := []struct {
		name      string
		author    string
		canRead   *bool
		readable  bool
		guarantee platform.Guarantee
		perm      string
	}{
		{"member without r_member_social", testPerson, nil, false, platform.Human, "r_member_social"},
		{"member with r_member_social", testPerson, &yes, true, platform.ReadBack, ""},
		{"organization", testOrg, nil, true, platform.ReadBack, ""},
		{"organization without read permission", testOrg, &no, false, platform.Human, "r_organization_social"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, "https://api.example", func(cfg *Config) { cfg.Author, cfg.CanReadPosts = tt.author, tt.canRead })
			got := c.Capabilities()
			want := platform.Capabilities{
				Platform: "linkedin", NativeIdempotency: false, LookupByHandle: false, ReadableHistory: tt.readable,
				// Images API: "less than 36,152,320" pixels, no byte limit
				// stated; MultiImage API: at most 20 images.
				MaxTextGraphemes: 3000, MaxMedia: 20, MaxMediaBytes: 0, MaxMediaPixels: 36_152_320 - 1,
				Handle: got.Handle, ReadBack: got.ReadBack, DuplicateWindow: 48 * time.Hour,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("capabilities (-want +got):\n%s", diff)
			}
			if got.Handle == "" || got.ReadBack == "" {
				t.Errorf("Handle %q and ReadBack %q must say what the platform does", got.Handle, got.ReadBack)
			}
			if !strings.Contains(got.ReadBack, tt.perm) {
				t.Errorf("ReadBack %q does not name the missing permission", got.ReadBack)
			}
			if g := got.Guarantee(); g != tt.guarantee {
				t.Errorf("guarantee %q, want %q", g, tt.guarantee)
			}
		})
	}
}

func TestConnector(t *testing.T) {
	cred := platform.Credential{AccessToken: "t"}
	tests := []struct {
		name     string
		conn     Connector
		account  post.Account
		readable bool
		base     string
		wantErr  bool
	}{
		{"member, default base", Connector{}, post.Account{Platform: "linkedin", RemoteID: testPerson}, false, DefaultBaseURL, false},
		{"member, app with r_member_social", Connector{CanReadMemberPosts: true}, post.Account{RemoteID: testPerson, BaseURL: "http://127.0.0.1:9"}, true, "http://127.0.0.1:9", false},
		{"organization", Connector{}, post.Account{RemoteID: testOrg}, true, DefaultBaseURL, false},
		{"no author", Connector{}, post.Account{}, false, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc, err := tt.conn.Client(context.Background(), tt.account, cred)
			if tt.wantErr {
				if err == nil {
					t.Fatal("Client succeeded without an author URN")
				}
				return
			}
			if err != nil {
				t.Fatalf("Client: %v", err)
			}
			c := pc.(*Client)
			if c.base != tt.base || c.Capabilities().ReadableHistory != tt.readable || c.author != tt.account.RemoteID {
				t.Errorf("client base %q readable %v author %q, want %q %v %q", c.base, c.Capabilities().ReadableHistory, c.author, tt.base, tt.readable, tt.account.RemoteID)
			}
		})
	}
}

// TestPublishSendsTheDocumentedRequest: POST /rest/posts with the bearer
// token, LinkedIn-Version, X-Restli-Protocol-Version: 2.0.0 and the
// text-only post body; 201 with an empty body and the URN in x-restli-id
// (posts-api, "Create a Text-Only Post",
// https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/posts-api).
func TestPublishSendsTheDocumentedRequest(t *testing.T) {
	type seen struct {
		Method, Path, Auth, Version, Protocol, ContentType string
		Body                                               map[string]any
		Raw                                                string
	}
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
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("LinkedIn-Version"),
			r.Header.Get("X-Restli-Protocol-Version"), r.Header.Get("Content-Type"), body, string(raw)})
		mu.Unlock()
		w.Header().Set("Date", "Sun, 01 Mar 2026 12:00:01 GMT")
		w.Header().Set("x-restli-id", "urn:li:share:6844785523593134080")
		w.WriteHeader(http.StatusCreated)
	}))
	c := newClient(t, srv.URL)

	text := "Launch (beta) with #golang & <friends> @ 9:00"
	receipt, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "entry-7f3a", Text: text, CreatedAt: fixedNow})
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	wantReceipt := platform.Receipt{
		RemoteID:  "urn:li:share:6844785523593134080",
		URL:       "https://www.linkedin.com/feed/update/urn:li:share:6844785523593134080/",
		CreatedAt: time.Date(2026, 3, 1, 12, 0, 1, 0, time.UTC),
	}
	if diff := cmp.Diff(wantReceipt, receipt); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}
	if len(got) != 1 {
		t.Fatalf("server received %d requests, want 1", len(got))
	}
	want := seen{
		Method: "POST", Path: "/rest/posts", Auth: "Bearer " + testAccess, Version: DefaultAPIVersion, Protocol: "2.0.0",
		ContentType: "application/json",
		Body: map[string]any{
			"author":     testOrg,
			"commentary": `Launch \(beta\) with \#golang & \<friends\> \@ 9:00`,
			"visibility": "PUBLIC",
			"distribution": map[string]any{
				"feedDistribution":               "MAIN_FEED",
				"targetEntities":                 []any{},
				"thirdPartyDistributionChannels": []any{},
			},
			"lifecycleState":            "PUBLISHED",
			"isReshareDisabledByAuthor": false,
		},
		Raw: got[0].Raw,
	}
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	// LinkedIn has no idempotency key: the handle goes nowhere.
	if strings.Contains(got[0].Raw, "entry-7f3a") {
		t.Errorf("the ledger handle was sent: %s", got[0].Raw)
	}
}

func TestPublishRefusesBeforeSending(t *testing.T) {
	var n atomic.Int32
	// 201 with the URN in x-restli-id (posts-api, "Create a Text-Only
	// Post"); the commentary limit is 3000 characters.
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("x-restli-id", "urn:li:share:1")
		w.WriteHeader(http.StatusCreated)
	}))
	c := newClient(t, srv.URL)
	family := "👩‍👩‍👧" // one grapheme, 5 code points
	tests := []struct {
		name  string
		req   platform.PublishRequest
		want  outcome
		sends int32
	}{
		{"3000 graphemes are allowed", platform.PublishRequest{Text: strings.Repeat(family, 3000)}, outcome{Class: "ok"}, 1},
		{"3001 graphemes are too long", platform.PublishRequest{Text: strings.Repeat(family, 3001)}, outcome{Class: "rejected", Reason: ReasonTextTooLong}, 0},
		{"a media id not from UploadMedia", platform.PublishRequest{Text: "hi", MediaIDs: []string{"urn:li:share:1"}}, outcome{Class: "rejected", Reason: ReasonInvalidMedia}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := n.Load()
			_, err := c.Publish(context.Background(), tt.req)
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if sent := n.Load() - before; sent != tt.sends {
				t.Errorf("sent %d requests, want %d", sent, tt.sends)
			}
		})
	}
}

// TestPublishDuplicate: LinkedIn refuses a repeated text with 422
// DUPLICATE_POST naming the existing post (body as quoted in
// Arisamiga/Linkedin-RSS#5). The adapter names the URN and leaves it to
// the caller to look: the URN may be a ghost of a deleted post
// (ComposioHQ/composio#2710).
func TestPublishDuplicate(t *testing.T) {
	var n atomic.Int32
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		writeJSON(w, http.StatusUnprocessableEntity, json.RawMessage(`{"errorDetailType":"com.linkedin.common.error.BadRequest",`+
			`"message":"com.linkedin.content.common.exception.BadRequestResponseException: Content is a duplicate of urn:li:share:7141138937766391808",`+
			`"errorDetails":{"inputErrors":[{"description":"Duplicate post is detected","input":{},"code":"DUPLICATE_POST"}]},"status":422}`))
	}))
	c := newClient(t, srv.URL)
	_, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "same again"})
	if diff := cmp.Diff(outcome{Class: "rejected", Status: 422, Reason: platform.ReasonDuplicate}, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if !strings.Contains(err.Error(), "urn:li:share:7141138937766391808") {
		t.Errorf("error %q does not name the duplicate's URN", err)
	}
	if n.Load() != 1 {
		t.Errorf("server received %d creates, want 1", n.Load())
	}
}

// TestWriteStatusClassification runs LinkedIn's answers through Publish
// and Delete, both writes: error bodies {"message", "serviceErrorCode",
// "status"} per
// https://learn.microsoft.com/en-us/linkedin/shared/api-guide/concepts/error-handling;
// 429 without rate-limit headers per
// https://learn.microsoft.com/en-us/linkedin/shared/api-guide/concepts/rate-limits;
// 426 NONEXISTENT_VERSION as quoted in n8n-io/n8n#28600.
func TestWriteStatusClassification(t *testing.T) {
	untilMidnight := 12 * time.Hour // fixedNow is 12:00 UTC
	tests := []struct {
		name         string
		status       int
		header       map[string]string
		body         string
		want         outcome
		deleteWant   *outcome // when Delete differs
		wantInOutput string
	}{
		{"400 bad request", 400, nil, `{"message":"Invalid author","status":400}`, outcome{Class: "rejected", Status: 400, Reason: "http_400"}, nil, "Invalid author"},
		{"403 access denied", 403, nil, `{"message":"Not enough permissions to access: partnerApiPostsExternal.CREATE","serviceErrorCode":100,"status":403}`,
			outcome{Class: "rejected", Status: 403, Reason: "http_403"}, &outcome{Class: "rejected", Status: 403, Reason: ReasonForbidden}, "Not enough permissions"},
		{"404", 404, nil, `{"message":"Not Found","status":404}`, outcome{Class: "rejected", Status: 404, Reason: "http_404"}, &outcome{Class: "ok"}, ""},
		{"422 other validation", 422, nil, `{"message":"/commentary :: length exceeds 3000","status":422,"errorDetails":{"inputErrors":[{"code":"FIELD_LENGTH_TOO_LONG"}]}}`,
			outcome{Class: "rejected", Status: 422, Reason: "http_422"}, nil, "length exceeds"},
		{"302 redirect not followed", 302, map[string]string{"Location": "/elsewhere"}, ``, outcome{Class: "rejected", Status: 302, Reason: "http_302"}, nil, ""},
		{"401 expired token", 401, nil, `{"message":"Expired access token","serviceErrorCode":65601,"status":401}`, outcome{Class: "unauthorized"}, nil, "Expired access token"},
		{"426 version sunset", 426, nil, `{"status":426,"code":"NONEXISTENT_VERSION","message":"Requested version 202605 is not active"}`,
			outcome{Class: "rejected", Status: 426, Reason: ReasonAPIVersionSunset}, nil, "update the LinkedIn-Version"},
		{"429 with retry-after", 429, map[string]string{"Retry-After": "120"}, `{"message":"Resource level throttle limit for calls to this resource is reached.","status":429}`,
			outcome{Class: "not_performed", Status: 429, RetryAfter: 2 * time.Minute}, nil, "throttle limit"},
		{"429 without headers waits for the daily reset", 429, nil, `{"message":"Resource level throttle limit for calls to this resource is reached.","status":429}`,
			outcome{Class: "not_performed", Status: 429, RetryAfter: untilMidnight}, nil, ""},
		{"500", 500, nil, `{"message":"Internal Server Error","status":500}`, outcome{Class: "ambiguous", Status: 500}, nil, ""},
		{"502", 502, nil, `<html>bad gateway</html>`, outcome{Class: "ambiguous", Status: 502}, nil, ""},
		{"503", 503, map[string]string{"Retry-After": "5"}, ``, outcome{Class: "ambiguous", Status: 503}, nil, ""},
		{"504 gateway timeout", 504, nil, ``, outcome{Class: "ambiguous", Status: 504}, nil, ""},
	}
	calls := map[string]func(*Client) error{
		"publish": func(c *Client) error {
			_, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "x"})
			return err
		},
		"delete": func(c *Client) error { return c.Delete(context.Background(), "urn:li:share:77") },
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
					drain(r)
					for k, v := range tt.header {
						w.Header().Set(k, v)
					}
					w.WriteHeader(tt.status)
					io.WriteString(w, tt.body)
				}))
				err := call(newClient(t, srv.URL))
				want := tt.want
				if name == "delete" && tt.deleteWant != nil {
					want = *tt.deleteWant
				}
				if diff := cmp.Diff(want, outcomeOf(t, err)); diff != "" {
					t.Errorf("outcome (-want +got):\n%s", diff)
				}
				if err != nil && tt.wantInOutput != "" && !strings.Contains(err.Error(), tt.wantInOutput) {
					t.Errorf("error %q does not carry LinkedIn's message %q", err, tt.wantInOutput)
				}
				if n.Load() != 1 {
					t.Errorf("server received %d requests, want exactly 1 (writes are never retried)", n.Load())
				}
			})
		}
	}
}

// TestVersionSunset: a LinkedIn that no longer serves the configured
// version answers every call 426 NONEXISTENT_VERSION (n8n-io/n8n#28600,
// inovector/mixpost#167); each is Rejected api_version_sunset telling the
// operator what to change, and the override in Config takes effect.
func TestVersionSunset(t *testing.T) {
	f, srv := newFake(t, testOrg)
	f.version = "202611" // LinkedIn moved on; DefaultAPIVersion is retired
	f.add("older", fixedNow.Add(-time.Hour), fixedNow.Add(-time.Hour))
	c := newClient(t, srv.URL)
	ctx := context.Background()
	_, pubErr := c.Publish(ctx, platform.PublishRequest{Text: "hello"})
	delErr := c.Delete(ctx, "urn:li:share:1")
	_, exErr := c.Exists(ctx, "urn:li:share:1")
	_, _, lookErr := c.Lookup(ctx, platform.LookupQuery{Fingerprint: platform.Fingerprint("hello", nil)})
	_, recErr := c.Recent(ctx, 5)
	for name, err := range map[string]error{"publish": pubErr, "delete": delErr, "exists": exErr, "lookup": lookErr, "recent": recErr} {
		if diff := cmp.Diff(outcome{Class: "rejected", Status: 426, Reason: ReasonAPIVersionSunset}, outcomeOf(t, err)); diff != "" {
			t.Errorf("%s outcome (-want +got):\n%s", name, diff)
			continue
		}
		for _, s := range []string{DefaultAPIVersion, "Requested version " + DefaultAPIVersion + " is not active", "update the LinkedIn-Version", "APIVersion"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s error %q does not say %q", name, err, s)
			}
		}
	}
	if creates, _, _, _, _ := f.counts(); creates != 0 {
		t.Errorf("fake stored %d posts under a retired version", creates)
	}

	c = newClient(t, srv.URL, func(cfg *Config) { cfg.APIVersion = "202611" })
	if _, err := c.Publish(ctx, platform.PublishRequest{Text: "hello"}); err != nil {
		t.Errorf("Publish with the configured version: %v", err)
	}
}

func TestPublishCreatedWithoutURNIsAmbiguous(t *testing.T) {
	tests := []struct {
		name   string
		status int
		id     string
	}{
		{"201 without x-restli-id", http.StatusCreated, ""},
		{"201 with a non-urn id", http.StatusCreated, "12345"},
		{"200 without x-restli-id", http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A success whose x-restli-id (posts-api: "the response header
			// x-restli-id" carries the post's URN) is missing or garbled.
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				drain(r)
				if tt.id != "" {
					w.Header().Set("x-restli-id", tt.id)
				}
				w.WriteHeader(tt.status)
			}))
			_, err := newClient(t, srv.URL).Publish(context.Background(), platform.PublishRequest{Text: "x"})
			if diff := cmp.Diff(outcome{Class: "ambiguous", Status: tt.status}, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServerErrorAfterCommitThenLookupFindsIt: the fake stores the post
// and answers 500 (a gateway, or LinkedIn failing after the write). The
// create is Ambiguous, never re-sent by the adapter, and Lookup, reading
// from the point recorded before the send, finds the post: exactly one
// post exists.
func TestServerErrorAfterCommitThenLookupFindsIt(t *testing.T) {
	f, srv := newFake(t, testOrg)
	f.add("yesterday's news", fixedNow.Add(-24*time.Hour), fixedNow.Add(-24*time.Hour))
	f.add("an hour ago", fixedNow.Add(-time.Hour), fixedNow.Add(-time.Hour))
	f.CreateFault = func(w http.ResponseWriter, r *http.Request) bool {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"message": "Internal Server Error", "status": 500})
		return true
	}
	c := newClient(t, srv.URL)
	ctx := context.Background()
	text := "Release notes (v2.1): faster_builds, fewer #bugs *really*"

	recent, err := c.Recent(ctx, 20)
	if err != nil {
		t.Fatalf("Recent: %v", err)
	}
	after := recent[0].RemoteID
	_, err = c.Publish(ctx, platform.PublishRequest{Handle: "h1", Text: text})
	if diff := cmp.Diff(outcome{Class: "ambiguous", Status: 500}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("publish outcome (-want +got):\n%s", diff)
	}
	if creates, _, _, _, _ := f.counts(); creates != 1 {
		t.Fatalf("fake received %d creates, want exactly 1: the adapter must not re-send", creates)
	}

	got, found, err := c.Lookup(ctx, platform.LookupQuery{
		Handle: "h1", Fingerprint: platform.Fingerprint(text, nil), Text: text,
		After: after, NotBefore: fixedNow.Add(-time.Minute),
	})
	if err != nil || !found {
		t.Fatalf("Lookup = found %v, err %v; want the post", found, err)
	}
	stored := f.stored()
	if len(stored) != 3 {
		t.Fatalf("fake holds %d posts, want the 2 old ones and ours", len(stored))
	}
	ours := stored[2]
	want := platform.RemotePost{RemoteID: ours.ID, Text: text, URL: postURL(ours.ID), CreatedAt: millis(ours.CreatedAt)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("found (-want +got):\n%s", diff)
	}
	if ours.Commentary != escapeLittle(text) {
		t.Errorf("stored commentary %q, want the escaped text %q", ours.Commentary, escapeLittle(text))
	}
}

// TestTimeoutAfterCommitThenLookupFindsIt: the fake stores the post and
// then never answers; the client's deadline ends the call after the
// request was written: Ambiguous, and Lookup finds the post. A request
// that never reached a server (a closed listener) is NotPerformed.
func TestTimeoutAfterCommitThenLookupFindsIt(t *testing.T) {
	f, srv := newFake(t, testOrg)
	f.CreateFault = func(w http.ResponseWriter, r *http.Request) bool {
		<-r.Context().Done()
		return true
	}
	c := newClient(t, srv.URL)
	text := "Timeouts happen ~often~"

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := c.Publish(ctx, platform.PublishRequest{Handle: "h1", Text: text})
	cancel()
	if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("publish outcome (-want +got):\n%s", diff)
	}
	_, found, err := c.Lookup(context.Background(), platform.LookupQuery{
		Fingerprint: platform.Fingerprint(text, nil), After: platform.StartOfHistory, NotBefore: fixedNow.Add(-time.Minute),
	})
	if err != nil || !found {
		t.Fatalf("Lookup = found %v, err %v; want the post", found, err)
	}
	if creates, _, _, _, _ := f.counts(); creates != 1 || len(f.stored()) != 1 {
		t.Errorf("fake received %d creates and holds %d posts, want 1 and 1", creates, len(f.stored()))
	}

	_, err = newClient(t, refusedURL(t)).Publish(context.Background(), platform.PublishRequest{Text: text})
	if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("refused connection outcome (-want +got):\n%s", diff)
	}
}

// TestDeleteTwice: "Post deletions are idempotent" (posts-api, "Delete
// Posts"): a second DELETE answers 204 again or 404; both are nil, and
// the fake removed the post once.
func TestDeleteTwice(t *testing.T) {
	for _, again := range []int{http.StatusNoContent, http.StatusNotFound} {
		t.Run(http.StatusText(again), func(t *testing.T) {
			f, srv := newFake(t, testOrg)
			f.AgainStatus = again
			c := newClient(t, srv.URL)
			ctx := context.Background()
			r, err := c.Publish(ctx, platform.PublishRequest{Text: "to be deleted"})
			if err != nil {
				t.Fatalf("Publish: %v", err)
			}
			if exists, err := c.Exists(ctx, r.RemoteID); err != nil || !exists {
				t.Fatalf("Exists before delete = %v, %v; want true", exists, err)
			}
			for i := range 2 {
				if err := c.Delete(ctx, r.RemoteID); err != nil {
					t.Errorf("Delete #%d: %v", i+1, err)
				}
			}
			if exists, err := c.Exists(ctx, r.RemoteID); err != nil || exists {
				t.Errorf("Exists after delete = %v, %v; want false", exists, err)
			}
			_, removed, deletes, _, _ := f.counts()
			if removed != 1 || deletes != 2 {
				t.Errorf("fake removed %d posts in %d deletes, want 1 in 2", removed, deletes)
			}
		})
	}
}

// TestExists reads GET /rest/posts/{urn} (posts-api, "Get Posts by URN").
func TestExists(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   bool
		out    outcome
	}{
		{"200", 200, `{"id":"urn:li:share:1","author":"` + testOrg + `","commentary":"x","createdAt":1}`, true, outcome{Class: "ok"}},
		{"404", 404, `{"message":"Not Found","status":404}`, false, outcome{Class: "ok"}},
		{"403 cannot tell", 403, `{"message":"Not enough permissions to access: partnerApiPostsExternal.GET","status":403}`, false, outcome{Class: "rejected", Status: 403, Reason: ReasonReadForbidden}},
		{"401", 401, `{"message":"Invalid access token","status":401}`, false, outcome{Class: "unauthorized"}},
		{"500 after retries", 500, `{"message":"Internal Server Error","status":500}`, false, outcome{Class: "not_performed", Status: 500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.EscapedPath() != "/rest/posts/urn%3Ali%3Ashare%3A1" {
					t.Errorf("request %s %s, want GET /rest/posts/urn%%3Ali%%3Ashare%%3A1", r.Method, r.URL.EscapedPath())
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			got, err := newClient(t, srv.URL).Exists(context.Background(), "urn:li:share:1")
			if got != tt.want {
				t.Errorf("Exists = %v, want %v", got, tt.want)
			}
			if diff := cmp.Diff(tt.out, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if tt.status == 403 && !strings.Contains(err.Error(), "r_organization_social") {
				t.Errorf("error %q does not name the permission", err)
			}
		})
	}
}

func TestUntilMidnightUTC(t *testing.T) {
	tests := []struct {
		now    time.Time
		status int
		want   time.Duration
	}{
		{time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), 429, 12 * time.Hour},
		{time.Date(2026, 3, 1, 23, 59, 30, 0, time.UTC), 429, 30 * time.Second},
		{time.Date(2026, 12, 31, 18, 0, 0, 0, time.FixedZone("CET", 3600)), 429, 7 * time.Hour},
		{time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), 503, 0},
	}
	for _, tt := range tests {
		if got := untilMidnightUTC(&httpcall.Response{Status: tt.status}, tt.now); got != tt.want {
			t.Errorf("untilMidnightUTC(%d at %s) = %s, want %s", tt.status, tt.now, got, tt.want)
		}
	}
}
