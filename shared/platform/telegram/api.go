package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

// DefaultBaseURL is the public Bot API server.
const DefaultBaseURL = "https://api.telegram.org"

// Rejected reasons this package sets besides httpcall's "http_<status>".
const (
	// ReasonTextTooLong: the text is over the limit (refused before any
	// call, or Telegram's "message is too long").
	ReasonTextTooLong = "text_too_long"
	// ReasonTextEmpty: the text is empty or white space only.
	ReasonTextEmpty = "text_empty"
	// ReasonMediaUnsupported: the adapter cannot attach media (see the
	// package documentation).
	ReasonMediaUnsupported = "media_unsupported"
	// ReasonDeleteWindowPassed: Telegram refused to delete the message
	// ("message can't be deleted"): it is older than 48 hours, or the bot
	// may not delete it in this chat.
	ReasonDeleteWindowPassed = "delete_window_passed"
	// ReasonChatMigrated: the group was upgraded to a supergroup and has a
	// new chat id (named in the message); the account must be changed.
	ReasonChatMigrated = "chat_migrated"
	// ReasonChatNotFound: the chat id is wrong, or the bot was never in it.
	ReasonChatNotFound = "chat_not_found"
	// ReasonBotBlocked: the user blocked the bot (private chat).
	ReasonBotBlocked = "bot_blocked"
	// ReasonBotKicked: the bot was removed from the group or channel.
	ReasonBotKicked = "bot_kicked"
	// ReasonBotNotMember: the bot is not a member of the channel or group.
	ReasonBotNotMember = "bot_not_member"
	// ReasonNotEnoughRights: the bot may not post (or delete) in the chat.
	ReasonNotEnoughRights = "not_enough_rights"
	// ReasonInvalidRequest: the call was not sent because its arguments
	// are invalid (an empty or non-numeric message id).
	ReasonInvalidRequest = "invalid_request"
)

// knownReasons maps fragments of Telegram's error descriptions (lower
// case) to reasons, tried in order. The texts are the Bot API server's, as
// reported verbatim in client libraries' issue trackers, e.g.
// "Bad Request: chat not found", "Forbidden: bot was blocked by the user",
// "Forbidden: bot was kicked from the group chat", "Forbidden: bot is not
// a member of the channel chat", "Bad Request: message is too long",
// "Bad Request: message text is empty", "Bad Request: not enough rights to
// send text messages to the chat", "Bad Request: need administrator rights
// in the channel chat".
var knownReasons = []struct{ fragment, reason string }{
	{"chat not found", ReasonChatNotFound},
	{"bot was blocked", ReasonBotBlocked},
	{"bot was kicked", ReasonBotKicked},
	{"bot is not a member", ReasonBotNotMember},
	{"message is too long", ReasonTextTooLong},
	{"text is too long", ReasonTextTooLong},
	{"message text is empty", ReasonTextEmpty},
	{"not enough rights", ReasonNotEnoughRights},
	{"need administrator rights", ReasonNotEnoughRights},
}

// reasonFor returns the reason for a refusal's description, or "".
func reasonFor(description string) string {
	d := strings.ToLower(description)
	for _, k := range knownReasons {
		if strings.Contains(d, k.fragment) {
			return k.reason
		}
	}
	return ""
}

// answer is the Bot API's response envelope
// (https://core.telegram.org/bots/api#making-requests) with
// ResponseParameters (https://core.telegram.org/bots/api#responseparameters).
type answer struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		MigrateToChatID int64   `json:"migrate_to_chat_id"`
		RetryAfter      float64 `json:"retry_after"`
	} `json:"parameters"`
}

// decodeAnswer reads the envelope; ok is false when the body is not one.
func decodeAnswer(body []byte) (a answer, ok bool) {
	if err := json.Unmarshal(body, &a); err != nil {
		return answer{}, false
	}
	return a, true
}

// describe is httpcall's Describe: the answer's description.
func describe(resp *httpcall.Response) string {
	a, _ := decodeAnswer(resp.Body)
	return a.Description
}

// retryAfter is httpcall's RetryAfter: parameters.retry_after, in seconds
// ("In case of exceeding flood control, the number of seconds left to
// wait before the request can be repeated",
// https://core.telegram.org/bots/api#responseparameters).
func retryAfter(resp *httpcall.Response, _ time.Time) time.Duration {
	a, _ := decodeAnswer(resp.Body)
	// Converting a float beyond int64 to a Duration is
	// implementation-defined (math.MinInt64 on amd64: "retry now" to a
	// server asking for years), so the range is checked first.
	switch d := a.Parameters.RetryAfter * float64(time.Second); {
	case d <= 0:
		return 0
	case d >= math.MaxInt64:
		return math.MaxInt64
	default:
		return time.Duration(d)
	}
}

