package telegram

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeChats is a Bot API server answering getChat
// (https://core.telegram.org/bots/api#getchat) for the bot testToken:
// POST /bot<token>/getChat {"chat_id"} → {"ok":true,"result":
// ChatFullInfo} (https://core.telegram.org/bots/api#chatfullinfo: id,
// type, title, username, and more fields the adapter does not read) for
// a chat the bot can see, by its id or its public @username; 400 "Bad
// Request: chat not found" for any other; 401 "Unauthorized" for another
// token.
type fakeChats struct {
	t  *testing.T
	mu sync.Mutex
	// bodies are the chat_id values received, as decoded JSON.
	bodies []any
}

// newsChat is the channel the fake knows.
var newsChat = map[string]any{
	"id": testChatID, "type": "channel", "title": "News", "username": "newschannel",
	"accent_color_id": 0, "max_reaction_count": 11, "description": "All the news",
}

func (f *fakeChats) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+testToken+"/")
	switch {
	case !ok:
		writeJSON(w, http.StatusUnauthorized, apiError(401, "Unauthorized", nil))
		return
	case method != "getChat":
		writeJSON(w, http.StatusNotFound, apiError(404, "Not Found: method not found", nil))
		return
	case r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json":
		f.t.Errorf("getChat sent as %s with Content-Type %q, want a JSON POST", r.Method, r.Header.Get("Content-Type"))
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, apiError(400, "Bad Request: can't parse JSON", nil))
		return
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, body["chat_id"])
	f.mu.Unlock()
	switch body["chat_id"] {
	case float64(testChatID), "@newschannel", "@NewsChannel":
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": newsChat})
	default:
		writeJSON(w, http.StatusBadRequest, apiError(400, "Bad Request: chat not found", nil))
	}
}

func (f *fakeChats) received() []any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]any(nil), f.bodies...)
}

// TestGetChat: the chat is found by its id (sent as a JSON number) and by
// its public @username (sent as a string, usernames being
// case-insensitive), and both answer the same numeric id, type, title
// and username.
func TestGetChat(t *testing.T) {
	fake := &fakeChats{t: t}
	srv := newServer(t, fake)
	want := Chat{ID: testChatID, Type: "channel", Title: "News", Username: "newschannel"}
	for _, chat := range []string{testChat, "@newschannel", "@NewsChannel"} {
		got, err := GetChat(context.Background(), nil, srv.URL, testToken, chat)
		logErr(t, err)
		if err != nil {
			t.Fatalf("GetChat(%s): %v", chat, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GetChat(%s) (-want +got):\n%s", chat, diff)
		}
	}
	if diff := cmp.Diff([]any{float64(testChatID), "@newschannel", "@NewsChannel"}, fake.received()); diff != "" {
		t.Errorf("chat_id sent (-want +got):\n%s", diff)
	}
}

// TestGetChatFailures: an unknown chat is Telegram's 400 "Bad Request:
// chat not found", Rejected chat_not_found and not retried; a channel
// the bot was removed from is bot_not_member; a group upgraded to a
// supergroup names its new id (chat_migrated); a revoked token is
// Unauthorized; a 500 is retried as a read, then NotPerformed; an answer
// that is not the Bot API's, or is another chat than the one asked for,
// is NotPerformed, never a chat.
func TestGetChatFailures(t *testing.T) {
	tests := []struct {
		name     string
		chat     string
		status   int
		body     any // a string is written as it is
		want     outcome
		attempts int32
	}{
		{"unknown chat", "@nosuchchannel", 400, apiError(400, "Bad Request: chat not found", nil),
			outcome{Class: "rejected", Status: 400, Reason: ReasonChatNotFound, Message: "get chat: Bad Request: chat not found"}, 1},
		{"bot removed", testChat, 403, apiError(403, "Forbidden: bot is not a member of the channel chat", nil),
			outcome{Class: "rejected", Status: 403, Reason: ReasonBotNotMember, Message: "get chat: Forbidden: bot is not a member of the channel chat"}, 1},
		{"migrated group", "-4012345678", 400, apiError(400, "Bad Request: group chat was upgraded to a supergroup chat", map[string]any{"migrate_to_chat_id": testChatID}),
			outcome{Class: "rejected", Status: 400, Reason: ReasonChatMigrated,
				Message: "get chat: Bad Request: group chat was upgraded to a supergroup chat: the group is now a supergroup with chat id -1001234567890; set it as the account's remote id"}, 1},
		{"revoked token", testChat, 401, apiError(401, "Unauthorized", nil), outcome{Class: "unauthorized"}, 1},
		{"server error, retried", testChat, 500, apiError(500, "Internal Server Error", nil), outcome{Class: "not_performed", Status: 500}, 4},
		{"not a bot api answer", testChat, 200, "<html>captive portal</html>", outcome{Class: "not_performed", Status: 200}, 1},
		{"no chat id", testChat, 200, map[string]any{"ok": true, "result": map[string]any{"type": "channel"}}, outcome{Class: "not_performed", Status: 200}, 1},
		{"another chat", testChat, 200, map[string]any{"ok": true, "result": map[string]any{"id": -1009999999999, "type": "channel"}}, outcome{Class: "not_performed", Status: 200}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				if r.URL.Path != "/bot"+testToken+"/getChat" {
					t.Errorf("request to %s", strings.ReplaceAll(r.URL.Path, testToken, "<token>"))
				}
				if s, ok := tt.body.(string); ok {
					w.WriteHeader(tt.status)
					io.WriteString(w, s)
					return
				}
				writeJSON(w, tt.status, tt.body)
			}))
			got, err := GetChat(context.Background(), nil, srv.URL, testToken, tt.chat)
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if got != (Chat{}) {
				t.Errorf("chat %+v returned with the error", got)
			}
			if n.Load() != tt.attempts {
				t.Errorf("server received %d requests, want %d", n.Load(), tt.attempts)
			}
		})
	}
}

