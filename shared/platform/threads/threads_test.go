package threads

import (
	"context"
	"errors"
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
	"oncepost/shared/post"
)

func TestNewValidatesConfig(t *testing.T) {
	good := Config{UserID: "5150", Credential: platform.Credential{AccessToken: "t"}}
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string // substring naming the field; "" means valid
	}{
		{"valid with default base", func(*Config) {}, ""},
		{"valid with base and trailing slash", func(c *Config) { c.BaseURL = "http://127.0.0.1:8080/" }, ""},
		{"me as user id", func(c *Config) { c.UserID = "me" }, ""},
		{"missing user id", func(c *Config) { c.UserID = "" }, "UserID"},
		{"user id with a slash", func(c *Config) { c.UserID = "5150/threads" }, "UserID"},
		{"missing access token", func(c *Config) { c.Credential.AccessToken = "" }, "Credential.AccessToken"},
		{"relative base url", func(c *Config) { c.BaseURL = "graph.threads.net" }, "BaseURL"},
		{"base url with query", func(c *Config) { c.BaseURL = "https://graph.threads.net/?x=1" }, "BaseURL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.edit(&cfg)
			_, err := New(cfg)
			adaptertest.CheckNewError(t, err, tt.wantErr)
		})
	}
	c, err := New(good)
	if err != nil {
		t.Fatal(err)
	}
	if c.base != DefaultBaseURL {
		t.Errorf("base = %q, want %q", c.base, DefaultBaseURL)
	}
}

func TestConnectorBuildsClientForAccount(t *testing.T) {
	cl, err := Connector{}.Client(context.Background(), post.Account{RemoteID: "777", BaseURL: "http://127.0.0.1:9"}, platform.Credential{AccessToken: "tok"})
	if err != nil {
		t.Fatalf("Client: %v", err)
	}
	c := cl.(*Client)
	if c.userID != "777" || c.base != "http://127.0.0.1:9" {
		t.Errorf("client for user %q at %q, want 777 at http://127.0.0.1:9", c.userID, c.base)
	}
	if _, err := (Connector{}).Client(context.Background(), post.Account{}, platform.Credential{AccessToken: "tok"}); err == nil || !strings.Contains(err.Error(), "RemoteID") {
		t.Errorf("account without RemoteID: err = %v, want one naming RemoteID", err)
	}
}

func TestCapabilities(t *testing.T) {
	c := newClient(t, "")
	got := c.Capabilities()
	want := platform.Capabilities{
		Platform: "threads", NativeIdempotency: false, LookupByHandle: true, ReadableHistory: true,
		MaxTextGraphemes: 500, Handle: got.Handle, ReadBack: got.ReadBack,
		// https://developers.facebook.com/docs/threads/posts: "Carousels
		// are limited to 20 images, videos, or a mix of the two"; Media
		// Specifications: "File Size: 8 MB maximum", no pixel limit
		// (wider than 1440 is scaled down). Images are given by URL
		// (image_url), which Threads fetches.
		MaxMedia: 20, MaxMediaBytes: 8_000_000, MaxMediaPixels: 0, InlineMedia: true, MediaByURL: true,
		// Same page, Media Specifications: "JPEG and PNG image types are
		// the officially supported formats".
		MediaFormats: []string{"image/jpeg", "image/png"},
		// https://developers.facebook.com/docs/threads/overview, Rate
		// Limiting: 250 API-published posts per 24-hour moving period.
		PostingLimits: []platform.Rate{{Count: 250, Per: 24 * time.Hour}},
		// Same page: reply_to_id on the container makes a reply.
		Replies: true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("capabilities (-want +got):\n%s", diff)
	}
	if !strings.Contains(got.Handle, "container") || !strings.Contains(got.ReadBack, "status") {
		t.Errorf("Handle %q / ReadBack %q do not describe the container", got.Handle, got.ReadBack)
	}
	got.MediaFormats[0] = "image/gif"
	if f := c.Capabilities().MediaFormats; f[0] != "image/jpeg" {
		t.Errorf("a caller's change to MediaFormats reached the next answer: %v", f)
	}
	if g := got.Guarantee(); g != platform.ReadBack {
		t.Errorf("guarantee = %q, want %q", g, platform.ReadBack)
	}
}

