package x

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

const (
	// DefaultBaseURL is X's public API.
	DefaultBaseURL = "https://api.x.com"
	// maxMedia is the largest number of attachments on one post
	// (CreatePostsMedia.media_ids maxItems in X's OpenAPI document).
	maxMedia = 4
	// pageSize is the largest page GET /2/users/:id/tweets serves.
	pageSize = 100
	// defaultLookupPages bounds a Lookup to 500 posts: each is billed.
	defaultLookupPages = 5
	// maxLookupPages is 3,200 posts, the most the timeline serves.
	maxLookupPages = 32
)

// Config configures a Client for one account.
type Config struct {
	// BaseURL is the API root; empty means DefaultBaseURL.
	BaseURL string
	// UserID is the account's numeric X user id. When empty it is read once
	// through GET /2/users/me and cached.
	UserID string
	// Credential holds the OAuth 2.0 user access token and, with the
	// offline.access scope, the refresh token.
	Credential platform.Credential
	// ClientID and ClientSecret are the deployment's default OAuth 2.0 app,
	// which Refresh uses when the credential names none. ClientSecret is
	// empty for a public client.
	ClientID, ClientSecret string
	// TokenURL is the OAuth 2.0 token endpoint; empty means BaseURL +
	// "/2/oauth2/token" (https://api.x.com/2/oauth2/token by default).
	TokenURL string
	// HTTPClient is used for every call; nil means one with no Timeout
	// (deadlines come from the context).
	HTTPClient *http.Client
	// LookupPages is how many pages of 100 posts a Lookup reads at most
	// before it answers Inconclusive; 0 means 5, at most 32 (3,200 posts,
	// all the timeline serves). Every post read is billed by X.
	LookupPages int
}

// Client is one X account. It is safe for concurrent use.
type Client struct {
	base        string
	tokenURL    string
	app         platform.Credential // ClientID and ClientSecret of the default app
	http        *httpcall.Client
	lookupPages int

	// pollWait turns X's check_after_secs into a pause; tests shorten it.
	pollWait func(secs int) time.Duration

	mu     sync.Mutex
	cred   platform.Credential
	userID string
}

var (
	_ platform.Client       = (*Client)(nil)
	_ platform.TextMeasurer = (*Client)(nil)
)

// New validates cfg and returns a Client. It makes no network call.
func New(cfg Config) (*Client, error) {
	base, err := rootURL("BaseURL", cfg.BaseURL, DefaultBaseURL)
	if err != nil {
		return nil, err
	}
	tokenURL, err := rootURL("TokenURL", cfg.TokenURL, base+"/2/oauth2/token")
	if err != nil {
		return nil, err
	}
	if cfg.Credential.AccessToken == "" {
		return nil, errors.New("x: config Credential.AccessToken is required")
	}
	if cfg.UserID != "" && !numericID(cfg.UserID) {
		return nil, fmt.Errorf("x: config UserID %q must be a numeric X user id", cfg.UserID)
	}
	if cfg.LookupPages < 0 || cfg.LookupPages > maxLookupPages {
		return nil, fmt.Errorf("x: config LookupPages is %d, must be between 0 and %d", cfg.LookupPages, maxLookupPages)
	}
	c := &Client{
		base:        base,
		tokenURL:    tokenURL,
		app:         platform.Credential{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret},
		http:        httpcall.New(cfg.HTTPClient),
		lookupPages: cfg.LookupPages,
		pollWait:    func(secs int) time.Duration { return time.Duration(max(secs, 1)) * time.Second },
		cred:        cfg.Credential,
		userID:      cfg.UserID,
	}
	if c.lookupPages == 0 {
		c.lookupPages = defaultLookupPages
	}
	c.http.Describe = func(resp *httpcall.Response) string { return c.redact(describe(resp)) }
	c.http.RetryAfter = rateLimitReset
	return c, nil
}

// rootURL validates an absolute http(s) URL without query, fragment or
// user info, and trims a trailing slash; empty means def.
func rootURL(field, raw, def string) (string, error) {
	s, err := httpcall.RootURL("config "+field, raw, def)
	if err != nil {
		return "", fmt.Errorf("x: %w", err)
	}
	return s, nil
}

