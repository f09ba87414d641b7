package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"gopkg.in/yaml.v3"

	"oncepost/shared/awsruntime/stacktest"
	"oncepost/shared/emulatortest"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqsqueue"
)

// lambdaVCPUMB is the memory at which a Lambda function has one vCPU: CPU
// is allotted in proportion to memory
// (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html).
const lambdaVCPUMB = 1769

// functionLimits reads a function's Timeout and MemorySize from
// template.yaml (Globals for what it does not set): the limits the burst
// is held to.
func functionLimits(tb testing.TB, logicalID string) (timeout time.Duration, memoryMB int) {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(emulatortest.ModuleRoot(tb), "template.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	var doc struct {
		Globals struct {
			Function struct {
				Timeout    int `yaml:"Timeout"`
				MemorySize int `yaml:"MemorySize"`
			} `yaml:"Function"`
		} `yaml:"Globals"`
		Resources map[string]struct {
			Properties struct {
				Timeout    int `yaml:"Timeout"`
				MemorySize int `yaml:"MemorySize"`
			} `yaml:"Properties"`
		} `yaml:"Resources"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		tb.Fatalf("read template.yaml: %v", err)
	}
	p := doc.Resources[logicalID].Properties
	t, m := cmpOr(p.Timeout, doc.Globals.Function.Timeout), cmpOr(p.MemorySize, doc.Globals.Function.MemorySize)
	if t == 0 || m == 0 {
		tb.Fatalf("template.yaml gives %s no Timeout or MemorySize", logicalID)
	}
	return time.Duration(t) * time.Second, m
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// lambdaAPI is Lambda's Invoke API for the trigger's asynchronous
// invocations of itself (a slot's continuation): it accepts them (202)
// and hands their payloads to the harness, which invokes the function
// with them once the invocation running has returned.
type lambdaAPI struct {
	srv      *httptest.Server
	mu       sync.Mutex
	payloads [][]byte
}

func newLambdaAPI(tb testing.TB) *lambdaAPI {
	l := &lambdaAPI{}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Amz-Invocation-Type") != "Event" {
			http.Error(w, "only asynchronous invocations", http.StatusBadRequest)
			return
		}
		l.mu.Lock()
		l.payloads = append(l.payloads, body)
		l.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	tb.Cleanup(l.srv.Close)
	return l
}

func (l *lambdaAPI) take() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.payloads
	l.payloads = nil
	return p
}

// childCPU is the CPU time (user + system) of the processes whose parent
// is pid: the function's bootstrap under the RIE.
func childCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		tb.Fatal(err)
	}
	var ticks int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid … utime(14) stime(15): after the last ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 || f[1] != strconv.Itoa(pid) {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// burst is one slot of targets fired by the trigger under the RIE with
// the template's limits.
type burst struct {
	s       *stacktest.Stack
	trigger *emulatortest.Function
	lambda  *lambdaAPI
	slot    time.Time
	targets int
	timeout time.Duration
	memory  int
}

// newBurst stores n posts, each to one of accounts accounts, all at one
// slot far enough ahead for the storing to finish (leads are taken as if
// the firing started a minute before the slot, as a slot schedule fires
// it: firing.lead), and starts
// the trigger under the RIE with its Timeout and MemorySize from
// template.yaml (the RIE enforces the timeout).
func newBurst(tb testing.TB, accounts, n int) *burst {
	tb.Helper()
	s := stacktest.New(tb)
	ids := make([]post.AccountID, accounts)
	for i := range ids {
		ids[i] = post.AccountID(fmt.Sprintf("acct-%04d", i))
	}
	parallel(tb, accounts, func(i int) { s.AddAccount(tb, ids[i]) })
	slot := time.Now().UTC().Add(10 * time.Minute).Truncate(time.Second)
	parallel(tb, n, func(i int) {
		s.Schedule(tb, post.ID(fmt.Sprintf("burst-%05d", i)), fmt.Sprintf("Top of the hour, post %d.", i), slot, ids[i%accounts])
	})
	timeout, memory := functionLimits(tb, "TriggerFunction")
	l := newLambdaAPI(tb)
	env := s.Env()
	env["AWS_LAMBDA_FUNCTION_TIMEOUT"] = strconv.Itoa(int(timeout / time.Second))
	env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] = strconv.Itoa(memory)
	env["AWS_LAMBDA_FUNCTION_NAME"] = "stack-trigger"
	env["AWS_ENDPOINT_URL_LAMBDA"] = l.srv.URL
	f, err := emulatortest.StartLambda(emulatortest.BuildBootstrap(tb, filepath.Join("..", "trigger")), env)
	if err != nil {
		emulatortest.Unavailable(tb, err.Error())
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = f.Stop() })
	return &burst{s: s, trigger: f, lambda: l, slot: slot, targets: n, timeout: timeout, memory: memory}
}

// parallel runs do(0) … do(n-1), 32 at a time.
func parallel(tb testing.TB, n int, do func(i int)) {
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			do(i)
		})
	}
	wg.Wait()
}

// firing is what one firing of the slot did, continuations included.
type firing struct {
	invocations, sent int
	already           string
	wall, cpu         time.Duration
	// start is when the firing was invoked; first and last are when the
	// first and the last job batch went out.
	start, first, last time.Time
	calls              map[string]int
}

// lead is how long before its slot a batch sent at t was on the queue,
// had the firing started a minute before the slot, as the slot's
// schedule starts it.
func (f firing) lead(t time.Time) time.Duration { return time.Minute - t.Sub(f.start) }

// fire invokes the trigger with the slot's input as its schedule does,
// then with every continuation it asked for, one after the other.
func (b *burst) fire(tb testing.TB) firing {
	tb.Helper()
	b.s.Calls.Reset()
	input, _ := json.Marshal(map[string]string{"slot": b.slot.Format(time.RFC3339Nano), "scheduled_time": b.slot.Add(-time.Minute).Format(time.RFC3339)})
	var f firing
	cpu0 := childCPU(tb, b.trigger.PID())
	start := time.Now()
	f.start = start
	for queue := [][]byte{input}; len(queue) > 0; queue = append(queue[1:], b.lambda.take()...) {
		out, err := b.trigger.Invoke(context.Background(), queue[0])
		if err != nil {
			tb.Fatalf("trigger: %v\n%s", err, b.trigger.Output())
		}
		var res struct {
			Sent                    int
			Already                 string
			ErrorType, ErrorMessage string
		}
		if err := json.Unmarshal(out, &res); err != nil || res.ErrorType != "" {
			tb.Fatalf("trigger answered %s (%v)\n%s", out, err, b.trigger.Output())
		}
		f.invocations++
		f.sent += res.Sent
		f.already = res.Already
	}
	f.wall = time.Since(start)
	f.cpu = childCPU(tb, b.trigger.PID()) - cpu0
	f.first, f.last = b.s.Calls.Span("sqs.SendMessageBatch")
	f.calls = b.s.Calls.Snapshot()
	return f
}

// queued counts the publish queue's messages: visible, delayed, in flight.
func (b *burst) queued(tb testing.TB) int {
	tb.Helper()
	out, err := b.s.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(b.s.QueueURL),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		k, _ := strconv.Atoi(v)
		n += k
	}
	return n
}

// projectedWall is how long the firing would take at the template's
// memory: the CPU it used, at the vCPU share the memory buys, or the wall
// time measured here if longer (waiting on the emulators).
func (b *burst) projectedWall(f firing) time.Duration {
	share := math.Min(float64(b.memory)/lambdaVCPUMB, 1)
	return max(f.wall, time.Duration(float64(f.cpu)/share))
}

// check holds a firing to the targets: every job on the queue
// once, at least 10 s before the slot, within the trigger's timeout at
// the template's memory; then a retried firing sends nothing.
func (b *burst) check(tb testing.TB, f firing) {
	tb.Helper()
	if f.sent != b.targets {
		tb.Errorf("the firing sent %d jobs, want %d", f.sent, b.targets)
	}
	if lead := f.lead(f.last); lead < 10*time.Second {
		tb.Errorf("the last job went %s before its slot, want ≥ 10 s", lead)
	}
	if pw := b.projectedWall(f); pw > b.timeout*time.Duration(f.invocations) {
		tb.Errorf("%s CPU at %d MB is %s of wall time, over %d × the %s timeout", f.cpu, b.memory, pw, f.invocations, b.timeout)
	}
	again := b.fire(tb)
	if again.sent != 0 || again.already != "done" || again.calls["sqs.SendMessageBatch"] != 0 {
		tb.Errorf("the retried firing sent %d jobs (%d batches, already %q), want none", again.sent, again.calls["sqs.SendMessageBatch"], again.already)
	}
	if n := b.queued(tb); n != b.targets {
		tb.Errorf("the queue holds %d jobs for %d targets: %d duplicates", n, b.targets, n-b.targets)
	}
}

// TestBurstSlotOnceUnderTheRIE fires a slot of 2,500 targets (three
// pages) through the trigger function under the RIE at the template's
// timeout: every job on the queue once, well before the slot, and a
// retried firing sends nothing.
func TestBurstSlotOnceUnderTheRIE(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 2,500 posts and runs the trigger under the RIE")
	}
	b := newBurst(t, 100, 2500)
	f := b.fire(t)
	t.Logf("%d targets: %d invocation(s), %s wall, %s CPU (%s at %d MB), lead %s–%s, calls %v", f.sent, f.invocations,
		f.wall.Round(time.Millisecond), f.cpu, b.projectedWall(f).Round(time.Millisecond), b.memory,
		f.lead(f.last).Round(time.Millisecond), f.lead(f.first).Round(time.Millisecond), f.calls)
	b.check(t, f)
}

// awsLatency is the round trip the burst adds to every AWS call: the
// emulators answer from 127.0.0.1 in about a millisecond, an in-region
// DynamoDB or SQS call takes several (SendMessageBatch commonly 10–20 ms),
// and the trigger's time is mostly waiting on them.
const awsLatency = 10 * time.Millisecond

// BenchmarkTopOfHourBurst is the burst: a slot with 10,000
// targets over 1,000 accounts, fired by the trigger under the RIE at the
// template's timeout, onto fauxqs, from dynalite, every call 10 ms longer
// (awsLatency). It reports the wall and
// CPU time, the wall time the CPU makes at the template's memory, the
// earliest and latest job's lead over its slot, the calls, and the
// duplicates left by a retried firing (want 0). Run it with
// -benchtime 1x (make bench-burst): each iteration stores its slot anew.
func BenchmarkTopOfHourBurst(b *testing.B) {
	for range b.N {
		b.StopTimer()
		bu := newBurst(b, 1000, 10000)
		bu.s.Calls.SetLatency(awsLatency)
		b.StartTimer()
		f := bu.fire(b)
		b.StopTimer()
		b.ReportMetric(f.wall.Seconds(), "wall-s")
		b.ReportMetric(f.cpu.Seconds(), "cpu-s")
		b.ReportMetric(bu.projectedWall(f).Seconds(), "wall-at-template-memory-s")
		b.ReportMetric(f.lead(f.first).Seconds(), "lead-first-s")
		b.ReportMetric(f.lead(f.last).Seconds(), "lead-last-s")
		b.ReportMetric((time.Minute - bu.projectedWall(f)).Seconds(), "lead-last-at-template-memory-s")
		b.ReportMetric(float64(f.invocations), "invocations")
		for _, op := range []string{"sqs.SendMessageBatch", "dynamodb.Query", "dynamodb.BatchGetItem", "dynamodb.UpdateItem"} {
			b.ReportMetric(float64(f.calls[op]), strings.TrimPrefix(strings.TrimPrefix(op, "sqs."), "dynamodb.")+"-calls")
		}
		bu.check(b, f)
		b.ReportMetric(float64(bu.queued(b)-bu.targets), "duplicate-jobs")
		b.Logf("timeout %s, memory %d MB (%.2f vCPU), %s added to every AWS call", bu.timeout, bu.memory, math.Min(float64(bu.memory)/lambdaVCPUMB, 1), awsLatency)
	}
}

// BenchmarkPublisherBatch measures one publisher instance: a batch of ten
// jobs (ten posts due now, each to its own account, the sandbox answering
// at once) handed by the event source mapping to the publisher function
// under the RIE with the template's timeout and memory, every AWS call
// 10 ms longer (awsLatency). It reports per batch the mapping's whole
// round (receive, invoke, delete), the time from the invocation to the
// last of its creates reaching the platform, and the CPU, and what the CPU
// makes of them at the template's memory. docs/decisions.md (AWS runtime)
// turns these into the concurrency a burst of N posts at platform latency
// L needs.
func BenchmarkPublisherBatch(b *testing.B) {
	s := stacktest.New(b)
	const batch = 10
	accounts := make([]post.AccountID, batch)
	for i := range accounts {
		accounts[i] = post.AccountID(fmt.Sprintf("pub-%02d", i))
		s.AddAccount(b, accounts[i])
	}
	timeout, memory := functionLimits(b, "PublisherFunction")
	env := s.Env()
	env["AWS_LAMBDA_FUNCTION_TIMEOUT"] = strconv.Itoa(int(timeout / time.Second))
	env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] = strconv.Itoa(memory)
	f, err := emulatortest.StartLambda(emulatortest.BuildBootstrap(b, filepath.Join("..", "publisher")), env)
	if err != nil {
		emulatortest.Unavailable(b, err.Error())
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Stop() })
	esm := mapping(s, func(ev any) ([]byte, error) {
		in, err := json.Marshal(ev)
		if err != nil {
			return nil, err
		}
		return f.Invoke(context.Background(), in)
	})
	s.Calls.SetLatency(awsLatency)
	share := math.Min(float64(memory)/lambdaVCPUMB, 1)
	var round, toCreate, cpu time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		slot := time.Now().UTC().Add(-time.Second).Truncate(time.Second)
		var msgs []sqsqueue.Outgoing
		for k, a := range accounts {
			p := s.Schedule(b, post.ID(fmt.Sprintf("batch-%04d-%02d", i, k)), fmt.Sprintf("Batch %d, post %d.", i, k), slot, a)
			body, _ := json.Marshal(publishing.Job{Post: p.ID, Account: a, Slot: slot})
			msgs = append(msgs, sqsqueue.Outgoing{Body: body})
		}
		if _, err := s.Queue.SendBatch(context.Background(), msgs); err != nil {
			b.Fatal(err)
		}
		cpu0 := childCPU(b, f.PID())
		b.StartTimer()
		start := time.Now()
		res, err := esm.PollOnce(context.Background())
		elapsed := time.Since(start)
		b.StopTimer()
		if err != nil || res.Received != batch || res.Failed != 0 || res.InvokeErr != nil {
			b.Fatalf("batch %d: %+v, %v", i, res, err)
		}
		cpu += childCPU(b, f.PID()) - cpu0
		round += elapsed
		var last time.Time
		for _, a := range s.Sandbox.Accounts() {
			for _, st := range s.Sandbox.Statuses(a.ID) {
				if strings.HasPrefix(st.Text, fmt.Sprintf("Batch %d,", i)) && st.CreatedAt.After(last) {
					last = st.CreatedAt
				}
			}
		}
		toCreate += last.Sub(start)
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(round.Seconds()/n, "round-s/batch")
	b.ReportMetric(toCreate.Seconds()/n, "to-last-create-s/batch")
	b.ReportMetric(cpu.Seconds()/n, "cpu-s/batch")
	b.ReportMetric(max(round.Seconds(), cpu.Seconds()/share)/n, "round-at-template-memory-s/batch")
	b.Logf("timeout %s, memory %d MB (%.3f vCPU), %s added to every AWS call, %d jobs a batch", timeout, memory, share, awsLatency, batch)
}
