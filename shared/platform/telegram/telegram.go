package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

// MaxTextLength is sendMessage's text limit: "Text of the message to be
// sent, 1-4096 characters after entities parsing"
// (https://core.telegram.org/bots/api#sendmessage), counted by MeasureText.
const MaxTextLength = 4096

// MaxCaptionLength is the caption limit of a photo: "0-1024 characters
// after entities parsing" (https://core.telegram.org/bots/api#sendphoto).
const MaxCaptionLength = 1024

// maxPhotoBytes is the largest photo sendPhoto takes: "The photo must be
// at most 10 MB in size. The photo's width and height must not exceed
// 10000 in total." (https://core.telegram.org/bots/api#sendphoto)
const maxPhotoBytes = 10 << 20

// Config configures a Client for one chat.
type Config struct {
	// BaseURL is the Bot API server's root; empty means DefaultBaseURL
	// (a local Bot API server, or a test server, otherwise).
	BaseURL string
	// Token is the bot token from @BotFather, "<bot id>:<secret>" (the
	// account credential's AccessToken). It is sent in the URL path of
	// every call and never appears in an error.
	Token string
	// ChatID is the chat the bot posts to (the account's remote id): an
	// integer chat id (e.g. -1001234567890 for a channel or supergroup) or
	// a public channel's "@username".
	ChatID string
	// HTTPClient is used for every call. The default has no Timeout:
	// deadlines come from the context.
	HTTPClient *http.Client
}

// String hides the token, so a config printed by mistake leaks nothing.
func (c Config) String() string {
	return fmt.Sprintf("telegram.Config{BaseURL: %q, ChatID: %q, Token: redacted}", c.BaseURL, c.ChatID)
}

// GoString hides the token from %#v as well.
func (c Config) GoString() string { return c.String() }

// Client is one bot posting to one chat. It is safe for concurrent use.
type Client struct {
	bot    *bot
	chatID string
	chat   json.RawMessage // chatID as sent in request bodies
}

var (
	_ platform.Client       = (*Client)(nil)
	_ platform.TextMeasurer = (*Client)(nil)
)

// New validates cfg and returns a Client. It makes no network call.
func New(cfg Config) (*Client, error) {
	b, err := newBot(cfg.HTTPClient, cfg.BaseURL, cfg.Token)
	if err != nil {
		return nil, err
	}
	chatID := strings.TrimSpace(cfg.ChatID)
	if chatID == "" {
		return nil, fmt.Errorf("telegram: ChatID (the account's remote id) is required")
	}
	chat, err := chatIDJSON(chatID)
	if err != nil {
		return nil, fmt.Errorf("telegram: ChatID %q %v", chatID, err)
	}
	return &Client{bot: b, chatID: chatID, chat: chat}, nil
}

// String hides the token.
func (c *Client) String() string { return fmt.Sprintf("telegram.Client{chat: %s}", c.chatID) }

// GoString hides the token from %#v as well.
func (c *Client) GoString() string { return c.String() }

// Capabilities declares that Telegram neither deduplicates a message nor
// lets a bot read one back: an unknown outcome goes to an operator
// (platform.Human).
func (c *Client) Capabilities() platform.Capabilities {
	return platform.Capabilities{
		Platform:          "telegram",
		NativeIdempotency: false,
		LookupByHandle:    false,
		ReadableHistory:   false,
		MaxTextGraphemes:  MaxTextLength,
		MaxTextWithMedia:  MaxCaptionLength,
		// One photo per message, sent with it (sendPhoto): a media group
		// would be several messages, each to delete on its own.
		MaxMedia:      1,
		MaxMediaBytes: maxPhotoBytes,
		InlineMedia:   true,
		Handle:        "none: the Bot API has no idempotency key, so the handle is not sent",
		ReadBack:      "none: a bot cannot read a chat's history or a message by id; unknown outcomes go to an operator",
		// "When sending messages inside a particular chat, avoid sending
		// more than one message per second. […] your bot will not be able
		// to send more than 20 messages per minute to the same group."
		// (https://core.telegram.org/bots/faq#my-bot-is-hitting-limits-how-do-i-avoid-this)
		PostingLimits: []platform.Rate{
			{Count: 1, Per: time.Second},
			{Count: 20, Per: time.Minute},
		},
	}
}

// MeasureText is the text's length in UTF-16 code units, the unit the Bot
// API measures text in (MessageEntity offset and length are "in UTF-16
// code units", https://core.telegram.org/bots/api#messageentity and
// https://core.telegram.org/api/entities#entity-length). TDLib, which the
// Bot API server runs on, checks a bot's text against
// message_text_length_max in Unicode code points (utf8_length in
// tdlib/td td/telegram/MessageContent.cpp); a text's UTF-16 length is never
// below its code point count, so a text this measure accepts is never
// refused as too long, at the price of refusing some texts full of emoji
// that Telegram would take.
func (c *Client) MeasureText(text string) int {
	n := 0
	for _, r := range text {
		n += utf16.RuneLen(r)
	}
	return n
}

