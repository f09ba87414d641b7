package publishing_test

import (
	"context"
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
