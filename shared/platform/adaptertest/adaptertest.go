// Package adaptertest is test support for the platform adapters' own tests
// (x, threads, discord, telegram, linkedin, bluesky) and for httpcall's:
// the scaffolding they all need and that has nothing of a platform in it.
// It is imported by _test.go files only, never by production code.
//
//   - LocalServer, LocalListener, ClosedURL and ClosedAddr start the fakes
//     on 127.0.0.1 and name an address nothing listens on; HTTPClient is a
//     client that shares no connection with other tests; HijackClose
//     drops a connection without an answer; WriteJSON writes a fake's
//     answer.
//   - Outcome, OutcomeOf and DetailedOutcomeOf reduce an error to its
//     failure class (platform.Rejected, NotPerformed, Unauthorized,
//     Ambiguous, Inconclusive) and fields, for cmp, and fail the test when
//     an error is of no class or of more than one.
//   - Errors collects the errors of a test or of a whole run and searches
//     them for secrets (CheckErrorNoSecrets searches one error); Main does
//     that for every error of the run, from a package's TestMain.
//   - CheckNewError is the assertion of the tables that feed an adapter's
//     New valid and invalid configurations.
//
// What is particular to one platform (its fake, its error bodies, its
// Content-Type, its secrets, its client) stays in that adapter's tests.
package adaptertest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// LocalListener listens on a free port of 127.0.0.1, failing the test when
// it cannot. The caller closes it (an httptest.Server does on Close).
func LocalListener(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	return ln
}

// LocalServer starts an httptest server for h on a free port of
// 127.0.0.1 (IPv4 even where httptest would fall back to ::1) and closes
// it when the test ends.
func LocalServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close() // the one httptest opened, replaced by ours
	srv.Listener = LocalListener(t)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// ClosedAddr is the host:port of a listener on 127.0.0.1 that has been
// closed again, so that connecting to it is refused: a request to it is
// certainly not sent.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	ln := LocalListener(t)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// ClosedURL is ClosedAddr as an http:// base URL.
func ClosedURL(t testing.TB) string {
	t.Helper()
	return "http://" + ClosedAddr(t)
}

// HTTPClient is an HTTP client with a transport of its own, so that tests
// share no keep-alive connections; its idle connections are closed when
// the test ends.
func HTTPClient(t testing.TB) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// HijackClose takes the connection from the server and closes it without
// an answer, as a crashed or restarted server, or a dropped connection,
// would. It reports a failed hijack with t.Errorf, as it runs in a
// handler's goroutine.
func HijackClose(t testing.TB, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	conn.Close()
}

// WriteJSON answers with status and v encoded as JSON. The Content-Type is
// application/json unless the handler has set one already (a platform
// that sends a charset sets its own first). It panics when v cannot be
// encoded: that is a mistake in the test's fake.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		panic(fmt.Sprintf("encode: %v", err))
	}
}

// CheckNewError checks the error an adapter's New returned for one row of
// a configuration table: with field "" the configuration is valid and err
// must be nil; otherwise err must name field (e.g. "BaseURL"). It stops
// the test (t.Fatalf) on a mismatch.
func CheckNewError(t testing.TB, err error, field string) {
	t.Helper()
	switch {
	case field == "" && err != nil:
		t.Fatalf("New: %v", err)
	case field != "" && err == nil:
		t.Fatalf("New succeeded, want an error naming %s", field)
	case field != "" && !strings.Contains(err.Error(), field):
		t.Fatalf("New error %q does not name %s", err, field)
	}
}
