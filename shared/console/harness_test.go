package console

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"oncepost/shared/apitoken"
	"oncepost/shared/httpapi"
	"oncepost/shared/httpapi/apitest"
	"oncepost/shared/platform"
	"oncepost/shared/platform/catalog"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// harness is the console on a real SQLite store, served on 127.0.0.1.
type harness struct {
	t        testing.TB
	store    *sqlitestore.Store
	desk     *publishing.Desk
	operator *publishing.Operator
	queue    publishing.Queue
	media    *memMedia
	console  *Handler
	srv      *httptest.Server
	now      func() time.Time
}

// harnessOptions tune newHarness.
type harnessOptions struct {
	// now is the clock (default time.Now).
	now func() time.Time
	// config, if set, changes the console's Config before New.
	config func(*Config)
}

func newHarness(t testing.TB, opts harnessOptions) *harness {
	t.Helper()
	ctx := context.Background()
	if opts.now == nil {
		opts.now = time.Now
	}
	store, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "oncepost.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	for _, a := range []post.Account{
		{ID: "news", Platform: "mastodon", Handle: "@news@example.social", BaseURL: "https://example.social", Gate: post.GateAuto, Limits: post.Limits{MaxTextGraphemes: 500, MaxMedia: 4}},
		{ID: "sky", Platform: "bluesky", Handle: "news.example.com", BaseURL: "https://bsky.social", Gate: post.GateManual},
		{ID: "gone", Platform: "mastodon", Handle: "@gone@example.social", BaseURL: "https://example.social", Gate: post.GateManual,
			Status: post.AccountReconnectNeeded, StatusReason: "refresh refused"},
	} {
		if err := store.PutAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	h := &harness{t: t, store: store, media: &memMedia{}, now: opts.now}
	queue := store.Queue("publish", 5)
	h.queue = queue
	quiet := slog.New(slog.DiscardHandler)
	confirmer := &publishing.Confirmer{Ledger: store, Posts: store, Accounts: store, Queue: queue, Logger: quiet, Now: opts.now}
	h.operator = &publishing.Operator{Ledger: store, Confirmer: confirmer, Logger: quiet, Now: opts.now}
	h.desk = &publishing.Desk{Posts: store, Ledger: store, Accounts: store, Blocklist: store, Scheduler: storeScheduler{Store: store}, Keys: store, Lister: store, Queue: store,
		Operator: h.operator, Deleter: &publishing.Deleter{Ledger: store, Posts: store, Accounts: store, Logger: quiet}, MediaSize: h.media.MediaSize, Logger: quiet,
		Now: opts.now,
		Limits: func(name string) (post.Limits, bool) {
			k, ok := catalog.Lookup(name)
			return k.Limits(), ok
		},
		Capabilities: func(name string) (platform.Capabilities, bool) {
			k, ok := catalog.Lookup(name)
			return k.Capabilities, ok
		}}
	cfg := Config{
		API: httpapi.Config{Desk: h.desk, Decider: h.operator, Held: store, Accounts: store, Targets: store,
			DeadLetters: queue, Media: h.media, Budgets: store, Webhooks: store, Auth: httpapi.BearerTokens(store), Now: opts.now,
			Recurring: &publishing.Recurring{Rules: store, Desk: h.desk}},
		Tokens: store,
		Posts:  store,
		Events: store,
		Now:    opts.now,
	}
	if opts.config != nil {
		opts.config(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.console = c
	h.srv = httptest.NewServer(c)
	t.Cleanup(h.srv.Close)
	return h
}

// memMedia and storeScheduler are the API's test stores (apitest's):
// uploads in memory, posts created in the store with no schedule.
type (
	memMedia       = apitest.MemMedia
	storeScheduler = apitest.StoreScheduler
)

// token makes an API token with the scopes ("read,decide") and returns it.
func (h *harness) token(scopes string) string {
	h.t.Helper()
	sc, err := apitoken.ParseScopes(scopes)
	if err != nil {
		h.t.Fatal(err)
	}
	tok := apitoken.New()
	if err := h.store.AddToken(context.Background(), apitoken.Token{ID: apitoken.NewID(), Name: "t-" + strings.ReplaceAll(scopes, ",", "-") + "-" + apitoken.NewID()[:6],
		Hash: apitoken.Hash(tok), Scopes: sc, Rate: 10000, CreatedAt: time.Now()}); err != nil {
		h.t.Fatal(err)
	}
	return tok
}

// browser is an HTTP client with a cookie jar that behaves as a browser
// on the console's origin does: it sends Sec-Fetch-Site: same-origin
// and Origin on every request.
type browser struct {
	t      testing.TB
	h      *harness
	client *http.Client
	csrf   string
}

// signIn signs in with a new token with the scopes.
func (h *harness) signIn(scopes string) *browser {
	h.t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		h.t.Fatal(err)
	}
	b := &browser{t: h.t, h: h, client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	a := b.post("/signin", url.Values{"token": {h.token(scopes)}, "tz": {"Europe/Berlin"}})
	if a.status != http.StatusSeeOther {
		h.t.Fatalf("sign in: %d %s", a.status, a.body)
	}
	b.csrf = b.csrfOf(b.get("/calendar"))
	return b
}

// page is an answer read whole.
type page struct {
	status int
	header http.Header
	body   string
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

func (b *browser) csrfOf(p page) string {
	m := csrfMeta.FindStringSubmatch(p.body)
	if m == nil {
		b.t.Fatalf("no CSRF token on the page (%d): %.300s", p.status, p.body)
	}
	return m[1]
}

func (b *browser) do(req *http.Request) page {
	b.t.Helper()
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", b.h.srv.URL)
	res, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return page{status: res.StatusCode, header: res.Header, body: string(body)}
}

func (b *browser) get(path string) page {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.h.srv.URL+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.do(req)
}

// post submits a form; the session's CSRF token is added when the
// browser has one and the form has none.
func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	if b.csrf != "" && form.Get(csrfField) == "" {
		form.Set(csrfField, b.csrf)
	}
	req, err := http.NewRequest(http.MethodPost, b.h.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// api calls /v1 as the console's script does: the session's cookie and
// CSRF header.
func (b *browser) api(method, path, body string) page {
	b.t.Helper()
	req, err := http.NewRequest(method, b.h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(csrfHeader, b.csrf)
	return b.do(req)
}
