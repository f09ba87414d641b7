package dynamostore

// The processes of the comparison with Powertools idempotency (make
// bench-aws; powertools_bench_test.go): a counting reverse proxy in front of
// dynalite that both clients go through, a publisher that is killed after
// its side effect, and the Node harness (infra/emulators/powertools-
// harness.mjs). The first two are this test binary re-executed
// (TestIdempotencyBenchChild), so each runs in a process of its own: the
// proxy's work never counts as a client's CPU time, and a SIGKILL kills a
// real process. Every process listens on 127.0.0.1 only, exits when the
// test that started it is gone (its stdin closes) and is stopped by PID
// when the test ends.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"oncepost/shared/emulatortest"
	"oncepost/shared/platform/mastodon"
	"oncepost/shared/publishing"
)

// Environment of a re-executed test binary (TestIdempotencyBenchChild).
const (
	// benchChildEnv selects the child's role: childProxy or childPublish.
	benchChildEnv = "ONCEPOST_BENCH_CHILD"
	// benchChildConfigEnv carries the child's configuration: the proxy's
	// upstream endpoint, or the publish child's publishChildConfig as JSON.
	benchChildConfigEnv = "ONCEPOST_BENCH_CHILD_CONFIG"
	childProxy          = "proxy"
	childPublish        = "publish"
)

// proxyCallsPath is the proxy's own endpoint: GET answers what it counted
// so far. DynamoDB requests are all POST /, so none is mistaken for it.
const proxyCallsPath = "/oncepost-bench/calls"

// childStopGrace is how long a stop waits after SIGTERM before SIGKILL.
const childStopGrace = 3 * time.Second

