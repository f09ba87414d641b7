package discord

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
	"oncepost/shared/platform/adaptertest"
	"oncepost/shared/post"
)

func TestNewValidatesConfig(t *testing.T) {
	bot := Config{Mode: ModeBot, ChannelID: channelID, Credential: platform.Credential{AccessToken: botToken}}
	hook := Config{Mode: ModeWebhook, WebhookID: webhookID, Credential: platform.Credential{AccessToken: webhookToken}}
	tests := []struct {
		name    string
		base    Config
		edit    func(*Config)
		wantErr string // substring naming the field; "" means valid
	}{
		{"bot", bot, func(*Config) {}, ""},
		{"bot with base url and bot id", bot, func(c *Config) { c.BaseURL = "http://127.0.0.1:8080/"; c.BotUserID = botID }, ""},
		{"webhook", hook, func(*Config) {}, ""},
		{"no mode", bot, func(c *Config) { c.Mode = "" }, "Mode"},
		{"unknown mode", bot, func(c *Config) { c.Mode = "user" }, "Mode"},
		{"missing token", bot, func(c *Config) { c.Credential.AccessToken = "" }, "Credential.AccessToken"},
		{"token with a slash (a pasted webhook URL)", hook, func(c *Config) { c.Credential.AccessToken = webhookID + "/" + webhookToken }, "Credential.AccessToken"},
		{"bot without channel", bot, func(c *Config) { c.ChannelID = "" }, "ChannelID"},
		{"bot with a channel name", bot, func(c *Config) { c.ChannelID = "#news" }, "ChannelID"},
		{"bot with a bad bot id", bot, func(c *Config) { c.BotUserID = "me" }, "BotUserID"},
		{"bot with a webhook id", bot, func(c *Config) { c.WebhookID = webhookID }, "WebhookID"},
		{"webhook without id", hook, func(c *Config) { c.WebhookID = "" }, "WebhookID"},
		{"webhook with a channel", hook, func(c *Config) { c.ChannelID = channelID }, "ChannelID"},
		{"relative base url", bot, func(c *Config) { c.BaseURL = "discord.com" }, "BaseURL"},
		{"base url with api path", bot, func(c *Config) { c.BaseURL = "https://discord.com/api/v10" }, "BaseURL"},
		{"base url with query", bot, func(c *Config) { c.BaseURL = "https://discord.com/?x=1" }, "BaseURL"},
		{"bad guild id", bot, func(c *Config) { c.GuildID = "guild" }, "GuildID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.base
			tt.edit(&cfg)
			_, err := New(cfg)
			noteError(err)
			adaptertest.CheckNewError(t, err, tt.wantErr)
		})
	}
}

func TestConnectorMapsTheAccount(t *testing.T) {
	f := newFake(t)
	conn := Connector{}
	ctx := context.Background()

	bot, err := conn.Client(ctx, post.Account{ID: "a1", Platform: "discord", BaseURL: f.srv.URL, RemoteID: channelID}, platform.Credential{AccessToken: botToken})
	if err != nil {
		t.Fatalf("bot account: %v", err)
	}
	if got := bot.Capabilities().Platform; got != PlatformBot {
		t.Errorf("bot account platform = %q, want %q", got, PlatformBot)
	}
	if _, err := bot.Publish(ctx, platform.PublishRequest{Handle: "h1", Text: "via connector"}); err != nil {
		t.Fatalf("bot publish: %v", err)
	}
	if got := f.requests(http.MethodPost, "/api/v10/channels/"+channelID+"/messages"); len(got) != 1 || got[0].Auth != "Bot "+botToken {
		t.Errorf("bot create requests = %+v, want one to the account's channel with its token", got)
	}

	hook, err := conn.Client(ctx, post.Account{ID: "a2", Platform: "discord-webhook", BaseURL: f.srv.URL, RemoteID: webhookID}, platform.Credential{AccessToken: webhookToken})
	if err != nil {
		t.Fatalf("webhook account: %v", err)
	}
	if got := hook.Capabilities().Platform; got != PlatformWebhook {
		t.Errorf("webhook account platform = %q, want %q", got, PlatformWebhook)
	}
	if _, err := hook.Publish(ctx, platform.PublishRequest{Handle: "h2", Text: "via connector"}); err != nil {
		t.Fatalf("webhook publish: %v", err)
	}

	for _, a := range []post.Account{
		{ID: "a3", Platform: "mastodon", RemoteID: channelID},
		{ID: "a4", Platform: "discord", RemoteID: ""},
		{ID: "a5", Platform: "discord-webhook", RemoteID: "https://discord.com/api/webhooks/1/x"},
	} {
		_, err := conn.Client(ctx, a, platform.Credential{AccessToken: webhookToken})
		noteError(err)
		if err == nil || !strings.Contains(err.Error(), string(a.ID)) {
			t.Errorf("account %+v: error %v, want one naming the account", a, err)
		}
	}
}

