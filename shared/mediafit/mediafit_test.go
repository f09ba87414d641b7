package mediafit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// --- images made here -----------------------------------------------------

// photo is a w×h opaque image with smooth gradients and, with noise > 0,
// that much per-pixel noise: a stand-in for a photograph, the same on
// every run (fixed seed).
func photo(w, h, noise int) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for y := range h {
		for x := range w {
			n := 0
			if noise > 0 {
				n = r.IntN(2*noise+1) - noise
			}
			m.SetNRGBA(x, y, color.NRGBA{
				R: clamp(x*255/w + n),
				G: clamp(y*255/h - n),
				B: clamp((x+y)*255/(w+h) + n/2),
				A: 255,
			})
		}
	}
	return m
}

func clamp(v int) uint8 { return uint8(max(0, min(255, v))) }

// withAlpha is photo with alpha going from transparent (left) to opaque.
func withAlpha(w, h, noise int) *image.NRGBA {
	m := photo(w, h, noise)
	for y := range h {
		for x := range w {
			m.Pix[y*m.Stride+x*4+3] = uint8(x * 255 / w)
		}
	}
	return m
}

// quadrants is a w×h image whose quarters are red (top left), green (top
// right), blue (bottom left) and white (bottom right).
func quadrants(w, h int) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := [2][2]color.NRGBA{
				{{255, 0, 0, 255}, {0, 255, 0, 255}},
				{{0, 0, 255, 255}, {255, 255, 255, 255}},
			}[y*2/h][x*2/w]
			m.SetNRGBA(x, y, c)
		}
	}
	return m
}

func encJPEG(t testing.TB, m image.Image, q int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encPNG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// paletted is m reduced to a small palette, for GIFs; with transparent,
// palette entry 0 is transparent and the left quarter uses it.
func paletted(m image.Image, transparent bool) *image.Paletted {
	pal := color.Palette{color.NRGBA{0, 0, 0, 255}}
	if transparent {
		pal[0] = color.NRGBA{}
	}
	for i := 1; i < 64; i++ {
		pal = append(pal, color.NRGBA{uint8(i * 4), uint8(255 - i*4), uint8(i * 2), 255})
	}
	b := m.Bounds()
	p := image.NewPaletted(b, pal)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if transparent && x-b.Min.X < b.Dx()/4 {
				p.SetColorIndex(x, y, 0)
				continue
			}
			p.SetColorIndex(x, y, uint8(1+pal[1:].Index(m.At(x, y))))
		}
	}
	return p
}

