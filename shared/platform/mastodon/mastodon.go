// Package mastodon is the platform.Client for one Mastodon account, talking to
// the Mastodon REST API (or any server that speaks it, such as the sandbox).
//
// Writes (create status, upload media, delete status) are sent exactly once
// per call through package httpcall: neither it nor the Go HTTP transport
// under it re-sends them. Their outcome is translated into the failure
// classes of package platform by HTTP status (every 5xx on a write is
// Ambiguous, see classify) and, for transport errors, by whether the
// request had been completely written when the error happened. The OAuth
// refresh grant is classified the same way (see Refresh). Reads (account
// statuses, single status, status source, media polling) are retried a few
// times on transient failures.
//
// Connecting an account takes, in order:
// InstanceLimits (the server's limits, no credential needed), RegisterApp,
// AuthorizeURL and ExchangeCode (Mastodon's OAuth authorization-code
// flow), then Client.VerifyCredentials (whose account the token is).
package mastodon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"golang.org/x/oauth2"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

const (
	defaultMaxCharacters     = 500
	defaultMaxMedia          = 4
	defaultMediaPollInterval = 500 * time.Millisecond
	defaultReadBackoff       = 100 * time.Millisecond
)

// Config configures a Client for one account.
type Config struct {
	// BaseURL is the server's root, e.g. https://mastodon.social.
	BaseURL string
	// AccountID is the account's remote id. When empty it is resolved once
	// through GET /api/v1/accounts/verify_credentials and cached.
	AccountID string
	// Credential holds the bearer token and, when the server issued one, the
	// refresh token.
	Credential platform.Credential
	// ClientID and ClientSecret identify the deployment's default OAuth
	// application, which Refresh uses when the credential names no app of
	// its own (platform.Credential.ClientID). The token URL is
	// BaseURL + "/oauth/token".
	ClientID     string
	ClientSecret string
	// HTTPClient is used for every call. The default has no Timeout:
	// deadlines come from the context.
	HTTPClient *http.Client
	// MaxCharacters is the server's text limit (default 500).
	MaxCharacters int
	// MaxMedia is the server's attachment limit per status (default 4).
	MaxMedia int
	// MediaPollInterval is the pause between polls of an attachment that is
	// still processing (default 500ms).
	MediaPollInterval time.Duration
	// Unpaced drops the posting limits from Capabilities: for a server
	// that is not Mastodon's software and does not limit posting (the
	// sandbox, whose drills publish thousands of posts on one account).
	Unpaced bool
}

// Client is one Mastodon account. It is safe for concurrent use.
type Client struct {
	baseURL      string
	httpClient   *http.Client // as configured; see api
	oauth        oauth2.Config
	maxChars     int
	maxMedia     int
	pollInterval time.Duration
	unpaced      bool

	// now and readBackoff are replaced by tests, before the first call:
	// they become the httpcall client's Now and ReadBackoff (see api).
	now         func() time.Time
	readBackoff time.Duration

	httpOnce sync.Once
	http     *httpcall.Client

	mu        sync.Mutex
	cred      platform.Credential
	accountID string
	// app is the name of the application the token belongs to, once read
	// (ourApp).
	app string
}

var _ platform.Client = (*Client)(nil)

// New validates cfg and returns a Client. It makes no network call.
func New(cfg Config) (*Client, error) {
	return build(cfg, true)
}

// baseURL validates and normalises a server's root URL.
func baseURL(raw string) (string, error) {
	base, err := httpcall.RootURL("BaseURL", raw, "")
	if err != nil {
		return "", fmt.Errorf("mastodon: %w", err)
	}
	return base, nil
}

// anonymous returns a client without a credential, for the public
// endpoints used before an account is connected (instance, apps, token).
// Its calls send no Authorization header.
func anonymous(hc *http.Client, rawBase string) (*Client, error) {
	return build(Config{BaseURL: rawBase, HTTPClient: hc}, false)
}

