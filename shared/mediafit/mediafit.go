// Package mediafit fits an image to a platform's upload limits before it
// is uploaded: bytes per image (Bluesky about 1,000,000, X 5 MB, Mastodon
// what the instance reports), pixels and longest side (Mastodon's default
// 16,777,216 pixels, 4096²), and the formats the platform takes.
//
// Why it is a pure function: the fitted bytes are stored once, and their
// SHA-256 is what the ledger and the post's fingerprint use, so every
// attempt at a post must upload the very same bytes. Fit therefore
// depends on its arguments alone: no clock, no randomness, no map
// iteration, no concurrency; the same input and limits give byte-identical
// output on every call (for one build: the standard library's encoders and
// golang.org/x/image's resampler may round differently on another Go
// version, x/image version or GOARCH, which is why the result is stored
// rather than recomputed).
//
// What it does:
//
//   - An image that already fits (bytes, pixels, longest side, format) is
//     returned as it is, never re-encoded: re-encoding loses quality and
//     drops metadata. Only its header is read.
//   - An image that does not fit is decoded (image/jpeg, image/png,
//     image/gif, and image/webp through golang.org/x/image/webp), scaled
//     down with golang.org/x/image/draw's Catmull-Rom kernel, aspect ratio
//     kept, until its pixels and longest side fit, and encoded as JPEG; as
//     PNG instead when it has transparency and the platform takes PNG, or
//     when the platform takes PNG but not JPEG. So an opaque PNG (a
//     screenshot) that must be re-encoded becomes a JPEG at quality 90.
//   - JPEG is tried at quality 90, 85, … 50, then at 0.85× smaller sizes
//     (quality 50) until it is under MaxBytes. A transparent image over
//     MaxBytes is tried as PNG at up to four 0.85× smaller sizes first
//     (down to about half the side), then flattened onto white and encoded
//     as JPEG when the platform takes JPEG. The number of attempts is
//     bounded; when nothing fits, the error names the limit and the
//     smallest encoding reached.
//   - Re-encoding drops EXIF, so the EXIF orientation of a JPEG (tag 0x0112
//     only, read by a small parser) is applied to the pixels first: the
//     fitted image shows upright without the tag. Nothing else is kept or
//     stripped on purpose: the encoders write no metadata at all.
//   - Animated images (a GIF of more than one frame, an animated WebP) are
//     returned unchanged when they fit, and refused when they do not:
//     flattening an animation to one frame silently would change the post.
//   - Decompression bombs are refused from the header, before decoding:
//     nothing over MaxInputPixels is decoded.
//
// Verify is the check to run before: it decodes an image in full, every
// frame, so a file cut short or damaged behind a whole header is refused
// when the post is added (Fit reads only the header of an image that
// fits).
package mediafit

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"

	"golang.org/x/image/draw"
	"golang.org/x/image/webp"
)

// The content types Fit reads. It writes only JPEG and PNG.
const (
	JPEG = "image/jpeg"
	PNG  = "image/png"
	GIF  = "image/gif"
	WebP = "image/webp"
)

// MaxInputPixels is the most pixels (width×height, from the header) Fit
// accepts: 100 MP, about 400 MB once decoded as RGBA. A larger image is
// refused from its header, before any pixel is decoded and whatever the
// limits, even one that would fit them as it is: no platform oncepost
// posts to takes such an image, and a header that claims one is far more
// likely a decompression bomb.
const MaxInputPixels = 100_000_000

// Tuning of the search for an encoding under MaxBytes. They are part of
// what makes the output what it is: changing one changes the fitted bytes
// of images fitted after the change (stored ones stay as they are).
const (
	jpegQualityStart = 90  // first JPEG quality tried
	jpegQualityStep  = 5   // quality step down
	jpegQualityFloor = 50  // lowest quality; below it the image shrinks
	scaleNum         = 85  // each smaller size is scaleNum/scaleDen of
	scaleDen         = 100 // the previous longest side (0.85×)
	maxScaleSteps    = 40  // smaller sizes tried at most (0.85^40 ≈ 0.15%)
	pngScaleSteps    = 4   // smaller PNG sizes tried before flattening to JPEG (≈ half the side)
	pngCompression   = png.DefaultCompression
	maxJPEGSide      = 65535 // the most a JPEG header can declare
)

// defaultFormats are the formats taken when Limits.Formats is empty.
var defaultFormats = []string{JPEG, PNG, GIF}

