package publishing_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// writeCounting counts the platform writes its clients make.
type writeCounting struct {
	publishing.Platforms
	creates, uploads atomic.Int32
}

func (w *writeCounting) Client(ctx context.Context, a post.Account, c platform.Credential) (platform.Client, error) {
	cl, err := w.Platforms.Client(ctx, a, c)
	return writeCountingClient{Client: cl, w: w}, err
}

type writeCountingClient struct {
	platform.Client
	w *writeCounting
}

func (c writeCountingClient) Publish(ctx context.Context, r platform.PublishRequest) (platform.Receipt, error) {
	c.w.creates.Add(1)
	return c.Client.Publish(ctx, r)
}

func (c writeCountingClient) UploadMedia(ctx context.Context, m platform.MediaUpload) (platform.MediaReceipt, error) {
	c.w.uploads.Add(1)
	return c.Client.UploadMedia(ctx, m)
}

// A job that spent its invocation's time before the create (reads, a
// refresh, uploads) must not send it with the little time left: the
// create would time out after the platform stored it, and the job would
// make its own unknown outcome (a person's decision on a platform that
// cannot be read back). Nothing is sent, no attempt is spent, and the job
// comes back.
func TestNoWriteWithoutTheTimeToFinishIt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		media bool
	}{
		{"create", false},
		{"upload", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, sandbox.Options{DisableIdempotency: true})
			counted := &writeCounting{Platforms: mastodonPlatforms}
			e.pub.Platforms = counted
			// The platform stores the post, then answers late.
			e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayAfterCommit, Delay: 8 * unit})
			var media []post.Media
			if tc.media {
				img := []byte("\x89PNG late in the invocation")
				e.media["late.png"] = img
				media = append(media, post.Media{Ref: "late.png", SHA256: sha256hex(img), ContentType: "image/png"})
			}
			job := e.schedule("late-"+tc.name, "Sent with too little time left.", media...)
			// What is left of the invocation covers the call (10 units)
			// or its recording (10 units), not both.
			ctx, cancel := context.WithTimeout(context.Background(), 15*unit)
			defer cancel()
			out, err := e.pub.Publish(ctx, job)
			if err != nil {
				t.Fatalf("publish: %v", err)
			}
			if out.Result != publishing.Retry || out.RetryAfter <= 0 {
				t.Errorf("outcome %+v, want retry, put back after a delay", out)
			}
			if n, u := counted.creates.Load(), counted.uploads.Load(); n != 0 || u != 0 {
				t.Errorf("%d creates and %d uploads sent with %s left, want none", n, u, 15*unit)
			}
			en := e.entry(job)
			if en.State != ledger.Released || en.MaybeSent != 0 || !en.DeferredSince.IsZero() {
				t.Errorf("entry %s maybe_sent %d deferred_since %v, want released, no attempt spent, no deferral", en.State, en.MaybeSent, en.DeferredSince)
			}
			// With the time, the next delivery sends it once.
			e.clock.Advance(time.Minute)
			if out := e.publish(job); out.Result != publishing.Published {
				t.Fatalf("next delivery = %+v, want published", out)
			}
			if st := e.sb.Stats(); st.Committed != 1 || st.Duplicates != 0 {
				t.Errorf("sandbox committed %d with %d duplicates, want 1 and 0", st.Committed, st.Duplicates)
			}
		})
	}
}

// A delivery that cannot send (its entry is unknown, a confirm workflow
// reads the platform back) must leave the account's posting budget to a
// post that can.
func TestRedeliveryThatCannotSendSpendsNoBudget(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.pub.Platforms = limitedPlatforms{Platforms: mastodonPlatforms, rates: []platform.Rate{{Count: 1, Per: time.Minute}}}
	e.sb.Script(sandbox.Fault{Kind: sandbox.Fault500AfterCommit})
	unknown := e.schedule("unknown", "Stored, answer lost.")
	if out := e.publish(unknown); out.Result != publishing.Confirming {
		t.Fatalf("first = %+v, want confirming", out)
	}
	e.clock.Advance(time.Minute) // the budget has one send again
	if out := e.publish(unknown); out.Result != publishing.Confirming {
		t.Fatalf("redelivery while unknown = %+v, want confirming, nothing sent", out)
	}
	next := e.schedule("next", "The next post.")
	if out := e.publish(next); out.Result != publishing.Published {
		t.Errorf("next post = %+v, want published: the redelivery spent the budget", out)
	}
}

