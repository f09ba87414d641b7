package s3media

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"oncepost/shared/emulatortest"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// TestStoreOnFauxqs writes and reads attachments in fauxqs's S3: the same
// bytes back, the same object for a second import, ErrNotFound for a ref
// never stored, and refs that are not content hashes refused unsent.
func TestStoreOnFauxqs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against fauxqs")
	}
	client := s3.NewFromConfig(emulatortest.AWSConfig(t, emulatortest.Fauxqs(t)), func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String("media-test")}); err != nil {
		t.Fatal(err)
	}
	st, err := New(client, s3.NewPresignClient(client), "media-test")
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 1000)
	sum := sha256.Sum256(data)
	ref := hex.EncodeToString(sum[:]) + ".png"
	for range 2 {
		if err := st.PutMedia(t.Context(), ref, "image/png", data); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.ReadMedia(t.Context(), ref)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadMedia = %d bytes, %v; want the %d bytes stored", len(got), err, len(data))
	}
	missing := hex.EncodeToString(make([]byte, 32)) + ".png"
	if _, err := st.ReadMedia(t.Context(), missing); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("ReadMedia of a ref never stored = %v, want post.ErrNotFound", err)
	}
	if n, err := st.MediaSize(t.Context(), ref); err != nil || n != int64(len(data)) {
		t.Errorf("MediaSize = %d, %v; want %d", n, err, len(data))
	}
	if _, err := st.MediaSize(t.Context(), missing); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("MediaSize of a ref never stored = %v, want post.ErrNotFound", err)
	}
	if _, err := st.MediaSize(t.Context(), "../etc/passwd"); !errors.Is(err, publishing.ErrMediaInvalid) {
		t.Errorf("MediaSize of a bad ref = %v, want publishing.ErrMediaInvalid", err)
	}
	written := post.Media{Ref: hex.EncodeToString(make([]byte, 31)) + "01.png", ContentType: "image/png"}
	if err := st.WriteMedia(t.Context(), written, data[:10]); err != nil {
		t.Fatal(err)
	}
	if n, err := st.MediaSize(t.Context(), written.Ref); err != nil || n != 10 {
		t.Errorf("MediaSize after WriteMedia = %d, %v; want 10", n, err)
	}
	for _, bad := range []string{"../etc/passwd", ref + "/x", "ABC.png", hex.EncodeToString(sum[:]) + ".exe"} {
		if _, err := st.ReadMedia(t.Context(), bad); err == nil {
			t.Errorf("ReadMedia(%q) succeeded", bad)
		}
		if err := st.PutMedia(t.Context(), bad, "image/png", data); err == nil {
			t.Errorf("PutMedia(%q) succeeded", bad)
		}
	}
}

// MediaURL signs a URL that a platform fetches with a plain GET, without
// credentials: the bytes stored come back. The URL expires after
// URLLifetime and names the object by its ref only.
func TestMediaURLOnFauxqs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against fauxqs")
	}
	client := s3.NewFromConfig(emulatortest.AWSConfig(t, emulatortest.Fauxqs(t)), func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String("media-urls")}); err != nil {
		t.Fatal(err)
	}
	st, err := New(client, s3.NewPresignClient(client), "media-urls")
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte{0xff, 0xd8, 'J', 'P'}, 500)
	sum := sha256.Sum256(data)
	ref := hex.EncodeToString(sum[:]) + ".jpg"
	if err := st.PutMedia(t.Context(), ref, "image/jpeg", data); err != nil {
		t.Fatal(err)
	}
	u, err := st.MediaURL(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	if got := parsed.Query().Get("X-Amz-Expires"); got != "3600" || !strings.HasSuffix(parsed.Path, "/media-urls/media/"+ref) {
		t.Errorf("URL path %s, X-Amz-Expires %q: want the object's key and 3600", parsed.Path, got)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, data) {
		t.Errorf("GET of the signed URL: %d, %d bytes; want 200 and the %d bytes stored", resp.StatusCode, len(got), len(data))
	}
	if _, err := st.MediaURL(t.Context(), "../secrets.jpg"); err == nil {
		t.Error("MediaURL signed a ref that is not a content hash")
	}
	noSigner, _ := New(client, nil, "b")
	if _, err := noSigner.MediaURL(t.Context(), ref); err == nil {
		t.Error("a store without a signer gave a URL")
	}
}