func TestCapabilities(t *testing.T) {
	bot := newClient(t, ModeBot, "https://discord.example")
	want := platform.Capabilities{
		Platform: "discord", NativeIdempotency: true, LookupByHandle: false, ReadableHistory: true,
		MaxTextGraphemes: 2000, MaxMedia: 10, MaxMediaBytes: 10 << 20, MaxMediaTotalBytes: 24 << 20, InlineMedia: true,
		Handle:        "nonce (25 base32 chars of SHA-256 of the handle) with enforce_nonce: a repeat within a few minutes returns the first message",
		ReadBack:      "GET /channels/{id}/messages?after= from the pre-send point, the bot's own messages matched by fingerprint (REST reads carry no nonce); needs READ_MESSAGE_HISTORY",
		PostingLimits: []platform.Rate{{Count: 5, Per: 5 * time.Second}},
	}
	if diff := cmp.Diff(want, bot.Capabilities()); diff != "" {
		t.Errorf("bot (-want +got):\n%s", diff)
	}
	if g := bot.Capabilities().Guarantee(); g != platform.ReadBack {
		t.Errorf("bot guarantee = %q, want %q", g, platform.ReadBack)
	}

	hook := newClient(t, ModeWebhook, "https://discord.example")
	want = platform.Capabilities{
		Platform: "discord-webhook", MaxTextGraphemes: 2000, MaxMedia: 10, MaxMediaBytes: 10 << 20, MaxMediaTotalBytes: 24 << 20, InlineMedia: true,
		Handle:        "not sent: a webhook takes no nonce",
		ReadBack:      "none: a webhook token reads a message only by its id, never the channel; unknown outcomes go to an operator",
		PostingLimits: []platform.Rate{{Count: 5, Per: 2 * time.Second}},
	}
	if diff := cmp.Diff(want, hook.Capabilities()); diff != "" {
		t.Errorf("webhook (-want +got):\n%s", diff)
	}
	if g := hook.Capabilities().Guarantee(); g != platform.Human {
		t.Errorf("webhook guarantee = %q, want %q", g, platform.Human)
	}
}

// TestNonce: the nonce fits Discord's 25 characters, is the same for a
// handle on every call, and differs for different handles, including the
// ledger's 26-character handles that differ only in the last character
// (which cutting the handle to 25 characters would merge). The golden
// value pins the derivation: changing it while entries are pending would
// let a re-send after the deploy escape enforce_nonce.
func TestNonce(t *testing.T) {
	handles := []string{
		"7m2kq4ze9xw3b5n8c1d6f0gh2a", // a ledger handle: 26 base32 characters
		"7m2kq4ze9xw3b5n8c1d6f0gh2b", // differs in the 26th character only
		"7m2kq4ze9xw3b5n8c1d6f0gh2",  // its first 25 characters
		"h", "entry-1", "entry-2",
		strings.Repeat("x", 200),
		"",
	}
	seen := map[string]string{}
	for _, h := range handles {
		n := Nonce(h)
		if len(n) > NonceLength || len(n) == 0 {
			t.Errorf("Nonce(%q) = %q, %d characters; want 1..%d", h, n, len(n), NonceLength)
		}
		if again := Nonce(h); again != n {
			t.Errorf("Nonce(%q) = %q then %q; want the same every time", h, n, again)
		}
		if other, dup := seen[n]; dup {
			t.Errorf("Nonce(%q) = Nonce(%q) = %q; want distinct nonces", h, other, n)
		}
		seen[n] = h
	}
	if got, want := Nonce("7m2kq4ze9xw3b5n8c1d6f0gh2a"), goldenNonce; got != want {
		t.Errorf("Nonce derivation changed: got %q, want %q", got, want)
	}
}

// goldenNonce is Nonce("7m2kq4ze9xw3b5n8c1d6f0gh2a"), computed apart from
// this package with coreutils: printf %s HANDLE | sha256sum | xxd -r -p |
// base32 | tr A-Z a-z | cut -c1-25.
const goldenNonce = "hwpusv47clugjr4uzlh5l6gxp"

func TestBotPublishRequestShape(t *testing.T) {
	f := newFake(t)
	c := newClient(t, ModeBot, f.srv.URL)
	const handle = "7m2kq4ze9xw3b5n8c1d6f0gh2a"

	receipt, err := c.Publish(context.Background(), platform.PublishRequest{Handle: handle, Text: "hello, discord"})
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	stored := f.stored()
	if len(stored) != 1 {
		t.Fatalf("fake stored %d messages, want 1", len(stored))
	}
	want := platform.Receipt{
		RemoteID:  stored[0].ID,
		URL:       f.srv.URL + "/channels/" + guildID + "/" + channelID + "/" + stored[0].ID,
		CreatedAt: fixedNow,
	}
	if diff := cmp.Diff(want, receipt); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}
	// Create Message: POST /channels/{channel.id}/messages with content,
	// nonce (up to 25 characters) and enforce_nonce, authorised as
	// "Bot <token>" (https://discord.com/developers/docs/resources/message#create-message,
	// https://discord.com/developers/docs/reference#authentication).
	creates := f.requests(http.MethodPost, "/api/v10/channels/")
	wantReq := []fakeReq{{
		Method: "POST", Path: "/api/v10/channels/" + channelID + "/messages", Auth: "Bot " + botToken,
		UserAgent: DefaultUserAgent, ContentType: "application/json",
		Body: map[string]any{"content": "hello, discord", "nonce": Nonce(handle), "enforce_nonce": true},
	}}
	if diff := cmp.Diff(wantReq, creates); diff != "" {
		t.Errorf("create requests (-want +got):\n%s", diff)
	}
}

