package linkedin

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"oncepost/shared/platform"
	"oncepost/shared/platform/platformtest"
	"oncepost/shared/post"
)

// innerToken is the one token fakeLinkedIn accepts behind liTokens.
const innerToken = "li-inner-token-of-the-fake"

// liTokens stands in front of fakeLinkedIn with what it lacks: the
// token endpoint and expiring tokens.
//
//   - POST /oauth/v2/accessToken with grant_type=refresh_token, the
//     current refresh token and the app's client_secret rotates both
//     tokens; anything else is invalid_grant
//     (https://learn.microsoft.com/en-us/linkedin/shared/authentication/programmatic-refresh-tokens).
//   - Every API call needs the access token issued last, else 401
//     "Invalid access token"; an accepted call reaches the fake with the
//     fake's own token (so the fake's token field is never written while
//     it serves).
//   - It can refuse the next create (403), and expire the access token
//     and refuse every refresh (refuse).
type liTokens struct {
	fake *fakeLinkedIn

	mu        sync.Mutex
	access    string
	refresh   string
	refreshes int
	issued    int
	failNext  bool // answer the next create with an error
	refuse    bool // the access token has expired and every refresh is refused
}

func (s *liTokens) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/oauth/v2/accessToken" {
		s.token(w, r)
		return
	}
	s.mu.Lock()
	valid := !s.refuse && r.Header.Get("Authorization") == "Bearer "+s.access
	fail := valid && s.failNext && r.Method == http.MethodPost && r.URL.Path == "/rest/posts"
	if fail {
		s.failNext = false
	}
	s.mu.Unlock()
	switch {
	case !valid:
		// https://learn.microsoft.com/en-us/linkedin/shared/api-guide/concepts/error-handling (401)
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Invalid access token", "serviceErrorCode": 65600, "status": 401})
		return
	case fail:
		drain(r)
		// 403 ACCESS_DENIED (same page).
		writeJSON(w, http.StatusForbidden, map[string]any{"message": "Not enough permissions to access: partnerApiPostsExternal.CREATE.20260501", "serviceErrorCode": 100, "status": 403})
		return
	}
	r.Header.Set("Authorization", "Bearer "+innerToken)
	s.fake.ServeHTTP(w, r)
}

func (s *liTokens) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.fake.t.Errorf("token request: %v", err)
	}
	s.mu.Lock()
	s.refreshes++
	form := r.PostForm
	ok := !s.refuse && form.Get("grant_type") == "refresh_token" && form.Get("refresh_token") == s.refresh &&
		form.Get("client_id") == "client-id" && form.Get("client_secret") == testClientSecret
	var ans map[string]any
	if ok {
		s.issued++
		s.access = fmt.Sprintf("li-access-rotated-%d-5ecret", s.issued)
		s.refresh = fmt.Sprintf("li-refresh-rotated-%d-5ecret", s.issued)
		ans = map[string]any{"access_token": s.access, "expires_in": 5184000, "refresh_token": s.refresh,
			"refresh_token_expires_in": 31536000, "scope": "w_organization_social,r_organization_social"}
	}
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant",
			"error_description": "The provided authorization grant or refresh token is invalid, expired or revoked"})
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

// harnessFake is a fakeLinkedIn organization account whose access token
// has expired, with the token endpoint, reached by the real Connector.
func harnessFake(t *testing.T) platformtest.Fake {
	t.Helper()
	f := &fakeLinkedIn{t: t, author: testOrg, token: innerToken, version: DefaultAPIVersion, clock: fixedNow}
	s := &liTokens{fake: f, access: "li-access-not-issued-yet", refresh: testRefresh}
	srv := newServer(t, s)
	return platformtest.Fake{
		Platforms:  Connector{ClientID: "client-id", ClientSecret: testClientSecret, TokenURL: srv.URL + "/oauth/v2/accessToken"},
		Account:    post.Account{Platform: "linkedin", BaseURL: srv.URL, RemoteID: testOrg},
		Credential: platform.Credential{AccessToken: testAccess, RefreshToken: testRefresh},
		RefreshCalls: func() int {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.refreshes
		},
		Posts:   func() int { return len(f.stored()) },
		Secrets: []string{testClientSecret, innerToken},
		Issued: func() (string, string) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.access, s.refresh
		},
		FailNextPublish: func() {
			s.mu.Lock()
			s.failNext = true
			s.mu.Unlock()
		},
		RefuseRefresh: func() {
			s.mu.Lock()
			s.refuse = true
			s.mu.Unlock()
		},
	}
}

// Eight workers meet LinkedIn's 401 at once: one refresh grant reaches
// LinkedIn, every post goes out once, and the rotated pair is stored.
func TestRefreshConcurrencyThroughPublisher(t *testing.T) {
	platformtest.RefreshConcurrency(t, harnessFake(t), 8)
}

// A publish that refreshes, one LinkedIn refuses and one whose refresh
// LinkedIn refuses leave no token and no client secret in any log line,
// error, outcome or stored reason.
func TestNoSecretsInPublishOutput(t *testing.T) {
	platformtest.NoSecretsInOutput(t, harnessFake(t))
}
