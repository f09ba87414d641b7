package console

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"oncepost/shared/httpapi"
	"oncepost/shared/post"
)

// signInZone signs in as signIn does, the browser's time zone being zone.
func (h *harness) signInZone(scopes, zone string) *browser {
	h.t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		h.t.Fatal(err)
	}
	b := &browser{t: h.t, h: h, client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if a := b.post("/signin", url.Values{"token": {h.token(scopes)}, "tz": {zone}}); a.status != http.StatusSeeOther {
		h.t.Fatalf("sign in: %d %s", a.status, a.body)
	}
	b.csrf = b.csrfOf(b.get("/calendar"))
	return b
}

var atValue = regexp.MustCompile(`name="at" value="([^"]*)"`)

// The composer's time is the next full hour of the viewer's clock, in
// zones a half hour off UTC too (Kolkata +05:30, Adelaide +10:30 in its
// summer, St. John's -03:30), where the next full hour of UTC's clock is
// a half hour of theirs.
func TestComposeDefaultsToTheNextFullHourOfTheViewersZone(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 7, 47, 0, 0, time.UTC)
	h := newHarness(t, harnessOptions{now: func() time.Time { return now }})
	for _, tt := range []struct{ zone, want string }{
		{"Asia/Kolkata", "2026-12-02T14:00"},       // 13:17
		{"Australia/Adelaide", "2026-12-02T19:00"}, // 18:17
		{"America/St_Johns", "2026-12-02T05:00"},   // 04:17
		{"Europe/Berlin", "2026-12-02T09:00"},      // 08:47
		{"Asia/Kathmandu", "2026-12-02T14:00"},     // 13:32, +05:45
	} {
		b := h.signInZone("read,posts", tt.zone)
		p := b.get("/compose")
		m := atValue.FindStringSubmatch(p.body)
		if m == nil {
			t.Fatalf("%s: no time on the composer: %d %.300s", tt.zone, p.status, p.body)
		}
		if m[1] != tt.want {
			t.Errorf("%s: the composer's time is %s, want %s", tt.zone, m[1], tt.want)
		}
	}
}

// chunked is a request body of unknown length: sent in chunks, without
// Content-Length, as a browser streams a large form.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

// A form over the composer's limit sent without Content-Length is 413,
// as one that declares its length: it is not taken for a form without
// its CSRF token (403) because reading it stopped at the limit. Under the
// limit, the same chunked form is read.
func TestComposeRefusesAnOversizedChunkedForm(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{})
	b := h.signIn("read,posts")
	local, _ := composeTime(t)
	send := func(size int, length bool) page {
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		for k, v := range map[string]string{csrfField: b.csrf, "body": "Hello.", "account": "news", "at": local, "action": "check"} {
			w.WriteField(k, v)
		}
		fw, _ := w.CreateFormFile("image", "big.png")
		fw.Write(bytes.Repeat([]byte{'x'}, size))
		w.Close()
		var body io.Reader = chunked{&buf}
		if length {
			body = &buf
		}
		req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/compose", body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", w.FormDataContentType())
		return b.do(req)
	}
	over := int(h.console.maxComposeBytes()) + 1000
	for _, length := range []bool{false, true} {
		if a := send(over, length); a.status != http.StatusRequestEntityTooLarge {
			t.Errorf("a form over the limit (Content-Length sent: %v): %d %.200s, want 413", length, a.status, a.body)
		}
	}
	if a := send(10, false); a.status != http.StatusUnprocessableEntity || !strings.Contains(a.body, "big.png is text/plain") {
		t.Errorf("a chunked form under the limit: %d %.300s, want 422 refusing the file that is not an image", a.status, a.body)
	}
}

// A fifth image is refused before it is stored: the form holds four, and
// the media store gets nothing for the fifth.
func TestComposeRefusesAFifthImageUnstored(t *testing.T) {
	t.Parallel()
	h := withMediaReader(newHarness(t, harnessOptions{}))
	b := h.signIn("read,posts")
	local, _ := composeTime(t)
	form := url.Values{"body": {"Five."}, "account": {"news"}, "at": {local}, "action": {"check"}}
	for i := range 4 {
		img := pngImage(t, 8+i, 8)
		m, err := httpapi.StoreImage(context.Background(), h.media, img)
		if err != nil {
			t.Fatal(err)
		}
		form.Add("media_ref", m.Ref)
		form.Add("media_sha256", m.SHA256)
		form.Add("media_type", m.ContentType)
		form.Add("media_alt", "")
		form.Add("media_fitted", "")
	}
	fifth := pngImage(t, 20, 20)
	m5, _ := httpapi.MediaOf(fifth, "image/png")
	a := b.multipart("/compose", form, upload{"image", "fifth.png", fifth})
	if a.status != http.StatusUnprocessableEntity || !strings.Contains(a.body, "holds 4 images already") {
		t.Errorf("a fifth image: %d, want 422 saying the form holds 4: %.1000s", a.status, a.body)
	}
	if _, err := h.media.ReadMedia(context.Background(), m5.Ref); err == nil {
		t.Errorf("the refused fifth image was stored as %s", m5.Ref)
	}
	if got := strings.Count(a.body, `name="media_ref"`); got != 4 {
		t.Errorf("the form holds %d images, want the 4", got)
	}
}

// wrappedDesk is the API's desk behind a wrapper (a decorator that logs,
// a test double): it has no FitLimits of its own.
type wrappedDesk struct{ httpapi.Desk }

// The composer fits images with Config.Fitter, not with whatever the
// API's desk happens to be: a wrapped desk still gets its images fitted
// (for an instance that takes images up to 4,000 bytes, a noise PNG of
// 12,000). A console that reads images (Media) without a Fitter is
// refused at New.
func TestComposeFitsThroughTheFitterPort(t *testing.T) {
	t.Parallel()
	h := withMediaReader(newHarness(t, harnessOptions{}))
	h.console.cfg.API.Desk = wrappedDesk{h.desk}
	if err := h.store.PutAccount(context.Background(), post.Account{ID: "tiny", Platform: "mastodon", Handle: "@tiny@small.example", BaseURL: "https://small.example",
		Gate: post.GateAuto, Limits: post.Limits{MaxMediaBytes: 4000}}); err != nil {
		t.Fatal(err)
	}
	b := h.signIn("read,posts")
	local, _ := composeTime(t)
	img := noisePNG(t, 64, 48)
	if len(img) <= 4000 {
		t.Fatalf("the image is %d bytes, not over the instance's 4,000", len(img))
	}
	a := b.multipart("/compose", url.Values{"body": {"Big."}, "account": {"tiny"}, "at": {local}, "image_alt": {"noise"}, "action": {"check"}},
		upload{"image", "noise.png", img})
	if a.status != http.StatusOK || !strings.Contains(a.body, "Fitted for mastodon: image/jpeg") {
		t.Errorf("with a wrapped desk the image is not fitted: %d %.2000s", a.status, a.body)
	}

	cfg := h.console.cfg
	cfg.Fitter = nil
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "Fitter") {
		t.Errorf("New with Media and no Fitter: %v, want a refusal naming Fitter", err)
	}
}
