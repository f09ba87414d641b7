package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"oncepost/shared/clocktest"
	"oncepost/shared/emulatortest"
	"oncepost/shared/localflow"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// The two engines that run infra/statemachine/confirm.asl.json in
// stepfunctions_test.go, both calling the confirm function through the
// same HTTP endpoint: localflow (the embedded runtime's engine) and
// aws-local-stepfunctions, through infra/emulators/run-state-machine.mjs.

// flowEnd is how an execution ended, as an engine reports it.
type flowEnd struct {
	// Status is SUCCEEDED or FAILED (Step Functions' and localflow's names).
	Status string
	// Error and Cause say why it failed.
	Error, Cause string
	// States lists the states entered, in order.
	States []string
}

// decideFunc is the operator: called while the execution waits on the
// task token, it decides through tasks (the engine's SendTaskSuccess).
type decideFunc func(token string, tasks publishing.Tasks)

// stateMachineRunTimeout bounds one execution on either engine.
const stateMachineRunTimeout = 2 * time.Minute

// lockedBuffer collects a child process's output; safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startFunctionEndpoint runs bootstrap under the Lambda Runtime Interface
// Emulator (emulatortest.StartLambda), stopped by PID when the test ends,
// and returns its invoke URL (StartLambda returns once it answers): the Node runner
// calls the function over HTTP.
func startFunctionEndpoint(t *testing.T, bootstrap string, env map[string]string) (invokeURL string) {
	t.Helper()
	f, err := emulatortest.StartLambda(bootstrap, env)
	if errors.Is(err, emulatortest.ErrUnavailable) {
		emulatortest.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.Stop()
		if t.Failed() {
			t.Logf("aws-lambda-rie (pid %d) output:\n%s", f.PID(), f.Output())
		}
	})
	return f.URL()
}

// functionError is an error the function returned, named as Step
// Functions names it (localflow.ErrorName reads ErrorName).
type functionError struct {
	errorType, message string
}

// Error is the function's errorMessage.
func (e *functionError) Error() string { return e.message }

// ErrorName is the function's errorType.
func (e *functionError) ErrorName() string { return e.errorType }

// httpInvoker is localflow's Invoker for a function behind an invoke URL
// (the RIE's): the Task's payload is POSTed as the event, as Lambda's
// Invoke does, and a function error is returned named by its errorType,
// as run-state-machine.mjs throws it.
type httpInvoker struct {
	function string // the one function name (ARN) it serves
	url      string
	client   *http.Client
}

