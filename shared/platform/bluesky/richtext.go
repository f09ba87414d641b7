package bluesky

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/publicsuffix"

	"oncepost/shared/graphemes"
)

// Facets are how a Bluesky post marks links, mentions and hashtags: the
// text stays plain and each facet names a byte range of its UTF-8 encoding
// (https://docs.bsky.app/docs/advanced-guides/post-richtext). A client
// that sends none gets a post whose URLs are not clickable, whose
// mentions notify nobody and whose tags are not searchable.
//
// The detection is the reference client's, rule by rule: @atproto/api
// 0.21's rich-text detection (detection.ts and util.ts, which the Bluesky
// app runs), so a post reads as if it had been written in the app.
// TestRichTextAsTheReferenceClient runs that client over a corpus of texts
// and compares. Its regular expressions are JavaScript's: there \s is
// Unicode white space (jsSpace; RE2's \s is ASCII only), the
// case-insensitive flag folds ASCII letters only (spelled out here), and
// the lookaheads RE2 lacks are checked in code.
//
// Where the reference would write a facet that app.bsky.richtext.facet's
// lexicon refuses, and the PDS with it the whole post, the adapter
// differs: a link's URI must be a URI (the reference writes "httpbin.org"
// as it stands, and "http://" for "http://."), and a tag is at most 640
// bytes, the lexicon's limit besides its 64 characters.

// facet is one app.bsky.richtext.facet.
type facet struct {
	Index    byteSlice      `json:"index"`
	Features []facetFeature `json:"features"`
}

type byteSlice struct {
	ByteStart int `json:"byteStart"`
	ByteEnd   int `json:"byteEnd"`
}

// facetFeature is one of the #link, #mention and #tag features; the
// fields not of its type stay empty.
type facetFeature struct {
	Type string `json:"$type"`
	URI  string `json:"uri,omitempty"`
	DID  string `json:"did,omitempty"`
	Tag  string `json:"tag,omitempty"`
}

const (
	// jsSpace is what \s matches in JavaScript: white space (Zs, tab,
	// vertical tab, form feed, U+FEFF) and line terminators.
	jsSpace = `\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`
	// tagStop are the invisible characters that end a hashtag besides
	// white space: soft hyphen, word joiner, hair space, zero-width space,
	// non-joiner and joiner, combining enclosing keycap.
	tagStop = `\x{ad}\x{2060}\x{200a}\x{200b}\x{200c}\x{200d}\x{20e2}`
	// maxTagGraphemes and maxTagBytes are the lexicon's limits of a tag.
	maxTagGraphemes = 64
	maxTagBytes     = 640
)

var (
	// mentionRE: "@" and a handle-like name (letters, digits, dots and
	// hyphens, up to a word boundary) after a start, a space or "(".
	mentionRE = regexp.MustCompile(`(^|[` + jsSpace + `]|\()@([a-zA-Z0-9.-]+)\b`)
	// linkRE: after a start, a space or "(", a URL with an http(s) scheme
	// (group 3) or a domain name (group 5) and what follows it (group 4),
	// up to a space. The reference's multi-line flag changes nothing: a
	// line terminator is white space.
	linkRE = regexp.MustCompile(`(^|[` + jsSpace + `]|\()(([hH][tT][tT][pP][sS]?://[^` + jsSpace + `]+)|(([a-zA-Z][a-zA-Z0-9]*(\.[a-zA-Z0-9]+)+)[^` + jsSpace + `]*))`)
	// tagRE: "#" or the full-width "＃" after a start or a space, and the
	// run of characters up to a space or a tagStop (group 2; detectFacets
	// checks what the reference's regular expression requires of it).
	tagRE = regexp.MustCompile(`(^|[` + jsSpace + `])[#＃]([^` + jsSpace + tagStop + `]*)`)
	// cashtagRE: "$" and a ticker (a letter and up to four letters or
	// digits) after a start, a space or "("; what follows is checked by
	// cashtagEnds.
	cashtagRE = regexp.MustCompile(`(^|[` + jsSpace + `]|\()\$([A-Za-z][A-Za-z0-9]{0,4})`)
	// spaceRE matches one JavaScript white space character.
	spaceRE = regexp.MustCompile(`^[` + jsSpace + `]`)
	// uriRE is the lexicon's uri format (@atproto/syntax isValidUri).
	uriRE = regexp.MustCompile(`^\w+:(//)?[^` + jsSpace + `/][^` + jsSpace + `]*$`)
)

// resolver finds the DID of a handle; ok is false when it cannot.
type resolver func(ctx context.Context, handle string) (did string, ok bool)

