package linkedin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
	"oncepost/shared/platform/adaptertest"
)

// The fake's Images API and image posts follow the Images API
// (https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/images-api),
// posts-api ("Create an Image Post") and the MultiImage API
// (https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/multiimage-post-api):
// see fakeLinkedIn.

// mediaClient is newClient with UploadMedia's wait paced for tests.
func mediaClient(t *testing.T, baseURL string, edit ...func(*Config)) *Client {
	t.Helper()
	c := newClient(t, baseURL, edit...)
	c.pollFirst, c.pollMax, c.processingWait = time.Millisecond, 4*time.Millisecond, 5*time.Second
	return c
}

// testPNG is a w×h PNG whose pixels depend on seed, so that images of
// different seeds have different bytes.
func testPNG(t *testing.T, w, h int, seed byte) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{R: seed, G: byte(x), B: byte(y), A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatalf("encode png: %v", err)
	}
	return b.Bytes()
}

func testGIF(t *testing.T) []byte {
	t.Helper()
	img := image.NewPaletted(image.Rect(0, 0, 4, 3), color.Palette{color.Black, color.White})
	var b bytes.Buffer
	if err := gif.Encode(&b, img, nil); err != nil {
		t.Fatalf("encode gif: %v", err)
	}
	return b.Bytes()
}

func testJPEG(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, 5, 4)), nil); err != nil {
		t.Fatalf("encode jpeg: %v", err)
	}
	return b.Bytes()
}

