package console

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"oncepost/shared/apitoken"
	"oncepost/shared/httpapi"
)

func TestSignIn(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := h.signIn("read")
	p := b.get("/calendar")
	if p.status != http.StatusOK || !strings.Contains(p.body, "times in Europe/Berlin") {
		t.Fatalf("calendar after sign-in: %d %.500s", p.status, p.body)
	}
	c := sessionCookieOf(t, h, b)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Errorf("session cookie %+v: want HttpOnly and SameSite=Strict", c)
	}
}

// sessionCookieOf signs in once more and returns the Set-Cookie the
// console sent.
func sessionCookieOf(t *testing.T, h *harness, b *browser) *http.Cookie {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/signin", strings.NewReader(url.Values{"token": {h.token("read")}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for _, c := range res.Cookies() {
		if c.Name == sessionCookie {
			return c
		}
	}
	t.Fatalf("no %s cookie in %v", sessionCookie, res.Header)
	return nil
}

func TestSignInRefusals(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	revoked := h.token("read")
	if _, err := h.store.RevokeToken(context.Background(), tokenName(t, h, revoked), time.Now()); err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"malformed": "nope", "unknown": "op_" + strings.Repeat("a", 52), "revoked": revoked} {
		t.Run(name, func(t *testing.T) {
			b := &browser{t: t, h: h, client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
			p := b.post("/signin", url.Values{"token": {tok}})
			if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "token:") {
				t.Fatalf("%d %.300s: want 401 naming the token", p.status, p.body)
			}
		})
	}
}

func tokenName(t *testing.T, h *harness, tok string) string {
	t.Helper()
	tk, err := h.store.TokenByHash(context.Background(), apitoken.Hash(tok))
	if err != nil {
		t.Fatal(err)
	}
	return tk.Name
}

func TestPagesNeedASession(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := &browser{t: t, h: h, client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	for _, path := range []string{"/calendar", "/compose", "/inbox", "/accounts", "/status"} {
		p := b.get(path)
		if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/signin?next=") {
			t.Errorf("GET %s without a session: %d %s, want a redirect to /signin", path, p.status, p.header.Get("Location"))
		}
	}
}

func TestRevokedTokenEndsTheSession(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := h.signIn("read")
	var name string
	toks, err := h.store.ListTokens(context.Background())
	if err != nil || len(toks) != 1 {
		t.Fatalf("tokens %v %v", toks, err)
	}
	name = toks[0].Name
	if _, err := h.store.RevokeToken(context.Background(), name, time.Now()); err != nil {
		t.Fatal(err)
	}
	if p := b.get("/calendar"); p.status != http.StatusSeeOther {
		t.Fatalf("after revoke: %d, want a redirect to sign in", p.status)
	}
	if p := b.api("GET", "/v1/posts", ""); p.status != http.StatusUnauthorized {
		t.Fatalf("API after revoke: %d, want 401", p.status)
	}
}

func TestCrossOriginFormIsRefused(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := h.signIn("all")
	for name, hdr := range map[string]map[string]string{
		"fetch metadata cross-site": {"Sec-Fetch-Site": "cross-site"},
		"fetch metadata same-site":  {"Sec-Fetch-Site": "same-site"},
		"origin of another host":    {"Origin": "http://evil.example"},
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/signout", strings.NewReader(url.Values{csrfField: {b.csrf}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			res, err := b.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusForbidden {
				t.Fatalf("%d, want 403", res.StatusCode)
			}
		})
	}
	// The session survived every refused sign-out.
	if p := b.get("/calendar"); p.status != http.StatusOK {
		t.Fatalf("after the refused forms: %d", p.status)
	}
}

