package sandbox

import (
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"oncepost/shared/graphemes"
)

// This file turns a status's text into the HTML Mastodon serves as
// "content", following, line by line where it matters:
//
//   - mastodon/mastodon app/lib/text_formatter.rb (TextFormatter#to_s,
//     shortened_link, link_to_hashtag, link_to_mention), app/lib/extractor.rb
//     (entity extraction), app/models/account.rb (MENTION_RE),
//     app/models/tag.rb (HASHTAG_RE), app/services/process_mentions_service.rb
//     (the stored text's mentions are rewritten to "@acct"),
//     app/models/status.rb (prepare_contents: text.strip!),
//     app/validators/status_length_validator.rb and
//     config/initializers/twitter_regex.rb (Mastodon's URL regex), all at
//     commit 5b395774c05d7deb619e7fef725bfe957615f452 (read from a mirror
//     carrying upstream history);
//   - twitter/twitter-text rb/lib/twitter-text/extractor.rb and regex.rb at
//     30e2430d90cf (the gem Mastodon's Extractor extends);
//   - rails/rails actionview/lib/action_view/helpers/text_helper.rb at
//     64ae1d7b39b9 (simple_format, split_paragraphs).
//
// The pipeline is Mastodon's: extract URLs, hashtags and mentions from the
// stored text, drop entities overlapping an earlier one, HTML-escape the
// text between them and render each entity, then simple_format: "\r\n" and
// "\r" become "\n", the text splits into <p> paragraphs at runs of two or
// more line breaks, a remaining single "\n" becomes <br />, and every raw
// "\n" is deleted.
//
// Known approximations, none of which changes the text a reader (or
// htmlToText) gets back, only which runs are linked:
//
//   - A link's host must end in a top-level domain from topLevelDomains, a
//     subset of twitter-text's list; Mastodon links any TLD in the full list.
//     Hosts are not IDNA-checked.
//   - Protocol-less domains ("example.com") are never links, as on
//     Mastodon, but a link glued behind one ("a.com/https://b.com") is
//     linked here while twitter-text's scan would have consumed it.
//   - xmpp: and magnet: URIs (Extractor#extract_extra_uris_with_indices)
//     are not linked.
//   - The sandbox has no federation: a mention with a domain
//     ("@bob@remote.example") never resolves, even when the domain is the
//     sandbox's own host.

// charactersReservedPerURL is what one link counts towards the character
// limit, whatever its length, as on Mastodon.
const charactersReservedPerURL = 23

// urlDisplayLength is how many characters of a link's visible part Mastodon
// shows before it cuts the rest off with an ellipsis.
const urlDisplayLength = 30

// maxURLLength is twitter-text's MAX_URL_LENGTH: longer matches are not
// links.
const maxURLLength = 4096

// stripText trims the text the way Mastodon's Ruby String#strip does before
// a status is saved (Status#prepare_contents): ASCII white space and NUL
// only.
func stripText(text string) string {
	return strings.Trim(text, " \t\n\v\f\r\x00")
}

// isBlank is Rails' String#blank?: empty or only Unicode white space
// ([[:space:]]). A blank text renders as "" and fails "Text can't be blank".
func isBlank(text string) bool {
	return strings.TrimFunc(text, unicode.IsSpace) == ""
}

// entityKind says what an extracted entity is.
type entityKind int

const (
	entityURL entityKind = iota + 1
	entityHashtag
	entityMention
)

// entity is a URL, hashtag or mention found in a text; start and end are
// byte offsets, value is the URL, the hashtag name (without "#") or the
// screen name (without "@", "user" or "user@domain").
type entity struct {
	kind       entityKind
	start, end int
	value      string
}

// mentionResolver returns the local account a mention's username names
// (case-insensitively), or nil.
type mentionResolver func(username string) *account

// extractEntities is Extractor.extract_entities_with_indices: URLs with a
// protocol, hashtags and mentions, sorted by position, overlaps removed.
func extractEntities(text string) []entity {
	return removeOverlapping(slices.Concat(extractURLs(text), extractHashtags(text), extractMentions(text)))
}

