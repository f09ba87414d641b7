package telegram

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
)

// TestReadsCannotSeeTheChat: Lookup, Recent and Exists answer
// Inconclusive without a call. A bot cannot read a chat's history: the Bot
// API has no method listing a chat's messages or reading one by id
// (https://core.telegram.org/bots/api#available-methods; bots receive only
// updates, https://core.telegram.org/bots/api#getting-updates). Lookup must
// never say "not found": that would let the ledger re-send.
func TestReadsCannotSeeTheChat(t *testing.T) {
	fake := newFakeBot(t, "oncepost_news")
	srv := newServer(t, fake)
	c := newClient(t, srv.URL)
	if _, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "there"}); err != nil {
		logErr(t, err)
		t.Fatalf("Publish: %v", err)
	}
	before := len(fake.seen())

	for name, q := range map[string]platform.LookupQuery{
		"by fingerprint after a point": {Handle: "h", Fingerprint: platform.Fingerprint("there", nil), After: messageID(0)},
		"from the start of history":    {Fingerprint: platform.Fingerprint("there", nil), After: platform.StartOfHistory},
		"by time":                      {Fingerprint: platform.Fingerprint("there", nil), NotBefore: fixedNow.Add(-time.Minute)},
		"a post that was never sent":   {Fingerprint: platform.Fingerprint("never sent", nil), After: messageID(1)},
	} {
		t.Run("lookup "+name, func(t *testing.T) {
			p, found, err := c.Lookup(context.Background(), q)
			if found || p.RemoteID != "" {
				t.Errorf("Lookup found %+v; a bot cannot read the chat", p)
			}
			if diff := cmp.Diff(outcome{Class: "inconclusive"}, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if !strings.Contains(err.Error(), "cannot read a chat's history") || !strings.Contains(err.Error(), testChat) {
				t.Errorf("message %q does not say the history is unreadable and name the chat", err)
			}
		})
	}
	t.Run("recent", func(t *testing.T) {
		posts, err := c.Recent(context.Background(), 20)
		if posts != nil {
			t.Errorf("Recent returned %v, want nil", posts)
		}
		if diff := cmp.Diff(outcome{Class: "inconclusive"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})
	t.Run("exists", func(t *testing.T) {
		for _, id := range []string{messageID(1), "999"} {
			exists, err := c.Exists(context.Background(), id)
			if exists {
				t.Errorf("Exists(%s) = true, want an error", id)
			}
			if diff := cmp.Diff(outcome{Class: "inconclusive"}, outcomeOf(t, err)); diff != "" {
				t.Errorf("Exists(%s) outcome (-want +got):\n%s", id, diff)
			}
		}
	})
	if got := len(fake.seen()); got != before {
		t.Errorf("reads sent %d requests, want 0", got-before)
	}
}

// TestGetMe: GET /bot<token>/getMe → a User
// (https://core.telegram.org/bots/api#getme, #user).
func TestGetMe(t *testing.T) {
	fake := newFakeBot(t, "")
	srv := newServer(t, fake)
	me, err := GetMe(context.Background(), nil, srv.URL, testToken)
	logErr(t, err)
	if err != nil {
		t.Fatalf("GetMe: %v", err)
	}
	if diff := cmp.Diff(Bot{ID: 123456, IsBot: true, FirstName: "Oncepost", Username: "oncepost_bot"}, me); diff != "" {
		t.Errorf("bot (-want +got):\n%s", diff)
	}
	want := []seenRequest{{Method: "GET", Path: "/bot" + testToken + "/getMe"}}
	if diff := cmp.Diff(want, fake.seen()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}

	me2, err := newClient(t, srv.URL).GetMe(context.Background())
	logErr(t, err)
	if err != nil || me2 != me {
		t.Errorf("Client.GetMe = %+v, %v; want %+v", me2, err, me)
	}
}

// TestGetMeFailures: a wrong token is 401 "Unauthorized" (tdlib/telegram-bot-api
// ClientManager.cpp answers "Unauthorized: invalid token specified" for a
// malformed one), a read that keeps failing is NotPerformed after its
// retries, and a long flood wait is returned at once with its RetryAfter.
func TestGetMeFailures(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     any
		want     outcome
		attempts int32
	}{
		{"revoked token", 401, apiError(401, "Unauthorized", nil), outcome{Class: "unauthorized"}, 1},
		{"server error, retried", 500, apiError(500, "Internal Server Error", nil), outcome{Class: "not_performed", Status: 500}, 4},
		{"long flood wait, not waited for", 429, apiError(429, "Too Many Requests: retry after 30", map[string]any{"retry_after": 30}),
			outcome{Class: "not_performed", Status: 429, RetryAfter: 30 * time.Second}, 1},
		{"not a bot api answer", 200, "<html>captive portal</html>", outcome{Class: "not_performed", Status: 200}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				if s, ok := tt.body.(string); ok {
					w.WriteHeader(tt.status)
					io.WriteString(w, s)
					return
				}
				writeJSON(w, tt.status, tt.body)
			}))
			_, err := newClient(t, srv.URL).GetMe(context.Background())
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if n.Load() != tt.attempts {
				t.Errorf("server received %d requests, want %d", n.Load(), tt.attempts)
			}
		})
	}
	t.Run("bad token is refused before any call", func(t *testing.T) {
		var n atomic.Int32
		srv := newServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
		_, err := GetMe(context.Background(), nil, srv.URL, testSecret)
		logErr(t, err)
		if err == nil || !strings.Contains(err.Error(), "Token") {
			t.Errorf("err = %v, want one naming the Token", err)
		}
		if n.Load() != 0 {
			t.Errorf("server received %d requests, want 0", n.Load())
		}
	})
}

