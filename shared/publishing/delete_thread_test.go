package publishing_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/platform/mastodon"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// orderTransport records the ids of the statuses DELETEd, in order, and
// answers 403 to the DELETE of forbid (the sandbox cannot refuse one).
type orderTransport struct {
	mu      sync.Mutex
	deleted []string
	forbid  string
}

func (t *orderTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodDelete {
		id := strings.TrimPrefix(r.URL.Path, "/api/v1/statuses/")
		t.mu.Lock()
		t.deleted = append(t.deleted, id)
		forbid := t.forbid
		t.mu.Unlock()
		if id == forbid {
			return answer(r, http.StatusForbidden, `{"error":"This action is not allowed"}`), nil
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (t *orderTransport) sent() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.deleted...)
}

// threadDeleteEnv is an env with a 4-part thread published, and a
// Deleter and Operator on it.
type threadDeleteEnv struct {
	*env
	job   publishing.Job
	parts []string // the parts' remote ids, part 1 first
	tr    *orderTransport
	del   *publishing.Deleter
	op    *publishing.Operator
	key   ledger.Key
}

func newThreadDeleteEnv(t *testing.T) *threadDeleteEnv {
	t.Helper()
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	job := e.scheduleThread("th", fourParts[0], fourParts[1:]...)
	if out := e.publish(job); out.Result != publishing.Published {
		t.Fatalf("setup: publish = %+v", out)
	}
	te := &threadDeleteEnv{env: e, job: job, tr: &orderTransport{}}
	for k := 1; k <= 4; k++ {
		en, _ := e.partEntry(job, k)
		te.parts = append(te.parts, en.RemoteID)
	}
	te.key = ledger.DeleteKey(string(job.Account), te.parts[0])
	te.del = &publishing.Deleter{
		Ledger: e.store, Posts: e.store, Accounts: e.store,
		Platforms: mastodon.Connector{ClientID: "sandbox-client", ClientSecret: "sandbox-secret", HTTPClient: &http.Client{Transport: te.tr}},
		Now:       e.clock.Now, Owner: "deleter-1", CallTimeout: 10 * unit, RecordMargin: 10 * unit, Lease: time.Minute,
		ReadBacks: 3, ReadBackWait: unit / 4, Logger: e.pub.Logger,
	}
	te.op = &publishing.Operator{Ledger: e.store, Confirmer: e.conf, Tasks: &recordingTasks{}, Now: e.clock.Now, Logger: e.pub.Logger}
	return te
}

func (te *threadDeleteEnv) approve() {
	te.t.Helper()
	if _, err := te.op.Decide(context.Background(), te.key, publishing.Decision{Action: publishing.DecisionRelease}); err != nil {
		te.t.Fatalf("approve: %v", err)
	}
}

func reversed(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[len(ids)-1-i] = id
	}
	return out
}

// Deleting a thread deletes its parts last part first, each through a
// delete entry of its own, and only once the thread's delete is
// approved; the target is deleted with part 1, last.
func TestDeleteThreadLastPartFirst(t *testing.T) {
	te := newThreadDeleteEnv(t)
	ctx := context.Background()
	req, err := te.del.Request(ctx, te.job.Post, "", false)
	if err != nil || req.Entry.Key != te.key || req.Entry.State != ledger.Held {
		t.Fatalf("request: %+v %v; want the thread's entry (part 1's remote id) held", req.Entry, err)
	}
	if _, err := te.del.Run(ctx, te.key); !errors.Is(err, publishing.ErrNotApproved) {
		t.Fatalf("run before approval: %v", err)
	}
	for k := 2; k <= 4; k++ {
		if _, err := te.store.Get(ctx, ledger.DeleteKey(string(te.job.Account), te.parts[k-1])); !errors.Is(err, ledger.ErrNotFound) {
			t.Errorf("part %d has a delete entry before the thread's was approved (%v)", k, err)
		}
	}
	te.approve()
	res, err := te.del.Run(ctx, te.key)
	if err != nil || res.Outcome != publishing.DeleteDone || res.Sent != 4 {
		t.Fatalf("run: %+v, %v; want deleted with 4 DELETEs", res, err)
	}
	if d := cmp.Diff(reversed(te.parts), te.tr.sent()); d != "" {
		t.Errorf("DELETE order (-want: last part first +got):\n%s", d)
	}
	if left := te.sb.Statuses(te.sbAcct.ID); len(left) != 0 {
		t.Errorf("%d statuses left on the sandbox", len(left))
	}
	for k, remote := range te.parts {
		en, err := te.store.Get(ctx, ledger.DeleteKey(string(te.job.Account), remote))
		wantPost := ledger.PartSubject("th", k+1)
		if err != nil || en.State != ledger.Confirmed || en.Post != wantPost {
			t.Errorf("part %d's delete entry: %s post %q (%v); want confirmed for %s", k+1, en.State, en.Post, err, wantPost)
		}
	}
	if tg := te.target(te.job); tg.Status != post.Deleted || tg.RemoteID != te.parts[0] {
		t.Errorf("target %s %s, want deleted keeping part 1's id", tg.Status, tg.RemoteID)
	}
	again, err := te.del.Run(ctx, te.key)
	if err != nil || again.Outcome != publishing.DeleteAlready || len(te.tr.sent()) != 4 {
		t.Errorf("a second run: %+v %v, %d DELETEs in all", again, err, len(te.tr.sent()))
	}
}

