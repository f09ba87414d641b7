package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// tgt is a target at t0 + hours, in status.
func tgt(account post.AccountID, hours int, status post.TargetStatus) post.Target {
	return post.Target{Account: account, Slot: t0.Add(time.Duration(hours) * time.Hour), Status: status, UpdatedAt: t0}
}

func mustCreatePost(t *testing.T, s *Store, id post.ID, targets ...post.Target) post.Post {
	t.Helper()
	p := post.Post{ID: id, Body: "body of " + string(id), CreatedAt: t0, Targets: targets}
	if err := s.CreatePost(context.Background(), p); err != nil {
		t.Fatalf("CreatePost(%s) = %v", id, err)
	}
	return p
}

func TestListPosts(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	posts := map[post.ID]post.Post{}
	add := func(id post.ID, targets ...post.Target) { posts[id] = mustCreatePost(t, s, id, targets...) }
	add("p-late", tgt("acct-a", 9, post.Scheduled))
	add("p-held-b", tgt("acct-a", 1, post.Scheduled), tgt("acct-b", 5, post.Held))
	add("p-two-held", tgt("acct-a", 7, post.Held), tgt("acct-b", 6, post.Held))
	add("p-tie-2", tgt("acct-c", 3, post.Published))
	add("p-tie-1", tgt("acct-c", 3, post.Failed), tgt("acct-a", 8, post.Waiting))
	add("p-cancelled", tgt("acct-b", 2, post.Cancelled))
	add("p-none") // no target: never listed

	for _, tc := range []struct {
		name string
		f    publishing.PostFilter
		want []post.ID
	}{
		{"everything, by earliest slot then id", publishing.PostFilter{},
			[]post.ID{"p-held-b", "p-cancelled", "p-tie-1", "p-tie-2", "p-two-held", "p-late"}},
		{"limit", publishing.PostFilter{Limit: 2}, []post.ID{"p-held-b", "p-cancelled"}},
		// By the earliest matching target: p-two-held's held target at 6
		// comes after p-held-b's at 5, though its other one is at 7.
		{"held", publishing.PostFilter{Statuses: []post.TargetStatus{post.Held}}, []post.ID{"p-held-b", "p-two-held"}},
		{"held, twice", publishing.PostFilter{Statuses: []post.TargetStatus{post.Held, post.Held}}, []post.ID{"p-held-b", "p-two-held"}},
		{"held or failed", publishing.PostFilter{Statuses: []post.TargetStatus{post.Held, post.Failed}},
			[]post.ID{"p-tie-1", "p-held-b", "p-two-held"}},
		{"scheduled", publishing.PostFilter{Statuses: []post.TargetStatus{post.Scheduled}}, []post.ID{"p-held-b", "p-late"}},
		{"account", publishing.PostFilter{Account: "acct-a"}, []post.ID{"p-held-b", "p-two-held", "p-tie-1", "p-late"}},
		{"account b", publishing.PostFilter{Account: "acct-b"}, []post.ID{"p-cancelled", "p-held-b", "p-two-held"}},
		// One target must match both: p-held-b's held target is acct-b's.
		{"held on account a", publishing.PostFilter{Statuses: []post.TargetStatus{post.Held}, Account: "acct-a"}, []post.ID{"p-two-held"}},
		{"waiting or published on account c", publishing.PostFilter{Statuses: []post.TargetStatus{post.Waiting, post.Published}, Account: "acct-c"},
			[]post.ID{"p-tie-2"}},
		{"nothing matches", publishing.PostFilter{Statuses: []post.TargetStatus{post.Publishing}}, nil},
		{"unknown account", publishing.PostFilter{Account: "acct-zzz"}, nil},
		{"limit with statuses", publishing.PostFilter{Statuses: []post.TargetStatus{post.Held, post.Failed}, Limit: 1}, []post.ID{"p-tie-1"}},
	} {
		got, err := s.ListPosts(ctx, tc.f)
		if err != nil {
			t.Errorf("%s: ListPosts = %v", tc.name, err)
			continue
		}
		var want []post.Post
		for _, id := range tc.want {
			want = append(want, posts[id]) // each with all its targets
		}
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: ListPosts(%+v) (-want +got):\n%s", tc.name, tc.f, d)
		}
	}
	if _, err := s.ListPosts(ctx, publishing.PostFilter{Statuses: []post.TargetStatus{"stuck"}}); err == nil || !strings.Contains(err.Error(), "stuck") {
		t.Errorf("ListPosts(unknown status) = %v, want an error naming it", err)
	}
}

