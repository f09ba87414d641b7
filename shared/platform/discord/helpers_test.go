package discord

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"oncepost/shared/platform/adaptertest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Identities of the fake guild. The tokens are distinctive so that
// TestMain can search every error the tests saw for them.
const (
	botToken     = "bot-T0KEN.secret-MTk4NjIy"
	webhookToken = "wh-T0KEN_secret-ZnCjm1XV"
	botID        = "1100000000000000001"
	channelID    = "1200000000000000002"
	guildID      = "1300000000000000003"
	webhookID    = "1400000000000000004"
	otherUserID  = "1500000000000000005"
)

// fixedNow is the fake server's clock at its first message.
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

// seen collects every error the tests classified or noted, for the token
// check in TestMain.
var seen adaptertest.Errors

// noteError records err (if any) for the token check.
func noteError(err error) { seen.Add(err) }

// TestMain runs the tests, then fails the run if any error a test looked
// at carries a token: no token may appear in an error message (they end
// up in logs and in the ledger's reasons). A full run that collected no
// error fails too: the check would prove nothing.
func TestMain(m *testing.M) {
	os.Exit(adaptertest.Main(m, &seen, []string{botToken, webhookToken, url.PathEscape(webhookToken), "T0KEN"}, 1))
}

// fakeMsg is one stored message.
type fakeMsg struct {
	ID, AuthorID, WebhookID, Content, Nonce string
	At                                      time.Time
}

// fakeReq is one request as the fake saw it.
type fakeReq struct {
	Method, Path, Query, Auth, UserAgent, ContentType string
	Body                                              map[string]any
}

// fakeDiscord is a Discord API double holding one guild text channel, the
// bot that posts to it and one incoming webhook into it. Its answers
// follow Discord's documentation:
//   - Message object, Create Message (nonce, enforce_nonce), Get Channel
//     Messages (before/after/limit, newest first, no messages without
//     READ_MESSAGE_HISTORY), Get/Delete Message:
//     https://discord.com/developers/docs/resources/message
//   - Execute Webhook (?wait=true), Get Webhook with Token, Get/Delete
//     Webhook Message: https://discord.com/developers/docs/resources/webhook
//   - Get Current User: https://discord.com/developers/docs/resources/user#get-current-user
//   - Get Channel (guild_id): https://discord.com/developers/docs/resources/channel#get-channel
//   - JSON errors {"code", "message", "errors"}:
//     https://discord.com/developers/docs/topics/opcodes-and-status-codes#json
//     and https://discord.com/developers/docs/reference#error-messages
//
// A message read back carries no nonce, as on Discord (only the create
// answer does; discord.py#2451), unless nonceOnRead is set.
type fakeDiscord struct {
	t   *testing.T
	srv *httptest.Server
	mux *http.ServeMux

	mu          sync.Mutex
	clock       time.Time
	seq         int
	msgs        []fakeMsg // ascending by id
	creates     int       // create requests received
	removed     int       // messages deleted
	reqs        []fakeReq
	nonceOnRead bool
	hideHistory bool
	// channelDown makes Get Channel answer 500.
	channelDown bool
	// beforeCreate, when set, answers a create instead of the fake, which
	// then stores nothing; it returns false to let the fake go on.
	beforeCreate func(w http.ResponseWriter, r *http.Request) bool
	// afterCreate runs once a create is stored; true means it answered
	// (or dropped) the request itself.
	afterCreate func(w http.ResponseWriter, r *http.Request, m fakeMsg) bool
}

func newFake(t *testing.T) *fakeDiscord {
	t.Helper()
	f := &fakeDiscord{t: t, clock: fixedNow, mux: http.NewServeMux()}
	f.routes()
	f.srv = newServer(t, f)
	return f
}

