package emulatortest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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

	"oncepost/shared/childproc"
)

// RIEInstallCommand installs the Lambda Runtime Interface Emulator where
// Lambda looks for it, run from the module root (`make test` does it).
const RIEInstallCommand = "make rie"

// rieBinary is where `make rie` installs aws-lambda-rie (git-ignored).
var rieBinary = filepath.Join("infra", "emulators", "bin", "aws-lambda-rie")

// BuildBootstrap builds the Lambda function in dir (a package main) the
// way the Makefile's build-<Function> targets do — CGO_ENABLED=0,
// -tags lambda.norpc, -trimpath — for this machine's architecture, and
// returns the path of the `bootstrap` binary, in a directory removed when
// the test ends.
func BuildBootstrap(t testing.TB, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bootstrap")
	if err := BuildFunction(t.Context(), dir, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// BuildFunction is BuildBootstrap outside tests: it builds the package
// main in dir into the binary out, for this machine's architecture.
func BuildFunction(ctx context.Context, dir, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %w\n%s", dir, err, b)
	}
	return nil
}

// Lambda runs bootstrap under the Lambda Runtime Interface Emulator (the
// Runtime API a function talks to, and the invoke endpoint `sam local
// invoke` uses), on two free ports of 127.0.0.1, with exactly the given
// environment (plus PATH), and stops it by PID when the test ends. The
// returned invoke sends one event and returns the function's answer: its
// result, or {"errorType": …, "errorMessage": …} for an error (the
// emulator answers 200 either way).
func Lambda(t testing.TB, bootstrap string, env map[string]string) (invoke func(event []byte) []byte) {
	t.Helper()
	fn, err := StartLambda(bootstrap, env)
	if errors.Is(err, ErrUnavailable) {
		unavailable(t, err.Error())
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fn.Stop(); err != nil {
			t.Errorf("stop aws-lambda-rie: %v", err)
		}
		if t.Failed() {
			t.Logf("aws-lambda-rie output:\n%s", fn.Output())
		}
	})
	return func(event []byte) []byte {
		t.Helper()
		answer, err := fn.Invoke(t.Context(), event)
		if err != nil {
			t.Fatal(err)
		}
		return answer
	}
}

// Function is a bootstrap running under the Lambda Runtime Interface
// Emulator, started by StartLambda.
type Function struct {
	cmd      *exec.Cmd
	url      string
	output   *childproc.Output
	client   *http.Client
	exited   chan struct{} // closed when cmd.Wait returned
	stopOnce sync.Once
}

// StartLambda runs bootstrap under the Lambda Runtime Interface Emulator
// as Lambda does, for use outside tests: on two free ports of 127.0.0.1,
// with exactly the given environment (plus PATH), in a process group of
// its own (the RIE starts bootstrap; Stop ends both). It returns once the
// RIE answers on both ports. The working directory must be inside the
// module; a RIE that is not installed is an error wrapping ErrUnavailable.
func StartLambda(bootstrap string, env map[string]string) (*Function, error) {
	return startLambda(bootstrap, env, childproc.FreePort)
}

// startLambda is StartLambda with its ports from pick. A port was free
// when picked but can be taken before the RIE listens on it (by another
// process's connection: the tests of many packages run side by side);
// the RIE then exits at start, and it is started again on other ports.
func startLambda(bootstrap string, env map[string]string, pick func() (int, error)) (*Function, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	root, ok := moduleRoot(wd)
	if !ok {
		return nil, fmt.Errorf("no go.mod above %s", wd)
	}
	rie := filepath.Join(root, rieBinary)
	if _, err := os.Stat(rie); err != nil {
		return nil, missing(fmt.Sprintf("the Lambda Runtime Interface Emulator is not installed at %s: run `%s` in %s", rie, RIEInstallCommand, root))
	}
	return childproc.OnFreePorts(2, pick, func(ports []int) (*Function, error) {
		return launchRIE(rie, bootstrap, env, ports[0], ports[1])
	})
}