// The errors Fit returns wrap one of these, so that callers can tell a
// post that can never be published (all of them) from a passing failure.
var (
	// ErrUnsupportedFormat: Fit cannot read the input's content type, or
	// the limits accept neither JPEG nor PNG for a re-encoded image.
	ErrUnsupportedFormat = errors.New("mediafit: unsupported format")
	// ErrUndecodable: the data is not an image of its content type.
	ErrUndecodable = errors.New("mediafit: undecodable image")
	// ErrTooManyPixels: the header declares more than MaxInputPixels.
	ErrTooManyPixels = errors.New("mediafit: too many pixels to decode")
	// ErrAnimated: an animated image is over the limits; animations are
	// not resized.
	ErrAnimated = errors.New("mediafit: animated image over the limits")
	// ErrCannotFit: no encoding tried came under the limits.
	ErrCannotFit = errors.New("mediafit: cannot fit image")
	// ErrBadLimits: a limit is negative.
	ErrBadLimits = errors.New("mediafit: invalid limits")
)

// Limits are what a platform accepts for one image.
type Limits struct {
	// MaxBytes is the most bytes of one image; 0 means no byte limit.
	MaxBytes int64
	// MaxPixels is the most width×height; 0 means no limit.
	MaxPixels int64
	// MaxSide is the most pixels of the longest side; 0 means no limit.
	MaxSide int
	// Formats are the accepted content types, such as "image/jpeg" and
	// "image/png" (case and parameters ignored, "image/jpg" read as
	// "image/jpeg"); empty means image/jpeg, image/png and image/gif.
	Formats []string
}

// Result is an image that fits the limits.
type Result struct {
	// Data is the image: the input itself when Changed is false, else a
	// new encoding.
	Data []byte
	// ContentType is Data's content type, in canonical form
	// ("image/jpeg", never "image/jpg").
	ContentType string
	// Width and Height are the image's size as it is shown, in pixels:
	// for an unchanged JPEG with an EXIF orientation that turns it by a
	// quarter (5 to 8), the stored pixel rows are Height long. A re-encoded
	// image has its orientation applied, so there the two agree.
	Width, Height int
	// Changed is false when the input already fit and Data is the input,
	// returned as it is (not copied).
	Changed bool
}

// Fit returns data fitted to lim: data itself when it already fits, else
// a deterministic re-encoding (see the package documentation). The content
// type names data's format; it is not sniffed, and data that is not of
// that format is an error wrapping ErrUndecodable.
func Fit(data []byte, contentType string, lim Limits) (Result, error) {
	if lim.MaxBytes < 0 || lim.MaxPixels < 0 || lim.MaxSide < 0 {
		return Result{}, fmt.Errorf("%w: MaxBytes %d, MaxPixels %d, MaxSide %d (0 is no limit, none may be negative)",
			ErrBadLimits, lim.MaxBytes, lim.MaxPixels, lim.MaxSide)
	}
	ct := canonical(contentType)
	cfg, err := decodeConfig(ct, data)
	if err != nil {
		return Result{}, err
	}
	w, h := cfg.Width, cfg.Height
	if px := int64(w) * int64(h); px > MaxInputPixels {
		return Result{}, fmt.Errorf("%w: %s is %dx%d (%s), over the %s mediafit decodes",
			ErrTooManyPixels, ct, w, h, megapixels(px), megapixels(MaxInputPixels))
	}
	orientation := 1
	if ct == JPEG {
		orientation = exifOrientation(data)
	}
	// dw×dh is the image as shown, which is what the limits apply to.
	dw, dh := w, h
	if orientation >= 5 {
		dw, dh = h, w
	}

	over := lim.overs(ct, int64(len(data)), dw, dh)
	if len(over) == 0 {
		return Result{Data: data, ContentType: ct, Width: dw, Height: dh}, nil
	}
	if isAnimated(ct, data) {
		return Result{}, fmt.Errorf("%w: animated %s %dx%d, %d bytes: %s; animated images are not resized",
			ErrAnimated, ct, dw, dh, len(data), strings.Join(over, "; "))
	}
	canJPEG, canPNG := lim.accepts(JPEG), lim.accepts(PNG)
	if !canJPEG && !canPNG {
		return Result{}, fmt.Errorf("%w: %s %dx%d must be re-encoded (%s), but the limits accept only %s and mediafit encodes only %s and %s",
			ErrUnsupportedFormat, ct, dw, dh, strings.Join(over, "; "), strings.Join(lim.formats(), ", "), JPEG, PNG)
	}

	src, err := decode(ct, data)
	if err != nil {
		return Result{}, err
	}
	if canvas := image.Rect(0, 0, w, h); src.Bounds() != canvas {
		// A GIF's first frame may cover part of its logical screen only:
		// place it on a transparent canvas of the size the header declares.
		c := image.NewNRGBA(canvas)
		draw.Draw(c, src.Bounds(), src, src.Bounds().Min, draw.Src)
		src = c
	}
	f := &fitter{
		src:         src,
		orientation: orientation,
		dw:          dw,
		dh:          dh,
		lim:         lim,
	}
	long := f.fitLongSide()
	var res Result
	var ok bool
	switch opaque := isOpaque(src); {
	case !opaque && canPNG:
		steps := pngScaleSteps
		if !canJPEG {
			steps = maxScaleSteps
		}
		res, ok, err = f.tryPNG(long, steps)
		if err == nil && !ok && canJPEG {
			res, ok, err = f.tryJPEG(long, true)
		}
	case canJPEG:
		res, ok, err = f.tryJPEG(long, !opaque)
	default: // opaque, PNG only
		res, ok, err = f.tryPNG(long, maxScaleSteps)
	}
	if err != nil {
		return Result{}, err
	}
	if !ok {
		return Result{}, fmt.Errorf("%w: %s %dx%d, %d bytes (%s): the smallest encoding reached is %d bytes (%s), over the %d-byte limit",
			ErrCannotFit, ct, dw, dh, len(data), strings.Join(over, "; "), f.best.size, f.best.what, lim.MaxBytes)
	}
	return res, nil
}

