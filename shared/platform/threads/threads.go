package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

const (
	// DefaultBaseURL is the Threads Graph API
	// (https://developers.facebook.com/documentation/threads/reference: "The
	// Threads API can be accessed by either graph.threads.com or
	// graph.threads.net").
	DefaultBaseURL = "https://graph.threads.net"
	// apiVersion is the path prefix of every object endpoint.
	apiVersion = "v1.0"
	// PostsPerDay is the publishing quota: "Threads profiles are limited to
	// 250 API-published posts within a 24-hour moving period"
	// (https://developers.facebook.com/docs/threads/overview, Rate Limiting;
	// GET /{user-id}/threads_publishing_limit answers quota_total 250,
	// quota_duration 86400, https://developers.facebook.com/docs/threads/troubleshooting).
	PostsPerDay = 250
	// containerPollWait is how long to wait for a container that is still
	// IN_PROGRESS: Meta recommends "querying a container's status once per
	// minute, for no more than 5 minutes"
	// (https://developers.facebook.com/docs/threads/troubleshooting).
	containerPollWait = time.Minute
)

// Container statuses (https://developers.facebook.com/docs/threads/troubleshooting,
// "Publishing Does Not Return a Media ID").
const (
	StatusExpired    = "EXPIRED"
	StatusError      = "ERROR"
	StatusFinished   = "FINISHED"
	StatusInProgress = "IN_PROGRESS"
	StatusPublished  = "PUBLISHED"
)

// Config configures a Client for one account.
type Config struct {
	// BaseURL is the API root; empty means DefaultBaseURL. Tests point it
	// at a fake.
	BaseURL string
	// UserID is the account's Threads user id (post.Account.RemoteID), the
	// {threads-user-id} of the publishing and listing endpoints. "me" (the
	// token's own user) is accepted too.
	UserID string
	// Credential holds the access token (a long-lived token, see
	// ExchangeCode).
	Credential platform.Credential
	// HTTPClient is used for every call. nil means a client without a
	// Timeout: deadlines come from the context.
	HTTPClient *http.Client
}

// Client is one Threads account. It is safe for concurrent use.
type Client struct {
	base   string
	userID string
	hc     *httpcall.Client
	// now is replaced by tests.
	now func() time.Time
	// poll bounds the wait for a media container to be processed before
	// the next step (see awaitFinished); tests shorten it.
	poll pollConfig

	mu   sync.Mutex
	cred platform.Credential
}

var (
	_ platform.Client       = (*Client)(nil)
	_ platform.TextMeasurer = (*Client)(nil)
)

// New validates cfg and returns a Client. It makes no network call.
func New(cfg Config) (*Client, error) {
	base, err := baseURL(cfg.BaseURL, "BaseURL")
	if err != nil {
		return nil, err
	}
	if cfg.UserID == "" {
		return nil, errors.New("threads: config UserID (the account's Threads user id, post.Account.RemoteID) is required")
	}
	if strings.ContainsAny(cfg.UserID, "/?#") || strings.TrimSpace(cfg.UserID) != cfg.UserID {
		return nil, fmt.Errorf("threads: config UserID %q is not a Threads user id", cfg.UserID)
	}
	if cfg.Credential.AccessToken == "" {
		return nil, errors.New("threads: config Credential.AccessToken is required")
	}
	c := &Client{base: base, userID: cfg.UserID, now: time.Now, poll: defaultPoll, cred: cfg.Credential}
	c.hc = newHTTP(cfg.HTTPClient, func() []string { return []string{c.accessToken()} })
	return c, nil
}

// baseURL validates and normalises an API root; empty means
// DefaultBaseURL. field names the setting in errors.
func baseURL(raw, field string) (string, error) {
	base, err := httpcall.RootURL(field, raw, DefaultBaseURL)
	if err != nil {
		return "", fmt.Errorf("threads: %w", err)
	}
	return base, nil
}

