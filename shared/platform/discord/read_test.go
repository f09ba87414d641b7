package discord

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
)

// TestSnowflakeAt uses the example of Discord's snowflake documentation:
// id 175928847299117063 was made at 1462015105796 ms, 41944705796 ms after
// the Discord epoch (https://discord.com/developers/docs/reference#snowflakes);
// the starting point for that millisecond is (41944705796 << 22) - 1,
// which the example's id is newer than.
func TestSnowflakeAt(t *testing.T) {
	at := time.UnixMilli(1462015105796)
	got := SnowflakeAt(at)
	if want := strconv.FormatUint(41944705796<<22-1, 10); got != want {
		t.Errorf("SnowflakeAt = %s, want %s", got, want)
	}
	if compareIDs("175928847299117063", got) <= 0 {
		t.Errorf("a message made at that millisecond (175928847299117063) is not after %s", got)
	}
	if got := SnowflakeAt(time.Date(2014, 1, 1, 0, 0, 0, 0, time.UTC)); got != "0" {
		t.Errorf("SnowflakeAt before the epoch = %s, want 0", got)
	}
}

// TestLookupStartPoint checks the after= of the first page
// (https://discord.com/developers/docs/resources/message#get-channel-messages):
// After when it is a message id, else the snowflake of NotBefore, else 0.
func TestLookupStartPoint(t *testing.T) {
	notBefore := fixedNow.Add(-2 * time.Minute)
	tests := []struct {
		name      string
		q         platform.LookupQuery
		wantAfter string
	}{
		{"after a message id", platform.LookupQuery{After: "1300000000000000999", NotBefore: notBefore}, "1300000000000000999"},
		{"no point: NotBefore", platform.LookupQuery{NotBefore: notBefore}, SnowflakeAt(notBefore)},
		{"start of history: NotBefore", platform.LookupQuery{After: platform.StartOfHistory, NotBefore: notBefore}, SnowflakeAt(notBefore)},
		{"start of history without NotBefore: the channel's start", platform.LookupQuery{After: platform.StartOfHistory}, "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			f.add(botID, "something else") // readable, so "not found" is provable
			c := newClient(t, ModeBot, f.srv.URL, func(c *Config) { c.BotUserID = botID })
			tt.q.Fingerprint = platform.Fingerprint("absent", nil)
			_, found, err := c.Lookup(context.Background(), tt.q)
			if err != nil || found {
				t.Fatalf("Lookup = %v, %v; want not found", found, err)
			}
			lists := f.requests(http.MethodGet, "/api/v10/channels/"+channelID+"/messages")
			if len(lists) == 0 {
				t.Fatal("no list request")
			}
			q, _ := url.ParseQuery(lists[0].Query)
			if diff := cmp.Diff(url.Values{"after": {tt.wantAfter}, "limit": {"100"}}, q); diff != "" {
				t.Errorf("first page query (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("After that is not an id", func(t *testing.T) {
		f := newFake(t)
		c := newClient(t, ModeBot, f.srv.URL)
		_, _, err := c.Lookup(context.Background(), platform.LookupQuery{After: "abc", Fingerprint: "fp"})
		noteError(err)
		if err == nil {
			t.Error("Lookup accepted After \"abc\"")
		}
		if n := len(f.requests(http.MethodGet, "/")); n != 0 {
			t.Errorf("sent %d requests, want 0", n)
		}
	})

	t.Run("no fingerprint", func(t *testing.T) {
		_, _, err := newClient(t, ModeBot, "https://discord.example").Lookup(context.Background(), platform.LookupQuery{Handle: "h"})
		noteError(err)
		if err == nil {
			t.Error("Lookup without a fingerprint succeeded")
		}
	})
}

// TestLookupPagesForward: 250 messages after the point, ours last; the
// Lookup reads three pages, each after the newest id of the one before,
// and reads the bot's id once.
func TestLookupPagesForward(t *testing.T) {
	f := newFake(t)
	start := f.add(botID, "before the send")
	for i := range 249 {
		f.add(otherUserID, "chatter "+strconv.Itoa(i))
	}
	ours := f.add(botID, "the post")
	c := newClient(t, ModeBot, f.srv.URL)

	got, found, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: platform.Fingerprint("the post", nil), After: start.ID})
	if err != nil || !found || got.RemoteID != ours.ID {
		t.Fatalf("Lookup = %+v, %v, %v; want %s", got, found, err, ours.ID)
	}
	var afters []string
	for _, r := range f.requests(http.MethodGet, "/api/v10/channels/"+channelID+"/messages") {
		q, _ := url.ParseQuery(r.Query)
		afters = append(afters, q.Get("after"))
	}
	msgs := f.stored()
	want := []string{start.ID, msgs[100].ID, msgs[200].ID}
	if diff := cmp.Diff(want, afters); diff != "" {
		t.Errorf("after= of each page (-want +got):\n%s", diff)
	}
	if n := len(f.requests(http.MethodGet, "/api/v10/users/@me")); n != 1 {
		t.Errorf("read the bot's user %d times, want 1", n)
	}
	if _, _, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: "x", After: ours.ID}); err != nil {
		t.Fatalf("second Lookup: %v", err)
	}
	if n := len(f.requests(http.MethodGet, "/api/v10/users/@me")); n != 1 {
		t.Errorf("read the bot's user %d times over two lookups, want 1 (cached)", n)
	}
}