// flakyMedia fails the first reads with err, then reads from m.
type flakyMedia struct {
	m     mapMedia
	err   error
	fails atomic.Int32
}

func (f *flakyMedia) ReadMedia(ctx context.Context, ref string) ([]byte, error) {
	if f.fails.Add(-1) >= 0 {
		return nil, f.err
	}
	return f.m.ReadMedia(ctx, ref)
}

// A read of an attachment that did not work this time (S3's 503 SlowDown
// after the SDK's retries, a connection reset mid-body, the deadline) is
// not a refusal: the target waits with the reason, no attempt is spent,
// and the post goes once the read works. Only a missing attachment or
// other bytes than the post names fail it (TestMissingMediaFailsWithoutSending,
// TestMediaThatCannotBeSentAsNamedFailsUnsent). A run of failed reads is
// bounded like throttling: past the limit the post fails, media_unreadable.
func TestTransientMediaReadWaits(t *testing.T) {
	for _, tc := range []struct {
		name      string
		platforms func(*[]platform.MediaUpload) publishing.Platforms
	}{
		{"upload", func(*[]platform.MediaUpload) publishing.Platforms { return mastodonPlatforms }},
		{"inline", func(got *[]platform.MediaUpload) publishing.Platforms {
			return inlinePlatforms{Platforms: mastodonPlatforms, got: got}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, sandbox.Options{})
			var inline []platform.MediaUpload
			e.pub.Platforms = tc.platforms(&inline)
			img := []byte("\x89PNG read again later")
			flaky := &flakyMedia{m: mapMedia{"later.png": img}, err: errors.New("read media later.png from s3://media: SlowDown: please reduce your request rate (503)")}
			flaky.fails.Store(2)
			e.pub.Media = flaky
			e.pub.ThrottleLimit = time.Hour
			job := e.schedule("media-later", "A photo, read again.", post.Media{Ref: "later.png", SHA256: sha256hex(img), ContentType: "image/png"})
			out := e.publish(job)
			if out.Result != publishing.Retry || out.RetryAfter <= 0 {
				t.Fatalf("publish with the store failing = %+v, want retry after a delay", out)
			}
			en := e.entry(job)
			if tg := e.target(job); tg.Status != post.Waiting || !strings.Contains(tg.Reason, "SlowDown") || !tg.NextTry.Equal(en.RetryAt) {
				t.Errorf("target %s %q next try %v, want waiting with the read's reason until %v", tg.Status, tg.Reason, tg.NextTry, en.RetryAt)
			}
			if en.State != ledger.Released || en.MaybeSent != 0 {
				t.Errorf("entry %s maybe_sent %d, want released, no attempt spent", en.State, en.MaybeSent)
			}
			e.clock.Advance(time.Minute)
			if out := e.publish(job); out.Result != publishing.Retry {
				t.Fatalf("second try, the store still failing = %+v, want retry", out)
			}
			e.clock.Advance(time.Minute)
			if out := e.publish(job); out.Result != publishing.Published {
				t.Fatalf("once the read works = %+v, want published", out)
			}

			// A read that keeps failing is bounded.
			flaky.fails.Store(1 << 20)
			stuck := e.schedule("media-never", "Another photo.", post.Media{Ref: "later.png", SHA256: sha256hex(img), ContentType: "image/png"})
			for range 3 {
				out = e.publish(stuck)
				e.clock.Advance(31 * time.Minute)
			}
			if out.Result != publishing.Failed || !strings.HasPrefix(out.Reason, publishing.ReasonMediaUnreadable) {
				t.Errorf("after an hour of failed reads = %+v, want failed %s", out, publishing.ReasonMediaUnreadable)
			}
		})
	}
}
