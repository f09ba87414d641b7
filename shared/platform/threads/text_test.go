package threads

import (
	"strings"
	"testing"
)

// TestMeasureText follows "Emojis are counted as the number of UTF-8
// bytes" (https://developers.facebook.com/docs/threads/posts, Limitations):
// every other grapheme counts 1.
func TestMeasureText(t *testing.T) {
	tests := []struct {
		name string
		text string
		want int
	}{
		{"ascii", "hello", 5},
		{"accented letters are one each", "café naïve", 10},
		{"decomposed e with accent is one grapheme", "e\u0301", 1},
		{"cjk counts per character", "日本語", 3},
		{"emoji counts its bytes", "😀", 4},
		{"text and emoji", "hi 👋", 3 + 4},
		{"heart with presentation selector", "❤️", 6},
		{"flag", "🇫🇷", 8},
		{"skin tone", "👍🏽", 8},
		{"family joined by zwj", "👨‍👩‍👧", 18},
		{"keycap", "1️⃣", 7},
		{"copyright counts as emoji (conservative)", "©", 2},
		{"newline", "a\nb", 3},
		{"crlf is one grapheme", "a\r\nb", 3},
		{"empty", "", 0},
	}
	c := newClient(t, "")
	for _, tt := range tests {
		if got := c.MeasureText(tt.text); got != tt.want {
			t.Errorf("%s: MeasureText(%q) = %d, want %d", tt.name, tt.text, got, tt.want)
		}
	}
	if got := measureText(strings.Repeat("😀", 125)); got != MaxTextLength {
		t.Errorf("125 emoji measure %d, want %d", got, MaxTextLength)
	}
}
