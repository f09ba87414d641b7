package mastodon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
)

// tokenServer is an OAuth token endpoint plus one API route that echoes
// the bearer token it was called with.
type tokenServer struct {
	t      *testing.T
	status int
	answer map[string]any

	mu    sync.Mutex
	forms []url.Values
	auth  []string
}

func (s *tokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.URL.Path {
	case "/oauth/token":
		if err := r.ParseForm(); err != nil {
			s.t.Errorf("parse form: %v", err)
		}
		s.forms = append(s.forms, r.PostForm)
		writeJSON(w, s.status, s.answer)
	case "/api/v1/statuses/1":
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		writeJSON(w, http.StatusOK, statusJSON("1", "<p>x</p>", fixedNow))
	default:
		s.t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
	}
}

func TestRefresh(t *testing.T) {
	tests := []struct {
		name    string
		in      platform.Credential
		status  int
		answer  map[string]any
		want    platform.Credential
		wantOut outcome
	}{
		{"rotates both tokens",
			platform.Credential{AccessToken: "access-1", RefreshToken: "refresh-1"}, 200,
			map[string]any{"access_token": "access-2", "refresh_token": "refresh-2", "token_type": "Bearer", "expires_in": 3600},
			platform.Credential{AccessToken: "access-2", RefreshToken: "refresh-2", ExpiresAt: time.Now().Add(time.Hour)},
			outcome{Class: "ok"}},
		{"keeps the old refresh token when none is returned",
			platform.Credential{AccessToken: "access-1", RefreshToken: "refresh-1"}, 200,
			map[string]any{"access_token": "access-2", "token_type": "Bearer"},
			platform.Credential{AccessToken: "access-2", RefreshToken: "refresh-1"},
			outcome{Class: "ok"}},
		{"uses the client's refresh token when the argument has none",
			platform.Credential{}, 200,
			map[string]any{"access_token": "access-2", "token_type": "Bearer"},
			platform.Credential{AccessToken: "access-2", RefreshToken: "refresh-1"},
			outcome{Class: "ok"}},
		{"invalid_grant means reconnect",
			platform.Credential{RefreshToken: "refresh-1"}, 400,
			map[string]any{"error": "invalid_grant", "error_description": "The provided authorization grant is invalid"},
			platform.Credential{},
			outcome{Class: "rejected", Status: 400, Reason: "reconnect_needed", Message: "refresh token: invalid_grant: The provided authorization grant is invalid"}},
		{"401 means reconnect",
			platform.Credential{RefreshToken: "refresh-1"}, 401,
			map[string]any{"error": "invalid_client"},
			platform.Credential{},
			outcome{Class: "rejected", Status: 401, Reason: "reconnect_needed", Message: "refresh token: invalid_client"}},
		{"403 means reconnect",
			platform.Credential{RefreshToken: "refresh-1"}, 403,
			map[string]any{},
			platform.Credential{},
			outcome{Class: "rejected", Status: 403, Reason: "reconnect_needed", Message: "refresh token: forbidden"}},
		{"429 is not performed",
			platform.Credential{RefreshToken: "refresh-1"}, 429,
			map[string]any{"error": "too_many_requests"},
			platform.Credential{},
			outcome{Class: "not_performed", Status: 429}},
		// The server (or a proxy that forwarded the grant) may have rotated
		// the tokens before failing: the refresh token may be spent.
		{"503 is ambiguous",
			platform.Credential{RefreshToken: "refresh-1"}, 503,
			map[string]any{"error": "unavailable"},
			platform.Credential{},
			outcome{Class: "ambiguous", Status: 503}},
		{"500 is ambiguous",
			platform.Credential{RefreshToken: "refresh-1"}, 500,
			map[string]any{},
			platform.Credential{},
			outcome{Class: "ambiguous", Status: 500}},
		{"server_error below 500 is ambiguous",
			platform.Credential{RefreshToken: "refresh-1"}, 400,
			map[string]any{"error": "server_error"},
			platform.Credential{},
			outcome{Class: "ambiguous", Status: 400}},
		{"temporarily_unavailable is not performed",
			platform.Credential{RefreshToken: "refresh-1"}, 400,
			map[string]any{"error": "temporarily_unavailable"},
			platform.Credential{},
			outcome{Class: "not_performed", Status: 400}},
		{"invalid_grant after a lost answer says the token was probably spent",
			platform.Credential{RefreshToken: "refresh-1", RefreshLostAt: fixedNow.Add(-time.Hour)}, 400,
			map[string]any{"error": "invalid_grant"},
			platform.Credential{},
			outcome{Class: "rejected", Status: 400, Reason: "reconnect_needed",
				Message: "refresh token: invalid_grant (the answer to a refresh with this token was lost at 2026-03-01T11:00:00Z; it was probably spent then)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := &tokenServer{t: t, status: tt.status, answer: tt.answer}
			srv := newServer(t, ts)
			c := newClient(t, srv.URL)
			got, err := c.Refresh(context.Background(), tt.in)
			if diff := cmp.Diff(tt.wantOut, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			wantForm := []url.Values{{
				"grant_type": {"refresh_token"}, "refresh_token": {"refresh-1"},
				"client_id": {"client-id"}, "client_secret": {"client-secret"},
			}}
			if diff := cmp.Diff(wantForm, ts.forms); diff != "" {
				t.Errorf("token request (-want +got):\n%s", diff)
			}
			if err != nil {
				if c.Credential().AccessToken != "access-1" {
					t.Errorf("failed refresh changed the stored credential")
				}
				return
			}
			// oauth2 computes the expiry from its own clock; a minute of
			// slack covers the test's run time.
			nearExpiry := cmp.Comparer(func(a, b time.Time) bool {
				return a.IsZero() == b.IsZero() && a.Sub(b).Abs() < time.Minute
			})
			if diff := cmp.Diff(tt.want, got, nearExpiry); diff != "" {
				t.Errorf("credential (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(got, c.Credential(), nearExpiry); diff != "" {
				t.Errorf("stored credential (-returned +stored):\n%s", diff)
			}
			// Later calls use the new access token.
			if _, err := c.Exists(context.Background(), "1"); err != nil {
				t.Fatalf("Exists: %v", err)
			}
			if diff := cmp.Diff([]string{"Bearer access-2"}, ts.auth); diff != "" {
				t.Errorf("authorization after refresh (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRefreshFailuresWithoutAnswer(t *testing.T) {
	t.Run("token endpoint unreachable", func(t *testing.T) {
		_, err := newClient(t, refusedURL(t)).Refresh(context.Background(), platform.Credential{RefreshToken: "r"})
		if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})
	t.Run("timeout after the request was written is ambiguous", func(t *testing.T) {
		srv := silentServer(t, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := newClient(t, srv.URL).Refresh(ctx, platform.Credential{RefreshToken: "r"})
		if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %q does not wrap context.DeadlineExceeded", err)
		}
	})
	t.Run("context ended before sending is not performed", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := newClient(t, "http://127.0.0.1:1").Refresh(ctx, platform.Credential{RefreshToken: "r"})
		if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})
	t.Run("no refresh token anywhere", func(t *testing.T) {
		c := newClient(t, refusedURL(t), func(cfg *Config) { cfg.Credential.RefreshToken = "" })
		_, err := c.Refresh(context.Background(), platform.Credential{AccessToken: "a"})
		if got := outcomeOf(t, err); got.Class != "rejected" || got.Reason != "reconnect_needed" {
			t.Errorf("outcome = %+v, want rejected reconnect_needed", got)
		}
	})
	t.Run("no oauth client configured", func(t *testing.T) {
		c := newClient(t, refusedURL(t), func(cfg *Config) { cfg.ClientID, cfg.ClientSecret = "", "" })
		_, err := c.Refresh(context.Background(), platform.Credential{RefreshToken: "r"})
		if got := outcomeOf(t, err); got.Class != "rejected" || got.Reason != "reconnect_needed" {
			t.Errorf("outcome = %+v, want rejected reconnect_needed", got)
		}
	})
}

// TestRefreshUsesTheCredentialsApp: a refresh grant is made as the OAuth
// app that issued the tokens (the credential's ClientID/ClientSecret),
// falling back to the configured default app. Shapes from
// https://docs.joinmastodon.org/methods/oauth/#token (POST /oauth/token,
// client_id and client_secret as form data, 200 with a Token) with
// grant_type=refresh_token as Doorkeeper serves it (RFC 6749 §6).
func TestRefreshUsesTheCredentialsApp(t *testing.T) {
	ownApp := platform.Credential{ClientID: "own-id", ClientSecret: "own-secret"}
	tests := []struct {
		name       string
		configured platform.Credential // the client's own credential
		defaultApp [2]string           // Config.ClientID, ClientSecret
		in         platform.Credential
		wantApp    [2]string // client_id, client_secret sent
		wantCred   platform.Credential
	}{
		{"the argument's app",
			platform.Credential{AccessToken: "access-1", RefreshToken: "refresh-1"}, [2]string{"client-id", "client-secret"},
			platform.Credential{AccessToken: "access-1", RefreshToken: "refresh-1", ClientID: "app-id", ClientSecret: "app-secret"},
			[2]string{"app-id", "app-secret"},
			platform.Credential{AccessToken: "access-2", RefreshToken: "refresh-2", ClientID: "app-id", ClientSecret: "app-secret"}},
		{"the client's own credential's app when the argument names none",
			platform.Credential{AccessToken: "access-1", RefreshToken: "refresh-1", ClientID: ownApp.ClientID, ClientSecret: ownApp.ClientSecret}, [2]string{"client-id", "client-secret"},
			platform.Credential{RefreshToken: "refresh-1"},
			[2]string{"own-id", "own-secret"},
			platform.Credential{AccessToken: "access-2", RefreshToken: "refresh-2", ClientID: "own-id", ClientSecret: "own-secret"}},
		{"the default app when no credential names one",
			platform.Credential{AccessToken: "access-1", RefreshToken: "refresh-1"}, [2]string{"client-id", "client-secret"},
			platform.Credential{RefreshToken: "refresh-1"},
			[2]string{"client-id", "client-secret"},
			platform.Credential{AccessToken: "access-2", RefreshToken: "refresh-2"}},
		{"the credential's app without a default app",
			platform.Credential{AccessToken: "access-1", RefreshToken: "refresh-1"}, [2]string{"", ""},
			platform.Credential{RefreshToken: "refresh-1", ClientID: "app-id", ClientSecret: "app-secret"},
			[2]string{"app-id", "app-secret"},
			platform.Credential{AccessToken: "access-2", RefreshToken: "refresh-2", ClientID: "app-id", ClientSecret: "app-secret"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := &tokenServer{t: t, status: 200, answer: map[string]any{
				"access_token": "access-2", "refresh_token": "refresh-2", "token_type": "Bearer", "scope": "read write", "created_at": 1573979017}}
			srv := newServer(t, ts)
			c := newClient(t, srv.URL, func(cfg *Config) {
				cfg.Credential = tt.configured
				cfg.ClientID, cfg.ClientSecret = tt.defaultApp[0], tt.defaultApp[1]
			})
			got, err := c.Refresh(context.Background(), tt.in)
			if err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			wantForm := []url.Values{{
				"grant_type": {"refresh_token"}, "refresh_token": {"refresh-1"},
				"client_id": {tt.wantApp[0]}, "client_secret": {tt.wantApp[1]},
			}}
			ts.mu.Lock()
			forms := ts.forms
			ts.mu.Unlock()
			if diff := cmp.Diff(wantForm, forms); diff != "" {
				t.Errorf("token request (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCred, got); diff != "" {
				t.Errorf("credential (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(got, c.Credential()); diff != "" {
				t.Errorf("stored credential (-returned +stored):\n%s", diff)
			}
		})
	}

	t.Run("a refused app is reconnect_needed and names no secret", func(t *testing.T) {
		ts := &tokenServer{t: t, status: 401, answer: map[string]any{
			"error": "invalid_client", "error_description": "Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method."}}
		srv := newServer(t, ts)
		_, err := newClient(t, srv.URL).Refresh(context.Background(), platform.Credential{RefreshToken: "refresh-1", ClientID: "app-id", ClientSecret: "app-secret"})
		if got := outcomeOf(t, err); got.Class != "rejected" || got.Reason != "reconnect_needed" {
			t.Errorf("outcome = %+v, want rejected reconnect_needed", got)
		}
		assertNoSecrets(t, err, "refresh-1", "app-secret", "client-secret", "access-1")
	})
}

// Token grants are writes that carry secrets in their body: a 307 or 308
// from /oauth/token would have net/http send the same form (the refresh
// token or code, and the client secret) to wherever Location points. No
// grant follows a redirect; nothing reaches the other host.
func TestTokenGrantsAreNotFollowedAcrossRedirect(t *testing.T) {
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		for _, grant := range []struct {
			name string
			send func(t *testing.T, baseURL string) error
		}{
			{"refresh", func(t *testing.T, baseURL string) error {
				_, err := newClient(t, baseURL).Refresh(context.Background(),
					platform.Credential{RefreshToken: "refresh-1", ClientID: "app-id", ClientSecret: "app-secret"})
				return err
			}},
			{"code", func(_ *testing.T, baseURL string) error {
				_, err := ExchangeCode(context.Background(), nil, baseURL,
					App{ClientID: "app-id", ClientSecret: "app-secret", RedirectURI: OOBRedirectURI}, "code-1")
				return err
			}},
		} {
			t.Run(fmt.Sprintf("%s %d", grant.name, status), func(t *testing.T) {
				var elsewhere atomic.Int32
				other := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					elsewhere.Add(1)
					writeJSON(w, http.StatusOK, map[string]any{"access_token": "access-2", "token_type": "Bearer"})
				}))
				srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Redirect(w, r, other.URL+"/oauth/token", status)
				}))
				err := grant.send(t, srv.URL)
				if n := elsewhere.Load(); n != 0 {
					t.Fatalf("the redirect's target received %d token requests, want 0", n)
				}
				if got := outcomeOf(t, err); got.Class != "rejected" || got.Status != status || !strings.Contains(got.Message, "redirect") {
					t.Errorf("outcome = %+v, want rejected %d naming the redirect", got, status)
				}
				assertNoSecrets(t, err, "refresh-1", "app-secret", "code-1")
			})
		}
	}
}