// Invoke implements localflow.Invoker.
func (i httpInvoker) Invoke(ctx context.Context, function string, payload json.RawMessage) (json.RawMessage, error) {
	if function != i.function {
		return nil, &functionError{errorType: "Lambda.ResourceNotFoundException", message: "Function not found: " + function}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, i.url, bytes.NewReader(payload))
	if err != nil {
		return nil, &localflow.TransportError{Err: fmt.Errorf("invoke %s: %w", function, err)}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := i.client.Do(req)
	if err != nil {
		return nil, &localflow.TransportError{Err: fmt.Errorf("invoke %s: %w", function, err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, &localflow.TransportError{Err: fmt.Errorf("invoke %s: read the answer: %w", function, err)}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &localflow.TransportError{Err: fmt.Errorf("invoke %s: %s: %s", function, resp.Status, body)}
	}
	// The RIE answers a function error with 200, no X-Amz-Function-Error
	// header, and the error document as the body.
	var doc struct {
		ErrorType    *string `json:"errorType"`
		ErrorMessage string  `json:"errorMessage"`
	}
	if json.Unmarshal(body, &doc) == nil && doc.ErrorType != nil {
		return nil, &functionError{errorType: *doc.ErrorType, message: doc.ErrorMessage}
	}
	if resp.Header.Get("X-Amz-Function-Error") != "" {
		return nil, &functionError{errorType: localflow.ErrorUnknown, message: string(body)}
	}
	return body, nil
}

// localflowEngine runs executions on localflow, on its own SQLite file,
// with a fake clock that jumps to each Wait's and retry's end.
type localflowEngine struct {
	clock  *clocktest.Clock
	engine *localflow.Engine
}

// newLocalflowEngine loads definition with substitutions into an engine
// on a fresh SQLite file whose tasks inv runs.
func newLocalflowEngine(t *testing.T, definition []byte, substitutions map[string]string, inv localflow.Invoker) *localflowEngine {
	t.Helper()
	ctx := context.Background()
	m, err := localflow.Load(definition, substitutions)
	if err != nil {
		t.Fatalf("localflow: %v", err)
	}
	store, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "flows.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatalf("open the localflow store: %v", err)
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Errorf("close the localflow store: %v", err)
		}
	})
	clock := clocktest.New(time.Now())
	e, err := localflow.New(ctx, store.DB(), m, localflow.Options{
		Now: clock.Now, Invoker: inv, Owner: "stepfunctions-test", Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("localflow: %v", err)
	}
	return &localflowEngine{clock: clock, engine: e}
}

// SendTaskSuccess implements publishing.Tasks, as the embedded runtime's
// adapter does.
func (l *localflowEngine) SendTaskSuccess(ctx context.Context, token string, output json.RawMessage) error {
	err := l.engine.SendTaskSuccess(ctx, token, output)
	if errors.Is(err, localflow.ErrTaskDoesNotExist) {
		return fmt.Errorf("%w: %v", publishing.ErrTaskNotWaiting, err)
	}
	return err
}

// run starts the execution name and advances it until it stops, calling
// decide when it waits on a task token.
func (l *localflowEngine) run(t *testing.T, name string, input []byte, decide decideFunc) flowEnd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stateMachineRunTimeout)
	defer cancel()
	if err := l.engine.Start(ctx, name, input); err != nil {
		t.Fatalf("localflow: %v", err)
	}
	decided := false
	for range 1000 {
		if _, err := l.engine.RunDue(ctx); err != nil {
			t.Fatalf("localflow: %v", err)
		}
		ex, err := l.engine.Describe(ctx, name)
		if err != nil {
			t.Fatalf("localflow: %v", err)
		}
		switch {
		case ex.Status != localflow.StatusRunning:
			return flowEnd{Status: ex.Status, Error: ex.Error, Cause: ex.Cause, States: ex.History}
		case ex.TaskToken != "" && ex.DueAt.IsZero():
			if decide == nil || decided {
				t.Fatalf("localflow: %s waits on a task token in %s and nobody is to answer it", name, ex.State)
			}
			decided = true
			decide(ex.TaskToken, l)
		case ex.DueAt.After(l.clock.Now()):
			l.clock.Set(ex.DueAt)
		default:
			l.clock.Advance(time.Second)
		}
	}
	t.Fatalf("localflow: %s still running after 1000 passes", name)
	return flowEnd{}
}

// nodeRunner runs executions on aws-local-stepfunctions through
// infra/emulators/run-state-machine.mjs.
type nodeRunner struct {
	node, script string
	args         []string
}

// newNodeRunner finds Node 22 and run-state-machine.mjs in
// infra/emulators (skipping, or failing when ONCEPOST_EMULATORS=required,
// if they are missing); args are the runner's flags for every run.
func newNodeRunner(t *testing.T, root string, args ...string) *nodeRunner {
	t.Helper()
	dir := filepath.Join(root, "infra", "emulators")
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	for _, need := range []string{node, filepath.Join(dir, "node_modules", "aws-local-stepfunctions", "package.json")} {
		if _, err := os.Stat(need); err != nil {
			emulatortest.Unavailable(t, fmt.Sprintf("%s is missing: run `%s` in %s", need, emulatortest.InstallCommand, root))
		}
	}
	return &nodeRunner{node: node, script: filepath.Join(dir, "run-state-machine.mjs"), args: args}
}

// runnerLine is one line run-state-machine.mjs prints.
type runnerLine struct {
	Type     string          `json:"type"`
	State    string          `json:"state"`
	Token    string          `json:"token"`
	Accepted bool            `json:"accepted"`
	Status   string          `json:"status"`
	Output   json.RawMessage `json:"output"`
	Error    string          `json:"error"`
	Cause    string          `json:"cause"`
	States   []string        `json:"states"`
}

