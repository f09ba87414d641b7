package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"oncepost/shared/platform/sandbox"
	"oncepost/shared/publishing"
)

// A post moved by less than a second keeps a schedule: the new slot's
// schedule must not share its name with the old one, which the move
// deletes.
func TestRescheduleBySubSecondKeepsASchedule(t *testing.T) {
	w := newWorkspace(t, sandbox.Options{}, 1)
	ctx := context.Background()
	run := func(args ...string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := runCLI(ctx, append(args, "--db", w.db), &stdout, &stderr); code != exitOK {
			t.Fatalf("oncepost %v: exit %d: %s%s", args, code, stdout.String(), stderr.String())
		}
	}
	slot := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	run("post", "add", "--id", "p", "--account", string(w.accounts[0]), "--at", slot.Format(time.RFC3339), "--body", "Hello.")
	moved := slot.Add(500 * time.Millisecond)
	run("post", "reschedule", "p", "--at", moved.Format(time.RFC3339Nano))

	rt, err := openTool(ctx, w.db)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ref := publishing.TargetRef{Post: "p", Account: w.accounts[0], Slot: moved}
	if _, _, err := rt.cron.Get(ctx, scheduleName(ref)); err != nil {
		t.Errorf("the moved target has no schedule: %v", err)
	}
}
