package console

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/httpapi"
	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// hold makes a held publish entry for a new post id to news, as the
// publisher's pre-publish dedup does: the post's target held, its entry
// held with the reason and the remote id found.
func (h *harness) hold(t *testing.T, id, reason, remoteID string) ledger.Key {
	t.Helper()
	ctx := context.Background()
	now := h.now()
	slot := now.Add(time.Hour).UTC().Truncate(time.Second)
	p := post.Post{ID: post.ID(id), Body: "a post that may be out already", CreatedAt: now,
		Targets: []post.Target{{Account: "news", Slot: slot, Status: post.Held, Reason: reason, UpdatedAt: now}}}
	if err := h.store.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	key := ledger.PublishKey("news", id, slot)
	e := ledger.NewEntry(key, ledger.Publish, "news", id, slot, "fp", "w1", now, time.Minute)
	if err := h.store.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	held, err := e.Hold(reason, remoteID, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.store.Update(ctx, e, held); err != nil {
		t.Fatal(err)
	}
	return key
}

func (h *harness) entryState(t *testing.T, key ledger.Key) ledger.Entry {
	t.Helper()
	e, err := h.store.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// The inbox shows a held entry's evidence (reason, the remote id found,
// attempts, the ledger's history) with every text escaped, and the
// decisions a decide token may take.
func TestInboxShowsHeldEvidence(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	key := h.hold(t, "dup", `found <script>alert("r")</script> on the account`, `<script>x</script>`)
	p := h.signIn("read,decide").get("/inbox")
	if p.status != http.StatusOK {
		t.Fatalf("GET /inbox: %d %.500s", p.status, p.body)
	}
	for _, want := range []string{
		string(key),
		"found &lt;script&gt;alert(&#34;r&#34;)&lt;/script&gt; on the account", // the reason, escaped
		"<code>&lt;script&gt;x&lt;/script&gt;</code>",                          // the remote id found, escaped
		"1, of which 0 may have reached the platform",
		"What the ledger recorded",
		`<td>(new)</td><td>pending</td>`, `<td>pending</td><td>held</td>`, // the history's moves
		`action="/inbox/held/` + string(key) + `/approve"`,
		`action="/inbox/held/` + string(key) + `/confirm"`,
		`action="/inbox/held/` + string(key) + `/reject"`,
		`<label for="remote-0">`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the inbox lacks %q", want)
		}
	}
	if strings.Contains(p.body, "<script>x") || strings.Contains(p.body, `<script>alert`) {
		t.Error("a reason or remote id is rendered as markup")
	}
	if strings.Contains(p.body, "disabled") {
		t.Error("a decide token sees disabled buttons")
	}
}

// Approving, confirming and rejecting from the inbox's forms call the
// API's decider: the entry leaves held, and the page says what was done.
func TestInboxDecides(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	b := h.signIn("read,decide")
	approve, confirm, reject := h.hold(t, "a", "duplicate?", "111"), h.hold(t, "c", "duplicate?", "112"), h.hold(t, "r", "duplicate?", "")
	for _, tc := range []struct {
		name      string
		path      string
		form      url.Values
		key       ledger.Key
		wantState ledger.State
		wantFlash string
	}{
		{"confirm without a remote id", "/inbox/held/" + string(confirm) + "/confirm", url.Values{"remote_id": {" "}}, confirm, ledger.Held, "Remote id: is missing"},
		{"confirm with a remote id over the limit", "/inbox/held/" + string(confirm) + "/confirm", url.Values{"remote_id": {strings.Repeat("9", publishing.MaxIDBytes+1)}},
			confirm, ledger.Held, fmt.Sprintf("Remote id: is over %d bytes. Give the id", publishing.MaxIDBytes)},
		{"reject with a reason over the limit", "/inbox/held/" + string(reject) + "/reject", url.Values{"reason": {strings.Repeat("é", publishing.MaxDecisionReasonBytes/2+1)}},
			reject, ledger.Held, fmt.Sprintf("Reason: is over %d bytes. Say it shorter.", publishing.MaxDecisionReasonBytes)},
		{"approve", "/inbox/held/" + string(approve) + "/approve", url.Values{}, approve, ledger.Released, "Approved " + string(approve)},
		{"confirm", "/inbox/held/" + string(confirm) + "/confirm", url.Values{"remote_id": {"112"}}, confirm, ledger.Confirmed, "Confirmed " + string(confirm)},
		{"reject", "/inbox/held/" + string(reject) + "/reject", url.Values{"reason": {"posted by hand"}}, reject, ledger.Failed, "Rejected " + string(reject)},
		{"approve after reject", "/inbox/held/" + string(reject) + "/approve", url.Values{}, reject, ledger.Failed, "Nothing done on " + string(reject)},
		{"unknown key", "/inbox/held/nokey/approve", url.Values{}, reject, ledger.Failed, "No ledger entry nokey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := b.post(tc.path, tc.form)
			if a.status != http.StatusSeeOther || a.header.Get("Location") != "/inbox#held" {
				t.Fatalf("POST %s: %d %s, want 303 to /inbox#held", tc.path, a.status, a.header.Get("Location"))
			}
			if got := h.entryState(t, tc.key).State; got != tc.wantState {
				t.Errorf("entry %s: %s, want %s", tc.key, got, tc.wantState)
			}
			if p := b.get("/inbox"); !strings.Contains(p.body, tc.wantFlash) {
				t.Errorf("the page after lacks the flash %q: %.2000s", tc.wantFlash, p.body)
			}
		})
	}
	if e := h.entryState(t, confirm); e.RemoteID != "112" {
		t.Errorf("confirmed entry's remote id %q, want 112", e.RemoteID)
	}
}