// TestPublishTwoSteps checks the request shapes of both steps
// (https://developers.facebook.com/docs/threads/posts, Steps 1 and 2) and
// that the container is checkpointed between them.
func TestPublishTwoSteps(t *testing.T) {
	f, c := fakeClient(t)
	var checkpoints []string
	var publishedAtCheckpoint int
	req := platform.PublishRequest{
		Handle: "entry-7f3a",
		Text:   "Hello, Threads 👋",
		Checkpoint: func(_ context.Context, h string) error {
			checkpoints = append(checkpoints, h)
			_, publishedAtCheckpoint, _ = f.counts()
			return nil
		},
	}
	r, err := c.Publish(context.Background(), req)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	reqs := f.seen()
	if len(reqs) < 2 {
		t.Fatalf("fake saw %d requests, want at least 2", len(reqs))
	}
	container := checkpoints[0]
	want := []seenRequest{
		{Method: "POST", Path: "/v1.0/5150/threads", Auth: "Bearer " + fakeToken, ContentType: "application/x-www-form-urlencoded",
			Query: url.Values{}, Form: url.Values{"media_type": {"TEXT"}, "text": {"Hello, Threads 👋"}}},
		// The handle of this platform is the container id: creation_id.
		{Method: "POST", Path: "/v1.0/5150/threads_publish", Auth: "Bearer " + fakeToken, ContentType: "application/x-www-form-urlencoded",
			Query: url.Values{}, Form: url.Values{"creation_id": {container}}},
	}
	if diff := cmp.Diff(want, reqs[:2]); diff != "" {
		t.Errorf("create requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{container}, checkpoints); diff != "" {
		t.Errorf("checkpoints (-want +got):\n%s", diff)
	}
	if publishedAtCheckpoint != 0 {
		t.Errorf("Checkpoint ran after %d publishes, want before any", publishedAtCheckpoint)
	}
	if !strings.HasPrefix(container, "178") {
		t.Errorf("checkpointed %q, want the container id", container)
	}
	f.mu.Lock()
	media := f.containers[container].mediaID
	created := f.posts[0].created
	f.mu.Unlock()
	wantReceipt := platform.Receipt{RemoteID: media, URL: "https://www.threads.net/@oncepost_test/post/" + media, CreatedAt: created}
	if diff := cmp.Diff(wantReceipt, r); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}
	if containers, published, _ := f.counts(); containers != 1 || published != 1 {
		t.Errorf("fake made %d containers and %d posts, want 1 and 1", containers, published)
	}
}

func TestPublishRefusesBeforeSending(t *testing.T) {
	tests := []struct {
		name   string
		req    platform.PublishRequest
		reason string
	}{
		{"501 characters", platform.PublishRequest{Text: strings.Repeat("a", 501)}, ReasonTextTooLong},
		// 126 four-byte emoji are 504 as Threads counts them
		// (https://developers.facebook.com/docs/threads/posts, Limitations).
		{"126 emoji", platform.PublishRequest{Text: strings.Repeat("😀", 126)}, ReasonTextTooLong},
		{"empty", platform.PublishRequest{Text: " \n"}, ReasonEmptyText},
		{"media", platform.PublishRequest{Text: "hi", MediaIDs: []string{"m1"}}, ReasonMediaUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { refusedUnsent(t, tt.req, tt.reason) })
	}
	t.Run("500 characters and 125 emoji pass", func(t *testing.T) {
		f, c := fakeClient(t)
		for _, text := range []string{strings.Repeat("a", 500), strings.Repeat("😀", 125)} {
			if _, err := c.Publish(context.Background(), platform.PublishRequest{Text: text}); err != nil {
				t.Errorf("Publish %d bytes: %v", len(text), err)
			}
		}
		if n := f.postCount(); n != 2 {
			t.Errorf("fake has %d posts, want 2", n)
		}
	})
}

