package sqlitestore

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/publishingtest"
)

func TestSubscriptionsConformance(t *testing.T) {
	publishingtest.TestSubscriptions(t, func(t *testing.T) publishing.Subscriptions { return openTest(t, Options{}) })
}

func TestDeliveriesConformance(t *testing.T) {
	publishingtest.TestDeliveries(t, func(t *testing.T) publishingtest.Outbox {
		s := openTest(t, Options{})
		return publishingtest.Outbox{Subscriptions: s, Deliveries: s, Record: recordThroughUpdateTarget(s)}
	})
}

// recordThroughUpdateTarget records a target event the way the change
// that causes it does: a post whose target is publishing, then
// UpdateTarget to the event's status at its time. The same event a second
// time (a change seen twice) is recorded again in a write transaction as
// UpdateTarget's own would, since the change itself cannot be made twice.
func recordThroughUpdateTarget(s *Store) func(ctx context.Context, e publishing.Event) error {
	return func(ctx context.Context, e publishing.Event) error {
		prev := post.Target{Account: e.Account, Slot: e.Slot, Status: post.Publishing, UpdatedAt: e.At.Add(-time.Second)}
		err := s.CreatePost(ctx, post.Post{ID: e.Post, Body: "outbox", CreatedAt: prev.UpdatedAt, Targets: []post.Target{prev}})
		if errors.Is(err, post.ErrConflict) {
			return s.writeChange(ctx, func(_ *sql.Tx, record recordFunc) error { return record(e, true) })
		}
		if err != nil {
			return err
		}
		next, err := s.UpdateTarget(ctx, e.Post, e.Account, post.TargetUpdate{
			Status: post.TargetStatus(e.Status), RemoteID: e.RemoteID, Reason: e.Reason, At: e.At})
		if err != nil {
			return err
		}
		if got, ok := publishing.TargetEvent(e.Post, prev, next); !ok || got.ID != e.ID {
			return fmt.Errorf("the change made gives event %s, not %s", got.ID, e.ID)
		}
		return nil
	}
}

// subscribe adds a subscription to every event type.
func subscribe(t testing.TB, s *Store, id string) publishing.Subscription {
	t.Helper()
	sub := publishing.Subscription{ID: id, URL: "https://hooks.example.com/" + id, Secret: "whsec_" + id + "-SECRET-9f3c", CreatedAt: t0}
	if err := s.AddSubscription(context.Background(), sub); err != nil {
		t.Fatalf("AddSubscription(%s) = %v", id, err)
	}
	return sub
}

// benchSubscribe is subscribe for the benchmarks.
func benchSubscribe(b *testing.B, s *Store, i int) { subscribe(b, s, fmt.Sprint("wh_", i)) }

// publishingPost stores post id with one target to acct, publishing.
func publishingPost(t testing.TB, s *Store, id post.ID) post.Target {
	t.Helper()
	tg := post.Target{Account: "acct", Slot: t0, Status: post.Publishing, UpdatedAt: t0}
	if err := s.CreatePost(context.Background(), post.Post{ID: id, Body: "b", CreatedAt: t0, Targets: []post.Target{tg}}); err != nil {
		t.Fatalf("CreatePost(%s) = %v", id, err)
	}
	return tg
}

// published is the update that publishes a target at t0 + n seconds.
func published(n int) post.TargetUpdate {
	return post.TargetUpdate{Status: post.Published, RemoteID: fmt.Sprint("remote-", n), At: t0.Add(time.Duration(n) * time.Second)}
}

// deliveriesOf lists every delivery's id, sorted.
func deliveriesOf(t testing.TB, s *Store) []string {
	t.Helper()
	ds, err := s.ListDeliveries(context.Background(), "", 0)
	if err != nil {
		t.Fatalf("ListDeliveries = %v", err)
	}
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	slices.Sort(ids)
	return ids
}