// removeOverlapping is twitter-text's remove_overlapping_entities: sorted
// by start, an entity that overlaps the previous kept one is dropped.
func removeOverlapping(all []entity) []entity {
	slices.SortStableFunc(all, func(a, b entity) int { return a.start - b.start })
	kept := all[:0]
	for _, e := range all {
		if len(kept) > 0 && kept[len(kept)-1].end > e.start {
			continue
		}
		kept = append(kept, e)
	}
	return kept
}

// isWord is Onigmo's [[:word:]] on Unicode strings: letters, marks,
// decimal digits and connector punctuation.
func isWord(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Pc, r)
}

// isAlpha is Onigmo's [[:alpha:]]: the Alphabetic property.
func isAlpha(r rune) bool {
	return unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_Alphabetic, r)
}

// Mentions.

// isUsernameChar is USERNAME_RE's [a-z0-9_] with the /i flag.
func isUsernameChar(r rune) bool {
	return r < utf8.RuneSelf && (r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
}

// matchDotted matches `c+([.-]+c+)*` at text[i:] and returns its end, or i
// when there is no c at i. A run of dots and hyphens is part of the match
// only when a c follows it.
func matchDotted(text string, i int, c func(rune) bool) int {
	end := i
	j := i
	for {
		k := j
		for k < len(text) {
			r, size := utf8.DecodeRuneInString(text[k:])
			if !c(r) {
				break
			}
			k += size
		}
		if k == j {
			return end
		}
		end = k
		j = k
		for j < len(text) && (text[j] == '.' || text[j] == '-') {
			j++
		}
		if j == end {
			return end
		}
	}
}

// mentionMatch is one match of Account::MENTION_RE.
type mentionMatch struct {
	start, end       int // of "@screen_name"
	username, domain string
}

// mentionMatches finds every match of Account::MENTION_RE,
// (?<![=/[:word:]])@((USERNAME_RE)(?:@[[:word:]]+([.-]+[[:word:]]+)*)?)
// with USERNAME_RE = [a-z0-9_]+([.-]+[a-z0-9_]+)* (case-insensitive),
// scanning left to right without overlap as Ruby's scan and gsub do.
func mentionMatches(text string) []mentionMatch {
	var out []mentionMatch
	for i := 0; i < len(text); {
		at := strings.IndexByte(text[i:], '@')
		if at < 0 {
			break
		}
		at += i
		i = at + 1
		if at > 0 {
			r, _ := utf8.DecodeLastRuneInString(text[:at])
			if r == '=' || r == '/' || isWord(r) {
				continue
			}
		}
		userEnd := matchDotted(text, at+1, isUsernameChar)
		if userEnd == at+1 {
			continue
		}
		m := mentionMatch{start: at, end: userEnd, username: text[at+1 : userEnd]}
		if userEnd < len(text) && text[userEnd] == '@' {
			if domEnd := matchDotted(text, userEnd+1, isWord); domEnd > userEnd+1 {
				m.end, m.domain = domEnd, text[userEnd+1:domEnd]
			}
		}
		out = append(out, m)
		i = m.end
	}
	return out
}

// endsMention is twitter-text's end_mention_match: a match followed by an
// at sign, a Latin accented letter or "://" is not a mention.
func endsMention(after string) bool {
	if strings.HasPrefix(after, "://") || strings.HasPrefix(after, "@") || strings.HasPrefix(after, "＠") {
		return false
	}
	r, _ := utf8.DecodeRuneInString(after)
	return !isLatinAccent(r)
}

// isLatinAccent is twitter-text's LATIN_ACCENTS class.
func isLatinAccent(r rune) bool {
	switch {
	case r >= 0xc0 && r <= 0xd6, r >= 0xd8 && r <= 0xf6, r >= 0xf8 && r <= 0xff,
		r >= 0x100 && r <= 0x24f, r == 0x253, r == 0x254, r == 0x256, r == 0x257,
		r == 0x259, r == 0x25b, r == 0x263, r == 0x268, r == 0x26f, r == 0x272,
		r == 0x289, r == 0x28b, r == 0x2bb, r >= 0x300 && r <= 0x36f, r >= 0x1e00 && r <= 0x1eff:
		return true
	}
	return false
}

// extractMentions is Extractor.extract_mentions_or_lists_with_indices.
func extractMentions(text string) []entity {
	var out []entity
	for _, m := range mentionMatches(text) {
		if !endsMention(text[m.end:]) {
			continue
		}
		if m.domain != "" && utf8.RuneCountInString(m.domain) > 253 {
			continue
		}
		value := m.username
		if m.domain != "" {
			value += "@" + m.domain
		}
		out = append(out, entity{kind: entityMention, start: m.start, end: m.end, value: value})
	}
	return out
}

// rewriteMentions is ProcessMentionsService#scan_text!: every mention of
// an account that resolves is replaced by "@" + its acct, which for a
// local account is its username as registered ("@ALICE" is stored as
// "@alice"). Mentions that do not resolve stay as typed. The sandbox
// resolves local usernames only.
func rewriteMentions(text string, resolve mentionResolver) string {
	ms := mentionMatches(text)
	if len(ms) == 0 || resolve == nil {
		return text
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		if m.domain != "" {
			continue
		}
		a := resolve(m.username)
		if a == nil {
			continue
		}
		b.WriteString(text[last:m.start])
		b.WriteString("@" + a.username)
		last = m.end
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// Hashtags.

// isHashtagSeparator is Tag::HASHTAG_SEPARATORS minus "_" (a word
// character already): middle dot, katakana middle dot, ZWNJ.
func isHashtagSeparator(r rune) bool {
	return r == '\u00b7' || r == '\u30fb' || r == '\u200c'
}

// hashtagName matches Tag::HASHTAG_NAME_PAT at text[i:] and returns the
// end of the name, or i for none. The pattern is
//
//	([[:word:]_][[:word:]SEP]*[[:alpha:]SEP][[:word:]SEP]*[[:word:]_]) |
//	([[:word:]_]*[[:alpha:]][[:word:]_]*)
//
// Its first branch, with backtracking, takes the run of word and separator
// characters up to its last word character when some character strictly
// inside that stretch is alphabetic or a separator; the second takes the
// run of word characters when it holds an alphabetic one.
func hashtagName(text string, i int) int {
	type ch struct {
		r   rune
		end int
	}
	var run []ch
	for j := i; j < len(text); {
		r, size := utf8.DecodeRuneInString(text[j:])
		if !isWord(r) && !isHashtagSeparator(r) {
			break
		}
		j += size
		run = append(run, ch{r, j})
	}
	if len(run) == 0 || !isWord(run[0].r) {
		return i
	}
	lastWord := -1
	for k := len(run) - 1; k >= 0; k-- {
		if isWord(run[k].r) {
			lastWord = k
			break
		}
	}
	for k := 1; k < lastWord; k++ {
		if isAlpha(run[k].r) || isHashtagSeparator(run[k].r) {
			return run[lastWord].end
		}
	}
	end, alpha := i, false
	for _, c := range run {
		if !isWord(c.r) {
			break
		}
		end = c.end
		alpha = alpha || isAlpha(c.r)
	}
	if !alpha {
		return i
	}
	return end
}

// extractHashtags is Extractor.extract_hashtags_with_indices over
// Tag::HASHTAG_RE, (?<=^|[[:space:]])[#＃](HASHTAG_NAME_PAT): the sign must
// start the text or a line, or follow white space.
func extractHashtags(text string) []entity {
	var out []entity
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		start := i
		i += size
		if r != '#' && r != '＃' {
			continue
		}
		if start > 0 {
			prev, _ := utf8.DecodeLastRuneInString(text[:start])
			if prev != '\n' && !unicode.IsSpace(prev) {
				continue
			}
		}
		end := hashtagName(text, i)
		if end == i {
			continue
		}
		name := text[i:end]
		// "#taghttps://example.com": the scheme belongs to the link.
		if strings.HasPrefix(text[end:], "://") {
			for _, scheme := range []string{"https", "http"} {
				if len(name) > len(scheme) && strings.HasSuffix(name, scheme) {
					name = name[:len(name)-len(scheme)]
					end -= len(scheme)
					break
				}
			}
		}
		out = append(out, entity{kind: entityHashtag, start: start, end: end, value: name})
		i = end
	}
	return out
}

// URLs.

// urlProtocols are the schemes of Mastodon's valid_url regex
// (config/initializers/twitter_regex.rb), matched case-insensitively.
var urlProtocols = []string{"https://", "http://", "gemini://", "gopher://", "dweb://", "ipfs://", "ipns://", "dat://", "ssb://"}

// topLevelDomains is a subset of twitter-text's TLD list; a host must end
// in one of these (or in a punycode label) to be linked.
var topLevelDomains = func() map[string]bool {
	m := map[string]bool{}
	for _, tld := range strings.Fields(`
		com net org edu gov mil int info biz name pro mobi aero coop museum jobs travel
		io co ai app dev social online site xyz me tv cc fm ws la to gg im je nu ly
		blog news tech page link club live world one network cloud today space store
		art wiki zone email global digital media photo photos video games town city
		us uk de fr jp nl eu ca au ch it es se no fi dk be at pl cz ru br in cn kr tw
		nz ie pt gr hu ro ua tr mx ar cl za sg hk il is ee lv lt sk si hr rs bg by kz
		li lu mc md mt cy`) {
		m[tld] = true
	}
	return m
}()

// isDomainChar is twitter-text's DOMAIN_VALID_CHARS: anything but ASCII
// punctuation, white space, control, directional and invalid characters.
func isDomainChar(r rune) bool {
	if r < utf8.RuneSelf {
		return r > ' ' && r != 0x7f && !strings.ContainsRune("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", r)
	}
	switch {
	case unicode.IsSpace(r), r == 0xfffe, r == 0xfeff, r == 0xffff, r == 0x180e,
		r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return false
	}
	return true
}

// validURLPreceding is twitter-text's valid_url_preceding_chars: a link
// cannot follow an ASCII letter or digit, @, $, # (or their full-width
// forms) or an invalid character. A non-ASCII letter may precede it.
func validURLPreceding(text string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(text[:i])
	switch {
	case r < utf8.RuneSelf && (r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'):
		return false
	case r == '@' || r == '＠' || r == '$' || r == '#' || r == '＃' || r == 0xfffe || r == 0xfeff || r == 0xffff:
		return false
	}
	return true
}

// matchDomain matches twitter-text's valid_domain at text[i:]:
// subdomain labels (letters, "-" and "_" inside), a domain-name label
// ("-" inside), then a known TLD not followed by [0-9a-z@+-], or a punycode
// label. It returns the end of the domain, or i.
func matchDomain(text string, i int) int {
	// The run the labels come from.
	j := i
	for j < len(text) {
		r, size := utf8.DecodeRuneInString(text[j:])
		if !isDomainChar(r) && r != '-' && r != '_' && r != '.' {
			break
		}
		j += size
	}
	labels := strings.Split(text[i:j], ".")
	// subdomain* is greedy: try the most labels first.
	for k := len(labels); k >= 2; k-- {
		ok := true
		for n, l := range labels[:k-1] {
			if !validLabel(l, n < k-2) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		start := i + len(strings.Join(labels[:k-1], ".")) + 1
		n := tldLength(labels[k-1])
		if n == 0 {
			continue
		}
		// The TLD's lookahead, (?=[^0-9a-z@+-]|$), past the run.
		if end := start + n; end == j && end < len(text) && (text[end] == '@' || text[end] == '+') {
			continue
		}
		return start + n
	}
	return i
}

// validLabel reports whether l is a subdomain label (underscores allowed)
// or the domain-name label: domain characters, with "-" (and "_" for a
// subdomain) only between them.
func validLabel(l string, subdomain bool) bool {
	if l == "" {
		return false
	}
	first, _ := utf8.DecodeRuneInString(l)
	last, _ := utf8.DecodeLastRuneInString(l)
	if !isDomainChar(first) || !isDomainChar(last) {
		return false
	}
	return subdomain || !strings.Contains(l, "_")
}

// tldLength is the length of the top-level domain at the start of label,
// or 0: a known TLD followed by the end of the label or by a character
// other than [0-9a-z@+-], or a punycode label xn--[0-9a-z]+.
func tldLength(label string) int {
	lower := strings.ToLower(label)
	if strings.HasPrefix(lower, "xn--") {
		n := 4
		for n < len(lower) && (lower[n] >= '0' && lower[n] <= '9' || lower[n] >= 'a' && lower[n] <= 'z') {
			n++
		}
		if n > 4 {
			return n
		}
	}
	best := 0
	for n := 1; n <= len(lower); n++ {
		if !topLevelDomains[lower[:n]] {
			continue
		}
		if n < len(lower) {
			c := lower[n]
			if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '@' || c == '+' || c == '-' {
				continue
			}
		}
		best = n
	}
	return best
}

// isPathChar is Mastodon's valid_general_url_path_chars,
// [^\p{White_Space}<>()?].
func isPathChar(r rune) bool {
	return !unicode.IsSpace(r) && r != '<' && r != '>' && r != '(' && r != ')' && r != '?'
}

// isPathEnding is Mastodon's valid_url_path_ending_chars (without the
// balanced-parentheses alternative, handled by the caller).
func isPathEnding(r rune) bool {
	return isPathChar(r) && !strings.ContainsRune(`!*"'「」;:=,.$%[]~&|`, r)
}

// matchParens matches valid_url_balanced_parens at text[i:] (an opening
// parenthesis there): "(" path characters ")", or one nested level,
// "(" chars "(" chars ")" chars ")" with the inner chars not empty. It
// returns the end, or i.
func matchParens(text string, i int) int {
	pathRun := func(j int) int {
		for j < len(text) {
			r, size := utf8.DecodeRuneInString(text[j:])
			if !isPathChar(r) {
				break
			}
			j += size
		}
		return j
	}
	j := pathRun(i + 1)
	if j < len(text) && text[j] == ')' && j > i+1 {
		return j + 1
	}
	if j >= len(text) || text[j] != '(' {
		return i
	}
	k := pathRun(j + 1)
	if k == j+1 || k >= len(text) || text[k] != ')' {
		return i
	}
	k = pathRun(k + 1)
	if k < len(text) && text[k] == ')' {
		return k + 1
	}
	return i
}

// matchPath matches "/" valid_url_path* at text[i:] ("/" there): the run
// of path characters and balanced parentheses, cut back to its last
// ending character (or balanced group).
func matchPath(text string, i int) int {
	end := i + 1
	j := i + 1
	for j < len(text) {
		r, size := utf8.DecodeRuneInString(text[j:])
		if r == '(' {
			k := matchParens(text, j)
			if k == j {
				break
			}
			j, end = k, k
			continue
		}
		if !isPathChar(r) {
			break
		}
		j += size
		if isPathEnding(r) {
			end = j
		}
	}
	return end
}

// isUCHAR is Mastodon's UCHARS class of non-ASCII characters allowed in a
// query.
func isUCHAR(r rune) bool {
	switch {
	case r >= 0xa0 && r <= 0xd7ff, r >= 0xf900 && r <= 0xfdcf, r >= 0xfdf0 && r <= 0xffef,
		r >= 0xe000 && r <= 0xf8ff, r >= 0x10000 && r <= 0x10fffd && r&0xffff <= 0xfffd && !(r >= 0xe0000 && r < 0xe1000):
		return true
	}
	return false
}

func isASCIIAlnum(r rune) bool {
	return r < utf8.RuneSelf && (r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
}

// matchQuery matches "?" query chars* query ending char at text[i:] ("?"
// there), returning its end or i when the query has no valid ending.
func matchQuery(text string, i int) int {
	end := i
	j := i + 1
	for j < len(text) {
		r, size := utf8.DecodeRuneInString(text[j:])
		if !isASCIIAlnum(r) && !isUCHAR(r) && !strings.ContainsRune(`!?*'();:&=+$/%#[]-_.,~|@^`, r) {
			break
		}
		j += size
		if isASCIIAlnum(r) || isUCHAR(r) || strings.ContainsRune("_&=#/-", r) {
			end = j
		}
	}
	return end
}

// extractURLs is Extractor.extract_urls_with_indices with
// extract_url_without_protocol: false over Mastodon's valid_url regex: a
// protocol, a domain, an optional port, path and query.
func extractURLs(text string) []entity {
	var out []entity
	for i := 0; i < len(text); {
		n := protocolLength(text, i)
		if n == 0 || !validURLPreceding(text, i) {
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
			continue
		}
		end := matchDomain(text, i+n)
		if end == i+n {
			i += n
			continue
		}
		if end+1 < len(text) && text[end] == ':' && text[end+1] >= '0' && text[end+1] <= '9' {
			end++
			for end < len(text) && text[end] >= '0' && text[end] <= '9' {
				end++
			}
		}
		if end < len(text) && text[end] == '/' {
			end = matchPath(text, end)
		}
		if end < len(text) && text[end] == '?' {
			end = matchQuery(text, end)
		}
		if utf8.RuneCountInString(text[i:end]) <= maxURLLength {
			out = append(out, entity{kind: entityURL, start: i, end: end, value: text[i:end]})
		}
		i = end
	}
	return out
}

// protocolLength returns the length of a link protocol at text[i:] (any
// case), or 0.
func protocolLength(text string, i int) int {
	for _, p := range urlProtocols {
		if len(text)-i >= len(p) && strings.EqualFold(text[i:i+len(p)], p) {
			return len(p)
		}
	}
	return 0
}

// Rendering.

// escapeHTML escapes like Rails' ERB::Util.html_escape (and the tag
// helper, which uses the same function).
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

// renderLink renders one link the way TextFormatter.shortened_link does:
// "http(s)://" and a following "www." in an invisible span, the next 30
// characters visible, the rest in an invisible span behind an "ellipsis"
// class, except that a rest of a single character is shown rather than cut
// ("revert truncation to account for ellipsis"). The prefix match is
// case-sensitive, as Mastodon's URL_PREFIX_REGEX is. The text nodes of the
// anchor concatenate to the full URL.
func renderLink(link string) string {
	prefix := ""
	for _, p := range []string{"https://www.", "http://www.", "https://", "http://"} {
		if strings.HasPrefix(link, p) {
			prefix = p
			break
		}
	}
	rest := []rune(link[len(prefix):])
	display, suffix := string(rest), ""
	class := ""
	if len(rest) > urlDisplayLength+1 {
		display, suffix = string(rest[:urlDisplayLength]), string(rest[urlDisplayLength:])
		class = "ellipsis"
	}
	var b strings.Builder
	b.WriteString(`<a href="`)
	b.WriteString(escapeHTML(link))
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

// renderHashtag is TextFormatter#link_to_hashtag: the sign is always
// rendered as "#", whichever of "#" and "＃" was typed; the href is the
// tag_url route with the name as a path segment.
func renderHashtag(name, base string) string {
	return `<a href="` + escapeHTML(base+"/tags/"+url.PathEscape(name)) + `" class="mention hashtag" rel="tag">#<span>` +
		escapeHTML(name) + `</span></a>`
}

// renderMention is TextFormatter#link_to_mention: a resolved local
// account as an h-card link to its profile showing its username; anything
// else as the escaped text "@" + screen name.
func renderMention(screenName, base string, resolve mentionResolver) string {
	username, domain, _ := strings.Cut(screenName, "@")
	var a *account
	if domain == "" && resolve != nil {
		a = resolve(username)
	}
	if a == nil {
		return "@" + escapeHTML(screenName)
	}
	return `<span class="h-card" translate="no"><a href="` + escapeHTML(base+"/@"+a.username) +
		`" class="u-url mention">@<span>` + escapeHTML(a.username) + `</span></a></span>`
}

// renderContent turns a stored status text (stripped, mentions already
// rewritten) into the HTML Mastodon serves as "content". base is the
// server's URL, for hashtag and profile links. A blank text renders as "".
func renderContent(text, base string, resolve mentionResolver) string {
	if isBlank(text) {
		return ""
	}
	var html strings.Builder
	last := 0
	for _, e := range extractEntities(text) {
		html.WriteString(escapeHTML(text[last:e.start]))
		switch e.kind {
		case entityURL:
			html.WriteString(renderLink(e.value))
		case entityHashtag:
			html.WriteString(renderHashtag(e.value, base))
		case entityMention:
			html.WriteString(renderMention(e.value, base, resolve))
		}
		last = e.end
	}
	html.WriteString(escapeHTML(text[last:]))
	return simpleFormat(html.String())
}

// simpleFormat is Rails' simple_format(html, {}, sanitize: false) followed
// by Mastodon's .delete("\n"): line endings unified (/\r\n?/ → "\n"),
// paragraphs split at runs of two or more "\n" (trailing empty pieces
// dropped, as Ruby's split does), a "\n" between two other characters
// turned into <br />, paragraphs wrapped in <p>, raw newlines removed.
func simpleFormat(html string) string {
	html = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(html)
	paras := splitParagraphs(html)
	if len(paras) == 0 {
		return "<p></p>"
	}
	var out strings.Builder
	for _, para := range paras {
		out.WriteString("<p>")
		out.WriteString(breakLines(para))
		out.WriteString("</p>")
	}
	return out.String()
}

// splitParagraphs is Ruby's s.split(/\n\n+/): pieces between runs of two
// or more newlines, a leading empty piece kept, trailing empty ones
// dropped.
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
		paras = append(paras, s[:i])
		s = s[j:]
	}
	paras = append(paras, s)
	for len(paras) > 0 && paras[len(paras)-1] == "" {
		paras = paras[:len(paras)-1]
	}
	return paras
}

// breakLines is split_paragraphs' gsub(/([^\n]\n)(?=[^\n])/, '\1<br />')
// followed by the removal of every "\n": a newline with a character on
// both sides becomes <br />, any other disappears.
func breakLines(para string) string {
	if !strings.Contains(para, "\n") {
		return para
	}
	var b strings.Builder
	for i := 0; i < len(para); i++ {
		if para[i] != '\n' {
			b.WriteByte(para[i])
			continue
		}
		if i > 0 && para[i-1] != '\n' && i+1 < len(para) && para[i+1] != '\n' {
			b.WriteString("<br />")
		}
	}
	return b.String()
}

// countCharacters counts text the way Mastodon's StatusLengthValidator
// does: grapheme clusters of the text in which every link (with a
// protocol) counts as 23 characters and a mention as "@username" without
// its domain.
func countCharacters(text string) int {
	text = stripText(text)
	if isBlank(text) {
		return 0
	}
	var b strings.Builder
	last := 0
	for _, e := range removeOverlapping(slices.Concat(extractURLs(text), extractMentions(text))) {
		b.WriteString(text[last:e.start])
		if e.kind == entityURL {
			b.WriteString(strings.Repeat("x", charactersReservedPerURL))
		} else {
			username, _, _ := strings.Cut(e.value, "@")
			b.WriteString("@" + username)
		}
		last = e.end
	}
	b.WriteString(text[last:])
	return graphemes.Count(b.String())
}
