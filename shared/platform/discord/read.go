package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

const (
	// pageLimit is the largest page GET /channels/{id}/messages serves
	// ("Max number of messages to return (1-100)").
	pageLimit = 100
	// lookupPages bounds a Lookup: a channel with more than
	// lookupPages*pageLimit messages after the starting point is not read
	// to the end, and the Lookup is Inconclusive.
	lookupPages = 20
	// recentPages bounds Recent: the bot's newest messages are looked for
	// among at most this many pages of the channel's newest messages.
	recentPages = 5
	// discordEpoch is the first millisecond of 2015, the origin of a
	// snowflake's timestamp.
	discordEpoch = 1420070400000
)

// message is the part of Discord's Message object the adapter reads
// (https://discord.com/developers/docs/resources/message#message-object).
type message struct {
	ID        string `json:"id"`
	ChannelID string `json:"channel_id"`
	Author    struct {
		ID string `json:"id"`
	} `json:"author"`
	Content   string `json:"content"`
	Timestamp string `json:"timestamp"`
	// Nonce is "integer or string", and absent from messages read back.
	Nonce       json.RawMessage `json:"nonce"`
	WebhookID   string          `json:"webhook_id"`
	Attachments []attachment    `json:"attachments"`
}

// attachment is the part of Discord's Attachment object the adapter reads
// (https://discord.com/developers/docs/resources/message#attachment-object).
type attachment struct {
	ID       string `json:"id"`
	Filename string `json:"filename"`
}

// nonce returns the message's nonce as text; ok is false when Discord did
// not return one.
func (m message) nonce() (string, bool) {
	raw := strings.TrimSpace(string(m.Nonce))
	if raw == "" || raw == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(m.Nonce, &s) == nil {
		return s, true
	}
	return raw, true // an integer nonce, as written
}

// createdAt parses the ISO 8601 timestamp leniently: a message whose time
// cannot be read is still the message.
func (m message) createdAt() time.Time {
	t, err := time.Parse(time.RFC3339Nano, m.Timestamp)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// post is the message as a RemotePost, without its link.
func (m message) post() platform.RemotePost {
	p := platform.RemotePost{RemoteID: m.ID, Text: m.Content, CreatedAt: m.createdAt()}
	for _, a := range m.Attachments {
		p.MediaIDs = append(p.MediaIDs, a.ID)
	}
	return p
}

// fingerprint is the message's content fingerprint: its text and its
// files, each by the SHA-256 its name states (<64 lower-case hex>.<ext>,
// the name Publish sends, see contentName) or, for any other name, by
// "remote:"+id, which no post of ours carries (as
// platform.RemotePost.Fingerprint does for a media id it cannot map).
// Fingerprints sort the media: the same files in another order match.
func (m message) fingerprint() string {
	shas := map[string]string{}
	for _, a := range m.Attachments {
		if sha, ok := fileSHA256(a.Filename); ok {
			shas[a.ID] = sha
		}
	}
	return m.post().Fingerprint(shas)
}

// remote is the message as a RemotePost with its link.
func (c *Client) remote(ctx context.Context, m message) platform.RemotePost {
	p := m.post()
	p.URL = c.link(ctx, m)
	return p
}

// link is the message's web address, BaseURL/channels/{guild}/{channel}/{id};
// "" when the guild could not be read.
func (c *Client) link(ctx context.Context, m message) string {
	channel := m.ChannelID
	if channel == "" {
		channel = c.channelID
	}
	guild := c.guild(ctx)
	if guild == "" || channel == "" {
		return ""
	}
	return c.base + "/channels/" + guild + "/" + channel + "/" + m.ID
}

// guildReadTimeout bounds the read of the guild id, which only makes
// links and may follow a create whose receipt is waiting.
const guildReadTimeout = 5 * time.Second

// guild returns the server the messages are in ("@me" for a direct
// message channel), read once from the channel (bot) or the webhook
// (https://discord.com/developers/docs/resources/channel#get-channel,
// https://discord.com/developers/docs/resources/webhook#get-webhook-with-token)
// and cached. It is best effort: it never fails the call that wanted the
// link, and after a failed read the client makes no links rather than
// read again for every message.
func (c *Client) guild(ctx context.Context) string {
	c.mu.Lock()
	g, tried := c.guildID, c.guildTried
	c.mu.Unlock()
	if g != "" || tried {
		return g
	}
	op, u := "read channel", c.api("channels", c.channelID)
	if c.mode == ModeWebhook {
		op, u = "read webhook", c.api("webhooks", c.webhookID, c.token)
	}
	ctx, cancel := context.WithTimeout(ctx, guildReadTimeout)
	defer cancel()
	resp, err := c.http.Read(ctx, op, httpcall.Request{Method: http.MethodGet, URL: u, Header: c.header(false)})
	var v struct {
		GuildID *string `json:"guild_id"`
	}
	switch {
	case err != nil, resp.Status != http.StatusOK, json.Unmarshal(resp.Body, &v) != nil:
	case v.GuildID == nil || *v.GuildID == "":
		g = "@me"
	case isSnowflake(*v.GuildID):
		g = *v.GuildID
	}
	c.mu.Lock()
	c.guildID, c.guildTried = g, true
	c.mu.Unlock()
	return g
}

// self returns the bot's user id: Config.BotUserID, else read once with
// GET /users/@me (see currentUser) and cached.
func (c *Client) self(ctx context.Context) (string, error) {
	c.mu.Lock()
	id := c.botID
	c.mu.Unlock()
	if id != "" {
		return id, nil
	}
	u, err := c.currentUser(ctx)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.botID = u.ID
	c.mu.Unlock()
	return u.ID, nil
}

// User is the part of Discord's User object
// (https://discord.com/developers/docs/resources/user#user-object) that
// names a bot: its id, its username (unique, without a discriminator for
// new accounts), its display name when it has one, and whether it is a
// bot.
type User struct {
	ID         string `json:"id"`
	Username   string `json:"username"`
	GlobalName string `json:"global_name"`
	Bot        bool   `json:"bot"`
}

// WebhookInfo is the part of Discord's Webhook object
// (https://discord.com/developers/docs/resources/webhook#webhook-object)
// that names a webhook: its id and name, and the channel and server
// (guild) it posts to. The object's token is not kept.
type WebhookInfo struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	ChannelID string `json:"channel_id"`
	GuildID   string `json:"guild_id"`
}

