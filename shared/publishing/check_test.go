package publishing_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/graphemes"
	"oncepost/shared/platform/catalog"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// withX adds an account on X to the env's workspace.
func withX(t *testing.T, e *deskEnv) {
	t.Helper()
	if err := e.store.PutAccount(context.Background(), post.Account{ID: "bird", Platform: "x", Handle: "@bird", CredentialRef: "bird", Gate: post.GateAuto}); err != nil {
		t.Fatal(err)
	}
}

// padTo is prefix and as many "a" as make it limit long as the
// platform's measurer counts.
func padTo(t *testing.T, platformName, prefix string, limit int) string {
	t.Helper()
	k, ok := catalog.Lookup(platformName)
	if !ok {
		t.Fatalf("no platform %s", platformName)
	}
	n := limit - k.Measure(prefix)
	if n < 0 {
		t.Fatalf("prefix is %d long, over %d", k.Measure(prefix), limit)
	}
	return prefix + strings.Repeat("a", n)
}

// Check counts a text as Validate does: a text at the limit passes
// Validate and Check says it is not over; one character more is refused
// by Validate on the field, and Check says over, with the same count.
// The texts hold an emoji with a skin-tone modifier (one grapheme, two
// code points, two on X) and, on X, a URL (23 whatever its length): a
// count of code points or bytes, or a grapheme count on X, fails.
func TestDeskCheckCountsAsValidateDoes(t *testing.T) {
	ctx := context.Background()
	const url = "https://example.com/a/rather/long/path/that/is/far/longer/than/twenty-three"
	tests := []struct {
		name, account, platform, field string
		draft                          func(text string) post.Draft
		prefix                         string
		limit                          int
	}{
		{"mastodon, the account's limit", "news", "mastodon", "body",
			func(text string) post.Draft { return draftTo("", text, "news") }, "👍🏽 launch ", 100},
		{"x, a URL and an emoji", "bird", "x", "body",
			func(text string) post.Draft { return draftTo("", text, "bird") }, "👍🏽 see " + url + " ", 280},
		{"x's own text beside a mastodon body", "bird", "x", "texts.x",
			func(text string) post.Draft {
				d := draftTo("", "short", "news", "bird")
				d.Texts = map[string]string{"x": text}
				return d
			}, "👋🏿 " + url + " ", 280},
		{"bluesky", "sky", "bluesky", "body",
			func(text string) post.Draft { return draftTo("", text, "sky") }, "👍🏽👍🏽 ", 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newDeskEnv(t)
			withX(t, e)
			at := padTo(t, tt.platform, tt.prefix, tt.limit)
			if strings.Count(at, "")-1 == tt.limit {
				t.Fatalf("the text's code points equal the limit: the test could not tell a code point count from the measurer")
			}
			check := func(text string) publishing.TargetCheck {
				t.Helper()
				c, err := e.desk.Check(ctx, tt.draft(text), nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, tc := range c.Targets {
					if tc.Account == post.AccountID(tt.account) {
						return tc
					}
				}
				t.Fatalf("no target on %s in %+v", tt.account, c)
				return publishing.TargetCheck{}
			}

			if _, err := e.desk.Validate(ctx, tt.draft(at), nil); err != nil {
				t.Fatalf("Validate refused the text at the limit: %v", err)
			}
			got := check(at)
			if got.Length != tt.limit || got.Limit != tt.limit || got.Over || got.Field != tt.field || got.Text != at {
				t.Errorf("Check at the limit = %+v; want length = limit = %d, not over, field %s", got, tt.limit, tt.field)
			}

			for _, more := range []string{"a", "👍🏽"} {
				over := at + more
				_, err := e.desk.Validate(ctx, tt.draft(over), nil)
				if diff := cmp.Diff([]string{tt.field}, fields(err)); diff != "" {
					t.Errorf("Validate of the limit + %q refused (-want +got):\n%s", more, diff)
				}
				got := check(over)
				if !got.Over || got.Length <= tt.limit {
					t.Errorf("Check of the limit + %q = %+v; want over", more, got)
				}
				c, _ := e.desk.Check(ctx, tt.draft(over), nil)
				if c.OK || len(c.Errors) == 0 || c.Errors[0].Field != tt.field {
					t.Errorf("Check's errors = %v; want Validate's, on %s", c.Errors, tt.field)
				}
			}
			if tt.platform == "x" && graphemes.Count(at) == tt.limit {
				t.Errorf("on X the text's graphemes equal the weighted limit: the test could not tell them apart")
			}
		})
	}
}

