package linkedin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	// The formats LinkedIn's Images API takes, for image.DecodeConfig.
	_ "image/gif"
	_ "image/jpeg"
	_ "image/png"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

// Images API facts
// (https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/images-api):
//
//   - "POST https://api.linkedin.com/rest/images?action=initializeUpload"
//     with {"initializeUploadRequest": {"owner": <person or organization
//     URN>}} and the versioned headers (LinkedIn-Version,
//     X-Restli-Protocol-Version: 2.0.0) answers
//     {"value": {"uploadUrlExpiresAt", "uploadUrl", "image": "urn:li:image:…"}};
//   - the bytes go up with a PUT to uploadUrl (on www.linkedin.com/dms-uploads/…,
//     not the API host) carrying the bearer token, nothing else: the page's
//     example is curl --upload-file with only an Authorization header;
//   - "GET https://api.linkedin.com/rest/images/{encoded image urn}" reads
//     the image, whose status is WAITING_UPLOAD, PROCESSING, AVAILABLE or
//     PROCESSING_FAILED;
//   - image restrictions: "Only images with a total pixel count (width X
//     height) less than 36,152,320 are allowed", formats JPG, GIF and PNG,
//     a GIF of up to 250 frames. No byte limit is given there (nor found
//     elsewhere in LinkedIn's documentation).
//
// A post attaches the image by URN, with its alt text on the post, not on
// the upload: content.media {id, altText} for one image (posts-api,
// https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/posts-api),
// content.multiImage.images[] {id, altText} for 2 to 20 ("minimum of 2
// images and maximum of 20 images",
// https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/multiimage-post-api).
const (
	// maxImages is the most images on one post (MultiImage API).
	maxImages = 20
	// maxImagePixels is the largest width × height UploadMedia sends and
	// Capabilities declares. The Images API takes images "less than
	// 36,152,320" pixels; a declared limit is inclusive (package mediafit
	// fits an image to at most MaxMediaPixels), hence one less. 36,152,320
	// is 7360 × 4912, a full-size photo of some cameras, which mediafit then
	// shrinks by a pixel row instead of LinkedIn failing its processing.
	maxImagePixels = 36_152_320 - 1
	// maxImageBytes is 0, no known limit: LinkedIn documents no byte limit
	// for images (the Images API page gives pixels, formats and GIF frames
	// only; third parties' "5 MB" and the like are their own).
	maxImageBytes = 0

	// Image statuses (Images API, image schema).
	imageWaitingUpload    = "WAITING_UPLOAD"
	imageProcessing       = "PROCESSING"
	imageAvailable        = "AVAILABLE"
	imageProcessingFailed = "PROCESSING_FAILED"

	// defaultPollFirst, defaultPollMax and defaultProcessingWait bound the
	// wait for an uploaded image to become AVAILABLE: the first pause
	// between reads of its status, the longest pause (each pause doubles
	// up to it) and the whole wait. LinkedIn documents no processing time;
	// images are usually available within seconds.
	defaultPollFirst      = 500 * time.Millisecond
	defaultPollMax        = 5 * time.Second
	defaultProcessingWait = time.Minute
)

// imageURNPattern is an image URN as initializeUpload answers it
// ("urn:li:image:C4E10AQFoyyAjHPMQuQ"). No white space: the media id
// separates the URN from the alt text with a space.
var imageURNPattern = regexp.MustCompile(`^urn:li:image:\S+$`)

// imageFormats are the formats the Images API takes (JPG, PNG, GIF), by
// the name image.DecodeConfig gives them. A binary may register more
// decoders (WebP, BMP); those formats are still refused.
var imageFormats = map[string]bool{"jpeg": true, "png": true, "gif": true}

// encodeMediaID is the media id UploadMedia returns and read-back rebuilds
// for an image on a post: the image URN, and when there is alt text, a
// space and the alt text query-escaped (url.QueryEscape, so it holds no
// space). The port's PublishRequest carries only media ids, and LinkedIn
// takes the alt text with the post, so the id carries it to Publish. Read
// back, content.media or multiImage.images[] {id, altText} give the same
// id, which LookupQuery.MediaSHA256 maps to the image's SHA-256.
func encodeMediaID(urn, alt string) string {
	if alt == "" {
		return urn
	}
	return urn + " " + url.QueryEscape(alt)
}

