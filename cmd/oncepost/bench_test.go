package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
)

// BenchmarkSchedulingLateness measures due time → publish call through
// the embedded runtime (localcron at() schedules → trigger → queue →
// publishers → zero-latency sandbox). b.N posts are due over several
// seconds, 50 per second. Target: p99 ≤ 1 s.
func BenchmarkSchedulingLateness(b *testing.B) {
	w := newWorkspace(b, sandbox.Options{}, 4)
	cfg := defaultConfig()
	cfg.DBPath, cfg.MediaDir, cfg.Logger, cfg.Metrics = w.db, b.TempDir(), discardLogger(), discardWriter{}
	cfg.SweepEvery = time.Hour // measure the scheduler, not the sweeper's safety net
	ctx := context.Background()
	rt, err := openRuntime(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	first := time.Now().UTC().Add(2 * time.Second).Truncate(time.Second)
	slots := map[string]time.Time{}
	for i := 0; i < b.N; i++ {
		slot := first.Add(time.Duration(i/50) * time.Second)
		acc := w.accounts[i%len(w.accounts)]
		body := fmt.Sprintf("Lateness probe %d.", i)
		p := post.Post{ID: post.ID(fmt.Sprintf("late-%d", i)), Body: body, CreatedAt: time.Now().UTC(),
			Targets: []post.Target{{Account: acc, Slot: slot, Status: post.Scheduled, UpdatedAt: time.Now().UTC()}}}
		if err := rt.createPost(ctx, p); err != nil {
			b.Fatal(err)
		}
		slots[body] = slot
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	b.ResetTimer()
	go func() { done <- rt.run(runCtx) }()
	deadline, cancel := context.WithTimeout(ctx, time.Duration(b.N/50+30)*time.Second)
	defer cancel()
	ok := waitUntil(deadline, 10*time.Millisecond, func() bool { return w.sb.Stats().Committed >= b.N })
	b.StopTimer()
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	if !ok {
		b.Fatalf("%d of %d posts published", w.sb.Stats().Committed, b.N)
	}
	var late []time.Duration
	for _, acc := range w.accounts {
		for _, st := range w.sb.Statuses(rt.mustRemoteID(b, acc)) {
			late = append(late, st.CreatedAt.Sub(slots[st.Text]))
		}
	}
	slices.Sort(late)
	p := func(q float64) time.Duration { return late[min(len(late)-1, int(q*float64(len(late))))] }
	b.ReportMetric(float64(p(0.50).Milliseconds()), "p50-lateness-ms")
	b.ReportMetric(float64(p(0.99).Milliseconds()), "p99-lateness-ms")
	if p(0.99) > time.Second {
		b.Errorf("p99 lateness %s, want ≤ 1s", p(0.99))
	}
}

func (rt *runtime) mustRemoteID(b *testing.B, acc post.AccountID) string {
	a, err := rt.store.GetAccount(context.Background(), acc)
	if err != nil {
		b.Fatal(err)
	}
	return a.RemoteID
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
