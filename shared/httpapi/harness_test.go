package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"oncepost/shared/apitoken"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

func init() {
	for _, t := range []string{"image/png", "image/jpeg", "image/gif", "image/webp"} {
		openapi3filter.RegisterBodyDecoder(t, openapi3filter.FileBodyDecoder)
	}
}

// loadDocument parses and validates the embedded document as OpenAPI 3.1
// (a new copy each call: a harness points its servers at itself).
func loadDocument(t testing.TB) *openapi3.T {
	t.Helper()
	docOnce.Do(func() { docErr = validateDocument() })
	if docErr != nil {
		t.Fatal(docErr)
	}
	doc, err := openapi3.NewLoader().LoadFromData(Document)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

var (
	docOnce sync.Once
	docErr  error
)

func validateDocument() error {
	doc, err := openapi3.NewLoader().LoadFromData(Document)
	if err != nil {
		return fmt.Errorf("load openapi.json: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return fmt.Errorf("openapi.json is %s, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background(), openapi3.IsOpenAPI31OrLater()); err != nil {
		return fmt.Errorf("openapi.json is not a valid OpenAPI 3.1 document: %w", err)
	}
	return nil
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
	t      *testing.T
	store  *sqlitestore.Store
	desk   *testDesk
	media  *memMedia
	srv    *httptest.Server
	router routers.Router
	logs   *syncBuffer
	// tokens by scope list ("posts,read"), made by token.
	tokens map[string]string
}

// harnessOptions tune newHarness.
type harnessOptions struct {
	maxJSON, maxMedia int64
	pause             func(ctx context.Context, point string)
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
	doc := loadDocument(t)
	h := &harness{t: t, store: store, media: &memMedia{m: map[string][]byte{}}, logs: &syncBuffer{}, tokens: map[string]string{}}
	h.desk = &testDesk{store: store, keys: map[string]keyRecord{}}
	queue := store.Queue("publish", 5)
	confirmer := &publishing.Confirmer{Ledger: store, Posts: store, Accounts: store, Queue: queue}
	api, err := New(Config{
		Desk: h.desk, Decider: &publishing.Operator{Ledger: store, Confirmer: confirmer}, Held: store, Accounts: store, Targets: store,
		DeadLetters: queue, Media: h.media, Auth: BearerTokens(store), Logger: slog.New(slog.NewJSONHandler(h.logs, nil)),
		MaxJSONBytes: opts.maxJSON, MaxMediaBytes: opts.maxMedia, Pause: opts.pause,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(api)
	t.Cleanup(h.srv.Close)
	doc.Servers = openapi3.Servers{{URL: h.srv.URL}}
	if h.router, err = gorillamux.NewRouter(doc); err != nil {
		t.Fatal(err)
	}
	return h
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
	ctx := context.Background()
	vreq, _ := http.NewRequest(rq.method, req.URL.String(), bytes.NewReader(rq.body))
	vreq.Header = req.Header.Clone()
	route, params, err := h.router.FindRoute(vreq)
	if err != nil {
		// Not an operation of the document: the API must say so.
		if a.status != http.StatusNotFound && a.status != http.StatusMethodNotAllowed {
			h.t.Errorf("%s %s is no operation of openapi.json (%v) but was answered %d", rq.method, rq.path, err, a.status)
		}
		a.problem(h.t)
		return
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route, Options: opts}
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil && (a.status < 400 || a.status >= 500) {
		h.t.Errorf("%s %s: the document refuses the request (%v) but it was answered %d: %s", rq.method, rq.path, err, a.status, a.body)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: a.status, Header: a.header, Options: opts}
	out.SetBodyBytes(a.body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		h.t.Errorf("%s %s: answer %d does not match openapi.json: %v\n%s", rq.method, rq.path, a.status, err, a.body)
	}
}

// memMedia is an in-memory MediaWriter.
type memMedia struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (m *memMedia) WriteMedia(_ context.Context, md post.Media, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[md.Ref] = bytes.Clone(data)
	return nil
}

func (m *memMedia) MediaSize(_ context.Context, ref string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.m[ref]
	if !ok {
		return 0, post.ErrNotFound
	}
	return int64(len(b)), nil
}
