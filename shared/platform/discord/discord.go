package discord

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

const (
	// DefaultBaseURL is Discord's API origin.
	DefaultBaseURL = "https://discord.com"
	// apiPrefix is the API version every route uses.
	apiPrefix = "/api/v10"
	// DefaultUserAgent follows Discord's required form,
	// "DiscordBot ($url, $versionNumber)"
	// (https://discord.com/developers/docs/reference#user-agent).
	DefaultUserAgent = "DiscordBot (oncepost, 1)"
	// maxCharacters is Discord's content limit, in code points (see
	// MeasureText).
	maxCharacters = 2000
	// NonceLength is the longest nonce Discord accepts ("up to 25
	// characters", https://discord.com/developers/docs/resources/message#create-message).
	NonceLength = 25
)

// Limits of the files a message carries (see Publish).
const (
	// MaxFiles is the most files one message takes: Discord's JSON error
	// 30015 is "Maximum number of attachments in a message reached (10)"
	// (https://discord.com/developers/docs/topics/opcodes-and-status-codes#json).
	MaxFiles = 10
	// MaxFileBytes is Discord's default upload limit, per file: "The file
	// upload size limit applies to each file in a request. The default
	// limit is 10 MiB for all users, but may be higher [...] by the
	// server's Boost Tier" (https://discord.com/developers/docs/reference#uploading-files).
	// Since January 16, 2025 it applies to webhooks too (change log of
	// 2024-12-16, "Default File Upload Limit Change": "from 25 MiB to 10
	// MiB [...] The 10 MiB limit will apply to both webhooks and
	// interaction responses"). A boosted server takes more; the adapter
	// keeps to the limit every server has.
	MaxFileBytes = 10 << 20
	// MaxRequestBytes is the largest create request: "The maximum request
	// size when sending a message is 25 MiB"
	// (https://discord.com/developers/docs/resources/message#create-message,
	// Limitations). Ten files of MaxFileBytes do not fit in one request.
	MaxRequestBytes = 25 << 20
	// maxMediaTotal is the files' share of MaxRequestBytes that
	// Capabilities declares, for a post to be refused or fitted when it is
	// added rather than when it is sent: the rest is for the text, the alt
	// texts (at most 10 × 1,024 code points) and the multipart framing.
	maxMediaTotal = MaxRequestBytes - 1<<20
	// maxDescription is the longest alt text of a file: "description
	// (alt text) for the file (max 1024 characters)"
	// (https://discord.com/developers/docs/resources/message#attachment-object-attachment-request-structure),
	// counted in code points as the content is (see MeasureText).
	maxDescription = 1024
)

// Platform names of the two modes: post.Account.Platform selects the mode
// (see Connector) and Capabilities.Platform reports it.
const (
	PlatformBot     = "discord"
	PlatformWebhook = "discord-webhook"
)

// Mode is how the client posts: as a bot user or through a webhook.
type Mode string

const (
	// ModeBot posts with a bot token to one channel; it has a nonce and can
	// read the channel back.
	ModeBot Mode = "bot"
	// ModeWebhook posts through an incoming webhook; it has neither.
	ModeWebhook Mode = "webhook"
)

// Rejected reasons this package sets besides platform's and httpcall's
// generic "http_<status>".
const (
	ReasonTextTooLong        = "text_too_long"
	ReasonMediaUnsupported   = "media_unsupported"
	ReasonMissingHandle      = "missing_handle"
	ReasonInvalidRequest     = "invalid_request"
	ReasonHistoryUnreadable  = "history_unreadable"
	ReasonUnknownChannel     = "unknown_channel"
	ReasonUnknownMessage     = "unknown_message"
	ReasonUnknownWebhook     = "unknown_webhook"
	ReasonMissingAccess      = "missing_access"
	ReasonMissingPermissions = "missing_permissions"
	ReasonEmptyMessage       = "empty_message"
	ReasonNotTextChannel     = "not_text_channel"
	ReasonInvalidForm        = "invalid_form_body"
	ReasonTooLarge           = "request_too_large"
	ReasonBlocked            = "blocked_by_automod"
	ReasonTooManyFiles       = "too_many_files"
	ReasonFileTooLarge       = "file_too_large"
	ReasonAltTooLong         = "alt_too_long"
	// ReasonFileName refuses a file whose name is not the SHA-256 of its
	// bytes: Lookup could never recognise the message (see Publish).
	ReasonFileName = "file_name_not_content_hash"
)