// TestIdempotencyBenchChild is not a test: it is the entry point of this
// test binary re-executed as a child process of the comparison with
// Powertools idempotency, selected by benchChildEnv. Run without it, it
// skips.
func TestIdempotencyBenchChild(t *testing.T) {
	role := os.Getenv(benchChildEnv)
	if role == "" {
		t.Skip("the child process of the Powertools comparison (powertools_procs_test.go)")
	}
	// The parent holds the other end of stdin: when it is gone, so are we.
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	var err error
	switch role {
	case childProxy:
		err = serveCountingProxy(os.Getenv(benchChildConfigEnv))
	case childPublish:
		err = publishChild(t, os.Getenv(benchChildConfigEnv))
	default:
		err = fmt.Errorf("unknown %s %q", benchChildEnv, role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench child %s: %v\n", role, err)
		os.Exit(3)
	}
	os.Exit(0)
}

// serveCountingProxy forwards every request to the DynamoDB endpoint
// upstream and counts them, and their body bytes, by operation
// (X-Amz-Target) and table. It prints "listening URL" once it accepts
// connections. (shared/awsruntime/stacktest has a counting proxy too, but
// in the test's own process, where its work would count as the Go
// client's CPU time.)
func serveCountingProxy(upstream string) error {
	target, err := url.Parse(upstream)
	if err != nil || target.Host == "" {
		return fmt.Errorf("proxy upstream %q: not a URL (%v)", upstream, err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Up to 16 requests of each client are in flight: keep their upstream
	// connections, so the proxy adds the same short hop to every call.
	tr.MaxIdleConnsPerHost = 128
	rp.Transport = tr
	var (
		mu     sync.Mutex
		counts = proxyCounts{Calls: callCounts{}, RequestBytes: callCounts{}}
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+proxyCallsPath, func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		b, err := json.Marshal(counts)
		mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			http.Error(w, "read the request: "+err.Error(), http.StatusBadGateway)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct{ TableName string }
		_ = json.Unmarshal(body, &req) // BatchGetItem names no single table: ""
		_, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
		k := callKey(op, req.TableName)
		mu.Lock()
		counts.Calls[k]++
		counts.RequestBytes[k] += len(body)
		mu.Unlock()
		rp.ServeHTTP(w, r)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("proxy listen: %w", err)
	}
	fmt.Printf("listening http://%s\n", l.Addr())
	return http.Serve(l, mux)
}

// proxyCounts is what the proxy counted: requests, and their body bytes.
type proxyCounts struct {
	Calls        callCounts `json:"calls"`
	RequestBytes callCounts `json:"request_bytes"`
}

// since returns what was counted after before was read.
func (c proxyCounts) since(before proxyCounts) proxyCounts {
	return proxyCounts{Calls: c.Calls.since(before.Calls), RequestBytes: c.RequestBytes.since(before.RequestBytes)}
}

// callCounts counts DynamoDB requests (or their bytes) by
// callKey(operation, table).
type callCounts map[string]int

// callKey is how callCounts names the calls of one operation on one table.
func callKey(op, table string) string { return op + " " + table }

// since returns the calls counted after before was read.
func (c callCounts) since(before callCounts) callCounts {
	out := callCounts{}
	for k, n := range c {
		if d := n - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// byOp sums the counts of each operation over every table.
func (c callCounts) byOp() map[string]int {
	out := map[string]int{}
	for k, n := range c {
		op, _, _ := strings.Cut(k, " ")
		out[op] += n
	}
	return out
}

// onTable keeps the counts of one table, by operation.
func (c callCounts) onTable(table string) map[string]int {
	out := map[string]int{}
	for k, n := range c {
		if op, t, _ := strings.Cut(k, " "); t == table {
			out[op] += n
		}
	}
	return out
}

// total is the number of calls counted.
func (c callCounts) total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// describeOps lists operations and counts, "PutItem 1, UpdateItem 1", in
// name order.
func describeOps(ops map[string]int, per float64) string {
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, op := range names {
		parts[i] = fmt.Sprintf("%s %.3g", op, float64(ops[op])/per)
	}
	return strings.Join(parts, ", ")
}

// countingProxy is the running proxy child.
type countingProxy struct {
	proc     *lineProcess
	endpoint string
}

// startCountingProxy runs the counting proxy in front of the DynamoDB
// endpoint upstream.
func startCountingProxy(tb testing.TB, upstream string) *countingProxy {
	tb.Helper()
	p := startChild(tb, childProxy, upstream)
	line := p.line(tb, 30*time.Second)
	endpoint, ok := strings.CutPrefix(line, "listening ")
	if !ok {
		tb.Fatalf("counting proxy: first line %q, want \"listening URL\"", line)
	}
	return &countingProxy{proc: p, endpoint: endpoint}
}

// counts reads the counts so far.
func (p *countingProxy) counts(tb testing.TB) proxyCounts {
	tb.Helper()
	resp, err := http.Get(p.endpoint + proxyCallsPath)
	if err != nil {
		tb.Fatalf("read the proxy's counts: %v", err)
	}
	defer resp.Body.Close()
	var c proxyCounts
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		tb.Fatalf("decode the proxy's counts: %v", err)
	}
	return c
}

// calls reads the calls counted so far.
func (p *countingProxy) calls(tb testing.TB) callCounts {
	tb.Helper()
	return p.counts(tb).Calls
}

// publishChildConfig configures the publish child: a Publisher on the
// tables of Prefix at Endpoint, sending Job to the platform of its account.
type publishChildConfig struct {
	Endpoint string
	Prefix   string
	// DataKey is the StaticKey the parent sealed the credential with.
	DataKey                          []byte
	Job                              publishing.Job
	Owner                            string
	CallTimeout, RecordMargin, Lease time.Duration
}

// publishChild runs one Publish of the configured job, printing
// "publishing" before it starts and the outcome after it (which a child
// killed during the call never prints).
func publishChild(t *testing.T, config string) error {
	var c publishChildConfig
	if err := json.Unmarshal([]byte(config), &c); err != nil {
		return fmt.Errorf("decode the configuration: %w", err)
	}
	store, err := New(dynamodb.NewFromConfig(emulatortest.AWSConfig(t, c.Endpoint)), Options{Prefix: c.Prefix, Keys: StaticKey(c.DataKey)})
	if err != nil {
		return err
	}
	pub := &publishing.Publisher{
		Ledger: store, Posts: store, Accounts: store, Pacer: store, Flows: &startedFlows{}, Platforms: benchPlatforms,
		Owner: c.Owner, CallTimeout: c.CallTimeout, RecordMargin: c.RecordMargin, Lease: c.Lease,
	}
	fmt.Println("publishing")
	out, err := pub.Publish(context.Background(), c.Job)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	fmt.Printf("outcome %s %s\n", out.Result, out.Reason)
	return nil
}

// benchPlatforms reaches the sandbox through the real Mastodon adapter,
// with the sandbox's OAuth client.
var benchPlatforms = mastodon.Connector{ClientID: "sandbox-client", ClientSecret: "sandbox-secret"}

// startedFlows records confirm workflow starts, idempotent by name as Step
// Functions Standard is; the scenarios run the steps themselves.
type startedFlows struct {
	mu     sync.Mutex
	starts map[string]publishing.ConfirmInput
}

// StartConfirm records the start of the workflow named name.
func (f *startedFlows) StartConfirm(_ context.Context, name string, in publishing.ConfirmInput) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.starts == nil {
		f.starts = map[string]publishing.ConfirmInput{}
	}
	if _, ok := f.starts[name]; !ok {
		f.starts[name] = in
	}
	return nil
}

// input returns the input of the workflow named name, if it was started.
func (f *startedFlows) input(name string) (publishing.ConfirmInput, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in, ok := f.starts[name]
	return in, ok
}

// startChild re-executes this test binary as a child of the given role.
func startChild(tb testing.TB, role string, config any) *lineProcess {
	tb.Helper()
	cfg, ok := config.(string)
	if !ok {
		b, err := json.Marshal(config)
		if err != nil {
			tb.Fatalf("encode the %s child's configuration: %v", role, err)
		}
		cfg = string(b)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdempotencyBenchChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), benchChildEnv+"="+role, benchChildConfigEnv+"="+cfg,
		"GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	return startLineProcess(tb, "bench child "+role, cmd)
}

// lineProcess is a child process spoken to in lines: commands on its
// stdin, answers on its stdout.
type lineProcess struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string
	stderr  *lockedBuffer
	exited  chan struct{}
	waitErr error // set before exited is closed
	once    sync.Once
}

// startLineProcess starts cmd and registers its stop (by PID) with tb.
func startLineProcess(tb testing.TB, name string, cmd *exec.Cmd) *lineProcess {
	tb.Helper()
	p := &lineProcess{name: name, cmd: cmd, lines: make(chan string, 64), stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		tb.Fatalf("%s: stdin: %v", name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatalf("%s: stdout: %v", name, err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	go func() {
		<-read // Wait closes stdout: read it to the end first
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(func() { p.stop(tb) })
	return p
}

// pid is the process's id.
func (p *lineProcess) pid() int { return p.cmd.Process.Pid }

// send writes v as one JSON line to the process's stdin.
func (p *lineProcess) send(tb testing.TB, v any) {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatalf("%s: encode command: %v", p.name, err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		tb.Fatalf("%s (pid %d): send command: %v\n%s", p.name, p.pid(), err, p.stderr)
	}
}

// line returns the next line the process prints, failing tb when none
// comes within timeout or the process exits first.
func (p *lineProcess) line(tb testing.TB, timeout time.Duration) string {
	tb.Helper()
	select {
	case l := <-p.lines:
		return l
	case <-p.exited:
		select {
		case l := <-p.lines:
			return l
		default:
		}
		tb.Fatalf("%s (pid %d) exited (%v) before answering:\n%s", p.name, p.pid(), p.waitErr, p.stderr)
	case <-time.After(timeout):
		tb.Fatalf("%s (pid %d) did not answer within %s:\n%s", p.name, p.pid(), timeout, p.stderr)
	}
	return ""
}

// answer decodes the next line as JSON into v.
func (p *lineProcess) answer(tb testing.TB, timeout time.Duration, v any) {
	tb.Helper()
	l := p.line(tb, timeout)
	if err := json.Unmarshal([]byte(l), v); err != nil {
		tb.Fatalf("%s: answer %q: %v", p.name, l, err)
	}
}

// kill sends SIGKILL to the process by PID and waits until it is reaped.
func (p *lineProcess) kill(tb testing.TB) {
	tb.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		tb.Fatalf("kill %s (pid %d): %v", p.name, p.pid(), err)
	}
	<-p.exited
	p.stdin.Close()
}

// stop ends the process by PID: SIGTERM, then SIGKILL after childStopGrace.
func (p *lineProcess) stop(tb testing.TB) {
	p.once.Do(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(childStopGrace):
				tb.Logf("%s (pid %d) still running %s after SIGTERM; sending SIGKILL", p.name, p.pid(), childStopGrace)
				_ = p.cmd.Process.Kill()
				<-p.exited
			}
		}
		p.stdin.Close()
		if tb.Failed() && p.stderr.Len() > 0 {
			tb.Logf("%s (pid %d) stderr:\n%s", p.name, p.pid(), p.stderr)
		}
	})
}

// lockedBuffer is a bytes.Buffer safe for concurrent use, keeping the
// first 64 KiB written to it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write keeps what still fits in 64 KiB and drops the rest.
func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := 64<<10 - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Len is the number of bytes kept.
func (b *lockedBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// String is what was kept.
func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// powertoolsHarness is infra/emulators/powertools-harness.mjs running
// under the Node 22 binary of infra/emulators/node_modules.
type powertoolsHarness struct {
	proc *lineProcess
}

// harnessFunctionName is the AWS_LAMBDA_FUNCTION_NAME the harness runs
// as: Powertools starts every idempotency key with it.
const harnessFunctionName = "oncepost-bench"

// startPowertoolsHarness starts the harness on the DynamoDB endpoint and
// table, or skips tb (fails it with ONCEPOST_EMULATORS=required) when Node
// 22 or the Powertools package is not installed.
func startPowertoolsHarness(tb testing.TB, endpoint, table string) *powertoolsHarness {
	tb.Helper()
	dir := harnessDir(tb)
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	for _, need := range []string{node, filepath.Join(dir, "node_modules", "@aws-lambda-powertools", "idempotency", "package.json")} {
		if _, err := os.Stat(need); err != nil {
			harnessMissing(tb, fmt.Sprintf("the Powertools harness needs %s: run `%s` in the module root", need, emulatortest.InstallCommand))
		}
	}
	cmd := exec.Command(node, "powertools-harness.mjs", "--endpoint", endpoint, "--table", table)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "AWS_LAMBDA_FUNCTION_NAME=" + harnessFunctionName}
	h := &powertoolsHarness{proc: startLineProcess(tb, "powertools harness", cmd)}
	var ready struct {
		Ready bool `json:"ready"`
	}
	h.proc.answer(tb, 60*time.Second, &ready)
	if !ready.Ready {
		tb.Fatal("powertools harness: first line is not its ready line")
	}
	return h
}

// harnessError is an error the harness reports: the JavaScript error's
// name and message.
type harnessError struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

// benchAnswer is the harness's answer to a bench command.
type benchAnswer struct {
	Keys        int     `json:"keys"`
	Errors      int     `json:"errors"`
	FirstError  string  `json:"first_error"`
	ElapsedMS   float64 `json:"elapsed_ms"`
	CPUMicros   float64 `json:"cpu_us"`
	SideEffects int     `json:"side_effects"`
	// Error is set when the command itself failed.
	Error *harnessError `json:"error"`
}

// bench runs keys invocations with new keys (named run-i), concurrency at
// a time, in the harness.
func (h *powertoolsHarness) bench(tb testing.TB, keys, concurrency int, runID string) benchAnswer {
	tb.Helper()
	h.proc.send(tb, map[string]any{"op": "bench", "keys": keys, "concurrency": concurrency, "run": runID})
	var a benchAnswer
	h.proc.answer(tb, 10*time.Minute, &a)
	if a.Error != nil || a.Errors > 0 || a.SideEffects != keys {
		tb.Fatalf("powertools bench of %d keys: %d errors (first: %s), %d side effects, command error %+v", keys, a.Errors, a.FirstError, a.SideEffects, a.Error)
	}
	return a
}

// harnessPlatform is where an invocation's side effect goes: a status
// create on the sandbox at URL, given up after TimeoutMS.
type harnessPlatform struct {
	URL       string `json:"url"`
	Token     string `json:"token"`
	Text      string `json:"text"`
	TimeoutMS int64  `json:"timeout_ms"`
}

// invokeAnswer is the harness's answer to an invoke command.
type invokeAnswer struct {
	Result map[string]any `json:"result"`
	Error  *harnessError  `json:"error"`
}

// String shows the answer in failure messages.
func (a invokeAnswer) String() string {
	if a.Error != nil {
		return fmt.Sprintf("error %s: %s", a.Error.Name, a.Error.Message)
	}
	return fmt.Sprintf("result %v", a.Result)
}

// startInvoke sends one invocation of event, with a Lambda context whose
// remaining time starts at remaining, without waiting for its answer.
func (h *powertoolsHarness) startInvoke(tb testing.TB, event map[string]any, remaining time.Duration, p harnessPlatform) {
	tb.Helper()
	h.proc.send(tb, map[string]any{"op": "invoke", "event": event, "remaining_ms": remaining.Milliseconds(), "platform": p})
}

// invoke runs one invocation and returns its answer.
func (h *powertoolsHarness) invoke(tb testing.TB, event map[string]any, remaining time.Duration, p harnessPlatform) invokeAnswer {
	tb.Helper()
	h.startInvoke(tb, event, remaining, p)
	var a invokeAnswer
	h.proc.answer(tb, time.Minute, &a)
	return a
}

// harnessRecord is an idempotency record as the harness reads it.
type harnessRecord struct {
	Status string `json:"status"`
	// Expiration is in epoch seconds, InProgressExpiration in epoch
	// milliseconds, as Powertools stores them.
	Expiration           float64 `json:"expiration"`
	InProgressExpiration int64   `json:"in_progress_expiration"`
}

// record reads event's idempotency record.
func (h *powertoolsHarness) record(tb testing.TB, event map[string]any) harnessRecord {
	tb.Helper()
	h.proc.send(tb, map[string]any{"op": "record", "event": event})
	var a struct {
		Record *harnessRecord `json:"record"`
		Error  *harnessError  `json:"error"`
	}
	h.proc.answer(tb, time.Minute, &a)
	if a.Record == nil {
		tb.Fatalf("read the idempotency record of %v: %+v", event, a.Error)
	}
	return *a.Record
}

// harnessDir is infra/emulators of the module holding the working
// directory (a test runs in its package's directory).
func harnessDir(tb testing.TB) string {
	tb.Helper()
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "infra", "emulators")
		}
		if filepath.Dir(dir) == dir {
			tb.Fatalf("no go.mod above %s", wd)
		}
	}
}

// harnessMissing skips tb because msg names something not installed, or fails it
// when emulatortest.EnvRequired says the emulators are required (as
// emulatortest does for the emulators themselves).
func harnessMissing(tb testing.TB, msg string) {
	tb.Helper()
	if os.Getenv(emulatortest.EnvRequired) == "required" {
		tb.Fatalf("%s (%s=required)", msg, emulatortest.EnvRequired)
	}
	tb.Skip(msg)
}
