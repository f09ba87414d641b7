package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
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

// The brief's test 2 (the platform's duplicate answer) does not apply:
// Telegram has no idempotency key and no duplicate refusal, a second
// sendMessage simply posts a second message. Its tests 5 and 6 end in
// "Lookup finds it"; here Lookup cannot find anything (a bot cannot read a
// chat), so they end in Lookup → Inconclusive, and the fake's count shows
// that the adapter sent once and did not re-send. Test 4's refresh part is
// reduced to Refresh → reconnect_needed: bot tokens have no refresh grant.

func TestNewValidatesConfig(t *testing.T) {
	good := Config{Token: testToken, ChatID: testChat}
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string // substring naming the field; "" means valid
	}{
		{"valid, default base url", func(*Config) {}, ""},
		{"valid, local bot api server", func(c *Config) { c.BaseURL = "http://127.0.0.1:8081/" }, ""},
		{"valid, channel username", func(c *Config) { c.ChatID = "@oncepost_news" }, ""},
		{"valid, private chat id", func(c *Config) { c.ChatID = "987654321" }, ""},
		{"relative base url", func(c *Config) { c.BaseURL = "api.telegram.org" }, "BaseURL"},
		{"ftp base url", func(c *Config) { c.BaseURL = "ftp://api.telegram.org" }, "BaseURL"},
		{"base url with query", func(c *Config) { c.BaseURL = "https://api.telegram.org/?x=1" }, "BaseURL"},
		{"missing token", func(c *Config) { c.Token = "" }, "Token"},
		{"token without bot id", func(c *Config) { c.Token = "ABC-DEF1234ghIkl" }, "Token"},
		{"token with non-numeric bot id", func(c *Config) { c.Token = "abc:" + testSecret }, "Token"},
		{"token with empty secret", func(c *Config) { c.Token = "123456:" }, "Token"},
		{"token with a slash", func(c *Config) { c.Token = testToken + "/x" }, "Token"},
		{"token with a query", func(c *Config) { c.Token = testToken + "?x" }, "Token"},
		{"missing chat id", func(c *Config) { c.ChatID = "" }, "ChatID"},
		{"chat id zero", func(c *Config) { c.ChatID = "0" }, "ChatID"},
		{"chat id neither number nor username", func(c *Config) { c.ChatID = "news" }, "ChatID"},
		{"chat username with a slash", func(c *Config) { c.ChatID = "@news/x" }, "ChatID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.edit(&cfg)
			_, err := New(cfg)
			logErr(t, err)
			adaptertest.CheckNewError(t, err, tt.wantErr)
		})
	}
}

func TestDefaultBaseURL(t *testing.T) {
	c, err := New(Config{Token: testToken, ChatID: testChat})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if got, want := c.bot.url("getMe"), "https://api.telegram.org/bot"+testToken+"/getMe"; got != want {
		t.Errorf("url = %q, want %q", got, want)
	}
}

func TestPrintingHidesToken(t *testing.T) {
	cfg := Config{BaseURL: "https://api.telegram.org", Token: testToken, ChatID: testChat}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, s := range []string{
		fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprint(&cfg),
		fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c),
	} {
		if leaks(s) {
			t.Errorf("printed value leaks the token: %s", s)
		}
	}
}

func TestCapabilities(t *testing.T) {
	c := newClient(t, "https://api.telegram.org")
	want := platform.Capabilities{
		Platform:          "telegram",
		NativeIdempotency: false,
		LookupByHandle:    false,
		ReadableHistory:   false,
		MaxTextGraphemes:  4096,
		MaxTextWithMedia:  1024,
		MaxMedia:          1,
		MaxMediaBytes:     10 << 20,
		InlineMedia:       true,
		Handle:            "none: the Bot API has no idempotency key, so the handle is not sent",
		ReadBack:          "none: a bot cannot read a chat's history or a message by id; unknown outcomes go to an operator",
		// https://core.telegram.org/bots/faq#my-bot-is-hitting-limits-how-do-i-avoid-this:
		// one message per second in a chat, 20 per minute in a group.
		PostingLimits: []platform.Rate{{Count: 1, Per: time.Second}, {Count: 20, Per: time.Minute}},
	}
	if diff := cmp.Diff(want, c.Capabilities()); diff != "" {
		t.Errorf("capabilities (-want +got):\n%s", diff)
	}
	if got := c.Capabilities().Guarantee(); got != platform.Human {
		t.Errorf("guarantee = %q, want %q: an unknown outcome must go to a human", got, platform.Human)
	}
}

