package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"oncepost/shared/awsruntime/stacktest"
	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// TestPostWithAnImageOnAWS: an attachment imported into the stack's
// bucket (as `post add --media` does on AWS) reaches the platform through
// the publisher function, which reads it from S3.
func TestPostWithAnImageOnAWS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two functions under the RIE")
	}
	ctx := context.Background()
	s := stacktest.New(t)
	_, sa := s.AddAccount(t, "news")
	m := putDot(t, s, color.RGBA{R: 200, A: 255}, "a red dot")
	slot := time.Now().UTC().Add(-time.Second).Truncate(time.Second)
	p := post.Post{ID: "with-image", Body: "A post with an image.", CreatedAt: time.Now().UTC(), Media: []post.Media{m},
		Targets: []post.Target{{Account: "news", Slot: slot, Status: post.Scheduled, UpdatedAt: time.Now().UTC()}}}
	if err := s.Store.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	if res := fireAndPublish(t, s, slot); res.Received != 1 || res.Failed != 0 || res.InvokeErr != nil {
		t.Fatalf("publish: %+v", res)
	}
	e, err := s.Store.Get(ctx, ledger.PublishKey("news", string(p.ID), slot))
	if err != nil || e.State != ledger.Confirmed {
		t.Fatalf("entry %+v, %v; want confirmed", e.State, err)
	}
	sts := s.Sandbox.Statuses(sa.ID)
	if len(sts) != 1 || len(sts[0].MediaIDs) != 1 {
		t.Fatalf("statuses %+v; want one with one attachment", sts)
	}
	if calls := s.Calls.Snapshot(); calls["s3.GET /"+stacktest.MediaBucket+"/media/"+m.Ref] != 1 {
		t.Errorf("S3 calls %v; want one GetObject of the attachment", calls)
	}
}

// TestThreadsFetchesTheImageFromS3OnAWS: Threads has no upload; it fetches
// each image from the URL in the container's image_url. On AWS the
// publisher function signs a URL of the attachment's S3 object, and the
// platform's plain GET of it (no AWS credentials) returns the bytes the
// post's hash names. The fake answers as the Threads Graph API does
// (https://developers.facebook.com/docs/threads/posts, single image post;
// https://developers.facebook.com/docs/threads/troubleshooting, container
// status).
func TestThreadsFetchesTheImageFromS3OnAWS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two functions under the RIE")
	}
	ctx := context.Background()
	s := stacktest.New(t)
	m := putDot(t, s, color.RGBA{B: 200, A: 255}, "a blue dot")
	sha := m.SHA256

	var (
		mu        sync.Mutex
		fetched   []string // SHA-256 of what each image_url answered
		form      url.Values
		published int
	)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1.0/th-user/threads":
			posts := []map[string]any{}
			if published > 0 {
				posts = append(posts, map[string]any{"id": "post-1", "media_type": "IMAGE", "text": "A post with an image.", "timestamp": time.Now().UTC().Format("2006-01-02T15:04:05-0700")})
			}
			json.NewEncoder(w).Encode(map[string]any{"data": posts})
		case r.Method == http.MethodPost && r.URL.Path == "/v1.0/th-user/threads":
			r.ParseForm()
			form = r.PostForm
			resp, err := http.Get(r.PostForm.Get("image_url"))
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			s := sha256.Sum256(b)
			fetched = append(fetched, fmt.Sprintf("%d %s", resp.StatusCode, hex.EncodeToString(s[:])))
			io.WriteString(w, `{"id":"container-1"}`)
		case r.Method == http.MethodGet && r.URL.Path == "/v1.0/container-1":
			io.WriteString(w, `{"id":"container-1","status":"FINISHED"}`)
		case r.Method == http.MethodPost && r.URL.Path == "/v1.0/th-user/threads_publish":
			published++
			io.WriteString(w, `{"id":"post-1"}`)
		case r.Method == http.MethodGet && r.URL.Path == "/v1.0/post-1":
			io.WriteString(w, `{"id":"post-1","media_type":"IMAGE","text":"A post with an image.","permalink":"https://www.threads.net/@news/post/1"}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"message":"Unsupported request","type":"GraphMethodException","code":100}}`)
		}
	}))
	t.Cleanup(fake.Close)
	acc := post.Account{ID: "th", Platform: "threads", Handle: "@news", BaseURL: fake.URL, RemoteID: "th-user", Gate: post.GateAuto}
	if err := s.Store.PutAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	if err := s.Store.PutCredential(ctx, acc.ID, platform.Credential{AccessToken: "th-token"}); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().UTC().Add(-time.Second).Truncate(time.Second)
	p := post.Post{ID: "threads-image", Body: "A post with an image.", CreatedAt: time.Now().UTC(), Media: []post.Media{m},
		Targets: []post.Target{{Account: acc.ID, Slot: slot, Status: post.Scheduled, UpdatedAt: time.Now().UTC()}}}
	if err := s.Store.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	if res := fireAndPublish(t, s, slot); res.Received != 1 || res.Failed != 0 || res.InvokeErr != nil {
		t.Fatalf("publish: %+v", res)
	}
	e, err := s.Store.Get(ctx, ledger.PublishKey(string(acc.ID), string(p.ID), slot))
	if err != nil || e.State != ledger.Confirmed || e.RemoteID != "post-1" {
		t.Fatalf("entry %s %q (%s), %v; want confirmed as post-1", e.State, e.RemoteID, e.Reason, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"200 " + sha}; !slices.Equal(fetched, want) || published != 1 {
		t.Errorf("image_url answered %v, %d published; want %v and 1", fetched, published, want)
	}
	if form.Get("media_type") != "IMAGE" || form.Get("alt_text") != "a blue dot" || form.Get("text") != p.Body {
		t.Errorf("container form %v", form)
	}
	if u, _ := url.Parse(form.Get("image_url")); u == nil || u.Query().Get("X-Amz-Signature") == "" {
		t.Errorf("image_url %q is not a presigned URL", form.Get("image_url"))
	}
}

// putDot stores an 8×8 PNG with one dot of c in the stack's media bucket,
// as `post add --media` imports it on AWS, and returns its attachment.
func putDot(t *testing.T, s *stacktest.Stack, c color.RGBA, alt string) post.Media {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	img.Set(3, 3, c)
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	sha := hex.EncodeToString(sum[:])
	m := post.Media{Ref: sha + ".png", SHA256: sha, ContentType: "image/png", Alt: alt}
	if err := s.Media.PutMedia(context.Background(), m.Ref, m.ContentType, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	return m
}