// TestLookupSafetyCap: more than lookupPages full pages after the point
// without ours is Inconclusive, never "not found".
func TestLookupSafetyCap(t *testing.T) {
	f := newFake(t)
	for i := range lookupPages*pageLimit + 1 {
		f.add(otherUserID, "flood "+strconv.Itoa(i))
	}
	c := newClient(t, ModeBot, f.srv.URL, func(c *Config) { c.BotUserID = botID })
	_, found, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: platform.Fingerprint("the post", nil), After: platform.StartOfHistory})
	if diff := cmp.Diff(outcome{Class: "inconclusive"}, outcomeOf(t, err)); diff != "" || found {
		t.Errorf("Lookup found=%v (-want +got):\n%s", found, diff)
	}
	if n := len(f.requests(http.MethodGet, "/api/v10/channels/")); n != lookupPages {
		t.Errorf("read %d pages, want %d", n, lookupPages)
	}
}

// TestLookupNeedsProofOfReadability: Discord answers a bot without
// READ_MESSAGE_HISTORY with no messages, not an error
// (https://discord.com/developers/docs/resources/message#get-channel-messages).
// An empty window is "not found" only when the channel's newest message
// can be read.
func TestLookupNeedsProofOfReadability(t *testing.T) {
	fp := platform.Fingerprint("the post", nil)
	t.Run("older messages readable: not found", func(t *testing.T) {
		f := newFake(t)
		last := f.add(botID, "earlier post")
		c := newClient(t, ModeBot, f.srv.URL)
		_, found, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: fp, After: last.ID})
		if err != nil || found {
			t.Fatalf("Lookup = %v, %v; want not found", found, err)
		}
		lists := f.requests(http.MethodGet, "/api/v10/channels/"+channelID+"/messages")
		if len(lists) != 2 || lists[1].Query != "limit=1" {
			t.Errorf("list requests = %+v, want the window then the newest message", lists)
		}
	})
	t.Run("history hidden: inconclusive", func(t *testing.T) {
		f := newFake(t)
		last := f.add(botID, "earlier post")
		f.hideHistory = true
		c := newClient(t, ModeBot, f.srv.URL)
		_, found, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: fp, After: last.ID})
		if diff := cmp.Diff(outcome{Class: "inconclusive"}, outcomeOf(t, err)); diff != "" || found {
			t.Errorf("Lookup found=%v (-want +got):\n%s", found, diff)
		}
	})
	t.Run("empty channel: inconclusive", func(t *testing.T) {
		f := newFake(t)
		c := newClient(t, ModeBot, f.srv.URL)
		_, found, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: fp, NotBefore: fixedNow})
		if diff := cmp.Diff(outcome{Class: "inconclusive"}, outcomeOf(t, err)); diff != "" || found {
			t.Errorf("Lookup found=%v (-want +got):\n%s", found, diff)
		}
	})
}

