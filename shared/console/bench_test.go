package console

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"oncepost/shared/post"
)

// seed stores n posts, each to news and sky, their slots spread evenly
// over span from start (10,000 over 90 days is 111 a day).
func (h *harness) seed(tb testing.TB, n int, start time.Time, span time.Duration) {
	tb.Helper()
	ctx := context.Background()
	step := span / time.Duration(n)
	for i := range n {
		at := start.Add(time.Duration(i) * step).Truncate(time.Minute).UTC()
		p := post.Post{ID: post.ID(fmt.Sprintf("seed-%05d", i)), Body: fmt.Sprintf("Seeded post %d: the morning news, with a link https://example.com/%d", i, i),
			Targets:   []post.Target{{Account: "news", Slot: at, Status: post.Scheduled, UpdatedAt: at}, {Account: "sky", Slot: at, Status: post.Scheduled, UpdatedAt: at}},
			CreatedAt: start}
		if err := h.store.CreatePost(ctx, p); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkConsolePages is each page's server time with 10,000 posts in
// the workspace (90 days of them, two targets each), the page's size
// reported as bytes/page. The target is ≤ 50 ms a page, and ≤ 500 KB
// for the calendar's month.
func BenchmarkConsolePages(b *testing.B) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	h := newHarness(b, harnessOptions{now: func() time.Time { return start.Add(30 * 24 * time.Hour) }})
	h.seed(b, 10000, start, 90*24*time.Hour)
	br := h.signIn("all")
	for _, path := range []string{
		"/calendar?view=week&at=2026-12-31",
		"/calendar?view=month&at=2026-12-31",
		"/calendar?view=month&at=2026-12-31&account=news",
		"/calendar?view=day&at=2026-12-31",
		"/posts/seed-03333",
		"/compose",
		"/inbox",
		"/accounts",
		"/status",
	} {
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
