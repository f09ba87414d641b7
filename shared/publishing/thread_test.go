package publishing_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// scheduleThread stores a thread for the env's account, due now.
func (e *env) scheduleThread(id, body string, thread ...string) publishing.Job {
	e.t.Helper()
	slot := e.clock.Now().Truncate(time.Second)
	p := post.Post{ID: post.ID(id), Body: body, Thread: thread, CreatedAt: slot,
		Targets: []post.Target{{Account: e.account.ID, Slot: slot, Status: post.Triggered, UpdatedAt: slot}}}
	if err := e.store.CreatePost(context.Background(), p); err != nil {
		e.t.Fatalf("create post: %v", err)
	}
	return publishing.Job{Post: p.ID, Account: e.account.ID, Slot: slot}
}

// partEntry is the ledger entry of a thread's part.
func (e *env) partEntry(job publishing.Job, part int) (ledger.Entry, bool) {
	e.t.Helper()
	en, err := e.store.Get(context.Background(), ledger.PartKey(string(job.Account), string(job.Post), part, job.Slot))
	if errors.Is(err, ledger.ErrNotFound) {
		return ledger.Entry{}, false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return en, true
}

// chain is the account's statuses on the sandbox, oldest first, as
// "text ← text of the status it replies to".
func (e *env) chain() []string {
	e.t.Helper()
	sts := e.sb.Statuses(e.sbAcct.ID)
	text := map[string]string{}
	for _, st := range sts {
		text[st.ID] = st.Text
	}
	var out []string
	for i := len(sts) - 1; i >= 0; i-- {
		st := sts[i]
		parent := ""
		if st.InReplyToID != "" {
			parent = " ← " + text[st.InReplyToID]
			if _, ok := text[st.InReplyToID]; !ok {
				parent = " ← (missing " + st.InReplyToID + ")"
			}
		}
		out = append(out, st.Text+parent)
	}
	return out
}

var fourParts = []string{"1/4 A thread", "2/4 its second part", "3/4 its third", "4/4 the end"}

func wantChain(parts ...string) []string {
	out := []string{parts[0]}
	for i := 1; i < len(parts); i++ {
		out = append(out, parts[i]+" ← "+parts[i-1])
	}
	return out
}

// A thread goes out as a reply chain in one delivery: each part its own
// ledger entry (part 1 with the key of a post without a thread), each
// replying to the one before; the target is published with part 1's id.
func TestThreadPublishesAReplyChain(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	job := e.scheduleThread("th", fourParts[0], fourParts[1:]...)
	out := e.publish(job)
	if out.Result != publishing.Published {
		t.Fatalf("Publish = %s (%s), want published", out.Result, out.Reason)
	}
	if d := cmp.Diff(wantChain(fourParts...), e.chain()); d != "" {
		t.Errorf("the platform's chain (-want +got):\n%s", d)
	}
	first := e.entry(job) // PublishKey(post): part 1's
	if first.Subject != "th" || first.State != ledger.Confirmed {
		t.Errorf("part 1's entry under the post's key: %s %s", first.Subject, first.State)
	}
	keys := map[ledger.Key]bool{}
	for k := 1; k <= 4; k++ {
		en, ok := e.partEntry(job, k)
		if !ok || en.State != ledger.Confirmed || en.Subject != ledger.PartSubject("th", k) {
			t.Errorf("part %d entry: %v %s %s", k, ok, en.State, en.Subject)
		}
		keys[en.Key] = true
	}
	if len(keys) != 4 {
		t.Errorf("%d distinct part keys, want 4", len(keys))
	}
	tg := e.target(job)
	if tg.Status != post.Published || tg.RemoteID != first.RemoteID || tg.Reason != "" {
		t.Errorf("target %s %s %q, want published with part 1's id %s", tg.Status, tg.RemoteID, tg.Reason, first.RemoteID)
	}
	// A second delivery sends nothing.
	if out := e.publish(job); out.Result != publishing.Skipped {
		t.Errorf("a second delivery: %s, want skipped", out.Result)
	}
	if n := e.sb.Stats().CreateRequests; n != 4 {
		t.Errorf("%d creates, want 4", n)
	}
}

// Part 2's answer is lost after the commit: the chain stops there, the
// confirm loop finds part 2 (nothing else is sent meanwhile), puts the
// job back, and the next delivery sends parts 3 and 4: every part once,
// in order.
func TestThreadLostAnswerIsLookedForBeforeTheChainGoesOn(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.sb.ScriptText(fourParts[1], sandbox.Fault{Kind: sandbox.FaultDropResponse})
	job := e.scheduleThread("th", fourParts[0], fourParts[1:]...)
	out := e.publish(job)
	if out.Result != publishing.Confirming || !strings.HasPrefix(out.Reason, "thread part 2 of 4: ambiguous") {
		t.Fatalf("Publish = %s (%s), want confirming, naming part 2", out.Result, out.Reason)
	}
	if n := e.sb.Stats().Committed; n != 2 {
		t.Fatalf("%d statuses after the lost answer, want 2 (nothing after part 2 before it is confirmed)", n)
	}
	if tg := e.target(job); tg.Status != post.Publishing || !strings.HasPrefix(tg.Reason, "thread part 2 of 4: ") {
		t.Errorf("target %s %q, want publishing naming part 2", tg.Status, tg.Reason)
	}
	// A delivery meanwhile (the sweeper's) sends nothing: part 2 is unknown.
	if out := e.publish(job); out.Result != publishing.Confirming {
		t.Errorf("a delivery while part 2 is unknown: %s (%s)", out.Result, out.Reason)
	}
	two, _ := e.partEntry(job, 2)
	e.runConfirm(publishing.ConfirmName(two.Key, two.Attempt))
	if tg := e.target(job); tg.Status != post.Publishing || tg.Reason != "thread part 2 of 4 confirmed; part 3 is next" {
		t.Errorf("target after part 2's confirm: %s %q", tg.Status, tg.Reason)
	}
	e.drain() // the job the confirm step put back
	if d := cmp.Diff(wantChain(fourParts...), e.chain()); d != "" {
		t.Errorf("the platform's chain (-want +got):\n%s", d)
	}
	if st := e.sb.Stats(); st.CreateRequests != 4 || st.Duplicates != 0 {
		t.Errorf("%d creates, %d duplicates; want 4 and 0", st.CreateRequests, st.Duplicates)
	}
	if tg := e.target(job); tg.Status != post.Published {
		t.Errorf("target %s %q, want published", tg.Status, tg.Reason)
	}
}

// The last part's answer is lost: the confirm loop's confirm publishes
// the target (with part 1's id), and puts nothing back.
func TestThreadLastPartConfirmedByTheLook(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.sb.ScriptText("2/2 end", sandbox.Fault{Kind: sandbox.Fault500AfterCommit})
	job := e.scheduleThread("th", "1/2 start", "2/2 end")
	if out := e.publish(job); out.Result != publishing.Confirming {
		t.Fatalf("Publish = %s (%s)", out.Result, out.Reason)
	}
	two, _ := e.partEntry(job, 2)
	e.runConfirm(publishing.ConfirmName(two.Key, two.Attempt))
	first, _ := e.partEntry(job, 1)
	if tg := e.target(job); tg.Status != post.Published || tg.RemoteID != first.RemoteID {
		t.Errorf("target %s %s, want published with part 1's id %s", tg.Status, tg.RemoteID, first.RemoteID)
	}
	if d, _ := e.queue.Depth(context.Background()); d.Visible != 0 {
		t.Errorf("%d jobs put back after the last part", d.Visible)
	}
}

// Two threads whose second parts read the same: the second part of one
// is not on the platform (a 503 before the commit), the other's is. The
// look for the missing one must not take the other thread's part for it
// (same text, another parent), nor may pre-publish dedup hold the re-send
// as its duplicate: each thread ends a chain of its own.
func TestThreadLookTellsLookAlikePartsApart(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	b := e.scheduleThread("b", "B starts", "The same reply")
	e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayAfterCommit}, sandbox.Fault{Kind: sandbox.Fault503})
	if out := e.publish(b); out.Result != publishing.Confirming {
		t.Fatalf("thread b: %s (%s), want confirming", out.Result, out.Reason)
	}
	a := e.scheduleThread("a", "A starts", "The same reply")
	if out := e.publish(a); out.Result != publishing.Published {
		t.Fatalf("thread a: %s (%s)", out.Result, out.Reason)
	}
	two, _ := e.partEntry(b, 2)
	e.runConfirm(publishing.ConfirmName(two.Key, two.Attempt)) // not found → released, job back
	if got, _ := e.partEntry(b, 2); got.State != ledger.Released {
		t.Fatalf("b's part 2 after the looks: %s %s (%s), want released: the other thread's part was taken for it", got.State, got.RemoteID, got.Reason)
	}
	e.drain()
	want := []string{"B starts", "A starts", "The same reply ← A starts", "The same reply ← B starts"}
	if d := cmp.Diff(want, e.chain()); d != "" {
		t.Errorf("the platform's chains (-want +got):\n%s", d)
	}
	for _, job := range []publishing.Job{a, b} {
		if tg := e.target(job); tg.Status != post.Published {
			t.Errorf("%s: %s %q", job.Post, tg.Status, tg.Reason)
		}
	}
}

