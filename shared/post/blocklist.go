package post

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
	"golang.org/x/text/search"
	"golang.org/x/text/unicode/norm"

	"oncepost/shared/graphemes"
)

// BlockedTerm is one word or phrase of the workspace's blocklist.
type BlockedTerm struct {
	// Term is the word or phrase as the operator wrote it.
	Term string `json:"term"`
	// Key is Term normalised (NormalizeTerm): what is stored, compared and
	// matched. Two terms with the same key are the same entry.
	Key     string    `json:"key"`
	AddedAt time.Time `json:"added_at"`
}

// MaxTermGraphemes bounds a blocked word or phrase.
const MaxTermGraphemes = 100

// NewBlockedTerm checks an operator's word or phrase and returns it with
// its key. The error is a *FieldError on "term".
func NewBlockedTerm(term string, at time.Time) (BlockedTerm, error) {
	if off := InvalidUTF8(term); off >= 0 {
		return BlockedTerm{}, &FieldError{Field: "term", Problem: fmt.Sprintf("byte %d is not valid UTF-8", off), Fix: "write the word as UTF-8 text"}
	}
	key := NormalizeTerm(term)
	switch n := graphemes.Count(key); {
	case key == "":
		return BlockedTerm{}, &FieldError{Field: "term", Problem: "is empty", Fix: "give the word or phrase to block"}
	case n > MaxTermGraphemes:
		return BlockedTerm{}, &FieldError{Field: "term", Problem: fmt.Sprintf("is %d characters, over %d", n, MaxTermGraphemes), Fix: "block a shorter word or phrase"}
	}
	return BlockedTerm{Term: strings.Join(strings.Fields(term), " "), Key: key, AddedAt: at.UTC()}, nil
}

// NormalizeTerm is a blocked term's key: NFKC-normalised (full-width and
// compatibility forms become their plain letters), case-folded, runs of
// white space made one space, trimmed. "ＢＡＤ  Word" and "bad word" have
// the same key.
func NormalizeTerm(term string) string {
	folded := cases.Fold().String(norm.NFKC.String(term))
	return strings.Join(strings.Fields(folded), " ")
}

// BlockMatch is where a blocked term occurs in a text.
type BlockMatch struct {
	Term BlockedTerm
	// Offset is the byte offset of the match in the text; Line and Column
	// (1-based, Column in characters) say the same for a person.
	Offset, Line, Column int
	// Found is the text as written at the match.
	Found string
}

// Error says what was found and where.
func (m BlockMatch) Error() string {
	return fmt.Sprintf("contains the blocked term %q at line %d, column %d (%q)", m.Term.Term, m.Line, m.Column, m.Found)
}

// FindBlocked returns the first (leftmost) occurrence in text of any of
// the terms, matched as whole words after Unicode normalisation, ignoring
// case and width (golang.org/x/text/search with the root collation:
// "Bad", "BAD" and "ＢＡＤ" all match "bad"; "badge" does not). Scripts
// written without spaces between words (Han, Hiragana, Katakana) match
// inside words.
func FindBlocked(text string, terms []BlockedTerm) (BlockMatch, bool) {
	if len(terms) == 0 || text == "" {
		return BlockMatch{}, false
	}
	// A Matcher is not documented as safe for concurrent use: one per call.
	m := search.New(language.Und, search.IgnoreCase, search.IgnoreWidth)
	best := BlockMatch{Offset: -1}
	for _, t := range terms {
		pat := m.CompileString(t.Term)
		for from := 0; from < len(text); {
			start, end := pat.IndexString(text[from:])
			if start < 0 {
				break
			}
			start, end = start+from, end+from
			if wordEdge(text, start, end) && (best.Offset < 0 || start < best.Offset) {
				best = BlockMatch{Term: t, Offset: start, Found: text[start:end]}
				break
			}
			_, size := utf8.DecodeRuneInString(text[start:])
			from = start + size
		}
	}
	if best.Offset < 0 {
		return BlockMatch{}, false
	}
	best.Line = 1 + strings.Count(text[:best.Offset], "\n")
	best.Column = 1 + utf8.RuneCountInString(text[strings.LastIndexByte(text[:best.Offset], '\n')+1:best.Offset])
	return best, true
}

// wordEdge reports whether text[start:end] is not part of a longer word:
// the characters on either side are not letters, digits or marks joined
// to the match, unless the match's edge is in a script written without
// spaces.
func wordEdge(text string, start, end int) bool {
	first, _ := utf8.DecodeRuneInString(text[start:])
	last, _ := utf8.DecodeLastRuneInString(text[:end])
	if before, _ := utf8.DecodeLastRuneInString(text[:start]); start > 0 && wordRune(before) && !unspaced(first) {
		return false
	}
	if after, _ := utf8.DecodeRuneInString(text[end:]); end < len(text) && (wordRune(after) && !unspaced(last) || unicode.Is(unicode.M, after)) {
		return false
	}
	return true
}

func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r) || r == '_'
}

func unspaced(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}