// CurrentUser reads whose the bot token is, with GET /api/v10/users/@me
// ("Get Current User",
// https://discord.com/developers/docs/resources/user#get-current-user),
// to verify a token and name the bot when an account is added. base is
// the API origin (empty: DefaultBaseURL); hc nil means a client without a
// timeout (deadlines come from ctx). It is a read, retried on transient
// failures and then *platform.NotPerformed; a refused token is
// *platform.Unauthorized, any other 4xx *platform.Rejected. No error
// carries the token.
func CurrentUser(ctx context.Context, hc *http.Client, base, botToken string) (User, error) {
	c, err := caller(hc, base, ModeBot, botToken)
	if err != nil {
		return User{}, err
	}
	u, err := c.currentUser(ctx)
	return u, c.scrub(err)
}

// Webhook reads an incoming webhook with its token, GET
// /api/v10/webhooks/{id}/{token} ("Get Webhook with Token", no
// Authorization header,
// https://discord.com/developers/docs/resources/webhook#get-webhook-with-token),
// to verify a webhook URL and name it when an account is added. Discord
// answers a wrong id 404 Unknown Webhook (code 10015), *platform.Rejected
// with ReasonUnknownWebhook, and a wrong token 401 Invalid Webhook Token,
// *platform.Unauthorized. base and hc as for CurrentUser; a read, retried
// and then NotPerformed. No error carries the token, which travels in the
// URL path.
func Webhook(ctx context.Context, hc *http.Client, base, id, token string) (WebhookInfo, error) {
	if !isSnowflake(id) {
		return WebhookInfo{}, httpcall.Redact(fmt.Errorf("discord: webhook id %q is not a Discord id", id), token, url.PathEscape(token))
	}
	c, err := caller(hc, base, ModeWebhook, token)
	if err != nil {
		return WebhookInfo{}, err
	}
	c.webhookID = id
	w, err := c.webhook(ctx)
	return w, c.scrub(err)
}

