package linkedin

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
	"oncepost/shared/platform/adaptertest"
)

// tokenRequest is what a token endpoint fake saw.
type tokenRequest struct {
	Method, Path, ContentType string
	Form                      url.Values
}

// tokenServer answers POST /oauth/v2/accessToken with status and body,
// recording each request: the token endpoint of
// https://learn.microsoft.com/en-us/linkedin/shared/authentication/programmatic-refresh-tokens
// (refresh) and
// https://learn.microsoft.com/en-us/linkedin/shared/authentication/authorization-code-flow
// (code), form-encoded in, JSON out.
func tokenServer(t *testing.T, status int, body string, header map[string]string) (*[]tokenRequest, string) {
	t.Helper()
	var (
		mu   sync.Mutex
		seen []tokenRequest
	)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		form, err := url.ParseQuery(string(raw))
		if err != nil {
			t.Errorf("token request body: %v", err)
		}
		mu.Lock()
		seen = append(seen, tokenRequest{r.Method, r.URL.Path, r.Header.Get("Content-Type"), form})
		mu.Unlock()
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	return &seen, srv.URL
}

// TestRefresh exchanges the refresh token at the token endpoint
// (grant_type=refresh_token, refresh_token, client_id, client_secret as
// x-www-form-urlencoded; answers and errors as in
// https://learn.microsoft.com/en-us/linkedin/shared/authentication/programmatic-refresh-tokens).
func TestRefresh(t *testing.T) {
	old := platform.Credential{AccessToken: testAccess, RefreshToken: testRefresh}
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   outcome
		cred   platform.Credential // on success
	}{
		{"new pair replaces the old", 200,
			nil, `{"access_token":"li-access-NEW","expires_in":5184000,"refresh_token":"li-refresh-NEW","refresh_token_expires_in":31536000,"scope":"w_member_social"}`,
			outcome{Class: "ok"},
			platform.Credential{AccessToken: "li-access-NEW", RefreshToken: "li-refresh-NEW", ExpiresAt: fixedNow.Add(60 * 24 * time.Hour)}},
		{"no refresh token in the answer keeps the old one", 200,
			nil, `{"access_token":"li-access-NEW","expires_in":86400}`,
			outcome{Class: "ok"},
			platform.Credential{AccessToken: "li-access-NEW", RefreshToken: testRefresh, ExpiresAt: fixedNow.Add(24 * time.Hour)}},
		{"invalid_grant", 400, nil, `{"error":"invalid_grant","error_description":"refresh token revoked"}`,
			outcome{Class: "rejected", Status: 400, Reason: platform.ReasonReconnectNeeded}, platform.Credential{}},
		{"linkedin's invalid_request for a dead token", 400, nil, `{"error":"invalid_request","error_description":"The provided authorization grant or refresh token is invalid, expired or revoked"}`,
			outcome{Class: "rejected", Status: 400, Reason: platform.ReasonReconnectNeeded}, platform.Credential{}},
		{"401 invalid_client is no reason to refresh again", 401, nil, `{"error":"invalid_client","error_description":"Client authentication failed"}`,
			outcome{Class: "rejected", Status: 401, Reason: platform.ReasonReconnectNeeded}, platform.Credential{}},
		{"500", 500, nil, `{"message":"Internal Server Error","status":500}`, outcome{Class: "ambiguous", Status: 500}, platform.Credential{}},
		{"503", 503, nil, ``, outcome{Class: "ambiguous", Status: 503}, platform.Credential{}},
		{"server_error below 500", 400, nil, `{"error":"server_error"}`, outcome{Class: "ambiguous", Status: 400}, platform.Credential{}},
		{"429", 429, map[string]string{"Retry-After": "60"}, ``, outcome{Class: "not_performed", Status: 429, RetryAfter: time.Minute}, platform.Credential{}},
		{"2xx without access token", 200, nil, `{"expires_in":86400}`, outcome{Class: "ambiguous", Status: 200}, platform.Credential{}},
		{"2xx unreadable", 200, nil, `<html>ok</html>`, outcome{Class: "ambiguous", Status: 200}, platform.Credential{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen, base := tokenServer(t, tt.status, tt.body, tt.header)
			c := newClient(t, base)
			got, err := c.Refresh(context.Background(), old)
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.cred, got); diff != "" {
				t.Errorf("credential (-want +got):\n%s", diff)
			}
			want := []tokenRequest{{
				Method: "POST", Path: "/oauth/v2/accessToken", ContentType: "application/x-www-form-urlencoded",
				Form: url.Values{"grant_type": {"refresh_token"}, "refresh_token": {testRefresh}, "client_id": {"client-id"}, "client_secret": {testClientSecret}},
			}}
			if diff := cmp.Diff(want, *seen); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if err == nil {
				if diff := cmp.Diff(tt.cred, c.Credential()); diff != "" {
					t.Errorf("client credential after refresh (-want +got):\n%s", diff)
				}
			} else if c.Credential() != (platform.Credential{AccessToken: testAccess, RefreshToken: testRefresh}) {
				t.Errorf("a failed refresh changed the client's credential")
			}
		})
	}
}

