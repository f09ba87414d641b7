package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/post"
)

// draftJSON is a draft for account news at a time from now.
func draftJSON(id, body string, in time.Duration) []byte {
	return fmt.Appendf(nil, `{"id": %q, "body": %q, "targets": [{"account": "news", "at": %q}]}`, id, body, time.Now().Add(in).UTC().Format(time.RFC3339))
}

// 50 concurrent creates with one key and one body make one post, and all
// 50 get the same answer, byte for byte: one 201, the others its replay.
func TestConcurrentCreatesWithOneKeyMakeOnePost(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	tok := h.token("posts")
	body := draftJSON("", "Launch day.", time.Hour) // no id: each request would generate its own
	const n = 50
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = h.do(request{method: "POST", path: "/v1/posts", body: body, token: tok, header: map[string]string{"Idempotency-Key": `"k-concurrent-1"`}})
		}()
	}
	wg.Wait()
	if got := h.posts(); got != 1 {
		t.Fatalf("%d posts, want 1", got)
	}
	replayed := 0
	for i, a := range answers {
		if a.status != http.StatusCreated || string(a.body) != string(answers[0].body) || a.header.Get("Location") != answers[0].header.Get("Location") {
			t.Errorf("answer %d: %d %s (Location %s), want answer 0's: %d %s", i, a.status, a.body, a.header.Get("Location"), answers[0].status, answers[0].body)
		}
		if a.header.Get("Idempotent-Replayed") == "true" {
			replayed++
		}
	}
	if replayed != n-1 {
		t.Errorf("%d answers say Idempotent-Replayed, want %d", replayed, n-1)
	}
	var p post.Post
	if err := json.Unmarshal(answers[0].body, &p); err != nil || answers[0].header.Get("Location") != "/v1/posts/"+string(p.ID) {
		t.Errorf("Location %q for post %q (%v)", answers[0].header.Get("Location"), p.ID, err)
	}
}

// The Idempotency-Key: required, quoted or bare (the same key), one
// caller's key never meets another's, the same key with another body is
// 422 and makes nothing.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	tok, other := h.token("posts"), h.token("posts,read")
	body := draftJSON("launch", "Launch day.", time.Hour)
	create := func(tok, key string, body []byte) answer {
		hdr := map[string]string{}
		if key != "-" {
			hdr["Idempotency-Key"] = key
		}
		return h.do(request{method: "POST", path: "/v1/posts", body: body, token: tok, header: hdr})
	}

	a := create(tok, "-", body)
	if p := a.problem(t); a.status != http.StatusBadRequest || p.Type != typeKeyMissing || len(p.Errors) != 1 || p.Errors[0].Field != "Idempotency-Key" {
		t.Errorf("no key: %d %+v, want 400 naming Idempotency-Key", a.status, p)
	}
	for _, bad := range []string{`""`, strings.Repeat("k", 256), "k\u00e9y", `a"b`} {
		a := create(tok, bad, body)
		if p := a.problem(t); a.status != http.StatusBadRequest || p.Type != typeKeyInvalid {
			t.Errorf("key %q: %d %+v, want 400 %s", bad, a.status, p, typeKeyInvalid)
		}
	}
	if got := h.posts(); got != 0 {
		t.Fatalf("%d posts after refused keys", got)
	}

	first := create(tok, `"8e03978e-40d5-43e8-bc93-6894a57f9324"`, body)
	bare := create(tok, `8e03978e-40d5-43e8-bc93-6894a57f9324`, body)
	if first.status != http.StatusCreated || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first create: %d %s", first.status, first.body)
	}
	if bare.status != first.status || string(bare.body) != string(first.body) || bare.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the bare key is not the quoted one: %d %s", bare.status, bare.body)
	}
	// Another caller's same key is its own: a new post, refused here only
	// because the id is taken.
	if a := create(other, `"8e03978e-40d5-43e8-bc93-6894a57f9324"`, body); a.status != http.StatusUnprocessableEntity {
		t.Errorf("another caller's key: %d %s, want 422 (the id exists)", a.status, a.body)
	} else if p := a.problem(t); len(p.Errors) != 1 || p.Errors[0].Field != "id" {
		t.Errorf("id conflict names %+v, want id", p.Errors)
	}
	reused := create(tok, `"8e03978e-40d5-43e8-bc93-6894a57f9324"`, draftJSON("launch-2", "Another post.", time.Hour))
	if p := reused.problem(t); reused.status != http.StatusUnprocessableEntity || p.Type != typeKeyReused {
		t.Errorf("same key, other body: %d %+v, want 422 %s", reused.status, p, typeKeyReused)
	}
	if got := h.posts(); got != 1 {
		t.Errorf("%d posts, want 1", got)
	}
}

