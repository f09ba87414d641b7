package dynamostore

// make bench-aws: this store's ledger against Powertools for AWS Lambda
// (TypeScript) idempotency (npm @aws-lambda-powertools/idempotency, run by
// infra/emulators/powertools-harness.mjs), side by side on the same
// dynalite, both through the counting proxy (powertools_procs_test.go):
//
//   - DynamoDB calls per new key: requests the proxy counted, by operation;
//   - client CPU per call: the client process's user + system CPU time
//     (getrusage here, process.cpuUsage in Node) over the run, divided by
//     the calls; neither the proxy nor dynalite is in it;
//   - new keys per second, sequentially and 16 at a time;
//   - the side-effect counter after a timeout thrown after the side effect
//     and after a process killed after it (powertools_scenarios_test.go).
//
// A new key is the ledger's happy path: Create (a conditional PutItem of a
// pending entry), the side effect, Update (a conditional UpdateItem
// pending → confirmed), as Publish writes it; on the Powertools side, a
// makeIdempotent handler whose side effect is a counter. Both side effects
// are a counter in the client process, so the runs measure the
// idempotency layers and nothing else.

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/publishing"
)

// Sides of the comparison, as the benchmarks name them.
const (
	sideOncepost   = "oncepost"
	sidePowertools = "powertools"
)

// benchConcurrencies are the runs of each side: sequential, and 16 at a time.
var benchConcurrencies = []int{1, 16}

// benchWarmUpKeys are written by each side before anything is measured (JIT,
// connection pools, first table pages).
const benchWarmUpKeys = 300

// benchRun is one measured run of new keys.
type benchRun struct {
	keys    int
	elapsed time.Duration
	// cpu is the client process's user + system CPU time over the run.
	cpu time.Duration
	// calls counts the DynamoDB requests of the run, by operation.
	calls map[string]int
	// requestBytes is the size of their bodies.
	requestBytes int
}

func (r benchRun) totalCalls() int {
	n := 0
	for _, c := range r.calls {
		n += c
	}
	return n
}

func (r benchRun) callsPerKey() float64 { return float64(r.totalCalls()) / float64(r.keys) }

func (r benchRun) cpuPerCall() time.Duration {
	if r.totalCalls() == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.totalCalls())
}

func (r benchRun) keysPerSecond() float64 { return float64(r.keys) / r.elapsed.Seconds() }

// idempotencySide writes new keys through one side's idempotency layer.
type idempotencySide interface {
	// newKeys writes keys new keys, concurrency at a time, and measures
	// the run's wall-clock and client CPU time (calls are counted by the
	// caller, at the proxy).
	newKeys(tb testing.TB, keys, concurrency int) benchRun
}

// ledgerSide is this store's ledger: a Store on its own tables, through
// the proxy, in this process.
type ledgerSide struct {
	store       *Store
	runs        atomic.Int64
	sideEffects atomic.Int64
	slot        time.Time
	fingerprint string
}

func newLedgerSide(tb testing.TB, env *benchEnv) *ledgerSide {
	tb.Helper()
	prefix := newPrefix()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := CreateTables(ctx, env.admin, prefix, LedgerTable); err != nil {
		tb.Fatal(err)
	}
	s, err := New(env.client(tb), Options{Prefix: prefix})
	if err != nil {
		tb.Fatal(err)
	}
	return &ledgerSide{store: s, slot: time.Now().UTC().Truncate(time.Second), fingerprint: platform.Fingerprint(benchPostText, nil)}
}

// newKey is one new key: Create pending, the side effect, Update to
// confirmed — what Publish writes around a create that succeeds.
func (l *ledgerSide) newKey(ctx context.Context, runID string, i int) error {
	subject := fmt.Sprintf("%s-%d", runID, i)
	e := ledger.NewEntry(ledger.PublishKey("bench", subject, l.slot), ledger.Publish, "bench", subject, l.slot, l.fingerprint, "bench-worker", time.Now(), 2*time.Minute)
	if err := l.store.Create(ctx, e); err != nil {
		return err
	}
	n := l.sideEffects.Add(1)
	next, err := e.Confirm(fmt.Sprintf("remote-%d", n), time.Now())
	if err != nil {
		return err
	}
	return l.store.Update(ctx, e, next)
}

func (l *ledgerSide) newKeys(tb testing.TB, keys, concurrency int) benchRun {
	tb.Helper()
	ctx := context.Background()
	runID := fmt.Sprintf("r%d", l.runs.Add(1))
	before := l.sideEffects.Load()
	var (
		next     atomic.Int64
		errOnce  sync.Once
		firstErr error
		wg       sync.WaitGroup
	)
	cpu0 := processCPU(tb)
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= keys {
					return
				}
				if err := l.newKey(ctx, runID, i); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	r := benchRun{keys: keys, elapsed: time.Since(start), cpu: processCPU(tb) - cpu0}
	if firstErr != nil {
		tb.Fatalf("oncepost ledger, %d new keys: %v", keys, firstErr)
	}
	if n := l.sideEffects.Load() - before; n != int64(keys) {
		tb.Fatalf("oncepost ledger: %d side effects for %d new keys", n, keys)
	}
	return r
}

