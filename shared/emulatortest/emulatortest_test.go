package emulatortest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/childproc"
)

// Each emulator starts on 127.0.0.1, answers its service through the SDK
// with AWSConfig, keeps what it is given, and is gone (its port closed)
// once the test that started it has ended.
func TestEmulatorsServeAndStop(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(testing.TB) string
		use   func(t *testing.T, cfg aws.Config)
	}{
		{"Dynalite", Dynalite, useDynamo},
		{"Fauxqs", Fauxqs, useSQS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var endpoint string
			t.Run("running", func(t *testing.T) {
				endpoint = tc.start(t)
				if !strings.HasPrefix(endpoint, "http://127.0.0.1:") {
					t.Fatalf("endpoint %q, want http://127.0.0.1:PORT", endpoint)
				}
				tc.use(t, AWSConfig(t, endpoint))
			})
			if endpoint == "" {
				return // skipped or failed above
			}
			conn, err := net.DialTimeout("tcp", strings.TrimPrefix(endpoint, "http://"), time.Second)
			if err == nil {
				conn.Close()
				t.Errorf("%s still accepts connections after its test ended", endpoint)
			}
		})
	}
}

func useDynamo(t *testing.T, cfg aws.Config) {
	ctx := t.Context()
	c := dynamodb.NewFromConfig(cfg)
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("probe"),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	out, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	if diff := cmp.Diff([]string{"probe"}, out.TableNames); diff != "" {
		t.Errorf("ListTables (-want +got):\n%s", diff)
	}
}

func useSQS(t *testing.T, cfg aws.Config) {
	ctx := t.Context()
	c := sqs.NewFromConfig(cfg)
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("probe")})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("hello")}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	if len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != "hello" {
		t.Errorf("ReceiveMessage = %d messages, want the one sent", len(out.Messages))
	}
}

// Two emulators of one kind are separate processes: one test's data is
// not another's.
func TestEachCallHasItsOwnProcess(t *testing.T) {
	a, b := Fauxqs(t), Fauxqs(t)
	if a == b {
		t.Fatalf("two Fauxqs calls returned the same endpoint %s", a)
	}
	ctx := t.Context()
	ca, cb := sqs.NewFromConfig(AWSConfig(t, a)), sqs.NewFromConfig(AWSConfig(t, b))
	if _, err := ca.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("only-in-a")}); err != nil {
		t.Fatal(err)
	}
	out, err := cb.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.QueueUrls) != 0 {
		t.Errorf("second emulator lists %v, want no queue", out.QueueUrls)
	}
}

// recorder is a testing.TB that records what a helper reports; Fatal and
// Skip end the calling goroutine as testing.T does. Only the methods
// below may be called.
type recorder struct {
	testing.TB
	mu      sync.Mutex
	errs    []string
	logs    []string
	fatal   bool
	skipped bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatal = true
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
	r.mu.Unlock()
	runtime.Goexit()
}
func (r *recorder) Skip(args ...any) {
	r.mu.Lock()
	r.skipped = true
	r.logs = append(r.logs, fmt.Sprint(args...))
	r.mu.Unlock()
	runtime.Goexit()
}

// run calls f with r in a goroutine of its own, as a test would.
func (r *recorder) run(f func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
}

// installed returns the emulators directory and node, or skips (fails
// under EnvRequired) like the helpers do.
func installed(t *testing.T, pkg string) (dir, node string) {
	t.Helper()
	dir, msg := locate(pkg)
	if msg != "" {
		unavailable(t, msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable(t, err.Error())
	}
	return dir, node
}

// An emulator that dies while its test runs fails that test, with its
// output.
func TestDeathDuringTestFailsIt(t *testing.T) {
	dir, node := installed(t, "fauxqs")
	port, err := childproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := launch(node, dir, fauxqs, port)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	r := &recorder{}
	r.run(p.stop)
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "died during the test") {
		t.Errorf("stop after the emulator died reported %q, want one error saying it died", r.errs)
	}
}

// An emulator exits by itself when its stdin closes, as it does when the
// test process that started it dies.
func TestExitsWhenTestProcessGoes(t *testing.T) {
	for _, e := range []emulator{fauxqs, dynalite} {
		t.Run(e.name, func(t *testing.T) {
			dir, node := installed(t, e.name)
			port, err := childproc.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			p, err := launch(node, dir, e, port)
			if err != nil {
				t.Fatal(err)
			}
			p.stdin.Close()
			select {
			case <-p.exited:
			case <-time.After(5 * time.Second):
				p.kill()
				t.Fatalf("%s still running 5 s after its stdin closed", e.name)
			}
		})
	}
}

