package emulatortest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
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
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", dir, err, b)
	}
	return out
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
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, ok := moduleRoot(wd)
	if !ok {
		t.Fatalf("no go.mod above %s", wd)
	}
	rie := filepath.Join(root, rieBinary)
	if _, err := os.Stat(rie); err != nil {
		unavailable(t, fmt.Sprintf("the Lambda Runtime Interface Emulator is not installed at %s: run `%s` in %s", rie, RIEInstallCommand, root))
		return nil
	}
	invokePort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	apiPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(rie,
		"--runtime-interface-emulator-address", "127.0.0.1:"+strconv.Itoa(invokePort),
		"--runtime-api-address", "127.0.0.1:"+strconv.Itoa(apiPort),
		bootstrap)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out := &tail{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the RIE starts bootstrap: stop both
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", rie, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(StopGrace):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("aws-lambda-rie output:\n%s", out.String())
		}
	})
	url := "http://127.0.0.1:" + strconv.Itoa(invokePort) + "/2015-03-31/functions/function/invocations"
	client := &http.Client{Timeout: 60 * time.Second}
	return func(event []byte) []byte {
		t.Helper()
		deadline := time.Now().Add(StartTimeout)
		for {
			resp, err := client.Post(url, "application/json", bytes.NewReader(event))
			if err == nil {
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatalf("invoke: %v", err)
				}
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("invoke: %s %s\n%s", resp.Status, b, out.String())
				}
				return b
			}
			select {
			case <-exited:
				t.Fatalf("aws-lambda-rie exited:\n%s", out.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("invoke %s: %v\n%s", url, err, out.String())
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
}
