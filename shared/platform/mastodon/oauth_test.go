package mastodon

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
)

// formServer records the form posted to one path and answers from a
// script like recorder.
type formServer struct {
	t       *testing.T
	path    string
	answers []answer

	mu    sync.Mutex
	forms []url.Values
	seen  []seenRequest
	ctype []string
}

func (s *formServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n := len(s.seen)
	s.seen = append(s.seen, seenRequest{r.Method, r.URL.Path, r.Header.Get("Authorization")})
	s.ctype = append(s.ctype, r.Header.Get("Content-Type"))
	if err := r.ParseForm(); err != nil {
		s.t.Errorf("parse form: %v", err)
	}
	s.forms = append(s.forms, r.PostForm)
	s.mu.Unlock()
	if r.URL.Path != s.path {
		s.t.Errorf("request to %s %s, want %s", r.Method, r.URL.Path, s.path)
	}
	a := s.answers[min(n, len(s.answers)-1)]
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
	}
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

// snapshot returns what the server has received so far.
func (s *formServer) snapshot() (seen []seenRequest, ctype []string, forms []url.Values) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.seen...), append([]string(nil), s.ctype...), append([]url.Values(nil), s.forms...)
}

// The client secret of the examples in
// https://docs.joinmastodon.org/methods/apps/#create.
const (
	exampleClientID     = "TWhM-tNSuncnqN7DBJmoyeLnk6K3iJJ71KKXxgL1hPM"
	exampleClientSecret = "ZEaFUFmF0umgBX1qKJDjaU99Q31lDkOU8NutzTOoliw"
)