// build validates cfg and returns a Client; needToken requires an access
// token (every client but the anonymous one).
func build(cfg Config, needToken bool) (*Client, error) {
	base, err := baseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	if needToken && cfg.Credential.AccessToken == "" {
		return nil, errors.New("mastodon: config Credential.AccessToken is required")
	}
	if cfg.MaxCharacters < 0 {
		return nil, fmt.Errorf("mastodon: config MaxCharacters is %d, must not be negative", cfg.MaxCharacters)
	}
	if cfg.MaxMedia < 0 {
		return nil, fmt.Errorf("mastodon: config MaxMedia is %d, must not be negative", cfg.MaxMedia)
	}
	if cfg.MediaPollInterval < 0 {
		return nil, fmt.Errorf("mastodon: config MediaPollInterval is %s, must not be negative", cfg.MediaPollInterval)
	}

	c := &Client{
		baseURL:      base,
		httpClient:   cfg.HTTPClient,
		maxChars:     cfg.MaxCharacters,
		maxMedia:     cfg.MaxMedia,
		pollInterval: cfg.MediaPollInterval,
		unpaced:      cfg.Unpaced,
		now:          time.Now,
		readBackoff:  defaultReadBackoff,
		cred:         cfg.Credential,
		accountID:    cfg.AccountID,
		oauth: oauth2.Config{
			ClientID:     cfg.ClientID,
			ClientSecret: cfg.ClientSecret,
			Endpoint: oauth2.Endpoint{
				AuthURL:   base + "/oauth/authorize",
				TokenURL:  base + "/oauth/token",
				AuthStyle: oauth2.AuthStyleInParams,
			},
		},
	}
	if c.maxChars == 0 {
		c.maxChars = defaultMaxCharacters
	}
	if c.maxMedia == 0 {
		c.maxMedia = defaultMaxMedia
	}
	if c.pollInterval == 0 {
		c.pollInterval = defaultMediaPollInterval
	}
	return c, nil
}

// Capabilities declares Mastodon's native idempotency (Idempotency-Key, kept
// one hour per account) and that its history is readable but not by key.
func (c *Client) Capabilities() platform.Capabilities {
	return platform.Capabilities{
		Platform:          "mastodon",
		NativeIdempotency: true,
		LookupByHandle:    false,
		ReadableHistory:   true,
		Replies:           true,
		MaxTextGraphemes:  c.maxChars,
		MaxMedia:          c.maxMedia,
		// Mastodon's defaults (an instance's own come with the account):
		// 16 MB images (MAX_IMAGE_SIZE) of at most 7680x4320 pixels
		// (image_matrix_limit).
		MaxMediaBytes:  16 << 20,
		MaxMediaPixels: 33_177_600,
		// A media description of at most 1,500 characters
		// (MediaAttachment::MAX_DESCRIPTION_LENGTH).
		MaxAltText:    1500,
		Handle:        "Idempotency-Key header (the server keeps it 1 h)",
		ReadBack:      "the account's statuses newer than the one read before the send, matched by fingerprint",
		PostingLimits: c.postingLimits(),
	}
}

// postingLimits are Mastodon's default rate limits, 300 statuses per 3
// hours per account (docs.joinmastodon.org/api/rate-limits), unless the
// client is Unpaced.
func (c *Client) postingLimits() []platform.Rate {
	if c.unpaced {
		return nil
	}
	return []platform.Rate{{Count: 300, Per: 3 * time.Hour}}
}

// Credential returns the credential the client currently uses, which
// changes after a successful Refresh.
func (c *Client) Credential() platform.Credential {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cred
}

func (c *Client) accessToken() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cred.AccessToken
}

