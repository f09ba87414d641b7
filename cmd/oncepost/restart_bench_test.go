package main

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// manyScheduled is a file with n scheduled posts, each with its one-time
// schedule, as a runtime leaves it after `post add` of every one of them:
// built once per test process (rows written directly in one transaction;
// a transaction per post would take minutes) and removed by TestMain.
func manyScheduled(b *testing.B, n int) string {
	b.Helper()
	benchFiles.once.Do(func() {
		dir, err := os.MkdirTemp("", "oncepost-bench-")
		if err != nil {
			benchFiles.err = err
			return
		}
		benchFiles.dir = dir
		benchFiles.path, benchFiles.err = buildManyScheduled(filepath.Join(dir, "oncepost.db"), n)
	})
	if benchFiles.err != nil {
		b.Fatal(benchFiles.err)
	}
	return benchFiles.path
}

var benchFiles struct {
	once      sync.Once
	dir, path string
	err       error
}

func buildManyScheduled(path string, n int) (string, error) {
	ctx := context.Background()
	cfg := defaultConfig()
	cfg.DBPath, cfg.Logger, cfg.Metrics = path, discardLogger(), discardWriter{}
	rt, err := openRuntime(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer rt.Close()
	// Slots a minute apart from 2027 on: nothing is due while measured.
	const first = 1798761600 // 2027-01-01T00:00:00Z
	for _, q := range []string{
		`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 - 1)
			INSERT INTO posts (id, body, media, created_at)
			SELECT printf('p%07d', i), 'A scheduled post.', 'null', '2026-11-30T09:00:00.000000000Z' FROM n`,
		`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 - 1)
			INSERT INTO targets (post_id, account, position, slot, status, remote_id, reason, updated_at, has_schedule)
			SELECT printf('p%07d', i), 'acct', 0, strftime('%Y-%m-%dT%H:%M:%S.000000000Z', ?2 + i * 60, 'unixepoch'),
				'scheduled', '', '', '2026-11-30T09:00:00.000000000Z', 1 FROM n`,
		`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 - 1)
			INSERT INTO localcron_schedules (name, expression, timezone, start, payload, version, last_fired, next_fire, updated_at)
			SELECT printf('post/p%07d/acct/%s', i, strftime('%Y-%m-%dT%H:%M:%SZ', ?2 + i * 60, 'unixepoch')),
				printf('at(%s)', strftime('%Y-%m-%dT%H:%M:%S', ?2 + i * 60, 'unixepoch')), 'UTC', '2026-11-30T09:00:00.000000000Z',
				printf('{"post_id":"p%07d","account_id":"acct","slot":"%s"}', i, strftime('%Y-%m-%dT%H:%M:%SZ', ?2 + i * 60, 'unixepoch')),
				1, '', strftime('%Y-%m-%dT%H:%M:%S.000000000Z', ?2 + i * 60, 'unixepoch'), '2026-11-30T09:00:00.000000000Z' FROM n`,
	} {
		if _, err := rt.store.DB().ExecContext(ctx, q, n, first); err != nil {
			return "", err
		}
	}
	return path, nil
}

const manyPosts = 1_000_000

// BenchmarkRestartWithManyScheduled is a runtime restarting on a file with
// 1,000,000 scheduled posts: it opens every component, finds the targets
// without a schedule (one indexed query) and reads its next firing. Its
// cost must not grow with the number of scheduled posts. Target: ≤ 1 s.
func BenchmarkRestartWithManyScheduled(b *testing.B) {
	path := manyScheduled(b, manyPosts)
	ctx := context.Background()
	cfg := defaultConfig()
	cfg.DBPath, cfg.Logger, cfg.Metrics = path, discardLogger(), discardWriter{}
	var worst time.Duration
	for b.Loop() {
		start := time.Now()
		rt, err := openRuntime(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := rt.syncSchedules(ctx); err != nil {
			b.Fatal(err)
		}
		if next, ok, err := rt.cron.NextDue(ctx); err != nil || !ok || next.Year() != 2027 {
			b.Fatalf("next firing %v %v (err %v), want one in 2027", next, ok, err)
		}
		if err := rt.Close(); err != nil {
			b.Fatal(err)
		}
		worst = max(worst, time.Since(start))
	}
	b.ReportMetric(float64(worst.Milliseconds()), "worst-restart-ms")
	if worst > time.Second {
		b.Errorf("a restart took %s, want ≤ 1s", worst)
	}
}

// BenchmarkIdleRuntimeCPU runs the whole runtime (scheduler, 4 publishers,
// confirm workflows, sweeper every second, watcher) idle for 10 s on the
// 1,000,000-post file and reports the CPU it used as a share of one core.
// Target: < 1 %.
func BenchmarkIdleRuntimeCPU(b *testing.B) {
	path := manyScheduled(b, manyPosts)
	cfg := defaultConfig()
	cfg.DBPath, cfg.Logger, cfg.Metrics = path, discardLogger(), discardWriter{}
	const idle = 10 * time.Second
	var share float64
	for b.Loop() {
		rt, err := openRuntime(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- rt.run(ctx) }()
		time.Sleep(time.Second) // start-up is not idle time
		before, start := cpuTime(b), time.Now()
		time.Sleep(idle)
		used, wall := cpuTime(b)-before, time.Since(start)
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		rt.Close()
		share = 100 * used.Seconds() / wall.Seconds()
	}
	b.ReportMetric(share, "cpu-%-of-a-core")
	if share >= 1 {
		b.Errorf("idle runtime used %.2f %% of a core, want < 1 %%", share)
	}
}

// cpuTime is the process's user plus system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