// processCPU is this process's user + system CPU time so far.
func processCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// powertoolsSide is the Node harness on a Powertools table.
type powertoolsSide struct {
	harness *powertoolsHarness
	runs    int
}

func newPowertoolsSide(tb testing.TB, env *benchEnv) *powertoolsSide {
	tb.Helper()
	return &powertoolsSide{harness: startPowertoolsHarness(tb, env.proxy.endpoint, env.powertoolsTable(tb))}
}

func (p *powertoolsSide) newKeys(tb testing.TB, keys, concurrency int) benchRun {
	tb.Helper()
	p.runs++
	a := p.harness.bench(tb, keys, concurrency, fmt.Sprintf("r%d", p.runs))
	return benchRun{
		keys:    keys,
		elapsed: time.Duration(a.ElapsedMS * float64(time.Millisecond)),
		cpu:     time.Duration(a.CPUMicros * float64(time.Microsecond)),
	}
}

// measureNewKeys runs keys new keys on side and counts their calls at the proxy.
// Both sides must make exactly one PutItem and one UpdateItem per new key:
// more on oncepost's side misses the target (≤ 2 calls per key), another
// count on Powertools' side means it is not doing what the comparison says.
func measureNewKeys(tb testing.TB, env *benchEnv, side idempotencySide, keys, concurrency int) benchRun {
	tb.Helper()
	before := env.proxy.counts(tb)
	r := side.newKeys(tb, keys, concurrency)
	counted := env.proxy.counts(tb).since(before)
	r.calls, r.requestBytes = counted.Calls.byOp(), counted.RequestBytes.total()
	if diff := cmp.Diff(map[string]int{"PutItem": keys, "UpdateItem": keys}, r.calls); diff != "" {
		tb.Errorf("DynamoDB calls of %d new keys (-want +got):\n%s", keys, diff)
	}
	return r
}

// BenchmarkLedgerVsPowertools is make bench-aws: the side-effect scenarios
// once, then for each concurrency a run of b.N new keys on each side
// (sub-benchmarks oncepost/… and powertools/…, with the metrics
// calls/key, cpu-us/call and keys/s), then the comparison table on stdout.
func BenchmarkLedgerVsPowertools(b *testing.B) {
	env := newBenchEnv(b)
	sideEffects := runSideEffectScenarios(b, env)
	publishCalls := publishPathCalls(b, env)

	sides := map[string]idempotencySide{sideOncepost: newLedgerSide(b, env), sidePowertools: newPowertoolsSide(b, env)}
	for _, name := range []string{sideOncepost, sidePowertools} {
		for _, c := range benchConcurrencies {
			sides[name].newKeys(b, benchWarmUpKeys, c)
		}
	}
	runs := map[string]map[int]benchRun{sideOncepost: {}, sidePowertools: {}}
	for _, c := range benchConcurrencies {
		for _, name := range []string{sideOncepost, sidePowertools} {
			b.Run(fmt.Sprintf("%s/concurrency=%d", name, c), func(b *testing.B) {
				r := measureNewKeys(b, env, sides[name], b.N, c)
				b.ReportMetric(r.callsPerKey(), "calls/key")
				b.ReportMetric(float64(r.cpuPerCall().Nanoseconds())/1e3, "cpu-us/call")
				b.ReportMetric(r.keysPerSecond(), "keys/s")
				runs[name][c] = r
			})
		}
	}
	if b.Failed() {
		return
	}
	writeComparison(os.Stdout, runs, sideEffects, publishCalls)
}

// publishCallCounts are the DynamoDB calls of one Publish, by operation: all of
// them, and those on the ledger table.
type publishCallCounts struct {
	all, ledger map[string]int
}

// publishPathCalls counts the DynamoDB calls of one Publish of a new post
// whose create succeeds: the whole use case, for the table's footnote.
func publishPathCalls(tb testing.TB, env *benchEnv) publishCallCounts {
	tb.Helper()
	f := newOnceFixture(tb, env)
	job := f.schedule(tb, "happy-path")
	pub := f.publisher("worker-1", 10*time.Second, 2*time.Second, time.Minute)
	before := env.proxy.calls(tb)
	if out := publishJob(tb, pub, job); out.Result != publishing.Published {
		tb.Fatalf("publish of a new post = %+v, want published", out)
	}
	calls := env.proxy.calls(tb).since(before)
	return publishCallCounts{all: calls.byOp(), ledger: calls.onTable(f.prefix + LedgerTable)}
}

