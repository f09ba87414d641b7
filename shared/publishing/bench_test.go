package publishing_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// BenchmarkPublish runs the whole Publish path (acquire, dedup read,
// re-read, send, record) against an in-process sandbox with no faults,
// on the SQLite store. Target: ≥ 2,000 publishes/s on 2 cores, and at most
// 3 store writes per publish besides the audit rows.
func BenchmarkPublish(b *testing.B) {
	e := newEnv(b, sandbox.Options{})
	ctx := context.Background()
	slot := e.clock.Now().Truncate(time.Second)
	jobs := make([]publishing.Job, b.N)
	for i := range jobs {
		p := post.Post{ID: post.ID(fmt.Sprintf("bench-%d", i)), Body: fmt.Sprintf("Benchmark post number %d.", i), CreatedAt: slot,
			Targets: []post.Target{{Account: e.account.ID, Slot: slot, Status: post.Triggered, UpdatedAt: slot}}}
		if err := e.store.CreatePost(ctx, p); err != nil {
			b.Fatal(err)
		}
		jobs[i] = publishing.Job{Post: p.ID, Account: e.account.ID, Slot: slot}
	}
	before := e.store.Stats()
	var next atomic.Int64
	var failed atomic.Int64
	// Publisher workers wait on the network and the store's single writer,
	// so a deployment runs several per core; so does the benchmark.
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			job := jobs[next.Add(1)-1]
			out, err := e.pub.Publish(ctx, job)
			if err != nil || out.Result != publishing.Published {
				failed.Add(1)
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d publishes did not publish", n, b.N)
	}
	after := e.store.Stats()
	writes := float64((after.LedgerWrites-before.LedgerWrites)+(after.PostWrites-before.PostWrites)+(after.AccountWrites-before.AccountWrites)) / float64(b.N)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "publishes/s")
	b.ReportMetric(writes, "writes/op")
	if writes > 3 {
		b.Errorf("%.2f store writes per publish, want ≤ 3", writes)
	}
	if st := e.sb.Stats(); st.Duplicates != 0 || st.Committed != b.N {
		b.Errorf("sandbox %+v after %d publishes", st, b.N)
	}
}
