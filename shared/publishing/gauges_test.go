package publishing_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// GaugeSources reads the gauges the sweeper emits and the status pages
// show: an entry opened at this instant is open, stale means open longer
// than StaleAfter (the package's unless set), a Limit reads that many
// oldest entries and says more are open.
func TestGaugeSources(t *testing.T) {
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "oncepost.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	slot := now.Add(-time.Hour)
	for _, o := range []struct {
		id      string
		age     time.Duration
		unknown bool
	}{{"a", 10 * time.Minute, true}, {"b", 6 * time.Minute, false}, {"c", 2 * time.Minute, false}, {"d", 0, false}} {
		e := ledger.NewEntry(ledger.PublishKey("news", o.id, slot), ledger.Publish, "news", o.id, slot, "fp", "w1", now.Add(-o.age), time.Hour)
		if err := s.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		if o.unknown {
			u, err := e.MarkUnknown("timeout", now.Add(-o.age))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Update(ctx, e, u); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.CreatePost(ctx, post.Post{ID: "h", Body: "x", CreatedAt: now,
		Targets: []post.Target{{Account: "news", Slot: slot, Status: post.Held, UpdatedAt: now}}}); err != nil {
		t.Fatal(err)
	}
	type want struct {
		Open                       int
		OpenMore                   bool
		StalePending, StaleUnknown int
		OldestOpenAge              time.Duration
		Held                       int
	}
	for _, tc := range []struct {
		name string
		src  publishing.GaugeSources
		want want
	}{
		{"every entry, the package's StaleAfter", publishing.GaugeSources{Ledger: s, Targets: s}, want{4, false, 1, 1, 10 * time.Minute, 1}},
		{"a shorter StaleAfter", publishing.GaugeSources{Ledger: s, Targets: s, StaleAfter: time.Minute}, want{4, false, 2, 1, 10 * time.Minute, 1}},
		{"the two oldest", publishing.GaugeSources{Ledger: s, Targets: s, Limit: 2}, want{2, true, 1, 1, 10 * time.Minute, 1}},
		{"a limit of them all", publishing.GaugeSources{Ledger: s, Targets: s, Limit: 4}, want{4, false, 1, 1, 10 * time.Minute, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := tc.src.Read(ctx, now)
			if err != nil {
				t.Fatal(err)
			}
			got := want{len(g.Open), g.OpenMore, g.StalePending, g.StaleUnknown, g.OldestOpenAge, g.HeldTargets}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("gauges (-want +got):\n%s", diff)
			}
		})
	}
}
