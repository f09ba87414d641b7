package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
	"oncepost/shared/platform/adaptertest"
	"oncepost/shared/platform/httpcall"
)

// The signing parameters of the test images' URLs, as a presigned S3 URL
// carries them; no error may contain them (TestMain checks every error).
const (
	urlSignature  = "c0ffee5ec2e7f1d3a9b8d41e"
	urlCredential = "AKIAONCEPOSTEXAMPLE"
)

// signedURL is the public URL the publisher would give the i-th image.
func signedURL(i int) string {
	return fmt.Sprintf("https://oncepost-media.s3.eu-west-1.amazonaws.com/p/%d.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256"+
		"&X-Amz-Credential=%s%%2F20260301%%2Feu-west-1%%2Fs3%%2Faws4_request&X-Amz-Expires=900&X-Amz-Signature=%s", i, urlCredential, urlSignature)
}

// images are n JPEG attachments given by URL, as the publisher passes
// them to a MediaByURL platform (no Data). Image i has alt text
// "image i", except image 1, which has none.
func images(n int) []platform.MediaUpload {
	out := make([]platform.MediaUpload, n)
	for i := range out {
		out[i] = platform.MediaUpload{Filename: fmt.Sprintf("%d.jpg", i), ContentType: "image/jpeg", URL: signedURL(i)}
		if i != 1 {
			out[i].Alt = fmt.Sprintf("image %d", i)
		}
	}
	return out
}

// mediaFingerprint is the post's fingerprint as the ledger has it: text
// and the attachments' SHA-256s, which no re-hosted copy matches.
func mediaFingerprint(text string, n int) string {
	shas := make([]string, n)
	for i := range shas {
		shas[i] = fmt.Sprintf("%064d", i)
	}
	return platform.Fingerprint(text, shas)
}

// posts are the POST requests the fake received, in order.
func posts(reqs []seenRequest) []seenRequest {
	var out []seenRequest
	for _, r := range reqs {
		if r.Method == http.MethodPost {
			out = append(out, r)
		}
	}
	return out
}

// recorder is a Checkpoint that records its handles and how many posts
// the fake had published when it was called.
type recorder struct {
	f           *fakeThreads
	handles     []string
	publishedAt []int
}

func (r *recorder) checkpoint(_ context.Context, h string) error {
	r.handles = append(r.handles, h)
	_, published, _ := r.f.counts()
	r.publishedAt = append(r.publishedAt, published)
	return nil
}

// TestPublishImages checks the request shapes of an image post and of a
// carousel (https://developers.facebook.com/docs/threads/posts, Single
// Thread Posts and Carousel Posts; alt_text per
// https://developers.facebook.com/docs/threads/posts/accessibility):
// each container is awaited until FINISHED, a carousel's items are
// checkpointed as "items:…" once all are made, the IMAGE or CAROUSEL
// container is checkpointed before threads_publish and published once.
func TestPublishImages(t *testing.T) {
	const text = "Sunset over the harbour 🌅"
	tests := []struct {
		name  string
		media []platform.MediaUpload
		// wantForms are the create and publish forms, given the ids of
		// the containers made in order.
		wantForms func(made []string) []url.Values
		// wantCheckpoints are the handles recorded, in order.
		wantCheckpoints func(made []string) []string
		wantType        string
		wantItems       int // children of the published post
	}{
		{
			name:  "one image",
			media: images(1),
			wantForms: func(made []string) []url.Values {
				return []url.Values{
					{"media_type": {"IMAGE"}, "image_url": {signedURL(0)}, "text": {text}, "alt_text": {"image 0"}},
					{"creation_id": {made[0]}},
				}
			},
			wantCheckpoints: func(made []string) []string { return made },
			wantType:        "IMAGE",
		},
		{
			name:  "three images",
			media: images(3),
			wantForms: func(made []string) []url.Values {
				return []url.Values{
					{"media_type": {"IMAGE"}, "image_url": {signedURL(0)}, "is_carousel_item": {"true"}, "alt_text": {"image 0"}},
					// Image 1 has no alt text: no alt_text parameter.
					{"media_type": {"IMAGE"}, "image_url": {signedURL(1)}, "is_carousel_item": {"true"}},
					{"media_type": {"IMAGE"}, "image_url": {signedURL(2)}, "is_carousel_item": {"true"}, "alt_text": {"image 2"}},
					{"media_type": {"CAROUSEL"}, "children": {made[0] + "," + made[1] + "," + made[2]}, "text": {text}},
					{"creation_id": {made[3]}},
				}
			},
			wantCheckpoints: func(made []string) []string {
				return []string{"items:" + made[0] + "," + made[1] + "," + made[2], made[3]}
			},
			wantType:  "CAROUSEL_ALBUM",
			wantItems: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := fakeClient(t)
			cp := &recorder{f: f}
			r, err := c.Publish(context.Background(), platform.PublishRequest{Handle: "entry-1", Text: text, Media: tt.media, Checkpoint: cp.checkpoint})
			if diff := cmp.Diff(outcome{Class: "ok"}, outcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s", diff)
			}
			made := f.madeContainers()
			var forms []url.Values
			for _, req := range posts(f.seen()) {
				forms = append(forms, req.Form)
			}
			if diff := cmp.Diff(tt.wantForms(made), forms); diff != "" {
				t.Errorf("create and publish forms (-want +got):\n%s", diff)
			}
			published := made[len(made)-1]
			if diff := cmp.Diff(tt.wantCheckpoints(made), cp.handles); diff != "" {
				t.Errorf("checkpoints (-want +got):\n%s", diff)
			}
			for i, n := range cp.publishedAt {
				if n != 0 {
					t.Errorf("Checkpoint %d ran after %d publishes, want before any", i, n)
				}
			}
			// Every container was read FINISHED (the fake answers
			// IN_PROGRESS first and refuses to publish, or to make a
			// carousel of, an unfinished container).
			for _, id := range made {
				if st := f.container(id).status; st != StatusFinished && st != StatusPublished {
					t.Errorf("container %s is %s, want it awaited until FINISHED", id, st)
				}
			}
			if n := f.callCount("publish"); n != 1 {
				t.Errorf("threads_publish sent %d times, want 1", n)
			}
			media := f.container(published).mediaID
			p := f.post(media)
			if r.RemoteID != media || p.mediaType != tt.wantType || len(p.children) != tt.wantItems || p.text != text {
				t.Errorf("receipt %q, post %+v; want %s, a %s with %d children", r.RemoteID, p, media, tt.wantType, tt.wantItems)
			}
			if r.URL == "" || r.CreatedAt.IsZero() {
				t.Errorf("receipt %+v lacks the permalink or time", r)
			}
		})
	}
}

