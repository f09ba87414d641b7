// Package bluesky is the platform adapter for Bluesky and any AT Protocol
// PDS: app.bsky.feed.post records written to the account's repository.
//
// Bluesky gives the strongest guarantee of any platform oncepost speaks
// to: the client chooses the record key. Publish writes the post with
// com.atproto.repo.putRecord under a key derived from the ledger's handle
// (a TID, recordKey) and swapRecord null, which means "create only if
// absent": a repeat of the same record is a no-op that answers the same
// uri and cid, and a record already at that key is never overwritten
// (InvalidSwap). Lookup is one getRecord by that key: RecordNotFound
// proves the post absent. createRecord is never used: its answer to a
// key that exists is a 500, indistinguishable from a failure.
//
// The record is the same bytes on every attempt: its createdAt is the
// ledger entry's time (PublishRequest.CreatedAt), its facets (links,
// mentions, hashtags and cashtags, found as the reference client finds
// them; richtext.go) are computed from the text, and its images are
// content-addressed blobs (UploadMedia).
//
// The session is created once, when the account is added, from an app
// password (CreateSession): only its tokens are stored. A 400/401
// ExpiredToken or InvalidToken is Unauthorized; Refresh exchanges the
// refresh token with refreshSession, which rotates it (the caller stores
// the new pair before using it). A refused refresh means the account must
// be connected again.
package bluesky

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"oncepost/shared/graphemes"
	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

const (
	// DefaultBaseURL is Bluesky's own PDS entryway.
	DefaultBaseURL = "https://bsky.social"
	// postCollection is the collection of posts.
	postCollection = "app.bsky.feed.post"
	// maxGraphemes and maxTextBytes are app.bsky.feed.post's text limits
	// (lexicons/app/bsky/feed/post.json: maxGraphemes 300, maxLength 3000).
	maxGraphemes = 300
	maxTextBytes = 3000
	// maxImages and maxImageBytes are app.bsky.embed.images' limits
	// (lexicons/app/bsky/embed/images.json: 4 images, maxSize 1000000).
	maxImages     = 4
	maxImageBytes = 1_000_000
	// createdAtLayout is the record's datetime format: RFC 3339 in UTC
	// with milliseconds, as the reference client writes it.
	createdAtLayout = "2006-01-02T15:04:05.000Z"
)

// Config configures one account's client.
type Config struct {
	// BaseURL is the account's PDS (default DefaultBaseURL).
	BaseURL string
	// DID is the account's DID (post.Account.RemoteID); its repository is
	// the one written.
	DID string
	// Credential holds the session's access and refresh JWTs.
	Credential platform.Credential
	// HTTPClient is used for every call; nil means one with no Timeout
	// (deadlines come from the context).
	HTTPClient *http.Client
}

// Client is one Bluesky account. It is safe for concurrent use.
type Client struct {
	base string
	did  string
	cred platform.Credential
	http *httpcall.Client

	mu      sync.Mutex
	handles map[string]string // resolved handle → DID, for facets
}

var _ platform.Client = (*Client)(nil)

// New validates cfg and returns a Client. It makes no network call.
func New(cfg Config) (*Client, error) {
	base, err := baseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(cfg.DID, "did:") {
		return nil, fmt.Errorf("bluesky: config DID %q is not a DID (did:plc:… or did:web:…)", cfg.DID)
	}
	if cfg.Credential.AccessToken == "" {
		return nil, errors.New("bluesky: config Credential.AccessToken is required")
	}
	c := &Client{base: base, did: cfg.DID, cred: cfg.Credential, http: newHTTP(cfg.HTTPClient), handles: map[string]string{}}
	c.http.Describe = c.describe
	return c, nil
}

// describe is the PDS's error text without the session's tokens: a proxy
// or server may echo the Authorization header, and the text ends up in
// logs and the ledger's reason.
func (c *Client) describe(r *httpcall.Response) string {
	return httpcall.RedactString(describe(r), c.cred.AccessToken, c.cred.RefreshToken)
}

