package mediafit

import (
	"bytes"
	"encoding/binary"
	"image"
)

// exifOrientation returns the EXIF orientation (1 to 8) of JPEG data, 1
// when there is none or it cannot be read. It reads the segments before
// the first scan, takes the first APP1 segment that holds EXIF, and looks
// for tag 0x0112 (Orientation, one SHORT) in its first IFD; every other
// tag is ignored. Malformed data gives 1, never a panic.
func exifOrientation(data []byte) int {
	if len(data) < 4 || data[0] != 0xFF || data[1] != 0xD8 {
		return 1
	}
	for i := 2; i+4 <= len(data); {
		if data[i] != 0xFF {
			return 1
		}
		marker := data[i+1]
		switch {
		case marker == 0xFF: // fill byte
			i++
			continue
		case marker == 0x01 || marker >= 0xD0 && marker <= 0xD8: // markers without a length
			i += 2
			continue
		case marker == 0xDA || marker == 0xD9: // start of scan, end of image: no metadata after
			return 1
		}
		n := int(data[i+2])<<8 | int(data[i+3]) // counts its own two bytes
		if n < 2 || i+2+n > len(data) {
			return 1
		}
		seg := data[i+4 : i+2+n]
		if marker == 0xE1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			return tiffOrientation(seg[6:])
		}
		i += 2 + n
	}
	return 1
}

// tiffOrientation reads tag 0x0112 from IFD0 of a TIFF structure (the
// body of an EXIF segment); 1 when absent or malformed.
func tiffOrientation(t []byte) int {
	if len(t) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 1
	}
	if bo.Uint16(t[2:]) != 42 {
		return 1
	}
	off := uint64(bo.Uint32(t[4:]))
	if off < 8 || off+2 > uint64(len(t)) {
		return 1
	}
	count := int(bo.Uint16(t[off:]))
	p := int(off) + 2
	for k := 0; k < count && p+12 <= len(t); k, p = k+1, p+12 {
		e := t[p : p+12] // tag, type, count, value
		if bo.Uint16(e) != 0x0112 {
			continue
		}
		const typeShort = 3
		if bo.Uint16(e[2:]) != typeShort || bo.Uint32(e[4:]) != 1 {
			return 1
		}
		if v := int(bo.Uint16(e[8:])); v >= 1 && v <= 8 {
			return v
		}
		return 1
	}
	return 1
}

// orient returns the pixels of a w×h image of 4-byte pixels (RGBA or
// NRGBA, rows stride bytes apart) turned and flipped as EXIF orientation
// o says, so that they show upright without the tag, with their stride
// and bounds; the input itself for orientation 1. It moves whole pixels:
// nothing is resampled.
func orient(pix []byte, stride, w, h, o int) ([]byte, int, image.Rectangle) {
	if o < 2 || o > 8 {
		return pix, stride, image.Rect(0, 0, w, h)
	}
	ow, oh := w, h
	if o >= 5 {
		ow, oh = h, w
	}
	out := make([]byte, ow*oh*4)
	// to maps a source pixel to where it shows.
	var to func(x, y int) (int, int)
	switch o {
	case 2: // mirrored
		to = func(x, y int) (int, int) { return w - 1 - x, y }
	case 3: // turned 180°
		to = func(x, y int) (int, int) { return w - 1 - x, h - 1 - y }
	case 4: // mirrored upside down
		to = func(x, y int) (int, int) { return x, h - 1 - y }
	case 5: // transposed
		to = func(x, y int) (int, int) { return y, x }
	case 6: // to be turned 90° clockwise
		to = func(x, y int) (int, int) { return h - 1 - y, x }
	case 7: // transversed
		to = func(x, y int) (int, int) { return h - 1 - y, w - 1 - x }
	case 8: // to be turned 90° counter-clockwise
		to = func(x, y int) (int, int) { return y, w - 1 - x }
	}
	for y := range h {
		for x := range w {
			dx, dy := to(x, y)
			copy(out[(dy*ow+dx)*4:][:4], pix[y*stride+x*4:][:4])
		}
	}
	return out, ow * 4, image.Rect(0, 0, ow, oh)
}

// isAnimated tells whether data of type ct holds more than one frame: a
// GIF with two image descriptors, or a WebP whose VP8X header sets the
// animation flag. Only those two formats animate among the ones Fit reads.
func isAnimated(ct string, data []byte) bool {
	switch ct {
	case GIF:
		return gifFrames(data, 2) >= 2
	case WebP:
		// RIFF, size, WEBP, then a VP8X chunk: fourcc, size, flags.
		const animationBit = 1 << 1
		return len(data) >= 21 && string(data[0:4]) == "RIFF" && string(data[8:12]) == "WEBP" &&
			string(data[12:16]) == "VP8X" && data[20]&animationBit != 0
	}
	return false
}

// gifFrames counts the image descriptors of a GIF, stopping at stop, by
// walking its blocks without decoding any pixel (image/gif's DecodeAll
// would decode every frame, and a small GIF can hold huge ones). A
// malformed GIF counts the frames seen before the damage.
func gifFrames(d []byte, stop int) int {
	const screenEnd = 13 // "GIF89a", then width, height, flags, background, aspect
	if len(d) < screenEnd {
		return 0
	}
	p := screenEnd
	if flags := d[10]; flags&0x80 != 0 { // global colour table
		p += 3 << (flags&7 + 1)
	}
	frames := 0
	for p < len(d) {
		switch d[p] {
		case 0x21: // extension: introducer, label, data sub-blocks
			p = skipSubBlocks(d, p+2)
		case 0x2C: // image descriptor: 10 bytes, local colour table, LZW code size, data sub-blocks
			if frames++; frames >= stop || p+10 > len(d) {
				return frames
			}
			flags := d[p+9]
			p += 10
			if flags&0x80 != 0 {
				p += 3 << (flags&7 + 1)
			}
			p = skipSubBlocks(d, p+1)
		default: // 0x3B trailer, or damage
			return frames
		}
	}
	return frames
}

// skipSubBlocks returns the position after the GIF data sub-blocks that
// start at p (length-prefixed, ended by a zero length), or past the end.
func skipSubBlocks(d []byte, p int) int {
	for p < len(d) {
		n := int(d[p])
		p++
		if n == 0 {
			return p
		}
		p += n
	}
	return p
}
