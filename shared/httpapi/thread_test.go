package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/publishing"
)

// POST /v1/posts takes a thread, answers the post with it, and refuses a
// part as it refuses the body, naming thread[i]; GET /v1/posts/{id}
// lists the parts of every target. Every answer is checked against the
// document.
func TestThreadOverTheAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	tok := h.token("posts,read")
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	body := `{"id":"th","body":"1/3 starts","thread":["2/3 goes on","3/3 ends"],"targets":[{"account":"news","at":"` + at + `"}]}`
	a := h.do(request{method: "POST", path: "/v1/posts", body: []byte(body), token: tok, header: map[string]string{"Idempotency-Key": "th-1"}})
	if a.status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	var created struct {
		Thread []string `json:"thread"`
	}
	if err := json.Unmarshal(a.body, &created); err != nil || !cmp.Equal(created.Thread, []string{"2/3 goes on", "3/3 ends"}) {
		t.Errorf("created post's thread %q (%v)", created.Thread, err)
	}
	a = h.do(request{method: "GET", path: "/v1/posts/th", token: tok})
	var v publishing.PostView
	if err := json.Unmarshal(a.body, &v); err != nil || a.status != http.StatusOK || len(v.Targets) != 1 {
		t.Fatalf("GET: %d %s", a.status, a.body)
	}
	var texts []string
	for _, pv := range v.Targets[0].Parts {
		texts = append(texts, pv.Text)
		if pv.State != "" || pv.Key == "" {
			t.Errorf("part %d before the slot: state %q key %q", pv.Part, pv.State, pv.Key)
		}
	}
	if d := cmp.Diff([]string{"1/3 starts", "2/3 goes on", "3/3 ends"}, texts); d != "" {
		t.Errorf("parts (-want +got):\n%s", d)
	}
	long := `{"body":"1/2","thread":["` + strings.Repeat("a", 501) + `"],"targets":[{"account":"news","at":"` + at + `"}]}`
	a = h.do(request{method: "POST", path: "/v1/posts", body: []byte(long), token: tok, header: map[string]string{"Idempotency-Key": "th-2"}})
	if p := a.problem(t); a.status != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Field != "thread[0]" {
		t.Errorf("a part over the limit: %d %+v, want 422 naming thread[0]", a.status, p)
	}
}