// detectFacets returns the facets of text in byte order: mentions, links,
// hashtags and cashtags, as the reference client finds them. A mention
// whose handle does not resolve is left as plain text (the reference
// client would write it with an empty DID, which the lexicon refuses).
func detectFacets(ctx context.Context, text string, resolve resolver) []facet {
	var out []facet
	add := func(start, end int, f facetFeature) {
		out = append(out, facet{Index: byteSlice{start, end}, Features: []facetFeature{f}})
	}
	for _, m := range mentionRE.FindAllStringSubmatchIndex(text, -1) {
		handle := text[m[4]:m[5]]
		if !topLevelDomain(handle) && !strings.HasSuffix(handle, ".test") {
			continue // probably not a handle
		}
		if did, ok := resolve(ctx, strings.ToLower(handle)); ok {
			add(m[4]-1, m[5], facetFeature{Type: "app.bsky.richtext.facet#mention", DID: did})
		}
	}
	for _, m := range linkRE.FindAllStringSubmatchIndex(text, -1) {
		start, end := m[4], m[5]
		uri := text[start:end]
		if m[6] >= 0 {
			if !strings.HasPrefix(uri, "http") {
				continue // an upper-case scheme: the reference leaves it
			}
		} else {
			if !topLevelDomain(text[m[10]:m[11]]) {
				continue
			}
			uri = "https://" + uri
		}
		// One trailing punctuation mark is not part of the link, then
		// one ")" unless the link holds a "(".
		if strings.IndexByte(".,;:!?", uri[len(uri)-1]) >= 0 {
			uri, end = uri[:len(uri)-1], end-1
		}
		if strings.HasSuffix(uri, ")") && !strings.Contains(uri, "(") {
			uri, end = uri[:len(uri)-1], end-1
		}
		if !uriRE.MatchString(uri) {
			continue
		}
		add(start, end, facetFeature{Type: "app.bsky.richtext.facet#link", URI: uri})
	}
	for _, m := range tagRE.FindAllStringSubmatchIndex(text, -1) {
		body := text[m[4]:m[5]]
		// The reference's pattern: not starting with U+FE0F, and with a
		// character that is neither a digit nor punctuation.
		if strings.HasPrefix(body, "\ufe0f") || !strings.ContainsFunc(body, tagLetter) {
			continue
		}
		tag := strings.TrimRightFunc(body, unicode.IsPunct)
		if graphemes.Count(tag) > maxTagGraphemes || len(tag) > maxTagBytes {
			continue
		}
		add(m[3], m[4]+len(tag), facetFeature{Type: "app.bsky.richtext.facet#tag", Tag: tag})
	}
	for _, m := range cashtagRE.FindAllStringSubmatchIndex(text, -1) {
		if !cashtagEnds(text[m[5]:]) {
			continue
		}
		add(m[4]-1, m[5], facetFeature{Type: "app.bsky.richtext.facet#tag", Tag: "$" + strings.ToUpper(text[m[4]:m[5]])})
	}
	slices.SortStableFunc(out, func(a, b facet) int { return a.Index.ByteStart - b.Index.ByteStart })
	return out
}

// tagLetter is a character that makes a hashtag: neither an ASCII digit
// nor punctuation.
func tagLetter(r rune) bool {
	return (r < '0' || r > '9') && !unicode.IsPunct(r)
}

// cashtagEnds reports whether a ticker followed by rest ends there: at
// the end of the text, a space, or one of . , ; : ! ? ) " ' ’.
func cashtagEnds(rest string) bool {
	if rest == "" || spaceRE.MatchString(rest) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return strings.ContainsRune(`.,;:!?)"'’`, r)
}

// topLevelDomain reports whether name ends in "." and a top-level domain,
// in lower case as the reference client's list (npm tlds: IANA's root
// zone) spells them. The list here is the ICANN section of the public
// suffix list (golang.org/x/net/publicsuffix). It holds the same ASCII
// names, and two kinds more, refused here as the reference does: the
// internationalised ones in their "xn--" spelling (the reference's list
// spells them in Unicode, which a link or a handle, ASCII, never ends
// with) and "onion", a special-use name outside the root zone.
func topLevelDomain(name string) bool {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return false
	}
	label := name[i+1:]
	if label == "" || label != strings.ToLower(label) || strings.HasPrefix(label, "xn--") || label == "onion" {
		return false
	}
	// "x." because a few top-level domains are listed only by a wildcard
	// rule ("*.ck"): the suffix of x.ck is then x.ck, still ICANN's.
	_, icann := publicsuffix.PublicSuffix("x." + label)
	return icann
}
