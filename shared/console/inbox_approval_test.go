package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// waiting stores a post waiting for approval on news at slot.
func (h *harness) waiting(t *testing.T, id, author string, slot time.Time) {
	t.Helper()
	now := h.now()
	p := post.Post{ID: post.ID(id), Body: "<b>text</b> of " + id, Author: author, CreatedAt: now,
		Targets: []post.Target{{Account: "news", Slot: slot.UTC(), Status: post.NeedsApproval, UpdatedAt: now}}}
	if err := h.store.CreatePost(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) targetOf(t *testing.T, id string) post.Target {
	t.Helper()
	p, err := h.store.GetPost(context.Background(), post.ID(id))
	if err != nil {
		t.Fatal(err)
	}
	return p.Targets[0]
}

// The inbox lists the posts waiting for approval (text escaped) with
// Approve and Reject; a post whose slot passed gets a new-time input
// instead of a plain approve, and its approval without one is refused
// and sends nothing; approving and rejecting from the forms move the
// targets through Desk.Approve and Desk.Reject.
func TestInboxApprovals(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	now := h.now()
	ahead, passed := now.Add(2*time.Hour).Truncate(time.Minute), now.Add(-90*time.Second)
	h.waiting(t, "ahead", "tok_alice", ahead)
	h.waiting(t, "missed", "tok_alice", passed)
	h.waiting(t, "nope", "tok_alice", ahead.Add(time.Hour))
	b := h.signIn("read,decide")
	p := b.get("/inbox")
	if p.status != http.StatusOK {
		t.Fatalf("GET /inbox: %d", p.status)
	}
	for _, want := range []string{
		`Waiting for approval (3)`,
		`&lt;b&gt;text&lt;/b&gt; of ahead`,
		`action="/inbox/approvals/ahead/approve"`, `action="/inbox/approvals/ahead/reject"`,
		`action="/inbox/approvals/missed/approve"`, `<label for="approve-at-0">The slot passed`, `name="at" type="datetime-local"`,
		`1 passed their time while they waited`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the inbox lacks %q", want)
		}
	}
	if strings.Contains(p.body, "<b>text") {
		t.Error("a post's text is rendered as markup")
	}

	for _, tc := range []struct {
		name, path string
		form       url.Values
		id         string
		want       post.TargetStatus
		wantSlot   time.Time
		flash      string
	}{
		{"the slot passed, no new time", "/inbox/approvals/missed/approve", url.Values{"account": {"news"}}, "missed", post.NeedsApproval, passed,
			"at: the slot passed while the post waited for approval"},
		{"a new time that is not one", "/inbox/approvals/missed/approve", url.Values{"account": {"news"}, "at": {"soon"}}, "missed", post.NeedsApproval, passed,
			"is not a date and time"},
		{"a new time", "/inbox/approvals/missed/approve", url.Values{"account": {"news"}, "at": {ahead.In(berlin(t)).Format(datetimeLocal)}}, "missed", post.Scheduled, ahead,
			"news done — approved; scheduled for " + ahead.UTC().Format(time.RFC3339)},
		{"approve at its slot", "/inbox/approvals/ahead/approve", url.Values{"account": {"news"}}, "ahead", post.Scheduled, ahead, "news done — approved"},
		{"reject without a reason", "/inbox/approvals/nope/reject", url.Values{"account": {"news"}}, "nope", post.NeedsApproval, ahead.Add(time.Hour), "reason: is missing"},
		{"reject", "/inbox/approvals/nope/reject", url.Values{"account": {"news"}, "reason": {"off brand"}}, "nope", post.Cancelled, ahead.Add(time.Hour), "news done — rejected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := b.post(tc.path, tc.form)
			if a.status != http.StatusSeeOther || a.header.Get("Location") != "/inbox#approvals" {
				t.Fatalf("POST %s: %d %s, want 303 to /inbox#approvals", tc.path, a.status, a.header.Get("Location"))
			}
			if tg := h.targetOf(t, tc.id); tg.Status != tc.want || !tg.Slot.Equal(tc.wantSlot.UTC()) {
				t.Errorf("%s: %s at %s, want %s at %s", tc.id, tg.Status, tg.Slot, tc.want, tc.wantSlot.UTC())
			}
			if p := b.get("/inbox"); !strings.Contains(p.body, tc.flash) {
				t.Errorf("the page after lacks the flash %q: %.3000s", tc.flash, p.body)
			}
		})
	}
	if p := b.get("/inbox"); !strings.Contains(p.body, "No post waits for approval.") {
		t.Error("the inbox still lists posts waiting for approval")
	}
}

// The author is refused where the workspace forbids self-approval, and a
// token without decide sees the buttons disabled and is refused 403.
func TestInboxApprovalRefusals(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	if err := h.store.PutApprovalPolicy(context.Background(), publishing.ApprovalPolicy{NoSelfApproval: true}); err != nil {
		t.Fatal(err)
	}
	reader := h.signIn("read")
	author := h.signIn("read,decide")
	authorID := h.tokenIDOf(t, "read,decide")
	h.waiting(t, "mine", authorID, h.now().Add(time.Hour))
	if p := reader.get("/inbox"); !strings.Contains(p.body, `id="approve-note"`) || !strings.Contains(p.body, `disabled aria-describedby="approve-note"`) {
		t.Error("a read token's inbox does not disable the approval buttons")
	}
	if a := reader.post("/inbox/approvals/mine/approve", url.Values{"account": {"news"}}); a.status != http.StatusForbidden {
		t.Errorf("approve with a read token: %d, want 403", a.status)
	}
	if p := author.get("/inbox"); !strings.Contains(p.body, "(you)") {
		t.Error("the inbox does not say the viewer added the post")
	}
	author.post("/inbox/approvals/mine/approve", url.Values{"account": {"news"}})
	if p := author.get("/inbox"); !strings.Contains(p.body, "the workspace does not let authors approve their own posts") {
		t.Errorf("the author's approval is not refused: %.2000s", p.body)
	}
	if tg := h.targetOf(t, "mine"); tg.Status != post.NeedsApproval {
		t.Errorf("after the refused approval: %s, want needs_approval", tg.Status)
	}
}

// tokenIDOf is the id of the one token with exactly the scopes.
func (h *harness) tokenIDOf(t *testing.T, scopes string) string {
	t.Helper()
	toks, err := h.store.ListTokens(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	id := ""
	for _, tok := range toks {
		var names []string
		for _, s := range tok.Scopes {
			names = append(names, string(s))
		}
		if strings.Join(names, ",") == scopes {
			if id != "" {
				t.Fatalf("two tokens with scopes %s", scopes)
			}
			id = tok.ID
		}
	}
	if id == "" {
		t.Fatalf("no token with scopes %s", scopes)
	}
	return id
}

func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// seedApprovals stores two posts waiting for approval, one whose slot
// passed, for the pages' checks and screenshots.
func seedApprovals(t *testing.T, h *harness, now time.Time) {
	t.Helper()
	h.waiting(t, "approve-me", "tok_alice", now.Add(3*time.Hour).Truncate(time.Minute))
	h.waiting(t, "approve-late", "tok_bob", now.Add(-20*time.Minute).Truncate(time.Minute))
}