// TestPublishMediaRefusedBeforeSending: what Threads would refuse, or
// what this adapter cannot send, is Rejected without a request.
func TestPublishMediaRefusedBeforeSending(t *testing.T) {
	with := func(edit func(m []platform.MediaUpload)) []platform.MediaUpload {
		m := images(2)
		edit(m)
		return m
	}
	tests := []struct {
		name   string
		req    platform.PublishRequest
		reason string
	}{
		{"no URL (bytes only)", platform.PublishRequest{Text: "x", Media: with(func(m []platform.MediaUpload) { m[1].URL, m[1].Data = "", []byte("jpeg") })}, ReasonMediaNeedsURL},
		{"relative URL", platform.PublishRequest{Text: "x", Media: with(func(m []platform.MediaUpload) { m[0].URL = "/p/0.jpg?X-Amz-Signature=" + urlSignature })}, ReasonMediaNeedsURL},
		{"ftp URL", platform.PublishRequest{Text: "x", Media: with(func(m []platform.MediaUpload) { m[0].URL = "ftp://media.example/0.jpg" })}, ReasonMediaNeedsURL},
		{"media ids", platform.PublishRequest{Text: "x", Media: images(1), MediaIDs: []string{"m1"}}, ReasonMediaUnsupported},
		{"21 images", platform.PublishRequest{Text: "x", Media: images(21)}, ReasonTooManyMedia},
		// https://developers.facebook.com/docs/threads/posts, Image
		// Specifications: "JPEG and PNG image types are the officially
		// supported formats".
		{"gif", platform.PublishRequest{Text: "x", Media: with(func(m []platform.MediaUpload) { m[1].ContentType = "image/gif" })}, ReasonMediaFormat},
		{"no type, .webp name", platform.PublishRequest{Text: "x", Media: with(func(m []platform.MediaUpload) { m[1].ContentType, m[1].Filename = "", "a.webp" })}, ReasonMediaFormat},
		// https://developers.facebook.com/docs/threads/reference/publishing:
		// "The maximum length of alt_text is 1,000 characters".
		{"alt text of 1001 characters", platform.PublishRequest{Text: "x", Media: with(func(m []platform.MediaUpload) { m[0].Alt = strings.Repeat("é", 1001) })}, ReasonAltTooLong},
		{"text of 501 characters", platform.PublishRequest{Text: strings.Repeat("a", 501), Media: images(1)}, ReasonTextTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { refusedUnsent(t, tt.req, tt.reason) })
	}
	t.Run("no text, alt text of 1000, PNG named by its file", func(t *testing.T) {
		f, c := fakeClient(t)
		m := images(2)
		m[0].Alt = strings.Repeat("é", 1000)
		m[1].ContentType, m[1].Filename = "", "chart.PNG"
		if _, err := c.Publish(context.Background(), platform.PublishRequest{Media: m}); err != nil {
			t.Fatalf("Publish: %v", recorded(err))
		}
		if _, published, _ := f.counts(); published != 1 {
			t.Errorf("fake published %d posts, want 1", published)
		}
	})
}

// recorded records err for TestMain's check and returns it.
func recorded(err error) error {
	recordErr(err)
	return err
}