func TestUploadMediaUnsupported(t *testing.T) {
	var n atomic.Int32
	srv := newServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
	_, err := newClient(t, srv.URL).UploadMedia(context.Background(), platform.MediaUpload{Filename: "a.png", Data: []byte("png")})
	if diff := cmp.Diff(outcome{Class: "rejected", Reason: ReasonMediaUnsupported}, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if n.Load() != 0 {
		t.Errorf("server received %d requests, want 0", n.Load())
	}
}

// TestWriteClassification runs each answer through both create steps and
// Delete. Graph errors follow
// https://developers.facebook.com/docs/graph-api/guides/error-handling
// (codes 1, 2, 4, 17, 100, 190, 200, 506) and
// https://developers.facebook.com/docs/graph-api/overview/rate-limiting
// (4, 17, 32, 613, returned with HTTP 400/403 rather than 429).
func TestWriteClassification(t *testing.T) {
	type answer struct {
		status  int
		header  map[string]string
		code    int
		subcode int
		body    string // used when code is 0
	}
	tests := []struct {
		name string
		a    answer
		want outcome
	}{
		{"app throttled, code 4, no retry-after", answer{status: 400, code: 4}, outcome{Class: "not_performed", Status: 400, RetryAfter: time.Hour}},
		{"user throttled, code 17, retry-after", answer{status: 400, code: 17, header: map[string]string{"Retry-After": "120"}}, outcome{Class: "not_performed", Status: 400, RetryAfter: 2 * time.Minute}},
		{"page throttled, code 32", answer{status: 403, code: 32}, outcome{Class: "not_performed", Status: 403, RetryAfter: time.Hour}},
		{"rate limit, code 613", answer{status: 400, code: 613}, outcome{Class: "not_performed", Status: 400, RetryAfter: time.Hour}},
		{"429 with retry-after", answer{status: 429, header: map[string]string{"Retry-After": "30"}, body: ``}, outcome{Class: "not_performed", Status: 429, RetryAfter: 30 * time.Second}},
		{"429 without hints", answer{status: 429, body: ``}, outcome{Class: "not_performed", Status: 429, RetryAfter: time.Hour}},
		{"expired token, code 190 on 400", answer{status: 400, code: 190, subcode: 463}, outcome{Class: "unauthorized"}},
		{"401", answer{status: 401, code: 190}, outcome{Class: "unauthorized"}},
		{"401 with another code", answer{status: 401, code: 10}, outcome{Class: "unauthorized"}},
		{"permission, code 200", answer{status: 403, code: 200}, outcome{Class: "rejected", Status: 403, Reason: ReasonPermissionDenied}},
		{"permission, code 10", answer{status: 400, code: 10}, outcome{Class: "rejected", Status: 400, Reason: ReasonPermissionDenied}},
		{"duplicate, code 506", answer{status: 400, code: 506}, outcome{Class: "rejected", Status: 400, Reason: platform.ReasonDuplicate}},
		{"other graph error", answer{status: 400, code: 24, subcode: 4279009}, outcome{Class: "rejected", Status: 400, Reason: "http_400"}},
		{"non-graph 4xx", answer{status: 418, body: `<html>teapot</html>`}, outcome{Class: "rejected", Status: 418, Reason: "http_418"}},
		{"temporary, code 2", answer{status: 400, code: 2}, outcome{Class: "ambiguous", Status: 400}},
		{"unknown, code 1", answer{status: 400, code: 1}, outcome{Class: "ambiguous", Status: 400}},
		{"500 with graph body", answer{status: 500, code: 2}, outcome{Class: "ambiguous", Status: 500}},
		// A 5xx carrying a throttling code may come from a proxy that had
		// forwarded the write: 5xx always wins.
		{"503 with code 4", answer{status: 503, code: 4}, outcome{Class: "ambiguous", Status: 503}},
		{"502 html", answer{status: 502, body: `<html>bad gateway</html>`}, outcome{Class: "ambiguous", Status: 502}},
		{"408", answer{status: 408, body: ``}, outcome{Class: "not_performed", Status: 408}},
	}
	steps := []string{"create", "publish", "delete"}
	for _, tt := range tests {
		for _, step := range steps {
			t.Run(tt.name+"/"+step, func(t *testing.T) {
				f := newFake(t)
				media := f.addPost("to delete", "TEXT_POST")
				f.before = func(route string, w http.ResponseWriter, r *http.Request) bool {
					if route != step {
						return false
					}
					for k, v := range tt.a.header {
						w.Header().Set(k, v)
					}
					if tt.a.code != 0 {
						graphErr(w, tt.a.status, tt.a.code, tt.a.subcode, "OAuthException", "refused by the test")
						return true
					}
					w.WriteHeader(tt.a.status)
					io.WriteString(w, tt.a.body)
					return true
				}
				srv := newServer(t, f)
				c := newClient(t, srv.URL)
				var err error
				if step == "delete" {
					err = c.Delete(context.Background(), media)
				} else {
					_, err = c.Publish(context.Background(), platform.PublishRequest{Text: "hello"})
				}
				if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
					t.Errorf("outcome (-want +got):\n%s", diff)
				}
				if n := f.callCount(step); n != 1 {
					t.Errorf("%s sent %d times, want exactly 1", step, n)
				}
				if step == "create" && f.callCount("publish") != 0 {
					t.Errorf("a failed container was published")
				}
			})
		}
	}
}