// decodeMediaID reads a media id made by encodeMediaID. It refuses
// anything else: an id that is not an image URN, more than one space, an
// empty or badly escaped alt part, or an alt part not in encodeMediaID's
// form (so that one image has exactly one id).
func decodeMediaID(id string) (urn, alt string, err error) {
	urn, escaped, hasAlt := strings.Cut(id, " ")
	if !imageURNPattern.MatchString(urn) {
		return "", "", fmt.Errorf("media id %q is not an image from UploadMedia (want urn:li:image:…)", id)
	}
	if !hasAlt {
		return urn, "", nil
	}
	alt, err = url.QueryUnescape(escaped)
	if err != nil {
		return "", "", fmt.Errorf("media id %q: alt text: %w", id, err)
	}
	if alt == "" || url.QueryEscape(alt) != escaped {
		return "", "", fmt.Errorf("media id %q: the alt text is not encoded as UploadMedia encodes it", id)
	}
	return urn, alt, nil
}

// mediaRef is an image on a post: content.media, or one of
// content.multiImage.images (posts-api, "MediaContent"; MultiImage API).
type mediaRef struct {
	ID      string `json:"id"`
	AltText string `json:"altText,omitempty"`
}

// postContent is a post's content: one image, or 2 to 20.
type postContent struct {
	Media      *mediaRef   `json:"media,omitempty"`
	MultiImage *multiImage `json:"multiImage,omitempty"`
}

type multiImage struct {
	Images []mediaRef `json:"images"`
}

// contentOf builds the post's content from the media ids, in order; nil
// when there are none. A malformed id, or more than maxImages, is
// Rejected before anything is sent.
func contentOf(op string, ids []string) (*postContent, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if len(ids) > maxImages {
		return nil, &platform.Rejected{Reason: ReasonTooManyMedia, Message: fmt.Sprintf("%s: %d images; a LinkedIn post takes at most %d", op, len(ids), maxImages)}
	}
	refs := make([]mediaRef, 0, len(ids))
	for i, id := range ids {
		urn, alt, err := decodeMediaID(id)
		if err != nil {
			return nil, &platform.Rejected{Reason: ReasonInvalidMedia, Message: fmt.Sprintf("%s: media[%d]: %v", op, i, err)}
		}
		refs = append(refs, mediaRef{ID: urn, AltText: alt})
	}
	if len(refs) == 1 {
		return &postContent{Media: &refs[0]}, nil
	}
	return &postContent{MultiImage: &multiImage{Images: refs}}, nil
}

// alignMedia returns ids read back from a post with each id that
// shaByID does not hold replaced by the id in shaByID naming the same
// image URN, if any. An image URN names one upload, whose bytes are the
// same whatever its alt text, so a post whose alt text LinkedIn returned
// altered is still recognised by its images.
func alignMedia(ids []string, shaByID map[string]string) []string {
	if len(ids) == 0 || len(shaByID) == 0 {
		return ids
	}
	byURN := make(map[string]string, len(shaByID))
	for id := range shaByID {
		if urn, _, err := decodeMediaID(id); err == nil {
			byURN[urn] = id
		}
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id
		if _, ok := shaByID[id]; ok {
			continue
		}
		if urn, _, err := decodeMediaID(id); err == nil {
			if ours, ok := byURN[urn]; ok {
				out[i] = ours
			}
		}
	}
	return out
}

