package console

import (
	"context"
	"strings"
	"testing"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
)

// The post page shows a thread's replies and, per target, each part's
// ledger state and remote id.
func TestPostPageShowsAThread(t *testing.T) {
	t.Parallel()
	h := newCalendarHarness(t)
	ctx := context.Background()
	slot := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	p := post.Post{ID: "th", Body: "1/3 starts", Thread: []string{"2/3 <b>goes</b> on", "3/3 ends"}, CreatedAt: calendarNow,
		Targets: []post.Target{{Account: "news", Slot: slot, Status: post.Publishing, UpdatedAt: calendarNow}}}
	if err := h.store.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	for k, remote := range map[int]string{1: "111", 2: ""} {
		e := ledger.NewEntry(ledger.PartKey("news", "th", k, slot), ledger.Publish, "news", ledger.PartSubject("th", k), slot, "fp", "w", calendarNow, time.Minute)
		if err := h.store.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		next, err := e.MarkUnknown("ambiguous: lost", calendarNow)
		if remote != "" {
			next, err = e.Confirm(remote, calendarNow)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := h.store.Update(ctx, e, next); err != nil {
			t.Fatal(err)
		}
	}
	page := h.signIn("read").get("/posts/th").body
	for _, want := range []string{
		`<ol start="2"><li><div class="post-body">2/3 &lt;b&gt;goes&lt;/b&gt; on</div></li><li><div class="post-body">3/3 ends</div></li></ol>`,
		`<caption>Parts on news</caption>`,
		`<tr><th scope="row">1</th><td>confirmed</td><td><code>111</code></td><td></td></tr>`,
		`<tr><th scope="row">2</th><td>unknown</td><td>—</td><td>ambiguous: lost</td></tr>`,
		`<tr><th scope="row">3</th><td>not sent</td><td>—</td><td></td></tr>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the post page has no %s", want)
		}
	}
	if strings.Contains(h.signIn("read").get("/posts/th").body, "<b>goes</b>") {
		t.Error("a reply's text is rendered as HTML")
	}
}
