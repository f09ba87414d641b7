package mastodon

import (
	"encoding/base64"
	"net/http"
	"sync"
	"testing"

	"oncepost/shared/platform"
	"oncepost/shared/platform/platformtest"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
)

// The sandbox's OAuth client in these tests: distinctive, so a leak of
// the secret cannot go unnoticed.
const (
	harnessClientID     = "oncepost-harness-client"
	harnessClientSecret = "mastodon-client-5ecret-Q7"
)

// sandboxFront stands in front of a sandbox: it counts the token requests
// (the sandbox has no such counter) and answers the next status create
// with Mastodon's 422 when asked to.
type sandboxFront struct {
	sb *sandbox.Server

	mu        sync.Mutex
	refreshes int
	failNext  bool
}

func (f *sandboxFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	fail := false
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/oauth/token":
		f.refreshes++
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/statuses" && f.failNext:
		f.failNext, fail = false, true
	}
	f.mu.Unlock()
	if fail {
		// Mastodon refuses a status it cannot store with 422 and
		// {"error": "Validation failed: …"}
		// (https://docs.joinmastodon.org/methods/statuses/#create).
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"error": "Validation failed: Text character limit of 500 exceeded"})
		return
	}
	f.sb.Handler().ServeHTTP(w, r)
}

// sandboxFake is a fresh sandbox account, its access token expired,
// reached through sandboxFront by the real Connector.
func sandboxFake(t *testing.T) platformtest.Fake {
	t.Helper()
	sb := startSandbox(t, sandbox.Options{ClientID: harnessClientID, ClientSecret: harnessClientSecret})
	acct := sb.AddAccount("news")
	sb.ExpireAccessToken(acct.ID)
	front := &sandboxFront{sb: sb}
	srv := newServer(t, front)
	current := func() sandbox.Account {
		for _, a := range sb.Accounts() {
			if a.ID == acct.ID {
				return a
			}
		}
		t.Fatalf("sandbox account %s is gone", acct.ID)
		return sandbox.Account{}
	}
	return platformtest.Fake{
		Platforms:  Connector{ClientID: harnessClientID, ClientSecret: harnessClientSecret},
		Account:    post.Account{Platform: "mastodon", BaseURL: srv.URL, RemoteID: acct.ID},
		Credential: platform.Credential{AccessToken: acct.AccessToken, RefreshToken: acct.RefreshToken},
		RefreshCalls: func() int {
			front.mu.Lock()
			defer front.mu.Unlock()
			return front.refreshes
		},
		Posts: func() int { return len(sb.Statuses(acct.ID)) },
		Secrets: []string{harnessClientSecret,
			base64.StdEncoding.EncodeToString([]byte(harnessClientID + ":" + harnessClientSecret))},
		Issued: func() (string, string) {
			a := current()
			return a.AccessToken, a.RefreshToken
		},
		FailNextPublish: func() {
			front.mu.Lock()
			front.failNext = true
			front.mu.Unlock()
		},
		RefuseRefresh: func() {
			sb.ExpireAccessToken(acct.ID)
			sb.RevokeRefreshToken(acct.ID)
		},
	}
}

// Eight workers meet the sandbox's 401 at once: one refresh grant reaches
// it, every post goes out once, and the rotated pair is stored.
func TestRefreshConcurrencyThroughPublisher(t *testing.T) {
	platformtest.RefreshConcurrency(t, sandboxFake(t), 8)
}

// A publish that refreshes, one the instance refuses and one whose refresh
// is refused leave no token and no client secret in any log line, error,
// outcome or stored reason.
func TestNoSecretsInPublishOutput(t *testing.T) {
	platformtest.NoSecretsInOutput(t, sandboxFake(t))
}
