package mediafit

import (
	"bytes"
	"compress/lzw"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"golang.org/x/image/riff"
	"golang.org/x/image/vp8"
	"golang.org/x/image/vp8l"
)

// MaxFramePixels is the most pixels Verify decodes over all the frames of
// an animation (the sum of their sizes): ten times MaxInputPixels, a few
// seconds of decoding. Frames are decoded one at a time and none is kept,
// so memory does not grow with them; the bound is on time.
const MaxFramePixels = 10 * MaxInputPixels

// Verify decodes data, an image of contentType, in full — every pixel of
// every frame — and returns an error wrapping ErrUndecodable when it
// cannot: a file whose header is whole but whose data is cut short or
// damaged (a download that stopped, a copy that failed). Fit reads only
// the header of an image that fits, so such a file would be stored as it
// is and refused by the platform at the slot. It refuses what Fit refuses
// from the header too (ErrTooManyPixels, ErrUnsupportedFormat).
//
// A still image is decoded with its format's decoder (image/png checks
// every chunk's CRC and needs IEND; image/jpeg needs the whole scan). A
// GIF's frames are decoded one at a time (LZW, with compress/lzw as
// image/gif does), none kept: image/gif's DecodeAll would keep them all.
// An animated WebP (which golang.org/x/image/webp does not decode) is
// walked chunk by chunk (golang.org/x/image/riff) and each frame's
// bitstream decoded with golang.org/x/image/vp8 or vp8l.
func Verify(data []byte, contentType string) error {
	ct := canonical(contentType)
	cfg, err := decodeConfig(ct, data)
	if err != nil {
		return err
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > MaxInputPixels {
		return fmt.Errorf("%w: %s is %dx%d (%s), over the %s mediafit decodes",
			ErrTooManyPixels, ct, cfg.Width, cfg.Height, megapixels(px), megapixels(MaxInputPixels))
	}
	switch {
	case ct == GIF:
		return verifyGIF(data, cfg.Width, cfg.Height)
	case ct == WebP && isAnimated(WebP, data):
		return verifyAnimatedWebP(data)
	}
	_, err = decode(ct, data)
	return err
}

// undecodable is an ErrUndecodable error about data of type ct.
func undecodable(ct, format string, a ...any) error {
	return fmt.Errorf("%w: %s data: %s", ErrUndecodable, ct, fmt.Sprintf(format, a...))
}

// verifyGIF decodes every frame of a GIF whose logical screen is w×h: its
// blocks must be whole up to the trailer, each frame must lie on the
// screen, and each frame's LZW data must give exactly its pixels.
func verifyGIF(d []byte, w, h int) error {
	const screenEnd = 13 // "GIF89a", then width, height, flags, background, aspect
	p := screenEnd
	if flags := d[10]; flags&0x80 != 0 { // global colour table
		p += 3 << (flags&7 + 1)
	}
	frames, total := 0, int64(0)
	for {
		if p >= len(d) {
			return undecodable(GIF, "cut short after %d frames (no trailer)", frames)
		}
		switch d[p] {
		case 0x3B: // trailer
			if frames == 0 {
				return undecodable(GIF, "no frame")
			}
			return nil
		case 0x21: // extension: introducer, label, data sub-blocks
			end, ok := subBlocksEnd(d, p+2)
			if !ok {
				return undecodable(GIF, "cut short in an extension after %d frames", frames)
			}
			p = end
		case 0x2C: // image descriptor
			frames++
			if p+10 > len(d) {
				return undecodable(GIF, "frame %d is cut short", frames)
			}
			le := binary.LittleEndian
			left, top := int(le.Uint16(d[p+1:])), int(le.Uint16(d[p+3:]))
			fw, fh := int(le.Uint16(d[p+5:])), int(le.Uint16(d[p+7:]))
			if left+fw > w || top+fh > h {
				return undecodable(GIF, "frame %d (%dx%d at %d,%d) is outside the %dx%d screen", frames, fw, fh, left, top, w, h)
			}
			if total += int64(fw) * int64(fh); total > MaxFramePixels {
				return fmt.Errorf("%w: image/gif frames hold over %s in all, more than mediafit decodes",
					ErrTooManyPixels, megapixels(MaxFramePixels))
			}
			flags := d[p+9]
			p += 10
			if flags&0x80 != 0 { // local colour table
				p += 3 << (flags&7 + 1)
			}
			if p >= len(d) {
				return undecodable(GIF, "frame %d is cut short", frames)
			}
			litWidth := int(d[p])
			if litWidth < 2 || litWidth > 8 {
				return undecodable(GIF, "frame %d has an LZW code size of %d", frames, litWidth)
			}
			end, ok := subBlocksEnd(d, p+1)
			if !ok {
				return undecodable(GIF, "frame %d is cut short", frames)
			}
			if err := lzwPixels(d[p+1:end], litWidth, int64(fw)*int64(fh)); err != nil {
				return undecodable(GIF, "frame %d: %v", frames, err)
			}
			p = end
		default:
			return undecodable(GIF, "unknown block 0x%02x after %d frames", d[p], frames)
		}
	}
}

// subBlocksEnd returns the position after the GIF data sub-blocks that
// start at p, and false when they run past the end of d (no terminator).
func subBlocksEnd(d []byte, p int) (int, bool) {
	for p < len(d) {
		n := int(d[p])
		p++
		if n == 0 {
			return p, true
		}
		p += n
	}
	return p, false
}

// subBlockReader reads the data of GIF sub-blocks (length-prefixed, ended
// by a zero length) as one stream.
type subBlockReader struct {
	d    []byte
	left int // bytes left in the current sub-block
}

func (r *subBlockReader) Read(p []byte) (int, error) {
	for r.left == 0 {
		if len(r.d) == 0 || r.d[0] == 0 {
			return 0, io.EOF
		}
		r.left, r.d = int(r.d[0]), r.d[1:]
	}
	n := copy(p, r.d[:min(r.left, len(r.d), len(p))])
	r.d, r.left = r.d[n:], r.left-n
	return n, nil
}

// lzwPixels decodes a frame's LZW data (its sub-blocks) and checks it
// gives exactly want pixels, as image/gif does. A stream that ends
// without its end code after the last pixel is accepted, as image/gif
// accepts it.
func lzwPixels(blocks []byte, litWidth int, want int64) error {
	r := lzw.NewReader(&subBlockReader{d: blocks}, lzw.LSB, litWidth)
	defer r.Close()
	n, err := io.CopyN(io.Discard, r, want+1)
	switch {
	case n > want:
		return errors.New("more pixel data than the frame holds")
	case n < want && err != nil && !errors.Is(err, io.EOF):
		return fmt.Errorf("%d of its %d pixels, then %v", n, want, err)
	case n < want:
		return fmt.Errorf("%d of its %d pixels", n, want)
	case err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF):
		return err
	}
	return nil
}

