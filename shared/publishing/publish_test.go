package publishing_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The incident: the platform commits at 11 units, the client gives up at
// 10. With the sandbox's own Idempotency-Key support off, only the ledger
// stands between a retry and a duplicate.
func TestIncidentTimeoutThenConfirm(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: 11 * unit})
	job := e.schedule("incident", "Doors open at 9.")

	out := e.publish(job)
	if out.Result != publishing.Confirming {
		t.Fatalf("publish after timeout = %+v, want confirming", out)
	}
	if got := e.entry(job).State; got != ledger.Unknown {
		t.Fatalf("entry after timeout is %s, want unknown", got)
	}
	if got := e.target(job).Status; got != post.Publishing {
		t.Errorf("target after timeout is %s, want publishing", got)
	}
	// At-least-once upstream: the same job arrives again while unknown.
	if again := e.publish(job); again.Result != publishing.Confirming {
		t.Errorf("second delivery while unknown = %+v, want confirming without a send", again)
	}
	e.waitCommitted(1)

	name := publishing.ConfirmName(out.Key, 1)
	if diff := cmp.Diff([]string{name}, e.flows.names()); diff != "" {
		t.Errorf("confirm workflows started (-want +got):\n%s", diff)
	}
	if looks := e.runConfirm(name); looks != 1 {
		t.Errorf("found after %d looks, want 1", looks)
	}

	remote := e.sb.Statuses(e.sbAcct.ID)
	if len(remote) != 1 {
		t.Fatalf("sandbox has %d statuses, want 1", len(remote))
	}
	en := e.entry(job)
	if en.State != ledger.Confirmed || en.RemoteID != remote[0].ID {
		t.Errorf("entry = %s remote %q, want confirmed remote %q", en.State, en.RemoteID, remote[0].ID)
	}
	if tg := e.target(job); tg.Status != post.Published || tg.RemoteID != remote[0].ID {
		t.Errorf("target = %s remote %q, want published %q", tg.Status, tg.RemoteID, remote[0].ID)
	}
	// Any later delivery finds the target published and sends nothing.
	if again := e.publish(job); again.Result != publishing.Skipped {
		t.Errorf("delivery after confirm = %+v, want skipped", again)
	}
	st := e.sb.Stats()
	if st.CreateRequests != 1 || st.Duplicates != 0 {
		t.Errorf("sandbox saw %d creates and %d duplicates, want 1 and 0", st.CreateRequests, st.Duplicates)
	}
	wantHistory := [][2]ledger.State{{"", ledger.Pending}, {ledger.Pending, ledger.Unknown}, {ledger.Unknown, ledger.Confirmed}}
	hist, err := e.store.History(context.Background(), out.Key)
	if err != nil {
		t.Fatal(err)
	}
	var gotHistory [][2]ledger.State
	for _, h := range hist {
		gotHistory = append(gotHistory, [2]ledger.State{h.From, h.To})
	}
	if diff := cmp.Diff(wantHistory, gotHistory); diff != "" {
		t.Errorf("ledger history (-want +got):\n%s", diff)
	}
}

// The same scenario through the seed's naive template (3 tries, no ledger)
// posts twice: the test that shows the incident is real in this setup.
func TestIncidentNaiveRetryDuplicates(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: 11 * unit})
	client, err := mastodonPlatforms.Client(context.Background(), e.account, platform.Credential{AccessToken: e.sbAcct.AccessToken})
	if err != nil {
		t.Fatal(err)
	}
	naiveRetry(client, "Doors open at 9.", 3, 10*unit, 4*unit)
	e.waitCommitted(2)
	if st := e.sb.Stats(); st.Duplicates == 0 {
		t.Fatalf("naive retry made no duplicate (stats %+v): the incident is not reproduced", st)
	}
}

// naiveRetry is the seed's template: try up to n times, each with a
// timeout, sleeping between tries, with no ledger and a fresh request each time.
func naiveRetry(c platform.Client, text string, n int, timeout, pause time.Duration) {
	for i := 0; i < n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		_, err := c.Publish(ctx, platform.PublishRequest{Handle: ledger.NewHandle(), Text: text})
		cancel()
		if err == nil {
			return
		}
		time.Sleep(pause)
	}
}

