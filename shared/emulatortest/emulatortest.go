// Package emulatortest starts the AWS emulators the AWS adapters' tests run
// against, as child processes of the test: dynalite (DynamoDB) and fauxqs
// (SQS), both npm packages installed into infra/emulators/node_modules by
// `npm ci --prefix infra/emulators` (`make test` does it).
//
// Each call of Dynalite or Fauxqs starts a process of its own for the
// calling test, with its state in memory, listening on a free port of
// 127.0.0.1, and stops it by PID when the test ends (t.Cleanup: SIGTERM,
// then SIGKILL after StopGrace). Starting one takes well under a second,
// so a test that wants a fresh emulator simply asks for one; a test that
// makes many small cases (a conformance suite) starts one and gives each
// case tables or queues of their own names. No process is shared between
// tests, so tests never see each other's data. The emulator also exits by
// itself when the test binary dies (its stdin, a pipe from the test,
// closes), so a killed `go test` leaves no server behind.
//
// When the emulator package is not installed the test is skipped with the
// command to run, unless the environment variable ONCEPOST_EMULATORS is
// "required" (as `make test` sets it): then the test fails, so CI cannot
// skip silently.
//
// Lambda (lambda.go) likewise runs a function binary under the Lambda
// Runtime Interface Emulator, installed by `make rie`.
//
// Outside tests (infra/invoke, `make invoke`), StartDynalite, StartFauxqs
// and StartLambda start the same processes and return a handle whose Stop
// ends them by PID; a missing emulator is an error wrapping
// ErrUnavailable that names the command to run. Config is AWSConfig
// without a test.
//
// Node: the machine and CI have Node 20, so the emulators are the versions
// pinned in infra/emulators/package.json that run on it (fauxqs 1.9.2:
// fauxqs 2.x needs Node ≥ 22.5 only for its optional SQLite persistence,
// which these tests do not use). The node binary is the first `node` on
// PATH.
package emulatortest

import (
	"errors"
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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"oncepost/shared/awsclient"
	"oncepost/shared/childproc"
)

// EnvRequired names the environment variable that, set to "required",
// turns a missing emulator from a skipped test into a failed one.
const EnvRequired = "ONCEPOST_EMULATORS"

// InstallCommand installs the emulators, run from the module root.
const InstallCommand = "npm ci --prefix infra/emulators"

// Region is the region AWSConfig sets.
const Region = "us-east-1"

// Durations of the emulator lifecycle.
const (
	// StartTimeout bounds how long a start waits for the emulator to answer.
	StartTimeout = 30 * time.Second
	// StopGrace is how long Cleanup waits after SIGTERM before SIGKILL.
	StopGrace = 3 * time.Second
)

// emulator describes one npm emulator.
type emulator struct {
	// name is the npm package, also the launcher's first argument.
	name string
	// script is the Node program run with `node -e` (launcher if empty);
	// its arguments are name and the port; it prints readyMarker once it
	// listens.
	script string
	// ready reports whether the server at endpoint answers.
	ready func(c *http.Client, endpoint string) bool
}

var (
	dynalite = emulator{name: "dynalite", ready: func(c *http.Client, endpoint string) bool {
		// Any answer from the DynamoDB front end will do: an empty POST
		// is refused with UnknownOperationException.
		resp, err := c.Post(endpoint+"/", "application/x-amz-json-1.0", strings.NewReader("{}"))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusBadRequest
	}}
	fauxqs = emulator{name: "fauxqs", ready: func(c *http.Client, endpoint string) bool {
		resp, err := c.Get(endpoint + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}}
)

// Dynalite starts dynalite (in-memory DynamoDB, the package's default
// table timings: a created table is CREATING for half a second, so code
// must wait for ACTIVE as it must on DynamoDB) for t and returns its
// endpoint, "http://127.0.0.1:PORT".
func Dynalite(t testing.TB) (endpoint string) {
	t.Helper()
	return start(t, dynalite)
}

// Fauxqs starts fauxqs (in-memory SQS, SNS and S3; the AWS JSON protocol
// the Go SDK speaks) for t and returns its endpoint,
// "http://127.0.0.1:PORT". Queue URLs it hands out name the host
// sqs.us-east-1.localhost:PORT; the SDK sends every request to the
// endpoint, so they need not resolve.
func Fauxqs(t testing.TB) (endpoint string) {
	t.Helper()
	return start(t, fauxqs)
}

// AWSConfig returns an SDK configuration for an emulator at endpoint:
// region us-east-1, static dummy credentials, BaseEndpoint set, at most 3
// attempts per call with short backoff, and an HTTP timeout of 30 s
// (longer than SQS's longest long poll). It reads no environment variable
// and no shared config or credentials file.
func AWSConfig(t testing.TB, endpoint string) aws.Config {
	t.Helper()
	if endpoint == "" {
		t.Fatal("emulatortest.AWSConfig: empty endpoint")
	}
	return Config(endpoint)
}

// Config is the configuration AWSConfig returns, for use outside tests.
func Config(endpoint string) aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEMULATOR", "emulator-secret", ""),
		BaseEndpoint: aws.String(endpoint),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 3
				o.MaxBackoff = 200 * time.Millisecond
			})
		},
		RetryMaxAttempts: 3,
		HTTPClient: awsclient.Wrap(&http.Client{
			Timeout:   30 * time.Second,
			Transport: awshttp.NewBuildableClient().GetTransport(),
		}),
	}
}

