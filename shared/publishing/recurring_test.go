package publishing_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/clocktest"
	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/recurring"
)

// recurringEnv is the recurring use cases on a desk env (a real SQLite
// store) with a movable clock and an X account in Berlin besides the
// desk's accounts.
type recurringEnv struct {
	*deskEnv
	clock *clocktest.Clock
	rec   *publishing.Recurring
}

func newRecurringEnv(t testing.TB) *recurringEnv {
	t.Helper()
	e := newDeskEnv(t)
	clock := clocktest.New(deskNow)
	e.desk.Now = clock.Now
	for _, a := range []post.Account{
		{ID: "x-news", Platform: "x", Handle: "@xnews", BaseURL: "https://api.x.com", CredentialRef: "x-news", Gate: post.GateAuto, TimeZone: "Europe/Berlin"},
		{ID: "berlin", Platform: "mastodon", Handle: "@berlin", BaseURL: "https://example.social", CredentialRef: "berlin", Gate: post.GateAuto, TimeZone: "Europe/Berlin"},
	} {
		if err := e.store.PutAccount(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	return &recurringEnv{deskEnv: e, clock: clock, rec: &publishing.Recurring{Rules: e.store, Desk: e.desk, Logger: e.desk.Logger}}
}

// posts lists every post in the store with its targets' statuses.
func (e *recurringEnv) posts(t testing.TB) map[post.ID]post.Post {
	t.Helper()
	out := map[post.ID]post.Post{}
	for _, id := range e.postIDs(t) {
		p, err := e.store.GetPost(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		out[id] = p
	}
	return out
}

// postStatuses says each post as "id status" (its first target's).
func postStatuses(ps map[post.ID]post.Post) []string {
	var out []string
	for id, p := range ps {
		out = append(out, fmt.Sprintf("%s %s", id, p.Targets[0].Status))
	}
	slices.Sort(out)
	return out
}

// A daily rule: its occurrences within the next 48 h become posts with
// deterministic ids, their texts taking turns; a second pass (and a
// third, after a day) creates only what came into the horizon.
func TestRecurringMaterializes(t *testing.T) {
	ctx := context.Background()
	e := newRecurringEnv(t)
	// deskNow is 2026-12-01 08:00Z (09:00 in Berlin).
	v, err := e.rec.Create(ctx, recurring.Draft{ID: "tips", Body: "Tip A", Variants: []string{"Tip B", "Tip C"}, Accounts: []string{"berlin"},
		EveryDays: 1, At: "10:00", Count: 5}, publishing.RuleOptions{Author: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Rule.TimeZone != "Europe/Berlin" || v.Rule.Version != 2 || v.Rule.Through.Index != 1 {
		t.Errorf("rule: zone %q version %d through %+v; want Berlin, written twice, through the second occurrence", v.Rule.TimeZone, v.Rule.Version, v.Rule.Through)
	}
	want := []string{"tips-20261201T0900Z scheduled", "tips-20261202T0900Z scheduled"}
	if diff := cmp.Diff(want, postStatuses(e.posts(t))); diff != "" {
		t.Fatalf("posts after create (-want +got):\n%s", diff)
	}
	if rep, err := e.rec.Materialize(ctx); err != nil || rep.Created != 0 {
		t.Errorf("a second pass at once: %+v, %v; want nothing created", rep, err)
	}
	e.clock.Advance(24 * time.Hour)
	if rep, err := e.rec.Materialize(ctx); err != nil || rep.Created != 1 || rep.Rules != 1 {
		t.Errorf("a day later: %+v, %v; want one created", rep, err)
	}
	e.clock.Advance(10 * 24 * time.Hour)
	if _, err := e.rec.Materialize(ctx); err != nil {
		t.Fatal(err)
	}
	ps := e.posts(t)
	var texts []string
	for _, id := range slices.Sorted(func(yield func(post.ID) bool) {
		for id := range ps {
			if !yield(id) {
				return
			}
		}
	}) {
		texts = append(texts, ps[id].Body)
	}
	// Five in all (count), the texts in turn; the last two were created
	// late (the clock jumped 10 days): their times passed first.
	if diff := cmp.Diff([]string{"Tip A", "Tip B", "Tip C"}, texts); diff != "" {
		t.Errorf("texts (-want +got):\n%s", diff)
	}
	r, err := e.store.GetRule(ctx, "tips")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Missed) != 2 || r.Through.Index != 4 {
		t.Errorf("missed %v, through %+v; want the two occurrences whose time passed, and all five settled", r.Missed, r.Through)
	}
}

// A rule that would repeat a text to an X account within X's 48 h is
// refused before anything is written, naming the field and the account;
// variants that take turns are accepted; X's own text repeating is
// refused on texts.x.
func TestRecurringRefusesRepeatedTextOnX(t *testing.T) {
	ctx := context.Background()
	e := newRecurringEnv(t)
	daily := recurring.Draft{ID: "daily", Body: "Good morning!", Accounts: []string{"berlin", "x-news"}, EveryDays: 1, At: "09:00"}
	_, err := e.rec.Create(ctx, daily, publishing.RuleOptions{})
	fes := publishing.FieldErrors(err)
	if len(fes) != 1 || fes[0].Field != "variants" || !strings.Contains(fes[0].Problem, "x-news") || !strings.Contains(fes[0].Fix, "at least 2 texts") {
		t.Fatalf("a daily repeat to X: %v; want one refusal on variants naming x-news and asking for 2 texts", err)
	}
	if _, err := e.store.GetRule(ctx, "daily"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("the refused rule was stored: %v", err)
	}
	if ids := e.postIDs(t); len(ids) != 0 {
		t.Errorf("the refused rule made posts: %v", ids)
	}

	withX := daily
	withX.Variants, withX.Texts = []string{"Morning, all!"}, map[string]string{"x": "gm"}
	_, err = e.rec.Create(ctx, withX, publishing.RuleOptions{})
	if fes := publishing.FieldErrors(err); len(fes) != 1 || fes[0].Field != "texts.x" {
		t.Fatalf("X's own text daily: %v; want a refusal on texts.x", err)
	}

	ok := daily
	ok.Variants = []string{"Morning, all!"}
	if _, err := e.rec.Create(ctx, ok, publishing.RuleOptions{}); err != nil {
		t.Fatalf("two texts in turn, daily: %v", err)
	}
	// Every 2 days the rule alone is fine, but its first occurrence would
	// meet the daily rule's same text: it is not created, and the rule
	// says why.
	every2 := daily
	every2.ID, every2.EveryDays = "every2", 2
	v, err := e.rec.Create(ctx, every2, publishing.RuleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Rule.Problem == nil || !strings.Contains(v.Rule.Problem.Reason, "post daily-") || v.Next[0].Created {
		t.Errorf("every 2 days next to the daily rule: problem %+v, next %+v", v.Rule.Problem, v.Next[0])
	}
	// On Mastodon alone the same text daily is fine.
	mastodonOnly := daily
	mastodonOnly.ID, mastodonOnly.Accounts = "m", []string{"berlin"}
	if _, err := e.rec.Create(ctx, mastodonOnly, publishing.RuleOptions{}); err != nil {
		t.Errorf("the same text daily on Mastodon: %v", err)
	}
}

// The text check against the store: an occurrence whose text an X
// account already has within 48 h is not created, and the rule says why.
func TestRecurringOccurrenceMeetsAPostOnX(t *testing.T) {
	ctx := context.Background()
	e := newRecurringEnv(t)
	d := post.Draft{ID: "launch", Body: "Weekly digest", Targets: []post.DraftTarget{{Account: "x-news", At: "2026-12-02T12:00:00Z"}}}
	if _, err := e.desk.Schedule(ctx, d, nil, nil); err != nil {
		t.Fatal(err)
	}
	v, err := e.rec.Create(ctx, recurring.Draft{ID: "digest", Body: "weekly  DIGEST", Accounts: []string{"x-news"}, Cron: "cron(0 9 ? * WED *)"}, publishing.RuleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Rule.Problem == nil || !strings.Contains(v.Rule.Problem.Reason, "post launch sends the same text") {
		t.Fatalf("problem %+v, want the clash with post launch", v.Rule.Problem)
	}
	if _, err := e.store.GetPost(ctx, "digest-20261202T0800Z"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("the clashing occurrence was created: %v", err)
	}
	if _, err := e.desk.Cancel(ctx, "launch", ""); err != nil {
		t.Fatal(err)
	}
	if rep, err := e.rec.Materialize(ctx); err != nil || rep.Created != 1 {
		t.Errorf("after the clashing post was cancelled: %+v, %v; want the occurrence created", rep, err)
	}
	if r, _ := e.store.GetRule(ctx, "digest"); r.Problem != nil {
		t.Errorf("the problem stayed: %+v", r.Problem)
	}
}

// An edit never re-sends a past occurrence: posts of slots that passed
// stay as they are, the old revision's future ones are cancelled
// (created or not: one not created yet is written cancelled, so a
// materializer still holding the old revision cannot create it), the new
// revision's take their place, and one already being sent keeps its slot.
func TestRecurringEdit(t *testing.T) {
	ctx := context.Background()
	e := newRecurringEnv(t)
	if _, err := e.rec.Create(ctx, recurring.Draft{ID: "tips", Body: "Old text", Accounts: []string{"berlin"}, EveryDays: 1, At: "10:00"},
		publishing.RuleOptions{}); err != nil {
		t.Fatal(err)
	}
	// A day on: 12-01 is past (published), 12-02 and 12-03 are created.
	e.clock.Advance(24 * time.Hour)
	if _, err := e.rec.Materialize(ctx); err != nil {
		t.Fatal(err)
	}
	publish(t, e, "tips-20261201T0900Z")
	// The occurrence of 12-02 is being sent: a pending ledger entry.
	e.clock.Set(time.Date(2026, 12, 2, 8, 59, 59, 0, time.UTC))
	ledgerEntry(t, e, "tips-20261202T0900Z")
	stale, err := e.store.GetRule(ctx, "tips")
	if err != nil {
		t.Fatal(err)
	}
	body := "New text"
	v, err := e.rec.Edit(ctx, "tips", recurring.Patch{Body: &body}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Rule.Revision != 2 || v.Rule.Retiring != nil || len(v.Rule.Keep) != 1 {
		t.Errorf("rule after the edit: revision %d, retiring %v, keep %v; want 2, none, the slot being sent", v.Rule.Revision, v.Rule.Retiring, v.Rule.Keep)
	}
	// A materializer that read the rule before the edit creates nothing,
	// even two minutes on, when its horizon reaches the old revision's
	// 12-04 occurrence.
	e.clock.Advance(2 * time.Minute)
	if _, err := staleMaterialize(ctx, e, stale); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"tips-20261201T0900Z published",    // past: untouched
		"tips-20261202T0900Z scheduled",    // being sent: kept
		"tips-20261203T0900Z cancelled",    // old revision, created: cancelled
		"tips-20261203T0900Z-r2 scheduled", // its replacement
		"tips-20261204T0900Z cancelled",    // old revision, not created yet: written cancelled
	}
	// The new revision's 12-04 is a second past the horizon of 48 h from
	// the edit; the old one's is written cancelled all the same (the
	// window of the retired ids reaches past the horizon).
	got := postStatuses(e.posts(t))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("posts after the edit (-want +got):\n%s", diff)
	}
	p, _ := e.store.GetPost(ctx, "tips-20261203T0900Z")
	if !strings.Contains(p.Targets[0].Reason, "replaced by revision 2") {
		t.Errorf("the replaced occurrence's reason: %q", p.Targets[0].Reason)
	}
	// Later passes never bring back a past slot.
	for range 3 {
		e.clock.Advance(24 * time.Hour)
		if _, err := e.rec.Materialize(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for id := range e.posts(t) {
		if strings.HasPrefix(string(id), "tips-20261201") && id != "tips-20261201T0900Z" || strings.HasPrefix(string(id), "tips-20261202") && id != "tips-20261202T0900Z" {
			t.Errorf("a past slot came back as %s", id)
		}
	}
}

// staleMaterialize runs the materializer as one that read the rule
// before an edit: through a store that answers every read with the stale
// rule.
func staleMaterialize(ctx context.Context, e *recurringEnv, stale recurring.Rule) (publishing.MaterializeReport, error) {
	m := *e.rec
	m.Rules = staleRules{RecurringRules: e.store, stale: stale}
	return m.Materialize(ctx)
}

type staleRules struct {
	publishing.RecurringRules
	stale recurring.Rule
}

func (s staleRules) ListRules(context.Context) ([]recurring.Rule, error) {
	return []recurring.Rule{s.stale}, nil
}

// publish marks a post's targets published, as the publisher would.
func publish(t testing.TB, e *recurringEnv, id post.ID) {
	t.Helper()
	p, err := e.store.GetPost(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range p.Targets {
		for _, st := range []post.TargetStatus{post.Triggered, post.Published} {
			if _, err := e.store.UpdateTarget(context.Background(), id, tg.Account, post.TargetUpdate{Status: st, RemoteID: "r-" + string(id), At: e.clock.Now()}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// ledgerEntry writes the pending publish entry of a post's first target,
// as a publisher that prepared it would.
func ledgerEntry(t testing.TB, e *recurringEnv, id post.ID) ledger.Entry {
	t.Helper()
	p, err := e.store.GetPost(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	tg := p.Targets[0]
	now := e.clock.Now()
	en := ledger.Entry{Key: ledger.PublishKey(string(tg.Account), string(id), tg.Slot), Action: ledger.Publish, Account: string(tg.Account),
		Subject: string(id), Slot: tg.Slot, State: ledger.Pending, Attempt: 1, Handle: "h", LeaseOwner: "w", LeaseUntil: now.Add(time.Minute),
		OpenSince: now, UpdatedAt: now, Post: string(id)}
	if err := e.store.Create(context.Background(), en); err != nil {
		t.Fatal(err)
	}
	return en
}

// Stop cancels what is still to come and creates nothing after.
func TestRecurringStop(t *testing.T) {
	ctx := context.Background()
	e := newRecurringEnv(t)
	if _, err := e.rec.Create(ctx, recurring.Draft{ID: "tips", Body: "Text", Accounts: []string{"berlin"}, EveryDays: 1, At: "10:00"},
		publishing.RuleOptions{}); err != nil {
		t.Fatal(err)
	}
	v, err := e.rec.Stop(ctx, "tips")
	if err != nil {
		t.Fatal(err)
	}
	if v.Rule.Active() || len(v.Next) != 0 {
		t.Errorf("stopped rule: active %v, next %v", v.Rule.Active(), v.Next)
	}
	for id, p := range e.posts(t) {
		if p.Targets[0].Status != post.Cancelled {
			t.Errorf("%s is %s after the stop", id, p.Targets[0].Status)
		}
	}
	e.clock.Advance(72 * time.Hour)
	if rep, err := e.rec.Materialize(ctx); err != nil || rep.Created != 0 {
		t.Errorf("after the stop: %+v, %v", rep, err)
	}
	if _, err := e.rec.Stop(ctx, "tips"); err != nil {
		t.Errorf("stopping twice: %v", err)
	}
	body := "x"
	if _, err := e.rec.Edit(ctx, "tips", recurring.Patch{Body: &body}, nil); !errors.Is(err, publishing.ErrRuleStopped) {
		t.Errorf("editing a stopped rule: %v", err)
	}
}

// An occurrence refused by validation (a term blocked after the rule
// was made) is not created, the rule says why, and it is created once
// the cause is gone; a keyed create retried is answered with its rule.
func TestRecurringProblemAndKeyedCreate(t *testing.T) {
	ctx := context.Background()
	e := newRecurringEnv(t)
	key := &publishing.KeyedRequest{Scope: "token-1", Key: "k1", Fingerprint: "f1"}
	d := recurring.Draft{Body: "Weekly news", Accounts: []string{"berlin"}, Cron: "cron(0 9 ? * WED *)"}
	first, err := e.rec.Create(ctx, d, publishing.RuleOptions{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.rec.Create(ctx, d, publishing.RuleOptions{Key: key})
	if err != nil || !again.Replayed || again.Rule.ID != first.Rule.ID {
		t.Fatalf("retried keyed create: %+v, %v", again.Rule.ID, err)
	}
	other := *key
	other.Fingerprint = "f2"
	if _, err := e.rec.Create(ctx, d, publishing.RuleOptions{Key: &other}); !errors.Is(err, publishing.ErrKeyReused) {
		t.Errorf("the key with another body: %v, want ErrKeyReused", err)
	}
	another := *key
	another.Key = "k2"
	withID := d
	withID.ID = string(first.Rule.ID)
	if _, err := e.rec.Create(ctx, withID, publishing.RuleOptions{Key: &another}); errors.Is(err, publishing.ErrKeyReused) || !slices.Equal(fields(err), []string{"id"}) {
		t.Errorf("another key naming the rule's id: %v, want a refusal on id", err)
	}

	term, _ := post.NewBlockedTerm("news", e.clock.Now())
	if _, err := e.store.AddBlockedTerm(ctx, term); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(7 * 24 * time.Hour)
	if rep, err := e.rec.Materialize(ctx); err != nil || rep.Problems != 1 || rep.Created != 0 {
		t.Fatalf("with the term blocked: %+v, %v", rep, err)
	}
	r, _ := e.store.GetRule(ctx, first.Rule.ID)
	if r.Problem == nil || !strings.Contains(r.Problem.Reason, "blocklist") {
		t.Fatalf("problem: %+v", r.Problem)
	}
	if _, err := e.store.RemoveBlockedTerm(ctx, term.Key); err != nil {
		t.Fatal(err)
	}
	if rep, err := e.rec.Materialize(ctx); err != nil || rep.Created != 1 {
		t.Errorf("with the term removed: %+v, %v", rep, err)
	}
}