// Discord's JSON error codes the adapter acts on
// (https://discord.com/developers/docs/topics/opcodes-and-status-codes#json).
const (
	codeUnknownChannel     = 10003
	codeUnknownMessage     = 10008
	codeUnknownWebhook     = 10015
	codeMissingAccess      = 50001
	codeEmptyMessage       = 50006
	codeNotTextChannel     = 50008
	codeMissingPermissions = 50013
	codeInvalidForm        = 50035
	codeTooLarge           = 40005
	codeAutomod            = 200000
	codeHarmfulLink        = 240000
)

// reasonByCode maps an error code of a 4xx answer to a Rejected reason.
var reasonByCode = map[int]string{
	codeUnknownChannel:     ReasonUnknownChannel,
	codeUnknownMessage:     ReasonUnknownMessage,
	codeUnknownWebhook:     ReasonUnknownWebhook,
	codeMissingAccess:      ReasonMissingAccess,
	codeMissingPermissions: ReasonMissingPermissions,
	codeEmptyMessage:       ReasonEmptyMessage,
	codeNotTextChannel:     ReasonNotTextChannel,
	codeInvalidForm:        ReasonInvalidForm,
	codeTooLarge:           ReasonTooLarge,
	codeAutomod:            ReasonBlocked,
	codeHarmfulLink:        ReasonBlocked,
}

// Config configures a Client for one channel (bot) or one webhook.
type Config struct {
	// Mode is ModeBot or ModeWebhook.
	Mode Mode
	// BaseURL is the API origin; empty means DefaultBaseURL. Routes are
	// under BaseURL + "/api/v10", and message links under BaseURL +
	// "/channels/".
	BaseURL string
	// ChannelID is the channel a bot posts to (ModeBot only).
	ChannelID string
	// BotUserID is the bot's own user id, which Lookup and Recent use to
	// tell its messages from others'. Empty: read once through
	// GET /users/@me and cached (ModeBot only).
	BotUserID string
	// WebhookID is the webhook's id (ModeWebhook only).
	WebhookID string
	// GuildID is the server the channel belongs to, for message links.
	// Empty: read once from the channel (or the webhook) when a link is
	// first needed; a link is left empty when that read fails.
	GuildID string
	// Credential.AccessToken is the bot token (ModeBot) or the webhook
	// token (ModeWebhook). The other fields are unused.
	Credential platform.Credential
	// HTTPClient is used for every call; nil means one without a Timeout
	// (deadlines come from the context).
	HTTPClient *http.Client
	// UserAgent replaces DefaultUserAgent.
	UserAgent string
}

// Client is one Discord channel (bot) or webhook. It is safe for
// concurrent use.
type Client struct {
	mode      Mode
	base      string
	channelID string
	webhookID string
	token     string
	userAgent string
	http      *httpcall.Client

	mu         sync.Mutex
	botID      string
	guildID    string
	guildTried bool
}

var (
	_ platform.Client       = (*Client)(nil)
	_ platform.TextMeasurer = (*Client)(nil)
)