// message is the part of the Bot API's Message
// (https://core.telegram.org/bots/api#message) the adapter reads.
type message struct {
	MessageID int64 `json:"message_id"`
	Date      int64 `json:"date"`
	Chat      struct {
		ID       int64  `json:"id"`
		Type     string `json:"type"`
		Username string `json:"username"`
	} `json:"chat"`
	Text string `json:"text"`
}

// link is the message's public address, or "" when the chat has no public
// username (a private chat's messages have no link for outsiders).
func (m message) link() string {
	if m.Chat.Username == "" {
		return ""
	}
	return "https://t.me/" + url.PathEscape(m.Chat.Username) + "/" + strconv.FormatInt(m.MessageID, 10)
}

// Publish sends the text with sendMessage, exactly once, as plain text.
// Text that is empty or longer than MaxTextLength (see MeasureText), and
// any media id, are refused before anything is sent. A 2xx whose Message
// cannot be read means the message probably exists: Ambiguous.
func (c *Client) Publish(ctx context.Context, req platform.PublishRequest) (platform.Receipt, error) {
	r, err := c.publish(ctx, req)
	return r, scrubToken(err, c.bot.token)
}

func (c *Client) publish(ctx context.Context, req platform.PublishRequest) (platform.Receipt, error) {
	const op = "send message"
	if len(req.MediaIDs) > 0 {
		return platform.Receipt{}, &platform.Rejected{Reason: ReasonMediaUnsupported, Message: op + ": Telegram takes a photo with the message (PublishRequest.Media), not uploaded ids"}
	}
	switch {
	case len(req.Media) > 1:
		return platform.Receipt{}, &platform.Rejected{Reason: ReasonMediaUnsupported, Message: fmt.Sprintf("%s: %d photos; the telegram adapter sends one photo per message", op, len(req.Media))}
	case len(req.Media) == 1:
		return c.sendPhoto(ctx, req.Text, req.Media[0])
	}
	if strings.TrimSpace(req.Text) == "" {
		return platform.Receipt{}, &platform.Rejected{Reason: ReasonTextEmpty, Message: op + ": the text is empty"}
	}
	if n := c.MeasureText(req.Text); n > MaxTextLength {
		return platform.Receipt{}, &platform.Rejected{Reason: ReasonTextTooLong, Message: fmt.Sprintf(
			"%s: the text is %d UTF-16 code units, over Telegram's limit of %d", op, n, MaxTextLength)}
	}
	resp, err := c.bot.write(ctx, op, "sendMessage", struct {
		ChatID json.RawMessage `json:"chat_id"`
		Text   string          `json:"text"`
	}{c.chat, req.Text})
	if err != nil {
		return platform.Receipt{}, err
	}
	return c.sent(op, resp)
}

