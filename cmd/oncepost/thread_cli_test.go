package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"oncepost/shared/clocktest"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
)

// `post add` takes a thread (--reply, repeated, or a draft's "thread"),
// checks every part, and `post show` lists the parts: not sent before the
// slot; after it, each confirmed with the remote id of its status on the
// sandbox, each replying to the one before.
func TestPostAddAndShowAThread(t *testing.T) {
	w := newWorkspace(t, sandbox.Options{}, 1)
	clock := clocktest.New(time.Now().UTC().Truncate(time.Second))
	cfg := defaultConfig()
	cfg.DBPath, cfg.Logger, cfg.Metrics, cfg.Now, cfg.PrepareBefore = w.db, discardLogger(), discardWriter{}, clock.Now, 0
	rt, err := openRuntime(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	at := clock.Now().Add(time.Hour).Format(time.RFC3339)
	cli := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := runCLI(context.Background(), append(args[:1:1], append([]string{args[1], "--db", w.db}, args[2:]...)...), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	code, out := cli("post", "add", "--id", "th", "--account", "acct0", "--at", at, "--body", "1/3 A thread", "--reply", "2/3 goes on", "--reply", "3/3 ends", "--json")
	var p post.Post
	if code != exitOK || json.Unmarshal([]byte(out), &p) != nil || strings.Join(p.Thread, "|") != "2/3 goes on|3/3 ends" {
		t.Fatalf("post add --reply: exit %d: %s", code, out)
	}
	draft := filepath.Join(w.dir, "thread.json")
	for _, tc := range []struct {
		name, json string
		code       int
		want       string
	}{
		{"draft thread", `{"id":"th2","body":"1/2","thread":["2/2"],"targets":[{"account":"acct0","at":"` + at + `"}]}`, exitOK, "scheduled th2 for acct0"},
		{"part too long", `{"id":"x","body":"1/2","thread":["` + strings.Repeat("a", 501) + `"],"targets":[{"account":"acct0","at":"` + at + `"}]}`, exitUsage, "thread[0]: is 501 characters"},
		{"empty part", `{"id":"x","body":"1/2","thread":["ok", " "],"targets":[{"account":"acct0","at":"` + at + `"}]}`, exitUsage, "thread[1]: is empty"},
	} {
		if err := os.WriteFile(draft, []byte(tc.json), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, out := cli("post", "add", draft); code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, %q; want %d mentioning %q", tc.name, code, out, tc.code, tc.want)
		}
	}
	code, out = cli("post", "show", "th")
	for _, want := range []string{"reply 2: 2/3 goes on", "reply 3: 3/3 ends", "part 1: not sent", "part 3: not sent"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("post show before the slot: exit %d, no %q in:\n%s", code, want, out)
		}
	}

	// The slot comes: the runtime publishes the thread.
	clock.Advance(time.Hour + time.Second)
	rt, err = openRuntime(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := rt.syncSchedules(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.cron.RunDue(ctx); err != nil {
		t.Fatal(err)
	}
	loop := rt.newLoop()
	for range 10 {
		if n, _ := loop.RunOnce(ctx); n == 0 {
			break
		}
	}
	rt.Close()
	sts := w.sb.Statuses(w.sb.Accounts()[0].ID)
	byText := map[string]sandbox.Status{}
	for _, st := range sts {
		byText[st.Text] = st
	}
	one, two, three := byText["1/3 A thread"], byText["2/3 goes on"], byText["3/3 ends"]
	if one.ID == "" || two.InReplyToID != one.ID || three.InReplyToID != two.ID {
		t.Fatalf("the sandbox's chain: %+v", sts)
	}
	code, out = cli("post", "show", "th")
	for _, want := range []string{"acct0: published", "remote:  " + one.ID, "part 1: confirmed  remote " + one.ID, "part 2: confirmed  remote " + two.ID, "part 3: confirmed  remote " + three.ID} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("post show after publishing: exit %d, no %q in:\n%s", code, want, out)
		}
	}
}
