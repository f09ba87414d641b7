package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"oncepost/shared/sqlitestore"
)

// Every command answers --help on stdout with its usage, a description
// and an example, and exits 0.
func TestEveryCommandHasHelpWithAnExample(t *testing.T) {
	var leaves []*command
	for _, c := range commands() {
		if len(c.subs) == 0 {
			leaves = append(leaves, c)
		}
		leaves = append(leaves, c.subs...)
	}
	for _, c := range leaves {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runCLI(context.Background(), append(strings.Fields(c.name), "--help"), &stdout, &stderr)
			out := stdout.String()
			if code != exitOK || stderr.Len() != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr.String())
			}
			for _, want := range []string{"usage: oncepost " + c.name, "example:\n  oncepost " + strings.Fields(c.name)[0]} {
				if !strings.Contains(out, want) {
					t.Errorf("help does not contain %q:\n%s", want, out)
				}
			}
			if len(strings.TrimSpace(c.help)) < 40 {
				t.Errorf("the description is missing or too short: %q", c.help)
			}
			var viaHelp bytes.Buffer
			if code := runCLI(context.Background(), append([]string{"help"}, strings.Fields(c.name)...), &viaHelp, &stderr); code != exitOK ||
				!strings.Contains(viaHelp.String(), "usage: oncepost "+c.name) {
				t.Errorf("oncepost help %s: exit %d, %q", c.name, code, viaHelp.String())
			}
		})
	}
}

// Dead letters from the CLI: listed with the reason, dropped by a prefix
// of their id, redriven back onto the queue.
func TestDeadLettersFromTheCLI(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "oncepost.db")
	ctx := context.Background()
	run := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := runCLI(ctx, append(args, "--db", db), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	if code, out := run("blocklist", "list"); code != exitUsage {
		t.Fatalf("before the workspace exists: %d %s", code, out)
	}
	if code, out := run("blocklist", "add", "placeholder"); code != exitOK { // creates the workspace
		t.Fatalf("%d %s", code, out)
	}
	s, err := sqlitestore.Open(ctx, db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := s.Queue("publish", 20)
	for _, body := range []string{`{"post_id":"a"}`, `not json`} {
		if _, err := q.Send(ctx, []byte(body), 0); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := q.Receive(ctx, 10, time.Minute)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("receive: %v, %d", err, len(msgs))
	}
	for _, m := range msgs {
		if err := q.DeadLetter(ctx, m.Receipt, "malformed body: "+string(m.Body)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	code, out := run("dlq", "list", "--json")
	var dls []deadLetterView
	if err := json.Unmarshal([]byte(out), &dls); code != exitOK || err != nil || len(dls) != 2 {
		t.Fatalf("dlq list --json: exit %d, %v, %q", code, err, out)
	}
	if !strings.HasPrefix(dls[0].Reason, "malformed body") || dls[1].Body != "not json" {
		t.Errorf("dead letters %+v", dls)
	}
	if code, out := run("dlq", "drop", dls[1].ID[:8]); code != exitOK || !strings.Contains(out, "dropped "+dls[1].ID) {
		t.Errorf("dlq drop: %d %q", code, out)
	}
	if code, out := run("dlq", "drop", dls[1].ID); code != exitUsage || !strings.Contains(out, "no dead letter") {
		t.Errorf("dlq drop twice: %d %q", code, out)
	}
	if code, out := run("dlq", "redrive", "--all"); code != exitOK || !strings.Contains(out, "redriven "+dls[0].ID) {
		t.Errorf("dlq redrive --all: %d %q", code, out)
	}
	if code, out := run("dlq", "list"); code != exitOK || !strings.Contains(out, "no dead letters") {
		t.Errorf("dlq list after: %d %q", code, out)
	}
	s, err = sqlitestore.Open(ctx, db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msgs, err = s.Queue("publish", 20).Receive(ctx, 10, time.Minute)
	if err != nil || len(msgs) != 1 || string(msgs[0].Body) != `{"post_id":"a"}` || msgs[0].ReceiveCount != 1 {
		t.Errorf("after the redrive the queue holds %+v (%v), want the first body received once", msgs, err)
	}
}
