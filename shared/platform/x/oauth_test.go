package x

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
	"oncepost/shared/platform/adaptertest"
)

const (
	newAccess  = "access-token-2-77aa"
	newRefresh = "refresh-token-2-66bb"
)

// tokenEndpoint is X's POST /2/oauth2/token
// (https://docs.x.com/fundamentals/authentication/oauth-2-0/user-access-token,
// steps 3 and 5): a form with grant_type, client_id (public clients) and
// HTTP Basic client authentication (confidential clients), answered with
// {"token_type":"bearer","expires_in":7200,"access_token","scope",
// "refresh_token"} or an OAuth error such as {"error":"invalid_request",
// "error_description":"Value passed for the token was invalid."}
// (plhery/node-twitter-api-v2#496 shows the same shape for a spent code).
type tokenEndpoint struct {
	t      *testing.T
	status int
	answer map[string]any

	mu    sync.Mutex
	forms []url.Values
	basic []string
}

func (s *tokenEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/2/oauth2/token" {
		s.t.Errorf("token endpoint: unexpected %s %s", r.Method, r.URL.Path)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
		s.t.Errorf("token request Content-Type %q", ct)
	}
	if err := r.ParseForm(); err != nil {
		s.t.Errorf("parse form: %v", err)
	}
	s.mu.Lock()
	s.forms = append(s.forms, r.PostForm)
	s.basic = append(s.basic, r.Header.Get("Authorization"))
	s.mu.Unlock()
	writeJSON(w, s.status, s.answer)
}

func basicAuth(id, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(id+":"+secret))
}

var rotated = map[string]any{"token_type": "bearer", "expires_in": 7200, "access_token": newAccess,
	"scope": "tweet.read tweet.write users.read offline.access media.write", "refresh_token": newRefresh}

