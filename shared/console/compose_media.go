package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"oncepost/shared/httpapi"
	"oncepost/shared/mediafit"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// MediaReader reads a stored attachment's bytes (the runtime's media
// store): the composer fits an image again when the accounts change, and
// serves the version each platform gets as its preview.
type MediaReader interface {
	// ReadMedia returns the bytes stored under ref, an error wrapping
	// post.ErrNotFound if there are none.
	ReadMedia(ctx context.Context, ref string) ([]byte, error)
}

// maxComposeImages is how many images one form holds.
const maxComposeImages = 4

// ImageFitter gives the image limits of each platform a draft goes to,
// for the composer to fit its images before they are stored
// (publishing.Desk.FitLimits, as `oncepost post add` fits them).
type ImageFitter interface {
	FitLimits(ctx context.Context, dr post.Draft) (post.Post, map[string]publishing.ImageLimits, error)
}

var _ ImageFitter = (*publishing.Desk)(nil)

// maxComposeBytes bounds a POST /compose: one new image (the API's
// upload limit) and 1 MiB of form.
func (h *Handler) maxComposeBytes() int64 {
	return h.cfg.API.MediaLimit() + 1<<20
}

// imageError is a refused upload, in the words the form shows.
type imageError struct{ msg string }

func (e *imageError) Error() string { return e.msg }

// storeImage stores an uploaded image as POST /v1/media does
// (httpapi.StoreImage), up to the API's upload limit; a refusal is an
// *imageError naming the file.
func (h *Handler) storeImage(ctx context.Context, fh *multipart.FileHeader) (post.Media, error) {
	max := h.cfg.API.MediaLimit()
	if fh.Size > max {
		return post.Media{}, &imageError{fmt.Sprintf("%s is %.1f MB, over the %.0f MB an upload may be; resize it", fh.Filename, float64(fh.Size)/1e6, float64(max)/1e6)}
	}
	file, err := fh.Open()
	if err != nil {
		return post.Media{}, fmt.Errorf("compose: open upload: %w", err)
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, max+1))
	if err != nil {
		return post.Media{}, fmt.Errorf("compose: read upload: %w", err)
	}
	m, err := httpapi.StoreImage(ctx, h.cfg.API.Media, data)
	var refused *httpapi.ImageError
	switch {
	case errors.As(err, &refused) && refused.Reason == httpapi.ImageEmpty:
		return post.Media{}, &imageError{fmt.Sprintf("%s is empty", fh.Filename)}
	case errors.As(err, &refused) && refused.Reason == httpapi.ImageNotTaken:
		return post.Media{}, &imageError{fmt.Sprintf("%s is %s, not an image the console takes; use PNG, JPEG, GIF or WebP", fh.Filename, refused.ContentType)}
	case errors.As(err, &refused):
		return post.Media{}, &imageError{fmt.Sprintf("%s is not a whole %s image (%v); save or download it again", fh.Filename, strings.TrimPrefix(refused.ContentType, "image/"), refused.Err)}
	case err != nil:
		return post.Media{}, fmt.Errorf("compose: %w", err)
	}
	return m, nil
}

// fitMedia fits each image to the image limits of each platform the
// draft goes to (Desk.FitLimits, mediafit.Fit, as `oncepost post add`
// does): a version that had to be resized or re-encoded is stored and
// recorded as the image's version there (post.Media.Fitted). It needs the
// limits (Config.Fitter) and the image's bytes (Config.Media; New refuses
// one without the other); without them the images go as they are,
// and validation refuses one over a platform's byte limit. A draft the
// desk refuses is left as it is: the check says why.
func (h *Handler) fitMedia(ctx context.Context, f *composeForm, dr *post.Draft) {
	if h.cfg.Media == nil || h.cfg.Fitter == nil || len(dr.Media) == 0 {
		return
	}
	_, limits, err := h.cfg.Fitter.FitLimits(ctx, *dr)
	if err != nil {
		return
	}
	for i := range f.Media {
		m := &f.Media[i]
		data, err := h.cfg.Media.ReadMedia(ctx, m.Ref)
		if err != nil {
			continue // validation says the attachment is missing
		}
		fitted := map[string]post.Fitted{}
		for _, name := range slices.Sorted(maps.Keys(limits)) {
			fl := limits[name]
			res, err := mediafit.Fit(data, m.ContentType, mediafit.Limits{MaxBytes: fl.MaxBytes, MaxPixels: fl.MaxPixels, Formats: fl.Formats})
			if err != nil || !res.Changed {
				continue // as it is: the check says what does not fit
			}
			v, ok := httpapi.MediaOf(res.Data, res.ContentType)
			if !ok {
				continue
			}
			if err := h.cfg.API.Media.WriteMedia(ctx, v, res.Data); err != nil {
				h.log.WarnContext(ctx, "compose: store a fitted image", "ref", v.Ref, "err", err)
				continue
			}
			fitted[name] = post.Fitted{Ref: v.Ref, SHA256: v.SHA256, ContentType: v.ContentType}
		}
		m.Fitted = nil
		if len(fitted) > 0 {
			m.Fitted = fitted
		}
		m.FittedJSON = fittedJSON(m.Fitted)
		dr.Media[i].Fitted = m.Fitted
	}
}

func fittedJSON(f map[string]post.Fitted) string {
	if len(f) == 0 {
		return ""
	}
	b, _ := json.Marshal(f)
	return string(b)
}

// mediaRef is a stored image's ref, as MediaOf names them.
var mediaRef = regexp.MustCompile(`^[0-9a-f]{64}\.(png|jpg|gif|webp)$`)

var mediaTypes = map[string]string{"png": "image/png", "jpg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}

// showMedia is GET /compose/media/{ref}: a stored image (an original or
// a fitted version), for the previews. Its ref is its content hash, so
// it may be cached for good.
func (h *Handler) showMedia(w http.ResponseWriter, r *http.Request, _ *session) {
	ref := r.PathValue("ref")
	m := mediaRef.FindStringSubmatch(ref)
	if m == nil || h.cfg.Media == nil {
		http.NotFound(w, r)
		return
	}
	data, err := h.cfg.Media.ReadMedia(r.Context(), ref)
	if errors.Is(err, post.ErrNotFound) || errors.Is(err, publishing.ErrMediaInvalid) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", mediaTypes[m[1]])
	w.Header().Set("Cache-Control", "private, max-age=31536000, immutable")
	w.Write(data)
}

// limitUpload answers 413 to a POST /compose over max bytes, and reads
// the form of the others here, bounded: one sent in chunks (no
// Content-Length) is found too big only as it is read, and read later
// (for the CSRF token) it would be an empty form, refused as a forgery. A
// request without a session cookie is left unread for the page to refuse.
func limitUpload(max int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tooBig := func() {
			http.Error(w, fmt.Sprintf("the form is over the %.0f MB the composer takes at once: attach one image at a time", float64(max)/1e6), http.StatusRequestEntityTooLarge)
		}
		if r.ContentLength > max {
			tooBig()
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, max)
		if c, err := r.Cookie(sessionCookie); err != nil || c.Value == "" {
			next.ServeHTTP(w, r)
			return
		}
		// Everything in memory: max bounds it (no temporary files).
		err := r.ParseMultipartForm(max)
		var over *http.MaxBytesError
		switch {
		case errors.As(err, &over):
			tooBig()
			return
		case err != nil && !errors.Is(err, http.ErrNotMultipart):
			http.Error(w, "the form could not be read: send it again", http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
