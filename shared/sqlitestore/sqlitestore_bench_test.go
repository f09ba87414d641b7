package sqlitestore

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
)

// BenchmarkLedgerAcquireConfirm is the ledger's share of a publish: Create
// (pending, with its audit row) and Update to confirmed (with its audit
// row), from parallel goroutines.
func BenchmarkLedgerAcquireConfirm(b *testing.B) {
	ctx := context.Background()
	s := openTest(b, Options{})
	var n atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			now := time.Now()
			e := ledger.NewEntry(ledger.PublishKey("acct", fmt.Sprint("post-", i), t0), ledger.Publish,
				"acct", fmt.Sprint("post-", i), t0, "fp", "bench", now, time.Minute)
			if err := s.Create(ctx, e); err != nil {
				b.Error(err)
				return
			}
			done, err := e.Confirm("remote", now)
			if err != nil {
				b.Error(err)
				return
			}
			if err := s.Update(ctx, e, done); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkPublishHappyPath is everything the publisher asks of the store
// for one publish: receive the message, read the post, acquire the ledger
// entry, confirm it, mark the target published, ack the message.
func BenchmarkPublishHappyPath(b *testing.B) {
	for _, par := range []int{1, 8} {
		b.Run(fmt.Sprintf("goroutines=%dxGOMAXPROCS", par), func(b *testing.B) { benchPublish(b, par) })
	}
}

func benchPublish(b *testing.B, parallelism int) {
	ctx := context.Background()
	s := openTest(b, Options{})
	q := s.Queue("publish", 5)
	for i := range b.N {
		id := post.ID(fmt.Sprint("post-", i))
		p := post.Post{ID: id, Body: "hello", CreatedAt: t0,
			Targets: []post.Target{{Account: "acct", Slot: t0, Status: post.Triggered, UpdatedAt: t0}}}
		if err := s.CreatePost(ctx, p); err != nil {
			b.Fatal(err)
		}
		if _, err := q.Send(ctx, []byte(id), 0); err != nil {
			b.Fatal(err)
		}
	}
	before := s.Stats()
	b.SetParallelism(parallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := publishOnce(ctx, s, q); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "publishes/s")
	after := s.Stats()
	writes := (after.LedgerWrites - before.LedgerWrites) + (after.PostWrites - before.PostWrites) +
		(after.AccountWrites - before.AccountWrites) + (after.QueueWrites - before.QueueWrites)
	b.ReportMetric(float64(writes)/float64(b.N), "writes/op")
}

func publishOnce(ctx context.Context, s *Store, q *Queue) error {
	msgs, err := q.Receive(ctx, 1, time.Minute)
	if err != nil {
		return err
	}
	if len(msgs) != 1 {
		return fmt.Errorf("received %d messages", len(msgs))
	}
	m := msgs[0]
	id := post.ID(m.Body)
	p, err := s.GetPost(ctx, id)
	if err != nil {
		return err
	}
	tg, _ := p.Target("acct")
	now := time.Now()
	e := ledger.NewEntry(ledger.PublishKey("acct", string(id), tg.Slot), ledger.Publish, "acct", string(id), tg.Slot, "fp", "bench", now, time.Minute)
	if err := s.Create(ctx, e); err != nil {
		return err
	}
	done, err := e.Confirm("remote-"+string(id), now)
	if err != nil {
		return err
	}
	if err := s.Update(ctx, e, done); err != nil {
		return err
	}
	if _, err := s.UpdateTarget(ctx, id, "acct", post.TargetUpdate{Status: post.Published, RemoteID: done.RemoteID, At: now}); err != nil {
		return err
	}
	return q.Ack(ctx, m.Receipt)
}

// BenchmarkStartupWithManyScheduled is what the runtime asks the store at
// start and every sweep with 1,000,000 scheduled targets that all have
// their schedules (plus a few in other statuses): the targets still
// without a schedule, the counts the sweeper alarms on, the unfinished
// targets and the data version. Each must cost what it returns, not the
// number of scheduled targets.
func BenchmarkStartupWithManyScheduled(b *testing.B) {
	const scheduled = 1_000_000
	ctx := context.Background()
	s := openTest(b, Options{})
	// Rows written directly, in one transaction; CreatePost would take a
	// transaction per post.
	for _, q := range []string{
		`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 - 1)
			INSERT INTO posts (id, body, media, created_at)
			SELECT printf('p%07d', i), 'body', 'null', '2026-03-14T09:26:53.000000000Z' FROM n`,
		`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 - 1)
			INSERT INTO targets (post_id, account, position, slot, status, remote_id, reason, updated_at, has_schedule)
			SELECT printf('p%07d', i), 'acct', 0, strftime('%Y-%m-%dT%H:%M:%S.000000000Z', 1773480413 + i * 60, 'unixepoch'),
				CASE WHEN i % 100000 = 0 THEN 'held' WHEN i % 100000 = 1 THEN 'failed' ELSE 'scheduled' END,
				'', '', '2026-03-14T09:26:53.000000000Z', 1
			FROM n`,
	} {
		if _, err := s.DB().ExecContext(ctx, q, scheduled); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if refs, err := s.Unscheduled(ctx, 1000); err != nil || len(refs) != 0 {
			b.Fatalf("Unscheduled = %d, %v", len(refs), err)
		}
		counts, err := s.CountTargets(ctx, post.Held, post.Failed, post.Waiting)
		if err != nil || counts[post.Held] != scheduled/100000 {
			b.Fatalf("CountTargets = %v, %v", counts, err)
		}
		if _, err := s.Unfinished(ctx, t0, 1000); err != nil {
			b.Fatal(err)
		}
		if _, err := s.DataVersion(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdateTargetOutbox is the outbox's cost on the write that
// causes an event: UpdateTarget from publishing to published, with no
// subscription (the event is derived and kept in the events table) and
// with three that want it (three deliveries more), against a move that
// causes no event (scheduled to triggered). Besides the time it reports
// two figures that depend less on how busy the machine is: cpu-µs/op, the
// process's CPU time (user and system) per move, and walpages/op, the
// pages one UpdateTarget writes to the WAL (measured on 200 more moves
// after the timed ones, with automatic checkpoints off).
func BenchmarkUpdateTargetOutbox(b *testing.B) {
	const pagesOps = 200
	for _, bc := range []struct {
		name     string
		from, to post.TargetStatus
		subs     int
	}{
		{"no_event", post.Scheduled, post.Triggered, 0},
		{"event/subscriptions=0", post.Publishing, post.Published, 0},
		{"event/subscriptions=3", post.Publishing, post.Published, 3},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			s := openTest(b, Options{})
			for i := range bc.subs {
				benchSubscribe(b, s, i)
			}
			for i := range b.N + pagesOps {
				p := post.Post{ID: post.ID(fmt.Sprint("post-", i)), Body: "hello", CreatedAt: t0,
					Targets: []post.Target{{Account: "acct", Slot: t0, Status: bc.from, UpdatedAt: t0}}}
				if err := s.CreatePost(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
			move := func(i int) {
				u := post.TargetUpdate{Status: bc.to, RemoteID: "remote", At: t0.Add(time.Duration(i) * time.Millisecond)}
				if _, err := s.UpdateTarget(ctx, post.ID(fmt.Sprint("post-", i)), "acct", u); err != nil {
					b.Fatal(err)
				}
			}
			cpu0 := cpuTime(b)
			b.ResetTimer()
			for i := range b.N {
				move(i)
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			var busy, frames, copied int
			for _, q := range []string{`PRAGMA wal_checkpoint(TRUNCATE)`, `PRAGMA wal_autocheckpoint = 0`} {
				if _, err := s.DB().ExecContext(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
			for i := range pagesOps {
				move(b.N + i)
			}
			if err := s.DB().QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(frames)/pagesOps, "walpages/op")
		})
	}
}

// cpuTime is the CPU time (user and system) the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