// canonical is contentType lower-cased, without parameters, with the
// common alias image/jpg read as image/jpeg.
func canonical(contentType string) string {
	ct, _, _ := strings.Cut(contentType, ";")
	ct = strings.ToLower(strings.TrimSpace(ct))
	if ct == "image/jpg" || ct == "image/pjpeg" {
		return JPEG
	}
	return ct
}

// formats is the accepted content types, canonical, in the caller's order.
func (l Limits) formats() []string {
	if len(l.Formats) == 0 {
		return defaultFormats
	}
	out := make([]string, 0, len(l.Formats))
	for _, f := range l.Formats {
		out = append(out, canonical(f))
	}
	return out
}

// accepts tells whether ct (canonical) is among the accepted formats.
func (l Limits) accepts(ct string) bool {
	for _, f := range l.formats() {
		if f == ct {
			return true
		}
	}
	return false
}

// fitsSize tells whether a w×h image is within the pixel and side limits.
func (l Limits) fitsSize(w, h int) bool {
	if l.MaxPixels > 0 && int64(w)*int64(h) > l.MaxPixels {
		return false
	}
	return l.MaxSide <= 0 || max(w, h) <= l.MaxSide
}

// overs says, in words, which limits an image of type ct, n bytes and
// w×h pixels as shown is over; none when it fits.
func (l Limits) overs(ct string, n int64, w, h int) []string {
	var out []string
	if !l.accepts(ct) {
		out = append(out, fmt.Sprintf("%s is not among the accepted formats (%s)", ct, strings.Join(l.formats(), ", ")))
	}
	if l.MaxBytes > 0 && n > l.MaxBytes {
		out = append(out, fmt.Sprintf("%d bytes, over the %d-byte limit", n, l.MaxBytes))
	}
	if px := int64(w) * int64(h); l.MaxPixels > 0 && px > l.MaxPixels {
		out = append(out, fmt.Sprintf("%dx%d (%s), over the %s limit", w, h, megapixels(px), megapixels(l.MaxPixels)))
	}
	if l.MaxSide > 0 && max(w, h) > l.MaxSide {
		out = append(out, fmt.Sprintf("longest side %d px, over the %d px limit", max(w, h), l.MaxSide))
	}
	return out
}

// megapixels formats a pixel count for an error message.
func megapixels(px int64) string {
	return fmt.Sprintf("%.1f MP", float64(px)/1e6)
}