// TestPublish5xxAfterCommitThenLookup: threads_publish commits the post and
// answers 500. Publish is Ambiguous and does not re-send; Lookup with the
// recorded container sees PUBLISHED and finds the post
// (https://developers.facebook.com/docs/threads/troubleshooting).
func TestPublish5xxAfterCommitThenLookup(t *testing.T) {
	f := newFake(t)
	f.after = publishAnswers500
	srv := newServer(t, f)
	c := newClient(t, srv.URL)
	var checkpoint string
	text := "launch day\n"
	_, err := c.Publish(context.Background(), platform.PublishRequest{Text: text, Checkpoint: func(_ context.Context, h string) error {
		checkpoint = h
		return nil
	}})
	if diff := cmp.Diff(outcome{Class: "ambiguous", Status: 500}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("publish outcome (-want +got):\n%s", diff)
	}
	// Broken-implementation check: a Publish that re-sent on 5xx would have
	// made a second post here.
	if _, published, _ := f.counts(); published != 1 || f.callCount("publish") != 1 {
		t.Fatalf("fake published %d posts on %d calls, want 1 and 1", published, f.callCount("publish"))
	}
	p, found, err := c.Lookup(context.Background(), platform.LookupQuery{
		Checkpoint:  checkpoint,
		Fingerprint: platform.Fingerprint(text, nil),
		NotBefore:   fixedNow,
	})
	if err != nil || !found {
		t.Fatalf("Lookup = found %v, err %v; want found", found, err)
	}
	f.mu.Lock()
	media := f.containers[checkpoint].mediaID
	f.mu.Unlock()
	if p.RemoteID != media {
		t.Errorf("Lookup found %q, want the media id %q", p.RemoteID, media)
	}
	if n := f.postCount(); n != 1 {
		t.Errorf("fake stores %d posts, want exactly 1", n)
	}
}

