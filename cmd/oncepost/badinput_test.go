package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/platform/catalog"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// snapshot is everything an operator's command could write.
type snapshot struct {
	Accounts    []post.Account
	Credentials map[post.AccountID]string
	Posts       []post.Post
	Blocked     []post.BlockedTerm
	Ledger      map[ledger.State]int
	DeadLetters int
	Queued      int
}

func takeSnapshot(t *testing.T, db string) snapshot {
	t.Helper()
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var snap snapshot
	if snap.Accounts, err = s.ListAccounts(ctx); err != nil {
		t.Fatal(err)
	}
	snap.Credentials = map[post.AccountID]string{}
	for _, a := range snap.Accounts {
		c, err := s.Credential(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		snap.Credentials[a.ID] = c.AccessToken
	}
	if snap.Posts, err = s.ListPosts(ctx, publishing.PostFilter{Limit: 1000}); err != nil {
		t.Fatal(err)
	}
	if snap.Blocked, err = s.BlockedTerms(ctx); err != nil {
		t.Fatal(err)
	}
	sum, err := s.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap.Ledger = sum.Ledger
	dls, err := s.Queue("publish", 0).DeadLetters(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	snap.DeadLetters = len(dls)
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM queue_messages`).Scan(&snap.Queued); err != nil {
		t.Fatal(err)
	}
	return snap
}

// Bad input to every command: an error that names the field or argument
// and the fix, exit code 2 (1 where the input is well formed but the state
// forbids it), no Go type names, no "usage:" prefix, and nothing written.
func TestBadInputNamesTheFieldAndWritesNothing(t *testing.T) {
	sb := sandbox.New(sandbox.Options{MaxCharacters: 100})
	if err := sb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	dir := t.TempDir()
	db := filepath.Join(dir, "oncepost.db")
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := runCLI(context.Background(), args, &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	// A workspace with one account, a scheduled post and a blocked term.
	acct := sb.AddAccount("news")
	tokenFile := file("news.token", acct.AccessToken+"\n")
	if code, out := run("account", "add", "--db", db, "--id", "news", "--url", sb.URL(), "--token-file", tokenFile); code != exitOK {
		t.Fatalf("account add: %d %s", code, out)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if code, out := run("post", "add", "--db", db, "--id", "p", "--account", "news", "--at", future, "--body", "Hello."); code != exitOK {
		t.Fatalf("post add: %d %s", code, out)
	}
	if code, out := run("blocklist", "add", "--db", db, "spoiler"); code != exitOK {
		t.Fatalf("blocklist add: %d %s", code, out)
	}
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	notImage := file("notes.txt", "just text")
	badToken := file("bad.token", "not-a-token\n")
	emptyToken := file("empty.token", "\n")
	missing := filepath.Join(dir, "missing")

	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"account add: no id", []string{"account", "add", "--url", sb.URL(), "--token-file", tokenFile}, exitUsage, []string{"--id: is missing"}},
		{"account add: bad id", []string{"account", "add", "--id", "a b", "--url", sb.URL(), "--token-file", tokenFile}, exitUsage, []string{"--id", "letters, digits"}},
		{"account add: not http", []string{"account", "add", "--id", "x", "--url", "ftp://example.social", "--token-file", tokenFile}, exitUsage, []string{"--url", "https://mastodon.social"}},
		{"account add: plain http", []string{"account", "add", "--id", "x", "--url", "http://example.social", "--token-file", tokenFile}, exitUsage, []string{"--url", "use https"}},
		{"account add: no credential", []string{"account", "add", "--id", "x", "--url", sb.URL()}, exitUsage, []string{"--token-file FILE", "--oauth"}},
		{"account add: token file missing", []string{"account", "add", "--id", "x", "--url", sb.URL(), "--token-file", missing}, exitUsage, []string{"--token-file: cannot read"}},
		{"account add: empty token", []string{"account", "add", "--id", "x", "--url", sb.URL(), "--token-file", emptyToken}, exitUsage, []string{"--token-file", "is empty"}},
		{"account add: refused token", []string{"account", "add", "--id", "x", "--url", sb.URL(), "--token-file", badToken}, exitUsage, []string{"--token-file: the instance refused the token", "nothing was stored"}},
		{"account add: unknown platform", []string{"account", "add", "--id", "x", "--platform", "fax", "--url", sb.URL(), "--token-file", tokenFile}, exitUsage, []string{"--platform", "not a platform oncepost knows", strings.Join(catalog.Names(), ", ")}},
		{"account add: id taken", []string{"account", "add", "--id", "news", "--url", sb.URL(), "--token-file", tokenFile}, exitUsage, []string{"--id", "exists already", "--replace"}},
		{"account add: bad gate", []string{"account", "add", "--id", "x", "--url", sb.URL(), "--token-file", tokenFile, "--gate", "maybe"}, exitUsage, []string{"--gate", "auto or manual"}},
		{"account add: replace unknown", []string{"account", "add", "--id", "x", "--url", sb.URL(), "--token-file", tokenFile, "--replace"}, exitUsage, []string{"--replace", "no account"}},
		{"account show: unknown", []string{"account", "show", "ghost"}, exitUsage, []string{`no account "ghost"`}},
		{"account remove: unknown", []string{"account", "remove", "ghost"}, exitUsage, []string{`no account "ghost"`}},
		{"account remove: posts pending", []string{"account", "remove", "news"}, exitFailure, []string{"cancel them first"}},
		{"post add: no account", []string{"post", "add", "--at", future, "--body", "x"}, exitUsage, []string{"--account: is missing"}},
		{"post add: no time", []string{"post", "add", "--account", "news", "--body", "x"}, exitUsage, []string{"--at: is missing"}},
		{"post add: bad time", []string{"post", "add", "--account", "news", "--at", "tomorrow 9am", "--body", "x"}, exitUsage, []string{"targets[0].at", "RFC 3339"}},
		{"post add: no offset", []string{"post", "add", "--account", "news", "--at", "2030-01-01T09:00", "--body", "x"}, exitUsage, []string{"targets[0].at", "no timezone offset"}},
		{"post add: past", []string{"post", "add", "--account", "news", "--at", past, "--body", "x"}, exitUsage, []string{"targets[0].at", "in the past"}},
		{"post add: unknown account", []string{"post", "add", "--account", "ghost", "--at", future, "--body", "x"}, exitUsage, []string{"targets[0].account", `unknown account "ghost"`}},
		{"chaos: unknown platform", []string{"chaos", "--platform", "myspace"}, exitUsage, []string{`--platform: "myspace": use mastodon or bluesky`}},
		{"post add: --text without a platform", []string{"post", "add", "--account", "news", "--at", future, "--body", "hi", "--text", "nope"}, exitUsage, []string{`--text: "nope": write PLATFORM=TEXT`}},
		{"post add: a text for a platform no target is on", []string{"post", "add", "--account", "news", "--at", future, "--body", "hi", "--text", "bluesky=hello"}, exitUsage, []string{"texts.bluesky: no target account is on bluesky"}},
		{"post add: over the instance's limit", []string{"post", "add", "--account", "news", "--at", future, "--body", strings.Repeat("a", 101)}, exitUsage, []string{"body: is 101 characters as mastodon counts them, over its limit of 100", "shorten it by 1"}},
		{"post add: media missing", []string{"post", "add", "--account", "news", "--at", future, "--body", "x", "--media", missing}, exitUsage, []string{"media[0].path: cannot read"}},
		{"post add: media not an image", []string{"post", "add", "--account", "news", "--at", future, "--body", "x", "--media", notImage}, exitUsage, []string{"media[0].path", "not an image", "PNG, JPEG"}},
		{"post add: blocked term", []string{"post", "add", "--account", "news", "--at", future, "--body", "No Spoiler here"}, exitUsage, []string{`body: contains the blocked term "spoiler" at line 1, column 4`, "blocklist remove"}},
		{"post add: id taken", []string{"post", "add", "--id", "p", "--account", "news", "--at", future, "--body", "x"}, exitUsage, []string{`id: post "p" exists already`}},
		{"post add: draft and flags", []string{"post", "add", "--account", "news", file("d.json", "{}")}, exitUsage, []string{"either as a draft file or with flags"}},
		{"post add: draft json error", []string{"post", "add", file("e.json", "{\"id\": \"x\",\n\"body\": 5}")}, exitUsage, []string{`line 2, column 10: field "body" must be a string, not number`}},
		{"post list: bad status", []string{"post", "list", "--status", "sent"}, exitUsage, []string{"--status", `"sent" is not a target status`}},
		{"post list: unknown account", []string{"post", "list", "--account", "ghost"}, exitUsage, []string{"--account", `unknown account "ghost"`}},
		{"post show: unknown", []string{"post", "show", "ghost"}, exitUsage, []string{`no post "ghost"`}},
		{"post show: no id", []string{"post", "show"}, exitUsage, []string{"missing argument", "post show ID"}},
		{"post cancel: unknown", []string{"post", "cancel", "ghost"}, exitUsage, []string{`no post "ghost"`}},
		{"post cancel: not a target", []string{"post", "cancel", "p", "--account", "ghost"}, exitUsage, []string{"--account", `no target on "ghost"`}},
		{"post reschedule: no time", []string{"post", "reschedule", "p"}, exitUsage, []string{"--at: is missing"}},
		{"post reschedule: bad time", []string{"post", "reschedule", "p", "--at", "soon"}, exitUsage, []string{"--at", "RFC 3339"}},
		{"post reschedule: past", []string{"post", "reschedule", "p", "--at", past}, exitUsage, []string{"--at", "in the past"}},
		{"post delete: unknown", []string{"post", "delete", "ghost"}, exitUsage, []string{`no post "ghost"`}},
		{"post delete: not published", []string{"post", "delete", "p", "--account", "news"}, exitFailure, []string{"not deleted", "news"}},
		{"blocklist add: empty", []string{"blocklist", "add", "  "}, exitUsage, []string{"term 1", "term: is empty"}},
		{"blocklist remove: nothing", []string{"blocklist", "remove"}, exitUsage, []string{"missing argument"}},
		{"dlq redrive: nothing", []string{"dlq", "redrive"}, exitUsage, []string{"give dead-letter ids", "--all"}},
		{"dlq redrive: unknown", []string{"dlq", "redrive", "ghost-id"}, exitUsage, []string{`no dead letter "ghost-id"`}},
		{"dlq drop: unknown", []string{"dlq", "drop", "ghost-id"}, exitUsage, []string{`no dead letter "ghost-id"`}},
		{"approve: unknown", []string{"approve", "abcdefghij"}, exitUsage, []string{`no held or unresolved entry has a key starting with "abcdefghij"`}},
		{"confirm: no remote id", []string{"confirm", "abcdefghij"}, exitUsage, []string{"--remote-id: is required"}},
		{"held: no workspace", []string{"held", "--db", missing}, exitUsage, []string{"--db", "does not exist"}},
		{"status: no workspace", []string{"status", "--db", missing}, exitUsage, []string{"--db", "does not exist"}},
		{"sandbox: unknown profile", []string{"sandbox", "--faults", "chaotic"}, exitUsage, []string{"--faults", "none"}},
		{"sandbox: not loopback", []string{"sandbox", "--addr", "0.0.0.0:4000"}, exitUsage, []string{"--addr", "127.0.0.1"}},
		{"sandbox: bad account", []string{"sandbox", "--account", "a b"}, exitUsage, []string{"--account", "username"}},
		{"version: extra", []string{"version", "now"}, exitUsage, []string{`unexpected argument "now"`}},
		{"unknown flag", []string{"post", "list", "--colour"}, exitUsage, []string{"flag provided but not defined: -colour", "oncepost post list --help"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if !strings.HasPrefix(tt.name, "sandbox") && !strings.HasPrefix(tt.name, "version") && !slicesContains(args, "--db") {
				args = append(append([]string(nil), args...), "--db", db)
			}
			before := takeSnapshot(t, db)
			code, out := run(args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; output %q", code, tt.code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output %q does not mention %q", out, w)
				}
			}
			for _, bad := range []string{"usage: ", "*post.", "*platform.", "sql:", "%!"} {
				if strings.Contains(out, bad) {
					t.Errorf("output %q contains %q", out, bad)
				}
			}
			if strings.Contains(out, acct.AccessToken) {
				t.Errorf("output prints the token")
			}
			if diff := cmp.Diff(before, takeSnapshot(t, db)); diff != "" {
				t.Errorf("the refused command wrote (-before +after):\n%s", diff)
			}
		})
	}
}

func slicesContains(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}