// A worker acquires the entry and dies. After the lease, the next delivery
// moves the entry to unknown and the confirm loop decides.
func TestAbandonedAttempt(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sentBefore bool // the dead worker's POST reached the platform
	}{
		{"post had reached the platform", true},
		{"post never left", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, sandbox.Options{DisableIdempotency: true})
			job := e.schedule("abandoned", "Road closed on Main St.")
			ctx := context.Background()
			p, err := e.store.GetPost(ctx, job.Post)
			if err != nil {
				t.Fatal(err)
			}
			dead := ledger.NewEntry(ledger.PublishKey(string(job.Account), string(job.Post), job.Slot), ledger.Publish,
				string(job.Account), string(job.Post), job.Slot, platform.Fingerprint(p.Body, nil), "dead-worker", e.clock.Now(), time.Minute)
			if err := e.store.Create(ctx, dead); err != nil {
				t.Fatal(err)
			}
			if tc.sentBefore {
				c, _ := mastodonPlatforms.Client(ctx, e.account, platform.Credential{AccessToken: e.sbAcct.AccessToken})
				if _, err := c.Publish(ctx, platform.PublishRequest{Handle: dead.Handle, Text: p.Body}); err != nil {
					t.Fatal(err)
				}
			}

			if out := e.publish(job); out.Result != publishing.Retry {
				t.Fatalf("delivery during the live lease = %+v, want retry", out)
			}
			if e.sb.Stats().CreateRequests != btoi(tc.sentBefore) {
				t.Fatalf("a delivery during the live lease sent a post")
			}
			e.clock.Advance(time.Minute)
			out := e.publish(job)
			if out.Result != publishing.Confirming || out.Reason != ledger.ReasonLeaseExpired {
				t.Fatalf("delivery after lease expiry = %+v, want confirming lease_expired", out)
			}
			e.runConfirm(publishing.ConfirmName(dead.Key, 1))
			e.drain() // Release re-enqueues the job

			en := e.entry(job)
			remote := e.sb.Statuses(e.sbAcct.ID)
			if len(remote) != 1 {
				t.Fatalf("sandbox has %d statuses, want exactly 1", len(remote))
			}
			wantAttempt := 2
			if tc.sentBefore {
				wantAttempt = 1
			}
			if en.State != ledger.Confirmed || en.RemoteID != remote[0].ID || en.Attempt != wantAttempt {
				t.Errorf("entry %s remote %q attempt %d, want confirmed %q attempt %d", en.State, en.RemoteID, en.Attempt, remote[0].ID, wantAttempt)
			}
			if remote[0].IdempotencyKey != dead.Handle {
				t.Errorf("post sent with handle %q, want the entry's %q", remote[0].IdempotencyKey, dead.Handle)
			}
			if st := e.sb.Stats(); st.CreateRequests != 1 || st.Duplicates != 0 {
				t.Errorf("sandbox stats %+v, want one create and no duplicate", st)
			}
			if tg := e.target(job); tg.Status != post.Published {
				t.Errorf("target %s, want published", tg.Status)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Definite answers: a 429 is re-sent after its Retry-After, 4xx is final.
// (A 503 on a write is ambiguous: TestProxy503AfterForwardPostsOnce.)
func TestDefiniteOutcomes(t *testing.T) {
	t.Run("429 with Retry-After", func(t *testing.T) {
		e := newEnv(t, sandbox.Options{DisableIdempotency: true})
		e.sb.Script(sandbox.Fault{Kind: sandbox.Fault429, RetryAfter: 3 * time.Second})
		job := e.schedule("rate-limited", "Lunch menu: soup.")
		out := e.publish(job)
		if out.Result != publishing.Retry || e.entry(job).State != ledger.Released {
			t.Fatalf("outcome %+v entry %s, want retry/released", out, e.entry(job).State)
		}
		if out.RetryAfter != 3*time.Second {
			t.Errorf("RetryAfter %s, want 3s", out.RetryAfter)
		}
		if tg := e.target(job); tg.Status != post.Waiting || !tg.NextTry.Equal(e.clock.Now().Add(3*time.Second)) {
			t.Errorf("target %s next try %v after a not-performed call, want waiting 3s", tg.Status, tg.NextTry)
		}
		e.clock.Advance(3 * time.Second)
		out = e.publish(job)
		en := e.entry(job)
		if out.Result != publishing.Published || en.Attempt != 2 || en.State != ledger.Confirmed {
			t.Fatalf("re-send = %+v (entry %s attempt %d), want published attempt 2", out, en.State, en.Attempt)
		}
		if st := e.sb.Stats(); st.CreateRequests != 2 || st.Committed != 1 || st.Duplicates != 0 {
			t.Errorf("sandbox stats %+v, want 2 creates, 1 commit, 0 duplicates", st)
		}
	})

	t.Run("4xx is failed with the platform's message", func(t *testing.T) {
		e := newEnv(t, sandbox.Options{MaxCharacters: 10})
		job := e.schedule("too-long", "This is longer than ten characters.")
		out := e.publish(job)
		if out.Result != publishing.Failed {
			t.Fatalf("outcome %+v, want failed", out)
		}
		en, tg := e.entry(job), e.target(job)
		if en.State != ledger.Failed || !strings.Contains(en.Reason, "character limit") || tg.Status != post.Failed || tg.Reason != en.Reason {
			t.Errorf("entry %s %q target %s %q, want failed with the platform's message", en.State, en.Reason, tg.Status, tg.Reason)
		}
		if again := e.publish(job); again.Result != publishing.Skipped {
			t.Errorf("delivery after failure = %+v, want skipped", again)
		}
		if st := e.sb.Stats(); st.CreateRequests != 1 {
			t.Errorf("sandbox saw %d creates, want 1 (no re-send)", st.CreateRequests)
		}
	})
}

func TestUnauthorizedRefreshes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		break401    func(e *env)
		wantCreates int
	}{
		// The token expired: the dedup read gets the 401, refreshes, and the
		// create goes out once with the new token.
		{"expired token", func(e *env) { e.sb.ExpireAccessToken(e.sbAcct.ID) }, 1},
		// The create itself gets the 401: refresh, then one re-send.
		{"401 on the create", func(e *env) { e.sb.Script(sandbox.Fault{Kind: sandbox.Fault401}) }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, sandbox.Options{DisableIdempotency: true})
			tc.break401(e)
			job := e.schedule("after-401", "Weather: sunny.")
			out := e.publish(job)
			if out.Result != publishing.Published || out.Attempt != 1 {
				t.Fatalf("outcome %+v, want published within attempt 1", out)
			}
			if st := e.sb.Stats(); st.CreateRequests != tc.wantCreates || st.Committed != 1 || st.Duplicates != 0 {
				t.Errorf("sandbox stats %+v, want %d creates and 1 commit", st, tc.wantCreates)
			}
			cred, err := e.store.Credential(context.Background(), e.account.ID)
			if err != nil {
				t.Fatal(err)
			}
			if cred.AccessToken == e.sbAcct.AccessToken || cred.RefreshToken == "" || cred.RefreshToken == e.sbAcct.RefreshToken {
				t.Errorf("stored credential not rotated: access changed=%v refresh empty=%v refresh changed=%v",
					cred.AccessToken != e.sbAcct.AccessToken, cred.RefreshToken == "", cred.RefreshToken != e.sbAcct.RefreshToken)
			}
		})
	}
	t.Run("refused refresh holds the post: reconnect_needed", func(t *testing.T) {
		e := newEnv(t, sandbox.Options{})
		e.sb.ExpireAccessToken(e.sbAcct.ID)
		e.sb.RevokeRefreshToken(e.sbAcct.ID)
		job := e.schedule("revoked", "Weather: rain.")
		out := e.publish(job)
		if out.Result != publishing.Held || !strings.HasPrefix(out.Reason, publishing.ReasonReconnectNeeded) {
			t.Fatalf("outcome %+v, want held reconnect_needed", out)
		}
		if tg := e.target(job); tg.Status != post.Held || !strings.HasPrefix(tg.Reason, publishing.ReasonReconnectNeeded) {
			t.Errorf("target %s %q, want held reconnect_needed", tg.Status, tg.Reason)
		}
		if acc, err := e.store.GetAccount(context.Background(), e.account.ID); err != nil || acc.Status != post.AccountReconnectNeeded {
			t.Errorf("account status %q (err %v), want reconnect_needed", acc.Status, err)
		}
		cred, err := e.store.Credential(context.Background(), e.account.ID)
		if err != nil || cred.RefreshToken != e.sbAcct.RefreshToken {
			t.Errorf("stored refresh token changed after a refused refresh (err %v)", err)
		}
		if st := e.sb.Stats(); st.Committed != 0 {
			t.Errorf("sandbox committed %d posts", st.Committed)
		}
	})
}

