package publishingtest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// TestPosts checks that a post store keeps posts whole, never overwrites
// one, moves a target only as post.Target.Apply allows from the stored
// status (including the caller's TargetUpdate.From), atomically, lists due
// and unfinished targets, and counts targets by status. newPosts must
// return an empty store.
//
// A store may return a post's targets in the order they were created or
// sorted by account; the suite creates them in account order. A nil and an
// empty media list are equal. CountTargets may leave out, or report as 0,
// a status without targets.
func TestPosts(t *testing.T, newPosts func(t *testing.T) publishing.Posts) {
	t.Helper()
	runChecks(t, postsChecks(), newPosts)
}

func postsChecks() []check[publishing.Posts] {
	return []check[publishing.Posts]{
		{"CreatePost/round_trip", postsRoundTrip},
		{"CreatePost/existing_id_not_overwritten", postsCreateExisting},
		{"GetPost/missing", postsGetMissing},
		{"UpdateTarget/every_status_pair", postsMoves},
		{"UpdateTarget/sequence", postsSequence},
		{"UpdateTarget/missing_post_or_account", postsUpdateMissing},
		{"UpdateTarget/concurrent_published_or_cancelled", postsUpdateRace},
		{"UpdateTarget/from_refused_when_status_differs", postsFrom},
		{"UpdateTarget/concurrent_from_scheduled", postsFromRace},
		{"UpdateTarget/waiting_next_try", postsWaiting},
		{"UpdateTarget/published_clears_reason", postsPublishedClearsReason},
		{"Due/scheduled_not_after_t_earliest_first", postsDue},
		{"Unfinished/triggered_or_publishing_updated_before_t", postsUnfinished},
		{"Unfinished/waiting_once_next_try_passed", postsUnfinishedWaiting},
		{"CountTargets/by_status", postsCount},
		{"CountTargets/given_statuses_only", postsCountGiven},
	}
}

var postStatuses = []post.TargetStatus{post.NeedsApproval, post.Scheduled, post.Triggered, post.Publishing, post.Waiting,
	post.Published, post.Failed, post.Held, post.Cancelled}

var postCmp = cmp.Options{cmpopts.EquateEmpty()}

func postTimes(p post.Post) map[string]time.Time {
	m := map[string]time.Time{"CreatedAt": p.CreatedAt}
	for i, tg := range p.Targets {
		m[fmt.Sprintf("Targets[%d].Slot", i)] = tg.Slot
		m[fmt.Sprintf("Targets[%d].NextTry", i)] = tg.NextTry
		m[fmt.Sprintf("Targets[%d].UpdatedAt", i)] = tg.UpdatedAt
	}
	return m
}

func targetTimes(tg post.Target) map[string]time.Time {
	return map[string]time.Time{"Slot": tg.Slot, "NextTry": tg.NextTry, "UpdatedAt": tg.UpdatedAt}
}

// simplePost is a post with one target per account, all in status, slots
// an hour apart from slot.
func simplePost(id string, slot time.Time, status post.TargetStatus, accounts ...post.AccountID) post.Post {
	p := post.Post{ID: post.ID(id), Body: "Body of " + id, CreatedAt: base.Add(-time.Hour + 1)}
	for i, a := range accounts {
		p.Targets = append(p.Targets, post.Target{Account: a, Slot: slot.Add(time.Duration(i) * time.Hour), Status: status, UpdatedAt: base.Add(-time.Hour + 2)})
	}
	return p
}

func mustCreatePost(t testing.TB, s publishing.Posts, p post.Post) {
	t.Helper()
	if err := s.CreatePost(t.Context(), p); err != nil {
		t.Fatalf("CreatePost(%s) = %v, want nil", p.ID, err)
	}
}

func mustGetPost(t testing.TB, s publishing.Posts, id post.ID) post.Post {
	t.Helper()
	p, err := s.GetPost(t.Context(), id)
	if err != nil {
		t.Fatalf("GetPost(%s) = %v, want nil", id, err)
	}
	checkUTC(t, "GetPost("+string(id)+")", postTimes(p))
	return p
}

func wantPost(t testing.TB, s publishing.Posts, want post.Post, what string) {
	t.Helper()
	got := mustGetPost(t, s, want.ID)
	if diff := cmp.Diff(want, got, postCmp); diff != "" {
		t.Errorf("%s: GetPost(%s) mismatch (-want +got):\n%s", what, want.ID, diff)
	}
}