func newHTTP(hc *http.Client) *httpcall.Client {
	c := httpcall.New(hc)
	c.Describe = describe
	c.RetryAfter = rateLimitReset
	return c
}

// baseURL validates and normalises the PDS's root URL; empty means
// DefaultBaseURL.
func baseURL(raw string) (string, error) {
	base, err := httpcall.RootURL("BaseURL", raw, DefaultBaseURL)
	if err != nil {
		return "", fmt.Errorf("bluesky: %w", err)
	}
	return base, nil
}

// Capabilities: the record key makes a repeat a no-op and Lookup exact.
func (c *Client) Capabilities() platform.Capabilities {
	return platform.Capabilities{
		Platform:          "bluesky",
		NativeIdempotency: true,
		LookupByHandle:    true,
		ReadableHistory:   true,
		Replies:           true,
		MaxTextGraphemes:  maxGraphemes,
		MaxTextBytes:      maxTextBytes,
		MaxMedia:          maxImages,
		MaxMediaBytes:     maxImageBytes,
		Handle:            "record key (a TID derived from the handle); putRecord with swapRecord null creates only if absent",
		ReadBack:          "getRecord by the record key: RecordNotFound proves absence",
		// The PDS charges 3 points per create against 5,000 points an
		// hour and 35,000 a day per account (docs.bsky.app rate limits).
		PostingLimits: []platform.Rate{{Count: 1666, Per: time.Hour}, {Count: 11666, Per: 24 * time.Hour}},
	}
}

// xrpcError is the body of an XRPC error answer.
type xrpcError struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

func decodeError(r *httpcall.Response) xrpcError {
	var e xrpcError
	_ = json.Unmarshal(r.Body, &e)
	return e
}

func describe(r *httpcall.Response) string {
	e := decodeError(r)
	switch {
	case e.Error != "" && e.Message != "":
		return e.Error + ": " + e.Message
	case e.Error != "":
		return e.Error
	}
	return e.Message
}

// rateLimitReset reads the PDS's RateLimit-Reset header on a 429: the Unix
// second at which the window resets (docs.bsky.app/docs/advanced-guides/rate-limits).
// The PDS sends it with every answer of a rate-limited route, so on any
// other status it says nothing about when to try again.
func rateLimitReset(r *httpcall.Response, now time.Time) time.Duration {
	if r.Status != http.StatusTooManyRequests {
		return 0
	}
	v := strings.TrimSpace(r.Header.Get("RateLimit-Reset"))
	if v == "" {
		return 0
	}
	secs, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0
	}
	return time.Unix(secs, 0).Sub(now)
}

// classify is httpcall's rule plus the token errors, which the PDS
// answers with 400 or 401 and the names ExpiredToken or InvalidToken.
func (c *Client) classify(op string, r *httpcall.Response, write bool) error {
	switch e := decodeError(r); e.Error {
	case "ExpiredToken", "InvalidToken":
		return &platform.Unauthorized{Message: op + ": " + c.describe(r)}
	}
	return c.http.Classify(op, r, write)
}

func (c *Client) xrpc(nsid string) string { return c.base + "/xrpc/" + nsid }

func (c *Client) header(contentType string) http.Header {
	h := httpcall.Bearer(c.cred.AccessToken)
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return h
}

// write sends a procedure once and decodes its 2xx answer into out.
func (c *Client) write(ctx context.Context, op, nsid, contentType string, body []byte, out any) (*httpcall.Response, error) {
	resp, err := c.http.Write(ctx, op, httpcall.Request{Method: http.MethodPost, URL: c.xrpc(nsid), Header: c.header(contentType), Body: body})
	if err != nil {
		return nil, err
	}
	if !resp.OK() {
		return resp, c.classify(op, resp, true)
	}
	if out != nil {
		if resp.BodyErr != nil {
			return resp, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: read the answer: %w", op, resp.BodyErr)}
		}
		if err := json.Unmarshal(resp.Body, out); err != nil {
			return resp, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: decode the answer: %w", op, err)}
		}
	}
	return resp, nil
}

