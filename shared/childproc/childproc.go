// Package childproc is what the project's local servers have in common
// when they run as child processes (the AWS emulators and the Lambda
// Runtime Interface Emulator for tests, the Bluesky reference PDS for
// tests and for `oncepost chaos --platform bluesky`): ports of 127.0.0.1
// picked free, and picked again when one was taken before the child
// listened; and the child's output kept, for its readiness line and for
// errors. Each launcher stops its own child by PID.
//
// It imports no testing package, so the oncepost binary may link it; the
// test helpers (shared/emulatortest, shared/pdstest) build on it.
package childproc

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
)

// FreePort returns a TCP port of 127.0.0.1 that was free a moment ago
// (for a child process that needs its port on its command line).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ErrPortTaken marks a start that failed because a port was taken between
// picking it and the child's listen (by another process's connection: the
// tests of many packages run side by side).
var ErrPortTaken = errors.New("port taken")

// OnFreePorts calls start with n ports from pick (FreePort, or a test's),
// and again with new ones, up to 3 times in all, while start fails with
// an error wrapping ErrPortTaken. It is for a child process that must be
// given its ports on its command line, so cannot be handed a listener.
func OnFreePorts[T any](n int, pick func() (int, error), start func(ports []int) (T, error)) (T, error) {
	var zero T
	var last error
	for range 3 {
		ports := make([]int, n)
		for i := range ports {
			port, err := pick()
			if err != nil {
				return zero, fmt.Errorf("pick a port: %w", err)
			}
			ports[i] = port
		}
		v, err := start(ports)
		if err == nil {
			return v, nil
		}
		last = err
		if !errors.Is(err, ErrPortTaken) {
			break
		}
	}
	return zero, last
}

// Output keeps the last bytes a child process writes (its stdout and
// stderr), for its readiness line and for errors; safe for concurrent use.
type Output struct {
	mu  sync.Mutex
	max int
	buf []byte
	cut bool
}

// NewOutput keeps the last max bytes.
func NewOutput(max int) *Output { return &Output{max: max} }

func (w *Output) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	if over := len(w.buf) - w.max; over > 0 {
		w.buf = bytes.Clone(w.buf[over:])
		w.cut = true
	}
	return len(b), nil
}

// Line returns the first kept line that starts with prefix.
func (w *Output) Line(prefix string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range strings.Split(string(w.buf), "\n") {
		if strings.HasPrefix(l, prefix) {
			return strings.TrimRight(l, "\r"), true
		}
	}
	return "", false
}

// Contains reports whether s was written (and is still kept).
func (w *Output) Contains(s string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Contains(w.buf, []byte(s))
}

// String is what is kept, trimmed; "(no output)" when nothing is, and
// starting with "… " when earlier bytes were dropped.
func (w *Output) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := strings.TrimSpace(string(w.buf))
	switch {
	case s == "":
		return "(no output)"
	case w.cut:
		return "… " + s
	}
	return s
}
