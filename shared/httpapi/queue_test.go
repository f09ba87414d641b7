package httpapi

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// The queue through the API: an account's zone and slots set with PATCH,
// posts added with "queue": true take its next free slots, the queue is
// shown, reordered and shuffled; bad settings are refused naming the
// field, an unknown account is a 404.
func TestQueueResources(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	op, posts, read := h.token("operate"), h.token("posts"), h.token("read")

	patch := func(body string) answer {
		return h.do(request{method: "PATCH", path: "/v1/accounts/news", token: op, body: []byte(body)})
	}
	for _, tc := range []struct{ body, field string }{
		{`{"time_zone": "Mars/Olympus"}`, "time_zone"},
		{`{"slots": ["at(2026-12-01T09:00:00)"]}`, "slots[0]"},
		{`{"slots": ["cron(0 25 * * ? *)"]}`, "slots[0]"},
		{`{}`, "time_zone"},
	} {
		a := patch(tc.body)
		if a.status != 422 || len(a.problem(t).Errors) == 0 || a.problem(t).Errors[0].Field != tc.field {
			t.Errorf("PATCH %s: %d %s; want 422 naming %s", tc.body, a.status, a.body, tc.field)
		}
	}
	if a := h.do(request{method: "PATCH", path: "/v1/accounts/nobody", token: op, body: []byte(`{"time_zone": "UTC"}`)}); a.status != 404 {
		t.Errorf("PATCH an unknown account: %d %s", a.status, a.body)
	}
	if a := h.do(request{method: "PATCH", path: "/v1/accounts/news", token: posts, body: []byte(`{"time_zone": "UTC"}`)}); a.status != 403 {
		t.Errorf("PATCH with the posts scope: %d, want 403", a.status)
	}
	a := patch(`{"time_zone": "Europe/Berlin", "slots": ["cron(0 9 * * ? *)", "cron(0 17 * * ? *)"]}`)
	if a.status != 200 {
		t.Fatalf("PATCH: %d %s", a.status, a.body)
	}

	berlin, _ := time.LoadLocation("Europe/Berlin")
	for i := 1; i <= 3; i++ {
		body := fmt.Sprintf(`{"id": "q%d", "body": "queued %d", "queue": true, "targets": [{"account": "news"}]}`, i, i)
		a := h.do(request{method: "POST", path: "/v1/posts", token: posts, body: []byte(body), header: map[string]string{"Idempotency-Key": fmt.Sprintf("k%d", i)}})
		if a.status != 201 {
			t.Fatalf("POST queued post: %d %s", a.status, a.body)
		}
	}
	queue := func(a answer) []string {
		t.Helper()
		if a.status != 200 {
			t.Fatalf("queue: %d %s", a.status, a.body)
		}
		var v queueView
		if err := json.Unmarshal(a.body, &v); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range v.Entries {
			if h := e.Slot.In(berlin).Hour(); h != 9 && h != 17 || !e.Slot.After(time.Now()) {
				t.Errorf("%s at %s: not a future slot of the account", e.Post, e.Slot.In(berlin))
			}
			out = append(out, string(e.Post))
		}
		if len(v.FreeSlots) == 0 {
			t.Errorf("no free slots listed: %s", a.body)
		}
		return out
	}
	get := func() []string {
		return queue(h.do(request{method: "GET", path: "/v1/accounts/news/queue?free=2", token: read}))
	}
	if got := fmt.Sprint(get()); got != "[q1 q2 q3]" {
		t.Errorf("queue = %s", got)
	}
	if got := fmt.Sprint(queue(h.do(request{method: "POST", path: "/v1/accounts/news/queue/reorder", token: posts, body: []byte(`{"posts": ["q3"]}`)}))); got != "[q3 q1 q2]" {
		t.Errorf("queue after reorder = %s", got)
	}
	if a := h.do(request{method: "POST", path: "/v1/accounts/news/queue/reorder", token: posts, body: []byte(`{"posts": ["nope"]}`)}); a.status != 422 || a.problem(t).Errors[0].Field != "posts[0]" {
		t.Errorf("reorder an unknown post: %d %s", a.status, a.body)
	}
	s1 := queue(h.do(request{method: "POST", path: "/v1/accounts/news/queue/shuffle", token: posts, body: []byte(`{"seed": "9"}`)}))
	h.do(request{method: "POST", path: "/v1/accounts/news/queue/reorder", token: posts, body: []byte(`{"posts": ["q3", "q1", "q2"]}`)})
	s2 := queue(h.do(request{method: "POST", path: "/v1/accounts/news/queue/shuffle", token: posts, body: []byte(`{"seed": "9"}`)}))
	if fmt.Sprint(s1) != fmt.Sprint(s2) {
		t.Errorf("seed 9 shuffled the same queue to %v, then %v", s1, s2)
	}
	if a := h.do(request{method: "GET", path: "/v1/accounts/nobody/queue", token: read}); a.status != 404 {
		t.Errorf("GET the queue of an unknown account: %d", a.status)
	}
}

// An API whose callers may change no account (the AWS api function)
// answers 501 to PATCH, and changes nothing.
func TestPatchAccountReadOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{accountsReadOnly: true})
	a := h.do(request{method: "PATCH", path: "/v1/accounts/news", token: h.token("operate"), body: []byte(`{"time_zone": "Europe/Berlin"}`)})
	if a.status != 501 {
		t.Errorf("PATCH on a read-only API: %d %s, want 501", a.status, a.body)
	}
	if acc, err := h.store.GetAccount(t.Context(), "news"); err != nil || acc.TimeZone != "" {
		t.Errorf("account after a refused PATCH: %+v, %v", acc, err)
	}
}
