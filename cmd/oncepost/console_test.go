package main

import (
	"bufio"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"oncepost/shared/post"
)

// consoleProcess is an `oncepost console` child and its sign-in link.
type consoleProcess struct {
	base, link string
	client     *http.Client
	csrf       string
}

// startConsole starts `oncepost console ARGS --addr 127.0.0.1:0` with env
// and reads the sign-in link it prints.
func startConsole(t *testing.T, env []string, args ...string) *consoleProcess {
	t.Helper()
	cmd := oncepostCmd(t, append(append([]string{"console"}, args...), "--addr", "127.0.0.1:0")...)
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "ONCEPOST_STATIC") })
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	found := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if _, rest, ok := strings.Cut(lines.Text(), "open "); ok {
				found <- strings.Fields(rest)[0]
			}
		}
		io.Copy(io.Discard, out)
		done <- cmd.Wait()
	}()
	var link string
	select {
	case link = <-found:
	case err := <-done:
		done <- err
		t.Fatalf("oncepost console exited: %v\n%s", err, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("oncepost console printed no link\n%s", stderr.String())
	}
	base := link[:strings.Index(link[len("http://"):], "/")+len("http://")]
	jar, _ := cookiejar.New(nil)
	return &consoleProcess{base: base, link: link, client: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

var consoleCSRF = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// get fetches a console page as its browser would.
func (c *consoleProcess) get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	return c.do(t, req)
}

// post submits a form to a console URL as its browser would (following
// the redirect).
func (c *consoleProcess) post(t *testing.T, target string, form url.Values) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(t, req)
}

// api calls /v1 as the console's script does: cookie and CSRF header.
func (c *consoleProcess) api(t *testing.T, method, path, body string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, c.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", c.csrf)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return c.do(t, req)
}

// do sends req as a page of the console's own origin does and reads the
// answer whole, keeping the CSRF token of a page that has one.
func (c *consoleProcess) do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	res, err := c.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if m := consoleCSRF.FindSubmatch(body); m != nil {
		c.csrf = string(m[1])
	}
	return res.StatusCode, string(body)
}

// TestConsoleOnAStack serves the console for a stack on the emulators:
// the one-time link signs in once, and a post made through the console's
// session is in the stack's table.
func TestConsoleOnAStack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the emulators and a console process")
	}
	st := newAWSStack(t)
	if err := st.store.PutAccount(t.Context(), post.Account{ID: "news", Platform: "mastodon", Handle: "@news@example.social", BaseURL: "https://example.social", Gate: post.GateAuto}); err != nil {
		t.Fatal(err)
	}
	c := startConsole(t, st.env, "--backend", "aws", "--outputs", st.outputsFile)
	if code, body := c.get(t, c.base+"/calendar"); code != http.StatusOK || !strings.Contains(body, "Sign in") {
		t.Fatalf("before signing in: %d, want the sign-in page", code)
	}
	if code, body := c.get(t, c.link); code != http.StatusOK || !strings.Contains(body, "<form") {
		t.Fatalf("the sign-in link: %d, want its form", code)
	}
	if code, _ := c.post(t, c.link, url.Values{"tz": {"Europe/Berlin"}}); code != http.StatusOK || c.csrf == "" {
		t.Fatalf("signing in by the link: %d (csrf %q)", code, c.csrf)
	}
	at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Minute).Format(time.RFC3339)
	draft := `{"id":"console-1","body":"from the console","targets":[{"account":"news","at":"` + at + `"}]}`
	if code, body := c.api(t, "POST", "/v1/posts", draft, map[string]string{"Idempotency-Key": "k-1"}); code != http.StatusCreated {
		t.Fatalf("POST /v1/posts with the session: %d %s", code, body)
	}
	if tg := st.target("console-1"); tg.Status != post.Scheduled {
		t.Fatalf("the stack's target: %+v", tg)
	}
	// The link is spent: another browser cannot use it.
	other := &consoleProcess{base: c.base, link: c.link, client: &http.Client{Timeout: 30 * time.Second}}
	if code, _ := other.post(t, c.link, url.Values{}); code != http.StatusUnauthorized {
		t.Fatalf("the link used twice: %d, want 401", code)
	}
	// Without the session's CSRF header, a change is refused.
	c.csrf = "wrong"
	if code, _ := c.api(t, "POST", "/v1/posts/console-1/cancel", `{}`, nil); code != http.StatusForbidden {
		t.Fatalf("a change without the CSRF token: %d, want 403", code)
	}
}

// TestConsoleRefusesAPublicAddress: the console never listens where
// other machines reach it.
func TestConsoleRefusesAPublicAddress(t *testing.T) {
	code, _, stderr := runChild(t, nil, "", "console", "--db", t.TempDir()+"/x.db", "--addr", "0.0.0.0:0")
	if code != exitUsage || !strings.Contains(stderr, "--addr") {
		t.Fatalf("exit %d %s: want a usage error naming --addr", code, stderr)
	}
}
