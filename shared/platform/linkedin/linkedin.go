package linkedin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"oncepost/shared/graphemes"
	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

const (
	// DefaultBaseURL is LinkedIn's REST API.
	DefaultBaseURL = "https://api.linkedin.com"
	// DefaultAPIVersion is the LinkedIn-Version header sent with every
	// call, in LinkedIn's YYYYMM form: Marketing May 2026, whose
	// documentation is the li-lms-2026-05 view of the posts-api page.
	// LinkedIn supports a version for about a year ("The Marketing Version
	// 202505 … has been sunset", on that view) and then answers 426
	// NONEXISTENT_VERSION ("Requested version 20250401 is not active",
	// n8n-io/n8n#28600): move it forward with the API's release notes, or
	// override it per deployment with Config.APIVersion.
	DefaultAPIVersion = "202605"
	// DefaultTokenURL is LinkedIn's OAuth token endpoint
	// (https://learn.microsoft.com/en-us/linkedin/shared/authentication/programmatic-refresh-tokens).
	DefaultTokenURL = "https://www.linkedin.com/oauth/v2/accessToken"

	// maxTextGraphemes is the commentary limit, 3000 characters.
	maxTextGraphemes = 3000
	// restliProtocol is the X-Restli-Protocol-Version every call of the
	// versioned API requires.
	restliProtocol = "2.0.0"
)

// Rejected reasons this package sets besides httpcall's "http_<status>".
const (
	// ReasonAPIVersionSunset: LinkedIn answered 426 NONEXISTENT_VERSION,
	// the configured LinkedIn-Version is no longer served.
	ReasonAPIVersionSunset = "api_version_sunset"
	// ReasonReadForbidden: LinkedIn refused to read the author's posts
	// (403): the token lacks r_member_social (members) or
	// r_organization_social (organizations).
	ReasonReadForbidden = "read_forbidden"
	// ReasonMediaUnsupported: the attachment is not a JPG, GIF or PNG
	// image, the formats the Images API takes; nothing was sent.
	ReasonMediaUnsupported = "media_unsupported"
	// ReasonMediaTooLarge: the image has more pixels than LinkedIn takes
	// (fewer than 36,152,320); nothing was sent.
	ReasonMediaTooLarge = "media_too_large"
	// ReasonProcessingFailed: LinkedIn accepted the image's bytes and then
	// reported it PROCESSING_FAILED.
	ReasonProcessingFailed = "processing_failed"
	// ReasonInvalidUploadURL: initializeUpload answered an upload URL the
	// bearer token may not be sent to (not https on a linkedin.com host);
	// the bytes were not sent.
	ReasonInvalidUploadURL = "invalid_upload_url"
	// ReasonTooManyMedia: the post has more than 20 images; nothing was
	// sent.
	ReasonTooManyMedia = "too_many_media"
	// ReasonInvalidMedia: a media id is not one UploadMedia returned;
	// nothing was sent.
	ReasonInvalidMedia = "invalid_media"
	// ReasonTextTooLong: the text is longer than LinkedIn's 3000
	// characters; nothing was sent.
	ReasonTextTooLong = "text_too_long"
	// ReasonInvalidRequest: the call was refused before sending (not a
	// post URN, a body that cannot be encoded, an OAuth config missing a
	// field).
	ReasonInvalidRequest = "invalid_request"
	// ReasonForbidden: LinkedIn answered 403 to a delete (the token lacks
	// w_member_social, or the post is not the author's).
	ReasonForbidden = "forbidden"
)

// Config configures a Client for one author.
type Config struct {
	// BaseURL is the API's root; empty means DefaultBaseURL.
	BaseURL string
	// Author is the URN the client posts as: urn:li:person:<id> (the
	// member, see Me) or urn:li:organization:<id> (a page the member
	// administers).
	Author string
	// Credential holds the bearer token and, for approved partners, the
	// refresh token.
	Credential platform.Credential
	// ClientID and ClientSecret are the deployment's default OAuth app,
	// which Refresh uses when the credential names no app of its own.
	ClientID, ClientSecret string
	// TokenURL is the OAuth token endpoint; empty means DefaultTokenURL.
	TokenURL string
	// APIVersion is the LinkedIn-Version header, YYYYMM; empty means
	// DefaultAPIVersion.
	APIVersion string
	// CanReadPosts says whether the token may read the author's posts,
	// which Lookup needs: reading a member's posts takes the restricted
	// r_member_social permission, an organization's r_organization_social.
	// Nil means false for a member and true for an organization.
	CanReadPosts *bool
	// HTTPClient is used for every call. The default has no Timeout:
	// deadlines come from the context.
	HTTPClient *http.Client
}

