package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// checkAnswerOf decodes a check's answer.
func checkAnswerOf(t *testing.T, a answer) checkAnswer {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("check: %d %s", a.status, a.body)
	}
	var c checkAnswer
	if err := json.Unmarshal(a.body, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// POST /v1/drafts/check counts as POST /v1/posts validates: a text at
// news's limit of 500 (an emoji with a modifier is one) is not over and
// is created; one more is over, refused by the create on the same field
// the check names; the blocklist and a file path are the check's errors;
// nothing is written by a check; a read token may not check.
func TestCheckDraft(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	term, err := post.NewBlockedTerm("spoiler", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.AddBlockedTerm(context.Background(), term); err != nil {
		t.Fatal(err)
	}
	tok := h.token("posts")
	at := strings.Repeat("👍🏽", 10) + strings.Repeat("a", 490)
	check := func(body []byte) checkAnswer {
		return checkAnswerOf(t, h.do(request{method: "POST", path: "/v1/drafts/check", body: body, token: tok}))
	}

	c := check(draftJSON("", at, time.Hour))
	want := []FieldProblem{}
	if !c.OK || len(c.Targets) != 1 || c.Targets[0].Length != 500 || c.Targets[0].Limit != 500 || c.Targets[0].Over || !cmp.Equal(want, c.Errors) {
		t.Errorf("check at the limit: %+v", c)
	}
	if h.posts() != 0 {
		t.Fatalf("a check wrote a post")
	}

	c = check(draftJSON("", at+"👍🏽", time.Hour))
	if c.OK || c.Targets[0].Length != 501 || !c.Targets[0].Over || len(c.Errors) != 1 || c.Errors[0].Field != "body" {
		t.Errorf("check over the limit: %+v", c)
	}
	a := h.do(request{method: "POST", path: "/v1/posts", body: draftJSON("", at+"👍🏽", time.Hour), token: tok, header: map[string]string{"Idempotency-Key": "k-over"}})
	if p := a.problem(t); a.status != http.StatusUnprocessableEntity || !cmp.Equal(c.Errors, p.Errors) {
		t.Errorf("create over the limit: %d %+v; want 422 with the check's errors %+v", a.status, p.Errors, c.Errors)
	}
	a = h.do(request{method: "POST", path: "/v1/posts", body: draftJSON("", at, time.Hour), token: tok, header: map[string]string{"Idempotency-Key": "k-at"}})
	if a.status != http.StatusCreated {
		t.Errorf("create at the limit: %d %s", a.status, a.body)
	}

	c = check(draftJSON("", "No spoiler here.", time.Hour))
	if c.OK || len(c.Blocked) != 1 || c.Blocked[0].Term != "spoiler" || c.Errors[0].Field != "body" {
		t.Errorf("check with a blocked term: %+v", c)
	}

	sha := strings.Repeat("a", 64)
	a = h.do(request{method: "POST", path: "/v1/drafts/check", token: tok, body: fmt.Appendf(nil, `{"body": "x", "media": [{"path": "a.png", "ref": "%s.png", "sha256": "%s", "content_type": "image/png"}], "targets": [{"account": "news", "at": %q}]}`,
		sha, sha, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))})
	if p := a.problem(t); a.status != http.StatusUnprocessableEntity || len(p.Errors) == 0 || p.Errors[0].Field != "media[0].path" {
		t.Errorf("check with a file path: %d %+v; want 422 on media[0].path, as a create", a.status, p.Errors)
	}

	a = h.do(request{method: "POST", path: "/v1/drafts/check", body: draftJSON("", "Hi.", time.Hour), token: h.token("read")})
	if a.status != http.StatusForbidden {
		t.Errorf("check with a read token: %d, want 403", a.status)
	}
	if got := h.posts(); got != 1 {
		t.Errorf("%d posts, want the one created", got)
	}
}

// A media ref the check must not read ("." names the media directory
// itself, which the embedded runtime's store would try to read as a file)
// is answered 200 with the field error, as POST /v1/posts refuses it: a
// draft the desk refuses is the check's answer, never a 500.
func TestCheckDraftRefusesARefItDoesNotRead(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	dir := t.TempDir()
	// As cmd/oncepost's dirMedia: any relative path is read, a missing
	// file is post.ErrNotFound, any other error is not a refusal.
	h.desk.ReadMedia = func(_ context.Context, ref string) ([]byte, error) {
		if !filepath.IsLocal(ref) {
			return nil, fmt.Errorf("media ref %q: %w", ref, publishing.ErrMediaInvalid)
		}
		b, err := os.ReadFile(filepath.Join(dir, ref))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("media %s: %w", ref, post.ErrNotFound)
		}
		return b, err
	}
	h.desk.MediaSize = func(_ context.Context, ref string) (int64, error) {
		fi, err := os.Stat(filepath.Join(dir, ref))
		if err != nil {
			return 0, fmt.Errorf("media %s: %w", ref, post.ErrNotFound)
		}
		return fi.Size(), nil
	}
	sha := strings.Repeat("a", 64)
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, ref := range []string{".", "./", "sub/.."} {
		body := fmt.Appendf(nil, `{"body": "x", "media": [{"ref": %q, "sha256": %q, "content_type": "image/png"}], "targets": [{"account": "news", "at": %q}]}`, ref, sha, at)
		a := h.do(request{method: "POST", path: "/v1/drafts/check", body: body, token: h.token("posts")})
		if a.status != http.StatusOK {
			t.Errorf("check with media ref %q: %d %s; want 200 with the field error", ref, a.status, a.body)
			continue
		}
		c := checkAnswerOf(t, a)
		if c.OK || len(c.Errors) != 1 || c.Errors[0].Field != "media[0].ref" || len(c.Media) != 0 {
			t.Errorf("check with media ref %q: %+v; want the error on media[0].ref and no media measured", ref, c)
		}
	}
}
