package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// ReadMedia reads an upload back (console.MediaReader).
var _ MediaReader = (*memMedia)(nil)

// withMediaReader gives the console and the desk the harness's media to
// read: the composer fits and previews images, the check measures them.
func withMediaReader(h *harness) *harness {
	h.console.cfg.Media, h.console.cfg.Fitter = h.media, h.desk
	h.desk.ReadMedia = h.media.ReadMedia
	return h
}

// upload is a file of a multipart form.
type upload struct {
	field, name string
	data        []byte
}

// multipart submits a multipart form (the composer's), the session's
// CSRF token added.
func (b *browser) multipart(path string, form url.Values, files ...upload) page {
	b.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if form.Get(csrfField) == "" {
		form.Set(csrfField, b.csrf)
	}
	for k, vs := range form {
		for _, v := range vs {
			if err := w.WriteField(k, v); err != nil {
				b.t.Fatal(err)
			}
		}
	}
	for _, f := range files {
		fw, err := w.CreateFormFile(f.field, f.name)
		if err != nil {
			b.t.Fatal(err)
		}
		fw.Write(f.data)
	}
	if err := w.Close(); err != nil {
		b.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, b.h.srv.URL+path, &buf)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	return b.do(req)
}

// pngImage is a w×h PNG.
func pngImage(t testing.TB, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewNRGBA(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// composeTime is a time two days from now, on the hour, in Berlin (the
// harness's sessions' zone): the datetime-local value and the instant.
func composeTime(t testing.TB) (string, time.Time) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().In(berlin).Add(48 * time.Hour).Truncate(time.Hour).Add(30 * time.Minute)
	return at.Format(datetimeLocal), at
}

// keyOf is the form's idempotency key on a composer page.
func keyOf(t testing.TB, p page) string {
	t.Helper()
	const mark = `name="key" value="`
	i := strings.Index(p.body, mark)
	if i < 0 {
		t.Fatalf("no key on the page: %.300s", p.body)
	}
	rest := p.body[i+len(mark):]
	return rest[:strings.IndexByte(rest, '"')]
}

// allPosts reads every post of the store.
func (h *harness) allPosts() []post.Post {
	h.t.Helper()
	page, err := h.store.ListPostPage(context.Background(), publishing.PostFilter{Limit: 100})
	if err != nil {
		h.t.Fatal(err)
	}
	return page.Posts
}

// Composing to two accounts with an image and its alt text makes one
// post, both targets at the time given in the viewer's zone (Berlin),
// stored in UTC, the image stored as POST /v1/media would name it; the
// answer is the calendar's week of that date. The same form sent again
// (its key) makes no second post.
func TestComposeSchedulesOnePost(t *testing.T) {
	t.Parallel()
	h := withMediaReader(newHarness(t, harnessOptions{}))
	b := h.signIn("read,posts")
	show := b.get("/compose")
	if show.status != http.StatusOK {
		t.Fatalf("GET /compose: %d %s", show.status, show.body)
	}
	local, at := composeTime(t)
	img := pngImage(t, 40, 30)
	form := url.Values{"key": {keyOf(t, show)}, "body": {"Launch day 👍🏽"}, "account": {"news", "sky"}, "at": {local},
		"image_alt": {"The launch banner"}, "action": {"schedule"}}
	first := b.multipart("/compose", form, upload{"image", "banner.png", img})
	wantTo := "/calendar?view=week&at=" + at.Format("2006-01-02")
	if first.status != http.StatusSeeOther || first.header.Get("Location") != wantTo {
		t.Fatalf("schedule: %d to %q, want 303 to %q: %.2000s", first.status, first.header.Get("Location"), wantTo, first.body)
	}
	if cal := b.get(wantTo); !strings.Contains(cal.body, "Scheduled post ") {
		t.Errorf("no flash on the calendar: %.500s", cal.body)
	}
	again := b.multipart("/compose", form, upload{"image", "banner.png", img})
	if again.status != http.StatusSeeOther {
		t.Fatalf("the same form again: %d %.1000s", again.status, again.body)
	}
	posts := h.allPosts()
	if len(posts) != 1 {
		t.Fatalf("%d posts, want 1", len(posts))
	}
	p := posts[0]
	var got []string
	for _, tg := range p.Targets {
		got = append(got, string(tg.Account)+" "+tg.Slot.Format(time.RFC3339))
	}
	utc := at.UTC().Format(time.RFC3339)
	if diff := cmp.Diff([]string{"news " + utc, "sky " + utc}, got); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if !strings.HasSuffix(utc, ":30:00Z") || at.UTC().Hour() == at.Hour() {
		t.Errorf("the test's time %s is not one a zone mistake would miss", at)
	}
	if len(p.Media) != 1 || p.Media[0].Alt != "The launch banner" || p.Media[0].ContentType != "image/png" || p.Media[0].Ref != p.Media[0].SHA256+".png" {
		t.Fatalf("media = %+v", p.Media)
	}
	if _, err := h.media.ReadMedia(context.Background(), p.Media[0].Ref); err != nil {
		t.Errorf("the image is not stored: %v", err)
	}
	if cal := b.get(wantTo); !strings.Contains(cal.body, "Post "+string(p.ID)+" was scheduled already") {
		t.Errorf("no flash on the calendar after the second send: %.500s", cal.body)
	}
}

// A refused form is shown again, each error at its field (aria-invalid,
// aria-describedby), and nothing is scheduled: a blocklisted word (before
// scheduling), a text over news's limit of 500, no account.
func TestComposeRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	term, err := post.NewBlockedTerm("spoiler", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.AddBlockedTerm(context.Background(), term); err != nil {
		t.Fatal(err)
	}
	b := h.signIn("read,posts")
	local, _ := composeTime(t)
	tests := []struct {
		name     string
		form     url.Values
		input    string // the id of the input the error is at
		contains string
	}{
		{"blocklisted", url.Values{"body": {"The spoiler is out."}, "account": {"news"}}, "body", `contains the blocked term &#34;spoiler&#34;`},
		{"over the limit", url.Values{"body": {strings.Repeat("a", 501)}, "account": {"news"}}, "body", "is 501 characters as mastodon counts them, over its limit of 500"},
		{"over the limit, the platform's own text", url.Values{"body": {"short"}, "text.mastodon": {strings.Repeat("👍🏽", 501)}, "account": {"news"}}, "text-mastodon", "is 501 characters"},
		{"no account", url.Values{"body": {"Hello."}}, "accounts", "none is chosen"},
		{"no time", url.Values{"body": {"Hello."}, "account": {"news"}, "at": {""}}, "at", "Date and time: is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.form.Set("action", "schedule")
			if _, ok := tt.form["at"]; !ok {
				tt.form.Set("at", local)
			}
			a := b.multipart("/compose", tt.form)
			if a.status != http.StatusUnprocessableEntity {
				t.Fatalf("%d, want 422: %.1000s", a.status, a.body)
			}
			errID := tt.input + "-err"
			if !strings.Contains(a.body, `id="`+errID+`"`) || !strings.Contains(a.body, `aria-describedby="`+errID+`"`) && !strings.Contains(a.body, errID+`"`) {
				t.Errorf("no error at %s: %s", tt.input, a.body)
			}
			i := strings.Index(a.body, `id="`+errID+`"`)
			if i < 0 || !strings.Contains(a.body[i:min(len(a.body), i+600)], tt.contains) {
				t.Errorf("the error at %s does not say %q", tt.input, tt.contains)
			}
			if !strings.Contains(a.body, `aria-invalid="true"`) || !strings.Contains(a.body, `role="alert"`) {
				t.Errorf("the refusal is not announced (aria-invalid, role=alert)")
			}
			if n := len(h.allPosts()); n != 0 {
				t.Fatalf("%d posts after a refusal", n)
			}
		})
	}
}