// Client is one LinkedIn author. It is safe for concurrent use.
type Client struct {
	base     string
	author   string
	version  string
	tokenURL string
	clientID string
	secret   string
	canRead  bool
	http     *httpcall.Client

	// now is replaced by tests; the httpcall client reads it too.
	now func() time.Time
	// pollFirst, pollMax and processingWait pace UploadMedia's wait for
	// an image to become available (defaultPollFirst…); replaced by tests.
	pollFirst, pollMax, processingWait time.Duration

	mu   sync.Mutex
	cred platform.Credential
}

var _ platform.Client = (*Client)(nil)

var (
	versionPattern = regexp.MustCompile(`^20[0-9]{2}(0[1-9]|1[0-2])$`)
	authorPattern  = regexp.MustCompile(`^urn:li:(person|organization):[^\s:]+$`)
)

// New validates cfg and returns a Client. It makes no network call.
func New(cfg Config) (*Client, error) {
	base, err := absoluteURL("BaseURL", cfg.BaseURL, DefaultBaseURL)
	if err != nil {
		return nil, err
	}
	tokenURL, err := absoluteURL("TokenURL", cfg.TokenURL, DefaultTokenURL)
	if err != nil {
		return nil, err
	}
	author := strings.TrimSpace(cfg.Author)
	if author == "" {
		return nil, errors.New("linkedin: config Author is required (urn:li:person:… or urn:li:organization:…)")
	}
	if !authorPattern.MatchString(author) {
		return nil, fmt.Errorf("linkedin: config Author %q must be urn:li:person:<id> or urn:li:organization:<id>", author)
	}
	if cfg.Credential.AccessToken == "" {
		return nil, errors.New("linkedin: config Credential.AccessToken is required")
	}
	version := cfg.APIVersion
	if version == "" {
		version = DefaultAPIVersion
	}
	if !versionPattern.MatchString(version) {
		return nil, fmt.Errorf("linkedin: config APIVersion %q must be a LinkedIn version in YYYYMM form, e.g. %s", version, DefaultAPIVersion)
	}
	canRead := strings.HasPrefix(author, "urn:li:organization:")
	if cfg.CanReadPosts != nil {
		canRead = *cfg.CanReadPosts
	}
	c := &Client{
		base:     base,
		author:   author,
		version:  version,
		tokenURL: tokenURL,
		clientID: cfg.ClientID,
		secret:   cfg.ClientSecret,
		canRead:  canRead,
		http:     httpcall.New(cfg.HTTPClient),
		now:      time.Now,
		cred:     cfg.Credential,

		pollFirst:      defaultPollFirst,
		pollMax:        defaultPollMax,
		processingWait: defaultProcessingWait,
	}
	c.http.Now = func() time.Time { return c.now() }
	c.http.Describe = func(r *httpcall.Response) string { return c.redactSecrets(describe(r)) }
	c.http.RetryAfter = untilMidnightUTC
	return c, nil
}

// absoluteURL validates an http or https URL without query, fragment or
// user info, defaulting to def when raw is empty.
func absoluteURL(field, raw, def string) (string, error) {
	s, err := httpcall.RootURL("config "+field, raw, def)
	if err != nil {
		return "", fmt.Errorf("linkedin: %w", err)
	}
	return s, nil
}

