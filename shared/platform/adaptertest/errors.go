package adaptertest

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// Errors collects errors for the check that no secret (a token, a client
// secret, an authorization code) appears in any of them. It keeps each
// error as the texts it can be written out as: Error(), %+v and %#v. The
// zero value is ready to use; it is safe for concurrent use and must not
// be copied. A package-level Errors filled by every test and searched by
// Main covers the whole run; a local one covers one test.
type Errors struct {
	mu    sync.Mutex
	n     int
	texts []string
}

// Add records err (nil is ignored) and returns it, so that it can wrap a
// call's result: seen.Add(err).
func (e *Errors) Add(err error) error {
	if err == nil {
		return nil
	}
	texts := errorTexts(err)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	e.texts = append(e.texts, texts...)
	return err
}

// Len is the number of errors added.
func (e *Errors) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

// Texts are the texts of every error added (three an error), in order.
func (e *Errors) Texts() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.texts...)
}

// CheckNoSecrets fails the test (t.Errorf) for every text of an added
// error that carries one of secrets.
func (e *Errors) CheckNoSecrets(t testing.TB, secrets ...string) {
	t.Helper()
	for _, leak := range leaks(e.Texts(), secrets) {
		t.Error(leak)
	}
}

// CheckErrorNoSecrets fails the test (t.Errorf) when a text of err carries
// one of secrets; nil passes.
func CheckErrorNoSecrets(t testing.TB, err error, secrets ...string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, leak := range leaks(errorTexts(err), secrets) {
		t.Error(leak)
	}
}

// Main runs the package's tests and then searches every error collected
// in e for secrets; it returns the exit code for os.Exit:
//
//	func TestMain(m *testing.M) { os.Exit(adaptertest.Main(m, &seen, secrets, 20)) }
//
// Any secret in any error fails the run, whatever else happened. When the
// tests passed, fewer than minErrors errors fail it too: the floor guards
// against a check that silently collects nothing. It applies to a full run
// only, not to one narrowed by -run or -skip (which collects fewer) nor to
// -list (which runs nothing).
func Main(m *testing.M, e *Errors, secrets []string, minErrors int) int {
	code := m.Run()
	for _, leak := range leaks(e.Texts(), secrets) {
		fmt.Fprintf(os.Stderr, "FAIL: %s\n", leak)
		code = 1
	}
	if n := e.Len(); code == 0 && n < minErrors && !narrowed() {
		fmt.Fprintf(os.Stderr, "FAIL: only %d errors were collected for the secret check, want at least %d\n", n, minErrors)
		code = 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "searched %d errors for %d secrets\n", e.Len(), len(secrets))
	}
	return code
}

// narrowed reports whether the run was limited to some tests, or only
// listed them.
func narrowed() bool {
	for _, name := range []string{"test.run", "test.skip", "test.list"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return true
		}
	}
	return false
}

// errorTexts are the ways err can be written out.
func errorTexts(err error) []string {
	return []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)}
}

// leaks describes each text that carries one of secrets.
func leaks(texts, secrets []string) []string {
	var out []string
	for _, text := range texts {
		for _, s := range secrets {
			if s != "" && strings.Contains(text, s) {
				out = append(out, fmt.Sprintf("error %q carries the secret %q", text, s))
			}
		}
	}
	return out
}
