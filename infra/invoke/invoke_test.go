package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/awslabs/goformation/v7/intrinsics"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/emulatortest"
)

// templatePath is the module's SAM template, from this package.
const templatePath = "../../template.yaml"

// invoked is one run of the command.
type invoked struct {
	answer struct {
		ErrorType    string `json:"errorType"`
		ErrorMessage string `json:"errorMessage"`
	}
	stdout, stderr string
	pids           map[string]int
}

// invoke runs the command with args and reads its answer and the
// processes it says it started; missing emulators skip the test (fail it
// under ONCEPOST_EMULATORS=required).
func invoke(t *testing.T, args ...string) invoked {
	t.Helper()
	got, err := tryInvoke(t, args...)
	if err != nil {
		t.Fatalf("invoke %v: %v\n%s", args, err, got.stderr)
	}
	if err := json.Unmarshal([]byte(got.stdout), &got.answer); err != nil {
		t.Fatalf("the answer %q is not JSON: %v", got.stdout, err)
	}
	return got
}

// tryInvoke runs the command and returns what it printed and its error.
func tryInvoke(t *testing.T, args ...string) (invoked, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, &stdout, &stderr)
	if errors.Is(err, emulatortest.ErrUnavailable) {
		emulatortest.Unavailable(t, err.Error())
	}
	got := invoked{stdout: stdout.String(), stderr: stderr.String(), pids: map[string]int{}}
	for _, m := range regexp.MustCompile(`(dynalite|fauxqs|aws-lambda-rie) \(pid (\d+)\)`).FindAllStringSubmatch(got.stderr, -1) {
		got.pids[m[1]], _ = strconv.Atoi(m[2])
	}
	return got, err
}

// checkStopped fails the test for every process the command started that
// still runs.
func checkStopped(t *testing.T, got invoked) {
	t.Helper()
	if len(got.pids) != 3 {
		t.Fatalf("started %v, want dynalite, fauxqs and aws-lambda-rie; stderr:\n%s", got.pids, got.stderr)
	}
	for name, pid := range got.pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) after the command returned: kill(0) = %v, want ESRCH (stopped)", name, pid, err)
		}
	}
}

// writeFile writes a file into a temporary directory and returns its path.
func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// `make invoke FN=confirm EVENT=…` runs the confirm function as the
// template deploys it: its answer (the step's error name, as the state
// machine matches it) on stdout, and nothing it started left running.
func TestInvokeConfirm(t *testing.T) {
	tests := []struct {
		name     string
		event    string
		wantType string
		wantMsg  string
	}{
		{"no such entry", `{"action":"look","key":"nope","attempt":1}`, "InvalidStepRequest", "ledger entry not found"},
		{"unknown field", `{"action":"look","key":"nope","attempt":1,"extra":true}`, "InvalidStepRequest", "extra"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			event := writeFile(t, "event.json", []byte(tt.event))
			got := invoke(t, "-fn", "confirm", "-event", event, "-template", templatePath)
			if diff := cmp.Diff(tt.wantType, got.answer.ErrorType); diff != "" {
				t.Errorf("error type (-want +got):\n%s\nstderr:\n%s", diff, got.stderr)
			}
			if !strings.Contains(got.answer.ErrorMessage, tt.wantMsg) {
				t.Errorf("error message %q, want it to say %q", got.answer.ErrorMessage, tt.wantMsg)
			}
			checkStopped(t, got)
		})
	}
}

// The function runs with the environment the template gives it: a
// template without the queue's variable makes the confirm function fail
// its start, naming the variable (the emulator answers 502, the command
// fails and shows the function's output).
func TestInvokeUsesTheTemplatesEnvironment(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	j, err := intrinsics.ProcessYAML(b, &intrinsics.ProcessorOptions{NoProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Globals struct {
			Function struct {
				Environment struct {
					Variables map[string]any
				}
			}
		}
	}
	if err := json.Unmarshal(j, &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Globals.Function.Environment.Variables["ONCEPOST_QUEUE_URL"]; !ok {
		t.Fatalf("template.yaml's Globals set no ONCEPOST_QUEUE_URL: %v", doc.Globals.Function.Environment.Variables)
	}
	// The same template without the variable, built from this module.
	var raw map[string]any
	if err := json.Unmarshal(j, &raw); err != nil {
		t.Fatal(err)
	}
	vars := raw["Globals"].(map[string]any)["Function"].(map[string]any)["Environment"].(map[string]any)["Variables"].(map[string]any)
	delete(vars, "ONCEPOST_QUEUE_URL")
	raw["Resources"].(map[string]any)["ConfirmFunction"].(map[string]any)["Properties"].(map[string]any)["CodeUri"] = root
	broken, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	event := writeFile(t, "event.json", []byte(`{"action":"look","key":"nope","attempt":1}`))
	got, err := tryInvoke(t, "-fn", "confirm", "-event", event, "-template", writeFile(t, "template.json", broken))
	if err == nil || !strings.Contains(err.Error(), "502") || got.stdout != "" {
		t.Errorf("invoke = %v, printing %q; want the emulator's 502 for a function that failed to start, nothing printed", err, got.stdout)
	}
	checkStopped(t, got)
	if !strings.Contains(got.stderr, "ONCEPOST_QUEUE_URL is not set") {
		t.Errorf("the function's output does not say ONCEPOST_QUEUE_URL is not set:\n%s", got.stderr)
	}
}

// Bad input is refused (exit code 2) before anything starts.
func TestInvokeBadInput(t *testing.T) {
	good := writeFile(t, "event.json", []byte(`{}`))
	notJSON := writeFile(t, "event.txt", []byte(`action=look`))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no function", []string{"-event", good}, "-fn is required"},
		{"no event", []string{"-fn", "confirm"}, "-event is required"},
		{"unknown function", []string{"-fn", "publish", "-event", good, "-template", templatePath}, "the template has no function PublishFunction (it has "},
		{"not a function name", []string{"-fn", "../confirm", "-event", good, "-template", templatePath}, `"../confirm" is not a function name`},
		{"event not JSON", []string{"-fn", "confirm", "-event", notJSON, "-template", templatePath}, "is not JSON"},
		{"no event file", []string{"-fn", "confirm", "-event", filepath.Join(t.TempDir(), "none.json")}, "no such file"},
		{"no template", []string{"-fn", "confirm", "-event", good, "-template", filepath.Join(t.TempDir(), "none.yaml")}, "-template"},
		{"extra argument", []string{"-fn", "confirm", "-event", good, "now"}, `unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, &stdout, &stderr)
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%q) = %v, want a usage error saying %q", tt.args, err, tt.want)
			}
			if stdout.Len() != 0 || strings.Contains(stderr.String(), "pid") {
				t.Errorf("run(%q) printed %q and started %q, want nothing", tt.args, stdout.String(), stderr.String())
			}
		})
	}
}