// Capabilities declares that LinkedIn has no idempotency key, that the
// author's posts can be read back only with a read permission
// (Config.CanReadPosts), and the Images API's limits: up to 20 images a
// post, fewer than 36,152,320 pixels each, no documented byte limit.
// LinkedIn publishes no posting limits.
func (c *Client) Capabilities() platform.Capabilities {
	readBack := fmt.Sprintf("not possible: reading the author's posts needs %s (Config.CanReadPosts is false), "+
		"so an unknown outcome goes to an operator", c.readPermission())
	if c.canRead {
		readBack = fmt.Sprintf("GET /rest/posts?q=author, newest modified first, matched by the fingerprint of the "+
			"unescaped commentary among posts created since the After post (or NotBefore), at most %d posts", lookupDepth)
	}
	return platform.Capabilities{
		Platform:          "linkedin",
		NativeIdempotency: false,
		LookupByHandle:    false,
		ReadableHistory:   c.canRead,
		MaxTextGraphemes:  maxTextGraphemes,
		MaxMedia:          maxImages,
		MaxMediaBytes:     maxImageBytes, // none documented, see maxImageBytes
		MaxMediaPixels:    maxImagePixels,
		Handle:            "none: the Posts API has no idempotency key; the handle stays in the ledger",
		ReadBack:          readBack,
		// LinkedIn limits calls per application and per member per day
		// (reset at midnight UTC) but does not publish the numbers: "Standard
		// rate limits are not published in documentation"
		// (https://learn.microsoft.com/en-us/linkedin/shared/api-guide/concepts/rate-limits).
		// A 429 waits until the reset (see untilMidnightUTC).
		PostingLimits: nil,
		// LinkedIn's duplicate detector refuses a post that repeats a
		// recent one (422 DUPLICATE_POST); its memory is not documented,
		// and is reported to last "24–48h" (ComposioHQ/composio#2710).
		DuplicateWindow: DuplicateWindow,
	}
}

// DuplicateWindow is how far apart oncepost keeps two posts of the same
// text on one LinkedIn account (Capabilities.DuplicateWindow): the
// longest memory of the duplicate detector reported.
const DuplicateWindow = 48 * time.Hour

// Credential returns the credential the client currently uses, which
// changes after a successful Refresh.
func (c *Client) Credential() platform.Credential {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cred
}

// redactSecrets removes the client's tokens and secret from a text the
// server sent, should it ever echo them.
func (c *Client) redactSecrets(s string) string {
	c.mu.Lock()
	cred := c.cred
	c.mu.Unlock()
	return httpcall.RedactString(s, cred.AccessToken, cred.RefreshToken, cred.ClientSecret, c.secret)
}

// header is the set every API call carries: the bearer token, the API
// version and the Rest.li protocol version.
func (c *Client) header() http.Header {
	c.mu.Lock()
	token := c.cred.AccessToken
	c.mu.Unlock()
	h := httpcall.Bearer(token)
	h.Set("LinkedIn-Version", c.version)
	h.Set("X-Restli-Protocol-Version", restliProtocol)
	return h
}

// postPath is the address of one post. Rest.li 2.0 wants the whole key
// URL-encoded, ":" included ("urn%3Ali%3Ashare%3A123",
// https://learn.microsoft.com/en-us/linkedin/shared/api-guide/concepts/protocol-version),
// which url.PathEscape leaves alone.
func (c *Client) postPath(urn string) string {
	return c.base + "/rest/posts/" + url.QueryEscape(urn)
}

// postURL is the post's page on linkedin.com.
func postURL(urn string) string {
	return "https://www.linkedin.com/feed/update/" + urn + "/"
}

// apiError is LinkedIn's error body: {"message", "status",
// "serviceErrorCode", "code", "errorDetails"}
// (https://learn.microsoft.com/en-us/linkedin/shared/api-guide/concepts/error-handling).
type apiError struct {
	Message          string `json:"message"`
	Status           int    `json:"status"`
	ServiceErrorCode int    `json:"serviceErrorCode"`
	Code             string `json:"code"`
	ErrorDetails     struct {
		InputErrors []struct {
			Code        string `json:"code"`
			Description string `json:"description"`
		} `json:"inputErrors"`
	} `json:"errorDetails"`
}

func decodeError(r *httpcall.Response) apiError {
	var e apiError
	if json.Unmarshal(r.Body, &e) != nil {
		return apiError{}
	}
	return e
}

// describe is the error body's message, bounded.
func describe(r *httpcall.Response) string {
	msg := strings.TrimSpace(decodeError(r).Message)
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	return msg
}

// untilMidnightUTC is the wait a 429 without Retry-After asks for.
// LinkedIn sends no rate-limit headers; its limits are daily and "reset at
// midnight UTC every day"
// (https://learn.microsoft.com/en-us/linkedin/shared/api-guide/concepts/rate-limits),
// so a refusal for the day's quota repeats until then and trying sooner
// only spends more calls. The other 429, "as part of infrastructure
// protection", is documented as rare. Only 429 waits: a 5xx is not a
// quota.
func untilMidnightUTC(resp *httpcall.Response, now time.Time) time.Duration {
	if resp.Status != http.StatusTooManyRequests {
		return 0
	}
	now = now.UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	return midnight.Sub(now)
}