// TestMeasureText counts UTF-16 code units, the Bot API's unit for text
// (https://core.telegram.org/bots/api#messageentity: offset and length
// "in UTF-16 code units").
func TestMeasureText(t *testing.T) {
	c := newClient(t, "https://api.telegram.org")
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello", 5},
		{"héllo", 5},   // é is one BMP code point
		{"e\u0301", 2}, // e + combining acute: one grapheme, two units
		{"日本語", 3},     // BMP: one unit each
		{"😀", 2},       // outside the BMP: a surrogate pair
		{"👍🏽", 4},      // emoji + skin tone modifier: one grapheme, two pairs
		{"👨‍👩‍👧", 8},   // family: three pairs and two ZWJ
		{strings.Repeat("a", 4096), 4096},
	}
	for _, tt := range tests {
		if got := c.MeasureText(tt.text); got != tt.want {
			t.Errorf("MeasureText(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

// TestPublishSendsOneMessage asserts the request shape of sendMessage
// (https://core.telegram.org/bots/api#sendmessage, sent as
// https://core.telegram.org/bots/api#making-requests describes: POST to
// /bot<token>/METHOD_NAME with application/json) and the receipt read from
// the Message answered (https://core.telegram.org/bots/api#message).
func TestPublishSendsOneMessage(t *testing.T) {
	tests := []struct {
		name     string
		chat     string
		username string
		wantChat any
		wantURL  string
	}{
		{"channel by id, public username", testChat, "oncepost_news", float64(testChatID), "https://t.me/oncepost_news/42"},
		{"channel by id, private", testChat, "", float64(testChatID), ""},
		{"channel by username", "@oncepost_news", "oncepost_news", "@oncepost_news", "https://t.me/oncepost_news/42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeBot(t, tt.username)
			srv := newServer(t, fake)
			c := newClient(t, srv.URL, func(cfg *Config) { cfg.ChatID = tt.chat })

			text := "Release 1.2 is out: <b>not bold</b> & *not markdown*_\nhttps://example.org/r/1.2"
			receipt, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "entry-7f3a", Text: text, CreatedAt: fixedNow})
			logErr(t, err)
			if err != nil {
				t.Fatalf("Publish: %v", err)
			}
			want := platform.Receipt{RemoteID: "42", URL: tt.wantURL, CreatedAt: fixedNow}
			if diff := cmp.Diff(want, receipt); diff != "" {
				t.Errorf("receipt (-want +got):\n%s", diff)
			}
			// Plain text: no parse_mode, no entities, no options; the token
			// only in the path, no Authorization header; the handle goes
			// nowhere (Telegram has no field for it).
			wantReqs := []seenRequest{{
				Method: "POST", Path: "/bot" + testToken + "/sendMessage", ContentType: "application/json",
				Body: map[string]any{"chat_id": tt.wantChat, "text": text},
			}}
			if diff := cmp.Diff(wantReqs, fake.seen()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPublishRefusesBeforeSending: text over 4096 UTF-16 code units
// (https://core.telegram.org/bots/api#sendmessage "1-4096 characters"),
// empty text and media are refused without a call.
func TestPublishRefusesBeforeSending(t *testing.T) {
	tooLong := strings.Repeat("😀", 2048) + "a" // 2049 code points, 4097 UTF-16 units
	tests := []struct {
		name string
		req  platform.PublishRequest
		want outcome
	}{
		{"over 4096 utf-16 units", platform.PublishRequest{Handle: "h", Text: tooLong},
			outcome{Class: "rejected", Reason: "text_too_long", Message: "send message: the text is 4097 UTF-16 code units, over Telegram's limit of 4096"}},
		{"over 4096 ascii", platform.PublishRequest{Handle: "h", Text: strings.Repeat("a", 4097)},
			outcome{Class: "rejected", Reason: "text_too_long", Message: "send message: the text is 4097 UTF-16 code units, over Telegram's limit of 4096"}},
		{"empty", platform.PublishRequest{Handle: "h", Text: ""},
			outcome{Class: "rejected", Reason: "text_empty", Message: "send message: the text is empty"}},
		{"white space only", platform.PublishRequest{Handle: "h", Text: " \n\t "},
			outcome{Class: "rejected", Reason: "text_empty", Message: "send message: the text is empty"}},
		{"media", platform.PublishRequest{Handle: "h", Text: "photo", MediaIDs: []string{"m1"}},
			outcome{Class: "rejected", Reason: "media_unsupported", Message: "send message: Telegram takes a photo with the message (PublishRequest.Media), not uploaded ids"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeBot(t, "")
			srv := newServer(t, fake)
			_, err := newClient(t, srv.URL).Publish(context.Background(), tt.req)
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if n := len(fake.seen()); n != 0 {
				t.Errorf("server received %d requests, want 0", n)
			}
		})
	}
	t.Run("exactly 4096 utf-16 units is sent", func(t *testing.T) {
		fake := newFakeBot(t, "")
		srv := newServer(t, fake)
		_, err := newClient(t, srv.URL).Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: strings.Repeat("😀", 2048)})
		logErr(t, err)
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
		if sends, _, _ := fake.counts(); sends != 1 {
			t.Errorf("sends = %d, want 1", sends)
		}
	})
}

// TestWriteAnswerClassification runs the Bot API's error answers
// (https://core.telegram.org/bots/api#making-requests: {"ok":false,
// "error_code", "description", "parameters"}, the HTTP status equal to
// error_code; ResponseParameters
// https://core.telegram.org/bots/api#responseparameters) through Publish
// and Delete, both writes sent once. The descriptions are the server's
// texts as client libraries' issue trackers quote them, e.g. "Bad Request:
// group chat was upgraded to a supergroup chat" with migrate_to_chat_id
// (TwiN/gatus#179) and the 429 body of tdlib/telegram-bot-api Query.cpp
// set_retry_after_error ("Too Many Requests: retry after N", parameters
// retry_after; HttpConnection.cpp adds Retry-After for it).
func TestWriteAnswerClassification(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   any
		want   outcome
	}{
		{"chat not found", 400, nil, apiError(400, "Bad Request: chat not found", nil),
			outcome{Class: "rejected", Status: 400, Reason: "chat_not_found", Message: "Bad Request: chat not found"}},
		{"blocked by the user", 403, nil, apiError(403, "Forbidden: bot was blocked by the user", nil),
			outcome{Class: "rejected", Status: 403, Reason: "bot_blocked", Message: "Forbidden: bot was blocked by the user"}},
		{"kicked from the group", 403, nil, apiError(403, "Forbidden: bot was kicked from the group chat", nil),
			outcome{Class: "rejected", Status: 403, Reason: "bot_kicked", Message: "Forbidden: bot was kicked from the group chat"}},
		{"not a member of the channel", 403, nil, apiError(403, "Forbidden: bot is not a member of the channel chat", nil),
			outcome{Class: "rejected", Status: 403, Reason: "bot_not_member", Message: "Forbidden: bot is not a member of the channel chat"}},
		{"message is too long", 400, nil, apiError(400, "Bad Request: message is too long", nil),
			outcome{Class: "rejected", Status: 400, Reason: "text_too_long", Message: "Bad Request: message is too long"}},
		{"no rights to post", 400, nil, apiError(400, "Bad Request: need administrator rights in the channel chat", nil),
			outcome{Class: "rejected", Status: 400, Reason: "not_enough_rights", Message: "Bad Request: need administrator rights in the channel chat"}},
		{"other 400", 400, nil, apiError(400, "Bad Request: TOPIC_CLOSED", nil),
			outcome{Class: "rejected", Status: 400, Reason: "http_400", Message: "Bad Request: TOPIC_CLOSED"}},
		{"group migrated to a supergroup", 400, nil,
			apiError(400, "Bad Request: group chat was upgraded to a supergroup chat", map[string]any{"migrate_to_chat_id": int64(-1001557912345)}),
			outcome{Class: "rejected", Status: 400, Reason: "chat_migrated",
				Message: "Bad Request: group chat was upgraded to a supergroup chat: the group is now a supergroup with chat id -1001557912345; set it as the account's remote id"}},
		{"unauthorized", 401, nil, apiError(401, "Unauthorized", nil), outcome{Class: "unauthorized"}},
		{"flood control, parameters only", 429, nil,
			apiError(429, "Too Many Requests: retry after 7", map[string]any{"retry_after": 7}),
			outcome{Class: "not_performed", Status: 429, RetryAfter: 7 * time.Second}},
		{"flood control, header and parameters", 429, map[string]string{"Retry-After": "35"},
			apiError(429, "Too Many Requests: retry after 35", map[string]any{"retry_after": 35}),
			outcome{Class: "not_performed", Status: 429, RetryAfter: 35 * time.Second}},
		{"flood control, fractional wait", 429, nil,
			apiError(429, "Too Many Requests: retry after 1", map[string]any{"retry_after": 1.5}),
			outcome{Class: "not_performed", Status: 429, RetryAfter: 1500 * time.Millisecond}},
		{"flood control, absurd wait is the longest, not zero", 429, nil,
			apiError(429, "Too Many Requests", map[string]any{"retry_after": 1e300}),
			outcome{Class: "not_performed", Status: 429, RetryAfter: math.MaxInt64}},
		{"flood control, negative wait", 429, nil,
			apiError(429, "Too Many Requests", map[string]any{"retry_after": -3}),
			outcome{Class: "not_performed", Status: 429}},
		{"internal server error", 500, nil, apiError(500, "Internal Server Error: restart", nil), outcome{Class: "ambiguous", Status: 500}},
		{"bad gateway from a proxy", 502, nil, "<html>502 Bad Gateway</html>", outcome{Class: "ambiguous", Status: 502}},
		{"gateway timeout", 504, nil, "", outcome{Class: "ambiguous", Status: 504}},
	}
	calls := map[string]func(*Client) error{
		"publish": func(c *Client) error {
			_, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "x"})
			return err
		},
		"delete": func(c *Client) error { return c.Delete(context.Background(), "42") },
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
					if s, ok := tt.body.(string); ok {
						w.WriteHeader(tt.status)
						io.WriteString(w, s)
						return
					}
					writeJSON(w, tt.status, tt.body)
				}))
				err := call(newClient(t, srv.URL))
				want := tt.want
				if want.Class == "rejected" {
					want.Message = map[string]string{"publish": "send message: ", "delete": "delete message: "}[name] + want.Message
				}
				if diff := cmp.Diff(want, outcomeOf(t, err)); diff != "" {
					t.Errorf("outcome (-want +got):\n%s", diff)
				}
				if n.Load() != 1 {
					t.Errorf("server received %d requests, want exactly 1", n.Load())
				}
			})
		}
	}
}

