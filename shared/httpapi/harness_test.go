package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"oncepost/shared/httpapi/apitest"

	"oncepost/shared/apitoken"
	"oncepost/shared/platform"
	"oncepost/shared/platform/catalog"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// loadDocument parses and validates the embedded document as OpenAPI 3.1.
func loadDocument(t testing.TB) *openapi3.T {
	t.Helper()
	doc, err := apitest.Load(Document)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// syncBuffer is a log sink safe for concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness is the API on a real SQLite store, served on 127.0.0.1, with
// every request and every answer checked against openapi.json.
type harness struct {
	t       *testing.T
	store   *sqlitestore.Store
	desk    *publishing.Desk
	media   *memMedia
	srv     *httptest.Server
	checker *apitest.Checker
	logs    *syncBuffer
	// tokens by scope list ("posts,read"), made by token.
	tokens map[string]string
}

// harnessOptions tune newHarness.
type harnessOptions struct {
	maxJSON, maxMedia int64
	pause             func(ctx context.Context, point string)
	// noWebhooks leaves Config.Webhooks unset (a runtime without them).
	noWebhooks bool
	// webhooks, when set, wraps the store's webhooks (a runtime's own).
	webhooks func(Webhooks) Webhooks
	// accountsReadOnly is Config.AccountsReadOnly (the AWS api function).
	accountsReadOnly bool
}

func newHarness(t *testing.T, opts harnessOptions) *harness {
	t.Helper()
	ctx := context.Background()
	store, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "oncepost.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	for _, a := range []post.Account{
		{ID: "news", Platform: "mastodon", Handle: "@news@example.social", BaseURL: "https://example.social", Gate: post.GateAuto, Limits: post.Limits{MaxTextGraphemes: 500, MaxMedia: 4}},
		{ID: "gone", Platform: "mastodon", Handle: "@gone@example.social", BaseURL: "https://example.social", Gate: post.GateManual,
			Status: post.AccountReconnectNeeded, StatusReason: "refresh refused"},
	} {
		if err := store.PutAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	h := &harness{t: t, store: store, media: &memMedia{}, logs: &syncBuffer{}, tokens: map[string]string{}}
	queue := store.Queue("publish", 5)
	quiet := slog.New(slog.DiscardHandler)
	confirmer := &publishing.Confirmer{Ledger: store, Posts: store, Accounts: store, Queue: queue, Logger: quiet}
	operator := &publishing.Operator{Ledger: store, Confirmer: confirmer, Logger: quiet}
	h.desk = &publishing.Desk{Posts: store, Ledger: store, Accounts: store, Blocklist: store, Scheduler: storeScheduler{Store: store}, Keys: store, Lister: store, Queue: store,
		Operator: operator, Deleter: &publishing.Deleter{Ledger: store, Posts: store, Accounts: store, Logger: quiet}, MediaSize: h.media.MediaSize, Logger: quiet,
		Limits: func(name string) (post.Limits, bool) {
			k, ok := catalog.Lookup(name)
			return k.Limits(), ok
		},
		Capabilities: func(name string) (platform.Capabilities, bool) {
			k, ok := catalog.Lookup(name)
			return k.Capabilities, ok
		}}
	var webhooks Webhooks = store
	if opts.webhooks != nil {
		webhooks = opts.webhooks(webhooks)
	}
	if opts.noWebhooks {
		webhooks = nil
	}
	api, err := New(Config{
		Desk: h.desk, Decider: operator, Held: store, Accounts: store, Targets: store,
		DeadLetters: queue, Media: h.media, Budgets: store, Webhooks: webhooks, Auth: BearerTokens(store), Logger: slog.New(slog.NewJSONHandler(h.logs, nil)),
		Recurring:    &publishing.Recurring{Rules: store, Desk: h.desk},
		MaxJSONBytes: opts.maxJSON, MaxMediaBytes: opts.maxMedia, Pause: opts.pause, AccountsReadOnly: opts.accountsReadOnly,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(api)
	t.Cleanup(h.srv.Close)
	if h.checker, err = apitest.NewChecker(Document, h.srv.URL); err != nil {
		t.Fatal(err)
	}
	return h
}

// posts counts the store's posts.
func (h *harness) posts() int {
	h.t.Helper()
	pg, err := h.store.ListPostPage(context.Background(), publishing.PostFilter{Limit: 10000})
	if err != nil {
		h.t.Fatal(err)
	}
	return len(pg.Posts)
}

// token returns a working token with the scopes ("posts,read"), making
// it the first time.
func (h *harness) token(scopes string) string {
	h.t.Helper()
	if tok, ok := h.tokens[scopes]; ok {
		return tok
	}
	sc, err := apitoken.ParseScopes(scopes)
	if err != nil {
		h.t.Fatal(err)
	}
	tok := apitoken.New()
	if err := h.store.AddToken(context.Background(), apitoken.Token{ID: apitoken.NewID(), Name: "t-" + strings.ReplaceAll(scopes, ",", "-"),
		Hash: apitoken.Hash(tok), Scopes: sc, Rate: 10000, CreatedAt: time.Now()}); err != nil {
		h.t.Fatal(err)
	}
	h.tokens[scopes] = tok
	return tok
}

// request is one call: method, path, body, headers.
type request struct {
	method, path string
	body         []byte
	header       map[string]string
	// token is sent as a bearer token when not empty.
	token string
}

// answer is a response, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// problem decodes a problem+json answer.
func (a answer) problem(t testing.TB) Problem {
	t.Helper()
	if ct := a.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("status %d with Content-Type %q, want application/problem+json: %s", a.status, ct, a.body)
	}
	var p Problem
	if err := json.Unmarshal(a.body, &p); err != nil {
		t.Fatalf("problem: %v: %s", err, a.body)
	}
	if p.Status != a.status {
		t.Errorf("problem status %d, HTTP status %d", p.Status, a.status)
	}
	return p
}

// do sends a request and checks both it and its answer against the
// document: the answer must be one the document declares for the
// operation (status, headers, body); a request the document refuses must
// be refused (4xx).
func (h *harness) do(rq request) answer {
	h.t.Helper()
	req, err := http.NewRequest(rq.method, h.srv.URL+rq.path, bytes.NewReader(rq.body))
	if err != nil {
		h.t.Fatal(err)
	}
	if rq.body != nil && rq.header["Content-Type"] == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range rq.header {
		req.Header.Set(k, v)
	}
	if rq.token != "" {
		req.Header.Set("Authorization", "Bearer "+rq.token)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", rq.method, rq.path, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		h.t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: body}
	h.check(rq, req, a)
	return a
}

// check validates the exchange against the document.
func (h *harness) check(rq request, req *http.Request, a answer) {
	h.t.Helper()
	if err := h.checker.Check(apitest.Exchange{Method: rq.method, URL: req.URL.String(), RequestHeader: req.Header, RequestBody: rq.body,
		Status: a.status, Header: a.header, Body: a.body}); err != nil {
		h.t.Error(err)
	}
}

// memMedia and storeScheduler are the API's test stores (apitest's).
type (
	memMedia       = apitest.MemMedia
	storeScheduler = apitest.StoreScheduler
)