// The counters are validation's: POST /v1/drafts/check through the
// session (the page's script) and the page's Check give the count that
// Desk.Validate enforces — 500 of an emoji with a modifier (one
// character, two code points) is at news's limit, one more is over.
func TestComposeCountsAreValidations(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	b := h.signIn("read,posts")
	local, at := composeTime(t)
	for _, n := range []int{500, 501} {
		body := strings.Repeat("👍🏽", n)
		draft := post.Draft{Body: body, Targets: []post.DraftTarget{{Account: "news", At: at.Format(time.RFC3339)}}}
		raw, _ := json.Marshal(draft)
		a := b.api("POST", "/v1/drafts/check", string(raw))
		if a.status != http.StatusOK {
			t.Fatalf("check: %d %s", a.status, a.body)
		}
		var c struct {
			OK      bool                     `json:"ok"`
			Targets []publishing.TargetCheck `json:"targets"`
		}
		if err := json.Unmarshal([]byte(a.body), &c); err != nil {
			t.Fatal(err)
		}
		_, verr := h.desk.Validate(context.Background(), draft, nil)
		if len(c.Targets) != 1 || c.Targets[0].Length != n || c.Targets[0].Limit != 500 || c.Targets[0].Over != (verr != nil) || c.OK != (verr == nil) {
			t.Errorf("%d: check %+v, validation %v", n, c, verr)
		}
		if (verr != nil) != (n > 500) {
			t.Errorf("%d: validation said %v", n, verr)
		}
		page := b.multipart("/compose", url.Values{"body": {body}, "account": {"news"}, "at": {local}, "action": {"check"}})
		if want := fmt.Sprintf("news (mastodon, body): %d / 500", n); !strings.Contains(page.body, want) {
			t.Errorf("the page's Check does not say %q", want)
		}
	}
	if n := len(h.allPosts()); n != 0 {
		t.Errorf("checks wrote %d posts", n)
	}
	// A read token may not compose.
	if a := h.signIn("read").get("/compose"); a.status != http.StatusForbidden {
		t.Errorf("GET /compose with a read token: %d, want 403", a.status)
	}
}

