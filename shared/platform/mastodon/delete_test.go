package mastodon

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDeleteAnswers covers every answer the idempotent delete protocol
// (check exists → delete → check answer → read back until gone) tells
// apart. Shapes from https://docs.joinmastodon.org/methods/statuses/#delete:
// DELETE /api/v1/statuses/:id, 200 with the deleted Status (its source
// text, for redrafting), 404 {"error":"Record not found"} for a status
// that is gone or not the caller's, 401 {"error":"The access token is
// invalid"}; 403 and 429 as Api::BaseController answers them
// (https://docs.joinmastodon.org/api/rate-limits/ for 429).
func TestDeleteAnswers(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   outcome
	}{
		{"deleted", 200, nil, `{"id":"103270115826048975","created_at":"2019-12-08T03:48:33.901Z","text":"test","media_attachments":[]}`, outcome{Class: "ok"}},
		{"deleted, no content", 204, nil, ``, outcome{Class: "ok"}},
		{"gone or not ours", 404, nil, `{"error":"Record not found"}`, outcome{Class: "rejected", Status: 404, Reason: "not_found", Message: "Record not found"}},
		{"forbidden", 403, nil, `{"error":"This action is outside the authorized scopes"}`, outcome{Class: "rejected", Status: 403, Reason: "forbidden", Message: "This action is outside the authorized scopes"}},
		{"token revoked", 401, nil, `{"error":"The access token is invalid"}`, outcome{Class: "unauthorized"}},
		{"rate limited, retry-after", 429, map[string]string{"Retry-After": "17"}, `{"error":"Too many requests"}`, outcome{Class: "not_performed", Status: 429, RetryAfter: 17 * time.Second}},
		{"rate limited, x-ratelimit-reset", 429, map[string]string{"X-RateLimit-Limit": "30", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "2026-03-01T12:00:30.000Z"}, `{"error":"Too many requests"}`, outcome{Class: "not_performed", Status: 429, RetryAfter: 30 * time.Second}},
		{"internal error", 500, nil, `{"error":"NoMethodError"}`, outcome{Class: "ambiguous", Status: 500}},
		{"unavailable after forwarding", 503, nil, ``, outcome{Class: "ambiguous", Status: 503}},
		{"gateway timeout", 504, nil, `<html>gateway timeout</html>`, outcome{Class: "ambiguous", Status: 504}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{t: t, answers: []answer{{path: "/api/v1/statuses/103270115826048975", status: tt.status, header: tt.header, body: tt.body}}}
			srv := newServer(t, rec)
			err := newClient(t, srv.URL).Delete(context.Background(), "103270115826048975")
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			assertNoSecrets(t, err, "access-1", "refresh-1", "client-secret")
			want := []seenRequest{{"DELETE", "/api/v1/statuses/103270115826048975", "Bearer access-1"}}
			if diff := cmp.Diff(want, rec.requests()); diff != "" {
				t.Errorf("requests, exactly one (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("timeout after the request was written is ambiguous", func(t *testing.T) {
		var n atomic.Int32
		srv := silentServer(t, &n)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		err := newClient(t, srv.URL).Delete(ctx, "42")
		if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %q does not wrap context.DeadlineExceeded", err)
		}
		if n.Load() != 1 {
			t.Errorf("server received %d requests, want exactly 1", n.Load())
		}
	})
	t.Run("connection closed without an answer is ambiguous", func(t *testing.T) {
		var n atomic.Int32
		srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			hijackClose(t, w)
		}))
		err := newClient(t, srv.URL).Delete(context.Background(), "42")
		if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
		if n.Load() != 1 {
			t.Errorf("server received %d requests, want exactly 1", n.Load())
		}
	})
	t.Run("connection refused is not performed", func(t *testing.T) {
		err := newClient(t, refusedURL(t)).Delete(context.Background(), "42")
		if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})
}