// Capabilities declares Threads' limits and what Lookup can do: the
// recorded container tells whether a publish happened, the account's
// threads can be read back, and nothing deduplicates a second create.
// Images go with the create as public URLs that Threads fetches
// (MediaByURL): up to MaxCarouselItems of them, each at most MaxImageBytes.
// Meta documents no pixel limit (wider than 1440 is scaled down, not
// refused), so MaxMediaPixels is 0. MediaFormats are JPEG and PNG, "the
// officially supported formats" (https://developers.facebook.com/docs/threads/posts,
// Media Specifications; see imageFormats): images in another are
// re-encoded when the post is added, and Publish refuses other content
// types before sending. The aspect-ratio limit (at most 10:1) has no
// field here.
func (c *Client) Capabilities() platform.Capabilities {
	return platform.Capabilities{
		Platform:          "threads",
		NativeIdempotency: false,
		LookupByHandle:    true,
		ReadableHistory:   true,
		Replies:           true,
		MaxTextGraphemes:  MaxTextLength,
		MaxMedia:          MaxCarouselItems,
		MaxMediaBytes:     MaxImageBytes,
		MaxMediaPixels:    0,
		MediaFormats:      slices.Clone(imageFormats),
		InlineMedia:       true,
		MediaByURL:        true,
		Handle:            "not sent (Threads has no key); the container to publish (TEXT, IMAGE or CAROUSEL; a carousel's item containers before it) is recorded through Checkpoint before threads_publish, and its status (FINISHED/PUBLISHED/EXPIRED, 24 h life) says whether it became a post",
		ReadBack:          "GET /{container}?fields=status when a container was recorded, then GET /{user}/threads (100 a page, since NotBefore or back to After, bounded) matched by fingerprint, or for images (re-hosted, not fingerprintable) by text and image count once the container says PUBLISHED",
		PostingLimits:     []platform.Rate{{Count: PostsPerDay, Per: 24 * time.Hour}},
	}
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

// objectURL is the address of a Graph object or edge under the API
// version: objectURL("123", "threads") is {base}/v1.0/123/threads.
func (c *Client) objectURL(id string, edge ...string) string {
	u := c.base + "/" + apiVersion + "/" + url.PathEscape(id)
	for _, e := range edge {
		u += "/" + e
	}
	return u
}

// authHeader is the bearer header of the current token, plus extra
// headers as key, value pairs.
func (c *Client) authHeader(kv ...string) http.Header {
	h := httpcall.Bearer(c.accessToken())
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func (c *Client) classify(op string, resp *httpcall.Response, write bool) error {
	return classify(c.hc, c.now(), op, resp, write)
}

// write sends a form-encoded write once and returns its successful answer
// or the classified failure.
func (c *Client) write(ctx context.Context, op, method, u string, form url.Values) (*httpcall.Response, error) {
	req := httpcall.Request{Method: method, URL: u, Header: c.authHeader()}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Body = []byte(form.Encode())
	}
	resp, err := c.hc.Write(ctx, op, req)
	if err != nil {
		return nil, err
	}
	if !resp.OK() {
		return nil, c.classify(op, resp, true)
	}
	return resp, nil
}

// read sends a GET (retried by httpcall) and returns the answer whatever
// its status, for the caller to interpret.
func (c *Client) read(ctx context.Context, op, u string, q url.Values) (*httpcall.Response, error) {
	return c.hc.Read(ctx, op, httpcall.Request{Method: http.MethodGet, URL: u, Query: q, Header: c.authHeader()})
}

// idAnswer is the {"id": …} answer of both create steps.
type idAnswer struct {
	ID string `json:"id"`
}

// decodeID reads the id of a 2xx create answer; an answer without one is
// an error (the caller makes it Ambiguous: the create probably happened).
func decodeID(resp *httpcall.Response) (string, error) {
	if resp.BodyErr != nil {
		return "", fmt.Errorf("read answer: %w", resp.BodyErr)
	}
	var a idAnswer
	if err := json.Unmarshal(resp.Body, &a); err != nil {
		return "", fmt.Errorf("decode answer: %w", err)
	}
	if a.ID == "" {
		return "", errors.New("the answer carries no id")
	}
	return a.ID, nil
}

// Publish creates a post in two steps (see the package doc): a
// container, recorded through req.Checkpoint, then threads_publish. Each
// step is sent once. Step 1 is a write like any other (a lost answer is
// Ambiguous: a container may exist, which is harmless but not nothing);
// step 2 is the post itself.
//
// A post with req.Media (images Threads fetches from their URL) is
// published by publishMedia: one IMAGE container, or an item container
// per image and a CAROUSEL container; see there. Without media, nothing is
// sent when the text is empty or over MaxTextLength (Rejected
// ReasonEmptyText, ReasonTextTooLong); req.MediaIDs are always refused
// (Rejected ReasonMediaUnsupported: Threads has no upload whose ids could
// be attached). req.Handle is not sent: Threads has no field for it.
//
// When req.Resume names a container of an earlier attempt, it is read
// first (GET /{container}?fields=status,error_message):
//
//   - FINISHED: published as is; no new container, no Checkpoint;
//   - PUBLISHED: not published again; the receipt is its post, found by
//     fingerprint (a text post) or by text and image count (a post with
//     images) among the account's newest threads created since
//     req.CreatedAt less a few minutes of clock skew (publishedSkew), or
//     Ambiguous when it cannot be found or told apart;
//   - EXPIRED: a new container is made and checkpointed;
//   - ERROR: for a post with images, Rejected ReasonMediaFailed with
//     Meta's error_message, as when the container is awaited; for a text
//     post, a new container (see resume);
//   - IN_PROGRESS: NotPerformed, RetryAfter one minute;
//   - unreadable (the Graph API says it does not exist) or any other
//     status: Ambiguous, nothing sent. A container of ours that cannot be
//     read might have been published.
//
// A Resume of a carousel's item containers ("items:…", recorded before
// its CAROUSEL container is made) makes the carousel of them once they
// are FINISHED, waits for those still IN_PROGRESS, makes the missing
// ones when an earlier call recorded only the first before it ran out of
// time, or starts over with new items: see resumeItems. A post that is
// not a carousel starts over without reading them; one this package
// cannot have written is Ambiguous, nothing sent.
//
// A failing Checkpoint stops Publish before step 2 and its error is
// returned wrapped: the container stays unpublished and expires.
func (c *Client) Publish(ctx context.Context, req platform.PublishRequest) (platform.Receipt, error) {
	if len(req.Media) > 0 {
		if req.Reply != nil {
			// A thread's attachments go with its first part only.
			return platform.Receipt{}, &platform.Rejected{Reason: ReasonMediaUnsupported, Message: "publish: a reply (a thread's later part) carries no media here"}
		}
		r, err := c.publishMedia(ctx, req)
		return r, redactMedia(err, req.Media)
	}
	if err := checkText(req.Text); err != nil {
		return platform.Receipt{}, err
	}
	if len(req.MediaIDs) > 0 {
		return platform.Receipt{}, errMediaIDs()
	}
	resume := req.Resume
	if _, isItems, err := parseItems(resume); err != nil {
		return platform.Receipt{}, &platform.Ambiguous{Err: fmt.Errorf("publish (nothing sent): %w", err)}
	} else if isItems {
		// A carousel's items, which a post without media never has: no
		// post was published under them (see lookupItems).
		resume = ""
	}
	container, r, err := c.resume(ctx, resume, req, 0)
	if err != nil || r != nil {
		return deref(r), err
	}
	if container == "" {
		form := url.Values{"media_type": {"TEXT"}, "text": {req.Text}}
		if req.Reply != nil {
			// A thread's next part: reply_to_id, the post it answers
			// (https://developers.facebook.com/docs/threads/posts).
			form.Set("reply_to_id", req.Reply.Parent)
		}
		id, err := c.createContainer(ctx, "create container", form)
		if err != nil {
			return platform.Receipt{}, err
		}
		if err := checkpoint(ctx, req, id); err != nil {
			return platform.Receipt{}, err
		}
		container = id
	}
	return c.publishContainer(ctx, container)
}

// errMediaIDs refuses PublishRequest.MediaIDs: Threads has no upload, so
// there are no remote media ids to attach.
func errMediaIDs() error {
	return &platform.Rejected{Reason: ReasonMediaUnsupported, Message: "publish: Threads has no media upload, so there are no media ids to attach; it fetches each image from the public URL given in PublishRequest.Media"}
}

// resume reads container, recorded by an earlier attempt of req, when
// there is one (see Publish): it returns the container to publish ("" for
// a new one), or the receipt of the post it already became, or the error
// that ends Publish. media is the number of attachments of the post.
func (c *Client) resume(ctx context.Context, container string, req platform.PublishRequest, media int) (string, *platform.Receipt, error) {
	if container == "" {
		return "", nil, nil
	}
	st, err := c.containerStatus(ctx, container)
	if err != nil {
		return "", nil, err
	}
	switch st.Status {
	case StatusFinished:
		// Made by an earlier attempt and never published: publish it.
		return container, nil, nil
	case StatusPublished:
		r, err := c.receiptOfPublished(ctx, container, req, media)
		if err != nil {
			return "", nil, err
		}
		return "", &r, nil
	case StatusExpired:
		return "", nil, nil
	case StatusError:
		if media > 0 {
			// Threads could not fetch or process the image (or a
			// carousel of the items), as awaitFinished and resumeItems
			// answer it: the same images fail again. A new container
			// could loop with an image both slow and broken: its wait
			// runs out (NotPerformed) before it shows ERROR, and the
			// next attempt would make another, until the publisher's
			// throttle limit failed the post for the wrong reason.
			return "", nil, mediaFailed("container "+container+" of an earlier attempt", st)
		}
		// A TEXT container in ERROR gets a new one. Nothing waits for a
		// text container (it is published right after it is made), so
		// the loop above cannot happen: if Threads cannot take the text,
		// the new container's threads_publish is refused and that answer
		// is classified as any write, within the same call. And with no
		// image to fetch, Meta documents no cause of ERROR that the same
		// text would meet again, so one more container is worth it.
		return "", nil, nil
	case StatusInProgress:
		return "", nil, &platform.NotPerformed{RetryAfter: containerPollWait, Message: fmt.Sprintf("publish: container %s is still in progress", container)}
	}
	return "", nil, &platform.Ambiguous{Err: fmt.Errorf("publish: container %s of an earlier attempt is %s; it may have been published, nothing sent", container, st.describe())}
}

// checkpoint records the container to publish through req.Checkpoint; a
// failure stops Publish before threads_publish.
func checkpoint(ctx context.Context, req platform.PublishRequest, id string) error {
	if req.Checkpoint == nil {
		return nil
	}
	if err := req.Checkpoint(ctx, id); err != nil {
		return fmt.Errorf("threads: record container %s before publishing it (not published): %w", id, err)
	}
	return nil
}

// checkpointItems records a carousel's item containers through
// req.Checkpoint (see publishMedia); a failure stops Publish before the
// CAROUSEL container is made.
func checkpointItems(ctx context.Context, req platform.PublishRequest, items []string) error {
	if req.Checkpoint == nil {
		return nil
	}
	if err := req.Checkpoint(ctx, itemsCheckpoint(items)); err != nil {
		return fmt.Errorf("threads: record carousel item containers %s before making the carousel (not published): %w", strings.Join(items, ", "), err)
	}
	return nil
}

func deref(r *platform.Receipt) platform.Receipt {
	if r == nil {
		return platform.Receipt{}
	}
	return *r
}

// checkText refuses what Threads would refuse, before any call.
func checkText(text string) error {
	if strings.TrimSpace(text) == "" {
		return &platform.Rejected{Reason: ReasonEmptyText, Message: "publish: a text post needs text"}
	}
	if n := measureText(text); n > MaxTextLength {
		return &platform.Rejected{Reason: ReasonTextTooLong, Message: fmt.Sprintf("publish: text is %d characters as Threads counts them (emoji by UTF-8 bytes), the limit is %d", n, MaxTextLength)}
	}
	return nil
}

// createContainer is step 1, POST /{user-id}/threads with form
// (https://developers.facebook.com/docs/threads/posts, Step 1, and
// Carousel Posts, Steps 1 and 2). op names the step in errors. A 2xx
// answer without an id is Ambiguous: a container probably exists.
func (c *Client) createContainer(ctx context.Context, op string, form url.Values) (string, error) {
	resp, err := c.write(ctx, op, http.MethodPost, c.objectURL(c.userID, "threads"), form)
	if err != nil {
		return "", err
	}
	id, err := decodeID(resp)
	if err != nil {
		return "", &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: a container probably exists: %w", op, err)}
	}
	return id, nil
}

// publishContainer is step 2, POST /{user-id}/threads_publish with
// creation_id (https://developers.facebook.com/docs/threads/posts, Step
// 2), then a best-effort read of the post's permalink and time.
func (c *Client) publishContainer(ctx context.Context, container string) (platform.Receipt, error) {
	const op = "publish container"
	resp, err := c.write(ctx, op, http.MethodPost, c.objectURL(c.userID, "threads_publish"), url.Values{"creation_id": {container}})
	if err != nil {
		return platform.Receipt{}, err
	}
	id, err := decodeID(resp)
	if err != nil {
		return platform.Receipt{}, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s %s: the post probably exists: %w", op, container, err)}
	}
	r := platform.Receipt{RemoteID: id}
	// The post exists whatever this read says: its failure only leaves the
	// receipt without URL and time.
	if t, err := c.media(ctx, id); err == nil && t.ID == id {
		r.URL, r.CreatedAt = t.Permalink, t.created()
	}
	return r, nil
}

// containerState is a container's status as read.
type containerState struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"error_message"`
	// gone: the Graph API answered that the object does not exist.
	gone bool
}

// describe is the status as messages quote it, with Meta's
// error_message, whose URLs lose their query (see stripURLQueries).
func (s containerState) describe() string {
	switch {
	case s.gone:
		return "unreadable (the API says it does not exist)"
	case s.ErrorMessage != "":
		return fmt.Sprintf("%q (%s)", s.Status, stripURLQueries(s.ErrorMessage))
	}
	return fmt.Sprintf("%q", s.Status)
}

// containerStatus reads GET /{container}?fields=status,error_message
// (https://developers.facebook.com/docs/threads/troubleshooting). A
// container the API says does not exist is returned with gone set and no
// error; a failed read is NotPerformed.
func (c *Client) containerStatus(ctx context.Context, container string) (containerState, error) {
	const op = "read container status"
	resp, err := c.read(ctx, op, c.objectURL(container), url.Values{"fields": {"status,error_message"}})
	if err != nil {
		return containerState{}, err
	}
	if !resp.OK() {
		if notExist(resp) {
			return containerState{ID: container, gone: true}, nil
		}
		return containerState{}, c.classify(op, resp, false)
	}
	var st containerState
	if err := json.Unmarshal(resp.Body, &st); err != nil || st.Status == "" {
		return containerState{}, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s %s: the answer carries no status", op, container)}
	}
	return st, nil
}

// publishedSkew is how much earlier than the entry's slot
// (PublishRequest.CreatedAt) Threads' timestamp of our post may be: the
// publisher sends at or after the slot by its own clock, and the two
// clocks may disagree by this much.
const publishedSkew = 5 * time.Minute

// receiptOfPublished answers a Resume of req whose container an earlier
// attempt published: its post, or Ambiguous. A text post is found by its
// text's fingerprint among the account's newest threads; a post with media
// attachments by its text and their number, which the PUBLISHED container
// allows (see matchPublished). Either way only threads created since
// req.CreatedAt less publishedSkew are candidates (at most lookupDepth of
// them): the post was sent at or after its slot, so an older thread of the
// same content is another post (none is left out when CreatedAt is zero).
func (c *Client) receiptOfPublished(ctx context.Context, container string, req platform.PublishRequest, media int) (platform.Receipt, error) {
	var (
		p     platform.RemotePost
		found bool
		err   error
		since string
		q     platform.LookupQuery
	)
	if !req.CreatedAt.IsZero() {
		q.NotBefore = req.CreatedAt.Add(-publishedSkew)
		since = " created since " + q.NotBefore.UTC().Format(time.RFC3339)
	}
	q.Reply = req.Reply
	if media > 0 {
		q.Text, q.MediaCount = req.Text, media
		p, found, err = c.matchPublished(ctx, q)
	} else {
		q.Fingerprint = platform.Fingerprint(req.Text, nil)
		p, found, err = c.findByFingerprint(ctx, q)
	}
	var inc *platform.Inconclusive
	switch {
	case found:
		return platform.Receipt{RemoteID: p.RemoteID, URL: p.URL, CreatedAt: p.CreatedAt}, nil
	case err != nil && !errors.As(err, &inc):
		return platform.Receipt{}, &platform.Ambiguous{Err: fmt.Errorf("publish: container %s was already published, not publishing again; its post could not be read: %v", container, err)}
	}
	why := fmt.Sprintf("its post is not among the account's threads%s (%d newest at most)", since, lookupDepth)
	if inc != nil {
		why = "its post could not be matched: " + inc.Message
	}
	return platform.Receipt{}, &platform.Ambiguous{Err: fmt.Errorf("publish: container %s was already published, not publishing again; %s", container, why)}
}

// Delete removes a post, DELETE /{media-id}, answered {"success": true}
// (https://developers.facebook.com/docs/threads/posts/delete-posts; 100
// deletes per account per day). It is sent once.
//
// A post that is already gone is nil: the Graph API answers a delete of a
// missing object with error code 100 ("Invalid parameter", usually
// subcode 33 "does not exist"), or 404, and Threads documents nothing
// more precise, so both count as gone; Exists is the read-back that proves
// it. {"success": false} is Ambiguous. Other failures are classified as
// every write (see classify).
func (c *Client) Delete(ctx context.Context, remoteID string) error {
	const op = "delete post"
	if remoteID == "" {
		return &platform.Rejected{Reason: ReasonInvalidParameter, Message: op + ": empty remote id"}
	}
	resp, err := c.hc.Write(ctx, op, httpcall.Request{Method: http.MethodDelete, URL: c.objectURL(remoteID), Header: c.authHeader()})
	if err != nil {
		return err
	}
	if !resp.OK() {
		if ge, ok := parseGraphError(resp.Body); ok && resp.Status < 500 && (ge.Code == codeInvalidParameter || resp.Status == http.StatusNotFound) {
			return nil
		}
		return c.classify(op, resp, true)
	}
	var a struct {
		Success *bool `json:"success"`
	}
	if err := json.Unmarshal(resp.Body, &a); err == nil && a.Success != nil && !*a.Success {
		return &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s %s: the platform answered success=false", op, remoteID)}
	}
	// A 2xx is the platform's word that the post is gone, whatever else
	// its body holds.
	return nil
}

// UploadMedia is not supported: Threads has no upload endpoint, it fetches
// image_url and video_url from a public server
// (https://developers.facebook.com/docs/threads/posts: "it must be on a
// public server"). Capabilities declares MediaByURL: the attachments come
// to Publish as PublishRequest.Media with a URL. Nothing is sent.
func (c *Client) UploadMedia(context.Context, platform.MediaUpload) (platform.MediaReceipt, error) {
	return platform.MediaReceipt{}, &platform.Rejected{Reason: ReasonMediaUnsupported, Message: "upload media: Threads has no upload; it fetches each image from the public URL given with the publish (PublishRequest.Media)"}
}
