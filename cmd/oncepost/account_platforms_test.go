package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/pdstest"
	"oncepost/shared/platform"
	"oncepost/shared/platform/catalog"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/sqlitestore"
)

// addEnv is a workspace for account add, and everything its commands
// printed, which must hold none of the secrets the test gave or received
// (checked when the test ends).
type addEnv struct {
	t       *testing.T
	dir, db string

	mu      sync.Mutex
	printed []string
	secrets []string
}

func newAddEnv(t *testing.T) *addEnv {
	t.Helper()
	dir := t.TempDir()
	e := &addEnv{t: t, dir: dir, db: filepath.Join(dir, "oncepost.db")}
	t.Cleanup(e.checkNoSecrets)
	return e
}

// secret records values no output may contain.
func (e *addEnv) secret(values ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.secrets = append(e.secrets, values...)
}

func (e *addEnv) record(out ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.printed = append(e.printed, out...)
}

func (e *addEnv) checkNoSecrets() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.printed) == 0 {
		e.t.Error("no output was recorded: the secret check would prove nothing")
	}
	all := strings.Join(e.printed, "\n")
	for _, s := range e.secrets {
		if s != "" && strings.Contains(all, s) {
			e.t.Errorf("a command printed the secret %.4s…", s)
		}
	}
}