// TestPublishMediaLostAnswerThenLookup: threads_publish of a carousel
// commits and answers 500. Publish is Ambiguous and sends nothing more;
// Lookup with the recorded CAROUSEL container sees PUBLISHED and finds
// the post by its text and three attachments, among threads of the same
// text with other counts; without the container the same thread is only
// a look-alike (Inconclusive); a Resume does not publish again.
func TestPublishMediaLostAnswerThenLookup(t *testing.T) {
	const text = "Three photos\r\nfrom the launch  "
	f := newFake(t)
	f.addMediaPost("Three photos\nfrom the launch", 2) // same text, two images: another post
	f.addPost("Three photos\nfrom the launch", "TEXT_POST")
	f.after = publishAnswers500
	srv := newServer(t, f)
	c := newClient(t, srv.URL)
	cp := &recorder{f: f}
	_, err := c.Publish(context.Background(), platform.PublishRequest{Text: text, Media: images(3), Checkpoint: cp.checkpoint})
	if diff := cmp.Diff(outcome{Class: "ambiguous", Status: 500}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("publish outcome (-want +got):\n%s", diff)
	}
	if _, published, _ := f.counts(); published != 1 || f.callCount("publish") != 1 {
		t.Fatalf("fake published %d posts on %d calls, want 1 and 1", published, f.callCount("publish"))
	}
	if len(cp.handles) != 2 || !strings.HasPrefix(cp.handles[0], "items:") {
		t.Fatalf("checkpoints %v, want the items, then the carousel", cp.handles)
	}
	carousel := cp.handles[1]
	media := f.container(carousel).mediaID
	q := platform.LookupQuery{Checkpoint: carousel, Fingerprint: mediaFingerprint(text, 3), Text: text, MediaCount: 3, NotBefore: fixedNow}

	p, found, err := c.Lookup(context.Background(), q)
	if diff := cmp.Diff(outcome{Class: "ok"}, outcomeOf(t, err)); diff != "" || !found {
		t.Fatalf("Lookup found %v, outcome (-want +got):\n%s", found, diff)
	}
	if p.RemoteID != media || len(p.MediaIDs) != 3 {
		t.Errorf("Lookup found %s with %d attachments, want %s with 3", p.RemoteID, len(p.MediaIDs), media)
	}

	q.Checkpoint = ""
	_, found, err = c.Lookup(context.Background(), q)
	if diff := cmp.Diff(outcome{Class: "inconclusive"}, outcomeOf(t, err)); diff != "" || found {
		t.Errorf("Lookup without the container found %v, outcome (-want +got):\n%s", found, diff)
	}

	f.after = nil
	r, err := c.Publish(context.Background(), platform.PublishRequest{Text: text, Media: images(3), Resume: carousel, Checkpoint: cp.checkpoint})
	if diff := cmp.Diff(outcome{Class: "ok"}, outcomeOf(t, err)); diff != "" || r.RemoteID != media {
		t.Errorf("Resume = %q, want %s; outcome (-want +got):\n%s", r.RemoteID, media, diff)
	}
	if n := f.callCount("publish"); n != 1 {
		t.Errorf("threads_publish sent %d times in all, want exactly 1", n)
	}
	if n := f.postCount(); n != 3 {
		t.Errorf("fake stores %d posts, want the 2 others and ours", n)
	}
}

// TestPublishMediaResumePublished: a Resume whose container (IMAGE or
// CAROUSEL) is PUBLISHED sends no create and no publish; its receipt is
// the one thread of the same text and image count, and two such threads
// are Ambiguous.
func TestPublishMediaResumePublished(t *testing.T) {
	const text = "resumed album"
	tests := []struct {
		name  string
		n     int
		setup func(f *fakeThreads, n int) (container, media string)
		want  outcome
	}{
		{"PUBLISHED carousel returns its post", 3, func(f *fakeThreads, n int) (string, string) {
			f.addMediaPost(text, 2)
			c, m := f.publishedMediaContainer(text, n)
			f.addMediaPost("newer", n)
			return c, m
		}, outcome{Class: "ok"}},
		{"PUBLISHED image returns its post", 1, func(f *fakeThreads, n int) (string, string) {
			f.addPost(text, "TEXT_POST")
			return f.publishedMediaContainer(text, n)
		}, outcome{Class: "ok"}},
		{"two look-alikes are ambiguous", 3, func(f *fakeThreads, n int) (string, string) {
			f.addMediaPost(text, n)
			c, _ := f.publishedMediaContainer(text, n)
			return c, ""
		}, outcome{Class: "ambiguous"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := fakeClient(t)
			container, media := tt.setup(f, tt.n)
			before := f.postCount()
			cp := &recorder{f: f}
			r, err := c.Publish(context.Background(), platform.PublishRequest{Text: text, Media: images(tt.n), Resume: container, Checkpoint: cp.checkpoint})
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s", diff)
			}
			if r.RemoteID != media {
				t.Errorf("receipt %q, want %q", r.RemoteID, media)
			}
			if f.callCount("create") != 0 || f.callCount("publish") != 0 || len(cp.handles) != 0 || f.postCount() != before {
				t.Errorf("Resume sent %d creates and %d publishes, checkpointed %v; want nothing", f.callCount("create"), f.callCount("publish"), cp.handles)
			}
		})
	}
}

