package httpapi

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/publishing"
)

// The routes the server registers and the document's operations are the
// same, and each needs the scope the document names: a route added
// without its operation, an operation without its route, or a scope
// changed on one side fails here.
func TestRoutesAreTheDocumentsOperations(t *testing.T) {
	t.Parallel()
	doc := loadDocument(t)
	type op struct{ method, path, scope string }
	var documented []op
	for path, item := range doc.Paths.Map() {
		for method, o := range item.Operations() {
			scope := "(none)"
			if o.Security != nil && len(*o.Security) > 0 {
				var scopes []string
				for _, req := range *o.Security {
					scopes = append(scopes, req["bearerAuth"]...)
				}
				if len(scopes) != 1 {
					t.Errorf("%s %s: security %v, want one scope", method, path, *o.Security)
				}
				scope = strings.Join(scopes, ",")
			}
			documented = append(documented, op{method, path, scope})
		}
	}
	s, err := New(Config{Desk: &publishing.Desk{}, Decider: nopDecider{}, Held: nopStore{}, Accounts: nopStore{}, Targets: nopStore{}, DeadLetters: nopStore{}, Media: &memMedia{}, Auth: ContextPrincipal()})
	if err != nil {
		t.Fatal(err)
	}
	var served []op
	for _, rt := range s.routes {
		scope := string(rt.scope)
		if scope == "" {
			scope = "(none)"
		}
		served = append(served, op{rt.method, rt.path, scope})
		// The mux answers the route (not the 404/405 of noRoute).
		req, _ := http.NewRequest(rt.method, strings.NewReplacer("{id}", "x", "{key}", "k").Replace(rt.path), nil)
		if _, pattern := s.mux.Handler(req); pattern != rt.method+" "+rt.path {
			t.Errorf("%s %s: the mux routes it to %q", rt.method, rt.path, pattern)
		}
	}
	less := func(a, b op) int { return strings.Compare(a.path+a.method, b.path+b.method) }
	slices.SortFunc(documented, less)
	slices.SortFunc(served, less)
	if diff := cmp.Diff(documented, served, cmp.AllowUnexported(op{})); diff != "" {
		t.Errorf("openapi.json (-) and the routes (+) differ:\n%s", diff)
	}
	for _, o := range documented {
		if !strings.HasPrefix(o.path, "/v1/") {
			t.Errorf("%s %s: every path is under /v1", o.method, o.path)
		}
	}
}

// GET /v1/openapi.json serves the document, to anyone.
func TestServesTheDocument(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	a := h.do(request{method: "GET", path: "/v1/openapi.json"})
	if a.status != http.StatusOK || !bytes.Equal(a.body, Document) {
		t.Errorf("GET /v1/openapi.json: %d, %d bytes; want 200 and the document", a.status, len(a.body))
	}
}

// A path or method the API does not have is a problem, never a text
// page.
func TestUnknownRoutesAreProblems(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	tok := h.token("all")
	tests := []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/v1/nothing", http.StatusNotFound, ""},
		{"GET", "/posts", http.StatusNotFound, ""},
		{"DELETE", "/v1/posts", http.StatusMethodNotAllowed, "GET, POST"},
		{"PUT", "/v1/posts/x", http.StatusMethodNotAllowed, "GET"},
	}
	for _, tt := range tests {
		a := h.do(request{method: tt.method, path: tt.path, token: tok})
		if a.status != tt.status || a.header.Get("Allow") != tt.allow {
			t.Errorf("%s %s: %d Allow %q, want %d Allow %q", tt.method, tt.path, a.status, a.header.Get("Allow"), tt.status, tt.allow)
		}
		a.problem(t)
	}
}
