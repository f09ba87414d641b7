package x

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

const (
	// segmentSize is the size of one append; X takes chunks of up to 5 MB
	// (https://docs.x.com/x-api/media/quickstart/best-practices).
	segmentSize = 4 << 20
	// maxAltText is the limit of alt_text.text in X's OpenAPI document
	// (CreateMediaMetadataMetadataAltText, maxLength 1000).
	maxAltText = 1000
)

// mediaAnswer is the data of X's initialize, finalize and status answers
// (https://docs.x.com/x-api/media/initialize-media-upload,
// …/finalize-media-upload, …/get-media-upload-status).
type mediaAnswer struct {
	Data struct {
		ID             string          `json:"id"`
		MediaKey       string          `json:"media_key"`
		ProcessingInfo *processingInfo `json:"processing_info"`
	} `json:"data"`
}

// processingInfo is X's processing state of an upload: pending,
// in_progress, failed or succeeded; check_after_secs says when to ask
// again.
type processingInfo struct {
	State          string `json:"state"`
	CheckAfterSecs int    `json:"check_after_secs"`
	Error          *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	} `json:"error"`
}

// UploadMedia uploads one attachment with X's v2 chunked upload and
// returns its media id once it can go on a post:
//
//  1. POST /2/media/upload/initialize {"media_type", "total_bytes",
//     "media_category"} → {"data": {"id"}};
//  2. POST /2/media/upload/:id/append, multipart "segment_index" and
//     "media", one per 4 MiB;
//  3. POST /2/media/upload/:id/finalize; when the answer carries
//     processing_info, GET /2/media/upload?command=STATUS&media_id=:id
//     after check_after_secs until the state is succeeded (ready) or
//     failed (Rejected with ReasonProcessingFailed);
//  4. with m.Alt, POST /2/media/metadata {"id", "metadata": {"alt_text":
//     {"text"}}}.
//
// Each step is a write sent once and classified by httpcall. An upload
// that is not attached to a post has no visible effect and expires, so a
// failed upload is simply done again by the caller. Images are uploaded
// as tweet_image (tweet_gif for GIFs), videos as tweet_video; any other
// type is Rejected with ReasonMediaUnsupported.
func (c *Client) UploadMedia(ctx context.Context, m platform.MediaUpload) (platform.MediaReceipt, error) {
	const op = "upload media"
	if len(m.Data) == 0 {
		return platform.MediaReceipt{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: op + ": no data"}
	}
	if n := utf8.RuneCountInString(m.Alt); n > maxAltText {
		return platform.MediaReceipt{}, &platform.Rejected{Reason: "alt_text_too_long", Message: fmt.Sprintf("%s: alt text of %d characters, X allows %d", op, n, maxAltText)}
	}
	mediaType := strings.ToLower(strings.TrimSpace(m.ContentType))
	if i := strings.IndexByte(mediaType, ';'); i >= 0 {
		mediaType = strings.TrimSpace(mediaType[:i])
	}
	if mediaType == "" {
		mediaType = http.DetectContentType(m.Data)
	}
	category := ""
	switch {
	case mediaType == "image/gif":
		category = "tweet_gif"
	case strings.HasPrefix(mediaType, "image/"):
		category = "tweet_image"
	case strings.HasPrefix(mediaType, "video/"):
		category = "tweet_video"
	default:
		return platform.MediaReceipt{}, &platform.Rejected{Reason: ReasonMediaUnsupported, Message: fmt.Sprintf("%s: X takes images and videos, not %s", op, mediaType)}
	}

	init, err := json.Marshal(map[string]any{"media_type": mediaType, "total_bytes": len(m.Data), "media_category": category})
	if err != nil {
		return platform.MediaReceipt{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: encode body: %v", op, err)}
	}
	a, err := c.mediaStep(ctx, op+": initialize", c.base+"/2/media/upload/initialize", c.jsonHeader(), init)
	if err != nil {
		return platform.MediaReceipt{}, err
	}
	id := a.Data.ID
	if !numericID(id) {
		return platform.MediaReceipt{}, &platform.Ambiguous{Err: fmt.Errorf("%s: initialize answered without a media id", op)}
	}
	for seg, off := 0, 0; off < len(m.Data); seg, off = seg+1, off+segmentSize {
		body, contentType, err := segmentForm(seg, m.Filename, m.Data[off:min(off+segmentSize, len(m.Data))])
		if err != nil {
			return platform.MediaReceipt{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: encode segment: %v", op, err)}
		}
		h := c.auth()
		h.Set("Content-Type", contentType)
		if _, err := c.mediaStep(ctx, fmt.Sprintf("%s: append segment %d", op, seg), c.base+"/2/media/upload/"+id+"/append", h, body); err != nil {
			return platform.MediaReceipt{}, err
		}
	}
	fin, err := c.mediaStep(ctx, op+": finalize", c.base+"/2/media/upload/"+id+"/finalize", c.auth(), nil)
	if err != nil {
		return platform.MediaReceipt{}, err
	}
	if err := c.waitProcessed(ctx, id, fin.Data.ProcessingInfo); err != nil {
		return platform.MediaReceipt{}, err
	}
	if m.Alt != "" {
		meta, err := json.Marshal(map[string]any{"id": id, "metadata": map[string]any{"alt_text": map[string]string{"text": m.Alt}}})
		if err != nil {
			return platform.MediaReceipt{}, &platform.Rejected{Reason: ReasonInvalidRequest, Message: fmt.Sprintf("%s: encode alt text: %v", op, err)}
		}
		if _, err := c.mediaStep(ctx, op+": set alt text", c.base+"/2/media/metadata", c.jsonHeader(), meta); err != nil {
			return platform.MediaReceipt{}, err
		}
	}
	return platform.MediaReceipt{RemoteID: id}, nil
}

// mediaStep sends one write of the upload and decodes its answer (which
// may be empty for append).
func (c *Client) mediaStep(ctx context.Context, op, u string, h http.Header, body []byte) (mediaAnswer, error) {
	resp, err := c.http.Write(ctx, op, httpcall.Request{Method: http.MethodPost, URL: u, Header: h, Body: body})
	if err != nil {
		return mediaAnswer{}, err
	}
	if !resp.OK() {
		return mediaAnswer{}, c.http.Classify(op, resp, true)
	}
	var a mediaAnswer
	if resp.BodyErr != nil || len(bytes.TrimSpace(resp.Body)) > 0 && json.Unmarshal(resp.Body, &a) != nil {
		return mediaAnswer{}, &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: unreadable answer", op)}
	}
	return a, nil
}

// segmentForm is one append's multipart body: segment_index and the
// bytes as the "media" file part.
func segmentForm(index int, filename string, data []byte) ([]byte, string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.WriteField("segment_index", strconv.Itoa(index)); err != nil {
		return nil, "", err
	}
	if filename == "" {
		filename = "media"
	}
	part, err := w.CreateFormFile("media", filename)
	if err != nil {
		return nil, "", err
	}
	if _, err := part.Write(data); err != nil {
		return nil, "", err
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

// waitProcessed polls the upload's status until X has processed it.
// Without processing_info (images, usually) it is ready. A failed state
// is Rejected; a poll that fails, or ctx ending first, is Ambiguous: the
// file was uploaded but is not known to be usable.
func (c *Client) waitProcessed(ctx context.Context, id string, info *processingInfo) error {
	const op = "upload media: status"
	for {
		if info == nil {
			return nil
		}
		switch info.State {
		case "succeeded":
			return nil
		case "failed":
			msg := "processing failed"
			if info.Error != nil {
				msg = firstNonEmpty(info.Error.Message, info.Error.Name, msg)
			}
			return &platform.Rejected{Reason: ReasonProcessingFailed, Message: fmt.Sprintf("%s: media %s: %s", op, id, c.redact(msg))}
		}
		if err := httpcall.Sleep(ctx, c.pollWait(info.CheckAfterSecs)); err != nil {
			return &platform.Ambiguous{Err: fmt.Errorf("%s: media %s uploaded but still processing: %w", op, id, err)}
		}
		resp, err := c.http.Read(ctx, op, httpcall.Request{
			Method: http.MethodGet,
			URL:    c.base + "/2/media/upload",
			Query:  url.Values{"command": {"STATUS"}, "media_id": {id}},
			Header: c.auth(),
		})
		if err != nil {
			return &platform.Ambiguous{Err: fmt.Errorf("media %s uploaded but not known to be ready: %w", id, causeOf(ctx, err))}
		}
		if resp.Status != http.StatusOK {
			return &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("media %s uploaded but not known to be ready: %w", id, causeOf(ctx, c.http.Classify(op, resp, false)))}
		}
		var a mediaAnswer
		if err := json.Unmarshal(resp.Body, &a); err != nil {
			return &platform.Ambiguous{Status: resp.Status, Err: fmt.Errorf("%s: media %s: decode answer: %v", op, id, err)}
		}
		info = a.Data.ProcessingInfo
	}
}

// causeOf turns a classified error into a plain cause for an Ambiguous,
// so that the result has one failure class, keeping a context error
// reachable with errors.Is.
func causeOf(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", err.Error(), ctxErr)
	}
	return errors.New(err.Error())
}
