package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The queue page shows an account's queued posts in its own zone, and
// its actions move them: to the top, and a shuffle with a seed. Compose
// with the queue box takes each account's next free slot.
func TestQueuePage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	seedQueue(t, h)
	b := h.signIn("read,posts")
	p := b.get("/accounts/news/queue")
	if p.status != http.StatusOK {
		t.Fatalf("GET queue: %d %.500s", p.status, p.body)
	}
	for _, want := range []string{"Europe/Berlin", "queued-1", "queued-2", "Next free slots", "CET"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("queue page lacks %q", want)
		}
	}
	if i, j := strings.Index(p.body, "queued-1"), strings.Index(p.body, "queued-2"); i > j {
		t.Errorf("queued-1 is not before queued-2")
	}
	// The post page shows the slot in the account's zone as well as the
	// viewer's (UTC here).
	if pp := b.get("/posts/queued-1"); !strings.Contains(pp.body, "Europe/Berlin") {
		t.Errorf("the post page does not show the account's zone: %.1500s", pp.body)
	}
	top := b.post("/accounts/news/queue/top", url.Values{"post": {"queued-2"}})
	if top.status != http.StatusSeeOther {
		t.Fatalf("move to top: %d %.300s", top.status, top.body)
	}
	p = b.get("/accounts/news/queue")
	if i, j := strings.Index(p.body, "queued-2"), strings.Index(p.body, "queued-1"); i > j || !strings.Contains(p.body, "posts moved") {
		t.Errorf("after moving queued-2 to the top: %.2000s", p.body)
	}
	if sh := b.post("/accounts/news/queue/shuffle", url.Values{"seed": {"x1"}}); sh.status != http.StatusSeeOther {
		t.Errorf("shuffle with a bad seed: %d", sh.status)
	} else if p := b.get("/accounts/news/queue"); !strings.Contains(p.body, "not a whole number") {
		t.Errorf("a bad seed is not said: %.1500s", p.body)
	}
	if sh := b.post("/accounts/news/queue/shuffle", url.Values{"seed": {"3"}}); sh.status != http.StatusSeeOther {
		t.Errorf("shuffle: %d", sh.status)
	}
	if r := b.get("/accounts/nobody/queue"); r.status != http.StatusNotFound {
		t.Errorf("the queue of an unknown account: %d", r.status)
	}
	// Read-only: no moves.
	ro := h.signIn("read")
	if r := ro.post("/accounts/news/queue/top", url.Values{"post": {"queued-1"}}); r.status != http.StatusForbidden {
		t.Errorf("move with read only: %d, want 403", r.status)
	}

	// Compose with the queue box: the post takes news's next free slot.
	show := b.get("/compose")
	form := url.Values{"key": {keyOf(t, show)}, "body": {"Queued from the console"}, "account": {"news"}, "queue": {"1"}, "action": {"schedule"}}
	if res := b.post("/compose", form); res.status != http.StatusSeeOther {
		t.Fatalf("compose queued: %d %.2000s", res.status, res.body)
	}
	var found bool
	for _, p := range h.allPosts() {
		if p.Body == "Queued from the console" {
			found = true
			if !p.Targets[0].Queued || p.Targets[0].Slot.IsZero() {
				t.Errorf("composed post's target %+v is not queued", p.Targets[0])
			}
		}
	}
	if !found {
		t.Error("the composed queued post was not stored")
	}
	form.Set("key", keyOf(t, b.get("/compose")))
	form.Set("at", "2030-01-01T09:00")
	if res := b.post("/compose", form); res.status == http.StatusSeeOther || !strings.Contains(res.body, "queue") {
		t.Errorf("compose with a time and the queue: %d, want the form again naming the conflict", res.status)
	}
}

// Compose writes a thread: each reply box a part, in order; a reply over
// the limit is shown at its box, and nothing is scheduled.
func TestComposeThread(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	b := h.signIn("read,posts")
	local, _ := composeTime(t)
	show := b.get("/compose")
	if !strings.Contains(show.body, `id="reply-0"`) {
		t.Fatalf("the composer has no reply box: %.1000s", show.body)
	}
	long := strings.Repeat("x", 501)
	form := url.Values{"key": {keyOf(t, show)}, "body": {"1/3 the start"}, "reply": {"2/3 the middle", long}, "account": {"news"}, "at": {local}, "action": {"schedule"}}
	res := b.post("/compose", form)
	if res.status == http.StatusSeeOther || !strings.Contains(res.body, `id="reply-1-err"`) || !strings.Contains(res.body, `id="reply-2"`) {
		t.Fatalf("a reply over the limit: %d, want the form with the error at reply 2 and a box for a third: %.3000s", res.status, res.body)
	}
	if n := len(h.allPosts()); n != 0 {
		t.Fatalf("%d posts stored after a refusal", n)
	}
	form.Set("key", keyOf(t, b.get("/compose")))
	form["reply"] = []string{"2/3 the middle", "", "3/3 the end"}
	if res := b.post("/compose", form); res.status != http.StatusSeeOther {
		t.Fatalf("compose a thread: %d %.2000s", res.status, res.body)
	}
	posts := h.allPosts()
	if len(posts) != 1 || strings.Join(posts[0].Thread, "|") != "2/3 the middle|3/3 the end" {
		t.Fatalf("stored %+v, want one post with the two replies in order", posts)
	}
}