// withTarget returns p with the target for tg.Account replaced by tg.
func withTarget(p post.Post, tg post.Target) post.Post {
	p.Targets = append([]post.Target(nil), p.Targets...)
	for i := range p.Targets {
		if p.Targets[i].Account == tg.Account {
			p.Targets[i] = tg
		}
	}
	return p
}

func postsRoundTrip(t testing.TB, s publishing.Posts) {
	full := post.Post{
		ID:    "post-round-trip",
		Body:  "Grüße aus Köln 🎉 — \"quoted\", 'single', <b>not html</b>\nsecond line\t tab",
		Texts: map[string]string{"x": "Kürzer für X 🎉", "bluesky": "Für Bluesky: \"zitiert\"\n"},
		Media: []post.Media{
			{Ref: "media/b.png", SHA256: "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae", ContentType: "image/png", Alt: "a cat, sleeping",
				Fitted: map[string]post.Fitted{
					"bluesky": {Ref: "media/c.jpg", SHA256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", ContentType: "image/jpeg"},
					"x":       {Ref: "media/d.jpg", SHA256: "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed", ContentType: "image/jpeg"},
				}},
			{Ref: "media/a.jpg", SHA256: "fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9", ContentType: "image/jpeg", Alt: "ünïcödé alt"},
		},
		Targets: []post.Target{
			{Account: "acct-a", Slot: base.Add(time.Hour + 1), Status: post.Scheduled, UpdatedAt: base.Add(3)},
			{Account: "acct-b", Slot: base.Add(2*time.Hour + 5), Status: post.Waiting, RemoteID: "110000000000000001",
				Reason: "429: rate limited", NextTry: base.Add(2*time.Hour + 90*time.Second + 17), UpdatedAt: base.Add(7), Queued: true},
			{Account: "acct-c", Slot: base.Add(3*time.Hour + 9), Status: post.Published, RemoteID: "3kq2abcdxyz2c", Reason: "", UpdatedAt: base.Add(11)},
			{Account: "acct-d", Slot: base.Add(4*time.Hour + 13), Status: post.Held, RemoteID: "110000000000000002", Reason: "dedup found it", UpdatedAt: base.Add(15)},
			{Account: "acct-e", Slot: base.Add(5*time.Hour + 17), Status: post.NeedsApproval, UpdatedAt: base.Add(19)},
		},
		Thread:    []string{"2/3 the reply, \"quoted\" 🎉\n", "3/3 the last part"},
		Author:    "tok_round_trip",
		CreatedAt: base.Add(13),
	}
	for _, v := range []any{full, full.Media[0], full.Targets[1]} {
		rv := reflect.ValueOf(v)
		for i := range rv.NumField() {
			if rv.Field(i).IsZero() {
				t.Fatalf("suite bug: round-trip %s leaves field %s zero", rv.Type(), rv.Type().Field(i).Name)
			}
		}
	}
	mustCreatePost(t, s, full)
	wantPost(t, s, full, "after CreatePost")

	bare := simplePost("post-bare", base, post.Scheduled, "acct-a")
	mustCreatePost(t, s, bare)
	wantPost(t, s, bare, "after CreatePost without media")
	wantPost(t, s, full, "after CreatePost of another post")
}

func postsCreateExisting(t testing.TB, s publishing.Posts) {
	first := simplePost("post-dup", base, post.Scheduled, "acct-a", "acct-b")
	mustCreatePost(t, s, first)
	second := simplePost("post-dup", base.Add(time.Hour), post.Triggered, "acct-c")
	second.Body = "intruder"
	if err := s.CreatePost(t.Context(), second); !errors.Is(err, post.ErrConflict) {
		t.Errorf("CreatePost(existing id) = %v, want post.ErrConflict", err)
	}
	wantPost(t, s, first, "after CreatePost(existing id)")
}

func postsGetMissing(t testing.TB, s publishing.Posts) {
	if _, err := s.GetPost(t.Context(), "post-missing"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("GetPost(missing) = %v, want post.ErrNotFound", err)
	}
	mustCreatePost(t, s, simplePost("post-present", base, post.Scheduled, "acct-a"))
	if _, err := s.GetPost(t.Context(), "post-missing"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("GetPost(missing, another post stored) = %v, want post.ErrNotFound", err)
	}
}

func targetUpdate(to post.TargetStatus, at time.Time) post.TargetUpdate {
	u := post.TargetUpdate{Status: to, Reason: "moved to " + string(to), At: at}
	if to == post.Published || to == post.Held {
		u.RemoteID = "remote-" + string(to)
	}
	if to == post.Waiting {
		u.NextTry = at.Add(5*time.Minute + 3)
	}
	return u
}

// Every (from, to) pair: allowed moves (post.CanMove) are applied as
// post.Target.Apply applies them, refused ones wrap post.ErrConflict and
// leave the post unchanged.
func postsMoves(t testing.TB, s publishing.Posts) {
	at := base.Add(time.Hour + 17)
	for _, from := range postStatuses {
		for _, to := range postStatuses {
			p := simplePost(fmt.Sprintf("move-%s-%s", from, to), base, from, "acct-x", "acct-y")
			p.Targets[1].Status = post.Scheduled
			p.Targets[0].RemoteID = "remote-before"
			mustCreatePost(t, s, p)
			u := targetUpdate(to, at)
			got, err := s.UpdateTarget(t.Context(), p.ID, "acct-x", u)
			if !post.CanMove(from, to) {
				if !errors.Is(err, post.ErrConflict) {
					t.Errorf("UpdateTarget(%s → %s) = %v, want post.ErrConflict", from, to, err)
				}
				wantPost(t, s, p, fmt.Sprintf("after refused %s → %s", from, to))
				continue
			}
			if err != nil {
				t.Errorf("UpdateTarget(%s → %s) = %v, want nil", from, to, err)
				continue
			}
			want, _ := p.Targets[0].Apply(u)
			checkUTC(t, fmt.Sprintf("UpdateTarget(%s → %s)", from, to), targetTimes(got))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("UpdateTarget(%s → %s) returned (-want +got):\n%s", from, to, diff)
			}
			wantPost(t, s, withTarget(p, want), fmt.Sprintf("after %s → %s", from, to))
		}
	}
}

