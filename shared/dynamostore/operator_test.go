package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// opSlot is the first slot of the operator tests' posts.
var opSlot = time.Date(2031, time.May, 4, 9, 0, 0, 0, time.UTC)

// opPost is a post with one target per account, all at slot.
func opPost(id post.ID, slot time.Time, accounts ...post.AccountID) post.Post {
	p := post.Post{ID: id, Body: "Operator test " + string(id) + ".", CreatedAt: opSlot.Add(-time.Hour)}
	for _, a := range accounts {
		p.Targets = append(p.Targets, post.Target{Account: a, Slot: slot, Status: post.Scheduled, UpdatedAt: p.CreatedAt})
	}
	return p
}

// opMove moves a target's status (from scheduled through the statuses a
// publish passes) as the pipeline would.
func opMove(t *testing.T, s *Store, id post.ID, account post.AccountID, path ...post.TargetUpdate) {
	t.Helper()
	for _, u := range path {
		if _, err := s.UpdateTarget(t.Context(), id, account, u); err != nil {
			t.Fatalf("move %s/%s to %s: %v", id, account, u.Status, err)
		}
	}
}

func ids(posts []post.Post) []post.ID {
	out := []post.ID{}
	for _, p := range posts {
		out = append(out, p.ID)
	}
	return out
}

func TestListPosts(t *testing.T) {
	e := newEnv(t)
	rec := &recorder{}
	s := e.store(t, e.tables(t), rec, Options{})
	ctx := t.Context()
	at := opSlot.Add(-time.Minute)
	// a: news at +2h; b: news at +3h and other at +1h; c: other, published;
	// d: news, cancelled; e: news, waiting.
	for _, p := range []post.Post{
		opPost("a", opSlot.Add(2*time.Hour), "news"),
		opPost("b", opSlot.Add(3*time.Hour), "news", "other"),
		opPost("c", opSlot.Add(4*time.Hour), "other"),
		opPost("d", opSlot.Add(5*time.Hour), "news"),
		opPost("e", opSlot.Add(6*time.Hour), "news"),
	} {
		mustDo(t, s.CreatePost(ctx, p))
	}
	if _, err := s.rescheduleTarget(ctx, "b", "other", opSlot.Add(time.Hour), at); err != nil {
		t.Fatal(err)
	}
	opMove(t, s, "c", "other", post.TargetUpdate{Status: post.Triggered, At: at}, post.TargetUpdate{Status: post.Published, RemoteID: "r-c", At: at})
	opMove(t, s, "d", "news", post.TargetUpdate{Status: post.Cancelled, Reason: "cancelled by operator", At: at})
	opMove(t, s, "e", "news", post.TargetUpdate{Status: post.Triggered, At: at},
		post.TargetUpdate{Status: post.Waiting, Reason: "throttled", NextTry: opSlot.Add(7 * time.Hour), At: at})
	rec.take()

	tests := []struct {
		name string
		f    publishing.PostFilter
		want []post.ID
	}{
		{"every post, by earliest slot", publishing.PostFilter{}, []post.ID{"b", "a", "c", "d", "e"}},
		{"scheduled", publishing.PostFilter{Statuses: []post.TargetStatus{post.Scheduled}}, []post.ID{"b", "a"}},
		{"scheduled on news: b by its news target", publishing.PostFilter{Statuses: []post.TargetStatus{post.Scheduled}, Account: "news"}, []post.ID{"a", "b"}},
		{"account only", publishing.PostFilter{Account: "other"}, []post.ID{"b", "c"}},
		{"two statuses", publishing.PostFilter{Statuses: []post.TargetStatus{post.Waiting, post.Published, post.Waiting}}, []post.ID{"c", "e"}},
		{"nothing matches", publishing.PostFilter{Statuses: []post.TargetStatus{post.Failed}}, []post.ID{}},
		{"limit: the first in index order", publishing.PostFilter{Statuses: []post.TargetStatus{post.Scheduled}, Limit: 1}, []post.ID{"b"}},
		// In index order d (cancelled, listed by its update a minute before
		// opSlot) and a (scheduled at +2h) come before b (+3h on news);
		// the page is then ordered by slot.
		{"limit on an account", publishing.PostFilter{Account: "news", Statuses: []post.TargetStatus{post.Scheduled, post.Cancelled}, Limit: 2}, []post.ID{"a", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ListPosts(ctx, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
				t.Errorf("posts (-want +got):\n%s", diff)
			}
			for _, p := range got {
				if len(p.Targets) == 0 || p.Body == "" {
					t.Errorf("post %s listed without its body or targets: %+v", p.ID, p)
				}
			}
			calls := rec.take()
			if slices.Contains(ops(calls), "Scan") {
				t.Errorf("ListPosts scanned: %v", ops(calls))
			}
			if n := countOps(calls, "Query"); n > len(allStatuses)*StatusShards+len(got)+len(allStatuses)*StatusShards {
				t.Errorf("%d Queries for %d posts", n, len(got))
			}
		})
	}
	if _, err := s.ListPosts(ctx, publishing.PostFilter{Statuses: []post.TargetStatus{"sent"}}); err == nil || !strings.Contains(err.Error(), `unknown status "sent"`) {
		t.Errorf("an unknown status: %v", err)
	}
}

