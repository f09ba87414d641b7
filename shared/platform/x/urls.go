package x

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// URL detection as twitter-text's extractor does it
// (twitter/twitter-text at 30e2430: java/src/main/java/com/twitter/
// twittertext/Extractor.java extractURLsWithIndices and
// isValidHostAndLength, Regex.java VALID_URL), written out by hand
// because Go's regexp has no lookbehind, atomic groups or possessive
// quantifiers. X wraps every URL it finds this way in a t.co link, so
// each counts transformedURLLength. The conformance cases of
// twitter-text's conformance/extract.yml that the tests replay pin the
// behaviour down.
//
// A URL is an optional http:// or https://, a host, an optional port,
// path and query:
//
//   - it starts after a character that is not an ASCII letter or digit,
//     '@', '＠', '$', '#' or '＃' (or at the start of the text); without a
//     scheme also not after '-', '_', '.' or '/';
//   - the host is labels of Latin letters, digits and '-' ('_' allowed
//     in labels before the last) ending in a top-level domain, or, after
//     a scheme, a single label of any non-punctuation characters and a
//     top-level domain; the top-level domain is one of the public suffix
//     list's ICANN section (twitter-text keeps its own copy of the root
//     zone) or punycode, and is not followed by a letter, digit, '@', '+'
//     or '-';
//   - the path and query end on characters that do not usually close a
//     sentence (not on '.', ',', '!' …), with balanced parentheses;
//   - the host's labels are at most 63 characters once punycode-encoded,
//     the whole URL at most 4096; a t.co link ends after its slug (at
//     most 40 characters).
const (
	maxURLLength  = 4096
	maxTcoSlug    = 40
	schemeLenHint = len("https://")
)

// span is a URL's byte range in the text.
type span struct{ start, end int }

// extractURLs returns the URLs of s in order. Like a regexp scan, the
// search resumes after each match (taken or refused), so the next URL's
// preceding character is at or after the previous match's end.
func extractURLs(s string) []span {
	if !strings.ContainsRune(s, '.') {
		return nil
	}
	var out []span
	for i := 0; i < len(s); {
		m, ok := matchURL(s, i)
		if !ok {
			i += runeLen(s, i)
			continue
		}
		if m.accepted {
			out = append(out, span{i, m.end})
		}
		i = m.matchEnd
		if i < len(s) {
			i += runeLen(s, i)
		}
	}
	return out
}

// urlMatch is a URL pattern match at a start position: matchEnd is where
// the pattern ended, end where the URL ends (shorter for a t.co link),
// accepted whether it counts as a URL.
type urlMatch struct {
	end, matchEnd int
	accepted      bool
}

// matchURL matches the URL pattern at i.
func matchURL(s string, i int) (urlMatch, bool) {
	if !validBefore(s, i) {
		return urlMatch{}, false
	}
	p, scheme := i, false
	switch {
	case hasPrefixFold(s[p:], "https://"):
		p, scheme = p+len("https://"), true
	case hasPrefixFold(s[p:], "http://"):
		p, scheme = p+len("http://"), true
	}
	hostEnd, ok := matchHost(s, p, scheme)
	if !ok {
		return urlMatch{}, false
	}
	q := hostEnd
	if q < len(s) && s[q] == ':' {
		d := q + 1
		for d < len(s) && s[d] >= '0' && s[d] <= '9' {
			d++
		}
		if d > q+1 {
			q = d
		}
	}
	if q < len(s) && s[q] == '/' {
		q = matchPath(s, q+1)
	}
	if q < len(s) && s[q] == '?' {
		q = matchQuery(s, q)
	}
	m := urlMatch{end: q, matchEnd: q, accepted: true}
	if !scheme && i > 0 {
		if prev, _ := utf8.DecodeLastRuneInString(s[:i]); strings.ContainsRune("-_./", prev) {
			m.accepted = false
			return m, true
		}
	}
	if scheme && hasPrefixFold(s[p:q], "t.co/") {
		slug := p + len("t.co/")
		e := slug
		for e < q && asciiAlnum(s[e]) {
			e++
		}
		if e > slug {
			if e-slug > maxTcoSlug {
				m.accepted = false
				return m, true
			}
			if e < q && s[e] == '?' {
				e = matchQuery(s, e)
			}
			m.end = e
		}
	}
	m.accepted = validHost(s[p:hostEnd], utf8.RuneCountInString(s[i:m.end]), scheme)
	return m, true
}

