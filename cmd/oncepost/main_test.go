package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/sqlitestore"
)

// The test binary doubles as the oncepost binary: with ONCEPOST_MAIN=1 it
// runs the CLI on its arguments, so tests can start, kill and restart real
// oncepost processes without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("ONCEPOST_MAIN") == "1" {
		main()
		return
	}
	code := m.Run()
	if benchFiles.dir != "" {
		os.RemoveAll(benchFiles.dir)
	}
	os.Exit(code)
}

// oncepostCmd returns a command running `oncepost args...` as a child process.
func oncepostCmd(t testing.TB, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	// A race-enabled binary sleeps a second at exit by default, to let
	// reports print; the child's reports print before it exits anyway.
	cmd.Env = append(os.Environ(), "ONCEPOST_MAIN=1", "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	return cmd
}

// workspace is a SQLite file with sandbox accounts, written the way an
// operator's tools would, for a runtime process to pick up.
type workspace struct {
	dir, db  string
	sb       *sandbox.Server
	accounts []post.AccountID
}

func newWorkspace(t testing.TB, opts sandbox.Options, accounts int) *workspace {
	t.Helper()
	sb := sandbox.New(opts)
	if err := sb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	dir := t.TempDir()
	w := &workspace{dir: dir, db: filepath.Join(dir, "oncepost.db"), sb: sb}
	store := w.open(t)
	defer store.Close()
	for i := 0; i < accounts; i++ {
		sa := sb.AddAccount(fmt.Sprintf("acct%d", i))
		acc := post.Account{ID: post.AccountID(sa.Username), Platform: "sandbox", Handle: "@" + sa.Username, BaseURL: sb.URL(), RemoteID: sa.ID, CredentialRef: sa.Username, Gate: post.GateAuto}
		if err := store.PutAccount(context.Background(), acc); err != nil {
			t.Fatal(err)
		}
		if err := store.PutCredential(context.Background(), acc.ID, platform.Credential{AccessToken: sa.AccessToken, RefreshToken: sa.RefreshToken}); err != nil {
			t.Fatal(err)
		}
		w.accounts = append(w.accounts, acc.ID)
	}
	return w
}

func (w *workspace) open(t testing.TB) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), w.db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// addPosts stores n posts due at slot, spread over the accounts.
func (w *workspace) addPosts(t testing.TB, n int, slot time.Time) {
	t.Helper()
	store := w.open(t)
	defer store.Close()
	now := time.Now().UTC()
	for i := 0; i < n; i++ {
		p := post.Post{ID: post.ID(fmt.Sprintf("p%03d", i)), Body: fmt.Sprintf("Post number %d, exactly once.", i), CreatedAt: now,
			Targets: []post.Target{{Account: w.accounts[i%len(w.accounts)], Slot: slot, Status: post.Scheduled, UpdatedAt: now}}}
		if err := store.CreatePost(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCLIRefusesBadArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "usage: oncepost"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"run", "--workers", "0"}, exitUsage, "--workers: 0"},
		{[]string{"run", "--confirm-wait", "1500ms"}, exitUsage, "--confirm-wait"},
		{[]string{"run", "--lease", "1s"}, exitUsage, "--lease"},
		{[]string{"run", "--lease", "13s"}, exitUsage, "--lease: 13s must exceed the preparation before the slot plus the call timeout plus the record margin (14s)"},
		{[]string{"run", "--prepare-before", "-1s"}, exitUsage, "--prepare-before: -1s"},
		{[]string{"run", "--nope"}, exitUsage, "flag provided but not defined: -nope"},
		{[]string{"run", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"run", "--log", "xml"}, exitUsage, "--log"},
		{[]string{"chaos", "--loss", "1.5"}, exitUsage, "--loss: 1.5"},
		{[]string{"chaos", "--rounds", "0"}, exitUsage, "--rounds: 0"},
		{[]string{"status", "--db", "/nonexistent/x.db"}, exitUsage, "--db"},
		{[]string{"post"}, exitUsage, "which one? post add, post list"},
		{[]string{"post", "add"}, exitUsage, "no post given: pass a draft file, or --account, --at and --body"},
		{[]string{"post", "frobnicate"}, exitUsage, `unknown command "frobnicate"; want post add`},
		{[]string{"version", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"help"}, exitOK, ""},
	} {
		var stdout, stderr bytes.Buffer
		code := runCLI(context.Background(), tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("oncepost %q: exit %d, output %q; want exit %d mentioning %q", tc.args, code, stdout.String()+stderr.String(), tc.code, tc.want)
		}
	}
}

func TestPostAddValidatesAndSchedules(t *testing.T) {
	w := newWorkspace(t, sandbox.Options{}, 1)
	// The runtime's tables exist once a runtime has opened the file.
	cfg := defaultConfig()
	cfg.DBPath, cfg.Logger = w.db, discardLogger()
	rt, err := openRuntime(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	write := func(name, body string) string {
		p := filepath.Join(w.dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	future := time.Now().Add(time.Hour).Format(time.RFC3339)
	for _, tc := range []struct {
		name, draft string
		code        int
		want        string
	}{
		{"ok", `{"id":"hello","body":"Hello.","targets":[{"account":"acct0","at":"` + future + `"}]}`, exitOK, "scheduled hello for acct0"},
		{"no offset", `{"id":"x","body":"Hello.","targets":[{"account":"acct0","at":"2030-01-01T09:00:00"}]}`, exitUsage, "targets[0].at"},
		{"unknown account", `{"id":"x","body":"Hello.","targets":[{"account":"ghost","at":"` + future + `"}]}`, exitUsage, "targets[0].account"},
		{"too long", `{"id":"x","body":"` + strings.Repeat("a", 501) + `","targets":[{"account":"acct0","at":"` + future + `"}]}`, exitUsage, "body: is 501 characters"},
		{"unknown field", `{"id":"x","title":"t"}`, exitUsage, `unknown field "title"`},
		{"not json", `hello`, exitUsage, "draft: line 1, column 1: invalid character 'h'"},
		{"json error on line 2", "{\"id\":\"x\",\n \"body\": oops}", exitUsage, "draft: line 2, column 10: invalid character 'o'"},
		{"invalid utf-8", "{\"id\":\"x\",\"body\":\"caf\xe9\"}", exitUsage, "byte 21 (line 1, column 22) is not valid UTF-8"},
		{"data after the object", `{"id":"x","body":"Hello.","targets":[{"account":"acct0","at":"` + future + `"}]} {"id":"y"}`, exitUsage, "data after the post's JSON object"},
		{"year 2200", `{"id":"y2200","body":"Far.","targets":[{"account":"acct0","at":"2200-01-01T09:00:00Z"}]}`, exitUsage, "year 2200, outside 1970-2199"},
		// Refused drafts leave nothing behind: the same id is free.
		{"the refused id is free", `{"id":"y2200","body":"Far.","targets":[{"account":"acct0","at":"` + future + `"}]}`, exitOK, "scheduled y2200"},
		{"duplicate id", `{"id":"hello","body":"Again.","targets":[{"account":"acct0","at":"` + future + `"}]}`, exitUsage, `id: post "hello" exists already`},
	} {
		var stdout, stderr bytes.Buffer
		code := runCLI(context.Background(), []string{"post", "add", "--db", w.db, write(tc.name+".json", tc.draft)}, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("%s: exit %d, output %q; want exit %d mentioning %q", tc.name, code, stdout.String()+stderr.String(), tc.code, tc.want)
		}
	}
}
