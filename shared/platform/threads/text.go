package threads

import (
	"unicode"

	"github.com/rivo/uniseg"
)

// MaxTextLength is Threads' limit on a post's text: "Text posts are limited
// to 500 characters" (https://developers.facebook.com/docs/threads/posts,
// Limitations), counted as MeasureText does.
const MaxTextLength = 500

// MeasureText is the length of text as Threads counts it against
// MaxTextLength. Threads documents: "Emojis are counted as the number of
// UTF-8 bytes" (https://developers.facebook.com/docs/threads/posts,
// Limitations; the publishing reference repeats it for the text parameter:
// "For the post character limit, emojis are counted as the number of UTF-8
// bytes", https://developers.facebook.com/documentation/threads/reference/publishing).
// The page links "number of UTF-8 bytes" to the grapheme-splitter package,
// so the unit is the grapheme cluster:
//
//   - each user-perceived character (grapheme cluster, rivo/uniseg) counts
//     1;
//   - an emoji grapheme counts the UTF-8 length of the whole cluster: "😀"
//     counts 4, "❤️" (U+2764 U+FE0F) 6, a flag (two regional indicators)
//     8, a family joined by ZWJs 25.
//
// A cluster is an emoji when it holds an Extended_Pictographic code point
// (Unicode 15.0 emoji-data.txt, the property rivo/uniseg segments by), a
// regional indicator, an emoji modifier, the emoji presentation selector
// U+FE0F or the combining keycap U+20E3. Meta does not say which
// pictographs it counts as emoji; this rule may count a symbol such as "©"
// at its byte length (2) where Threads counts 1, so it errs towards
// refusing a post Threads would take, never the other way.
func (c *Client) MeasureText(text string) int { return measureText(text) }

func measureText(text string) int {
	n := 0
	state := -1
	for text != "" {
		var cluster string
		cluster, text, _, state = uniseg.FirstGraphemeClusterInString(text, state)
		if isEmoji(cluster) {
			n += len(cluster)
		} else {
			n++
		}
	}
	return n
}

// isEmoji reports whether a grapheme cluster is an emoji (see MeasureText).
func isEmoji(cluster string) bool {
	for _, r := range cluster {
		switch {
		case r == 0xFE0F, r == 0x20E3:
			return true
		case r >= 0x1F1E6 && r <= 0x1F1FF: // regional indicators (flags)
			return true
		case r >= 0x1F3FB && r <= 0x1F3FF: // emoji modifiers (skin tones)
			return true
		case unicode.Is(extendedPictographic, r):
			return true
		}
	}
	return false
}

// extendedPictographic is the Extended_Pictographic property of Unicode
// 15.0 (https://unicode.org/Public/15.0.0/ucd/emoji/emoji-data.txt), with
// adjacent ranges merged; it is the table rivo/uniseg v0.4.7 segments
// graphemes by (graphemeproperties.go, prExtendedPictographic), which the
// module does not export.
var extendedPictographic = &unicode.RangeTable{
	R16: []unicode.Range16{
		{0x00A9, 0x00A9, 1}, {0x00AE, 0x00AE, 1}, {0x203C, 0x203C, 1}, {0x2049, 0x2049, 1},
		{0x2122, 0x2122, 1}, {0x2139, 0x2139, 1}, {0x2194, 0x2199, 1}, {0x21A9, 0x21AA, 1},
		{0x231A, 0x231B, 1}, {0x2328, 0x2328, 1}, {0x2388, 0x2388, 1}, {0x23CF, 0x23CF, 1},
		{0x23E9, 0x23F3, 1}, {0x23F8, 0x23FA, 1}, {0x24C2, 0x24C2, 1}, {0x25AA, 0x25AB, 1},
		{0x25B6, 0x25B6, 1}, {0x25C0, 0x25C0, 1}, {0x25FB, 0x25FE, 1}, {0x2600, 0x2605, 1},
		{0x2607, 0x2612, 1}, {0x2614, 0x2685, 1}, {0x2690, 0x2705, 1}, {0x2708, 0x2712, 1},
		{0x2714, 0x2714, 1}, {0x2716, 0x2716, 1}, {0x271D, 0x271D, 1}, {0x2721, 0x2721, 1},
		{0x2728, 0x2728, 1}, {0x2733, 0x2734, 1}, {0x2744, 0x2744, 1}, {0x2747, 0x2747, 1},
		{0x274C, 0x274C, 1}, {0x274E, 0x274E, 1}, {0x2753, 0x2755, 1}, {0x2757, 0x2757, 1},
		{0x2763, 0x2767, 1}, {0x2795, 0x2797, 1}, {0x27A1, 0x27A1, 1}, {0x27B0, 0x27B0, 1},
		{0x27BF, 0x27BF, 1}, {0x2934, 0x2935, 1}, {0x2B05, 0x2B07, 1}, {0x2B1B, 0x2B1C, 1},
		{0x2B50, 0x2B50, 1}, {0x2B55, 0x2B55, 1}, {0x3030, 0x3030, 1}, {0x303D, 0x303D, 1},
		{0x3297, 0x3297, 1}, {0x3299, 0x3299, 1},
	},
	R32: []unicode.Range32{
		{0x1F000, 0x1F0FF, 1}, {0x1F10D, 0x1F10F, 1}, {0x1F12F, 0x1F12F, 1}, {0x1F16C, 0x1F171, 1},
		{0x1F17E, 0x1F17F, 1}, {0x1F18E, 0x1F18E, 1}, {0x1F191, 0x1F19A, 1}, {0x1F1AD, 0x1F1E5, 1},
		{0x1F201, 0x1F20F, 1}, {0x1F21A, 0x1F21A, 1}, {0x1F22F, 0x1F22F, 1}, {0x1F232, 0x1F23A, 1},
		{0x1F23C, 0x1F23F, 1}, {0x1F249, 0x1F3FA, 1}, {0x1F400, 0x1F53D, 1}, {0x1F546, 0x1F64F, 1},
		{0x1F680, 0x1F6FF, 1}, {0x1F774, 0x1F77F, 1}, {0x1F7D5, 0x1F7FF, 1}, {0x1F80C, 0x1F80F, 1},
		{0x1F848, 0x1F84F, 1}, {0x1F85A, 0x1F85F, 1}, {0x1F888, 0x1F88F, 1}, {0x1F8AE, 0x1F8FF, 1},
		{0x1F90C, 0x1F93A, 1}, {0x1F93C, 0x1F945, 1}, {0x1F947, 0x1FAFF, 1}, {0x1FC00, 0x1FFFD, 1},
	},
	LatinOffset: 2, // U+00A9 and U+00AE
}