// TestLookupMatching: which messages count as ours. A message is ours
// when the bot wrote it and, where Discord returned its nonce, the nonce
// is ours; otherwise when its fingerprint is ours.
func TestLookupMatching(t *testing.T) {
	const handle = "7m2kq4ze9xw3b5n8c1d6f0gh2a"
	fp := platform.Fingerprint("the post", nil)
	tests := []struct {
		name        string
		nonceOnRead bool
		msgs        []fakeMsg // author, webhook, content, nonce
		wantIndex   int       // -1: not found
	}{
		{"same words from another user", false, []fakeMsg{{AuthorID: otherUserID, Content: "the post"}}, -1},
		{"same words from a webhook", false, []fakeMsg{{AuthorID: webhookID, WebhookID: webhookID, Content: "the post"}}, -1},
		{"bot, same words, no nonce returned", false, []fakeMsg{{AuthorID: botID, Content: "the post", Nonce: "other"}}, 0},
		{"bot, same words after normalisation", false, []fakeMsg{{AuthorID: botID, Content: "the post  \r\n", Nonce: "x"}}, 0},
		{"bot, other words", false, []fakeMsg{{AuthorID: botID, Content: "another post"}}, -1},
		{"nonce returned: another entry's message with the same words is not ours", true,
			[]fakeMsg{{AuthorID: botID, Content: "the post", Nonce: Nonce("another handle")}}, -1},
		{"nonce returned: ours even if the text was changed", true,
			[]fakeMsg{{AuthorID: botID, Content: "the post (edited)", Nonce: Nonce(handle)}}, 0},
		{"nonce returned: the first of two bot messages is another entry's", true,
			[]fakeMsg{{AuthorID: botID, Content: "the post", Nonce: Nonce("another handle")}, {AuthorID: botID, Content: "the post", Nonce: Nonce(handle)}}, 1},
		{"nonce returned but absent on the message: fingerprint", true, []fakeMsg{{AuthorID: botID, Content: "the post"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			f.nonceOnRead = tt.nonceOnRead
			start := f.add(otherUserID, "before")
			var ids []string
			f.mu.Lock()
			for _, m := range tt.msgs {
				ids = append(ids, f.store(m.AuthorID, m.WebhookID, m.Content, m.Nonce).ID)
			}
			f.mu.Unlock()
			c := newClient(t, ModeBot, f.srv.URL)
			got, found, err := c.Lookup(context.Background(), platform.LookupQuery{Handle: handle, Fingerprint: fp, After: start.ID})
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			switch {
			case tt.wantIndex < 0 && found:
				t.Errorf("Lookup found %+v, want not found", got)
			case tt.wantIndex >= 0 && (!found || got.RemoteID != ids[tt.wantIndex]):
				t.Errorf("Lookup = %+v, %v; want %s", got, found, ids[tt.wantIndex])
			}
		})
	}
}

// TestLookupServerIgnoringAfter: an answer to after= holding an older
// message means the server does not page as documented; the Lookup cannot
// rely on it and is Inconclusive.
func TestLookupServerIgnoringAfter(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, []map[string]any{{"id": "1000", "channel_id": channelID, "author": map[string]any{"id": otherUserID}, "content": "old"}})
	}))
	c := newClient(t, ModeBot, srv.URL, func(c *Config) { c.BotUserID = botID })
	_, found, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: "fp", After: "2000"})
	if diff := cmp.Diff(outcome{Class: "inconclusive"}, outcomeOf(t, err)); diff != "" || found {
		t.Errorf("Lookup found=%v (-want +got):\n%s", found, diff)
	}
}

// TestRecent: the bot's own messages only, newest first, paging back with
// before= (https://discord.com/developers/docs/resources/message#get-channel-messages).
func TestRecent(t *testing.T) {
	f := newFake(t)
	var mine []fakeMsg
	for i := range 150 {
		if i%50 == 0 {
			mine = append(mine, f.add(botID, "post "+strconv.Itoa(i)))
			continue
		}
		f.add(otherUserID, "chat "+strconv.Itoa(i))
	}
	c := newClient(t, ModeBot, f.srv.URL)
	got, err := c.Recent(context.Background(), 3)
	if err != nil {
		t.Fatalf("Recent: %v", err)
	}
	var want []platform.RemotePost
	for i := len(mine) - 1; i >= 0; i-- {
		m := mine[i]
		want = append(want, platform.RemotePost{RemoteID: m.ID, Text: m.Content, CreatedAt: m.At,
			URL: f.srv.URL + "/channels/" + guildID + "/" + channelID + "/" + m.ID})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Recent (-want +got):\n%s", diff)
	}
	lists := f.requests(http.MethodGet, "/api/v10/channels/"+channelID+"/messages")
	if len(lists) != 2 {
		t.Fatalf("list requests = %+v, want 2 pages", lists)
	}
	q, _ := url.ParseQuery(lists[1].Query)
	if q.Get("before") != f.stored()[50].ID {
		t.Errorf("second page before=%s, want the oldest id of the first page %s", q.Get("before"), f.stored()[50].ID)
	}
	if n := len(f.requests(http.MethodGet, "/api/v10/channels/"+channelID)) - len(lists); n != 1 {
		t.Errorf("read the channel (for its guild) %d times, want 1", n)
	}

	t.Run("configured bot and guild ids: no extra reads", func(t *testing.T) {
		f := newFake(t)
		f.add(botID, "post")
		c := newClient(t, ModeBot, f.srv.URL, func(c *Config) { c.BotUserID, c.GuildID = botID, guildID })
		got, err := c.Recent(context.Background(), 5)
		if err != nil || len(got) != 1 {
			t.Fatalf("Recent = %+v, %v", got, err)
		}
		if n := len(f.requests(http.MethodGet, "/")); n != 1 {
			t.Errorf("sent %d requests, want 1 (the page)", n)
		}
	})
	t.Run("no bot messages", func(t *testing.T) {
		f := newFake(t)
		f.add(otherUserID, "chat")
		got, err := newClient(t, ModeBot, f.srv.URL).Recent(context.Background(), 5)
		if err != nil || len(got) != 0 || got == nil {
			t.Errorf("Recent = %#v, %v; want an empty, non-nil list", got, err)
		}
	})
}

