package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"oncepost/shared/apitoken"
)

// token add prints the token once (list never shows it), refuses bad
// flags naming them, and revoke is immediate and repeatable.
func TestTokenCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "oncepost.db")
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := runCLI(context.Background(), append(args, "--db", db), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	for _, tt := range []struct {
		args []string
		flag string
	}{
		{[]string{"token", "add", "--scope", "read"}, "--name"},
		{[]string{"token", "add", "--name", "cms"}, "--scope"},
		{[]string{"token", "add", "--name", "cms", "--scope", "write"}, "--scope"},
		{[]string{"token", "add", "--name", "bad name", "--scope", "read"}, "--name"},
		{[]string{"token", "add", "--name", "cms", "--scope", "read", "--rate", "0"}, "--rate"},
		{[]string{"token", "add", "--name", "cms", "--scope", "read", "--backend", "aws", "--stack", "s"}, "--backend"},
	} {
		if code, _, stderr := run(tt.args...); code != exitUsage || !strings.Contains(stderr, tt.flag) {
			t.Errorf("%v: exit %d, %s; want 2 naming %s", tt.args, code, stderr, tt.flag)
		}
	}
	code, stdout, stderr := run("token", "add", "--name", "cms", "--scope", "posts,read", "--json")
	var made struct {
		Token  string           `json:"token"`
		ID     string           `json:"id"`
		Scopes []apitoken.Scope `json:"scopes"`
	}
	if err := json.Unmarshal([]byte(stdout), &made); code != exitOK || err != nil || !apitoken.WellFormed(made.Token) || len(made.Scopes) != 2 {
		t.Fatalf("token add --json: exit %d, %s %s", code, stdout, stderr)
	}
	if code, _, stderr := run("token", "add", "--name", "cms", "--scope", "read"); code != exitUsage || !strings.Contains(stderr, "--name") {
		t.Errorf("a second token named cms: exit %d, %s", code, stderr)
	}
	code, stdout, _ = run("token", "list", "--json")
	if code != exitOK || strings.Contains(stdout, made.Token) || !strings.Contains(stdout, made.ID) {
		t.Errorf("token list: exit %d, %s; want the id and never the token", code, stdout)
	}
	if code, stdout, _ := run("token", "revoke", "cms"); code != exitOK || !strings.Contains(stdout, "revoked") {
		t.Errorf("revoke: exit %d, %s", code, stdout)
	}
	if code, stdout, _ := run("token", "revoke", "cms"); code != exitOK || !strings.Contains(stdout, "already") {
		t.Errorf("revoke again: exit %d, %s", code, stdout)
	}
	if code, _, stderr := run("token", "revoke", "nobody"); code != exitUsage || !strings.Contains(stderr, "nobody") {
		t.Errorf("revoke an unknown name: exit %d, %s", code, stderr)
	}
}