func TestWebhookPublishRequestShape(t *testing.T) {
	f := newFake(t)
	c := newClient(t, ModeWebhook, f.srv.URL)

	receipt, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "7m2kq4ze9xw3b5n8c1d6f0gh2a", Text: "hello from a webhook"})
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	stored := f.stored()
	if len(stored) != 1 || stored[0].WebhookID != webhookID {
		t.Fatalf("fake stored %+v, want one webhook message", stored)
	}
	want := platform.Receipt{RemoteID: stored[0].ID, URL: f.srv.URL + "/channels/" + guildID + "/" + channelID + "/" + stored[0].ID, CreatedAt: fixedNow}
	if diff := cmp.Diff(want, receipt); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}
	// Execute Webhook: POST /webhooks/{webhook.id}/{webhook.token}?wait=true,
	// no Authorization (the token is the path), no nonce
	// (https://discord.com/developers/docs/resources/webhook#execute-webhook).
	creates := f.requests(http.MethodPost, "/api/v10/webhooks/")
	wantReq := []fakeReq{{
		Method: "POST", Path: "/api/v10/webhooks/" + webhookID + "/" + webhookToken, Query: "wait=true",
		UserAgent: DefaultUserAgent, ContentType: "application/json",
		Body: map[string]any{"content": "hello from a webhook"},
	}}
	if diff := cmp.Diff(wantReq, creates); diff != "" {
		t.Errorf("create requests (-want +got):\n%s", diff)
	}
}

// TestLinkIsBestEffort: the guild id that message links need is read
// once; when that read fails the create still succeeds, without a link,
// and the client does not read again for every message.
func TestLinkIsBestEffort(t *testing.T) {
	f := newFake(t)
	f.channelDown = true
	c := newClient(t, ModeBot, f.srv.URL)
	ctx := context.Background()
	r, err := c.Publish(ctx, platform.PublishRequest{Handle: "h", Text: "no link"})
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if r.RemoteID == "" || r.URL != "" {
		t.Errorf("receipt = %+v, want an id and no link", r)
	}
	f.add(botID, "another")
	posts, err := c.Recent(ctx, 5)
	if err != nil || len(posts) != 2 {
		t.Fatalf("Recent = %+v, %v", posts, err)
	}
	reads := len(f.requests(http.MethodGet, "/api/v10/channels/"+channelID)) - len(f.requests(http.MethodGet, "/api/v10/channels/"+channelID+"/"))
	if reads != 4 { // one read: a try and three retries
		t.Errorf("channel read %d times, want 4 (one read with its retries)", reads)
	}
}

// TestBotRepeatWithSameNonceReturnsTheFirstMessage: Discord's duplicate
// answer. With enforce_nonce "if another message was created by the same
// author with the same nonce, that message will be returned and no new
// message will be created"
// (https://discord.com/developers/docs/resources/message#create-message).
// A second attempt of one ledger entry sends the same nonce and gets the
// first message back as its receipt: one message in the channel.
func TestBotRepeatWithSameNonceReturnsTheFirstMessage(t *testing.T) {
	f := newFake(t)
	c := newClient(t, ModeBot, f.srv.URL)
	ctx := context.Background()
	req := platform.PublishRequest{Handle: "7m2kq4ze9xw3b5n8c1d6f0gh2a", Text: "once only"}

	first, err := c.Publish(ctx, req)
	if err != nil {
		t.Fatalf("first Publish: %v", err)
	}
	second, err := c.Publish(ctx, req)
	if err != nil {
		t.Fatalf("second Publish: %v", err)
	}
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("second receipt differs from the first (-first +second):\n%s", diff)
	}
	if n := len(f.stored()); n != 1 {
		t.Errorf("fake stored %d messages, want 1", n)
	}
	creates := f.requests(http.MethodPost, "/api/v10/channels/")
	if len(creates) != 2 || creates[0].Body["nonce"] != creates[1].Body["nonce"] {
		t.Errorf("creates = %+v, want two with the same nonce", creates)
	}

	// Another entry with the same words is another message.
	other, err := c.Publish(ctx, platform.PublishRequest{Handle: "7m2kq4ze9xw3b5n8c1d6f0gh2b", Text: "once only"})
	if err != nil {
		t.Fatalf("other Publish: %v", err)
	}
	if other.RemoteID == first.RemoteID || len(f.stored()) != 2 {
		t.Errorf("another handle got %q (first %q), %d stored; want a new message", other.RemoteID, first.RemoteID, len(f.stored()))
	}
}

