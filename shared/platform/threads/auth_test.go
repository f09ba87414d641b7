package threads

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
	"oncepost/shared/platform/adaptertest"
)

// TestUnauthorizedThenRefresh: an expired token (Graph error 190,
// https://developers.facebook.com/docs/graph-api/guides/error-handling) is
// Unauthorized; Refresh
// (https://developers.facebook.com/docs/threads/get-started/long-lived-tokens,
// "Refresh a Long-Lived Token") gets a new token the client then uses.
func TestUnauthorizedThenRefresh(t *testing.T) {
	f, c := fakeClient(t)
	f.setToken("THAAtoken-rotated-elsewhere")
	_, err := c.Publish(context.Background(), platform.PublishRequest{Text: "x"})
	if diff := cmp.Diff(outcome{Class: "unauthorized"}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("outcome (-want +got):\n%s", diff)
	}
	f.setToken(fakeToken)

	// Issued 10 days ago: old enough to refresh.
	old := platform.Credential{AccessToken: fakeToken, RefreshToken: "kept-as-given", ExpiresAt: fixedNow.Add(50 * 24 * time.Hour), ClientID: testClientID}
	next, err := c.Refresh(context.Background(), old)
	if err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	f.mu.Lock()
	issued := f.token
	f.mu.Unlock()
	want := platform.Credential{AccessToken: issued, RefreshToken: "kept-as-given", ExpiresAt: fixedNow.Add(5184000 * time.Second), ClientID: testClientID}
	if diff := cmp.Diff(want, next); diff != "" {
		t.Errorf("credential (-want +got):\n%s", diff)
	}
	if issued == fakeToken {
		t.Fatal("the fake did not issue a new token")
	}
	reqs := f.seen()
	got := reqs[len(reqs)-1]
	wantReq := seenRequest{Method: "GET", Path: "/refresh_access_token", Form: url.Values{},
		Query: url.Values{"grant_type": {"th_refresh_token"}, "access_token": {fakeToken}}}
	if diff := cmp.Diff(wantReq, got); diff != "" {
		t.Errorf("refresh request (-want +got):\n%s", diff)
	}
	if _, err := c.Publish(context.Background(), platform.PublishRequest{Text: "after refresh"}); err != nil {
		t.Errorf("Publish with the refreshed token: %v", err)
	}
	if diff := cmp.Diff(want, c.Credential()); diff != "" {
		t.Errorf("client credential (-want +got):\n%s", diff)
	}
}