// classify translates an answer that is not a success: a 426 is the
// version sunset, anything else goes by httpcall's rule.
func (c *Client) classify(op string, resp *httpcall.Response, write bool) error {
	if resp.Status == http.StatusUpgradeRequired {
		e := decodeError(resp)
		detail := c.redactSecrets(strings.TrimSpace(e.Message))
		if detail == "" {
			detail = "upgrade required"
		}
		if e.Code != "" {
			detail = c.redactSecrets(e.Code) + ": " + detail
		}
		return &platform.Rejected{Status: resp.Status, Reason: ReasonAPIVersionSunset, Message: fmt.Sprintf(
			"%s: LinkedIn no longer serves API version %s (%s); update the LinkedIn-Version "+
				"(linkedin.DefaultAPIVersion, or Config.APIVersion / Connector.APIVersion) to an active version and deploy",
			op, c.version, detail)}
	}
	return c.http.Classify(op, resp, write)
}

// createPost is the body of POST /rest/posts: a public post in the main
// feed (posts-api, "Create a Text-Only Post"), with its images as content
// when it has any (posts-api, "Create an Image Post"; MultiImage API).
type createPost struct {
	Author                    string       `json:"author"`
	Commentary                string       `json:"commentary"`
	Visibility                string       `json:"visibility"`
	Distribution              distribution `json:"distribution"`
	Content                   *postContent `json:"content,omitempty"`
	LifecycleState            string       `json:"lifecycleState"`
	IsReshareDisabledByAuthor bool         `json:"isReshareDisabledByAuthor"`
}

type distribution struct {
	FeedDistribution               string   `json:"feedDistribution"`
	TargetEntities                 []string `json:"targetEntities"`
	ThirdPartyDistributionChannels []string `json:"thirdPartyDistributionChannels"`
}

// Publish creates a public post with req.Text as its commentary, escaped
// for the little text format, sent exactly once. req.Handle is not sent:
// LinkedIn has no idempotency key. req.MediaIDs, ids UploadMedia returned,
// become the post's content with their alt texts: content.media for one
// image, content.multiImage for 2 to 20. The answer is 201 with the post's
// URN in x-restli-id; a 2xx without it is Ambiguous (the post probably
// exists). A 422 DUPLICATE_POST is Rejected with platform.ReasonDuplicate
// and the URN LinkedIn named, a reason to look rather than a receipt.
// Text over 3000 characters, more than 20 images and a media id that is
// not UploadMedia's are refused before sending.
func (c *Client) Publish(ctx context.Context, req platform.PublishRequest) (platform.Receipt, error) {
	const op = "create post"
	if n := graphemes.Count(req.Text); n > maxTextGraphemes {
		return platform.Receipt{}, &platform.Rejected{Reason: ReasonTextTooLong, Message: fmt.Sprintf("%s: the text has %d characters, LinkedIn allows %d", op, n, maxTextGraphemes)}
	}
	content, err := contentOf(op, req.MediaIDs)
	if err != nil {
		return platform.Receipt{}, err
	}
	body, err := encodeJSON(createPost{
		Author:     c.author,
		Commentary: escapeLittle(req.Text),
		Visibility: "PUBLIC",
		Distribution: distribution{
			FeedDistribution:               "MAIN_FEED",
			TargetEntities:                 []string{},
			ThirdPartyDistributionChannels: []string{},
		},
		Content:                   content,
		LifecycleState:            "PUBLISHED",
		IsReshareDisabledByAuthor: false,
	})
	if err != nil {
		return platform.Receipt{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: encode body: %v", op, err)}
	}
	h := c.header()
	h.Set("Content-Type", "application/json")
	resp, err := c.http.Write(ctx, op, httpcall.Request{Method: http.MethodPost, URL: c.base + "/rest/posts", Header: h, Body: body})
	if err != nil {
		return platform.Receipt{}, err
	}
	if !resp.OK() {
		if dup := duplicate(op, resp); dup != nil {
			return platform.Receipt{}, dup
		}
		return platform.Receipt{}, c.classify(op, resp, true)
	}
	urn := strings.TrimSpace(resp.Header.Get("X-Restli-Id"))
	if !strings.HasPrefix(urn, "urn:li:") {
		return platform.Receipt{}, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf(
			"%s: LinkedIn answered %d without the post's URN in x-restli-id; the post probably exists", op, resp.Status)}
	}
	var created time.Time
	if t, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
		created = t.UTC()
	}
	return platform.Receipt{RemoteID: urn, URL: postURL(urn), CreatedAt: created}, nil
}