func TestPrePublishDedupHolds(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	existing := e.sb.InjectStatus(e.sbAcct.ID, "Café opens at 9 — see https://example.com/menu")
	// Same words, other normalisation and trailing space: same fingerprint.
	job := e.schedule("dup", "Cafe\u0301 opens at 9 — see https://example.com/menu \n")
	out := e.publish(job)
	if out.Result != publishing.Held {
		t.Fatalf("outcome %+v, want held", out)
	}
	en, tg := e.entry(job), e.target(job)
	if en.State != ledger.Held || en.Reason != publishing.ReasonDuplicateOnAccount || en.RemoteID != existing.ID {
		t.Errorf("entry %s %q remote %q, want held duplicate_on_account %q", en.State, en.Reason, en.RemoteID, existing.ID)
	}
	if tg.Status != post.Held || tg.RemoteID != existing.ID {
		t.Errorf("target %s remote %q, want held %q", tg.Status, tg.RemoteID, existing.ID)
	}
	if st := e.sb.Stats(); st.CreateRequests != 0 {
		t.Errorf("sandbox saw %d creates, want none", st.CreateRequests)
	}
}

func TestCancelledPostIsNeverSent(t *testing.T) {
	t.Run("cancelled while queued", func(t *testing.T) {
		e := newEnv(t, sandbox.Options{})
		job := e.schedule("cancel-queued", "Sale starts now.")
		e.enqueue(job)
		if _, err := e.store.UpdateTarget(context.Background(), job.Post, job.Account, post.TargetUpdate{Status: post.Cancelled, At: e.clock.Now()}); err != nil {
			t.Fatal(err)
		}
		e.drain()
		if st := e.sb.Stats(); st.CreateRequests != 0 {
			t.Errorf("sandbox saw %d creates for a cancelled post", st.CreateRequests)
		}
		if tg := e.target(job); tg.Status != post.Cancelled {
			t.Errorf("target %s, want cancelled", tg.Status)
		}
	})
	t.Run("cancelled after acquire, before the send", func(t *testing.T) {
		e := newEnv(t, sandbox.Options{})
		job := e.schedule("cancel-late", "Sale starts now.")
		// Cancel as soon as the publisher has loaded the post once: only
		// the re-read right before the call can notice.
		e.pub.Posts = &cancelAfterFirstRead{Posts: e.store, job: job, at: e.clock.Now()}
		out := e.publish(job)
		if out.Result != publishing.Skipped {
			t.Errorf("outcome %+v, want skipped", out)
		}
		if st := e.sb.Stats(); st.CreateRequests != 0 {
			t.Errorf("sandbox saw %d creates for a cancelled post", st.CreateRequests)
		}
		if en := e.entry(job); en.State != ledger.Released || en.Reason != publishing.ReasonCancelled {
			t.Errorf("entry %s %q, want released %s", en.State, en.Reason, publishing.ReasonCancelled)
		}
	})
}

type cancelAfterFirstRead struct {
	publishing.Posts
	job   publishing.Job
	at    time.Time
	reads int
}

func (c *cancelAfterFirstRead) GetPost(ctx context.Context, id post.ID) (post.Post, error) {
	p, err := c.Posts.GetPost(ctx, id)
	c.reads++
	if c.reads == 1 {
		if _, err := c.Posts.UpdateTarget(ctx, c.job.Post, c.job.Account, post.TargetUpdate{Status: post.Cancelled, At: c.at}); err != nil {
			return p, err
		}
	}
	return p, err
}

func TestHappyPathWrites(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	job := e.schedule("happy", "Hello.")
	before := e.store.Stats()
	if out := e.publish(job); out.Result != publishing.Published {
		t.Fatalf("outcome %+v", out)
	}
	after := e.store.Stats()
	writes := (after.LedgerWrites - before.LedgerWrites) + (after.PostWrites - before.PostWrites) + (after.AccountWrites - before.AccountWrites)
	if writes > 3 {
		t.Errorf("happy path made %d store writes besides audit rows and the posting budget, want ≤ 3", writes)
	}
	// The send taken from the account's posting budget (Mastodon: 300 per
	// 3 hours), shared with every other worker through the store.
	if paced := after.PaceWrites - before.PaceWrites; paced != 1 {
		t.Errorf("happy path took %d sends from the posting budget, want 1", paced)
	}
	if audit := after.AuditRows - before.AuditRows; audit != 2 {
		t.Errorf("happy path wrote %d audit rows, want 2 (pending, confirmed)", audit)
	}
}