// TestWriteStatusClassification runs Discord's error answers through the
// three writes (bot create, webhook create, bot delete). Error bodies are
// {"code", "message"[, "errors"]}
// (https://discord.com/developers/docs/topics/opcodes-and-status-codes#json,
// https://discord.com/developers/docs/reference#error-messages); a 429 is
// {"message", "retry_after", "global"} with Retry-After and
// X-RateLimit-Reset-After (https://discord.com/developers/docs/topics/rate-limits#exceeding-a-rate-limit).
func TestWriteStatusClassification(t *testing.T) {
	const rateLimited = `{"message": "You are being rate limited.", "retry_after": 1.234, "global": false}`
	tests := []struct {
		name        string
		status      int
		header      map[string]string
		body        string
		want        outcome
		wantMessage string // substring of the error's text
	}{
		{"429 retry-after header first", 429, map[string]string{"Retry-After": "2", "X-RateLimit-Reset-After": "1.234"}, rateLimited,
			outcome{Class: "not_performed", Status: 429, RetryAfter: 2 * time.Second}, "You are being rate limited."},
		{"429 body retry_after", 429, map[string]string{"X-RateLimit-Reset-After": "9"}, rateLimited,
			outcome{Class: "not_performed", Status: 429, RetryAfter: 1234 * time.Millisecond}, ""},
		{"429 x-ratelimit-reset-after only", 429, map[string]string{"X-RateLimit-Reset-After": "0.5"}, ``,
			outcome{Class: "not_performed", Status: 429, RetryAfter: 500 * time.Millisecond}, ""},
		{"429 global", 429, map[string]string{"Retry-After": "65", "X-RateLimit-Global": "true", "X-RateLimit-Scope": "global"},
			`{"message": "You are being rate limited.", "retry_after": 64.57, "global": true}`,
			outcome{Class: "not_performed", Status: 429, RetryAfter: 65 * time.Second}, ""},
		{"429 from cloudflare without hints", 429, nil, `<html>error 1015</html>`, outcome{Class: "not_performed", Status: 429}, "too many requests"},
		{"401 bad token", 401, nil, `{"message": "401: Unauthorized", "code": 0}`, outcome{Class: "unauthorized"}, "401: Unauthorized"},
		{"403 missing access", 403, nil, `{"message": "Missing Access", "code": 50001}`,
			outcome{Class: "rejected", Status: 403, Reason: "missing_access"}, "Missing Access (code 50001)"},
		{"403 missing permissions", 403, nil, `{"message": "Missing Permissions", "code": 50013}`,
			outcome{Class: "rejected", Status: 403, Reason: "missing_permissions"}, "Missing Permissions (code 50013)"},
		{"404 unknown channel", 404, nil, `{"message": "Unknown Channel", "code": 10003}`,
			outcome{Class: "rejected", Status: 404, Reason: "unknown_channel"}, "Unknown Channel"},
		{"404 unknown webhook", 404, nil, `{"message": "Unknown Webhook", "code": 10015}`,
			outcome{Class: "rejected", Status: 404, Reason: "unknown_webhook"}, "Unknown Webhook"},
		{"400 content too long", 400, nil,
			`{"message": "Invalid Form Body", "code": 50035, "errors": {"content": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}]}}}`,
			outcome{Class: "rejected", Status: 400, Reason: "text_too_long"}, "Invalid Form Body (code 50035): content: Must be 2000 or fewer in length."},
		{"400 other form error", 400, nil,
			`{"message": "Invalid Form Body", "code": 50035, "errors": {"embeds": {"0": {"title": {"_errors": [{"code": "BASE_TYPE_REQUIRED", "message": "This field is required"}]}}}}}`,
			outcome{Class: "rejected", Status: 400, Reason: "invalid_form_body"}, "embeds.0.title: This field is required"},
		{"400 empty message", 400, nil, `{"message": "Cannot send an empty message", "code": 50006}`,
			outcome{Class: "rejected", Status: 400, Reason: "empty_message"}, ""},
		{"400 automod", 400, nil, `{"message": "Message was blocked by automatic moderation", "code": 200000}`,
			outcome{Class: "rejected", Status: 400, Reason: "blocked_by_automod"}, ""},
		{"400 without a code", 400, nil, `<html>bad request</html>`, outcome{Class: "rejected", Status: 400, Reason: "http_400"}, "bad request"},
		{"408 request timeout", 408, nil, ``, outcome{Class: "not_performed", Status: 408}, ""},
		{"500 internal error", 500, nil, `{"message": "500: Internal Server Error", "code": 0}`, outcome{Class: "ambiguous", Status: 500}, ""},
		{"502 gateway unavailable", 502, nil, `{"message": "502: Bad Gateway", "code": 0}`, outcome{Class: "ambiguous", Status: 502}, ""},
		{"503 from a proxy", 503, nil, `<html>upstream</html>`, outcome{Class: "ambiguous", Status: 503}, ""},
		{"504 gateway timeout", 504, nil, ``, outcome{Class: "ambiguous", Status: 504}, ""},
	}
	calls := map[string]struct {
		mode Mode
		call func(*Client) error
	}{
		"bot publish": {ModeBot, func(c *Client) error {
			_, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "x"})
			return err
		}},
		"webhook publish": {ModeWebhook, func(c *Client) error {
			_, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "x"})
			return err
		}},
		"bot delete": {ModeBot, func(c *Client) error { return c.Delete(context.Background(), "1600000000000000006") }},
		// A create with files is the same one write, in multipart.
		"bot publish with files": {ModeBot, func(c *Client) error {
			_, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "x", Media: []platform.MediaUpload{catPNG, dogJPEG}})
			return err
		}},
		"webhook publish with a file": {ModeWebhook, func(c *Client) error {
			_, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "x", Media: []platform.MediaUpload{catPNG}})
			return err
		}},
	}
	for _, tt := range tests {
		for name, call := range calls {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				var n atomic.Int32
				srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					n.Add(1)
					io.Copy(io.Discard, r.Body)
					for k, v := range tt.header {
						w.Header().Set(k, v)
					}
					w.WriteHeader(tt.status)
					io.WriteString(w, tt.body)
				}))
				err := call.call(newClient(t, call.mode, srv.URL))
				if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
					t.Errorf("outcome (-want +got):\n%s", diff)
				}
				if tt.wantMessage != "" && !strings.Contains(err.Error(), tt.wantMessage) {
					t.Errorf("error %q does not contain %q", err, tt.wantMessage)
				}
				if n.Load() != 1 {
					t.Errorf("server received %d requests, want exactly 1 (a write is never re-sent)", n.Load())
				}
			})
		}
	}
}

