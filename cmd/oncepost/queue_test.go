package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The queue from the command line: an account's zone and slots set, posts
// added to its queue take its next free slots in its zone, reorder and
// shuffle move them, and each queued post has its schedule at its slot.
func TestQueueCommands(t *testing.T) {
	w := newWorkspace(t, sandbox.Options{}, 1)
	ctx := context.Background()
	acc := string(w.accounts[0])
	run := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := runCLI(ctx, append(args, "--db", w.db), &stdout, &stderr); code != exitOK {
			t.Fatalf("oncepost %v: exit %d: %s%s", args, code, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	refused := func(flagName string, args ...string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := runCLI(ctx, append(args, "--db", w.db), &stdout, &stderr)
		if code == exitOK || !strings.Contains(stderr.String(), flagName) {
			t.Errorf("oncepost %v: exit %d, stderr %q; want a refusal naming %s", args, code, stderr.String(), flagName)
		}
	}
	refused("--at", "post", "add", "--account", acc, "--body", "no time")
	refused("targets[0].at", "post", "add", "--account", acc, "--body", "no slots yet", "--queue")
	refused("slot", "account", "set", acc, "--slot", "at(2026-12-01T09:00:00)")
	refused("slot", "account", "set", acc, "--slot", "cron(0 25 * * ? *)")
	refused("tz", "account", "set", acc, "--tz", "Mars/Olympus")
	// Two rules, the second bad: the refusal quotes the second.
	{
		var stdout, stderr bytes.Buffer
		runCLI(ctx, []string{"account", "set", acc, "--slot", "cron(0 9 * * ? *)", "--slot", "cron(0 26 * * ? *)", "--db", w.db}, &stdout, &stderr)
		if !strings.Contains(stderr.String(), "cron(0 26") {
			t.Errorf("the refusal does not quote the bad rule: %s", stderr.String())
		}
	}
	refused("times-in", "post", "add", "--account", acc, "--body", "b", "--at", "2030-01-01T09:00", "--times-in", "local")

	out := run("account", "set", acc, "--tz", "Europe/Berlin", "--slot", "cron(0 9 * * ? *)", "--slot", "cron(0 17 * * ? *)")
	if !strings.Contains(out, "Europe/Berlin") {
		t.Errorf("account set said %q", out)
	}
	for _, id := range []string{"q1", "q2", "q3"} {
		out := run("post", "add", "--id", id, "--account", acc, "--body", "queued "+id, "--queue")
		if !strings.Contains(out, "from its queue at") || !strings.Contains(out, "Europe/Berlin") {
			t.Errorf("post add --queue said %q", out)
		}
	}
	// A time without an offset, read in the account's zone because the
	// operator says so.
	out = run("post", "add", "--id", "fixed", "--account", acc, "--body", "fixed", "--at", "2030-01-02T09:00", "--times-in", "account")
	if !strings.Contains(out, "2030-01-02 08:00:00Z") {
		t.Errorf("post add --times-in account said %q, want 09:00 Berlin = 08:00Z", out)
	}

	queue := func() []string {
		t.Helper()
		var v publishing.QueueView
		if err := json.Unmarshal([]byte(run("queue", "show", acc, "--json")), &v); err != nil {
			t.Fatal(err)
		}
		berlin, _ := time.LoadLocation("Europe/Berlin")
		var ids []string
		for i, e := range v.Entries {
			if h := e.Slot.In(berlin).Hour(); h != 9 && h != 17 {
				t.Errorf("%s is at %s, not one of the account's slots", e.Post, e.Slot.In(berlin))
			}
			if i > 0 && !e.Slot.After(v.Entries[i-1].Slot) {
				t.Errorf("queue not in slot order: %+v", v.Entries)
			}
			if !e.Slot.After(time.Now()) {
				t.Errorf("%s is at %s, in the past", e.Post, e.Slot)
			}
			ids = append(ids, string(e.Post))
		}
		return ids
	}
	if got := strings.Join(queue(), ","); got != "q1,q2,q3" {
		t.Errorf("queue = %s, want q1,q2,q3", got)
	}
	run("queue", "reorder", acc, "q3")
	if got := strings.Join(queue(), ","); got != "q3,q1,q2" {
		t.Errorf("queue after reorder q3 = %s, want q3,q1,q2", got)
	}
	run("queue", "shuffle", acc, "--seed", "5")
	first := strings.Join(queue(), ",")
	run("queue", "reorder", acc, "q3", "q1", "q2")
	run("queue", "shuffle", acc, "--seed", "5")
	if again := strings.Join(queue(), ","); again != first {
		t.Errorf("the same queue shuffled with seed 5 gave %s, then %s", first, again)
	}
	if show := run("post", "show", "q1"); !strings.Contains(show, "Europe/Berlin") {
		t.Errorf("post show does not give the slot in the account's zone:\n%s", show)
	}
	if list := run("post", "list", "--account", acc); !strings.Contains(list, "Europe/Berlin") {
		t.Errorf("post list does not give slots in the account's zone:\n%s", list)
	}
	text := run("queue", "show", acc)
	if !strings.Contains(text, "next free slots:") || !strings.Contains(text, "Europe/Berlin") {
		t.Errorf("queue show said:\n%s", text)
	}

	// Every queued post has its schedule at its slot.
	rt, err := openTool(ctx, w.db)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, id := range queue() {
		p, err := rt.store.GetPost(ctx, post.ID(id))
		if err != nil {
			t.Fatal(err)
		}
		ref := publishing.TargetRef{Post: p.ID, Account: w.accounts[0], Slot: p.Targets[0].Slot}
		if _, _, err := rt.cron.Get(ctx, scheduleName(ref)); err != nil {
			t.Errorf("queued post %s has no schedule at its slot %s: %v", id, ref.Slot, err)
		}
	}
}
