package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"oncepost/shared/apitoken"
	"oncepost/shared/httpapi"
	"oncepost/shared/httpapi/apitest"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/publishing"
)

// An address other machines can reach is refused unless --public.
func TestServeRefusesAPublicAddress(t *testing.T) {
	db := filepath.Join(t.TempDir(), "oncepost.db")
	for _, addr := range []string{"0.0.0.0:0", ":8080", "192.0.2.1:80", "[::]:0", "example.com:80"} {
		var stdout, stderr bytes.Buffer
		code := runCLI(context.Background(), []string{"serve", "--db", db, "--addr", addr}, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), "--addr") || !strings.Contains(stderr.String(), "--public") {
			t.Errorf("--addr %s: exit %d, %s; want 2 naming --addr and --public", addr, code, stderr.String())
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Errorf("a refused serve created the workspace")
	}
}

// served is an `oncepost serve` process.
type served struct {
	cmd    *exec.Cmd
	url    string
	stderr *lockedBuffer
	done   chan error
}

// lockedBuffer is a child's stderr, read while it writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServe starts `oncepost serve` on db on a free port, with env
// added, and waits for it to say where the API is.
func startServe(t *testing.T, db string, env ...string) *served {
	t.Helper()
	return startServeArgs(t, db, nil, env...)
}

// startServeArgs is startServe with flags added after the test runtime's
// (a flag given twice takes the later value).
func startServeArgs(t *testing.T, db string, args []string, env ...string) *served {
	t.Helper()
	cmd := oncepostCmd(t, append(append(append([]string{"serve"}, runtimeArgs(db)[1:]...), args...), "--addr", "127.0.0.1:0")...)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &served{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.done
	})
	lines := bufio.NewScanner(out)
	found := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if _, rest, ok := strings.Cut(lines.Text(), " and the API on "); ok {
				found <- strings.TrimSuffix(strings.Fields(rest)[0], "/v1")
			}
		}
		io.Copy(io.Discard, out)
		s.done <- cmd.Wait()
	}()
	select {
	case s.url = <-found:
	case err := <-s.done:
		s.done <- err
		t.Fatalf("oncepost serve exited (%v):\n%s", err, s.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("oncepost serve did not say where the API is in 30 s:\n%s", s.stderr.String())
	}
	return s
}

