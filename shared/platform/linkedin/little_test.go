package linkedin

import (
	"testing"
)

// The reserved characters and their escaping follow the little text
// format page: "Characters reserved for little elements must be escaped
// to be treated as plaintext", "All reserved characters need to be escaped
// with a backslash, even if those characters are not used in one of the
// supported elements or templates"
// (https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/little-text-format).
func TestEscapeLittle(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"plain text is unchanged", "Hello world, 3 + 4 = 7!", "Hello world, 3 + 4 = 7!"},
		{"empty", "", ""},
		{"parentheses would cut the post", "Launch (beta) today", `Launch \(beta\) today`},
		{"every reserved character", `|{}@[]()<>#\*_~`, `\|\{\}\@\[\]\(\)\<\>\#\\\*\_\~`},
		{"a hashtag stays text", "#golang rocks", `\#golang rocks`},
		{"a mention-looking text stays text", "@[Eddy](urn:li:person:1234)", `\@\[Eddy\]\(urn:li:person:1234\)`},
		{"a hashtag template stays text", "{hashtag|#|mytag}", `\{hashtag\|\#\|mytag\}`},
		{"a backslash is doubled", `C:\path`, `C:\\path`},
		{"urls are escaped too", "https://example.com/a_b?x=(1)#top", `https://example.com/a\_b?x=\(1\)\#top`},
		{"non-ascii passes through", "Grüße → ✅ 日本 👩‍👩‍👧 ＃tag", "Grüße → ✅ 日本 👩‍👩‍👧 ＃tag"},
		{"markdown-ish emphasis", "*bold* _it_ ~strike~", `\*bold\* \_it\_ \~strike\~`},
		{"new lines are kept", "one\n\ntwo <3", "one\n\ntwo \\<3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := escapeLittle(tt.text)
			if got != tt.want {
				t.Errorf("escapeLittle(%q) = %q, want %q", tt.text, got, tt.want)
			}
			if back := unescapeLittle(got); back != tt.text {
				t.Errorf("unescapeLittle(escapeLittle(%q)) = %q, want the text back", tt.text, back)
			}
		})
	}
}

// Posts written in LinkedIn's editor or by other apps come back with
// elements and templates: a mention "@[Name](urn)", a hashtag template
// "{hashtag|\#|tag}" (the little text format page's examples).
func TestUnescapeLittleReadsElements(t *testing.T) {
	tests := []struct {
		name, little, want string
	}{
		{"mention shows the name", "Hello @[Acme Corp](urn:li:organization:1234)!", "Hello Acme Corp!"},
		{"hashtag template", "the future of {hashtag|#|Technology} and", "the future of #Technology and"},
		{"hashtag template with escaped sign", `go {hashtag|\#|golang}`, "go #golang"},
		{"full-width hashtag sign", "{hashtag|＃|mytag}", "＃mytag"},
		{"escapes", `a \(b\) c\_d`, "a (b) c_d"},
		{"backslash before a plain character is kept", `a\b \n`, `a\b \n`},
		{"trailing backslash is kept", `end\`, `end\`},
		{"unclosed template is text", "{hashtag|#|open", "{hashtag|#|open"},
		{"other braces are text", "{not a template}", "{not a template}"},
		{"at sign without mention", "mail me @ home", "mail me @ home"},
		{"mention without urn is text", "@[Name](nope)", "@[Name](nope)"},
		{"escaped name in mention", `@[A\(B\)](urn:li:person:1)`, "A(B)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unescapeLittle(tt.little); got != tt.want {
				t.Errorf("unescapeLittle(%q) = %q, want %q", tt.little, got, tt.want)
			}
		})
	}
}

// FuzzLittleRoundTrip: whatever the text, reading back what was sent
// gives the text again (Lookup's fingerprint depends on it). The seeds run
// with go test; go test -fuzz explores further.
func FuzzLittleRoundTrip(f *testing.F) {
	for _, s := range []string{"", "plain", `|{}@[]()<>#\*_~`, `\\\(`, "{hashtag|#|x}", "@[a](urn:li:person:1)", "é\\é", "\x80\\", "\\\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := escapeLittle(s)
		if back := unescapeLittle(e); back != s {
			t.Errorf("unescapeLittle(escapeLittle(%q)) = %q", s, back)
		}
	})
}