// A draft refused by validation is 422 with every field named; a body
// that is not a draft is 400; nothing is written either way.
func TestCreateRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	tok := h.token("posts")
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	tests := []struct {
		name   string
		body   string
		ctype  string
		status int
		fields []string
	}{
		{"unknown account and past time", `{"id": "a", "body": "x", "targets": [{"account": "nobody", "at": "` + past + `"}]}`, "", 422, []string{"targets[0].account", "targets[0].at"}},
		{"empty body text", `{"id": "b", "body": " ", "targets": [{"account": "news", "at": "2199-01-01T00:00:00Z"}]}`, "", 422, []string{"body"}},
		{"a media path", `{"id": "c", "body": "x", "media": [{"path": "/etc/passwd"}], "targets": [{"account": "news", "at": "2199-01-01T00:00:00Z"}]}`, "", 422, []string{"media[0].path"}},
		{"a ref never uploaded", `{"id": "d", "body": "x", "media": [{"ref": "` + strings.Repeat("a", 64) + `.png", "sha256": "` + strings.Repeat("a", 64) + `"}], "targets": [{"account": "news", "at": "2199-01-01T00:00:00Z"}]}`, "", 422, []string{"media[0].ref"}},
		{"an unknown member", `{"id": "e", "bdy": "x", "targets": []}`, "", 400, nil},
		{"not JSON", `{"id": `, "", 400, nil},
		{"two objects", `{"id": "f"} {}`, "", 400, nil},
		{"a lone surrogate", `{"id": "g", "body": "caf\ud800", "targets": [{"account": "news", "at": "2199-01-01T00:00:00Z"}]}`, "", 400, nil},
		{"not JSON's type", `{}`, "text/plain", 415, nil},
	}
	for i, tt := range tests {
		hdr := map[string]string{"Idempotency-Key": fmt.Sprintf("refusal-%d", i)}
		if tt.ctype != "" {
			hdr["Content-Type"] = tt.ctype
		}
		a := h.do(request{method: "POST", path: "/v1/posts", body: []byte(tt.body), token: tok, header: hdr})
		p := a.problem(t)
		if a.status != tt.status {
			t.Errorf("%s: %d %s, want %d", tt.name, a.status, a.body, tt.status)
			continue
		}
		var fields []string
		for _, e := range p.Errors {
			fields = append(fields, e.Field)
			if tt.status == 422 && (e.Problem == "" || e.Fix == "") {
				t.Errorf("%s: %+v lacks the problem or the fix", tt.name, e)
			}
		}
		if tt.fields != nil {
			if diff := cmp.Diff(tt.fields, fields); diff != "" {
				t.Errorf("%s: fields (-want +got):\n%s", tt.name, diff)
			}
		}
	}
	if got := h.posts(); got != 0 {
		t.Errorf("%d posts written by refused creates", got)
	}
}

