package platform

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFingerprint(t *testing.T) {
	a, b := "aa11", "bb22"
	base := Fingerprint("Café opens at 9", []string{a, b})
	tests := []struct {
		name  string
		text  string
		media []string
		same  bool
	}{
		{"identical", "Café opens at 9", []string{a, b}, true},
		{"media order", "Café opens at 9", []string{b, a}, true},
		{"NFD text", "Cafe\u0301 opens at 9", []string{a, b}, true},
		{"CRLF and trailing space", "Café opens at 9 \r\n", []string{a, b}, true},
		{"trailing CR", "Café opens at 9\r", []string{a, b}, true},
		{"uppercase sha", "Café opens at 9", []string{"AA11", b}, true},
		{"other text", "Café opens at 10", []string{a, b}, false},
		{"missing media", "Café opens at 9", []string{a}, false},
		{"text moved into media", "Café opens at", []string{"9", a, b}, false},
	}
	for _, tt := range tests {
		if got := Fingerprint(tt.text, tt.media) == base; got != tt.same {
			t.Errorf("%s: same fingerprint = %v, want %v", tt.name, got, tt.same)
		}
	}
	rp := RemotePost{Text: "Café opens at 9", MediaIDs: []string{"m2", "m1"}}
	if got := rp.Fingerprint(map[string]string{"m1": a, "m2": b}); got != base {
		t.Errorf("remote post fingerprint with mapped media differs")
	}
	if got := rp.Fingerprint(map[string]string{"m1": a}); got == base {
		t.Errorf("remote post with an unmapped media id matches")
	}
}

// TestNormalizeTextLineEndings pins the line-ending rule to Rails'
// split_paragraphs, which Mastodon renders every status through:
// gsub(/\r\n?/, "\n").
func TestNormalizeTextLineEndings(t *testing.T) {
	tests := []struct {
		name string
		text string
		want string
	}{
		{"lone CR is a line break", "line one\rline two", "line one\nline two"},
		{"CRLF is one line break", "line one\r\nline two", "line one\nline two"},
		{"LF CR is two line breaks", "a\n\rb", "a\n\nb"},
		{"CR CR is two line breaks", "a\r\rb", "a\n\nb"},
		{"CR CRLF is two line breaks", "a\r\r\nb", "a\n\nb"},
		{"trailing white space before a lone CR", "a \t\rb", "a\nb"},
		{"surrounding CRs", "\r\ra\r", "a"},
		{"no line break", "a b", "a b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, NormalizeText(tt.text)); diff != "" {
				t.Errorf("NormalizeText(%q) (-want +got):\n%s", tt.text, diff)
			}
		})
	}
	// The regression that made a Lookup miss its own post: the sandbox (and
	// Mastodon) render "\r" as <br />, which reads back as "\n".
	if Fingerprint("line one\rline two", nil) != Fingerprint("line one\nline two", nil) {
		t.Errorf("a lone CR and a LF give different fingerprints")
	}
}

func TestCredentialNeverPrints(t *testing.T) {
	c := Credential{AccessToken: "secret-a", RefreshToken: "secret-r"}
	for _, s := range []string{c.String(), c.GoString()} {
		if s != "platform.Credential{redacted}" {
			t.Errorf("credential printed as %q", s)
		}
	}
}

// Mastodon stores "@Alice" as "@alice" when it knows the account: the
// fingerprint must not depend on a mention's case (nor on anything else's).
func TestNormalizeTextMentionCase(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"@Alice hello", "@alice hello"},
		{"Hi @Bob@Example.Social!", "Hi @bob@example.social!"},
		{"(@ALICE) and @bob.smith", "(@alice) and @bob.smith"},
	} {
		if NormalizeText(tc.a) != NormalizeText(tc.b) {
			t.Errorf("NormalizeText(%q) = %q, NormalizeText(%q) = %q; want equal", tc.a, NormalizeText(tc.a), tc.b, NormalizeText(tc.b))
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"Hello World", "hello world"},
		{"mail Bob@Example.com", "mail bob@example.com"},
		{"https://example.com/@Alice", "https://example.com/@alice"},
	} {
		if NormalizeText(tc.a) == NormalizeText(tc.b) {
			t.Errorf("NormalizeText(%q) equals NormalizeText(%q); case outside a mention matters", tc.a, tc.b)
		}
	}
}