// TestPublishMediaContainerFails: a create that fails before
// threads_publish publishes nothing and records no container. A lost
// answer (committed, then 500 or no answer) is Ambiguous, as the text
// container's: the write may have made a container, invisible and
// unpublishable, and a Lookup without a container then finds no post, so
// the confirm loop releases the entry for a new attempt. A refusal or a
// throttle is classified as any write.
func TestPublishMediaContainerFails(t *testing.T) {
	const text = "album that fails"
	type answer func(w http.ResponseWriter, r *http.Request)
	status := func(s, code int) answer {
		return func(w http.ResponseWriter, _ *http.Request) {
			graphErr(w, s, code, 0, "OAuthException", "failed in the test")
		}
	}
	silent := func(w http.ResponseWriter, r *http.Request) { blockUntilGone(t, r) }
	tests := []struct {
		name string
		// nth create fails (2: the second item; 4: the CAROUSEL), after
		// the fake committed it or before.
		nth       int
		committed bool
		answer    answer
		want      outcome
	}{
		{"item 2 committed then 500", 2, true, status(500, 2), outcome{Class: "ambiguous", Status: 500}},
		{"item 2 committed then no answer", 2, true, silent, outcome{Class: "ambiguous"}},
		{"item 2 refused, code 100", 2, false, status(400, 100), outcome{Class: "rejected", Status: 400, Reason: ReasonInvalidParameter}},
		{"item 2 throttled, code 4", 2, false, status(400, 4), outcome{Class: "not_performed", Status: 400, RetryAfter: time.Hour}},
		{"carousel committed then 502", 4, true, status(502, 0), outcome{Class: "ambiguous", Status: 502}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			var creates atomic.Int32
			hook := func(route string, w http.ResponseWriter, r *http.Request) bool {
				if route != "create" || int(creates.Add(1)) != tt.nth {
					return false
				}
				tt.answer(w, r)
				return true
			}
			if tt.committed {
				f.after = func(route, _ string, w http.ResponseWriter, r *http.Request) bool { return hook(route, w, r) }
			} else {
				f.before = hook
			}
			srv := newServer(t, f)
			c := newClient(t, srv.URL)
			cp := &recorder{f: f}
			_, err := c.Publish(shortCtx(t, 300*time.Millisecond), platform.PublishRequest{Text: text, Media: images(3), Checkpoint: cp.checkpoint})
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s", diff)
			}
			// The items are recorded once all three are made, before the
			// CAROUSEL container is; nothing else is.
			wantHandles := 0
			if tt.nth == 4 {
				wantHandles = 1
			}
			if f.callCount("publish") != 0 || f.postCount() != 0 || len(cp.handles) != wantHandles {
				t.Errorf("%d publish calls, %d posts, checkpoints %v; want none, none, %d", f.callCount("publish"), f.postCount(), cp.handles, wantHandles)
			}
			if wantHandles == 1 {
				if made := f.madeContainers(); cp.handles[0] != "items:"+strings.Join(made[:3], ",") {
					t.Errorf("checkpoint %q, want the items %v", cp.handles[0], made[:3])
				}
			}
			if tt.nth < 4 && f.callCount("create") != tt.nth {
				t.Errorf("%d creates, want %d: nothing after the failed item", f.callCount("create"), tt.nth)
			}
			if tt.want.Class != "ambiguous" {
				return
			}
			// The confirm loop's look, with what the entry recorded.
			var recordedCheckpoint string
			if len(cp.handles) > 0 {
				recordedCheckpoint = cp.handles[len(cp.handles)-1]
			}
			_, found, err := c.Lookup(context.Background(), platform.LookupQuery{Checkpoint: recordedCheckpoint, Fingerprint: mediaFingerprint(text, 3), Text: text, MediaCount: 3, NotBefore: fixedNow})
			if diff := cmp.Diff(outcome{Class: "ok"}, outcomeOf(t, err)); diff != "" || found {
				t.Errorf("Lookup after the failure found %v, outcome (-want +got):\n%s", found, diff)
			}
		})
	}
}

// TestPublishMediaErrorStatus: a container Threads could not process
// (status ERROR, https://developers.facebook.com/docs/threads/troubleshooting)
// is Rejected with its error_message; nothing is published.
func TestPublishMediaErrorStatus(t *testing.T) {
	tests := []struct {
		name           string
		n              int
		wantContainers int
		// wantCheckpoint is the prefix of the one handle recorded: the
		// IMAGE container's bare id, or the items.
		wantCheckpoint string
	}{
		{"one image", 1, 1, "178"},
		{"second item of three", 3, 3, "items:178"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := fakeClient(t)
			f.brokenImage = "/p/1.jpg"
			if tt.n == 1 {
				f.brokenImage = "/p/0.jpg"
			}
			cp := &recorder{f: f}
			_, err := c.Publish(context.Background(), platform.PublishRequest{Text: "broken", Media: images(tt.n), Checkpoint: cp.checkpoint})
			if diff := cmp.Diff(outcome{Class: "rejected", Reason: ReasonMediaFailed}, outcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s", diff)
			}
			if !strings.Contains(err.Error(), "INVALID_ASPEC_RATIO") {
				t.Errorf("error %q does not carry Meta's error_message", err)
			}
			if containers, published, _ := f.counts(); containers != tt.wantContainers || published != 0 || f.callCount("publish") != 0 {
				t.Errorf("fake made %d containers and %d posts, want %d and 0", containers, published, tt.wantContainers)
			}
			if len(cp.handles) != 1 || !strings.HasPrefix(cp.handles[0], tt.wantCheckpoint) {
				t.Errorf("checkpoints %v, want one starting %q", cp.handles, tt.wantCheckpoint)
			}
		})
	}
}