// query sends a read; a 4xx answer is returned with its error for the
// caller to interpret (RecordNotFound).
func (c *Client) query(ctx context.Context, op, nsid string, q url.Values, out any) (*httpcall.Response, error) {
	resp, err := c.http.Read(ctx, op, httpcall.Request{Method: http.MethodGet, URL: c.xrpc(nsid), Query: q, Header: c.header("")})
	if err != nil {
		return nil, err
	}
	if !resp.OK() {
		return resp, c.classify(op, resp, false)
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return resp, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: decode the answer: %v", op, err)}
	}
	return resp, nil
}

// postRecord is an app.bsky.feed.post record as oncepost writes it.
type postRecord struct {
	Type      string       `json:"$type"`
	Text      string       `json:"text"`
	Facets    []facet      `json:"facets,omitempty"`
	Reply     *replyRef    `json:"reply,omitempty"`
	Embed     *imagesEmbed `json:"embed,omitempty"`
	CreatedAt string       `json:"createdAt"`
}

// imagesEmbed is app.bsky.embed.images.
type imagesEmbed struct {
	Type   string          `json:"$type"`
	Images []embeddedImage `json:"images"`
}

type embeddedImage struct {
	Alt   string  `json:"alt"`
	Image blobRef `json:"image"`
}

// blobRef is a blob as the PDS returns it from uploadBlob and as a record
// refers to it.
type blobRef struct {
	Type     string `json:"$type"`
	Ref      link   `json:"ref"`
	MimeType string `json:"mimeType"`
	Size     int64  `json:"size"`
}

type link struct {
	Link string `json:"$link"`
}

// Publish writes the post under its record key with putRecord and
// swapRecord null. A key already taken (InvalidSwap) is an earlier
// attempt's record when its content is ours: Publish then answers that
// record; otherwise the call is Rejected and nothing is overwritten.
func (c *Client) Publish(ctx context.Context, req platform.PublishRequest) (platform.Receipt, error) {
	const op = "bluesky putRecord"
	if err := checkText(req.Text); err != nil {
		return platform.Receipt{}, err
	}
	if len(req.MediaIDs) > maxImages {
		return platform.Receipt{}, &platform.Rejected{Reason: "too_many_media", Message: fmt.Sprintf("%d images; a Bluesky post takes at most %d", len(req.MediaIDs), maxImages)}
	}
	if req.CreatedAt.IsZero() || req.Handle == "" {
		return platform.Receipt{}, &platform.Rejected{Reason: "invalid_request", Message: "bluesky: a publish needs the ledger handle and CreatedAt"}
	}
	rec := postRecord{
		Type:      postCollection,
		Text:      req.Text,
		Facets:    detectFacets(ctx, req.Text, c.resolveHandle),
		CreatedAt: req.CreatedAt.UTC().Format(createdAtLayout),
	}
	if req.Reply != nil {
		ref, err := c.replyRefs(ctx, req)
		if err != nil {
			return platform.Receipt{}, err
		}
		rec.Reply = &ref
	}
	if len(req.MediaIDs) > 0 {
		rec.Embed = &imagesEmbed{Type: "app.bsky.embed.images"}
		for _, id := range req.MediaIDs {
			img, err := decodeMediaID(id)
			if err != nil {
				return platform.Receipt{}, &platform.Rejected{Reason: "invalid_media", Message: err.Error()}
			}
			rec.Embed.Images = append(rec.Embed.Images, img)
		}
	}
	rkey := recordKey(req.Handle, req.CreatedAt)
	body, err := json.Marshal(struct {
		Repo       string     `json:"repo"`
		Collection string     `json:"collection"`
		RKey       string     `json:"rkey"`
		Record     postRecord `json:"record"`
		// SwapRecord is sent as JSON null: "create only if absent".
		SwapRecord *string `json:"swapRecord"`
	}{c.did, postCollection, rkey, rec, nil})
	if err != nil {
		return platform.Receipt{}, fmt.Errorf("%s: encode: %w", op, err)
	}
	var out struct {
		URI string `json:"uri"`
		CID string `json:"cid"`
	}
	resp, err := c.write(ctx, op, "com.atproto.repo.putRecord", "application/json", body, &out)
	if err != nil {
		if resp != nil && decodeError(resp).Error == "InvalidSwap" {
			return c.takenKey(ctx, rkey, req)
		}
		return platform.Receipt{}, err
	}
	if out.URI == "" {
		return platform.Receipt{}, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: no uri in the answer", op)}
	}
	return platform.Receipt{RemoteID: out.URI, URL: c.webURL(rkey), CreatedAt: req.CreatedAt}, nil
}