// failingCreate fails the ledger's Create of one key once: a store that
// goes away between two parts, as a crash would leave it.
type failingCreate struct {
	publishing.Ledger
	key    ledger.Key
	failed bool
}

func (l *failingCreate) Create(ctx context.Context, en ledger.Entry) error {
	if en.Key == l.key && !l.failed {
		l.failed = true
		return errors.New("store unreachable")
	}
	return l.Ledger.Create(ctx, en)
}

// A delivery that stops between parts (here: the store fails before part
// 3's entry) is resumed by the next delivery from part 3: parts 1 and 2
// are skipped, never sent again.
func TestThreadResumesAfterAStopBetweenParts(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	job := e.scheduleThread("th", fourParts[0], fourParts[1:]...)
	e.pub.Ledger = &failingCreate{Ledger: e.store, key: ledger.PartKey(string(job.Account), "th", 3, job.Slot)}
	if _, err := e.pub.Publish(context.Background(), job); err == nil {
		t.Fatal("Publish succeeded through a failing store")
	}
	if n := e.sb.Stats().Committed; n != 2 {
		t.Fatalf("%d statuses before the stop, want 2", n)
	}
	if tg := e.target(job); tg.Status != post.Triggered {
		t.Errorf("target after the stop: %s, want still triggered (the sweeper re-enqueues it)", tg.Status)
	}
	if out := e.publish(job); out.Result != publishing.Published {
		t.Fatalf("the next delivery: %s (%s)", out.Result, out.Reason)
	}
	if d := cmp.Diff(wantChain(fourParts...), e.chain()); d != "" {
		t.Errorf("the platform's chain (-want +got):\n%s", d)
	}
	if n := e.sb.Stats().CreateRequests; n != 4 {
		t.Errorf("%d creates, want 4", n)
	}
}

