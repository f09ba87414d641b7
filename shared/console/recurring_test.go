package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"oncepost/shared/publishing"
	"oncepost/shared/recurring"
)

// The rules page lists each rule with its repeat rule in words and its
// next occurrences, linking those created to their posts; stopping needs
// the posts scope, and the page then says the rule is stopped.
func TestRecurringPage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	rec := h.console.cfg.API.Recurring
	start := time.Now().UTC().AddDate(0, 0, 1).Format("2006-01-02")
	v, err := rec.Create(context.Background(), recurring.Draft{ID: "tips", Body: "Tip <b>one</b>", Variants: []string{"Tip two"}, Accounts: []string{"news"},
		EveryDays: 1, At: "09:00", TimeZone: "Europe/Berlin", Start: start, Count: 5}, publishing.RuleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reader := h.signIn("read")
	p := reader.get("/recurring")
	if p.status != http.StatusOK {
		t.Fatalf("GET /recurring: %d %s", p.status, p.body)
	}
	for _, want := range []string{"tips", "every day at 09:00 (Europe/Berlin)", `href="/posts/` + string(v.Next[0].Post) + `"`, "Tip &lt;b&gt;one&lt;/b&gt;", "running"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(p.body, `action="/recurring/tips/stop"`) {
		t.Error("a read-only session is offered the stop button")
	}
	if a := reader.post("/recurring/tips/stop", url.Values{}); a.status != http.StatusForbidden {
		t.Errorf("stop with read only: %d", a.status)
	}
	writer := h.signIn("read,posts")
	if !strings.Contains(writer.get("/recurring").body, `action="/recurring/tips/stop"`) {
		t.Error("no stop button for a session with posts")
	}
	if a := writer.post("/recurring/tips/stop", url.Values{}); a.status != http.StatusSeeOther {
		t.Fatalf("stop: %d %s", a.status, a.body)
	}
	p = writer.get("/recurring")
	if !strings.Contains(p.body, "Rule tips stopped") || !strings.Contains(p.body, ">stopped<") {
		t.Errorf("after the stop: %.2000s", p.body)
	}
	if a := writer.post("/recurring/nope/stop", url.Values{}); a.status != http.StatusNotFound {
		t.Errorf("stop an unknown rule: %d", a.status)
	}
}

// A rule is added from the page; a refused one comes back with each error
// at its input and nothing written.
func TestRecurringAddFromThePage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	b := h.signIn("read,posts")
	if p := b.get("/recurring"); !strings.Contains(p.body, `action="/recurring"`) {
		t.Fatalf("no new-rule form: %.1500s", p.body)
	}
	start := time.Now().UTC().AddDate(0, 0, 1).Format("2006-01-02")
	bad := url.Values{"body": {"Daily tip"}, "account": {"news"}, "every_days": {"two"}, "at": {"09:00"}, "start": {start}}
	if p := b.post("/recurring", bad); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, `id="rule-every-err"`) || !strings.Contains(p.body, "Daily tip") {
		t.Errorf("every_days two: %d, want 422 with the error at its input and the form kept: %.2000s", p.status, p.body)
	}
	bad.Set("every_days", "")
	bad.Set("cron", "cron(0 25 * * ? *)")
	bad.Set("at", "")
	if p := b.post("/recurring", bad); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, `id="rule-cron-err"`) {
		t.Errorf("a bad cron: %d, want 422 at the cron input: %.2000s", p.status, p.body)
	}
	if rules, err := h.console.cfg.API.Recurring.List(context.Background()); err != nil || len(rules) != 0 {
		t.Fatalf("rules after refusals: %d, %v", len(rules), err)
	}
	good := url.Values{"id": {"tips"}, "body": {"Daily tip"}, "variants": {"Tip two\r\n---\r\nTip three"}, "account": {"news"},
		"every_days": {"1"}, "at": {"09:00"}, "time_zone": {"Europe/Berlin"}, "start": {start}, "count": {"3"}}
	if p := b.post("/recurring", good); p.status != http.StatusSeeOther {
		t.Fatalf("add a rule: %d %.2000s", p.status, p.body)
	}
	v, err := h.console.cfg.API.Recurring.Show(context.Background(), "tips")
	if err != nil {
		t.Fatal(err)
	}
	if v.Rule.Count != 3 || strings.Join(v.Rule.Variants, "|") != "Tip two|Tip three" || v.Rule.TimeZone != "Europe/Berlin" {
		t.Errorf("stored rule %+v", v.Rule)
	}
	if ro := h.signIn("read"); ro.post("/recurring", good).status != http.StatusForbidden {
		t.Error("a read-only session added a rule")
	}
}