func (f *fakeDiscord) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(raw))
	req := fakeReq{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization"),
		UserAgent: r.Header.Get("User-Agent"), ContentType: r.Header.Get("Content-Type")}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &req.Body); err != nil {
			f.t.Errorf("request body is not JSON: %q", raw)
		}
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	f.mux.ServeHTTP(w, r)
}

// add stores a message as if it had been posted earlier.
func (f *fakeDiscord) add(author, content string) fakeMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.store(author, "", content, "")
}

// store appends a message; the caller holds mu. Each message is one
// second after the previous one, its id the snowflake of that time.
func (f *fakeDiscord) store(author, webhook, content, nonce string) fakeMsg {
	f.seq++
	ms := f.clock.UnixMilli() - discordEpoch
	m := fakeMsg{ID: strconv.FormatUint(uint64(ms)<<22|uint64(f.seq&0xFFF), 10), AuthorID: author, WebhookID: webhook,
		Content: content, Nonce: nonce, At: f.clock}
	f.clock = f.clock.Add(time.Second)
	f.msgs = append(f.msgs, m)
	return m
}

func (f *fakeDiscord) stored() []fakeMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.msgs)
}

func (f *fakeDiscord) counts() (creates, removed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates, f.removed
}

// requests returns the requests seen with the method and path prefix.
func (f *fakeDiscord) requests(method, pathPrefix string) []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeReq
	for _, r := range f.reqs {
		if r.Method == method && strings.HasPrefix(r.Path, pathPrefix) {
			out = append(out, r)
		}
	}
	return out
}

func (f *fakeDiscord) find(id string) (fakeMsg, int) {
	for i, m := range f.msgs {
		if m.ID == id {
			return m, i
		}
	}
	return fakeMsg{}, -1
}

func (f *fakeDiscord) messageJSON(m fakeMsg, withNonce bool) map[string]any {
	author := map[string]any{"id": m.AuthorID, "username": "someone", "discriminator": "0", "global_name": nil}
	if m.AuthorID == botID || m.WebhookID != "" {
		author["bot"] = true
	}
	v := map[string]any{
		"id": m.ID, "type": 0, "channel_id": channelID, "author": author, "content": m.Content,
		"timestamp":        m.At.UTC().Format("2006-01-02T15:04:05.000000-07:00"),
		"edited_timestamp": nil, "tts": false, "mention_everyone": false, "mentions": []any{}, "mention_roles": []any{},
		"attachments": []any{}, "embeds": []any{}, "pinned": false, "flags": 0, "components": []any{},
	}
	if m.WebhookID != "" {
		v["webhook_id"] = m.WebhookID
	}
	if withNonce && m.Nonce != "" {
		v["nonce"] = m.Nonce
	}
	return v
}

func apiErr(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"message": msg, "code": code})
}

func (f *fakeDiscord) botAuth(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Authorization") != "Bot "+botToken {
		apiErr(w, http.StatusUnauthorized, 0, "401: Unauthorized")
		return false
	}
	if c := r.PathValue("c"); c != "" && c != channelID {
		apiErr(w, http.StatusNotFound, codeUnknownChannel, "Unknown Channel")
		return false
	}
	return true
}

func (f *fakeDiscord) webhookAuth(w http.ResponseWriter, r *http.Request) bool {
	if r.PathValue("w") != webhookID {
		apiErr(w, http.StatusNotFound, codeUnknownWebhook, "Unknown Webhook")
		return false
	}
	if r.PathValue("tok") != webhookToken {
		apiErr(w, http.StatusUnauthorized, 50027, "Invalid Webhook Token")
		return false
	}
	return true
}