// takenKey handles InvalidSwap: a record is already at the key. The key
// is this entry's own, so the record is an earlier attempt's unless its
// content differs (a hash collision with another entry).
func (c *Client) takenKey(ctx context.Context, rkey string, req platform.PublishRequest) (platform.Receipt, error) {
	rp, found, err := c.getRecord(ctx, rkey)
	if err != nil {
		return platform.Receipt{}, &platform.Ambiguous{Err: fmt.Errorf("bluesky putRecord: the record key is taken and it could not be read: %w", err)}
	}
	if !found {
		// Deleted in between: the call did nothing; a later attempt may.
		return platform.Receipt{}, &platform.NotPerformed{Message: "bluesky putRecord: the record key was taken, then freed"}
	}
	parent := ""
	if req.Reply != nil {
		parent = req.Reply.Parent
	}
	if rp.Text != req.Text || !sameMedia(rp.MediaIDs, req.MediaIDs) || rp.ReplyTo != parent {
		return platform.Receipt{}, &platform.Rejected{Status: http.StatusBadRequest, Reason: "record_key_taken", Message: "bluesky: the record key " + rkey + " holds another post; nothing was written"}
	}
	return platform.Receipt{RemoteID: rp.RemoteID, URL: rp.URL, CreatedAt: rp.CreatedAt}, nil
}

func sameMedia(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		ia, errA := decodeMediaID(a[i])
		ib, errB := decodeMediaID(b[i])
		if errA != nil || errB != nil || ia.Image.Ref.Link != ib.Image.Ref.Link {
			return false
		}
	}
	return true
}

func checkText(text string) error {
	if n := graphemes.Count(text); n > maxGraphemes {
		return &platform.Rejected{Reason: "text_too_long", Message: fmt.Sprintf("bluesky: %d characters; a post takes at most %d", n, maxGraphemes)}
	}
	if len(text) > maxTextBytes {
		return &platform.Rejected{Reason: "text_too_long", Message: fmt.Sprintf("bluesky: %d bytes of UTF-8; a post takes at most %d", len(text), maxTextBytes)}
	}
	return nil
}

func (c *Client) webURL(rkey string) string {
	return "https://bsky.app/profile/" + c.did + "/post/" + rkey
}

// resolveHandle finds a mentioned handle's DID through the PDS
// (com.atproto.identity.resolveHandle). Results are kept for the client's
// life. The publisher builds a client per use, so a later attempt of the
// same post resolves again and may write other facets; that is harmless:
// the record key makes the write once, and takenKey compares text and
// media, not facets.
func (c *Client) resolveHandle(ctx context.Context, handle string) (string, bool) {
	c.mu.Lock()
	did, ok := c.handles[handle]
	c.mu.Unlock()
	if ok {
		return did, did != ""
	}
	var out struct {
		DID string `json:"did"`
	}
	resp, err := c.query(ctx, "bluesky resolveHandle", "com.atproto.identity.resolveHandle", url.Values{"handle": {handle}}, &out)
	switch {
	case err == nil && strings.HasPrefix(out.DID, "did:"):
		did = out.DID
	case resp != nil && resp.Status == http.StatusBadRequest:
		did = "" // no such handle: remembered as plain text
	default:
		return "", false // unreachable: not remembered
	}
	c.mu.Lock()
	c.handles[handle] = did
	c.mu.Unlock()
	return did, did != ""
}