// Without a limit, ListPosts returns DefaultListLimit posts.
func TestListPostsDefaultLimit(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	for i := range DefaultListLimit + 5 {
		mustCreatePost(t, s, post.ID(fmt.Sprintf("p-%03d", i)), tgt("acct-a", i, post.Scheduled))
	}
	for _, f := range []publishing.PostFilter{{}, {Account: "acct-a"}, {Statuses: []post.TargetStatus{post.Scheduled}}} {
		got, err := s.ListPosts(ctx, f)
		if err != nil || len(got) != DefaultListLimit || got[0].ID != "p-000" || got[len(got)-1].ID != post.ID(fmt.Sprintf("p-%03d", DefaultListLimit-1)) {
			t.Errorf("ListPosts(%+v) = %d posts, %v; want the first %d", f, len(got), err, DefaultListLimit)
		}
	}
	if got, err := s.ListPosts(ctx, publishing.PostFilter{Limit: 1000}); err != nil || len(got) != DefaultListLimit+5 {
		t.Errorf("ListPosts(limit 1000) = %d posts, %v; want all %d", len(got), err, DefaultListLimit+5)
	}
}

// Pages follow one order, the listing's: the pages of any size, put end
// to end, are the listing of every post at once, for every filter.
func TestListPostPagesFollowTheListing(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	statuses := []post.TargetStatus{post.Scheduled, post.Held, post.Published, post.Waiting, post.Failed}
	for i := range 40 {
		targets := []post.Target{tgt("acct-a", (i*13)%17, statuses[i%len(statuses)])}
		if i%3 == 0 {
			targets = append(targets, tgt("acct-b", (i*5)%17, statuses[(i+2)%len(statuses)]))
		}
		mustCreatePost(t, s, post.ID(fmt.Sprintf("p-%02d", (i*11)%40)), targets...)
	}
	for _, f := range []publishing.PostFilter{{}, {Statuses: []post.TargetStatus{post.Held, post.Scheduled}}, {Account: "acct-b"},
		{Statuses: []post.TargetStatus{post.Waiting, post.Published}, Account: "acct-a"}} {
		all := f
		all.Limit = 1000
		whole, err := s.ListPosts(ctx, all)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{1, 4, 9} {
			var got []post.ID
			f.Limit, f.After = limit, ""
			for range 50 {
				pg, err := s.ListPostPage(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range pg.Posts {
					got = append(got, p.ID)
				}
				if f.After = pg.Next; f.After == "" {
					break
				}
			}
			if d := cmp.Diff(postIDs(whole), got); d != "" {
				t.Errorf("%+v, pages of %d (-listing +pages):\n%s", f, limit, d)
			}
		}
	}
	if _, err := s.ListPostPage(ctx, publishing.PostFilter{After: "sq1.e30"}); !errors.Is(err, publishing.ErrBadCursor) {
		t.Errorf("a cursor without a position: %v, want publishing.ErrBadCursor", err)
	}
}

func postIDs(posts []post.Post) []post.ID {
	var out []post.ID
	for _, p := range posts {
		out = append(out, p.ID)
	}
	return out
}

// reschedules records the schedule calls RescheduleTarget makes, in a
// table of the same file (as the runtime's schedules are).
type reschedules struct {
	calls []string
	fail  error
}

func (r *reschedules) fn(tx *sql.Tx, old, next publishing.TargetRef) error {
	if r.fail != nil {
		return r.fail
	}
	if _, err := tx.Exec(`CREATE TABLE IF NOT EXISTS test_schedules (name TEXT PRIMARY KEY)`); err != nil {
		return err
	}
	if _, err := tx.Exec(`INSERT INTO test_schedules VALUES (?)`, fmt.Sprintf("%s/%s@%s", next.Post, next.Account, next.Slot.Format(time.RFC3339))); err != nil {
		return err
	}
	r.calls = append(r.calls, fmt.Sprintf("%s/%s %s → %s", old.Post, old.Account, old.Slot.Format(time.RFC3339), next.Slot.Format(time.RFC3339)))
	return nil
}

// ledgerAt stores the publish entry of (account, post, slot) moved through
// the given steps from pending.
func ledgerAt(t *testing.T, s *Store, account post.AccountID, id post.ID, slot time.Time, steps ...func(ledger.Entry) (ledger.Entry, error)) ledger.Key {
	t.Helper()
	ctx := context.Background()
	key := ledger.PublishKey(string(account), string(id), slot)
	e := ledger.NewEntry(key, ledger.Publish, string(account), string(id), slot, "fp", "w1", t0, time.Minute)
	if err := s.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	for _, step := range steps {
		next, err := step(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Update(ctx, e, next); err != nil {
			t.Fatal(err)
		}
		e = next
	}
	return key
}

var (
	toUnknown   = func(e ledger.Entry) (ledger.Entry, error) { return e.MarkUnknown("timeout", t0) }
	toReleased  = func(e ledger.Entry) (ledger.Entry, error) { return e.Release("throttled", t0) }
	toHeld      = func(e ledger.Entry) (ledger.Entry, error) { return e.Hold("same content on the account", "", t0) }
	toConfirmed = func(e ledger.Entry) (ledger.Entry, error) { return e.Confirm("remote-1", t0) }
	toFailed    = func(e ledger.Entry) (ledger.Entry, error) { return e.Fail("422", t0) }
)

func TestRescheduleTarget(t *testing.T) {
	newSlot := t0.Add(48*time.Hour + 7)
	at := t0.Add(time.Minute).In(time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		name   string
		status post.TargetStatus
		steps  []func(ledger.Entry) (ledger.Entry, error) // the old slot's entry's moves from pending
		noLog  bool                                       // no entry under the old slot at all
		// wantErr is "" when the move is allowed.
		wantErr string
	}{
		{name: "scheduled, no ledger entry", status: post.Scheduled, noLog: true},
		{name: "waiting, entry released, nothing sent", status: post.Waiting, steps: []func(ledger.Entry) (ledger.Entry, error){toReleased}},
		{name: "held, entry held, nothing sent", status: post.Held, steps: []func(ledger.Entry) (ledger.Entry, error){toHeld}},
		{name: "held, no ledger entry", status: post.Held, noLog: true},
		{name: "scheduled, entry released, nothing sent", status: post.Scheduled, steps: []func(ledger.Entry) (ledger.Entry, error){toReleased}},

		{name: "triggered", status: post.Triggered, noLog: true, wantErr: "target is triggered"},
		{name: "publishing", status: post.Publishing, noLog: true, wantErr: "target is publishing"},
		{name: "published", status: post.Published, noLog: true, wantErr: "target is published"},
		{name: "failed", status: post.Failed, noLog: true, wantErr: "target is failed"},
		{name: "cancelled", status: post.Cancelled, noLog: true, wantErr: "target is cancelled"},

		{name: "entry pending", status: post.Scheduled, wantErr: "is pending)"},
		{name: "entry unknown", status: post.Waiting, steps: []func(ledger.Entry) (ledger.Entry, error){toUnknown},
			wantErr: "is unknown, 1 attempt(s) may have been sent)"},
		{name: "entry confirmed", status: post.Held, steps: []func(ledger.Entry) (ledger.Entry, error){toConfirmed}, wantErr: "is confirmed)"},
		{name: "entry failed", status: post.Held, steps: []func(ledger.Entry) (ledger.Entry, error){toFailed}, wantErr: "is failed)"},
		{name: "entry released after a send that may have landed", status: post.Waiting,
			steps: []func(ledger.Entry) (ledger.Entry, error){toUnknown, toReleased}, wantErr: "is released, 1 attempt(s) may have been sent)"},
		{name: "entry held after a send that may have landed", status: post.Held,
			steps: []func(ledger.Entry) (ledger.Entry, error){toUnknown, toHeld}, wantErr: "is held, 1 attempt(s) may have been sent)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := openTest(t, Options{})
			old := tgt("acct-a", 1, tc.status)
			old.Reason, old.RemoteID = "why it is "+string(tc.status), ""
			if tc.status == post.Waiting {
				old.NextTry = t0.Add(90 * time.Minute)
			}
			p := mustCreatePost(t, s, "p-1", old, tgt("acct-b", 1, post.Scheduled))
			// Entries that must not matter: another account's, and
			// another slot's of the same target.
			ledgerAt(t, s, "acct-b", "p-1", old.Slot, toUnknown)
			ledgerAt(t, s, "acct-a", "p-1", old.Slot.Add(time.Second), toUnknown)
			var key ledger.Key
			if !tc.noLog {
				key = ledgerAt(t, s, "acct-a", "p-1", old.Slot, tc.steps...)
			}
			var sc reschedules
			got, err := s.RescheduleTarget(ctx, "p-1", "acct-a", newSlot, at, sc.fn)
			after, gerr := s.GetPost(ctx, "p-1")
			if gerr != nil {
				t.Fatal(gerr)
			}

			if tc.wantErr != "" {
				if !errors.Is(err, post.ErrConflict) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("RescheduleTarget = %v, want post.ErrConflict saying %q", err, tc.wantErr)
				}
				if key != "" && !strings.Contains(err.Error(), "a send under the old slot may have reached the platform (ledger entry "+string(key)) {
					t.Errorf("RescheduleTarget = %v, want it to name ledger entry %s", err, key)
				}
				if !strings.Contains(err.Error(), "p-1") || !strings.Contains(err.Error(), "acct-a") {
					t.Errorf("RescheduleTarget = %v, want it to name the post and the account", err)
				}
				if len(sc.calls) != 0 {
					t.Errorf("schedule called %v for a refused move", sc.calls)
				}
				if d := cmp.Diff(p, after, cmpopts.EquateEmpty()); d != "" {
					t.Errorf("post after a refused move (-before +after):\n%s", d)
				}
				return
			}
			if err != nil {
				t.Fatalf("RescheduleTarget = %v, want nil", err)
			}
			want := post.Target{Account: "acct-a", Slot: newSlot, Status: post.Scheduled, UpdatedAt: at.UTC()}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("returned target (-want +got):\n%s", d)
			}
			if d := cmp.Diff([]post.Target{want, p.Targets[1]}, after.Targets); d != "" {
				t.Errorf("stored targets (-want +got):\n%s", d)
			}
			if want := []string{"p-1/acct-a " + old.Slot.Format(time.RFC3339) + " → " + newSlot.Format(time.RFC3339)}; !cmp.Equal(want, sc.calls) {
				t.Errorf("schedule calls %v, want %v", sc.calls, want)
			}
			// It has its schedule (not listed by Unscheduled; the other
			// target, made by CreatePost, is) and is due at its new slot.
			wantUnscheduled(t, s, 0, []publishing.TargetRef{{Post: "p-1", Account: "acct-b", Slot: p.Targets[1].Slot}}, "after the move")
			due, err := s.Due(ctx, newSlot, 0)
			if err != nil || len(due) != 2 || due[1] != (publishing.TargetRef{Post: "p-1", Account: "acct-a", Slot: newSlot}) {
				t.Errorf("Due(new slot) = %v, %v; want the moved target after the other", due, err)
			}
		})
	}
}