// eventsOf lists the ids of the recorded events, sorted.
func eventsOf(t testing.TB, s *Store) []string {
	t.Helper()
	evs, err := s.RecentEvents(context.Background(), 0)
	if err != nil {
		t.Fatalf("RecentEvents = %v", err)
	}
	ids := make([]string, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	slices.Sort(ids)
	return ids
}

// deliveryIDsOf are the deliveries of events to subscriptions, sorted.
func deliveryIDsOf(events []publishing.Event, subs ...string) []string {
	var out []string
	for _, e := range events {
		for _, sub := range subs {
			out = append(out, publishing.DeliveryID(e.ID, sub))
		}
	}
	slices.Sort(out)
	return out
}

// Every write that changes a status records the event the change causes,
// derived as publishing derives it, with one delivery per subscription;
// a change that causes none records nothing.
func TestChangesRecordTheirEvents(t *testing.T) {
	ctx := context.Background()
	held := post.Target{Account: "acct", Slot: t0, Status: post.Held, Reason: "dedup found it", UpdatedAt: t0}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, s *Store) []publishing.Event // the events it must record
	}{
		{"UpdateTarget to published", func(t *testing.T, s *Store) []publishing.Event {
			prev := publishingPost(t, s, "p")
			next, err := s.UpdateTarget(ctx, "p", "acct", published(1))
			if err != nil {
				t.Fatal(err)
			}
			return caused(publishing.TargetEvent("p", prev, next))
		}},
		{"UpdateTarget to failed, then nothing more", func(t *testing.T, s *Store) []publishing.Event {
			prev := publishingPost(t, s, "p")
			next, err := s.UpdateTarget(ctx, "p", "acct", post.TargetUpdate{Status: post.Failed, Reason: "422 invalid", At: t0.Add(time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			return caused(publishing.TargetEvent("p", prev, next))
		}},
		{"UpdateTarget to held, then to published", func(t *testing.T, s *Store) []publishing.Event {
			prev := publishingPost(t, s, "p")
			h, err := s.UpdateTarget(ctx, "p", "acct", post.TargetUpdate{Status: post.Held, Reason: "look", At: t0.Add(time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			p, err := s.UpdateTarget(ctx, "p", "acct", published(2))
			if err != nil {
				t.Fatal(err)
			}
			return slices.Concat(caused(publishing.TargetEvent("p", prev, h)), caused(publishing.TargetEvent("p", h, p)))
		}},
		{"UpdateTarget published to deleted", func(t *testing.T, s *Store) []publishing.Event {
			publishingPost(t, s, "p")
			p, err := s.UpdateTarget(ctx, "p", "acct", published(1))
			if err != nil {
				t.Fatal(err)
			}
			d, err := s.UpdateTarget(ctx, "p", "acct", post.TargetUpdate{Status: post.Deleted, At: t0.Add(2 * time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			return slices.Concat(caused(publishing.TargetEvent("p", post.Target{Status: post.Publishing}, p)),
				caused(publishing.TargetEvent("p", p, d)))
		}},
		{"moves that cause no event", func(t *testing.T, s *Store) []publishing.Event {
			if err := s.CreatePost(ctx, post.Post{ID: "p", Body: "b", CreatedAt: t0,
				Targets: []post.Target{{Account: "acct", Slot: t0, Status: post.Scheduled, UpdatedAt: t0}}}); err != nil {
				t.Fatal(err)
			}
			for i, st := range []post.TargetStatus{post.Triggered, post.Publishing, post.Publishing, post.Waiting} {
				if _, err := s.UpdateTarget(ctx, "p", "acct", post.TargetUpdate{Status: st, At: t0.Add(time.Duration(i+1) * time.Second),
					NextTry: t0.Add(time.Hour)}); err != nil {
					t.Fatalf("to %s: %v", st, err)
				}
			}
			if _, err := s.RescheduleTarget(ctx, "p", "acct", t0.Add(2*time.Hour), t0.Add(time.Minute),
				func(*sql.Tx, publishing.TargetRef, publishing.TargetRef) error { return nil }); err != nil {
				t.Fatal(err)
			}
			if _, err := s.UpdateTarget(ctx, "p", "acct", post.TargetUpdate{Status: post.Cancelled, At: t0.Add(2 * time.Minute)}); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
		{"CreatePost with a held target", func(t *testing.T, s *Store) []publishing.Event {
			p := post.Post{ID: "p", Body: "b", CreatedAt: t0, Targets: []post.Target{held,
				{Account: "other", Slot: t0, Status: post.Scheduled, UpdatedAt: t0}}}
			if err := s.CreatePost(ctx, p); err != nil {
				t.Fatal(err)
			}
			return caused(publishing.TargetEvent("p", post.Target{}, held))
		}},
		{"ledger Update to unknown", func(t *testing.T, s *Store) []publishing.Event {
			e := ledger.NewEntry(ledger.PublishKey("acct", "p", t0), ledger.Publish, "acct", "p", t0, "fp", "w", t0, time.Minute)
			if err := s.Create(ctx, e); err != nil {
				t.Fatal(err)
			}
			u, err := e.MarkUnknown("timeout after the request was written", t0.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Update(ctx, e, u); err != nil {
				t.Fatal(err)
			}
			return caused(publishing.LedgerEvent(e, u))
		}},
		{"PutAccount needing a reconnect, twice", func(t *testing.T, s *Store) []publishing.Event {
			a := post.Account{ID: "acct", Platform: "mastodon", Handle: "@a@example.social"}
			if err := s.PutAccount(ctx, a); err != nil {
				t.Fatal(err)
			}
			a.Status, a.StatusReason = post.AccountReconnectNeeded, "refresh refused: 400 invalid_grant"
			for range 2 {
				if err := s.PutAccount(ctx, a); err != nil {
					t.Fatal(err)
				}
			}
			return caused(publishing.AccountEvent(post.Account{}, a, t0)) // the store's clock is fixed at t0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, Options{Now: func() time.Time { return t0 }})
			subscribe(t, s, "wh_a")
			subscribe(t, s, "wh_b")
			want := tc.change(t, s)
			var wantEvents []string
			for _, e := range want {
				wantEvents = append(wantEvents, e.ID)
			}
			slices.Sort(wantEvents)
			if diff := cmp.Diff(wantEvents, eventsOf(t, s), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("recorded events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(deliveryIDsOf(want, "wh_a", "wh_b"), deliveriesOf(t, s), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("deliveries (-want +got):\n%s", diff)
			}
			recorded, err := s.RecentEvents(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			byID := map[string]publishing.Event{}
			for _, e := range want {
				byID[e.ID] = e
			}
			for _, e := range recorded {
				if diff := cmp.Diff(byID[e.ID], e); diff != "" {
					t.Errorf("event %s as recorded (-want +got):\n%s", e.ID, diff)
				}
			}
		})
	}
}

// caused is the event a derivation gave, if it gave one.
func caused(e publishing.Event, ok bool) []publishing.Event {
	if !ok {
		return nil
	}
	return []publishing.Event{e}
}

// The guarantee, (a): the event commits with its change or not at all.
func TestEventCommitsWithItsChange(t *testing.T) {
	ctx := context.Background()

	t.Run("a committed change has its delivery", func(t *testing.T) {
		s := openTest(t, Options{})
		subscribe(t, s, "wh_a")
		prev := publishingPost(t, s, "p")
		next, err := s.UpdateTarget(ctx, "p", "acct", published(1))
		if err != nil {
			t.Fatal(err)
		}
		e, _ := publishing.TargetEvent("p", prev, next)
		if got := deliveriesOf(t, s); !slices.Equal(got, deliveryIDsOf([]publishing.Event{e}, "wh_a")) {
			t.Errorf("deliveries %v, want the event's", got)
		}
	})

	t.Run("a change that rolls back has none", func(t *testing.T) {
		s := openTest(t, Options{})
		subscribe(t, s, "wh_a")
		held := post.Target{Account: "acct", Slot: t0, Status: post.Held, Reason: "r", UpdatedAt: t0}
		p := post.Post{ID: "p", Body: "b", CreatedAt: t0, Targets: []post.Target{held,
			{Account: "other", Slot: t0, Status: post.Scheduled, UpdatedAt: t0}}}
		boom := errors.New("schedule refused")
		err := s.CreatePostScheduled(ctx, p, func(*sql.Tx, publishing.TargetRef) error { return boom })
		if !errors.Is(err, boom) {
			t.Fatalf("CreatePostScheduled = %v, want the schedule's error", err)
		}
		if got, ev := deliveriesOf(t, s), eventsOf(t, s); len(got) != 0 || len(ev) != 0 {
			t.Errorf("after the rollback: deliveries %v, events %v; want none", got, ev)
		}
		if err := s.CreatePostScheduled(ctx, p, func(*sql.Tx, publishing.TargetRef) error { return nil }); err != nil {
			t.Fatal(err)
		}
		e, _ := publishing.TargetEvent("p", post.Target{}, held)
		if got := deliveriesOf(t, s); !slices.Equal(got, deliveryIDsOf([]publishing.Event{e}, "wh_a")) {
			t.Errorf("after the commit: deliveries %v, want the held target's", got)
		}
	})

	// (d) An outbox written after the change's commit, in a transaction
	// of its own, could lose the event: a failure (or crash) between the
	// two leaves the change without it. Here recording the delivery fails
	// (a trigger on the write connection refuses it); the change must
	// fail with it and leave the stored state as it was. An implementation
	// that commits the change first fails this test: the change is there,
	// its event is not.
	t.Run("a failed event write undoes the change", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			setup  func(t *testing.T, s *Store)
			change func(s *Store) error
			state  func(t *testing.T, s *Store) string // what the change alters
		}{
			{"UpdateTarget", func(t *testing.T, s *Store) { publishingPost(t, s, "p") },
				func(s *Store) error { _, err := s.UpdateTarget(ctx, "p", "acct", published(1)); return err },
				func(t *testing.T, s *Store) string { return targetStatus(t, s, "p", "acct") }},
			{"CreatePost", func(*testing.T, *Store) {},
				func(s *Store) error {
					return s.CreatePost(ctx, post.Post{ID: "p", Body: "b", CreatedAt: t0,
						Targets: []post.Target{{Account: "acct", Slot: t0, Status: post.Failed, Reason: "r", UpdatedAt: t0}}})
				},
				func(t *testing.T, s *Store) string {
					_, err := s.GetPost(ctx, "p")
					return fmt.Sprint(errors.Is(err, post.ErrNotFound))
				}},
			{"ledger Update", func(t *testing.T, s *Store) {
				if err := s.Create(ctx, raceEntry(1)); err != nil {
					t.Fatal(err)
				}
			}, func(s *Store) error {
				u, err := raceEntry(1).MarkUnknown("timeout", t0.Add(time.Second))
				if err != nil {
					return err
				}
				return s.Update(ctx, raceEntry(1), u)
			}, func(t *testing.T, s *Store) string {
				e, err := s.Get(ctx, raceEntry(1).Key)
				if err != nil {
					t.Fatal(err)
				}
				return string(e.State)
			}},
			{"PutAccount", func(t *testing.T, s *Store) {
				if err := s.PutAccount(ctx, post.Account{ID: "acct", Platform: "mastodon"}); err != nil {
					t.Fatal(err)
				}
			}, func(s *Store) error {
				return s.PutAccount(ctx, post.Account{ID: "acct", Platform: "mastodon", Status: post.AccountReconnectNeeded, StatusReason: "401"})
			}, func(t *testing.T, s *Store) string {
				a, err := s.GetAccount(ctx, "acct")
				if err != nil {
					t.Fatal(err)
				}
				return string(a.Status)
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := openTest(t, Options{})
				subscribe(t, s, "wh_a")
				tc.setup(t, s)
				before := tc.state(t, s)
				failOutboxWrites(t, s)
				if err := tc.change(s); err == nil {
					t.Errorf("the change succeeded though its event could not be written")
				}
				if after := tc.state(t, s); after != before {
					t.Errorf("the change was kept without its event: %q → %q", before, after)
				}
				if ev := eventsOf(t, s); len(ev) != 0 {
					t.Errorf("events %v kept from a failed change", ev)
				}
				allowOutboxWrites(t, s)
				if err := tc.change(s); err != nil {
					t.Fatalf("the change once the outbox works again: %v", err)
				}
				if tc.state(t, s) == before || len(deliveriesOf(t, s)) != 1 {
					t.Errorf("the retried change: %q, deliveries %v; want the change and its delivery", tc.state(t, s), deliveriesOf(t, s))
				}
			})
		}
	})

	// Another connection to the file (another process, e.g. the CLI next
	// to `oncepost run`) adds and removes subscriptions and makes changes;
	// each side's changes are fanned out to the subscriptions as of the
	// change's commit, whatever the other side cached.
	t.Run("another connection's changes and subscriptions", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "shared.db")
		runtime, cli := openAt(t, path), openAt(t, path)
		publishingPost(t, runtime, "p1")
		if _, err := runtime.UpdateTarget(ctx, "p1", "acct", published(1)); err != nil {
			t.Fatal(err) // caches "no subscriptions"
		}
		subscribe(t, cli, "wh_a")
		publishingPost(t, runtime, "p2")
		if _, err := runtime.UpdateTarget(ctx, "p2", "acct", published(2)); err != nil {
			t.Fatal(err)
		}
		publishingPost(t, cli, "p3")
		if _, err := cli.UpdateTarget(ctx, "p3", "acct", published(3)); err != nil {
			t.Fatal(err)
		}
		want := []string{deliveryOf(t, runtime, "p2", "wh_a"), deliveryOf(t, runtime, "p3", "wh_a")}
		slices.Sort(want)
		for name, s := range map[string]*Store{"runtime": runtime, "cli": cli} {
			if got := deliveriesOf(t, s); !slices.Equal(got, want) {
				t.Errorf("%s sees deliveries %v, want %v", name, got, want)
			}
		}
		claimed, err := cli.ClaimDeliveries(ctx, t0.Add(time.Hour), time.Minute, 0)
		if err != nil || len(claimed) != 2 {
			t.Fatalf("the other connection claims %d deliveries (%v), want both", len(claimed), err)
		}
		if err := cli.RemoveSubscription(ctx, "wh_a"); err != nil {
			t.Fatal(err)
		}
		publishingPost(t, runtime, "p4")
		if _, err := runtime.UpdateTarget(ctx, "p4", "acct", published(4)); err != nil {
			t.Fatal(err)
		}
		if got := deliveriesOf(t, runtime); len(got) != 0 {
			t.Errorf("deliveries after the subscription was removed elsewhere: %v, want none", got)
		}
	})
}

// deliveryOf is the id of the delivery of post id's published event.
func deliveryOf(t testing.TB, s *Store, id post.ID, sub string) string {
	t.Helper()
	p, err := s.GetPost(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := publishing.TargetEvent(id, post.Target{Status: post.Publishing}, p.Targets[0])
	if !ok {
		t.Fatalf("post %s: no event", id)
	}
	return publishing.DeliveryID(e.ID, sub)
}

func targetStatus(t testing.TB, s *Store, id post.ID, acct post.AccountID) string {
	t.Helper()
	p, err := s.GetPost(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	tg, _ := p.Target(acct)
	return string(tg.Status)
}

// failOutboxWrites makes every insert into the deliveries table fail, on
// the store's write connection (a temporary trigger lives on its
// connection: there is one, kept open).
func failOutboxWrites(t testing.TB, s *Store) {
	t.Helper()
	if _, err := s.DB().Exec(`CREATE TEMP TRIGGER outbox_fails BEFORE INSERT ON main.deliveries
		BEGIN SELECT RAISE(ABORT, 'the outbox write failed'); END`); err != nil {
		t.Fatal(err)
	}
}

func allowOutboxWrites(t testing.TB, s *Store) {
	t.Helper()
	if _, err := s.DB().Exec(`DROP TRIGGER temp.outbox_fails`); err != nil {
		t.Fatal(err)
	}
}

// The guarantee, (c): a change seen twice is one event, one delivery per
// subscription: racing writers of one move (one wins), from two
// connections; a retried ledger move; the same event recorded again.
func TestSameChangeDeliveredOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	a, b := openAt(t, path), openAt(t, path)
	subscribe(t, a, "wh_a")
	subscribe(t, a, "wh_b")
	publishingPost(t, a, "p")
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 8 {
		s := []*Store{a, b}[i%2]
		wg.Go(func() {
			_, err := s.UpdateTarget(ctx, "p", "acct", published(1))
			if err != nil && !errors.Is(err, post.ErrConflict) {
				t.Errorf("UpdateTarget: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins++
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d racers published the target, want 1", wins)
	}
	e := ledger.NewEntry(ledger.PublishKey("acct", "q", t0), ledger.Publish, "acct", "q", t0, "fp", "w", t0, time.Minute)
	if err := a.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	u, _ := e.MarkUnknown("timeout", t0.Add(time.Second))
	if err := a.Update(ctx, e, u); err != nil {
		t.Fatal(err)
	}
	if err := b.Update(ctx, e, u); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("the retried ledger move = %v, want a conflict", err)
	}
	unknown, _ := publishing.LedgerEvent(e, u)
	for range 2 {
		if err := b.writeChange(ctx, func(_ *sql.Tx, record recordFunc) error { return record(unknown, true) }); err != nil {
			t.Fatal(err)
		}
	}
	want := append(deliveryIDsOf([]publishing.Event{unknown}, "wh_a", "wh_b"), deliveryOf(t, a, "p", "wh_a"), deliveryOf(t, a, "p", "wh_b"))
	slices.Sort(want)
	if got := deliveriesOf(t, a); !slices.Equal(got, want) {
		t.Errorf("deliveries %v, want one per event and subscription %v", got, want)
	}
}

// The guarantee, (b): a process killed right after its change committed
// leaves the change's delivery in the file for the next process.
func TestDeliveryOutlivesACrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a process")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "crash.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	subscribe(t, s, "wh_a")
	publishingPost(t, s, "p")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnvPath+"="+path, helperEnvMode+"="+modeCrashAfterChange)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want killed by SIGKILL; stdout %q, stderr:\n%s", err, line, stderr.String())
	}
	if strings.TrimSpace(line) != "committed" {
		t.Fatalf("child said %q before it was killed, want \"committed\"; stderr:\n%s", line, stderr.String())
	}

	next := openAt(t, path)
	want := deliveryOf(t, next, "p", "wh_a")
	claimed, err := next.ClaimDeliveries(ctx, t0.Add(time.Hour), time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 1 || claimed[0].ID != want {
		t.Fatalf("the next process claims %v, want %s", claimed, want)
	}
	if body, err := claimed[0].Event.Body(); err != nil || !bytes.Contains(body, []byte(`"type":"post.published"`)) {
		t.Errorf("the delivery's body %s (%v)", body, err)
	}
}

// modeCrashAfterChange makes TestHelperProcess publish target p/acct of
// the file and kill itself the moment UpdateTarget returns: no Close, no
// deferred function, nothing after the commit.
const modeCrashAfterChange = "crash-after-change"

func crashAfterChange(path string) error {
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		return err
	}
	if _, err := s.UpdateTarget(context.Background(), "p", "acct", published(1)); err != nil {
		return err
	}
	fmt.Println("committed")
	return syscall.Kill(os.Getpid(), syscall.SIGKILL)
}

// A commit that recorded a delivery wakes EventsWritten once, however
// many commits there were; a change without a delivery, or one that
// rolled back, does not.
func TestEventsWrittenWakes(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	woken := func() bool {
		select {
		case <-s.EventsWritten():
			return true
		default:
			return false
		}
	}
	publishingPost(t, s, "p1")
	if _, err := s.UpdateTarget(ctx, "p1", "acct", published(1)); err != nil {
		t.Fatal(err)
	}
	if woken() {
		t.Error("woken by an event no subscription wants")
	}
	subscribe(t, s, "wh_a")
	if woken() {
		t.Error("woken by a subscription")
	}
	for i := range 3 {
		id := post.ID(fmt.Sprint("q", i))
		publishingPost(t, s, id)
		if _, err := s.UpdateTarget(ctx, id, "acct", published(i)); err != nil {
			t.Fatal(err)
		}
	}
	if !woken() {
		t.Error("not woken after three deliveries were written")
	}
	if woken() {
		t.Error("woken twice: one signal stands for every commit")
	}
	publishingPost(t, s, "p2")
	failOutboxWrites(t, s)
	if _, err := s.UpdateTarget(ctx, "p2", "acct", published(9)); err == nil {
		t.Fatal("UpdateTarget succeeded with the outbox failing")
	}
	if woken() {
		t.Error("woken by a change that rolled back")
	}
	if st := s.Stats(); st.EventRows != 4 || st.DeliveryRows != 3 || st.SubscriptionWrites != 1 {
		t.Errorf("stats: %d events, %d deliveries, %d subscription writes; want 4, 3 and 1 (the rolled-back change not counted)",
			st.EventRows, st.DeliveryRows, st.SubscriptionWrites)
	}
}

// The secret is sealed at rest: not in the file's bytes, nor in the
// column; a wrong key gives an error naming the subscription, not the
// secret; a missing key file is refused while subscriptions hold secrets.
func TestSubscriptionSecretSealed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "oncepost.db")
	s := openAt(t, path)
	sub := subscribe(t, s, "wh_a")
	var stored string
	if err := s.DB().QueryRow(`SELECT secret FROM subscriptions WHERE id = 'wh_a'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stored, sealedPrefix) || strings.Contains(stored, sub.Secret) {
		t.Errorf("stored secret %q: want a sealed value", stored)
	}
	for _, f := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(sub.Secret)) || bytes.Contains(b, []byte("SECRET-9f3c")) {
			t.Errorf("%s holds the secret in plaintext", filepath.Base(f))
		}
	}
	got, err := s.GetSubscription(ctx, "wh_a")
	if err != nil || got.Secret != sub.Secret {
		t.Errorf("GetSubscription: secret round trip failed (%v)", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	other := filepath.Join(dir, "other.key")
	if err := createKey(other); err != nil {
		t.Fatal(err)
	}
	wrong, err := Open(ctx, path, Options{KeyFile: other})
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	_, err = wrong.GetSubscription(ctx, "wh_a")
	if !errors.Is(err, ErrCredentialUndecryptable) || !strings.Contains(err.Error(), "wh_a") || strings.Contains(err.Error(), stored) {
		t.Errorf("GetSubscription with another key = %v, want ErrCredentialUndecryptable naming wh_a, without the value", err)
	}
	if _, err := wrong.ListSubscriptions(ctx); !errors.Is(err, ErrCredentialUndecryptable) {
		t.Errorf("ListSubscriptions with another key = %v, want ErrCredentialUndecryptable", err)
	}
	if _, err := Open(ctx, path, Options{KeyFile: filepath.Join(dir, "missing.key")}); err == nil ||
		!strings.Contains(err.Error(), "webhook subscriptions") {
		t.Errorf("Open without its key file, subscriptions stored = %v, want a refusal naming them", err)
	}
}

// PruneOutbox deletes delivered deliveries after DeliveredKeep, dead ones
// after DeadKeep and events after EventKeep; never a pending delivery.
func TestPruneOutbox(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{Now: func() time.Time { return t0 }}) // events recorded at t0
	subscribe(t, s, "wh_a")
	for i := range 4 {
		id := post.ID(fmt.Sprint("p", i))
		publishingPost(t, s, id)
		if _, err := s.UpdateTarget(ctx, id, "acct", published(i)); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := s.ClaimDeliveries(ctx, t0.Add(time.Hour), time.Minute, 0)
	if err != nil || len(ds) != 4 {
		t.Fatalf("claimed %d (%v)", len(ds), err)
	}
	slices.SortFunc(ds, func(x, y publishing.Delivery) int { return x.Event.At.Compare(y.Event.At) })
	states := []publishing.DeliveryState{publishing.DeliveryDelivered, publishing.DeliveryDead, publishing.DeliveryPending, publishing.DeliveryDelivered}
	for i, d := range ds {
		d.State, d.Attempts, d.UpdatedAt = states[i], 1, t0.Add(time.Hour)
		if i == 3 {
			d.UpdatedAt = t0.Add(3 * 24 * time.Hour) // recent at the prune below
		}
		if err := s.RecordDelivery(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	now := t0.Add(8 * 24 * time.Hour)
	n, err := s.PruneOutbox(ctx, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Delivery 0 (delivered, 8 days old) and the 4 events (8 days old).
	if n != 5 {
		t.Errorf("PruneOutbox pruned %d rows, want 5", n)
	}
	if got, want := deliveriesOf(t, s), []string{ds[1].ID, ds[2].ID, ds[3].ID}; !slices.Equal(got, sortedCopy(want)) {
		t.Errorf("after the prune: %v, want %v", got, sortedCopy(want))
	}
	if n, err := s.PruneOutbox(ctx, t0.Add(31*24*time.Hour), 1); err != nil || n != 2 {
		t.Errorf("PruneOutbox a month later, limit 1 = %d (%v), want 2 (one of each kind)", n, err)
	}
	if got, want := deliveriesOf(t, s), []string{ds[2].ID}; !slices.Equal(got, want) {
		t.Errorf("a month later: %v, want the pending one only %v", got, want)
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// A due delivery whose event this build cannot read is made dead with the
// reason, and the others are claimed.
func TestClaimDeadLettersUndecodableDeliveries(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	subscribe(t, s, "wh_a")
	for i := range 2 {
		id := post.ID(fmt.Sprint("p", i))
		publishingPost(t, s, id)
		if _, err := s.UpdateTarget(ctx, id, "acct", published(i)); err != nil {
			t.Fatal(err)
		}
	}
	bad := deliveryOf(t, s, "p0", "wh_a")
	if _, err := s.DB().Exec(`UPDATE deliveries SET event = '{not json' WHERE id = ?`, bad); err != nil {
		t.Fatal(err)
	}
	got, err := s.ClaimDeliveries(ctx, t0.Add(time.Hour), time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != deliveryOf(t, s, "p1", "wh_a") {
		t.Errorf("claimed %v, want the readable delivery only", got)
	}
	var state, reason string
	if err := s.DB().QueryRow(`SELECT state, last_error FROM deliveries WHERE id = ?`, bad).Scan(&state, &reason); err != nil {
		t.Fatal(err)
	}
	if state != "dead" || !strings.Contains(reason, "undecodable") {
		t.Errorf("the undecodable delivery is %s (%q), want dead with the reason", state, reason)
	}
}

// NextDeliveryDue is the earliest NextTry of a pending delivery: the
// event's time, then the end of a claim's lease, then nothing once
// delivered.
func TestNextDeliveryDue(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	if _, ok, err := s.NextDeliveryDue(ctx); ok || err != nil {
		t.Fatalf("NextDeliveryDue of an empty outbox = %v, %v; want none", ok, err)
	}
	subscribe(t, s, "wh_a")
	publishingPost(t, s, "p")
	next, err := s.UpdateTarget(ctx, "p", "acct", published(1))
	if err != nil {
		t.Fatal(err)
	}
	if at, ok, err := s.NextDeliveryDue(ctx); !ok || err != nil || !at.Equal(next.UpdatedAt) {
		t.Errorf("NextDeliveryDue = %s, %v, %v; want the event's time %s", at, ok, err, next.UpdatedAt)
	}
	now := t0.Add(time.Hour)
	ds, err := s.ClaimDeliveries(ctx, now, time.Minute, 0)
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim: %v, %v", ds, err)
	}
	if at, ok, err := s.NextDeliveryDue(ctx); !ok || err != nil || !at.Equal(now.Add(time.Minute)) {
		t.Errorf("NextDeliveryDue while claimed = %s, %v, %v; want the lease's end", at, ok, err)
	}
	d := ds[0]
	d.State, d.Attempts, d.LastStatus = publishing.DeliveryDelivered, 1, 200
	if err := s.RecordDelivery(ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.NextDeliveryDue(ctx); ok || err != nil {
		t.Errorf("NextDeliveryDue once delivered = %v, %v; want none", ok, err)
	}
}

// Bad input gets an error naming the field.
func TestOutboxRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	if _, err := s.ListDeliveries(ctx, "lost", 0); err == nil || !strings.Contains(err.Error(), "state") {
		t.Errorf("ListDeliveries(lost) = %v, want an error naming the state", err)
	}
	if err := s.RecordDelivery(ctx, publishing.Delivery{ID: "x", State: "lost"}); err == nil || !strings.Contains(err.Error(), "state") {
		t.Errorf("RecordDelivery(state lost) = %v, want an error naming the state", err)
	}
	if _, err := s.ClaimDeliveries(ctx, t0, 0, 1); err == nil || !strings.Contains(err.Error(), "lease") {
		t.Errorf("ClaimDeliveries(lease 0) = %v, want an error naming the lease", err)
	}
}

// A delivery recorded delivered or dead stays so: a worker whose lease
// ran out and that records later gets a conflict.
func TestRecordDeliveryFirstFinalOutcomeStays(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	subscribe(t, s, "wh_a")
	publishingPost(t, s, "p")
	if _, err := s.UpdateTarget(ctx, "p", "acct", published(1)); err != nil {
		t.Fatal(err)
	}
	first, err := s.ClaimDeliveries(ctx, t0.Add(time.Hour), time.Minute, 1)
	if err != nil || len(first) != 1 {
		t.Fatalf("claim: %v %v", first, err)
	}
	second, err := s.ClaimDeliveries(ctx, t0.Add(time.Hour+2*time.Minute), time.Minute, 1) // after the first lease
	if err != nil || len(second) != 1 {
		t.Fatalf("claim after the lease: %v %v", second, err)
	}
	d := second[0]
	d.State, d.Attempts, d.LastStatus = publishing.DeliveryDelivered, 1, 200
	if err := s.RecordDelivery(ctx, d); err != nil {
		t.Fatal(err)
	}
	late := first[0]
	late.State, late.Attempts, late.NextTry, late.LastStatus = publishing.DeliveryPending, 1, t0.Add(2*time.Hour), 503
	if err := s.RecordDelivery(ctx, late); !errors.Is(err, post.ErrConflict) {
		t.Errorf("late RecordDelivery = %v, want post.ErrConflict", err)
	}
	if got, _ := s.ListDeliveries(ctx, publishing.DeliveryDelivered, 0); len(got) != 1 {
		t.Errorf("delivered: %v, want the delivery to stay delivered", got)
	}
}

// Claims from two connections to one file (as from two processes) at the
// same moment never return one delivery twice within its lease.
func TestClaimsAcrossConnectionsDisjoint(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	a, b := openAt(t, path), openAt(t, path)
	subscribe(t, a, "wh_a")
	const n = 12
	for i := range n {
		id := post.ID(fmt.Sprint("p", i))
		publishingPost(t, a, id)
		if _, err := a.UpdateTarget(ctx, id, "acct", published(i)); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for i := range 8 {
		s := []*Store{a, b}[i%2]
		wg.Go(func() {
			for {
				ds, err := s.ClaimDeliveries(ctx, t0.Add(time.Hour), time.Hour, 2)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					seen[d.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d distinct deliveries claimed, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("delivery %s claimed %d times within its lease", id, c)
		}
	}
}