// Lookup reads the record at the entry's record key. The key is the
// entry's own; a record there that answers another parent than q's (a
// thread's part) is not this post, and nobody can say where this post is:
// Inconclusive.
func (c *Client) Lookup(ctx context.Context, q platform.LookupQuery) (platform.RemotePost, bool, error) {
	if q.Handle == "" || q.CreatedAt.IsZero() {
		return platform.RemotePost{}, false, &platform.Inconclusive{Message: "bluesky: a lookup needs the ledger handle and CreatedAt to name the record key"}
	}
	rkey := recordKey(q.Handle, q.CreatedAt)
	rp, found, err := c.getRecord(ctx, rkey)
	if err != nil || !found {
		return rp, found, err
	}
	if !rp.RepliesTo(q.Reply) {
		return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf(
			"bluesky: the record key %s holds a post replying to %q, not to this post's parent", rkey, rp.ReplyTo)}
	}
	return rp, true, nil
}

// getRecord reads one post of the account's repository by record key.
// found is false only when the PDS answered RecordNotFound.
func (c *Client) getRecord(ctx context.Context, rkey string) (platform.RemotePost, bool, error) {
	var out listedRecord
	resp, err := c.query(ctx, "bluesky getRecord", "com.atproto.repo.getRecord", url.Values{"repo": {c.did}, "collection": {postCollection}, "rkey": {rkey}}, &out)
	if err != nil {
		if resp != nil && decodeError(resp).Error == "RecordNotFound" {
			return platform.RemotePost{}, false, nil
		}
		return platform.RemotePost{}, false, err
	}
	return c.remotePost(out), true, nil
}

// listedRecord is a record as getRecord and listRecords return it.
type listedRecord struct {
	URI   string     `json:"uri"`
	CID   string     `json:"cid"`
	Value postRecord `json:"value"`
}

func (c *Client) remotePost(r listedRecord) platform.RemotePost {
	rp := platform.RemotePost{RemoteID: r.URI, Text: r.Value.Text}
	if r.Value.Reply != nil {
		rp.ReplyTo = r.Value.Reply.Parent.URI
	}
	if _, rkey, ok := splitURI(r.URI); ok {
		rp.URL = c.webURL(rkey)
	}
	if t, err := time.Parse(time.RFC3339Nano, r.Value.CreatedAt); err == nil {
		rp.CreatedAt = t
	}
	if r.Value.Embed != nil {
		for _, img := range r.Value.Embed.Images {
			rp.MediaIDs = append(rp.MediaIDs, encodeMediaID(img))
		}
	}
	return rp
}

// Recent returns the account's newest posts (listRecords, newest first).
func (c *Client) Recent(ctx context.Context, n int) ([]platform.RemotePost, error) {
	if n <= 0 {
		return nil, nil
	}
	if n > 100 {
		n = 100
	}
	var out struct {
		Records []listedRecord `json:"records"`
	}
	if _, err := c.query(ctx, "bluesky listRecords", "com.atproto.repo.listRecords", url.Values{"repo": {c.did}, "collection": {postCollection}, "limit": {strconv.Itoa(n)}}, &out); err != nil {
		return nil, err
	}
	posts := make([]platform.RemotePost, 0, len(out.Records))
	for _, r := range out.Records {
		posts = append(posts, c.remotePost(r))
	}
	return posts, nil
}

