package x

import (
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"
	"golang.org/x/text/unicode/norm"
)

// X weighs a post's text instead of counting its characters
// (https://docs.x.com/fundamentals/counting-characters): the text is
// NFC-normalised, every URL counts transformedURLLength whatever its
// length, an emoji (with its modifiers, joiners and variation selector)
// counts 2, and every other code point counts 1 if it is in one of the
// light ranges and 2 otherwise. The numbers are twitter-text's
// configuration v3 (twitter/twitter-text config/v3.json at 30e2430:
// maxWeightedTweetLength 280, scale 100, defaultWeight 200,
// transformedURLLength 23, ranges 0–4351, 8192–8205, 8208–8223,
// 8242–8247 at weight 100), applied the way its reference parser does
// (java/src/main/java/com/twitter/twittertext/TwitterTextParser.java).
const (
	// MaxWeightedLength is X's limit for a post's weighted length.
	MaxWeightedLength = 280
	// transformedURLLength is what any URL weighs: the length of the t.co
	// link X replaces it with.
	transformedURLLength = 23
)

// MeasureText is the post's weighted length as X counts it (see
// WeightedLength); it is what Publish compares with MaxWeightedLength.
// It implements platform.TextMeasurer.
func (c *Client) MeasureText(text string) int { return WeightedLength(text) }

// WeightedLength is text's length as X counts it against its 280 limit.
//
// Emoji are recognised per grapheme cluster (rivo/uniseg) rather than by
// twitter-text's generated emoji regex: a cluster of more than one code
// point that is an emoji sequence (see emojiCluster) counts 2; any other
// cluster counts the weights of its code points. A single code point
// needs no emoji test: every emoji code point outside the light ranges
// weighs 2 anyway, and those inside (©, ®, digits) are emoji only with a
// following U+FE0F or keycap, i.e. in a longer cluster.
//
// URLs are found as twitter-text's extractor finds them, with or
// without a scheme (see extractURLs); the list of valid top-level domains
// comes from the public suffix list (golang.org/x/net/publicsuffix)
// instead of twitter-text's own copy of the root zone.
func WeightedLength(text string) int {
	if strings.TrimFunc(text, func(r rune) bool { return r <= ' ' }) == "" {
		// twitter-text answers 0 for a text that Java's String.trim
		// empties (only code points up to U+0020).
		return 0
	}
	s := norm.NFC.String(text)
	n, pos := 0, 0
	for _, u := range extractURLs(s) {
		n += weighSpan(s[pos:u.start]) + transformedURLLength
		pos = u.end
	}
	return n + weighSpan(s[pos:])
}

// weighSpan weighs text that holds no URL, cluster by cluster.
func weighSpan(s string) int {
	n := 0
	state := -1
	for s != "" {
		var cluster string
		cluster, s, _, state = uniseg.FirstGraphemeClusterInString(s, state)
		if emojiCluster(cluster) {
			n += 2
			continue
		}
		for _, r := range cluster {
			n += runeWeight(r)
		}
	}
	return n
}

// runeWeight is a code point's weight in twitter-text's configuration
// v3: 1 in its light ranges (U+0000–U+10FF: Latin, Greek, Cyrillic,
// Hebrew, Arabic, Indic scripts…; U+2000–U+200D spaces and joiners;
// U+2010–U+201F dashes and quotes; U+2032–U+2037 primes), 2 elsewhere
// (CJK, emoji, most symbols).
func runeWeight(r rune) int {
	switch {
	case r <= 0x10FF, r >= 0x2000 && r <= 0x200D, r >= 0x2010 && r <= 0x201F, r >= 0x2032 && r <= 0x2037:
		return 1
	}
	return 2
}

// emojiCluster reports whether a grapheme cluster of several code points
// is one emoji for X: a keycap ("1⃣", "#️⃣"), a pictograph with a skin
// tone, variation selector 16, joiners or tags (👍🏽, ❤️, 👨‍👩‍👧‍👦,
// 🏴 with tags), a flag (two regional indicators), or ©, ® and ™ made
// emoji by U+FE0F. A cluster with U+FE0E asks for text presentation and
// is not an emoji (twitter-text's regex refuses it with a negative
// lookahead). Other clusters (a letter with combining marks, a Hangul
// syllable in jamo) are not emoji.
func emojiCluster(cluster string) bool {
	first, rest := firstRune(cluster)
	if rest == "" {
		return false
	}
	switch {
	case first == '#' || first == '*' || first >= '0' && first <= '9':
		return strings.ContainsRune(rest, 0x20E3)
	case strings.ContainsRune(rest, 0xFE0E):
		return false
	case first == 0xA9 || first == 0xAE || first == 0x2122:
		return strings.HasPrefix(rest, "\uFE0F")
	}
	return pictographic(first)
}

// pictographic approximates Unicode's Extended_Pictographic property for
// the first code point of a cluster: the symbol and pictograph blocks
// emoji come from.
func pictographic(r rune) bool {
	switch {
	case r >= 0x1F000 && r <= 0x1FAFF: // mahjong … symbols and pictographs extended-A, regional indicators
		return true
	case r >= 0x2190 && r <= 0x2BFF: // arrows, technical, enclosed, geometric, misc symbols, dingbats
		return true
	}
	switch r {
	case 0x203C, 0x2049, 0x2139, 0x24C2, 0x3030, 0x303D, 0x3297, 0x3299:
		return true
	}
	return false
}

func firstRune(s string) (rune, string) {
	r, size := utf8.DecodeRuneInString(s)
	return r, s[size:]
}