func TestRefreshWithoutAnswerOrToken(t *testing.T) {
	t.Run("answer lost after the request was written", func(t *testing.T) {
		// The token endpoint reads the grant and drops the connection: it
		// may have issued new tokens.
		srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			drain(r)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			conn.Close()
		}))
		_, err := newClient(t, srv.URL).Refresh(context.Background(), platform.Credential{RefreshToken: testRefresh})
		if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})
	t.Run("not sent", func(t *testing.T) {
		_, err := newClient(t, refusedURL(t)).Refresh(context.Background(), platform.Credential{RefreshToken: testRefresh})
		if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})
	t.Run("no refresh token: LinkedIn issues them to approved partners only", func(t *testing.T) {
		var n atomic.Int32
		srv := newServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
		c := newClient(t, srv.URL, func(cfg *Config) { cfg.Credential.RefreshToken = "" })
		_, err := c.Refresh(context.Background(), platform.Credential{AccessToken: testAccess})
		if diff := cmp.Diff(outcome{Class: "rejected", Reason: platform.ReasonReconnectNeeded}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if n.Load() != 0 {
			t.Errorf("sent %d requests, want none", n.Load())
		}
	})
}

// TestRefreshUsesTheCredentialsApp: a credential from ExchangeCode names
// the app that issued it; the grant is made as that app, and the new
// credential keeps naming it.
func TestRefreshUsesTheCredentialsApp(t *testing.T) {
	seen, base := tokenServer(t, 200, `{"access_token":"li-access-NEW","expires_in":60}`, nil)
	c := newClient(t, base)
	cred := platform.Credential{RefreshToken: "r-own", ClientID: "other-app", ClientSecret: "other-secret"}
	got, err := c.Refresh(context.Background(), cred)
	if err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	want := platform.Credential{AccessToken: "li-access-NEW", RefreshToken: "r-own", ExpiresAt: fixedNow.Add(time.Minute), ClientID: "other-app", ClientSecret: "other-secret"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("credential (-want +got):\n%s", diff)
	}
	form := (*seen)[0].Form
	if form.Get("client_id") != "other-app" || form.Get("client_secret") != "other-secret" || form.Get("refresh_token") != "r-own" {
		t.Errorf("grant form %v, want the credential's app and refresh token", form)
	}
}

// TestUnauthorizedThenRefresh: an expired token is 401 (error-handling
// page: "Expired access token"), Unauthorized; after Refresh the client
// sends the new token.
func TestUnauthorizedThenRefresh(t *testing.T) {
	f, srv := newFake(t, testOrg)
	f.token = "li-access-NEW"
	var tokenCalls atomic.Int32
	// The refresh grant's answer (programmatic-refresh-tokens, step 2).
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth/v2/accessToken", func(w http.ResponseWriter, r *http.Request) {
		tokenCalls.Add(1)
		drain(r)
		writeJSON(w, http.StatusOK, map[string]any{"access_token": "li-access-NEW", "expires_in": 5184000})
	})
	tokenSrv := newServer(t, mux)
	c := newClient(t, srv.URL, func(cfg *Config) { cfg.TokenURL = tokenSrv.URL + "/oauth/v2/accessToken" })
	ctx := context.Background()
	_, err := c.Publish(ctx, platform.PublishRequest{Text: "hello"})
	if diff := cmp.Diff(outcome{Class: "unauthorized"}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("outcome (-want +got):\n%s", diff)
	}
	if _, err := c.Refresh(ctx, c.Credential()); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	if _, err := c.Publish(ctx, platform.PublishRequest{Text: "hello"}); err != nil {
		t.Fatalf("Publish after refresh: %v", err)
	}
	if creates, _, _, _, _ := f.counts(); creates != 1 || tokenCalls.Load() != 1 {
		t.Errorf("fake stored %d posts with %d refreshes, want 1 and 1", creates, tokenCalls.Load())
	}
}