// caller is a Client for the reads that connect an account, which need
// no channel: the base URL and the token checked as New checks them.
// Its errors carry neither.
func caller(hc *http.Client, rawBase string, mode Mode, token string) (*Client, error) {
	secrets := []string{token, url.PathEscape(token)}
	base, err := baseURL(rawBase)
	if err != nil {
		return nil, httpcall.Redact(err, secrets...)
	}
	if token == "" {
		return nil, fmt.Errorf("discord: the %s token is required", mode)
	}
	if strings.ContainsAny(token, " \t\r\n/?#") {
		return nil, fmt.Errorf("discord: the %s token contains white space, '/', '?' or '#'; give the token alone", mode)
	}
	c := &Client{mode: mode, base: base, token: token, userAgent: DefaultUserAgent, http: httpcall.New(hc)}
	c.http.Describe = describe
	c.http.RetryAfter = retryAfter
	return c, nil
}

// currentUser is GET /users/@me with the bot token. An answer without a
// valid user id is NotPerformed.
func (c *Client) currentUser(ctx context.Context) (User, error) {
	const op = "read current user"
	resp, err := c.http.Read(ctx, op, httpcall.Request{Method: http.MethodGet, URL: c.api("users", "@me"), Header: c.header(false)})
	if err != nil {
		return User{}, err
	}
	if resp.Status != http.StatusOK {
		return User{}, c.refuse(op, resp, false)
	}
	var u User
	if err := json.Unmarshal(resp.Body, &u); err != nil || !isSnowflake(u.ID) {
		return User{}, &platform.NotPerformed{Status: resp.Status, Message: op + ": the answer carries no user id"}
	}
	return u, nil
}

// webhook is GET /webhooks/{id}/{token}. An answer that is not that
// webhook is NotPerformed.
func (c *Client) webhook(ctx context.Context) (WebhookInfo, error) {
	const op = "read webhook"
	resp, err := c.http.Read(ctx, op, httpcall.Request{Method: http.MethodGet, URL: c.api("webhooks", c.webhookID, c.token), Header: c.header(false)})
	if err != nil {
		return WebhookInfo{}, err
	}
	if resp.Status != http.StatusOK {
		return WebhookInfo{}, c.refuse(op, resp, false)
	}
	var w WebhookInfo
	if err := json.Unmarshal(resp.Body, &w); err != nil {
		return WebhookInfo{}, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s %s: decode webhook: %v", op, c.webhookID, err)}
	}
	if w.ID != c.webhookID {
		return WebhookInfo{}, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s %s: the answer is not that webhook (id %q)", op, c.webhookID, w.ID)}
	}
	return w, nil
}

// listMessages reads one page of the channel
// (https://discord.com/developers/docs/resources/message#get-channel-messages).
func (c *Client) listMessages(ctx context.Context, q url.Values) ([]message, error) {
	const op = "list messages"
	resp, err := c.http.Read(ctx, op, httpcall.Request{
		Method: http.MethodGet, URL: c.api("channels", c.channelID, "messages"), Query: q, Header: c.header(false),
	})
	if err != nil {
		return nil, err
	}
	if resp.Status != http.StatusOK {
		return nil, c.refuse(op, resp, false)
	}
	var page []message
	if err := json.Unmarshal(resp.Body, &page); err != nil {
		return nil, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: decode page: %v", op, err)}
	}
	for _, m := range page {
		if !isSnowflake(m.ID) {
			return nil, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: a message without a valid id (%q)", op, m.ID)}
		}
	}
	return page, nil
}

// Recent returns up to n of the bot's own newest messages in the channel,
// newest first, looking through at most recentPages pages of the channel's
// newest messages (paging back with before). A webhook cannot read the
// channel: Recent is Rejected "history_unreadable" (the publisher does not
// call it when Capabilities.ReadableHistory is false).
func (c *Client) Recent(ctx context.Context, n int) ([]platform.RemotePost, error) {
	posts, err := c.recent(ctx, n)
	return posts, c.scrub(err)
}