// A target's life, one move after another from the stored status.
func postsSequence(t testing.TB, s publishing.Posts) {
	p := simplePost("post-sequence", base, post.Scheduled, "acct-a", "acct-b")
	mustCreatePost(t, s, p)
	clk := newClock(base)
	for _, tc := range []struct {
		account post.AccountID
		to      post.TargetStatus
		ok      bool
	}{
		{"acct-a", post.Triggered, true},
		{"acct-a", post.Triggered, true},
		{"acct-b", post.Cancelled, true},
		{"acct-a", post.Publishing, true},
		// Looked for, not found, released, and the re-send throttled.
		{"acct-a", post.Waiting, true},
		{"acct-a", post.Publishing, true},
		{"acct-b", post.Triggered, false},
		{"acct-a", post.Cancelled, false},
		{"acct-a", post.Held, true},
		{"acct-a", post.Published, true},
		{"acct-a", post.Failed, false},
		{"acct-a", post.Scheduled, false},
	} {
		cur, _ := p.Target(tc.account)
		u := targetUpdate(tc.to, clk.next())
		got, err := s.UpdateTarget(t.Context(), p.ID, tc.account, u)
		if !tc.ok {
			if !errors.Is(err, post.ErrConflict) {
				t.Errorf("%s: UpdateTarget(%s → %s) = %v, want post.ErrConflict", tc.account, cur.Status, tc.to, err)
			}
			wantPost(t, s, p, fmt.Sprintf("after refused %s → %s", cur.Status, tc.to))
			continue
		}
		if err != nil {
			t.Fatalf("%s: UpdateTarget(%s → %s) = %v, want nil", tc.account, cur.Status, tc.to, err)
		}
		want, _ := cur.Apply(u)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: UpdateTarget(%s → %s) returned (-want +got):\n%s", tc.account, cur.Status, tc.to, diff)
		}
		p = withTarget(p, want)
		wantPost(t, s, p, fmt.Sprintf("after %s → %s", cur.Status, tc.to))
	}
}

// UpdateTarget of a post or account that does not exist fails and creates
// nothing. The port leaves the error open: post.ErrNotFound or
// post.ErrConflict.
func postsUpdateMissing(t testing.TB, s publishing.Posts) {
	notThere := func(err error) bool { return errors.Is(err, post.ErrNotFound) || errors.Is(err, post.ErrConflict) }
	u := targetUpdate(post.Triggered, base)
	if _, err := s.UpdateTarget(t.Context(), "post-missing", "acct-a", u); !notThere(err) {
		t.Errorf("UpdateTarget(missing post) = %v, want post.ErrNotFound or post.ErrConflict", err)
	}
	if _, err := s.GetPost(t.Context(), "post-missing"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("after UpdateTarget(missing post): GetPost = %v, want post.ErrNotFound", err)
	}
	p := simplePost("post-one-target", base, post.Scheduled, "acct-a")
	mustCreatePost(t, s, p)
	if _, err := s.UpdateTarget(t.Context(), p.ID, "acct-other", u); !notThere(err) {
		t.Errorf("UpdateTarget(account not targeted) = %v, want post.ErrNotFound or post.ErrConflict", err)
	}
	wantPost(t, s, p, "after UpdateTarget(account not targeted)")
}

