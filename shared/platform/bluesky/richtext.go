package bluesky

import (
	"context"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Facets are how a Bluesky post marks links, mentions and hashtags: the
// text stays plain and each facet names a byte range of its UTF-8 encoding
// (https://docs.bsky.app/docs/advanced-guides/post-richtext). A client
// that sends none gets a post whose URLs are not clickable, whose
// mentions notify nobody and whose tags are not searchable.

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

// The patterns follow the reference client's rich-text detection (the
// docs page above and @atproto/api's richtext detection): a mention is
// "@" and a domain-like handle after a start or a space; a link is an
// http(s) URL; a tag is "#" and up to 64 characters that are not all
// digits, after a start or a space. Trailing punctuation is not part of a
// link.
var (
	mentionRE = regexp.MustCompile(`(^|\s|\()(@)([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+)\b`)
	linkRE    = regexp.MustCompile(`(^|\s|\()(https?://[^\s<>"]+)`)
	tagRE     = regexp.MustCompile(`(^|\s)#([^\s\p{P}\p{S}][^\s#]*)`)
)

// resolver finds the DID of a handle; ok is false when it cannot.
type resolver func(ctx context.Context, handle string) (did string, ok bool)

// detectFacets returns the facets of text in byte order. A mention whose
// handle does not resolve is left as plain text (as the reference client
// does).
func detectFacets(ctx context.Context, text string, resolve resolver) []facet {
	var out []facet
	for _, m := range mentionRE.FindAllStringSubmatchIndex(text, -1) {
		start, end := m[4], m[7] // "@" through the handle
		handle := strings.ToLower(text[m[6]:m[7]])
		if did, ok := resolve(ctx, handle); ok {
			out = append(out, facet{Index: byteSlice{start, end}, Features: []facetFeature{{Type: "app.bsky.richtext.facet#mention", DID: did}}})
		}
	}
	for _, m := range linkRE.FindAllStringSubmatchIndex(text, -1) {
		start, end := m[4], m[5]
		end = start + len(strings.TrimRight(text[start:end], ".,;:!?)\"'"))
		out = append(out, facet{Index: byteSlice{start, end}, Features: []facetFeature{{Type: "app.bsky.richtext.facet#link", URI: text[start:end]}}})
	}
	for _, m := range tagRE.FindAllStringSubmatchIndex(text, -1) {
		start, end := m[4]-1, m[5] // the "#" and the tag
		tag := strings.TrimRight(text[m[4]:m[5]], ".,;:!?)\"'")
		end = m[4] + len(tag)
		if tag == "" || utf8.RuneCountInString(tag) > 64 || allDigits(tag) {
			continue
		}
		out = append(out, facet{Index: byteSlice{start, end}, Features: []facetFeature{{Type: "app.bsky.richtext.facet#tag", Tag: tag}}})
	}
	sortFacets(out)
	return out
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// sortFacets orders facets by start (insertion sort: a post has few).
func sortFacets(f []facet) {
	for i := 1; i < len(f); i++ {
		for j := i; j > 0 && f[j].Index.ByteStart < f[j-1].Index.ByteStart; j-- {
			f[j], f[j-1] = f[j-1], f[j]
		}
	}
}