func TestPublishWithMedia(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	img := []byte("\x89PNG fake image bytes")
	sha := sha256hex(img)
	e.media["img/1.png"] = img
	job := e.schedule("with-image", "Our new logo.", post.Media{Ref: "img/1.png", SHA256: sha, ContentType: "image/png", Alt: "logo"})
	if out := e.publish(job); out.Result != publishing.Published {
		t.Fatalf("outcome %+v, want published", out)
	}
	remote := e.sb.Statuses(e.sbAcct.ID)
	if len(remote) != 1 || len(remote[0].MediaSHA256) != 1 || remote[0].MediaSHA256[0] != sha {
		t.Fatalf("sandbox statuses %+v, want one with the image", remote)
	}
	up, err := e.store.Get(context.Background(), ledger.UploadKey(string(job.Account), sha, e.entry(job).Key))
	if err != nil || up.State != ledger.Confirmed || up.RemoteID != remote[0].MediaIDs[0] {
		t.Errorf("upload entry %+v (err %v), want confirmed with the media id", up, err)
	}
	// The same post again (a new slot) is caught by dedup, media included.
	job2 := e.schedule("with-image-again", "Our new logo.", post.Media{Ref: "img/1.png", SHA256: sha, ContentType: "image/png", Alt: "logo"})
	if out := e.publish(job2); out.Result != publishing.Held {
		t.Errorf("same text and image again = %+v, want held", out)
	}
}

// With the manual gate, an ambiguous outcome that the looks cannot find is
// held for an operator with the workflow's task token; nothing is re-sent.
func TestConfirmManualGateHolds(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.account.Gate = post.GateManual
	if err := e.store.PutAccount(context.Background(), e.account); err != nil {
		t.Fatal(err)
	}
	// The platform sits on the request past the client's timeout and has
	// not committed while the looks run.
	e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: time.Minute})
	job := e.schedule("manual", "Board meeting moved to 3pm.")
	out := e.publish(job)
	if out.Result != publishing.Confirming {
		t.Fatalf("outcome %+v, want confirming", out)
	}
	name := publishing.ConfirmName(out.Key, 1)
	if in, _ := e.flows.input(name); in.Policy != publishing.PolicyManual {
		t.Errorf("confirm policy %q, want manual", in.Policy)
	}
	e.runConfirm(name)
	en := e.entry(job)
	if en.State != ledger.Held || en.TaskToken != "token-"+name || en.Reason != publishing.ReasonNotFoundAfterLooks {
		t.Errorf("entry %s token %q reason %q, want held with the task token", en.State, en.TaskToken, en.Reason)
	}
	if tg := e.target(job); tg.Status != post.Held {
		t.Errorf("target %s, want held", tg.Status)
	}
	e.drain()
	if again := e.publish(job); again.Result != publishing.Held {
		t.Errorf("delivery while held = %+v, want held", again)
	}
	if st := e.sb.Stats(); st.Committed != 0 || st.CreateRequests != 1 {
		t.Errorf("sandbox stats %+v, want the one delayed, uncommitted create only", st)
	}
}

// Review findings, each a test that failed before its fix.

func TestMissingMediaFailsWithoutSending(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	job := e.schedule("no-file", "Photo of the day.", post.Media{Ref: "missing.png", SHA256: strings.Repeat("ab", 32), ContentType: "image/png"})
	out := e.publish(job)
	if out.Result != publishing.Failed || !strings.HasPrefix(out.Reason, publishing.ReasonMediaUnreadable) {
		t.Fatalf("outcome %+v, want failed %s", out, publishing.ReasonMediaUnreadable)
	}
	if st := e.sb.Stats(); st.CreateRequests != 0 {
		t.Errorf("sandbox saw %d creates", st.CreateRequests)
	}
	up, err := e.store.Get(context.Background(), ledger.UploadKey(string(job.Account), strings.Repeat("ab", 32), out.Key))
	if err != nil || up.State != ledger.Released {
		t.Errorf("upload entry %s (err %v), want released (nothing was uploaded)", up.State, err)
	}
	if len(e.flows.names()) != 0 {
		t.Errorf("a local failure started a confirm workflow: %v", e.flows.names())
	}
}

func TestStoreErrorBeforeSendIsNotAmbiguous(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	job := e.schedule("flaky-store", "Board minutes.")
	e.pub.Posts = &failSecondRead{Posts: e.store}
	out := e.publish(job)
	if out.Result != publishing.Retry || e.entry(job).State != ledger.Released {
		t.Fatalf("outcome %+v entry %s, want retry/released: the create was never sent", out, e.entry(job).State)
	}
	if len(e.flows.names()) != 0 {
		t.Errorf("a store error before the send started a confirm workflow")
	}
}

type failSecondRead struct {
	publishing.Posts
	reads int
}

func (f *failSecondRead) GetPost(ctx context.Context, id post.ID) (post.Post, error) {
	f.reads++
	if f.reads == 2 {
		return post.Post{}, errors.New("database is locked")
	}
	return f.Posts.GetPost(ctx, id)
}

// Sends that may have reached the platform and were not found are
// bounded: the next acquire holds the entry for an operator.
func TestTooManyAttemptsHolds(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.pub.MaxAttempts = 2
	job := e.schedule("dropped-twice", "Maintenance window tonight.")
	for i := 1; i <= 2; i++ {
		// The connection drops after the request went out: ambiguous, and
		// the looks do not find it.
		e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDropRequest})
		out := e.publish(job)
		if out.Result != publishing.Confirming {
			t.Fatalf("attempt %d: %+v, want confirming", i, out)
		}
		e.runConfirm(publishing.ConfirmName(out.Key, i))
	}
	out := e.publish(job)
	if out.Result != publishing.Held || out.Reason != publishing.ReasonTooManyAttempts {
		t.Fatalf("third attempt %+v, want held %s", out, publishing.ReasonTooManyAttempts)
	}
	if st := e.sb.Stats(); st.CreateRequests != 2 || st.Committed != 0 {
		t.Errorf("sandbox stats %+v, want 2 creates, none committed", st)
	}
}

