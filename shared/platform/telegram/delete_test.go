package telegram

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
)

// TestDeleteTwice: deleteMessage {"chat_id", "message_id"} → true
// (https://core.telegram.org/bots/api#deletemessage); the second delete
// of the same message is answered 400 "Bad Request: message to delete not
// found" (as quoted in vldc-hq/vldc-bot#49) and is nil. The fake removed
// the message once.
func TestDeleteTwice(t *testing.T) {
	fake := newFakeBot(t, "")
	srv := newServer(t, fake)
	c := newClient(t, srv.URL)
	receipt, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "to delete"})
	logErr(t, err)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	for i := range 2 {
		if diff := cmp.Diff(outcome{Class: "ok"}, outcomeOf(t, c.Delete(context.Background(), receipt.RemoteID))); diff != "" {
			t.Errorf("delete %d outcome (-want +got):\n%s", i+1, diff)
		}
	}
	if _, stored, removed := fake.counts(); stored != 0 || removed != 1 {
		t.Errorf("fake stores %d messages and removed %d, want 0 and exactly 1", stored, removed)
	}
	del := seenRequest{Method: "POST", Path: "/bot" + testToken + "/deleteMessage", ContentType: "application/json",
		Body: map[string]any{"chat_id": float64(testChatID), "message_id": float64(42)}}
	if diff := cmp.Diff([]seenRequest{del, del}, fake.seen()[1:]); diff != "" {
		t.Errorf("delete requests (-want +got):\n%s", diff)
	}
	if receipt.RemoteID != messageID(1) {
		t.Errorf("remote id = %q, want %q", receipt.RemoteID, messageID(1))
	}
}

// TestDeleteAnswers covers the answers Delete tells apart; "message can't
// be deleted" is Telegram's refusal of a message older than 48 hours
// (https://core.telegram.org/bots/api#deletemessage; text quoted in
// eternnoir/pyTelegramBotAPI#1544 and TelegramBots/Telegram.Bot#471:
// {"ok":false,"error_code":400,"description":"Bad Request: message can't
// be deleted"}).
func TestDeleteAnswers(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   any
		want   outcome
	}{
		{"deleted", 200, map[string]any{"ok": true, "result": true}, outcome{Class: "ok"}},
		{"already gone", 400, apiError(400, "Bad Request: message to delete not found", nil), outcome{Class: "ok"}},
		{"older than 48 hours", 400, apiError(400, "Bad Request: message can't be deleted", nil),
			outcome{Class: "rejected", Status: 400, Reason: "delete_window_passed",
				Message: "delete message: Bad Request: message can't be deleted (sent more than 48 hours ago, or the bot may not delete it)"}},
		{"not for everyone", 400, apiError(400, "Bad Request: message can't be deleted for everyone", nil),
			outcome{Class: "rejected", Status: 400, Reason: "delete_window_passed",
				Message: "delete message: Bad Request: message can't be deleted for everyone (sent more than 48 hours ago, or the bot may not delete it)"}},
		{"ok false on 200", 200, apiError(400, "Bad Request: odd", nil), outcome{Class: "ambiguous", Status: 200}},
		{"flood control", 429, apiError(429, "Too Many Requests: retry after 3", map[string]any{"retry_after": 3}),
			outcome{Class: "not_performed", Status: 429, RetryAfter: 3 * time.Second}},
		{"internal error", 500, apiError(500, "Internal Server Error", nil), outcome{Class: "ambiguous", Status: 500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				if r.URL.Path != "/bot"+testToken+"/deleteMessage" {
					t.Errorf("path %q, want deleteMessage", r.URL.Path)
				}
				writeJSON(w, tt.status, tt.body)
			}))
			err := newClient(t, srv.URL).Delete(context.Background(), "42")
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if n.Load() != 1 {
				t.Errorf("server received %d requests, want exactly 1", n.Load())
			}
		})
	}

	t.Run("not a message id: nothing sent", func(t *testing.T) {
		for _, id := range []string{"", "abc", "0", "-5", "42/../getMe"} {
			var n atomic.Int32
			srv := newServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
			got := outcomeOf(t, newClient(t, srv.URL).Delete(context.Background(), id))
			if got.Class != "rejected" || got.Reason != "invalid_request" {
				t.Errorf("Delete(%q) outcome %+v, want rejected invalid_request", id, got)
			}
			if n.Load() != 0 {
				t.Errorf("Delete(%q) sent %d requests, want 0", id, n.Load())
			}
		}
	})

	t.Run("timeout after the request was written is ambiguous", func(t *testing.T) {
		var n atomic.Int32
		release := make(chan struct{})
		srv := newServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			n.Add(1)
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		t.Cleanup(func() { close(release) }) // runs before the server's Close
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

	t.Run("refused connection is not performed", func(t *testing.T) {
		err := newClient(t, refusedURL(t)).Delete(context.Background(), "42")
		if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})
}
