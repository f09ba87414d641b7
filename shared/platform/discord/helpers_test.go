package discord

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"oncepost/shared/platform"
	"oncepost/shared/platform/adaptertest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
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
	// Attachments are the message's files, in the order they were sent.
	Attachments []fakeAttachment
}

// fakeAttachment is one stored file, as Discord's Attachment object
// describes it (https://discord.com/developers/docs/resources/message#attachment-object).
type fakeAttachment struct {
	ID, Filename, ContentType, Description string
	Size                                   int
}

// fakeReq is one request as the fake saw it. Body is the JSON body, or
// the payload_json part of a multipart one; Parts are a multipart body's
// parts in order (nil for a JSON body).
type fakeReq struct {
	Method, Path, Query, Auth, UserAgent, ContentType string
	Body                                              map[string]any
	Parts                                             []fakePart
}

// fakePart is one part of a multipart/form-data request.
type fakePart struct {
	Name, Filename, ContentType string
	Data                        []byte
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
//   - Files: a multipart/form-data create with a payload_json part and
//     parts files[n], each with a filename, described by "attachments"
//     [{id: n, filename, description}]
//     (https://discord.com/developers/docs/reference#uploading-files);
//     at most 10 files (error 30015,
//     https://discord.com/developers/docs/topics/opcodes-and-status-codes#json),
//     10 MiB per file (reference#uploading-files) and 25 MiB per request
//     (https://discord.com/developers/docs/resources/message#create-message),
//     413 with code 40005 beyond a size limit (discord/discord-api-docs#6058);
//     file names cleaned as Discord does (see cleanFilename); a message
//     read back lists its files as Attachment objects.
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
	if mt, params, _ := mime.ParseMediaType(req.ContentType); mt == "multipart/form-data" {
		parts, err := readParts(raw, params["boundary"])
		if err != nil {
			f.t.Errorf("request body is not multipart/form-data: %v", err)
		}
		req.Parts = parts
		for _, p := range parts {
			if p.Name == "payload_json" {
				if err := json.Unmarshal(p.Data, &req.Body); err != nil {
					f.t.Errorf("payload_json is not JSON: %q", p.Data)
				}
			}
		}
	} else if len(raw) > 0 {
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
	return f.storeWith(author, webhook, content, nonce, nil)
}

// storeWith stores a message with files (filename, content type and
// description taken from files; ids and sizes assigned here); the caller
// holds mu.
func (f *fakeDiscord) storeWith(author, webhook, content, nonce string, files []fakeAttachment) fakeMsg {
	f.seq++
	ms := f.clock.UnixMilli() - discordEpoch
	m := fakeMsg{ID: strconv.FormatUint(uint64(ms)<<22|uint64(f.seq&0xFFF), 10), AuthorID: author, WebhookID: webhook,
		Content: content, Nonce: nonce, At: f.clock}
	for _, a := range files {
		f.seq++
		a.ID = strconv.FormatUint(uint64(ms)<<22|uint64(f.seq&0xFFF), 10)
		m.Attachments = append(m.Attachments, a)
	}
	f.clock = f.clock.Add(time.Second)
	f.msgs = append(f.msgs, m)
	return m
}

// addWith stores a message with files as if it had been posted earlier.
func (f *fakeDiscord) addWith(author, content string, files ...fakeAttachment) fakeMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.storeWith(author, "", content, "", files)
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
		"attachments": attachmentsJSON(m), "embeds": []any{}, "pinned": false, "flags": 0, "components": []any{},
	}
	if m.WebhookID != "" {
		v["webhook_id"] = m.WebhookID
	}
	if withNonce && m.Nonce != "" {
		v["nonce"] = m.Nonce
	}
	return v
}

// attachmentsJSON is a message's files as Attachment objects
// (https://discord.com/developers/docs/resources/message#attachment-object).
func attachmentsJSON(m fakeMsg) []any {
	out := []any{}
	for _, a := range m.Attachments {
		u := "https://cdn.discordapp.com/attachments/" + channelID + "/" + a.ID + "/" + a.Filename
		v := map[string]any{"id": a.ID, "filename": a.Filename, "size": a.Size, "url": u, "proxy_url": u,
			"content_type": a.ContentType, "width": 64, "height": 48, "placeholder": "1wcKDQAg", "placeholder_version": 1}
		if a.Description != "" {
			v["description"] = a.Description
		}
		out = append(out, v)
	}
	return out
}

// readParts reads a multipart/form-data body into its parts, in order.
func readParts(raw []byte, boundary string) ([]fakePart, error) {
	if boundary == "" {
		return nil, errors.New("no boundary")
	}
	mr := multipart.NewReader(bytes.NewReader(raw), boundary)
	var parts []fakePart
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return parts, nil
		}
		if err != nil {
			return parts, err
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return parts, err
		}
		parts = append(parts, fakePart{Name: p.FormName(), Filename: p.FileName(), ContentType: p.Header.Get("Content-Type"), Data: data})
	}
}

// cleanFilename is the name Discord stores for an uploaded file, cleaned
// as werkzeug's secure_filename does (discord/discord-api-docs#7754:
// "filenames from files uploaded to discord are cleansed similarly to
// flask's secure_filename()"; #4292: "hello (world).png" becomes
// "hello_world.png"): non-ASCII dropped, white space runs made "_",
// characters other than ASCII letters, digits, "_", "." and "-" dropped,
// leading and trailing "." and "_" trimmed (after NFKD, so "ü" is "u",
// and with "/" as white space, as secure_filename does).
func cleanFilename(name string) string {
	var ascii strings.Builder
	for _, r := range norm.NFKD.String(strings.ReplaceAll(name, "/", " ")) {
		if r < utf8.RuneSelf {
			ascii.WriteRune(r)
		}
	}
	name = strings.Join(strings.Fields(ascii.String()), "_")
	name = unsafeFilename.ReplaceAllString(name, "")
	return strings.Trim(name, "._")
}