// TestAuthorizeURL: GET https://www.linkedin.com/oauth/v2/authorization
// with response_type=code, client_id, redirect_uri, state and the scopes
// (authorization-code-flow, step 2,
// https://learn.microsoft.com/en-us/linkedin/shared/authentication/authorization-code-flow).
func TestAuthorizeURL(t *testing.T) {
	raw := AuthorizeURL(OAuthConfig{ClientID: "client-id", ClientSecret: testClientSecret, RedirectURL: "https://oncepost.example/cb"}, "st4te")
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	if got := u.Scheme + "://" + u.Host + u.Path; got != "https://www.linkedin.com/oauth/v2/authorization" {
		t.Errorf("endpoint %q", got)
	}
	want := url.Values{
		"response_type": {"code"}, "client_id": {"client-id"}, "redirect_uri": {"https://oncepost.example/cb"},
		"state": {"st4te"}, "scope": {"openid profile w_member_social"},
	}
	if diff := cmp.Diff(want, u.Query()); diff != "" {
		t.Errorf("query (-want +got):\n%s", diff)
	}
	if strings.Contains(raw, testClientSecret) {
		t.Errorf("the client secret is in the authorization URL")
	}
}

// TestExchangeCode: POST /oauth/v2/accessToken with
// grant_type=authorization_code, code, client_id, client_secret and
// redirect_uri (authorization-code-flow, step 3); errors from its "API
// Error Details" table.
func TestExchangeCode(t *testing.T) {
	const code = "AQTQmah11lalyH65DAIivsjsAQV5P"
	tests := []struct {
		name   string
		status int
		body   string
		want   outcome
		cred   platform.Credential
	}{
		{"success", 200, `{"access_token":"li-access-NEW","expires_in":5184000,"scope":"openid,profile,w_member_social"}`, outcome{Class: "ok"},
			platform.Credential{AccessToken: "li-access-NEW", ClientID: "client-id", ClientSecret: testClientSecret}},
		{"code expired", 400, `{"error":"invalid_redirect_uri","error_description":"Unable to retrieve access token: appid/redirect uri/code verifier does not match authorization code. Or authorization code expired."}`,
			outcome{Class: "rejected", Status: 400, Reason: "invalid_redirect_uri"}, platform.Credential{}},
		{"code not found, echoed", 401, `{"error":"invalid_request","error_description":"Unable to retrieve access token: authorization code not found: ` + code + `"}`,
			outcome{Class: "rejected", Status: 401, Reason: "invalid_request"}, platform.Credential{}},
		{"500", 500, ``, outcome{Class: "ambiguous", Status: 500}, platform.Credential{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen, base := tokenServer(t, tt.status, tt.body, nil)
			cfg := OAuthConfig{ClientID: "client-id", ClientSecret: testClientSecret, RedirectURL: "https://oncepost.example/cb", TokenURL: base + "/oauth/v2/accessToken"}
			got, err := ExchangeCode(context.Background(), nil, cfg, code)
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if !got.ExpiresAt.IsZero() {
				if d := time.Until(got.ExpiresAt); d < 59*24*time.Hour || d > 61*24*time.Hour {
					t.Errorf("ExpiresAt %s is not 60 days ahead", got.ExpiresAt)
				}
				got.ExpiresAt = time.Time{}
			}
			if diff := cmp.Diff(tt.cred, got); diff != "" {
				t.Errorf("credential (-want +got):\n%s", diff)
			}
			want := []tokenRequest{{
				Method: "POST", Path: "/oauth/v2/accessToken", ContentType: "application/x-www-form-urlencoded",
				Form: url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {"client-id"},
					"client_secret": {testClientSecret}, "redirect_uri": {"https://oncepost.example/cb"}},
			}}
			if diff := cmp.Diff(want, *seen); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if err != nil && (strings.Contains(err.Error(), code) || strings.Contains(err.Error(), testClientSecret)) {
				t.Errorf("error %q carries the code or the secret", err)
			}
		})
	}
}