// TestPublishRefusesBeforeSending: over-long text (counted in code points,
// as Discord's Python API counts, discord/discord-api-docs#1315), media and
// a missing handle are refused without a request.
func TestPublishRefusesBeforeSending(t *testing.T) {
	family := "👩\u200d👩\u200d👧" // one grapheme, five code points
	tests := []struct {
		name string
		mode Mode
		req  platform.PublishRequest
		want outcome
	}{
		{"2001 letters", ModeBot, platform.PublishRequest{Handle: "h", Text: strings.Repeat("a", 2001)}, outcome{Class: "rejected", Reason: "text_too_long"}},
		{"401 graphemes of 2005 code points", ModeBot, platform.PublishRequest{Handle: "h", Text: strings.Repeat(family, 401)}, outcome{Class: "rejected", Reason: "text_too_long"}},
		{"webhook too long", ModeWebhook, platform.PublishRequest{Text: strings.Repeat("é", 2001)}, outcome{Class: "rejected", Reason: "text_too_long"}},
		{"media", ModeBot, platform.PublishRequest{Handle: "h", Text: "x", MediaIDs: []string{"m1"}}, outcome{Class: "rejected", Reason: "media_unsupported"}},
		{"webhook media", ModeWebhook, platform.PublishRequest{Text: "x", MediaIDs: []string{"m1"}}, outcome{Class: "rejected", Reason: "media_unsupported"}},
		{"bot without handle", ModeBot, platform.PublishRequest{Text: "x"}, outcome{Class: "rejected", Reason: "missing_handle"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			_, err := newClient(t, tt.mode, f.srv.URL).Publish(context.Background(), tt.req)
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if n := len(f.requests(http.MethodPost, "/")); n != 0 {
				t.Errorf("server received %d creates, want 0", n)
			}
		})
	}

	t.Run("2000 code points are sent", func(t *testing.T) {
		f := newFake(t)
		c := newClient(t, ModeBot, f.srv.URL)
		text := strings.Repeat(family, 400)
		if got := c.MeasureText(text); got != 2000 {
			t.Fatalf("MeasureText = %d, want 2000", got)
		}
		if _, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: text}); err != nil {
			t.Fatalf("Publish: %v", err)
		}
		if len(f.stored()) != 1 {
			t.Errorf("fake stored %d messages, want 1", len(f.stored()))
		}
	})
}

func TestPublishUnreadableSuccessIsAmbiguous(t *testing.T) {
	tests := []struct {
		name   string
		mode   Mode
		status int
		body   string
	}{
		{"truncated json", ModeBot, 200, `{"id":"1600000000000000006","content":"x`},
		{"not json", ModeBot, 200, `<html>ok</html>`},
		{"json without id", ModeBot, 200, `{"content":"x"}`},
		{"webhook answered 204 without the message", ModeWebhook, 204, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				io.Copy(io.Discard, r.Body)
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			_, err := newClient(t, tt.mode, srv.URL).Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "x"})
			if diff := cmp.Diff(outcome{Class: "ambiguous", Status: tt.status}, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if n.Load() != 1 {
				t.Errorf("server received %d requests, want 1", n.Load())
			}
		})
	}
}

