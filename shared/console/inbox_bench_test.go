package console

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
)

// BenchmarkConsoleOpsPagesLoaded is the inbox's, the accounts' and the
// status page's server time with 10,000 posts and every list they show
// past its bound: 100 held entries (each with a history), 600 open ones,
// 60 failed targets, 100 dead letters and 1,000 events. The target is
// ≤ 50 ms a page, as BenchmarkConsolePages.
func BenchmarkConsoleOpsPagesLoaded(b *testing.B) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	now := start.Add(30 * 24 * time.Hour)
	h := newHarness(b, harnessOptions{now: func() time.Time { return now }})
	h.seed(b, 10000, start, 90*24*time.Hour)
	h.loadOps(b, now)
	br := h.signIn("all")
	for _, path := range []string{"/inbox", "/accounts", "/status"} {
		b.Run(path, func(b *testing.B) {
			var size int
			for b.Loop() {
				p := br.get(path)
				if p.status != http.StatusOK {
					b.Fatalf("%s: %d", path, p.status)
				}
				size = len(p.body)
			}
			b.ReportMetric(float64(size), "bytes/page")
		})
	}
}

// loadOps fills every list of the inbox and the status page past its
// bound (BenchmarkConsoleOpsPagesLoaded says what).
func (h *harness) loadOps(b *testing.B, now time.Time) {
	b.Helper()
	ctx := context.Background()
	slot := now.Add(-time.Hour)
	for i := range 700 {
		id := fmt.Sprintf("open-%03d", i)
		e := ledger.NewEntry(ledger.PublishKey("news", id, slot), ledger.Publish, "news", id, slot, "fp", "w1", now.Add(-time.Duration(i)*time.Minute), time.Minute)
		if err := h.store.Create(ctx, e); err != nil {
			b.Fatal(err)
		}
		if i < 100 {
			held, err := e.Hold("duplicate on the account", "remote-"+id, now)
			if err != nil {
				b.Fatal(err)
			}
			if err := h.store.Update(ctx, e, held); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := range 1000 {
		id := post.ID(fmt.Sprintf("done-%04d", i))
		at := now.Add(-time.Duration(i) * time.Minute)
		final := post.Published
		if i < 60 {
			final = post.Failed
		}
		if err := h.store.CreatePost(ctx, post.Post{ID: id, Body: "out", CreatedAt: at,
			Targets: []post.Target{{Account: "news", Slot: at, Status: post.Scheduled, UpdatedAt: at}}}); err != nil {
			b.Fatal(err)
		}
		for _, st := range []post.TargetStatus{post.Triggered, post.Publishing, final} {
			u := post.TargetUpdate{Status: st, At: at, Reason: "refused"}
			if st == post.Published {
				u.RemoteID, u.Reason = "r"+string(id), ""
			}
			if _, err := h.store.UpdateTarget(ctx, id, "news", u); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i := range 100 {
		if _, err := h.queue.Send(ctx, fmt.Appendf(nil, `{"post_id": "p%d", "account_id": "news", "slot": "2199-01-01T00:00:00Z"}`, i), 0); err != nil {
			b.Fatal(err)
		}
	}
	msgs, err := h.queue.Receive(ctx, 100, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range msgs {
		if err := h.queue.DeadLetter(ctx, m.Receipt, "gave up"); err != nil {
			b.Fatal(err)
		}
	}
}