// TestPublishUnreadableSuccessIsAmbiguous: a 2xx to sendMessage or
// sendPhoto whose Message cannot be read means Telegram probably posted
// it.
func TestPublishUnreadableSuccessIsAmbiguous(t *testing.T) {
	for name, body := range map[string]string{
		"not json":             `<html>ok</html>`,
		"truncated":            `{"ok":true,"result":{"message_id":4`,
		"ok false on 200":      `{"ok":false,"error_code":400,"description":"Bad Request: odd"}`,
		"result without an id": `{"ok":true,"result":{"date":1772366400}}`,
		"result is true":       `{"ok":true,"result":true}`,
	} {
		for method, req := range sendRequests() {
			t.Run(method+" "+name, func(t *testing.T) {
				var n atomic.Int32
				srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if !strings.HasSuffix(r.URL.Path, "/"+method) {
						t.Errorf("request to %s, want %s", r.URL.Path, method)
					}
					n.Add(1)
					io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, body)
				}))
				_, err := newClient(t, srv.URL).Publish(context.Background(), req)
				if diff := cmp.Diff(outcome{Class: "ambiguous", Status: 200}, outcomeOf(t, err)); diff != "" {
					t.Errorf("outcome (-want +got):\n%s", diff)
				}
				if n.Load() != 1 {
					t.Errorf("server received %d requests, want exactly 1", n.Load())
				}
			})
		}
	}
}

