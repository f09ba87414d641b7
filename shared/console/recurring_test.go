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