func (c *Client) recent(ctx context.Context, n int) ([]platform.RemotePost, error) {
	if c.mode == ModeWebhook {
		return nil, &platform.Rejected{Reason: ReasonHistoryUnreadable, Message: "list messages: a webhook cannot read the channel's history"}
	}
	posts := []platform.RemotePost{}
	if n <= 0 {
		return posts, nil
	}
	bot, err := c.self(ctx)
	if err != nil {
		return nil, err
	}
	before := ""
	for range recentPages {
		q := url.Values{"limit": {strconv.Itoa(pageLimit)}}
		if before != "" {
			q.Set("before", before)
		}
		page, err := c.listMessages(ctx, q)
		if err != nil {
			return nil, err
		}
		slices.SortFunc(page, func(a, b message) int { return compareIDs(b.ID, a.ID) }) // newest first
		for _, m := range page {
			if m.Author.ID != bot {
				continue
			}
			posts = append(posts, c.remote(ctx, m))
			if len(posts) == n {
				return posts, nil
			}
		}
		if len(page) < pageLimit {
			return posts, nil
		}
		oldest := page[len(page)-1].ID
		if before != "" && compareIDs(oldest, before) >= 0 {
			return nil, &platform.NotPerformed{Message: fmt.Sprintf("list messages: asked for messages before %s, discord answered with %s", before, oldest)}
		}
		before = oldest
	}
	return posts, nil
}

// Lookup looks in the channel for the message a create with q.Handle and
// q.Fingerprint made.
//
// A webhook cannot read the channel: Lookup is *platform.Inconclusive and
// the entry goes to an operator.
//
// A bot reads every message newer than the starting point, oldest page
// first, with GET /channels/{id}/messages?after=&limit=100, paging forward
// from the newest id of each page until a page is short. The starting
// point is q.After when it is a message id. Otherwise (no point recorded,
// or platform.StartOfHistory: the bot had no message in the channel when
// it was read) it is the snowflake of q.NotBefore, minus one so that a
// message from that very millisecond is newer: Discord makes a message's
// id from its creation time, so that bound relies on our clock being
// within the caller's skew of Discord's. Without either it is 0, the
// channel's start.
//
// A message is ours when the bot wrote it and, if Discord returned its
// nonce, the nonce is Nonce(q.Handle); if not (REST reads do not return
// it), when its fingerprint is q.Fingerprint. The fingerprint takes in
// the message's files by their names, which Publish makes the SHA-256 of
// their bytes (see message.fingerprint): the same text with another file,
// a missing one or one more is not ours. q.MediaSHA256 is not used (the
// files are not uploaded ahead, so there are no upload ids to map).
//
// "Not found" needs proof that the bot can read the channel: Discord
// answers a bot without READ_MESSAGE_HISTORY with no messages rather than
// an error. When the window held no message at all, the channel's newest
// message is read; none there either is Inconclusive (an empty channel
// and an unreadable one look alike). More than lookupPages pages after
// the starting point is Inconclusive, and so is a server that answers
// after= with older messages.
func (c *Client) Lookup(ctx context.Context, q platform.LookupQuery) (platform.RemotePost, bool, error) {
	p, found, err := c.lookup(ctx, q)
	return p, found, c.scrub(err)
}

func (c *Client) lookup(ctx context.Context, q platform.LookupQuery) (platform.RemotePost, bool, error) {
	if c.mode == ModeWebhook {
		return platform.RemotePost{}, false, &platform.Inconclusive{Message: "lookup: a discord webhook cannot read the channel's history (only a message by its id); check the channel by hand"}
	}
	if q.Fingerprint == "" {
		return platform.RemotePost{}, false, errors.New("discord: lookup needs a fingerprint; messages read back carry no nonce")
	}
	start, err := startPoint(q)
	if err != nil {
		return platform.RemotePost{}, false, err
	}
	bot, err := c.self(ctx)
	if err != nil {
		return platform.RemotePost{}, false, err
	}
	s := scan{q: q, bot: bot}
	if q.Handle != "" {
		s.nonce = Nonce(q.Handle)
	}
	after, read := start, 0
	for page := 0; ; page++ {
		if page == lookupPages {
			return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf(
				"lookup: read %d messages after %s without reaching the newest (safety cap %d pages); cannot prove the post absent",
				read, start, lookupPages)}
		}
		msgs, err := c.listMessages(ctx, url.Values{"after": {after}, "limit": {strconv.Itoa(pageLimit)}})
		if err != nil {
			return platform.RemotePost{}, false, err
		}
		read += len(msgs)
		slices.SortFunc(msgs, func(a, b message) int { return compareIDs(a.ID, b.ID) }) // oldest first
		for _, m := range msgs {
			if compareIDs(m.ID, after) <= 0 {
				return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf(
					"lookup: asked for messages after %s, discord answered with %s; it does not page with after", after, m.ID)}
			}
			if s.ours(m) {
				return c.remote(ctx, m), true, nil
			}
		}
		if len(msgs) < pageLimit {
			break
		}
		after = msgs[len(msgs)-1].ID
	}
	if read > 0 {
		return platform.RemotePost{}, false, nil
	}
	// Nothing after the point: prove the channel is readable at all.
	newest, err := c.listMessages(ctx, url.Values{"limit": {"1"}})
	if err != nil {
		return platform.RemotePost{}, false, err
	}
	if len(newest) == 0 {
		return platform.RemotePost{}, false, &platform.Inconclusive{Message: "lookup: discord returned no message in the channel at all: it is empty, or the bot lacks READ_MESSAGE_HISTORY (discord then answers with an empty list); cannot prove the post absent"}
	}
	for _, m := range newest {
		if compareIDs(m.ID, start) > 0 && s.ours(m) {
			// Posted between the two reads' views; it is still ours.
			return c.remote(ctx, m), true, nil
		}
	}
	return platform.RemotePost{}, false, nil
}