// TestPublishTimeoutAfterCommit: the fake publishes, then never answers;
// the client's deadline makes it Ambiguous, and Lookup finds the post both
// by the container and, without one, by fingerprint.
func TestPublishTimeoutAfterCommit(t *testing.T) {
	f := newFake(t)
	f.after = func(route, _ string, _ http.ResponseWriter, r *http.Request) bool {
		if route != "publish" {
			return false
		}
		blockUntilGone(t, r)
		return true
	}
	srv := newServer(t, f)
	c := newClient(t, srv.URL)
	var checkpoint string
	_, err := c.Publish(shortCtx(t, 300*time.Millisecond), platform.PublishRequest{Text: "slow", Checkpoint: func(_ context.Context, h string) error {
		checkpoint = h
		return nil
	}})
	if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("publish outcome (-want +got):\n%s", diff)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Ambiguous %v does not wrap the deadline", err)
	}
	fp := platform.Fingerprint("slow", nil)
	for _, q := range []platform.LookupQuery{
		{Checkpoint: checkpoint, Fingerprint: fp, NotBefore: fixedNow},
		{Fingerprint: fp, NotBefore: fixedNow},
	} {
		_, found, err := c.Lookup(context.Background(), q)
		if err != nil || !found {
			t.Errorf("Lookup(checkpoint %q) = found %v, err %v; want found", q.Checkpoint, found, err)
		}
	}
	if n := f.postCount(); n != 1 {
		t.Errorf("fake stores %d posts, want 1", n)
	}
}

// TestPublishCreateTimeoutIsAmbiguous: a container whose answer is lost
// may exist; it is harmless but not nothing.
func TestPublishCreateTimeoutIsAmbiguous(t *testing.T) {
	f := newFake(t)
	f.after = func(route, _ string, _ http.ResponseWriter, r *http.Request) bool {
		if route == "create" {
			blockUntilGone(t, r)
			return true
		}
		return false
	}
	srv := newServer(t, f)
	_, err := newClient(t, srv.URL).Publish(shortCtx(t, 300*time.Millisecond), platform.PublishRequest{Text: "x"})
	if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if f.callCount("publish") != 0 {
		t.Errorf("published after an unanswered create")
	}
}

func TestPublishNeverReachedIsNotPerformed(t *testing.T) {
	c := newClient(t, refusedURL(t))
	checkpointed := false
	_, err := c.Publish(context.Background(), platform.PublishRequest{Text: "x", Checkpoint: func(context.Context, string) error {
		checkpointed = true
		return nil
	}})
	if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if checkpointed {
		t.Error("Checkpoint called without a container")
	}
}