// runnerProcess is one running execution of run-state-machine.mjs.
type runnerProcess struct {
	stdin  io.WriteCloser
	lines  <-chan runnerLine
	stderr *lockedBuffer
}

// next returns the runner's next line; ok is false once its stdout ended.
func (p *runnerProcess) next(ctx context.Context) (runnerLine, bool, error) {
	select {
	case l, ok := <-p.lines:
		return l, ok, nil
	case <-ctx.Done():
		return runnerLine{}, false, fmt.Errorf("run-state-machine.mjs: %w; stderr:\n%s", ctx.Err(), p.stderr.String())
	}
}

// runnerTasks answers the runner's waiting task through its stdin, as
// SendTaskSuccess does.
type runnerTasks struct {
	// run bounds the wait for the runner's acknowledgement: the run's
	// deadline.
	run context.Context
	p   *runnerProcess
}

// SendTaskSuccess implements publishing.Tasks.
func (r runnerTasks) SendTaskSuccess(ctx context.Context, token string, output json.RawMessage) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	line, err := json.Marshal(map[string]any{"token": token, "output": output})
	if err != nil {
		return fmt.Errorf("encode the task answer: %w", err)
	}
	if _, err := r.p.stdin.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("send the task answer to run-state-machine.mjs: %w", err)
	}
	ack, ok, err := r.p.next(r.run)
	switch {
	case err != nil:
		return err
	case !ok || ack.Type != "answered" || ack.Token != token:
		return fmt.Errorf("run-state-machine.mjs answered %+v (ok %t) to the task answer for %s", ack, ok, token)
	case !ack.Accepted:
		return fmt.Errorf("%w: run-state-machine.mjs has no task waiting on %s", publishing.ErrTaskNotWaiting, token)
	}
	return nil
}

// run runs one execution with input, calling decide when a task waits
// on its token. The process is killed by PID if it has not ended within
// stateMachineRunTimeout.
func (n *nodeRunner) run(t *testing.T, input []byte, decide decideFunc) flowEnd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stateMachineRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.node, append([]string{n.script}, n.args...)...)
	cmd.Dir = filepath.Dir(n.script)
	cmd.WaitDelay = 5 * time.Second
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", n.script, err)
	}
	lines := make(chan runnerLine)
	scanDone := make(chan error, 1)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			var l runnerLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				scanDone <- fmt.Errorf("line %q: %w", sc.Text(), err)
				return
			}
			select {
			case lines <- l:
			case <-ctx.Done():
				scanDone <- ctx.Err()
				return
			}
		}
		scanDone <- sc.Err()
	}()
	p := &runnerProcess{stdin: stdin, lines: lines, stderr: stderr}
	waited := false
	defer func() {
		if !waited {
			// The test gave up on it: the context's cancel kills it by PID.
			stdin.Close()
			cancel()
			_ = cmd.Wait()
		}
	}()
	if _, err := stdin.Write(append(bytes.Clone(input), '\n')); err != nil {
		t.Fatalf("write the input to run-state-machine.mjs: %v", err)
	}
	decided := false
	for {
		l, ok, err := p.next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Fatalf("run-state-machine.mjs ended without a result (%v); stderr:\n%s", <-scanDone, stderr.String())
		}
		switch l.Type {
		case "waiting":
			if decide == nil || decided {
				t.Fatalf("run-state-machine.mjs: %s waits on a task token and nobody is to answer it", l.State)
			}
			decided = true
			decide(l.Token, runnerTasks{run: ctx, p: p})
		case "result":
			stdin.Close()
			var scanErr error
			select {
			case scanErr = <-scanDone: // stdout ended: the runner exits
			case <-ctx.Done():
				scanErr = ctx.Err()
			}
			waited = true
			if err := cmd.Wait(); err != nil || scanErr != nil {
				t.Fatalf("run-state-machine.mjs (pid %d): %v, stdout: %v\nstderr:\n%s", cmd.Process.Pid, err, scanErr, stderr.String())
			}
			return flowEnd{Status: l.Status, Error: l.Error, Cause: l.Cause, States: l.States}
		default:
			t.Fatalf("run-state-machine.mjs printed %+v", l)
		}
	}
}
