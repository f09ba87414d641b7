package discord

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// connectHTTPClient is an HTTP client with its own transport, so that tests
// share no keep-alive connections.
func connectHTTPClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TestCurrentUser: GET /api/v10/users/@me with "Authorization: Bot
// <token>" and Discord's User-Agent answers the bot's User object
// (https://discord.com/developers/docs/resources/user#get-current-user,
// as fakeDiscord serves it); CurrentUser returns its id, username and
// bot flag after that one request.
func TestCurrentUser(t *testing.T) {
	f := newFake(t)
	got, err := CurrentUser(context.Background(), connectHTTPClient(t), f.srv.URL, botToken)
	if diff := cmp.Diff(outcome{Class: "ok"}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("outcome (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(User{ID: botID, Username: "oncepost", Bot: true}, got); diff != "" {
		t.Errorf("user (-want +got):\n%s", diff)
	}
	want := []fakeReq{{Method: "GET", Path: "/api/v10/users/@me", Auth: "Bot " + botToken, UserAgent: DefaultUserAgent}}
	if diff := cmp.Diff(want, f.requests("GET", "/api/")); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// TestWebhook: GET /api/v10/webhooks/{id}/{token}, without an
// Authorization header (the token in the path is the credential), answers
// the Webhook object
// (https://discord.com/developers/docs/resources/webhook#get-webhook-with-token);
// Webhook returns its id, name, channel and guild, never its token.
func TestWebhook(t *testing.T) {
	f := newFake(t)
	got, err := Webhook(context.Background(), connectHTTPClient(t), f.srv.URL, webhookID, webhookToken)
	if diff := cmp.Diff(outcome{Class: "ok"}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("outcome (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(WebhookInfo{ID: webhookID, Name: "oncepost", ChannelID: channelID, GuildID: guildID}, got); diff != "" {
		t.Errorf("webhook (-want +got):\n%s", diff)
	}
	want := []fakeReq{{Method: "GET", Path: "/api/v10/webhooks/" + webhookID + "/" + webhookToken, UserAgent: DefaultUserAgent}}
	if diff := cmp.Diff(want, f.requests("GET", "/api/")); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// TestCurrentUserAndWebhookAgainstTheFake: the refusals fakeDiscord gives
// as Discord does (JSON errors,
// https://discord.com/developers/docs/topics/opcodes-and-status-codes#json):
// a wrong bot token is 401 (Unauthorized), a webhook id Discord does not
// know is 404 Unknown Webhook (Rejected unknown_webhook), a wrong webhook
// token 401 Invalid Webhook Token (Unauthorized).
func TestCurrentUserAndWebhookAgainstTheFake(t *testing.T) {
	f := newFake(t)
	ctx := context.Background()
	_, err := CurrentUser(ctx, connectHTTPClient(t), f.srv.URL, "wrong-bot-token")
	if diff := cmp.Diff(outcome{Class: "unauthorized"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("wrong bot token: outcome (-want +got):\n%s", diff)
	}
	_, err = Webhook(ctx, connectHTTPClient(t), f.srv.URL, "1499999999999999999", webhookToken)
	if diff := cmp.Diff(outcome{Class: "rejected", Status: 404, Reason: ReasonUnknownWebhook}, outcomeOf(t, err)); diff != "" {
		t.Errorf("unknown webhook: outcome (-want +got):\n%s", diff)
	}
	_, err = Webhook(ctx, connectHTTPClient(t), f.srv.URL, webhookID, "wrong-webhook-token")
	if diff := cmp.Diff(outcome{Class: "unauthorized"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("wrong webhook token: outcome (-want +got):\n%s", diff)
	}
}

// TestCurrentUserAndWebhookFailures: each read, against a server giving
// one answer: a 401 is Unauthorized, a 404 not found (Discord's own for
// an unknown route, "404: Not Found" with code 0, or Unknown Webhook) is
// Rejected, each sent once; a 502 is retried as a read, then
// NotPerformed; a 200 that is not the object asked for (no user id,
// another webhook) is NotPerformed, never an answer.
func TestCurrentUserAndWebhookFailures(t *testing.T) {
	errBody := func(code int, msg string) map[string]any { return map[string]any{"code": code, "message": msg} }
	calls := map[string]func(t *testing.T, base string) error{
		"CurrentUser": func(t *testing.T, base string) error {
			u, err := CurrentUser(context.Background(), connectHTTPClient(t), base, botToken)
			if u != (User{}) {
				t.Errorf("CurrentUser returned %+v with the error", u)
			}
			return err
		},
		"Webhook": func(t *testing.T, base string) error {
			w, err := Webhook(context.Background(), connectHTTPClient(t), base, webhookID, webhookToken)
			if w != (WebhookInfo{}) {
				t.Errorf("Webhook returned %+v with the error", w)
			}
			return err
		},
	}
	tests := []struct {
		call, name string
		status     int
		body       any // a string is written as it is
		want       outcome
		attempts   int32
	}{
		{"CurrentUser", "unauthorized", 401, errBody(0, "401: Unauthorized"), outcome{Class: "unauthorized"}, 1},
		{"CurrentUser", "not found", 404, errBody(0, "404: Not Found"), outcome{Class: "rejected", Status: 404, Reason: "http_404"}, 1},
		{"CurrentUser", "server error, retried", 502, "<html>502 Bad Gateway</html>", outcome{Class: "not_performed", Status: 502}, 4},
		{"CurrentUser", "no user id", 200, map[string]any{"username": "oncepost"}, outcome{Class: "not_performed", Status: 200}, 1},
		{"Webhook", "invalid token", 401, errBody(50027, "Invalid Webhook Token"), outcome{Class: "unauthorized"}, 1},
		{"Webhook", "unknown webhook", 404, errBody(codeUnknownWebhook, "Unknown Webhook"), outcome{Class: "rejected", Status: 404, Reason: ReasonUnknownWebhook}, 1},
		{"Webhook", "server error, retried", 503, errBody(0, "503: Service Unavailable"), outcome{Class: "not_performed", Status: 503}, 4},
		{"Webhook", "another webhook", 200, map[string]any{"id": "1499999999999999999", "name": "other", "channel_id": channelID}, outcome{Class: "not_performed", Status: 200}, 1},
		{"Webhook", "not json", 200, "<html>captive portal</html>", outcome{Class: "not_performed", Status: 200}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.call+": "+tt.name, func(t *testing.T) {
			t.Parallel()
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
			if diff := cmp.Diff(tt.want, outcomeOf(t, calls[tt.call](t, srv.URL))); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if n.Load() != tt.attempts {
				t.Errorf("server received %d requests, want %d", n.Load(), tt.attempts)
			}
		})
	}
}

// TestCurrentUserAndWebhookRefuseBadArgumentsBeforeAnyCall: a missing or
// malformed token, a webhook id that is no Discord id and a base URL with
// /api are refused without a request, and without quoting the token.
func TestCurrentUserAndWebhookRefuseBadArgumentsBeforeAnyCall(t *testing.T) {
	var n atomic.Int32
	base := newServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) })).URL
	ctx := context.Background()
	var errs []error
	for _, tok := range []string{"", botToken + "/x", botToken + " "} {
		_, err := CurrentUser(ctx, connectHTTPClient(t), base, tok)
		errs = append(errs, err)
		_, err = Webhook(ctx, connectHTTPClient(t), base, webhookID, tok)
		errs = append(errs, err)
	}
	_, err := Webhook(ctx, connectHTTPClient(t), base, "news", webhookToken)
	errs = append(errs, err)
	_, err = CurrentUser(ctx, connectHTTPClient(t), base+"/api/v10", botToken)
	errs = append(errs, err)
	_, err = Webhook(ctx, connectHTTPClient(t), base+"/api/webhooks/"+webhookID+"/"+webhookToken, webhookID, webhookToken)
	errs = append(errs, err)
	for i, err := range errs {
		noteError(err)
		if err == nil {
			t.Errorf("call %d: no error", i)
		}
	}
	if n.Load() != 0 {
		t.Errorf("server received %d requests, want 0", n.Load())
	}
}

// TestCurrentUserAndWebhookKeepTheTokenOutOfErrors: a proxy that echoes
// the request path (the webhook's token) and the Authorization header
// (the bot's) into Discord's error message, on a 400, a 401, a 403 and a
// long rate-limit wait (returned at once, not waited for), and a refused
// connection: no error carries a token, as is or path-escaped, and each
// keeps its failure class. TestMain searches every error again.
func TestCurrentUserAndWebhookKeepTheTokenOutOfErrors(t *testing.T) {
	echo := func(status int) string {
		return newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body := map[string]any{"code": 0, "message": "proxy saw " + r.URL.EscapedPath() + " with " + r.Header.Get("Authorization")}
			if status == http.StatusTooManyRequests {
				body["retry_after"], body["global"] = 60.0, false
			}
			writeJSON(w, status, body)
		})).URL
	}
	refused := refusedURL(t)
	want := map[string]string{"400": "rejected", "401": "unauthorized", "403": "rejected", "429": "not_performed", "refused": "not_performed"}
	bases := map[string]string{"400": echo(400), "401": echo(401), "403": echo(403), "429": echo(429), "refused": refused}
	for name, base := range bases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, userErr := CurrentUser(context.Background(), connectHTTPClient(t), base, botToken)
			_, hookErr := Webhook(context.Background(), connectHTTPClient(t), base, webhookID, webhookToken)
			for _, err := range []error{userErr, hookErr} {
				if got := outcomeOf(t, err); got.Class != want[name] {
					t.Errorf("outcome %+v, want %s", got, want[name])
				}
				for _, tok := range []string{botToken, webhookToken, url.PathEscape(webhookToken)} {
					if err != nil && strings.Contains(err.Error(), tok) {
						t.Errorf("error %q carries a token", err)
					}
				}
			}
			if name == "400" && (hookErr == nil || !strings.Contains(hookErr.Error(), "proxy saw /api/v10/webhooks/"+webhookID+"/[redacted]")) {
				t.Errorf("webhook error %v does not keep the cleaned message", hookErr)
			}
		})
	}
}