func TestFormWithoutCSRFTokenIsRefused(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := h.signIn("all")
	if p := b.post("/signout", url.Values{csrfField: {"not-the-token"}}); p.status != http.StatusForbidden {
		t.Fatalf("sign-out with a wrong token: %d, want 403", p.status)
	}
	if p := b.api("GET", "/v1/posts", ""); p.status != http.StatusOK {
		t.Fatalf("session API GET: %d %s", p.status, p.body)
	}
	b.csrf = ""
	if p := b.api("POST", "/v1/posts/x/cancel", "{}"); p.status != http.StatusForbidden {
		t.Fatalf("session API POST without the CSRF header: %d, want 403", p.status)
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{"/inbox": "/inbox", "//evil.example": "/calendar", "/\\evil": "/calendar",
		"https://evil.example": "/calendar", "": "/calendar", "/signin": "/calendar",
		"/./\\evil.example": "/calendar", "/\t/evil.example": "/calendar", "/\n/evil.example": "/calendar",
		"/.//evil.example": "/evil.example", "/a/..//evil.example": "/evil.example", "///evil.example": "/calendar",
		"/calendar?view=month&at=2026-12-01": "/calendar?view=month&at=2026-12-01", "/posts/x/../../inbox": "/inbox",
		"javascript:alert(1)": "/calendar", "/%2F%2Fevil.example": "/evil.example"} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

// clock is a test clock that moves when told.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// onceHarness is a console that signs in by one-time links only.
func onceHarness(t *testing.T, c *clock) (*Handler, *httptest.Server) {
	t.Helper()
	h := newHarness(t, harnessOptions{now: c.Now})
	cfg := h.console.cfg
	cfg.Tokens = nil
	cfg.Operator = httpapi.Principal{ID: "console:op@host", Name: "op (aws)", Scopes: []apitoken.Scope{apitoken.ScopeAll}}
	cfg.API.Auth = httpapi.ContextPrincipal()
	con, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(con)
	t.Cleanup(srv.Close)
	return con, srv
}

// TestSignInLink: the link's GET spends nothing (a previewer may fetch
// it); its form's POST signs in once, in the browser's zone; a second
// use and a use after 10 minutes are refused.
func TestSignInLink(t *testing.T) {
	c := &clock{now: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}
	con, srv := onceHarness(t, c)
	link := con.SignInLink()
	fresh := func() *browser {
		jar, _ := cookiejar.New(nil)
		return &browser{t: t, h: &harness{srv: srv}, client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	}
	b := fresh()
	for range 3 {
		if p := b.get(link); p.status != http.StatusOK || !strings.Contains(p.body, `action="`+link+`"`) {
			t.Fatalf("GET the link: %d %.300s", p.status, p.body)
		}
	}
	if p := b.post(link, url.Values{"tz": {"Asia/Kolkata"}}); p.status != http.StatusSeeOther {
		t.Fatalf("POST the link: %d %.300s", p.status, p.body)
	}
	if p := b.get("/calendar"); p.status != http.StatusOK || !strings.Contains(p.body, "times in Asia/Kolkata") {
		t.Fatalf("signed in by the link: %d %.300s", p.status, p.body)
	}
	if p := fresh().post(link, url.Values{}); p.status != http.StatusUnauthorized {
		t.Fatalf("the link used twice: %d, want 401", p.status)
	}
	late := con.SignInLink()
	c.add(onceFor + time.Second)
	if p := fresh().get(late); p.status != http.StatusUnauthorized {
		t.Fatalf("GET a link after %s: %d, want 401", onceFor, p.status)
	}
	if p := fresh().post(late, url.Values{}); p.status != http.StatusUnauthorized {
		t.Fatalf("POST a link after %s: %d, want 401", onceFor, p.status)
	}
}

// TestSessionLifetime: a session used all the time still ends
// SessionMaxAge after its sign-in; an idle one SessionTTL after its last
// use.
func TestSessionLifetime(t *testing.T) {
	c := &clock{now: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}
	h := newHarness(t, harnessOptions{now: c.Now})
	b := h.signIn("read")
	for range 23 {
		c.add(time.Hour)
		if p := b.get("/status"); p.status != http.StatusOK {
			t.Fatalf("used every hour, at %s: %d", c.Now(), p.status)
		}
	}
	c.add(time.Hour + time.Second)
	if p := b.get("/status"); p.status != http.StatusSeeOther {
		t.Fatalf("24 h after sign-in: %d, want a redirect to sign in", p.status)
	}
	idle := h.signIn("read")
	c.add(12*time.Hour + time.Second)
	if p := idle.get("/status"); p.status != http.StatusSeeOther {
		t.Fatalf("idle for 12 h: %d, want a redirect to sign in", p.status)
	}
}

// TestSignInReplacesTheSession: signing in again ends the browser's
// earlier session (its id never lives on next to the new one).
func TestSignInReplacesTheSession(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := h.signIn("read")
	old := sessionIDOf(t, b)
	if p := b.post("/signin", url.Values{"token": {h.token("read")}}); p.status != http.StatusSeeOther {
		t.Fatalf("second sign-in: %d", p.status)
	}
	if now := sessionIDOf(t, b); now == old {
		t.Fatalf("the session id did not change on sign-in")
	}
	if _, ok := h.console.sessions.get(old); ok {
		t.Fatalf("the earlier session lives on after a new sign-in")
	}
}

func sessionIDOf(t *testing.T, b *browser) string {
	t.Helper()
	u, _ := url.Parse(b.h.srv.URL)
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == sessionCookie {
			return c.Value
		}
	}
	t.Fatal("no session cookie")
	return ""
}

// flakyTokens fails every lookup while down.
type flakyTokens struct {
	apitoken.Store
	down atomic.Bool
}

func (f *flakyTokens) TokenByHash(ctx context.Context, hash string) (apitoken.Token, error) {
	if f.down.Load() {
		return apitoken.Token{}, errors.New("database is locked")
	}
	return f.Store.TokenByHash(ctx, hash)
}

// TestTokenStoreDownKeepsTheSession: a token that cannot be checked now
// is a 503, and the session lives on; only a revoked or unknown token
// ends it.
func TestTokenStoreDownKeepsTheSession(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	tokens := &flakyTokens{Store: h.store}
	cfg := h.console.cfg
	cfg.Tokens = tokens
	con, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.console = con
	h.srv = httptest.NewServer(con)
	t.Cleanup(h.srv.Close)
	b := h.signIn("read")
	tokens.down.Store(true)
	if p := b.get("/status"); p.status != http.StatusServiceUnavailable {
		t.Fatalf("token store down: %d, want 503", p.status)
	}
	if p := b.api("GET", "/v1/status", ""); p.status != http.StatusServiceUnavailable {
		t.Fatalf("token store down, API: %d, want 503", p.status)
	}
	tokens.down.Store(false)
	if p := b.get("/status"); p.status != http.StatusOK {
		t.Fatalf("token store back: %d, want the session to live on", p.status)
	}
}

// TestFormBodiesAreBounded: a console form is small and never multipart
// (but the composer's): a larger or multipart body is refused before
// anything reads it.
func TestFormBodiesAreBounded(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := h.signIn("all")
	big := url.Values{"reason": {strings.Repeat("x", maxFormBytes)}}
	if p := b.post("/inbox/dead-letters/x/drop", big); p.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a form over %d bytes: %d, want 413", maxFormBytes, p.status)
	}
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/signin", strings.NewReader("--x\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\nop_x\r\n--x--\r\n"))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	if p := b.do(req); p.status != http.StatusUnsupportedMediaType {
		t.Errorf("a multipart sign-in: %d, want 415", p.status)
	}
	// Chunked, no Content-Length: cut at the limit.
	req, _ = http.NewRequest(http.MethodPost, h.srv.URL+"/signin", io.MultiReader(strings.NewReader("token="), strings.NewReader(strings.Repeat("a", 2*maxFormBytes))))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.ContentLength = -1
	if p := b.do(req); p.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a chunked sign-in over the limit: %d, want 413", p.status)
	}
}