func encGIF(t testing.TB, m *image.Paletted) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := gif.Encode(&b, m, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func animatedGIF(t testing.TB, w, h int) []byte {
	t.Helper()
	g := &gif.GIF{}
	for i := range 3 {
		g.Image = append(g.Image, paletted(photo(w, h, 40+i), false))
		g.Delay = append(g.Delay, 10)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withEXIF returns JPEG data with an APP1 EXIF segment carrying the
// orientation o inserted after SOI (big-endian TIFF, with one other tag
// before it so that the parser has to walk the IFD).
func withEXIF(jpg []byte, o uint16) []byte {
	var tiff bytes.Buffer
	be := binary.BigEndian
	tiff.WriteString("MM")
	binary.Write(&tiff, be, uint16(42))
	binary.Write(&tiff, be, uint32(8)) // IFD0 right after the header
	binary.Write(&tiff, be, uint16(2)) // two entries
	// ImageWidth (0x0100), LONG, 1, 1234: not the one wanted.
	binary.Write(&tiff, be, struct {
		Tag, Type uint16
		Count     uint32
		Value     uint32
	}{0x0100, 4, 1, 1234})
	// Orientation (0x0112), SHORT, 1, o in the first two value bytes.
	binary.Write(&tiff, be, struct {
		Tag, Type uint16
		Count     uint32
		Value     [2]uint16
	}{0x0112, 3, 1, [2]uint16{o, 0}})
	binary.Write(&tiff, be, uint32(0)) // no next IFD
	body := append([]byte("Exif\x00\x00"), tiff.Bytes()...)
	seg := []byte{0xFF, 0xE1, byte((len(body) + 2) >> 8), byte(len(body) + 2)}
	out := append([]byte{}, jpg[:2]...)
	out = append(out, seg...)
	out = append(out, body...)
	return append(out, jpg[2:]...)
}

// pngHeader is a PNG signature and an IHDR for a w×h RGBA image, with a
// correct CRC, and no pixel data: enough for png.DecodeConfig.
func pngHeader(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32([]byte("IHDR"), w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 6, 0, 0, 0)
	out := []byte("\x89PNG\r\n\x1a\n")
	out = binary.BigEndian.AppendUint32(out, 13)
	out = append(out, ihdr...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(ihdr))
}

// jpegHeader is SOI, a baseline SOF0 for a w×h three-component image and
// the start of a scan (where image/jpeg's DecodeConfig stops), no pixels.
func jpegHeader(w, h uint16) []byte {
	return []byte{0xFF, 0xD8, 0xFF, 0xC0, 0, 17, 8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), 3,
		1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0, 0xFF, 0xDA, 0, 12}
}

// gifHeader is a GIF header and logical screen descriptor for w×h.
func gifHeader(w, h uint16) []byte {
	return []byte{'G', 'I', 'F', '8', '9', 'a', byte(w), byte(w >> 8), byte(h), byte(h >> 8), 0, 0, 0}
}

// webpVP8X is a WebP holding only a VP8X chunk for a w×h canvas with the
// given flags: enough for webp.DecodeConfig.
func webpVP8X(w, h uint32, flags byte) []byte {
	chunk := []byte{'V', 'P', '8', 'X', 10, 0, 0, 0, flags, 0, 0, 0,
		byte(w - 1), byte((w - 1) >> 8), byte((w - 1) >> 16), byte(h - 1), byte((h - 1) >> 8), byte((h - 1) >> 16)}
	out := []byte("RIFF")
	out = binary.LittleEndian.AppendUint32(out, uint32(4+len(chunk)))
	out = append(out, "WEBP"...)
	return append(out, chunk...)
}

// webp8x4 is an 8×4 lossless WebP, red on the left half and blue on the
// right, made with `cwebp -lossless -exact -metadata none` from a PNG
// (there is no WebP encoder in Go's standard library or x/image).
var webp8x4 = []byte{
	0x52, 0x49, 0x46, 0x46, 0x1e, 0x00, 0x00, 0x00, 0x57, 0x45, 0x42, 0x50,
	0x56, 0x50, 0x38, 0x4c, 0x12, 0x00, 0x00, 0x00, 0x2f, 0x07, 0xc0, 0x00,
	0x00, 0x0f, 0x10, 0xf3, 0xbf, 0xff, 0xf3, 0x1f, 0x0e, 0xfa, 0x10, 0xd1,
	0xff, 0x00,
}

// --- checks ---------------------------------------------------------------

// decodeResult decodes res.Data as res.ContentType and checks that its
// size is the one res reports.
func decodeResult(t *testing.T, res Result) image.Image {
	t.Helper()
	m, err := decode(res.ContentType, res.Data)
	if err != nil {
		t.Fatalf("result does not decode as %s: %v", res.ContentType, err)
	}
	if b := m.Bounds(); b.Dx() != res.Width || b.Dy() != res.Height {
		t.Fatalf("result decodes to %dx%d, reports %dx%d", b.Dx(), b.Dy(), res.Width, res.Height)
	}
	return m
}

// checkAspect fails unless w×h has the aspect ratio of w0×h0 within one
// pixel of its shorter side.
func checkAspect(t *testing.T, w0, h0, w, h int) {
	t.Helper()
	if w0 >= h0 {
		if d := h*w0 - w*h0; d > w0 || -d > w0 { // |h - w·h0/w0| ≤ 1
			t.Errorf("%dx%d does not keep the aspect ratio of %dx%d", w, h, w0, h0)
		}
	} else if d := w*h0 - h*w0; d > h0 || -d > h0 {
		t.Errorf("%dx%d does not keep the aspect ratio of %dx%d", w, h, w0, h0)
	}
}

// near tells whether c is within tol of want in each of R, G, B.
func near(c color.Color, want color.NRGBA, tol int) bool {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	d := func(a, b uint8) bool { return int(a)-int(b) <= tol && int(b)-int(a) <= tol }
	return d(n.R, want.R) && d(n.G, want.G) && d(n.B, want.B)
}

// --- tests ----------------------------------------------------------------

// TestFitUnchanged: an image within every limit comes back as the very
// same bytes, unchanged, its type canonical, its size as shown.
func TestFitUnchanged(t *testing.T) {
	jpg := encJPEG(t, photo(300, 200, 10), 90)
	tests := []struct {
		name, ct     string
		data         []byte
		lim          Limits
		wantCT       string
		wantW, wantH int
	}{
		{"jpeg no limits", JPEG, jpg, Limits{}, JPEG, 300, 200},
		{"jpeg at every limit", JPEG, jpg, Limits{MaxBytes: int64(len(jpg)), MaxPixels: 300 * 200, MaxSide: 300, Formats: []string{JPEG}}, JPEG, 300, 200},
		{"jpg alias and parameters", "Image/JPG; q=1", jpg, Limits{Formats: []string{"image/jpg"}}, JPEG, 300, 200},
		{"png with alpha", PNG, encPNG(t, withAlpha(120, 80, 5)), Limits{MaxBytes: 1 << 20, MaxSide: 4096}, PNG, 120, 80},
		{"static gif", GIF, encGIF(t, paletted(photo(64, 48, 0), false)), Limits{MaxBytes: 1 << 20}, GIF, 64, 48},
		{"animated gif that fits", GIF, animatedGIF(t, 40, 30), Limits{MaxBytes: 1 << 20, MaxSide: 40}, GIF, 40, 30},
		{"webp accepted", WebP, webp8x4, Limits{Formats: []string{JPEG, WebP}}, WebP, 8, 4},
		{"exif-turned jpeg reports its size as shown", JPEG, withEXIF(jpg, 6), Limits{MaxSide: 300}, JPEG, 200, 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Fit(tt.data, tt.ct, tt.lim)
			if err != nil {
				t.Fatal(err)
			}
			if res.Changed || !bytes.Equal(res.Data, tt.data) {
				t.Errorf("Changed = %v, same bytes = %v; want the input as is", res.Changed, bytes.Equal(res.Data, tt.data))
			}
			if res.ContentType != tt.wantCT || res.Width != tt.wantW || res.Height != tt.wantH {
				t.Errorf("got %s %dx%d, want %s %dx%d", res.ContentType, res.Width, res.Height, tt.wantCT, tt.wantW, tt.wantH)
			}
		})
	}
}

// TestFitShrinks: images over a byte, pixel or side limit, or in a format
// not accepted, come back within every limit, decodable, in the expected
// format, the aspect ratio kept.
func TestFitShrinks(t *testing.T) {
	noisy := encJPEG(t, photo(800, 600, 60), 95)
	alphaPNG := encPNG(t, withAlpha(300, 200, 0))
	noisyAlphaPNG := encPNG(t, withAlpha(300, 200, 80))
	tests := []struct {
		name   string
		ct     string
		data   []byte
		lim    Limits
		wantCT string
		w0, h0 int // size as shown of the input
		check  func(t *testing.T, res Result, m image.Image)
	}{
		{
			name: "jpeg over MaxBytes", ct: JPEG, data: noisy, w0: 800, h0: 600,
			lim: Limits{MaxBytes: int64(len(noisy) / 4)}, wantCT: JPEG,
		},
		{
			name: "jpeg far over MaxBytes shrinks", ct: JPEG, data: encJPEG(t, photo(400, 300, 60), 95), w0: 400, h0: 300,
			lim: Limits{MaxBytes: 6_000}, wantCT: JPEG,
			check: func(t *testing.T, res Result, _ image.Image) {
				if res.Width >= 400 {
					t.Errorf("width %d: expected a smaller size once quality 50 is not enough", res.Width)
				}
			},
		},
		{
			name: "jpeg over MaxPixels", ct: JPEG, data: encJPEG(t, photo(300, 200, 5), 90), w0: 300, h0: 200,
			lim: Limits{MaxPixels: 10_000}, wantCT: JPEG,
			check: func(t *testing.T, res Result, _ image.Image) {
				if px := res.Width * res.Height; px < 9_500 {
					t.Errorf("%dx%d: %d pixels, far under the 10000 allowed", res.Width, res.Height, px)
				}
			},
		},
		{
			name: "jpeg over MaxSide (portrait)", ct: JPEG, data: encJPEG(t, photo(200, 300, 5), 90), w0: 200, h0: 300,
			lim: Limits{MaxSide: 100}, wantCT: JPEG,
			check: func(t *testing.T, res Result, _ image.Image) {
				if res.Width != 67 || res.Height != 100 {
					t.Errorf("got %dx%d, want 67x100", res.Width, res.Height)
				}
			},
		},
		{
			name: "png with alpha kept as png", ct: PNG, data: alphaPNG, w0: 300, h0: 200,
			lim: Limits{MaxSide: 150, Formats: []string{JPEG, PNG}}, wantCT: PNG,
			check: func(t *testing.T, _ Result, m image.Image) {
				if _, _, _, a := m.At(0, 50).RGBA(); a != 0 {
					t.Errorf("left edge alpha = %d, want transparent", a)
				}
				if _, _, _, a := m.At(149, 50).RGBA(); a < 0xF000 {
					t.Errorf("right edge alpha = %d, want near opaque", a)
				}
			},
		},
		{
			name: "png with alpha, png not accepted: flattened on white", ct: PNG, data: alphaPNG, w0: 300, h0: 200,
			lim: Limits{MaxSide: 150, Formats: []string{JPEG}}, wantCT: JPEG,
			check: func(t *testing.T, _ Result, m image.Image) {
				if c := m.At(0, 50); !near(c, color.NRGBA{255, 255, 255, 255}, 12) {
					t.Errorf("transparent edge shows %v, want white", c)
				}
			},
		},
		{
			name: "png with alpha over MaxBytes: smaller png", ct: PNG, data: noisyAlphaPNG, w0: 300, h0: 200,
			lim: Limits{MaxBytes: int64(len(noisyAlphaPNG)) * 3 / 4}, wantCT: PNG,
			check: func(t *testing.T, res Result, _ image.Image) {
				if res.Width >= 300 {
					t.Errorf("width %d: expected a smaller PNG", res.Width)
				}
			},
		},
		{
			name: "noisy png with alpha over MaxBytes: png steps fail, jpeg on white", ct: PNG, data: noisyAlphaPNG, w0: 300, h0: 200,
			lim: Limits{MaxBytes: 8_000}, wantCT: JPEG,
		},
		{
			name: "opaque png, jpeg not accepted: png", ct: PNG, data: encPNG(t, photo(300, 200, 0)), w0: 300, h0: 200,
			lim: Limits{MaxSide: 100, Formats: []string{PNG}}, wantCT: PNG,
		},
		{
			name: "static gif, gif not accepted: jpeg", ct: GIF, data: encGIF(t, paletted(photo(120, 90, 0), false)), w0: 120, h0: 90,
			lim: Limits{Formats: []string{JPEG, PNG}}, wantCT: JPEG,
			check: func(t *testing.T, res Result, _ image.Image) {
				if res.Width != 120 || res.Height != 90 {
					t.Errorf("got %dx%d, want the size kept", res.Width, res.Height)
				}
			},
		},
		{
			name: "static gif with transparency, gif not accepted: png", ct: GIF, data: encGIF(t, paletted(photo(120, 90, 0), true)), w0: 120, h0: 90,
			lim: Limits{Formats: []string{JPEG, PNG}}, wantCT: PNG,
		},
		{
			name: "gif frame smaller than its screen: placed on a transparent canvas", ct: GIF, w0: 40, h0: 30,
			data: func() []byte {
				var b bytes.Buffer
				frame := paletted(photo(20, 10, 0), false)
				frame.Rect = image.Rect(10, 10, 30, 20)
				g := &gif.GIF{Image: []*image.Paletted{frame}, Delay: []int{0},
					Config: image.Config{ColorModel: frame.Palette, Width: 40, Height: 30}}
				if err := gif.EncodeAll(&b, g); err != nil {
					t.Fatal(err)
				}
				return b.Bytes()
			}(),
			lim: Limits{Formats: []string{JPEG, PNG}}, wantCT: PNG,
			check: func(t *testing.T, _ Result, m image.Image) {
				if _, _, _, a := m.At(2, 2).RGBA(); a != 0 {
					t.Errorf("outside the frame alpha = %d, want transparent", a)
				}
				if _, _, _, a := m.At(15, 15).RGBA(); a != 0xFFFF {
					t.Errorf("inside the frame alpha = %d, want opaque", a)
				}
			},
		},
		{
			name: "webp not accepted (default formats): jpeg", ct: WebP, data: webp8x4, w0: 8, h0: 4,
			lim: Limits{}, wantCT: JPEG,
			check: func(t *testing.T, _ Result, m image.Image) {
				if !near(m.At(0, 1), color.NRGBA{255, 0, 0, 255}, 40) || !near(m.At(7, 2), color.NRGBA{0, 0, 255, 255}, 40) {
					t.Errorf("colours %v … %v, want red … blue", m.At(0, 1), m.At(7, 2))
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Fit(tt.data, tt.ct, tt.lim)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Changed {
				t.Fatal("Changed = false for an image over the limits")
			}
			if res.ContentType != tt.wantCT {
				t.Errorf("ContentType = %s, want %s", res.ContentType, tt.wantCT)
			}
			m := decodeResult(t, res)
			if over := tt.lim.overs(res.ContentType, int64(len(res.Data)), res.Width, res.Height); len(over) > 0 {
				t.Errorf("result %s %dx%d, %d bytes is over the limits: %v", res.ContentType, res.Width, res.Height, len(res.Data), over)
			}
			checkAspect(t, tt.w0, tt.h0, res.Width, res.Height)
			if tt.check != nil {
				tt.check(t, res, m)
			}
		})
	}
}

// TestFitAppliesEXIFOrientation: a JPEG re-encoded for any of the eight
// orientations comes out upright, its corners where a viewer shows them.
func TestFitAppliesEXIFOrientation(t *testing.T) {
	red, green, blue, white := color.NRGBA{255, 0, 0, 255}, color.NRGBA{0, 255, 0, 255}, color.NRGBA{0, 0, 255, 255}, color.NRGBA{255, 255, 255, 255}
	jpg := encJPEG(t, quadrants(80, 40), 95)
	tests := []struct {
		o              uint16
		tl, tr, bl, br color.NRGBA // as shown
	}{
		{1, red, green, blue, white},
		{2, green, red, white, blue},
		{3, white, blue, green, red},
		{4, blue, white, red, green},
		{5, red, blue, green, white},
		{6, blue, red, white, green},
		{7, white, green, blue, red},
		{8, green, white, red, blue},
	}
	for _, tt := range tests {
		data := withEXIF(jpg, tt.o)
		if got := exifOrientation(data); got != int(tt.o) {
			t.Fatalf("exifOrientation = %d, want %d", got, tt.o)
		}
		res, err := Fit(data, JPEG, Limits{MaxSide: 60})
		if err != nil {
			t.Fatal(err)
		}
		wantW, wantH := 60, 30
		if tt.o >= 5 {
			wantW, wantH = 30, 60
		}
		if res.Width != wantW || res.Height != wantH {
			t.Errorf("orientation %d: %dx%d, want %dx%d", tt.o, res.Width, res.Height, wantW, wantH)
			continue
		}
		m := decodeResult(t, res)
		qx, qy := wantW/4, wantH/4
		for _, c := range []struct {
			x, y int
			want color.NRGBA
			name string
		}{{qx, qy, tt.tl, "top left"}, {3 * qx, qy, tt.tr, "top right"}, {qx, 3 * qy, tt.bl, "bottom left"}, {3 * qx, 3 * qy, tt.br, "bottom right"}} {
			if got := m.At(c.x, c.y); !near(got, c.want, 40) {
				t.Errorf("orientation %d: %s is %v, want %v", tt.o, c.name, got, c.want)
			}
		}
	}
}

// TestFitErrors: what cannot be fitted is refused, the error wrapping
// its sentinel and naming what is wrong.
func TestFitErrors(t *testing.T) {
	tests := []struct {
		name     string
		ct       string
		data     []byte
		lim      Limits
		want     error
		contains []string
	}{
		{"undecodable png", PNG, []byte("this is not an image"), Limits{}, ErrUndecodable, []string{"image/png"}},
		{"png data labelled jpeg", JPEG, encPNG(t, photo(10, 10, 0)), Limits{}, ErrUndecodable, []string{"image/jpeg"}},
		{"empty webp", WebP, nil, Limits{}, ErrUndecodable, []string{"image/webp"}},
		{"unsupported type", "image/bmp", []byte("BM...."), Limits{}, ErrUnsupportedFormat, []string{"image/bmp"}},
		{"no content type", "", encPNG(t, photo(10, 10, 0)), Limits{}, ErrUnsupportedFormat, []string{`""`}},
		{"no encodable output format", PNG, encPNG(t, photo(100, 50, 0)), Limits{MaxSide: 50, Formats: []string{WebP}},
			ErrUnsupportedFormat, []string{"image/webp", "longest side 100 px, over the 50 px limit"}},
		{"animated gif over MaxBytes", GIF, animatedGIF(t, 64, 64), Limits{MaxBytes: 1000},
			ErrAnimated, []string{"animated images are not resized", "over the 1000-byte limit"}},
		{"animated gif not accepted", GIF, animatedGIF(t, 16, 16), Limits{Formats: []string{JPEG, PNG}},
			ErrAnimated, []string{"image/gif is not among the accepted formats"}},
		{"animated webp over MaxPixels", WebP, webpVP8X(5000, 4000, 1<<1), Limits{MaxPixels: 4096 * 4096},
			ErrAnimated, []string{"5000x4000 (20.0 MP), over the 16.8 MP limit"}},
		{"cannot fit", JPEG, encJPEG(t, photo(200, 100, 30), 90), Limits{MaxBytes: 100},
			ErrCannotFit, []string{"100-byte limit", "smallest encoding reached", "quality 50"}},
		{"cannot fit png only", PNG, encPNG(t, withAlpha(50, 50, 30)), Limits{MaxBytes: 20, Formats: []string{PNG}},
			ErrCannotFit, []string{"20-byte limit", "smallest encoding reached", "image/png 1x1"}},
		{"negative limit", PNG, encPNG(t, photo(10, 10, 0)), Limits{MaxBytes: -1}, ErrBadLimits, []string{"MaxBytes -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Fit(tt.data, tt.ct, tt.lim)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Fit = %s %dx%d, %v; want an error wrapping %v", res.ContentType, res.Width, res.Height, err, tt.want)
			}
			for _, s := range tt.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

// TestFitRefusesBombs: a header declaring more than MaxInputPixels is
// refused from the header alone, allocating next to nothing, whatever
// the limits.
func TestFitRefusesBombs(t *testing.T) {
	tests := []struct {
		name string
		ct   string
		data []byte
	}{
		{"png 100000x100000", PNG, pngHeader(100_000, 100_000)},
		{"png 10001x10000", PNG, pngHeader(10_001, 10_000)},
		{"jpeg 65000x65000", JPEG, jpegHeader(65_000, 65_000)},
		{"gif 65535x65535", GIF, gifHeader(65_535, 65_535)},
		{"webp 16384x16384", WebP, webpVP8X(16_384, 16_384, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, lim := range []Limits{{}, {MaxBytes: 10, MaxSide: 100}} {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				_, err := Fit(tt.data, tt.ct, lim)
				runtime.ReadMemStats(&after)
				if !errors.Is(err, ErrTooManyPixels) {
					t.Fatalf("Fit(%+v) = %v, want ErrTooManyPixels", lim, err)
				}
				if !strings.Contains(err.Error(), "over the 100.0 MP mediafit decodes") {
					t.Errorf("error %q does not name the limit", err)
				}
				if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
					t.Errorf("refusing allocated %d bytes", n)
				}
			}
		})
	}
	// Just under the bound is decoded (and here fits as is).
	if _, err := Fit(pngHeader(10_000, 10_000), PNG, Limits{}); err != nil {
		t.Errorf("a 100 MP header: %v", err)
	}
}

// TestFitDeterministic: the same input and limits give byte-identical
// output, called again or from many goroutines at once.
func TestFitDeterministic(t *testing.T) {
	tests := []struct {
		name string
		ct   string
		data []byte
		lim  Limits
	}{
		{"jpeg quality and size ladder", JPEG, encJPEG(t, photo(240, 180, 60), 95), Limits{MaxBytes: 3_000}},
		{"jpeg exif turned and scaled", JPEG, withEXIF(encJPEG(t, photo(300, 200, 20), 90), 6), Limits{MaxPixels: 20_000}},
		{"png with alpha scaled", PNG, encPNG(t, withAlpha(200, 150, 10)), Limits{MaxSide: 120}},
		{"png with alpha flattened", PNG, encPNG(t, withAlpha(120, 120, 80)), Limits{MaxBytes: 3_000}},
		{"gif to jpeg", GIF, encGIF(t, paletted(photo(150, 100, 0), false)), Limits{Formats: []string{JPEG}}},
		{"webp to jpeg", WebP, webp8x4, Limits{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, err := Fit(tt.data, tt.ct, tt.lim)
			if err != nil {
				t.Fatal(err)
			}
			if !first.Changed {
				t.Fatal("expected a re-encoding")
			}
			const n = 8
			var wg sync.WaitGroup
			got := make([]Result, n)
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() { got[i], errs[i] = Fit(tt.data, tt.ct, tt.lim) })
			}
			wg.Wait()
			for i := range n {
				if errs[i] != nil {
					t.Fatal(errs[i])
				}
				if !bytes.Equal(got[i].Data, first.Data) || got[i].ContentType != first.ContentType ||
					got[i].Width != first.Width || got[i].Height != first.Height {
					t.Fatalf("call %d: %s %dx%d, %d bytes; first call: %s %dx%d, %d bytes", i,
						got[i].ContentType, got[i].Width, got[i].Height, len(got[i].Data),
						first.ContentType, first.Width, first.Height, len(first.Data))
				}
			}
		})
	}
}

// TestFitLongSide: the long side chosen is the largest whose size fits,
// for a range of shapes and limits (checked against a plain search).
func TestFitLongSide(t *testing.T) {
	for _, s := range []struct{ w, h int }{{1, 1}, {7, 3}, {3, 7}, {4000, 3000}, {5000, 1}, {1, 9999}, {4097, 4097}} {
		for _, lim := range []Limits{{}, {MaxSide: 100}, {MaxPixels: 1}, {MaxPixels: 10_000}, {MaxPixels: 4096 * 4096, MaxSide: 4096}, {MaxSide: 1}} {
			f := &fitter{dw: s.w, dh: s.h, lim: lim}
			got := f.fitLongSide()
			want := 0
			for l := 1; l <= max(s.w, s.h); l++ {
				if lim.fitsSize(f.dims(l)) {
					want = l
				}
			}
			if got != want {
				t.Errorf("%dx%d, %+v: long side %d, want %d", s.w, s.h, lim, got, want)
			}
		}
	}
}

// TestFormatParsersOnDamage: the EXIF and GIF walkers give the safe
// answer on truncated and malformed input.
func TestFormatParsersOnDamage(t *testing.T) {
	jpg := withEXIF(encJPEG(t, photo(16, 16, 0), 80), 6)
	for n := range len(jpg) {
		if o := exifOrientation(jpg[:n]); o != 1 && o != 6 {
			t.Fatalf("exifOrientation(first %d bytes) = %d", n, o)
		}
	}
	if o := exifOrientation(withEXIF(jpg, 9)); o != 1 {
		t.Errorf("orientation 9 read as %d, want 1", o)
	}
	anim := animatedGIF(t, 8, 8)
	if n := gifFrames(anim, 10); n != 3 {
		t.Errorf("gifFrames = %d, want 3", n)
	}
	for n := range len(anim) {
		if f := gifFrames(anim[:n], 10); f > 3 {
			t.Fatalf("gifFrames(first %d bytes) = %d", n, f)
		}
	}
	if isAnimated(GIF, encGIF(t, paletted(photo(8, 8, 0), false))) {
		t.Error("a one-frame GIF counted as animated")
	}
	if isAnimated(WebP, webp8x4) || !isAnimated(WebP, webpVP8X(10, 10, 1<<1)) {
		t.Error("WebP animation flag misread")
	}
}

// FuzzParsers: the hand-written walkers never panic and stay in range.
func FuzzParsers(f *testing.F) {
	f.Add(withEXIF(jpegHeader(10, 10), 6))
	f.Add(gifHeader(10, 10))
	f.Add(append(gifHeader(1, 1), 0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0x80, 2, 1, 0, 0, 0x3B))
	f.Fuzz(func(t *testing.T, data []byte) {
		if o := exifOrientation(data); o < 1 || o > 8 {
			t.Fatalf("orientation %d", o)
		}
		gifFrames(data, 3)
	})
}

// BenchmarkFit fits a 4000x3000 photo-like JPEG to 1 MB (Bluesky's limit).
func BenchmarkFit(b *testing.B) {
	data := encJPEG(b, photo(4000, 3000, 12), 95)
	lim := Limits{MaxBytes: 1_000_000, Formats: []string{JPEG, PNG}}
	b.SetBytes(int64(len(data)))
	var res Result
	for b.Loop() {
		var err error
		if res, err = Fit(data, JPEG, lim); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(res.Data)), "out-bytes")
	b.ReportMetric(float64(res.Width), "out-width")
}