// pngHeader is a PNG's signature and IHDR chunk (8-bit truecolor) for a
// w×h image, without pixel data: enough for image.DecodeConfig, and a
// few bytes for an image of any size.
func pngHeader(w, h uint32) []byte {
	ihdr := make([]byte, 0, 17)
	ihdr = append(ihdr, "IHDR"...)
	ihdr = binary.BigEndian.AppendUint32(ihdr, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 2, 0, 0, 0) // depth, color type, compression, filter, interlace
	out := []byte("\x89PNG\r\n\x1a\n")
	out = binary.BigEndian.AppendUint32(out, 13)
	out = append(out, ihdr...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(ihdr))
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// seenRequest is a fakeRequest reduced to what the Images API
// prescribes.
type seenRequest struct {
	Method, Path, Query                        string
	Auth, Version, Protocol, ContentType, Body string
}

func seen(reqs []fakeRequest) []seenRequest {
	out := []seenRequest{}
	for _, r := range reqs {
		out = append(out, seenRequest{r.Method, r.Path, r.RawQuery, r.Header.Get("Authorization"), r.Header.Get("LinkedIn-Version"),
			r.Header.Get("X-Restli-Protocol-Version"), r.Header.Get("Content-Type"), string(r.Body)})
	}
	return out
}

// TestUploadMediaSendsTheDocumentedRequests: initializeUpload with the
// author as owner and the versioned headers, a PUT of the bytes with the
// bearer token to the answered upload URL (its signed query as LinkedIn
// wrote it), then reads of the image until AVAILABLE (images-api,
// "Initialize Image Upload", "Upload the Image", "Get a Single Image").
// The receipt carries the URN and the alt text.
func TestUploadMediaSendsTheDocumentedRequests(t *testing.T) {
	for _, author := range []string{testOrg, testPerson} {
		t.Run(author, func(t *testing.T) {
			f, srv := newFake(t, author)
			f.ProcessingPolls = 2
			c := mediaClient(t, srv.URL, func(cfg *Config) { cfg.Author = author })
			data := testPNG(t, 6, 4, 1)
			alt := "Revenue (Q1) & costs: 100% — ünïcode"
			got, err := c.UploadMedia(context.Background(), platform.MediaUpload{Handle: "upload-7", Filename: "chart.png", ContentType: "image/png", Data: data, Alt: alt})
			if err != nil {
				t.Fatalf("UploadMedia: %v", err)
			}
			imgs := f.storedImages()
			if len(imgs) != 1 {
				t.Fatalf("fake holds %d images, want 1", len(imgs))
			}
			img := imgs[0]
			want := platform.MediaReceipt{RemoteID: img.URN + " Revenue+%28Q1%29+%26+costs%3A+100%25+%E2%80%94+%C3%BCn%C3%AFcode"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("receipt (-want +got):\n%s", diff)
			}
			if img.Owner != author || img.Status != imageAvailable || !bytes.Equal(img.Data, data) {
				t.Errorf("stored image owner %q status %q with %d bytes; want %q, AVAILABLE and the %d bytes sent", img.Owner, img.Status, len(img.Data), author, len(data))
			}
			read := seenRequest{Method: "GET", Path: "/rest/images/" + url.QueryEscape(img.URN), Auth: "Bearer " + testAccess, Version: DefaultAPIVersion, Protocol: "2.0.0"}
			wantReqs := []seenRequest{
				{Method: "POST", Path: "/rest/images", Query: "action=initializeUpload", Auth: "Bearer " + testAccess, Version: DefaultAPIVersion, Protocol: "2.0.0",
					ContentType: "application/json", Body: `{"initializeUploadRequest":{"owner":"` + author + `"}}`},
				{Method: "PUT", Path: uploadPrefix + img.Key + "/uploaded-image/0", Query: "ca=vector_ads&cn=uploads&m=" + img.Sig + "&app=1953784&sync=0&v=beta&ut=0SpGfGtx6dM9g1",
					Auth: "Bearer " + testAccess, Body: string(data)},
				read, read, read, // PROCESSING, PROCESSING, AVAILABLE
			}
			if diff := cmp.Diff(wantReqs, seen(f.received())); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUploadMediaWaitsForProcessing: the image is read until AVAILABLE
// (images-api, image status WAITING_UPLOAD, PROCESSING, AVAILABLE,
// PROCESSING_FAILED). PROCESSING_FAILED is Rejected; an image not seen
// AVAILABLE (the wait or ctx ends, reads fail) is Ambiguous; every write
// went out exactly once whatever happened.
func TestUploadMediaWaitsForProcessing(t *testing.T) {
	tests := []struct {
		name       string
		polls      int
		final      string // the fake's FinalStatus
		readStatus int
		wait       time.Duration // processingWait; 0 keeps mediaClient's
		ctxTimeout time.Duration
		want       outcome
		wantReads  int // -1: not checked
		ctxErr     bool
	}{
		{name: "available at the first read", want: outcome{Class: "ok"}, wantReads: 1},
		{name: "processing, then available", polls: 4, want: outcome{Class: "ok"}, wantReads: 5},
		{name: "processing failed", polls: 1, final: imageProcessingFailed, want: outcome{Class: "rejected", Reason: ReasonProcessingFailed}, wantReads: 2},
		// The context would end much later: the wait's own bound ends it.
		// Not a status the Images API documents: it proves nothing either way.
		{name: "an unknown status", final: "FAILED", want: outcome{Class: "ambiguous"}, wantReads: 1},
		{name: "still processing when the wait ends", polls: 1 << 20, wait: 30 * time.Millisecond, ctxTimeout: 3 * time.Second, want: outcome{Class: "ambiguous"}, wantReads: -1},
		{name: "ctx ends while processing", polls: 1 << 20, ctxTimeout: 60 * time.Millisecond, want: outcome{Class: "ambiguous"}, wantReads: -1, ctxErr: true},
		{name: "reads keep failing", readStatus: http.StatusInternalServerError, want: outcome{Class: "ambiguous"}, wantReads: 4},
		{name: "reading images is forbidden: the accepted upload is the answer", readStatus: http.StatusForbidden, want: outcome{Class: "ok"}, wantReads: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFake(t, testOrg)
			f.ProcessingPolls, f.FinalStatus, f.ImageReadStatus = tt.polls, tt.final, tt.readStatus
			c := mediaClient(t, srv.URL)
			if tt.wait != 0 {
				c.processingWait = tt.wait
			}
			ctx := context.Background()
			if tt.ctxTimeout != 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctxTimeout)
				defer cancel()
			}
			got, err := c.UploadMedia(ctx, platform.MediaUpload{Filename: "a.png", ContentType: "image/png", Data: testPNG(t, 3, 3, 9), Alt: "alt"})
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s", diff)
			}
			if err == nil && !strings.HasPrefix(got.RemoteID, "urn:li:image:") {
				t.Errorf("receipt %q is not an image", got.RemoteID)
			}
			if errors.Is(err, context.DeadlineExceeded) != tt.ctxErr {
				t.Errorf("error %v: carries the context's end %v, want %v", err, !tt.ctxErr, tt.ctxErr)
			}
			inits, uploads, reads := f.imageCounts()
			if inits != 1 || uploads != 1 {
				t.Errorf("fake received %d initializeUpload and %d uploads, want exactly 1 each", inits, uploads)
			}
			if tt.wantReads >= 0 && reads != tt.wantReads {
				t.Errorf("fake served %d image reads, want %d", reads, tt.wantReads)
			}
			if tt.wantReads < 0 && reads < 2 {
				t.Errorf("fake served %d image reads, want it polled", reads)
			}
		})
	}
}

// TestUploadMediaPollBackoff: the reads of a processing image pause
// pollFirst, then twice as long each time up to pollMax, until the wait
// ends. Pauses are checked from below only (a pause is never shorter
// than asked); the read count shows the cap: without it the pauses
// would grow past the wait after 5 reads.
func TestUploadMediaPollBackoff(t *testing.T) {
	f, srv := newFake(t, testOrg)
	f.ProcessingPolls = 1 << 20
	c := mediaClient(t, srv.URL)
	c.pollFirst, c.pollMax, c.processingWait = 10*time.Millisecond, 20*time.Millisecond, 300*time.Millisecond
	_, err := c.UploadMedia(context.Background(), platform.MediaUpload{Filename: "a.png", Data: testPNG(t, 2, 2, 1)})
	if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("outcome (-want +got):\n%s", diff)
	}
	var reads []time.Time
	for _, r := range f.received() {
		if r.Method == http.MethodGet {
			reads = append(reads, r.At)
		}
	}
	// 0, 10, 30, 50, … 290 ms: 16 reads at most, and at least 8 unless a
	// read takes over 15 ms.
	if len(reads) < 8 || len(reads) > 16 {
		t.Errorf("fake served %d image reads in %s, want 8 to 16 (pauses of 10, then 20 ms)", len(reads), c.processingWait)
	}
	for i := 1; i < len(reads); i++ {
		want := 20 * time.Millisecond
		if i == 1 {
			want = 10 * time.Millisecond
		}
		if gap := reads[i].Sub(reads[i-1]); gap < want {
			t.Errorf("pause before read %d was %s, want at least %s", i+1, gap, want)
		}
	}
}

