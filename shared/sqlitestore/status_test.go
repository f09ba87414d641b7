package sqlitestore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
)

func TestSummaryCounts(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	p := post.Post{ID: "p", Body: "x", CreatedAt: now, Targets: []post.Target{
		{Account: "a", Slot: now, Status: post.Scheduled, UpdatedAt: now},
		{Account: "b", Slot: now, Status: post.Scheduled, UpdatedAt: now},
		{Account: "c", Slot: now, Status: post.Published, UpdatedAt: now},
	}}
	if err := s.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	for i, st := range []ledger.State{ledger.Pending, ledger.Pending, ledger.Unknown} {
		e := ledger.NewEntry(ledger.PublishKey("a", "p", now.Add(time.Duration(i))), ledger.Publish, "a", "p", now, "fp", "w", now, time.Minute)
		if err := s.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		if st == ledger.Unknown {
			next, _ := e.MarkUnknown("x", now)
			if err := s.Update(ctx, e, next); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := s.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{
		Targets: map[post.TargetStatus]int{post.Scheduled: 2, post.Published: 1},
		Ledger:  map[ledger.State]int{ledger.Pending: 2, ledger.Unknown: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Summary (-want +got):\n%s", diff)
	}
}

func TestCountTargets(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	p := post.Post{ID: "p", Body: "x", CreatedAt: t0}
	for i, st := range []post.TargetStatus{post.Scheduled, post.Scheduled, post.Waiting, post.Held, post.Failed, post.Failed, post.Published} {
		p.Targets = append(p.Targets, post.Target{Account: post.AccountID(fmt.Sprint("a", i)), Slot: t0, Status: st, UpdatedAt: t0})
	}
	if err := s.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		statuses []post.TargetStatus
		want     map[post.TargetStatus]int
		wantErr  bool
	}{
		{[]post.TargetStatus{post.Held, post.Failed}, map[post.TargetStatus]int{post.Held: 1, post.Failed: 2}, false},
		{[]post.TargetStatus{post.Cancelled, post.Triggered}, map[post.TargetStatus]int{post.Cancelled: 0, post.Triggered: 0}, false},
		{nil, map[post.TargetStatus]int{post.Scheduled: 2, post.Waiting: 1, post.Held: 1, post.Failed: 2, post.Published: 1}, false},
		{[]post.TargetStatus{post.Held, "bogus"}, nil, true},
	} {
		got, err := s.CountTargets(ctx, tc.statuses...)
		if (err != nil) != tc.wantErr {
			t.Errorf("CountTargets(%v) error = %v, want error %v", tc.statuses, err, tc.wantErr)
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("CountTargets(%v) (-want +got):\n%s", tc.statuses, d)
		}
	}
}
