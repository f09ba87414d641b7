package telegram

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"oncepost/shared/platform/adaptertest"
)

// testToken has the shape of the Bot API's example token
// (https://core.telegram.org/bots/api#authorizing-your-bot). testSecret is
// its secret part: neither may appear in any error.
const (
	testToken  = "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"
	testSecret = "ABC-DEF1234ghIkl-zyx57W2v1u123ew11"
	testChat   = "-1001234567890"
	testChatID = int64(-1001234567890)
)

// fixedNow is the clock of every test client.
var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// The shared test scaffolding (adaptertest), by the names this package's
// tests use.
var (
	newServer  = adaptertest.LocalServer
	refusedURL = adaptertest.ClosedURL
	writeJSON  = adaptertest.WriteJSON
)

// outcome is an error reduced to its failure class and fields, for cmp.
type outcome = adaptertest.Outcome

// botSecrets are the token and its secret part.
var botSecrets = []string{testToken, testSecret}

// seen collects every error the tests get from the package, so that
// TestMain can search them all for the token.
var seen adaptertest.Errors

// logErr records err (if any) and fails t at once if it holds the token.
func logErr(t *testing.T, err error) {
	t.Helper()
	adaptertest.CheckErrorNoSecrets(t, seen.Add(err), botSecrets...)
}

func leaks(s string) bool {
	return strings.Contains(s, testToken) || strings.Contains(s, testSecret)
}

// TestMain runs the tests, then searches every error they recorded for
// the token: the last word on the brief's "no token in any error".
func TestMain(m *testing.M) {
	os.Exit(adaptertest.Main(m, &seen, botSecrets, 0))
}

// newClient returns a client for baseURL with its own transport (so tests
// do not share keep-alive connections), a fixed clock and fast backoff.
func newClient(t *testing.T, baseURL string, edit ...func(*Config)) *Client {
	t.Helper()
	cfg := Config{BaseURL: baseURL, Token: testToken, ChatID: testChat, HTTPClient: adaptertest.HTTPClient(t)}
	for _, e := range edit {
		e(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.bot.http.Now = func() time.Time { return fixedNow }
	c.bot.http.ReadBackoff = time.Millisecond
	return c
}

// outcomeOf classifies err and records it in seen. Messages are kept for
// Rejected only.
func outcomeOf(t *testing.T, err error) outcome {
	t.Helper()
	logErr(t, err)
	return adaptertest.OutcomeOf(t, err)
}

// apiError renders the Bot API's error answer
// (https://core.telegram.org/bots/api#making-requests: "ok" false,
// "error_code", "description", optional "parameters").
func apiError(code int, description string, params map[string]any) map[string]any {
	a := map[string]any{"ok": false, "error_code": code, "description": description}
	if params != nil {
		a["parameters"] = params
	}
	return a
}

// seenRequest is one request as the fake saw it.
type seenRequest struct {
	Method, Path, ContentType, Authorization string
	Body                                     map[string]any
}

// fakeBot is a Bot API server for one bot holding one chat's messages. It
// answers in the shapes of https://core.telegram.org/bots/api:
//
//   - POST /bot<token>/sendMessage {"chat_id", "text"} → {"ok":true,
//     "result": Message} with message_id, date, chat {id, type, username}
//     and text (#sendmessage, #message, #chat);
//   - POST /bot<token>/deleteMessage {"chat_id", "message_id"} →
//     {"ok":true,"result":true}, or 400 "Bad Request: message to delete not
//     found" for a message that is not there (#deletemessage);
//   - GET /bot<token>/getMe → a User (#getme);
//   - a wrong token → 401 "Unauthorized", an unknown path → 404 "Not
//     Found" (tdlib/telegram-bot-api HttpConnection.cpp, ClientManager.cpp).
//
// fault, when set, answers a sendMessage after the message was stored:
// the post exists, whatever the client hears.
type fakeBot struct {
	t        *testing.T
	username string // the chat's public username, or ""

	mu       sync.Mutex
	next     int64
	stored   map[int64]string
	sends    int // sendMessage calls
	removed  int // messages deleteMessage removed
	requests []seenRequest
	fault    func(w http.ResponseWriter, r *http.Request)
}

func newFakeBot(t *testing.T, username string) *fakeBot {
	return &fakeBot{t: t, username: username, next: 41, stored: map[int64]string{}}
}

func (f *fakeBot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("read request: %v", err)
	}
	var body map[string]any
	if len(data) > 0 {
		if err := json.Unmarshal(data, &body); err != nil {
			f.t.Errorf("request body is not JSON: %v", err)
		}
	}
	f.mu.Lock()
	f.requests = append(f.requests, seenRequest{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Authorization"), body})
	f.mu.Unlock()

	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+testToken+"/")
	if !ok {
		if strings.HasPrefix(r.URL.Path, "/bot") {
			writeJSON(w, http.StatusUnauthorized, apiError(401, "Unauthorized", nil))
			return
		}
		writeJSON(w, http.StatusNotFound, apiError(404, "Not Found", nil))
		return
	}
	switch method {
	case "sendMessage":
		f.send(w, r, body)
	case "deleteMessage":
		f.delete(w, body)
	case "getMe":
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": map[string]any{
			"id": 123456, "is_bot": true, "first_name": "Oncepost", "username": "oncepost_bot",
			"can_join_groups": true, "can_read_all_group_messages": false, "supports_inline_queries": false,
		}})
	default:
		writeJSON(w, http.StatusNotFound, apiError(404, "Not Found: method not found", nil))
	}
}

func (f *fakeBot) send(w http.ResponseWriter, r *http.Request, body map[string]any) {
	text, _ := body["text"].(string)
	chat := map[string]any{"id": testChatID, "type": "channel", "title": "News"}
	if f.username != "" {
		chat["username"] = f.username
	}
	f.mu.Lock()
	f.sends++
	f.next++
	id := f.next
	f.stored[id] = text
	fault := f.fault
	f.mu.Unlock()
	if fault != nil {
		fault(w, r)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": map[string]any{
		"message_id":  id,
		"sender_chat": chat,
		"chat":        chat,
		"date":        fixedNow.Unix(),
		"text":        text,
	}})
}

func (f *fakeBot) delete(w http.ResponseWriter, body map[string]any) {
	id, _ := body["message_id"].(float64)
	f.mu.Lock()
	_, there := f.stored[int64(id)]
	if there {
		delete(f.stored, int64(id))
		f.removed++
	}
	f.mu.Unlock()
	if !there {
		writeJSON(w, http.StatusBadRequest, apiError(400, "Bad Request: message to delete not found", nil))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": true})
}

// counts returns sends, stored messages and removals.
func (f *fakeBot) counts() (sends, stored, removed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sends, len(f.stored), f.removed
}

func (f *fakeBot) seen() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.requests...)
}

// messageID is the id the fake gives its n-th message (from 1).
func messageID(n int) string { return strconv.Itoa(41 + n) }