// TestUploadMediaInitializeFailures: initializeUpload is a write, sent
// once; the fake registers the image first and then answers as LinkedIn
// may (error bodies per
// https://learn.microsoft.com/en-us/linkedin/shared/api-guide/concepts/error-handling).
// A 5xx after the image exists is Ambiguous; an answer without an upload
// URL, or one whose upload URL the token may not go to, sends no bytes.
func TestUploadMediaInitializeFailures(t *testing.T) {
	var elsewhereHits atomic.Int32
	elsewhere := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhereHits.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	answer := func(status int, body string) createFault {
		return func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprint(w, body)
			return true
		}
	}
	withURL := func(u string) createFault {
		return answer(200, `{"value":{"uploadUrlExpiresAt":1650567510704,"uploadUrl":"`+u+`","image":"urn:li:image:C4E10AQFoyyAjHPMQuQ"}}`)
	}
	tests := []struct {
		name  string
		fault createFault
		want  outcome
	}{
		{"500 after the image was created", answer(500, `{"message":"Internal Server Error","status":500}`), outcome{Class: "ambiguous", Status: 500}},
		{"503 after the image was created", answer(503, ``), outcome{Class: "ambiguous", Status: 503}},
		{"401", answer(401, `{"message":"Invalid access token","serviceErrorCode":65600,"status":401}`), outcome{Class: "unauthorized"}},
		{"403", answer(403, `{"message":"Not enough permissions to access: images.ACTION-initializeUpload","status":403}`), outcome{Class: "rejected", Status: 403, Reason: "http_403"}},
		{"426 version sunset", answer(426, `{"status":426,"code":"NONEXISTENT_VERSION","message":"Requested version 202605 is not active"}`), outcome{Class: "rejected", Status: 426, Reason: ReasonAPIVersionSunset}},
		{"429 waits for the daily reset", answer(429, `{"message":"throttled","status":429}`), outcome{Class: "not_performed", Status: 429, RetryAfter: 12 * time.Hour}},
		{"200 without an upload URL", answer(200, `{"value":{"image":"urn:li:image:C4E10AQFoyyAjHPMQuQ"}}`), outcome{Class: "ambiguous", Status: 200}},
		{"200 without an image", answer(200, `{"value":{"uploadUrl":"https://www.linkedin.com/dms-uploads/x"}}`), outcome{Class: "ambiguous", Status: 200}},
		{"200 not JSON", answer(200, `<html>ok</html>`), outcome{Class: "ambiguous", Status: 200}},
		{"upload URL on another http server", withURL(elsewhere.URL + "/dms-uploads/x?m=sig"), outcome{Class: "rejected", Reason: ReasonInvalidUploadURL}},
		{"upload URL not on linkedin.com", withURL("https://uploads.example/dms-uploads/x?m=sig"), outcome{Class: "rejected", Reason: ReasonInvalidUploadURL}},
		{"upload URL relative", withURL("/dms-uploads/x?m=sig"), outcome{Class: "rejected", Reason: ReasonInvalidUploadURL}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFake(t, testOrg)
			f.InitFault = tt.fault
			_, err := mediaClient(t, srv.URL).UploadMedia(context.Background(), platform.MediaUpload{Filename: "a.png", Data: testPNG(t, 2, 2, 1)})
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			inits, uploads, reads := f.imageCounts()
			if inits != 1 || uploads != 0 || reads != 0 {
				t.Errorf("fake served %d initializeUpload, %d uploads, %d reads; want 1, 0, 0", inits, uploads, reads)
			}
			if n := len(f.storedImages()); n != 1 {
				t.Errorf("fake holds %d images, want the 1 it registered", n)
			}
		})
	}
	if n := elsewhereHits.Load(); n != 0 {
		t.Errorf("the other server received %d requests, want none (the token must not go there)", n)
	}
}