// validBefore reports whether a URL may start at i: at the start, after
// a directional mark, or after anything but an ASCII letter or digit, an
// at, dollar or hash sign, or a non-character.
func validBefore(s string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	switch r {
	case 0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069:
		return true
	case '@', '＠', '$', '#', '＃', 0xFFFE, 0xFEFF, 0xFFFF:
		return false
	}
	return r >= utf8.RuneSelf || !asciiAlnum(byte(r))
}

// matchHost matches a host at p and returns its end. Labels of Latin
// characters are tried first, taking as many as precede a top-level
// domain (a regexp's greedy repetition); after a scheme a single label
// of any non-punctuation characters is tried next.
func matchHost(s string, p int, scheme bool) (int, bool) {
	best := -1
	for pos := p; ; {
		e := scan(s, pos, func(r rune) bool { return latinURLChar(r) || r == '-' || r == '_' })
		if e == pos || e >= len(s) || s[e] != '.' {
			break
		}
		label := s[pos:e]
		if !labelEdges(label, latinURLChar) {
			break // not a subdomain, so nothing after it is a host
		}
		if !strings.ContainsRune(label, '_') {
			if end, ok := tldAt(s, e+1); ok {
				best = end
			}
		}
		pos = e + 1
	}
	if best >= 0 {
		return best, true
	}
	if !scheme {
		return 0, false
	}
	e := scan(s, p, func(r rune) bool { return unicodeURLChar(r) || r == '-' })
	if e == p || e >= len(s) || s[e] != '.' || !labelEdges(s[p:e], unicodeURLChar) {
		return 0, false
	}
	return tldAt(s, e+1)
}

// tldAt matches a top-level domain at p: punycode, a run of ASCII
// letters that is a known TLD and not followed by '@', '+' or '-', or the
// longest run of non-ASCII letters that is a known internationalised TLD
// and not followed by an ASCII letter or digit, '@', '+' or '-'.
func tldAt(s string, p int) (int, bool) {
	if p >= len(s) {
		return 0, false
	}
	if hasPrefixFold(s[p:], "xn--") {
		e := scan(s, p+4, func(r rune) bool { return r < utf8.RuneSelf && (asciiAlnum(byte(r)) || r == '-') })
		if e > p+4 {
			return e, true
		}
	}
	if s[p] < utf8.RuneSelf {
		e := p
		for e < len(s) && asciiAlnum(s[e]) {
			e++
		}
		if e == p || e < len(s) && strings.IndexByte("@+-", s[e]) >= 0 {
			return 0, false
		}
		return e, knownTLD(strings.ToLower(s[p:e]))
	}
	e := scan(s, p, func(r rune) bool { return r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsMark(r)) })
	for e > p {
		if e == len(s) || !(asciiAlnum(s[e]) || strings.IndexByte("@+-", s[e]) >= 0) {
			if ascii, err := idna.Punycode.ToASCII(s[p:e]); err == nil && knownTLD(ascii) {
				return e, true
			}
		}
		_, size := utf8.DecodeLastRuneInString(s[p:e])
		e -= size
	}
	return 0, false
}

// knownTLD reports whether tld (lower case, ASCII) is a top-level domain
// of the public suffix list's ICANN section. A name under it is asked
// about, so that TLDs listed only by a wildcard rule ("*.ck") count.
func knownTLD(tld string) bool {
	_, icann := publicsuffix.PublicSuffix("example." + tld)
	return icann
}

// validHost is twitter-text's isValidHostAndLength: every label of the
// punycode-encoded host is 1 to 63 characters long, and the URL, with a
// scheme added when it has none, is at most maxURLLength characters.
func validHost(host string, urlRunes int, scheme bool) bool {
	ascii, err := idna.Punycode.ToASCII(host)
	if err != nil || ascii == "" {
		return false
	}
	for _, l := range strings.Split(ascii, ".") {
		if l == "" || len(l) > 63 {
			return false
		}
	}
	n := urlRunes - utf8.RuneCountInString(host) + len(ascii)
	if !scheme {
		n += schemeLenHint
	}
	return n <= maxURLLength
}