// Publish creates a public status, sending req.Handle as Idempotency-Key,
// exactly once. A 422 refusing an attachment as not found or already
// attached is Rejected with platform.ReasonMediaConsumed (see
// mediaConsumed): on a re-send that reuses an upload it is evidence that
// an earlier attempt's post exists.
func (c *Client) Publish(ctx context.Context, req platform.PublishRequest) (platform.Receipt, error) {
	const op = "post status"
	if req.Handle == "" {
		// Without the key Mastodon cannot deduplicate a later re-send, so
		// nothing is sent.
		return platform.Receipt{}, &platform.Rejected{Reason: "missing_handle", Message: op + ": the request has no idempotency handle"}
	}
	in := struct {
		Status     string   `json:"status"`
		MediaIDs   []string `json:"media_ids,omitempty"`
		Visibility string   `json:"visibility"`
		// InReplyToID makes the status a reply, a thread's next part.
		InReplyToID string `json:"in_reply_to_id,omitempty"`
	}{Status: req.Text, MediaIDs: req.MediaIDs, Visibility: "public"}
	if req.Reply != nil {
		if req.Reply.Parent == "" {
			return platform.Receipt{}, &platform.Rejected{Reason: "invalid_request", Message: op + ": a reply without the id of the status it answers"}
		}
		in.InReplyToID = req.Reply.Parent
	}
	body, err := json.Marshal(in)
	if err != nil {
		return platform.Receipt{}, &platform.Rejected{Reason: "invalid_request", Message: fmt.Sprintf("%s: encode body: %v", op, err)}
	}
	r := c.call(http.MethodPost, "/api/v1/statuses", "application/json", body)
	r.Header.Set("Idempotency-Key", req.Handle)
	resp, err := c.api().Write(ctx, op, r)
	if err != nil {
		return platform.Receipt{}, err
	}
	if !resp.OK() {
		if resp.Status == http.StatusUnprocessableEntity && mediaConsumed(errorText(resp), req.MediaIDs) {
			return platform.Receipt{}, &platform.Rejected{Status: resp.Status, Reason: platform.ReasonMediaConsumed, Message: c.describe(resp)}
		}
		return platform.Receipt{}, c.classify(op, resp, true)
	}
	s, err := decodeCreated[status](resp, func(s status) bool { return s.ID != "" })
	if err != nil {
		return platform.Receipt{}, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: the post probably exists: %w", op, err)}
	}
	return platform.Receipt{RemoteID: s.ID, URL: s.link(), CreatedAt: s.createdAt()}, nil
}