// readyMarker is the line a launcher prints once it listens. Start waits
// for it as well as for an answer on the port: the port may have been
// taken by another process meanwhile, whose answer proves nothing.
const readyMarker = "oncepost-emulator-listening"

// launcher is the Node program that runs an emulator: argv is the
// emulator's name and the port. It listens on 127.0.0.1 only (fauxqs's
// own CLI binds every interface), prints readyMarker, and exits when its
// stdin closes, that is when the test process that holds the other end
// is gone.
const launcher = `'use strict';
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
const [name, port] = process.argv.slice(1);
const host = '127.0.0.1';
const ready = () => console.log('` + readyMarker + `');
function fail(err) { console.error((err && err.stack) || String(err)); process.exit(70); }
if (name === 'fauxqs') {
  import('fauxqs')
    .then(({ buildApp }) => buildApp({ logger: false }).listen({ port: Number(port), host }))
    .then(ready, fail);
} else if (name === 'dynalite') {
  const server = require('dynalite')({});
  server.on('error', fail);
  server.listen(Number(port), host, ready);
} else {
  fail(new Error('unknown emulator ' + name));
}
`

// ErrUnavailable marks a start that failed because an emulator, Node.js
// or the RIE is not installed; the error says what to run.
var ErrUnavailable = errors.New("emulator unavailable")

// missing is an error that is ErrUnavailable, with what is missing and how
// to install it as its message.
type missing string

func (m missing) Error() string        { return string(m) }
func (m missing) Is(target error) bool { return target == ErrUnavailable }

// Server is an emulator started outside a test by StartDynalite or
// StartFauxqs. Stop ends it; it also exits by itself when the process that
// started it dies (its stdin closes).
type Server struct {
	p *proc
}

// StartDynalite starts dynalite as Dynalite does, for use outside tests
// (the working directory must be inside the module). The caller stops it.
func StartDynalite() (*Server, error) { return startServer(dynalite) }

// StartFauxqs starts fauxqs as Fauxqs does, for use outside tests (the
// working directory must be inside the module). The caller stops it.
func StartFauxqs() (*Server, error) { return startServer(fauxqs) }

func startServer(e emulator) (*Server, error) {
	p, err := startEmulator(e)
	if err != nil {
		return nil, err
	}
	return &Server{p: p}, nil
}

// Endpoint is "http://127.0.0.1:PORT".
func (s *Server) Endpoint() string { return s.p.endpoint }

// PID is the emulator's process id.
func (s *Server) PID() int { return s.p.cmd.Process.Pid }

// Output is the last 64 KiB the emulator wrote.
func (s *Server) Output() string { return s.p.output.String() }

// Stop ends the emulator by PID: SIGTERM, then SIGKILL after StopGrace.
// It reports an error, with the emulator's output, if the emulator had
// exited before. Calling it again does nothing.
func (s *Server) Stop() error { return s.p.shutdown(func(string, ...any) {}) }

// start locates the emulator, runs it on a free port and registers its
// stop; a missing emulator skips (or fails) the test.
func start(t testing.TB, e emulator) string {
	t.Helper()
	p, err := startEmulator(e)
	if errors.Is(err, ErrUnavailable) {
		unavailable(t, err.Error())
		return "" // unavailable stops the test; only a stand-in TB gets here
	}
	if err != nil {
		t.Fatalf("%v", err)
		return ""
	}
	t.Cleanup(func() { p.stop(t) })
	return p.endpoint
}

// startEmulator locates the emulator and runs it on a free port (another
// port if the one picked was taken meanwhile). A missing emulator or node
// is an error wrapping ErrUnavailable.
func startEmulator(e emulator) (*proc, error) {
	dir, msg := locate(e.name)
	if msg != "" {
		return nil, missing(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, missing(fmt.Sprintf("%s needs Node.js (node on PATH): %v", e.name, err))
	}
	return childproc.OnFreePorts(1, childproc.FreePort, func(ports []int) (*proc, error) {
		return launch(node, dir, e, ports[0])
	})
}

// Unavailable skips the test with msg (what is missing and the command
// that installs it), or fails it when EnvRequired is "required", as the
// helpers here do for a missing emulator. It is for tests that need other
// tooling of infra/emulators, and for errors wrapping ErrUnavailable.
func Unavailable(t testing.TB, msg string) {
	t.Helper()
	unavailable(t, msg)
}

// unavailable skips the test, or fails it when EnvRequired says the
// emulators are required.
func unavailable(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv(EnvRequired) == "required" {
		t.Fatalf("%s (%s=required)", msg, EnvRequired)
	}
	t.Skip(msg)
}

// locate finds infra/emulators of the module holding the working
// directory (a test runs in its package's directory) and checks that the
// package is installed there; msg says what is missing and how to fix it.
func locate(pkg string) (dir, msg string) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Sprintf("%s: working directory: %v", pkg, err)
	}
	root, ok := moduleRoot(wd)
	if !ok {
		return "", fmt.Sprintf("%s: no go.mod above %s", pkg, wd)
	}
	return checkInstalled(filepath.Join(root, "infra", "emulators"), root, pkg)
}

