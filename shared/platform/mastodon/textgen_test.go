package mastodon

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"oncepost/shared/platform"
	"oncepost/shared/platform/sandbox"
)

// textPieces are what randomText builds post texts from: the sorts of
// text whose rendering by Mastodon could change what reads back.
var textPieces = struct {
	words, spaces, breaks, paragraphBreaks, links, mentions, hashtags []string
}{
	words: []string{
		"hello", "Launch", "day!", "x", "Café", "naïve", "e\u0301", "日本語", "Ελληνικά", "مرحبا", "עברית",
		"😀", "👍🏽", "👩‍👩‍👧", "🇫🇷", "❤️", "<b>bold</b>", "&amp;", "&", `"quoted"`, "it's", "1 < 2",
		"…", "—", "a.b", "(paren)", "50%", "$5", "~", "\u200b", "zero\u200dwidth",
	},
	spaces:          []string{" ", " ", " ", "  ", "\t", " \t ", "\u00a0", "\u3000"},
	breaks:          []string{"\n", "\r\n", "\r", " \n", "  \r\n", "\t\n", "\n \n", " \r", "\n\t\r"},
	paragraphBreaks: []string{"\n\n", "\r\n\r\n", "\r\r", "\n\r", "\n\n\n", "\r\n\n", " \n\n"},
	links: []string{
		"https://example.com", "https://example.com/", "http://www.example.org/path?x=1&y=2",
		"https://example.com/a/very/long/path/that/keeps/going/on/and/on?with=query&and=more",
		"http://abcdefghij.com/0123456789abcdef", "http://abcdefghij.com/0123456789abcdefg",
		"https://en.wikipedia.org/wiki/Go_(language)", "(https://example.com/x)", "https://example.com/x.",
		"https://example.social/@user/109", "https://example.com/?q=ü", "HTTPS://EXAMPLE.COM/UP",
		"https://例え.jp/パス", "https://example.com/#frag", "gemini://example.org/capsule",
		"https://example.invalid/not-a-link",
	},
	mentions: []string{"@alice", "@bob", "@bob@remote.example", "@nobody", "@carol@social.example.org"},
	hashtags: []string{"#golang", "#Café", "＃日本", "#tag_1", "#123", "#a·b", "#launch2026"},
}

// randomText returns a random post text of several paragraphs mixing
// Unicode, emoji, "\r", "\r\n", "\t", trailing spaces, blank-line runs,
// links, mentions (of sandbox accounts, spelt as registered, and of
// accounts that do not resolve) and hashtags. It is never blank and stays
// well under 500 characters.
func randomText(r *rand.Rand) string {
	pick := func(list []string) string { return list[r.IntN(len(list))] }
	// Each text draws which kinds of pieces it may hold, so that many
	// texts have none of the pieces that make the HTML lossy.
	paragraphs, mentions, hashtags := r.IntN(3) == 0, r.IntN(4) == 0, r.IntN(4) == 0
	var b strings.Builder
	if r.IntN(4) == 0 {
		b.WriteString(pick(textPieces.spaces))
	}
	b.WriteString(pick(textPieces.words))
	for range 1 + r.IntN(24) {
		switch n := r.IntN(20); {
		case n < 7:
			b.WriteString(pick(textPieces.spaces))
		case n < 10:
			b.WriteString(pick(textPieces.breaks))
		case n < 11 && paragraphs:
			b.WriteString(pick(textPieces.paragraphBreaks))
		case n < 12:
			// Glued: no separator at all.
		default:
			b.WriteString(" ")
		}
		switch n := r.IntN(20); {
		case n < 15:
			b.WriteString(pick(textPieces.words))
		case n < 18:
			b.WriteString(pick(textPieces.links))
		case n < 19 && mentions:
			b.WriteString(pick(textPieces.mentions))
		case hashtags:
			b.WriteString(pick(textPieces.hashtags))
		default:
			b.WriteString(pick(textPieces.words))
		}
	}
	if r.IntN(3) == 0 {
		b.WriteString(pick(textPieces.spaces) + pick(textPieces.breaks))
	}
	return b.String()
}

// propertyIterations returns n, or fewer with -short.
func propertyIterations(n int) int {
	if testing.Short() {
		return n / 10
	}
	return n
}