// decodeConfig reads data's header with the decoder of ct.
func decodeConfig(ct string, data []byte) (image.Config, error) {
	var cfg image.Config
	var err error
	r := bytes.NewReader(data)
	switch ct {
	case JPEG:
		cfg, err = jpeg.DecodeConfig(r)
	case PNG:
		cfg, err = png.DecodeConfig(r)
	case GIF:
		cfg, err = gif.DecodeConfig(r)
	case WebP:
		cfg, err = webp.DecodeConfig(r)
	default:
		return image.Config{}, fmt.Errorf("%w: %q (mediafit reads %s, %s, %s and %s)", ErrUnsupportedFormat, ct, JPEG, PNG, GIF, WebP)
	}
	if err != nil {
		return image.Config{}, fmt.Errorf("%w: %d bytes of %s data: %v", ErrUndecodable, len(data), ct, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return image.Config{}, fmt.Errorf("%w: %s data declares a %dx%d image", ErrUndecodable, ct, cfg.Width, cfg.Height)
	}
	return cfg, nil
}

// decode decodes data with the decoder of ct; a GIF decodes to its first
// frame (Fit refuses animated ones before).
func decode(ct string, data []byte) (image.Image, error) {
	var m image.Image
	var err error
	r := bytes.NewReader(data)
	switch ct {
	case JPEG:
		m, err = jpeg.Decode(r)
	case PNG:
		m, err = png.Decode(r)
	case GIF:
		m, err = gif.Decode(r)
	case WebP:
		m, err = webp.Decode(r)
	default:
		err = errors.New("no decoder") // decodeConfig refused it already
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s data: %v", ErrUndecodable, ct, err)
	}
	return m, nil
}

// isOpaque tells whether every pixel of m is fully opaque. All the
// decoders' image types can tell; an image that cannot is taken as
// transparent, which at worst keeps it PNG.
func isOpaque(m image.Image) bool {
	o, ok := m.(interface{ Opaque() bool })
	return ok && o.Opaque()
}

// fitter re-encodes one decoded image at decreasing sizes and qualities.
type fitter struct {
	src         image.Image
	orientation int // EXIF orientation, 1 to 8, applied to the output
	dw, dh      int // size as shown (orientation applied)
	lim         Limits
	best        attempt // the smallest encoding over MaxBytes so far
}

// attempt is an encoding that was over MaxBytes, for the error message.
type attempt struct {
	size int
	what string
}

// dims is the size as shown scaled to a longest side of long pixels, the
// other side rounded to the nearest pixel (at least 1), so the aspect
// ratio is kept within one pixel. Integer arithmetic only.
func (f *fitter) dims(long int) (w, h int) {
	if f.dw >= f.dh {
		return long, max(1, (f.dh*long+f.dw/2)/f.dw)
	}
	return max(1, (f.dw*long+f.dh/2)/f.dh), long
}

// fitLongSide is the largest longest side, at most the image's own, whose
// dims fit MaxSide and MaxPixels: a binary search over integers, so the
// answer does not depend on floating-point rounding.
func (f *fitter) fitLongSide() int {
	hi := max(f.dw, f.dh)
	if f.lim.MaxSide > 0 {
		hi = min(hi, f.lim.MaxSide)
	}
	if f.lim.fitsSize(f.dims(hi)) {
		return hi
	}
	lo := 1 // dims(1) is 1×1, within any MaxPixels and MaxSide ≥ 1
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if f.lim.fitsSize(f.dims(mid)) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// smaller is the next longest side down, 0 when there is none.
func smaller(long int) int {
	return long * scaleNum / scaleDen
}

// rawDims is dims(long) in the source's orientation: the size to scale
// the source to before turning it upright.
func (f *fitter) rawDims(long int) (w, h int) {
	w, h = f.dims(long)
	if f.orientation >= 5 {
		return h, w
	}
	return w, h
}

// scaleInto draws the source into dst, scaled with Catmull-Rom, or copied
// when dst has the source's own size.
func (f *fitter) scaleInto(dst draw.Image, op draw.Op) {
	sb := f.src.Bounds()
	if db := dst.Bounds(); sb.Size() == db.Size() {
		draw.Draw(dst, db, f.src, sb.Min, op)
	} else {
		draw.CatmullRom.Scale(dst, db, f.src, sb, op, nil)
	}
}

// renderJPEG returns the image as shown at a longest side of long pixels,
// for the JPEG encoder: an *image.RGBA (its fast path), composited over
// white when flatten is set, since JPEG has no alpha and would otherwise
// show transparent pixels black.
func (f *fitter) renderJPEG(long int, flatten bool) *image.RGBA {
	w, h := f.rawDims(long)
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	op := draw.Src
	if flatten {
		draw.Draw(dst, dst.Bounds(), image.White, image.Point{}, draw.Src)
		op = draw.Over
	}
	f.scaleInto(dst, op)
	dst.Pix, dst.Stride, dst.Rect = orient(dst.Pix, dst.Stride, w, h, f.orientation)
	return dst
}

// renderPNG returns the image as shown at a longest side of long pixels,
// for the PNG encoder: an *image.NRGBA, PNG's own layout, so that
// partly transparent pixels are not rounded through 8-bit premultiplied
// alpha (which makes them noisy and the PNG several times larger).
func (f *fitter) renderPNG(long int) *image.NRGBA {
	w, h := f.rawDims(long)
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	f.scaleInto(dst, draw.Src)
	dst.Pix, dst.Stride, dst.Rect = orient(dst.Pix, dst.Stride, w, h, f.orientation)
	return dst
}

// fits tells whether an encoding of n bytes is within MaxBytes, and
// remembers it as the smallest miss when it is not.
func (f *fitter) fits(n int, what string) bool {
	if f.lim.MaxBytes <= 0 || int64(n) <= f.lim.MaxBytes {
		return true
	}
	if f.best.what == "" || n < f.best.size {
		f.best = attempt{size: n, what: what}
	}
	return false
}

// tryJPEG encodes JPEG at the longest side long (at most maxJPEGSide),
// quality 90 down to 50, then at 0.85× smaller sizes at quality 50, until
// one is within MaxBytes.
func (f *fitter) tryJPEG(long int, flatten bool) (Result, bool, error) {
	long = min(long, maxJPEGSide)
	m := f.renderJPEG(long, flatten)
	for q := jpegQualityStart; q >= jpegQualityFloor; q -= jpegQualityStep {
		if res, ok, err := f.encodeJPEG(m, q); ok || err != nil {
			return res, ok, err
		}
	}
	for range maxScaleSteps {
		if long = smaller(long); long < 1 {
			break
		}
		if res, ok, err := f.encodeJPEG(f.renderJPEG(long, flatten), jpegQualityFloor); ok || err != nil {
			return res, ok, err
		}
	}
	return Result{}, false, nil
}

// tryPNG encodes PNG at the longest side long, then at up to steps 0.85×
// smaller sizes, until one is within MaxBytes.
func (f *fitter) tryPNG(long int, steps int) (Result, bool, error) {
	for i := 0; i <= steps && long >= 1; i++ {
		if res, ok, err := f.encodePNG(f.renderPNG(long)); ok || err != nil {
			return res, ok, err
		}
		long = smaller(long)
	}
	return Result{}, false, nil
}

// encodeJPEG encodes m at quality; ok tells whether it is within MaxBytes.
func (f *fitter) encodeJPEG(m *image.RGBA, quality int) (res Result, ok bool, err error) {
	var buf bytes.Buffer
	b := m.Bounds()
	what := fmt.Sprintf("%s %dx%d, quality %d", JPEG, b.Dx(), b.Dy(), quality)
	if err := jpeg.Encode(&buf, m, &jpeg.Options{Quality: quality}); err != nil {
		return Result{}, false, fmt.Errorf("mediafit: encoding %s: %w", what, err)
	}
	if !f.fits(buf.Len(), what) {
		return Result{}, false, nil
	}
	return Result{Data: buf.Bytes(), ContentType: JPEG, Width: b.Dx(), Height: b.Dy(), Changed: true}, true, nil
}

// encodePNG encodes m as PNG; ok tells whether it is within MaxBytes.
func (f *fitter) encodePNG(m *image.NRGBA) (res Result, ok bool, err error) {
	var buf bytes.Buffer
	b := m.Bounds()
	what := fmt.Sprintf("%s %dx%d", PNG, b.Dx(), b.Dy())
	enc := png.Encoder{CompressionLevel: pngCompression}
	if err := enc.Encode(&buf, m); err != nil {
		return Result{}, false, fmt.Errorf("mediafit: encoding %s: %w", what, err)
	}
	if !f.fits(buf.Len(), what) {
		return Result{}, false, nil
	}
	return Result{Data: buf.Bytes(), ContentType: PNG, Width: b.Dx(), Height: b.Dy(), Changed: true}, true, nil
}