func (e *addEnv) file(name, content string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// run runs oncepost in this process on the workspace.
func (e *addEnv) run(args ...string) (int, string) {
	e.t.Helper()
	var stdout, stderr bytes.Buffer
	code := runCLI(context.Background(), append(args, "--db", e.db), &stdout, &stderr)
	e.record(stdout.String(), stderr.String())
	return code, stdout.String() + stderr.String()
}

// child runs oncepost as a child process with stdin, on the workspace.
func (e *addEnv) child(stdin string, args ...string) (int, string) {
	e.t.Helper()
	code, stdout, stderr := runChild(e.t, nil, stdin, append(args, "--db", e.db)...)
	e.record(stdout, stderr)
	return code, stdout + stderr
}

// stored returns the account and its credential, or ok false.
func (e *addEnv) stored(id string) (post.Account, platform.Credential, bool) {
	e.t.Helper()
	if _, err := os.Stat(e.db); err != nil {
		return post.Account{}, platform.Credential{}, false
	}
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, e.db, sqlitestore.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	defer s.Close()
	a, err := s.GetAccount(ctx, post.AccountID(id))
	if err != nil {
		return post.Account{}, platform.Credential{}, false
	}
	c, err := s.Credential(ctx, a.ID)
	if err != nil {
		e.t.Fatalf("account %s has no credential: %v", id, err)
	}
	return a, c, true
}

// snapshot is what the workspace holds (nil before it exists).
func (e *addEnv) snapshot() *snapshot {
	e.t.Helper()
	if _, err := os.Stat(e.db); err != nil {
		return nil
	}
	s := takeSnapshot(e.t, e.db)
	return &s
}

// refusedNothingStored checks a refused add: exit 2, the output names
// what it must, and the workspace did not change. It returns the output.
func (e *addEnv) refusedNothingStored(want []string, args ...string) string {
	e.t.Helper()
	before := e.snapshot()
	code, out := e.run(args...)
	if code != exitUsage {
		e.t.Errorf("exit %d, want %d; output %q", code, exitUsage, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			e.t.Errorf("output %q does not mention %q", out, w)
		}
	}
	if diff := cmp.Diff(before, e.snapshot()); diff != "" {
		e.t.Errorf("a refused add wrote (-before +after):\n%s", diff)
	}
	return out
}

func limitsOfKind(t *testing.T, name string) post.Limits {
	t.Helper()
	k, ok := catalog.Lookup(name)
	if !ok {
		t.Fatalf("no platform %s", name)
	}
	return k.AccountLimits()
}

// Bluesky against the reference PDS: the app password is read from a file
// and only the session is stored; the stored session publishes; a wrong
// password stores nothing; --replace takes the same account's session
// (here from stdin) and refuses another account's.
func TestAccountAddBlueskyOnTheReferencePDS(t *testing.T) {
	pds := pdstest.Start(t)
	e := newAddEnv(t)
	ctx := context.Background()
	alice := pds.CreateAccount(t, "alice.test", "correct-Horse-battery-9")
	bob := pds.CreateAccount(t, "bob.test", "other-Staple-password-7")
	e.secret(alice.Password, bob.Password, "not-the-Password-1")
	add := func(id, handle, pwFile string, extra ...string) []string {
		return append([]string{"account", "add", "--id", id, "--platform", "bluesky", "--api-url", pds.URL, "--handle", handle, "--password-file", pwFile}, extra...)
	}

	code, out := e.run(add("sky", "alice.test", e.file("alice.pw", alice.Password+"\n"))...)
	if code != exitOK || !strings.Contains(out, "added sky: @alice.test on "+pds.URL) {
		t.Fatalf("account add: exit %d, %q", code, out)
	}
	acc, cred, ok := e.stored("sky")
	if !ok {
		t.Fatal("nothing stored")
	}
	want := post.Account{ID: "sky", Platform: "bluesky", Handle: "@alice.test", BaseURL: pds.URL, RemoteID: alice.DID,
		CredentialRef: "sky", Gate: post.GateAuto, Limits: limitsOfKind(t, "bluesky")}
	if diff := cmp.Diff(want, acc); diff != "" {
		t.Errorf("stored account (-want +got):\n%s", diff)
	}
	if cred.AccessToken == "" || cred.RefreshToken == "" {
		t.Errorf("the stored credential is not a session (access %t, refresh %t)", cred.AccessToken != "", cred.RefreshToken != "")
	}
	for _, v := range []string{cred.AccessToken, cred.RefreshToken, cred.ClientID, cred.ClientSecret} {
		if strings.Contains(v, alice.Password) {
			t.Error("the app password is stored")
		}
	}
	e.secret(cred.AccessToken, cred.RefreshToken)

	// The stored session works: a post published with it is on the PDS.
	client, err := catalog.Connector{}.Client(ctx, acc, cred)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := client.Publish(ctx, platform.PublishRequest{Handle: ledger.NewHandle(), Text: "Connected by oncepost account add.", CreatedAt: time.Now().UTC()})
	if err != nil {
		t.Fatalf("publish with the stored session: %v", err)
	}
	if recs := pds.ListPosts(t, alice.DID); len(recs) != 1 || recs[0].URI != rec.RemoteID {
		t.Errorf("the PDS holds %+v, want the one post %s", recs, rec.RemoteID)
	}
	code, out = e.run("account", "show", "sky")
	for _, w := range []string{"platform:   bluesky", "handle:     @alice.test", "remote id:  " + alice.DID, "credential: stored, encrypted, refreshable"} {
		if code != exitOK || !strings.Contains(out, w) {
			t.Errorf("account show: exit %d, %q lacks %q", code, out, w)
		}
	}

	// A wrong password: refused, nothing stored.
	e.refusedNothingStored([]string{"--password-file: the PDS at " + pds.URL + " refused it", "nothing was stored"},
		add("sky2", "alice.test", e.file("wrong.pw", "not-the-Password-1\n"))...)
	// --replace with another account's password: refused.
	e.refusedNothingStored([]string{"belongs to @bob.test", alice.DID},
		add("sky", "bob.test", e.file("bob.pw", bob.Password+"\n"), "--replace")...)
	// --replace with its own, from stdin: a new session.
	code, out = e.child(alice.Password+"\n", add("sky", "alice.test", "-", "--replace")...)
	if code != exitOK || !strings.Contains(out, "reconnected sky: @alice.test") {
		t.Fatalf("account add --replace: exit %d, %q", code, out)
	}
	_, again, _ := e.stored("sky")
	e.secret(again.AccessToken, again.RefreshToken)
	if again.AccessToken == "" || again.RefreshToken == cred.RefreshToken {
		t.Error("--replace did not store the new session")
	}
}

// Every platform the Mastodon adapter serves (Mastodon, and whatever
// Mastodon-compatible platform the catalog adds) connects the Mastodon
// way: the token is verified on the instance, whose limits are read.
func TestAccountAddMastodonCompatiblePlatforms(t *testing.T) {
	sb := sandbox.New(sandbox.Options{MaxCharacters: 321})
	if err := sb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	e := newAddEnv(t)
	n := 0
	for _, k := range catalog.Kinds() {
		if k.Capabilities.Platform != catalog.Mastodon {
			continue
		}
		n++
		sa := sb.AddAccount("user" + strings.ReplaceAll(k.Name, "-", ""))
		e.secret(sa.AccessToken)
		code, out := e.run("account", "add", "--id", k.Name, "--platform", k.Name, "--url", sb.URL(), "--token-file", e.file(k.Name+".token", sa.AccessToken+"\n"))
		if code != exitOK {
			t.Fatalf("%s: exit %d, %q", k.Name, code, out)
		}
		acc, cred, _ := e.stored(k.Name)
		if acc.Platform != k.Name || acc.RemoteID != sa.ID || acc.Limits.MaxTextGraphemes != 321 || cred.AccessToken != sa.AccessToken {
			t.Errorf("%s: stored %+v", k.Name, acc)
		}
	}
	if n == 0 {
		t.Fatal("the catalog has no platform on the Mastodon adapter")
	}
}

// tgToken has the shape of the Bot API's example token; tgSecret is its
// secret part.
const (
	tgToken  = "123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11"
	tgSecret = "ABC-DEF1234ghIkl-zyx57W2v1u123ew11"
)

// tgChats are the chats the fake Telegram bot can see, by their
// getChat answers (https://core.telegram.org/bots/api#chatfullinfo).
var tgChats = []map[string]any{
	{"id": int64(-1001234567890), "type": "channel", "title": "News", "username": "newschannel"},
	{"id": int64(-1009876543210), "type": "channel", "title": "Other", "username": "otherchannel"},
}

// fakeTelegram answers getMe and getChat as the Bot API does
// (https://core.telegram.org/bots/api#getme, #getchat): the token is in
// the path, getChat takes chat_id (a number, or a public chat's
// "@username", case-insensitive) in a JSON body, a form or the query,
// and a chat the bot cannot see is 400 "Bad Request: chat not found".
func fakeTelegram(t *testing.T, calls *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		bot, method, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		switch {
		case method != "getMe" && method != "getChat":
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"ok":false,"error_code":404,"description":"Not Found"}`)
		case bot != "bot"+tgToken:
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"ok":false,"error_code":401,"description":"Unauthorized"}`)
		case method == "getMe":
			io.WriteString(w, `{"ok":true,"result":{"id":123456,"is_bot":true,"first_name":"News","username":"news_bot"}}`)
		default:
			var chatID string
			if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				var body struct {
					ChatID json.RawMessage `json:"chat_id"`
				}
				json.NewDecoder(r.Body).Decode(&body)
				chatID = strings.Trim(string(body.ChatID), `"`)
			} else {
				r.ParseForm()
				chatID = r.Form.Get("chat_id")
			}
			for _, c := range tgChats {
				if chatID == strconv.FormatInt(c["id"].(int64), 10) || strings.EqualFold(chatID, "@"+c["username"].(string)) {
					json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": c})
					return
				}
			}
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Telegram: the bot token from a file is checked with getMe and the chat
// with getChat; the remote id is the chat's numeric id (resolved from an
// @username, as given when numeric) and the handle names the bot and the
// chat. A refused token, a malformed one and a chat the bot cannot see
// store nothing; the malformed token is refused before any call.
// --replace takes the same chat by id or @username, also for an account
// an earlier version stored by its @username, and refuses another chat.
func TestAccountAddTelegram(t *testing.T) {
	var calls atomic.Int32
	srv := fakeTelegram(t, &calls)
	e := newAddEnv(t)
	e.secret(tgToken, tgSecret, "654321:Wrong-secret_XYZ")
	addChat := func(id, tokenFile, chat string, extra ...string) []string {
		return append([]string{"account", "add", "--id", id, "--platform", "telegram", "--api-url", srv.URL, "--token-file", tokenFile, "--chat", chat}, extra...)
	}
	add := func(id, tokenFile string, extra ...string) []string {
		return addChat(id, tokenFile, "@newschannel", extra...)
	}
	const handle = "@news_bot → News (@newschannel)"
	token := e.file("bot.token", tgToken+"\n")
	code, out := e.run(add("tg", token, "--gate", "manual")...)
	if code != exitOK || !strings.Contains(out, "added tg: "+handle+" on "+srv.URL) || !strings.Contains(out, "the bot can see the chat") {
		t.Fatalf("account add: exit %d, %q", code, out)
	}
	acc, cred, _ := e.stored("tg")
	want := post.Account{ID: "tg", Platform: "telegram", Handle: handle, BaseURL: srv.URL, RemoteID: "-1001234567890",
		CredentialRef: "tg", Gate: post.GateManual, Limits: limitsOfKind(t, "telegram")}
	if diff := cmp.Diff(want, acc); diff != "" {
		t.Errorf("stored account (-want +got):\n%s", diff)
	}
	if cred.AccessToken != tgToken {
		t.Error("the stored credential is not the bot token")
	}
	// A numeric chat is stored as given (in a workspace of its own: the
	// chat is tg's, and one chat under two ids is refused).
	byID := newAddEnv(t)
	byID.secret(tgToken)
	if code, out := byID.run(addChat("tgid", byID.file("bot.token", tgToken+"\n"), "-1001234567890")...); code != exitOK || !strings.Contains(out, "added tgid: "+handle) {
		t.Fatalf("account add by chat id: exit %d, %q", code, out)
	}
	if acc, _, _ := byID.stored("tgid"); acc.RemoteID != "-1001234567890" || acc.Handle != handle {
		t.Errorf("stored by chat id: remote id %q, handle %q", acc.RemoteID, acc.Handle)
	}
	// The same chat under another id, by @username or by id, is refused.
	for _, chat := range []string{"@newschannel", "-1001234567890"} {
		e.refusedNothingStored([]string{`connected already as account "tg"`}, addChat("tg2", token, chat)...)
	}

	e.refusedNothingStored([]string{"--token-file: Telegram refused it", "nothing was stored"},
		add("tg2", e.file("wrong.token", "654321:Wrong-secret_XYZ\n"))...)
	n := calls.Load()
	e.refusedNothingStored([]string{"--token-file", "does not hold a bot token of the form <bot id>:<secret>"},
		add("tg2", e.file("shape.token", "not-a-bot-token\n"))...)
	if calls.Load() != n {
		t.Error("a malformed token was sent")
	}
	// A chat the bot cannot see, by @username or by id.
	for _, chat := range []string{"@nosuchchannel", "-1001111111111"} {
		e.refusedNothingStored([]string{"--chat: Telegram refused it", "chat not found", "add @news_bot to the chat", "nothing was stored"},
			addChat("tg2", token, chat)...)
	}
	// --replace keeps the gate and checks the chat is the same account,
	// given by @username (any case) or by id.
	for _, chat := range []string{"@NewsChannel", "-1001234567890"} {
		if code, out := e.run(addChat("tg", token, chat, "--replace")...); code != exitOK || !strings.Contains(out, "reconnected tg: "+handle) {
			t.Errorf("--replace --chat %s: exit %d, %q", chat, code, out)
		}
	}
	if acc, _, _ := e.stored("tg"); acc.Gate != post.GateManual || acc.RemoteID != "-1001234567890" {
		t.Errorf("--replace stored gate %q, remote id %q", acc.Gate, acc.RemoteID)
	}
	e.refusedNothingStored([]string{"belongs to @news_bot → Other (@otherchannel) (id -1009876543210)", "(id -1001234567890)"},
		addChat("tg", token, "@otherchannel", "--replace")...)
	// An account stored by its @username (as earlier versions did) is
	// reconnected, and now stored by its id (tg, the same chat, removed
	// first).
	if code, out := e.run("account", "remove", "tg"); code != exitOK {
		t.Fatalf("account remove tg: exit %d, %q", code, out)
	}
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, e.db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	legacy := post.Account{ID: "old", Platform: "telegram", Handle: "@news_bot → @newschannel", BaseURL: srv.URL, RemoteID: "@newschannel", CredentialRef: "old", Gate: post.GateAuto}
	if err := st.PutAccount(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if code, out := e.run(add("old", token, "--replace")...); code != exitOK || !strings.Contains(out, "reconnected old: "+handle) {
		t.Errorf("--replace of an account stored by @username: exit %d, %q", code, out)
	}
	if acc, _, _ := e.stored("old"); acc.RemoteID != "-1001234567890" || acc.Handle != handle {
		t.Errorf("reconnected by @username: remote id %q, handle %q", acc.RemoteID, acc.Handle)
	}
	// --replace does not move an account to another platform.
	e.refusedNothingStored([]string{"--platform", `account "old" is on telegram, not discord`},
		"account", "add", "--id", "old", "--replace", "--platform", "discord", "--api-url", srv.URL, "--token-file", token, "--channel", "1200000000000000002")
}

// account show's reconnect hint is the command for the account's
// platform.
func TestAccountReconnectCommandFitsThePlatform(t *testing.T) {
	for _, tc := range []struct {
		account post.Account
		want    string
	}{
		{post.Account{ID: "news", Platform: "mastodon", BaseURL: "https://mastodon.social"}, "oncepost account add --id news --replace --url https://mastodon.social --token-file FILE"},
		{post.Account{ID: "sky", Platform: "bluesky", Handle: "@news.bsky.social", BaseURL: "https://bsky.social"}, "oncepost account add --id sky --replace --platform bluesky --handle news.bsky.social --password-file FILE"},
		{post.Account{ID: "tg", Platform: "telegram", RemoteID: "@newschannel", BaseURL: "http://127.0.0.1:8081"}, "oncepost account add --id tg --replace --api-url http://127.0.0.1:8081 --platform telegram --token-file FILE --chat @newschannel"},
		{post.Account{ID: "hook", Platform: "discord-webhook", BaseURL: "https://discord.com"}, "oncepost account add --id hook --replace --platform discord-webhook --webhook-file FILE"},
		{post.Account{ID: "li", Platform: "linkedin", BaseURL: "https://api.linkedin.com"}, "oncepost account add --id li --replace --platform linkedin --client-id ID --client-secret-file FILE"},
	} {
		if got := reconnectCommand(tc.account); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.account.Platform, got, tc.want)
		}
	}
}