// TestRegisterApp follows https://docs.joinmastodon.org/methods/apps/#create:
// POST /api/v1/apps with client_name, redirect_uris, scopes and website as
// form data, no token; 200 with a CredentialApplication (scopes and
// redirect_uris arrays since 4.3.0, an Application without scopes before),
// 422 {"error":"Validation failed: …"} for a bad parameter.
func TestRegisterApp(t *testing.T) {
	app43 := fmt.Sprintf(`{"id":"563419","name":"oncepost","website":"https://oncepost.example","scopes":["read","write"],
		"redirect_uri":"urn:ietf:wg:oauth:2.0:oob","redirect_uris":["urn:ietf:wg:oauth:2.0:oob"],
		"client_id":%q,"client_secret":%q,"client_secret_expires_at":0}`, exampleClientID, exampleClientSecret)
	app42 := fmt.Sprintf(`{"id":"563419","name":"oncepost","website":null,"redirect_uri":"https://oncepost.example/cb",
		"client_id":%q,"client_secret":%q,"vapid_key":"BCk-QqERU0q-CfYZjcuB6lnyyOYfJ2AifKqfeGIm7Z-HiTU5T9eTG5GxVA0_OH5mMlI4UkkDTpaZwozy0TzdZ2M="}`, exampleClientID, exampleClientSecret)
	defaultForm := url.Values{"client_name": {"oncepost"}, "redirect_uris": {OOBRedirectURI}, "scopes": {"read write"}}
	tests := []struct {
		name     string
		req      AppRequest
		answers  []answer
		want     App
		wantOut  outcome
		wantForm url.Values
	}{
		{"defaults, 4.3 answer", AppRequest{ClientName: "oncepost"},
			[]answer{{status: 200, body: app43}},
			App{ClientID: exampleClientID, ClientSecret: exampleClientSecret, RedirectURI: OOBRedirectURI, Scopes: "read write"},
			outcome{Class: "ok"}, defaultForm},
		{"redirect uri, scopes and website, answer before 4.3 without scopes",
			AppRequest{ClientName: " oncepost ", RedirectURI: "https://oncepost.example/cb", Scopes: "read write:statuses write:media", Website: "https://oncepost.example"},
			[]answer{{status: 200, body: app42}},
			App{ClientID: exampleClientID, ClientSecret: exampleClientSecret, RedirectURI: "https://oncepost.example/cb", Scopes: "read write:statuses write:media"},
			outcome{Class: "ok"},
			url.Values{"client_name": {"oncepost"}, "redirect_uris": {"https://oncepost.example/cb"}, "scopes": {"read write:statuses write:media"}, "website": {"https://oncepost.example"}}},
		{"scopes as a string", AppRequest{ClientName: "oncepost"},
			[]answer{{status: 200, body: fmt.Sprintf(`{"client_id":%q,"client_secret":%q,"scopes":"read  write"}`, exampleClientID, exampleClientSecret)}},
			App{ClientID: exampleClientID, ClientSecret: exampleClientSecret, RedirectURI: OOBRedirectURI, Scopes: "read write"},
			outcome{Class: "ok"}, defaultForm},
		{"validation failed", AppRequest{ClientName: "oncepost", RedirectURI: "not a uri"},
			[]answer{{status: 422, body: `{"error":"Validation failed: Redirect URI must be an absolute URI."}`}},
			App{}, outcome{Class: "rejected", Status: 422, Reason: "http_422", Message: "Validation failed: Redirect URI must be an absolute URI."},
			url.Values{"client_name": {"oncepost"}, "redirect_uris": {"not a uri"}, "scopes": {"read write"}}},
		{"rate limited", AppRequest{ClientName: "oncepost"},
			[]answer{{status: 429, header: map[string]string{"Retry-After": "30"}, body: `{"error":"Too many requests"}`}},
			App{}, outcome{Class: "not_performed", Status: 429, RetryAfter: 30 * time.Second}, defaultForm},
		// A write: a 5xx is not retried; the app may exist (unused).
		{"server error", AppRequest{ClientName: "oncepost"},
			[]answer{{status: 503, body: ``}},
			App{}, outcome{Class: "ambiguous", Status: 503}, defaultForm},
		{"answer without the secret", AppRequest{ClientName: "oncepost"},
			[]answer{{status: 200, body: fmt.Sprintf(`{"client_id":%q}`, exampleClientID)}},
			App{}, outcome{Class: "ambiguous", Status: 200}, defaultForm},
		{"redirect not followed", AppRequest{ClientName: "oncepost"},
			[]answer{{status: 301, header: map[string]string{"Location": "https://elsewhere.example/api/v1/apps"}}},
			App{}, outcome{Class: "rejected", Status: 301, Reason: "http_301", Message: `unexpected redirect to "https://elsewhere.example/api/v1/apps"; check BaseURL`}, defaultForm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &formServer{t: t, path: "/api/v1/apps", answers: tt.answers}
			srv := newServer(t, fs)
			got, err := RegisterApp(context.Background(), srv.Client(), srv.URL, tt.req)
			if diff := cmp.Diff(tt.wantOut, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			assertNoSecrets(t, err, exampleClientSecret)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("app (-want +got):\n%s", diff)
			}
			seen, ctype, forms := fs.snapshot()
			if diff := cmp.Diff([]seenRequest{{Method: "POST", Path: "/api/v1/apps"}}, seen); diff != "" {
				t.Errorf("requests, exactly one and without a token (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"application/x-www-form-urlencoded"}, ctype); diff != "" {
				t.Errorf("content type (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]url.Values{tt.wantForm}, forms); diff != "" {
				t.Errorf("form (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("no client name sends nothing", func(t *testing.T) {
		if _, err := RegisterApp(context.Background(), nil, refusedURL(t), AppRequest{}); err == nil || !strings.Contains(err.Error(), "ClientName") {
			t.Errorf("error = %v, want one naming ClientName", err)
		}
	})
	t.Run("server unreachable", func(t *testing.T) {
		_, err := RegisterApp(context.Background(), nil, refusedURL(t), AppRequest{ClientName: "oncepost"})
		if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})
	t.Run("printing an app hides its secret", func(t *testing.T) {
		app := App{ClientID: exampleClientID, ClientSecret: exampleClientSecret}
		for _, s := range []string{fmt.Sprint(app), fmt.Sprintf("%v %+v %#v %s", app, app, app, app)} {
			if strings.Contains(s, exampleClientSecret) {
				t.Errorf("printed app %q shows the secret", s)
			}
		}
	})
}

// TestAuthorizeURL follows https://docs.joinmastodon.org/methods/oauth/#authorize:
// GET /oauth/authorize with response_type=code, client_id, redirect_uri
// and scope (space separated) as query parameters.
func TestAuthorizeURL(t *testing.T) {
	tests := []struct {
		name      string
		base      string
		app       App
		wantPath  string
		wantQuery url.Values
	}{
		{"defaults", "https://mastodon.social",
			App{ClientID: exampleClientID, ClientSecret: exampleClientSecret},
			"/oauth/authorize",
			url.Values{"response_type": {"code"}, "client_id": {exampleClientID}, "redirect_uri": {OOBRedirectURI}, "scope": {"read write"}}},
		{"registered redirect and scopes, base with a path and trailing slash", "https://social.example/mastodon/",
			App{ClientID: "id&x=1", ClientSecret: "the-secret", RedirectURI: "http://127.0.0.1:8910/callback?x=1", Scopes: "read  write:statuses"},
			"/mastodon/oauth/authorize",
			url.Values{"response_type": {"code"}, "client_id": {"id&x=1"}, "redirect_uri": {"http://127.0.0.1:8910/callback?x=1"}, "scope": {"read write:statuses"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := AuthorizeURL(tt.base, tt.app)
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatalf("AuthorizeURL = %q: %v", raw, err)
			}
			if u.Path != tt.wantPath {
				t.Errorf("path = %q, want %q", u.Path, tt.wantPath)
			}
			if diff := cmp.Diff(tt.wantQuery, u.Query()); diff != "" {
				t.Errorf("query (-want +got):\n%s", diff)
			}
			if strings.Contains(raw, tt.app.ClientSecret) {
				t.Errorf("AuthorizeURL %q carries the client secret", raw)
			}
		})
	}
}

// TestExchangeCode follows https://docs.joinmastodon.org/methods/oauth/#token:
// POST /oauth/token with grant_type=authorization_code, code, client_id,
// client_secret, redirect_uri and scope as form data; 200 with a Token
// entity (https://docs.joinmastodon.org/entities/Token/), 400
// invalid_grant for a wrong or used code (as documented under
// #authorize), 400 invalid_scope, 401 invalid_client.
func TestExchangeCode(t *testing.T) {
	const code = "qDFUEaYrRK5c-HNmTCJbAzazwLRInJ7VHFat0wcMgCU"
	app := App{ClientID: exampleClientID, ClientSecret: exampleClientSecret, RedirectURI: OOBRedirectURI, Scopes: "read write"}
	wantForm := url.Values{
		"grant_type": {"authorization_code"}, "code": {code},
		"client_id": {exampleClientID}, "client_secret": {exampleClientSecret},
		"redirect_uri": {OOBRedirectURI}, "scope": {"read write"},
	}
	invalidGrant := `{"error":"invalid_grant","error_description":"The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client."}`
	tests := []struct {
		name        string
		answers     []answer
		want        platform.Credential
		wantOut     outcome
		wantMessage string // substring of the error's text
	}{
		{"token", []answer{{status: 200, body: `{"access_token":"ZA-Yj3aBD8U8Cm7lKUp-lm9O9BmDgdhHzDeqsY8tlL0","token_type":"Bearer","scope":"read write","created_at":1573979017}`}},
			platform.Credential{AccessToken: "ZA-Yj3aBD8U8Cm7lKUp-lm9O9BmDgdhHzDeqsY8tlL0", ClientID: exampleClientID, ClientSecret: exampleClientSecret},
			outcome{Class: "ok"}, ""},
		{"token with refresh token and expiry", []answer{{status: 200, body: `{"access_token":"access-9","token_type":"Bearer","scope":"read write","created_at":1573979017,"refresh_token":"refresh-9","expires_in":7200}`}},
			platform.Credential{AccessToken: "access-9", RefreshToken: "refresh-9", ExpiresAt: time.Now().Add(2 * time.Hour), ClientID: exampleClientID, ClientSecret: exampleClientSecret},
			outcome{Class: "ok"}, ""},
		{"code refused", []answer{{status: 400, body: invalidGrant}},
			platform.Credential{}, outcome{Class: "rejected", Status: 400, Reason: "invalid_grant"},
			"the authorization code was refused (invalid_grant): The provided authorization grant is invalid"},
		{"code refused, server echoes the code and secret", []answer{{status: 400, body: fmt.Sprintf(`{"error":"invalid_grant","error_description":"code %s for %s is used"}`, code, exampleClientSecret)}},
			platform.Credential{}, outcome{Class: "rejected", Status: 400, Reason: "invalid_grant"},
			"code [redacted] for [redacted] is used; it is wrong, expired, already used or was issued for another app or redirect URI; start again with a new code"},
		{"app unknown", []answer{{status: 401, body: `{"error":"invalid_client","error_description":"Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method."}`}},
			platform.Credential{}, outcome{Class: "rejected", Status: 401, Reason: "invalid_client"},
			"(invalid_client): Client authentication failed due to unknown client"},
		{"scope refused", []answer{{status: 400, body: `{"error":"invalid_scope","error_description":"The requested scope is invalid, unknown, or malformed."}`}},
			platform.Credential{}, outcome{Class: "rejected", Status: 400, Reason: "invalid_scope"},
			"the requested scopes were refused (invalid_scope)"},
		{"other refusal without an oauth error", []answer{{status: 403, header: map[string]string{"Content-Type": "text/html"}, body: `<html>forbidden</html>`}},
			platform.Credential{}, outcome{Class: "rejected", Status: 403, Reason: "http_403"},
			"the token request was refused (status 403): forbidden"},
		{"rate limited", []answer{{status: 429, header: map[string]string{"Retry-After": "30"}, body: `{"error":"Too many requests"}`}},
			platform.Credential{}, outcome{Class: "not_performed", Status: 429, RetryAfter: 30 * time.Second},
			"try again later with the same code"},
		// A code is spent on use: a 5xx may come after the server used it.
		{"server error", []answer{{status: 502, header: map[string]string{"Content-Type": "text/html"}, body: `<html>bad gateway</html>`}},
			platform.Credential{}, outcome{Class: "ambiguous", Status: 502},
			"the code may have been spent"},
		{"server_error below 500", []answer{{status: 400, body: `{"error":"server_error"}`}},
			platform.Credential{}, outcome{Class: "ambiguous", Status: 400},
			"the code may have been spent"},
		{"2xx without a token", []answer{{status: 200, body: `{"token_type":"Bearer"}`}},
			platform.Credential{}, outcome{Class: "ambiguous"},
			"the server may have spent the code"},
		{"redirect not followed", []answer{{status: 307, header: map[string]string{"Location": "https://elsewhere.example/oauth/token"}}},
			platform.Credential{}, outcome{Class: "rejected", Status: 307, Reason: "http_307"},
			`unexpected redirect to "https://elsewhere.example/oauth/token"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &formServer{t: t, path: "/oauth/token", answers: tt.answers}
			srv := newServer(t, fs)
			got, err := ExchangeCode(context.Background(), srv.Client(), srv.URL, app, " "+code+"\n")
			out := outcomeOf(t, err)
			out.Message = "" // checked by substring
			if diff := cmp.Diff(tt.wantOut, out); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if err != nil && !strings.Contains(err.Error(), tt.wantMessage) {
				t.Errorf("error %q does not contain %q", err, tt.wantMessage)
			}
			assertNoSecrets(t, err, code, exampleClientSecret)
			nearExpiry := cmp.Comparer(func(a, b time.Time) bool {
				return a.IsZero() == b.IsZero() && a.Sub(b).Abs() < time.Minute
			})
			if diff := cmp.Diff(tt.want, got, nearExpiry); diff != "" {
				t.Errorf("credential (-want +got):\n%s", diff)
			}
			seen, _, forms := fs.snapshot()
			if diff := cmp.Diff([]seenRequest{{Method: "POST", Path: "/oauth/token"}}, seen); diff != "" {
				t.Errorf("requests, exactly one and without a token (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]url.Values{wantForm}, forms); diff != "" {
				t.Errorf("form (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("defaults for an app without redirect uri and scopes", func(t *testing.T) {
		fs := &formServer{t: t, path: "/oauth/token", answers: []answer{{status: 200, body: `{"access_token":"a","token_type":"Bearer"}`}}}
		srv := newServer(t, fs)
		if _, err := ExchangeCode(context.Background(), srv.Client(), srv.URL, App{ClientID: exampleClientID, ClientSecret: exampleClientSecret}, code); err != nil {
			t.Fatalf("ExchangeCode: %v", err)
		}
		if _, _, forms := fs.snapshot(); !cmp.Equal([]url.Values{wantForm}, forms) {
			diff := cmp.Diff([]url.Values{wantForm}, forms)
			t.Errorf("form (-want +got):\n%s", diff)
		}
	})
	t.Run("nothing sent without a code or an app", func(t *testing.T) {
		for _, tc := range []struct {
			app  App
			code string
		}{{app, "  "}, {App{ClientID: exampleClientID}, code}, {App{ClientSecret: exampleClientSecret}, code}} {
			_, err := ExchangeCode(context.Background(), nil, refusedURL(t), tc.app, tc.code)
			if got := outcomeOf(t, err); got.Class != "rejected" || got.Reason != "invalid_request" {
				t.Errorf("outcome = %+v, want rejected invalid_request", got)
			}
			assertNoSecrets(t, err, code, exampleClientSecret)
		}
	})
	t.Run("server unreachable: the code is intact", func(t *testing.T) {
		_, err := ExchangeCode(context.Background(), nil, refusedURL(t), app, code)
		if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		assertNoSecrets(t, err, code, exampleClientSecret)
	})
	t.Run("no answer after the request was written", func(t *testing.T) {
		srv := silentServer(t, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := ExchangeCode(ctx, srv.Client(), srv.URL, app, code)
		if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		assertNoSecrets(t, err, code, exampleClientSecret)
	})
}