// mediaConsumed reports whether a 422 answer to a create refuses the
// attachments because one is not (or no longer) attachable: Mastodon's
// PostStatusService#validate_media! raises
// I18n.t('media_attachments.validations.not_found', ids: …), in English
// "Media %{ids} not found or already attached to another post"
// (mastodon/mastodon config/locales/en.yml and
// app/services/post_status_service.rb at 5b395774c05d, since #31681,
// v4.3.0; the sandbox answers the same). The text follows the account's
// locale (German: "Medieninhalt(e) %{ids} nicht gefunden oder bereits an
// einen anderen Beitrag angehängt"), so besides the English phrase a
// message naming one of the request's media ids counts: Mastodon's other
// 422s about media (too many, not processed, video with images) name none.
// Servers before 4.3.0 silently dropped such media and created the status
// without it.
func mediaConsumed(msg string, mediaIDs []string) bool {
	if len(mediaIDs) == 0 {
		return false
	}
	if strings.Contains(strings.ToLower(msg), "already attached") {
		return true
	}
	words := strings.FieldsFunc(msg, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for _, id := range mediaIDs {
		if id != "" && slices.Contains(words, id) {
			return true
		}
	}
	return false
}

// Delete removes a status (DELETE /api/v1/statuses/:id), sent exactly
// once. It is one step of an idempotent delete (check it exists, delete,
// read back until gone), so its answers are told apart for that caller:
//
//   - 2xx: nil, the server's word that the status is gone;
//   - 404: Rejected with Reason "not_found". Mastodon answers 404 both for
//     a status already gone and for one that is not the account's
//     (Status.where(account: current_account).find), so the caller reads
//     back with Exists rather than take it as "deleted";
//   - 403: Rejected with Reason "forbidden" (the token lacks the write
//     scope, or the account may not act);
//   - 401: Unauthorized; 429 (and 408/425): NotPerformed with the server's
//     RetryAfter;
//   - 5xx, or no answer after the request was written: Ambiguous (see
//     classify and httpcall.Client.Write): the status may be gone.
func (c *Client) Delete(ctx context.Context, remoteID string) error {
	const op = "delete status"
	if remoteID == "" {
		return &platform.Rejected{Reason: "invalid_request", Message: op + ": empty remote id"}
	}
	resp, err := c.api().Write(ctx, op, c.call(http.MethodDelete, "/api/v1/statuses/"+url.PathEscape(remoteID), "", nil))
	if err != nil {
		return err
	}
	if resp.OK() {
		// The body (the deleted status, for redrafting) is not needed; a
		// 2xx is the server's word that the status is gone.
		return nil
	}
	switch resp.Status {
	case http.StatusNotFound:
		return &platform.Rejected{Status: resp.Status, Reason: ReasonNotFound, Message: c.describe(resp)}
	case http.StatusForbidden:
		return &platform.Rejected{Status: resp.Status, Reason: ReasonForbidden, Message: c.describe(resp)}
	}
	return c.classify(op, resp, true)
}

// Rejected reasons this package sets besides the generic "http_<status>".
const (
	// ReasonNotFound: the server answered 404 to a delete; the status is
	// gone or not the account's (read back with Exists to tell).
	ReasonNotFound = "not_found"
	// ReasonForbidden: the server answered 403 to a delete or to
	// VerifyCredentials (missing scope, disabled or unconfirmed login).
	ReasonForbidden = "forbidden"
)

// MediaPendingError is the cause inside the *platform.Ambiguous returned by
// UploadMedia when the server accepted the file but it could not be seen
// ready: the poll failed or the context ended while the server was still
// processing. RemoteID names the uploaded attachment.
type MediaPendingError struct {
	RemoteID string
	Err      error
}

func (e *MediaPendingError) Error() string {
	return fmt.Sprintf("media %s was uploaded but is not known to be ready: %v", e.RemoteID, e.Err)
}

func (e *MediaPendingError) Unwrap() error { return e.Err }

type mediaAttachment struct {
	ID  string  `json:"id"`
	URL *string `json:"url"`
}

// UploadMedia sends the file once with POST /api/v2/media, then, when the
// server answers 202 (processing), polls GET /api/v1/media/:id until it is
// ready (200), failed (422, Rejected) or ctx ends (Ambiguous).
func (c *Client) UploadMedia(ctx context.Context, m platform.MediaUpload) (platform.MediaReceipt, error) {
	const op = "upload media"
	body, contentType, err := mediaForm(m)
	if err != nil {
		return platform.MediaReceipt{}, &platform.Rejected{Reason: "invalid_request", Message: fmt.Sprintf("%s: encode form: %v", op, err)}
	}
	resp, err := c.api().Write(ctx, op, c.call(http.MethodPost, "/api/v2/media", contentType, body))
	if err != nil {
		return platform.MediaReceipt{}, err
	}
	if !resp.OK() {
		return platform.MediaReceipt{}, c.classify(op, resp, true)
	}
	a, err := decodeCreated[mediaAttachment](resp, func(a mediaAttachment) bool { return a.ID != "" })
	if err != nil {
		return platform.MediaReceipt{}, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: the attachment probably exists: %w", op, err)}
	}
	if resp.Status == http.StatusOK {
		return a.receipt(), nil
	}
	return c.waitForMedia(ctx, a.ID)
}

func (a mediaAttachment) receipt() platform.MediaReceipt {
	r := platform.MediaReceipt{RemoteID: a.ID}
	if a.URL != nil {
		r.URL = *a.URL
	}
	return r
}

// waitForMedia polls an accepted attachment. Polls are reads. Once the upload
// is accepted the only definite failure is the server's own 422 (processing
// failed); anything else that keeps us from seeing it ready is Ambiguous.
func (c *Client) waitForMedia(ctx context.Context, id string) (platform.MediaReceipt, error) {
	const op = "poll media"
	pending := func(status int, cause error) error {
		return &platform.Ambiguous{Status: status, Err: &MediaPendingError{RemoteID: id, Err: cause}}
	}
	for {
		if err := httpcall.Sleep(ctx, c.pollInterval); err != nil {
			return platform.MediaReceipt{}, pending(0, fmt.Errorf("%s: still processing: %w", op, err))
		}
		resp, err := c.read(ctx, op, "/api/v1/media/"+url.PathEscape(id), nil)
		if err != nil {
			// err is already a platform class; keep only its text so the
			// chain under Ambiguous holds a single class.
			return platform.MediaReceipt{}, pending(0, causeOf(ctx, err))
		}
		switch resp.Status {
		case http.StatusPartialContent:
			continue
		case http.StatusOK:
			var a mediaAttachment
			if err := json.Unmarshal(resp.Body, &a); err != nil {
				return platform.MediaReceipt{}, pending(resp.Status, fmt.Errorf("%s: decode attachment: %w", op, err))
			}
			if a.ID == "" {
				a.ID = id
			}
			return a.receipt(), nil
		case http.StatusUnprocessableEntity:
			return platform.MediaReceipt{}, &platform.Rejected{Status: resp.Status, Reason: "processing_failed", Message: c.describe(resp)}
		default:
			return platform.MediaReceipt{}, pending(resp.Status, causeOf(ctx, c.classify(op, resp, false)))
		}
	}
}

// causeOf turns a classified error into a plain cause, keeping a context
// error reachable with errors.Is.
func causeOf(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", err.Error(), ctxErr)
	}
	return errors.New(err.Error())
}