// launchRIE starts the RIE on the two ports and waits until it answers on
// both: an HTTP answer on the invoke port, "pong" from the Runtime API's
// ping. An RIE that exits first because a port was taken is an error
// wrapping childproc.ErrPortTaken.
func launchRIE(rie, bootstrap string, env map[string]string, invokePort, apiPort int) (*Function, error) {
	cmd := exec.Command(rie,
		"--runtime-interface-emulator-address", "127.0.0.1:"+strconv.Itoa(invokePort),
		"--runtime-api-address", "127.0.0.1:"+strconv.Itoa(apiPort),
		bootstrap)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out := childproc.NewOutput(64 << 10)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the RIE starts bootstrap: stop both
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", rie, err)
	}
	f := &Function{
		cmd:    cmd,
		url:    "http://127.0.0.1:" + strconv.Itoa(invokePort) + "/2015-03-31/functions/function/invocations",
		output: out,
		client: &http.Client{Timeout: 60 * time.Second},
		exited: make(chan struct{}),
	}
	go func() { _ = cmd.Wait(); close(f.exited) }()
	probe := &http.Client{Timeout: time.Second}
	invokeRoot := "http://127.0.0.1:" + strconv.Itoa(invokePort) + "/"
	ping := "http://127.0.0.1:" + strconv.Itoa(apiPort) + "/2018-06-01/ping"
	deadline := time.Now().Add(StartTimeout)
	for {
		select {
		case <-f.exited:
			_ = f.Stop() // a process it left in its group
			err := fmt.Errorf("aws-lambda-rie (pid %d) exited at start:\n%s", cmd.Process.Pid, out.String())
			if strings.Contains(out.String(), "address already in use") {
				err = fmt.Errorf("%w: %w", childproc.ErrPortTaken, err)
			}
			return nil, err
		default:
		}
		if answers(probe, invokeRoot, "") && answers(probe, ping, "pong") {
			return f, nil
		}
		if time.Now().After(deadline) {
			_ = f.Stop()
			return nil, fmt.Errorf("aws-lambda-rie (pid %d) did not answer on ports %d and %d within %s:\n%s", cmd.Process.Pid, invokePort, apiPort, StartTimeout, out.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// answers reports whether a GET of url gets an HTTP answer whose body is
// body ("" for any answer).
func answers(c *http.Client, url, body string) bool {
	resp, err := c.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	return err == nil && (body == "" || string(b) == body)
}

// URL is the function's invoke endpoint
// (http://127.0.0.1:PORT/2015-03-31/functions/function/invocations), for
// a client other than Invoke.
func (f *Function) URL() string { return f.url }

// PID is the RIE's process id, also its process group's.
func (f *Function) PID() int { return f.cmd.Process.Pid }

// Output is the last 64 KiB the RIE and the function wrote (the
// function's logs and EMF lines included).
func (f *Function) Output() string { return f.output.String() }

// Invoke sends one event and returns the function's answer: its result,
// or {"errorType": …, "errorMessage": …} for an error (the emulator
// answers 200 either way; a function that fails to start is an error,
// and Output says why).
func (f *Function) Invoke(ctx context.Context, event []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, bytes.NewReader(event))
	if err != nil {
		return nil, fmt.Errorf("invoke: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		select {
		case <-f.exited:
			return nil, fmt.Errorf("invoke: aws-lambda-rie (pid %d) exited", f.cmd.Process.Pid)
		default:
		}
		return nil, fmt.Errorf("invoke %s: %w", f.url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("invoke: read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("invoke: %s %s", resp.Status, b)
	}
	return b, nil
}

// Stop ends the RIE and the function by their process group: SIGTERM,
// then SIGKILL after StopGrace. Calling it again does nothing.
func (f *Function) Stop() error {
	var err error
	f.stopOnce.Do(func() {
		select {
		case <-f.exited:
			// The RIE exited by itself (Invoke reported it); a function
			// it left behind is still in its group.
			_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
			return
		default:
		}
		if e := syscall.Kill(-f.cmd.Process.Pid, syscall.SIGTERM); e != nil {
			err = fmt.Errorf("signal aws-lambda-rie (pid %d): %w", f.cmd.Process.Pid, e)
		}
		select {
		case <-f.exited:
		case <-time.After(StopGrace):
			_ = syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
			<-f.exited
		}
	})
	return err
}
