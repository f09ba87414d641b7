package pipeline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"oncepost/shared/awsruntime/stacktest"
	"oncepost/shared/emulatortest"
)

// initDuration is the RIE's report of a function's init phase, from the
// runtime's start to its first call for an event ("INIT REPORT(durationMs:
// 13.80)"; the REPORT line's "Init Duration" field of the RIE is not it).
var initDuration = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)

// maxBootstrapBytes is the size budget of a function's binary as the
// Makefile builds it for Lambda (linux/arm64, stripped).
const maxBootstrapBytes = 15 << 20

// maxAPIBootstrapBytes is the api function's: it carries the whole HTTP
// API besides the use cases (its OpenAPI document embedded, the draft
// check, image verification), and it is not on the publish path (no
// post waits on its cold start); its init is measured by
// functions/api's BenchmarkAPIFunctionInit.
const maxAPIBootstrapBytes = 16 << 20

// TestBootstrapSize builds every function with its Makefile target, as
// `sam build` does (linux/arm64, CGO off, lambda.norpc, -trimpath,
// stripped), and checks its size: the bytes Lambda downloads and maps on
// a cold start.
func TestBootstrapSize(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-builds five functions")
	}
	for _, name := range []string{"Trigger", "Publisher", "Confirm", "Sweeper", "Api"} {
		dir := t.TempDir()
		cmd := exec.Command("make", "-s", "build-"+name+"Function", "ARTIFACTS_DIR="+dir)
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make build-%sFunction: %v\n%s", name, err, out)
		}
		fi, err := os.Stat(filepath.Join(dir, "bootstrap"))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: bootstrap %.1f MB", name, float64(fi.Size())/(1<<20))
		budget := int64(maxBootstrapBytes)
		if name == "Api" {
			budget = maxAPIBootstrapBytes
		}
		if fi.Size() > budget {
			t.Errorf("%s: bootstrap is %d bytes, over the %d budget", name, fi.Size(), budget)
		}
	}
}

// BenchmarkPublisherColdStart starts the publisher under the RIE b.N times
// and reports its init phase (reading the environment, loading the AWS
// configuration, building the store, queue and workflow clients), as the
// RIE measures it. Target: init ≤ 50 ms. (The size of the bootstrap is
// TestBootstrapSize's.)
func BenchmarkPublisherColdStart(b *testing.B) {
	s := stacktest.New(b)
	bootstrap := emulatortest.BuildBootstrap(b, filepath.Join("..", "publisher"))
	var total time.Duration
	for b.Loop() {
		f, err := emulatortest.StartLambda(bootstrap, s.Env())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Invoke(context.Background(), []byte(`{"Records":[]}`)); err != nil {
			b.Fatal(err)
		}
		m := initDuration.FindStringSubmatch(f.Output())
		_ = f.Stop()
		if m == nil {
			b.Fatalf("no Init Duration in the RIE's output:\n%s", f.Output())
		}
		ms, _ := strconv.ParseFloat(m[1], 64)
		total += time.Duration(ms * float64(time.Millisecond))
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "init-ms")
}
