package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"oncepost/shared/browsertest"
	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/recurring"
)

// The browser tests drive the console in headless chromium
// (shared/browsertest): they are written against routes and forms' field
// names, not the pages' markup, so they hold as the pages grow.

// consolePage is one page of the console for the browser tests.
type consolePage struct {
	// name names the screenshot (var/screenshots/console-<name>.png).
	name string
	path string
	// showsPost: the page lists the test post (see seedXSS), so its text
	// must be on it, as text.
	showsPost bool
}

// consolePages are every signed-in page; at is a day (YYYY-MM-DD) the
// calendars show, postID the post whose page is one of them.
func consolePages(at string, postID post.ID) []consolePage {
	return []consolePage{
		{name: "calendar-week", path: "/calendar?view=week&at=" + at, showsPost: true},
		{name: "calendar-month", path: "/calendar?view=month&at=" + at},
		{name: "calendar-day", path: "/calendar?view=day&at=" + at},
		{name: "post", path: "/posts/" + string(postID), showsPost: true},
		{name: "compose", path: "/compose"},
		{name: "inbox", path: "/inbox", showsPost: true},
		{name: "accounts", path: "/accounts"},
		{name: "queue", path: "/accounts/news/queue"},
		{name: "recurring", path: "/recurring"},
		{name: "status", path: "/status"},
	}
}

// signInTab signs the tab in through the real sign-in page with a new
// token with the scopes: the browser fills the form (its script adds the
// browser's time zone) and lands on the calendar.
func signInTab(t *testing.T, h *harness, tab *browsertest.Tab, scopes string) {
	t.Helper()
	if st := tab.Navigate(h.srv.URL + "/calendar"); st != http.StatusOK {
		t.Fatalf("GET /calendar signed out: %d", st)
	}
	if u, _ := url.Parse(tab.URL()); u.Path != "/signin" || u.Query().Get("next") != "/calendar" {
		t.Fatalf("signed out, /calendar went to %s, want /signin?next=/calendar", tab.URL())
	}
	tab.Type(`form[action="/signin"] input[name="token"]`, h.token(scopes))
	tab.Click(`form[action="/signin"] [type="submit"]`)
	tab.WaitPath("/calendar")
	if st := tab.Status(); st != http.StatusOK {
		t.Fatalf("after sign-in: %d", st)
	}
}

// TestBrowserPages signs in through the sign-in page and visits every
// page: each answers 200 without sending the browser back to sign in,
// shows times in the browser's zone, runs without a JavaScript error, a
// missing asset or anything its Content-Security-Policy blocks, has no
// serious or critical axe-core violation, and is saved as a screenshot.
func TestBrowserPages(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	seedPosts(t, h, h.now())
	seedApprovals(t, h, h.now())
	const zone = "America/New_York"
	tab := browsertest.NewTab(t, browsertest.Options{Width: 1280, Height: 800, TimeZone: zone})

	tab.Navigate(h.srv.URL + "/signin")
	if errs := tab.PageErrors(); len(errs) != 0 {
		t.Errorf("/signin: %s", strings.Join(errs, "; "))
	}
	browsertest.CheckAxe(t, tab, "sign-in")
	tab.Screenshot("console-signin")
	// The first Tab goes to the skip link: the keyboard reaches the content
	// without walking the navigation.
	tab.Press("\t")
	if got := browsertest.Eval[string](tab, `document.activeElement.getAttribute("href") || document.activeElement.tagName`); got != "#main" {
		t.Errorf("the first Tab focuses %q, want the skip link to #main", got)
	}

	signInTab(t, h, tab, "all")
	if text := tab.Text("body"); !strings.Contains(text, zone) {
		t.Errorf("the calendar does not say it shows times in %s (the browser's zone): %.300s", zone, text)
	}
	at := h.now().In(mustZone(t, zone)).Format("2006-01-02")
	for _, p := range consolePages(at, "shot-1") {
		if st := tab.Navigate(h.srv.URL + p.path); st != http.StatusOK {
			t.Errorf("%s: HTTP %d: %.300s", p.path, st, tab.Text("body"))
			continue
		}
		if u, _ := url.Parse(tab.URL()); u.Path != strings.SplitN(p.path, "?", 2)[0] {
			t.Errorf("%s ended on %s", p.path, tab.URL())
			continue
		}
		if errs := tab.PageErrors(); len(errs) != 0 {
			t.Errorf("%s: %s", p.path, strings.Join(errs, "; "))
		}
		browsertest.CheckAxe(t, tab, p.name)
		tab.Screenshot("console-" + p.name)
	}
	// At 320 px wide the layout reflows (WCAG 1.4.10): nothing wider
	// than the viewport.
	tab.SetViewport(320, 720)
	for i, p := range consolePages(at, "shot-1")[:2] {
		tab.Navigate(h.srv.URL + p.path)
		if w := browsertest.Eval[int](tab, `document.documentElement.scrollWidth`); w > 320 {
			t.Errorf("%s at 320 px wide is %d px wide: it scrolls sideways", p.path, w)
		}
		if i == 0 {
			tab.Screenshot("console-" + p.name + "-narrow")
		}
	}
}