// An emulator that ignores SIGTERM is killed after StopGrace.
func TestStopKillsAfterGrace(t *testing.T) {
	dir, node := installed(t, "fauxqs")
	stubborn := emulator{
		name: "stubborn",
		script: `process.on('SIGTERM', () => console.error('ignoring SIGTERM'));
require('http').createServer((q, s) => s.end('ok')).listen(Number(process.argv[2]), '127.0.0.1',
  () => console.log('` + readyMarker + `'));`,
		ready: func(c *http.Client, endpoint string) bool {
			resp, err := c.Get(endpoint)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return true
		},
	}
	port, err := childproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := launch(node, dir, stubborn, port)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	began := time.Now()
	r.run(p.stop)
	took := time.Since(began)
	if len(r.errs) != 0 {
		t.Errorf("stop reported errors %q", r.errs)
	}
	if took < StopGrace || len(r.logs) != 1 || !strings.Contains(r.logs[0], "SIGKILL") {
		t.Errorf("stop took %s and logged %q; want at least %s and a line about SIGKILL", took, r.logs, StopGrace)
	}
	select {
	case <-p.exited:
	default:
		t.Errorf("process %d still running after stop", p.cmd.Process.Pid)
	}
}

// A port taken between picking and listening is reported as such, so
// start picks another, even when whoever took it answers like the
// emulator (another test's emulator would).
func TestTakenPortIsRecognised(t *testing.T) {
	for _, e := range []emulator{fauxqs, dynalite} {
		t.Run(e.name, func(t *testing.T) {
			dir, node := installed(t, e.name)
			impostor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					w.WriteHeader(http.StatusBadRequest)
				}
			}))
			defer impostor.Close()
			if !e.ready(&http.Client{Timeout: time.Second}, impostor.URL) {
				t.Fatalf("the impostor does not answer like %s", e.name)
			}
			p, err := launch(node, dir, e, impostor.Listener.Addr().(*net.TCPAddr).Port)
			if err == nil {
				p.stop(t)
				t.Fatalf("launch on a taken port succeeded")
			}
			if !errors.Is(err, childproc.ErrPortTaken) {
				t.Errorf("launch on a taken port = %v, want ErrPortTaken", err)
			}
		})
	}
}

// Without the package installed a test is skipped with the command to run,
// or fails when EnvRequired is "required".
func TestMissingEmulator(t *testing.T) {
	root := t.TempDir()
	_, msg := checkInstalled(root+"/infra/emulators", root, "fauxqs")
	if !strings.Contains(msg, InstallCommand) || !strings.Contains(msg, "fauxqs") {
		t.Fatalf("message %q does not name the package and %q", msg, InstallCommand)
	}
	for _, tc := range []struct {
		env               string
		wantFatal, wantSk bool
	}{
		{"", false, true},
		{"optional", false, true},
		{"required", true, false},
	} {
		t.Run("env="+tc.env, func(t *testing.T) {
			t.Setenv(EnvRequired, tc.env)
			r := &recorder{}
			r.run(func(tb testing.TB) { unavailable(tb, msg) })
			if r.fatal != tc.wantFatal || r.skipped != tc.wantSk {
				t.Errorf("%s=%q: fatal %v, skipped %v; want fatal %v, skipped %v", EnvRequired, tc.env, r.fatal, r.skipped, tc.wantFatal, tc.wantSk)
			}
			if got := strings.Join(append(r.errs, r.logs...), "\n"); !strings.Contains(got, InstallCommand) {
				t.Errorf("reported %q, want it to name %q", got, InstallCommand)
			}
		})
	}
}