// TestServerErrorAfterCommitIsFoundByLookup: the fake stores the message
// and answers 500, as Discord may when it fails after saving. Publish is
// Ambiguous and does not re-send (the fake counts one create); Lookup from
// the pre-send point finds the message by its fingerprint; the channel
// holds exactly one copy.
func TestServerErrorAfterCommitIsFoundByLookup(t *testing.T) {
	f := newFake(t)
	f.add(otherUserID, "hi all")
	old := f.add(botID, "daily digest") // the same words, posted by the bot earlier
	f.add(otherUserID, "more chat")
	f.afterCreate = func(w http.ResponseWriter, _ *http.Request, _ fakeMsg) bool {
		apiErr(w, http.StatusInternalServerError, 0, "500: Internal Server Error")
		return true
	}
	c := newClient(t, ModeBot, f.srv.URL)
	ctx := context.Background()

	recent, err := c.Recent(ctx, 20)
	if err != nil {
		t.Fatalf("Recent: %v", err)
	}
	if len(recent) != 1 || recent[0].RemoteID != old.ID {
		t.Fatalf("Recent = %+v, want the bot's one message %s", recent, old.ID)
	}
	after := recent[0].RemoteID // the point the ledger records before sending
	req := platform.PublishRequest{Handle: "7m2kq4ze9xw3b5n8c1d6f0gh2a", Text: "daily digest"}
	_, err = c.Publish(ctx, req)
	if diff := cmp.Diff(outcome{Class: "ambiguous", Status: 500}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("Publish outcome (-want +got):\n%s", diff)
	}
	if creates, _ := f.counts(); creates != 1 {
		t.Fatalf("fake received %d creates, want 1: Publish must not re-send on a 5xx", creates)
	}
	f.add(otherUserID, "someone replies")

	got, found, err := c.Lookup(ctx, platform.LookupQuery{Handle: req.Handle, Fingerprint: platform.Fingerprint(req.Text, nil), Text: req.Text, After: after})
	if err != nil || !found {
		t.Fatalf("Lookup = %+v, %v, %v; want the message", got, found, err)
	}
	var ours []fakeMsg
	for _, m := range f.stored() {
		if m.AuthorID == botID && m.Nonce != "" {
			ours = append(ours, m)
		}
	}
	if len(ours) != 1 || got.RemoteID != ours[0].ID {
		t.Fatalf("found %q; the fake holds %+v; want exactly one message, the one found", got.RemoteID, ours)
	}
	want := platform.RemotePost{RemoteID: ours[0].ID, Text: "daily digest", CreatedAt: ours[0].At,
		URL: f.srv.URL + "/channels/" + guildID + "/" + channelID + "/" + ours[0].ID}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("found (-want +got):\n%s", diff)
	}
}