// sendRequests are a post of each send method: text alone (sendMessage)
// and text with a photo (sendPhoto).
func sendRequests() map[string]platform.PublishRequest {
	photo := platform.MediaUpload{Filename: "a.png", ContentType: "image/png", Data: []byte("\x89PNG")}
	return map[string]platform.PublishRequest{
		"sendMessage": {Handle: "h", Text: "x"},
		"sendPhoto":   {Handle: "h", Text: "x", Media: []platform.MediaUpload{photo}},
	}
}

// TestPublish5xxAfterCommit: the fake stores the message, then answers
// 500 (a Bot API server that failed after Telegram accepted the message,
// or a proxy). Publish is Ambiguous, never NotPerformed, and sends once;
// Lookup cannot clear it (Inconclusive, never "not found"), so the ledger
// holds it for a human instead of re-sending. Exactly one message exists.
func TestPublish5xxAfterCommit(t *testing.T) {
	for _, status := range []int{500, 502, 503, 504} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			fake := newFakeBot(t, "oncepost_news")
			fake.fault = func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, status, apiError(status, "Internal Server Error", nil))
			}
			srv := newServer(t, fake)
			c := newClient(t, srv.URL)
			_, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "hello"})
			if diff := cmp.Diff(outcome{Class: "ambiguous", Status: status}, outcomeOf(t, err)); diff != "" {
				t.Errorf("publish outcome (-want +got):\n%s", diff)
			}
			assertLookupInconclusive(t, c, "hello")
			if sends, stored, _ := fake.counts(); sends != 1 || stored != 1 {
				t.Errorf("fake saw %d sends and stores %d messages, want exactly 1 and 1", sends, stored)
			}
		})
	}
}