// ReadMedia translates S3's errors at its edge: a missing object is
// post.ErrNotFound and a ref that cannot name an attachment is
// publishing.ErrMediaInvalid (the post fails); a read that did not work
// this time — 503 SlowDown past the SDK's retries, a body cut mid-way —
// is neither, so the publisher waits and reads again instead of failing
// the post for good.
func TestReadMediaTransientErrorsAreNotRefusals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against fauxqs")
	}
	fauxqs, err := url.Parse(emulatortest.Fauxqs(t))
	if err != nil {
		t.Fatal(err)
	}
	var mode atomic.Value
	mode.Store("pass")
	proxy := httputil.NewSingleHostReverseProxy(fauxqs)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch m := mode.Load().(string); {
		case m == "slowdown" && r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
		case m == "cut" && r.Method == http.MethodGet:
			// The headers promise 4,000 bytes; the connection ends after 10.
			w.Header().Set("Content-Length", "4000")
			w.WriteHeader(http.StatusOK)
			w.Write(bytes.Repeat([]byte{0x89}, 10))
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
				}
			}
		default:
			proxy.ServeHTTP(w, r)
		}
	}))
	defer srv.Close()
	client := s3.NewFromConfig(emulatortest.AWSConfig(t, srv.URL), func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String("media-flaky")}); err != nil {
		t.Fatal(err)
	}
	st, err := New(client, nil, "media-flaky")
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 1000)
	sum := sha256.Sum256(data)
	ref := hex.EncodeToString(sum[:]) + ".png"
	if err := st.PutMedia(t.Context(), ref, "image/png", data); err != nil {
		t.Fatal(err)
	}
	refusal := func(err error) bool {
		return errors.Is(err, post.ErrNotFound) || errors.Is(err, publishing.ErrMediaInvalid)
	}
	for _, m := range []string{"slowdown", "cut"} {
		mode.Store(m)
		if _, err := st.ReadMedia(t.Context(), ref); err == nil || refusal(err) {
			t.Errorf("%s: ReadMedia = %v, want an error that is not a refusal", m, err)
		}
	}
	mode.Store("pass")
	if got, err := st.ReadMedia(t.Context(), ref); err != nil || !bytes.Equal(got, data) {
		t.Errorf("ReadMedia once S3 answers = %d bytes, %v", len(got), err)
	}
	missing := hex.EncodeToString(make([]byte, 32)) + ".png"
	if _, err := st.ReadMedia(t.Context(), missing); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("ReadMedia of a ref never stored = %v, want post.ErrNotFound", err)
	}
	if n, err := st.MediaSize(t.Context(), ref); err != nil || n != int64(len(data)) {
		t.Errorf("MediaSize = %d, %v; want %d", n, err, len(data))
	}
	if _, err := st.MediaSize(t.Context(), missing); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("MediaSize of a ref never stored = %v, want post.ErrNotFound", err)
	}
	if _, err := st.MediaSize(t.Context(), "../etc/passwd"); !errors.Is(err, publishing.ErrMediaInvalid) {
		t.Errorf("MediaSize of a bad ref = %v, want publishing.ErrMediaInvalid", err)
	}
	written := post.Media{Ref: hex.EncodeToString(make([]byte, 31)) + "01.png", ContentType: "image/png"}
	if err := st.WriteMedia(t.Context(), written, data[:10]); err != nil {
		t.Fatal(err)
	}
	if n, err := st.MediaSize(t.Context(), written.Ref); err != nil || n != 10 {
		t.Errorf("MediaSize after WriteMedia = %d, %v; want 10", n, err)
	}
	if _, err := st.ReadMedia(t.Context(), "../etc/passwd"); !errors.Is(err, publishing.ErrMediaInvalid) {
		t.Errorf("ReadMedia of a ref that is no content hash = %v, want publishing.ErrMediaInvalid", err)
	}
}