func countOps(calls []call, op string) int {
	n := 0
	for _, c := range calls {
		if c.Op == op {
			n++
		}
	}
	return n
}

func TestWaiting(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, e.tables(t), nil, Options{})
	ctx := t.Context()
	at := opSlot
	wait := func(id post.ID, next time.Duration, reason string) {
		mustDo(t, s.CreatePost(ctx, opPost(id, opSlot, "news")))
		opMove(t, s, id, "news", post.TargetUpdate{Status: post.Triggered, At: at},
			post.TargetUpdate{Status: post.Waiting, Reason: reason, NextTry: opSlot.Add(next), At: at})
	}
	wait("late", 3*time.Hour, "throttled until later")
	wait("soon", time.Minute, "instance unreachable")
	wait("gone", time.Hour, "throttled")
	mustDo(t, s.CreatePost(ctx, opPost("scheduled", opSlot, "news")))
	// One leaves waiting: it is not listed, whatever the index still says.
	opMove(t, s, "gone", "news", post.TargetUpdate{Status: post.Triggered, At: at})

	tests := []struct {
		name  string
		limit int
		want  []WaitingTarget
	}{
		{"all, next try first", 0, []WaitingTarget{
			{Post: "soon", Account: "news", NextTry: opSlot.Add(time.Minute), Reason: "instance unreachable"},
			{Post: "late", Account: "news", NextTry: opSlot.Add(3 * time.Hour), Reason: "throttled until later"},
		}},
		{"limit", 1, []WaitingTarget{{Post: "soon", Account: "news", NextTry: opSlot.Add(time.Minute), Reason: "instance unreachable"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Waiting(ctx, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("waiting (-want +got):\n%s", diff)
			}
		})
	}
}

// opEntry writes the publish entry of post id on news at slot, moved
// through the given steps from pending.
func opEntry(t *testing.T, s *Store, id post.ID, slot time.Time, steps ...func(ledger.Entry) (ledger.Entry, error)) {
	t.Helper()
	now := time.Now()
	e := ledger.NewEntry(ledger.PublishKey("news", string(id), slot), ledger.Publish, "news", string(id), slot, "fp", "worker", now, time.Minute)
	mustDo(t, s.Create(t.Context(), e))
	for _, step := range steps {
		next, err := step(e)
		mustDo(t, err)
		mustDo(t, s.Update(t.Context(), e, next))
		e = next
	}
}