// Check finds what Validate refuses (the blocklist, an alt text over X's
// limit, an unknown account), writes nothing, and gives each platform's
// version of an attachment with its dimensions.
func TestDeskCheck(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewNRGBA(image.Rect(0, 0, 40, 30))); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	img := post.DraftMedia{Media: post.Media{Ref: sha + ".png", SHA256: sha, ContentType: "image/png", Alt: "a grey square"}}

	e := newDeskEnv(t)
	withX(t, e)
	e.stored[img.Ref] = int64(len(data))
	e.desk.ReadMedia = func(_ context.Context, ref string) ([]byte, error) {
		if ref != img.Ref {
			return nil, post.ErrNotFound
		}
		return data, nil
	}

	d := draftTo("", "A spoiler, here.", "news", "bird")
	d.Media = []post.DraftMedia{img}
	c, err := e.desk.Check(ctx, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]publishing.BlockedHit{{Field: "body", Term: "spoiler", Found: "spoiler", Line: 1, Column: 3}}, c.Blocked); diff != "" {
		t.Errorf("blocked (-want +got):\n%s", diff)
	}
	if c.OK || len(c.Errors) != 1 || c.Errors[0].Field != "body" {
		t.Errorf("errors = %v; want the blocklist's on body", c.Errors)
	}
	want := []publishing.MediaCheck{{Index: 0, Ref: img.Ref, AltLength: 13, Versions: []publishing.MediaVersion{
		{Platform: "mastodon", Ref: img.Ref, ContentType: "image/png", Bytes: int64(len(data)), Width: 40, Height: 30, MaxBytes: 1000, MaxPixels: 33_177_600, MaxAlt: 1500},
		{Platform: "x", Ref: img.Ref, ContentType: "image/png", Bytes: int64(len(data)), Width: 40, Height: 30, MaxBytes: 5 << 20, MaxAlt: 1000},
	}}}
	if diff := cmp.Diff(want, c.Media); diff != "" {
		t.Errorf("media (-want +got):\n%s", diff)
	}

	// An alt text over X's 1,000: Validate refuses it, Check says so.
	d = draftTo("", "Fine.", "news", "bird")
	long := img
	long.Alt = strings.Repeat("é", 1001)
	d.Media = []post.DraftMedia{long}
	_, err = e.desk.Validate(ctx, d, nil)
	if diff := cmp.Diff([]string{"media[0].alt"}, fields(err)); diff != "" {
		t.Errorf("Validate of a long alt text (-want +got):\n%s", diff)
	}
	c, err = e.desk.Check(ctx, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Errors) != 1 || c.Errors[0].Field != "media[0].alt" || c.Media[0].Versions[0].AltOver || !c.Media[0].Versions[1].AltOver {
		t.Errorf("Check of a long alt text = %+v, %v; want over on x only, and Validate's error", c.Media, c.Errors)
	}

	// An unknown account is Validate's error; the known target is counted.
	c, err = e.desk.Check(ctx, draftTo("", "Hello.", "news", "nobody"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Targets) != 1 || c.Targets[0].Length != 6 || len(c.Errors) != 1 || c.Errors[0].Field != "targets[1].account" {
		t.Errorf("Check with an unknown account = %+v; want the known target counted and the error on targets[1].account", c)
	}
	if ids := e.postIDs(t); len(ids) != 0 {
		t.Errorf("Check wrote posts %v", ids)
	}
}

// dirReader reads attachments from a directory as the embedded runtime's
// media store does (cmd/oncepost's dirMedia and mediaDir): any ref inside
// it is read, "." too (the directory itself: its size is the directory's,
// its read an error that is not a refusal). It counts the reads of each
// ref: ReadMedia's, and MediaSize's when it reads the file to measure it
// as a stack's bucket does (sizeByRead).
type dirReader struct {
	dir        string
	sizeByRead bool
	mu         sync.Mutex
	reads      map[string]int
}

func (r *dirReader) ReadMedia(_ context.Context, ref string) ([]byte, error) {
	r.mu.Lock()
	r.reads[ref]++
	r.mu.Unlock()
	if !filepath.IsLocal(ref) {
		return nil, fmt.Errorf("media ref %q: %w", ref, publishing.ErrMediaInvalid)
	}
	b, err := os.ReadFile(filepath.Join(r.dir, ref))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read media %s: %w", ref, post.ErrNotFound)
	}
	return b, err
}