// TestCheckUploadURL: the bearer token goes only to https on linkedin.com
// (the images-api example uploads to https://www.linkedin.com/dms-uploads/…)
// or to the configured BaseURL's scheme and host; a refusal never quotes
// the URL's signed query.
func TestCheckUploadURL(t *testing.T) {
	c := newClient(t, "http://127.0.0.1:8080")
	const signed = "m=AQJbrN86Zm265gAAAYBOy8m8Xw&ut=0SpGfGtx6dM9g1"
	tests := []struct {
		raw string
		ok  bool
	}{
		{"https://www.linkedin.com/dms-uploads/C4E10AQFoyyAjHPMQuQ/uploaded-image/0?" + signed, true},
		{"https://linkedin.com/dms-uploads/x?" + signed, true},
		{"https://api.LinkedIn.com/mediaUpload/x?" + signed, true},
		{"http://127.0.0.1:8080/dms-uploads/x?" + signed, true},
		{"http://www.linkedin.com/dms-uploads/x?" + signed, false},
		{"https://127.0.0.1:8080/dms-uploads/x?" + signed, false},
		{"http://127.0.0.1:8081/dms-uploads/x?" + signed, false},
		{"https://www.linkedin.com.evil.example/dms-uploads/x?" + signed, false},
		{"https://evillinkedin.com/dms-uploads/x?" + signed, false},
		{"https://user:pw@www.linkedin.com/dms-uploads/x?" + signed, false},
		{"https://www.linkedin.com/dms-uploads/x?" + signed + "#frag", false},
		{"//www.linkedin.com/dms-uploads/x?" + signed, false},
		{"ftp://www.linkedin.com/dms-uploads/x?" + signed, false},
		{"https:www.linkedin.com/x?" + signed, false},
		{"https://www.linkedin.com/%zz?" + signed, false},
	}
	for _, tt := range tests {
		_, err := c.checkUploadURL("op", tt.raw)
		want := outcome{Class: "ok"}
		if !tt.ok {
			want = outcome{Class: "rejected", Reason: ReasonInvalidUploadURL}
		}
		if diff := cmp.Diff(want, outcomeOf(t, err)); diff != "" {
			t.Errorf("checkUploadURL(%q) (-want +got):\n%s", tt.raw, diff)
		}
		adaptertest.CheckErrorNoSecrets(t, err, "AQJbrN86Zm265gAAAYBOy8m8Xw", "0SpGfGtx6dM9g1", tt.raw)
	}
}

// TestUploadMediaPutFailures: the PUT of the bytes is a write, sent
// exactly once: a 5xx or a dropped connection after the bytes were stored
// is Ambiguous (the image may exist, unattached), and no image is read.
func TestUploadMediaPutFailures(t *testing.T) {
	status := func(code int) createFault {
		return func(w http.ResponseWriter, r *http.Request) bool {
			writeJSON(w, code, map[string]any{"message": http.StatusText(code), "status": code})
			return true
		}
	}
	tests := []struct {
		name  string
		fault createFault
		want  outcome
	}{
		{"500 after the bytes were stored", status(500), outcome{Class: "ambiguous", Status: 500}},
		{"502", status(502), outcome{Class: "ambiguous", Status: 502}},
		{"connection dropped after the bytes were stored", func(w http.ResponseWriter, r *http.Request) bool {
			adaptertest.HijackClose(t, w)
			return true
		}, outcome{Class: "ambiguous"}},
		{"400", status(400), outcome{Class: "rejected", Status: 400, Reason: "http_400"}},
		{"401", status(401), outcome{Class: "unauthorized"}},
		{"429", status(429), outcome{Class: "not_performed", Status: 429, RetryAfter: 12 * time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFake(t, testOrg)
			f.UploadFault = tt.fault
			_, err := mediaClient(t, srv.URL).UploadMedia(context.Background(), platform.MediaUpload{Filename: "a.gif", Data: testGIF(t)})
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			inits, uploads, reads := f.imageCounts()
			if inits != 1 || uploads != 1 || reads != 0 {
				t.Errorf("fake served %d initializeUpload, %d uploads, %d reads; want 1, 1, 0", inits, uploads, reads)
			}
		})
	}
}