// sendPhoto sends the photo with the text as its caption, exactly once, as
// multipart/form-data (the Bot API's way of uploading a file with the
// call, https://core.telegram.org/bots/api#sending-files).
func (c *Client) sendPhoto(ctx context.Context, caption string, m platform.MediaUpload) (platform.Receipt, error) {
	const op = "send photo"
	if n := c.MeasureText(caption); n > MaxCaptionLength {
		return platform.Receipt{}, &platform.Rejected{Reason: ReasonTextTooLong, Message: fmt.Sprintf(
			"%s: the caption is %d UTF-16 code units, over Telegram's limit of %d for a photo", op, n, MaxCaptionLength)}
	}
	if len(m.Data) == 0 || len(m.Data) > maxPhotoBytes {
		return platform.Receipt{}, &platform.Rejected{Reason: ReasonMediaUnsupported, Message: fmt.Sprintf("%s: the photo is %d bytes; Telegram takes 1 to %d", op, len(m.Data), maxPhotoBytes)}
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	_ = w.WriteField("chat_id", strings.Trim(string(c.chat), `"`))
	if caption != "" {
		_ = w.WriteField("caption", caption)
	}
	name := m.Filename
	if name == "" {
		name = "photo"
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="photo"; filename=%q`, name))
	h.Set("Content-Type", m.ContentType)
	part, err := w.CreatePart(h)
	if err == nil {
		_, err = part.Write(m.Data)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return platform.Receipt{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: encode the form: %v", op, err)}
	}
	resp, err := c.bot.http.Write(ctx, op, httpcall.Request{
		Method: http.MethodPost,
		URL:    c.bot.url("sendPhoto"),
		Header: http.Header{"Content-Type": {w.FormDataContentType()}},
		Body:   body.Bytes(),
	})
	if err != nil {
		return platform.Receipt{}, err
	}
	return c.sent(op, resp)
}

// sent is the receipt of a send's answer: a refusal is classified, and an
// answer that cannot be read is Ambiguous (the message probably exists).
func (c *Client) sent(op string, resp *httpcall.Response) (platform.Receipt, error) {
	if !resp.OK() {
		return platform.Receipt{}, c.bot.refusal(op, resp, true)
	}
	m, err := decodeMessage(resp.Body, resp.BodyErr)
	if err != nil {
		return platform.Receipt{}, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: the message probably exists: %w", op, err)}
	}
	return platform.Receipt{
		RemoteID:  strconv.FormatInt(m.MessageID, 10),
		URL:       m.link(),
		CreatedAt: time.Unix(m.Date, 0).UTC(),
	}, nil
}

// decodeMessage reads a successful sendMessage answer.
func decodeMessage(body []byte, bodyErr error) (message, error) {
	if bodyErr != nil {
		return message{}, fmt.Errorf("read answer: %w", bodyErr)
	}
	a, ok := decodeAnswer(body)
	if !ok {
		return message{}, fmt.Errorf("answer is not the Bot API's JSON")
	}
	if !a.OK {
		return message{}, fmt.Errorf("answer says ok=false with a success status: %s", a.Description)
	}
	var m message
	if err := json.Unmarshal(a.Result, &m); err != nil {
		return message{}, fmt.Errorf("decode message: %w", err)
	}
	if m.MessageID <= 0 {
		return message{}, fmt.Errorf("answer has no message_id")
	}
	return m, nil
}

// Delete removes a message with deleteMessage, sent exactly once
// (https://core.telegram.org/bots/api#deletemessage: "A message can only be
// deleted if it was sent less than 48 hours ago"; returns True):
//
//   - 2xx: nil;
//   - 400 "message to delete not found": nil, the message is already gone
//     (Telegram answers it for a message id that does not exist in the
//     chat, which for an id it gave us means deleted);
//   - 400 "message can't be deleted": Rejected "delete_window_passed"
//     (older than 48 hours, or the bot may not delete it);
//   - other answers as Publish's: 401 Unauthorized, 429 NotPerformed,
//     5xx or a lost answer Ambiguous, other 4xx Rejected.
func (c *Client) Delete(ctx context.Context, remoteID string) error {
	return scrubToken(c.delete(ctx, remoteID), c.bot.token)
}

func (c *Client) delete(ctx context.Context, remoteID string) error {
	const op = "delete message"
	id, err := strconv.ParseInt(remoteID, 10, 64)
	if err != nil || id <= 0 {
		return &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: remote id %q is not a Telegram message id", op, remoteID)}
	}
	resp, err := c.bot.write(ctx, op, "deleteMessage", struct {
		ChatID    json.RawMessage `json:"chat_id"`
		MessageID int64           `json:"message_id"`
	}{c.chat, id})
	if err != nil {
		return err
	}
	if resp.OK() {
		if a, ok := decodeAnswer(resp.Body); ok && !a.OK {
			return &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: answer says ok=false with a success status: %s", op, a.Description)}
		}
		return nil
	}
	if resp.Status == http.StatusBadRequest {
		a, _ := decodeAnswer(resp.Body)
		d := strings.ToLower(a.Description)
		switch {
		case strings.Contains(d, "message to delete not found"):
			return nil
		case strings.Contains(d, "message can't be deleted"):
			return &platform.Rejected{Status: resp.Status, Reason: ReasonDeleteWindowPassed, Message: fmt.Sprintf(
				"%s: %s (sent more than 48 hours ago, or the bot may not delete it)", op, a.Description)}
		}
	}
	return c.bot.refusal(op, resp, true)
}

// UploadMedia is not supported: Telegram takes media with the message
// (see the package documentation).
func (c *Client) UploadMedia(context.Context, platform.MediaUpload) (platform.MediaReceipt, error) {
	return platform.MediaReceipt{}, &platform.Rejected{Reason: ReasonMediaUnsupported, Message: "upload media: Telegram takes a photo together with the message (sendPhoto, PublishRequest.Media), not as a separate upload"}
}

// Refresh is Rejected with reason "reconnect_needed" without any call: bot
// tokens do not expire, so a token Telegram refuses was revoked or
// replaced in @BotFather and the account needs the new one.
func (c *Client) Refresh(context.Context, platform.Credential) (platform.Credential, error) {
	return platform.Credential{}, &platform.Rejected{Reason: platform.ReasonReconnectNeeded, Message: "refresh token: Telegram bot tokens do not expire and cannot be refreshed; if the token was refused it was revoked in @BotFather: add the account again with the new token"}
}