func (r *dirReader) MediaSize(ctx context.Context, ref string) (int64, error) {
	if r.sizeByRead {
		b, err := r.ReadMedia(ctx, ref)
		if errors.Is(err, publishing.ErrMediaInvalid) {
			return 0, fmt.Errorf("%w (%v)", post.ErrNotFound, err)
		}
		return int64(len(b)), err
	}
	if !filepath.IsLocal(ref) {
		return 0, fmt.Errorf("media ref %q: %w", ref, post.ErrNotFound)
	}
	fi, err := os.Stat(filepath.Join(r.dir, ref))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("media %s: %w", ref, post.ErrNotFound)
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Check reads nothing under a ref Validate refuses: "." (which a media
// directory would read as itself, an error that is no refusal), a path,
// an empty ref, a fitted version named "." — each is a field error of the
// check, never the check's failure. The attachments it does read, it
// reads once each whatever the number of platforms (news on Mastodon and
// bird on X get the same file) and whether the versions or Validate's
// media limits ask: on the embedded runtime (MediaSize a stat, ReadMedia
// a read) and on a stack's console (MediaSize a read, no ReadMedia).
func TestDeskCheckReadsValidRefsOnce(t *testing.T) {
	for _, stack := range []bool{false, true} {
		t.Run(map[bool]string{false: "embedded", true: "stack"}[stack], func(t *testing.T) {
			testDeskCheckReadsValidRefsOnce(t, stack)
		})
	}
}

func testDeskCheckReadsValidRefsOnce(t *testing.T, stack bool) {
	ctx := context.Background()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewNRGBA(image.Rect(0, 0, 4, 3))); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, sha+".png"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	e := newDeskEnv(t)
	withX(t, e)
	reader := &dirReader{dir: dir, sizeByRead: stack, reads: map[string]int{}}
	e.desk.MediaSize = reader.MediaSize
	if !stack {
		e.desk.ReadMedia = reader.ReadMedia
	}
	good := post.Media{Ref: sha + ".png", SHA256: sha, ContentType: "image/png", Alt: "a square"}
	dotFitted := good
	dotFitted.Fitted = map[string]post.Fitted{"x": {Ref: ".", SHA256: sha, ContentType: "image/png"}}

	tests := []struct {
		name       string
		media      []post.Media
		wantFields []string
		// wantChecked are the indexes of the media the check measured.
		wantChecked []int
	}{
		{"dot", []post.Media{{Ref: ".", SHA256: sha, ContentType: "image/png"}}, []string{"media[0].ref"}, nil},
		{"a path", []post.Media{{Ref: "media/" + sha + ".png", SHA256: sha, ContentType: "image/png"}}, []string{"media[0].ref"}, nil},
		{"empty", []post.Media{{Ref: "", SHA256: sha, ContentType: "image/png"}}, []string{"media[0].path"}, nil},
		{"no sha", []post.Media{{Ref: sha + ".png", ContentType: "image/png"}}, []string{"media[0].sha256"}, nil},
		{"a fitted version named dot", []post.Media{dotFitted}, []string{"media[0].fitted.x.ref"}, []int{0}},
		{"one good, one dot", []post.Media{good, {Ref: ".", SHA256: sha, ContentType: "image/png"}}, []string{"media[1].ref"}, []int{0}},
		{"the same file twice", []post.Media{good, good}, nil, []int{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clear(reader.reads)
			d := draftTo("", "Look.", "news", "bird")
			for _, m := range tt.media {
				d.Media = append(d.Media, post.DraftMedia{Media: m})
			}
			c, err := e.desk.Check(ctx, d, nil)
			if err != nil {
				t.Fatalf("Check failed: %v; want its refusal as the check's errors", err)
			}
			var got []string
			for _, fe := range c.Errors {
				got = append(got, fe.Field)
			}
			if diff := cmp.Diff(tt.wantFields, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			var checked []int
			for _, mc := range c.Media {
				checked = append(checked, mc.Index)
				if len(mc.Versions) != 2 {
					t.Errorf("media[%d]: %d versions, want mastodon's and x's", mc.Index, len(mc.Versions))
				}
			}
			if diff := cmp.Diff(tt.wantChecked, checked); diff != "" {
				t.Errorf("media checked (-want +got):\n%s", diff)
			}
			if n := reader.reads["."]; n != 0 {
				t.Errorf(`"." was read %d times`, n)
			}
			for ref, n := range reader.reads {
				if n > 1 {
					t.Errorf("%s was read %d times in one check, want once", ref, n)
				}
			}
			if len(tt.wantChecked) > 0 && reader.reads[good.Ref] != 1 {
				t.Errorf("%s was read %d times, want once", good.Ref, reader.reads[good.Ref])
			}
		})
	}
	if stack {
		return
	}
	// The version named "." says why it is not measured; the file as
	// uploaded, which Mastodon gets, is.
	d := draftTo("", "Look.", "news", "bird")
	d.Media = []post.DraftMedia{{Media: dotFitted}}
	c, err := e.desk.Check(ctx, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Media[0].Versions; v[0].Width != 4 || v[0].Problem != "" || v[1].Width != 0 || !strings.Contains(v[1].Problem, `"."`) {
		t.Errorf("versions = %+v; want mastodon's measured, x's refused with its ref named", v)
	}
}
