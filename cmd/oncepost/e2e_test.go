package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/sqlitestore"
)

// e2e drives oncepost as an operator does: every command is its own
// process (the test binary in ONCEPOST_MAIN mode), the sandbox platform
// runs as a separate server, and only stdin, stdout, exit codes and the
// sandbox's HTTP API are looked at.
type e2e struct {
	t       testing.TB
	dir, db string
	sbURL   string
	tokens  map[string]string // sandbox username → token file
	// outputs collects every command's output, checked for tokens at the end.
	mu      sync.Mutex
	outputs []string
}

// cli runs one oncepost command with the workspace's --db after the
// command's name, stdin as given, and returns its exit code and output.
func (e *e2e) cli(stdin string, args ...string) (code int, stdout, stderr string) {
	e.t.Helper()
	cmd := oncepostCmd(e.t, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		e.t.Fatalf("oncepost %q: %v", args, err)
	}
	e.mu.Lock()
	e.outputs = append(e.outputs, out.String(), errOut.String())
	e.mu.Unlock()
	return code, out.String(), errOut.String()
}

// ok runs a command that must succeed and returns its stdout.
func (e *e2e) ok(stdin string, args ...string) string {
	e.t.Helper()
	code, out, errOut := e.cli(stdin, args...)
	if code != exitOK {
		e.t.Fatalf("oncepost %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// w appends the workspace's --db to a command.
func (e *e2e) w(args ...string) []string { return append(args, "--db", e.db) }

// posts reads `post list --json` into a map by id.
func (e *e2e) posts() map[post.ID]post.Post {
	e.t.Helper()
	var listed postListing
	if err := json.Unmarshal([]byte(e.ok("", e.w("post", "list", "--json")...)), &listed); err != nil {
		e.t.Fatalf("post list --json: %v", err)
	}
	out := map[post.ID]post.Post{}
	for _, p := range listed.Posts {
		out[p.ID] = p
	}
	return out
}

func (e *e2e) status(id post.ID) post.TargetStatus {
	e.t.Helper()
	p, ok := e.posts()[id]
	if !ok || len(p.Targets) != 1 {
		e.t.Fatalf("post %s: not listed with one target", id)
	}
	return p.Targets[0].Status
}

// waitFor polls cond every 200 ms for up to d.
func (e *e2e) waitFor(what string, d time.Duration, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sandboxStatus is a status as GET /sandbox/statuses lists it.
type sandboxStatus struct {
	ID         string `json:"id"`
	Text       string `json:"text"`
	Deleted    bool   `json:"deleted"`
	MediaCount int    `json:"media_count"`
	Duplicate  bool   `json:"duplicate"`
}

func (e *e2e) sandboxStatuses(accountRemoteID string) []sandboxStatus {
	e.t.Helper()
	var out []sandboxStatus
	e.getJSON("/sandbox/statuses?account="+accountRemoteID, &out)
	return out
}

func (e *e2e) getJSON(path string, v any) {
	e.t.Helper()
	resp, err := http.Get(e.sbURL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("GET %s: %s %s", path, resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
}

// startProcess starts a long-running oncepost command and stops it by PID
// (SIGINT, then SIGKILL after 10 s) when the test ends. Its stdout lines
// are sent on the returned channel.
func (e *e2e) startProcess(logName string, args ...string) (*exec.Cmd, <-chan string) {
	e.t.Helper()
	cmd := oncepostCmd(e.t, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(e.dir, logName))
	if err != nil {
		e.t.Fatal(err)
	}
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			e.mu.Lock()
			e.outputs = append(e.outputs, sc.Text())
			e.mu.Unlock()
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	e.t.Cleanup(func() {
		stopProcess(e.t, cmd)
		logf.Close()
	})
	return cmd, lines
}

// stopProcess interrupts a process and waits for it, killing it if it
// does not stop within 10 s.
func stopProcess(t testing.TB, cmd *exec.Cmd) {
	if cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("pid %d did not stop on SIGINT; killing it", cmd.Process.Pid)
		_ = cmd.Process.Kill()
		<-done
	}
}

func writePNG(t *testing.T, path string) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	for i := range 16 {
		img.Set(i, i, color.RGBA{200, 40, 40, 255})
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestOperatorScenario is the operator's whole day from the command line:
// a sandbox server of its own, accounts added with tokens on stdin, posts
// with an image by path, the runtime, listing, rescheduling, cancelling,
// an approved delete (twice), a held post approved, and a dead letter
// redriven once its cause is fixed.
func TestOperatorScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes for about half a minute")
	}
	dir := t.TempDir()
	e := &e2e{t: t, dir: dir, db: filepath.Join(dir, "ws", "oncepost.db"), tokens: map[string]string{}}

	// The sandbox, as its own process on a free port.
	sb := startSandboxProcess(t, dir, "news", "careful", "spare")
	e.sbURL, e.tokens = sb.URL, sb.TokenFiles
	token := func(name string) string {
		b, err := os.ReadFile(e.tokens[name])
		if err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(e.tokens[name]); fi.Mode().Perm() != 0o600 {
			t.Errorf("token file %s has mode %o, want 0600", e.tokens[name], fi.Mode().Perm())
		}
		return string(b)
	}

	// Accounts, tokens on stdin. A refused token writes nothing.
	if code, _, errOut := e.cli("not-a-token\n", e.w("account", "add", "--id", "news", "--url", e.sbURL, "--token-file", "-")...); code != exitUsage || !strings.Contains(errOut, "--token-file: the instance refused the token") {
		t.Fatalf("a refused token: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(e.db); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused token left a workspace behind: %v", err)
	}
	e.ok(token("news"), e.w("account", "add", "--id", "news", "--url", e.sbURL, "--token-file", "-")...)
	e.ok(token("careful"), e.w("account", "add", "--id", "careful", "--url", e.sbURL, "--token-file", "-", "--gate", "manual")...)
	e.ok(token("spare"), e.w("account", "add", "--id", "spare", "--url", e.sbURL, "--token-file", "-")...)
	var accounts []accountView
	if err := json.Unmarshal([]byte(e.ok("", e.w("account", "list", "--json")...)), &accounts); err != nil || len(accounts) != 3 {
		t.Fatalf("account list --json: %v, %d accounts", err, len(accounts))
	}
	remote := map[post.AccountID]string{}
	for _, a := range accounts {
		remote[a.ID] = a.RemoteID
		if a.Credential != "stored, encrypted" || a.Limits.MaxTextGraphemes != 500 {
			t.Errorf("account %s: credential %q, limits %+v", a.ID, a.Credential, a.Limits)
		}
	}

	// The first create is answered 503 without being performed: the
	// careful account's post, due first, is looked for, not found, and held.
	var faults bytes.Buffer
	faults.WriteString(`{"route":"POST /api/v1/statuses","faults":[{"kind":"503"}]}`)
	resp, err := http.Post(e.sbURL+"/sandbox/faults", "application/json", &faults)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("script the sandbox: %v %v", err, resp)
	}
	resp.Body.Close()

	// The runtime runs from here on; posts added meanwhile go out at their time.
	e.startProcess("run.log", e.w("run", "--confirm-wait", "1s", "--confirm-checks", "1", "--sweep-every", "2s")...)

	img := filepath.Join(dir, "photo.png")
	writePNG(t, img)
	t0 := time.Now()
	at := func(d time.Duration) string { return t0.Add(d).UTC().Format(time.RFC3339) }
	e.ok("", e.w("post", "add", "--id", "held", "--account", "careful", "--at", at(6*time.Second), "--body", "A careful post, sent once after approval.")...)
	e.ok("", e.w("post", "add", "--id", "img", "--account", "news", "--at", at(12*time.Second), "--body", "A picture, once.", "--media", img, "--alt", "a red line")...)
	e.ok("", e.w("post", "add", "--id", "resched", "--account", "news", "--at", at(12*time.Second), "--body", "Moved to later.")...)
	e.ok("", e.w("post", "add", "--id", "cancel", "--account", "news", "--at", at(12*time.Second), "--body", "This one must never go out.")...)
	e.ok("", e.w("post", "add", "--id", "del", "--account", "news", "--at", at(12*time.Second), "--body", "Out, then deleted.")...)
	e.ok("", e.w("post", "add", "--id", "orphan", "--account", "spare", "--at", at(13*time.Second), "--body", "Its account went away for a while.")...)

	// Before they are due: cancel one, move one, remove an account.
	if out := e.ok("", e.w("post", "cancel", "cancel")...); !strings.Contains(out, "cancelled; it will not be sent") {
		t.Errorf("post cancel: %q", out)
	}
	if out := e.ok("", e.w("post", "cancel", "cancel")...); !strings.Contains(out, "already cancelled") {
		t.Errorf("post cancel twice: %q", out)
	}
	newSlot := t0.Add(20 * time.Second).UTC().Truncate(time.Second)
	e.ok("", e.w("post", "reschedule", "resched", "--at", newSlot.Format(time.RFC3339))...)
	if code, _, errOut := e.cli("", e.w("account", "remove", "spare")...); code != exitFailure || !strings.Contains(errOut, "cancel them first, or --force") {
		t.Errorf("account remove with a scheduled post: exit %d, %q", code, errOut)
	}
	e.ok("", e.w("account", "remove", "spare", "--force")...)
	if time.Since(t0) > 11*time.Second {
		t.Fatalf("the commands before the slots took %s; the scenario needs them done within 11 s", time.Since(t0))
	}

	e.waitFor("img, del and resched published, held held, orphan dead-lettered", 60*time.Second, func() bool {
		ps := e.posts()
		var dls []deadLetterView
		_ = json.Unmarshal([]byte(e.ok("", e.w("dlq", "list", "--json")...)), &dls)
		return ps["img"].Targets[0].Status == post.Published && ps["del"].Targets[0].Status == post.Published &&
			ps["resched"].Targets[0].Status == post.Published && ps["held"].Targets[0].Status == post.Held && len(dls) == 1
	})
	if p := e.posts()["resched"]; !p.Targets[0].Slot.Equal(newSlot) {
		t.Errorf("resched published with slot %s, want %s", p.Targets[0].Slot, newSlot)
	}

	// The held one: approved, sent again with the same handle, once.
	var held []heldRow
	if err := json.Unmarshal([]byte(e.ok("", e.w("held", "--json")...)), &held); err != nil {
		t.Fatal(err)
	}
	var heldKey ledger.Key
	for _, h := range held {
		if h.Post == "held" {
			heldKey = h.Key
		}
	}
	if heldKey == "" {
		t.Fatalf("held --json does not list the held post: %+v", held)
	}
	e.ok("", e.w("approve", string(heldKey)[:10])...)
	e.waitFor("the approved post published", 30*time.Second, func() bool { return e.status("held") == post.Published })

	// The delete: requested, waits for approval, performed once.
	out := e.ok("", e.w("post", "delete", "del")...)
	_, keyText, found := strings.Cut(out, "waits for approval: oncepost approve ")
	if !found {
		t.Fatalf("post delete: %q, want it to wait for approval", out)
	}
	delKey := strings.TrimSpace(keyText)
	delRemote := e.posts()["del"].Targets[0].RemoteID
	statusOf := func(remoteID string) sandboxStatus {
		for _, s := range e.sandboxStatuses(remote["news"]) {
			if s.ID == remoteID {
				return s
			}
		}
		t.Fatalf("the sandbox has no status %s", remoteID)
		return sandboxStatus{}
	}
	if statusOf(delRemote).Deleted {
		t.Fatal("the post was deleted before the delete was approved")
	}
	if out := e.ok("", e.w("approve", delKey)...); !strings.Contains(out, "is deleted") {
		t.Errorf("approve the delete: %q", out)
	}
	if !statusOf(delRemote).Deleted {
		t.Error("the sandbox still shows the deleted post")
	}
	if out := e.ok("", e.w("post", "delete", "del")...); !strings.Contains(out, "already deleted") {
		t.Errorf("post delete twice: %q", out)
	}
	if got := e.status("del"); got != post.Deleted {
		t.Errorf("post del is %s, want deleted", got)
	}

	// The dead letter: the account is added again, the job redriven.
	var dls []deadLetterView
	if err := json.Unmarshal([]byte(e.ok("", e.w("dlq", "list", "--json")...)), &dls); err != nil || len(dls) != 1 {
		t.Fatalf("dlq list --json: %v, %d", err, len(dls))
	}
	if dls[0].Job == nil || dls[0].Job.Post != "orphan" || !strings.Contains(dls[0].Reason, "spare") {
		t.Errorf("dead letter %+v, want the orphan's job with a reason naming the account", dls[0])
	}
	e.ok(token("spare"), e.w("account", "add", "--id", "spare", "--url", e.sbURL, "--token-file", "-")...)
	e.ok("", e.w("dlq", "redrive", dls[0].ID[:8])...)
	e.waitFor("the redriven post published", 30*time.Second, func() bool { return e.status("orphan") == post.Published })
	if out := e.ok("", e.w("dlq", "list")...); !strings.Contains(out, "no dead letters") {
		t.Errorf("dlq list after redrive: %q", out)
	}

	// What the platform has: every post once, the cancelled one never,
	// the image attached.
	want := map[string]string{"news": "", "careful": "", "spare": ""}
	texts := map[string]int{}
	for name := range want {
		for _, s := range e.sandboxStatuses(remote[post.AccountID(name)]) {
			texts[s.Text]++
			if s.Duplicate {
				t.Errorf("duplicate on %s: %q", name, s.Text)
			}
			if s.Text == "A picture, once." && s.MediaCount != 1 {
				t.Errorf("the picture post has %d media, want 1", s.MediaCount)
			}
		}
	}
	for _, text := range []string{"A careful post, sent once after approval.", "A picture, once.", "Moved to later.", "Out, then deleted.", "Its account went away for a while."} {
		if texts[text] != 1 {
			t.Errorf("%q is on the platform %d times, want 1", text, texts[text])
		}
	}
	if texts["This one must never go out."] != 0 {
		t.Error("the cancelled post went out")
	}
	wantStatus := map[post.ID]post.TargetStatus{"held": post.Published, "img": post.Published, "resched": post.Published,
		"cancel": post.Cancelled, "del": post.Deleted, "orphan": post.Published}
	got := map[post.ID]post.TargetStatus{}
	for id, p := range e.posts() {
		got[id] = p.Targets[0].Status
	}
	if fmt.Sprint(got) != fmt.Sprint(wantStatus) {
		t.Errorf("post list --json statuses %v, want %v", got, wantStatus)
	}

	// Credentials: the key file is 0600, the stored rows and every output
	// hold no token.
	if fi, err := os.Stat(e.db + ".key"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, mode %v, want 0600", err, fi)
	}
	s, err := sqlitestore.Open(t.Context(), e.db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var raw strings.Builder
	rows, err := s.DB().QueryContext(t.Context(), `SELECT access_token || refresh_token || client_id || client_secret FROM credentials`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		raw.WriteString(v)
	}
	rows.Close()
	s.Close()
	e.mu.Lock()
	outputs := strings.Join(e.outputs, "\n")
	e.mu.Unlock()
	logs, _ := os.ReadFile(filepath.Join(dir, "run.log"))
	for _, name := range []string{"news", "careful", "spare"} {
		tok := strings.TrimSpace(token(name))
		if strings.Contains(raw.String(), tok) {
			t.Errorf("the credentials table holds %s's token in plain text", name)
		}
		if strings.Contains(outputs, tok) || strings.Contains(string(logs), tok) {
			t.Errorf("a command printed %s's token", name)
		}
	}
}

// `account add --oauth`: the app is registered on the instance, the
// authorize page is printed, the code the page shows is pasted on stdin,
// and the account works; the credential carries the app, so a refresh
// uses it.
func TestAccountAddThroughOAuth(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "oncepost.db")
	sb := startSandboxProcess(t, dir, "news")
	cmd := oncepostCmd(t, "account", "add", "--db", db, "--id", "news", "--url", sb.URL, "--oauth")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopProcess(t, cmd) })
	// Read the authorize URL the command prints.
	r := bufio.NewReader(stdout)
	var authorize string
	for authorize == "" {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("no authorize URL printed (%v); stderr: %s", err, stderr.String())
		}
		if l := strings.TrimSpace(line); strings.HasPrefix(l, sb.URL+"/oauth/authorize?") {
			authorize = l
		}
	}
	// Authorise as @news on the sandbox's page (its form, posted as a
	// browser would) and read the code it shows.
	u, err := url.Parse(authorize)
	if err != nil {
		t.Fatal(err)
	}
	form := u.Query()
	form.Set("account_id", sb.AccountIDs["news"])
	resp, err := http.PostForm(sb.URL+"/oauth/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, rest, ok := strings.Cut(string(page), `<code id="authorization-code">`)
	code, _, _ := strings.Cut(rest, "</code>")
	if !ok || code == "" {
		t.Fatalf("the authorize page shows no code: %s %s", resp.Status, page)
	}
	if _, err := io.WriteString(stdin, code+"\n"); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	rest2, _ := io.ReadAll(r)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("account add --oauth: %v\nstdout: %s\nstderr: %s", err, rest2, stderr.String())
	}
	if !strings.Contains(string(rest2), "added news: @news@") {
		t.Errorf("account add --oauth printed %q", rest2)
	}
	if strings.Contains(string(rest2)+stderr.String(), code) {
		t.Error("the code was echoed")
	}
	s, err := sqlitestore.Open(t.Context(), db, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.Credential(t.Context(), "news")
	if err != nil {
		t.Fatal(err)
	}
	if c.AccessToken == "" || c.ClientID == "" || c.ClientSecret == "" {
		t.Errorf("stored credential has access token %t, client id %t, client secret %t; want all",
			c.AccessToken != "", c.ClientID != "", c.ClientSecret != "")
	}
}

// sandboxProcess is `oncepost sandbox` running as its own process.
type sandboxProcess struct {
	URL string
	// Pid is the sandbox process's id (its CPU time is read from /proc).
	Pid        int
	TokenFiles map[string]string
	AccountIDs map[string]string
}

// startSandboxProcess starts `oncepost sandbox` with the given accounts
// and stops it by PID when the test ends.
func startSandboxProcess(t testing.TB, dir string, accounts ...string) *sandboxProcess {
	t.Helper()
	return startSandboxProcessWith(t, dir, nil, accounts...)
}

// startSandboxProcessWith is startSandboxProcess with more flags.
func startSandboxProcessWith(t testing.TB, dir string, flags []string, accounts ...string) *sandboxProcess {
	t.Helper()
	args := append([]string{"sandbox", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "sb")}, flags...)
	for _, a := range accounts {
		args = append(args, "--account", a)
	}
	e := &e2e{t: t, dir: dir}
	cmd, lines := e.startProcess("sandbox.log", args...)
	sp := &sandboxProcess{Pid: cmd.Process.Pid, TokenFiles: map[string]string{}, AccountIDs: map[string]string{}}
	timeout := time.After(20 * time.Second)
	for sp.URL == "" || len(sp.TokenFiles) < len(accounts) {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("sandbox exited; see %s", filepath.Join(dir, "sandbox.log"))
			}
			if u, found := strings.CutPrefix(l, "sandbox listening on "); found {
				sp.URL = strings.Fields(u)[0]
			}
			if rest, found := strings.CutPrefix(l, "account @"); found {
				name, file, _ := strings.Cut(rest, ": token in ")
				sp.TokenFiles[name] = file
			}
		case <-timeout:
			t.Fatal("the sandbox did not print its URL and token files")
		}
	}
	for name, f := range sp.TokenFiles {
		tok, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, sp.URL+"/api/v1/accounts/verify_credentials", nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var acct struct {
			ID string `json:"id"`
		}
		err = json.NewDecoder(resp.Body).Decode(&acct)
		resp.Body.Close()
		if err != nil || acct.ID == "" {
			t.Fatalf("verify_credentials of %s: %v", name, err)
		}
		sp.AccountIDs[name] = acct.ID
	}
	return sp
}