func TestLeaseTooShortIsNotSent(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	e.pub.Lease = e.pub.CallTimeout // shorter than call + record margin
	job := e.schedule("short-lease", "Hello.")
	if out := e.publish(job); out.Result != publishing.Retry || out.Reason != publishing.ReasonLeaseTooShort {
		t.Fatalf("outcome %+v, want retry %s", out, publishing.ReasonLeaseTooShort)
	}
	if st := e.sb.Stats(); st.CreateRequests != 0 {
		t.Errorf("sandbox saw %d creates", st.CreateRequests)
	}
}

// Workers of one process share an owner name; the refresh lease must still
// let only one of them spend the single-use refresh token.
func TestConcurrentRefreshSpendsTheTokenOnce(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	e.sb.ExpireAccessToken(e.sbAcct.ID)
	jobs := []publishing.Job{e.schedule("r1", "First post."), e.schedule("r2", "Second post."), e.schedule("r3", "Third post.")}
	results := make(chan publishing.Outcome, len(jobs))
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := e.pub.Publish(context.Background(), j)
			if err != nil {
				t.Error(err)
			}
			results <- out
		}()
	}
	wg.Wait()
	close(results)
	for out := range results {
		if out.Result == publishing.Failed {
			t.Errorf("a worker failed the post: %+v", out)
		}
	}
	// Whatever was only released goes again and publishes.
	for _, j := range jobs {
		for i := 0; i < 5 && e.target(j).Status != post.Published; i++ {
			e.clock.Advance(e.publish(j).RetryAfter)
		}
		if got := e.target(j).Status; got != post.Published {
			t.Errorf("%s: target %s, want published", j.Post, got)
		}
	}
}

// An image posted on Monday can go out again on Tuesday with other words:
// uploads belong to one publish entry, since a platform attaches an upload
// to one post only.
func TestSameImageOnAnotherPost(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	img := []byte("\x89PNG same image bytes")
	sha := sha256hex(img)
	e.media["img.png"] = img
	m := post.Media{Ref: "img.png", SHA256: sha, ContentType: "image/png"}
	first := e.schedule("monday", "Monday's view.", m)
	second := e.schedule("tuesday", "Tuesday's view.", m)
	for _, j := range []publishing.Job{first, second} {
		if out := e.publish(j); out.Result != publishing.Published {
			t.Fatalf("%s: %+v, want published", j.Post, out)
		}
	}
	remote := e.sb.Statuses(e.sbAcct.ID)
	if len(remote) != 2 || remote[0].MediaIDs[0] == remote[1].MediaIDs[0] {
		t.Errorf("sandbox statuses %+v, want two posts with their own upload", remote)
	}
}

// A post moved to another time between the publisher's first read and its
// ledger write must not be sent under the old time's key: the new time is
// a new ledger key, and its own job would send it a second time.
func TestRescheduledBeforeTheSendIsNotSent(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	ctx := context.Background()
	slot := e.clock.Now().Truncate(time.Second)
	p := post.Post{ID: "moved", Body: "Sale starts now.", CreatedAt: slot,
		Targets: []post.Target{{Account: e.account.ID, Slot: slot, Status: post.Scheduled, UpdatedAt: slot}}}
	if err := e.store.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	job := publishing.Job{Post: p.ID, Account: e.account.ID, Slot: slot}
	later := slot.Add(time.Hour)
	e.pub.Posts = &rescheduleAfterFirstRead{Posts: e.store, store: e.store, job: job, to: later, at: slot}
	out := e.publish(job)
	if out.Result != publishing.Skipped {
		t.Errorf("outcome %+v, want skipped", out)
	}
	if st := e.sb.Stats(); st.CreateRequests != 0 {
		t.Fatalf("sandbox saw %d creates for a post moved to another time before the send", st.CreateRequests)
	}
	// At the new time it goes out once.
	e.pub.Posts = e.store
	e.clock.Advance(time.Hour)
	if out := e.publish(publishing.Job{Post: p.ID, Account: e.account.ID, Slot: later}); out.Result != publishing.Published {
		t.Fatalf("publish at the new time: %+v", out)
	}
	if st := e.sb.Stats(); st.CreateRequests != 1 || st.Duplicates != 0 {
		t.Errorf("sandbox stats %+v, want one create, no duplicate", st)
	}
}

type rescheduleAfterFirstRead struct {
	publishing.Posts
	store interface {
		RescheduleTarget(ctx context.Context, id post.ID, account post.AccountID, slot, at time.Time,
			schedule func(tx *sql.Tx, old, next publishing.TargetRef) error) (post.Target, error)
	}
	job   publishing.Job
	to    time.Time
	at    time.Time
	reads int
}

func (r *rescheduleAfterFirstRead) GetPost(ctx context.Context, id post.ID) (post.Post, error) {
	p, err := r.Posts.GetPost(ctx, id)
	r.reads++
	if r.reads == 1 {
		noSchedule := func(*sql.Tx, publishing.TargetRef, publishing.TargetRef) error { return nil }
		if _, err := r.store.RescheduleTarget(ctx, r.job.Post, r.job.Account, r.to, r.at, noSchedule); err != nil {
			return p, err
		}
	}
	return p, err
}