func TestRefreshOutcomes(t *testing.T) {
	oldEnough := platform.Credential{AccessToken: fakeToken, ExpiresAt: fixedNow.Add(30 * 24 * time.Hour)}
	tests := []struct {
		name string
		cred platform.Credential
		// answer, when set, replaces the fake's refresh endpoint.
		answer    func(t *testing.T, w http.ResponseWriter, r *http.Request)
		want      outcome
		wantCalls int
		wantToken string // "" when no credential is expected
		wantRT    string
	}{
		{
			name: "no refresh token stays empty", cred: oldEnough,
			want: outcome{Class: "ok"}, wantCalls: 1, wantToken: "new", wantRT: "",
		},
		{
			name: "stored refresh token is never emptied", cred: func() platform.Credential { c := oldEnough; c.RefreshToken = "rt-1"; return c }(),
			want: outcome{Class: "ok"}, wantCalls: 1, wantToken: "new", wantRT: "rt-1",
		},
		{
			name: "code 190 needs a reconnect", cred: oldEnough,
			answer: func(_ *testing.T, w http.ResponseWriter, _ *http.Request) {
				graphErr(w, http.StatusBadRequest, 190, 460, "OAuthException", "Error validating access token: The session has been invalidated because the user changed their password")
			},
			want: outcome{Class: "rejected", Status: 400, Reason: platform.ReasonReconnectNeeded}, wantCalls: 1,
		},
		{
			name: "other refusal needs a reconnect", cred: oldEnough,
			answer: func(_ *testing.T, w http.ResponseWriter, _ *http.Request) {
				graphErr(w, http.StatusBadRequest, 10, 0, "OAuthException", "Application does not have permission for this action")
			},
			want: outcome{Class: "rejected", Status: 400, Reason: platform.ReasonReconnectNeeded}, wantCalls: 1,
		},
		{
			name: "5xx is ambiguous", cred: oldEnough,
			answer: func(_ *testing.T, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) },
			want:   outcome{Class: "ambiguous", Status: 502}, wantCalls: 1,
		},
		{
			name: "lost answer is ambiguous", cred: oldEnough,
			answer: func(t *testing.T, w http.ResponseWriter, _ *http.Request) { adaptertest.HijackClose(t, w) },
			want:   outcome{Class: "ambiguous"}, wantCalls: 1,
		},
		{
			name: "2xx without a token is ambiguous", cred: oldEnough,
			answer: func(_ *testing.T, w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, http.StatusOK, map[string]any{"token_type": "bearer"})
			},
			want: outcome{Class: "ambiguous", Status: 200}, wantCalls: 1,
		},
		{
			name: "throttled is not performed", cred: oldEnough,
			answer: func(_ *testing.T, w http.ResponseWriter, _ *http.Request) {
				graphErr(w, http.StatusBadRequest, 4, 0, "OAuthException", "Application request limit reached")
			},
			want: outcome{Class: "not_performed", Status: 400, RetryAfter: time.Hour}, wantCalls: 1,
		},
		{
			name: "a token younger than a day is not sent",
			cred: platform.Credential{AccessToken: fakeToken, ExpiresAt: fixedNow.Add(60*24*time.Hour - 3*time.Hour)},
			want: outcome{Class: "not_performed", RetryAfter: 21 * time.Hour}, wantCalls: 0,
		},
		{
			name: "an expired token is not sent",
			cred: platform.Credential{AccessToken: fakeToken, ExpiresAt: fixedNow.Add(-time.Second)},
			want: outcome{Class: "rejected", Reason: platform.ReasonReconnectNeeded}, wantCalls: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			if tt.answer != nil {
				f.before = func(route string, w http.ResponseWriter, r *http.Request) bool {
					if route != "refresh" {
						return false
					}
					tt.answer(t, w, r)
					return true
				}
			}
			srv := newServer(t, f)
			c := newClient(t, srv.URL)
			next, err := c.Refresh(context.Background(), tt.cred)
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if n := f.callCount("refresh"); n != tt.wantCalls {
				t.Errorf("refresh sent %d times, want %d", n, tt.wantCalls)
			}
			if tt.wantToken == "" {
				if next != (platform.Credential{}) {
					t.Errorf("credential %+v returned with an error", next)
				}
				if c.accessToken() != fakeToken {
					t.Errorf("client token changed on a failed refresh")
				}
				return
			}
			if next.AccessToken == "" || next.AccessToken == fakeToken || next.RefreshToken != tt.wantRT {
				t.Errorf("credential: new token %v, refresh token %q; want a new token and %q", next.AccessToken != fakeToken, next.RefreshToken, tt.wantRT)
			}
		})
	}
}

func TestRefreshNotReachedIsNotPerformed(t *testing.T) {
	c := newClient(t, refusedURL(t))
	_, err := c.Refresh(context.Background(), platform.Credential{AccessToken: fakeToken})
	if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
}

// TestAuthorizeURL follows
// https://developers.facebook.com/docs/threads/get-started/get-access-tokens-and-permissions,
// Step 1.
func TestAuthorizeURL(t *testing.T) {
	got := AuthorizeURL(OAuthConfig{ClientID: testClientID, ClientSecret: testClientSecret, RedirectURI: testRedirectURI}, "st 1")
	want := "https://threads.net/oauth/authorize?client_id=990602627938098" +
		"&redirect_uri=https%3A%2F%2Foncepost.example%2Fthreads%2Fcallback" +
		"&scope=threads_basic,threads_content_publish,threads_delete&response_type=code&state=st+1"
	if got != want {
		t.Errorf("AuthorizeURL =\n %s\nwant\n %s", got, want)
	}
	if strings.Contains(got, testClientSecret) {
		t.Error("the authorize URL carries the client secret")
	}
	got = AuthorizeURL(OAuthConfig{ClientID: "1", RedirectURI: "https://x/cb", Scopes: []string{"threads_basic"}, AuthorizeEndpoint: "http://127.0.0.1:1/oauth/authorize"}, "")
	if want := "http://127.0.0.1:1/oauth/authorize?client_id=1&redirect_uri=https%3A%2F%2Fx%2Fcb&scope=threads_basic&response_type=code"; got != want {
		t.Errorf("AuthorizeURL = %s, want %s", got, want)
	}
}

