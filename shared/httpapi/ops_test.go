package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

func pngBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 4, 3))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// POST /v1/media: stored under its SHA-256 when the declared type is
// what the bytes are and the image is whole; then a draft names it by
// ref, and the use case gets its size.
func TestMediaUpload(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	tok := h.token("posts")
	img := pngBytes(t)
	upload := func(ctype string, body []byte) answer {
		return h.do(request{method: "POST", path: "/v1/media", body: body, token: tok, header: map[string]string{"Content-Type": ctype}})
	}
	for _, tt := range []struct {
		name, ctype string
		body        []byte
		status      int
	}{
		{"declared jpeg, bytes png", "image/jpeg", img, http.StatusUnsupportedMediaType},
		{"a type not taken", "application/pdf", []byte("%PDF-1.7"), http.StatusUnsupportedMediaType},
		{"cut short", "image/png", img[:len(img)-12], http.StatusUnprocessableEntity},
		{"empty", "image/png", []byte{}, http.StatusUnprocessableEntity},
	} {
		a := upload(tt.ctype, tt.body)
		if a.problem(t); a.status != tt.status {
			t.Errorf("%s: %d %s, want %d", tt.name, a.status, a.body, tt.status)
		}
	}
	if h.media.Len() != 0 {
		t.Fatalf("refused uploads stored %d files", h.media.Len())
	}
	a := upload("image/png", img)
	var m mediaAnswer
	if err := json.Unmarshal(a.body, &m); a.status != http.StatusCreated || err != nil || m.Ref != m.SHA256+".png" || m.Size != len(img) || !bytes.Equal(h.media.Get(m.Ref), img) {
		t.Fatalf("upload: %d %s", a.status, a.body)
	}
	draft := `{"id": "with-media", "body": "x", "media": [{"ref": "` + m.Ref + `", "sha256": "` + m.SHA256 + `", "content_type": "image/png", "alt": "a grey square"}],
		"targets": [{"account": "news", "at": "2199-01-01T00:00:00Z"}]}`
	if a := h.do(request{method: "POST", path: "/v1/posts", body: []byte(draft), token: tok, header: map[string]string{"Idempotency-Key": "m1"}}); a.status != http.StatusCreated {
		t.Fatalf("create with media: %d %s", a.status, a.body)
	}
	tooBig := strings.Replace(draft, `"with-media"`, `"too-big"`, 1)
	h.store.PutAccount(context.Background(), post.Account{ID: "news", Platform: "mastodon", Handle: "@news@example.social", BaseURL: "https://example.social",
		Gate: post.GateAuto, Limits: post.Limits{MaxTextGraphemes: 500, MaxMedia: 4, MaxMediaBytes: int64(len(img) - 1)}})
	a = h.do(request{method: "POST", path: "/v1/posts", body: []byte(tooBig), token: tok, header: map[string]string{"Idempotency-Key": "m2"}})
	if p := a.problem(t); a.status != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Field != "media[0]" {
		t.Errorf("an upload over the account's limit: %d %+v, want 422 naming media[0] (the use case measured the stored file)", a.status, p)
	}
}