// The trigger marks a target triggered only at the slot it read: one moved
// to another time meanwhile stays scheduled for its own schedule to fire,
// instead of sitting triggered (and unsent) until the sweeper notices.
func TestTriggerLeavesATargetMovedMeanwhileScheduled(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	ctx := context.Background()
	slot := e.clock.Now().Truncate(time.Second)
	p := post.Post{ID: "moved", Body: "Sale starts now.", CreatedAt: slot,
		Targets: []post.Target{{Account: e.account.ID, Slot: slot, Status: post.Scheduled, UpdatedAt: slot}}}
	if err := e.store.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	later := slot.Add(time.Hour)
	ref := publishing.TargetRef{Post: p.ID, Account: e.account.ID, Slot: slot}
	tr := &publishing.Trigger{Posts: &rescheduleAfterFirstRead{Posts: e.store, store: e.store, job: ref, to: later, at: slot}, Queue: e.queue, Now: e.clock.Now}
	if _, err := tr.Fire(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if tg := e.target(publishing.Job{Post: p.ID, Account: e.account.ID}); tg.Status != post.Scheduled || !tg.Slot.Equal(later) {
		t.Errorf("target %s at %s, want scheduled at %s", tg.Status, tg.Slot, later)
	}
}

// limitedPlatforms declares posting limits for the sandbox's accounts.
type limitedPlatforms struct {
	publishing.Platforms
	rates []platform.Rate
}

func (l limitedPlatforms) Client(ctx context.Context, a post.Account, c platform.Credential) (platform.Client, error) {
	cl, err := l.Platforms.Client(ctx, a, c)
	return limitedClient{Client: cl, rates: l.rates}, err
}

type limitedClient struct {
	platform.Client
	rates []platform.Rate
}

func (l limitedClient) Capabilities() platform.Capabilities {
	c := l.Client.Capabilities()
	c.PostingLimits = l.rates
	return c
}

// Sends are spaced to the platform's declared posting limits, through the
// store, once the entry is ours and only the send is left: the post over
// the budget waits (target waiting, its entry released until the budget
// allows, no attempt spent, nothing sent) and goes once the budget allows.
func TestPostingLimitsSpaceSends(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	e.pub.Platforms = limitedPlatforms{Platforms: mastodonPlatforms, rates: []platform.Rate{{Count: 1, Per: time.Minute}}}
	first, second := e.schedule("first", "First of two."), e.schedule("second", "Second of two.")
	if out := e.publish(first); out.Result != publishing.Published {
		t.Fatalf("first = %+v, want published", out)
	}
	out := e.publish(second)
	if out.Result != publishing.Retry || out.Reason != publishing.ReasonPaced || out.RetryAfter != time.Minute {
		t.Fatalf("second = %+v, want retry %s after 1m", out, publishing.ReasonPaced)
	}
	if tg := e.target(second); tg.Status != post.Waiting || tg.Reason != publishing.ReasonPaced {
		t.Errorf("second target %s %q, want waiting %s", tg.Status, tg.Reason, publishing.ReasonPaced)
	}
	if en, err := e.store.Get(context.Background(), out.Key); err != nil || en.State != ledger.Released || en.MaybeSent != 0 ||
		!en.DeferredSince.IsZero() || !en.RetryAt.Equal(e.clock.Now().Add(time.Minute)) {
		t.Errorf("paced entry %s maybe_sent %d deferred_since %v retry_at %v (err %v), want released until the budget allows, no attempt spent",
			en.State, en.MaybeSent, en.DeferredSince, en.RetryAt, err)
	}
	if n := e.sb.Stats().CreateRequests; n != 1 {
		t.Errorf("%d creates sent, want 1", n)
	}
	e.clock.Advance(time.Minute)
	if out := e.publish(second); out.Result != publishing.Published {
		t.Fatalf("second after a minute = %+v, want published", out)
	}
}

// One post on two platforms, with a text of its own for one of them: each
// account gets its platform's text, and the ledger's fingerprint is that
// text's (a look after an unknown outcome matches what was sent there).
func TestTextPerPlatform(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	ctx := context.Background()
	sa := e.sb.AddAccount("bird")
	bird := post.Account{ID: "bird", Platform: "x", Handle: "@bird", BaseURL: e.sb.URL(), RemoteID: sa.ID, CredentialRef: "bird", Gate: post.GateAuto}
	if err := e.store.PutAccount(ctx, bird); err != nil {
		t.Fatal(err)
	}
	if err := e.store.PutCredential(ctx, bird.ID, platform.Credential{AccessToken: sa.AccessToken}); err != nil {
		t.Fatal(err)
	}
	slot := e.clock.Now().Truncate(time.Second)
	p := post.Post{ID: "launch", Body: "We launched, and here is the long story of how.", Texts: map[string]string{"x": "We launched!"}, CreatedAt: slot,
		Targets: []post.Target{{Account: e.account.ID, Slot: slot, Status: post.Scheduled, UpdatedAt: slot}, {Account: bird.ID, Slot: slot, Status: post.Scheduled, UpdatedAt: slot}}}
	if err := e.store.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	for _, acc := range []post.AccountID{e.account.ID, bird.ID} {
		job := publishing.Job{Post: p.ID, Account: acc, Slot: slot}
		if out := e.publish(job); out.Result != publishing.Published {
			t.Fatalf("%s: %+v", acc, out)
		}
		if en := e.entry(job); en.Fingerprint != platform.Fingerprint(p.TextFor(map[post.AccountID]string{"news": "mastodon", "bird": "x"}[acc]), nil) {
			t.Errorf("%s: the entry's fingerprint is not its platform's text's", acc)
		}
	}
	got := map[string]string{}
	for _, id := range []string{e.sbAcct.ID, sa.ID} {
		for _, st := range e.sb.Statuses(id) {
			got[id] = st.Text
		}
	}
	want := map[string]string{e.sbAcct.ID: p.Body, sa.ID: "We launched!"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("texts on the platform (-want +got):\n%s", diff)
	}
}

// inlinePlatforms takes attachments with the create (a Telegram photo):
// it records what the create carried, and posts the text.
type inlinePlatforms struct {
	publishing.Platforms
	got *[]platform.MediaUpload
	// byURL: the platform fetches attachments from URLs (Threads).
	byURL bool
	// looks, when set, records every Lookup's query.
	looks *[]platform.LookupQuery
}

func (p inlinePlatforms) Client(ctx context.Context, a post.Account, c platform.Credential) (platform.Client, error) {
	cl, err := p.Platforms.Client(ctx, a, c)
	return inlineClient{Client: cl, got: p.got, byURL: p.byURL, looks: p.looks}, err
}

type inlineClient struct {
	platform.Client
	got   *[]platform.MediaUpload
	byURL bool
	looks *[]platform.LookupQuery
}

func (c inlineClient) Lookup(ctx context.Context, q platform.LookupQuery) (platform.RemotePost, bool, error) {
	if c.looks != nil {
		*c.looks = append(*c.looks, q)
	}
	return c.Client.Lookup(ctx, q)
}

func (c inlineClient) Capabilities() platform.Capabilities {
	caps := c.Client.Capabilities()
	caps.InlineMedia = true
	caps.MediaByURL = c.byURL
	return caps
}

func (c inlineClient) Publish(ctx context.Context, req platform.PublishRequest) (platform.Receipt, error) {
	*c.got = append(*c.got, req.Media...)
	if len(req.MediaIDs) > 0 {
		return platform.Receipt{}, errors.New("an inline platform got upload ids")
	}
	req.Media = nil
	return c.Client.Publish(ctx, req)
}

func (c inlineClient) UploadMedia(context.Context, platform.MediaUpload) (platform.MediaReceipt, error) {
	return platform.MediaReceipt{}, errors.New("an inline platform was asked to upload")
}

// A platform that takes attachments with the create gets their bytes in
// the one create call: nothing is uploaded before it and no upload entry
// is written.
func TestInlineMediaGoWithTheCreate(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	var got []platform.MediaUpload
	e.pub.Platforms = inlinePlatforms{Platforms: mastodonPlatforms, got: &got}
	img := []byte("\x89PNG inline photo")
	e.media["photo.png"] = img
	m := post.Media{Ref: "photo.png", SHA256: sha256hex(img), ContentType: "image/png", Alt: "the harbour"}
	job := e.schedule("inline", "A photo.", m)
	if out := e.publish(job); out.Result != publishing.Published {
		t.Fatalf("publish = %+v", out)
	}
	want := []platform.MediaUpload{{Filename: "photo.png", ContentType: "image/png", Data: img, Alt: "the harbour"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("media the create carried (-want +got):\n%s", diff)
	}
	key := ledger.UploadKey(string(job.Account), m.SHA256, e.entry(job).Key)
	if _, err := e.store.Get(context.Background(), key); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("an upload entry was written (%v)", err)
	}
}

// An attachment fitted to the account's platform goes out as the fitted
// bytes, everywhere the publisher names it: the upload, its ledger entry,
// the pre-publish dedup and the confirm step's read-back. The original is
// not read at all (it is not in the media store here), and a version
// fitted to another platform is not used.
func TestFittedMediaGoToTheirPlatform(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	fitted, other := []byte("\xff\xd8 fitted for mastodon"), []byte("\xff\xd8 fitted for bluesky")
	e.media["fit/m.jpg"], e.media["fit/b.jpg"] = fitted, other
	m := post.Media{Ref: "orig.png", SHA256: sha256hex([]byte("the original, too big")), ContentType: "image/png", Alt: "the harbour",
		Fitted: map[string]post.Fitted{
			"mastodon": {Ref: "fit/m.jpg", SHA256: sha256hex(fitted), ContentType: "image/jpeg"},
			"bluesky":  {Ref: "fit/b.jpg", SHA256: sha256hex(other), ContentType: "image/jpeg"},
		}}

	// The answer to the create is lost after the platform stored it: the
	// confirm step must recognise the post by the fitted image.
	e.sb.ScriptRoute(sandbox.RouteCreateStatus, sandbox.Fault{Kind: sandbox.FaultDropResponse})
	job := e.schedule("fitted", "The harbour at dawn.", m)
	out := e.publish(job)
	if out.Result != publishing.Confirming {
		t.Fatalf("publish = %+v, want confirming", out)
	}
	e.runConfirm(publishing.ConfirmName(out.Key, 1))
	if en := e.entry(job); en.State != ledger.Confirmed {
		t.Fatalf("entry %s (%s), want confirmed by the read-back", en.State, en.Reason)
	}
	remote := e.sb.Statuses(e.sbAcct.ID)
	if len(remote) != 1 || len(remote[0].MediaSHA256) != 1 || remote[0].MediaSHA256[0] != sha256hex(fitted) {
		t.Fatalf("sandbox statuses %+v, want one carrying the version fitted for mastodon", remote)
	}
	up, err := e.store.Get(context.Background(), ledger.UploadKey(string(job.Account), sha256hex(fitted), e.entry(job).Key))
	if err != nil || up.State != ledger.Confirmed {
		t.Errorf("upload entry of the fitted bytes %+v (err %v), want confirmed", up, err)
	}
	// The same post again is caught by the pre-publish dedup: the
	// fingerprint is the fitted image's.
	if out := e.publish(e.schedule("fitted-again", "The harbour at dawn.", m)); out.Result != publishing.Held {
		t.Errorf("same text and image again = %+v, want held", out)
	}
	if n := len(e.sb.Statuses(e.sbAcct.ID)); n != 1 {
		t.Errorf("%d statuses, want 1", n)
	}
}

// signedURLs gives every ref a URL, as the AWS runtime's presigner does.
type signedURLs struct{}

func (signedURLs) MediaURL(_ context.Context, ref string) (string, error) {
	return "https://media.example/" + ref + "?X-Amz-Signature=abc", nil
}

// A platform that fetches attachments itself (Threads) gets a URL for
// each, fitted version included, and no bytes; a runtime without URLs to
// give fails such a post before anything is sent, saying why.
func TestMediaByURL(t *testing.T) {
	img := []byte("\xff\xd8 fitted for mastodon")
	m := post.Media{Ref: "orig.png", SHA256: sha256hex([]byte("original")), ContentType: "image/png", Alt: "the harbour",
		Fitted: map[string]post.Fitted{"mastodon": {Ref: "fit.jpg", SHA256: sha256hex(img), ContentType: "image/jpeg"}}}

	e := newEnv(t, sandbox.Options{})
	var got []platform.MediaUpload
	e.pub.Platforms = inlinePlatforms{Platforms: mastodonPlatforms, got: &got, byURL: true}
	e.pub.MediaURLs = signedURLs{}
	if out := e.publish(e.schedule("by-url", "A photo.", m)); out.Result != publishing.Published {
		t.Fatalf("publish = %+v", out)
	}
	want := []platform.MediaUpload{{Filename: "fit.jpg", ContentType: "image/jpeg", Alt: "the harbour", URL: "https://media.example/fit.jpg?X-Amz-Signature=abc"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("media the create carried (-want +got):\n%s", diff)
	}

	// The confirm step tells the adapter how many attachments to expect
	// (a platform that re-hosts them matches by text and count).
	e = newEnv(t, sandbox.Options{DisableIdempotency: true})
	var looks []platform.LookupQuery
	e.pub.Platforms = inlinePlatforms{Platforms: mastodonPlatforms, got: &got, byURL: true, looks: &looks}
	e.conf.Platforms = e.pub.Platforms
	e.pub.MediaURLs = signedURLs{}
	e.sb.ScriptRoute(sandbox.RouteCreateStatus, sandbox.Fault{Kind: sandbox.FaultDropResponse})
	out := e.publish(e.schedule("by-url-lost", "Another photo.", m, m))
	if out.Result != publishing.Confirming {
		t.Fatalf("publish = %+v, want confirming", out)
	}
	e.runConfirm(publishing.ConfirmName(out.Key, 1))
	if len(looks) == 0 || looks[0].MediaCount != 2 {
		t.Errorf("looks %+v, want MediaCount 2", looks)
	}

	e = newEnv(t, sandbox.Options{})
	got = nil
	e.pub.Platforms = inlinePlatforms{Platforms: mastodonPlatforms, got: &got, byURL: true}
	job := e.schedule("no-urls", "A photo.", m)
	out = e.publish(job)
	if out.Result != publishing.Failed || !strings.HasPrefix(out.Reason, publishing.ReasonMediaNeedsURL) {
		t.Errorf("publish without URLs = %+v, want failed, %s", out, publishing.ReasonMediaNeedsURL)
	}
	if tg := e.target(job); tg.Status != post.Failed || !strings.Contains(tg.Reason, "public URL") {
		t.Errorf("target %s (%s), want failed saying why", tg.Status, tg.Reason)
	}
	if st := e.sb.Stats(); st.CreateRequests != 0 || len(got) != 0 {
		t.Errorf("sandbox stats %+v, %d media sent: want nothing sent", st, len(got))
	}
}

// failingURLs cannot sign a ref, as s3media refuses one that is not a
// content hash.
type failingURLs struct{}

func (failingURLs) MediaURL(_ context.Context, ref string) (string, error) {
	return "", errors.New("media ref is not a SHA-256 with an image extension")
}

// An attachment whose stored bytes are not the ones its hash names, or
// one that cannot be given a URL, fails the post before anything is sent,
// with the reason: retrying cannot change either, and sending other bytes
// than the fingerprint names would make the post unrecognisable on
// read-back.
func TestMediaThatCannotBeSentAsNamedFailsUnsent(t *testing.T) {
	tests := []struct {
		name      string
		platforms func(*[]platform.MediaUpload) publishing.Platforms
		urls      publishing.MediaURLs
	}{
		{"upload: other bytes than the hash", func(got *[]platform.MediaUpload) publishing.Platforms {
			return uploadRecorder{Platforms: mastodonPlatforms, got: got}
		}, nil},
		{"inline: other bytes than the hash", func(got *[]platform.MediaUpload) publishing.Platforms {
			return inlinePlatforms{Platforms: mastodonPlatforms, got: got}
		}, nil},
		{"by URL: no URL for the ref", func(got *[]platform.MediaUpload) publishing.Platforms {
			return inlinePlatforms{Platforms: mastodonPlatforms, got: got, byURL: true}
		}, failingURLs{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, sandbox.Options{})
			var got []platform.MediaUpload
			e.pub.Platforms = tt.platforms(&got)
			e.pub.MediaURLs = tt.urls
			e.media["swapped.png"] = []byte("\x89PNG not the bytes the post names")
			job := e.schedule("swapped", "A photo.", post.Media{Ref: "swapped.png", SHA256: sha256hex([]byte("\x89PNG the original")), ContentType: "image/png"})
			out := e.publish(job)
			if out.Result != publishing.Failed || !strings.HasPrefix(out.Reason, publishing.ReasonMediaUnreadable) {
				t.Errorf("publish = %+v, want failed, %s", out, publishing.ReasonMediaUnreadable)
			}
			if st := e.sb.Stats(); st.CreateRequests != 0 || len(got) != 0 {
				t.Errorf("sandbox stats %+v, %d inline media: want nothing sent", st, len(got))
			}
		})
	}
}

// uploadRecorder records what is uploaded, and uploads it.
type uploadRecorder struct {
	publishing.Platforms
	got *[]platform.MediaUpload
}

func (p uploadRecorder) Client(ctx context.Context, a post.Account, c platform.Credential) (platform.Client, error) {
	cl, err := p.Platforms.Client(ctx, a, c)
	return uploadRecorderClient{Client: cl, got: p.got}, err
}

type uploadRecorderClient struct {
	platform.Client
	got *[]platform.MediaUpload
}

func (c uploadRecorderClient) UploadMedia(ctx context.Context, m platform.MediaUpload) (platform.MediaReceipt, error) {
	*c.got = append(*c.got, m)
	return c.Client.UploadMedia(ctx, m)
}