// The publisher (published) and an operator (cancelled) race from
// triggered: exactly one terminal status is stored and never overwritten.
func postsUpdateRace(t testing.TB, s publishing.Posts) {
	const n = 16
	p := simplePost("post-race", base, post.Triggered, "acct-a", "acct-b")
	mustCreatePost(t, s, p)
	updates := make([]post.TargetUpdate, n)
	for i := range updates {
		if i%2 == 0 {
			updates[i] = post.TargetUpdate{Status: post.Published, RemoteID: fmt.Sprintf("remote-%d", i), At: base.Add(time.Duration(i))}
		} else {
			updates[i] = post.TargetUpdate{Status: post.Cancelled, Reason: fmt.Sprintf("operator %d", i), At: base.Add(time.Duration(i))}
		}
	}
	got := make([]post.Target, n)
	errs := runTogether(n, func(i int) (err error) {
		got[i], err = s.UpdateTarget(t.Context(), p.ID, "acct-a", updates[i])
		return err
	})
	winner := exactlyOneWinner(t, errs, func(err error) bool { return errors.Is(err, post.ErrConflict) })
	if winner < 0 {
		return
	}
	want, _ := p.Targets[0].Apply(updates[winner])
	if diff := cmp.Diff(want, got[winner]); diff != "" {
		t.Errorf("winner's UpdateTarget returned (-want +got):\n%s", diff)
	}
	wantPost(t, s, withTarget(p, want), "after the race")

	// A late move to the other terminal status is refused too.
	late := post.TargetUpdate{Status: post.Published, RemoteID: "remote-late", At: base.Add(time.Minute)}
	if want.Status == post.Published {
		late = post.TargetUpdate{Status: post.Cancelled, Reason: "late operator", At: base.Add(time.Minute)}
	}
	if _, err := s.UpdateTarget(t.Context(), p.ID, "acct-a", late); !errors.Is(err, post.ErrConflict) {
		t.Errorf("UpdateTarget(%s → %s) after the race = %v, want post.ErrConflict", want.Status, late.Status, err)
	}
	wantPost(t, s, withTarget(p, want), "after the late move")
}

// TargetUpdate.From: a move whose stored status is not one the caller
// expects is refused, even where post.CanMove allows it (triggered →
// triggered), and leaves the post unchanged.
func postsFrom(t testing.TB, s publishing.Posts) {
	p := simplePost("post-from", base, post.Scheduled, "acct-a", "acct-b")
	mustCreatePost(t, s, p)
	clk := newClock(base)
	from := func(ss ...post.TargetStatus) []post.TargetStatus { return ss }
	for _, tc := range []struct {
		account post.AccountID
		to      post.TargetStatus
		from    []post.TargetStatus
		ok      bool
	}{
		{"acct-a", post.Triggered, from(post.Scheduled), true},
		{"acct-a", post.Triggered, from(post.Scheduled), false}, // a second trigger
		{"acct-a", post.Publishing, from(post.Scheduled, post.Waiting), false},
		{"acct-a", post.Waiting, from(post.Triggered), true},
		{"acct-a", post.Waiting, from(post.Triggered), false},
		{"acct-a", post.Triggered, from(post.Waiting), true},
		{"acct-b", post.Cancelled, from(post.Triggered, post.Waiting), false},
		{"acct-b", post.Cancelled, from(post.Scheduled, post.Triggered, post.Waiting), true},
		{"acct-a", post.Published, nil, true},
		{"acct-a", post.Failed, from(post.Published), false}, // From allows it, CanMove does not
	} {
		cur, _ := p.Target(tc.account)
		u := targetUpdate(tc.to, clk.next())
		u.From = tc.from
		got, err := s.UpdateTarget(t.Context(), p.ID, tc.account, u)
		if !tc.ok {
			if !errors.Is(err, post.ErrConflict) {
				t.Errorf("%s: UpdateTarget(%s → %s, from %v) = %v, want post.ErrConflict", tc.account, cur.Status, tc.to, tc.from, err)
			}
			wantPost(t, s, p, fmt.Sprintf("after refused %s → %s from %v", cur.Status, tc.to, tc.from))
			continue
		}
		if err != nil {
			t.Fatalf("%s: UpdateTarget(%s → %s, from %v) = %v, want nil", tc.account, cur.Status, tc.to, tc.from, err)
		}
		want, _ := cur.Apply(u)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: UpdateTarget(%s → %s) returned (-want +got):\n%s", tc.account, cur.Status, tc.to, diff)
		}
		p = withTarget(p, want)
		wantPost(t, s, p, fmt.Sprintf("after %s → %s from %v", cur.Status, tc.to, tc.from))
	}
}