var unsafeFilename = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// Discord's limits on files (see fakeDiscord).
const (
	fakeMaxFiles        = 10
	fakeMaxFileBytes    = 10 << 20
	fakeMaxRequestBytes = 25 << 20
)

// createForm is a create request's content: the JSON body (or payload_json)
// and the files[n] parts.
type createForm struct {
	Content      string `json:"content"`
	Nonce        string `json:"nonce"`
	EnforceNonce bool   `json:"enforce_nonce"`
	Attachments  []struct {
		ID          json.Number `json:"id"`
		Filename    string      `json:"filename"`
		Description string      `json:"description"`
	} `json:"attachments"`
	files []fakeAttachment
}

// formError is a create the fake refuses while reading it.
type formError struct {
	status, code int
	msg          string
}

// readCreate reads a create, JSON or multipart/form-data
// (https://discord.com/developers/docs/reference#uploading-files).
func readCreate(r *http.Request) (createForm, *formError) {
	var form createForm
	raw, _ := io.ReadAll(r.Body)
	if len(raw) > fakeMaxRequestBytes {
		return form, &formError{http.StatusRequestEntityTooLarge, codeTooLarge, "Request entity too large"}
	}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		if err := json.Unmarshal(raw, &form); err != nil {
			return form, &formError{http.StatusBadRequest, 50109, "The request body contains invalid JSON."}
		}
		return form, nil
	}
	parts, err := readParts(raw, params["boundary"])
	if err != nil {
		return form, &formError{http.StatusBadRequest, 50035, "Invalid Form Body"}
	}
	files := map[int]fakePart{}
	var order []int
	sawPayload := false
	for _, p := range parts {
		if p.Name == "payload_json" {
			if err := json.Unmarshal(p.Data, &form); err != nil {
				return form, &formError{http.StatusBadRequest, 50109, "The request body contains invalid JSON."}
			}
			sawPayload = true
			continue
		}
		m := filesPart.FindStringSubmatch(p.Name)
		if m == nil || p.Filename == "" {
			// "All files[n] parameters must include a valid
			// Content-Disposition subpart header with a filename and
			// unique name parameter."
			return form, &formError{http.StatusBadRequest, codeInvalidForm, "Invalid Form Body"}
		}
		n, _ := strconv.Atoi(m[1])
		if _, dup := files[n]; dup {
			return form, &formError{http.StatusBadRequest, codeInvalidForm, "Invalid Form Body"}
		}
		if len(p.Data) > fakeMaxFileBytes {
			return form, &formError{http.StatusRequestEntityTooLarge, codeTooLarge, "Request entity too large"}
		}
		files[n] = p
		order = append(order, n)
	}
	if !sawPayload {
		return form, &formError{http.StatusBadRequest, codeInvalidForm, "Invalid Form Body"}
	}
	if len(files) > fakeMaxFiles {
		return form, &formError{http.StatusBadRequest, 30015, "Maximum number of attachments in a message reached (10)"}
	}
	meta := map[int]int{} // n → index in form.Attachments
	for i, a := range form.Attachments {
		n, err := strconv.Atoi(a.ID.String())
		if _, ok := files[n]; err != nil || !ok {
			// An attachment id must be the n of a files[n] part.
			return form, &formError{http.StatusBadRequest, codeInvalidForm, "Invalid Form Body"}
		}
		meta[n] = i
	}
	for _, n := range order {
		p := files[n]
		a := fakeAttachment{Filename: p.Filename, ContentType: p.ContentType, Size: len(p.Data)}
		if i, ok := meta[n]; ok {
			if fn := form.Attachments[i].Filename; fn != "" {
				a.Filename = fn
			}
			a.Description = form.Attachments[i].Description
		}
		a.Filename = cleanFilename(a.Filename)
		form.files = append(form.files, a)
	}
	return form, nil
}

var filesPart = regexp.MustCompile(`^files\[(\d+)\]$`)

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

// create validates and stores a create, JSON or with files; the
// webhook's has no nonce.
func (f *fakeDiscord) create(w http.ResponseWriter, r *http.Request, webhook bool) {
	body, ferr := readCreate(r)
	if ferr != nil {
		apiErr(w, ferr.status, ferr.code, ferr.msg)
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
	case body.Content == "" && len(body.files) == 0:
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
		m = f.storeWith(webhookID, webhookID, body.Content, "", body.files)
	} else {
		m = f.storeWith(botID, "", body.Content, body.Nonce, body.files)
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

// image is a file as the publisher passes it (inlineMedia in
// shared/publishing: the media ref's name, <sha256 hex>.<ext>).
func image(data, ext, contentType, alt string) platform.MediaUpload {
	sum := sha256.Sum256([]byte(data))
	return platform.MediaUpload{Filename: hex.EncodeToString(sum[:]) + "." + ext, ContentType: contentType, Data: []byte(data), Alt: alt}
}

// sha256Of is the hex SHA-256 of a file's bytes, as the ledger's
// fingerprint takes it.
func sha256Of(m platform.MediaUpload) string {
	sum := sha256.Sum256(m.Data)
	return hex.EncodeToString(sum[:])
}

// keptAs is an uploaded file as the fake keeps it (without its id).
func keptAs(m platform.MediaUpload) fakeAttachment {
	return fakeAttachment{Filename: m.Filename, ContentType: m.ContentType, Description: m.Alt, Size: len(m.Data)}
}