// splitURI splits at://DID/COLLECTION/RKEY.
func splitURI(uri string) (did, rkey string, ok bool) {
	rest, ok := strings.CutPrefix(uri, "at://")
	if !ok {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[1] != postCollection || parts[2] == "" {
		return "", "", false
	}
	return parts[0], parts[2], true
}

func (c *Client) ownKey(remoteID string) (string, error) {
	did, rkey, ok := splitURI(remoteID)
	if !ok {
		return "", &platform.Rejected{Reason: "invalid_remote_id", Message: fmt.Sprintf("bluesky: %q is not a post's at:// URI", remoteID)}
	}
	if did != c.did {
		return "", &platform.Rejected{Reason: "not_own_post", Message: fmt.Sprintf("bluesky: %q is not in this account's repository", remoteID)}
	}
	return rkey, nil
}

// Exists reads the post by its URI.
func (c *Client) Exists(ctx context.Context, remoteID string) (bool, error) {
	rkey, err := c.ownKey(remoteID)
	if err != nil {
		return false, err
	}
	_, found, err := c.getRecord(ctx, rkey)
	return found, err
}

// Delete removes the post; deleting a post that is gone is a no-op on the
// PDS ("No-op if record already doesn't exist", deleteRecord.ts).
func (c *Client) Delete(ctx context.Context, remoteID string) error {
	rkey, err := c.ownKey(remoteID)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]string{"repo": c.did, "collection": postCollection, "rkey": rkey})
	_, err = c.write(ctx, "bluesky deleteRecord", "com.atproto.repo.deleteRecord", "application/json", body, nil)
	return err
}

// UploadMedia uploads an image as a blob. Blobs are content-addressed:
// the same bytes give the same reference, so an upload is safe to repeat.
// The returned id carries the blob reference and the alt text, which the
// post's record embeds (encodeMediaID).
func (c *Client) UploadMedia(ctx context.Context, m platform.MediaUpload) (platform.MediaReceipt, error) {
	if !strings.HasPrefix(m.ContentType, "image/") {
		return platform.MediaReceipt{}, &platform.Rejected{Reason: "media_unsupported", Message: fmt.Sprintf("bluesky: %q attachments are not supported; images only", m.ContentType)}
	}
	if len(m.Data) > maxImageBytes {
		return platform.MediaReceipt{}, &platform.Rejected{Reason: "media_too_large", Message: fmt.Sprintf("bluesky: the image is %d bytes; at most %d", len(m.Data), maxImageBytes)}
	}
	var out struct {
		Blob blobRef `json:"blob"`
	}
	resp, err := c.write(ctx, "bluesky uploadBlob", "com.atproto.repo.uploadBlob", m.ContentType, m.Data, &out)
	if err != nil {
		return platform.MediaReceipt{}, err
	}
	if out.Blob.Ref.Link == "" {
		return platform.MediaReceipt{}, &platform.Ambiguous{Status: resp.Status, Err: errors.New("bluesky uploadBlob: no blob reference in the answer")}
	}
	return platform.MediaReceipt{RemoteID: encodeMediaID(embeddedImage{Alt: m.Alt, Image: out.Blob})}, nil
}

// encodeMediaID writes an embedded image as the media id the ports carry:
// "CID mimeType size alt" with the alt text query-escaped. It is read back
// the same from a record, so a post's media ids match its uploads'.
func encodeMediaID(img embeddedImage) string {
	return strings.Join([]string{img.Image.Ref.Link, img.Image.MimeType, strconv.FormatInt(img.Image.Size, 10), url.QueryEscape(img.Alt)}, " ")
}

func decodeMediaID(id string) (embeddedImage, error) {
	parts := strings.Split(id, " ")
	if len(parts) != 4 {
		return embeddedImage{}, fmt.Errorf("bluesky: media id %q is not a blob reference from UploadMedia", id)
	}
	size, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return embeddedImage{}, fmt.Errorf("bluesky: media id %q: size: %v", id, err)
	}
	alt, err := url.QueryUnescape(parts[3])
	if err != nil {
		return embeddedImage{}, fmt.Errorf("bluesky: media id %q: alt: %v", id, err)
	}
	return embeddedImage{Alt: alt, Image: blobRef{Type: "blob", Ref: link{Link: parts[0]}, MimeType: parts[1], Size: size}}, nil
}