// writeComparison prints the table make bench-aws ends with.
func writeComparison(w io.Writer, runs map[string]map[int]benchRun, sideEffects map[[2]string]int, publishCalls publishCallCounts) {
	once, pt := runs[sideOncepost], runs[sidePowertools]
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintf(tw, "\nmake bench-aws: %d new keys per run, same dynalite, every call through one counting proxy\n", once[1].keys)
	fmt.Fprintln(tw, "\toncepost ledger (Go)\tPowertools idempotency (Node 22)\t")
	fmt.Fprintf(tw, "DynamoDB calls per new key\t%.2f (%s)\t%.2f (%s)\t\n",
		once[1].callsPerKey(), describeOps(once[1].calls, float64(once[1].keys)), pt[1].callsPerKey(), describeOps(pt[1].calls, float64(pt[1].keys)))
	fmt.Fprintf(tw, "request bytes per new key\t%d\t%d\t\n", once[1].requestBytes/once[1].keys, pt[1].requestBytes/pt[1].keys)
	for _, c := range benchConcurrencies {
		fmt.Fprintf(tw, "client CPU per call, %s\t%.0f µs\t%.0f µs (%.1f× oncepost's)\t\n", concurrencyName(c),
			microseconds(once[c].cpuPerCall()), microseconds(pt[c].cpuPerCall()), float64(pt[c].cpuPerCall())/float64(once[c].cpuPerCall()))
	}
	for _, c := range benchConcurrencies {
		fmt.Fprintf(tw, "new keys per second, %s\t%.0f\t%.0f\t\n", concurrencyName(c), once[c].keysPerSecond(), pt[c].keysPerSecond())
	}
	fmt.Fprintf(tw, "side effects after a timeout thrown after it\t%d\t%d\t\n", sideEffects[[2]string{sideOncepost, "timeout"}], sideEffects[[2]string{sidePowertools, "timeout"}])
	fmt.Fprintf(tw, "side effects after a SIGKILL after it\t%d\t%d\t\n", sideEffects[[2]string{sideOncepost, "kill"}], sideEffects[[2]string{sidePowertools, "kill"}])
	tw.Flush()
	total := 0
	for _, n := range publishCalls.all {
		total += n
	}
	fmt.Fprintf(w, "\nFor reference, one Publish of a new post (the whole use case) made %d DynamoDB calls (%s); on the ledger table: %s.\n",
		total, describeOps(publishCalls.all, 1), describeOps(publishCalls.ledger, 1))
	fmt.Fprintln(w, "CPU is a Go process against a Node process, each with its SDK's defaults; keys/s is bound by the one dynalite both share.")
	fmt.Fprintf(w, "targets: ≤ 2 calls per key: %s; ≥ 4× less client CPU: %s; side effect once after both faults: %s\n",
		targetVerdict(once[1].callsPerKey() <= 2 && once[16].callsPerKey() <= 2),
		targetVerdict(pt[1].cpuPerCall() >= 4*once[1].cpuPerCall() && pt[16].cpuPerCall() >= 4*once[16].cpuPerCall()),
		targetVerdict(sideEffects[[2]string{sideOncepost, "timeout"}] == 1 && sideEffects[[2]string{sideOncepost, "kill"}] == 1))
}

// concurrencyName names a run's concurrency in the table.
func concurrencyName(c int) string {
	if c == 1 {
		return "sequential"
	}
	return fmt.Sprintf("concurrency %d", c)
}

// microseconds is d in µs.
func microseconds(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// targetVerdict says whether a target was met.
func targetVerdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// TestLedgerVsPowertools is the part of make bench-aws that make test
// checks: the four side-effect scenarios (oncepost's counter 1, Powertools'
// 2) and the calls of a few new keys on each side (one PutItem and one
// UpdateItem per key), on one dynalite.
func TestLedgerVsPowertools(t *testing.T) {
	env := newBenchEnv(t)
	runSideEffectScenarios(t, env)
	for _, tc := range []struct {
		name string
		side func(testing.TB, *benchEnv) idempotencySide
	}{
		{sideOncepost, func(tb testing.TB, env *benchEnv) idempotencySide { return newLedgerSide(tb, env) }},
		{sidePowertools, func(tb testing.TB, env *benchEnv) idempotencySide { return newPowertoolsSide(tb, env) }},
	} {
		t.Run(tc.name+"/calls per new key", func(t *testing.T) {
			side := tc.side(t, env)
			for _, c := range benchConcurrencies {
				r := measureNewKeys(t, env, side, 20, c)
				if r.callsPerKey() > 2 {
					t.Errorf("concurrency %d: %.2f calls per new key (%v), want ≤ 2", c, r.callsPerKey(), r.calls)
				}
			}
		})
	}
}