// New validates cfg and returns a Client. It makes no network call.
func New(cfg Config) (*Client, error) {
	base, err := baseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	token := cfg.Credential.AccessToken
	if token == "" {
		return nil, errors.New("discord: config Credential.AccessToken (the bot or webhook token) is required")
	}
	if strings.ContainsAny(token, " \t\r\n/?#") {
		// Not the token in the message: it is a secret.
		return nil, errors.New("discord: config Credential.AccessToken contains white space, '/', '?' or '#'; paste the token alone")
	}
	if cfg.GuildID != "" && !isSnowflake(cfg.GuildID) {
		return nil, fmt.Errorf("discord: config GuildID %q is not a Discord id", cfg.GuildID)
	}
	c := &Client{mode: cfg.Mode, base: base, token: token, userAgent: cfg.UserAgent, guildID: cfg.GuildID}
	switch cfg.Mode {
	case ModeBot:
		if !isSnowflake(cfg.ChannelID) {
			return nil, fmt.Errorf("discord: config ChannelID %q is not a Discord id (a bot posts to one channel)", cfg.ChannelID)
		}
		if cfg.BotUserID != "" && !isSnowflake(cfg.BotUserID) {
			return nil, fmt.Errorf("discord: config BotUserID %q is not a Discord id", cfg.BotUserID)
		}
		if cfg.WebhookID != "" {
			return nil, errors.New("discord: config WebhookID is set for a bot; use Mode webhook")
		}
		c.channelID, c.botID = cfg.ChannelID, cfg.BotUserID
	case ModeWebhook:
		if !isSnowflake(cfg.WebhookID) {
			return nil, fmt.Errorf("discord: config WebhookID %q is not a Discord id", cfg.WebhookID)
		}
		if cfg.ChannelID != "" || cfg.BotUserID != "" {
			return nil, errors.New("discord: config ChannelID and BotUserID are for a bot; a webhook names its channel itself")
		}
		c.webhookID = cfg.WebhookID
	default:
		return nil, fmt.Errorf("discord: config Mode %q must be %q or %q", cfg.Mode, ModeBot, ModeWebhook)
	}
	if c.userAgent == "" {
		c.userAgent = DefaultUserAgent
	}
	c.http = httpcall.New(cfg.HTTPClient)
	c.http.Describe = describe
	c.http.RetryAfter = retryAfter
	return c, nil
}

// baseURL validates and normalises the API origin.
func baseURL(raw string) (string, error) {
	base, err := httpcall.RootURL("config BaseURL", raw, DefaultBaseURL)
	if err != nil {
		return "", fmt.Errorf("discord: %w", err)
	}
	if u, _ := url.Parse(base); strings.HasSuffix(u.Path, "/api") || strings.Contains(u.Path, "/api/") {
		return "", fmt.Errorf("discord: config BaseURL %q must be the origin (https://discord.com), without /api", base)
	}
	return base, nil
}

// isSnowflake reports whether s is a Discord id: decimal digits that fit
// in 64 bits (https://discord.com/developers/docs/reference#snowflakes).
func isSnowflake(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// Nonce is the Create Message nonce sent for a ledger handle: the first
// 25 characters of the lower-case base32 SHA-256 of the handle (125 bits).
//
// Discord takes at most 25 characters and the ledger's handle is 26, so
// the handle cannot be sent as it is. The nonce must be the same on every
// attempt (enforce_nonce deduplicates only an equal nonce), so it is a
// pure function of the handle, and it must differ for different handles.
// Cutting the handle to 25 characters would make two handles that differ
// only in their last character (a counter or a time-ordered id whose tail
// is incremented) the same nonce, and a second post would be taken for a
// repeat of the first; a hash spreads every difference over all 25
// characters, whatever the handle's format or length.
func Nonce(handle string) string {
	sum := sha256.Sum256([]byte(handle))
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:]))[:NonceLength]
}

// MeasureText is the length Discord compares with its 2000-character
// limit: Unicode code points, as its Python API counts ("the API
// calculates length based on the number of codepoints in the string",
// discord/discord-api-docs#1315). A grapheme count would let an emoji
// sequence of several code points through and have Discord refuse it.
func (c *Client) MeasureText(text string) int { return utf8.RuneCountInString(text) }

