package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"oncepost/shared/mediafit"
	"oncepost/shared/post"
)

// MediaWriter keeps an uploaded attachment where the runtime's publisher
// reads it (the embedded media directory; on AWS the stack's bucket).
type MediaWriter interface {
	// WriteMedia stores data under m.Ref, its content address; writing a
	// ref that exists is a no-op (the bytes are the same).
	WriteMedia(ctx context.Context, m post.Media, data []byte) error
}

// mediaExt are the attachment types the API takes, by content type, and
// the extension of their ref (as `post add` stores them).
var mediaExt = map[string]string{
	"image/png":  ".png",
	"image/jpeg": ".jpg",
	"image/gif":  ".gif",
	"image/webp": ".webp",
}

// mediaAnswer is POST /v1/media's answer: what a draft's media entry
// names.
type mediaAnswer struct {
	Ref         string `json:"ref"`
	SHA256      string `json:"sha256"`
	ContentType string `json:"content_type"`
	Size        int    `json:"size"`
}

// uploadMedia is POST /v1/media: the raw bytes of an image, stored under
// their SHA-256. The declared type must be one the API takes and match
// the type the bytes are (http.DetectContentType), and the image must
// decode whole (StoreImage), before anything is stored.
func (s *Server) uploadMedia(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	declared, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if _, ok := mediaExt[declared]; err != nil || !ok {
		return unsupportedType(r, "image/png, image/jpeg, image/gif or image/webp")
	}
	data, prob := readBody(r)
	if prob != nil {
		return prob
	}
	if sniffed := http.DetectContentType(data); len(data) > 0 && sniffed != declared {
		p := newProblem(r, http.StatusUnsupportedMediaType, typeUnsupportedMedia, fmt.Sprintf("the bytes are %s, not the %s Content-Type says", sniffed, declared))
		p.Errors = []FieldProblem{{Field: "Content-Type", Problem: "is " + declared + " but the bytes are " + sniffed, Fix: "send the file's own type, or the file you meant"}}
		return p
	}
	m, err := StoreImage(r.Context(), s.cfg.Media, data)
	var refused *ImageError
	switch {
	case errors.As(err, &refused) && refused.Reason == ImageEmpty:
		return fieldProblem(r, "body", "is empty", "send the image's bytes as the body")
	case errors.As(err, &refused) && refused.Reason == ImageBroken:
		return fieldProblem(r, "body", fmt.Sprintf("is not a whole %s image (%v)", strings.TrimPrefix(declared, "image/"), refused.Err), "save or download the image again")
	case errors.As(err, &refused):
		return unsupportedType(r, "image/png, image/jpeg, image/gif or image/webp")
	case err != nil:
		return s.internal(r, err)
	}
	return s.writeJSON(w, r, http.StatusCreated, mediaAnswer{Ref: m.Ref, SHA256: m.SHA256, ContentType: m.ContentType, Size: len(data)})
}

// ImageReason is why StoreImage refuses an upload.
type ImageReason int

// The reasons of an ImageError.
const (
	// ImageEmpty: no bytes.
	ImageEmpty ImageReason = iota + 1
	// ImageNotTaken: the bytes are not PNG, JPEG, GIF or WebP.
	ImageNotTaken
	// ImageBroken: the bytes do not decode whole (a cut or damaged file).
	ImageBroken
)

// ImageError is an upload StoreImage refuses; nothing is stored. Each
// surface says it in its own words: the API as a problem, the console at
// the form's field.
type ImageError struct {
	Reason ImageReason
	// ContentType is the type the bytes are (http.DetectContentType).
	ContentType string
	// Err is why a broken image does not decode (mediafit.Verify).
	Err error
}

func (e *ImageError) Error() string {
	switch e.Reason {
	case ImageEmpty:
		return "the image is empty"
	case ImageNotTaken:
		return fmt.Sprintf("the upload is %s, not PNG, JPEG, GIF or WebP", e.ContentType)
	}
	return fmt.Sprintf("the upload is not a whole %s image: %v", e.ContentType, e.Err)
}

func (e *ImageError) Unwrap() error { return e.Err }

// StoreImage stores an uploaded image as POST /v1/media stores one: its
// type is the one its bytes are (http.DetectContentType), one the API
// takes; it must decode whole (mediafit.Verify); it is named by its
// SHA-256 (MediaOf) and written through media. The console's composer
// stores its uploads by it too, so an image is checked and named alike
// whichever surface took it. A refusal is an *ImageError (nothing is
// stored); any other error is the store's.
func StoreImage(ctx context.Context, media MediaWriter, data []byte) (post.Media, error) {
	if len(data) == 0 {
		return post.Media{}, &ImageError{Reason: ImageEmpty}
	}
	ct := http.DetectContentType(data)
	m, ok := MediaOf(data, ct)
	if !ok {
		return post.Media{}, &ImageError{Reason: ImageNotTaken, ContentType: ct}
	}
	if err := mediafit.Verify(data, ct); err != nil {
		return post.Media{}, &ImageError{Reason: ImageBroken, ContentType: ct, Err: err}
	}
	if err := media.WriteMedia(ctx, m, data); err != nil {
		return post.Media{}, fmt.Errorf("store media %s: %w", m.Ref, err)
	}
	return m, nil
}

// MediaOf names an image as POST /v1/media stores it: ref "<sha256>.<ext>"
// of its bytes, for a content type the API takes (ok false for another).
// The console stores its uploads by it too, so an image has one ref
// whichever surface uploaded it.
func MediaOf(data []byte, contentType string) (m post.Media, ok bool) {
	ext, ok := mediaExt[contentType]
	if !ok {
		return post.Media{}, false
	}
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	return post.Media{Ref: sha + ext, SHA256: sha, ContentType: contentType}, true
}
