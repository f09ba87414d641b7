package console

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"oncepost/shared/browsertest"
)

// The composer's live check reads the date and time field in the
// session's zone, as the server reads the form, whatever the browser's
// own zone: a browser in Kolkata (+05:30) signed in to a session in
// Berlin sends each time typed with Berlin's offset at that time, the
// instant parseLocalTime reads — on an ordinary day, in the hour before
// Berlin's clocks spring forward (where the offset of the wall time read
// as UTC is already the summer's), in the hour they skip and in the hour
// they repeat. The request is seen as the page sends it: the test wraps
// the page's fetch (nothing test-only is in the page).
func TestBrowserComposeCheckReadsTheTimeInTheSessionsZone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	const browserZone, sessionZone = "Asia/Kolkata", "Europe/Berlin"
	berlin := mustZone(t, sessionZone)
	tab := browsertest.NewTab(t, browsertest.Options{TimeZone: browserZone})

	// Sign in with the session's zone in the form's tz field (the page's
	// script put the browser's there).
	tab.Navigate(h.srv.URL + "/signin")
	browsertest.Eval[bool](tab, fmt.Sprintf(`(document.querySelector('input[name="tz"]').value = %s) !== ""`, jsQuote(sessionZone)))
	tab.Type(`form[action="/signin"] input[name="token"]`, h.token("read,posts"))
	tab.Click(`form[action="/signin"] [type="submit"]`)
	tab.WaitPath("/calendar")

	if st := tab.Navigate(h.srv.URL + "/compose"); st != http.StatusOK {
		t.Fatalf("GET /compose: %d", st)
	}
	if got := browsertest.Eval[string](tab, `document.getElementById("at").dataset.zone`); got != sessionZone {
		t.Fatalf("the time field's zone is %q, want the session's %q", got, sessionZone)
	}
	// Chromium names Kolkata by its old name, Asia/Calcutta: its offset
	// says the browser is there.
	if got := browsertest.Eval[int](tab, `new Date().getTimezoneOffset()`); got != -330 {
		t.Fatalf("the browser is %d minutes behind UTC, want Kolkata's -330", got)
	}
	browsertest.Eval[bool](tab, `(() => {
		window.__checks = [];
		const send = window.fetch;
		window.fetch = (url, init) => {
			if (String(url).endsWith("/v1/drafts/check")) window.__checks.push(JSON.parse(init.body));
			return send(url, init);
		};
		return true;
	})()`)
	tab.Click(`input[name="account"][value="news"]`)

	ordinary := time.Now().In(berlin).AddDate(0, 0, 2).Format("2006-01-02") + "T10:30"
	for _, wall := range []string{ordinary, "2027-03-28T01:30", "2027-03-28T02:30", "2027-10-31T02:30"} {
		want, err := parseLocalTime(wall, berlin)
		if err != nil {
			t.Fatal(err)
		}
		browsertest.Eval[bool](tab, fmt.Sprintf(`(() => {
			const el = document.getElementById("at");
			el.value = %s;
			el.dispatchEvent(new Event("input", { bubbles: true }));
			return true;
		})()`, jsQuote(wall)))
		sent := fmt.Sprintf(`window.__checks.map((c) => c.targets.length ? c.targets[0].at : "").filter((at) => at.startsWith(%s))`, jsQuote(wall))
		tab.WaitFor("a check of "+wall, sent+".length > 0")
		got := browsertest.Eval[[]string](tab, sent)
		at, err := time.Parse(time.RFC3339, got[len(got)-1])
		if err != nil {
			t.Errorf("%s: the check sent at %q, not RFC 3339: %v", wall, got[len(got)-1], err)
			continue
		}
		if !at.Equal(want) {
			t.Errorf("%s typed: the check sent %s (%s UTC), the server reads the form as %s (%s UTC)",
				wall, got[len(got)-1], at.UTC().Format(time.RFC3339), want.Format(time.RFC3339), want.UTC().Format(time.RFC3339))
		}
	}
	if errs := tab.PageErrors(); len(errs) != 0 {
		t.Errorf("/compose: %s", strings.Join(errs, "; "))
	}
}
