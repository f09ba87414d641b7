package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A body whose Content-Length is over the route's limit is refused with
// 413 before it is read: the answer comes while the client is still
// sending (the body never finishes here).
func TestBodyOverTheLimitIsRefusedBeforeItIsRead(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{maxJSON: 4096, maxMedia: 8192})
	tok := h.token("posts")
	for _, tt := range []struct{ path, ctype string }{{"/v1/posts", "application/json"}, {"/v1/media", "image/png"}, {"/v1/posts/x/cancel", "application/json"}} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(h.srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nIdempotency-Key: big\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n{\"body\": \"",
			tt.path, tok, tt.ctype, 1<<30)
		if _, err := io.WriteString(conn, head); err != nil {
			t.Fatal(err)
		}
		// A liveness bound, not a speed test: a server that waited for the
		// body would never answer.
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: no answer while the body is unfinished: %v", tt.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		req, _ := http.NewRequest("POST", h.srv.URL+tt.path, strings.NewReader(`{"body": "`))
		req.Header.Set("Content-Type", tt.ctype)
		req.Header.Set("Idempotency-Key", "big")
		a := answer{status: resp.StatusCode, header: resp.Header, body: body}
		h.check(request{method: "POST", path: tt.path, body: []byte(`{"body": "`)}, req, a)
		if p := a.problem(t); a.status != http.StatusRequestEntityTooLarge || !strings.Contains(p.Detail, "limit") {
			t.Errorf("%s: %d %+v, want 413", tt.path, a.status, p)
		}
	}
	// Without a Content-Length (chunked), the body is cut at the limit.
	big := io.MultiReader(strings.NewReader(`{"id": "x", "body": "`), strings.NewReader(strings.Repeat("a", 5000)), strings.NewReader(`"}`))
	req, _ := http.NewRequest("POST", h.srv.URL+"/v1/posts", big)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "chunked")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header, body: body}
	h.check(request{method: "POST", path: "/v1/posts", body: []byte(`{}`)}, req, a)
	if a.status != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked body over the limit: %d %s", resp.StatusCode, body)
	}
	if got := h.posts(); got != 0 {
		t.Errorf("%d posts", got)
	}
}
