package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"oncepost/shared/clocktest"
	"oncepost/shared/platform"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/recurring"
)

// A 30-day daily rule through the embedded runtime on a fake clock: the
// materializer in the sweeper, the rule's occurrences as posts with their
// at() schedules in localcron, the trigger, the queue, the publisher, the
// sandbox. 09:00 in Berlin from 2026-10-12, across the end of DST on
// 2026-10-25: exactly 30 statuses, one a day, each at 09:00 local (07:00Z,
// then 08:00Z), none a duplicate by the sandbox's own count. Edited on day
// 10, the rule never sends a past occurrence again and sends the new text
// from day 11 on. A materializer that names occurrences at random (no
// deterministic ids) posts twice, and the same check catches it.
func TestRecurringDailyRuleThroughTheRuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the runtime through 30 days on a fake clock")
	}
	t.Run("30 days across DST", func(t *testing.T) {
		t.Parallel()
		w := newRecurringWorld(t, 30, nil)
		w.run(t, w.end)
		if problems := w.check(t, w.wantTexts("Daily note", 30)); len(problems) > 0 {
			t.Fatalf("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
		}
		var at7, at8 int
		for _, st := range w.statuses() {
			switch st.CreatedAt.UTC().Hour() {
			case 7:
				at7++
			case 8:
				at8++
			}
		}
		if at7 != 13 || at8 != 17 {
			t.Errorf("%d statuses at 07:00Z and %d at 08:00Z, want 13 (to 2026-10-24, summer time) and 17 (from 2026-10-25)", at7, at8)
		}
		t.Logf("30 days: %d statuses, %d at 07:00Z and %d at 08:00Z, sandbox duplicates %d", len(w.statuses()), at7, at8, w.sb.Stats().Duplicates)
	})
	t.Run("edited mid-way", func(t *testing.T) {
		t.Parallel()
		w := newRecurringWorld(t, 30, nil)
		// Day 10 (2026-10-21) has gone out; days 11 and 12 exist as posts.
		w.run(t, time.Date(2026, 10, 21, 12, 0, 0, 0, time.UTC))
		body, variants := "Edited note 1", w.numbered("Edited note", 30)[1:]
		v, err := w.rec().Edit(context.Background(), "daily", recurring.Patch{Body: &body, Variants: &variants}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v.Rule.Revision != 2 {
			t.Fatalf("revision %d after the edit", v.Rule.Revision)
		}
		w.run(t, w.end)
		want := append(w.wantTexts("Daily note", 30)[:10], w.wantTexts("Edited note", 30)[10:]...)
		if problems := w.check(t, want); len(problems) > 0 {
			t.Fatalf("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
		}
		// The old revision's occurrences of days 11 and 12 were cancelled,
		// replaced by the new revision's.
		for _, id := range []post.ID{"daily-20261022T0700Z", "daily-20261023T0700Z"} {
			p, err := w.rt.store.GetPost(context.Background(), id)
			if err != nil || p.Targets[0].Status != post.Cancelled {
				t.Errorf("%s after the edit: %v %v, want cancelled", id, p.Targets, err)
			}
		}
		t.Logf("edited on day 10: %d statuses, sandbox duplicates %d", len(w.statuses()), w.sb.Stats().Duplicates)
	})
	t.Run("random occurrence ids post twice", func(t *testing.T) {
		t.Parallel()
		random := func(r recurring.Rule, slot time.Time) post.ID {
			return post.ID(fmt.Sprintf("%s-%s-%s", r.ID, slot.UTC().Format("20060102T1504Z"), strings.ToLower(rand.Text()[:6])))
		}
		w := newRecurringWorld(t, 6, random)
		w.run(t, w.end)
		problems := w.check(t, w.wantTexts("Daily note", 6))
		if len(problems) == 0 {
			t.Fatal("a materializer with random occurrence ids passed the once-a-day check")
		}
		t.Logf("caught %d problems (sandbox duplicates %d), e.g. %s", len(problems), w.sb.Stats().Duplicates, problems[0])
	})
}

// recurringWorld is the runtime, its sandbox and its clock, with the
// rule "daily" (09:00 in Berlin from 2026-10-12, days times).
type recurringWorld struct {
	rt    *runtime
	sb    *sandbox.Server
	clock *clocktest.Clock
	acc   post.Account
	days  int
	slots []time.Time
	end   time.Time
}

func newRecurringWorld(t *testing.T, days int, ids func(recurring.Rule, time.Time) post.ID) *recurringWorld {
	t.Helper()
	clock := clocktest.New(time.Date(2026, 10, 11, 12, 0, 0, 0, time.UTC))
	sb := sandbox.New(sandbox.Options{Now: clock.Now})
	if err := sb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	dir := t.TempDir()
	cfg := defaultConfig()
	cfg.DBPath, cfg.MediaDir = filepath.Join(dir, "oncepost.db"), filepath.Join(dir, "media")
	cfg.Logger, cfg.Metrics, cfg.Now = discardLogger(), discardWriter{}, clock.Now
	cfg.Workers = 1
	// The clock moves between passes: a publish prepared before its slot
	// would wait for a clock that does not move while it waits.
	cfg.PrepareBefore = 0
	rt, err := openRuntime(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	rt.sweeper.Recurring.IDs = ids
	sa := sb.AddAccount("daily")
	acc := post.Account{ID: "daily-news", Platform: "sandbox", Handle: "@daily", BaseURL: sb.URL(), RemoteID: sa.ID, CredentialRef: "daily",
		Gate: post.GateAuto, TimeZone: "Europe/Berlin"}
	ctx := context.Background()
	if err := rt.store.PutAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	if err := rt.store.PutCredential(ctx, acc.ID, platform.Credential{AccessToken: sa.AccessToken, RefreshToken: sa.RefreshToken}); err != nil {
		t.Fatal(err)
	}
	w := &recurringWorld{rt: rt, sb: sb, clock: clock, acc: acc, days: days}
	texts := w.numbered("Daily note", days)
	// Added on the runtime's clock (the CLI would read the machine's).
	if _, err := rt.sweeper.Recurring.Create(ctx, recurring.Draft{ID: "daily", Body: texts[0], Variants: texts[1:], Accounts: []string{string(acc.ID)},
		EveryDays: 1, At: "09:00", Start: "2026-10-12", Count: days}, publishing.RuleOptions{Author: "test"}); err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	for d := range days {
		w.slots = append(w.slots, time.Date(2026, 10, 12+d, 9, 0, 0, 0, berlin).UTC())
	}
	w.end = w.slots[len(w.slots)-1].Add(6 * time.Hour)
	return w
}

func (w *recurringWorld) rec() *publishing.Recurring { return w.rt.sweeper.Recurring }

// numbered are "prefix 1" … "prefix n".
func (w *recurringWorld) numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s %d", prefix, i+1)
	}
	return out
}

// wantTexts are the texts of the days, in order.
func (w *recurringWorld) wantTexts(prefix string, n int) []string { return w.numbered(prefix, n) }

// run drives the runtime pass by pass up to until: every 30 minutes, and
// every minute from two minutes before each slot to three after. A pass
// fires due schedules, publishes what is queued, runs due workflows and
// sweeps (which materializes the rule), twice over.
func (w *recurringWorld) run(t *testing.T, until time.Time) {
	t.Helper()
	ctx := context.Background()
	var times []time.Time
	for at := w.clock.Now().Truncate(30 * time.Minute).Add(30 * time.Minute); !at.After(until); at = at.Add(30 * time.Minute) {
		times = append(times, at)
	}
	for _, s := range w.slots {
		for d := -2; d <= 3; d++ {
			if at := s.Add(time.Duration(d) * time.Minute); at.After(w.clock.Now()) && !at.After(until) {
				times = append(times, at)
			}
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	times = slices.CompactFunc(times, func(a, b time.Time) bool { return a.Equal(b) })
	loop := w.rt.newLoop()
	if err := w.rt.syncSchedules(ctx); err != nil {
		t.Fatal(err)
	}
	for _, at := range times {
		w.clock.Set(at)
		if _, err := w.rt.cron.RunDue(ctx); err != nil {
			t.Fatalf("%s: scheduler: %v", at, err)
		}
		for range 50 {
			n, err := loop.RunOnce(ctx)
			if err != nil {
				t.Fatalf("%s: publishers: %v", at, err)
			}
			if n == 0 {
				break
			}
		}
		if _, err := w.rt.flows.RunDue(ctx); err != nil {
			t.Fatalf("%s: workflows: %v", at, err)
		}
		// The sweep materializes the rule; a second sweep runs on the rule
		// as it read it before the first recorded its progress, as an
		// overlapping invocation (the scheduler delivers at least once) or
		// a process killed between creating an occurrence and recording it
		// would.
		before, err := w.rt.store.ListRules(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep, err := w.rt.sweeper.Sweep(ctx); err != nil {
			t.Fatalf("%s: sweep: %v (%+v)", at, err, rep)
		}
		twin := *w.rec()
		twin.Rules = frozenRules{RecurringRules: w.rt.store, rules: before}
		if _, err := twin.Materialize(ctx); err != nil {
			t.Fatalf("%s: the overlapping sweep: %v", at, err)
		}
	}
}

// frozenRules lists the rules as they were read once.
type frozenRules struct {
	publishing.RecurringRules
	rules []recurring.Rule
}

func (f frozenRules) ListRules(context.Context) ([]recurring.Rule, error) { return f.rules, nil }

func (w *recurringWorld) statuses() []sandbox.Status { return w.sb.Statuses(w.acc.RemoteID) }

// check compares the account's statuses with one a day at 09:00 in
// Berlin carrying the day's text, the sandbox's duplicate count with
// none, and the store's posts with one published post a slot.
func (w *recurringWorld) check(t *testing.T, texts []string) []string {
	t.Helper()
	var problems []string
	if n := w.sb.Stats().Duplicates; n > 0 {
		problems = append(problems, fmt.Sprintf("the sandbox counted %d duplicates", n))
	}
	byDay := map[string][]sandbox.Status{}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	for _, st := range w.statuses() {
		day := st.CreatedAt.In(berlin).Format("2006-01-02")
		byDay[day] = append(byDay[day], st)
	}
	if got := len(w.statuses()); got != len(w.slots) {
		problems = append(problems, fmt.Sprintf("%d statuses, want %d", got, len(w.slots)))
	}
	for i, slot := range w.slots {
		day := slot.In(berlin).Format("2006-01-02")
		sts := byDay[day]
		if len(sts) != 1 {
			problems = append(problems, fmt.Sprintf("%s: %d statuses, want 1", day, len(sts)))
			continue
		}
		st := sts[0]
		if st.CreatedAt.Before(slot) || st.CreatedAt.After(slot.Add(3*time.Minute)) {
			problems = append(problems, fmt.Sprintf("%s: sent at %s, want at its slot %s (09:00 in Berlin)", day, st.CreatedAt.UTC().Format(time.RFC3339), slot.Format(time.RFC3339)))
		}
		if st.Text != texts[i] {
			problems = append(problems, fmt.Sprintf("%s: text %q, want %q", day, st.Text, texts[i]))
		}
	}
	// In the store: one post a slot that was not cancelled, published.
	// (The publisher's pre-publish read would hold a second post of the
	// same text found on the account, so the platform alone may not
	// show a double the materializer made.)
	page, err := w.rt.store.ListPostPage(context.Background(), publishing.PostFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	live := map[time.Time][]string{}
	for _, p := range page.Posts {
		for _, tg := range p.Targets {
			if tg.Status != post.Cancelled {
				live[tg.Slot] = append(live[tg.Slot], fmt.Sprintf("%s %s", p.ID, tg.Status))
			}
		}
	}
	for _, slot := range w.slots {
		if got := live[slot]; len(got) != 1 || !strings.HasSuffix(got[0], " published") {
			problems = append(problems, fmt.Sprintf("slot %s: posts %v, want one, published", slot.Format(time.RFC3339), got))
		}
		delete(live, slot)
	}
	for slot, ps := range live {
		problems = append(problems, fmt.Sprintf("posts %v at %s, which is no slot of the rule", ps, slot.Format(time.RFC3339)))
	}
	return problems
}

// Recurring rules from the CLI, on the machine's clock: a rule repeating
// one text to an X account is refused before anything is written (exit
// 2, naming the field and the account); with a variant it is added, and
// listed, shown, edited and stopped.
func TestRecurringFromTheCLI(t *testing.T) {
	w := newWorkspace(t, sandbox.Options{}, 1)
	store := w.open(t)
	x := post.Account{ID: "x-news", Platform: "x", Handle: "@xnews", BaseURL: "https://api.x.com", CredentialRef: "x-news", Gate: post.GateAuto}
	if err := store.PutAccount(context.Background(), x); err != nil {
		t.Fatal(err)
	}
	store.Close()
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := runCLI(context.Background(), append(args, "--db", w.db), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	add := []string{"recurring", "add", "--id", "tips", "--account", string(w.accounts[0]), "--account", "x-news", "--every-days", "1", "--at", "09:00",
		"--body", "Same text every day"}
	code, _, stderr := run(add...)
	if code != exitUsage || !strings.Contains(stderr, "variants:") || !strings.Contains(stderr, "x-news") {
		t.Fatalf("the same text daily to X: exit %d, %s", code, stderr)
	}
	if code, out, _ := run("recurring", "list"); code != exitOK || !strings.Contains(out, "no recurring rules") {
		t.Fatalf("the refused rule is listed: %s", out)
	}
	code, out, stderr := run(append(add, "--variant", "Another text")...)
	if code != exitOK || !strings.Contains(out, "added rule tips: every day at 09:00 (UTC)") || !strings.Contains(out, "tips-") {
		t.Fatalf("with a variant: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, _ := run("recurring", "list"); code != exitOK || !strings.Contains(out, "tips") || !strings.Contains(out, "running") {
		t.Errorf("list: exit %d\n%s", code, out)
	}
	code, out, _ = run("recurring", "show", "tips", "--json")
	var v publishing.RuleView
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || v.Rule.ID != "tips" || len(v.Next) == 0 || !v.Next[0].Created {
		t.Fatalf("show --json: exit %d\n%s", code, out)
	}
	first := v.Next[0]
	if code, out, stderr := run("recurring", "edit", "tips", "--body", "Same text, revised"); code != exitOK || !strings.Contains(out, "revision 2") {
		t.Fatalf("edit: exit %d\n%s%s", code, out, stderr)
	}
	store = w.open(t)
	p, err := store.GetPost(context.Background(), first.Post)
	store.Close()
	if err != nil || p.Targets[0].Status != post.Cancelled {
		t.Errorf("the first occurrence of revision 1 after the edit: %v %v", p.Targets, err)
	}
	if code, out, _ := run("recurring", "show", "tips"); code != exitOK || !strings.Contains(out, "Same text, revised") || !strings.Contains(out, "-r2") {
		t.Errorf("show after the edit: exit %d\n%s", code, out)
	}
	if code, out, _ := run("recurring", "stop", "tips"); code != exitOK || !strings.Contains(out, "stopped") {
		t.Errorf("stop: exit %d\n%s", code, out)
	}
	if code, _, stderr := run("recurring", "edit", "tips", "--body", "x"); code != exitUsage || !strings.Contains(stderr, "stopped") {
		t.Errorf("edit a stopped rule: exit %d %s", code, stderr)
	}
	if code, _, stderr := run("recurring", "show", "nope"); code != exitUsage || !strings.Contains(stderr, `no rule "nope"`) {
		t.Errorf("show an unknown rule: exit %d %s", code, stderr)
	}
	if code, _, stderr := run("recurring", "edit", "tips"); code != exitUsage {
		t.Errorf("edit without changes: exit %d %s", code, stderr)
	}
}