// GET a post, list with filters and pages, and the actions on targets.
func TestReadAndActOnPosts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	tok, reader := h.token("posts,read"), h.token("read")
	for i, in := range []time.Duration{3 * time.Hour, time.Hour, 2 * time.Hour} {
		a := h.do(request{method: "POST", path: "/v1/posts", body: draftJSON(fmt.Sprintf("p%d", i), "post", in), token: tok,
			header: map[string]string{"Idempotency-Key": fmt.Sprintf("read-%d", i)}})
		if a.status != http.StatusCreated {
			t.Fatalf("create: %d %s", a.status, a.body)
		}
	}
	if a := h.do(request{method: "GET", path: "/v1/posts/p1", token: reader}); a.status != http.StatusOK {
		t.Errorf("GET p1: %d %s", a.status, a.body)
	}
	if a := h.do(request{method: "GET", path: "/v1/posts/nope", token: reader}); a.status != http.StatusNotFound {
		t.Errorf("GET nope: %d", a.status)
	}

	// Pages of 2 in slot order, then the rest.
	list := func(query string) (postList, answer) {
		a := h.do(request{method: "GET", path: "/v1/posts?" + query, token: reader})
		var l postList
		if a.status == http.StatusOK {
			if err := json.Unmarshal(a.body, &l); err != nil {
				t.Fatal(err)
			}
		}
		return l, a
	}
	ids := func(l postList) (out []string) {
		for _, p := range l.Posts {
			out = append(out, string(p.ID))
		}
		return out
	}
	page1, _ := list("limit=2&status=scheduled")
	page2, _ := list("limit=2&status=scheduled&after=" + url.QueryEscape(page1.Next))
	if got := append(ids(page1), ids(page2)...); !cmp.Equal(got, []string{"p1", "p2", "p0"}) || page1.Next == "" || page2.Next != "" {
		t.Errorf("pages: %v (next %q, %q), want p1 p2 | p0", got, page1.Next, page2.Next)
	}
	from := time.Now().Add(90 * time.Minute).UTC().Format(time.RFC3339)
	to := time.Now().Add(150 * time.Minute).UTC().Format(time.RFC3339)
	if l, a := list("from=" + url.QueryEscape(from) + "&to=" + url.QueryEscape(to)); !cmp.Equal(ids(l), []string{"p2"}) {
		t.Errorf("from/to: %v (%d %s), want p2", ids(l), a.status, a.body)
	}
	if l, _ := list("limit=1&from=" + url.QueryEscape(from)); !cmp.Equal(ids(l), []string{"p2"}) || l.Next == "" {
		t.Errorf("from, a page of 1: %v next %q, want p2 and a next page", ids(l), l.Next)
	}
	for _, q := range []string{"status=sent", "limit=0", "limit=x", "from=yesterday", "stauts=held", "after=garbage",
		"from=" + url.QueryEscape(to) + "&to=" + url.QueryEscape(from)} {
		_, a := list(q)
		if p := a.problem(t); a.status != http.StatusBadRequest || len(p.Errors) != 1 {
			t.Errorf("?%s: %d %+v, want 400 naming the parameter", q, a.status, p)
		}
	}

	if a := h.do(request{method: "POST", path: "/v1/posts/p0/cancel", token: tok}); a.status != http.StatusOK {
		t.Errorf("cancel: %d %s", a.status, a.body)
	}
	if a := h.do(request{method: "POST", path: "/v1/posts/p0/reschedule", body: []byte(`{"at": "2199-01-01T00:00:00Z"}`), token: tok}); a.status != http.StatusConflict {
		t.Errorf("reschedule a cancelled post: %d %s, want 409", a.status, a.body)
	} else if p := a.problem(t); len(p.Targets) != 1 || p.Targets[0].Done {
		t.Errorf("409 targets %+v", p.Targets)
	}
	for _, tt := range []struct {
		path, body string
		status     int
		field      string
	}{
		{"/v1/posts/p1/reschedule", `{"at": "tomorrow"}`, 422, "at"},
		{"/v1/posts/p1/reschedule", `{}`, 422, "at"},
		{"/v1/posts/p1/reschedule", `{"at": "2000-01-01T00:00:00Z"}`, 422, "at"},
		{"/v1/posts/p1/cancel", `{"account": "other"}`, 422, "account"},
		{"/v1/posts/p1/cancel", `{"acount": "news"}`, 400, "acount"},
		{"/v1/posts/nope/cancel", `{}`, 404, ""},
	} {
		a := h.do(request{method: "POST", path: tt.path, body: []byte(tt.body), token: tok})
		p := a.problem(t)
		if a.status != tt.status || (tt.field != "" && (len(p.Errors) == 0 || p.Errors[0].Field != tt.field)) {
			t.Errorf("%s %s: %d %+v, want %d naming %q", tt.path, tt.body, a.status, p, tt.status, tt.field)
		}
	}
}

// A listing with from and to is selected by the store: a page of one is
// full even when many posts come before the window (a handler that
// filtered the store's pages would read them first, a page at a time).
func TestListPostsWindowInStore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	reader := h.token("read")
	base := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	for i := range 30 {
		p := post.Post{ID: post.ID(fmt.Sprintf("w%02d", i)), Body: "x", CreatedAt: base.Add(-48 * time.Hour),
			Targets: []post.Target{{Account: "news", Slot: base.Add(time.Duration(i-28) * time.Hour), Status: post.Scheduled, UpdatedAt: base}}}
		if err := h.store.CreatePost(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	from, to := url.QueryEscape(base.Add(-time.Hour).Format(time.RFC3339)), url.QueryEscape(base.Add(2*time.Hour).Format(time.RFC3339))
	a := h.do(request{method: "GET", path: "/v1/posts?limit=1&from=" + from + "&to=" + to, token: reader})
	var l postList
	if err := json.Unmarshal(a.body, &l); err != nil || a.status != http.StatusOK {
		t.Fatalf("%d %s %v", a.status, a.body, err)
	}
	if len(l.Posts) != 1 || l.Posts[0].ID != "w27" || l.Next == "" {
		t.Fatalf("page of 1 from %s: %v next %q, want w27 and a next page", from, l.Posts, l.Next)
	}
	a = h.do(request{method: "GET", path: "/v1/posts?limit=5&from=" + from + "&to=" + to + "&after=" + url.QueryEscape(l.Next), token: reader})
	l = postList{}
	if err := json.Unmarshal(a.body, &l); err != nil || len(l.Posts) != 2 || l.Posts[0].ID != "w28" || l.Posts[1].ID != "w29" || l.Next != "" {
		t.Errorf("the rest: %d %s, want w28 w29 and no next", a.status, a.body)
	}
}
