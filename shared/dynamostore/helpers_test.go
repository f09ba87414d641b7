package dynamostore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// env is one dynalite for a top-level test, and the clients and tables
// made on it.
type env struct {
	endpoint string
	admin    *dynamodb.Client
}

// newEnv starts dynalite (emulatortest) for t.
func newEnv(t *testing.T) *env {
	t.Helper()
	endpoint := startDynalite(t)
	return &env{endpoint: endpoint, admin: dynamodb.NewFromConfig(awsConfig(t, endpoint))}
}

// client returns a new DynamoDB client (its own HTTP connections) on the
// env's dynalite, recording its calls in rec if rec is not nil.
func (e *env) client(t *testing.T, rec *recorder) *dynamodb.Client {
	t.Helper()
	cfg := awsConfig(t, e.endpoint)
	if rec != nil {
		rec.next = cfg.HTTPClient
		if rec.next == nil {
			rec.next = awshttp.NewBuildableClient()
		}
		cfg.HTTPClient = rec
	}
	return dynamodb.NewFromConfig(cfg)
}

var prefixes atomic.Int64

// newPrefix is a table prefix no other test uses.
func newPrefix() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("t%d-%s-", prefixes.Add(1), hex.EncodeToString(b[:]))
}

// tables creates the named tables (all four when none is named) under a
// new prefix and returns the prefix.
func (e *env) tables(t *testing.T, names ...string) string {
	t.Helper()
	prefix := newPrefix()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := CreateTables(ctx, e.admin, prefix, names...); err != nil {
		t.Fatal(err)
	}
	return prefix
}

// pool makes tables ahead of need, 8 sets at a time, for the conformance
// suites, which want a fresh store for each of dozens of checks (dynalite
// keeps a new table CREATING for half a second).
func (e *env) pool(t *testing.T, names ...string) func(t *testing.T) string {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 8)
	failed := make(chan error, 1)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				prefix := newPrefix()
				if err := CreateTables(ctx, e.admin, prefix, names...); err != nil {
					if ctx.Err() == nil {
						select {
						case failed <- err:
						default:
						}
					}
					return
				}
				select {
				case ready <- prefix:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return func(t *testing.T) string {
		t.Helper()
		select {
		case p := <-ready:
			return p
		case err := <-failed:
			t.Fatalf("create tables: %v", err)
		case <-time.After(time.Minute):
			t.Fatal("no tables after a minute")
		}
		return ""
	}
}

// store opens a Store on prefix with a client of its own.
func (e *env) store(t *testing.T, prefix string, rec *recorder, opts Options) *Store {
	t.Helper()
	opts.Prefix = prefix
	s, err := New(e.client(t, rec), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// suiteEpoch is a little before the instants the conformance suites use
// (March 2026). The suites' terminal entries expire 90 days after their
// moves, in June 2026, which the wall clock has passed: a store on the
// wall clock would rightly treat them as deleted (their TTL passed).
// suiteClock runs from suiteEpoch, as a store running when the suites'
// times were "now" would see.
var suiteEpoch = time.Date(2026, time.March, 14, 9, 0, 0, 0, time.UTC)

func suiteClock() func() time.Time {
	start := time.Now()
	return func() time.Time { return suiteEpoch.Add(time.Since(start)) }
}

// fixedClock is a settable clock.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fixedClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// call is one recorded DynamoDB request: its operation (X-Amz-Target
// without the service) and its JSON body.
type call struct {
	Op   string
	Body map[string]any
	// Error is the body of an error answer (status ≥ 400), "" otherwise.
	Error string
}

// recorder is an aws.HTTPClient that records every request's
// X-Amz-Target and body before passing it on.
type recorder struct {
	next  aws.HTTPClient
	mu    sync.Mutex
	calls []call
}

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	c := call{Op: req.Header.Get("X-Amz-Target")}
	if _, op, ok := strings.Cut(c.Op, "."); ok {
		c.Op = op
	}
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		_ = json.Unmarshal(b, &c.Body)
	}
	resp, err := r.next.Do(req)
	if err == nil && resp.StatusCode >= 400 {
		b, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr != nil {
			return nil, rerr
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		c.Error = string(b)
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	return resp, err
}

// take returns the calls recorded since the last take.
func (r *recorder) take() []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.calls
	r.calls = nil
	return out
}

// ops lists the calls' operations.
func ops(calls []call) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.Op
	}
	return out
}