func TestPublishDroppedConnectionIsAmbiguous(t *testing.T) {
	f := newFake(t)
	f.after = func(route, _ string, w http.ResponseWriter, _ *http.Request) bool {
		if route == "publish" {
			adaptertest.HijackClose(t, w)
			return true
		}
		return false
	}
	srv := newServer(t, f)
	_, err := newClient(t, srv.URL).Publish(context.Background(), platform.PublishRequest{Text: "x"})
	if diff := cmp.Diff(outcome{Class: "ambiguous"}, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if f.callCount("publish") != 1 {
		t.Errorf("publish sent %d times, want 1", f.callCount("publish"))
	}
}

func TestPublishUnreadableSuccessIsAmbiguous(t *testing.T) {
	for _, step := range []string{"create", "publish"} {
		t.Run(step, func(t *testing.T) {
			f := newFake(t)
			f.after = func(route, _ string, w http.ResponseWriter, _ *http.Request) bool {
				if route != step {
					return false
				}
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, `{"id":`)
				return true
			}
			srv := newServer(t, f)
			_, err := newClient(t, srv.URL).Publish(context.Background(), platform.PublishRequest{Text: "x"})
			if diff := cmp.Diff(outcome{Class: "ambiguous", Status: 200}, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckpointFailureStopsBeforePublish: a container that cannot be
// recorded is never published.
func TestCheckpointFailureStopsBeforePublish(t *testing.T) {
	f, c := fakeClient(t)
	ledgerDown := errors.New("ledger: conditional update failed")
	_, err := c.Publish(context.Background(), platform.PublishRequest{Text: "x", Checkpoint: func(context.Context, string) error { return ledgerDown }})
	recordErr(err)
	if !errors.Is(err, ledgerDown) {
		t.Errorf("Publish error %v does not wrap the checkpoint's", err)
	}
	containers, published, _ := f.counts()
	if containers != 1 || published != 0 || f.callCount("publish") != 0 {
		t.Errorf("fake made %d containers, %d posts on %d publish calls; want 1, 0, 0", containers, published, f.callCount("publish"))
	}
}

// TestPublishResume reads the container of an earlier attempt before
// anything else (statuses from
// https://developers.facebook.com/docs/threads/troubleshooting).
func TestPublishResume(t *testing.T) {
	const text = "resumed post"
	tests := []struct {
		name string
		// setup returns the container to resume and the media id the
		// receipt must carry ("" when it is a new post or an error).
		setup          func(f *fakeThreads) (container, media string)
		want           outcome
		wantContainers int // made by this Publish
		wantPublishes  int // publish calls
		wantCheckpoint bool
	}{
		{
			name:  "FINISHED is published as is",
			setup: func(f *fakeThreads) (string, string) { return f.addContainer(text, StatusFinished), "" },
			want:  outcome{Class: "ok"}, wantContainers: 0, wantPublishes: 1,
		},
		{
			name:  "EXPIRED gets a new container",
			setup: func(f *fakeThreads) (string, string) { return f.addContainer(text, StatusExpired), "" },
			want:  outcome{Class: "ok"}, wantContainers: 1, wantPublishes: 1, wantCheckpoint: true,
		},
		{
			// A text container in ERROR is not final, unlike an image's
			// (TestPublishMediaResumeError): see resume.
			name:  "ERROR of a text post gets a new container",
			setup: func(f *fakeThreads) (string, string) { return f.addContainer(text, StatusError), "" },
			want:  outcome{Class: "ok"}, wantContainers: 1, wantPublishes: 1, wantCheckpoint: true,
		},
		{
			name: "PUBLISHED returns its post",
			setup: func(f *fakeThreads) (string, string) {
				f.addPost("older", "TEXT_POST")
				c, m := f.publishedContainer(text)
				f.addPost("newer", "TEXT_POST")
				return c, m
			},
			want: outcome{Class: "ok"},
		},
		{
			name: "PUBLISHED but its post is gone is ambiguous",
			setup: func(f *fakeThreads) (string, string) {
				c, m := f.publishedContainer(text)
				f.mu.Lock()
				f.posts = f.posts[:0]
				f.mu.Unlock()
				_ = m
				return c, ""
			},
			want: outcome{Class: "ambiguous"},
		},
		{
			name:  "IN_PROGRESS waits a minute",
			setup: func(f *fakeThreads) (string, string) { return f.addContainer(text, StatusInProgress), "" },
			want:  outcome{Class: "not_performed", RetryAfter: time.Minute},
		},
		{
			name:  "unreadable container is ambiguous",
			setup: func(*fakeThreads) (string, string) { return "17899999999999", "" },
			want:  outcome{Class: "ambiguous"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := fakeClient(t)
			container, media := tt.setup(f)
			postsBefore := f.postCount()
			var checkpoints []string
			r, err := c.Publish(context.Background(), platform.PublishRequest{Text: text, Resume: container, Checkpoint: func(_ context.Context, h string) error {
				checkpoints = append(checkpoints, h)
				return nil
			}})
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s", diff)
			}
			containers, _, _ := f.counts()
			if containers != tt.wantContainers || f.callCount("publish") != tt.wantPublishes {
				t.Errorf("Publish made %d containers and %d publish calls, want %d and %d", containers, f.callCount("publish"), tt.wantContainers, tt.wantPublishes)
			}
			if got := len(checkpoints) == 1; got != tt.wantCheckpoint || len(checkpoints) > 1 {
				t.Errorf("checkpoints %v, want one: %v", checkpoints, tt.wantCheckpoint)
			}
			if tt.wantCheckpoint && checkpoints[0] == container {
				t.Errorf("checkpointed the old container %s", container)
			}
			if err != nil {
				if f.postCount() != postsBefore {
					t.Errorf("posts went from %d to %d on a failed resume", postsBefore, f.postCount())
				}
				return
			}
			if f.postCount() != postsBefore+tt.wantPublishes {
				t.Errorf("fake has %d posts, want %d", f.postCount(), postsBefore+tt.wantPublishes)
			}
			if media != "" && r.RemoteID != media {
				t.Errorf("receipt %q, want the published container's post %q", r.RemoteID, media)
			}
			if tt.name == "FINISHED is published as is" {
				f.mu.Lock()
				got := f.containers[container].mediaID
				f.mu.Unlock()
				if got == "" || r.RemoteID != got {
					t.Errorf("receipt %q, want the post of the resumed container (%q)", r.RemoteID, got)
				}
			}
		})
	}
}

// TestDeleteTwice: the second delete meets the Graph API's "does not exist"
// error and is nil; the post was removed once
// (https://developers.facebook.com/docs/threads/posts/delete-posts).
func TestDeleteTwice(t *testing.T) {
	f, c := fakeClient(t)
	id := f.addPost("bye", "TEXT_POST")
	for i := range 2 {
		if err := c.Delete(context.Background(), id); err != nil {
			recordErr(err)
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if _, _, deleted := f.counts(); deleted != 1 {
		t.Errorf("fake deleted %d posts, want 1", deleted)
	}
	if n := f.callCount("delete"); n != 2 {
		t.Errorf("fake saw %d DELETEs, want 2", n)
	}
	reqs := f.seen()
	last := reqs[len(reqs)-1]
	if last.Method != "DELETE" || last.Path != "/v1.0/"+id || last.Auth != "Bearer "+fakeToken {
		t.Errorf("delete request %+v", last)
	}
	exists, err := c.Exists(context.Background(), id)
	if err != nil || exists {
		t.Errorf("Exists after delete = %v, %v; want false", exists, err)
	}
}

func TestDeleteSuccessFalseIsAmbiguous(t *testing.T) {
	f := newFake(t)
	id := f.addPost("x", "TEXT_POST")
	f.after = func(route, _ string, w http.ResponseWriter, _ *http.Request) bool {
		if route == "delete" {
			writeJSON(w, http.StatusOK, map[string]any{"success": false})
			return true
		}
		return false
	}
	srv := newServer(t, f)
	err := newClient(t, srv.URL).Delete(context.Background(), id)
	if diff := cmp.Diff(outcome{Class: "ambiguous", Status: 200}, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
}

// refusedUnsent asserts that Publish refuses req with reason before any
// request reaches the platform.
func refusedUnsent(t *testing.T, req platform.PublishRequest, reason string) {
	t.Helper()
	var n atomic.Int32
	srv := newServer(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
	_, err := newClient(t, srv.URL).Publish(context.Background(), req)
	if diff := cmp.Diff(outcome{Class: "rejected", Reason: reason}, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if n.Load() != 0 {
		t.Errorf("server received %d requests, want 0", n.Load())
	}
}

// publishAnswers500 is a fake's after hook: threads_publish commits the
// post, then answers Graph's 500.
func publishAnswers500(route, _ string, w http.ResponseWriter, _ *http.Request) bool {
	if route != "publish" {
		return false
	}
	graphErr(w, http.StatusInternalServerError, 2, 0, "OAuthException", "An unexpected error has occurred. Please retry your request later.")
	return true
}
