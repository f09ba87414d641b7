package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"oncepost/shared/platform/sandbox"
)

var usernamePattern = regexp.MustCompile(`^[A-Za-z0-9_]{1,30}$`)

// cmdSandbox is `oncepost sandbox`: the sandbox platform as a server of
// its own, until SIGINT/SIGTERM.
func cmdSandbox(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("sandbox")
	addr := fs.String("addr", "127.0.0.1:0", "listen address, on 127.0.0.1 or [::1] only (port 0: a free port)")
	faults := fs.String("faults", "none", "fault profile: "+strings.Join(sandbox.ProfileNames(), ", "))
	dataDir := fs.String("data", filepath.Join("var", "sandbox"), "directory keeping the sandbox's accounts and timeline across restarts, and the token files")
	seed := fs.Int64("seed", 1, "seed of the random faults")
	logRequests := fs.Bool("log", false, "log one line per request to stderr (never tokens or post text)")
	noIdempotency := fs.Bool("no-idempotency", false, "ignore Idempotency-Key headers (a repeated create makes a second status), so a drill sees the ledger alone keep posts single")
	var accounts stringList
	fs.Var(&accounts, "account", "username of an account to create if missing (repeatable; default demo when there is none)")
	backendName := embeddedOnly(fs, "sandbox")
	if _, err := parseFlags(fs, args, stdout, 0, 0); err != nil {
		return err
	}
	if err := checkEmbeddedOnly("sandbox", *backendName); err != nil {
		return err
	}
	random, err := sandbox.Profile(*faults)
	if err != nil {
		return usageError("faults", "%v", err)
	}
	for _, a := range accounts {
		if !usernamePattern.MatchString(a) {
			return usageError("account", "%q: a username is 1-30 letters, digits or '_'", a)
		}
	}
	if host, _, err := net.SplitHostPort(*addr); err != nil {
		return usageError("addr", "%q: %v; write it like 127.0.0.1:4000", *addr, err)
	} else if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return usageError("addr", "%q: the sandbox listens on 127.0.0.1 or [::1] only", *addr)
	}
	if *dataDir == "" {
		return usageError("data", "is empty: name a directory for the sandbox's state and token files")
	}
	logger := slog.New(slog.DiscardHandler)
	if *logRequests {
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	sb, err := sandbox.Open(sandbox.Options{DataDir: *dataDir, Addr: *addr, Random: random, Seed: *seed, Logger: logger,
		DisableIdempotency: *noIdempotency})
	if err != nil {
		return fmt.Errorf("open the sandbox in %s: %w", *dataDir, err)
	}
	defer sb.Close()
	have := map[string]bool{}
	for _, a := range sb.Accounts() {
		have[strings.ToLower(a.Username)] = true
	}
	if len(accounts) == 0 && len(have) == 0 {
		accounts = stringList{"demo"}
	}
	for _, name := range accounts {
		if !have[strings.ToLower(name)] {
			sb.AddAccount(name)
			have[strings.ToLower(name)] = true
		}
	}
	if err := sb.Start(); err != nil {
		return usageError("addr", "%v", err)
	}
	url := sb.URL()
	keys := "honoured"
	if *noIdempotency {
		keys = "ignored"
	}
	fmt.Fprintf(stdout, "sandbox listening on %s (faults: %s, Idempotency-Key: %s, data: %s)\n", url, *faults, keys, *dataDir)
	files, err := writeTokenFiles(filepath.Join(*dataDir, "tokens"), sb.Accounts())
	if err != nil {
		return err
	}
	for _, f := range files {
		fmt.Fprintf(stdout, "account @%s: token in %s\n  add it: oncepost account add --id %s --url %s --token-file %s\n", f.username, f.path, strings.ToLower(f.username), url, f.path)
	}
	fmt.Fprintf(stdout, "timeline: %s/   stats: %s/sandbox/stats   stop: Ctrl-C\n", url, url)
	<-ctx.Done()
	return sb.Close()
}

type tokenFile struct{ username, path string }

// writeTokenFiles writes each account's current access token to
// dir/USERNAME.token (0600, the directory 0700): tokens are never printed.
// The first account with a username wins.
func writeTokenFiles(dir string, accounts []sandbox.Account) ([]tokenFile, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("token directory: %w", err)
	}
	seen := map[string]bool{}
	var out []tokenFile
	for _, a := range accounts {
		name := strings.ToLower(a.Username)
		if seen[name] || !usernamePattern.MatchString(a.Username) {
			continue
		}
		seen[name] = true
		path := filepath.Join(dir, name+".token")
		if err := writeSecretFile(path, []byte(a.AccessToken+"\n")); err != nil {
			return nil, err
		}
		out = append(out, tokenFile{username: a.Username, path: path})
	}
	return out, nil
}

// writeSecretFile replaces a file with data, mode 0600 from its creation
// (a temporary file renamed over it, so it is never readable by others,
// not even for a moment).
func writeSecretFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".secret-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