// A token without the decide scope sees the decisions disabled, with
// why, and a decision posted anyway is refused with 403 and changes
// nothing.
func TestInboxDecideNeedsScope(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	key := h.hold(t, "dup", "duplicate?", "111")
	for _, scopes := range []string{"read", "read,posts"} {
		t.Run(scopes, func(t *testing.T) {
			b := h.signIn(scopes)
			p := b.get("/inbox")
			if !strings.Contains(p.body, `id="decide-note"`) || !strings.Contains(p.body, `disabled aria-describedby="decide-note">Approve`) {
				t.Errorf("the inbox for %s lacks the disabled approve and its note: %.3000s", scopes, p.body)
			}
			for _, action := range []string{"approve", "confirm", "reject"} {
				a := b.post("/inbox/held/"+string(key)+"/"+action, url.Values{"remote_id": {"111"}})
				if a.status != http.StatusForbidden || !strings.Contains(a.body, "decide") {
					t.Errorf("%s with %s: %d, want 403 naming the decide scope", action, scopes, a.status)
				}
			}
			if e := h.entryState(t, key); e.State != ledger.Held || e.Decision != "" {
				t.Errorf("after refused decisions the entry is %s (decision %q), want held, undecided", e.State, e.Decision)
			}
		})
	}
}

// Dead letters are listed, redriven and dropped with the operate scope,
// and refused without it.
func TestInboxDeadLetters(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	for _, body := range []string{`{"post_id": "p<b>", "account_id": "news", "slot": "2199-01-01T00:00:00Z"}`, "not a <job>"} {
		if _, err := h.queue.Send(ctx, []byte(body), 0); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := h.queue.Receive(ctx, 10, time.Minute)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("receive: %d %v", len(msgs), err)
	}
	for _, m := range msgs {
		if err := h.queue.DeadLetter(ctx, m.Receipt, "gave up: <em>5</em> receives"); err != nil {
			t.Fatal(err)
		}
	}
	dls, err := h.queue.DeadLetters(ctx, 0)
	if err != nil || len(dls) != 2 {
		t.Fatalf("dead letters: %d, %v; want 2", len(dls), err)
	}
	reader := h.signIn("read")
	p := reader.get("/inbox")
	for _, want := range []string{"Dead letters (2)", "gave up: &lt;em&gt;5&lt;/em&gt; receives", "<code>p&lt;b&gt;</code> to news", "not a &lt;job&gt;", `id="operate-note"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the inbox lacks %q", want)
		}
	}
	if a := reader.post("/inbox/dead-letters/"+dls[0].ID+"/drop", url.Values{}); a.status != http.StatusForbidden {
		t.Errorf("drop with read: %d, want 403", a.status)
	}
	op := h.signIn("read,operate")
	if a := op.post("/inbox/dead-letters/"+dls[0].ID+"/redrive", url.Values{}); a.status != http.StatusSeeOther {
		t.Errorf("redrive: %d", a.status)
	}
	if a := op.post("/inbox/dead-letters/"+dls[1].ID+"/drop", url.Values{}); a.status != http.StatusSeeOther {
		t.Errorf("drop: %d", a.status)
	}
	if p := op.get("/inbox"); !strings.Contains(p.body, "Dropped dead letter "+dls[1].ID) || !strings.Contains(p.body, "Dead letters (0)") {
		t.Errorf("after redrive and drop: %.3000s", p.body)
	}
	if a := op.post("/inbox/dead-letters/"+dls[1].ID+"/drop", url.Values{}); a.status != http.StatusSeeOther {
		t.Errorf("drop again: %d", a.status)
	}
	if p := op.get("/inbox"); !strings.Contains(p.body, "No dead letter "+dls[1].ID) {
		t.Errorf("drop again: no flash saying it is gone")
	}
}

// The failed targets are listed with their reasons, a page at a time.
func TestInboxFailedTargets(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	now := h.now()
	for i := range inboxFailedLimit + 1 {
		id := post.ID(fmt.Sprintf("f%02d", i))
		slot := now.Add(time.Duration(i) * time.Minute).UTC().Truncate(time.Second)
		p := post.Post{ID: id, Body: "failed <i>post</i>", CreatedAt: now,
			Targets: []post.Target{{Account: "news", Slot: slot, Status: post.Failed, Reason: "refused: <b>422</b>", UpdatedAt: now}}}
		if err := h.store.CreatePost(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	b := h.signIn("read")
	p := b.get("/inbox")
	if got := strings.Count(p.body, "refused: &lt;b&gt;422&lt;/b&gt;"); got != inboxFailedLimit {
		t.Errorf("first page: %d failed targets, want %d", got, inboxFailedLimit)
	}
	m := regexp.MustCompile(`href="/inbox\?failed_after=([^"#]+)#failed"`).FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no next page link: %.3000s", p.body)
	}
	p = b.get("/inbox?failed_after=" + html.UnescapeString(m[1]))
	if got := strings.Count(p.body, "refused: &lt;b&gt;422&lt;/b&gt;"); got != 1 {
		t.Errorf("second page: %d failed targets, want 1", got)
	}
	if diff := cmp.Diff(1, strings.Count(b.get("/inbox?failed_after=nonsense").body, "not a position in this list")); diff != "" {
		t.Errorf("a bad cursor is not said (-want +got):\n%s", diff)
	}
}

