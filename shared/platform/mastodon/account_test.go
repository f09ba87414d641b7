package mastodon

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// seenRequest is what a fake server records of one request.
type seenRequest struct {
	Method, Path, Auth string
}

// recorder is a fake server answering each request with the next answer
// of its script (the last one repeats) and recording what it received.
type recorder struct {
	t       *testing.T
	answers []answer

	mu   sync.Mutex
	seen []seenRequest
}

// answer is one scripted response.
type answer struct {
	path   string // when set, only requests for this path get the answer
	status int
	header map[string]string
	body   string
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.mu.Lock()
	n := len(rec.seen)
	rec.seen = append(rec.seen, seenRequest{r.Method, r.URL.Path, r.Header.Get("Authorization")})
	rec.mu.Unlock()
	io.Copy(io.Discard, r.Body)
	a := rec.answers[min(n, len(rec.answers)-1)]
	if a.path != "" && a.path != r.URL.Path {
		rec.t.Errorf("request %d: %s %s, want path %s", n+1, r.Method, r.URL.Path, a.path)
	}
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
	}
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

func (rec *recorder) requests() []seenRequest {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]seenRequest(nil), rec.seen...)
}

// assertNoSecrets fails when err's text contains any of the secrets.
func assertNoSecrets(t *testing.T, err error, secrets ...string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("error %q contains the secret %q", err, s)
		}
	}
}

// verifyCredentialsJSON is the CredentialAccount of the example in
// https://docs.joinmastodon.org/methods/accounts/#verify_credentials
// (shortened to the fields that matter and a few others).
const verifyCredentialsJSON = `{
  "id": "14715",
  "username": "trwnh",
  "acct": "trwnh",
  "display_name": "infinite love ⴳ",
  "locked": false,
  "bot": false,
  "created_at": "2016-11-24T10:02:12.085Z",
  "note": "<p>i have approximate knowledge of many things</p>",
  "url": "https://mastodon.social/@trwnh",
  "avatar": "https://files.mastodon.social/accounts/avatars/000/014/715/original/34aa222f4ae2e0a9.png",
  "followers_count": 821,
  "following_count": 178,
  "statuses_count": 33120,
  "source": {"privacy": "public", "sensitive": false, "language": "", "note": "", "fields": [], "follow_requests_count": 0},
  "emojis": [],
  "fields": []
}`