// The Discord ids and tokens of the fake (tokens distinctive, for the
// secret search).
const (
	dcBotToken     = "bot-T0KEN.secret-MTk4NjIy"
	dcChannel      = "1200000000000000002"
	dcWebhookID    = "1400000000000000004"
	dcWebhookToken = "wh-T0KEN_secret-ZnCjm1XV"
)

// fakeDiscord answers the reads account add makes, as Discord does
// (https://discord.com/developers/docs/resources/user#get-current-user,
// …/message#get-channel-messages, …/webhook#get-webhook-with-token): 401
// for a wrong bot token, 404 Unknown Channel (10003) or Unknown Webhook
// (10015), 401 Invalid Webhook Token (50027).
func fakeDiscord(t *testing.T) *httptest.Server {
	apiErr := func(w http.ResponseWriter, status, code int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"message": msg, "code": code})
	}
	botAuth := func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "Bot "+dcBotToken {
			apiErr(w, http.StatusUnauthorized, 0, "401: Unauthorized")
			return false
		}
		if c := r.PathValue("c"); c != "" && c != dcChannel {
			apiErr(w, http.StatusNotFound, 10003, "Unknown Channel")
			return false
		}
		return true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v10/users/@me", func(w http.ResponseWriter, r *http.Request) {
		if botAuth(w, r) {
			io.WriteString(w, `{"id":"1100000000000000001","username":"oncepost","discriminator":"0","bot":true}`)
		}
	})
	mux.HandleFunc("GET /api/v10/channels/{c}/messages", func(w http.ResponseWriter, r *http.Request) {
		if botAuth(w, r) {
			io.WriteString(w, `[]`)
		}
	})
	mux.HandleFunc("GET /api/v10/webhooks/{w}/{tok}", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.PathValue("w") != dcWebhookID:
			apiErr(w, http.StatusNotFound, 10015, "Unknown Webhook")
		case r.PathValue("tok") != dcWebhookToken:
			apiErr(w, http.StatusUnauthorized, 50027, "Invalid Webhook Token")
		case r.Header.Get("Authorization") != "":
			apiErr(w, http.StatusBadRequest, 0, "a webhook is read with its token alone")
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"application_id":null,"avatar":null,"channel_id":"`+dcChannel+`","guild_id":"1300000000000000003","id":"`+dcWebhookID+`","name":"News hook","type":1,"token":"`+dcWebhookToken+`"}`)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// Discord: a bot (token and channel checked by reading them; the handle
// names the bot and the channel) and a webhook (its URL read from a
// file, split into id and token, checked by reading the webhook, whose
// name and channel make the handle); each refusal (a wrong token, an
// unknown channel, a wrong webhook token, an unknown webhook) names its
// flag and stores nothing.
func TestAccountAddDiscord(t *testing.T) {
	srv := fakeDiscord(t)
	e := newAddEnv(t)
	hookURL := srv.URL + "/api/webhooks/" + dcWebhookID + "/" + dcWebhookToken
	e.secret(dcBotToken, dcWebhookToken, hookURL, "wrong-bot-Token-123", "wrong-hook-Token-456")
	bot := func(id, tokenFile, channel string) []string {
		return []string{"account", "add", "--id", id, "--platform", "discord", "--api-url", srv.URL, "--token-file", tokenFile, "--channel", channel}
	}
	hook := func(id, file string) []string {
		return []string{"account", "add", "--id", id, "--platform", "discord-webhook", "--api-url", srv.URL, "--webhook-file", file}
	}
	token := e.file("bot.token", dcBotToken+"\n")
	code, out := e.run(bot("dc", token, dcChannel)...)
	if code != exitOK || !strings.Contains(out, "added dc: oncepost → #"+dcChannel+" on "+srv.URL) {
		t.Fatalf("account add (bot): exit %d, %q", code, out)
	}
	acc, cred, _ := e.stored("dc")
	want := post.Account{ID: "dc", Platform: "discord", Handle: "oncepost → #" + dcChannel, BaseURL: srv.URL, RemoteID: dcChannel,
		CredentialRef: "dc", Gate: post.GateAuto, Limits: limitsOfKind(t, "discord")}
	if diff := cmp.Diff(want, acc); diff != "" {
		t.Errorf("stored bot account (-want +got):\n%s", diff)
	}
	if cred.AccessToken != dcBotToken {
		t.Error("the stored credential is not the bot token")
	}
	e.refusedNothingStored([]string{"--token-file: Discord refused it", "nothing was stored"},
		bot("dc2", e.file("wrong.token", "wrong-bot-Token-123\n"), dcChannel)...)
	e.refusedNothingStored([]string{"--channel: Discord refused it", "Unknown Channel", "nothing was stored"},
		bot("dc2", token, "1299999999999999999")...)

	// The webhook, by its test server's URL and by the form Discord gives
	// it (https://discord.com/api/v10/webhooks/…), with --api-url.
	for i, u := range []string{hookURL, "https://discord.com/api/v10/webhooks/" + dcWebhookID + "/" + dcWebhookToken} {
		id := []string{"hook", "hook2"}[i]
		code, out = e.run(hook(id, e.file(id+".url", u+"\n"))...)
		if code != exitOK || !strings.Contains(out, "added "+id+": News hook → "+dcChannel+" on "+srv.URL) {
			t.Fatalf("account add (webhook %d): exit %d, %q", i, code, out)
		}
		acc, cred, _ = e.stored(id)
		want := post.Account{ID: post.AccountID(id), Platform: "discord-webhook", Handle: "News hook → " + dcChannel, BaseURL: srv.URL, RemoteID: dcWebhookID,
			CredentialRef: id, Gate: post.GateAuto, Limits: limitsOfKind(t, "discord-webhook")}
		if diff := cmp.Diff(want, acc); diff != "" {
			t.Errorf("stored webhook account (-want +got):\n%s", diff)
		}
		if cred.AccessToken != dcWebhookToken {
			t.Error("the stored credential is not the webhook token")
		}
		if i == 0 {
			// The same webhook under another id is refused; hook goes,
			// so the second form can be added.
			e.refusedNothingStored([]string{`connected already as account "hook"`}, hook("hook2", e.file("again.url", u+"\n"))...)
			if code, out := e.run("account", "remove", "hook"); code != exitOK {
				t.Fatalf("account remove hook: exit %d, %q", code, out)
			}
		}
	}
	e.refusedNothingStored([]string{"--webhook-file: Discord refused it", "Invalid Webhook Token", "nothing was stored"},
		hook("hook3", e.file("wrong.url", srv.URL+"/api/webhooks/"+dcWebhookID+"/wrong-hook-Token-456\n"))...)
	e.refusedNothingStored([]string{"--webhook-file: Discord refused it", "Unknown Webhook", "nothing was stored"},
		hook("hook3", e.file("unknown.url", srv.URL+"/api/webhooks/1499999999999999999/"+dcWebhookToken+"\n"))...)
	e.refusedNothingStored([]string{"--webhook-file", "does not hold a Discord webhook URL"},
		hook("hook3", e.file("slack.url", "https://hooks.slack.com/services/T000/B000/wrong-hook-Token-456\n"))...)
}

// syncBuffer is an io.Writer a command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fakeLinkedIn is LinkedIn's token endpoint
// (https://learn.microsoft.com/en-us/linkedin/shared/authentication/authorization-code-flow,
// step 3) and OpenID userinfo.
type fakeLinkedIn struct {
	srv                  *httptest.Server
	code, secret, access string
	exchanges            atomic.Int32
	mu                   sync.Mutex
	form                 url.Values
}

func newFakeLinkedIn(t *testing.T) *fakeLinkedIn {
	f := &fakeLinkedIn{code: "li-code-AQTx9Yz", secret: "li-Secret-WPL_AP1.zz", access: "li-access-AQVmK7s"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth/v2/accessToken", func(w http.ResponseWriter, r *http.Request) {
		f.exchanges.Add(1)
		r.ParseForm()
		f.mu.Lock()
		f.form = r.PostForm
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.PostForm.Get("grant_type") != "authorization_code" || r.PostForm.Get("code") != f.code ||
			r.PostForm.Get("client_id") != "li-client" || r.PostForm.Get("client_secret") != f.secret {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"invalid_request","error_description":"Unable to retrieve access token: appid/redirect uri/code verifier does not match authorization code. Or authorization code expired."}`)
			return
		}
		io.WriteString(w, `{"access_token":"`+f.access+`","expires_in":5183999,"scope":"openid,profile,w_member_social"}`)
	})
	mux.HandleFunc("GET /v2/userinfo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+f.access {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"serviceErrorCode":65600,"message":"Invalid access token","status":401}`)
			return
		}
		io.WriteString(w, `{"sub":"782bbtaQ","name":"Jane Doe","given_name":"Jane","family_name":"Doe"}`)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeLinkedIn) args(e *addEnv, id string, extra ...string) []string {
	return append([]string{"account", "add", "--id", id, "--platform", "linkedin", "--client-id", "li-client",
		"--client-secret-file", e.file("li.secret", f.secret+"\n"), "--api-url", f.srv.URL, "--token-url", f.srv.URL + "/oauth/v2/accessToken"}, extra...)
}

