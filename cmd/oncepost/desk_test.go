package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"oncepost/shared/clocktest"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// On the embedded runtime a keyed create writes the post, its schedule
// and the key in one transaction; a retry is answered from the key and
// writes nothing; the runtime's prune drops the key after
// publishing.IdempotencyKeep and leaves the post.
func TestEmbeddedKeyedCreate(t *testing.T) {
	w := newWorkspace(t, sandbox.Options{}, 1)
	ctx := context.Background()
	clock := clocktest.New(time.Now().UTC().Truncate(time.Second))
	cfg := defaultConfig()
	cfg.DBPath, cfg.MediaDir, cfg.Logger, cfg.Metrics, cfg.Now = w.db, t.TempDir(), discardLogger(), discardWriter{}, clock.Now
	rt, err := openRuntime(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	desk := embeddedBackend(rt).desk()
	desk.Now = clock.Now
	slot := clock.Now().Add(time.Hour)
	draft := post.Draft{Body: "Keyed.", Targets: []post.DraftTarget{{Account: string(w.accounts[0]), At: slot.Format(time.RFC3339)}}}
	req := &publishing.KeyedRequest{Scope: "token-1", Key: "k1", Fingerprint: "fp",
		Encode: func(p post.Post) (int, []byte, error) { return 201, []byte(p.ID), nil }}
	first, err := desk.Schedule(ctx, draft, nil, req)
	if err != nil || first.Replayed {
		t.Fatalf("first request: %+v, %v", first, err)
	}
	ref := publishing.TargetRef{Post: first.Post.ID, Account: w.accounts[0], Slot: slot}
	if _, _, err := rt.cron.Get(ctx, scheduleName(ref)); err != nil {
		t.Errorf("the post's schedule: %v, want it written with the post", err)
	}
	again, err := desk.Schedule(ctx, draft, nil, req)
	if err != nil || !again.Replayed || string(again.Body) != string(first.Post.ID) {
		t.Errorf("retry: %+v, %v; want the first answer replayed", again, err)
	}
	if refs, err := rt.store.Unscheduled(ctx, 0); err != nil || len(refs) != 0 {
		t.Errorf("targets without a schedule: %v, %v; want none", refs, err)
	}
	clock.Set(clock.Now().Add(publishing.IdempotencyKeep + time.Minute))
	if err := rt.prune(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.store.GetIdempotencyRecord(ctx, "token-1", "k1"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("the key after the prune: %v, want it gone", err)
	}
	if _, err := rt.store.GetPost(ctx, first.Post.ID); err != nil {
		t.Errorf("the post after its key's prune: %v", err)
	}
}
