package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"oncepost/shared/emulatortest"
)

// referenceVerifier returns a function that checks a request with the
// npm reference verifier (standardwebhooks, from infra/emulators), run by
// testdata/verify.cjs: nil when it verifies, else the library's message.
// A missing install skips the test with the command to run, or fails it
// when ONCEPOST_EMULATORS is "required".
func referenceVerifier(t *testing.T) func(secret string, headers map[string]string, body []byte) error {
	t.Helper()
	modules := filepath.Join(emulatortest.ModuleRoot(t), "infra", "emulators", "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "standardwebhooks", "package.json")); err != nil {
		emulatortest.Unavailable(t, "the reference verifier standardwebhooks is not installed in infra/emulators: run `"+emulatortest.InstallCommand+"`")
		return nil
	}
	node, err := exec.LookPath("node")
	if err != nil {
		emulatortest.Unavailable(t, "node is not on PATH; the reference verifier needs it")
		return nil
	}
	script, err := filepath.Abs(filepath.Join("testdata", "verify.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	return func(secret string, headers map[string]string, body []byte) error {
		t.Helper()
		in, err := json.Marshal(map[string]any{"secret": secret, "headers": headers, "body": string(body)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, script, modules)
		cmd.Stdin = bytes.NewReader(in)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil && strings.TrimSpace(stdout.String()) == "verified":
			return nil
		case errors.As(err, &exit) && exit.ExitCode() == 1 && strings.Contains(stderr.String(), "WebhookVerificationError"):
			return errors.New(strings.TrimSpace(stderr.String()))
		default:
			t.Fatalf("verify.cjs did not run: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
			return nil
		}
	}
}