// checkImage refuses, before anything is sent, what the Images API does
// not take: bytes that are not a JPG, GIF or PNG image, and an image of
// more than maxImagePixels pixels. The format is read from the bytes, not
// from the declared content type. GIF frames (at most 250) are left to
// LinkedIn: counting them means decoding every frame.
func checkImage(op string, m platform.MediaUpload) error {
	if len(m.Data) == 0 {
		return &platform.Rejected{Reason: ReasonMediaUnsupported, Message: op + ": the attachment is empty"}
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(m.Data))
	if err != nil || !imageFormats[format] {
		return &platform.Rejected{Reason: ReasonMediaUnsupported, Message: fmt.Sprintf(
			"%s: the attachment (%q, declared %q) is not a JPG, GIF or PNG image, the formats LinkedIn takes", op, m.Filename, m.ContentType)}
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > maxImagePixels {
		return &platform.Rejected{Reason: ReasonMediaTooLarge, Message: fmt.Sprintf(
			"%s: the image is %d×%d (%d pixels); LinkedIn takes fewer than %d", op, cfg.Width, cfg.Height, px, maxImagePixels+1)}
	}
	return nil
}

// initializedUpload is initializeUpload's answer.
type initializedUpload struct {
	Value struct {
		UploadURLExpiresAt int64  `json:"uploadUrlExpiresAt"`
		UploadURL          string `json:"uploadUrl"`
		Image              string `json:"image"`
	} `json:"value"`
}

// UploadMedia uploads one image through the Images API and returns once
// LinkedIn reports it AVAILABLE. The returned RemoteID carries the image
// URN and m.Alt (encodeMediaID), for Publish. Three calls:
//
//  1. POST /rest/images?action=initializeUpload (a write, sent once) with
//     the author as owner; 5xx or a lost answer is Ambiguous (an image
//     record may exist, unattached: invisible);
//  2. PUT of the bytes to the answered upload URL (a write, sent once),
//     which must be https on a linkedin.com host, or on the configured
//     BaseURL's scheme and host (a test server): the bearer token goes with
//     it, so it never goes anywhere else;
//  3. GET /rest/images/{urn} (reads) until AVAILABLE, pausing
//     defaultPollFirst and doubling up to defaultPollMax, for at most
//     defaultProcessingWait. PROCESSING_FAILED is Rejected with
//     ReasonProcessingFailed; anything else that keeps the image from
//     being seen AVAILABLE (the wait or ctx ending, a read failing, an
//     unknown status) is Ambiguous, as the upload itself may yet finish. A
//     403 to the read (the token may not read images) is not waited on:
//     the upload was accepted, and the receipt is returned.
//
// Ambiguous is safe here: an image that is attached to no post is shown
// nowhere, so the publisher uploads again (publishing.ReasonOrphanUpload).
// Bytes that are not a JPG, GIF or PNG image (ReasonMediaUnsupported), or
// an image over the pixel limit (ReasonMediaTooLarge), are refused before
// anything is sent. The upload URL, which carries signed parameters, is in
// no error.
func (c *Client) UploadMedia(ctx context.Context, m platform.MediaUpload) (platform.MediaReceipt, error) {
	const op = "upload media"
	if err := checkImage(op, m); err != nil {
		return platform.MediaReceipt{}, err
	}
	urn, uploadURL, err := c.initializeUpload(ctx)
	if err != nil {
		return platform.MediaReceipt{}, err
	}
	if err := c.putImage(ctx, uploadURL, m.Data); err != nil {
		return platform.MediaReceipt{}, err
	}
	if err := c.waitAvailable(ctx, urn); err != nil {
		return platform.MediaReceipt{}, err
	}
	return platform.MediaReceipt{RemoteID: encodeMediaID(urn, m.Alt)}, nil
}

// initializeUpload registers an upload owned by the author and returns
// the image URN and the URL to PUT the bytes to.
func (c *Client) initializeUpload(ctx context.Context) (urn string, uploadURL *url.URL, err error) {
	const op = "initialize image upload"
	body, err := encodeJSON(map[string]any{"initializeUploadRequest": map[string]string{"owner": c.author}})
	if err != nil {
		return "", nil, &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: encode body: %v", op, err)}
	}
	h := c.header()
	h.Set("Content-Type", "application/json")
	resp, err := c.http.Write(ctx, op, httpcall.Request{
		Method: http.MethodPost, URL: c.base + "/rest/images", Query: url.Values{"action": {"initializeUpload"}}, Header: h, Body: body,
	})
	if err != nil {
		return "", nil, err
	}
	if !resp.OK() {
		return "", nil, c.classify(op, resp, true)
	}
	var ans initializedUpload
	if err := json.Unmarshal(resp.Body, &ans); err != nil {
		return "", nil, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: decode answer (an image may have been registered): %w", op, err)}
	}
	urn = strings.TrimSpace(ans.Value.Image)
	if !imageURNPattern.MatchString(urn) || ans.Value.UploadURL == "" {
		return "", nil, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf(
			"%s: LinkedIn answered %d without an image URN and an upload URL; an image may have been registered", op, resp.Status)}
	}
	uploadURL, err = c.checkUploadURL(op, ans.Value.UploadURL)
	if err != nil {
		return "", nil, err
	}
	return urn, uploadURL, nil
}

