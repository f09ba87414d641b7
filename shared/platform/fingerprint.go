package platform

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Fingerprint is the SHA-256, in hex, of the NFC-normalised text (line
// endings unified, surrounding white space trimmed) followed by the sorted
// media SHA-256s. Two posts with the same words and the same attachments in
// any order have the same fingerprint.
func Fingerprint(text string, mediaSHA256 []string) string {
	h := sha256.New()
	h.Write([]byte(NormalizeText(text)))
	shas := slices.Clone(mediaSHA256)
	slices.Sort(shas)
	for _, s := range shas {
		h.Write([]byte{0})
		h.Write([]byte(strings.ToLower(s)))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// NormalizeText is the text part of the fingerprint: NFC, "\n" line
// endings, no trailing white space on lines, no surrounding blank lines,
// mentions in lower case.
//
// Line endings are unified the way Mastodon does when it renders a status:
// TextFormatter#to_s calls Rails' simple_format, whose split_paragraphs
// rewrites /\r\n?/ to "\n", so "\r\n" and a lone "\r" both become a line
// break in the HTML and must be one here too (mastodon/mastodon
// app/lib/text_formatter.rb at 5b395774c05d; rails/rails
// actionview/lib/action_view/helpers/text_helper.rb at 64ae1d7b39b9,
// split_paragraphs).
func NormalizeText(text string) string {
	text = lineEndings.Replace(text)
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	text = norm.NFC.String(strings.TrimSpace(strings.Join(lines, "\n")))
	if strings.Contains(text, "@") {
		// Mastodon stores a mention of an account it knows as the account
		// is named ("@Alice" → "@alice": ProcessMentionsService#scan_text!),
		// so the case of a mention is not the author's to keep.
		text = mention.ReplaceAllStringFunc(text, strings.ToLower)
	}
	return text
}

// mention matches a mention, "@user" or "@user@domain", roughly as
// Mastodon's Account::MENTION_RE (app/models/account.rb at 5b395774c05d)
// does; its first byte is the one before the "@" (or none at the start).
// Lower-casing a little more than Mastodon would is harmless: both sides
// of a comparison are normalised alike.
var mention = regexp.MustCompile(`(?:^|[^=/\p{L}\p{N}_])@[\p{L}\p{N}_]+(?:[.-]+[\p{L}\p{N}_]+)*(?:@[\p{L}\p{N}_]+(?:[.-]+[\p{L}\p{N}_]+)*)?`)

// lineEndings maps "\r\n" and then any remaining "\r" to "\n" in one
// pass: at each position the replacer tries "\r\n" before "\r".
var lineEndings = strings.NewReplacer("\r\n", "\n", "\r", "\n")

// LooseFingerprint identifies a post by its normalised text and its number
// of attachments, for comparisons where the attachments' bytes are unknown
// (media another post uploaded). A loose match can be a false positive;
// callers use it only to hold, never to send.
func LooseFingerprint(text string, media int) string {
	h := sha256.Sum256([]byte(NormalizeText(text)))
	return hex.EncodeToString(h[:]) + "/" + strconv.Itoa(media)
}