// Capabilities declares what each mode can do.
//
// PostingLimits: Discord documents per-route buckets read from response
// headers, not a posting budget, and asks apps not to hard-code limits
// (https://discord.com/developers/docs/topics/rate-limits). The budgets
// here are the commonly observed ones, for spacing only: a bot's Create
// Message bucket is 5 per 5 s per channel (abalabahaha/eris#1267: "the
// parent rate limit of 5/5"); a webhook allows 5 requests per 2 s
// (birdie0.github.io/discord-webhooks-guide, "Rate Limits", quoted in
// discord/discord-api-docs#6753). A 429 still answers NotPerformed with
// Discord's wait.
//
// Media: both modes take up to MaxFiles images with the create itself
// (InlineMedia: the bytes come in PublishRequest.Media, there is no
// upload ahead of it), each at most MaxFileBytes, Discord's default
// per-file limit. Discord documents no pixel limit (MaxMediaPixels 0).
// The 25 MiB limit of the whole request is declared for the files
// (MaxMediaTotalBytes, less room for the rest of the request) and checked
// by Publish, which refuses a post over it before sending.
func (c *Client) Capabilities() platform.Capabilities {
	if c.mode == ModeWebhook {
		return platform.Capabilities{
			Platform:           PlatformWebhook,
			NativeIdempotency:  false,
			LookupByHandle:     false,
			ReadableHistory:    false,
			MaxTextGraphemes:   maxCharacters,
			MaxMedia:           MaxFiles,
			MaxMediaBytes:      MaxFileBytes,
			MaxMediaTotalBytes: maxMediaTotal,
			InlineMedia:        true,
			Handle:             "not sent: a webhook takes no nonce",
			ReadBack:           "none: a webhook token reads a message only by its id, never the channel; unknown outcomes go to an operator",
			PostingLimits:      []platform.Rate{{Count: 5, Per: 2 * time.Second}},
		}
	}
	return platform.Capabilities{
		Platform:           PlatformBot,
		NativeIdempotency:  true,
		LookupByHandle:     false,
		ReadableHistory:    true,
		MaxTextGraphemes:   maxCharacters,
		MaxMedia:           MaxFiles,
		MaxMediaBytes:      MaxFileBytes,
		MaxMediaTotalBytes: maxMediaTotal,
		InlineMedia:        true,
		Handle:             "nonce (25 base32 chars of SHA-256 of the handle) with enforce_nonce: a repeat within a few minutes returns the first message",
		ReadBack:           "GET /channels/{id}/messages?after= from the pre-send point, the bot's own messages matched by fingerprint (REST reads carry no nonce); needs READ_MESSAGE_HISTORY",
		PostingLimits:      []platform.Rate{{Count: 5, Per: 5 * time.Second}},
	}
}

// header is the headers of a call: the bot's Authorization (a webhook
// authenticates by the token in its path), the User-Agent Discord
// requires, and the content type of a JSON body.
func (c *Client) header(jsonBody bool) http.Header {
	h := http.Header{"User-Agent": {c.userAgent}}
	if c.mode == ModeBot {
		h.Set("Authorization", "Bot "+c.token)
	}
	if jsonBody {
		h.Set("Content-Type", "application/json")
	}
	return h
}

