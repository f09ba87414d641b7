package mastodon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"oncepost/shared/platform"
)

// fixedNow is the clock of every test client.
var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newServer starts an httptest server on 127.0.0.1.
func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// newClient returns a client for baseURL with its own transport (so tests
// do not share keep-alive connections), a fixed clock and fast backoff.
func newClient(t *testing.T, baseURL string, edit ...func(*Config)) *Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cfg := Config{
		BaseURL:           baseURL,
		AccountID:         "109",
		Credential:        platform.Credential{AccessToken: "access-1", RefreshToken: "refresh-1"},
		ClientID:          "client-id",
		ClientSecret:      "client-secret",
		HTTPClient:        &http.Client{Transport: tr},
		MediaPollInterval: 5 * time.Millisecond,
	}
	for _, e := range edit {
		e(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.now = func() time.Time { return fixedNow }
	c.readBackoff = time.Millisecond
	return c
}

// outcome is an error reduced to its failure class and fields, for cmp.
type outcome struct {
	Class      string
	Status     int
	Reason     string
	Message    string
	RetryAfter time.Duration
}

// outcomeOf classifies err. Messages are kept for Rejected only (they are
// the platform's text); for the other classes they carry context that the
// tests check separately where it matters.
func outcomeOf(t *testing.T, err error) outcome {
	t.Helper()
	if err == nil {
		return outcome{Class: "ok"}
	}
	var (
		rej *platform.Rejected
		np  *platform.NotPerformed
		un  *platform.Unauthorized
		amb *platform.Ambiguous
	)
	var got []outcome
	if errors.As(err, &rej) {
		got = append(got, outcome{Class: "rejected", Status: rej.Status, Reason: rej.Reason, Message: rej.Message})
	}
	if errors.As(err, &np) {
		got = append(got, outcome{Class: "not_performed", Status: np.Status, RetryAfter: np.RetryAfter})
	}
	if errors.As(err, &un) {
		got = append(got, outcome{Class: "unauthorized"})
	}
	if errors.As(err, &amb) {
		got = append(got, outcome{Class: "ambiguous", Status: amb.Status})
	}
	if len(got) != 1 {
		t.Fatalf("error %q matches %d failure classes, want exactly 1: %+v", err, len(got), got)
	}
	return got[0]
}

// statusJSON renders a Mastodon Status entity.
func statusJSON(id, content string, created time.Time, mediaIDs ...string) map[string]any {
	media := []map[string]any{}
	for _, m := range mediaIDs {
		media = append(media, map[string]any{"id": m, "type": "image", "url": "https://files.example/" + m})
	}
	return map[string]any{
		"id":                id,
		"uri":               "https://social.example/users/me/statuses/" + id,
		"url":               "https://social.example/@me/" + id,
		"created_at":        created.UTC().Format("2006-01-02T15:04:05.000Z"),
		"content":           content,
		"visibility":        "public",
		"reblog":            nil,
		"media_attachments": media,
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		panic(fmt.Sprintf("encode: %v", err))
	}
}

// hijackClose takes the connection from the server and closes it without
// an answer, as a crashed or restarted server would.
func hijackClose(t *testing.T, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	conn.Close()
}

// refusedURL is the address of a listener that has been closed again, so
// connecting to it is refused.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// silentServer reads every request and never answers: the client's
// deadline ends each call after the request was written. It counts the
// requests in n if n is not nil.
func silentServer(t *testing.T, n *atomic.Int32) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if n != nil {
			n.Add(1)
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release) })
	return srv
}