// TestVerifyCredentials follows
// https://docs.joinmastodon.org/methods/accounts/#verify_credentials:
// GET /api/v1/accounts/verify_credentials with the user's bearer token,
// 200 with a CredentialAccount, 401 {"error":"The access token is
// invalid"}, 422 for an app token without a user; 403 is what Mastodon's
// Api::BaseController answers for a token without the needed scope or a
// disabled login.
func TestVerifyCredentials(t *testing.T) {
	const path = "/api/v1/accounts/verify_credentials"
	wantProfile := Profile{ID: "14715", Username: "trwnh", Acct: "trwnh", DisplayName: "infinite love ⴳ", URL: "https://mastodon.social/@trwnh"}
	tests := []struct {
		name         string
		answers      []answer
		want         Profile
		wantOut      outcome
		wantMessage  string // substring of the error's text
		wantRequests int
	}{
		{"profile", []answer{{path: path, status: 200, body: verifyCredentialsJSON}},
			wantProfile, outcome{Class: "ok"}, "", 1},
		{"retries a 503 (a read)", []answer{{path: path, status: 503, body: `{"error":"There was a temporary problem serving your request, please try again"}`}, {path: path, status: 200, body: verifyCredentialsJSON}},
			wantProfile, outcome{Class: "ok"}, "", 2},
		{"token invalid", []answer{{path: path, status: 401, body: `{"error":"The access token is invalid"}`}},
			Profile{}, outcome{Class: "unauthorized"}, "The access token is invalid", 1},
		{"token without the read scope", []answer{{path: path, status: 403, body: `{"error":"This action is outside the authorized scopes"}`}},
			Profile{}, outcome{Class: "rejected", Status: 403, Reason: "forbidden", Message: "This action is outside the authorized scopes"}, "outside the authorized scopes", 1},
		{"login disabled", []answer{{path: path, status: 403, body: `{"error":"Your login is currently disabled"}`}},
			Profile{}, outcome{Class: "rejected", Status: 403, Reason: "forbidden", Message: "Your login is currently disabled"}, "currently disabled", 1},
		{"app token without a user", []answer{{path: path, status: 422, body: `{"error":"This method requires an authenticated user"}`}},
			Profile{}, outcome{Class: "rejected", Status: 422, Reason: "http_422", Message: "This method requires an authenticated user"}, "requires an authenticated user", 1},
		{"rate limited for long", []answer{{path: path, status: 429, header: map[string]string{"Retry-After": "60"}, body: `{"error":"Too many requests"}`}},
			Profile{}, outcome{Class: "not_performed", Status: 429, RetryAfter: time.Minute}, "Too many requests", 1},
		{"server keeps failing", []answer{{path: path, status: 500, body: `{"error":"NoMethodError"}`}},
			Profile{}, outcome{Class: "not_performed", Status: 500}, "verify credentials", 4},
		{"answer without an id", []answer{{path: path, status: 200, body: `{"username":"trwnh"}`}},
			Profile{}, outcome{Class: "not_performed", Status: 200}, "no account id", 1},
		{"html instead of json", []answer{{path: path, status: 200, header: map[string]string{"Content-Type": "text/html"}, body: `<html>login</html>`}},
			Profile{}, outcome{Class: "not_performed", Status: 200}, "decode account", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{t: t, answers: tt.answers}
			srv := newServer(t, rec)
			c := newClient(t, srv.URL, func(cfg *Config) { cfg.AccountID = "" })
			got, err := c.VerifyCredentials(context.Background())
			if diff := cmp.Diff(tt.wantOut, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if err != nil && !strings.Contains(err.Error(), tt.wantMessage) {
				t.Errorf("error %q does not contain %q", err, tt.wantMessage)
			}
			assertNoSecrets(t, err, "access-1", "refresh-1", "client-secret")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("profile (-want +got):\n%s", diff)
			}
			want := make([]seenRequest, tt.wantRequests)
			for i := range want {
				want[i] = seenRequest{"GET", path, "Bearer access-1"}
			}
			if diff := cmp.Diff(want, rec.requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			// The verified id becomes the client's account.
			if err == nil {
				if id, _ := c.account(context.Background()); id != tt.want.ID {
					t.Errorf("account id after verify = %q, want %q", id, tt.want.ID)
				}
				if n := len(rec.requests()); n != tt.wantRequests {
					t.Errorf("account() sent another request (%d in all)", n)
				}
			}
		})
	}

	t.Run("server unreachable", func(t *testing.T) {
		_, err := newClient(t, refusedURL(t)).VerifyCredentials(context.Background())
		if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		assertNoSecrets(t, err, "access-1")
	})

	t.Run("a configured account id is kept", func(t *testing.T) {
		rec := &recorder{t: t, answers: []answer{{path: path, status: 200, body: verifyCredentialsJSON}}}
		srv := newServer(t, rec)
		c := newClient(t, srv.URL) // AccountID "109"
		if _, err := c.VerifyCredentials(context.Background()); err != nil {
			t.Fatalf("VerifyCredentials: %v", err)
		}
		if id, _ := c.account(context.Background()); id != "109" {
			t.Errorf("account id = %q, want the configured 109", id)
		}
	})
}

