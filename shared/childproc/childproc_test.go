package childproc

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// OnFreePorts starts again only after a taken port, at most 3 times, with
// new ports each time.
func TestOnFreePorts(t *testing.T) {
	other := errors.New("bootstrap missing")
	for _, tc := range []struct {
		name      string
		fails     []error // start's error on each call; nil succeeds
		wantCalls int
		wantErr   error
	}{
		{"first start", []error{nil}, 1, nil},
		{"taken, then started", []error{ErrPortTaken, nil}, 2, nil},
		{"taken every time", []error{ErrPortTaken, ErrPortTaken, ErrPortTaken, nil}, 3, ErrPortTaken},
		{"another failure is not retried", []error{other, nil}, 1, other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen [][]int
			next := 1000
			pick := func() (int, error) { next++; return next, nil }
			got, err := OnFreePorts(2, pick, func(ports []int) (string, error) {
				seen = append(seen, ports)
				if e := tc.fails[len(seen)-1]; e != nil {
					return "", fmt.Errorf("start: %w", e)
				}
				return "up", nil
			})
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Errorf("error = %v, want %v", err, tc.wantErr)
			}
			if err == nil && got != "up" {
				t.Errorf("value = %q, want up", got)
			}
			var want [][]int
			for i := range tc.wantCalls {
				want = append(want, []int{1001 + 2*i, 1002 + 2*i})
			}
			if diff := cmp.Diff(want, seen); diff != "" {
				t.Errorf("ports per start (-want +got):\n%s", diff)
			}
		})
	}
}

// Output keeps the last bytes written, says so when it dropped some, and
// finds a line by its start and a string anywhere in what it kept.
func TestOutput(t *testing.T) {
	w := NewOutput(18)
	for _, b := range []string{"starting\n", "ready port=1\r\n", "more"} {
		if n, err := w.Write([]byte(b)); err != nil || n != len(b) {
			t.Fatalf("Write(%q) = %d, %v", b, n, err)
		}
	}
	type got struct {
		Line             string
		Found, Contains  bool
		Starting, String string
	}
	line, found := w.Line("ready ")
	_, starting := w.Line("starting")
	g := got{Line: line, Found: found, Contains: w.Contains("port=1"), String: w.String()}
	if starting {
		g.Starting = "starting is still kept"
	}
	want := got{Line: "ready port=1", Found: true, Contains: true, String: "… ready port=1\r\nmore"}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if s := NewOutput(8).String(); s != "(no output)" {
		t.Errorf("String of nothing = %q, want (no output)", s)
	}
}

// FreePort gives a port of 127.0.0.1 a child can listen on.
func TestFreePort(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("listen on the free port %d: %v", port, err)
	}
	l.Close()
}
