package x

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// meHTTPClient is an HTTP client with its own transport, so that tests
// share no keep-alive connections.
func meHTTPClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TestMe: GET /2/users/me with the bearer token answers {"data": {"id",
// "name", "username"}} (https://docs.x.com/x-api/users/get-my-user, as
// fakeX serves it); Me returns the three, with a trailing slash on the
// base URL or not, and makes that one request.
func TestMe(t *testing.T) {
	for _, suffix := range []string{"", "/"} {
		f := newFakeX(t)
		srv := newServer(t, f)
		got, err := Me(context.Background(), meHTTPClient(t), srv.URL+suffix, testAccess)
		if diff := cmp.Diff(outcome{Class: "ok"}, outcomeOf(t, err)); diff != "" {
			t.Fatalf("Me(%q): outcome (-want +got):\n%s", srv.URL+suffix, diff)
		}
		if diff := cmp.Diff(User{ID: testUserID, Username: "oncepost", Name: "Once Post"}, got); diff != "" {
			t.Errorf("user (-want +got):\n%s", diff)
		}
		f.mu.Lock()
		reqs := slices.Clone(f.requests)
		f.mu.Unlock()
		if diff := cmp.Diff([]string{"GET /2/users/me"}, reqs); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
	}
}

// TestMeFailures: a refused token is 401 (the problem body of
// https://docs.x.com/x-api/fundamentals/response-codes-and-errors) and
// Unauthorized, sent once; a 404 (a base URL that is not the API) is
// Rejected, sent once; a 503 is a read failure, retried, then
// NotPerformed; a 200 without a user id is NotPerformed, never a user
// with an empty id.
func TestMeFailures(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     any // a string is written as it is
		want     outcome
		attempts int32
	}{
		{"revoked token", 401, problemJSON(401, "Unauthorized", "Unauthorized"), outcome{Class: "unauthorized"}, 1},
		{"not found", 404, problemJSON(404, "Not Found Error", "Sorry, that page does not exist"),
			outcome{Class: "rejected", Status: 404, Reason: "http_404", Message: "read own user: Sorry, that page does not exist"}, 1},
		{"server error, retried", 503, problemJSON(503, "Service Unavailable", "Service Unavailable"), outcome{Class: "not_performed", Status: 503}, 4},
		{"no user id", 200, map[string]any{"data": map[string]any{"username": "oncepost"}}, outcome{Class: "not_performed", Status: 200}, 1},
		{"not json", 200, "<html>captive portal</html>", outcome{Class: "not_performed", Status: 200}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				if r.Method != http.MethodGet || r.URL.Path != "/2/users/me" {
					t.Errorf("request %s %s, want GET /2/users/me", r.Method, r.URL.Path)
				}
				if s, ok := tt.body.(string); ok {
					w.WriteHeader(tt.status)
					io.WriteString(w, s)
					return
				}
				writeJSON(w, tt.status, tt.body)
			}))
			got, err := Me(context.Background(), meHTTPClient(t), srv.URL, testAccess)
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if got != (User{}) {
				t.Errorf("user %+v returned with the error", got)
			}
			if n.Load() != tt.attempts {
				t.Errorf("server received %d requests, want %d", n.Load(), tt.attempts)
			}
		})
	}
}

// TestMeKeepsTheTokenOutOfErrors: a server (or a proxy) that echoes the
// Authorization header into its error body, on a refusal, a 403 and a
// long rate-limit wait (returned at once, not waited for), a refused
// connection, and the arguments refused before any call: no error
// carries the token (TestMain searches every error again).
func TestMeKeepsTheTokenOutOfErrors(t *testing.T) {
	echo := func(status int) string {
		return newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("x-rate-limit-reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
			writeJSON(w, status, problemJSON(status, "Error", "you sent "+r.Header.Get("Authorization")))
		})).URL
	}
	ctx := context.Background()
	cases := []struct {
		name, base, token string
		class             string
	}{
		{"echoed 401", echo(401), testAccess, "unauthorized"},
		{"echoed 403", echo(403), testAccess, "rejected"},
		{"echoed 429", echo(429), testAccess, "not_performed"},
		{"refused connection", refusedURL(t), testAccess, "not_performed"},
	}
	for _, tc := range cases {
		_, err := Me(ctx, meHTTPClient(t), tc.base, tc.token)
		if got := outcomeOf(t, err); got.Class != tc.class {
			t.Errorf("%s: outcome %+v, want %s", tc.name, got, tc.class)
		}
		if err != nil && strings.Contains(err.Error(), testAccess) {
			t.Errorf("%s: error %q carries the token", tc.name, err)
		}
		if tc.name == "echoed 401" && (err == nil || !strings.Contains(err.Error(), "Bearer [redacted]")) {
			t.Errorf("%s: error %v does not keep the cleaned description", tc.name, err)
		}
	}
	var n atomic.Int32
	counted := newServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) })).URL
	for _, tc := range []struct{ name, base, token string }{
		{"no token", counted, ""},
		{"base URL with a query", counted + "?access_token=" + testAccess, testAccess},
		{"base URL not http", "ftp://api.x.com", testAccess},
	} {
		// Not a platform failure (outcomeOf wants one): searched here.
		_, err := Me(ctx, meHTTPClient(t), tc.base, tc.token)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
		} else if strings.Contains(err.Error(), testAccess) {
			t.Errorf("%s: error %q carries the token", tc.name, err)
		}
	}
	if n.Load() != 0 {
		t.Errorf("%d requests were sent with arguments Me refuses", n.Load())
	}
}