// TestTimeoutAfterCommit: the fake stores the message, then holds the
// answer until the client gives up. Publish is Ambiguous (the request was
// written) and Lookup finds the message; a request that never reached a
// server (closed listener) is NotPerformed.
func TestTimeoutAfterCommit(t *testing.T) {
	t.Run("bot: ambiguous, then found", func(t *testing.T) {
		f := newFake(t)
		f.afterCreate = func(_ http.ResponseWriter, r *http.Request, _ fakeMsg) bool {
			<-r.Context().Done()
			return true
		}
		c := newClient(t, ModeBot, f.srv.URL)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req := platform.PublishRequest{Handle: "7m2kq4ze9xw3b5n8c1d6f0gh2a", Text: "stalled"}
		_, err := c.Publish(ctx, req)
		if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
			t.Fatalf("Publish outcome (-want +got):\n%s", diff)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %q does not wrap context.DeadlineExceeded", err)
		}
		// No After recorded: the window starts at NotBefore, two minutes
		// before the send on the fake's clock.
		got, found, err := c.Lookup(context.Background(), platform.LookupQuery{Handle: req.Handle,
			Fingerprint: platform.Fingerprint(req.Text, nil), NotBefore: fixedNow.Add(-2 * time.Minute)})
		if err != nil || !found {
			t.Fatalf("Lookup = %+v, %v, %v; want the message", got, found, err)
		}
		if s := f.stored(); len(s) != 1 || s[0].ID != got.RemoteID {
			t.Errorf("fake holds %+v, found %q; want one message, the one found", s, got.RemoteID)
		}
	})

	t.Run("webhook: ambiguous", func(t *testing.T) {
		f := newFake(t)
		f.afterCreate = func(_ http.ResponseWriter, r *http.Request, _ fakeMsg) bool {
			<-r.Context().Done()
			return true
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := newClient(t, ModeWebhook, f.srv.URL).Publish(ctx, platform.PublishRequest{Text: "stalled"})
		if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
			t.Fatalf("Publish outcome (-want +got):\n%s", diff)
		}
	})

	t.Run("connection dropped after the request", func(t *testing.T) {
		f := newFake(t)
		f.afterCreate = func(w http.ResponseWriter, _ *http.Request, _ fakeMsg) bool {
			adaptertest.HijackClose(t, w)
			return true
		}
		_, err := newClient(t, ModeBot, f.srv.URL).Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "dropped"})
		if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
			t.Fatalf("Publish outcome (-want +got):\n%s", diff)
		}
		if creates, _ := f.counts(); creates != 1 {
			t.Errorf("fake received %d creates, want 1", creates)
		}
	})

	for _, mode := range []Mode{ModeBot, ModeWebhook} {
		t.Run(string(mode)+": closed listener is not performed", func(t *testing.T) {
			_, err := newClient(t, mode, refusedURL(t)).Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "x"})
			if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeleteTwice: Delete Message answers 204, and 404 with code 10008
// (Unknown Message) once the message is gone
// (https://discord.com/developers/docs/resources/message#delete-message,
// https://discord.com/developers/docs/resources/webhook#delete-webhook-message).
// Both deletes are nil; the fake removed the message once.
func TestDeleteTwice(t *testing.T) {
	for _, mode := range []Mode{ModeBot, ModeWebhook} {
		t.Run(string(mode), func(t *testing.T) {
			f := newFake(t)
			c := newClient(t, mode, f.srv.URL)
			ctx := context.Background()
			r, err := c.Publish(ctx, platform.PublishRequest{Handle: "h", Text: "short-lived"})
			if err != nil {
				t.Fatalf("Publish: %v", err)
			}
			if ok, err := c.Exists(ctx, r.RemoteID); err != nil || !ok {
				t.Fatalf("Exists before delete = %v, %v; want true", ok, err)
			}
			for i := range 2 {
				if err := c.Delete(ctx, r.RemoteID); err != nil {
					t.Fatalf("Delete #%d: %v", i+1, err)
				}
			}
			if _, removed := f.counts(); removed != 1 {
				t.Errorf("fake removed %d messages, want 1", removed)
			}
			if n := len(f.requests(http.MethodDelete, "/api/v10/")); n != 2 {
				t.Errorf("fake received %d deletes, want 2", n)
			}
			if ok, err := c.Exists(ctx, r.RemoteID); err != nil || ok {
				t.Errorf("Exists after delete = %v, %v; want false", ok, err)
			}
		})
	}
}

// TestWebhookAmbiguousCreateIsInconclusive: a webhook cannot list the
// channel, so after an ambiguous create Lookup says Inconclusive (the use
// case holds the entry for an operator) without reading anything, Recent
// refuses, and the message can still be read by id once its id is known.
func TestWebhookAmbiguousCreateIsInconclusive(t *testing.T) {
	f := newFake(t)
	f.afterCreate = func(w http.ResponseWriter, _ *http.Request, _ fakeMsg) bool {
		apiErr(w, http.StatusBadGateway, 0, "502: Bad Gateway")
		return true
	}
	c := newClient(t, ModeWebhook, f.srv.URL)
	ctx := context.Background()
	_, err := c.Publish(ctx, platform.PublishRequest{Handle: "h", Text: "maybe posted"})
	if diff := cmp.Diff(outcome{Class: "ambiguous", Status: 502}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("Publish outcome (-want +got):\n%s", diff)
	}
	before := len(f.requests(http.MethodGet, "/"))
	_, found, err := c.Lookup(ctx, platform.LookupQuery{Handle: "h", Fingerprint: platform.Fingerprint("maybe posted", nil), NotBefore: fixedNow})
	if diff := cmp.Diff(outcome{Class: "inconclusive"}, outcomeOf(t, err)); diff != "" || found {
		t.Errorf("Lookup found=%v (-want +got):\n%s", found, diff)
	}
	_, err = c.Recent(ctx, 20)
	if diff := cmp.Diff(outcome{Class: "rejected", Reason: "history_unreadable"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("Recent (-want +got):\n%s", diff)
	}
	if after := len(f.requests(http.MethodGet, "/")); after != before {
		t.Errorf("Lookup and Recent sent %d reads, want none", after-before)
	}
	stored := f.stored()
	if len(stored) != 1 {
		t.Fatalf("fake stored %d messages, want 1", len(stored))
	}
	if ok, err := c.Exists(ctx, stored[0].ID); err != nil || !ok {
		t.Errorf("Exists(%s) = %v, %v; want true", stored[0].ID, ok, err)
	}
}

// TestUnauthorizedAndRefresh: a refused bot or webhook token is
// Unauthorized; neither token has a refresh grant, so Refresh is Rejected
// "reconnect_needed" without a request.
func TestUnauthorizedAndRefresh(t *testing.T) {
	f := newFake(t)
	ctx := context.Background()
	bad := func(c *Config) { c.Credential.AccessToken = "revoked-T0KEN" }
	for _, mode := range []Mode{ModeBot, ModeWebhook} {
		c := newClient(t, mode, f.srv.URL, bad)
		_, err := c.Publish(ctx, platform.PublishRequest{Handle: "h", Text: "x"})
		if diff := cmp.Diff(outcome{Class: "unauthorized"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("%s publish with a revoked token (-want +got):\n%s", mode, diff)
		}
		before := len(f.requests(http.MethodPost, "/")) + len(f.requests(http.MethodGet, "/"))
		cred, err := c.Refresh(ctx, platform.Credential{AccessToken: botToken, RefreshToken: "r"})
		if diff := cmp.Diff(outcome{Class: "rejected", Reason: platform.ReasonReconnectNeeded}, outcomeOf(t, err)); diff != "" {
			t.Errorf("%s refresh (-want +got):\n%s", mode, diff)
		}
		if cred != (platform.Credential{}) {
			t.Errorf("%s refresh returned a credential", mode)
		}
		if after := len(f.requests(http.MethodPost, "/")) + len(f.requests(http.MethodGet, "/")); after != before {
			t.Errorf("%s refresh sent %d requests, want none", mode, after-before)
		}
	}
	if creates, _ := f.counts(); creates != 0 {
		t.Errorf("fake created %d messages with revoked tokens", creates)
	}
}

func TestUploadMediaIsUnsupported(t *testing.T) {
	f := newFake(t)
	_, err := newClient(t, ModeBot, f.srv.URL).UploadMedia(context.Background(), platform.MediaUpload{Filename: "a.png", Data: []byte("png")})
	if diff := cmp.Diff(outcome{Class: "rejected", Reason: "media_unsupported"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if n := len(f.requests(http.MethodPost, "/")); n != 0 {
		t.Errorf("server received %d requests, want 0", n)
	}
}

// TestNoTokenInErrors drives the failures whose errors could plausibly
// carry a token (the webhook token is in every webhook URL) and checks
// each error's text. TestMain checks every other error the tests saw.
func TestNoTokenInErrors(t *testing.T) {
	var errs []error
	ctx := context.Background()
	for _, mode := range []Mode{ModeBot, ModeWebhook} {
		// Refused connection and timeout: transport errors name the URL
		// unless httpcall scrubs it.
		withFile := platform.PublishRequest{Handle: "h", Text: "x", Media: []platform.MediaUpload{catPNG}}
		c := newClient(t, mode, refusedURL(t))
		_, err := c.Publish(ctx, platform.PublishRequest{Handle: "h", Text: "x"})
		errs = append(errs, err)
		_, err = c.Publish(ctx, withFile)
		errs = append(errs, err)
		// Refused before sending, naming the file: even a name that
		// carries the client's token is scrubbed from the error.
		own := map[Mode]string{ModeBot: botToken, ModeWebhook: webhookToken}[mode]
		_, err = c.Publish(ctx, platform.PublishRequest{Handle: "h", Text: "x", Media: []platform.MediaUpload{{Filename: own + ".png", Data: []byte("x")}}})
		errs = append(errs, err)
		errs = append(errs, c.Delete(ctx, "1600000000000000006"))
		_, err = c.Exists(ctx, "1600000000000000006")
		errs = append(errs, err)
		_, err = c.Recent(ctx, 5)
		errs = append(errs, err)

		stall := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
		}))
		tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err = newClient(t, mode, stall.URL).Publish(tctx, platform.PublishRequest{Handle: "h", Text: "x"})
		cancel()
		errs = append(errs, err)
		tctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
		_, err = newClient(t, mode, stall.URL).Publish(tctx, withFile)
		cancel()
		errs = append(errs, err)

		// Error answers, including one that echoes the request path.
		for _, status := range []int{400, 401, 403, 404, 429, 500} {
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				apiErr(w, status, 0, "error at "+r.URL.Path)
			}))
			c := newClient(t, mode, srv.URL)
			_, err := c.Publish(ctx, platform.PublishRequest{Handle: "h", Text: "x"})
			errs = append(errs, err, c.Delete(ctx, "1600000000000000006"))
			_, err = c.Publish(ctx, withFile)
			errs = append(errs, err)
			_, err = c.Exists(ctx, "1600000000000000006")
			errs = append(errs, err)
		}
	}
	// A bad webhook id: Discord's Unknown Webhook.
	f := newFake(t)
	_, err := newClient(t, ModeWebhook, f.srv.URL, func(c *Config) { c.WebhookID = "1999999999999999999" }).
		Publish(ctx, platform.PublishRequest{Text: "x"})
	errs = append(errs, err)

	for i, err := range errs {
		if err == nil {
			t.Errorf("case %d: no error", i)
			continue
		}
		noteError(err)
		for _, tok := range []string{botToken, webhookToken} {
			if strings.Contains(err.Error(), tok) {
				t.Errorf("case %d: error %q carries a token", i, err)
			}
		}
	}
}
