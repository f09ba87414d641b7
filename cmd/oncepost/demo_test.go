package main

import (
	"bufio"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/sandbox"
)

// The demo's promise across restarts: Ctrl-C while the incident post's
// outcome is unknown (the platform stored it after the client gave up),
// then `run --demo` again: the confirm loop finds the post on the demo
// sandbox, which kept its timeline in the workspace, and nothing is sent a
// second time.
func TestDemoRestartDuringTheConfirmWaitSendsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the demo's first slot (10 s)")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "var", "oncepost.db")
	args := []string{"run", "--demo", "--db", db, "--call-timeout", "2s", "--lease", "10s", "--confirm-wait", "4s", "--sweep-every", "1s"}

	// First run: stop it (SIGINT, as Ctrl-C) once the incident is unknown.
	first := oncepostCmd(t, args...)
	out, err := first.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopProcess(t, first) })
	unknown := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		closed := false
		for sc.Scan() {
			l := sc.Text()
			if !closed && strings.Contains(l, "publish recorded") && strings.Contains(l, "post=demo-1-incident") && strings.Contains(l, "state=unknown") {
				close(unknown)
				closed = true
			}
		}
	}()
	select {
	case <-unknown:
	case <-time.After(40 * time.Second):
		t.Fatal("the incident post never went unknown")
	}
	stopProcess(t, first)
	if code := first.ProcessState.ExitCode(); code != exitOK {
		t.Errorf("first run exited %d after SIGINT, want 0", code)
	}

	// Second run: the confirm loop finds the post; no second create.
	second := oncepostCmd(t, args...)
	out2, err := second.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopProcess(t, second) })
	confirmed := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out2)
		closed := false
		for sc.Scan() {
			if l := sc.Text(); !closed && strings.Contains(l, "confirmed after ambiguous outcome") {
				close(confirmed)
				closed = true
			}
		}
	}()
	select {
	case <-confirmed:
	case <-time.After(40 * time.Second):
		t.Fatal("the restarted runtime never confirmed the incident post")
	}
	stopProcess(t, second)

	// The demo sandbox's own record, from its journal.
	sb, err := sandbox.Open(sandbox.Options{DataDir: demoSandboxDir(db)})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	fp := platform.Fingerprint(demoIncidentText, nil)
	creates := 0
	for _, c := range sb.Creates() {
		if c.Fingerprint == fp {
			creates++
		}
	}
	if creates != 1 {
		t.Errorf("the sandbox counts %d creates of the incident post, want 1", creates)
	}
	if st := sb.Stats(); st.Duplicates != 0 {
		t.Errorf("the sandbox counts %d duplicates", st.Duplicates)
	}
}