// create validates and stores a create; the webhook's has no nonce.
func (f *fakeDiscord) create(w http.ResponseWriter, r *http.Request, webhook bool) {
	var body struct {
		Content      string `json:"content"`
		Nonce        string `json:"nonce"`
		EnforceNonce bool   `json:"enforce_nonce"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "The request body contains invalid JSON.", "code": 50109})
		return
	}
	f.mu.Lock()
	f.creates++
	before := f.beforeCreate
	f.mu.Unlock()
	if before != nil && before(w, r) {
		return
	}
	switch {
	case body.Content == "":
		apiErr(w, http.StatusBadRequest, codeEmptyMessage, "Cannot send an empty message")
		return
	case utf8.RuneCountInString(body.Content) > 2000:
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": codeInvalidForm,
			"errors": map[string]any{"content": map[string]any{"_errors": []any{
				map[string]any{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}}}}})
		return
	case len(body.Nonce) > NonceLength:
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": codeInvalidForm,
			"errors": map[string]any{"nonce": map[string]any{"_errors": []any{
				map[string]any{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 25 or fewer in length."}}}}})
		return
	}
	f.mu.Lock()
	if !webhook && body.EnforceNonce && body.Nonce != "" {
		// "If another message was created by the same author with the
		// same nonce, that message will be returned and no new message
		// will be created."
		for _, m := range f.msgs {
			if m.AuthorID == botID && m.Nonce == body.Nonce {
				f.mu.Unlock()
				writeJSON(w, http.StatusOK, f.messageJSON(m, true))
				return
			}
		}
	}
	var m fakeMsg
	if webhook {
		m = f.store(webhookID, webhookID, body.Content, "")
	} else {
		m = f.store(botID, "", body.Content, body.Nonce)
	}
	after := f.afterCreate
	f.mu.Unlock()
	if after != nil && after(w, r, m) {
		return
	}
	writeJSON(w, http.StatusOK, f.messageJSON(m, true))
}

func (f *fakeDiscord) routes() {
	f.mux.HandleFunc("GET /api/v10/users/@me", func(w http.ResponseWriter, r *http.Request) {
		if f.botAuth(w, r) {
			writeJSON(w, http.StatusOK, map[string]any{"id": botID, "username": "oncepost", "discriminator": "0", "bot": true})
		}
	})
	f.mux.HandleFunc("GET /api/v10/channels/{c}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		down := f.channelDown
		f.mu.Unlock()
		if down {
			apiErr(w, http.StatusInternalServerError, 0, "500: Internal Server Error")
			return
		}
		if f.botAuth(w, r) {
			writeJSON(w, http.StatusOK, map[string]any{"id": channelID, "type": 0, "guild_id": guildID, "name": "news"})
		}
	})
	f.mux.HandleFunc("POST /api/v10/channels/{c}/messages", func(w http.ResponseWriter, r *http.Request) {
		if f.botAuth(w, r) {
			f.create(w, r, false)
		}
	})
	f.mux.HandleFunc("GET /api/v10/channels/{c}/messages", func(w http.ResponseWriter, r *http.Request) {
		if !f.botAuth(w, r) {
			return
		}
		q := r.URL.Query()
		limit := 50
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 100 {
				writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid Form Body", "code": codeInvalidForm})
				return
			}
			limit = n
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		page := []map[string]any{}
		if f.hideHistory {
			writeJSON(w, http.StatusOK, page)
			return
		}
		var sel []fakeMsg
		switch after, before := q.Get("after"), q.Get("before"); {
		case after != "":
			for _, m := range f.msgs {
				if compareIDs(m.ID, after) > 0 && len(sel) < limit {
					sel = append(sel, m)
				}
			}
		case before != "":
			for _, m := range f.msgs {
				if compareIDs(m.ID, before) < 0 {
					sel = append(sel, m)
				}
			}
			sel = sel[max(0, len(sel)-limit):]
		default:
			sel = f.msgs[max(0, len(f.msgs)-limit):]
		}
		for i := len(sel) - 1; i >= 0; i-- { // newest to oldest
			page = append(page, f.messageJSON(sel[i], f.nonceOnRead))
		}
		writeJSON(w, http.StatusOK, page)
	})
	f.mux.HandleFunc("GET /api/v10/channels/{c}/messages/{m}", func(w http.ResponseWriter, r *http.Request) {
		if f.botAuth(w, r) {
			f.getMessage(w, r, "")
		}
	})
	f.mux.HandleFunc("DELETE /api/v10/channels/{c}/messages/{m}", func(w http.ResponseWriter, r *http.Request) {
		if f.botAuth(w, r) {
			f.deleteMessage(w, r, "")
		}
	})
	f.mux.HandleFunc("GET /api/v10/webhooks/{w}/{tok}", func(w http.ResponseWriter, r *http.Request) {
		if f.webhookAuth(w, r) {
			writeJSON(w, http.StatusOK, map[string]any{"id": webhookID, "type": 1, "guild_id": guildID, "channel_id": channelID,
				"name": "oncepost", "avatar": nil, "application_id": nil, "token": webhookToken})
		}
	})
	f.mux.HandleFunc("POST /api/v10/webhooks/{w}/{tok}", func(w http.ResponseWriter, r *http.Request) {
		if !f.webhookAuth(w, r) {
			return
		}
		if r.URL.Query().Get("wait") != "true" {
			// Without wait Discord answers before saving, with no body.
			f.t.Errorf("webhook execute without wait=true: %s", r.URL.RawQuery)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		f.create(w, r, true)
	})
	f.mux.HandleFunc("GET /api/v10/webhooks/{w}/{tok}/messages/{m}", func(w http.ResponseWriter, r *http.Request) {
		if f.webhookAuth(w, r) {
			f.getMessage(w, r, webhookID)
		}
	})
	f.mux.HandleFunc("DELETE /api/v10/webhooks/{w}/{tok}/messages/{m}", func(w http.ResponseWriter, r *http.Request) {
		if f.webhookAuth(w, r) {
			f.deleteMessage(w, r, webhookID)
		}
	})
}

// getMessage answers a read by id; a webhook reads only its own messages.
func (f *fakeDiscord) getMessage(w http.ResponseWriter, r *http.Request, webhook string) {
	f.mu.Lock()
	m, i := f.find(r.PathValue("m"))
	f.mu.Unlock()
	if i < 0 || (webhook != "" && m.WebhookID != webhook) {
		apiErr(w, http.StatusNotFound, codeUnknownMessage, "Unknown Message")
		return
	}
	writeJSON(w, http.StatusOK, f.messageJSON(m, f.nonceOnRead))
}

// deleteMessage removes a message: 204, or 404 Unknown Message.
func (f *fakeDiscord) deleteMessage(w http.ResponseWriter, r *http.Request, webhook string) {
	f.mu.Lock()
	m, i := f.find(r.PathValue("m"))
	if i < 0 || (webhook != "" && m.WebhookID != webhook) {
		f.mu.Unlock()
		apiErr(w, http.StatusNotFound, codeUnknownMessage, "Unknown Message")
		return
	}
	f.msgs = slices.Delete(f.msgs, i, i+1)
	f.removed++
	f.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// newClient returns a client of the mode for base, with its own transport
// (tests share no keep-alive connections) and fast read backoff.
func newClient(t *testing.T, mode Mode, base string, edit ...func(*Config)) *Client {
	t.Helper()
	cfg := Config{Mode: mode, BaseURL: base, HTTPClient: adaptertest.HTTPClient(t)}
	switch mode {
	case ModeBot:
		cfg.ChannelID, cfg.Credential.AccessToken = channelID, botToken
	case ModeWebhook:
		cfg.WebhookID, cfg.Credential.AccessToken = webhookID, webhookToken
	}
	for _, e := range edit {
		e(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.http.ReadBackoff = time.Millisecond
	c.http.Now = func() time.Time { return fixedNow }
	return c
}

// outcomeOf classifies err (and notes it for the token check); the tests
// compare the class and its fields, not the message.
func outcomeOf(t *testing.T, err error) outcome {
	t.Helper()
	noteError(err)
	return adaptertest.OutcomeOf(t, err).WithoutMessage()
}
