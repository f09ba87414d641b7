package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
)

// runtimeArgs tune a runtime process for a test: short leases and waits.
func runtimeArgs(db string) []string {
	return []string{"run", "--db", db, "--media", filepath.Join(filepath.Dir(db), "media"), "--workers", "4",
		"--call-timeout", "300ms", "--record-margin", "200ms", "--prepare-before", "200ms", "--lease", "1s", "--visibility", "2s", "--confirm-wait", "1s", "--sweep-every", "500ms"}
}

// A runtime killed with SIGKILL while posts are in flight, then started
// again, finishes every post exactly once and leaves no open ledger row.
func TestRestartAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts runtime processes")
	}
	// Half the creates commit only after the client has given up, so
	// entries are pending and unknown when the process dies.
	w := newWorkspace(t, sandbox.Options{DisableIdempotency: true, Seed: 7,
		Random: sandbox.RandomFaults{DelayRate: 0.5, Delay: 500 * time.Millisecond}}, 3)
	const n = 40
	w.addPosts(t, n, time.Now().UTC().Add(time.Second).Truncate(time.Second))

	logs, err := os.Create(filepath.Join(w.dir, "run1.log"))
	if err != nil {
		t.Fatal(err)
	}
	first := oncepostCmd(t, runtimeArgs(w.db)...)
	first.Stdout, first.Stderr = logs, logs
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if !waitUntil(ctx, 20*time.Millisecond, func() bool { return w.sb.Stats().CreateRequests >= n/3 }) {
		first.Process.Kill()
		first.Wait()
		raw, _ := os.ReadFile(logs.Name())
		t.Fatalf("the first runtime sent %d creates in 20 s; its log:\n%s", w.sb.Stats().CreateRequests, tail(raw, 3000))
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	store := w.open(t)
	defer store.Close()
	before, err := store.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed with %d creates sent; targets %v, ledger %v", w.sb.Stats().CreateRequests, before.Targets, before.Ledger)
	if before.Targets[post.Published] == n {
		t.Fatalf("every post was published before the kill; the test proves nothing")
	}

	second := oncepostCmd(t, runtimeArgs(w.db)...)
	logs2, _ := os.Create(filepath.Join(w.dir, "run2.log"))
	second.Stdout, second.Stderr = logs2, logs2
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel2()
	settled := waitUntil(ctx2, 100*time.Millisecond, func() bool {
		s, err := store.Summary(context.Background())
		return err == nil && s.Targets[post.Published] == n && s.Ledger[ledger.Pending]+s.Ledger[ledger.Unknown] == 0
	})
	// Let one more sweep pass run, then stop the runtime cleanly.
	time.Sleep(700 * time.Millisecond)
	if err := second.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(second, 10*time.Second); err != nil {
		t.Errorf("runtime did not stop cleanly on SIGTERM: %v", err)
	}
	after, err := store.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !settled {
		t.Errorf("posts did not settle after the restart: targets %v, ledger %v (logs in %s)", after.Targets, after.Ledger, w.dir)
	}
	if after.Targets[post.Published] != n {
		t.Errorf("%d of %d posts published", after.Targets[post.Published], n)
	}
	if open, _ := store.Open(context.Background(), time.Now().Add(time.Hour), 0); len(open) != 0 {
		t.Errorf("%d open ledger rows after the sweeper's pass", len(open))
	}
	st := w.sb.Stats()
	if st.Duplicates != 0 || st.Committed != n {
		t.Errorf("sandbox committed %d posts with %d duplicates, want %d and 0", st.Committed, st.Duplicates, n)
	}
	// status reads the same file while nothing runs.
	out := oncepostCmd(t, "status", "--db", w.db, "--json")
	raw, err := out.Output()
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	var rep statusReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("status --json printed %q: %v", raw, err)
	}
	if rep.Targets[post.Published] != n || len(rep.Open) != 0 {
		t.Errorf("status reports %v published and %d open rows", rep.Targets, len(rep.Open))
	}
}

func waitExit(cmd *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		cmd.Process.Kill()
		return <-done
	}
}

// tail returns at most the last n bytes of b, for failure messages.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