// loopback runs account add in this process, waits for the authorize
// URL it prints, and lets browse play the browser with it; it returns the
// command's exit code and output.
func loopback(t *testing.T, e *addEnv, args []string, browse func(authorize *url.URL)) (int, string) {
	t.Helper()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- runCLI(context.Background(), append(args, "--db", e.db), &stdout, &stderr) }()
	deadline := time.Now().Add(20 * time.Second)
	var authorize *url.URL
	for authorize == nil {
		for _, line := range strings.Split(stdout.String(), "\n") {
			if l := strings.TrimSpace(line); strings.HasPrefix(l, "https://www.linkedin.com/oauth/v2/authorization?") {
				u, err := url.Parse(l)
				if err != nil {
					t.Fatal(err)
				}
				authorize = u
			}
		}
		select {
		case code := <-done:
			e.record(stdout.String(), stderr.String())
			t.Fatalf("exited %d before the redirect: %s %s", code, stdout.String(), stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no authorize URL printed: %q %q", stdout.String(), stderr.String())
		}
	}
	browse(authorize)
	code := <-done
	e.record(stdout.String(), stderr.String())
	return code, stdout.String() + stderr.String()
}

// get is the browser's request; it returns the status and page.
func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("the browser's request: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// LinkedIn through the loopback redirect: the command prints the
// authorize page, the browser comes back to 127.0.0.1 with the code and
// the state, the code is exchanged with the app's secret and the same
// redirect URL, the member is read, and the credential names the app.
// The listener is gone afterwards. A forged state, a refusal on the
// authorize page and no redirect at all store nothing.
func TestAccountAddLinkedInThroughTheLoopbackRedirect(t *testing.T) {
	li := newFakeLinkedIn(t)
	e := newAddEnv(t)
	e.secret(li.code, li.secret, li.access)
	var redirect string
	code, out := loopback(t, e, li.args(e, "li", "--redirect-port", "0"), func(a *url.URL) {
		q := a.Query()
		if q.Get("client_id") != "li-client" || q.Get("response_type") != "code" || !strings.Contains(q.Get("scope"), "w_member_social") || q.Get("state") == "" {
			t.Errorf("authorize URL %s", a)
		}
		redirect = q.Get("redirect_uri")
		if !strings.HasPrefix(redirect, "http://127.0.0.1:") || !strings.HasSuffix(redirect, "/callback") {
			t.Fatalf("redirect_uri %q is not a loopback callback", redirect)
		}
		if status, page := get(t, redirect+"?code="+url.QueryEscape(li.code)+"&state="+url.QueryEscape(q.Get("state"))); status != http.StatusOK || !strings.Contains(page, "authorised") {
			t.Errorf("the callback answered %d %q", status, page)
		}
	})
	if code != exitOK || !strings.Contains(out, "added li: Jane Doe on "+li.srv.URL) {
		t.Fatalf("account add: exit %d, %q", code, out)
	}
	acc, cred, _ := e.stored("li")
	want := post.Account{ID: "li", Platform: "linkedin", Handle: "Jane Doe", BaseURL: li.srv.URL, RemoteID: "urn:li:person:782bbtaQ",
		CredentialRef: "li", Gate: post.GateAuto, Limits: limitsOfKind(t, "linkedin")}
	if diff := cmp.Diff(want, acc); diff != "" {
		t.Errorf("stored account (-want +got):\n%s", diff)
	}
	if cred.AccessToken != li.access || cred.ClientID != "li-client" || cred.ClientSecret != li.secret || cred.ExpiresAt.IsZero() {
		t.Errorf("stored credential: access %t, client %q, secret %t, expires %s", cred.AccessToken == li.access, cred.ClientID, cred.ClientSecret == li.secret, cred.ExpiresAt)
	}
	li.mu.Lock()
	if got := li.form.Get("redirect_uri"); got != redirect {
		t.Errorf("the exchange's redirect_uri is %q, the authorize page's %q", got, redirect)
	}
	li.mu.Unlock()
	if _, err := http.Get(redirect); err == nil {
		t.Error("the callback still listens after the redirect")
	}

	n := li.exchanges.Load()
	before := e.snapshot()
	for _, tc := range []struct {
		name   string
		extra  []string
		browse func(a *url.URL)
		code   int
		want   []string
	}{
		{"forged state", nil, func(a *url.URL) {
			if status, _ := get(t, a.Query().Get("redirect_uri")+"?code="+li.code+"&state=forged"); status != http.StatusBadRequest {
				t.Errorf("the callback answered %d to a forged state", status)
			}
		}, exitUsage, []string{"--redirect-port", "another state", "nothing was stored"}},
		{"refused on the page", nil, func(a *url.URL) {
			get(t, a.Query().Get("redirect_uri")+"?error=user_cancelled_authorize&error_description=The+user+cancelled&state="+url.QueryEscape(a.Query().Get("state")))
		}, exitUsage, []string{"--redirect-port", "did not authorise the app (user_cancelled_authorize: The user cancelled)"}},
		{"no redirect", []string{"--wait", "300ms"}, func(*url.URL) {}, exitFailure, []string{"did not come back", "within 300ms", "nothing was stored"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := loopback(t, e, li.args(e, "li2", append([]string{"--redirect-port", "0"}, tc.extra...)...), tc.browse)
			if code != tc.code {
				t.Errorf("exit %d, want %d: %q", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output %q does not mention %q", out, w)
				}
			}
		})
	}
	if li.exchanges.Load() != n {
		t.Error("a code was exchanged without a good redirect")
	}
	if diff := cmp.Diff(before, e.snapshot()); diff != "" {
		t.Errorf("a refused add wrote (-before +after):\n%s", diff)
	}
}

// --oob: nothing listens; the code is pasted on stdin, alone or as the
// address the browser landed on (whose state is checked). X: the PKCE
// verifier sent with the code matches the challenge of the printed page,
// the app authenticates with Basic, the credential carries the app and
// the refresh token, and the user the token reads (GET /2/users/me) is
// the account: its numeric id the remote id, its @username the handle;
// --replace with another user's authorization stores nothing, with the
// same user's reconnects. LinkedIn with the code alone; Threads with the
// code Meta suffixes with #_. A pasted address with a forged state
// stores nothing.
func TestAccountAddOAuthOutOfBand(t *testing.T) {
	e := newAddEnv(t)
	const (
		xCode, xSecret, xAccess, xRefresh = "x-code-VGhpcyBpcw", "x-Secret-kd93JdkQ", "x-access-bWF5YmU", "x-refresh-Ym9vbQ"
		xOtherCode, xOtherAccess          = "x-code-b3RoZXIgdXNlcg", "x-access-b3RoZXI"
		xUserID, xOtherUserID             = "2244994945", "1880028106020515840"
	)
	e.secret(xCode, xSecret, xAccess, xRefresh, xOtherCode, xOtherAccess)
	// The users/me answer for each access token
	// (https://docs.x.com/x-api/users/get-my-user).
	xUsers := map[string]string{
		xAccess:      `{"data":{"id":"` + xUserID + `","name":"News Desk","username":"newsdesk"}}`,
		xOtherAccess: `{"data":{"id":"` + xOtherUserID + `","name":"Someone Else","username":"someoneelse"}}`,
	}
	var xMu sync.Mutex
	var xForm url.Values
	var xBasic string
	xSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet && r.URL.Path == "/2/users/me" {
			user, ok := xUsers[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
			if !ok {
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"title":"Unauthorized","type":"about:blank","status":401,"detail":"Unauthorized"}`)
				return
			}
			io.WriteString(w, user)
			return
		}
		if r.Method != http.MethodPost || r.URL.Path != "/2/oauth2/token" {
			http.NotFound(w, r)
			return
		}
		r.ParseForm()
		xMu.Lock()
		xForm, xBasic = r.PostForm, r.Header.Get("Authorization")
		xMu.Unlock()
		access := map[string]string{xCode: xAccess, xOtherCode: xOtherAccess}[r.PostForm.Get("code")]
		if access == "" || r.PostForm.Get("grant_type") != "authorization_code" {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"invalid_request","error_description":"Value passed for the authorization code was invalid."}`)
			return
		}
		io.WriteString(w, `{"token_type":"bearer","expires_in":7200,"access_token":"`+access+`","scope":"tweet.read tweet.write users.read offline.access media.write","refresh_token":"`+xRefresh+`"}`)
	}))
	t.Cleanup(xSrv.Close)

	cmd := oncepostCmd(t, "account", "add", "--db", e.db, "--id", "xa", "--platform", "x", "--api-url", xSrv.URL,
		"--client-id", "x-client", "--client-secret-file", e.file("x.secret", xSecret+"\n"), "--oob")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopProcess(t, cmd) })
	r := bufio.NewReader(stdout)
	var authorize *url.URL
	var printed strings.Builder
	for authorize == nil {
		line, err := r.ReadString('\n')
		printed.WriteString(line)
		if err != nil {
			t.Fatalf("no authorize URL printed (%v): %q %q", err, printed.String(), stderr.String())
		}
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "https://x.com/i/oauth2/authorize?") {
			if authorize, err = url.Parse(l); err != nil {
				t.Fatal(err)
			}
		}
	}
	q := authorize.Query()
	if q.Get("redirect_uri") != "http://127.0.0.1:8765/callback" || q.Get("code_challenge_method") != "S256" || q.Get("client_id") != "x-client" {
		t.Errorf("authorize URL %s", authorize)
	}
	// The browser lands on the (unserved) redirect URL; its address is pasted.
	io.WriteString(stdin, "http://127.0.0.1:8765/callback?state="+url.QueryEscape(q.Get("state"))+"&code="+xCode+"\n")
	stdin.Close()
	rest, _ := io.ReadAll(r)
	printed.Write(rest)
	err = cmd.Wait()
	e.record(printed.String(), stderr.String())
	if err != nil || !strings.Contains(string(rest), "added xa: @newsdesk on "+xSrv.URL) {
		t.Fatalf("account add --oob: %v\nstdout: %s\nstderr: %s", err, printed.String(), stderr.String())
	}
	xMu.Lock()
	sum := sha256.Sum256([]byte(xForm.Get("code_verifier")))
	if base64.RawURLEncoding.EncodeToString(sum[:]) != q.Get("code_challenge") {
		t.Error("the code verifier sent does not match the challenge of the authorize page")
	}
	if xForm.Get("redirect_uri") != q.Get("redirect_uri") || xBasic != "Basic "+base64.StdEncoding.EncodeToString([]byte("x-client:"+xSecret)) {
		t.Errorf("the exchange sent redirect_uri %q and Authorization %t", xForm.Get("redirect_uri"), xBasic != "")
	}
	xMu.Unlock()
	acc, cred, _ := e.stored("xa")
	want := post.Account{ID: "xa", Platform: "x", Handle: "@newsdesk", BaseURL: xSrv.URL, RemoteID: xUserID, CredentialRef: "xa", Gate: post.GateAuto, Limits: limitsOfKind(t, "x")}
	if diff := cmp.Diff(want, acc); diff != "" {
		t.Errorf("stored account (-want +got):\n%s", diff)
	}
	if cred.AccessToken != xAccess || cred.RefreshToken != xRefresh || cred.ClientID != "x-client" || cred.ClientSecret != xSecret {
		t.Errorf("the stored credential does not carry the tokens and the app")
	}
	// --replace, the code pasted alone: another user's authorization is
	// refused and stores nothing; the same user's reconnects.
	xReplace := []string{"account", "add", "--id", "xa", "--replace", "--platform", "x", "--api-url", xSrv.URL,
		"--client-id", "x-client", "--client-secret-file", e.file("x.secret", xSecret+"\n"), "--oob"}
	before := e.snapshot()
	code, out := e.child(xOtherCode+"\n", xReplace...)
	if code != exitUsage || !strings.Contains(out, "belongs to @someoneelse (id "+xOtherUserID+"), not to @newsdesk (id "+xUserID+")") {
		t.Errorf("--replace with another X user: exit %d, %q", code, out)
	}
	if diff := cmp.Diff(before, e.snapshot()); diff != "" {
		t.Errorf("a refused --replace wrote (-before +after):\n%s", diff)
	}
	if code, out := e.child(xCode+"\n", xReplace...); code != exitOK || !strings.Contains(out, "reconnected xa: @newsdesk on "+xSrv.URL) {
		t.Errorf("--replace with the same X user: exit %d, %q", code, out)
	}
	if acc, _, _ := e.stored("xa"); acc.RemoteID != xUserID || acc.Handle != "@newsdesk" {
		t.Errorf("reconnected: remote id %q, handle %q", acc.RemoteID, acc.Handle)
	}

	// LinkedIn, the code alone.
	li := newFakeLinkedIn(t)
	e.secret(li.code, li.secret, li.access)
	code, out = e.child(li.code+"\n", li.args(e, "li", "--oob", "--redirect-url", "https://example.com/oncepost/callback")...)
	if code != exitOK || !strings.Contains(out, "added li: Jane Doe") {
		t.Fatalf("linkedin --oob: exit %d, %q", code, out)
	}
	li.mu.Lock()
	if got := li.form.Get("redirect_uri"); got != "https://example.com/oncepost/callback" {
		t.Errorf("the exchange's redirect_uri is %q", got)
	}
	li.mu.Unlock()
	if acc, _, _ := e.stored("li"); acc.RemoteID != "urn:li:person:782bbtaQ" {
		t.Errorf("stored %+v", acc)
	}

	// Threads: the short-lived token is exchanged for a long-lived one,
	// then the profile read.
	const thCode, thSecret, thShort, thLong = "th-code-AQBx7", "th-Secret-0f9a8b", "th-short-THAAq1", "th-long-THAAz9"
	e.secret(thCode, thSecret, thShort, thLong)
	thMux := http.NewServeMux()
	thMux.HandleFunc("POST /oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.PostForm.Get("code") != thCode || r.PostForm.Get("client_secret") != thSecret {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"Invalid verification code format.","type":"OAuthException","code":100}}`)
			return
		}
		io.WriteString(w, `{"access_token":"`+thShort+`","user_id":17841400000000001}`)
	})
	thMux.HandleFunc("GET /access_token", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("access_token") != thShort || r.URL.Query().Get("grant_type") != "th_exchange_token" {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"Invalid OAuth access token.","type":"OAuthException","code":190}}`)
			return
		}
		io.WriteString(w, `{"access_token":"`+thLong+`","token_type":"bearer","expires_in":5183944}`)
	})
	thMux.HandleFunc("GET /v1.0/me", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+thLong {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"Invalid OAuth access token.","type":"OAuthException","code":190}}`)
			return
		}
		io.WriteString(w, `{"id":"17841400000000001","username":"news.threads"}`)
	})
	thSrv := httptest.NewServer(thMux)
	t.Cleanup(thSrv.Close)
	code, out = e.child(thCode+"#_\n", "account", "add", "--id", "th", "--platform", "threads", "--api-url", thSrv.URL,
		"--client-id", "th-client", "--client-secret-file", e.file("th.secret", thSecret+"\n"), "--oob", "--redirect-url", "https://example.com/cb")
	if code != exitOK || !strings.Contains(out, "added th: @news.threads on "+thSrv.URL) {
		t.Fatalf("threads --oob: exit %d, %q", code, out)
	}
	acc, cred, _ = e.stored("th")
	if acc.RemoteID != "17841400000000001" || acc.Limits != limitsOfKind(t, "threads") || cred.AccessToken != thLong || cred.ClientID != "th-client" || cred.ExpiresAt.IsZero() {
		t.Errorf("stored %+v with access %t, client %q", acc, cred.AccessToken == thLong, cred.ClientID)
	}

	// A pasted address with a forged state: refused before any exchange.
	n := li.exchanges.Load()
	before = e.snapshot()
	code, out = e.child("http://127.0.0.1:8765/callback?code="+li.code+"&state=forged\n", li.args(e, "li2", "--oob")...)
	if code != exitUsage || !strings.Contains(out, "--oob: the redirect carries another state") {
		t.Errorf("forged state: exit %d, %q", code, out)
	}
	if li.exchanges.Load() != n {
		t.Error("the code was exchanged")
	}
	if diff := cmp.Diff(before, e.snapshot()); diff != "" {
		t.Errorf("a refused add wrote (-before +after):\n%s", diff)
	}
}

