package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// PruneIdempotencyKeys deletes the records created before the time given,
// oldest first and at most limit a call, and leaves the younger ones and
// the posts they name.
func TestPruneIdempotencyKeys(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	ages := []time.Duration{72 * time.Hour, 50 * time.Hour, 49 * time.Hour, publishing.IdempotencyKeep, time.Hour}
	for i, age := range ages {
		p := post.Post{ID: post.ID(fmt.Sprintf("p%d", i)), Body: "x", CreatedAt: now,
			Targets: []post.Target{{Account: "a", Slot: now.Add(time.Hour), Status: post.Scheduled, UpdatedAt: now}}}
		rec := publishing.IdempotencyRecord{Scope: "s", Key: fmt.Sprintf("k%d", i), Fingerprint: "f", Status: 201, CreatedAt: now.Add(-age)}
		if err := s.CreatePostKeyed(ctx, p, &rec, nil); err != nil {
			t.Fatal(err)
		}
	}
	before := now.Add(-publishing.IdempotencyKeep)
	tests := []struct {
		limit int
		want  int
		left  []string
	}{
		{limit: 2, want: 2, left: []string{"k2", "k3", "k4"}},
		{limit: 10, want: 1, left: []string{"k3", "k4"}}, // k3 is exactly IdempotencyKeep old: kept
		{limit: 10, want: 0, left: []string{"k3", "k4"}},
	}
	for i, tt := range tests {
		n, err := s.PruneIdempotencyKeys(ctx, before, tt.limit)
		if err != nil || n != tt.want {
			t.Fatalf("prune %d: %d, %v; want %d", i, n, err, tt.want)
		}
		var left []string
		for j := range ages {
			key := fmt.Sprintf("k%d", j)
			_, err := s.GetIdempotencyRecord(ctx, "s", key)
			switch {
			case err == nil:
				left = append(left, key)
			case !errors.Is(err, post.ErrNotFound):
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(tt.left, left); diff != "" {
			t.Errorf("prune %d: records left (-want +got):\n%s", i, diff)
		}
	}
	if _, err := s.GetPost(ctx, "p0"); err != nil {
		t.Errorf("the post of a pruned key: %v, want it kept", err)
	}
}
