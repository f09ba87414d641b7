package platform

import (
	"crypto/sha256"
	"encoding/hex"
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
// endings, no trailing white space on lines, no surrounding blank lines.
func NormalizeText(text string) string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return norm.NFC.String(strings.TrimSpace(strings.Join(lines, "\n")))
}

// LooseFingerprint identifies a post by its normalised text and its number
// of attachments, for comparisons where the attachments' bytes are unknown
// (media another post uploaded). A loose match can be a false positive;
// callers use it only to hold, never to send.
func LooseFingerprint(text string, media int) string {
	h := sha256.Sum256([]byte(NormalizeText(text)))
	return hex.EncodeToString(h[:]) + "/" + strconv.Itoa(media)
}