// A part the platform refuses for good fails the target with a reason
// naming the part; a term blocked after scheduling holds it at the part
// that names it. Either way nothing after that part goes out.
func TestThreadStopsAtAFailedOrHeldPart(t *testing.T) {
	t.Run("failed", func(t *testing.T) {
		e := newEnv(t, sandbox.Options{MaxCharacters: 20})
		job := e.scheduleThread("th", "1/3 short", "2/3 short", "3/3 far too long for this instance", "4/3 never")
		out := e.publish(job)
		if out.Result != publishing.Failed || !strings.HasPrefix(out.Reason, "thread part 3 of 4: ") {
			t.Errorf("Publish = %s (%s), want failed naming part 3", out.Result, out.Reason)
		}
		if tg := e.target(job); tg.Status != post.Failed || !strings.HasPrefix(tg.Reason, "thread part 3 of 4: http_422") {
			t.Errorf("target %s %q", tg.Status, tg.Reason)
		}
		if d := cmp.Diff(wantChain("1/3 short", "2/3 short"), e.chain()); d != "" {
			t.Errorf("the platform's chain (-want +got):\n%s", d)
		}
	})
	t.Run("held", func(t *testing.T) {
		e := newEnv(t, sandbox.Options{})
		e.pub.Blocklist = e.store
		job := e.scheduleThread("th", "1/3 fine", "2/3 fine", "3/3 the SPOILER", "4/4 never")
		term, err := post.NewBlockedTerm("spoiler", e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.AddBlockedTerm(context.Background(), term); err != nil {
			t.Fatal(err)
		}
		out := e.publish(job)
		if out.Result != publishing.Held {
			t.Errorf("Publish = %s (%s), want held", out.Result, out.Reason)
		}
		if tg := e.target(job); tg.Status != post.Held || !strings.HasPrefix(tg.Reason, "thread part 3 of 4: blocked_term") {
			t.Errorf("target %s %q, want held naming part 3 and the term", tg.Status, tg.Reason)
		}
		if _, ok := e.partEntry(job, 3); ok {
			t.Error("the held part has a ledger entry: nothing was to be sent for it")
		}
		if d := cmp.Diff(wantChain("1/3 fine", "2/3 fine"), e.chain()); d != "" {
			t.Errorf("the platform's chain (-want +got):\n%s", d)
		}
	})
}

func TestPartReason(t *testing.T) {
	for _, tt := range []struct {
		part, parts int
		reason      string
		want        string
	}{
		{1, 1, "ambiguous", "ambiguous"},
		{1, 4, "ambiguous", "thread part 1 of 4: ambiguous"},
		{3, 0, "lease_expired", "thread part 3: lease_expired"},
		{2, 4, "", "thread part 2 of 4"},
		{2, 4, "thread part 2 of 4: x", "thread part 2 of 4: x"},
	} {
		if got := publishing.PartReason(tt.part, tt.parts, tt.reason); got != tt.want {
			t.Errorf("PartReason(%d, %d, %q) = %q, want %q", tt.part, tt.parts, tt.reason, got, tt.want)
		}
	}
}

// The desk shows a thread's parts with where each stands, and cancelling
// a thread held at a part (a term blocked since) stops the rest, saying
// the parts before it are out.
func TestThreadShowAndCancel(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	e.pub.Blocklist = e.store
	job := e.scheduleThread("th", "1/3 fine", "2/3 fine", "3/3 the SPOILER", "4/4 never")
	term, err := post.NewBlockedTerm("spoiler", e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.AddBlockedTerm(context.Background(), term); err != nil {
		t.Fatal(err)
	}
	if out := e.publish(job); out.Result != publishing.Held {
		t.Fatalf("Publish = %s (%s), want held", out.Result, out.Reason)
	}
	desk := &publishing.Desk{Posts: e.store, Ledger: e.store, Accounts: e.store, Blocklist: e.store, Scheduler: &noScheduler{}, Now: e.clock.Now}
	v, err := desk.Show(context.Background(), job.Post)
	if err != nil {
		t.Fatal(err)
	}
	one, _ := e.partEntry(job, 1)
	two, _ := e.partEntry(job, 2)
	var got []string
	for _, pv := range v.Targets[0].Parts {
		got = append(got, fmt.Sprintf("%d %s %s %s", pv.Part, pv.Text, pv.State, pv.RemoteID))
		if pv.Key != ledger.PartKey(string(job.Account), "th", pv.Part, job.Slot) {
			t.Errorf("part %d's key %s", pv.Part, pv.Key)
		}
	}
	want := []string{"1 1/3 fine confirmed " + one.RemoteID, "2 2/3 fine confirmed " + two.RemoteID, "3 3/3 the SPOILER  ", "4 4/4 never  "}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("parts (-want +got):\n%s", d)
	}
	if n := len(v.Targets[0].Ledger); n != 2 {
		t.Errorf("%d ledger entries shown, want the two parts'", n)
	}
	outs, err := desk.Cancel(context.Background(), job.Post, "")
	if err != nil || len(outs) != 1 || !outs[0].Done || !strings.Contains(outs[0].Message, "the rest of the thread will not be sent") {
		t.Errorf("cancel: %+v %v", outs, err)
	}
	if tg := e.target(job); tg.Status != post.Cancelled {
		t.Errorf("target %s", tg.Status)
	}
}

// noScheduler is a PostScheduler that keeps no schedules.
type noScheduler struct{}

func (noScheduler) CreatePost(context.Context, post.Post, *publishing.IdempotencyRecord) error {
	return errors.New("not here")
}
func (noScheduler) Reschedule(context.Context, post.ID, post.AccountID, time.Time) error {
	return errors.New("not here")
}
func (noScheduler) Cancelled(context.Context, publishing.TargetRef) {}

// The desk schedules a thread to accounts whose platform has a reply
// chain, checking every part against each account's limits, and refuses
// it, naming the field, where one has none.
func TestDeskSchedulesThreads(t *testing.T) {
	e := newDeskEnv(t)
	ctx := context.Background()
	d := draftTo("th", "1/2 starts", "news", "sky")
	d.Thread = []string{"2/2 ends"}
	res, err := e.desk.Schedule(ctx, d, nil, nil)
	if err != nil || !cmp.Equal(res.Post.Thread, []string{"2/2 ends"}) {
		t.Fatalf("schedule: %+v %v", res.Post, err)
	}
	stored, err := e.store.GetPost(ctx, "th")
	if err != nil || !cmp.Equal(stored.Thread, []string{"2/2 ends"}) {
		t.Errorf("stored thread %q (%v)", stored.Thread, err)
	}
	for _, tt := range []struct {
		name    string
		account string
		thread  []string
		field   string
	}{
		{"no reply chain", "chat", []string{"2/2"}, "thread"},
		{"no reply chain on telegram", "tg", []string{"2/2"}, "thread"},
		{"over the account's limit", "news", []string{strings.Repeat("x", 101)}, "thread[0]"},
		{"empty", "news", []string{""}, "thread[0]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := draftTo("", "1/2", tt.account)
			d.Thread = tt.thread
			_, err := e.desk.Schedule(ctx, d, nil, nil)
			fes := publishing.FieldErrors(err)
			if len(fes) != 1 || fes[0].Field != tt.field {
				t.Errorf("schedule: %v; want one refusal of %s", err, tt.field)
			}
		})
	}
}