// api is the URL of an API route.
func (c *Client) api(segments ...string) string {
	var b strings.Builder
	b.WriteString(c.base)
	b.WriteString(apiPrefix)
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// createURL is where a message is created.
func (c *Client) createURL() string {
	if c.mode == ModeWebhook {
		return c.api("webhooks", c.webhookID, c.token)
	}
	return c.api("channels", c.channelID, "messages")
}

// messageURL is one message's route, for reading and deleting it.
func (c *Client) messageURL(id string) string {
	if c.mode == ModeWebhook {
		return c.api("webhooks", c.webhookID, c.token, "messages", id)
	}
	return c.api("channels", c.channelID, "messages", id)
}

// createBody is the JSON body of a create, sent as it is or, with files,
// as the payload_json part of a multipart form. The webhook's has no nonce.
type createBody struct {
	Content      string `json:"content"`
	Nonce        string `json:"nonce,omitempty"`
	EnforceNonce bool   `json:"enforce_nonce,omitempty"`
	// Attachments describe the files[n] parts, one per file: id is the n
	// of its part
	// (https://discord.com/developers/docs/resources/message#attachment-object-attachment-request-structure).
	Attachments []attachmentRequest `json:"attachments,omitempty"`
}

// attachmentRequest is Discord's attachment request object for a new file.
type attachmentRequest struct {
	ID          int    `json:"id"`
	Filename    string `json:"filename"`
	Description string `json:"description,omitempty"`
}

// Publish creates a message, sent exactly once. A bot sends Nonce(handle)
// with enforce_nonce, so Discord answers a repeat within a few minutes with
// the message the first attempt created; a webhook waits for the message
// to be saved (wait=true).
//
// With req.Media the create is one multipart/form-data request
// (https://discord.com/developers/docs/reference#uploading-files): a
// payload_json part holding the JSON body (content, nonce, enforce_nonce,
// and attachments [{id: n, filename, description: alt}]), then one part
// files[n] per file with its filename and Content-Type, in display order.
// A file's name must be the hex SHA-256 of its bytes and an extension
// (the publisher names each file <sha256>.<ext> after its media ref), so
// that Lookup can tell the files of a message read back: a name that is
// not that is refused with ReasonFileName.
//
// Refused before anything is sent: text over 2000 code points, uploaded
// media ids (Discord takes no upload ahead of the message), more than
// MaxFiles files, an empty file or one over MaxFileBytes, alt text over
// 1024 code points, and a request over MaxRequestBytes.
func (c *Client) Publish(ctx context.Context, req platform.PublishRequest) (platform.Receipt, error) {
	r, err := c.publish(ctx, req)
	return r, c.scrub(err)
}

func (c *Client) publish(ctx context.Context, req platform.PublishRequest) (platform.Receipt, error) {
	const op = "create message"
	if len(req.MediaIDs) > 0 {
		return platform.Receipt{}, &platform.Rejected{Reason: ReasonMediaUnsupported, Message: op + ": discord takes files with the message itself (PublishRequest.Media), not uploaded media ids"}
	}
	if n := c.MeasureText(req.Text); n > maxCharacters {
		return platform.Receipt{}, &platform.Rejected{Reason: ReasonTextTooLong, Message: fmt.Sprintf("%s: the text is %d characters (code points), discord allows %d", op, n, maxCharacters)}
	}
	if err := checkFiles(op, req.Media); err != nil {
		return platform.Receipt{}, err
	}
	body := createBody{Content: req.Text}
	var q url.Values
	if c.mode == ModeBot {
		if req.Handle == "" {
			// Without the nonce Discord cannot deduplicate a later re-send.
			return platform.Receipt{}, &platform.Rejected{Reason: ReasonMissingHandle, Message: op + ": the request has no idempotency handle"}
		}
		body.Nonce, body.EnforceNonce = Nonce(req.Handle), true
	} else {
		// Without wait Discord answers 204 before saving, and a message
		// that is not saved returns no error.
		q = url.Values{"wait": {"true"}}
	}
	for i, m := range req.Media {
		body.Attachments = append(body.Attachments, attachmentRequest{ID: i, Filename: m.Filename, Description: m.Alt})
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return platform.Receipt{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: encode body: %v", op, err)}
	}
	header := c.header(true)
	if len(req.Media) > 0 {
		form, contentType, err := multipartBody(raw, req.Media)
		if err != nil {
			return platform.Receipt{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: encode the form: %v", op, err)}
		}
		if len(form) > MaxRequestBytes {
			return platform.Receipt{}, &platform.Rejected{Reason: ReasonTooLarge, Message: fmt.Sprintf(
				"%s: the request with %d files is %d bytes; discord takes at most %d (25 MiB) per message", op, len(req.Media), len(form), MaxRequestBytes)}
		}
		raw = form
		header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Write(ctx, op, httpcall.Request{
		Method: http.MethodPost, URL: c.createURL(), Query: q, Header: header, Body: raw,
	})
	if err != nil {
		return platform.Receipt{}, err
	}
	if !resp.OK() {
		return platform.Receipt{}, c.refuse(op, resp, true)
	}
	m, err := decodeMessage(resp)
	if err != nil {
		return platform.Receipt{}, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: the message probably exists: %w", op, err)}
	}
	p := c.remote(ctx, m)
	return platform.Receipt{RemoteID: p.RemoteID, URL: p.URL, CreatedAt: p.CreatedAt}, nil
}

// contentName matches the name of a file this adapter sends: the hex
// SHA-256 of its bytes, a dot and an extension. Discord keeps such a name
// as sent: it cleans file names like werkzeug's secure_filename (ASCII
// letters, digits, "_", "." and "-" kept, white space made "_", leading
// and trailing "." and "_" dropped: discord/discord-api-docs#7754,
// "filenames from files uploaded to discord are cleansed similarly to
// flask's secure_filename()", and #4292, "hello (world).png" stored as
// "hello_world.png"), and a name of hex digits, one dot and letters or
// digits has nothing to clean.
var contentName = regexp.MustCompile(`^([0-9a-f]{64})\.[A-Za-z0-9]+$`)

// fileSHA256 returns the SHA-256 a file name states, ok false when the
// name is not <64 lower-case hex>.<ext>.
func fileSHA256(name string) (sha string, ok bool) {
	m := contentName.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// checkFiles refuses, before anything is sent, files Discord would refuse
// (too many, empty, too large, alt text too long) and files whose name is
// not the SHA-256 of their bytes.
func checkFiles(op string, files []platform.MediaUpload) error {
	if len(files) > MaxFiles {
		return &platform.Rejected{Reason: ReasonTooManyFiles, Message: fmt.Sprintf("%s: %d files; discord takes at most %d per message", op, len(files), MaxFiles)}
	}
	for i, f := range files {
		switch {
		case len(f.Data) == 0:
			return &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: file %d (%s) is empty", op, i, f.Filename)}
		case len(f.Data) > MaxFileBytes:
			return &platform.Rejected{Reason: ReasonFileTooLarge, Message: fmt.Sprintf(
				"%s: file %d (%s) is %d bytes; discord takes at most %d (10 MiB) per file", op, i, f.Filename, len(f.Data), MaxFileBytes)}
		case utf8.RuneCountInString(f.Alt) > maxDescription:
			return &platform.Rejected{Reason: ReasonAltTooLong, Message: fmt.Sprintf(
				"%s: the alt text of file %d (%s) is %d characters; discord allows %d", op, i, f.Filename, utf8.RuneCountInString(f.Alt), maxDescription)}
		}
		sum := sha256.Sum256(f.Data)
		if sha, ok := fileSHA256(f.Filename); !ok || sha != hex.EncodeToString(sum[:]) {
			return &platform.Rejected{Reason: ReasonFileName, Message: fmt.Sprintf(
				"%s: file %d is named %q, not <sha256 of its bytes>.<ext>; a message read back is recognised by its files' names", op, i, f.Filename)}
		}
	}
	return nil
}

// multipartBody is the multipart/form-data body of a create with files
// (https://discord.com/developers/docs/reference#uploading-files): the
// JSON body as the part payload_json, then the part files[n] of each
// file, with its name and type. It returns the body and its Content-Type.
func multipartBody(payload []byte, files []platform.MediaUpload) ([]byte, string, error) {
	size := len(payload) + 1024
	for _, f := range files {
		size += len(f.Data) + 512
	}
	var b bytes.Buffer
	b.Grow(size)
	w := multipart.NewWriter(&b)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="payload_json"`)
	h.Set("Content-Type", "application/json")
	part, err := w.CreatePart(h)
	if err != nil {
		return nil, "", fmt.Errorf("payload_json: %w", err)
	}
	if _, err := part.Write(payload); err != nil {
		return nil, "", fmt.Errorf("payload_json: %w", err)
	}
	for i, f := range files {
		name := "files[" + strconv.Itoa(i) + "]"
		ct := f.ContentType
		if ct == "" {
			ct = "application/octet-stream"
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", multipart.FileContentDisposition(name, f.Filename))
		h.Set("Content-Type", ct)
		part, err := w.CreatePart(h)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
		if _, err := part.Write(f.Data); err != nil {
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", fmt.Errorf("close: %w", err)
	}
	return b.Bytes(), w.FormDataContentType(), nil
}

// decodeMessage reads the Message object of a 2xx answer.
func decodeMessage(resp *httpcall.Response) (message, error) {
	if resp.BodyErr != nil {
		return message{}, fmt.Errorf("read answer: %w", resp.BodyErr)
	}
	if len(resp.Body) == 0 {
		return message{}, fmt.Errorf("status %d without the message", resp.Status)
	}
	var m message
	if err := json.Unmarshal(resp.Body, &m); err != nil {
		return message{}, fmt.Errorf("decode message: %w", err)
	}
	if !isSnowflake(m.ID) {
		return message{}, fmt.Errorf("answer without a message id (id %q)", m.ID)
	}
	return m, nil
}

// Delete removes a message, sent exactly once. A 2xx (204) is nil, and so
// is Discord's 404 with code 10008 (Unknown Message): the message is
// already gone, so a second delete answers as the first did. Any other 404
// (Unknown Channel, Unknown Webhook) is Rejected: it says nothing about
// the message. 401 is Unauthorized, 429 NotPerformed, a 5xx or a lost
// answer Ambiguous.
func (c *Client) Delete(ctx context.Context, remoteID string) error {
	return c.scrub(c.delete(ctx, remoteID))
}

func (c *Client) delete(ctx context.Context, remoteID string) error {
	const op = "delete message"
	if !isSnowflake(remoteID) {
		return &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: %q is not a Discord message id", op, remoteID)}
	}
	resp, err := c.http.Write(ctx, op, httpcall.Request{Method: http.MethodDelete, URL: c.messageURL(remoteID), Header: c.header(false)})
	if err != nil {
		return err
	}
	if resp.OK() {
		return nil
	}
	if resp.Status == http.StatusNotFound && errorCode(resp) == codeUnknownMessage {
		return nil
	}
	return c.refuse(op, resp, true)
}

// UploadMedia is not supported: Discord takes files as part of the create
// request (multipart files[n] with payload_json), not ahead of it;
// Capabilities.InlineMedia has them passed to Publish instead.
func (c *Client) UploadMedia(context.Context, platform.MediaUpload) (platform.MediaReceipt, error) {
	return platform.MediaReceipt{}, &platform.Rejected{Reason: ReasonMediaUnsupported, Message: "upload media: discord takes files with the message itself (PublishRequest.Media), not ahead of it"}
}

// Refresh is Rejected with reason "reconnect_needed": bot tokens and
// webhook tokens do not expire and have no refresh grant, so a token
// Discord refuses must be replaced by an operator.
func (c *Client) Refresh(context.Context, platform.Credential) (platform.Credential, error) {
	return platform.Credential{}, &platform.Rejected{Reason: platform.ReasonReconnectNeeded, Message: "refresh token: discord bot and webhook tokens do not expire and cannot be refreshed; connect the account again with a new token"}
}

// apiError is Discord's JSON error body: {"code", "message", "errors"},
// and on a 429 {"message", "retry_after", "global"}
// (https://discord.com/developers/docs/topics/opcodes-and-status-codes#json,
// https://discord.com/developers/docs/topics/rate-limits#exceeding-a-rate-limit).
type apiError struct {
	Code       *int            `json:"code"`
	Message    string          `json:"message"`
	RetryAfter *float64        `json:"retry_after"`
	Errors     json.RawMessage `json:"errors"`
}

func parseError(resp *httpcall.Response) (apiError, bool) {
	var e apiError
	if len(resp.Body) == 0 || json.Unmarshal(resp.Body, &e) != nil {
		return apiError{}, false
	}
	return e, e.Message != "" || e.Code != nil
}

// errorCode is the answer's JSON error code, or -1 without one.
func errorCode(resp *httpcall.Response) int {
	e, ok := parseError(resp)
	if !ok || e.Code == nil {
		return -1
	}
	return *e.Code
}

// fieldError is one entry of the "errors" tree of a form error.
type fieldError struct {
	Path, Code, Message string
}

// fieldErrors flattens the "errors" tree: objects keyed by field name or
// array index whose leaves are {"_errors": [{"code", "message"}]}
// (https://discord.com/developers/docs/reference#error-messages).
func fieldErrors(raw json.RawMessage) []fieldError {
	var out []fieldError
	var walk func(path string, raw json.RawMessage, depth int)
	walk = func(path string, raw json.RawMessage, depth int) {
		if depth > 8 {
			return
		}
		var node map[string]json.RawMessage
		if json.Unmarshal(raw, &node) != nil {
			return
		}
		keys := make([]string, 0, len(node))
		for k := range node {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == "_errors" {
				var list []struct{ Code, Message string }
				if json.Unmarshal(node[k], &list) == nil {
					for _, e := range list {
						out = append(out, fieldError{Path: path, Code: e.Code, Message: e.Message})
					}
				}
				continue
			}
			p := k
			if path != "" {
				p = path + "." + k
			}
			walk(p, node[k], depth+1)
		}
	}
	if len(raw) > 0 {
		walk("", raw, 0)
	}
	return out
}

// describe is Discord's explanation of an error answer: its message, its
// code, and the first field error of a form error. "" falls back to the
// status text. It never carries request data.
func describe(resp *httpcall.Response) string {
	e, ok := parseError(resp)
	if !ok {
		return ""
	}
	msg := e.Message
	if msg == "" {
		msg = strings.ToLower(http.StatusText(resp.Status))
	}
	if e.Code != nil && *e.Code != 0 {
		msg = fmt.Sprintf("%s (code %d)", msg, *e.Code)
	}
	if fe := fieldErrors(e.Errors); len(fe) > 0 {
		msg = fmt.Sprintf("%s: %s: %s", msg, fe[0].Path, fe[0].Message)
	}
	return msg
}

// retryAfter is Discord's wait beyond the Retry-After header (which
// httpcall reads first): the body's retry_after, else the
// X-RateLimit-Reset-After header, both seconds with decimals
// (https://discord.com/developers/docs/topics/rate-limits).
func retryAfter(resp *httpcall.Response, _ time.Time) time.Duration {
	if e, ok := parseError(resp); ok && e.RetryAfter != nil && *e.RetryAfter > 0 {
		return seconds(*e.RetryAfter)
	}
	if v := strings.TrimSpace(resp.Header.Get("X-RateLimit-Reset-After")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return seconds(f)
		}
	}
	return 0
}

// seconds converts Discord's decimal seconds, ignoring absurd values.
func seconds(f float64) time.Duration {
	if math.IsNaN(f) || f <= 0 {
		return 0
	}
	const ceiling = 7 * 24 * 3600
	return time.Duration(math.Min(f, ceiling) * float64(time.Second))
}

// refuse translates an answer that is not a success. A 4xx other than
// 401, 408, 425 and 429 whose JSON code Discord documents becomes Rejected
// with a reason naming it (a form error about the content's length:
// "text_too_long"); everything else is httpcall's classification.
func (c *Client) refuse(op string, resp *httpcall.Response, write bool) error {
	s := resp.Status
	if s >= 400 && s < 500 && s != http.StatusUnauthorized && s != http.StatusRequestTimeout &&
		s != http.StatusTooEarly && s != http.StatusTooManyRequests {
		if e, ok := parseError(resp); ok && e.Code != nil {
			reason := reasonByCode[*e.Code]
			if *e.Code == codeInvalidForm {
				for _, fe := range fieldErrors(e.Errors) {
					if fe.Path == "content" && fe.Code == "BASE_TYPE_MAX_LENGTH" {
						reason = ReasonTextTooLong
					}
				}
			}
			if reason != "" {
				return &platform.Rejected{Status: s, Reason: reason, Message: fmt.Sprintf("%s: %s", op, describe(resp))}
			}
		}
	}
	return c.http.Classify(op, resp, write)
}

// scrub removes the token (as is and path-escaped) from an error's text,
// keeping its class (httpcall.Redact). Nothing here puts it there
// (httpcall drops URLs from transport errors, describe reads only
// Discord's body); this is the last guard, since a webhook token travels
// in the URL path and an error ends up in logs and the ledger.
func (c *Client) scrub(err error) error {
	return httpcall.Redact(err, c.token, url.PathEscape(c.token))
}