func TestRescheduleTarget(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, e.tables(t), nil, Options{})
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Second)
	newSlot := opSlot.Add(24 * time.Hour)
	released := func(e ledger.Entry) (ledger.Entry, error) { return e.Release("throttled", now) }
	unknown := func(e ledger.Entry) (ledger.Entry, error) { return e.MarkUnknown("timeout", now) }
	held := func(e ledger.Entry) (ledger.Entry, error) { return e.Hold("blocked", "", now) }
	reacquired := func(e ledger.Entry) (ledger.Entry, error) { return e.Reacquire("worker", now, time.Minute) }
	tests := []struct {
		name string
		// setup moves the target and writes ledger entries; nil keeps it scheduled.
		setup   func(id post.ID)
		account post.AccountID
		wantErr error
		// wantMsg is part of the refusal's message.
		wantMsg string
	}{
		{"scheduled", nil, "news", nil, ""},
		{"waiting: reason and next try cleared", func(id post.ID) {
			opMove(t, s, id, "news", post.TargetUpdate{Status: post.Triggered, At: now},
				post.TargetUpdate{Status: post.Waiting, Reason: "throttled", NextTry: now.Add(time.Hour), At: now})
			opEntry(t, s, id, opSlot, released)
		}, "news", nil, ""},
		{"held by the blocklist, no entry", func(id post.ID) {
			opMove(t, s, id, "news", post.TargetUpdate{Status: post.Triggered, At: now}, post.TargetUpdate{Status: post.Held, Reason: "blocked_term", At: now})
		}, "news", nil, ""},
		{"held, entry held before any send", func(id post.ID) {
			opMove(t, s, id, "news", post.TargetUpdate{Status: post.Triggered, At: now}, post.TargetUpdate{Status: post.Held, Reason: "dedup", At: now})
			opEntry(t, s, id, opSlot, held)
		}, "news", nil, ""},
		{"triggered", func(id post.ID) {
			opMove(t, s, id, "news", post.TargetUpdate{Status: post.Triggered, At: now})
		}, "news", post.ErrConflict, "target is triggered"},
		{"published", func(id post.ID) {
			opMove(t, s, id, "news", post.TargetUpdate{Status: post.Triggered, At: now}, post.TargetUpdate{Status: post.Published, RemoteID: "r", At: now})
		}, "news", post.ErrConflict, "target is published"},
		{"scheduled, but an entry is pending under the old slot", func(id post.ID) {
			opEntry(t, s, id, opSlot)
		}, "news", post.ErrConflict, "is pending"},
		{"waiting after a send that may have landed", func(id post.ID) {
			opMove(t, s, id, "news", post.TargetUpdate{Status: post.Triggered, At: now},
				post.TargetUpdate{Status: post.Waiting, Reason: "throttled", NextTry: now.Add(time.Hour), At: now})
			opEntry(t, s, id, opSlot, unknown, released)
		}, "news", post.ErrConflict, "1 attempt(s) may have been sent"},
		{"released and re-acquired", func(id post.ID) {
			opMove(t, s, id, "news", post.TargetUpdate{Status: post.Triggered, At: now},
				post.TargetUpdate{Status: post.Waiting, Reason: "throttled", NextTry: now.Add(time.Hour), At: now})
			opEntry(t, s, id, opSlot, released, reacquired)
		}, "news", post.ErrConflict, "is pending"},
		{"no target on the account", nil, "ghost", post.ErrNotFound, "has no target for account ghost"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := post.ID("r" + string(rune('a'+i)))
			mustDo(t, s.CreatePost(ctx, opPost(id, opSlot, "news")))
			if tt.setup != nil {
				tt.setup(id)
			}
			before, err := s.GetPost(ctx, id)
			mustDo(t, err)
			got, err := s.RescheduleTarget(ctx, id, tt.account, newSlot, now)
			after, gerr := s.GetPost(ctx, id)
			mustDo(t, gerr)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantMsg) {
					t.Fatalf("RescheduleTarget = %v, want %v mentioning %q", err, tt.wantErr, tt.wantMsg)
				}
				if diff := cmp.Diff(before, after); diff != "" {
					t.Errorf("a refused move changed the post (-before +after):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := post.Target{Account: "news", Slot: newSlot, Status: post.Scheduled, UpdatedAt: now}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("returned target (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, after.Targets[0]); diff != "" {
				t.Errorf("stored target (-want +got):\n%s", diff)
			}
			due, err := s.Due(ctx, newSlot, 0)
			mustDo(t, err)
			if !slices.ContainsFunc(due, func(r publishing.TargetRef) bool { return r.Post == id && r.Slot.Equal(newSlot) }) {
				t.Errorf("Due at the new slot does not list %s: %+v", id, due)
			}
		})
	}
	if _, err := s.RescheduleTarget(ctx, "ghost", "news", newSlot, now); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("an unknown post: %v", err)
	}
}

// sendDuringMove is a DynamoDB client that, right after the move of a
// target lands, runs during: a publisher that wrote its ledger entry
// before the move (and re-read the post before it, so it sends).
type sendDuringMove struct {
	API
	once   sync.Once
	during func()
}

func (c *sendDuringMove) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := c.API.UpdateItem(ctx, in, optFns...)
	if err == nil && strings.HasSuffix(*in.TableName, PostsTable) {
		c.once.Do(c.during)
	}
	return out, err
}