// 16 triggers fire for one scheduled target, each marking it triggered
// only from scheduled: one wins. (Without From every one would: triggered
// → triggered is an allowed move.)
func postsFromRace(t testing.TB, s publishing.Posts) {
	const n = 16
	p := simplePost("post-from-race", base, post.Scheduled, "acct-a", "acct-b")
	mustCreatePost(t, s, p)
	updates := make([]post.TargetUpdate, n)
	for i := range updates {
		updates[i] = post.TargetUpdate{Status: post.Triggered, From: []post.TargetStatus{post.Scheduled},
			Reason: fmt.Sprintf("trigger %d", i), At: base.Add(time.Duration(i))}
	}
	got := make([]post.Target, n)
	errs := runTogether(n, func(i int) (err error) {
		got[i], err = s.UpdateTarget(t.Context(), p.ID, "acct-a", updates[i])
		return err
	})
	winner := exactlyOneWinner(t, errs, func(err error) bool { return errors.Is(err, post.ErrConflict) })
	if winner < 0 {
		return
	}
	want, _ := p.Targets[0].Apply(updates[winner])
	if diff := cmp.Diff(want, got[winner]); diff != "" {
		t.Errorf("winner's UpdateTarget returned (-want +got):\n%s", diff)
	}
	wantPost(t, s, withTarget(p, want), "after the race")
}

// A waiting target keeps its NextTry, to the nanosecond and in UTC; a move
// out of waiting clears it, as post.Target.Apply does.
func postsWaiting(t testing.TB, s publishing.Posts) {
	p := simplePost("post-waiting", base, post.Triggered, "acct-a", "acct-b")
	mustCreatePost(t, s, p)
	paris := time.FixedZone("CET", 3600)
	for i, u := range []post.TargetUpdate{
		{Status: post.Waiting, Reason: "429: retry after 90s", NextTry: base.Add(90*time.Second + 1).In(paris), At: base.Add(3)},
		{Status: post.Waiting, Reason: "429 again", NextTry: base.Add(5*time.Minute + 5), At: base.Add(time.Minute + 7)},
		{Status: post.Triggered, From: []post.TargetStatus{post.Waiting}, NextTry: base.Add(time.Hour), At: base.Add(5*time.Minute + 9)},
		{Status: post.Waiting, Reason: "connection refused", NextTry: base.Add(6 * time.Minute), At: base.Add(5*time.Minute + 11)},
		{Status: post.Cancelled, Reason: "operator", At: base.Add(5*time.Minute + 13)},
	} {
		cur, _ := p.Target("acct-a")
		want, err := cur.Apply(u)
		if err != nil {
			t.Fatalf("suite bug: move %d: %v", i, err)
		}
		got, err := s.UpdateTarget(t.Context(), p.ID, "acct-a", u)
		if err != nil {
			t.Fatalf("UpdateTarget(%s → %s) = %v, want nil", cur.Status, u.Status, err)
		}
		checkUTC(t, fmt.Sprintf("UpdateTarget(%s → %s)", cur.Status, u.Status), targetTimes(got))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("UpdateTarget(%s → %s) returned (-want +got):\n%s", cur.Status, u.Status, diff)
		}
		p = withTarget(p, want)
		wantPost(t, s, p, fmt.Sprintf("after %s → %s", cur.Status, u.Status))
	}
}

