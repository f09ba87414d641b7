package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"oncepost/shared/post"
)

// /v1/recurring end to end on the harness (every request and answer
// checked against openapi.json): a rule repeating a text to an X account
// is refused with 422 naming the field and the account, and nothing is
// written; with a variant it is created (201, Location) with its first
// occurrences, replayed under its Idempotency-Key, listed, read, edited
// (a new revision, the old occurrences cancelled), and stopped.
func TestRecurringRules(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	if err := h.store.PutAccount(ctx, post.Account{ID: "x-news", Platform: "x", Handle: "@xnews", BaseURL: "https://api.x.com", Gate: post.GateAuto}); err != nil {
		t.Fatal(err)
	}
	writer, reader := h.token("posts"), h.token("read")
	start := time.Now().UTC().AddDate(0, 0, 1).Format("2006-01-02")
	same := `{"id": "tips", "body": "Same text", "accounts": ["news", "x-news"], "every_days": 1, "at": "09:00", "start": "` + start + `", "count": 10}`

	a := h.do(request{method: "POST", path: "/v1/recurring", body: []byte(same), token: writer})
	p := a.problem(t)
	if a.status != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Field != "variants" || !strings.Contains(p.Errors[0].Problem, "x-news") {
		t.Fatalf("the same text daily to X: %d %s", a.status, a.body)
	}
	if rules, _ := h.store.ListRules(ctx); len(rules) != 0 || h.posts() != 0 {
		t.Fatalf("the refused rule wrote %d rules and %d posts", len(rules), h.posts())
	}

	body := []byte(strings.Replace(same, `"body": "Same text"`, `"body": "Same text", "variants": ["Other text"]`, 1))
	keyed := map[string]string{"Idempotency-Key": "rule-1"}
	a = h.do(request{method: "POST", path: "/v1/recurring", body: body, token: writer, header: keyed})
	var created ruleAnswer
	if err := json.Unmarshal(a.body, &created); a.status != http.StatusCreated || err != nil {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	if a.header.Get("Location") != "/v1/recurring/tips" || created.State != ruleRunning || created.Revision != 1 || len(created.Next) == 0 || !created.Next[0].Created {
		t.Errorf("created: Location %q, %+v", a.header.Get("Location"), created)
	}
	firstPost := created.Next[0].Post
	again := h.do(request{method: "POST", path: "/v1/recurring", body: body, token: writer, header: keyed})
	if again.status != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retried create: %d %v %s", again.status, again.header, again.body)
	}
	other := h.do(request{method: "POST", path: "/v1/recurring", body: []byte(strings.Replace(string(body), "Other text", "Third text", 1)), token: writer, header: keyed})
	if other.status != http.StatusUnprocessableEntity || other.problem(t).Type != typeKeyReused {
		t.Errorf("the key with another body: %d %s", other.status, other.body)
	}
	if a := h.do(request{method: "POST", path: "/v1/recurring", body: body, token: writer}); a.status != http.StatusUnprocessableEntity || a.problem(t).Errors[0].Field != "id" {
		t.Errorf("the id again without a key: %d %s", a.status, a.body)
	}
	if a := h.do(request{method: "POST", path: "/v1/recurring", body: body, token: reader}); a.status != http.StatusForbidden {
		t.Errorf("create with read only: %d", a.status)
	}

	var list struct {
		Rules []ruleAnswer `json:"rules"`
	}
	if a := h.do(request{method: "GET", path: "/v1/recurring", token: reader}); a.status != http.StatusOK || json.Unmarshal(a.body, &list) != nil || len(list.Rules) != 1 {
		t.Errorf("list: %d %s", a.status, a.body)
	}
	if a := h.do(request{method: "GET", path: "/v1/recurring/tips", token: reader}); a.status != http.StatusOK || !strings.Contains(string(a.body), `"targets"`) {
		t.Errorf("get: %d %s", a.status, a.body)
	}
	if a := h.do(request{method: "GET", path: "/v1/recurring/nope", token: reader}); a.status != http.StatusNotFound {
		t.Errorf("get unknown: %d %s", a.status, a.body)
	}

	patch := []byte(`{"body": "Same text, revised", "at": "10:30"}`)
	a = h.do(request{method: "PATCH", path: "/v1/recurring/tips", body: patch, token: writer, header: map[string]string{"Content-Type": "application/merge-patch+json"}})
	var edited ruleAnswer
	if err := json.Unmarshal(a.body, &edited); a.status != http.StatusOK || err != nil || edited.Revision != 2 || edited.At != "10:30" || edited.Body != "Same text, revised" {
		t.Fatalf("edit: %d %s", a.status, a.body)
	}
	if p, err := h.store.GetPost(ctx, firstPost); err != nil || p.Targets[0].Status != post.Cancelled {
		t.Errorf("revision 1's first occurrence after the edit: %v %v", p.Targets, err)
	}
	if a := h.do(request{method: "PATCH", path: "/v1/recurring/tips", body: []byte(`{"every_days": 0}`), token: writer}); a.status != http.StatusUnprocessableEntity {
		t.Errorf("a bad edit: %d %s", a.status, a.body)
	}
	if a := h.do(request{method: "PATCH", path: "/v1/recurring/tips", body: []byte(`{"colour": "red"}`), token: writer}); a.status != http.StatusBadRequest {
		t.Errorf("an unknown field: %d %s", a.status, a.body)
	}

	a = h.do(request{method: "POST", path: "/v1/recurring/tips/stop", token: writer})
	var stopped ruleAnswer
	if err := json.Unmarshal(a.body, &stopped); a.status != http.StatusOK || err != nil || stopped.State != ruleStopped || len(stopped.Next) != 0 {
		t.Errorf("stop: %d %s", a.status, a.body)
	}
	if a := h.do(request{method: "PATCH", path: "/v1/recurring/tips", body: patch, token: writer}); a.status != http.StatusConflict {
		t.Errorf("edit a stopped rule: %d %s", a.status, a.body)
	}
}
