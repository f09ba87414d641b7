package post

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// A draft with a lone surrogate escape (\ud800 with no low half after it,
// or a low half alone) is refused naming the field and where it is:
// encoding/json would store U+FFFD in its place, and the post would go out
// with a character its author never wrote. A pair (\ud83d\ude00, an
// emoji) and an escaped backslash before "ud800" are text as written.
func TestDraftRefusesALoneSurrogateEscape(t *testing.T) {
	tests := []struct {
		name, draft string
		want        string // "" when the draft decodes
		body        string
	}{
		{"high alone in the body", `{"id":"x","body":"caf\ud800e"}`, `body: \ud800 at line 1, column 22`, ""},
		{"high then a non-surrogate", `{"id":"x","body":"a\ud800\u0041"}`, `body: \ud800`, ""},
		{"high at the end", `{"id":"x","body":"a\uD800"}`, `body: \uD800`, ""},
		{"low alone", `{"id":"x","body":"a\udc00"}`, `body: \udc00`, ""},
		{"two highs", `{"id":"x","body":"\ud800\ud800\udc00"}`, `body: \ud800`, ""},
		{"in a target's account", "{\"id\":\"x\",\n\"targets\":[{\"account\":\"news\"},{\"account\":\"n\\udfffws\"}]}", `targets[1].account: \udfff at line 2, column 44`, ""},
		{"in a text per platform", `{"id":"x","texts":{"x":"\ud801"}}`, `texts.x: \ud801`, ""},
		{"in a media alt", `{"id":"x","media":[{"path":"a.png","alt":"\udbff!"}]}`, `media[0].alt: \udbff`, ""},
		{"in a key", `{"id":"x","b\ud800":"y"}`, `a key: \ud800`, ""},
		{"a pair is an emoji", `{"id":"x","body":"\ud83d\ude00"}`, "", "\U0001F600"},
		{"an escaped backslash", `{"id":"x","body":"\\ud800"}`, "", `\ud800`},
	}
	for _, tt := range tests {
		d, err := DecodeDraft([]byte(tt.draft))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want it decoded", tt.name, err)
		case tt.want == "" && d.Body != tt.body:
			t.Errorf("%s: body %q, want %q", tt.name, d.Body, tt.body)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "surrogate")):
			t.Errorf("%s: %v; want an error mentioning %q and the surrogate", tt.name, err, tt.want)
		}
	}
}

// findLoneSurrogate finds a lone surrogate exactly when encoding/json
// would put a U+FFFD the text did not hold: on any valid UTF-8 string
// body with no U+FFFD of its own, written or escaped.
func FuzzFindLoneSurrogate(f *testing.F) {
	for _, s := range []string{`a\ud800`, `\ud83d\ude00`, `\\ud800`, `\udc00\ud800`, `\ud800\\udc00`, `x\"\ud800\u0041`, `\uD83D\uDE00\uDFFF`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		lower := strings.ToLower(body)
		if !utf8.ValidString(body) || strings.ContainsRune(body, '\uFFFD') || strings.Contains(lower, `\ufffd`) {
			return
		}
		raw := []byte(`{"body":"` + body + `"}`)
		var v struct{ Body string }
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		_, found := findLoneSurrogate(raw)
		if replaced := strings.ContainsRune(v.Body, '\uFFFD'); found != replaced {
			t.Errorf("%q: found %v, but encoding/json put U+FFFD: %v", body, found, replaced)
		}
	})
}