// TestHTMLToTextRoundTripsSandboxRendering is the property behind
// Lookup's trust in the HTML: for every random text, converting the
// content Mastodon renders for it (the sandbox renders as Mastodon does)
// back to text either reports lossy or gives the text back, up to
// platform.NormalizeText.
func TestHTMLToTextRoundTripsSandboxRendering(t *testing.T) {
	s := sandbox.New(sandbox.Options{})
	s.AddAccount("alice")
	s.AddAccount("bob")
	r := rand.New(rand.NewPCG(20260301, 1))
	n := propertyIterations(5_000)
	exact := 0
	for i := range n {
		text := randomText(r)
		content := s.RenderContent(text)
		// Lookup skips a status whose HTML lacks a plain word of ours.
		if !containsWords(content, plainWords(text)) {
			t.Fatalf("iteration %d: render(%q) lacks one of its plain words %q:\n%s", i, text, plainWords(text), content)
		}
		got, lossy := htmlToText(content)
		// Lookup skips the source of a candidate whose skeleton differs
		// from the post's: a rendering must keep its text's skeleton.
		if skeleton(got) != skeleton(text) {
			t.Fatalf("iteration %d: skeleton of htmlToText(render(%q)) = %q, want %q (lossy %v)\ncontent %s",
				i, text, skeleton(got), skeleton(text), lossy, content)
		}
		if lossy {
			continue
		}
		exact++
		if platform.NormalizeText(got) != platform.NormalizeText(text) {
			t.Fatalf("iteration %d: htmlToText(render(%q)) = %q, not lossy, but normalises differently:\n got %q\nwant %q\ncontent %s",
				i, text, got, platform.NormalizeText(got), platform.NormalizeText(text), content)
		}
	}
	t.Logf("%d of %d texts converted without loss", exact, n)
	// The property must not hold only because everything was lossy.
	if exact < n/5 {
		t.Errorf("only %d of %d texts converted without loss; the generator no longer exercises the exact path", exact, n)
	}
}

// TestPublishedTextReadsBackAsSent publishes random texts through the
// adapter to the sandbox and reads each back with Recent(1) and with
// Lookup by fingerprint: what comes back must fingerprint as what was
// sent, and Lookup must find it.
func TestPublishedTextReadsBackAsSent(t *testing.T) {
	s := startSandbox(t, sandbox.Options{MaxCharacters: 5000})
	a := s.AddAccount("alice")
	s.AddAccount("bob")
	c := sandboxClient(t, s.URL(), a)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(20260301, 2))
	after := platform.StartOfHistory
	for i := range propertyIterations(300) {
		sent := randomText(r)
		want := platform.Fingerprint(sent, nil)
		receipt, err := c.Publish(ctx, platform.PublishRequest{Handle: fmt.Sprint("entry-", i), Text: sent})
		if err != nil {
			t.Fatalf("iteration %d: Publish(%q): %v", i, sent, err)
		}
		recent, err := c.Recent(ctx, 1)
		if err != nil || len(recent) != 1 || recent[0].RemoteID != receipt.RemoteID {
			t.Fatalf("iteration %d: Recent(1) = %+v, %v; want the post just published", i, recent, err)
		}
		if got := recent[0].Fingerprint(nil); got != want {
			t.Errorf("iteration %d: Recent(1) reads %q back for %q: fingerprints differ", i, recent[0].Text, sent)
		}
		post, found, err := c.Lookup(ctx, platform.LookupQuery{Fingerprint: want, After: after})
		if err != nil || !found || post.RemoteID != receipt.RemoteID {
			t.Errorf("iteration %d: Lookup(%q) = (%q, %v, %v), want %s found", i, sent, post.RemoteID, found, err, receipt.RemoteID)
		} else if post.Fingerprint(nil) != want {
			t.Errorf("iteration %d: Lookup found %q for %q: fingerprints differ", i, post.Text, sent)
		}
		after = receipt.RemoteID
	}
}

// Mastodon stores "@ALICE" as "@alice" for an account it knows: the post
// must still be found by the fingerprint of what was sent.
func TestMentionCaseIsFound(t *testing.T) {
	s := startSandbox(t, sandbox.Options{})
	a := s.AddAccount("alice")
	c := sandboxClient(t, s.URL(), a)
	ctx := context.Background()
	sent := "Thanks @ALICE for the photos."
	if _, err := c.Publish(ctx, platform.PublishRequest{Handle: "mention-case", Text: sent}); err != nil {
		t.Fatal(err)
	}
	if got := s.Statuses(a.ID)[0].Text; got == sent {
		t.Fatalf("the sandbox kept the mention's case (%q); the test proves nothing", got)
	}
	rp, found, err := c.Lookup(ctx, platform.LookupQuery{Fingerprint: platform.Fingerprint(sent, nil), Text: sent, After: platform.StartOfHistory})
	if err != nil || !found {
		t.Fatalf("Lookup = %+v, %v, %v; want found", rp, found, err)
	}
}