// TestUploadMediaRefusesBeforeSending: the Images API takes JPG, GIF and
// PNG images of fewer than 36,152,320 pixels (images-api, image
// restrictions); anything else is refused with nothing sent.
func TestUploadMediaRefusesBeforeSending(t *testing.T) {
	tests := []struct {
		name string
		m    platform.MediaUpload
		want outcome
	}{
		{"png", platform.MediaUpload{Filename: "a.png", ContentType: "image/png", Data: testPNG(t, 2, 2, 1)}, outcome{Class: "ok"}},
		{"gif", platform.MediaUpload{Filename: "a.gif", ContentType: "image/gif", Data: testGIF(t)}, outcome{Class: "ok"}},
		{"jpeg, declared as something else", platform.MediaUpload{Filename: "a.bin", ContentType: "application/octet-stream", Data: testJPEG(t)}, outcome{Class: "ok"}},
		{"7360×4911 is under the pixel limit", platform.MediaUpload{Filename: "big.png", Data: pngHeader(7360, 4911)}, outcome{Class: "ok"}},
		{"7360×4912 is 36,152,320 pixels, not fewer", platform.MediaUpload{Filename: "big.png", Data: pngHeader(7360, 4912)}, outcome{Class: "rejected", Reason: ReasonMediaTooLarge}},
		{"empty", platform.MediaUpload{Filename: "a.png", ContentType: "image/png"}, outcome{Class: "rejected", Reason: ReasonMediaUnsupported}},
		{"text declared as png", platform.MediaUpload{Filename: "a.png", ContentType: "image/png", Data: []byte("hello, not an image")}, outcome{Class: "rejected", Reason: ReasonMediaUnsupported}},
		{"bmp", platform.MediaUpload{Filename: "a.bmp", ContentType: "image/bmp", Data: append([]byte("BM"), make([]byte, 60)...)}, outcome{Class: "rejected", Reason: ReasonMediaUnsupported}},
		{"an image format LinkedIn does not take, known to image.Decode", platform.MediaUpload{Filename: "a.fake", ContentType: "image/fake", Data: []byte(fakeFormatMagic + "rest")}, outcome{Class: "rejected", Reason: ReasonMediaUnsupported}},
		{"truncated png", platform.MediaUpload{Filename: "a.png", ContentType: "image/png", Data: pngHeader(10, 10)[:20]}, outcome{Class: "rejected", Reason: ReasonMediaUnsupported}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFake(t, testOrg)
			_, err := mediaClient(t, srv.URL).UploadMedia(context.Background(), tt.m)
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			wantSent := 0
			if tt.want.Class == "ok" {
				wantSent = 3 // initializeUpload, PUT, one read
			}
			if n := len(f.received()); n != wantSent {
				t.Errorf("sent %d requests, want %d", n, wantSent)
			}
		})
	}
}

// fakeFormatMagic starts an image of a format registered with package
// image, as a binary that decodes WebP or BMP (golang.org/x/image) would
// register them: DecodeConfig reads it, and UploadMedia must still
// refuse it.
const fakeFormatMagic = "FAKEIMG1"

func init() {
	image.RegisterFormat("fakeimg", fakeFormatMagic, func(io.Reader) (image.Image, error) {
		return image.NewGray(image.Rect(0, 0, 1, 1)), nil
	}, func(io.Reader) (image.Config, error) {
		return image.Config{ColorModel: color.GrayModel, Width: 1, Height: 1}, nil
	})
}

// upload uploads each alt's image (PNG, seeds from 1) and returns the
// receipts' ids and the images' SHA-256s.
func upload(t *testing.T, c *Client, seed byte, alts ...string) (ids, shas []string) {
	t.Helper()
	for i, alt := range alts {
		data := testPNG(t, 4, 3, seed+byte(i))
		r, err := c.UploadMedia(context.Background(), platform.MediaUpload{Filename: fmt.Sprintf("%d.png", i), ContentType: "image/png", Data: data, Alt: alt})
		if err != nil {
			t.Fatalf("UploadMedia #%d: %v", i, err)
		}
		ids = append(ids, r.RemoteID)
		shas = append(shas, sha(data))
	}
	return ids, shas
}

