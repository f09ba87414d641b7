package mediafit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image/gif"
	"testing"
)

// animatedWebP is an 8×4 animated WebP of the given frames, each
// webp8x4's lossless bitstream: VP8X with the animation flag, ANIM, then
// one ANMF chunk per frame.
func animatedWebP(frames int) []byte {
	le := binary.LittleEndian
	vp8l := webp8x4[12:] // "VP8L", size, bitstream
	chunk := func(id string, payload []byte) []byte {
		out := le.AppendUint32([]byte(id), uint32(len(payload)))
		out = append(out, payload...)
		if len(payload)%2 == 1 {
			out = append(out, 0)
		}
		return out
	}
	body := []byte("WEBP")
	body = append(body, webpVP8X(8, 4, 1<<1)[12:]...)
	body = append(body, chunk("ANIM", []byte{0, 0, 0, 0, 0, 0})...)
	for range frames {
		hdr := []byte{0, 0, 0, 0, 0, 0, 7, 0, 0, 3, 0, 0, 100, 0, 0, 0}
		body = append(body, chunk("ANMF", append(hdr, vp8l...))...)
	}
	return append(le.AppendUint32([]byte("RIFF"), uint32(len(body))), body...)
}

// TestVerify: whole images of every format pass; one whose header is
// whole but whose data is cut short or damaged is ErrUndecodable, in
// every frame of an animation, not only the first.
func TestVerify(t *testing.T) {
	pngData := encPNG(t, photo(64, 48, 20))
	jpegData := encJPEG(t, photo(64, 48, 20), 90)
	oneFrame := encGIF(t, paletted(photo(32, 24, 10), false))
	anim := animatedGIF(t, 32, 24)
	animWebP := animatedWebP(3)
	damaged := func(b []byte, at int) []byte {
		out := bytes.Clone(b)
		out[at] ^= 0xff
		return out
	}
	tests := []struct {
		name string
		ct   string
		data []byte
		want error // nil: whole
	}{
		{"png", PNG, pngData, nil},
		{"jpeg", JPEG, jpegData, nil},
		{"gif", GIF, oneFrame, nil},
		{"animated gif", GIF, anim, nil},
		{"webp", WebP, webp8x4, nil},
		{"animated webp", WebP, animWebP, nil},
		{"png cut short", PNG, pngData[:len(pngData)*2/3], ErrUndecodable},
		{"png without IEND", PNG, pngData[:len(pngData)-12], ErrUndecodable},
		{"png with a damaged byte", PNG, damaged(pngData, len(pngData)/2), ErrUndecodable},
		{"jpeg cut short", JPEG, jpegData[:len(jpegData)*2/3], ErrUndecodable},
		{"jpeg without EOI", JPEG, jpegData[:len(jpegData)-2], ErrUndecodable},
		{"gif cut short", GIF, oneFrame[:len(oneFrame)*2/3], ErrUndecodable},
		{"gif without its trailer", GIF, oneFrame[:len(oneFrame)-1], ErrUndecodable},
		{"animated gif cut in its last frame", GIF, anim[:len(anim)-30], ErrUndecodable},
		{"animated gif damaged in its last frame", GIF, damaged(anim, len(anim)-30), ErrUndecodable},
		{"webp cut short", WebP, webp8x4[:len(webp8x4)-4], ErrUndecodable},
		{"animated webp cut in its last frame", WebP, animWebP[:len(animWebP)-6], ErrUndecodable},
		{"animated webp without frames", WebP, animatedWebP(0), ErrUndecodable},
		{"a header only", PNG, pngHeader(10, 10), ErrUndecodable},
		{"a bomb", PNG, pngHeader(100_000, 100_000), ErrTooManyPixels},
		{"unsupported", "image/bmp", []byte("BM...."), ErrUnsupportedFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(tt.data, tt.ct)
			if tt.want == nil && err != nil {
				t.Fatalf("Verify = %v, want nil", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want an error wrapping %v", err, tt.want)
			}
		})
	}
	// The GIF check agrees with image/gif's DecodeAll on every cut of
	// the animation.
	for n := range len(anim) {
		_, want := gif.DecodeAll(bytes.NewReader(anim[:n]))
		if got := Verify(anim[:n], GIF); (got == nil) != (want == nil) {
			t.Fatalf("first %d bytes: Verify = %v, DecodeAll = %v", n, got, want)
		}
	}
}
