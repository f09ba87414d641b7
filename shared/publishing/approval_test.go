package publishing_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// approvalScheduler is the desk tests' scheduler with the approval path:
// it counts the schedules asked for.
type approvalScheduler struct {
	*storeScheduler
	approved atomic.Int32
}

func (a *approvalScheduler) Approved(context.Context, publishing.TargetRef) error {
	a.approved.Add(1)
	return nil
}

// newApprovalEnv is a desk env whose scheduler schedules approved
// targets, with the policy given and the account "plain" requiring
// approval.
func newApprovalEnv(t testing.TB, pol publishing.ApprovalPolicy) (*deskEnv, *approvalScheduler) {
	t.Helper()
	e := newDeskEnv(t)
	sched := &approvalScheduler{storeScheduler: e.sched}
	e.desk.Scheduler = sched
	ctx := context.Background()
	acc, err := e.store.GetAccount(ctx, "plain")
	if err != nil {
		t.Fatal(err)
	}
	acc.RequireApproval = true
	if err := e.store.PutAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	if err := e.desk.SetApprovalPolicy(ctx, pol); err != nil {
		t.Fatal(err)
	}
	return e, sched
}

func approvalDraft(id, author string, at time.Time, accounts ...string) post.Draft {
	d := post.Draft{ID: id, Body: "Approve me.", Author: author}
	for _, a := range accounts {
		d.Targets = append(d.Targets, post.DraftTarget{Account: a, At: at.Format(time.RFC3339)})
	}
	return d
}

func statuses(t testing.TB, e *deskEnv, id post.ID) map[post.AccountID]post.TargetStatus {
	t.Helper()
	p, err := e.store.GetPost(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	out := map[post.AccountID]post.TargetStatus{}
	for _, tg := range p.Targets {
		out[tg.Account] = tg.Status
	}
	return out
}

// A target to an account that requires approval, or any target when the
// workspace does, is created in needs_approval; the others are scheduled.
// The author is the caller: a keyed request's scope, the draft's Author
// otherwise, never the body.
func TestScheduleHoldsForApproval(t *testing.T) {
	slot := deskNow.Add(time.Hour)
	for _, tc := range []struct {
		name       string
		required   bool
		key        *publishing.KeyedRequest
		author     string
		want       map[post.AccountID]post.TargetStatus
		wantAuthor string
	}{
		{"account requires it", false, nil, "cli", map[post.AccountID]post.TargetStatus{"plain": post.NeedsApproval, "news": post.Scheduled}, "cli"},
		{"workspace requires it", true, nil, "cli", map[post.AccountID]post.TargetStatus{"plain": post.NeedsApproval, "news": post.NeedsApproval}, "cli"},
		{"keyed: the scope is the author", false, &publishing.KeyedRequest{Scope: "tok_alice", Key: "k", Fingerprint: "f",
			Encode: func(p post.Post) (int, []byte, error) { return 201, []byte(p.Author), nil }}, "mallory",
			map[post.AccountID]post.TargetStatus{"plain": post.NeedsApproval, "news": post.Scheduled}, "tok_alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, sched := newApprovalEnv(t, publishing.ApprovalPolicy{Required: tc.required})
			res, err := e.desk.Schedule(context.Background(), approvalDraft("p", tc.author, slot, "plain", "news"), nil, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, statuses(t, e, "p")); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			if res.Post.Author != tc.wantAuthor {
				t.Errorf("author %q, want %q", res.Post.Author, tc.wantAuthor)
			}
			if tc.key != nil && string(res.Body) != tc.wantAuthor {
				t.Errorf("the keyed answer was encoded from author %q, want %q", res.Body, tc.wantAuthor)
			}
			if n := sched.approved.Load(); n != 0 {
				t.Errorf("%d schedules for approved targets at creation, want 0", n)
			}
		})
	}
	// A draft's JSON cannot name its author.
	if _, err := post.DecodeDraft([]byte(`{"body": "x", "author": "tok_alice", "targets": []}`)); err == nil || !strings.Contains(err.Error(), "author") {
		t.Errorf("DecodeDraft with an author = %v, want it refused naming author", err)
	}
}