// TestPublishWithImages: one image is content.media {id, altText}
// (posts-api, "Create an Image Post"); 2 to 20 are
// content.multiImage.images[] (MultiImage API), in order, each with its
// alt text. Read back, the post's media ids are the uploads' ids, so
// its fingerprint is the one the post was sent with.
func TestPublishWithImages(t *testing.T) {
	tests := []struct {
		name string
		alts []string
		want func(urns []string) map[string]any
	}{
		{"one image with alt text", []string{"A chart (Q1) — 100% #growth"}, func(u []string) map[string]any {
			return map[string]any{"media": map[string]any{"id": u[0], "altText": "A chart (Q1) — 100% #growth"}}
		}},
		{"one image without alt text", []string{""}, func(u []string) map[string]any {
			return map[string]any{"media": map[string]any{"id": u[0]}}
		}},
		{"three images", []string{"first", "", "drei — ü/ß & + %20"}, func(u []string) map[string]any {
			return map[string]any{"multiImage": map[string]any{"images": []any{
				map[string]any{"id": u[0], "altText": "first"},
				map[string]any{"id": u[1]},
				map[string]any{"id": u[2], "altText": "drei — ü/ß & + %20"},
			}}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFake(t, testOrg)
			c := mediaClient(t, srv.URL)
			ids, shas := upload(t, c, 1, tt.alts...)
			var urns []string
			for _, img := range f.storedImages() {
				urns = append(urns, img.URN)
			}
			text := "Our numbers (see images)"
			r, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "h", Text: text, MediaIDs: ids})
			if err != nil {
				t.Fatalf("Publish: %v", err)
			}
			bodies := f.createBodies()
			if len(bodies) != 1 {
				t.Fatalf("fake received %d creates, want 1", len(bodies))
			}
			if diff := cmp.Diff(tt.want(urns), bodies[0]["content"]); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			recent, err := c.Recent(context.Background(), 1)
			if err != nil || len(recent) != 1 {
				t.Fatalf("Recent = %v, %v", recent, err)
			}
			if diff := cmp.Diff(platform.RemotePost{RemoteID: r.RemoteID, Text: text, MediaIDs: ids, URL: r.URL, CreatedAt: recent[0].CreatedAt}, recent[0]); diff != "" {
				t.Errorf("read back (-want +got):\n%s", diff)
			}
			bySHA := map[string]string{}
			for i, id := range ids {
				bySHA[id] = shas[i]
			}
			if got, want := recent[0].Fingerprint(bySHA), platform.Fingerprint(text, shas); got != want {
				t.Errorf("read-back fingerprint %s, want the sent post's %s", got, want)
			}
		})
	}
}

// TestPublishRefusesMediaBeforeSending: at most 20 images (MultiImage
// API), and only ids UploadMedia returned, in its encoding.
func TestPublishRefusesMediaBeforeSending(t *testing.T) {
	var n atomic.Int32
	// 201 with the URN in x-restli-id (posts-api).
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		drain(r)
		w.Header().Set("x-restli-id", "urn:li:share:1")
		w.WriteHeader(http.StatusCreated)
	}))
	c := newClient(t, srv.URL)
	images := func(k int) []string {
		var ids []string
		for i := range k {
			ids = append(ids, encodeMediaID(fmt.Sprintf("urn:li:image:C4E10AQ%d", i), "alt"))
		}
		return ids
	}
	tests := []struct {
		name string
		ids  []string
		want outcome
	}{
		{"20 images are allowed", images(20), outcome{Class: "ok"}},
		{"21 images are too many", images(21), outcome{Class: "rejected", Reason: ReasonTooManyMedia}},
		{"not an image urn", []string{"urn:li:video:C5F10AQ"}, outcome{Class: "rejected", Reason: ReasonInvalidMedia}},
		{"empty", []string{""}, outcome{Class: "rejected", Reason: ReasonInvalidMedia}},
		{"bad escape", []string{"urn:li:image:C4E10AQ %zz"}, outcome{Class: "rejected", Reason: ReasonInvalidMedia}},
		{"empty alt part", []string{"urn:li:image:C4E10AQ "}, outcome{Class: "rejected", Reason: ReasonInvalidMedia}},
		{"alt not query-escaped", []string{"urn:li:image:C4E10AQ a b"}, outcome{Class: "rejected", Reason: ReasonInvalidMedia}},
		{"alt escaped otherwise", []string{"urn:li:image:C4E10AQ a%20b"}, outcome{Class: "rejected", Reason: ReasonInvalidMedia}},
		{"one good, one bad", []string{encodeMediaID("urn:li:image:C4E10AQ", ""), "urn:li:image:"}, outcome{Class: "rejected", Reason: ReasonInvalidMedia}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := n.Load()
			_, err := c.Publish(context.Background(), platform.PublishRequest{Text: "hi", MediaIDs: tt.ids})
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			wantSent := int32(0)
			if tt.want.Class == "ok" {
				wantSent = 1
			}
			if sent := n.Load() - before; sent != wantSent {
				t.Errorf("sent %d requests, want %d", sent, wantSent)
			}
		})
	}
}