// verifyAnimatedWebP walks an animated WebP's chunks (the file must hold
// as many bytes as its RIFF header says, every chunk whole) and decodes
// every frame's bitstream (an ANMF chunk: a 16-byte header, then an
// optional ALPH chunk and a VP8 or VP8L chunk).
func verifyAnimatedWebP(d []byte) error {
	form, chunks, err := riff.NewReader(bytes.NewReader(d))
	if err != nil || form != (riff.FourCC{'W', 'E', 'B', 'P'}) {
		return undecodable(WebP, "not a RIFF WEBP file: %v", err)
	}
	if size := int64(binary.LittleEndian.Uint32(d[4:8])) + 8; size > int64(len(d)) {
		return undecodable(WebP, "cut short: %d of the %d bytes its header declares", len(d), size)
	}
	frames, total := 0, int64(0)
	for {
		id, n, chunk, err := chunks.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return undecodable(WebP, "after %d frames: %v", frames, err)
		}
		if id != (riff.FourCC{'A', 'N', 'M', 'F'}) {
			continue
		}
		frames++
		payload := make([]byte, n)
		if _, err := io.ReadFull(chunk, payload); err != nil {
			return undecodable(WebP, "frame %d is cut short", frames)
		}
		if len(payload) < 16 {
			return undecodable(WebP, "frame %d has a %d-byte header", frames, len(payload))
		}
		u24 := func(b []byte) int64 { return int64(b[0]) | int64(b[1])<<8 | int64(b[2])<<16 }
		if total += (u24(payload[6:]) + 1) * (u24(payload[9:]) + 1); total > MaxFramePixels {
			return fmt.Errorf("%w: image/webp frames hold over %s in all, more than mediafit decodes",
				ErrTooManyPixels, megapixels(MaxFramePixels))
		}
		if err := verifyWebPFrame(payload[16:]); err != nil {
			return undecodable(WebP, "frame %d: %v", frames, err)
		}
	}
	if frames == 0 {
		return undecodable(WebP, "an animation without frames")
	}
	return nil
}

// verifyWebPFrame decodes the bitstream of one animation frame: its
// chunks (ALPH, then VP8 or VP8L), each whole.
func verifyWebPFrame(b []byte) error {
	for len(b) > 0 {
		if len(b) < 8 {
			return errors.New("a chunk header is cut short")
		}
		id, n := string(b[:4]), int(binary.LittleEndian.Uint32(b[4:8]))
		if n > len(b)-8 {
			return fmt.Errorf("its %s chunk is cut short", id)
		}
		payload := b[8 : 8+n]
		switch id {
		case "VP8L":
			if _, err := vp8l.Decode(bytes.NewReader(payload)); err != nil {
				return err
			}
			return nil
		case "VP8 ":
			dec := vp8.NewDecoder()
			dec.Init(bytes.NewReader(payload), len(payload))
			if _, err := dec.DecodeFrameHeader(); err != nil {
				return err
			}
			if _, err := dec.DecodeFrame(); err != nil {
				return err
			}
			return nil
		}
		b = b[min(8+n+n&1, len(b)):]
	}
	return errors.New("no VP8 or VP8L bitstream")
}