// AWSConfig ignores the environment and shared files, and gives up after
// three attempts.
func TestAWSConfig(t *testing.T) {
	for k, v := range map[string]string{
		"AWS_REGION": "eu-west-3", "AWS_DEFAULT_REGION": "eu-west-3",
		"AWS_ACCESS_KEY_ID": "AKIAFROMENV", "AWS_SECRET_ACCESS_KEY": "from-env",
		"AWS_ENDPOINT_URL": "http://192.0.2.1:1", "AWS_ENDPOINT_URL_SQS": "http://192.0.2.1:1",
		"AWS_PROFILE": "nope", "AWS_CONFIG_FILE": "/nonexistent", "AWS_MAX_ATTEMPTS": "9",
	} {
		t.Setenv(k, v)
	}
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	cfg := AWSConfig(t, srv.URL)
	creds, err := cfg.Credentials.Retrieve(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := []string{cfg.Region, aws.ToString(cfg.BaseEndpoint), creds.AccessKeyID}
	if diff := cmp.Diff([]string{Region, srv.URL, "AKIDEMULATOR"}, got); diff != "" {
		t.Errorf("region, endpoint, key (-want +got):\n%s", diff)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err = sqs.NewFromConfig(cfg).ListQueues(ctx, &sqs.ListQueuesInput{})
	if err == nil {
		t.Fatal("ListQueues against a server that always answers 500 succeeded")
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d attempts, want 3: %v", n, err)
	}
}

// Outside a test, StartDynalite and StartFauxqs start the same servers;
// Stop ends the process by its PID (the port closes, the PID is gone), and
// a second Stop does nothing.
func TestStartedOutsideATestServesAndStops(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func() (*Server, error)
		use   func(t *testing.T, cfg aws.Config)
	}{
		{"dynalite", StartDynalite, useDynamo},
		{"fauxqs", StartFauxqs, useSQS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			installed(t, tc.name)
			s, err := tc.start()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Stop()
			if !strings.HasPrefix(s.Endpoint(), "http://127.0.0.1:") {
				t.Fatalf("endpoint %q, want http://127.0.0.1:PORT", s.Endpoint())
			}
			tc.use(t, Config(s.Endpoint()))
			if err := s.Stop(); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			if err := syscall.Kill(s.PID(), 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process %d after Stop: kill(0) = %v, want ESRCH", s.PID(), err)
			}
			if conn, err := net.DialTimeout("tcp", strings.TrimPrefix(s.Endpoint(), "http://"), time.Second); err == nil {
				conn.Close()
				t.Errorf("%s still accepts connections after Stop", s.Endpoint())
			}
			if err := s.Stop(); err != nil {
				t.Errorf("second Stop: %v, want nil", err)
			}
		})
	}
}

// Stop reports an emulator that died before it was stopped, with its
// output.
func TestStopReportsAnEarlierDeath(t *testing.T) {
	installed(t, "fauxqs")
	s, err := StartFauxqs()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(s.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.p.exited
	err = s.Stop()
	if err == nil || !strings.Contains(err.Error(), "exited before it was stopped") {
		t.Errorf("Stop after the emulator died = %v, want an error saying it exited before", err)
	}
}

// Outside a test a missing emulator or RIE is an error wrapping
// ErrUnavailable that names the command to run.
func TestStartUnavailable(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module probe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	for _, tc := range []struct {
		name, wantCommand string
		start             func() error
	}{
		{"dynalite", InstallCommand, func() error { _, err := StartDynalite(); return err }},
		{"fauxqs", InstallCommand, func() error { _, err := StartFauxqs(); return err }},
		{"rie", RIEInstallCommand, func() error { _, err := StartLambda("/nonexistent/bootstrap", nil); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.start()
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tc.wantCommand) {
				t.Errorf("start without it installed = %v, want ErrUnavailable naming %q", err, tc.wantCommand)
			}
		})
	}
}

// A port taken between picking it and the RIE's listen (another process's
// connection took it) makes the RIE exit at start; StartLambda starts it
// again on other ports instead of returning a function that cannot be
// invoked. Either port: the invoke endpoint's, or the Runtime API's.
func TestStartLambdaAvoidsATakenPort(t *testing.T) {
	bootstrap := BuildBootstrap(t, filepath.Join("testdata", "echo"))
	for _, taken := range []int{0, 1} { // the invoke port, the Runtime API port
		t.Run([]string{"invoke port", "runtime API port"}[taken], func(t *testing.T) {
			pick, picked := TakenPortFirst(t, taken)
			f, err := startLambda(bootstrap, nil, pick)
			if errors.Is(err, ErrUnavailable) {
				Unavailable(t, err.Error())
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Stop()
			answer, err := f.Invoke(t.Context(), []byte(`{"n":1}`))
			if err != nil {
				t.Fatalf("invoke after a start on a taken port: %v\n%s", err, f.Output())
			}
			if string(answer) != `{"n":1}` {
				t.Errorf("answer = %s, want the event back", answer)
			}
			if n := picked(); n < 4 {
				t.Errorf("%d ports picked, want a second pair after the taken one", n)
			}
		})
	}
}