// TestNoTokenInErrors drives the paths where the token could slip into an
// error: transport errors (httpcall strips the URL), a proxy whose error
// page echoes the request path into the description, and a Bot API
// "description" that quotes the secret. Every error of every other test
// is also searched, by TestMain.
func TestNoTokenInErrors(t *testing.T) {
	echo := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		status := http.StatusBadGateway
		if strings.HasSuffix(r.URL.Path, "/deleteMessage") {
			status = http.StatusBadRequest
		}
		writeJSON(w, status, apiError(status, "proxy error for "+r.URL.String()+" ("+testSecret+")", nil))
	}))
	echo401 := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		writeJSON(w, 401, apiError(401, "Unauthorized: token "+testToken+" was revoked", nil))
	}))
	echo429 := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		writeJSON(w, 429, apiError(429, "Too Many Requests at "+r.URL.Path, map[string]any{"retry_after": 60}))
	}))
	refused := refusedURL(t)
	timeout := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 100*time.Millisecond)
	}
	release := make(chan struct{})
	silent := newServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release) }) // runs before the server's Close

	var errs []error
	for _, base := range []string{echo.URL, echo401.URL, echo429.URL, refused, silent.URL} {
		c := newClient(t, base)
		ctx, cancel := timeout()
		_, err := c.Publish(ctx, platform.PublishRequest{Handle: "h", Text: "x"})
		errs = append(errs, err)
		errs = append(errs, c.Delete(ctx, "42"))
		_, err = c.GetMe(ctx)
		errs = append(errs, err)
		_, err = GetMe(ctx, nil, base, testToken)
		errs = append(errs, err)
		cancel()
	}
	c := newClient(t, echo.URL)
	_, _, err := c.Lookup(context.Background(), platform.LookupQuery{})
	errs = append(errs, err)
	_, err = c.Refresh(context.Background(), platform.Credential{AccessToken: testToken})
	errs = append(errs, err)

	for i, err := range errs {
		if err == nil {
			t.Errorf("call %d: no error, want one", i)
			continue
		}
		logErr(t, err)
		outcomeOf(t, err) // still exactly one failure class after scrubbing
	}
	// The echoing proxy's 502 is still Ambiguous, its text kept but cleaned.
	_, err = newClient(t, echo.URL).Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: "x"})
	if got := outcomeOf(t, err); got.Class != "ambiguous" || got.Status != 502 {
		t.Errorf("outcome %+v, want ambiguous 502", got)
	}
	if !strings.Contains(err.Error(), "proxy error for /bot[redacted]/sendMessage") {
		t.Errorf("error %q does not keep the cleaned description", err)
	}
}
