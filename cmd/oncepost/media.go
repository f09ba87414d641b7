package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"oncepost/shared/mediafit"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/s3media"
)

// maxMediaFileBytes bounds a file `post add` imports. Instances accept
// less (Mastodon's default image limit is 16 MB); the account's own limit
// is checked after the post's targets are known.
const maxMediaFileBytes = 64 << 20

// mediaTypes are the attachment types oncepost imports: the image types
// every Mastodon instance accepts, by their sniffed content type.
var mediaTypes = map[string]string{
	"image/png":  ".png",
	"image/jpeg": ".jpg",
	"image/gif":  ".gif",
	"image/webp": ".webp",
}

// importedMedia is a file read for a post, not yet copied.
type importedMedia struct {
	post.Media
	data []byte
	// index is the attachment's position in the draft.
	index int
}

// readMediaFile reads an attachment, hashes it, sniffs its content type
// (http.DetectContentType, the WHATWG sniffing algorithm: the file's bytes
// decide, not its name) and decodes it in full (mediafit.Verify). field
// names the input in errors.
func readMediaFile(field, path, alt string) (importedMedia, error) {
	f, err := os.Open(path)
	if err != nil {
		return importedMedia{}, badInput("%s: cannot read %s: %v", field, path, unwrapPathError(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxMediaFileBytes+1))
	if err != nil {
		return importedMedia{}, badInput("%s: cannot read %s: %v", field, path, unwrapPathError(err))
	}
	if len(data) > maxMediaFileBytes {
		return importedMedia{}, badInput("%s: %s is larger than %d MB; resize it first", field, path, maxMediaFileBytes>>20)
	}
	if len(data) == 0 {
		return importedMedia{}, badInput("%s: %s is empty", field, path)
	}
	ct := http.DetectContentType(data)
	ext, ok := mediaTypes[ct]
	if !ok {
		return importedMedia{}, badInput("%s: %s is %s, not an image oncepost can attach; use PNG, JPEG, GIF or WebP", field, path, ct)
	}
	// Every pixel of every frame is decoded now: a file cut short or
	// damaged would otherwise be stored, and refused by the platform only
	// at the slot.
	if err := mediafit.Verify(data, ct); err != nil {
		return importedMedia{}, badInput("%s: %s is not a whole %s image (%v); save or download it again", field, path, strings.ToUpper(strings.TrimPrefix(ext, ".")), err)
	}
	return newImportedMedia(data, ct, ext, alt), nil
}

func newImportedMedia(data []byte, ct, ext, alt string) importedMedia {
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	return importedMedia{Media: post.Media{Ref: sha + ext, SHA256: sha, ContentType: ct, Alt: alt}, data: data}
}

// fitMedia fits every imported image to the image limits of each
// platform the post goes to (publishing.Desk.FitLimits) (mediafit: resized and re-encoded,
// deterministically, only when over a limit), before anything is stored.
// A fitted version is recorded on the post's attachment (media, indexed
// as the files are) for its platform (post.Media.Fitted): those bytes are
// what is stored, hashed, fingerprinted and uploaded on every attempt
// there, while platforms that take the original get it untouched. It
// returns the files to store, the originals and each distinct fitted
// version, and a note per change.
func fitMedia(media []post.Media, files []importedMedia, limits map[string]publishing.ImageLimits) ([]importedMedia, []string, error) {
	var notes []string
	stored := slices.Clone(files)
	seen := map[string]bool{}
	for _, f := range files {
		seen[f.Ref] = true
	}
	platforms := slices.Sorted(maps.Keys(limits))
	for _, f := range files {
		i := f.index
		for _, name := range platforms {
			fl := limits[name]
			r, err := mediafit.Fit(f.data, f.ContentType, mediafit.Limits{MaxBytes: fl.MaxBytes, MaxPixels: fl.MaxPixels, Formats: fl.Formats})
			if err != nil {
				return nil, nil, badInput("media[%d]: for %s: %v; resize it by hand", i, name, err)
			}
			if !r.Changed {
				continue
			}
			ext, ok := mediaTypes[r.ContentType]
			if !ok {
				return nil, nil, fmt.Errorf("media[%d]: fitted to %s for %s, which oncepost does not store", i, r.ContentType, name)
			}
			fitted := newImportedMedia(r.Data, r.ContentType, ext, f.Alt)
			m := &media[i]
			if m.Fitted == nil {
				m.Fitted = map[string]post.Fitted{}
			}
			m.Fitted[name] = post.Fitted{Ref: fitted.Ref, SHA256: fitted.SHA256, ContentType: fitted.ContentType}
			if !seen[fitted.Ref] {
				seen[fitted.Ref] = true
				stored = append(stored, fitted)
			}
			notes = append(notes, fmt.Sprintf("media[%d]: %.2f MB → %.2f MB %s %dx%d on %s, to fit %s",
				i, float64(len(f.data))/1e6, float64(len(r.Data))/1e6, r.ContentType, r.Width, r.Height, name, fl.Who))
		}
	}
	return stored, notes, nil
}

// mediaDir is the embedded runtime's media directory.
type mediaDir string

// ImportMedia stores the attachment in the directory (storeMedia).
func (d mediaDir) ImportMedia(_ context.Context, m importedMedia) error {
	return storeMedia(string(d), m)
}

// PublicURLs is false: the embedded runtime has no public address to
// give an attachment.
func (mediaDir) PublicURLs() bool { return false }

// MediaSize is the size of the attachment's file in the directory.
func (d mediaDir) MediaSize(_ context.Context, ref string) (int64, error) {
	if !filepath.IsLocal(ref) {
		return 0, fmt.Errorf("media ref %q is not a file name in the media directory: %w", ref, post.ErrNotFound)
	}
	fi, err := os.Stat(filepath.Join(string(d), ref))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("media %s: %w", ref, post.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("media %s: %w", ref, err)
	}
	return fi.Size(), nil
}

// mediaBucket is a stack's attachments' bucket.
type mediaBucket struct{ s *s3media.Store }

// PublicURLs is true: the stack's publisher signs URLs of the bucket's
// objects.
func (mediaBucket) PublicURLs() bool { return true }

// MediaSize reads the attachment's object to measure it (the bucket's
// port has no HeadObject; attachments are a few MB, and only a draft that
// names a stored attachment by its ref is measured this way).
func (b mediaBucket) MediaSize(ctx context.Context, ref string) (int64, error) {
	data, err := b.s.ReadMedia(ctx, ref)
	if errors.Is(err, publishing.ErrMediaInvalid) {
		return 0, fmt.Errorf("%w (%v)", post.ErrNotFound, err)
	}
	return int64(len(data)), err
}

// ImportMedia uploads the attachment under its ref (its content hash).
func (b mediaBucket) ImportMedia(ctx context.Context, m importedMedia) error {
	return b.s.PutMedia(ctx, m.Ref, m.ContentType, m.data)
}

// storeMedia copies an imported file into the media directory under its
// content hash (0600, written to a temporary file and renamed, so a reader
// never sees half a file). A file already there has the same bytes.
func storeMedia(dir string, m importedMedia) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("media directory: %w", err)
	}
	final := filepath.Join(dir, m.Ref)
	if _, err := os.Stat(final); err == nil {
		return nil
	}
	tmp, err := os.CreateTemp(dir, ".import-*")
	if err != nil {
		return fmt.Errorf("import media: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(m.data); err != nil {
		tmp.Close()
		return fmt.Errorf("import media: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("import media: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("import media: %w", err)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return fmt.Errorf("import media: %w", err)
	}
	return nil
}

// unwrapPathError drops the path and operation an *os.PathError repeats.
func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