func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

var urnPattern = regexp.MustCompile(`urn:li:[A-Za-z]+:[0-9A-Za-z_-]+`)

// duplicate recognises LinkedIn's duplicate refusal: 422 with an input
// error coded DUPLICATE_POST and the message "… Content is a duplicate of
// urn:li:share:<id>" (Arisamiga/Linkedin-RSS#5).
func duplicate(op string, resp *httpcall.Response) *platform.Rejected {
	if resp.Status != http.StatusUnprocessableEntity {
		return nil
	}
	e := decodeError(resp)
	dup := e.Code == "DUPLICATE_POST"
	for _, ie := range e.ErrorDetails.InputErrors {
		dup = dup || ie.Code == "DUPLICATE_POST"
	}
	if !dup {
		return nil
	}
	msg := fmt.Sprintf("%s: LinkedIn refused the post as a duplicate of a recent post", op)
	if urn := urnPattern.FindString(e.Message); urn != "" {
		msg = fmt.Sprintf("%s: LinkedIn refused the post as a duplicate of %s; look for it before sending again "+
			"(the URN can name a post deleted since)", op, urn)
	}
	return &platform.Rejected{Status: resp.Status, Reason: platform.ReasonDuplicate, Message: msg}
}

// Delete removes a post (DELETE /rest/posts/{urn}), sent exactly once.
// LinkedIn documents deletes as idempotent: a post already deleted is
// answered 204 again, or 404; both are nil. 403 is Rejected with
// ReasonForbidden; 401 Unauthorized; 429 NotPerformed; a 5xx or a lost
// answer Ambiguous (the post may be gone).
func (c *Client) Delete(ctx context.Context, remoteID string) error {
	const op = "delete post"
	if !strings.HasPrefix(remoteID, "urn:li:") {
		return &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: %q is not a post URN", op, remoteID)}
	}
	resp, err := c.http.Write(ctx, op, httpcall.Request{Method: http.MethodDelete, URL: c.postPath(remoteID), Header: c.header()})
	if err != nil {
		return err
	}
	switch {
	case resp.OK(), resp.Status == http.StatusNotFound, resp.Status == http.StatusGone:
		return nil
	case resp.Status == http.StatusForbidden:
		return &platform.Rejected{Status: resp.Status, Reason: ReasonForbidden, Message: fmt.Sprintf("%s: %s", op, c.orStatus(resp))}
	}
	return c.classify(op, resp, true)
}

// Exists reads a post (GET /rest/posts/{urn}): 200 is true, 404 (or 410)
// false. A 403 is Rejected with ReasonReadForbidden: without the read
// permission LinkedIn cannot say, and an operator must look.
func (c *Client) Exists(ctx context.Context, remoteID string) (bool, error) {
	const op = "read post"
	if !strings.HasPrefix(remoteID, "urn:li:") {
		return false, &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: %q is not a post URN", op, remoteID)}
	}
	resp, err := c.http.Read(ctx, op, httpcall.Request{Method: http.MethodGet, URL: c.postPath(remoteID), Header: c.header()})
	if err != nil {
		return false, err
	}
	switch resp.Status {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound, http.StatusGone:
		return false, nil
	case http.StatusForbidden:
		return false, c.readForbidden(op, resp)
	}
	return false, c.classify(op, resp, false)
}

// readForbidden is the Rejected a 403 to a read becomes.
func (c *Client) readForbidden(op string, resp *httpcall.Response) error {
	return &platform.Rejected{Status: http.StatusForbidden, Reason: ReasonReadForbidden, Message: fmt.Sprintf(
		"%s: LinkedIn refused to read %s's posts (%s); the token needs %s", op, c.author, c.orStatus(resp), c.readPermission())}
}

// readPermission names the permission reading the author's posts takes
// (posts-api, "Permissions").
func (c *Client) readPermission() string {
	if strings.HasPrefix(c.author, "urn:li:organization:") {
		return "r_organization_social (and a page role on the organization)"
	}
	return "the restricted r_member_social permission (LinkedIn grants it on approval)"
}

func (c *Client) orStatus(resp *httpcall.Response) string {
	if m := c.redactSecrets(describe(resp)); m != "" {
		return m
	}
	return strings.ToLower(http.StatusText(resp.Status))
}