// TestPublishMediaStillProcessing: a container still IN_PROGRESS when the
// wait ends (its budget, or ctx) is NotPerformed for a minute, with the
// container recorded and not published; the next attempt resumes it once
// it is FINISHED, without a new container.
func TestPublishMediaStillProcessing(t *testing.T) {
	tests := []struct {
		name   string
		budget time.Duration
		ctx    func(t *testing.T) context.Context
		// stuckRead: the second status read gets no answer until ctx ends.
		stuckRead bool
	}{
		{"budget ends", 30 * time.Millisecond, func(*testing.T) context.Context { return context.Background() }, false},
		{"ctx ends", time.Minute, func(t *testing.T) context.Context { return shortCtx(t, 50*time.Millisecond) }, false},
		{"ctx ends during a status read", time.Minute, func(t *testing.T) context.Context { return shortCtx(t, 200*time.Millisecond) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := fakeClient(t)
			f.processingReads = 1 << 30
			c.poll.budget = tt.budget
			var reads atomic.Int32
			if tt.stuckRead {
				f.before = func(route string, _ http.ResponseWriter, r *http.Request) bool {
					if route != "get" || reads.Add(1) != 2 {
						return false
					}
					blockUntilGone(t, r)
					return true
				}
			}
			cp := &recorder{f: f}
			req := platform.PublishRequest{Text: "slow image", Media: images(1), Checkpoint: cp.checkpoint}
			_, err := c.Publish(tt.ctx(t), req)
			if diff := cmp.Diff(outcome{Class: "not_performed", RetryAfter: time.Minute}, outcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s", diff)
			}
			if len(cp.handles) != 1 || f.callCount("publish") != 0 {
				t.Fatalf("checkpoints %v, %d publish calls; want the container recorded, nothing published", cp.handles, f.callCount("publish"))
			}
			if n := f.callCount("get"); n < 2 {
				t.Errorf("status read %d times, want it polled", n)
			}
			f.mu.Lock()
			f.containers[cp.handles[0]].processing = 0
			f.mu.Unlock()
			req.Resume = cp.handles[0]
			if _, err := c.Publish(context.Background(), req); err != nil {
				t.Fatalf("resumed Publish: %v", recorded(err))
			}
			if containers, published, _ := f.counts(); containers != 1 || published != 1 {
				t.Errorf("fake made %d containers and %d posts, want 1 and 1", containers, published)
			}
		})
	}
}