func TestMediaID(t *testing.T) {
	tests := []struct {
		urn, alt, id string
	}{
		{"urn:li:image:C4E10AQFoyyAjHPMQuQ", "", "urn:li:image:C4E10AQFoyyAjHPMQuQ"},
		{"urn:li:image:C4E10AQFoyyAjHPMQuQ", "a cat", "urn:li:image:C4E10AQFoyyAjHPMQuQ a+cat"},
		{"urn:li:image:C4E10AQ", "1+1 = 2 % 100 & x/y?", "urn:li:image:C4E10AQ 1%2B1+%3D+2+%25+100+%26+x%2Fy%3F"},
		{"urn:li:image:C4E10AQ", " ", "urn:li:image:C4E10AQ +"},
		{"urn:li:image:C4E10AQ", "line\nbreak ✅", "urn:li:image:C4E10AQ line%0Abreak+%E2%9C%85"},
	}
	for _, tt := range tests {
		if got := encodeMediaID(tt.urn, tt.alt); got != tt.id {
			t.Errorf("encodeMediaID(%q, %q) = %q, want %q", tt.urn, tt.alt, got, tt.id)
		}
		urn, alt, err := decodeMediaID(tt.id)
		if err != nil || urn != tt.urn || alt != tt.alt {
			t.Errorf("decodeMediaID(%q) = %q, %q, %v; want %q, %q", tt.id, urn, alt, err, tt.urn, tt.alt)
		}
	}
}

// FuzzMediaID: whatever the alt text, Publish reads back what UploadMedia
// encoded, and a post read back with that image and alt text gives the
// same id (so LookupQuery.MediaSHA256 maps it). The seeds run with go
// test.
func FuzzMediaID(f *testing.F) {
	for _, s := range []string{"", " ", "a b", "%", "+", "%20", "a\x00b", "\xff", "ünï ✅", "urn:li:image:X y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, alt string) {
		const urn = "urn:li:image:C4E10AQFoyyAjHPMQuQ"
		id := encodeMediaID(urn, alt)
		gotURN, gotAlt, err := decodeMediaID(id)
		if err != nil || gotURN != urn || gotAlt != alt {
			t.Fatalf("decodeMediaID(encodeMediaID(%q)) = %q, %q, %v", alt, gotURN, gotAlt, err)
		}
		for _, content := range []*postContent{
			{Media: &mediaRef{ID: urn, AltText: alt}},
			{MultiImage: &multiImage{Images: []mediaRef{{ID: urn, AltText: alt}, {ID: urn}}}},
		} {
			rp := postEntity{ID: "urn:li:share:1", Content: content}.remote()
			if len(rp.MediaIDs) == 0 || rp.MediaIDs[0] != id {
				t.Fatalf("read back %q, want %q", rp.MediaIDs, id)
			}
		}
	})
}

