package mastodon

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHTMLToText(t *testing.T) {
	const longLink = `<a href="https://example.com/a/very/long/path/that/is/truncated" target="_blank" rel="nofollow noopener" translate="no">` +
		`<span class="invisible">https://</span><span class="ellipsis">example.com/a/very/long/path/t</span><span class="invisible">hat/is/truncated</span></a>`
	const shortLink = `<a href="https://example.com/" target="_blank" rel="nofollow noopener" translate="no">` +
		`<span class="invisible">https://</span><span class="">example.com/</span><span class="invisible"></span></a>`
	const hashtag = `<a href="https://social.example/tags/GoLang" class="mention hashtag" rel="tag">#<span>GoLang</span></a>`
	const localMention = `<span class="h-card" translate="no"><a href="https://social.example/@bob" class="u-url mention">@<span>bob</span></a></span>`

	type result struct {
		Text  string
		Lossy bool
	}
	tests := []struct {
		name string
		html string
		want result
	}{
		{"empty", ``, result{"", false}},
		{"plain paragraph", `<p>hello world</p>`, result{"hello world", false}},
		{"paragraphs and line breaks", `<p>Hello &amp; welcome<br />line two</p><p>see ` + longLink + `</p>`,
			result{"Hello & welcome\nline two\n\nsee https://example.com/a/very/long/path/that/is/truncated", true}},
		{"br variants", `<p>a<br>b<br/>c<br />d</p>`, result{"a\nb\nc\nd", false}},
		{"consecutive br keep empty lines", `<p>a<br /><br />b</p>`, result{"a\n\nb", false}},
		{"entities", `<p>&lt;tag&gt; &quot;q&quot; &#39;s&#39; caf&eacute; &#x1F600; 1 &lt; 2</p>`, result{`<tag> "q" 's' café 😀 1 < 2`, false}},
		{"long link rebuilt from spans", `<p>` + longLink + `</p>`, result{"https://example.com/a/very/long/path/that/is/truncated", false}},
		{"short link", `<p>at ` + shortLink + ` now</p>`, result{"at https://example.com/ now", false}},
		{"hashtag keeps its text but is lossy (＃ renders as #)", `<p>I like ` + hashtag + `</p>`, result{"I like #GoLang", true}},
		{"mention keeps its text but is lossy", `<p>hi ` + localMention + `</p>`, result{"hi @bob", true}},
		{"remote mention loses the domain", `<p><span class="h-card"><a href="https://other.example/@alice" class="u-url mention">@<span>alice</span></a></span> hello</p>`,
			result{"@alice hello", true}},
		{"link text truncated by another server uses href", `<p><a href="https://example.org/some/long/path">example.org/some/lo…</a></p>`,
			result{"https://example.org/some/long/path", true}},
		{"ellipsis in ordinary anchor text is kept", `<p><a href="https://example.org/">wait for it…</a></p>`,
			result{"wait for it…", false}},
		{"raw newlines in markup are formatting", "<p>one<br />\ntwo</p>\n<p>three</p>", result{"one\ntwo\n\nthree", true}},
		{"text without paragraphs", `just text &amp; more`, result{"just text & more", false}},
		{"quote fallback is dropped", `<p class="quote-inline">RE: <a href="https://x.example/1">x.example/1</a></p><p>my take</p>`,
			result{"my take", false}},
		{"unicode and spaces preserved", `<p>  two  spaces — ünïcödé  </p>`, result{"  two  spaces — ünïcödé  ", false}},
		{"unclosed tags", `<p>broken <b>bold`, result{"broken bold", false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, lossy := htmlToText(tt.html)
			if diff := cmp.Diff(tt.want, result{text, lossy}); diff != "" {
				t.Errorf("htmlToText(%q) (-want +got):\n%s", tt.html, diff)
			}
		})
	}
}
