package x

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"oncepost/shared/platform"
	"oncepost/shared/platform/platformtest"
	"oncepost/shared/post"
)

// xTokens puts X's token endpoint in front of fakeX, which has none:
// POST /2/oauth2/token with grant_type=refresh_token rotates both tokens
// (X's refresh tokens are single-use: the one sent is spent), and the new
// access token becomes the one fakeX accepts. It can also refuse the next
// create.
type xTokens struct {
	fake *fakeX

	mu        sync.Mutex
	refresh   string // the refresh token it accepts
	refreshes int    // token requests received
	access    string // the access token it issued last
	issued    int
	failNext  bool // answer the next create with an error
	refuse    bool // refuse every refresh
}

func (s *xTokens) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/2/oauth2/token":
		s.token(w, r)
		return
	case r.Method == http.MethodPost && r.URL.Path == "/2/tweets":
		s.mu.Lock()
		fail := s.failNext
		s.failNext = false
		s.mu.Unlock()
		if fail {
			// https://docs.x.com/x-api/fundamentals/response-codes-and-errors: 403.
			writeJSON(w, http.StatusForbidden, problemJSON(403, "Forbidden", "You are not permitted to perform this action."))
			return
		}
	}
	s.fake.ServeHTTP(w, r)
}

// token answers as X documents (tokenEndpoint in oauth_test.go): the
// rotated pair, or invalid_request for a token it does not know.
func (s *xTokens) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.fake.t.Errorf("token request: %v", err)
	}
	s.mu.Lock()
	s.refreshes++
	ok := !s.refuse && r.PostForm.Get("grant_type") == "refresh_token" && r.PostForm.Get("refresh_token") == s.refresh
	var ans map[string]any
	if ok {
		s.issued++
		s.access = fmt.Sprintf("x-access-rotated-%d-e1f2", s.issued)
		s.refresh = fmt.Sprintf("x-refresh-rotated-%d-a9b8", s.issued)
		s.fake.mu.Lock()
		s.fake.token = s.access
		s.fake.mu.Unlock()
		ans = map[string]any{"token_type": "bearer", "expires_in": 7200, "access_token": s.access,
			"scope": "tweet.read tweet.write users.read offline.access media.write", "refresh_token": s.refresh}
	}
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request", "error_description": "Value passed for the token was invalid."})
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

// harnessFake is a fakeX whose account's access token has expired, with
// the token endpoint, reached by the real Connector.
func harnessFake(t *testing.T) platformtest.Fake {
	t.Helper()
	f := newFakeX(t)
	f.token = "x-access-not-issued-yet" // testAccess has expired
	s := &xTokens{fake: f, refresh: testRefresh}
	srv := newServer(t, s)
	basic := func(id, secret string) string { return base64.StdEncoding.EncodeToString([]byte(id + ":" + secret)) }
	return platformtest.Fake{
		Platforms:  Connector{ClientID: "client-id", ClientSecret: testClientSecret},
		Account:    post.Account{Platform: "x", BaseURL: srv.URL, RemoteID: testUserID},
		Credential: platform.Credential{AccessToken: testAccess, RefreshToken: testRefresh},
		RefreshCalls: func() int {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.refreshes
		},
		Posts: f.postCount,
		Secrets: []string{testClientSecret, basic("client-id", testClientSecret),
			basic(url.QueryEscape("client-id"), url.QueryEscape(testClientSecret))},
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
			f.mu.Lock()
			f.token = "x-access-not-issued-either"
			f.mu.Unlock()
		},
	}
}

// Eight workers meet X's 401 at once: one refresh grant reaches X (its
// refresh tokens are single-use), every post goes out once, and the
// rotated pair is stored.
func TestRefreshConcurrencyThroughPublisher(t *testing.T) {
	platformtest.RefreshConcurrency(t, harnessFake(t), 8)
}

// A publish that refreshes, one X refuses and one whose refresh X refuses
// leave no token and no client secret in any log line, error, outcome or
// stored reason.
func TestNoSecretsInPublishOutput(t *testing.T) {
	platformtest.NoSecretsInOutput(t, harnessFake(t))
}
