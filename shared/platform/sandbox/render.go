package sandbox

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// charactersReservedPerURL is what one link counts towards the character
// limit, whatever its length, as on Mastodon.
const charactersReservedPerURL = 23

// urlDisplayLength is how many characters of a link's visible part Mastodon
// shows before it cuts the rest off with an ellipsis.
const urlDisplayLength = 30

// stripText trims the text the way Mastodon's Ruby String#strip does before
// a status is saved: ASCII white space and NUL only.
func stripText(text string) string {
	return strings.Trim(text, " \t\n\v\f\r\x00")
}

// textSegment is a run of the status text: either plain text or a link.
type textSegment struct {
	text string
	link bool
}

// splitLinks cuts text into plain runs and http(s) links, approximating the
// twitter-text extractor Mastodon uses (links need a scheme, trailing
// punctuation is not part of a link, parentheses must balance).
func splitLinks(text string) []textSegment {
	var segs []textSegment
	plainStart := 0
	i := 0
	for i < len(text) {
		n := schemeLength(text, i)
		if n == 0 || !validLinkPreceding(text, i) {
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
			continue
		}
		end := linkEnd(text, i, n)
		if end <= i+n {
			i += n
			continue
		}
		if plainStart < i {
			segs = append(segs, textSegment{text: text[plainStart:i]})
		}
		segs = append(segs, textSegment{text: text[i:end], link: true})
		i = end
		plainStart = end
	}
	if plainStart < len(text) {
		segs = append(segs, textSegment{text: text[plainStart:]})
	}
	return segs
}

// schemeLength returns the length of "http://" or "https://" (any case) at
// text[i:], or 0.
func schemeLength(text string, i int) int {
	for _, scheme := range []string{"https://", "http://"} {
		if len(text)-i >= len(scheme) && strings.EqualFold(text[i:i+len(scheme)], scheme) {
			return len(scheme)
		}
	}
	return 0
}

// validLinkPreceding reports whether a link may start at text[i]: not glued
// to a preceding letter, digit, @, $ or #.
func validLinkPreceding(text string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(text[:i])
	if r == '@' || r == '$' || r == '#' || r == '＠' || r == '＃' {
		return false
	}
	return !(unicode.IsLetter(r) || unicode.IsDigit(r))
}

// linkEnd returns the byte offset where the link starting at text[start]
// (scheme of length schemeLen) ends; a result of start+schemeLen or less
// means there is no link.
func linkEnd(text string, start, schemeLen int) int {
	// Host: labels of letters, digits and hyphens separated by dots, with
	// at least one dot, then an optional port.
	i := start + schemeLen
	hostStart := i
hostLoop:
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
		case r == '.':
		default:
			break hostLoop
		}
		i += size
	}
	host := strings.TrimRight(text[hostStart:i], ".")
	i = hostStart + len(host)
	if !strings.Contains(host, ".") || strings.HasPrefix(host, ".") || strings.Contains(host, "..") {
		return start
	}
	if i < len(text) && text[i] == ':' {
		j := i + 1
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		if j > i+1 {
			i = j
		}
	}
	// Path, query and fragment: everything up to white space or a character
	// that cannot appear in a link.
	if i < len(text) && (text[i] == '/' || text[i] == '?' || text[i] == '#') {
		for i < len(text) {
			r, size := utf8.DecodeRuneInString(text[i:])
			if unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("<>\"{}\\^`", r) {
				break
			}
			i += size
		}
	}
	// Trailing punctuation belongs to the sentence, not the link; a closing
	// parenthesis or bracket stays only when it balances an opening one.
	for i > start+schemeLen {
		r, size := utf8.DecodeLastRuneInString(text[:i])
		link := text[start:i]
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("=_#/+-&", r):
			return i
		case r == ')' && strings.Count(link, "(") >= strings.Count(link, ")"):
			return i
		case r == ']' && strings.Count(link, "[") >= strings.Count(link, "]"):
			return i
		}
		i -= size
	}
	return i
}

// escapeHTML escapes like Rails' ERB::Util.html_escape.
func escapeHTML(s string) string {
	return htmlEscaper.Replace(s)
}

var htmlEscaper = strings.NewReplacer(
	"&", "&amp;",
	"<", "&lt;",
	">", "&gt;",
	`"`, "&quot;",
	"'", "&#39;",
)

// renderLink renders one link the way Mastodon's TextFormatter.shortened_link
// does: the scheme (and a leading "www.") invisible, the first 30 characters
// of the rest visible, anything longer invisible behind an ellipsis span. The
// text nodes of the anchor concatenate to the full URL.
func renderLink(url string) string {
	prefix := ""
	for _, p := range []string{"https://www.", "http://www.", "https://", "http://"} {
		if strings.HasPrefix(url, p) {
			prefix = p
			break
		}
	}
	rest := []rune(url[len(prefix):])
	display, suffix := string(rest), ""
	class := ""
	if len(rest) > urlDisplayLength {
		display, suffix = string(rest[:urlDisplayLength]), string(rest[urlDisplayLength:])
		class = "ellipsis"
	}
	var b strings.Builder
	b.WriteString(`<a href="`)
	b.WriteString(escapeHTML(url))
	b.WriteString(`" target="_blank" rel="nofollow noopener" translate="no"><span class="invisible">`)
	b.WriteString(escapeHTML(prefix))
	b.WriteString(`</span><span class="`)
	b.WriteString(class)
	b.WriteString(`">`)
	b.WriteString(escapeHTML(display))
	b.WriteString(`</span><span class="invisible">`)
	b.WriteString(escapeHTML(suffix))
	b.WriteString(`</span></a>`)
	return b.String()
}

// renderContent turns a status's plain text into the HTML Mastodon serves
// as "content": escaped text and links, paragraphs split on blank lines
// (several blank lines count as one), single line breaks as <br />. Blank
// text renders as "".
func renderContent(text string) string {
	text = stripText(text)
	if text == "" {
		return ""
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	var html strings.Builder
	for _, seg := range splitLinks(text) {
		if seg.link {
			html.WriteString(renderLink(seg.text))
		} else {
			html.WriteString(escapeHTML(seg.text))
		}
	}
	var out strings.Builder
	for _, para := range splitParagraphs(html.String()) {
		out.WriteString("<p>")
		out.WriteString(strings.ReplaceAll(para, "\n", "<br />"))
		out.WriteString("</p>")
	}
	return out.String()
}

// splitParagraphs splits on runs of two or more newlines, dropping empty
// leading and trailing pieces.
func splitParagraphs(s string) []string {
	var paras []string
	for {
		i := strings.Index(s, "\n\n")
		if i < 0 {
			break
		}
		j := i
		for j < len(s) && s[j] == '\n' {
			j++
		}
		if i > 0 {
			paras = append(paras, s[:i])
		}
		s = s[j:]
	}
	if s != "" {
		paras = append(paras, s)
	}
	return paras
}

// countCharacters counts text the way Mastodon's StatusLengthValidator
// does: user-perceived characters (grapheme clusters), every link counting
// as 23 whatever its length.
func countCharacters(text string) int {
	text = stripText(text)
	n := 0
	for _, seg := range splitLinks(text) {
		if seg.link {
			n += charactersReservedPerURL
			continue
		}
		n += uniseg.GraphemeClusterCount(seg.text)
	}
	return n
}