// matchPath matches a path after its leading '/' at p and returns its
// end: the longest run of path characters and balanced parentheses that
// ends on an ending character or a parenthesis group (possibly none).
func matchPath(s string, p int) int {
	end := p
	for i := p; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '(':
			j, ok := balancedParens(s, i)
			if !ok {
				return end
			}
			i, end = j, j
		case pathChar(r):
			i += size
			if pathEndChar(r) {
				end = i
			}
		default:
			return end
		}
	}
	return end
}

// balancedParens matches "(x)" or "(x(y)z)" at i, x and z path
// characters (z and x possibly empty in the nested form), y not empty.
func balancedParens(s string, i int) (int, bool) {
	j := scan(s, i+1, pathChar)
	if j < len(s) && s[j] == ')' && j > i+1 {
		return j + 1, true
	}
	if j >= len(s) || s[j] != '(' {
		return 0, false
	}
	k := scan(s, j+1, pathChar)
	if k == j+1 || k >= len(s) || s[k] != ')' {
		return 0, false
	}
	l := scan(s, k+1, pathChar)
	if l >= len(s) || s[l] != ')' {
		return 0, false
	}
	return l + 1, true
}

// matchQuery matches a query at its '?' at p and returns its end: p when
// no query character that may end one follows.
func matchQuery(s string, p int) int {
	end := p
	for i := p + 1; i < len(s) && strings.IndexByte(queryChars, lower(s[i])) >= 0; i++ {
		if strings.IndexByte(queryEndChars, lower(s[i])) >= 0 {
			end = i + 1
		}
	}
	return end
}

const (
	queryChars    = "abcdefghijklmnopqrstuvwxyz0123456789!?*'();:&=+$/%#[]-_.,~|@"
	queryEndChars = "abcdefghijklmnopqrstuvwxyz0123456789-_&=#/"
)

// pathChar is twitter-text's URL_VALID_GENERAL_PATH_CHARS.
func pathChar(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiAlnum(byte(r)) || strings.ContainsRune("!*';:=+,.$/%#[]-_~|&@", r)
	}
	return r == '\u2013' || latinAccent(r) || cyrillic(r)
}

// pathEndChar is twitter-text's URL_VALID_PATH_ENDING_CHARS, less the
// parenthesis groups.
func pathEndChar(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiAlnum(byte(r)) || strings.ContainsRune("=_#/-+", r)
	}
	return latinAccent(r) || cyrillic(r)
}

// latinURLChar is twitter-text's URL_VALID_CHARS.
func latinURLChar(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiAlnum(byte(r))
	}
	return latinAccent(r)
}

// unicodeURLChar is twitter-text's URL_VALID_UNICODE_CHARS: not ASCII
// punctuation, white space, a separator or general punctuation.
func unicodeURLChar(r rune) bool {
	if r < utf8.RuneSelf {
		return !strings.ContainsRune("-_!\"#$%&'()*+,./:;<=>?@[]^`{|}~", r) && !unicode.IsSpace(r)
	}
	return !unicode.IsSpace(r) && !unicode.Is(unicode.Z, r) && !(r >= 0x2000 && r <= 0x206F)
}

// latinAccent is twitter-text's LATIN_ACCENTS_CHARS.
func latinAccent(r rune) bool {
	switch {
	case r >= 0xC0 && r <= 0xD6, r >= 0xD8 && r <= 0xF6, r >= 0xF8 && r <= 0x24F,
		r >= 0x300 && r <= 0x36F, r >= 0x1E00 && r <= 0x1EFF:
		return true
	}
	switch r {
	case 0x253, 0x254, 0x256, 0x257, 0x259, 0x25B, 0x263, 0x268, 0x26F, 0x272, 0x289, 0x28B, 0x2BB:
		return true
	}
	return false
}

func cyrillic(r rune) bool { return r >= 0x400 && r <= 0x4FF }

// labelEdges reports whether a label starts and ends with a character
// of the class (not '-' or '_').
func labelEdges(label string, class func(rune) bool) bool {
	first, _ := utf8.DecodeRuneInString(label)
	last, _ := utf8.DecodeLastRuneInString(label)
	return class(first) && class(last)
}

// scan returns the end of the run of characters in class starting at p.
func scan(s string, p int, class func(rune) bool) int {
	for p < len(s) {
		r, size := utf8.DecodeRuneInString(s[p:])
		if !class(r) {
			break
		}
		p += size
	}
	return p
}

func runeLen(s string, i int) int {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func asciiAlnum(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

func lower(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}