// A body with a script and an alt text with quotes come back as text:
// in the textarea, the preview and the alt attributes.
func TestComposeEscapes(t *testing.T) {
	t.Parallel()
	h := withMediaReader(newHarness(t, harnessOptions{}))
	b := h.signIn("read,posts")
	local, _ := composeTime(t)
	const script, alt = `<script>alert(1)</script>`, `" onload="x`
	a := b.multipart("/compose", url.Values{"body": {script}, "account": {"news"}, "at": {local}, "image_alt": {alt}, "action": {"check"}},
		upload{"image", "x.png", pngImage(t, 8, 8)})
	if a.status != http.StatusOK {
		t.Fatalf("check: %d %.1000s", a.status, a.body)
	}
	for _, bad := range []string{script, alt, `onload="x"`} {
		if strings.Contains(a.body, bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", `value="&#34; onload=&#34;x"`, `alt="&#34; onload=&#34;x"`} {
		if !strings.Contains(a.body, want) {
			t.Errorf("the page does not hold %q", want)
		}
	}
	if n := strings.Count(a.body, "&lt;script&gt;alert(1)&lt;/script&gt;"); n < 2 {
		t.Errorf("the text is in %d places, want the textarea and the preview", n)
	}
}

// noisePNG is a w×h PNG of noise: large for its size.
func noisePNG(t testing.TB, w, h int) []byte {
	t.Helper()
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	x := uint32(1)
	for i := range m.Pix {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		m.Pix[i] = byte(x)
		if i%4 == 3 {
			m.Pix[i] = 255
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// An image over Bluesky's 1,000,000 bytes is fitted for Bluesky (a
// smaller version stored and recorded on the post) and goes to Mastodon
// as uploaded; the preview says which version each gets.
func TestComposeFitsImagesPerPlatform(t *testing.T) {
	t.Parallel()
	h := withMediaReader(newHarness(t, harnessOptions{}))
	b := h.signIn("read,posts")
	local, _ := composeTime(t)
	img := noisePNG(t, 640, 640)
	if len(img) <= 1_000_000 {
		t.Fatalf("the image is %d bytes, not over Bluesky's limit", len(img))
	}
	form := url.Values{"body": {"Big."}, "account": {"news", "sky"}, "at": {local}, "image_alt": {"noise"}, "action": {"check"}}
	a := b.multipart("/compose", form, upload{"image", "noise.png", img})
	if a.status != http.StatusOK {
		t.Fatalf("check: %d %.2000s", a.status, a.body)
	}
	if !strings.Contains(a.body, "Fitted for bluesky: image/jpeg") || !strings.Contains(a.body, "As uploaded: image/png, 640×640") {
		t.Errorf("the previews do not say which version each platform gets: %s", a.body)
	}
	form.Set("action", "schedule")
	if a := b.multipart("/compose", form, upload{"image", "noise.png", img}); a.status != http.StatusSeeOther {
		t.Fatalf("schedule: %d %.2000s", a.status, a.body)
	}
	posts := h.allPosts()
	if len(posts) != 1 || len(posts[0].Media) != 1 {
		t.Fatalf("posts: %+v", posts)
	}
	m := posts[0].Media[0]
	f, ok := m.Fitted["bluesky"]
	if _, other := m.Fitted["mastodon"]; !ok || other || f.ContentType != "image/jpeg" {
		t.Fatalf("fitted versions: %+v; want one for bluesky only", m.Fitted)
	}
	data, err := h.media.ReadMedia(context.Background(), f.Ref)
	if err != nil || len(data) > 1_000_000 {
		t.Errorf("the fitted version: %d bytes, %v", len(data), err)
	}
}
