package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/webhook"
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

// The document's webhooks object is what a receiver gets: every kind of
// event, sent by the real Sender, passes as a request to its operation
// (the three Standard Webhooks headers and the body), and a body it does
// not describe is refused.
func TestWebhooksObjectDescribesDeliveries(t *testing.T) {
	t.Parallel()
	doc := loadDocument(t)
	item := doc.Webhooks["event"]
	if item == nil || item.Post == nil {
		t.Fatal("openapi.json has no webhooks.event.post")
	}
	route := &routers.Route{Spec: doc, Path: "/", PathItem: item, Method: "POST", Operation: item.Post}
	check := func(header http.Header, body []byte) error {
		req := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		req.Header = header.Clone()
		return openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{Request: req, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}})
	}
	type delivery struct {
		header http.Header
		body   []byte
	}
	got := make(chan delivery, 1)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- delivery{r.Header.Clone(), body}
	}))
	defer rcv.Close()
	secret, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	sub := publishing.Subscription{ID: "wh_contract0", URL: rcv.URL + "/hooks", Secret: secret, AllowPrivate: true}
	sender := webhook.NewSender(webhook.Options{})
	at := time.Date(2026, 12, 1, 9, 0, 2, 123456789, time.UTC)
	slot := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var events []publishing.Event
	for _, st := range []post.TargetStatus{post.Published, post.Failed, post.Held, post.Deleted} {
		e, ok := publishing.TargetEvent("p1", post.Target{Account: "news", Slot: slot, Status: post.Publishing},
			post.Target{Account: "news", Slot: slot, Status: st, RemoteID: "1135", Reason: "why", UpdatedAt: at})
		if !ok {
			t.Fatalf("no event for a move to %s", st)
		}
		events = append(events, e)
	}
	if e, ok := publishing.LedgerEvent(ledger.Entry{State: ledger.Pending}, ledger.Entry{Key: "k1", Action: ledger.Publish, State: ledger.Unknown,
		Subject: "p1", Account: "news", Attempt: 1, Reason: "timeout", UpdatedAt: at}); ok {
		events = append(events, e)
	}
	if e, ok := publishing.AccountEvent(post.Account{ID: "news"}, post.Account{ID: "news", Status: post.AccountReconnectNeeded, StatusReason: "401"}, at); ok {
		events = append(events, e)
	}
	if len(events) != len(publishing.EventTypes) {
		t.Fatalf("%d events made, want one of each of the %d types", len(events), len(publishing.EventTypes))
	}
	for _, e := range events {
		body, err := e.Body()
		if err != nil {
			t.Fatal(err)
		}
		if res := sender.Send(context.Background(), sub, publishing.Delivery{ID: publishing.DeliveryID(e.ID, sub.ID), Event: e, Subscription: sub.ID}, body); res.Err != nil {
			t.Fatalf("send %s: %v", e.Type, res.Err)
		}
		d := <-got
		if err := check(d.header, d.body); err != nil {
			t.Errorf("a %s delivery is not what openapi.json's webhooks describe: %v\n%s %s", e.Type, err, d.header, d.body)
		}
		if e.Type == publishing.EventPublished {
			unknown := bytes.Replace(d.body, []byte(`"data":{`), []byte(`"data":{"extra":1,`), 1)
			if err := check(d.header, unknown); err == nil {
				t.Errorf("a body with a member the document lacks passes: the check checks nothing")
			}
		}
	}
}
