// Package graphemes counts user-perceived characters (extended grapheme
// clusters, UAX #29), the unit of every text limit oncepost checks in
// characters (post.Limits.MaxTextGraphemes). Validation and the adapters
// that check a text before sending it count with this one function, so a
// post that passes `post add` is not refused at its slot for its length.
//
// The rules are Unicode 17's (github.com/clipperhouse/uax29/v2, tested
// against Unicode's GraphemeBreakTest), as the platforms count today:
// Bluesky's PDS counts with Intl.Segmenter on Node 22 (ICU 74 and later,
// Unicode 15.1 and later). Unicode 15.1 added GB9c, which keeps an Indic
// conjunct (a consonant, a virama, a consonant: "क्षि", "ন্ত্র") one
// character; rivo/uniseg v0.4.7, the newest release, implements 15.0 and
// counted such a conjunct as two or three, refusing valid posts.
package graphemes

import "github.com/clipperhouse/uax29/v2/graphemes"

// Count is the number of grapheme clusters in text: an emoji family is
// one, "é" written as e and a combining accent is one, "क्षि" is one.
func Count(text string) int {
	n := 0
	for it := graphemes.FromString(text); it.Next(); {
		n++
	}
	return n
}