// A part whose DELETE the platform refuses stops the thread's delete
// there, naming the part: the parts before it (and part 1) stay, and so
// does the published target.
func TestDeleteThreadStopsAtARefusedPart(t *testing.T) {
	te := newThreadDeleteEnv(t)
	ctx := context.Background()
	te.tr.forbid = te.parts[2]
	if _, err := te.del.Request(ctx, te.job.Post, "", true); err != nil {
		t.Fatal(err)
	}
	res, err := te.del.Run(ctx, te.key)
	if !errors.Is(err, publishing.ErrDeleteFailed) || res.Outcome != publishing.DeleteFailed || !strings.HasPrefix(res.Message, "thread part 3 of 4: ") {
		t.Errorf("run: %+v, %v; want failed naming part 3", res, err)
	}
	if d := cmp.Diff([]string{te.parts[3], te.parts[2]}, te.tr.sent()); d != "" {
		t.Errorf("DELETEs (-want +got):\n%s", d)
	}
	if n := len(te.sb.Statuses(te.sbAcct.ID)); n != 3 {
		t.Errorf("%d statuses left, want parts 1-3", n)
	}
	if tg := te.target(te.job); tg.Status != post.Published {
		t.Errorf("target %s, want still published", tg.Status)
	}
	if en, _ := te.store.Get(ctx, te.key); en.State != ledger.Released {
		t.Errorf("the thread's entry is %s, want released (approved, part 1 not sent)", en.State)
	}
}

// A part's delete entry written and never released (the Run died in
// between) is held for approval by whoever finds it, never sent; the
// next Run of the approved thread carries the thread's approval to it.
func TestDeleteThreadPartEntryLeftPending(t *testing.T) {
	te := newThreadDeleteEnv(t)
	ctx := context.Background()
	if _, err := te.del.Request(ctx, te.job.Post, "", true); err != nil {
		t.Fatal(err)
	}
	key := ledger.DeleteKey(string(te.job.Account), te.parts[3])
	e := ledger.NewEntry(key, ledger.Delete, string(te.job.Account), te.parts[3], time.Time{}, "", "dead-deleter", te.clock.Now(), time.Second)
	e.Post, e.SentAt = ledger.PartSubject("th", 4), time.Time{}
	if err := te.store.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	te.clock.Advance(time.Minute)
	held, err := te.del.ResolveStale(ctx, e)
	if err != nil || held.State != ledger.Held || held.Reason != publishing.ReasonAwaitingApproval {
		t.Fatalf("resolve of the dead Run's part entry: %s %q %v; want held awaiting approval", held.State, held.Reason, err)
	}
	if n := len(te.tr.sent()); n != 0 {
		t.Fatalf("%d DELETEs sent while resolving", n)
	}
	res, err := te.del.Run(ctx, te.key)
	if err != nil || res.Outcome != publishing.DeleteDone {
		t.Fatalf("run: %+v %v", res, err)
	}
	if d := cmp.Diff(reversed(te.parts), te.tr.sent()); d != "" {
		t.Errorf("DELETE order (-want +got):\n%s", d)
	}
	hist, err := te.store.History(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var moves []string
	for _, h := range hist {
		moves = append(moves, string(h.From)+"→"+string(h.To)+" "+h.Reason)
	}
	if !slices.Contains(moves, "held→released "+publishing.ReasonApprovedWithThread) {
		t.Errorf("part 4's delete history: %q; want it released with the thread's approval", moves)
	}
}