// seedPosts stores a few ordinary posts around now, so the pages have
// something to show in their screenshots.
func seedPosts(t *testing.T, h *harness, now time.Time) {
	t.Helper()
	ctx := context.Background()
	day := now.UTC().Truncate(24 * time.Hour)
	for i, body := range []string{
		"Morning briefing: what changed overnight, in five lines.",
		"Our new office opens on Monday. Come by for coffee!",
		"Thread: how we schedule posts without ever sending one twice (1/4)",
		"Weekly digest is out: https://example.com/digest",
	} {
		at := day.Add(time.Duration(9+i*2) * time.Hour).Add(time.Duration(i-1) * 24 * time.Hour)
		p := post.Post{ID: post.ID(fmt.Sprintf("shot-%d", i)), Body: body, CreatedAt: now.Add(-48 * time.Hour),
			Targets: []post.Target{{Account: "news", Slot: at, Status: post.Scheduled, UpdatedAt: now}, {Account: "sky", Slot: at, Status: post.Scheduled, UpdatedAt: now}}}
		if at.Before(now) {
			p.Targets[0].Status, p.Targets[0].RemoteID = post.Published, fmt.Sprintf("1100%d", i)
		}
		if err := h.store.CreatePost(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// A recurring rule for the rules page, stored alone: its occurrences
	// are not created (no post of it on the other pages).
	if err := h.store.CreateRule(ctx, recurring.Rule{ID: "weekly-digest", Revision: 1, Content: recurring.Content{Body: "Weekly digest is out", Variants: []string{"This week's digest"}},
		Accounts: []post.AccountID{"news", "sky"}, Repeat: recurring.Repeat{Cron: "cron(0 9 ? * MON *)"}, TimeZone: "Europe/Berlin", Start: now, Count: 12,
		CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	seedQueue(t, h)
}

// seedQueue gives news posting slots in Berlin and two queued posts.
func seedQueue(t *testing.T, h *harness) {
	t.Helper()
	ctx := context.Background()
	zone, slots := "Europe/Berlin", []string{"cron(0 9 ? * MON-FRI *)", "cron(30 12 ? * MON-FRI *)"}
	if _, _, err := h.desk.ChangeAccount(ctx, "news", publishing.AccountChange{TimeZone: &zone, Slots: &slots}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"queued-1", "queued-2"} {
		d := post.Draft{ID: id, Body: "From the queue: " + id, Queue: true, Targets: []post.DraftTarget{{Account: "news"}}}
		if _, err := h.desk.Schedule(ctx, d, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// xssBody and xssAlt are a post's text and image description that run
// script if a page writes them as HTML rather than text.
const (
	xssBody = `<script>window.__xss=1</script>"><img src=x onerror="window.__xss=2">`
	xssAlt  = `a "quoted" alt' onerror="window.__xss=3" data-x='`
)

// seedXSS stores a post with xssBody and an image described by xssAlt,
// to news tomorrow (the calendar) and held for sky (the inbox).
func seedXSS(t *testing.T, h *harness, now time.Time) post.Post {
	t.Helper()
	ctx := context.Background()
	slot := now.Add(24 * time.Hour).Truncate(time.Minute).UTC()
	if err := h.media.WriteMedia(ctx, post.Media{Ref: "media/xss.png"}, []byte("\x89PNG\r\n\x1a\n")); err != nil {
		t.Fatal(err)
	}
	p := post.Post{ID: "xss-post", Body: xssBody, CreatedAt: now, Thread: []string{"A reply: " + xssBody},
		Media: []post.Media{{Ref: "media/xss.png", SHA256: strings.Repeat("ab", 32), ContentType: "image/png", Alt: xssAlt}},
		Targets: []post.Target{
			{Account: "news", Slot: slot, Status: post.Scheduled, UpdatedAt: now},
			{Account: "sky", Slot: slot, Status: post.Held, Reason: "awaiting approval", UpdatedAt: now},
		}}
	if err := h.store.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	e := ledger.Entry{Key: ledger.PublishKey("sky", string(p.ID), slot), Action: ledger.Publish, Account: "sky", Subject: string(p.ID),
		Slot: slot, State: ledger.Pending, Attempt: 1, Handle: "h-xss", OpenSince: now, UpdatedAt: now}
	if err := h.store.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	held := e
	held.State, held.Reason, held.UpdatedAt = ledger.Held, "the platform's answer was lost and no look found the post", now
	if err := h.store.Update(ctx, e, held); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBrowserShowsPostTextAsText: a post whose text and alt text are
// HTML render as text on every page. The tab ignores the pages'
// Content-Security-Policy, so what is tested is the escaping alone (the
// policy would stop the inline script too).
func TestBrowserShowsPostTextAsText(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	seedXSS(t, h, h.now())
	tab := browsertest.NewTab(t, browsertest.Options{TimeZone: "UTC", BypassCSP: true})
	signInTab(t, h, tab, "all")
	at := h.now().Add(24 * time.Hour).UTC().Format("2006-01-02")
	pages := append(consolePages(at, "xss-post"), consolePage{name: "signin", path: "/signin"})
	for _, p := range pages {
		if st := tab.Navigate(h.srv.URL + p.path); st != http.StatusOK {
			t.Errorf("%s: HTTP %d", p.path, st)
			continue
		}
		// What the injection would have added: a script of its own, an
		// element with an onerror attribute, and window.__xss.
		injected := browsertest.Eval[string](tab, `(() => {
			const own = [...document.scripts].filter(s => !s.src || new URL(s.src).origin !== location.origin || !new URL(s.src).pathname.startsWith("/static/"));
			const bad = [...document.querySelectorAll("[onerror], img[src='x']")];
			return [typeof window.__xss === "undefined" ? "" : "window.__xss=" + window.__xss,
				own.length ? own.length + " inline or foreign script(s): " + own.map(s => s.outerHTML.slice(0, 80)).join(" ") : "",
				bad.length ? "injected elements: " + bad.map(e => e.outerHTML.slice(0, 80)).join(" ") : ""].filter(Boolean).join("; ");
		})()`)
		if injected != "" {
			t.Errorf("%s renders the post's text as HTML: %s", p.path, injected)
		}
		if !p.showsPost {
			continue
		}
		text := tab.Text("main")
		if strings.Contains(text, "Not built yet") {
			// A placeholder page (pages_stub.go): it shows no posts yet.
			t.Logf("%s: a placeholder, the post's text is not checked there yet", p.path)
			continue
		}
		if !strings.Contains(text, `<script>window.__xss=1</script>`) {
			t.Errorf("%s does not show the post's text as text (want %q on the page): %.500s", p.path, `<script>window.__xss=1</script>`, text)
		}
	}
}

// TestBrowserRefusesCrossOriginForms: a page of another origin whose form
// posts itself to the console, in the signed-in browser (its cookies
// sent where SameSite lets them), is refused with 403 and changes
// nothing: the session still works. Two attackers: another port of the
// same host (same site: the cookie goes along) and another host name
// (cross site).
func TestBrowserRefusesCrossOriginForms(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	tab := browsertest.NewTab(t, browsertest.Options{})
	signInTab(t, h, tab, "all")
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><title>win a prize</title><body>
<form method="post" action="%s"><input name="csrf" value="guess"><input name="body" value="pwned"></form>
<script>document.forms[0].submit()</script></body></html>`, h.srv.URL+r.URL.Query().Get("to"))
	}))
	t.Cleanup(evil.Close)
	evilURL, _ := url.Parse(evil.URL)
	sameSite := evil.URL
	crossSite := "http://localhost:" + evilURL.Port()
	for _, origin := range []string{sameSite, crossSite} {
		for _, to := range []string{"/signout", "/v1/posts"} {
			tab.Navigate(origin + "/?to=" + url.QueryEscape(to))
			tab.WaitFor("the form's answer from the console", "location.origin === "+jsQuote(h.srv.URL)+` && document.readyState === "complete"`)
			if st := tab.Status(); st != http.StatusForbidden {
				t.Errorf("a form from %s posting to %s: HTTP %d, want 403: %.200s", origin, to, st, tab.Text("body"))
			}
		}
	}
	// Had a forged sign-out gone through, the session would be gone.
	if st := tab.Navigate(h.srv.URL + "/inbox"); st != http.StatusOK || !strings.HasSuffix(strings.SplitN(tab.URL(), "?", 2)[0], "/inbox") {
		t.Fatalf("after the forged forms the session is gone: %d at %s", st, tab.URL())
	}
	if n, err := countPosts(h); err != nil || n != 0 {
		t.Errorf("posts after the forged forms: %d (%v), want 0", n, err)
	}
}

func countPosts(h *harness) (int, error) {
	var n int
	err := h.store.DB().QueryRowContext(context.Background(), `SELECT count(*) FROM posts`).Scan(&n)
	return n, err
}

func jsQuote(s string) string { return fmt.Sprintf("%q", s) }

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
