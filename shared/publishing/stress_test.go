package publishing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
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
			// The platform stores the post, then answers a little late.
			e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayAfterCommit, Delay: 2 * unit})
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

// unreachablePosts fails every read of a post until the clock reaches
// back: the store is down.
type unreachablePosts struct {
	*sqlitestore.Store
	now  func() time.Time
	back time.Time
}

var errStoreDown = errors.New("dial tcp: connect: connection refused (store down)")

func (u unreachablePosts) GetPost(ctx context.Context, id post.ID) (post.Post, error) {
	if u.now().Before(u.back) {
		return post.Post{}, errStoreDown
	}
	return u.Store.GetPost(ctx, id)
}

// An hour without the store (or the workflow service) costs no post and
// no dead letter: the redeliveries of a job that cannot reach the store
// are spread so that its receives (SQS's maxReceiveCount, 10 in the
// template) ride out at least an hour. Driven through the loop and a
// queue on the test's clock, delivery by delivery.
func TestStoreOutageOfAnHourDeadLettersNothing(t *testing.T) {
	const maxReceives = 10
	e := newEnv(t, sandbox.Options{})
	qs, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "queue.db"), sqlitestore.Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { qs.Close() })
	queue := qs.Queue("publish", maxReceives)
	outage := time.Hour
	e.pub.Posts = unreachablePosts{Store: e.store, now: e.clock.Now, back: e.clock.Now().Add(outage)}
	loop := &publishing.Loop{Queue: queue, Publisher: e.pub, Visibility: time.Minute, Logger: e.pub.Logger,
		MaxReceives: maxReceives, Jitter: func(time.Duration) time.Duration { return 0 }}
	job := e.schedule("through-the-outage", "Published after the store came back.")
	body, _ := json.Marshal(job)
	if _, err := queue.Send(context.Background(), body, 0); err != nil {
		t.Fatal(err)
	}
	start := e.clock.Now()
	for e.clock.Now().Sub(start) < 3*outage {
		if _, err := loop.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if e.target(job).Status == post.Published {
			break
		}
		e.clock.Advance(10 * time.Second)
	}
	dls, err := queue.DeadLetters(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 0 {
		t.Fatalf("dead-lettered %s into a %s outage: %q", dls[0].At.Sub(start).Round(time.Second), outage, dls[0].Reason)
	}
	if tg := e.target(job); tg.Status != post.Published {
		t.Fatalf("target %s %s after the store came back, want published", tg.Status, e.clock.Now().Sub(start))
	}
}

// The schedule itself: over the receives a queue allows, the delays of a
// job that cannot reach the store add up to at least the outage to ride
// out, the first is short (a blip is retried soon), and none is over
// SQS's 12 h visibility limit.
func TestStoreRetryScheduleCoversTheOutage(t *testing.T) {
	for _, maxReceives := range []int{2, 5, 10, 20} {
		var sum time.Duration
		for n := 1; n < maxReceives; n++ {
			d := publishing.StoreRetryDelay(n, maxReceives, time.Hour, nil)
			if d <= 0 || d > 12*time.Hour {
				t.Errorf("max receives %d: delay %d = %s, want in (0, 12h]", maxReceives, n, d)
			}
			sum += d
		}
		if sum < time.Hour {
			t.Errorf("max receives %d: delays add up to %s, want ≥ 1h", maxReceives, sum)
		}
		if first := publishing.StoreRetryDelay(1, maxReceives, time.Hour, nil); maxReceives > 2 && first > 30*time.Second {
			t.Errorf("max receives %d: first delay %s, want ≤ 30s", maxReceives, first)
		}
	}
}

// An operator's decision reached the waiting workflow (SendTaskSuccess),
// and the workflow's next step then failed for good (store retries spent,
// a function timeout, Lambda.Unknown): the execution is over, the entry
// still held with the decision recorded, and nothing would ever apply it.
// The sweeper applies it once the workflow has had its time, and so does
// the operator approving again; either way the post goes out once.
func TestRecordedDecisionConverges(t *testing.T) {
	for _, by := range []string{"sweeper", "second approve"} {
		t.Run(by, func(t *testing.T) {
			e := newEnv(t, sandbox.Options{DisableIdempotency: true})
			e.account.Gate = post.GateManual
			if err := e.store.PutAccount(context.Background(), e.account); err != nil {
				t.Fatal(err)
			}
			tasks := &recordingTasks{}
			e.conf.Tasks = tasks
			op := &publishing.Operator{Ledger: e.store, Confirmer: e.conf, Tasks: tasks, Now: e.clock.Now, Logger: e.pub.Logger}
			// The platform never stores the first send: looked for, not found, held.
			e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDropRequest})
			job := e.schedule("decided", "Town hall at noon.")
			out := e.publish(job)
			if out.Result != publishing.Confirming {
				t.Fatalf("first send = %+v, want confirming", out)
			}
			name := publishing.ConfirmName(out.Key, 1)
			tasks.waiting = "token-" + name
			e.runConfirm(name)
			if en := e.entry(job); en.State != ledger.Held {
				t.Fatalf("entry %s after the looks, want held", en.State)
			}
			ctx := context.Background()
			res, err := op.Decide(ctx, out.Key, publishing.Decision{Action: publishing.DecisionRelease})
			if err != nil || res.How != publishing.DecisionDelivered {
				t.Fatalf("approve = %+v, %v; want delivered", res, err)
			}
			// The workflow's Release step failed past its retries: nobody
			// waits on the token any more, and nothing was applied.
			e.clock.Advance(3 * time.Minute)
			switch by {
			case "sweeper":
				sw := e.sweeper(&bytes.Buffer{})
				sw.Operator = op
				rep, err := sw.Sweep(ctx)
				if err != nil || rep.DecisionsApplied != 1 {
					t.Errorf("sweep applied %d decisions (err %v), want 1", rep.DecisionsApplied, err)
				}
			case "second approve":
				again, err := op.Decide(ctx, out.Key, publishing.Decision{Action: publishing.DecisionRelease})
				if err != nil || again.How != publishing.DecisionApplied {
					t.Errorf("second approve = %+v, %v; want the recorded decision applied", again, err)
				}
			}
			if en := e.entry(job); en.State != ledger.Released || en.Reason != publishing.ReasonOperatorReleased {
				t.Fatalf("entry %s %q, want released by the operator", en.State, en.Reason)
			}
			e.drain()
			if tg := e.target(job); tg.Status != post.Published {
				t.Errorf("target %s, want published", tg.Status)
			}
			if got := e.ourStatuses("Town hall at noon."); len(got) != 1 {
				t.Errorf("%d copies on the platform, want 1", len(got))
			}
		})
	}
}