// postsPublishedClearsReason: a target that went publishing (an
// ambiguous send, with its reason) or held, and then published, keeps no
// reason, whatever reason the move carries (the confirm step passes the
// ledger entry's, which still tells the ambiguous episode).
func postsPublishedClearsReason(t testing.TB, s publishing.Posts) {
	p := simplePost("post-reason", base, post.Triggered, "acct-a", "acct-b")
	mustCreatePost(t, s, p)
	const ambiguous = "ambiguous: timeout after the request was written"
	for _, tc := range []struct {
		account post.AccountID
		via     post.TargetStatus
	}{
		{"acct-a", post.Publishing},
		{"acct-b", post.Held},
	} {
		got, err := s.UpdateTarget(t.Context(), p.ID, tc.account, post.TargetUpdate{Status: tc.via, Reason: ambiguous, At: base.Add(1)})
		if err != nil || got.Reason != ambiguous {
			t.Fatalf("UpdateTarget(triggered → %s) = %q, %v; want the reason %q", tc.via, got.Reason, err, ambiguous)
		}
		got, err = s.UpdateTarget(t.Context(), p.ID, tc.account, post.TargetUpdate{Status: post.Published, RemoteID: "remote-" + string(tc.account),
			Reason: ambiguous, At: base.Add(2)})
		if err != nil {
			t.Fatalf("UpdateTarget(%s → published) = %v, want nil", tc.via, err)
		}
		if got.Status != post.Published || got.Reason != "" {
			t.Errorf("UpdateTarget(%s → published) returned %s with reason %q, want published without a reason", tc.via, got.Status, got.Reason)
		}
		stored, _ := mustGetPost(t, s, p.ID).Target(tc.account)
		if stored.Reason != "" {
			t.Errorf("after %s → published the stored target has reason %q, want none", tc.via, stored.Reason)
		}
	}
}

func postsDue(t testing.TB, s publishing.Posts) {
	at := func(d time.Duration) time.Time { return base.Add(d) }
	p1 := simplePost("due-1", at(-3*time.Hour), post.Scheduled, "acct-a", "acct-b") // a: -3h, b: -2h
	p1.Targets[1].Slot = at(time.Hour)                                              // b: not yet due
	p2 := simplePost("due-2", at(-time.Hour), post.Scheduled, "acct-a", "acct-b")   // a: -1h
	p2.Targets[1].Status, p2.Targets[1].Slot = post.Triggered, at(-2*time.Hour+1)   // b: already triggered
	p3 := simplePost("due-3", base, post.Scheduled, "acct-c")                       // exactly t: due
	p4 := simplePost("due-4", at(-5*time.Hour), post.Cancelled, "acct-a")
	p5 := simplePost("due-5", at(-4*time.Hour), post.Published, "acct-a")
	p6 := simplePost("due-6", at(-6*time.Hour), post.Held, "acct-a")
	p7 := simplePost("due-7", at(-30*time.Minute+3), post.Scheduled, "acct-d") // triggered below
	p8 := simplePost("due-8", at(time.Nanosecond), post.Scheduled, "acct-a")   // just after t
	for _, p := range []post.Post{p8, p3, p1, p5, p7, p2, p6, p4} {
		mustCreatePost(t, s, p)
	}
	if _, err := s.UpdateTarget(t.Context(), p7.ID, "acct-d", post.TargetUpdate{Status: post.Triggered, At: base}); err != nil {
		t.Fatalf("UpdateTarget(due-7 → triggered) = %v", err)
	}
	ref := func(p post.Post, i int) publishing.TargetRef {
		return publishing.TargetRef{Post: p.ID, Account: p.Targets[i].Account, Slot: p.Targets[i].Slot}
	}
	for _, tc := range []struct {
		t     time.Time
		limit int
		want  []publishing.TargetRef
	}{
		{base, 100, []publishing.TargetRef{ref(p1, 0), ref(p2, 0), ref(p3, 0)}},
		{base, 2, []publishing.TargetRef{ref(p1, 0), ref(p2, 0)}},
		{at(-time.Hour), 100, []publishing.TargetRef{ref(p1, 0), ref(p2, 0)}},
		{at(-3*time.Hour - 1), 100, nil},
		{at(2 * time.Hour), 100, []publishing.TargetRef{ref(p1, 0), ref(p2, 0), ref(p3, 0), ref(p8, 0), ref(p1, 1)}},
	} {
		got, err := s.Due(t.Context(), tc.t, tc.limit)
		if err != nil {
			t.Errorf("Due(base%+v, %d) = %v", tc.t.Sub(base), tc.limit, err)
			continue
		}
		for i, r := range got {
			checkUTC(t, fmt.Sprintf("Due()[%d]", i), map[string]time.Time{"Slot": r.Slot})
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Due(base%+v, %d) mismatch (-want +got):\n%s", tc.t.Sub(base), tc.limit, diff)
		}
	}
}