// showCounter counts the Desk's Show calls.
type showCounter struct {
	httpapi.Desk
	n atomic.Int64
}

func (d *showCounter) Show(ctx context.Context, id post.ID) (publishing.PostView, error) {
	d.n.Add(1)
	return d.Desk.Show(ctx, id)
}

// getCounter counts GetPost calls.
type getCounter struct {
	PostReader
	n atomic.Int64
}

func (r *getCounter) GetPost(ctx context.Context, id post.ID) (post.Post, error) {
	r.n.Add(1)
	return r.PostReader.GetPost(ctx, id)
}

// The inbox shows each held post's text from one read of the post
// (Config.Posts), not Desk.Show (which reads its ledger entries and
// their history too); without that port, through Show.
func TestInboxReadsPostTextsAlone(t *testing.T) {
	for _, tc := range []struct {
		name               string
		withPosts          bool
		wantGets, wantShow int64
	}{
		{"with Posts", true, 3, 0},
		{"without Posts", false, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shows, gets := &showCounter{}, &getCounter{}
			h := newHarness(t, harnessOptions{config: func(c *Config) {
				shows.Desk, c.API.Desk = c.API.Desk, shows
				gets.PostReader, c.Posts = c.Posts, gets
				if !tc.withPosts {
					c.Posts = nil
				}
			}})
			for _, id := range []string{"h1", "h2", "h3"} {
				h.hold(t, id, "duplicate?", "")
			}
			p := h.signIn("read,decide").get("/inbox")
			if p.status != http.StatusOK || strings.Count(p.body, "a post that may be out already") != 3 {
				t.Fatalf("GET /inbox: %d, the held posts' text %d times, want 3: %.1000s", p.status, strings.Count(p.body, "a post that may be out already"), p.body)
			}
			if g, s := gets.n.Load(), shows.n.Load(); g != tc.wantGets || s != tc.wantShow {
				t.Errorf("GetPost %d times, Show %d times; want %d and %d", g, s, tc.wantGets, tc.wantShow)
			}
		})
	}
}