// checkUploadURL accepts the upload URL initializeUpload answered only
// where the bearer token may go: https on linkedin.com or a subdomain
// (www.linkedin.com/dms-uploads/…), or the scheme and host of the
// configured BaseURL (a test server). It must be absolute, without user
// info or fragment. The refusal names the host at most, never the URL.
func (c *Client) checkUploadURL(op, raw string) (*url.URL, error) {
	refuse := func(why string) error {
		return &platform.Rejected{Reason: ReasonInvalidUploadURL, Message: fmt.Sprintf("%s: LinkedIn answered an upload URL %s; nothing was uploaded", op, why)}
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return nil, refuse("that is not an absolute URL")
	}
	if u.User != nil || u.Fragment != "" {
		return nil, refuse("with user info or a fragment")
	}
	if base, err := url.Parse(c.base); err == nil && u.Scheme == base.Scheme && strings.EqualFold(u.Host, base.Host) {
		return u, nil
	}
	if u.Scheme != "https" {
		return nil, refuse(fmt.Sprintf("that is not https (%s)", u.Scheme))
	}
	host := strings.ToLower(u.Hostname())
	if host != "linkedin.com" && !strings.HasSuffix(host, ".linkedin.com") {
		return nil, refuse(fmt.Sprintf("on %s, not a linkedin.com host; the token is not sent there", host))
	}
	return u, nil
}

// putImage uploads the bytes to the upload URL, exactly once, with the
// bearer token (Images API, "Upload the Image"). Any 2xx is success (the
// page shows 201). Errors are redacted of the URL and its signed
// parameters, should the upload host echo them.
func (c *Client) putImage(ctx context.Context, u *url.URL, data []byte) error {
	const op = "upload image bytes"
	c.mu.Lock()
	token := c.cred.AccessToken
	c.mu.Unlock()
	// The URL is sent as LinkedIn wrote it: re-encoding its query could
	// reorder or re-escape signed parameters.
	resp, err := c.http.Write(ctx, op, httpcall.Request{Method: http.MethodPut, URL: u.String(), Header: httpcall.Bearer(token), Body: data})
	if err == nil && !resp.OK() {
		err = c.classify(op, resp, true)
	}
	return httpcall.Redact(err, httpcall.URLSecrets(u.String())...)
}

// imageEntity is the part of an image the adapter reads (Images API,
// "Get a Single Image").
type imageEntity struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// waitAvailable reads the image until LinkedIn reports it AVAILABLE (see
// UploadMedia for what each answer becomes).
func (c *Client) waitAvailable(ctx context.Context, urn string) error {
	const op = "wait for image"
	// The writes were answered 2xx; a read's status says nothing of
	// their outcome, so the Ambiguous carries none.
	pending := func(cause error) error {
		return &platform.Ambiguous{Err: fmt.Errorf("%s %s (the upload may still complete; an unattached image is shown nowhere): %w", op, urn, cause)}
	}
	start := time.Now()
	pause := c.pollFirst
	for {
		resp, err := c.http.Read(ctx, op, httpcall.Request{Method: http.MethodGet, URL: c.base + "/rest/images/" + url.QueryEscape(urn), Header: c.header()})
		if err != nil {
			return pending(plainCause(ctx, err))
		}
		var status string
		switch resp.Status {
		case http.StatusOK:
			var img imageEntity
			if err := json.Unmarshal(resp.Body, &img); err != nil {
				return pending(fmt.Errorf("decode image: %w", err))
			}
			status = img.Status
		case http.StatusForbidden:
			// The token may upload but not read images: the bytes were
			// accepted, which is as far as it can be watched.
			return nil
		default:
			return pending(plainCause(ctx, c.classify(op, resp, false)))
		}
		switch status {
		case imageAvailable:
			return nil
		case imageProcessingFailed:
			return &platform.Rejected{Reason: ReasonProcessingFailed, Message: fmt.Sprintf(
				"%s %s: LinkedIn could not process the image (%s); check its format (JPG, GIF, PNG), size and GIF frames (at most 250)", op, urn, status)}
		case imageProcessing, imageWaitingUpload:
		default:
			return pending(fmt.Errorf("unknown image status %q", status))
		}
		if time.Since(start)+pause > c.processingWait {
			return pending(fmt.Errorf("still %s after %s", status, time.Since(start).Round(time.Millisecond)))
		}
		if err := httpcall.Sleep(ctx, pause); err != nil {
			return pending(fmt.Errorf("still %s: %w", status, err))
		}
		pause = min(2*pause, c.pollMax)
	}
}

// plainCause turns a classified error into a plain cause for an
// Ambiguous (whose chain must hold one failure class), keeping a context
// error reachable with errors.Is.
func plainCause(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", err.Error(), ctxErr)
	}
	return errors.New(err.Error())
}
