package threads

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"oncepost/shared/platform"
	"oncepost/shared/platform/platformtest"
	"oncepost/shared/post"
)

// expiringThreads makes fakeThreads (through its before hook) refuse
// tokens that have expired: every object call with one is answered with
// the Graph API's code 190 "Session has expired" while its refresh still
// works (rotate). It can also refuse the next container create and every
// refresh.
type expiringThreads struct {
	fake *fakeThreads

	mu       sync.Mutex
	expired  map[string]bool
	failNext bool
	refuse   bool
}

func (e *expiringThreads) before(route string, w http.ResponseWriter, r *http.Request) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch route {
	case "refresh":
		if e.refuse {
			graphErr(w, http.StatusBadRequest, 190, 0, "OAuthException", "Error validating access token: the session is invalid")
			return true
		}
		e.rotate(w, r)
		return true
	case "create":
		if e.failNext && !e.expired[bearer(r)] {
			e.failNext = false
			// https://developers.facebook.com/docs/threads/troubleshooting: code 100.
			graphErr(w, http.StatusBadRequest, 100, 0, "OAuthException", "Invalid parameter")
			return true
		}
	}
	if e.expired[bearer(r)] {
		// https://developers.facebook.com/docs/graph-api/guides/error-handling: 190, subcode 463 (expired).
		graphErr(w, http.StatusBadRequest, 190, 463, "OAuthException", "Error validating access token: Session has expired on Sunday, 01-Mar-26 03:00:00 PST.")
		return true
	}
	return false
}

// rotate is the fake's refresh route (serveToken), except that the new
// token is answered with 58 days to live instead of 60: the adapter then
// takes it for one refreshed two days ago, which Threads lets refresh
// again (it refuses tokens younger than 24 hours), so that the test can
// refresh twice within a second.
func (e *expiringThreads) rotate(w http.ResponseWriter, r *http.Request) {
	f := e.fake
	q := r.URL.Query()
	f.mu.Lock()
	ok := q.Get("grant_type") == "th_refresh_token" && q.Get("access_token") == f.token
	next := ""
	if ok {
		f.seq++
		next = fmt.Sprintf("THAAtoken-%d", f.seq+1)
		f.token = next
	}
	f.mu.Unlock()
	if !ok {
		graphErr(w, http.StatusBadRequest, 190, 0, "OAuthException", "Error validating access token: the session is invalid")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"access_token": next, "token_type": "bearer", "expires_in": 58 * 24 * 3600})
}

func bearer(r *http.Request) string {
	const prefix = "Bearer "
	if a := r.Header.Get("Authorization"); len(a) > len(prefix) {
		return a[len(prefix):]
	}
	return ""
}

// harnessFake is a fakeThreads account whose long-lived token has expired
// for the API but can still be refreshed, reached by the real Connector.
// Threads has no refresh token: the refresh exchanges the access token.
func harnessFake(t *testing.T) platformtest.Fake {
	t.Helper()
	f := newFake(t)
	e := &expiringThreads{fake: f, expired: map[string]bool{fakeToken: true}}
	f.before = e.before
	srv := newServer(t, f)
	token := func() string {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.token
	}
	return platformtest.Fake{
		Platforms: Connector{},
		Account:   post.Account{Platform: "threads", BaseURL: srv.URL, RemoteID: fakeUserID},
		// The app that issued the token goes with it; its secret must not
		// show either.
		Credential:   platform.Credential{AccessToken: fakeToken, ClientID: testClientID, ClientSecret: testClientSecret},
		RefreshCalls: func() int { return f.callCount("refresh") },
		Posts:        f.postCount,
		Secrets:      []string{testClientSecret},
		Issued: func() (string, string) {
			if tok := token(); tok != fakeToken {
				return tok, ""
			}
			return "", ""
		},
		FailNextPublish: func() {
			e.mu.Lock()
			e.failNext = true
			e.mu.Unlock()
		},
		RefuseRefresh: func() {
			e.mu.Lock()
			e.refuse = true
			e.expired[token()] = true
			e.mu.Unlock()
		},
	}
}

// Eight workers meet Threads' expired-session error at once: one refresh
// reaches Threads, every post goes out once, and the new long-lived token
// is stored.
func TestRefreshConcurrencyThroughPublisher(t *testing.T) {
	platformtest.RefreshConcurrency(t, harnessFake(t), 8)
}

// A publish that refreshes, one Threads refuses and one whose refresh
// Threads refuses leave no token and no client secret in any log line,
// error, outcome or stored reason.
func TestNoSecretsInPublishOutput(t *testing.T) {
	platformtest.NoSecretsInOutput(t, harnessFake(t))
}