// TestPublishTimeoutAfterCommit: the fake stores the message, then never
// answers; the client's deadline ends the call after the request was
// written: Ambiguous (wrapping the deadline), one send, and Lookup is
// Inconclusive.
func TestPublishTimeoutAfterCommit(t *testing.T) {
	fake := newFakeBot(t, "")
	release := make(chan struct{})
	fake.fault = func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	srv := newServer(t, fake)
	t.Cleanup(func() { close(release) }) // runs before the server's Close
	c := newClient(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.Publish(ctx, platform.PublishRequest{Handle: "h", Text: "hello"})
	if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("publish outcome (-want +got):\n%s", diff)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %q does not wrap context.DeadlineExceeded", err)
	}
	assertLookupInconclusive(t, c, "hello")
	if sends, stored, _ := fake.counts(); sends != 1 || stored != 1 {
		t.Errorf("fake saw %d sends and stores %d messages, want exactly 1 and 1", sends, stored)
	}
}

// TestPublishConnectionDroppedAfterCommit: the fake stores the message and
// closes the connection without an answer: Ambiguous, sent once (net/http
// must not replay the POST on a new connection).
func TestPublishConnectionDroppedAfterCommit(t *testing.T) {
	t.Run("sendPhoto", func(t *testing.T) {
		var n atomic.Int32
		srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			io.Copy(io.Discard, r.Body)
			adaptertest.HijackClose(t, w)
		}))
		_, err := newClient(t, srv.URL).Publish(context.Background(), sendRequests()["sendPhoto"])
		if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("publish outcome (-want +got):\n%s", diff)
		}
		if n.Load() != 1 {
			t.Errorf("server received %d requests, want exactly 1", n.Load())
		}
	})
	fake := newFakeBot(t, "")
	fake.fault = func(w http.ResponseWriter, _ *http.Request) { adaptertest.HijackClose(t, w) }
	srv := newServer(t, fake)
	c := newClient(t, srv.URL)
	_, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "hello"})
	if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("publish outcome (-want +got):\n%s", diff)
	}
	if sends, stored, _ := fake.counts(); sends != 1 || stored != 1 {
		t.Errorf("fake saw %d sends and stores %d messages, want exactly 1 and 1", sends, stored)
	}
}

// TestPublishNotSentIsNotPerformed: a refused connection never reached
// Telegram: NotPerformed, safe to send again.
func TestPublishNotSentIsNotPerformed(t *testing.T) {
	c := newClient(t, refusedURL(t))
	_, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "hello"})
	if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
}

// TestPublishDoesNotResend is the broken-implementation check: an adapter
// that retried sendMessage on a 5xx or a timeout would post twice. The
// fake counts every sendMessage over a run of failures and a Lookup after
// each.
func TestPublishDoesNotResend(t *testing.T) {
	faults := map[string]func(t *testing.T) func(http.ResponseWriter, *http.Request){
		"500": func(*testing.T) func(http.ResponseWriter, *http.Request) {
			return func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, 500, apiError(500, "Internal Server Error", nil))
			}
		},
		"503 with retry-after": func(*testing.T) func(http.ResponseWriter, *http.Request) {
			return func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Retry-After", "1")
				writeJSON(w, 503, apiError(503, "Service Unavailable", nil))
			}
		},
		"dropped connection": func(t *testing.T) func(http.ResponseWriter, *http.Request) {
			return func(w http.ResponseWriter, _ *http.Request) { adaptertest.HijackClose(t, w) }
		},
	}
	for name, fault := range faults {
		t.Run(name, func(t *testing.T) {
			fake := newFakeBot(t, "")
			fake.fault = fault(t)
			srv := newServer(t, fake)
			c := newClient(t, srv.URL)
			_, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "once"})
			if got := outcomeOf(t, err).Class; got != "ambiguous" {
				t.Errorf("outcome %s, want ambiguous", got)
			}
			_, found, err := c.Lookup(context.Background(), platform.LookupQuery{Handle: "h", Fingerprint: platform.Fingerprint("once", nil)})
			logErr(t, err)
			if found || err == nil {
				t.Errorf("Lookup found=%v err=%v, want an Inconclusive error", found, err)
			}
			if sends, _, _ := fake.counts(); sends != 1 {
				t.Errorf("fake saw %d sendMessage calls, want exactly 1", sends)
			}
		})
	}
}

