package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"oncepost/shared/localflow"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The edges an independent drill found on one machine (no duplicate, no
// loss: what an operator sees around them).

// publishAmbiguously sends a post whose create commits after the client
// gave up, and runs its confirm workflow until the look finds it.
func publishAmbiguously(t *testing.T, f *flowFixture, id string) publishing.Job {
	t.Helper()
	f.ws.sb.Script(sandbox.Fault{Kind: sandbox.FaultDelayBeforeCommit, Delay: 200 * time.Millisecond})
	job := f.due(id, "Storm warning for "+id+".")
	if out := f.publish(job); out.Result != publishing.Confirming {
		t.Fatalf("first send = %+v, want confirming", out)
	}
	if tg := f.target(job); tg.Status != post.Publishing || tg.Reason == "" {
		t.Fatalf("target after the ambiguous send: %s %q, want publishing with the reason", tg.Status, tg.Reason)
	}
	f.waitCommitted(1)
	name := publishing.ConfirmName(f.entry(job).Key, 1)
	for step := 0; step < 5 && f.describe(name).Status == localflow.StatusRunning; step++ {
		f.clock.Advance(time.Second)
		f.runDue()
	}
	if ex := f.describe(name); ex.Status != localflow.StatusSucceeded {
		t.Fatalf("workflow %s in state %s (%s: %s)", ex.Status, ex.State, ex.Error, ex.Cause)
	}
	return job
}

// A target that went publishing (ambiguous) and then published does not
// keep the ambiguous episode's reason: the reason explains failed, held
// and waiting, and an operator reading "published: timeout after the
// request was written" would look for a problem that is gone.
func TestPublishedAfterAmbiguousKeepsNoReason(t *testing.T) {
	f := newFlowFixture(t, post.GateAuto, false)
	job := publishAmbiguously(t, f, "p1")
	tg := f.target(job)
	if tg.Status != post.Published || tg.Reason != "" {
		t.Errorf("target %s with reason %q, want published without a reason", tg.Status, tg.Reason)
	}
}

// No JSON output prints the zero time (0001-01-01T00:00:00Z) for a time
// that is not there: a target's next try, an entry's lease, retry or
// deferral.
func TestJSONOutputsShowNoZeroTime(t *testing.T) {
	f := newFlowFixture(t, post.GateAuto, false)
	job := publishAmbiguously(t, f, "p1")
	later := f.clock.Now().Add(time.Hour)
	if err := f.rt.store.CreatePost(context.Background(), post.Post{ID: "p2", Body: "Later.", CreatedAt: f.clock.Now(),
		Targets: []post.Target{{Account: job.Account, Slot: later, Status: post.Scheduled, UpdatedAt: f.clock.Now()}}}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"post", "list", "--json"},
		{"post", "show", "p1", "--json"},
		{"post", "show", "p2", "--json"},
		{"status", "--json"},
		{"held", "--json"},
		{"dlq", "list", "--json"},
	} {
		var stdout, stderr bytes.Buffer
		if code := runCLI(context.Background(), append(args, "--db", f.ws.db), &stdout, &stderr); code != exitOK {
			t.Fatalf("oncepost %s: exit %d, %s", strings.Join(args, " "), code, stderr.String())
		}
		for _, line := range strings.Split(stdout.String(), "\n") {
			if strings.Contains(line, "0001-01-01") {
				t.Errorf("oncepost %s prints a zero time: %s", strings.Join(args, " "), strings.TrimSpace(line))
			}
		}
	}
}