// instanceV2JSON is the example of
// https://docs.joinmastodon.org/methods/instance/#v2 (GET
// /api/v2/instance, Instance entity), without the parts InstanceLimits
// does not read.
const instanceV2JSON = `{
  "domain": "mastodon.social",
  "title": "Mastodon",
  "version": "4.0.0rc1",
  "source_url": "https://github.com/mastodon/mastodon",
  "usage": {"users": {"active_month": 123122}},
  "languages": ["en"],
  "configuration": {
    "urls": {"streaming": "wss://mastodon.social"},
    "vapid": {"public_key": "BCkMmVdKDnKYwzVCDC99Iuc9GvId-x7-kKtuHnLgfF98ENiZp_aj-UNthbCdI70DqN1zUVis-x0Wrot2sBagkMc="},
    "accounts": {"max_featured_tags": 10, "max_pinned_statuses": 4},
    "statuses": {"max_characters": 500, "max_media_attachments": 4, "characters_reserved_per_url": 23},
    "media_attachments": {
      "supported_mime_types": ["image/jpeg", "image/png", "image/gif", "image/heic", "image/heif", "image/webp", "video/webm", "video/mp4"],
      "image_size_limit": 10485760,
      "image_matrix_limit": 16777216,
      "video_size_limit": 41943040,
      "video_frame_rate_limit": 60,
      "video_matrix_limit": 2304000
    },
    "polls": {"max_options": 4, "max_characters_per_option": 50, "min_expiration": 300, "max_expiration": 2629746},
    "translation": {"enabled": true}
  },
  "registrations": {"enabled": false, "approval_required": false, "message": null},
  "rules": [{"id": "1", "text": "Sexually explicit or violent media must be marked as sensitive when posting"}]
}`

// instanceV1JSON is the example of
// https://docs.joinmastodon.org/methods/instance/#v1 (GET
// /api/v1/instance, V1::Instance entity, configuration since 3.4.2), with
// a glitch-soc-like character limit.
const instanceV1JSON = `{
  "uri": "mastodon.social",
  "title": "Mastodon",
  "short_description": "The original server operated by the Mastodon gGmbH non-profit",
  "email": "staff@mastodon.social",
  "version": "3.5.3+glitch",
  "urls": {"streaming_api": "wss://mastodon.social"},
  "stats": {"user_count": 812303, "status_count": 38151616, "domain_count": 25255},
  "languages": ["en"],
  "registrations": false,
  "approval_required": false,
  "invites_enabled": true,
  "configuration": {
    "statuses": {"max_characters": 5000, "max_media_attachments": 4, "characters_reserved_per_url": 23},
    "media_attachments": {
      "supported_mime_types": ["image/jpeg", "image/png"],
      "image_size_limit": 10485760,
      "image_matrix_limit": 16777216,
      "video_size_limit": 41943040,
      "video_frame_rate_limit": 60,
      "video_matrix_limit": 2304000
    },
    "polls": {"max_options": 4, "max_characters_per_option": 50, "min_expiration": 300, "max_expiration": 2629746}
  }
}`