// TestExistsAnswers: Exists is the protocol's read-back, so it says
// "absent" only on the API's own 404. Shapes from
// https://docs.joinmastodon.org/methods/statuses/#get: GET
// /api/v1/statuses/:id, 200 with the Status, 404 {"error":"Record not
// found"}, 401 {"error":"The access token is invalid"}.
func TestExistsAnswers(t *testing.T) {
	const id = "103270115826048975"
	path := "/api/v1/statuses/" + id
	status := `{"id":"103270115826048975","created_at":"2019-12-08T03:48:33.901Z","visibility":"private","content":"<p>hello</p>","media_attachments":[]}`
	tests := []struct {
		name         string
		answers      []answer
		want         bool
		wantOut      outcome
		wantRequests int
	}{
		{"present (own private status)", []answer{{path: path, status: 200, body: status}}, true, outcome{Class: "ok"}, 1},
		{"absent", []answer{{path: path, status: 404, body: `{"error":"Record not found"}`}}, false, outcome{Class: "ok"}, 1},
		{"gone", []answer{{path: path, status: 410, body: `{"error":"Gone"}`}}, false, outcome{Class: "ok"}, 1},
		{"absent after a transient 503", []answer{{path: path, status: 503, body: ``}, {path: path, status: 404, body: `{"error":"Record not found"}`}}, false, outcome{Class: "ok"}, 2},
		{"a proxy's 404 page is not absence", []answer{{path: path, status: 404, header: map[string]string{"Content-Type": "text/html"}, body: `<html><body>404 Not Found</body></html>`}},
			false, outcome{Class: "rejected", Status: 404, Reason: "http_404"}, 1},
		{"an empty 404 is not absence", []answer{{path: path, status: 404, body: ``}},
			false, outcome{Class: "rejected", Status: 404, Reason: "http_404"}, 1},
		{"5xx is never absence", []answer{{path: path, status: 500, body: `{"error":"NoMethodError"}`}},
			false, outcome{Class: "not_performed", Status: 500}, 4},
		{"429 is never absence", []answer{{path: path, status: 429, header: map[string]string{"Retry-After": "60"}, body: `{"error":"Too many requests"}`}},
			false, outcome{Class: "not_performed", Status: 429, RetryAfter: time.Minute}, 1},
		{"token revoked", []answer{{path: path, status: 401, body: `{"error":"The access token is invalid"}`}},
			false, outcome{Class: "unauthorized"}, 1},
		{"forbidden", []answer{{path: path, status: 403, body: `{"error":"This action is outside the authorized scopes"}`}},
			false, outcome{Class: "rejected", Status: 403, Reason: "http_403", Message: "This action is outside the authorized scopes"}, 1},
		{"200 that is not a status", []answer{{path: path, status: 200, header: map[string]string{"Content-Type": "text/html"}, body: `<html>sign in</html>`}},
			false, outcome{Class: "not_performed", Status: 200}, 1},
		{"200 with another status", []answer{{path: path, status: 200, body: `{"id":"1","content":"<p>x</p>"}`}},
			false, outcome{Class: "not_performed", Status: 200}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{t: t, answers: tt.answers}
			srv := newServer(t, rec)
			got, err := newClient(t, srv.URL).Exists(context.Background(), id)
			out := outcomeOf(t, err)
			if tt.wantOut.Reason == "http_404" {
				out.Message = "" // ours, not the platform's
			}
			if diff := cmp.Diff(tt.wantOut, out); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if got != tt.want {
				t.Errorf("Exists = %v, want %v", got, tt.want)
			}
			assertNoSecrets(t, err, "access-1")
			want := make([]seenRequest, tt.wantRequests)
			for i := range want {
				want[i] = seenRequest{"GET", path, "Bearer access-1"}
			}
			if diff := cmp.Diff(want, rec.requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("timeout is never absence", func(t *testing.T) {
		srv := silentServer(t, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		got, err := newClient(t, srv.URL).Exists(ctx, id)
		if got || err == nil {
			t.Fatalf("Exists = %v, %v; want an error", got, err)
		}
		if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})
}