// TestRefresh runs the refresh grant (step 5 of
// https://docs.x.com/fundamentals/authentication/oauth-2-0/user-access-token)
// against tokenEndpoint: the form and Basic authentication sent, the
// single-use rotation (gptme/gptme-contrib#285, trypostit/trypost#126), and
// every class of refusal.
func TestRefresh(t *testing.T) {
	tests := []struct {
		name    string
		in      platform.Credential
		status  int
		answer  map[string]any
		want    platform.Credential
		wantOut outcome
	}{
		{"single-use token replaced by the answer's",
			platform.Credential{AccessToken: testAccess, RefreshToken: testRefresh}, 200, rotated,
			platform.Credential{AccessToken: newAccess, RefreshToken: newRefresh, ExpiresAt: fixedNow.Add(2 * time.Hour), ClientID: "client-id", ClientSecret: testClientSecret},
			outcome{Class: "ok"}},
		{"an answer without a refresh token keeps the old one",
			platform.Credential{AccessToken: testAccess, RefreshToken: testRefresh}, 200,
			map[string]any{"token_type": "bearer", "expires_in": 7200, "access_token": newAccess},
			platform.Credential{AccessToken: newAccess, RefreshToken: testRefresh, ExpiresAt: fixedNow.Add(2 * time.Hour), ClientID: "client-id", ClientSecret: testClientSecret},
			outcome{Class: "ok"}},
		{"the client's refresh token when the argument has none",
			platform.Credential{}, 200, rotated,
			platform.Credential{AccessToken: newAccess, RefreshToken: newRefresh, ExpiresAt: fixedNow.Add(2 * time.Hour), ClientID: "client-id", ClientSecret: testClientSecret},
			outcome{Class: "ok"}},
		{"invalid_request (a spent token) means reconnect",
			platform.Credential{RefreshToken: testRefresh}, 400,
			map[string]any{"error": "invalid_request", "error_description": "Value passed for the token was invalid."},
			platform.Credential{},
			outcome{Class: "rejected", Status: 400, Reason: "reconnect_needed", Message: "refresh token: invalid_request: Value passed for the token was invalid."}},
		{"invalid_grant means reconnect",
			platform.Credential{RefreshToken: testRefresh}, 400, map[string]any{"error": "invalid_grant"},
			platform.Credential{},
			outcome{Class: "rejected", Status: 400, Reason: "reconnect_needed", Message: "refresh token: invalid_grant"}},
		{"a refused app is reconnect, not Unauthorized",
			platform.Credential{RefreshToken: testRefresh}, 401,
			map[string]any{"error": "unauthorized_client", "error_description": "Missing valid authorization header"},
			platform.Credential{},
			outcome{Class: "rejected", Status: 401, Reason: "reconnect_needed", Message: "refresh token: unauthorized_client: Missing valid authorization header"}},
		{"refusal after a lost answer says the token was probably spent",
			platform.Credential{RefreshToken: testRefresh, RefreshLostAt: fixedNow.Add(-time.Hour)}, 400, map[string]any{"error": "invalid_request"},
			platform.Credential{},
			outcome{Class: "rejected", Status: 400, Reason: "reconnect_needed",
				Message: "refresh token: invalid_request (the answer to a refresh with this token was lost at 2026-03-01T11:00:00Z; it was probably spent then)"}},
		{"429 is not performed", platform.Credential{RefreshToken: testRefresh}, 429, map[string]any{"title": "Too Many Requests"},
			platform.Credential{}, outcome{Class: "not_performed", Status: 429}},
		{"temporarily_unavailable is not performed", platform.Credential{RefreshToken: testRefresh}, 400, map[string]any{"error": "temporarily_unavailable"},
			platform.Credential{}, outcome{Class: "not_performed", Status: 400}},
		// X may have rotated the tokens before failing: the token may be spent.
		{"503 is ambiguous", platform.Credential{RefreshToken: testRefresh}, 503, map[string]any{"title": "Service Unavailable"},
			platform.Credential{}, outcome{Class: "ambiguous", Status: 503}},
		{"server_error below 500 is ambiguous", platform.Credential{RefreshToken: testRefresh}, 400, map[string]any{"error": "server_error"},
			platform.Credential{}, outcome{Class: "ambiguous", Status: 400}},
		{"200 without an access token is ambiguous", platform.Credential{RefreshToken: testRefresh}, 200, map[string]any{"token_type": "bearer"},
			platform.Credential{}, outcome{Class: "ambiguous", Status: 200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := &tokenEndpoint{t: t, status: tt.status, answer: tt.answer}
			srv := newServer(t, ts)
			c := newClient(t, srv.URL)
			got, err := c.Refresh(context.Background(), tt.in)
			if diff := cmp.Diff(tt.wantOut, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			wantForm := []url.Values{{"grant_type": {"refresh_token"}, "refresh_token": {testRefresh}, "client_id": {"client-id"}}}
			if diff := cmp.Diff(wantForm, ts.forms); diff != "" {
				t.Errorf("token request form (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{basicAuth("client-id", testClientSecret)}, ts.basic); diff != "" {
				t.Errorf("client authentication (-want +got):\n%s", diff)
			}
			if err != nil {
				if c.Credential().AccessToken != testAccess {
					t.Errorf("a failed refresh changed the stored credential")
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("credential (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(got, c.Credential()); diff != "" {
				t.Errorf("stored credential (-returned +stored):\n%s", diff)
			}
		})
	}
}

// TestRefreshPublicClient: a public client (no secret) sends no Basic
// header, only client_id in the form (step 5's public-client example).
func TestRefreshPublicClient(t *testing.T) {
	ts := &tokenEndpoint{t: t, status: 200, answer: rotated}
	srv := newServer(t, ts)
	c := newClient(t, srv.URL, func(cfg *Config) { cfg.ClientSecret = "" })
	if _, err := c.Refresh(context.Background(), platform.Credential{RefreshToken: testRefresh, ClientID: "public-app"}); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	if diff := cmp.Diff([]string{""}, ts.basic); diff != "" {
		t.Errorf("Authorization (-want +got):\n%s", diff)
	}
	if got := ts.forms[0].Get("client_id"); got != "public-app" {
		t.Errorf("client_id = %q, want the credential's app", got)
	}
}

// TestRefreshWithoutAnswer: the token endpoint closes the connection or
// holds its answer past the deadline after reading the grant, so X may
// have rotated the tokens: Ambiguous. A grant never sent is NotPerformed.
func TestRefreshWithoutAnswer(t *testing.T) {
	t.Run("connection closed after the request is ambiguous", func(t *testing.T) {
		srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.ParseForm()
			adaptertest.HijackClose(t, w)
		}))
		_, err := newClient(t, srv.URL).Refresh(context.Background(), platform.Credential{RefreshToken: testRefresh})
		if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})
	t.Run("timeout after the request is ambiguous", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.ParseForm()
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := newClient(t, srv.URL).Refresh(ctx, platform.Credential{RefreshToken: testRefresh})
		if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %q does not wrap the deadline", err)
		}
	})
	t.Run("refused connection is not performed", func(t *testing.T) {
		_, err := newClient(t, refusedURL(t)).Refresh(context.Background(), platform.Credential{RefreshToken: testRefresh})
		if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})
	t.Run("no refresh token anywhere", func(t *testing.T) {
		c := newClient(t, refusedURL(t), func(cfg *Config) { cfg.Credential.RefreshToken = "" })
		_, err := c.Refresh(context.Background(), platform.Credential{AccessToken: "a"})
		if got := outcomeOf(t, err); got.Class != "rejected" || got.Reason != platform.ReasonReconnectNeeded {
			t.Errorf("outcome = %+v, want rejected reconnect_needed", got)
		}
	})
	t.Run("no app anywhere", func(t *testing.T) {
		c := newClient(t, refusedURL(t), func(cfg *Config) { cfg.ClientID, cfg.ClientSecret = "", "" })
		_, err := c.Refresh(context.Background(), platform.Credential{RefreshToken: testRefresh})
		if got := outcomeOf(t, err); got.Class != "rejected" || got.Reason != platform.ReasonReconnectNeeded {
			t.Errorf("outcome = %+v, want rejected reconnect_needed", got)
		}
	})
}