// Approve's rules, each on a fresh post waiting for approval on "plain"
// at deskNow+1h (or a slot that passed).
func TestApprove(t *testing.T) {
	future, passed := deskNow.Add(time.Hour), deskNow.Add(-time.Second)
	for _, tc := range []struct {
		name      string
		pol       publishing.ApprovalPolicy
		slot      time.Time
		req       publishing.ApproveRequest
		wantErr   error  // errors.Is
		wantField string // a *post.FieldError on it
		wantDone  string // the outcome's message prefix
		wantSlot  time.Time
		schedules int32
	}{
		{name: "approved at its slot", slot: future, req: publishing.ApproveRequest{By: "tok_bob"}, wantDone: "approved; scheduled for", wantSlot: future, schedules: 1},
		{name: "the author approves when allowed", slot: future, req: publishing.ApproveRequest{By: "tok_alice"}, wantDone: "approved", wantSlot: future, schedules: 1},
		{name: "the author may not when forbidden", pol: publishing.ApprovalPolicy{NoSelfApproval: true}, slot: future,
			req: publishing.ApproveRequest{By: "tok_alice"}, wantErr: publishing.ErrSelfApproval},
		{name: "someone else when forbidden", pol: publishing.ApprovalPolicy{NoSelfApproval: true}, slot: future,
			req: publishing.ApproveRequest{By: "tok_bob"}, wantDone: "approved", wantSlot: future, schedules: 1},
		{name: "slot passed 1 s ago, no new time", slot: passed, req: publishing.ApproveRequest{By: "tok_bob"}, wantField: "at"},
		{name: "at the slot itself, no new time", slot: deskNow, req: publishing.ApproveRequest{By: "tok_bob"}, wantField: "at"},
		{name: "slot passed, a new time", slot: passed, req: publishing.ApproveRequest{By: "tok_bob", At: "2026-12-01T10:30:00+01:00"},
			wantDone: "approved; scheduled for 2026-12-01T09:30:00Z", wantSlot: deskNow.Add(90 * time.Minute), schedules: 1},
		{name: "a new time in the past", slot: passed, req: publishing.ApproveRequest{By: "tok_bob", At: "2026-12-01T07:00:00Z"}, wantField: "at"},
		{name: "a new time without an offset", slot: passed, req: publishing.ApproveRequest{By: "tok_bob", At: "2026-12-01T10:30"}, wantField: "at"},
		{name: "unknown account", slot: future, req: publishing.ApproveRequest{By: "tok_bob", Account: "news"}, wantField: "account"},
		{name: "unknown post", slot: future, req: publishing.ApproveRequest{Post: "nope", By: "tok_bob"}, wantErr: post.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, sched := newApprovalEnv(t, tc.pol)
			ctx := context.Background()
			p := post.Post{ID: "p", Body: "Approve me.", Author: "tok_alice", CreatedAt: deskNow,
				Targets: []post.Target{{Account: "plain", Slot: tc.slot, Status: post.NeedsApproval, UpdatedAt: deskNow}}}
			if err := e.store.CreatePost(ctx, p); err != nil {
				t.Fatal(err)
			}
			if tc.req.Post == "" {
				tc.req.Post = "p"
			}
			out, err := e.desk.Approve(ctx, tc.req)
			var fe *post.FieldError
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Approve = %v, want %v", err, tc.wantErr)
				}
			case tc.wantField != "":
				if !errors.As(err, &fe) || fe.Field != tc.wantField {
					t.Fatalf("Approve = %v, want a field error on %q", err, tc.wantField)
				}
				t.Logf("refused: %v", fe)
			case err != nil:
				t.Fatalf("Approve = %v", err)
			case len(out) != 1 || !out[0].Done || !strings.HasPrefix(out[0].Message, tc.wantDone):
				t.Fatalf("Approve = %+v, want done %q", out, tc.wantDone)
			}
			got, err := e.store.GetPost(ctx, "p")
			if err != nil {
				t.Fatal(err)
			}
			tg := got.Targets[0]
			if tc.wantSlot.IsZero() {
				if tg.Status != post.NeedsApproval || !tg.Slot.Equal(tc.slot) {
					t.Errorf("a refused approval left the target %s at %s, want needs_approval at %s", tg.Status, tg.Slot, tc.slot)
				}
			} else if tg.Status != post.Scheduled || !tg.Slot.Equal(tc.wantSlot) || tg.Reason != "approved by "+tc.req.By {
				t.Errorf("target %s at %s (%q), want scheduled at %s, approved by %s", tg.Status, tg.Slot, tg.Reason, tc.wantSlot, tc.req.By)
			}
			if n := sched.approved.Load(); n != tc.schedules {
				t.Errorf("%d schedules made, want %d", n, tc.schedules)
			}
		})
	}
}