// session is the answer of createSession and refreshSession.
type session struct {
	AccessJWT  string `json:"accessJwt"`
	RefreshJWT string `json:"refreshJwt"`
	Handle     string `json:"handle"`
	DID        string `json:"did"`
}

// Refresh exchanges the refresh JWT for a new session
// (com.atproto.server.refreshSession, authenticated by the refresh JWT).
// The PDS rotates the refresh token: the answer's pair replaces the old
// one. ExpiredToken or InvalidToken means the account must be connected
// again.
func (c *Client) Refresh(ctx context.Context, cred platform.Credential) (platform.Credential, error) {
	const op = "bluesky refreshSession"
	if cred.RefreshToken == "" {
		return platform.Credential{}, &platform.Rejected{Reason: platform.ReasonReconnectNeeded, Message: op + ": no refresh token; add the account again"}
	}
	resp, err := c.http.Write(ctx, op, httpcall.Request{Method: http.MethodPost, URL: c.xrpc("com.atproto.server.refreshSession"), Header: httpcall.Bearer(cred.RefreshToken), Body: []byte{}})
	if err != nil {
		return platform.Credential{}, err
	}
	if !resp.OK() {
		switch e := decodeError(resp); {
		case e.Error == "ExpiredToken" || e.Error == "InvalidToken" || resp.Status == http.StatusUnauthorized:
			return platform.Credential{}, &platform.Rejected{Status: resp.Status, Reason: platform.ReasonReconnectNeeded, Message: op + ": " + httpcall.RedactString(describe(resp), cred.AccessToken, cred.RefreshToken)}
		}
		return platform.Credential{}, c.http.Classify(op, resp, true)
	}
	var s session
	if err := json.Unmarshal(resp.Body, &s); err != nil || s.AccessJWT == "" {
		return platform.Credential{}, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: no session in the answer", op)}
	}
	next := cred
	next.AccessToken, next.RefreshLostAt = s.AccessJWT, time.Time{}
	if s.RefreshJWT != "" {
		next.RefreshToken = s.RefreshJWT
	}
	return next, nil
}

// Session is an account's session as CreateSession opened it.
type Session struct {
	DID, Handle string
	Credential  platform.Credential
}

// CreateSession signs in with an identifier (handle or email) and an app
// password (com.atproto.server.createSession), once, when the account is
// added: only the session's tokens are kept, never the password. The PDS
// allows 30 of these per 5 minutes and 300 a day (createSession.ts), which
// is why a post never signs in.
func CreateSession(ctx context.Context, hc *http.Client, base, identifier, password string) (Session, error) {
	const op = "bluesky createSession"
	b, err := baseURL(base)
	if err != nil {
		return Session{}, err
	}
	body, _ := json.Marshal(map[string]string{"identifier": identifier, "password": password})
	c := newHTTP(hc)
	resp, err := c.Write(ctx, op, httpcall.Request{Method: http.MethodPost, URL: b + "/xrpc/com.atproto.server.createSession", Header: http.Header{"Content-Type": {"application/json"}}, Body: body})
	if err != nil {
		return Session{}, err
	}
	if !resp.OK() {
		return Session{}, c.Classify(op, resp, true)
	}
	var s session
	if err := json.NewDecoder(bytes.NewReader(resp.Body)).Decode(&s); err != nil || s.AccessJWT == "" || s.DID == "" {
		return Session{}, fmt.Errorf("%s: no session in the answer", op)
	}
	return Session{DID: s.DID, Handle: s.Handle, Credential: platform.Credential{AccessToken: s.AccessJWT, RefreshToken: s.RefreshJWT}}, nil
}