// checkInstalled reports whether dir/node_modules holds pkg.
func checkInstalled(dir, root, pkg string) (string, string) {
	if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
		return "", fmt.Sprintf("emulator %s is not installed in %s: run `%s` in %s", pkg, filepath.Join(dir, "node_modules"), InstallCommand, root)
	}
	return dir, ""
}

// ModuleRoot is the module's root: the nearest directory at or above the
// working directory (a test's package directory) with a go.mod.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, ok := moduleRoot(wd)
	if !ok {
		t.Fatalf("no go.mod above %s", wd)
	}
	return root
}

// moduleRoot is the nearest directory at or above dir with a go.mod.
func moduleRoot(dir string) (string, bool) {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// proc is one running emulator.
type proc struct {
	name     string
	endpoint string
	cmd      *exec.Cmd
	stdin    io.Closer
	output   *childproc.Output
	exited   chan struct{} // closed when cmd.Wait returned
	waitErr  error         // cmd.Wait's result, set before exited is closed
	stopOnce sync.Once
}

// launch starts the emulator and waits until it answers.
func launch(node, dir string, e emulator, port int) (*proc, error) {
	script := e.script
	if script == "" {
		script = launcher
	}
	cmd := exec.Command(node, "-e", script, e.name, strconv.Itoa(port))
	cmd.Dir = dir
	out := childproc.NewOutput(64 << 10)
	cmd.Stdout, cmd.Stderr = out, out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: stdin pipe: %w", e.name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", e.name, node, err)
	}
	p := &proc{
		name:     e.name,
		endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		cmd:      cmd,
		stdin:    stdin,
		output:   out,
		exited:   make(chan struct{}),
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(StartTimeout)
	for {
		select {
		case <-p.exited:
			err := fmt.Errorf("%s (pid %d) exited before answering on %s: %v\n%s", e.name, cmd.Process.Pid, p.endpoint, p.waitErr, out.String())
			if strings.Contains(out.String(), "EADDRINUSE") {
				err = fmt.Errorf("%w: %w", childproc.ErrPortTaken, err)
			}
			return nil, err
		default:
		}
		if out.Contains(readyMarker) && e.ready(client, p.endpoint) {
			return p, nil
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, fmt.Errorf("%s (pid %d) did not answer on %s within %s:\n%s", e.name, cmd.Process.Pid, p.endpoint, StartTimeout, out.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// stop ends the emulator by PID: SIGTERM, then SIGKILL after StopGrace.
// If it had died before, the test fails with its output.
func (p *proc) stop(t testing.TB) {
	if err := p.shutdown(t.Logf); err != nil {
		t.Errorf("emulator died during the test: %v", err)
	}
}

// shutdown ends the emulator by PID: SIGTERM, then SIGKILL after
// StopGrace (saying so through logf). It returns an error with the
// emulator's output if the emulator had exited before; only the first
// call does anything.
func (p *proc) shutdown(logf func(format string, args ...any)) error {
	var err error
	p.stopOnce.Do(func() {
		defer p.stdin.Close()
		select {
		case <-p.exited:
			err = fmt.Errorf("%s (pid %d, %s) exited before it was stopped: %v\n%s", p.name, p.cmd.Process.Pid, p.endpoint, p.waitErr, p.output.String())
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(StopGrace):
			logf("%s (pid %d) still running %s after SIGTERM; sending SIGKILL", p.name, p.cmd.Process.Pid, StopGrace)
			p.kill()
		}
	})
	return err
}

// kill sends SIGKILL and waits for the process to be reaped.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
	p.stdin.Close()
}

// TakenPortFirst is a port picker for tests of a launcher's retry: its
// pick number taken (0 for the first) is a port a listener of t holds and
// never answers on; every other pick is FreePort's. picked counts the
// picks.
func TakenPortFirst(t testing.TB, taken int) (pick func() (int, error), picked func() int) {
	t.Helper()
	occupied, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { occupied.Close() })
	var mu sync.Mutex
	n := 0
	pick = func() (int, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n == taken+1 {
			return occupied.Addr().(*net.TCPAddr).Port, nil
		}
		return childproc.FreePort()
	}
	picked = func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
	return pick, picked
}