// bot is one bot token's connection to a Bot API server.
type bot struct {
	http  *httpcall.Client
	base  string
	token string
}

func newBot(hc *http.Client, rawBase, token string) (*bot, error) {
	base, err := baseURL(rawBase)
	if err != nil {
		return nil, err
	}
	if err := checkToken(token); err != nil {
		return nil, err
	}
	h := httpcall.New(hc)
	h.Describe = describe
	h.RetryAfter = retryAfter
	return &bot{http: h, base: base, token: token}, nil
}

// baseURL validates and normalises the server's root URL; empty means
// DefaultBaseURL.
func baseURL(raw string) (string, error) {
	base, err := httpcall.RootURL("BaseURL", raw, DefaultBaseURL)
	if err != nil {
		return "", fmt.Errorf("telegram: %w", err)
	}
	return base, nil
}

// checkToken checks the shape of a bot token, "<bot id>:<secret>"
// ("123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11",
// https://core.telegram.org/bots/api#authorizing-your-bot). Its messages
// never quote the token.
func checkToken(token string) error {
	if token == "" {
		return errors.New("telegram: the bot token (Token, the credential's AccessToken) is required")
	}
	id, secret, ok := strings.Cut(token, ":")
	if !ok || secret == "" || !digits(id) {
		return errors.New(`telegram: the bot token (Token) is not of the form "<bot id>:<secret>" that @BotFather issues`)
	}
	for _, r := range token {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == ':' || r == '_' || r == '-') {
			return errors.New("telegram: the bot token (Token) holds a character a bot token never has (only letters, digits, ':', '_' and '-')")
		}
	}
	return nil
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// url is a method's address. It holds the token: it goes to httpcall and
// nowhere else.
func (b *bot) url(method string) string {
	return b.base + "/bot" + b.token + "/" + method
}

// write sends one method call with an effect, exactly once.
func (b *bot) write(ctx context.Context, op, method string, body any) (*httpcall.Response, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: encode body: %v", op, err)}
	}
	return b.http.Write(ctx, op, httpcall.Request{
		Method: http.MethodPost,
		URL:    b.url(method),
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   data,
	})
}

// refusal classifies an answer that is not a 2xx: a migrated chat and the
// well-known 400/403 descriptions get their own reason, anything else is
// httpcall's classification (429 NotPerformed with retry_after, 401
// Unauthorized, 5xx Ambiguous on a write, other 4xx Rejected).
func (b *bot) refusal(op string, resp *httpcall.Response, write bool) error {
	a, _ := decodeAnswer(resp.Body)
	if id := a.Parameters.MigrateToChatID; id != 0 && resp.Status < 500 {
		return &platform.Rejected{Status: resp.Status, Reason: ReasonChatMigrated, Message: fmt.Sprintf(
			"%s: %s: the group is now a supergroup with chat id %d; set it as the account's remote id",
			op, a.Description, id)}
	}
	if resp.Status == http.StatusBadRequest || resp.Status == http.StatusForbidden {
		if reason := reasonFor(a.Description); reason != "" {
			return &platform.Rejected{Status: resp.Status, Reason: reason, Message: fmt.Sprintf("%s: %s", op, a.Description)}
		}
	}
	return b.http.Classify(op, resp, write)
}

// scrubToken removes the bot token (and its secret part alone) from an
// error's text, keeping its class (httpcall.Redact). It is the last guard:
// no error of this package formats a URL, and httpcall drops URLs from
// transport errors, but a proxy's error page may echo the request path
// into a description.
func scrubToken(err error, token string) error {
	_, secret, _ := strings.Cut(token, ":")
	return httpcall.Redact(err, token, secret)
}

// chatIDJSON renders a chat id for a request body: an integer id as a JSON
// number, a channel's "@username" as a string ("Integer or String",
// https://core.telegram.org/bots/api#sendmessage).
func chatIDJSON(chat string) (json.RawMessage, error) {
	if n, err := strconv.ParseInt(chat, 10, 64); err == nil {
		if n == 0 {
			return nil, errors.New("is 0, which is no chat")
		}
		return json.RawMessage(strconv.FormatInt(n, 10)), nil
	}
	name, ok := strings.CutPrefix(chat, "@")
	if !ok || len(name) < 4 || len(name) > 32 {
		return nil, errors.New("must be a chat id (an integer such as -1001234567890) or a public chat's @username")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return nil, errors.New("must be a chat id (an integer such as -1001234567890) or a public chat's @username")
		}
	}
	return json.Marshal(chat)
}