// numericID reports whether s looks like an X id (^[0-9]{1,19}$): ids go
// into URL paths, so nothing else is accepted.
func numericID(s string) bool {
	if s == "" || len(s) > 19 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Capabilities declares X's guarantees: no idempotency key, a readable
// timeline searched by fingerprint, 280 weighted characters (see
// MeasureText), four attachments, and the per-user posting budget.
func (c *Client) Capabilities() platform.Capabilities {
	return platform.Capabilities{
		Platform:          "x",
		NativeIdempotency: false,
		LookupByHandle:    false,
		ReadableHistory:   true,
		Replies:           true,
		MaxTextGraphemes:  MaxWeightedLength,
		MaxMedia:          maxMedia,
		// Images up to 5 MB (docs.x.com media best practices).
		MaxMediaBytes: 5 << 20,
		MaxAltText:    maxAltText,
		Handle:        "none: X has no idempotency key; the handle stays in the ledger, duplicates are caught by read-back and X's duplicate-content 403",
		ReadBack: fmt.Sprintf("GET /2/users/:id/tweets since the pre-send newest post (since_id) or start_time, up to %d posts, matched by fingerprint with t.co links expanded",
			c.lookupPages*pageSize),
		// POST /2/tweets allows 100 per 15 minutes per user
		// (https://docs.x.com/x-api/fundamentals/rate-limits); the app as a
		// whole has 10,000 per 24 hours, a budget shared by every account
		// of the deployment and so not one of this account's.
		PostingLimits:   []platform.Rate{{Count: 100, Per: 15 * time.Minute}},
		DuplicateWindow: DuplicateWindow,
	}
}

// DuplicateWindow is how far apart oncepost keeps two posts of the same
// text on one X account (Capabilities.DuplicateWindow). X refuses "a
// Tweet with duplicate content" (403) for a window it does not document:
// "historically up to 12 hours, though the exact timeframe fluctuates"
// (Ayrshare's write-up of the 403), and near-duplicates too. 36 h is
// three times the one figure reported, and longer than any day (25 h on a
// fall-back night): one text repeated daily is always refused, while two
// texts taking turns daily (47 h apart at the least, across a
// spring-forward night) are not.
const DuplicateWindow = 36 * time.Hour

// Credential returns the credential the client currently uses, which
// changes after a successful Refresh.
func (c *Client) Credential() platform.Credential {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cred
}

// auth is the Authorization header of every API call.
func (c *Client) auth() http.Header {
	return httpcall.Bearer(c.Credential().AccessToken)
}

func (c *Client) jsonHeader() http.Header {
	h := c.auth()
	h.Set("Content-Type", "application/json")
	return h
}

// redact removes the client's secrets from a message built from the
// platform's answer, should the platform ever echo one.
func (c *Client) redact(s string) string {
	cred := c.Credential()
	return httpcall.RedactString(s, cred.AccessToken, cred.RefreshToken, cred.ClientSecret, c.app.ClientSecret)
}

// problem is X's error body (RFC 7807 problem details, with an errors
// array for partial errors, https://docs.x.com/x-api/fundamentals/response-codes-and-errors)
// and, on the token endpoint, the OAuth error (RFC 6749 §5.2).
type problem struct {
	Title            string         `json:"title"`
	Detail           string         `json:"detail"`
	Type             string         `json:"type"`
	Errors           []errorProblem `json:"errors"`
	Error            string         `json:"error"`
	ErrorDescription string         `json:"error_description"`
}

type errorProblem struct {
	Title      string `json:"title"`
	Detail     string `json:"detail"`
	Message    string `json:"message"`
	Type       string `json:"type"`
	ResourceID string `json:"resource_id"`
}

// describe is X's own explanation in an error answer: its detail, else
// the first error's, else its title or OAuth error; "" when the body is
// not X's JSON (a proxy's page is never echoed).
func describe(resp *httpcall.Response) string {
	var p problem
	if json.Unmarshal(resp.Body, &p) != nil {
		return ""
	}
	msg := p.Detail
	for _, e := range p.Errors {
		if msg != "" {
			break
		}
		msg = firstNonEmpty(e.Detail, e.Message, e.Title)
	}
	if msg == "" {
		msg = p.Title
	}
	if msg == "" && p.Error != "" {
		msg = p.Error
		if p.ErrorDescription != "" {
			msg += ": " + p.ErrorDescription
		}
	}
	return truncate(msg, 300)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// rateLimitReset is httpcall's RetryAfter hook: on a 429, X's
// x-rate-limit-reset header is the Unix time, in seconds, at which the
// window resets (https://docs.x.com/x-api/fundamentals/rate-limits). X
// sends the header on every answer; on a 5xx it is the ordinary window's
// reset, not a request to wait, so only a 429 uses it.
func rateLimitReset(resp *httpcall.Response, now time.Time) time.Duration {
	if resp.Status != http.StatusTooManyRequests {
		return 0
	}
	secs, err := strconv.ParseInt(strings.TrimSpace(resp.Header.Get("x-rate-limit-reset")), 10, 64)
	if err != nil {
		return 0
	}
	return time.Unix(secs, 0).Sub(now)
}

// Rejected reasons this package sets besides "http_<status>" and the
// platform's own.
const (
	// ReasonTextTooLong: the text weighs more than MaxWeightedLength.
	ReasonTextTooLong = "text_too_long"
	// ReasonNotDeleted: X answered a delete with "deleted": false.
	ReasonNotDeleted = "not_deleted"
	// ReasonProcessingFailed: X could not process an uploaded file.
	ReasonProcessingFailed = "processing_failed"
	// ReasonMediaUnsupported: the file's type cannot go on a post.
	ReasonMediaUnsupported = "media_unsupported"
	// ReasonInvalidRequest: the call was refused before anything was sent.
	ReasonInvalidRequest = "invalid_request"
)

// createRequest is the body of POST /2/tweets
// (https://docs.x.com/x-api/posts/create-post).
type createRequest struct {
	Text  string       `json:"text"`
	Media *createMedia `json:"media,omitempty"`
	Reply *createReply `json:"reply,omitempty"`
}

// createReply makes the post a reply (a thread's next part):
// reply.in_reply_to_tweet_id, the post it answers.
type createReply struct {
	InReplyToTweetID string `json:"in_reply_to_tweet_id"`
}

type createMedia struct {
	MediaIDs []string `json:"media_ids"`
}

// Publish creates a post, sent exactly once. X takes no idempotency key,
// so req.Handle is not sent: a lost answer is resolved by Lookup. Text
// heavier than MaxWeightedLength (see MeasureText), more than four
// attachments, or neither text nor media are refused before anything is
// sent.
//
// X's answers are classified by httpcall, with two 403s told apart: the
// duplicate-content refusal ("You are not allowed to create a Tweet with
// duplicate content.") is Rejected with platform.ReasonDuplicate, a
// signal that the post may already be there, and X's own "text is too
// long" is Rejected with ReasonTextTooLong. A 2xx whose body cannot be
// read is Ambiguous: the post probably exists.
func (c *Client) Publish(ctx context.Context, req platform.PublishRequest) (platform.Receipt, error) {
	const op = "post tweet"
	if n := WeightedLength(req.Text); n > MaxWeightedLength {
		return platform.Receipt{}, &platform.Rejected{Reason: ReasonTextTooLong, Message: fmt.Sprintf(
			"%s: the text weighs %d characters as X counts them, X allows %d", op, n, MaxWeightedLength)}
	}
	if len(req.MediaIDs) > maxMedia {
		return platform.Receipt{}, &platform.Rejected{Reason: "too_many_media", Message: fmt.Sprintf(
			"%s: %d attachments, X allows %d", op, len(req.MediaIDs), maxMedia)}
	}
	if strings.TrimSpace(req.Text) == "" && len(req.MediaIDs) == 0 {
		return platform.Receipt{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: op + ": a post needs text or media"}
	}
	for _, id := range req.MediaIDs {
		if !numericID(id) {
			return platform.Receipt{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: media id %q is not an X media id", op, id)}
		}
	}
	body := createRequest{Text: req.Text}
	if len(req.MediaIDs) > 0 {
		body.Media = &createMedia{MediaIDs: req.MediaIDs}
	}
	if req.Reply != nil {
		if !numericID(req.Reply.Parent) {
			return platform.Receipt{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: reply to %q, which is not an X post id", op, req.Reply.Parent)}
		}
		body.Reply = &createReply{InReplyToTweetID: req.Reply.Parent}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return platform.Receipt{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: encode body: %v", op, err)}
	}
	resp, err := c.http.Write(ctx, op, httpcall.Request{
		Method: http.MethodPost,
		URL:    c.base + "/2/tweets",
		Header: c.jsonHeader(),
		Body:   b,
	})
	if err != nil {
		return platform.Receipt{}, err
	}
	if !resp.OK() {
		if resp.Status == http.StatusForbidden {
			msg := c.redact(describe(resp))
			switch lower := strings.ToLower(msg); {
			case strings.Contains(lower, "duplicate content"):
				return platform.Receipt{}, &platform.Rejected{Status: resp.Status, Reason: platform.ReasonDuplicate, Message: msg}
			case strings.Contains(lower, "too long"):
				return platform.Receipt{}, &platform.Rejected{Status: resp.Status, Reason: ReasonTextTooLong, Message: msg}
			}
		}
		return platform.Receipt{}, c.http.Classify(op, resp, true)
	}
	var created struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if resp.BodyErr != nil {
		return platform.Receipt{}, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: the post probably exists: read answer: %w", op, resp.BodyErr)}
	}
	if err := json.Unmarshal(resp.Body, &created); err != nil || !numericID(created.Data.ID) {
		return platform.Receipt{}, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: the post probably exists: the answer carries no post id", op)}
	}
	return platform.Receipt{RemoteID: created.Data.ID, URL: postURL(created.Data.ID)}, nil
}

// postURL is a post's public address; /i/web/status/ needs no user name.
func postURL(id string) string { return "https://x.com/i/web/status/" + id }

// Delete removes a post (DELETE /2/tweets/:id,
// https://docs.x.com/x-api/posts/delete-post), sent exactly once:
//
//   - 200 {"data": {"deleted": true}}: nil;
//   - 404: nil, the post is already gone (X answers 404 for a post that
//     does not exist, https://docs.x.com/x-api/fundamentals/response-codes-and-errors),
//     so deleting twice is not an error; the caller's read-back with
//     Exists confirms;
//   - 200 with "deleted": false: Rejected with ReasonNotDeleted;
//   - 2xx without a readable answer: Ambiguous;
//   - anything else as httpcall classifies a write (5xx or a lost answer
//     Ambiguous, 429 NotPerformed, 401 Unauthorized, 403 Rejected).
func (c *Client) Delete(ctx context.Context, remoteID string) error {
	const op = "delete tweet"
	if !numericID(remoteID) {
		return &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: %q is not an X post id", op, remoteID)}
	}
	resp, err := c.http.Write(ctx, op, httpcall.Request{
		Method: http.MethodDelete,
		URL:    c.base + "/2/tweets/" + remoteID,
		Header: c.auth(),
	})
	if err != nil {
		return err
	}
	if resp.Status == http.StatusNotFound {
		return nil
	}
	if !resp.OK() {
		return c.http.Classify(op, resp, true)
	}
	var answer struct {
		Data *struct {
			Deleted *bool `json:"deleted"`
		} `json:"data"`
	}
	if resp.BodyErr != nil || json.Unmarshal(resp.Body, &answer) != nil || answer.Data == nil || answer.Data.Deleted == nil {
		return &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s %s: the answer does not say whether it was deleted", op, remoteID)}
	}
	if !*answer.Data.Deleted {
		return &platform.Rejected{Status: resp.Status, Reason: ReasonNotDeleted, Message: fmt.Sprintf("%s %s: X answered deleted: false", op, remoteID)}
	}
	return nil
}

// Exists reports whether the post is on X, reading it with GET
// /2/tweets/:id (https://docs.x.com/x-api/posts/get-post-by-id). "No"
// is said only when X says so: a 404 with X's problem body, or a 200
// whose body has no post and a resource-not-found error for it ("Not
// Found Error", https://docs.x.com/x-api/fundamentals/response-codes-and-errors).
// A 404 without X's body (a proxy's page) and any other answer are
// errors; reads that keep failing are NotPerformed.
func (c *Client) Exists(ctx context.Context, remoteID string) (bool, error) {
	const op = "read tweet"
	if !numericID(remoteID) {
		return false, &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: %q is not an X post id", op, remoteID)}
	}
	resp, err := c.http.Read(ctx, op, httpcall.Request{
		Method: http.MethodGet,
		URL:    c.base + "/2/tweets/" + remoteID,
		Header: c.auth(),
	})
	if err != nil {
		return false, err
	}
	switch resp.Status {
	case http.StatusOK:
		var answer struct {
			Data *struct {
				ID string `json:"id"`
			} `json:"data"`
			Errors []errorProblem `json:"errors"`
		}
		if err := json.Unmarshal(resp.Body, &answer); err != nil {
			return false, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s %s: decode answer: %v", op, remoteID, err)}
		}
		if answer.Data != nil && answer.Data.ID == remoteID {
			return true, nil
		}
		if answer.Data == nil && notFound(answer.Errors, remoteID) {
			return false, nil
		}
		return false, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s %s: the answer neither has the post nor says it is gone", op, remoteID)}
	case http.StatusNotFound:
		var p problem
		if json.Unmarshal(resp.Body, &p) != nil || p.Title == "" && p.Type == "" && p.Detail == "" && len(p.Errors) == 0 {
			return false, &platform.Rejected{Status: resp.Status, Reason: "http_404", Message: fmt.Sprintf(
				"%s %s: 404 without X's error body (a proxy's page? check the base URL); cannot tell whether the post exists", op, remoteID)}
		}
		return false, nil
	}
	return false, c.http.Classify(op, resp, false)
}

// notFound reports whether errs says the post id does not exist.
func notFound(errs []errorProblem, id string) bool {
	for _, e := range errs {
		if e.ResourceID != "" && e.ResourceID != id {
			continue
		}
		if strings.HasSuffix(e.Type, "/problems/resource-not-found") || e.Title == "Not Found Error" {
			return true
		}
	}
	return false
}