// TestInstanceLimits follows https://docs.joinmastodon.org/methods/instance/
// (GET /api/v2/instance since 4.0.0, the deprecated GET /api/v1/instance
// before) and https://docs.joinmastodon.org/entities/Instance/: both are
// public, the limits sit under configuration.statuses and
// configuration.media_attachments.
func TestInstanceLimits(t *testing.T) {
	const v2, v1 = "/api/v2/instance", "/api/v1/instance"
	notFound := `{"error":"Record not found"}`
	fromV2 := Limits{
		Version: "4.0.0rc1", MaxCharacters: 500, MaxMediaAttachments: 4, CharactersReservedPerURL: 23,
		ImageSizeLimit: 10485760, VideoSizeLimit: 41943040,
		SupportedMIMETypes: []string{"image/jpeg", "image/png", "image/gif", "image/heic", "image/heif", "image/webp", "video/webm", "video/mp4"},
	}
	tests := []struct {
		name      string
		answers   []answer
		want      Limits
		wantOut   outcome
		wantPaths []string
	}{
		{"v2", []answer{{path: v2, status: 200, body: instanceV2JSON}},
			fromV2, outcome{Class: "ok"}, []string{v2}},
		{"falls back to v1 on a server before 4.0", []answer{{path: v2, status: 404, body: notFound}, {path: v1, status: 200, body: instanceV1JSON}},
			Limits{Version: "3.5.3+glitch", MaxCharacters: 5000, MaxMediaAttachments: 4, CharactersReservedPerURL: 23,
				ImageSizeLimit: 10485760, VideoSizeLimit: 41943040, SupportedMIMETypes: []string{"image/jpeg", "image/png"}},
			outcome{Class: "ok"}, []string{v2, v1}},
		{"v1 without configuration (before 3.4.2) leaves the limits zero", []answer{{path: v2, status: 404, body: notFound}, {path: v1, status: 200, body: `{"uri":"old.example","title":"Old","version":"3.3.0"}`}},
			Limits{Version: "3.3.0"}, outcome{Class: "ok"}, []string{v2, v1}},
		{"missing fields stay zero", []answer{{path: v2, status: 200, body: `{"domain":"x.example","version":"4.2.0","configuration":{"statuses":{"max_characters":1000}}}`}},
			Limits{Version: "4.2.0", MaxCharacters: 1000}, outcome{Class: "ok"}, []string{v2}},
		{"no mastodon api at all", []answer{{status: 404, header: map[string]string{"Content-Type": "text/html"}, body: `<html>not found</html>`}},
			Limits{}, outcome{Class: "rejected", Status: 404, Reason: "http_404"}, []string{v2, v1}},
		{"v2 failing is retried, not answered by v1", []answer{{path: v2, status: 502, body: ``}},
			Limits{}, outcome{Class: "not_performed", Status: 502}, []string{v2, v2, v2, v2}},
		{"v2 refusing is not answered by v1", []answer{{path: v2, status: 401, body: `{"error":"This API requires an authenticated user"}`}},
			Limits{}, outcome{Class: "unauthorized"}, []string{v2}},
		{"not json", []answer{{path: v2, status: 200, header: map[string]string{"Content-Type": "text/html"}, body: `<html>welcome</html>`}},
			Limits{}, outcome{Class: "not_performed", Status: 200}, []string{v2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{t: t, answers: tt.answers}
			srv := newServer(t, rec)
			got, err := InstanceLimits(context.Background(), srv.Client(), srv.URL+"/")
			out := outcomeOf(t, err)
			out.Message = "" // the messages are ours here, not the platform's
			if diff := cmp.Diff(tt.wantOut, out); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("limits (-want +got):\n%s", diff)
			}
			var want []seenRequest
			for _, p := range tt.wantPaths {
				want = append(want, seenRequest{Method: "GET", Path: p}) // no Authorization: public
			}
			if diff := cmp.Diff(want, rec.requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("the client's method sends its token", func(t *testing.T) {
		rec := &recorder{t: t, answers: []answer{{path: v2, status: 404, body: notFound}, {path: v1, status: 200, body: instanceV1JSON}}}
		srv := newServer(t, rec)
		got, err := newClient(t, srv.URL).InstanceLimits(context.Background())
		if err != nil {
			t.Fatalf("InstanceLimits: %v", err)
		}
		if got.MaxCharacters != 5000 || got.Version != "3.5.3+glitch" {
			t.Errorf("limits = %+v, want v1's", got)
		}
		want := []seenRequest{{"GET", v2, "Bearer access-1"}, {"GET", v1, "Bearer access-1"}}
		if diff := cmp.Diff(want, rec.requests()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
	})
	t.Run("invalid base url sends nothing", func(t *testing.T) {
		if _, err := InstanceLimits(context.Background(), nil, "mastodon.social"); err == nil || !strings.Contains(err.Error(), "BaseURL") {
			t.Errorf("error = %v, want one naming BaseURL", err)
		}
	})
	t.Run("server unreachable", func(t *testing.T) {
		_, err := InstanceLimits(context.Background(), nil, refusedURL(t))
		if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})
}