// Approving again, or a rejected post, says where it stands; a rejection
// needs a reason and cancels the target with it.
func TestApproveAgainAndReject(t *testing.T) {
	e, sched := newApprovalEnv(t, publishing.ApprovalPolicy{})
	ctx := context.Background()
	slot := deskNow.Add(time.Hour)
	for _, id := range []post.ID{"a", "r"} {
		if err := e.store.CreatePost(ctx, post.Post{ID: id, Body: "x", CreatedAt: deskNow, Targets: []post.Target{
			{Account: "plain", Slot: slot, Status: post.NeedsApproval, UpdatedAt: deskNow},
			{Account: "news", Slot: slot, Status: post.Scheduled, UpdatedAt: deskNow}}}); err != nil {
			t.Fatal(err)
		}
	}
	type out struct {
		Account post.AccountID
		Done    bool
		Message string
	}
	brief := func(os []publishing.TargetOutcome) (r []out) {
		for _, o := range os {
			r = append(r, out{o.Account, o.Done, o.Message})
		}
		return r
	}
	for _, step := range []struct {
		name string
		do   func() ([]publishing.TargetOutcome, error)
		want []out
	}{
		{"approve", func() ([]publishing.TargetOutcome, error) {
			return e.desk.Approve(ctx, publishing.ApproveRequest{Post: "a", By: "b"})
		},
			[]out{{"plain", true, "approved; scheduled for 2026-12-01T09:00:00Z"}, {"news", true, "already approved; scheduled for 2026-12-01T09:00:00Z"}}},
		{"approve again", func() ([]publishing.TargetOutcome, error) {
			return e.desk.Approve(ctx, publishing.ApproveRequest{Post: "a", By: "c"})
		},
			[]out{{"plain", true, "already approved; scheduled for 2026-12-01T09:00:00Z"}, {"news", true, "already approved; scheduled for 2026-12-01T09:00:00Z"}}},
		{"reject an approved post", func() ([]publishing.TargetOutcome, error) { return e.desk.Reject(ctx, "a", "plain", "no", "c") },
			[]out{{"plain", false, "does not wait for approval (scheduled); to stop it, cancel it"}}},
		{"reject", func() ([]publishing.TargetOutcome, error) { return e.desk.Reject(ctx, "r", "", "off brand", "b") },
			[]out{{"plain", true, "rejected; it will not be sent"}, {"news", false, "does not wait for approval (scheduled); to stop it, cancel it"}}},
		{"reject again", func() ([]publishing.TargetOutcome, error) { return e.desk.Reject(ctx, "r", "plain", "still no", "c") },
			[]out{{"plain", true, "already rejected by b: off brand"}}},
		{"approve a rejected post", func() ([]publishing.TargetOutcome, error) {
			return e.desk.Approve(ctx, publishing.ApproveRequest{Post: "r", Account: "plain", By: "c"})
		}, []out{{"plain", false, "not approved: rejected by b: off brand"}}},
	} {
		got, err := step.do()
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if diff := cmp.Diff(step.want, brief(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", step.name, diff)
		}
	}
	if n := sched.approved.Load(); n != 1 {
		t.Errorf("%d schedules, want 1", n)
	}
	for _, reason := range []string{"", "  ", strings.Repeat("x", publishing.MaxDecisionReasonBytes+1)} {
		var fe *post.FieldError
		if _, err := e.desk.Reject(ctx, "a", "", reason, "b"); !errors.As(err, &fe) || fe.Field != "reason" {
			t.Errorf("Reject with reason %.10q = %v, want a field error on reason", reason, err)
		}
	}
}

// A waiting post can be moved (it still waits) and cancelled; it is
// listed in the approval queue by slot, overdue once its slot passed.
func TestWaitingPostMovedCancelledListed(t *testing.T) {
	e, sched := newApprovalEnv(t, publishing.ApprovalPolicy{})
	ctx := context.Background()
	for i, slot := range []time.Time{deskNow.Add(time.Hour), deskNow.Add(-time.Minute), deskNow.Add(2 * time.Hour)} {
		id := post.ID([]string{"later", "overdue", "last"}[i])
		if err := e.store.CreatePost(ctx, post.Post{ID: id, Body: "text of " + string(id), Author: "tok_alice", CreatedAt: deskNow,
			Targets: []post.Target{{Account: "plain", Slot: slot, Status: post.NeedsApproval, UpdatedAt: deskNow}}}); err != nil {
			t.Fatal(err)
		}
	}
	q, err := e.desk.ListApprovals(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := publishing.ApprovalQueue{More: true, Overdue: 1, Items: []publishing.ApprovalItem{
		{Post: "overdue", Account: "plain", Slot: deskNow.Add(-time.Minute), Author: "tok_alice", Body: "text of overdue", CreatedAt: deskNow, Overdue: true},
		{Post: "later", Account: "plain", Slot: deskNow.Add(time.Hour), Author: "tok_alice", Body: "text of later", CreatedAt: deskNow},
	}}
	if diff := cmp.Diff(want, q); diff != "" {
		t.Errorf("ListApprovals (-want +got):\n%s", diff)
	}

	moved := deskNow.Add(3 * time.Hour)
	out, err := e.desk.Reschedule(ctx, "overdue", "", moved)
	if err != nil || len(out) != 1 || !out[0].Done {
		t.Fatalf("Reschedule of a waiting post = %+v, %v", out, err)
	}
	p, _ := e.store.GetPost(ctx, "overdue")
	if tg := p.Targets[0]; tg.Status != post.NeedsApproval || !tg.Slot.Equal(moved) {
		t.Errorf("after the move: %s at %s, want needs_approval at %s", tg.Status, tg.Slot, moved)
	}
	out, err = e.desk.Cancel(ctx, "later", "")
	if err != nil || len(out) != 1 || !out[0].Done {
		t.Fatalf("Cancel of a waiting post = %+v, %v", out, err)
	}
	if got := statuses(t, e, "later")["plain"]; got != post.Cancelled {
		t.Errorf("after the cancel: %s, want cancelled", got)
	}
	if n := sched.approved.Load(); n != 0 {
		t.Errorf("%d schedules, want 0 (neither a move nor a cancel approves)", n)
	}
}

// The gauges count the targets waiting for approval at or after their
// slot, as the sweeper emits them.
func TestGaugesCountApprovalsOverdue(t *testing.T) {
	e, _ := newApprovalEnv(t, publishing.ApprovalPolicy{})
	ctx := context.Background()
	for i, slot := range []time.Time{deskNow.Add(-time.Hour), deskNow, deskNow.Add(time.Nanosecond)} {
		if err := e.store.CreatePost(ctx, post.Post{ID: post.ID([]string{"a", "b", "c"}[i]), Body: "x", CreatedAt: deskNow,
			Targets: []post.Target{{Account: "plain", Slot: slot, Status: post.NeedsApproval, UpdatedAt: deskNow}}}); err != nil {
			t.Fatal(err)
		}
	}
	g := publishing.Gauges{At: deskNow}
	if err := (publishing.GaugeSources{Ledger: e.store, Targets: e.store}).ReadTargets(ctx, &g); err != nil {
		t.Fatal(err)
	}
	if g.ApprovalOverdue != 2 {
		t.Errorf("ApprovalOverdue = %d, want 2 (the slot an hour ago and the one now)", g.ApprovalOverdue)
	}
}

// A job for a target waiting for approval (a replayed or forged one:
// nothing triggers such a target) sends nothing and writes no ledger
// entry.
func TestPublisherNeverSendsAWaitingTarget(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	ctx := context.Background()
	slot := e.clock.Now().Truncate(time.Second)
	p := post.Post{ID: "waiting", Body: "Not approved yet.", CreatedAt: slot,
		Targets: []post.Target{{Account: e.account.ID, Slot: slot, Status: post.NeedsApproval, UpdatedAt: slot}}}
	if err := e.store.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	job := publishing.Job{Post: p.ID, Account: e.account.ID, Slot: slot}
	if out := e.publish(job); out.Result != publishing.Skipped {
		t.Errorf("Publish = %+v, want skipped", out)
	}
	if _, err := e.store.Get(ctx, ledger.PublishKey(string(job.Account), string(job.Post), job.Slot)); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("ledger entry: %v, want none", err)
	}
	if got := len(e.sb.Statuses(e.sbAcct.ID)); got != 0 {
		t.Errorf("%d statuses on the platform, want 0", got)
	}
	if tg := e.target(job); tg.Status != post.NeedsApproval {
		t.Errorf("target %s, want needs_approval", tg.Status)
	}
}