// TestUnauthorizedThenRefreshThenPublish: X answers 401 to an expired
// access token (https://docs.x.com/x-api/fundamentals/response-codes-and-errors);
// Publish is Unauthorized and stored nothing; after Refresh the client
// sends the new token and the post is created once.
func TestUnauthorizedThenRefreshThenPublish(t *testing.T) {
	f := newFakeX(t)
	f.token = newAccess // X no longer accepts the client's token
	ts := &tokenEndpoint{t: t, status: 200, answer: rotated}
	mux := http.NewServeMux()
	mux.Handle("/2/oauth2/token", ts)
	mux.Handle("/", f)
	srv := newServer(t, mux)
	c := newClient(t, srv.URL)

	_, err := c.Publish(context.Background(), platform.PublishRequest{Text: "after refresh"})
	if diff := cmp.Diff(outcome{Class: "unauthorized"}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("outcome (-want +got):\n%s", diff)
	}
	if f.postCount() != 0 {
		t.Fatalf("a refused create stored a post")
	}
	cred, err := c.Refresh(context.Background(), c.Credential())
	if err != nil || cred.AccessToken != newAccess || cred.RefreshToken != newRefresh {
		t.Fatalf("Refresh = %v, %v", cred, err)
	}
	if _, err := c.Publish(context.Background(), platform.PublishRequest{Text: "after refresh"}); err != nil {
		t.Fatalf("Publish after refresh: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.posts) != 1 || f.creates != 1 {
		t.Errorf("fake holds %d posts after %d accepted creates, want 1 and 1", len(f.posts), f.creates)
	}
}

// TestAuthorizeURL checks the authorize URL's parameters against
// https://docs.x.com/fundamentals/authentication/oauth-2-0/authorization-code
// (response_type, client_id, redirect_uri, scope, state, code_challenge,
// code_challenge_method) and the S256 challenge of NewPKCE (RFC 7636 §4.2).
func TestAuthorizeURL(t *testing.T) {
	verifier, challenge := NewPKCE()
	sum := sha256.Sum256([]byte(verifier))
	if want := base64.RawURLEncoding.EncodeToString(sum[:]); challenge != want || len(verifier) < 43 {
		t.Fatalf("challenge %q of verifier %q, want %q", challenge, verifier, want)
	}
	raw := AuthorizeURL(OAuthConfig{ClientID: "client-id", RedirectURL: "https://oncepost.example/x/callback"}, "state-123", challenge)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme+"://"+u.Host+u.Path != DefaultAuthURL {
		t.Errorf("authorize page %s, want %s", raw, DefaultAuthURL)
	}
	want := url.Values{
		"response_type": {"code"}, "client_id": {"client-id"}, "redirect_uri": {"https://oncepost.example/x/callback"},
		"scope": {"tweet.read tweet.write users.read offline.access media.write"}, "state": {"state-123"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"},
	}
	if diff := cmp.Diff(want, u.Query()); diff != "" {
		t.Errorf("authorize parameters (-want +got):\n%s", diff)
	}
	if strings.Contains(raw, verifier) {
		t.Error("the authorize URL carries the verifier")
	}
}

// TestExchangeCode: step 3 of
// https://docs.x.com/fundamentals/authentication/oauth-2-0/user-access-token:
// code, grant_type=authorization_code, client_id, redirect_uri and
// code_verifier as a form, Basic authentication for a confidential client.
func TestExchangeCode(t *testing.T) {
	const code, verifier = "auth-code-3c3c", "verifier-4d4d"
	tests := []struct {
		name      string
		secret    string
		status    int
		answer    map[string]any
		wantBasic string
		want      outcome
	}{
		{"confidential client", testClientSecret, 200, rotated, basicAuth("client-id", testClientSecret), outcome{Class: "ok"}},
		{"public client", "", 200, rotated, "", outcome{Class: "ok"}},
		{"spent code", "", 400, map[string]any{"error": "invalid_request", "error_description": "Value passed for the authorization code was invalid."}, "",
			outcome{Class: "rejected", Status: 400, Reason: "invalid_request",
				Message: "exchange authorization code: invalid_request: Value passed for the authorization code was invalid.; start again with a new authorization"}},
		{"5xx", "", 502, map[string]any{}, "", outcome{Class: "ambiguous", Status: 502}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := &tokenEndpoint{t: t, status: tt.status, answer: tt.answer}
			srv := newServer(t, ts)
			cfg := OAuthConfig{ClientID: "client-id", ClientSecret: tt.secret, RedirectURL: "https://oncepost.example/x/callback", TokenURL: srv.URL + "/2/oauth2/token"}
			before := time.Now()
			cred, err := ExchangeCode(context.Background(), nil, cfg, code, verifier)
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			wantForm := []url.Values{{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cfg.RedirectURL},
				"code_verifier": {verifier}, "client_id": {"client-id"}}}
			if diff := cmp.Diff(wantForm, ts.forms); diff != "" {
				t.Errorf("token request form (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{tt.wantBasic}, ts.basic); diff != "" {
				t.Errorf("client authentication (-want +got):\n%s", diff)
			}
			if err != nil {
				return
			}
			if cred.AccessToken != newAccess || cred.RefreshToken != newRefresh || cred.ClientID != "client-id" || cred.ClientSecret != tt.secret {
				t.Errorf("credential %#v lacks the tokens or the app", cred)
			}
			if exp := cred.ExpiresAt.Sub(before); exp < 2*time.Hour-time.Minute || exp > 2*time.Hour+time.Minute {
				t.Errorf("expires in %s, want about 2h (expires_in 7200)", exp)
			}
		})
	}
	t.Run("refused before sending", func(t *testing.T) {
		_, err := ExchangeCode(context.Background(), nil, OAuthConfig{ClientID: "c", RedirectURL: "https://r.example", TokenURL: refusedURL(t)}, code, verifier)
		if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		_, err = ExchangeCode(context.Background(), nil, OAuthConfig{ClientID: "c", RedirectURL: "https://r.example"}, code, "")
		if got := outcomeOf(t, err); got.Reason != "invalid_request" {
			t.Errorf("missing verifier outcome %+v", got)
		}
	})
}
