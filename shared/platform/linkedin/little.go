package linkedin

import "strings"

// littleReserved are the characters LinkedIn's "little" text format gives
// a meaning in a post's commentary (mentions "@[name](urn)", hashtag
// templates "{hashtag|\#|tag}", and characters kept for later elements):
// | { } @ [ ] ( ) < > # \ * _ ~. "All reserved characters need to be
// escaped with a backslash, even if those characters are not used in one
// of the supported elements or templates"
// (https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/little-text-format).
// Unescaped, LinkedIn cuts or mangles the text at the first of them and
// still answers 201: a create that "succeeded" with half a post.
const littleReserved = `|{}@[]()<>#\*_~`

func isLittleReserved(r rune) bool { return strings.ContainsRune(littleReserved, r) }

// escapeLittle renders plain text as little text that LinkedIn shows
// verbatim: every reserved character gets a backslash. Nothing is parsed
// into a mention or a hashtag: "#tag" is shown as written, not linked.
func escapeLittle(text string) string {
	if !strings.ContainsAny(text, littleReserved) {
		return text
	}
	// Byte by byte: the reserved characters are ASCII, and bytes of a
	// multi-byte (or invalid) sequence are never ASCII.
	var b strings.Builder
	b.Grow(len(text) + 16)
	for i := 0; i < len(text); i++ {
		if text[i] < 0x80 && isLittleReserved(rune(text[i])) {
			b.WriteByte('\\')
		}
		b.WriteByte(text[i])
	}
	return b.String()
}

// unescapeLittle renders little text as the text a reader sees, undoing
// escapeLittle (unescapeLittle(escapeLittle(s)) == s for every s) and
// reading the elements of posts written elsewhere (LinkedIn's own editor,
// other apps):
//
//   - "\X" is X when X is reserved; a backslash before anything else is
//     kept as it is;
//   - a hashtag template "{hashtag|\#|tag}" (sign "#" or "＃", escaped or
//     not) is its sign and tag, "#tag";
//   - a mention "@[Name](urn:li:person:…)" is "Name", as LinkedIn shows it;
//   - any other reserved character is kept as it is.
func unescapeLittle(s string) string {
	if !strings.ContainsAny(s, `\{@`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		switch s[i] {
		case '\\':
			if i+1 < len(s) && s[i+1] < 0x80 && isLittleReserved(rune(s[i+1])) {
				b.WriteByte(s[i+1])
				i += 2
				continue
			}
		case '{':
			if text, n, ok := hashtagTemplate(s[i:]); ok {
				b.WriteString(text)
				i += n
				continue
			}
		case '@':
			if text, n, ok := mentionElement(s[i:]); ok {
				b.WriteString(text)
				i += n
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// hashtagTemplate reads "{hashtag|<sign>|<tag>}" at the start of s and
// returns "<sign><tag>" and the length read.
func hashtagTemplate(s string) (string, int, bool) {
	const prefix = "{hashtag|"
	if !strings.HasPrefix(s, prefix) {
		return "", 0, false
	}
	sign, n, ok := littleField(s[len(prefix):], '|')
	if !ok {
		return "", 0, false
	}
	tag, m, ok := littleField(s[len(prefix)+n:], '}')
	if !ok {
		return "", 0, false
	}
	return sign + tag, len(prefix) + n + m, true
}

// mentionElement reads "@[<name>](<urn>)" at the start of s and returns
// "<name>" and the length read.
func mentionElement(s string) (string, int, bool) {
	if !strings.HasPrefix(s, "@[") {
		return "", 0, false
	}
	name, n, ok := littleField(s[2:], ']')
	if !ok || !strings.HasPrefix(s[2+n:], "(") {
		return "", 0, false
	}
	urn, m, ok := littleField(s[2+n+1:], ')')
	if !ok || !strings.HasPrefix(urn, "urn:") {
		return "", 0, false
	}
	return name, 2 + n + 1 + m, true
}

// littleField reads s up to the first unescaped end byte, unescaping it,
// and returns the text and the length read including end. ok is false
// when the field does not end, or contains an unescaped "{", "@" or
// another field's delimiter (it is then not an element).
func littleField(s string, end byte) (string, int, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == end:
			return b.String(), i + 1, true
		case c == '\\' && i+1 < len(s) && s[i+1] < 0x80 && isLittleReserved(rune(s[i+1])):
			b.WriteByte(s[i+1])
			i++
		case c < 0x80 && isLittleReserved(rune(c)) && c != '#':
			return "", 0, false
		case c == '\n':
			return "", 0, false
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}