// Held entries are listed and decided; a decision on an entry decided
// otherwise is 409, on an unknown key 404.
func TestHeldAndDecisions(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	tok, reader := h.token("decide"), h.token("read")
	slot := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	p := post.Post{ID: "dup", Body: "x", CreatedAt: time.Now(), Targets: []post.Target{{Account: "news", Slot: slot, Status: post.Held, UpdatedAt: time.Now()}}}
	if err := h.store.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	key := ledger.PublishKey("news", "dup", slot)
	e := ledger.NewEntry(key, ledger.Publish, "news", "dup", slot, "fp", "w1", time.Now(), time.Minute)
	if err := h.store.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	held, err := e.Hold("duplicate on the account", "113", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.store.Update(ctx, e, held); err != nil {
		t.Fatal(err)
	}
	a := h.do(request{method: "GET", path: "/v1/held", token: reader})
	if a.status != http.StatusOK || !strings.Contains(string(a.body), string(key)) {
		t.Fatalf("GET /v1/held: %d %s", a.status, a.body)
	}
	if a := h.do(request{method: "POST", path: "/v1/held/" + string(key) + "/confirm", body: []byte(`{}`), token: tok}); a.status != http.StatusUnprocessableEntity {
		t.Errorf("confirm without remote_id: %d %s", a.status, a.body)
	}
	// The use case's limits (publishing.Decision.Validate), as problems
	// naming the field; the entry stays held.
	for _, tc := range []struct{ action, body, field, problem string }{
		{"confirm", `{}`, "remote_id", "is missing"},
		{"confirm", `{"remote_id": "` + strings.Repeat("9", publishing.MaxIDBytes+1) + `"}`, "remote_id", "is over 256 bytes"},
		{"reject", `{"reason": "` + strings.Repeat("x", publishing.MaxDecisionReasonBytes+1) + `"}`, "reason", "is over 500 bytes"},
	} {
		a := h.do(request{method: "POST", path: "/v1/held/" + string(key) + "/" + tc.action, body: []byte(tc.body), token: tok})
		want := []FieldProblem{{Field: tc.field, Problem: tc.problem}}
		if p := a.problem(t); a.status != http.StatusUnprocessableEntity || !cmp.Equal(p.Errors, want, cmpopts.IgnoreFields(FieldProblem{}, "Fix")) {
			t.Errorf("%s %.40s: %d %+v, want 422 with %+v", tc.action, tc.body, a.status, p.Errors, want)
		}
	}
	a = h.do(request{method: "POST", path: "/v1/held/" + string(key) + "/reject", body: []byte(`{"reason": "posted by hand"}`), token: tok})
	var d decisionAnswer
	if err := json.Unmarshal(a.body, &d); a.status != http.StatusOK || err != nil || d.State != ledger.Failed {
		t.Fatalf("reject: %d %s", a.status, a.body)
	}
	if a := h.do(request{method: "POST", path: "/v1/held/" + string(key) + "/approve", token: tok}); a.status != http.StatusConflict {
		t.Errorf("approve after reject: %d %s, want 409", a.status, a.body)
	}
	if a := h.do(request{method: "POST", path: "/v1/held/" + string(key) + "/reject", token: tok}); a.status != http.StatusOK {
		t.Errorf("reject again: %d %s, want 200 (already decided)", a.status, a.body)
	}
	if a := h.do(request{method: "POST", path: "/v1/held/nokey/approve", token: tok}); a.status != http.StatusNotFound {
		t.Errorf("unknown key: %d %s", a.status, a.body)
	}
}

// Dead letters are listed, redriven (once) and dropped.
func TestDeadLetters(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	tok, reader := h.token("operate"), h.token("read")
	q := h.store.Queue("publish", 5)
	for _, body := range []string{`{"post_id": "p", "account_id": "news", "slot": "2199-01-01T00:00:00Z"}`, "not a job"} {
		if _, err := q.Send(ctx, []byte(body), 0); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := q.Receive(ctx, 10, time.Minute)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("receive: %d %v", len(msgs), err)
	}
	for _, m := range msgs {
		if err := q.DeadLetter(ctx, m.Receipt, "test"); err != nil {
			t.Fatal(err)
		}
	}
	a := h.do(request{method: "GET", path: "/v1/dead-letters", token: reader})
	var list struct {
		DeadLetters []deadLetterView `json:"dead_letters"`
	}
	if err := json.Unmarshal(a.body, &list); err != nil || len(list.DeadLetters) != 2 || list.DeadLetters[0].Job == nil || list.DeadLetters[1].Body != "not a job" {
		t.Fatalf("GET /v1/dead-letters: %d %s", a.status, a.body)
	}
	id0, id1 := list.DeadLetters[0].ID, list.DeadLetters[1].ID
	for _, tt := range []struct {
		method, path string
		status       int
	}{
		{"POST", "/v1/dead-letters/" + id0 + "/redrive", http.StatusNoContent},
		{"POST", "/v1/dead-letters/" + id0 + "/redrive", http.StatusNotFound},
		{"DELETE", "/v1/dead-letters/" + id1, http.StatusNoContent},
		{"DELETE", "/v1/dead-letters/" + id1, http.StatusNotFound},
	} {
		if a := h.do(request{method: tt.method, path: tt.path, token: tok}); a.status != tt.status {
			t.Errorf("%s %s: %d %s, want %d", tt.method, tt.path, a.status, a.body, tt.status)
		}
	}
}

// Accounts with their health, platforms and status answer as the
// document says.
func TestReadOnlyResources(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	tok := h.token("read")
	a := h.do(request{method: "GET", path: "/v1/accounts", token: tok})
	var accounts struct {
		Accounts []accountView `json:"accounts"`
	}
	if err := json.Unmarshal(a.body, &accounts); err != nil || len(accounts.Accounts) != 2 {
		t.Fatalf("accounts: %d %s", a.status, a.body)
	}
	for _, v := range accounts.Accounts {
		if v.ReconnectNeeded != (v.ID == "gone") || (v.ID == "gone") != (v.Status == "reconnect_needed") || len(v.Pacing) == 0 || v.Pacing[0].Left == nil {
			t.Errorf("account %s: %+v", v.ID, v)
		}
	}
	// A send taken from news's budget shows.
	news := accounts.Accounts[1]
	if news.ID != "news" {
		t.Fatalf("accounts not by id: %v", accounts.Accounts)
	}
	before := *news.Pacing[0].Left
	rates := []platform.Rate{{Count: news.Pacing[0].Count, Per: time.Duration(news.Pacing[0].PerSeconds) * time.Second}}
	if wait, err := h.store.Pace(context.Background(), "news", rates, time.Now()); err != nil || wait != 0 {
		t.Fatal(wait, err)
	}
	a = h.do(request{method: "GET", path: "/v1/accounts", token: tok})
	var after struct {
		Accounts []accountView `json:"accounts"`
	}
	if err := json.Unmarshal(a.body, &after); err != nil || *after.Accounts[1].Pacing[0].Left != before-1 {
		t.Errorf("after one send: %s, want %d left", a.body, before-1)
	}
	for _, path := range []string{"/v1/platforms", "/v1/status"} {
		if a := h.do(request{method: "GET", path: path, token: tok}); a.status != http.StatusOK {
			t.Errorf("%s: %d %s", path, a.status, a.body)
		}
	}
}
