package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"oncepost/shared/apitoken"
	"oncepost/shared/browsertest"
	"oncepost/shared/platform"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/sqlitestore"
)

// TestConsoleInTheBrowser drives the console of a real `oncepost serve`
// (runtime and all, against the sandbox platform) in headless chromium,
// as a person would: sign in; compose a post to two accounts with an
// image; see it on the calendar, where the runtime's publishing turns its
// statuses to published on the open page, with no reload; a token
// without the decide scope cannot approve a held post; approving it from
// the inbox reaches the waiting confirm workflow, which sends it once; a
// post moved from its page is rescheduled. The calendar and the inbox are
// saved as screenshots (the README shows them).
func TestConsoleInTheBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process and a browser")
	}
	const zone = "Europe/Berlin"
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorkspace(t, sandbox.Options{}, 2)
	ctx := context.Background()
	store := w.open(t)
	// A careful account: a post the platform cannot confirm waits for a
	// person there.
	sa := w.sb.AddAccount("careful")
	careful := post.Account{ID: "careful", Platform: "sandbox", Handle: "@careful", BaseURL: w.sb.URL(), RemoteID: sa.ID, CredentialRef: "careful", Gate: post.GateManual}
	if err := store.PutAccount(ctx, careful); err != nil {
		t.Fatal(err)
	}
	if err := store.PutCredential(ctx, careful.ID, platform.Credential{AccessToken: sa.AccessToken, RefreshToken: sa.RefreshToken}); err != nil {
		t.Fatal(err)
	}
	token := func(name, scopes string) string {
		sc, err := apitoken.ParseScopes(scopes)
		if err != nil {
			t.Fatal(err)
		}
		tok := apitoken.New()
		if err := store.AddToken(ctx, apitoken.Token{ID: apitoken.NewID(), Name: name, Hash: apitoken.Hash(tok), Scopes: sc, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		return tok
	}
	operator, writer := token("operator", "all"), token("writer", "read,posts")
	// The careful post's create is answered 503 before anything is
	// stored: the look finds nothing, and the manual gate holds it.
	w.sb.Script(sandbox.Fault{Kind: sandbox.Fault503})
	now := time.Now().UTC()
	for _, p := range []post.Post{
		{ID: "careful-1", Body: "A careful post: sent once, after a person approves it.", CreatedAt: now,
			Targets: []post.Target{{Account: "careful", Slot: now.Add(2 * time.Second).Truncate(time.Second), Status: post.Scheduled, UpdatedAt: now}}},
		{ID: "later-1", Body: "A later post, moved by hand.", CreatedAt: now,
			Targets: []post.Target{{Account: w.accounts[0], Slot: now.Add(time.Hour).Truncate(time.Minute), Status: post.Scheduled, UpdatedAt: now}}},
	} {
		if err := store.CreatePost(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	store.Close()

	// Calls get time enough for the sandbox to process an image.
	s := startServeArgs(t, w.db, []string{"--call-timeout", "3s", "--lease", "5s", "--visibility", "5s"})
	status := func(id post.ID, account post.AccountID) post.TargetStatus {
		st, err := sqlitestore.Open(ctx, w.db, sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		p, err := st.GetPost(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		tg, _ := p.Target(account)
		if tg.Reason != "" {
			t.Logf("post %s on %s: %s (%s)", id, account, tg.Status, tg.Reason)
		}
		return tg.Status
	}
	waitStatus := func(what string, id post.ID, account post.AccountID, want post.TargetStatus) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for status(id, account) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: post %s on %s is %s after 30 s, want %s\n%s", what, id, account, status(id, account), want, s.stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitStatus("the careful post", "careful-1", "careful", post.Held)

	tab := browsertest.NewTab(t, browsertest.Options{Width: 1280, Height: 900, TimeZone: zone})
	signIn := func(tab *browsertest.Tab, tok string) {
		t.Helper()
		tab.Navigate(s.url + "/signin")
		tab.Type(`input[name="token"]`, tok)
		tab.Click(`form[action="/signin"] [type="submit"]`)
		tab.WaitPath("/calendar")
	}
	signIn(tab, operator)

	// Compose: two accounts, an image with its alt text, due in a few
	// seconds in the viewer's zone.
	img := filepath.Join(t.TempDir(), "chart.png")
	writePNG(t, img)
	tab.Navigate(s.url + "/compose")
	tab.Click(`input[name="account"][value="` + string(w.accounts[0]) + `"]`)
	tab.Click(`input[name="account"][value="` + string(w.accounts[1]) + `"]`)
	tab.Type(`textarea[name="body"]`, "Composed in the console: one chart, two accounts, exactly once.")
	due := time.Now().Add(6 * time.Second).In(loc)
	browsertest.Eval[bool](tab, `(() => { document.querySelector('input[name="at"]').value = `+fmt.Sprintf("%q", due.Format("2006-01-02T15:04:05"))+`; return true })()`)
	tab.SetFiles(`input[name="image"]`, img)
	tab.Type(`input[name="image_alt"]`, `A chart of "posts sent once"`)
	tab.Click(`button[name="action"][value="schedule"]`)
	tab.WaitPath("/calendar")
	tab.WaitText("Composed in the console")
	id := browsertest.Eval[string](tab, `(() => { for (const a of document.querySelectorAll('a[href^="/posts/"]')) { if (a.textContent.includes("Composed in the console")) return a.getAttribute("href").slice(7) } return "" })()`)
	if id == "" {
		t.Fatalf("the composed post is not linked from the calendar")
	}
	// The page stays open; the runtime publishes; the statuses change
	// in place.
	browsertest.Eval[bool](tab, `(() => { window.__sameDocument = true; return true })()`)
	for _, a := range w.accounts {
		waitStatus("the composed post", post.ID(id), a, post.Published)
		tab.WaitFor(string(a)+" published on the open page",
			fmt.Sprintf(`document.querySelector('[data-post=%q][data-account=%q][data-status="published"]')`, id, a))
	}
	if !browsertest.Eval[bool](tab, `window.__sameDocument === true`) {
		t.Fatalf("the calendar reloaded to show the new statuses")
	}
	browsertest.CheckAxe(t, tab, "calendar with live statuses")
	tab.Screenshot("console-e2e-calendar")
	remoteIDs := map[string]string{}
	for _, a := range w.sb.Accounts() {
		remoteIDs[a.Username] = a.ID
	}
	for _, a := range w.accounts[:2] {
		sent := 0
		for _, st := range w.sb.Statuses(remoteIDs[string(a)]) {
			if strings.Contains(st.Text, "Composed in the console") {
				sent++
				if len(st.MediaIDs) != 1 {
					t.Errorf("%s got %d attachments, want the chart", a, len(st.MediaIDs))
				}
			}
		}
		if sent != 1 {
			t.Errorf("%s got the composed post %d times, want 1", a, sent)
		}
	}

	// A token without the decide scope sees the evidence, not the
	// buttons; a decision posted anyway is refused and changes nothing.
	reader := browsertest.NewTab(t, browsertest.Options{Width: 1280, Height: 900, TimeZone: zone})
	signIn(reader, writer)
	reader.Navigate(s.url + "/inbox")
	reader.WaitText("A careful post")
	approve := `form[action$="/approve"]`
	if !browsertest.Eval[bool](reader, `document.querySelector('`+approve+` button').disabled`) {
		t.Errorf("the approve button is enabled for a token without the decide scope")
	}
	browsertest.Eval[bool](reader, `(() => { document.querySelector('`+approve+`').submit(); return true })()`)
	reader.WaitText("decide")
	if st := reader.Status(); st != http.StatusForbidden {
		t.Errorf("an approval by a token without the decide scope: HTTP %d, want 403", st)
	}
	if got := status("careful-1", "careful"); got != post.Held {
		t.Fatalf("after a refused approval the post is %s, want held", got)
	}

	// The operator approves it from the inbox; the workflow waiting on
	// the decision sends it, once.
	tab.Navigate(s.url + "/inbox")
	tab.WaitText("A careful post")
	browsertest.CheckAxe(t, tab, "inbox with a held post")
	tab.Screenshot("console-e2e-inbox")
	tab.Click(approve + ` button`)
	tab.WaitPath("/inbox")
	waitStatus("the approved post", "careful-1", "careful", post.Published)
	if n := len(w.sb.Statuses(sa.ID)); n != 1 {
		t.Errorf("the careful account has %d posts, want 1", n)
	}

	// Move the later post from the calendar: its link opens its page,
	// whose form takes the new time in the viewer's zone.
	tab.Navigate(s.url + "/calendar")
	tab.Click(`a[href="/posts/later-1"]`)
	tab.WaitPath("/posts/later-1")
	moved := time.Now().Add(3 * time.Hour).In(loc).Truncate(time.Minute)
	browsertest.Eval[bool](tab, `(() => { document.querySelector('#move-at').value = `+fmt.Sprintf("%q", moved.Format("2006-01-02T15:04"))+`; return true })()`)
	tab.Click(`form[action$="/reschedule"] [type="submit"]`)
	tab.WaitFor("the move's outcome", `document.querySelector('p.flash')`)
	if msg := tab.Text("p.flash"); strings.Contains(tab.Text("main"), "refused") {
		t.Errorf("the move: %s", msg)
	}
	st, err := sqlitestore.Open(ctx, w.db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := st.GetPost(ctx, "later-1")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Targets[0].Slot; !got.Equal(moved) || p.Targets[0].Status != post.Scheduled {
		t.Errorf("after the move the target is %s at %s, want scheduled at %s", p.Targets[0].Status, got, moved.UTC())
	}
	// The calendar shows it at its new time.
	tab.Navigate(s.url + "/calendar?view=day&at=" + moved.Format("2006-01-02"))
	if got := tab.Text(`a[href="/posts/later-1"] time`); got != moved.Format("15:04") {
		t.Errorf("the calendar shows the moved post at %q, want %s", got, moved.Format("15:04"))
	}
}
