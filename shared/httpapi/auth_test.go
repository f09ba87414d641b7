package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"oncepost/shared/apitoken"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// A token without the scope an operation needs gets 403 naming the
// scope, and nothing changes.
func TestMissingScopeIsForbiddenAndChangesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	writer, reader := h.token("posts"), h.token("read")
	if a := h.do(request{method: "POST", path: "/v1/posts", body: draftJSON("kept", "x", time.Hour), token: writer, header: map[string]string{"Idempotency-Key": "k1"}}); a.status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	before := h.posts()
	tests := []struct {
		token        string
		method, path string
		body         string
		scope        Scope
	}{
		{reader, "POST", "/v1/posts", string(draftJSON("new", "x", time.Hour)), apitoken.ScopePosts},
		{reader, "POST", "/v1/posts/kept/cancel", `{}`, apitoken.ScopePosts},
		{reader, "POST", "/v1/media", "\x89PNG", apitoken.ScopePosts},
		{writer, "GET", "/v1/posts/kept", "", apitoken.ScopeRead},
		{writer, "GET", "/v1/posts", "", apitoken.ScopeRead},
		{writer, "POST", "/v1/posts/kept/delete", `{"approve": true}`, apitoken.ScopeDecide},
		{reader, "POST", "/v1/held/abc/reject", `{}`, apitoken.ScopeDecide},
		{reader, "POST", "/v1/dead-letters/abc/redrive", "", apitoken.ScopeOperate},
		{reader, "DELETE", "/v1/dead-letters/abc", "", apitoken.ScopeOperate},
	}
	for _, tt := range tests {
		rq := request{method: tt.method, path: tt.path, token: tt.token, header: map[string]string{"Idempotency-Key": "k2"}}
		if tt.body != "" {
			rq.body = []byte(tt.body)
		}
		if tt.path == "/v1/media" {
			rq.header["Content-Type"] = "image/png"
		}
		a := h.do(rq)
		if p := a.problem(t); a.status != http.StatusForbidden || p.Scope != string(tt.scope) || !strings.Contains(p.Detail, string(tt.scope)) {
			t.Errorf("%s %s: %d %+v, want 403 naming %s", tt.method, tt.path, a.status, p, tt.scope)
		}
	}
	p, err := h.store.GetPost(context.Background(), "kept")
	if after := h.posts(); after != before || err != nil || p.Targets[0].Status != "scheduled" || h.media.Len() != 0 {
		t.Errorf("after 403s: %d posts (was %d), kept is %v (%v), %d media", after, before, p.Targets, err, h.media.Len())
	}
}

// Missing, malformed, unknown and revoked tokens are 401 with a Bearer
// challenge; a revoke takes effect at the next request.
func TestUnauthenticated(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	tok := h.token("read")
	for _, tt := range []struct {
		name, header string
	}{
		{"missing", ""},
		{"not bearer", "Basic dXNlcjpwYXNz"},
		{"not a token", "Bearer hello"},
		{"unknown", "Bearer " + apitoken.New()},
	} {
		rq := request{method: "GET", path: "/v1/status", header: map[string]string{}}
		if tt.header != "" {
			rq.header["Authorization"] = tt.header
		}
		a := h.do(rq)
		a.problem(t)
		if a.status != http.StatusUnauthorized || !strings.HasPrefix(a.header.Get("WWW-Authenticate"), `Bearer realm="oncepost"`) {
			t.Errorf("%s: %d WWW-Authenticate %q, want 401 with a Bearer challenge", tt.name, a.status, a.header.Get("WWW-Authenticate"))
		}
	}
	if a := h.do(request{method: "GET", path: "/v1/status", token: tok}); a.status != http.StatusOK {
		t.Fatalf("with the token: %d %s", a.status, a.body)
	}
	if _, err := h.store.RevokeToken(context.Background(), "t-read", time.Now()); err != nil {
		t.Fatal(err)
	}
	a := h.do(request{method: "GET", path: "/v1/status", token: tok})
	if p := a.problem(t); a.status != http.StatusUnauthorized || !strings.Contains(p.Detail, "revoked") {
		t.Errorf("revoked token: %d %+v, want 401 saying revoked", a.status, p)
	}
}

// The access log has method, route, status and the caller's id for every
// request, and never a token, a header or a body.
func TestAccessLogNeverHoldsTokens(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	tok := h.token("posts,read")
	revoked := h.token("read")
	if _, err := h.store.RevokeToken(context.Background(), "t-read", time.Now()); err != nil {
		t.Fatal(err)
	}
	secretBody := "a body that is no business of a log"
	h.do(request{method: "POST", path: "/v1/posts", body: draftJSON("p", secretBody, time.Hour), token: tok, header: map[string]string{"Idempotency-Key": "log-1"}})
	h.do(request{method: "GET", path: "/v1/posts/p", token: tok})
	h.do(request{method: "GET", path: "/v1/posts", token: revoked})
	h.do(request{method: "GET", path: "/v1/posts", header: map[string]string{"Authorization": "Bearer " + tok + "x"}})
	h.do(request{method: "GET", path: "/v1/nothing", token: tok})
	logs := h.logs.String()
	for _, secret := range []string{tok, revoked, tok[3:20], secretBody} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds %q:\n%s", secret, logs)
		}
	}
	for _, want := range []string{`"route":"POST /v1/posts","status":201`, `"route":"GET /v1/posts/{id}","status":200`, `"status":401`, `"route":"(no route)","status":404`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %s:\n%s", want, logs)
		}
	}
	tokens, _ := h.store.ListTokens(context.Background())
	for _, tk := range tokens {
		if tk.Name == "t-posts-read" && !strings.Contains(logs, `"principal":"`+tk.ID+`"`) {
			t.Errorf("the log does not name the caller %s:\n%s", tk.ID, logs)
		}
	}
}

