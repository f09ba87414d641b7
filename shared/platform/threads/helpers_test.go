package threads

import (
	"context"
	"net/http"
	"testing"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/adaptertest"
)

// The shared test scaffolding (adaptertest), by the names this package's
// tests use.
var (
	newServer  = adaptertest.LocalServer
	refusedURL = adaptertest.ClosedURL
)

// outcome is an error reduced to its failure class and fields, for cmp.
type outcome = adaptertest.Outcome

// newClient returns a client for baseURL acting as fakeUserID with
// fakeToken, with its own transport (no keep-alive shared between tests),
// a fixed clock and fast read backoff.
func newClient(t *testing.T, baseURL string, edit ...func(*Config)) *Client {
	t.Helper()
	cfg := Config{
		BaseURL:    baseURL,
		UserID:     fakeUserID,
		Credential: platform.Credential{AccessToken: fakeToken},
		HTTPClient: adaptertest.HTTPClient(t),
	}
	for _, e := range edit {
		e(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.now = func() time.Time { return fixedNow }
	c.hc.Now = c.now
	c.hc.ReadBackoff = time.Millisecond
	c.poll = pollConfig{first: time.Millisecond, max: 2 * time.Millisecond, budget: 5 * time.Second}
	return c
}

// fakeClient starts a fake Threads API and a client for it.
func fakeClient(t *testing.T) (*fakeThreads, *Client) {
	t.Helper()
	f := newFake(t)
	srv := newServer(t, f)
	return f, newClient(t, srv.URL)
}

// outcomeOf classifies err into exactly one class and records it for the
// token-leak check. The tests compare the class and its fields, not the
// message.
func outcomeOf(t *testing.T, err error) outcome {
	t.Helper()
	recordErr(err)
	return adaptertest.OutcomeOf(t, err).WithoutMessage()
}

// seen collects every error the tests classified, for TestMain's check.
var seen adaptertest.Errors

// recordErr records err (if any) for TestMain's check.
func recordErr(err error) { seen.Add(err) }

// writeJSON answers with the Content-Type the Graph API sends.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	adaptertest.WriteJSON(w, status, v)
}

// blockUntilGone waits until the client gives up on the request (its
// deadline closes the connection) or the test ends.
func blockUntilGone(t *testing.T, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-t.Context().Done():
	}
}

// shortCtx is a context that ends after d.
func shortCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