// mediaForm builds the multipart body: the file with its own content type,
// and the alt text as "description".
func mediaForm(m platform.MediaUpload) ([]byte, string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	filename := m.Filename
	if filename == "" {
		filename = "upload"
	}
	contentType := m.ContentType
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename="%s"`, quoteEscaper.Replace(filename)))
	h.Set("Content-Type", contentType)
	part, err := w.CreatePart(h)
	if err != nil {
		return nil, "", fmt.Errorf("create file part: %w", err)
	}
	if _, err := part.Write(m.Data); err != nil {
		return nil, "", fmt.Errorf("write file part: %w", err)
	}
	if m.Alt != "" {
		if err := w.WriteField("description", m.Alt); err != nil {
			return nil, "", fmt.Errorf("write description: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", fmt.Errorf("close form: %w", err)
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

var quoteEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", "", "\n", "")

// Refresh exchanges the refresh token (cred's, or the client's own when
// cred has none) for a new access token through the OAuth refresh-token
// grant. A response without a refresh token keeps the old one. On success
// the client uses the new credential from then on.
//
// The grant is made as the OAuth app that issued the tokens: the
// credential's ClientID and ClientSecret when set (cred's, else the
// client's own credential's), otherwise Config.ClientID and ClientSecret,
// the deployment's default app. The new credential keeps the app fields
// it was refreshed with (empty for the default app).
//
// The grant is a write: a server that rotates refresh tokens (Mastodon's
// Doorkeeper with refresh-token rotation, the sandbox) spends the old one
// when it answers. So its outcome is classified like a create's (see
// classifyRefresh), with an httptrace on the context handed to
// golang.org/x/oauth2 telling whether the token request was completely
// written. oauth2 sends it once: the auth style is fixed (no probing
// second request) and a POST without an idempotency key is never replayed
// by net/http.
func (c *Client) Refresh(ctx context.Context, cred platform.Credential) (platform.Credential, error) {
	const op = "refresh token"
	own := c.Credential()
	refresh := cred.RefreshToken
	if refresh == "" {
		refresh = own.RefreshToken
	}
	if refresh == "" {
		return platform.Credential{}, &platform.Rejected{Reason: platform.ReasonReconnectNeeded, Message: op + ": no refresh token; the account must be connected again"}
	}
	conf := c.oauth
	app := cred
	if app.ClientID == "" {
		app = own
	}
	if app.ClientID != "" {
		// The pair is taken together: a secret never goes with another
		// app's id.
		conf.ClientID, conf.ClientSecret = app.ClientID, app.ClientSecret
	} else {
		app = platform.Credential{}
	}
	if conf.ClientID == "" {
		return platform.Credential{}, &platform.Rejected{Reason: platform.ReasonReconnectNeeded, Message: op + ": no OAuth client configured"}
	}
	ctx, written := traceWritten(ctx)
	ctx = context.WithValue(ctx, oauth2.HTTPClient, c.api().TokenClient())
	tok, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: refresh}).Token()
	if err != nil {
		return platform.Credential{}, c.classifyRefresh(op, err, written.Load(), cred)
	}
	next := platform.Credential{
		AccessToken:  tok.AccessToken,
		RefreshToken: tok.RefreshToken,
		ExpiresAt:    tok.Expiry,
		ClientID:     app.ClientID,
		ClientSecret: app.ClientSecret,
	}
	if next.RefreshToken == "" {
		next.RefreshToken = refresh
	}
	c.mu.Lock()
	c.cred = next
	c.mu.Unlock()
	return next, nil
}

// traceWritten returns ctx with an httptrace that records whether a
// request was completely written: what tells "not performed" from
// "ambiguous" when a token grant fails without an answer.
func traceWritten(ctx context.Context) (context.Context, *atomic.Bool) {
	written := new(atomic.Bool)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				written.Store(true)
			}
		},
	}), written
}

// classifyRefresh maps the outcome of a failed refresh grant:
//
//   - no answer and the request not completely written (dial error,
//     refused connection, context ended first): NotPerformed, the refresh
//     token is intact;
//   - no answer after the request was written (timeout, reset, closed
//     connection), an unreadable 2xx, or a 5xx (a proxy may answer it
//     after forwarding; the server may have failed after rotating): the
//     server may have rotated the tokens and spent the refresh token, so
//     Ambiguous; the caller records Credential.RefreshLostAt;
//   - 429, or "temporarily_unavailable" below 500: NotPerformed, with the
//     server's Retry-After;
//   - "server_error" below 500: Ambiguous, as a 5xx;
//   - a redirect: Rejected "reconnect_needed", naming the redirect;
//   - any other refusal, invalid_grant above all: Rejected with reason
//     "reconnect_needed" (the stored grant is dead). When cred records a
//     lost answer, the message says the token was probably spent then.
func (c *Client) classifyRefresh(op string, err error, written bool, cred platform.Credential) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		// The message of a transport error names the token URL, never the
		// form that carried the tokens; oauth2's own errors carry no token.
		if written {
			return &platform.Ambiguous{Err: fmt.Errorf("%s: the server may have rotated the tokens: %w", op, err)}
		}
		return &platform.NotPerformed{Message: fmt.Sprintf("%s: request not sent: %v", op, err)}
	}
	status := 0
	var header http.Header
	if re.Response != nil {
		status = re.Response.StatusCode
		header = re.Response.Header
	}
	msg := re.ErrorCode
	if re.ErrorDescription != "" {
		msg += ": " + re.ErrorDescription
	}
	if msg == "" {
		msg = strings.ToLower(http.StatusText(status))
	}
	msg = fmt.Sprintf("%s: %s", op, msg)
	switch {
	case status >= 500, re.ErrorCode == "server_error":
		return &platform.Ambiguous{Status: status, Err: fmt.Errorf("%s; the server may have rotated the tokens", msg)}
	case status == http.StatusTooManyRequests, re.ErrorCode == "temporarily_unavailable":
		return &platform.NotPerformed{Status: status, RetryAfter: retryAfter(status, header, c.now()), Message: msg}
	case status >= 300 && status < 400:
		// Not followed (TokenClient): the grant went nowhere else, and the
		// stored tokens are intact, but nothing refreshes until the
		// account's server URL is right.
		return &platform.Rejected{Status: status, Reason: platform.ReasonReconnectNeeded, Message: fmt.Sprintf(
			"%s: unexpected redirect (status %d), not followed; check the account's server URL", op, status)}
	default:
		if !cred.RefreshLostAt.IsZero() {
			msg += fmt.Sprintf(" (the answer to a refresh with this token was lost at %s; it was probably spent then)",
				cred.RefreshLostAt.UTC().Format(time.RFC3339))
		}
		return &platform.Rejected{Status: status, Reason: platform.ReasonReconnectNeeded, Message: msg}
	}
}