func TestRescheduleTargetErrors(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	p := mustCreatePost(t, s, "p-1", tgt("acct-a", 1, post.Scheduled))
	var sc reschedules
	for _, tc := range []struct {
		name    string
		id      post.ID
		account post.AccountID
		want    string
	}{
		{"unknown post", "p-404", "acct-a", "no post p-404"},
		{"unknown target", "p-1", "acct-z", "post p-1 has no target for account acct-z"},
	} {
		if _, err := s.RescheduleTarget(ctx, tc.id, tc.account, t0, t0, sc.fn); !errors.Is(err, post.ErrNotFound) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: RescheduleTarget = %v, want post.ErrNotFound saying %q", tc.name, err, tc.want)
		}
	}
	// A failing schedule rolls the move back.
	sc.fail = errors.New("scheduler table locked")
	if _, err := s.RescheduleTarget(ctx, "p-1", "acct-a", t0.Add(5*time.Hour), t0, sc.fn); err == nil || !strings.Contains(err.Error(), "scheduler table locked") {
		t.Errorf("RescheduleTarget with a failing schedule = %v, want its error", err)
	}
	if _, err := s.RescheduleTarget(ctx, "p-1", "acct-a", t0.Add(5*time.Hour), t0, nil); err == nil {
		t.Error("RescheduleTarget without a schedule function = nil, want an error")
	}
	if _, err := s.RescheduleTarget(ctx, "p-1", "acct-a", time.Time{}, t0, (&reschedules{}).fn); err == nil {
		t.Error("RescheduleTarget to a zero slot = nil, want an error")
	}
	after, err := s.GetPost(ctx, "p-1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(p, after, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("post after failed moves (-before +after):\n%s", d)
	}
	wantUnscheduled(t, s, 0, []publishing.TargetRef{{Post: "p-1", Account: "acct-a", Slot: p.Targets[0].Slot}}, "after failed moves")
	// Moving it twice: the second move starts from the first one's slot.
	sc.fail = nil
	for _, h := range []int{5, 6} {
		if _, err := s.RescheduleTarget(ctx, "p-1", "acct-a", t0.Add(time.Duration(h)*time.Hour), t0, sc.fn); err != nil {
			t.Fatal(err)
		}
	}
	if len(sc.calls) != 2 || !strings.Contains(sc.calls[1], t0.Add(5*time.Hour).Format(time.RFC3339)+" → ") {
		t.Errorf("schedule calls %v, want the second to move from the first move's slot", sc.calls)
	}
}