func assertLookupInconclusive(t *testing.T, c *Client, text string) {
	t.Helper()
	_, found, err := c.Lookup(context.Background(), platform.LookupQuery{
		Handle: "h", Fingerprint: platform.Fingerprint(text, nil), Text: text, After: platform.StartOfHistory, NotBefore: fixedNow,
	})
	if found {
		t.Errorf("Lookup found a message; a bot cannot read the chat")
	}
	if diff := cmp.Diff(outcome{Class: "inconclusive"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("lookup outcome (-want +got):\n%s", diff)
	}
}

// TestUnauthorizedThenRefresh: a revoked token is Unauthorized on every
// call, and Refresh has nothing to exchange: reconnect_needed, without a
// request.
func TestUnauthorizedThenRefresh(t *testing.T) {
	fake := newFakeBot(t, "")
	srv := newServer(t, fake)
	c := newClient(t, srv.URL, func(cfg *Config) { cfg.Token = "123456:revoked-secret" })
	_, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "x"})
	if diff := cmp.Diff(outcome{Class: "unauthorized"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("publish outcome (-want +got):\n%s", diff)
	}
	before := len(fake.seen())
	cred, err := c.Refresh(context.Background(), platform.Credential{AccessToken: "123456:revoked-secret"})
	want := outcome{Class: "rejected", Reason: "reconnect_needed",
		Message: "refresh token: Telegram bot tokens do not expire and cannot be refreshed; if the token was refused it was revoked in @BotFather: add the account again with the new token"}
	if diff := cmp.Diff(want, outcomeOf(t, err)); diff != "" {
		t.Errorf("refresh outcome (-want +got):\n%s", diff)
	}
	if cred != (platform.Credential{}) {
		t.Errorf("Refresh returned a credential, want none")
	}
	if got := len(fake.seen()); got != before {
		t.Errorf("Refresh sent %d requests, want 0", got-before)
	}
}

func TestUploadMediaUnsupported(t *testing.T) {
	var n atomic.Int32
	srv := newServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
	_, err := newClient(t, srv.URL).UploadMedia(context.Background(), platform.MediaUpload{Handle: "m", Filename: "a.png", ContentType: "image/png", Data: []byte("png")})
	got := outcomeOf(t, err)
	if got.Class != "rejected" || got.Reason != "media_unsupported" {
		t.Errorf("outcome %+v, want rejected media_unsupported", got)
	}
	if n.Load() != 0 {
		t.Errorf("server received %d requests, want 0", n.Load())
	}
}

func TestConnector(t *testing.T) {
	fake := newFakeBot(t, "")
	srv := newServer(t, fake)
	acc := post.Account{ID: "tg-news", Platform: "telegram", BaseURL: srv.URL, RemoteID: testChat}
	cl, err := Connector{}.Client(context.Background(), acc, platform.Credential{AccessToken: testToken})
	logErr(t, err)
	if err != nil {
		t.Fatalf("Client: %v", err)
	}
	if _, err := cl.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "hi"}); err != nil {
		logErr(t, err)
		t.Fatalf("Publish: %v", err)
	}
	want := []seenRequest{{Method: "POST", Path: "/bot" + testToken + "/sendMessage", ContentType: "application/json",
		Body: map[string]any{"chat_id": float64(testChatID), "text": "hi"}}}
	if diff := cmp.Diff(want, fake.seen()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}

	acc.BaseURL = ""
	cl, err = Connector{}.Client(context.Background(), acc, platform.Credential{AccessToken: testToken})
	if err != nil {
		t.Fatalf("Client with default base: %v", err)
	}
	if got := cl.(*Client).bot.base; got != DefaultBaseURL {
		t.Errorf("base = %q, want %q", got, DefaultBaseURL)
	}

	_, err = Connector{}.Client(context.Background(), acc, platform.Credential{})
	logErr(t, err)
	if err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("Client without a token: err = %v, want one naming the token", err)
	}
}