// TestServerErrorAfterCommitWithImagesThenLookupFindsIt: the fake stores
// an organization's post with images and answers 500. The create is
// Ambiguous and never re-sent; Lookup, mapping the read-back media ids
// through MediaSHA256, finds it. The same text with other images, or
// with none, is not found; a post whose alt text LinkedIn returns
// altered is still found by its image URNs.
func TestServerErrorAfterCommitWithImagesThenLookupFindsIt(t *testing.T) {
	for _, count := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d images", count), func(t *testing.T) {
			f, srv := newFake(t, testOrg)
			f.add("an hour ago", fixedNow.Add(-time.Hour), fixedNow.Add(-time.Hour))
			c := mediaClient(t, srv.URL)
			ctx := context.Background()
			alts := []string{"a cat (sleeping)", "", "a dog"}[:count]
			ids, shas := upload(t, c, 1, alts...)
			otherIDs, otherSHAs := upload(t, c, 100, alts...)
			text := "Pets of the week #caturday"

			recent, err := c.Recent(ctx, 5)
			if err != nil {
				t.Fatalf("Recent: %v", err)
			}
			after := recent[0].RemoteID
			f.CreateFault = func(w http.ResponseWriter, r *http.Request) bool {
				writeJSON(w, http.StatusInternalServerError, map[string]any{"message": "Internal Server Error", "status": 500})
				return true
			}
			_, err = c.Publish(ctx, platform.PublishRequest{Handle: "h1", Text: text, MediaIDs: ids})
			if diff := cmp.Diff(outcome{Class: "ambiguous", Status: 500}, outcomeOf(t, err)); diff != "" {
				t.Fatalf("publish outcome (-want +got):\n%s", diff)
			}
			query := func(ids, shas []string) platform.LookupQuery {
				m := map[string]string{}
				for i, id := range ids {
					m[id] = shas[i]
				}
				return platform.LookupQuery{Handle: "h1", Fingerprint: platform.Fingerprint(text, shas), MediaSHA256: m, Text: text, After: after, NotBefore: fixedNow.Add(-time.Minute)}
			}

			got, found, err := c.Lookup(ctx, query(ids, shas))
			if err != nil || !found {
				t.Fatalf("Lookup = found %v, err %v; want the post", found, err)
			}
			stored := f.stored()
			ours := stored[len(stored)-1]
			want := platform.RemotePost{RemoteID: ours.ID, Text: text, MediaIDs: ids, URL: postURL(ours.ID), CreatedAt: millis(ours.CreatedAt)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("found (-want +got):\n%s", diff)
			}
			if creates, _, _, _, _ := f.counts(); creates != 1 {
				t.Errorf("fake received %d creates, want exactly 1", creates)
			}

			if _, found, err := c.Lookup(ctx, query(otherIDs, otherSHAs)); err != nil || found {
				t.Errorf("Lookup with other images = found %v, err %v; want not found", found, err)
			}
			if _, found, err := c.Lookup(ctx, query(nil, nil)); err != nil || found {
				t.Errorf("Lookup without images = found %v, err %v; want not found", found, err)
			}

			// LinkedIn returns the first image's alt text altered.
			f.mu.Lock()
			first := f.posts[len(f.posts)-1].Content
			if m, ok := first["media"].(map[string]any); ok {
				m["altText"] = "A cat, sleeping"
			} else {
				first["multiImage"].(map[string]any)["images"].([]any)[0].(map[string]any)["altText"] = "A cat, sleeping"
			}
			f.mu.Unlock()
			got, found, err = c.Lookup(ctx, query(ids, shas))
			if err != nil || !found || got.RemoteID != ours.ID {
				t.Fatalf("Lookup after LinkedIn altered an alt text = %q found %v, err %v; want the post", got.RemoteID, found, err)
			}
			urn, _, _ := decodeMediaID(ids[0])
			if got.MediaIDs[0] != encodeMediaID(urn, "A cat, sleeping") {
				t.Errorf("read-back media id %q, want the image with LinkedIn's alt text", got.MediaIDs[0])
			}
		})
	}
}

// TestUploadMediaNoSecretInErrors: an upload host that echoes the
// request's URL (its signed parameters) and Authorization header into
// every error field, and an API that echoes the token: no error carries
// the token, the upload URL or its signature.
func TestUploadMediaNoSecretInErrors(t *testing.T) {
	var log adaptertest.Errors
	secrets := []string{testAccess}
	echo := func(status int) createFault {
		return func(w http.ResponseWriter, r *http.Request) bool {
			msg := "you sent " + r.Method + " " + r.URL.String() + " (" + r.RequestURI + ") with " + r.Header.Get("Authorization")
			writeJSON(w, status, map[string]any{"message": msg, "code": msg, "status": status})
			return true
		}
	}
	ctx := context.Background()
	for _, status := range []int{400, 401, 403, 404, 422, 429, 500, 503} {
		f, srv := newFake(t, testOrg)
		f.UploadFault = echo(status)
		c := mediaClient(t, srv.URL)
		_, err := c.UploadMedia(ctx, platform.MediaUpload{Filename: "a.png", Data: testPNG(t, 2, 2, 1)})
		log.Add(err)
		for _, img := range f.storedImages() {
			secrets = append(secrets, img.Sig, "0SpGfGtx6dM9g1", uploadPrefix+img.Key+"/uploaded-image/0?ca=vector_ads&cn=uploads&m="+img.Sig)
		}

		f, srv = newFake(t, testOrg)
		f.InitFault = echo(status)
		_, err = mediaClient(t, srv.URL).UploadMedia(ctx, platform.MediaUpload{Filename: "a.png", Data: testPNG(t, 2, 2, 1)})
		log.Add(err)
	}
	// An upload URL the token may not go to.
	f, srv := newFake(t, testOrg)
	f.UploadBase = "https://uploads.example"
	_, err := mediaClient(t, srv.URL).UploadMedia(ctx, platform.MediaUpload{Filename: "a.png", Data: testPNG(t, 2, 2, 1)})
	log.Add(err)
	for _, img := range f.storedImages() {
		secrets = append(secrets, img.Sig)
	}
	if n := log.Len(); n != 17 {
		t.Fatalf("collected %d errors, want 17 (every call failed)", n)
	}
	log.CheckNoSecrets(t, secrets...)
}
