package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// Approval through the API, every answer checked against openapi.json:
// a post to an account that requires approval is created waiting, listed
// by GET /v1/approvals; its author cannot approve it when the workspace
// forbids that (403 self-approval); someone with decide can (200); a
// slot that passed needs "at" (422 naming at); reject needs a reason and
// cancels; GET /v1/status counts the approvals overdue.
func TestApprovalThroughTheAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	acc, err := h.store.GetAccount(ctx, "news")
	if err != nil {
		t.Fatal(err)
	}
	acc.RequireApproval = true
	if err := h.store.PutAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	if err := h.store.PutApprovalPolicy(ctx, publishing.ApprovalPolicy{NoSelfApproval: true}); err != nil {
		t.Fatal(err)
	}
	author, approver, reader := h.token("decide,posts"), h.token("decide"), h.token("read")

	a := h.do(request{method: "POST", path: "/v1/posts", body: draftJSON("waits", "Approve me.", time.Hour), token: author,
		header: map[string]string{"Idempotency-Key": "approval-1"}})
	var created post.Post
	if a.status != http.StatusCreated || json.Unmarshal(a.body, &created) != nil {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	if created.Targets[0].Status != post.NeedsApproval || created.Author == "" {
		t.Fatalf("created %+v, want needs_approval with its author", created)
	}
	// A post whose slot passed while it waited.
	passed := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	if err := h.store.CreatePost(ctx, post.Post{ID: "missed", Body: "Missed.", Author: "tok_someone", CreatedAt: passed,
		Targets: []post.Target{{Account: "news", Slot: passed, Status: post.NeedsApproval, UpdatedAt: passed}}}); err != nil {
		t.Fatal(err)
	}

	var q publishing.ApprovalQueue
	if a := h.do(request{method: "GET", path: "/v1/approvals", token: reader}); a.status != http.StatusOK || json.Unmarshal(a.body, &q) != nil {
		t.Fatalf("GET /v1/approvals: %d %s", a.status, a.body)
	}
	if len(q.Items) != 2 || q.Items[0].Post != "missed" || !q.Items[0].Overdue || q.Items[1].Post != "waits" || q.Overdue != 1 {
		t.Errorf("queue %+v, want missed (overdue) then waits", q)
	}
	if a := h.do(request{method: "GET", path: "/v1/approvals?limit=0", token: reader}); a.status != http.StatusBadRequest {
		t.Errorf("limit=0: %d, want 400", a.status)
	}
	var st statusView
	if a := h.do(request{method: "GET", path: "/v1/status", token: reader}); a.status != http.StatusOK || json.Unmarshal(a.body, &st) != nil || st.ApprovalOverdue != 1 {
		t.Errorf("status: %d approval_overdue %d (%s), want 1", a.status, st.ApprovalOverdue, a.body)
	}

	for _, tc := range []struct {
		name, path, body, token string
		status                  int
		typ, field              string
	}{
		{"a reader may not approve", "/v1/posts/waits/approve", ``, reader, 403, typeScopeMissing, ""},
		{"the author may not approve", "/v1/posts/waits/approve", ``, author, 403, typeSelfApproval, ""},
		{"the slot passed, no at", "/v1/posts/missed/approve", `{}`, approver, 422, typeValidation, "at"},
		{"an at in the past", "/v1/posts/missed/approve", `{"at": "2020-01-01T00:00:00Z"}`, approver, 422, typeValidation, "at"},
		{"an at without an offset", "/v1/posts/missed/approve", `{"at": "2199-01-01T00:00"}`, approver, 422, typeValidation, "at"},
		{"an unknown member", "/v1/posts/missed/approve", `{"when": "now"}`, approver, 400, typeInvalidRequest, "when"},
		{"an unknown post", "/v1/posts/nope/approve", ``, approver, 404, "about:blank", ""},
		{"reject without a reason", "/v1/posts/waits/reject", `{}`, approver, 422, typeValidation, "reason"},
		{"reject without a body", "/v1/posts/waits/reject", ``, approver, 400, typeInvalidRequest, ""},
	} {
		a := h.do(request{method: "POST", path: tc.path, body: []byte(tc.body), token: tc.token})
		p := a.problem(t)
		if a.status != tc.status || p.Type != tc.typ || (tc.field != "" && (len(p.Errors) == 0 || p.Errors[0].Field != tc.field)) {
			t.Errorf("%s: %d %+v, want %d %s naming %q", tc.name, a.status, p, tc.status, tc.typ, tc.field)
		}
	}
	if tg := h.target(t, "waits"); tg.Status != post.NeedsApproval {
		t.Fatalf("after the refusals: %s, want needs_approval", tg.Status)
	}

	var ans targetsAnswer
	if a := h.do(request{method: "POST", path: "/v1/posts/waits/approve", token: approver}); a.status != http.StatusOK || json.Unmarshal(a.body, &ans) != nil {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	if len(ans.Targets) != 1 || !ans.Targets[0].Done {
		t.Errorf("approve answered %+v", ans)
	}
	if tg := h.target(t, "waits"); tg.Status != post.Scheduled {
		t.Errorf("after the approval: %s, want scheduled", tg.Status)
	}
	if a := h.do(request{method: "POST", path: "/v1/posts/waits/approve", body: []byte(`{}`), token: approver}); a.status != http.StatusOK {
		t.Errorf("approve again: %d %s, want 200 (already approved)", a.status, a.body)
	}
	at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	if a := h.do(request{method: "POST", path: "/v1/posts/missed/approve", body: fmt.Appendf(nil, `{"at": %q}`, at.Format(time.RFC3339)), token: approver}); a.status != http.StatusOK {
		t.Errorf("approve with a new time: %d %s", a.status, a.body)
	}
	if tg := h.target(t, "missed"); tg.Status != post.Scheduled || !tg.Slot.Equal(at) {
		t.Errorf("missed after its approval: %s at %s, want scheduled at %s", tg.Status, tg.Slot, at)
	}

	if err := h.store.CreatePost(ctx, post.Post{ID: "no", Body: "No.", CreatedAt: passed,
		Targets: []post.Target{{Account: "news", Slot: at, Status: post.NeedsApproval, UpdatedAt: passed}}}); err != nil {
		t.Fatal(err)
	}
	if a := h.do(request{method: "POST", path: "/v1/posts/no/reject", body: []byte(`{"reason": "off brand"}`), token: approver}); a.status != http.StatusOK {
		t.Errorf("reject: %d %s", a.status, a.body)
	}
	if tg := h.target(t, "no"); tg.Status != post.Cancelled || tg.Reason == "" {
		t.Errorf("rejected: %s (%q), want cancelled with the reason", tg.Status, tg.Reason)
	}
	if a := h.do(request{method: "POST", path: "/v1/posts/waits/reject", body: []byte(`{"reason": "too late"}`), token: approver}); a.status != http.StatusConflict {
		t.Errorf("reject an approved post: %d %s, want 409", a.status, a.body)
	}
}

// target reads a post's first target from the harness's store.
func (h *harness) target(t testing.TB, id post.ID) post.Target {
	t.Helper()
	p, err := h.store.GetPost(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return p.Targets[0]
}