// A send that started under the old slot while the target was being
// moved: the move is undone, the target is as it was, and the refusal
// says why. If the target moved on meanwhile, the error says it could not
// be put back.
func TestRescheduleUndoneWhenASendStartedDuringTheMove(t *testing.T) {
	e := newEnv(t)
	prefix := e.tables(t)
	plain := e.store(t, prefix, nil, Options{})
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Second)
	for _, tt := range []struct {
		name string
		// alsoTrigger: the target is also triggered at its new slot before the undo.
		alsoTrigger bool
		wantMsg     string
	}{
		{"undone", false, "is pending"},
		{"cannot be undone", true, "could not be undone"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := post.ID("u-" + strings.ReplaceAll(tt.name, " ", "-"))
			mustDo(t, plain.CreatePost(ctx, opPost(id, opSlot, "news")))
			before, err := plain.GetPost(ctx, id)
			mustDo(t, err)
			newSlot := opSlot.Add(time.Hour)
			racy := &sendDuringMove{API: plain.db, during: func() {
				opEntry(t, plain, id, opSlot)
				if tt.alsoTrigger {
					opMove(t, plain, id, "news", post.TargetUpdate{Status: post.Triggered, Slot: newSlot, At: now})
				}
			}}
			s, err := New(racy, Options{Prefix: prefix})
			mustDo(t, err)
			_, err = s.RescheduleTarget(ctx, id, "news", newSlot, now)
			if !errors.Is(err, post.ErrConflict) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("RescheduleTarget = %v, want a conflict mentioning %q", err, tt.wantMsg)
			}
			after, err := plain.GetPost(ctx, id)
			mustDo(t, err)
			if tt.alsoTrigger {
				if got := after.Targets[0]; got.Status != post.Triggered || !got.Slot.Equal(newSlot) {
					t.Errorf("target %+v, want it left triggered at the new slot", got)
				}
				return
			}
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("the move was not undone (-before +after):\n%s", diff)
			}
			due, err := plain.Due(ctx, opSlot, 0)
			mustDo(t, err)
			if !slices.ContainsFunc(due, func(r publishing.TargetRef) bool { return r.Post == id }) {
				t.Errorf("Due at the old slot does not list %s after the undo: %+v", id, due)
			}
		})
	}
}

// postReads counts the strongly consistent reads of whole posts (GetPost:
// a Query of the table, not of an index) among calls.
func postReads(calls []call) int {
	n := 0
	for _, c := range calls {
		if _, onIndex := c.Body["IndexName"]; c.Op == "Query" && !onIndex {
			n++
		}
	}
	return n
}

// A calendar window's cost in post reads (GetPost). The scheduled
// targets are indexed by slot, so a window over scheduled targets reads
// only the posts in it, however many are scheduled after it or were
// published before it. The
// other statuses are indexed by their last update (StatusIndex projects
// keys only: no slot to filter on), so a window over every status reads
// each settled post once — not once per target — before its slots are
// checked: the cost ListPostPage's comment states.
func TestListPostsWindowReads(t *testing.T) {
	e := newEnv(t)
	rec := &recorder{}
	s := e.store(t, e.tables(t), rec, Options{})
	ctx := t.Context()
	const settled = 12
	at := opSlot.Add(-time.Minute)
	for i := range settled {
		id := post.ID(fmt.Sprintf("old-%02d", i))
		mustDo(t, s.CreatePost(ctx, opPost(id, opSlot.Add(-time.Duration(48+i)*time.Hour), "news", "other")))
		for _, a := range []post.AccountID{"news", "other"} {
			opMove(t, s, id, a, post.TargetUpdate{Status: post.Triggered, At: at}, post.TargetUpdate{Status: post.Published, RemoteID: "r-" + string(id) + string(a), At: at})
		}
	}
	for _, id := range []post.ID{"in-1", "in-2"} {
		mustDo(t, s.CreatePost(ctx, opPost(id, opSlot.Add(2*time.Hour), "news")))
	}
	for i := range settled { // scheduled after the window
		mustDo(t, s.CreatePost(ctx, opPost(post.ID(fmt.Sprintf("later-%02d", i)), opSlot.Add(time.Duration(30+i)*time.Hour), "news")))
	}
	rec.take()
	window := publishing.PostFilter{From: opSlot, To: opSlot.Add(24 * time.Hour)}
	for _, tc := range []struct {
		name      string
		statuses  []post.TargetStatus
		wantReads int
	}{
		{"scheduled: only the posts in the window", []post.TargetStatus{post.Scheduled}, 2},
		{"every status: each settled post once", nil, 2 + settled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := window
			f.Statuses = tc.statuses
			got, err := s.ListPosts(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]post.ID{"in-1", "in-2"}, ids(got)); diff != "" {
				t.Errorf("posts (-want +got):\n%s", diff)
			}
			if n := postReads(rec.take()); n > tc.wantReads {
				t.Errorf("%d post reads, want at most %d", n, tc.wantReads)
			}
		})
	}
}