// Listings of new shapes at once, more than the read connections: each
// prepares its query while holding no connection, so none waits for a
// connection another holds while it waits for the first (a prepare
// inside the listing's transaction deadlocked the calendar's eight
// parallel days under load).
func TestListPostPageConcurrentShapes(t *testing.T) {
	s := openTest(t, Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	statuses := allStatuses
	for i := range 64 {
		wg.Go(func() {
			// 2^9 subsets of statuses: most of these 64 are new shapes.
			var sub []post.TargetStatus
			for j, st := range statuses {
				if (i+1)&(1<<j) != 0 {
					sub = append(sub, st)
				}
			}
			f := publishing.PostFilter{Statuses: sub, Limit: 5, From: time.Unix(0, 0), To: time.Now()}
			if _, err := s.ListPostPage(ctx, f); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// The statuses of a listing, in whatever order and repeated, make one
// query shape: one prepared statement, not one per permutation (which
// filled the cache's maxListStmts slots with the same query).
func TestListPostPageStatusOrderOneStatement(t *testing.T) {
	s := openTest(t, Options{})
	mustCreatePost(t, s, "p-held", tgt("acct-a", 1, post.Held))
	mustCreatePost(t, s, "p-failed", tgt("acct-a", 2, post.Failed))
	h, f, w := post.Held, post.Failed, post.Waiting
	var want []post.ID
	for i, statuses := range [][]post.TargetStatus{{h, f, w}, {h, w, f}, {f, h, w}, {f, w, h}, {w, h, f}, {w, f, h}, {w, f, h, f}} {
		pg, err := s.ListPostPage(t.Context(), publishing.PostFilter{Statuses: statuses})
		if err != nil {
			t.Fatalf("ListPostPage(%v) = %v", statuses, err)
		}
		got := postIDs(pg.Posts)
		if i == 0 {
			want = got
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ListPostPage(%v) posts (-first order +this order):\n%s", statuses, diff)
		}
	}
	s.lists.mu.Lock()
	n := len(s.lists.m)
	s.lists.mu.Unlock()
	if n != 1 {
		t.Errorf("%d prepared listing statements after one shape in 7 orders; want 1", n)
	}
}