// scan is what a Lookup compares each message with.
type scan struct {
	q     platform.LookupQuery
	bot   string
	nonce string
}

// ours reports whether m is the message of the query: written by the bot,
// with our nonce when Discord returned one, else with our fingerprint
// (text and files).
func (s scan) ours(m message) bool {
	if m.Author.ID != s.bot || m.WebhookID != "" {
		return false
	}
	if n, ok := m.nonce(); ok && s.nonce != "" {
		return n == s.nonce
	}
	return m.fingerprint() == s.q.Fingerprint
}

// startPoint is the id a Lookup reads after: q.After when it is a message
// id, else the snowflake of q.NotBefore (minus one), else "0".
func startPoint(q platform.LookupQuery) (string, error) {
	if q.After != "" && q.After != platform.StartOfHistory {
		if !isSnowflake(q.After) {
			return "", fmt.Errorf("discord: lookup After %q is not a Discord message id", q.After)
		}
		return q.After, nil
	}
	if q.NotBefore.IsZero() {
		return "0", nil
	}
	return SnowflakeAt(q.NotBefore), nil
}

// SnowflakeAt is the largest id older than every message created at or
// after t: ((ms since the Discord epoch) << 22) - 1, "0" before 2015
// (https://discord.com/developers/docs/reference#snowflake-ids-in-pagination).
func SnowflakeAt(t time.Time) string {
	ms := t.UnixMilli() - discordEpoch
	if ms <= 0 {
		return "0"
	}
	return strconv.FormatUint(uint64(ms)<<22-1, 10)
}

// compareIDs orders two snowflakes (decimal, no leading zeros).
func compareIDs(a, b string) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// Exists reports whether the message is on Discord, reading it by id
// (bot: GET /channels/{c}/messages/{m}; webhook:
// GET /webhooks/{id}/{token}/messages/{m},
// https://discord.com/developers/docs/resources/webhook#get-webhook-message).
// "No" is said only on Discord's 404 with code 10008 (Unknown Message);
// another 404 (Unknown Channel, Unknown Webhook, a proxy's page) is
// Rejected, a failed read NotPerformed.
func (c *Client) Exists(ctx context.Context, remoteID string) (bool, error) {
	ok, err := c.exists(ctx, remoteID)
	return ok, c.scrub(err)
}

func (c *Client) exists(ctx context.Context, remoteID string) (bool, error) {
	const op = "read message"
	if !isSnowflake(remoteID) {
		return false, &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: %q is not a Discord message id", op, remoteID)}
	}
	resp, err := c.http.Read(ctx, op, httpcall.Request{Method: http.MethodGet, URL: c.messageURL(remoteID), Header: c.header(false)})
	if err != nil {
		return false, err
	}
	switch resp.Status {
	case http.StatusOK:
		var m message
		if err := json.Unmarshal(resp.Body, &m); err != nil || m.ID != remoteID {
			return false, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s %s: the answer is not that message", op, remoteID)}
		}
		return true, nil
	case http.StatusNotFound:
		if errorCode(resp) == codeUnknownMessage {
			return false, nil
		}
		err := c.refuse(op, resp, false)
		var rej *platform.Rejected
		if errors.As(err, &rej) {
			rej.Message += "; cannot tell whether the message exists"
		}
		return false, err
	}
	return false, c.refuse(op, resp, false)
}
