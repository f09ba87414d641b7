// Package graphemes counts user-perceived characters (extended grapheme
// clusters, UAX #29), the unit of every text limit oncepost checks in
// characters (post.Limits.MaxTextGraphemes). Validation and the adapters
// that check a text before sending it count with this one function, so a
// post that passes `post add` is not refused at its slot for its length.
package graphemes

import "github.com/rivo/uniseg"

// Count is the number of grapheme clusters in text: an emoji family is
// one, "é" written as e and a combining accent is one.
func Count(text string) int {
	return uniseg.GraphemeClusterCount(text)
}
