package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"oncepost/shared/post"
)

// The checkpointer copies the WAL into the database file while the
// writer goes on, and the writer no longer checkpoints in its commits at
// the usual threshold while it runs.
func TestCheckpointerKeepsTheWALOffTheWritePath(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "oncepost.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() { done <- s.RunCheckpointer(ctx, 10*time.Millisecond) }()
	autocheckpoint := func() int {
		var n int
		if err := s.w.QueryRowContext(context.Background(), `PRAGMA wal_autocheckpoint`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	deadline := time.Now().Add(5 * time.Second)
	for autocheckpoint() != 4*walCheckpointPages && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := autocheckpoint(); got != 4*walCheckpointPages {
		t.Fatalf("wal_autocheckpoint while the checkpointer runs = %d, want %d", got, 4*walCheckpointPages)
	}
	now := time.Now().UTC()
	for i := range 200 {
		p := post.Post{ID: post.ID(fmt.Sprintf("c%03d", i)), Body: "checkpointed", CreatedAt: now,
			Targets: []post.Target{{Account: "a", Slot: now.Add(time.Hour), Status: post.Scheduled, UpdatedAt: now}}}
		if err := s.CreatePost(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// Every frame the writer appended is copied by the checkpointer (a
	// probe checkpoint on another connection then finds none left).
	probe, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	var r checkpointResult
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		var before checkpointResult
		if err := probe.QueryRowContext(ctx, `PRAGMA wal_checkpoint(NOOP)`).Scan(&before.busy, &before.log, &before.copied); err != nil {
			t.Fatal(err)
		}
		if r = before; r.log > 0 && r.copied == r.log {
			break
		}
	}
	if r.log == 0 || r.copied != r.log {
		t.Errorf("WAL after 200 commits with the checkpointer running: %d frames, %d copied; want all copied", r.log, r.copied)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := autocheckpoint(); got != walCheckpointPages {
		t.Errorf("wal_autocheckpoint after the checkpointer stopped = %d, want %d back", got, walCheckpointPages)
	}
}
