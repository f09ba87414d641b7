package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"oncepost/shared/apitoken"
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
		"https://evil.example": "/calendar", "": "/calendar", "/signin": "/calendar"} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}