// Bad input to every new flag: exit 2 with the flag and the fix, no
// secret quoted, nothing written, no call made. Every platform flag given
// for a platform it is not for is refused.
func TestAccountAddBadInputForEveryPlatformFlag(t *testing.T) {
	e := newAddEnv(t)
	if code, out := e.run("blocklist", "add", "placeholder"); code != exitOK { // creates the workspace
		t.Fatalf("%d %s", code, out)
	}
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	const secretValue = "Sup3r-Secret-Value_x9"
	e.secret(secretValue, "hunter2-Pass")
	secret := e.file("secret", secretValue+"\n")
	empty := e.file("empty", "\n")
	missing := filepath.Join(e.dir, "missing")
	add := func(platform string, args ...string) []string {
		return append([]string{"account", "add", "--id", "a", "--platform", platform}, args...)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown platform", add("fax"), []string{"--platform", `"fax" is not a platform oncepost knows`, strings.Join(catalog.Names(), ", ")}},
		{"api-url: not http", add("telegram", "--api-url", "ftp://api.example", "--token-file", secret, "--chat", "@newschannel"), []string{"--api-url", "http or https"}},
		{"api-url: plain http", add("telegram", "--api-url", "http://api.example", "--token-file", secret, "--chat", "@newschannel"), []string{"--api-url", "use https"}},
		{"api-url: credentials", add("bluesky", "--api-url", "https://me:hunter2-Pass@pds.example", "--handle", "a.test", "--password-file", secret), []string{"--api-url", "holds credentials"}},
		{"api-url: query", add("discord", "--api-url", "https://discord.example?x=1", "--token-file", secret, "--channel", dcChannel), []string{"--api-url", "without a query"}},
		{"bluesky: no handle", add("bluesky", "--password-file", secret), []string{"--handle: is missing"}},
		{"bluesky: no password", add("bluesky", "--handle", "a.test"), []string{"--password-file: is missing", "app password"}},
		{"bluesky: password file missing", add("bluesky", "--api-url", srv.URL, "--handle", "a.test", "--password-file", missing), []string{"--password-file: cannot read"}},
		{"bluesky: password file empty", add("bluesky", "--api-url", srv.URL, "--handle", "a.test", "--password-file", empty), []string{"--password-file", "is empty"}},
		{"telegram: no token", add("telegram", "--chat", "@newschannel"), []string{"--token-file: is missing", "@BotFather"}},
		{"telegram: no chat", add("telegram", "--token-file", secret), []string{"--chat: is missing"}},
		{"telegram: bad chat", add("telegram", "--token-file", secret, "--chat", "news channel"), []string{"--chat", "chat id", "@username"}},
		{"telegram: token with spaces", add("telegram", "--api-url", srv.URL, "--token-file", e.file("spaced", "12 34:ab\n"), "--chat", "@newschannel"), []string{"--token-file", "one line, no spaces"}},
		{"discord: no token", add("discord", "--channel", dcChannel), []string{"--token-file: is missing"}},
		{"discord: no channel", add("discord", "--token-file", secret), []string{"--channel: is missing"}},
		{"discord: bad channel", add("discord", "--token-file", secret, "--channel", "#news"), []string{"--channel", "is not a Discord id"}},
		{"discord-webhook: no file", add("discord-webhook"), []string{"--webhook-file: is missing"}},
		{"discord-webhook: not a webhook URL", add("discord-webhook", "--api-url", srv.URL, "--webhook-file", secret), []string{"--webhook-file", "does not hold a Discord webhook URL"}},
		{"discord-webhook: webhook id not an id", add("discord-webhook", "--api-url", srv.URL, "--webhook-file", e.file("badid.url", "https://discord.com/api/webhooks/news/"+secretValue+"\n")), []string{"--webhook-file", "does not hold a Discord webhook URL"}},
		{"x: no client id", add("x"), []string{"--client-id: is missing"}},
		{"x: client id with space", add("x", "--client-id", "a b"), []string{"--client-id", "white space"}},
		{"linkedin: no client secret", add("linkedin", "--client-id", "c"), []string{"--client-secret-file: is missing"}},
		{"threads: no client secret", add("threads", "--client-id", "c"), []string{"--client-secret-file: is missing"}},
		{"linkedin: client secret file missing", add("linkedin", "--client-id", "c", "--client-secret-file", missing, "--oob"), []string{"--client-secret-file: cannot read"}},
		{"x: bad redirect port", add("x", "--client-id", "c", "--redirect-port", "70000"), []string{"--redirect-port", "between 1 and 65535"}},
		{"x: secret on stdin with oob", add("x", "--client-id", "c", "--client-secret-file", "-", "--oob"), []string{"--client-secret-file", "--oob reads the code from stdin"}},
		{"x: wait with oob", add("x", "--client-id", "c", "--oob", "--wait", "1m"), []string{"--wait", "with --oob nothing is awaited"}},
		{"x: no wait", add("x", "--client-id", "c", "--wait", "0s"), []string{"--wait", "positive duration"}},
		{"x: redirect url without oob", add("x", "--client-id", "c", "--redirect-url", "https://example.com/cb"), []string{"--redirect-url", "is for --oob"}},
		{"x: redirect port and url", add("x", "--client-id", "c", "--oob", "--redirect-port", "9000", "--redirect-url", "https://example.com/cb"), []string{"--redirect-port", "give one"}},
		{"x: bad redirect url", add("x", "--client-id", "c", "--oob", "--redirect-url", "example.com/cb"), []string{"--redirect-url", "registered with the app"}},
		{"linkedin: bad token url", add("linkedin", "--client-id", "c", "--client-secret-file", secret, "--token-url", "www.linkedin.com/token"), []string{"--token-url", "http or https"}},
		{"mastodon: api-url", add("mastodon", "--api-url", "https://api.example"), []string{"--api-url: is for --platform bluesky"}},
	}
	// Every platform flag, given for a platform it is not for.
	for name, platforms := range addFlagPlatforms() {
		for _, p := range catalog.Names() {
			if slices.Contains(platforms, p) {
				continue
			}
			args := add(p, "--"+name)
			switch name {
			case "oauth", "oob":
			case "wait":
				args = append(args, "1m")
			default:
				args = append(args, "1")
			}
			tests = append(tests, struct {
				name string
				args []string
				want []string
			}{"--" + name + " for " + p, args, []string{"--" + name + ": is for --platform " + strings.Join(platforms, ", ") + ", not " + p}})
			break
		}
	}
	sort.Slice(tests, func(i, j int) bool { return tests[i].name < tests[j].name })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := e.refusedNothingStored(tt.want, tt.args...)
			for _, bad := range []string{"usage: ", "*platform.", "%!"} {
				if strings.Contains(out, bad) {
					t.Errorf("output %q contains %q", out, bad)
				}
			}
		})
	}
	if calls.Load() != 0 {
		t.Errorf("bad input reached the platform %d times", calls.Load())
	}
}
