package graphemes

import "testing"

// Counts as the platforms count user-perceived characters today (Unicode
// 15.1 and later: Intl.Segmenter in the Node that runs Bluesky's PDS,
// ICU 74+). The Indic conjuncts are the rule 15.1 added (GB9c): a
// consonant, a virama and a consonant are one character.
func TestCount(t *testing.T) {
	for _, tt := range []struct {
		name, text string
		want       int
	}{
		{"empty", "", 0},
		{"ascii", "hello", 5},
		{"CRLF is one", "a\r\nb", 3},
		{"combining accent", "e\u0301", 1},
		{"emoji family", "👨‍👩‍👧‍👦", 1},
		{"flags", "🇫🇷🇩🇪", 2},
		{"skin tone", "👍🏽", 1},
		{"keycap", "1️⃣", 1},
		{"Devanagari conjunct kṣi", "क्षि", 1},
		{"Bengali conjunct ntra", "ন্ত্র", 1},
		{"Devanagari word", "नमस्ते", 3},
		{"Hangul syllable from jamo", "\u1100\u1161\u11a8", 1},
		{"zero width joiner between letters", "a\u200db", 2},
	} {
		if got := Count(tt.text); got != tt.want {
			t.Errorf("%s: Count(%q) = %d, want %d", tt.name, tt.text, got, tt.want)
		}
	}
}