// TestExchangeCode: code → short-lived token
// (https://developers.facebook.com/docs/threads/get-started/get-access-tokens-and-permissions,
// Step 2) → long-lived token
// (https://developers.facebook.com/docs/threads/get-started/long-lived-tokens).
func TestExchangeCode(t *testing.T) {
	cfg := func(base string) OAuthConfig {
		return OAuthConfig{ClientID: testClientID, ClientSecret: testClientSecret, RedirectURI: testRedirectURI, BaseURL: base}
	}
	t.Run("two steps", func(t *testing.T) {
		f := newFake(t)
		srv := newServer(t, f)
		before := time.Now()
		cred, err := ExchangeCode(context.Background(), nil, cfg(srv.URL), testCode+"#_")
		if err != nil {
			t.Fatalf("ExchangeCode: %v", err)
		}
		if cred.AccessToken != "THlong-1" || cred.ClientID != testClientID || cred.ClientSecret != "" || cred.RefreshToken != "" {
			t.Errorf("credential: token %q, client %q, secret kept %v, refresh %q", cred.AccessToken, cred.ClientID, cred.ClientSecret != "", cred.RefreshToken)
		}
		if lo, hi := before.Add(5183944*time.Second), time.Now().Add(5183944*time.Second); cred.ExpiresAt.Before(lo) || cred.ExpiresAt.After(hi) {
			t.Errorf("ExpiresAt %s not within [%s, %s]", cred.ExpiresAt, lo, hi)
		}
		want := []seenRequest{
			{Method: "POST", Path: "/oauth/access_token", ContentType: "application/x-www-form-urlencoded", Query: url.Values{}, Form: url.Values{
				"client_id": {testClientID}, "client_secret": {testClientSecret}, "code": {testCode},
				"grant_type": {"authorization_code"}, "redirect_uri": {testRedirectURI},
			}},
			{Method: "GET", Path: "/access_token", Form: url.Values{}, Query: url.Values{
				"grant_type": {"th_exchange_token"}, "client_secret": {testClientSecret}, "access_token": {"THshort-1"},
			}},
		}
		if diff := cmp.Diff(want, f.seen()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
	})
	t.Run("bad code is rejected", func(t *testing.T) {
		f := newFake(t)
		srv := newServer(t, f)
		_, err := ExchangeCode(context.Background(), nil, cfg(srv.URL), "AQBwrong")
		if diff := cmp.Diff(outcome{Class: "rejected", Status: 400, Reason: ReasonInvalidParameter}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if f.callCount("exchange") != 0 {
			t.Error("a refused code went on to step 2")
		}
	})
	t.Run("5xx on step 1 is ambiguous", func(t *testing.T) {
		f := newFake(t)
		f.before = func(route string, w http.ResponseWriter, _ *http.Request) bool {
			if route == "oauth" {
				w.WriteHeader(http.StatusInternalServerError)
				return true
			}
			return false
		}
		srv := newServer(t, f)
		_, err := ExchangeCode(context.Background(), nil, cfg(srv.URL), testCode)
		if diff := cmp.Diff(outcome{Class: "ambiguous", Status: 500}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})
	t.Run("step 2 refused says to connect again", func(t *testing.T) {
		f := newFake(t)
		f.before = func(route string, w http.ResponseWriter, _ *http.Request) bool {
			if route == "exchange" {
				graphErr(w, http.StatusBadRequest, 190, 0, "OAuthException", "Invalid OAuth access token THshort-1 for app secret "+testClientSecret)
				return true
			}
			return false
		}
		srv := newServer(t, f)
		_, err := ExchangeCode(context.Background(), nil, cfg(srv.URL), testCode)
		if diff := cmp.Diff(outcome{Class: "unauthorized"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if !strings.Contains(err.Error(), "connect the account again") {
			t.Errorf("error %q does not say to connect again", err)
		}
		for _, secret := range []string{"THshort-1", testClientSecret, testCode} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q carries a secret", err)
			}
		}
	})
	t.Run("missing settings send nothing", func(t *testing.T) {
		for _, c := range []OAuthConfig{{ClientSecret: "s", RedirectURI: "r"}, {ClientID: "i", RedirectURI: "r"}, {ClientID: "i", ClientSecret: "s"}} {
			_, err := ExchangeCode(context.Background(), nil, c, testCode)
			if diff := cmp.Diff(outcome{Class: "rejected", Reason: ReasonInvalidParameter}, outcomeOf(t, err)); diff != "" {
				t.Errorf("%v: outcome (-want +got):\n%s", c, diff)
			}
		}
	})
}
