package bluesky

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"oncepost/shared/platform"
	"oncepost/shared/platform/platformtest"
	"oncepost/shared/post"
)

// pdsSession gives fakePDS (through its before hook) what a publish needs
// besides putRecord: sessions and the account's post list.
//
//   - Every call but refreshSession needs the current access JWT; any
//     other is answered 400 ExpiredToken "Token has expired", as the
//     reference PDS answers an expired one.
//   - com.atproto.server.refreshSession, authenticated by the refresh
//     JWT, rotates both (https://docs.bsky.app/docs/api/com-atproto-server-refresh-session);
//     a spent or refused refresh JWT gets 400 ExpiredToken "Token has been
//     revoked".
//   - com.atproto.repo.listRecords lists the stored posts, newest (largest
//     record key) first (https://docs.bsky.app/docs/api/com-atproto-repo-list-records).
type pdsSession struct {
	pds *fakePDS

	mu        sync.Mutex
	access    string // the access JWT accepted
	refresh   string // the refresh JWT accepted
	refreshes int    // refreshSession requests received
	issued    int
	failNext  bool // answer the next putRecord with an error
	refuse    bool // the access JWT has expired and every refresh is refused
}

func (s *pdsSession) before(w http.ResponseWriter, r *http.Request) bool {
	bearer := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Path == "/xrpc/com.atproto.server.refreshSession" {
		s.refreshes++
		if s.refuse || bearer != s.refresh {
			xrpcErr(w, http.StatusBadRequest, "ExpiredToken", "Token has been revoked")
			return true
		}
		s.issued++
		s.access = fmt.Sprintf("bsky-access-jwt-rotated-%d-c3d4", s.issued)
		s.refresh = fmt.Sprintf("bsky-refresh-jwt-rotated-%d-e5f6", s.issued)
		writeJSON(w, map[string]any{"accessJwt": s.access, "refreshJwt": s.refresh, "handle": "alice.test", "did": fakeDID, "active": true})
		return true
	}
	if s.refuse || bearer != s.access {
		xrpcErr(w, http.StatusBadRequest, "ExpiredToken", "Token has expired")
		return true
	}
	switch r.URL.Path {
	case "/xrpc/com.atproto.repo.listRecords":
		s.pds.mu.Lock()
		keys := make([]string, 0, len(s.pds.records))
		for k := range s.pds.records {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		slices.Reverse(keys)
		records := []map[string]any{}
		for _, k := range keys {
			records = append(records, map[string]any{"uri": "at://" + fakeDID + "/app.bsky.feed.post/" + k, "cid": "bafyrecord", "value": s.pds.records[k]})
		}
		s.pds.mu.Unlock()
		writeJSON(w, map[string]any{"records": records})
		return true
	case "/xrpc/com.atproto.repo.putRecord":
		if s.failNext {
			s.failNext = false
			xrpcErr(w, http.StatusBadRequest, "InvalidRequest", "Invalid app.bsky.feed.post record: Record/text must not be longer than 300 graphemes")
			return true
		}
	}
	return false
}

// harnessFake is a fakePDS account whose access JWT has expired, with
// sessions, reached by the real Connector.
func harnessFake(t *testing.T) platformtest.Fake {
	t.Helper()
	s := &pdsSession{access: "bsky-access-jwt-not-issued-yet", refresh: fakeRefresh}
	s.pds = &fakePDS{records: map[string]json.RawMessage{}, before: s.before}
	srv := httptest.NewServer(s.pds)
	t.Cleanup(srv.Close)
	return platformtest.Fake{
		Platforms:  Connector{},
		Account:    post.Account{Platform: "bluesky", BaseURL: srv.URL, RemoteID: fakeDID},
		Credential: platform.Credential{AccessToken: fakeAccess, RefreshToken: fakeRefresh},
		RefreshCalls: func() int {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.refreshes
		},
		Posts: func() int {
			records, _ := s.pds.count()
			return records
		},
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

// Eight workers meet the PDS's ExpiredToken at once: one refreshSession
// reaches it (it rotates the refresh JWT), every post goes out once, and
// the rotated pair is stored.
func TestRefreshConcurrencyThroughPublisher(t *testing.T) {
	platformtest.RefreshConcurrency(t, harnessFake(t), 8)
}

// A publish that refreshes, one the PDS refuses and one whose refresh the
// PDS refuses leave no token in any log line, error, outcome or stored
// reason.
func TestNoSecretsInPublishOutput(t *testing.T) {
	platformtest.NoSecretsInOutput(t, harnessFake(t))
}