// TestPollDeadline: the wait for containers ends after its budget, and
// early enough before ctx's deadline to leave time for threads_publish.
func TestPollDeadline(t *testing.T) {
	c := newClient(t, "")
	c.poll = pollConfig{budget: time.Hour, reserve: 3 * time.Second}
	deadline := time.Now().Add(10 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if got, want := c.pollDeadline(ctx), deadline.Add(-3*time.Second); !got.Equal(want) {
		t.Errorf("with a 10 s ctx: %s, want 3 s before its deadline (%s)", got, want)
	}
	start := time.Now()
	if got := c.pollDeadline(context.Background()); got.Before(start.Add(time.Hour)) || got.After(time.Now().Add(time.Hour)) {
		t.Errorf("without a deadline: %s, want an hour from now", got)
	}
}

// TestLookupMedia matches a post with images by text and count only when
// its container says PUBLISHED
// (https://developers.facebook.com/docs/threads/troubleshooting), among
// threads listed with their children
// (https://developers.facebook.com/docs/threads/retrieve-and-discover-posts/retrieve-posts).
func TestLookupMedia(t *testing.T) {
	const text = "Album\nof the week"
	tests := []struct {
		name string
		// setup returns the container ("" for none) and the post to find.
		setup     func(f *fakeThreads) (container, media string)
		n         int
		want      outcome
		wantFound bool
	}{
		{"PUBLISHED, one thread of that text and count", func(f *fakeThreads) (string, string) {
			f.addMediaPost(text, 2)
			f.addMediaPost(text+" (2)", 3)
			f.addPost(text, "TEXT_POST")
			c, m := f.publishedMediaContainer(text, 3)
			f.addMediaPost("later", 3)
			return c, m
		}, 3, outcome{Class: "ok"}, true},
		{"PUBLISHED image", func(f *fakeThreads) (string, string) {
			f.addMediaPost(text, 2)
			return f.publishedMediaContainer(text, 1)
		}, 1, outcome{Class: "ok"}, true},
		{"PUBLISHED, two threads of that text and count", func(f *fakeThreads) (string, string) {
			f.addMediaPost(text, 3)
			c, _ := f.publishedMediaContainer(text, 3)
			return c, ""
		}, 3, outcome{Class: "inconclusive"}, false},
		{"PUBLISHED, its thread has another count", func(f *fakeThreads) (string, string) {
			c, m := f.publishedMediaContainer(text, 3)
			f.mu.Lock()
			f.posts[0].children = f.posts[0].children[:2]
			f.mu.Unlock()
			_ = m
			return c, ""
		}, 3, outcome{Class: "inconclusive"}, false},
		{"FINISHED is not found, whatever is listed", func(f *fakeThreads) (string, string) {
			f.addMediaPost(text, 3)
			return f.addContainer(text, StatusFinished), ""
		}, 3, outcome{Class: "ok"}, false},
		{"no container, a thread of that text and count", func(f *fakeThreads) (string, string) {
			f.addMediaPost(text, 3)
			return "", ""
		}, 3, outcome{Class: "inconclusive"}, false},
		{"no container, only other counts and a text post", func(f *fakeThreads) (string, string) {
			f.addMediaPost(text, 2)
			f.addPost(text, "TEXT_POST")
			return "", ""
		}, 3, outcome{Class: "ok"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := fakeClient(t)
			container, media := tt.setup(f)
			p, found, err := c.Lookup(context.Background(), platform.LookupQuery{
				Checkpoint: container, Fingerprint: mediaFingerprint(text, tt.n), Text: text, MediaCount: tt.n, NotBefore: fixedNow,
			})
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s", diff)
			}
			if found != tt.wantFound || p.RemoteID != media {
				t.Fatalf("found %v %q, want %v %q", found, p.RemoteID, tt.wantFound, media)
			}
			if found {
				want := f.post(media).children
				if tt.n == 1 {
					want = []string{media}
				}
				if diff := cmp.Diff(want, p.MediaIDs); diff != "" {
					t.Errorf("attachment ids (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestRecentCountsAttachments: a carousel's attachments are its children,
// an image's its own id, a text post has none.
func TestRecentCountsAttachments(t *testing.T) {
	f, c := fakeClient(t)
	f.addPost("text", "TEXT_POST")
	img := f.addMediaPost("one", 1)
	album := f.addMediaPost("four", 4)
	got, err := c.Recent(context.Background(), 3)
	if err != nil {
		t.Fatalf("Recent: %v", recorded(err))
	}
	counts := map[string][]string{}
	for _, p := range got {
		counts[p.Text] = p.MediaIDs
	}
	want := map[string][]string{"text": nil, "one": {img}, "four": f.post(album).children}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("attachment ids by text (-want +got):\n%s", diff)
	}
}

// TestChildrenDecoding reads a carousel's children as the Graph API
// answers an edge ({"data":[…]}), as a bare list, and leaves them unknown
// (never failing the page) otherwise.
func TestChildrenDecoding(t *testing.T) {
	tests := []struct {
		body      string
		wantIDs   []string
		wantKnown bool
	}{
		{`{"id":"9","media_type":"CAROUSEL_ALBUM","children":{"data":[{"id":"1"},{"id":"2"}]}}`, []string{"1", "2"}, true},
		{`{"id":"9","media_type":"CAROUSEL_ALBUM","children":[{"id":"1"},{"id":"2"},{"id":"3"}]}`, []string{"1", "2", "3"}, true},
		{`{"id":"9","media_type":"CAROUSEL_ALBUM","children":"odd"}`, []string{"9"}, false},
		{`{"id":"9","media_type":"CAROUSEL_ALBUM"}`, []string{"9"}, false},
		{`{"id":"9","media_type":"IMAGE"}`, []string{"9"}, true},
		{`{"id":"9","media_type":"TEXT_POST"}`, nil, true},
	}
	for _, tt := range tests {
		var th thread
		if err := json.Unmarshal([]byte(tt.body), &th); err != nil {
			t.Errorf("%s: %v", tt.body, err)
			continue
		}
		ids, known := th.attachments()
		if diff := cmp.Diff(tt.wantIDs, ids); diff != "" || known != tt.wantKnown {
			t.Errorf("%s: known %v (want %v), ids (-want +got):\n%s", tt.body, known, tt.wantKnown, diff)
		}
	}
}

// TestNoSignedURLInErrors drives media publishes into answers that echo
// the request (its form, with image_url, and its token) into the Graph
// error, 5xx included, and into an ERROR status whose error_message
// quotes the image's URL; no error may carry the URL's signing
// parameters or the token.
func TestNoSignedURLInErrors(t *testing.T) {
	echo := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if err := r.ParseForm(); err != nil {
				t.Errorf("parse form: %v", err)
			}
			graphErr(w, status, 24, 0, "OAuthException", fmt.Sprintf("cannot fetch %s (form %s, raw %q, auth %s)",
				r.PostForm.Get("image_url"), r.PostForm.Encode(), r.PostForm.Get("children"), r.Header.Get("Authorization")))
		}
	}
	var (
		mu   sync.Mutex
		last string
	)
	errorStatus := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Errorf("parse form: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodPost {
			last = r.PostForm.Get("image_url")
			writeJSON(w, http.StatusOK, map[string]any{"id": "17800000000000001"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": "17800000000000001", "status": "ERROR", "error_message": "FAILED_DOWNLOADING " + last + " " + url.QueryEscape(last)})
	})
	dropped := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { adaptertest.HijackClose(t, w) })
	calls := map[string]platform.PublishRequest{
		"one image":   {Text: "x", Media: images(1)},
		"three":       {Text: "x", Media: images(3)},
		"resume":      {Text: "x", Media: images(2), Resume: "17800000000000009"},
		"bad URL":     {Text: "x", Media: []platform.MediaUpload{{ContentType: "image/jpeg", URL: "://" + signedURL(0)}}},
		"bad type":    {Text: "x", Media: []platform.MediaUpload{{ContentType: "image/gif;name=" + signedURL(0), URL: signedURL(0)}}},
		"media bytes": {Text: "x", Media: []platform.MediaUpload{{ContentType: "image/jpeg", Data: []byte(signedURL(0))}}},
	}
	var checked adaptertest.Errors
	for name, h := range map[string]http.Handler{"echo": echo(http.StatusBadRequest), "echo 5xx": echo(http.StatusInternalServerError), "error status": errorStatus, "dropped": dropped} {
		srv := newServer(t, h)
		for call, req := range calls {
			c := newClient(t, srv.URL, func(cfg *Config) { cfg.Credential = platform.Credential{AccessToken: hostileToken} })
			_, err := c.Publish(context.Background(), req)
			if err == nil {
				t.Errorf("%s/%s: no error", name, call)
				continue
			}
			recordErr(checked.Add(err))
		}
	}
	checked.CheckNoSecrets(t, urlSignature, urlCredential, hostileToken)
	if n := checked.Len(); n < 20 {
		t.Errorf("checked %d errors, want the whole battery", n)
	}
}

// TestMediaSecretsRedact: every part of a signed URL that an answer could
// quote is replaced, however the answer encodes it, and the class stays.
func TestMediaSecretsRedact(t *testing.T) {
	u := signedURL(7)
	parsed, _ := url.Parse(u)
	for _, text := range []string{u, url.QueryEscape(u), parsed.RawQuery, parsed.Query().Get("X-Amz-Credential"), "sig=" + urlSignature} {
		err := redactMedia(&platform.Rejected{Status: 400, Reason: "http_400", Message: "bad " + text}, images(8))
		adaptertest.CheckErrorNoSecrets(t, err, urlSignature, urlCredential)
		var rej *platform.Rejected
		if !errors.As(err, &rej) || rej.Status != 400 {
			t.Errorf("redacted %v lost its class", err)
		}
	}
	if err := redactMedia(nil, images(1)); err != nil {
		t.Errorf("redactMedia(nil) = %v", err)
	}
}

// TestPublishMediaResumeError: an IMAGE or CAROUSEL container of an
// earlier attempt that Threads could not process (status ERROR,
// https://developers.facebook.com/docs/threads/troubleshooting) is
// Rejected on Resume with Meta's error_message, as when it is awaited,
// and nothing is made or sent. An image both slow and broken (its first
// call's wait runs out: NotPerformed, the container recorded) thus fails
// as media_processing_failed on the next attempt, instead of getting a
// new container, and the same wait, on every attempt until the
// publisher's throttle limit fails it for the wrong reason.
func TestPublishMediaResumeError(t *testing.T) {
	t.Run("slow and broken image", func(t *testing.T) {
		f, c := fakeClient(t)
		f.brokenImage = "/p/0.jpg"
		f.processingReads = 1 << 30
		c.poll.budget = 30 * time.Millisecond
		cp := &recorder{f: f}
		req := platform.PublishRequest{Text: "slow and broken", Media: images(1), Checkpoint: cp.checkpoint}
		_, err := c.Publish(context.Background(), req)
		if diff := cmp.Diff(outcome{Class: "not_performed", RetryAfter: time.Minute}, outcomeOf(t, err)); diff != "" || len(cp.handles) != 1 {
			t.Fatalf("first call: checkpoints %v, outcome (-want +got):\n%s", cp.handles, diff)
		}
		f.setProcessing(cp.handles[0], 0) // the next read answers ERROR
		req.Resume = cp.handles[0]
		_, err = c.Publish(context.Background(), req)
		if diff := cmp.Diff(outcome{Class: "rejected", Reason: ReasonMediaFailed}, outcomeOf(t, err)); diff != "" {
			t.Fatalf("resume (-want +got):\n%s", diff)
		}
		if !strings.Contains(err.Error(), f.brokenMessage) {
			t.Errorf("error %q does not carry Meta's error_message", err)
		}
		if containers, published, _ := f.counts(); containers != 1 || published != 0 || len(cp.handles) != 1 || f.callCount("publish") != 0 {
			t.Errorf("made %d containers, %d posts on %d publishes, checkpoints %v; want the first container only", containers, published, f.callCount("publish"), cp.handles)
		}
	})
	t.Run("carousel container", func(t *testing.T) {
		f, c := fakeClient(t)
		container := f.addContainer("album", StatusError)
		f.setErrorMessage(container, f.brokenMessage)
		cp := &recorder{f: f}
		_, err := c.Publish(context.Background(), platform.PublishRequest{Text: "album", Media: images(3), Resume: container, Checkpoint: cp.checkpoint})
		if diff := cmp.Diff(outcome{Class: "rejected", Reason: ReasonMediaFailed}, outcomeOf(t, err)); diff != "" {
			t.Fatalf("outcome (-want +got):\n%s", diff)
		}
		if !strings.Contains(err.Error(), f.brokenMessage) || !strings.Contains(err.Error(), container) {
			t.Errorf("error %q does not name the container and carry Meta's error_message", err)
		}
		if f.callCount("create") != 0 || f.callCount("publish") != 0 || len(cp.handles) != 0 {
			t.Errorf("%d creates, %d publishes, checkpoints %v; want nothing", f.callCount("create"), f.callCount("publish"), cp.handles)
		}
	})
}

// TestPublishMediaResumePublishedWindow: a Resume whose container is
// PUBLISHED takes as its post only a thread created since the entry's
// slot (PublishRequest.CreatedAt; posts are sent at or after it) less a
// few minutes of clock skew: an older thread of the same text and image
// count is not ours, whether it is the only one or listed with ours. A
// look-alike within the skew still makes it Ambiguous.
func TestPublishMediaResumePublishedWindow(t *testing.T) {
	const text = "weekly album"
	slot := fixedNow.Add(24 * time.Hour)
	tests := []struct {
		name string
		// setup returns the container and the post the receipt must name.
		setup func(f *fakeThreads) (container, media string)
		want  outcome
	}{
		{"only an older look-alike is listed", func(f *fakeThreads) (string, string) {
			f.setClock(slot.Add(-time.Hour))
			f.addMediaPost(text, 3)
			f.setClock(slot)
			c, m := f.publishedMediaContainer(text, 3)
			f.dropPost(m)
			return c, ""
		}, outcome{Class: "ambiguous"}},
		{"ours and an older look-alike", func(f *fakeThreads) (string, string) {
			f.setClock(slot.Add(-time.Hour))
			f.addMediaPost(text, 3)
			f.setClock(slot)
			return f.publishedMediaContainer(text, 3)
		}, outcome{Class: "ok"}},
		{"ours and a look-alike within the clock skew", func(f *fakeThreads) (string, string) {
			f.setClock(slot.Add(-2 * time.Minute))
			f.addMediaPost(text, 3)
			c, _ := f.publishedMediaContainer(text, 3)
			return c, ""
		}, outcome{Class: "ambiguous"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := fakeClient(t)
			container, media := tt.setup(f)
			r, err := c.Publish(context.Background(), platform.PublishRequest{Text: text, Media: images(3), CreatedAt: slot, Resume: container})
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s", diff)
			}
			if r.RemoteID != media {
				t.Errorf("receipt %q, want %q", r.RemoteID, media)
			}
			if f.callCount("create") != 0 || f.callCount("publish") != 0 {
				t.Errorf("%d creates, %d publishes; want none", f.callCount("create"), f.callCount("publish"))
			}
		})
	}
}

// oldSignature signs the image URL of an earlier attempt, which the
// current request does not carry (so redactMedia does not know it), and
// which Meta's error_message may quote; no error may contain it
// (secretValues).
const oldSignature = "5ca1ab1e0ddba11deadbeef"

// oldSignedURL is an earlier attempt's presigned URL of image 0.
const oldSignedURL = "https://oncepost-media.s3.eu-west-1.amazonaws.com/p/0.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=900&X-Amz-Signature=" + oldSignature

// TestStripURLQueries: the query (and fragment) of every http(s) URL in a
// text, as is or percent-encoded, is replaced; the rest is kept.
func TestStripURLQueries(t *testing.T) {
	tests := []struct{ in, want string }{
		{"FAILED_DOWNLOADING " + oldSignedURL, "FAILED_DOWNLOADING https://oncepost-media.s3.eu-west-1.amazonaws.com/p/0.jpg?[redacted]"},
		{"(" + oldSignedURL + ") and " + oldSignedURL + "\tagain", "(https://oncepost-media.s3.eu-west-1.amazonaws.com/p/0.jpg?[redacted] and https://oncepost-media.s3.eu-west-1.amazonaws.com/p/0.jpg?[redacted]\tagain"},
		{`url "` + oldSignedURL + `" refused`, `url "https://oncepost-media.s3.eu-west-1.amazonaws.com/p/0.jpg?[redacted]" refused`},
		{"encoded " + url.QueryEscape(oldSignedURL), "encoded https%3A%2F%2Foncepost-media.s3.eu-west-1.amazonaws.com%2Fp%2F0.jpg?[redacted]"},
		{"HTTP://Host.example/a#frag" + oldSignature, "HTTP://Host.example/a?[redacted]"},
		{"https://proxy.example/f?u=" + url.QueryEscape(oldSignedURL), "https://proxy.example/f?[redacted]"},
		{"no query https://host.example/p/0.jpg, none here", "no query https://host.example/p/0.jpg, none here"},
		{"INVALID_ASPEC_RATIO", "INVALID_ASPEC_RATIO"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := stripURLQueries(tt.in); got != tt.want {
			t.Errorf("stripURLQueries(%q)\n = %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// TestErrorTextsStripURLQueries: Meta's texts that reach errors (a
// container's error_message, a Graph error's message) lose the query of
// any URL they quote, so an earlier attempt's presigned URL never reaches
// a ledger reason or a log; end to end, a resumed image container in
// ERROR whose error_message quotes one.
func TestErrorTextsStripURLQueries(t *testing.T) {
	quoted := "FAILED_DOWNLOADING " + oldSignedURL + " " + url.QueryEscape(oldSignedURL)
	st := containerState{ID: "1", Status: StatusError, ErrorMessage: quoted}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "cannot fetch " + quoted, "code": 24}})
	for name, text := range map[string]string{
		"errorMessage":             errorMessage(st),
		"containerState.describe":  st.describe(),
		"describe (a Graph error)": describe(&httpcall.Response{Status: http.StatusBadRequest, Body: body}, nil),
	} {
		if strings.Contains(text, oldSignature) || !strings.Contains(text, "FAILED_DOWNLOADING") || !strings.Contains(text, "oncepost-media.s3.eu-west-1.amazonaws.com") {
			t.Errorf("%s = %q; want Meta's text and the host, without the query", name, text)
		}
	}

	f, c := fakeClient(t)
	container := f.addContainer("x", StatusError)
	f.setErrorMessage(container, quoted)
	_, err := c.Publish(context.Background(), platform.PublishRequest{Text: "x", Media: images(1), Resume: container})
	if diff := cmp.Diff(outcome{Class: "rejected", Reason: ReasonMediaFailed}, outcomeOf(t, err)); diff != "" {
		t.Fatalf("outcome (-want +got):\n%s", diff)
	}
	if strings.Contains(err.Error(), oldSignature) || !strings.Contains(err.Error(), "FAILED_DOWNLOADING") {
		t.Errorf("error %q; want Meta's error_message without the URL's query", err)
	}
}

// A container this call made that reads PUBLISHED while it is awaited
// (something published it: an older attempt that outlived its lease, or
// Meta's own doing) is Ambiguous, never published again: for an IMAGE
// container and for a carousel's item.
func TestPublishMediaContainerPublishedWhileAwaited(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d images", n), func(t *testing.T) {
			f, c := fakeClient(t)
			f.before = func(route string, _ http.ResponseWriter, r *http.Request) bool {
				if route != "get" {
					return false
				}
				f.mu.Lock()
				defer f.mu.Unlock()
				for id, ct := range f.containers {
					if strings.HasSuffix(r.URL.Path, "/"+id) {
						ct.status, ct.processing = StatusPublished, 0
					}
				}
				return false
			}
			cp := &recorder{f: f}
			_, err := c.Publish(context.Background(), platform.PublishRequest{Text: "x", Media: images(n), Checkpoint: cp.checkpoint})
			if got := outcomeOf(t, err); got.Class != "ambiguous" {
				t.Errorf("outcome = %+v, want ambiguous", got)
			}
			if k := f.callCount("publish"); k != 0 {
				t.Errorf("%d publish calls, want none", k)
			}
		})
	}
}