func postsUnfinished(t testing.TB, s publishing.Posts) {
	at := func(d time.Duration) time.Time { return base.Add(d) }
	p1 := simplePost("unf-1", at(-time.Hour), post.Scheduled, "acct-a", "acct-b", "acct-c")
	p2 := simplePost("unf-2", at(-time.Hour), post.Scheduled, "acct-a")
	mustCreatePost(t, s, p1)
	mustCreatePost(t, s, p2)
	move := func(p post.Post, account post.AccountID, st post.TargetStatus, when time.Time) {
		t.Helper()
		if _, err := s.UpdateTarget(t.Context(), p.ID, account, post.TargetUpdate{Status: st, At: when}); err != nil {
			t.Fatalf("UpdateTarget(%s/%s → %s) = %v", p.ID, account, st, err)
		}
	}
	move(p1, "acct-a", post.Triggered, at(-10*time.Minute)) // unfinished, old
	move(p1, "acct-b", post.Triggered, at(-20*time.Minute)) // becomes publishing, older
	move(p1, "acct-b", post.Publishing, at(-8*time.Minute)) // unfinished, updated -8m
	move(p1, "acct-c", post.Triggered, at(-30*time.Minute)) // then published: finished
	move(p1, "acct-c", post.Published, at(-29*time.Minute)) //
	move(p2, "acct-a", post.Triggered, at(-time.Minute))    // unfinished, recent
	ref := func(p post.Post, i int) publishing.TargetRef {
		return publishing.TargetRef{Post: p.ID, Account: p.Targets[i].Account, Slot: p.Targets[i].Slot}
	}
	for _, tc := range []struct {
		t     time.Time
		limit int
		want  []publishing.TargetRef
	}{
		{base, 100, []publishing.TargetRef{ref(p1, 0), ref(p1, 1), ref(p2, 0)}},
		{base, 1, []publishing.TargetRef{ref(p1, 0)}},
		{at(-5 * time.Minute), 100, []publishing.TargetRef{ref(p1, 0), ref(p1, 1)}},
		{at(-9 * time.Minute), 100, []publishing.TargetRef{ref(p1, 0)}},
		{at(-10 * time.Minute), 100, nil}, // strictly before t
	} {
		got, err := s.Unfinished(t.Context(), tc.t, tc.limit)
		if err != nil {
			t.Errorf("Unfinished(base%+v, %d) = %v", tc.t.Sub(base), tc.limit, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Unfinished(base%+v, %d) mismatch (-want +got):\n%s", tc.t.Sub(base), tc.limit, diff)
		}
	}
}

// Waiting targets are unfinished once their NextTry is before t (not
// before: a throttled target is not stuck), whenever they were last
// updated. "Oldest first" orders by the time compared with t: UpdatedAt
// for triggered and publishing targets, NextTry for waiting ones.
func postsUnfinishedWaiting(t testing.TB, s publishing.Posts) {
	at := func(d time.Duration) time.Time { return base.Add(d) }
	p := simplePost("unf-wait", at(-time.Hour), post.Scheduled, "acct-a", "acct-b", "acct-c", "acct-d", "acct-e")
	mustCreatePost(t, s, p)
	move := func(account post.AccountID, st post.TargetStatus, nextTry, when time.Time) {
		t.Helper()
		if _, err := s.UpdateTarget(t.Context(), p.ID, account, post.TargetUpdate{Status: st, NextTry: nextTry, At: when}); err != nil {
			t.Fatalf("UpdateTarget(%s → %s) = %v", account, st, err)
		}
	}
	move("acct-a", post.Waiting, at(-20*time.Minute), at(-30*time.Minute)) // overdue since -20m
	move("acct-b", post.Waiting, at(10*time.Minute), at(-40*time.Minute))  // updated long ago, next try still ahead
	move("acct-c", post.Waiting, at(-5*time.Minute+1), at(-6*time.Minute)) // overdue since -5m
	move("acct-d", post.Triggered, time.Time{}, at(-10*time.Minute))       // unfinished since -10m
	move("acct-e", post.Waiting, at(-50*time.Minute), at(-55*time.Minute)) // overdue, then published:
	move("acct-e", post.Published, time.Time{}, at(-45*time.Minute))       // finished
	ref := func(account post.AccountID) publishing.TargetRef {
		tg, _ := p.Target(account)
		return publishing.TargetRef{Post: p.ID, Account: account, Slot: tg.Slot}
	}
	for _, tc := range []struct {
		t     time.Time
		limit int
		want  []publishing.TargetRef
	}{
		{base, 100, []publishing.TargetRef{ref("acct-a"), ref("acct-d"), ref("acct-c")}},
		{base, 2, []publishing.TargetRef{ref("acct-a"), ref("acct-d")}},
		{at(-5*time.Minute + 1), 100, []publishing.TargetRef{ref("acct-a"), ref("acct-d")}}, // strictly before t
		{at(-10 * time.Minute), 100, []publishing.TargetRef{ref("acct-a")}},
		{at(-20 * time.Minute), 100, nil},
		{at(time.Hour), 100, []publishing.TargetRef{ref("acct-a"), ref("acct-d"), ref("acct-c"), ref("acct-b")}},
	} {
		got, err := s.Unfinished(t.Context(), tc.t, tc.limit)
		if err != nil {
			t.Errorf("Unfinished(base%+v, %d) = %v", tc.t.Sub(base), tc.limit, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("Unfinished(base%+v, %d) mismatch (-want +got):\n%s", tc.t.Sub(base), tc.limit, diff)
		}
	}
}

// nonZero drops the statuses counted 0, which a store may report or leave out.
func nonZero(m map[post.TargetStatus]int) map[post.TargetStatus]int {
	out := map[post.TargetStatus]int{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// countsPost stores one post with a target in each status of counts.
func countsPost(t testing.TB, s publishing.Posts, id string, counts map[post.TargetStatus]int) {
	t.Helper()
	p := post.Post{ID: post.ID(id), Body: "counted", CreatedAt: base}
	for _, st := range postStatuses {
		for i := range counts[st] {
			p.Targets = append(p.Targets, post.Target{Account: post.AccountID(fmt.Sprintf("acct-%s-%d", st, i)),
				Slot: base.Add(time.Duration(len(p.Targets)) * time.Minute), Status: st, UpdatedAt: base})
		}
	}
	mustCreatePost(t, s, p)
}

// With statuses given, CountTargets counts those and no other.
func postsCountGiven(t testing.TB, s publishing.Posts) {
	all := map[post.TargetStatus]int{post.Scheduled: 4, post.Triggered: 1, post.Publishing: 2, post.Waiting: 3,
		post.Published: 5, post.Failed: 1, post.Held: 2}
	countsPost(t, s, "count-given", all)
	for _, tc := range []struct {
		statuses []post.TargetStatus
		want     map[post.TargetStatus]int
	}{
		{[]post.TargetStatus{post.Held, post.Failed}, map[post.TargetStatus]int{post.Held: 2, post.Failed: 1}},
		{[]post.TargetStatus{post.Waiting}, map[post.TargetStatus]int{post.Waiting: 3}},
		{[]post.TargetStatus{post.Triggered, post.Publishing}, map[post.TargetStatus]int{post.Triggered: 1, post.Publishing: 2}},
		{[]post.TargetStatus{post.Cancelled}, nil},
		{[]post.TargetStatus{post.Held, post.Held}, map[post.TargetStatus]int{post.Held: 2}},
		{[]post.TargetStatus{post.Cancelled, post.Scheduled}, map[post.TargetStatus]int{post.Scheduled: 4}},
		{nil, all},
	} {
		got, err := s.CountTargets(t.Context(), tc.statuses...)
		if err != nil {
			t.Errorf("CountTargets(%v) = %v", tc.statuses, err)
			continue
		}
		if diff := cmp.Diff(tc.want, nonZero(got), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("CountTargets(%v) mismatch (-want +got):\n%s", tc.statuses, diff)
		}
	}
}

func postsCount(t testing.TB, s publishing.Posts) {
	p1 := simplePost("count-1", base, post.Scheduled, "acct-a", "acct-b", "acct-c")
	p2 := simplePost("count-2", base, post.Scheduled, "acct-a")
	mustCreatePost(t, s, p1)
	mustCreatePost(t, s, p2)
	for _, mv := range []struct {
		p       post.Post
		account post.AccountID
		to      post.TargetStatus
	}{{p1, "acct-a", post.Held}, {p1, "acct-b", post.Failed}, {p2, "acct-a", post.Held}} {
		if _, err := s.UpdateTarget(t.Context(), mv.p.ID, mv.account, post.TargetUpdate{Status: mv.to, At: base}); err != nil {
			t.Fatalf("UpdateTarget(%s/%s → %s) = %v", mv.p.ID, mv.account, mv.to, err)
		}
	}
	got, err := s.CountTargets(t.Context())
	if err != nil {
		t.Fatalf("CountTargets() = %v", err)
	}
	want := map[post.TargetStatus]int{post.Scheduled: 1, post.Held: 2, post.Failed: 1}
	if diff := cmp.Diff(want, nonZero(got), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("CountTargets() mismatch (-want +got):\n%s", diff)
	}
}
