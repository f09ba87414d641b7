package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

// noHistory is the reason every read of the chat gives.
const noHistory = "a Telegram bot cannot read a chat's history or a message by id (the Bot API has no method for it), so "

// Lookup cannot search the chat: the Bot API gives a bot no way to read
// messages back. It makes no call and returns *platform.Inconclusive, never
// found=false with a nil error: "not found" would let the ledger send the
// message again although it may be in the chat.
func (c *Client) Lookup(context.Context, platform.LookupQuery) (platform.RemotePost, bool, error) {
	return platform.RemotePost{}, false, &platform.Inconclusive{Message: noHistory +
		"whether the message was sent cannot be checked; look in the chat " + c.chatID}
}

// Recent cannot list the chat's messages (see Lookup); it makes no call
// and returns *platform.Inconclusive. Callers check
// Capabilities.ReadableHistory first.
func (c *Client) Recent(context.Context, int) ([]platform.RemotePost, error) {
	return nil, &platform.Inconclusive{Message: noHistory + "the chat's recent messages cannot be listed"}
}

// Exists cannot read a message by id (see Lookup); it makes no call and
// returns *platform.Inconclusive, neither true nor false. Delete itself
// tells "already gone" apart (Telegram's "message to delete not found").
func (c *Client) Exists(_ context.Context, remoteID string) (bool, error) {
	return false, &platform.Inconclusive{Message: fmt.Sprintf("%swhether message %s exists cannot be checked", noHistory, remoteID)}
}

// Bot is the identity of a bot token, from getMe
// (https://core.telegram.org/bots/api#getme, a User).
type Bot struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	Username  string `json:"username"`
}

// GetMe reads whose token it is, to verify a token when an account is
// added: getMe, a read (retried on transient failures). base empty means
// DefaultBaseURL; hc nil means a client without a timeout (deadlines come
// from ctx). A refused token is *platform.Unauthorized.
func GetMe(ctx context.Context, hc *http.Client, base, token string) (Bot, error) {
	b, err := newBot(hc, base, token)
	if err != nil {
		return Bot{}, err
	}
	me, err := b.getMe(ctx)
	return me, scrubToken(err, token)
}

// GetMe reads the client's bot identity (see the GetMe function).
func (c *Client) GetMe(ctx context.Context) (Bot, error) {
	me, err := c.bot.getMe(ctx)
	return me, scrubToken(err, c.bot.token)
}

func (b *bot) getMe(ctx context.Context) (Bot, error) {
	const op = "get me"
	resp, err := b.http.Read(ctx, op, httpcall.Request{Method: http.MethodGet, URL: b.url("getMe")})
	if err != nil {
		return Bot{}, err
	}
	if !resp.OK() {
		return Bot{}, b.refusal(op, resp, false)
	}
	a, ok := decodeAnswer(resp.Body)
	if !ok || !a.OK {
		return Bot{}, &platform.NotPerformed{Status: resp.Status, Message: op + ": the answer is not a Bot API success"}
	}
	var me Bot
	if err := json.Unmarshal(a.Result, &me); err != nil {
		return Bot{}, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: decode user: %v", op, err)}
	}
	if me.ID == 0 {
		return Bot{}, &platform.NotPerformed{Status: resp.Status, Message: op + ": the answer has no user id"}
	}
	return me, nil
}

// Chat is the part of a chat getChat describes that naming an account
// needs (https://core.telegram.org/bots/api#getchat, a ChatFullInfo:
// https://core.telegram.org/bots/api#chatfullinfo). ID is the chat's
// numeric id, which stays the same when a channel is renamed; Type is
// "private", "group", "supergroup" or "channel"; Title is a group's or
// channel's; Username is a public chat's, without "@".
type Chat struct {
	ID       int64  `json:"id"`
	Type     string `json:"type"`
	Title    string `json:"title"`
	Username string `json:"username"`
}

// GetChat reads the chat the bot is to post to, to check it when an
// account is added: getChat, a read (retried on transient failures).
// chatID is a chat id or a public chat's "@username", as for posting.
// base empty means DefaultBaseURL; hc nil means a client without a
// timeout (deadlines come from ctx).
//
// A chat the bot cannot see is Telegram's "Bad Request: chat not found"
// (a wrong id or username, or a private chat the bot is not in), Rejected
// with ReasonChatNotFound; a group that became a supergroup is Rejected
// with ReasonChatMigrated naming its new id; a refused token is
// *platform.Unauthorized. Finding the chat does not prove that the bot may
// post in it. No error carries the token.
func GetChat(ctx context.Context, hc *http.Client, base, token, chatID string) (Chat, error) {
	b, err := newBot(hc, base, token)
	if err != nil {
		return Chat{}, scrubToken(err, token)
	}
	chat, err := b.getChat(ctx, chatID)
	return chat, scrubToken(err, token)
}

func (b *bot) getChat(ctx context.Context, chatID string) (Chat, error) {
	const op = "get chat"
	id, err := chatIDJSON(chatID)
	if err != nil {
		return Chat{}, fmt.Errorf("telegram: chat id %q %v", chatID, err)
	}
	body, err := json.Marshal(map[string]json.RawMessage{"chat_id": id})
	if err != nil {
		return Chat{}, fmt.Errorf("telegram: %s: encode body: %w", op, err)
	}
	// A POST that only reads: httpcall retries it like a GET.
	resp, err := b.http.Read(ctx, op, httpcall.Request{
		Method: http.MethodPost,
		URL:    b.url("getChat"),
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   body,
	})
	if err != nil {
		return Chat{}, err
	}
	if !resp.OK() {
		return Chat{}, b.refusal(op, resp, false)
	}
	a, ok := decodeAnswer(resp.Body)
	if !ok || !a.OK {
		return Chat{}, &platform.NotPerformed{Status: resp.Status, Message: op + ": the answer is not a Bot API success"}
	}
	var chat Chat
	if err := json.Unmarshal(a.Result, &chat); err != nil {
		return Chat{}, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: decode chat: %v", op, err)}
	}
	if chat.ID == 0 {
		return Chat{}, &platform.NotPerformed{Status: resp.Status, Message: op + ": the answer has no chat id"}
	}
	if n, err := strconv.ParseInt(chatID, 10, 64); err == nil && n != chat.ID {
		return Chat{}, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: asked for chat %d, the answer is chat %d", op, n, chat.ID)}
	}
	return chat, nil
}