// TestExists reads a message by id: 200 is true, 404 with code 10008
// (Unknown Message) false; another 404 cannot tell and is Rejected; a
// failing read is NotPerformed.
func TestExists(t *testing.T) {
	const id = "1600000000000000006"
	tests := []struct {
		name    string
		mode    Mode
		status  int
		body    string
		want    bool
		outcome outcome
	}{
		{"bot 200", ModeBot, 200, `{"id":"` + id + `","channel_id":"` + channelID + `","content":"x"}`, true, outcome{Class: "ok"}},
		{"webhook 200", ModeWebhook, 200, `{"id":"` + id + `","channel_id":"` + channelID + `","content":"x"}`, true, outcome{Class: "ok"}},
		{"unknown message", ModeBot, 404, `{"message":"Unknown Message","code":10008}`, false, outcome{Class: "ok"}},
		{"webhook unknown message", ModeWebhook, 404, `{"message":"Unknown Message","code":10008}`, false, outcome{Class: "ok"}},
		{"unknown channel", ModeBot, 404, `{"message":"Unknown Channel","code":10003}`, false, outcome{Class: "rejected", Status: 404, Reason: "unknown_channel"}},
		{"unknown webhook", ModeWebhook, 404, `{"message":"Unknown Webhook","code":10015}`, false, outcome{Class: "rejected", Status: 404, Reason: "unknown_webhook"}},
		{"404 from a proxy", ModeBot, 404, `<html>not found</html>`, false, outcome{Class: "rejected", Status: 404, Reason: "http_404"}},
		{"200 with another message", ModeBot, 200, `{"id":"1"}`, false, outcome{Class: "not_performed", Status: 200}},
		{"missing access", ModeBot, 403, `{"message":"Missing Access","code":50001}`, false, outcome{Class: "rejected", Status: 403, Reason: "missing_access"}},
		{"5xx after retries", ModeBot, 503, ``, false, outcome{Class: "not_performed", Status: 503}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				if r.Method != http.MethodGet {
					t.Errorf("method %s, want GET", r.Method)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			got, err := newClient(t, tt.mode, srv.URL).Exists(context.Background(), id)
			if diff := cmp.Diff(tt.outcome, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if got != tt.want {
				t.Errorf("Exists = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReadFailures: a list refused by Discord is Rejected with its
// reason; one that keeps failing is NotPerformed; neither is "not found".
func TestReadFailures(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   outcome
	}{
		{"missing access", 403, `{"message":"Missing Access","code":50001}`, outcome{Class: "rejected", Status: 403, Reason: "missing_access"}},
		{"unknown channel", 404, `{"message":"Unknown Channel","code":10003}`, outcome{Class: "rejected", Status: 404, Reason: "unknown_channel"}},
		{"bad gateway", 502, `{"message":"502: Bad Gateway","code":0}`, outcome{Class: "not_performed", Status: 502}},
		{"rate limited too long", 429, `{"message":"You are being rate limited.","retry_after":30,"global":false}`, outcome{Class: "not_performed", Status: 429, RetryAfter: 30 * time.Second}},
		{"not json", 200, `<html>`, outcome{Class: "not_performed", Status: 200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			c := newClient(t, ModeBot, srv.URL, func(c *Config) { c.BotUserID = botID })
			_, found, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: "fp", After: "2000"})
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" || found {
				t.Errorf("Lookup found=%v (-want +got):\n%s", found, diff)
			}
			_, err = c.Recent(context.Background(), 5)
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("Recent (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("current user refused", func(t *testing.T) {
		srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			apiErr(w, http.StatusUnauthorized, 0, "401: Unauthorized")
		}))
		_, _, err := newClient(t, ModeBot, srv.URL).Lookup(context.Background(), platform.LookupQuery{Fingerprint: "fp"})
		if diff := cmp.Diff(outcome{Class: "unauthorized"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})
}