// addToken stores a token with the scopes in the workspace, as `oncepost
// token add` does.
func addToken(t *testing.T, w *workspace, name string, scopes ...apitoken.Scope) string {
	t.Helper()
	store := w.open(t)
	defer store.Close()
	tok := apitoken.New()
	if err := store.AddToken(context.Background(), apitoken.Token{ID: apitoken.NewID(), Name: name, Hash: apitoken.Hash(tok), Scopes: scopes, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return tok
}

// apiClient checks every exchange with the server against openapi.json.
func apiClient(t *testing.T, url string) *apitest.Client {
	t.Helper()
	c, err := apitest.NewChecker(httpapi.Document, url)
	if err != nil {
		t.Fatal(err)
	}
	return &apitest.Client{HTTP: &http.Client{Timeout: 30 * time.Second}, Checker: c, Errorf: t.Errorf}
}

// createRequest is POST /v1/posts with the key and body.
func createRequest(t *testing.T, url, token, key string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest("POST", url+"/v1/posts", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", `"`+key+`"`)
	return req
}

// countPosts counts the workspace's posts.
func countPosts(t *testing.T, w *workspace) int {
	t.Helper()
	store := w.open(t)
	defer store.Close()
	pg, err := store.ListPostPage(context.Background(), publishing.PostFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(pg.Posts)
}

// A create whose server is SIGKILLed while the client waits, retried
// with the same key against the restarted server, makes one post: when
// the first request had committed, the retry's answer is its replay
// (Idempotent-Replayed); when it had not, the retry makes the post.
// Killed both before and after the commit.
func TestServeKilledMidCreateThenRetried(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	for _, point := range []string{httpapi.PauseBeforeCommit, httpapi.PauseAfterCommit} {
		t.Run(point, func(t *testing.T) {
			w := newWorkspace(t, sandbox.Options{}, 1)
			tok := addToken(t, w, "cms", apitoken.ScopePosts, apitoken.ScopeRead)
			body := fmt.Appendf(nil, `{"body": "We launched.", "targets": [{"account": %q, "at": %q}]}`,
				w.accounts[0], time.Now().Add(time.Hour).UTC().Format(time.RFC3339))

			first := startServe(t, w.db, pauseEnv+"="+point)
			client := apiClient(t, first.url)
			answered := make(chan error, 1)
			go func() {
				_, b, err := client.Do(createRequest(t, first.url, tok, "k-kill", body), body)
				if err == nil {
					err = fmt.Errorf("answered: %s", b)
				}
				answered <- err
			}()
			deadline := time.Now().Add(30 * time.Second)
			for !strings.Contains(first.stderr.String(), "paused at "+point) {
				if time.Now().After(deadline) {
					t.Fatalf("the create never reached %s:\n%s", point, first.stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-first.done
			first.done <- nil
			if err := <-answered; err == nil || strings.Contains(err.Error(), "answered") {
				t.Fatalf("the killed server's client: %v, want a transport error", err)
			}
			want := 0
			if point == httpapi.PauseAfterCommit {
				want = 1
			}
			if n := countPosts(t, w); n != want {
				t.Fatalf("after the kill at %s: %d posts, want %d", point, n, want)
			}

			second := startServe(t, w.db)
			client = apiClient(t, second.url)
			resp, b, err := client.Do(createRequest(t, second.url, tok, "k-kill", body), body)
			if err != nil {
				t.Fatal(err)
			}
			replayed := resp.Header.Get("Idempotent-Replayed") == "true"
			if resp.StatusCode != http.StatusCreated || replayed != (point == httpapi.PauseAfterCommit) {
				t.Errorf("retry: %d replayed=%v %s; want 201, replayed only when the first had committed", resp.StatusCode, replayed, b)
			}
			again, b2, err := client.Do(createRequest(t, second.url, tok, "k-kill", body), body)
			if err != nil || again.StatusCode != resp.StatusCode || !bytes.Equal(b, b2) || again.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("a second retry: %v %v %s; want the same answer, replayed", again.StatusCode, err, b2)
			}
			if n := countPosts(t, w); n != 1 {
				t.Errorf("%d posts, want 1", n)
			}
		})
	}
}

// oncepost serve end to end: a token made with the CLI creates a post
// through the API and reads it back; SIGTERM stops the process cleanly.
func TestServeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	w := newWorkspace(t, sandbox.Options{}, 1)
	var stdout, stderr bytes.Buffer
	if code := runCLI(context.Background(), []string{"token", "add", "--name", "cms", "--scope", "posts,read,operate", "--db", w.db}, &stdout, &stderr); code != exitOK {
		t.Fatalf("token add: %d %s", code, stderr.String())
	}
	tok := ""
	for _, f := range strings.Fields(stdout.String()) {
		if apitoken.WellFormed(f) {
			tok = f
		}
	}
	s := startServe(t, w.db)
	client := apiClient(t, s.url)
	body := fmt.Appendf(nil, `{"body": "Hello.", "targets": [{"account": %q, "at": %q}]}`, w.accounts[0], time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	resp, b, err := client.Do(createRequest(t, s.url, tok, "e2e-1", body), body)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %v %v %s", resp, err, b)
	}
	req, _ := http.NewRequest("GET", s.url+resp.Header.Get("Location"), nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if got, b, err := client.Do(req, nil); err != nil || got.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %v %s", resp.Header.Get("Location"), got, err, b)
	}
	// The API reaches the workspace's webhook subscriptions (without
	// them it answers 501).
	hook := []byte(`{"url": "https://hooks.example.com/oncepost", "events": ["post.published"]}`)
	req, _ = http.NewRequest("POST", s.url+"/v1/webhooks", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, b, err = client.Do(req, hook)
	var created struct{ ID, Secret string }
	if err != nil || resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &created) != nil {
		t.Fatalf("POST /v1/webhooks: %v %v %s", resp, err, b)
	}
	store := w.open(t)
	if sub, err := store.GetSubscription(context.Background(), created.ID); err != nil || sub.Secret != created.Secret {
		t.Errorf("the subscription made through the API: %+v, %v; want it stored with the secret answered", sub, err)
	}
	store.Close()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.done:
		s.done <- err
		if err != nil {
			t.Errorf("after SIGTERM: %v\n%s", err, s.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("oncepost serve did not stop on SIGTERM:\n%s", s.stderr.String())
	}
	if strings.Contains(s.stderr.String(), tok) || strings.Contains(s.stderr.String(), created.Secret) {
		t.Errorf("the token or a webhook secret is in the server's log")
	}
}
