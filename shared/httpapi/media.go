package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
// decode whole (mediafit.Verify), before anything is stored.
func (s *Server) uploadMedia(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	declared, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if _, ok := mediaExt[declared]; err != nil || !ok {
		return unsupportedType(r, "image/png, image/jpeg, image/gif or image/webp")
	}
	data, prob := readBody(r)
	if prob != nil {
		return prob
	}
	if len(data) == 0 {
		return fieldProblem(r, "body", "is empty", "send the image's bytes as the body")
	}
	if sniffed := http.DetectContentType(data); sniffed != declared {
		p := newProblem(r, http.StatusUnsupportedMediaType, typeUnsupportedMedia, fmt.Sprintf("the bytes are %s, not the %s Content-Type says", sniffed, declared))
		p.Errors = []FieldProblem{{Field: "Content-Type", Problem: "is " + declared + " but the bytes are " + sniffed, Fix: "send the file's own type, or the file you meant"}}
		return p
	}
	if err := mediafit.Verify(data, declared); err != nil {
		return fieldProblem(r, "body", fmt.Sprintf("is not a whole %s image (%v)", strings.TrimPrefix(declared, "image/"), err), "save or download the image again")
	}
	m, _ := MediaOf(data, declared)
	if err := s.cfg.Media.WriteMedia(r.Context(), m, data); err != nil {
		return s.internal(r, fmt.Errorf("store media %s: %w", m.Ref, err))
	}
	return s.writeJSON(w, r, http.StatusCreated, mediaAnswer{Ref: m.Ref, SHA256: m.SHA256, ContentType: declared, Size: len(data)})
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