// A token's rate: a burst of twice its rate passes, the next request is
// 429 with Retry-After.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	tok := apitoken.New()
	if err := h.store.AddToken(context.Background(), apitoken.Token{ID: apitoken.NewID(), Name: "slow", Hash: apitoken.Hash(tok),
		Scopes: []apitoken.Scope{apitoken.ScopeRead}, Rate: 0.01, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if a := h.do(request{method: "GET", path: "/v1/platforms", token: tok}); a.status != http.StatusOK {
		t.Fatalf("first request: %d", a.status)
	}
	a := h.do(request{method: "GET", path: "/v1/platforms", token: tok})
	a.problem(t)
	if a.status != http.StatusTooManyRequests || a.header.Get("Retry-After") == "" || a.header.Get("Retry-After") == "0" {
		t.Errorf("second request: %d Retry-After %q, want 429 with Retry-After", a.status, a.header.Get("Retry-After"))
	}
	// Another token is not slowed by this one.
	if a := h.do(request{method: "GET", path: "/v1/platforms", token: h.token("read")}); a.status != http.StatusOK {
		t.Errorf("another token: %d", a.status)
	}
}

// With ContextPrincipal the caller is whoever the adapter in front put in
// the context (WithPrincipal); none is 401; the scopes still apply.
func TestContextPrincipal(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Desk: &publishing.Desk{}, Decider: nopDecider{}, Held: nopStore{}, Accounts: nopStore{}, Targets: nopStore{}, DeadLetters: nopStore{},
		Media: &memMedia{}, Auth: ContextPrincipal()})
	if err != nil {
		t.Fatal(err)
	}
	front := func(p *Principal) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if p != nil {
				r = r.WithContext(WithPrincipal(r.Context(), *p))
			}
			s.ServeHTTP(w, r)
		})
	}
	reader := &Principal{ID: "arn:aws:iam::123456789012:role/cms", Name: "cms", Scopes: []Scope{apitoken.ScopeRead}}
	for _, tt := range []struct {
		p            *Principal
		method, path string
		status       int
	}{
		{reader, "GET", "/v1/status", http.StatusOK},
		{nil, "GET", "/v1/status", http.StatusUnauthorized},
		{reader, "POST", "/v1/dead-letters/x/redrive", http.StatusForbidden},
	} {
		rec := httptest.NewRecorder()
		front(tt.p).ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
		if rec.Code != tt.status {
			t.Errorf("%s %s as %v: %d %s, want %d", tt.method, tt.path, tt.p, rec.Code, rec.Body, tt.status)
		}
	}
}

// TestContextPrincipalOr: a principal put in the context by this process
// (the console's session) is taken as it is; without one, the bearer
// token decides, and no header can stand in for the context.
func TestContextPrincipalOr(t *testing.T) {
	t.Parallel()
	store, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "oncepost.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tok := apitoken.New()
	if err := store.AddToken(context.Background(), apitoken.Token{ID: apitoken.NewID(), Name: "reader", Hash: apitoken.Hash(tok),
		Scopes: []Scope{apitoken.ScopeRead}, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Desk: &publishing.Desk{}, Decider: nopDecider{}, Held: nopStore{}, Accounts: nopStore{}, Targets: nopStore{}, DeadLetters: nopStore{},
		Media: &memMedia{}, Auth: ContextPrincipalOr(BearerTokens(store))})
	if err != nil {
		t.Fatal(err)
	}
	session := &Principal{ID: "session-1", Name: "console", Scopes: []Scope{apitoken.ScopeRead}}
	for _, tt := range []struct {
		name   string
		p      *Principal
		bearer string
		status int
	}{
		{"session", session, "", http.StatusOK},
		{"token", nil, tok, http.StatusOK},
		{"neither", nil, "", http.StatusUnauthorized},
		{"unknown token", nil, "op_" + strings.Repeat("a", 52), http.StatusUnauthorized},
	} {
		req := httptest.NewRequest("GET", "/v1/status", nil)
		if tt.p != nil {
			req = req.WithContext(WithPrincipal(req.Context(), *tt.p))
		}
		if tt.bearer != "" {
			req.Header.Set("Authorization", "Bearer "+tt.bearer)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != tt.status {
			t.Errorf("%s: %d %s, want %d", tt.name, rec.Code, rec.Body, tt.status)
		}
	}
}
