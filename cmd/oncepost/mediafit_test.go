package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"

	"github.com/google/go-cmp/cmp"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// An image over the instance's limit is fitted when the post is added:
// the stored bytes are the fitted ones, under the limit, and the post's
// media hash is theirs (what the ledger, the fingerprint and every upload
// use). An image that fits is stored untouched.
func TestPostAddFitsImagesToTheAccountsLimit(t *testing.T) {
	const limit = 150_000
	sb := sandbox.New(sandbox.Options{ImageSizeLimit: limit})
	if err := sb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	sa := sb.AddAccount("news")
	dir := t.TempDir()
	db := filepath.Join(dir, "oncepost.db")
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(args ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := runCLI(context.Background(), append(args, "--db", db), &out, &errOut); code != exitOK {
			t.Fatalf("oncepost %s: exit %d: %s", strings.Join(args, " "), code, errOut.String())
		}
		return out.String(), errOut.String()
	}
	run("account", "add", "--id", "news", "--url", sb.URL(), "--token-file", write("token", []byte(sa.AccessToken)))

	// A photo-like image: noise does not compress, so it is well over the limit.
	img := image.NewRGBA(image.Rect(0, 0, 900, 600))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.IntN(256))
	}
	var big bytes.Buffer
	if err := jpeg.Encode(&big, img, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	if big.Len() <= limit {
		t.Fatalf("test image is %d bytes, not over %d", big.Len(), limit)
	}
	small := image.NewRGBA(image.Rect(0, 0, 8, 8))
	small.Set(1, 1, color.RGBA{200, 0, 0, 255})
	var tiny bytes.Buffer
	if err := png.Encode(&tiny, small); err != nil {
		t.Fatal(err)
	}

	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	out, notes := run("post", "add", "--id", "pics", "--account", "news", "--at", at, "--body", "Two pictures.",
		"--media", write("big.jpg", big.Bytes()), "--alt", "noise", "--media", write("tiny.png", tiny.Bytes()), "--alt", "a dot", "--json")
	var p post.Post
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("post add --json printed %q: %v", out, err)
	}
	if len(p.Media) != 2 {
		t.Fatalf("%d media, want 2", len(p.Media))
	}
	if !strings.Contains(notes, "media[0]:") || !strings.Contains(notes, "to fit news") || strings.Contains(notes, "media[1]:") {
		t.Errorf("notes %q: want one for media[0] naming the account", notes)
	}
	// The post keeps the original; the account's platform gets the
	// fitted version.
	sent := p.MediaFor("mastodon")
	if p.Media[0].SHA256 != sha256Hex(big.Bytes()) || sent[0].SHA256 == p.Media[0].SHA256 {
		t.Errorf("media[0] %s, for mastodon %s: want the original's hash and the fitted one's", p.Media[0].SHA256, sent[0].SHA256)
	}
	stored, err := os.ReadFile(filepath.Join(dir, "media", sent[0].Ref))
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) > limit || sha256Hex(stored) != sent[0].SHA256 {
		t.Errorf("fitted image: %d bytes (limit %d), hash matches the post's: %v", len(stored), limit, sha256Hex(stored) == sent[0].SHA256)
	}
	if _, err := jpeg.Decode(bytes.NewReader(stored)); err != nil {
		t.Errorf("fitted image does not decode: %v", err)
	}
	if !cmp.Equal(sent[1], p.Media[1]) || p.Media[1].SHA256 != sha256Hex(tiny.Bytes()) || sent[0].Alt != "noise" {
		t.Errorf("the image that fits was changed (%+v) or the alt text lost (%q)", sent[1], sent[0].Alt)
	}

	// Another platform with room for the original gets the original:
	// one post, one image, two versions stored.
	var calls atomic.Int32
	tg := fakeTelegram(t, &calls)
	run("account", "add", "--id", "tg", "--platform", "telegram", "--api-url", tg.URL, "--token-file", write("bot.token", []byte(tgToken)), "--chat", "@newschannel")
	out, notes = run("post", "add", "--id", "both", "--account", "news", "--account", "tg", "--at", at, "--body", "One picture, two platforms.",
		"--media", write("big2.jpg", big.Bytes()), "--alt", "noise", "--json")
	p = post.Post{}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("post add --json printed %q: %v", out, err)
	}
	if got := slices.Sorted(maps.Keys(p.Media[0].Fitted)); !slices.Equal(got, []string{"mastodon"}) {
		t.Errorf("fitted for %v, want mastodon only", got)
	}
	if !strings.Contains(notes, "on mastodon, to fit news") || strings.Contains(notes, "telegram") {
		t.Errorf("notes %q: want one change, for mastodon", notes)
	}
	if show, _ := run("post", "show", "both"); !strings.Contains(show, "on mastodon: image/jpeg "+p.Media[0].Fitted["mastodon"].Ref+" (fitted)") {
		t.Errorf("post show does not name the fitted version:\n%s", show)
	}
	for platform, want := range map[string]int{"mastodon": -1, "telegram": big.Len()} {
		m := p.MediaFor(platform)[0]
		b, err := os.ReadFile(filepath.Join(dir, "media", m.Ref))
		if err != nil {
			t.Fatalf("%s's version: %v", platform, err)
		}
		if sha256Hex(b) != m.SHA256 || (want < 0 && len(b) > limit) || (want >= 0 && len(b) != want) {
			t.Errorf("%s's version: %d bytes, hash matches: %v; want %d (-1: under %d)", platform, len(b), sha256Hex(b) == m.SHA256, want, limit)
		}
	}
}