// TestGetChatRefusesBadArgumentsBeforeAnyCall: a chat that is neither an
// id nor an @username, and a token that is not a bot token, are refused
// without a request, the token named and not quoted.
func TestGetChatRefusesBadArgumentsBeforeAnyCall(t *testing.T) {
	var n atomic.Int32
	srv := newServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
	for _, tc := range []struct{ name, token, chat, want string }{
		{"chat with a space", testToken, "news channel", "chat id"},
		{"chat 0", testToken, "0", "chat id"},
		{"chat that is a link", testToken, "https://t.me/newschannel", "chat id"},
		{"secret without the bot id", testSecret, testChat, "Token"},
		{"no token", "", testChat, "Token"},
	} {
		_, err := GetChat(context.Background(), nil, srv.URL, tc.token, tc.chat)
		logErr(t, err)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one naming the %s", tc.name, err, tc.want)
		}
	}
	if n.Load() != 0 {
		t.Errorf("server received %d requests, want 0", n.Load())
	}
}

// TestGetChatKeepsTheTokenOutOfErrors: a proxy whose error pages echo the
// request path (which holds the token) into the description, on a
// refusal, a 401 and a long flood wait (returned at once, not waited
// for), a refused connection and a timeout: every error is scrubbed, the
// description kept otherwise, and the failure class unchanged. TestMain
// searches every error again.
func TestGetChatKeepsTheTokenOutOfErrors(t *testing.T) {
	echo := func(status int, params map[string]any) string {
		return newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			writeJSON(w, status, apiError(status, "proxy error for "+r.URL.Path+" ("+testSecret+")", params))
		})).URL
	}
	release := make(chan struct{})
	silent := newServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release) })
	cases := []struct {
		name, base string
		timeout    time.Duration
		class      string
	}{
		{"echoed 400", echo(400, nil), 0, "rejected"},
		{"echoed 401", echo(401, nil), 0, "unauthorized"},
		{"echoed 429", echo(429, map[string]any{"retry_after": 60}), 0, "not_performed"},
		{"refused connection", refusedURL(t), 0, "not_performed"},
		{"timeout", silent.URL, 100 * time.Millisecond, "not_performed"},
	}
	for _, tc := range cases {
		ctx := context.Background()
		if tc.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, tc.timeout)
			defer cancel()
		}
		_, err := GetChat(ctx, nil, tc.base, testToken, "@newschannel")
		if got := outcomeOf(t, err); got.Class != tc.class {
			t.Errorf("%s: outcome %+v, want %s", tc.name, got, tc.class)
		}
		if tc.name == "echoed 400" && (err == nil || !strings.Contains(err.Error(), "proxy error for /bot[redacted]/getChat ([redacted])")) {
			t.Errorf("%s: error %v does not keep the cleaned description", tc.name, err)
		}
	}
}
