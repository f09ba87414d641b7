package localflow_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/clocktest"
	"oncepost/shared/localflow"
	"oncepost/shared/sqlitestore"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// call is one recorded invocation.
type call struct {
	Function string
	Payload  map[string]any
	At       time.Time
}

// fakeInvoker records invocations and answers with reply (default {}).
type fakeInvoker struct {
	clock *clocktest.Clock

	mu    sync.Mutex
	calls []call
	reply func(ctx context.Context, c call, n int) (any, error)
}

func (f *fakeInvoker) Invoke(ctx context.Context, fn string, payload json.RawMessage) (json.RawMessage, error) {
	var p map[string]any
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, err
	}
	c := call{Function: fn, Payload: p}
	if f.clock != nil {
		c.At = f.clock.Now()
	}
	f.mu.Lock()
	n := len(f.calls)
	f.calls = append(f.calls, c)
	reply := f.reply
	f.mu.Unlock()
	if reply == nil {
		return json.RawMessage(`{}`), nil
	}
	v, err := reply(ctx, c, n)
	if err != nil {
		return nil, err
	}
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	return json.Marshal(v)
}

func (f *fakeInvoker) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

// namedError has an ErrorName.
type namedError struct{ name, msg string }

func (e *namedError) Error() string     { return e.msg }
func (e *namedError) ErrorName() string { return e.name }

// PlatformUnavailable is named by its type.
type PlatformUnavailable struct{ Msg string }

func (e *PlatformUnavailable) Error() string { return e.Msg }

// openDB opens a fresh store in the test's temp dir and returns its write
// pool and path.
func openDB(t testing.TB) (*sql.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.db")
	return openDBAt(t, path), path
}

func openDBAt(t testing.TB, path string) *sql.DB {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path, sqlitestore.Options{})
	if err != nil {
		t.Fatalf("sqlitestore.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s.DB()
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// harness is one engine on a fresh database with a fake clock and invoker.
type harness struct {
	t     *testing.T
	db    *sql.DB
	clock *clocktest.Clock
	inv   *fakeInvoker
	m     *localflow.Machine
	e     *localflow.Engine
}

func newHarness(t *testing.T, def string) *harness {
	t.Helper()
	m, err := localflow.Load([]byte(def), nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return newHarnessFor(t, m)
}

func newHarnessFor(t *testing.T, m *localflow.Machine) *harness {
	t.Helper()
	db, _ := openDB(t)
	h := &harness{t: t, db: db, clock: clocktest.New(t0), m: m}
	h.inv = &fakeInvoker{clock: h.clock}
	h.e = h.engine(m, h.inv, "test")
	return h
}

func (h *harness) engine(m *localflow.Machine, inv localflow.Invoker, owner string) *localflow.Engine {
	h.t.Helper()
	e, err := localflow.New(context.Background(), h.db, m, localflow.Options{Now: h.clock.Now, Invoker: inv, Logger: quietLogger(), Owner: owner})
	if err != nil {
		h.t.Fatalf("New: %v", err)
	}
	return e
}

func (h *harness) start(name, input string) {
	h.t.Helper()
	if err := h.e.Start(context.Background(), name, json.RawMessage(input)); err != nil {
		h.t.Fatalf("Start(%s): %v", name, err)
	}
}

func (h *harness) runDue() int {
	h.t.Helper()
	n, err := h.e.RunDue(context.Background())
	if err != nil {
		h.t.Fatalf("RunDue: %v", err)
	}
	return n
}

func (h *harness) describe(name string) localflow.Execution {
	h.t.Helper()
	ex, err := h.e.Describe(context.Background(), name)
	if err != nil {
		h.t.Fatalf("Describe(%s): %v", name, err)
	}
	return ex
}

// jsonEqual compares two JSON documents semantically.
func jsonEqual(t *testing.T, want string, got json.RawMessage) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got %s: %v", got, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}