// TestMe reads GET /v2/userinfo (LinkedIn's OpenID Connect userinfo,
// "Sign In with LinkedIn using OpenID Connect": {"sub", "name", …}) and
// makes the person URN.
func TestMe(t *testing.T) {
	var auth atomic.Value
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		if r.Method != http.MethodGet || r.URL.Path != "/v2/userinfo" {
			t.Errorf("request %s %s, want GET /v2/userinfo", r.Method, r.URL.Path)
		}
		if r.Header.Get("Authorization") != "Bearer "+testAccess {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Invalid access token", "serviceErrorCode": 65600, "status": 401})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"sub": "782bbtaQ", "name": "John Doe", "given_name": "John", "family_name": "Doe", "locale": "en-US", "email_verified": true})
	}))
	got, err := Me(context.Background(), nil, srv.URL, testAccess)
	if err != nil {
		t.Fatalf("Me: %v", err)
	}
	if diff := cmp.Diff(Profile{URN: "urn:li:person:782bbtaQ", Sub: "782bbtaQ", Name: "John Doe"}, got); diff != "" {
		t.Errorf("profile (-want +got):\n%s", diff)
	}
	if auth.Load() != "Bearer "+testAccess {
		t.Errorf("Authorization %q", auth.Load())
	}
	_, err = Me(context.Background(), nil, srv.URL, "expired")
	if diff := cmp.Diff(outcome{Class: "unauthorized"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
}

// TestNoSecretInErrors runs the failures of every call against servers
// that echo the request's secrets back in their error messages, and
// searches every error for the access token, the refresh token, the
// client secret and the authorization code.
func TestNoSecretInErrors(t *testing.T) {
	const code = "AQcode5ecret"
	secrets := []string{testAccess, testRefresh, testClientSecret, code}
	var log adaptertest.Errors
	// An API and token endpoint that put the request's Authorization
	// header and body into every error field LinkedIn has: message and
	// code (error-handling page), error and error_description (OAuth).
	echo := func(status int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			raw, _ := io.ReadAll(r.Body)
			msg := "you sent " + r.Header.Get("Authorization") + " with " + string(raw)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			writeBody := map[string]any{"message": msg, "status": status, "code": msg, "error": "invalid_request", "error_description": msg}
			if err := jsonEncode(w, writeBody); err != nil {
				t.Errorf("encode: %v", err)
			}
		})
	}
	ctx := context.Background()
	for _, status := range []int{400, 401, 403, 404, 422, 426, 429, 500, 503} {
		srv := newServer(t, echo(status))
		c := newClient(t, srv.URL)
		_, err := c.Publish(ctx, platform.PublishRequest{Text: "x"})
		log.Add(err)
		log.Add(c.Delete(ctx, "urn:li:share:1"))
		_, err = c.Exists(ctx, "urn:li:share:1")
		log.Add(err)
		_, _, err = c.Lookup(ctx, platform.LookupQuery{Fingerprint: "f", After: "urn:li:share:1"})
		log.Add(err)
		_, _, err = c.Lookup(ctx, platform.LookupQuery{Fingerprint: "f"})
		log.Add(err)
		_, err = c.Recent(ctx, 3)
		log.Add(err)
		_, err = c.UploadMedia(ctx, platform.MediaUpload{Filename: "a.png", Data: testPNG(t, 2, 2, 1)})
		log.Add(err)
		_, err = c.Refresh(ctx, platform.Credential{RefreshToken: testRefresh})
		log.Add(err)
		_, err = ExchangeCode(ctx, nil, OAuthConfig{ClientID: "id", ClientSecret: testClientSecret, RedirectURL: "https://x.example/cb", TokenURL: srv.URL + "/t"}, code)
		log.Add(err)
		_, err = Me(ctx, nil, srv.URL, testAccess)
		log.Add(err)
	}
	// Transport failures: refused, and an answer that never comes.
	refused := newClient(t, refusedURL(t))
	_, err := refused.Publish(ctx, platform.PublishRequest{Text: "x"})
	log.Add(err)
	_, err = refused.Refresh(ctx, platform.Credential{RefreshToken: testRefresh})
	log.Add(err)
	_, err = refused.UploadMedia(ctx, platform.MediaUpload{Filename: "a.png", Data: testPNG(t, 2, 2, 1)})
	log.Add(err)
	// A server that reads the request and never answers.
	silent := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { drain(r); <-r.Context().Done() }))
	sc := newClient(t, silent.URL)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = sc.Publish(short, platform.PublishRequest{Text: "x"})
	cancel()
	log.Add(err)
	short, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = sc.Refresh(short, platform.Credential{RefreshToken: testRefresh})
	cancel()
	log.Add(err)

	if n := len(log.Texts()); n < 100 {
		t.Fatalf("collected %d error texts, want the failures of every call", n)
	}
	log.CheckNoSecrets(t, secrets...)
}
