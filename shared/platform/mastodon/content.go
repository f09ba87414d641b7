package mastodon

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// htmlToText turns a status's HTML content back into the plain text its
// author wrote, so that it can be fingerprinted.
//
// The conversion is written by hand because no library undoes Mastodon's
// rendering: generic HTML-to-text converters render what a reader sees
// (they drop the invisible spans of a shortened link, leaving
// "example.com/a/very/long/path/t", wrap lines, add link footnotes), while
// the fingerprint needs what the author typed. Mastodon's TextFormatter
// splits the text into <p> paragraphs at blank lines, turns the remaining
// line breaks into <br />, strips the raw newlines, escapes entities, and
// links URLs, mentions and hashtags; a URL's anchor holds the whole URL
// split across spans, "invisible" ones for the scheme and the tail, one
// with class "ellipsis" for the visible part. This function reverses that:
// paragraphs joined with "\n\n", <br> as "\n", entities unescaped, an
// anchor as the concatenation of all its text nodes.
//
// lossy reports that the result may still differ, after
// platform.NormalizeText, from the source text: a mention anchor shows
// "@alice" for "@alice@example.social" (and Mastodon stores "@ALICE" as
// "@alice"); a hashtag anchor always shows "#" though "＃" may have been
// typed; several paragraphs may have been separated by more than one blank
// line; a link text truncated by another server had to be rebuilt from its
// href. Line endings ("\r\n", lone "\r") are not a loss: Mastodon renders
// both as <br /> and NormalizeText maps both to "\n". The property test
// TestHTMLToTextRoundTripsSandboxRendering checks this against the
// sandbox's rendering.
func htmlToText(content string) (text string, lossy bool) {
	body := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	nodes, err := html.ParseFragment(strings.NewReader(content), body)
	if err != nil {
		// The parser only fails on reader errors; a strings.Reader has none.
		return html.UnescapeString(content), true
	}
	var w textWriter
	for _, n := range nodes {
		w.node(n)
	}
	return w.b.String(), w.lossy || w.paragraphs > 1
}

type textWriter struct {
	b          strings.Builder
	paragraphs int
	lossy      bool
}

func (w *textWriter) node(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
	case html.ElementNode:
		switch n.DataAtom {
		case atom.Br:
			w.b.WriteString("\n")
		case atom.P:
			if hasClass(n, "quote-inline") {
				// The "RE: <link>" fallback Mastodon adds to quote posts;
				// the author did not write it.
				return
			}
			if w.paragraphs > 0 || w.b.Len() > 0 {
				w.b.WriteString("\n\n")
			}
			w.paragraphs++
			w.children(n)
		case atom.A:
			w.anchor(n)
		case atom.Script, atom.Style, atom.Template:
		default:
			w.children(n)
		}
	default:
		w.children(n)
	}
}

func (w *textWriter) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.node(c)
	}
}

// text writes a text node. Raw newlines are dropped: Mastodon removes them
// from its rendering, so any left are formatting of the markup, and line
// breaks are carried by <br> and <p> alone.
func (w *textWriter) text(s string) {
	w.b.WriteString(newlineDropper.Replace(s))
}

var newlineDropper = strings.NewReplacer("\r", "", "\n", "")

// anchor writes a link, mention or hashtag as the concatenation of all its
// text nodes, which restores a URL Mastodon split into invisible and
// ellipsis spans. Only when the text itself is truncated with "…" and no
// hidden span holds the rest is the href used instead.
func (w *textWriter) anchor(n *html.Node) {
	var b strings.Builder
	hidden := false
	var collect func(*html.Node)
	collect = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			return
		}
		if n.Type == html.ElementNode && hasClass(n, "invisible") {
			hidden = true
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			collect(c)
		}
	}
	collect(n)
	text := b.String()

	if hasClass(n, "mention") {
		// A mention (see above), or a hashtag: TextFormatter#link_to_hashtag
		// writes "#" whichever of "#" and "＃" the author typed.
		w.lossy = true
	}
	if href := attr(n, "href"); href != "" && !hidden {
		if shown, ok := strings.CutSuffix(text, "…"); ok && shown != "" &&
			(strings.HasPrefix(href, shown) || strings.HasPrefix(withoutScheme(href), shown)) {
			text = href
			w.lossy = true
		}
	}
	w.text(text)
}

func withoutScheme(u string) string {
	if _, rest, ok := strings.Cut(u, "://"); ok {
		return rest
	}
	return u
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}
