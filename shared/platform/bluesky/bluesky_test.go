package bluesky

// Fidelity tests against a fake PDS for the answers the reference PDS
// cannot be made to give on demand (rate limits, expired tokens, 5xx after
// a commit, a stalled answer). Shapes follow the XRPC specification
// (https://atproto.com/specs/xrpc: errors are {"error","message"}, rate
// limits carry RateLimit-* headers) and the lexicons of
// com.atproto.repo.putRecord / getRecord and com.atproto.server.refreshSession
// (https://docs.bsky.app/docs/api/com-atproto-repo-put-record,
// https://docs.bsky.app/docs/api/com-atproto-server-refresh-session).

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/platform/adaptertest"
)

const (
	fakeDID     = "did:plc:fakeaccount0000000000000"
	fakeAccess  = "access-jwt-SECRET-1"
	fakeRefresh = "refresh-jwt-SECRET-2"
)

// fakePDS stores putRecord writes and answers as the faults say.
type fakePDS struct {
	mu      sync.Mutex
	records map[string]json.RawMessage // rkey → record
	puts    int
	// fault, when set, decides the answer to a putRecord after the record
	// was stored (commit first, then the fault).
	fault func(w http.ResponseWriter, r *http.Request) bool
	// before, when set, answers a request before anything is stored.
	before func(w http.ResponseWriter, r *http.Request) bool
}

func (f *fakePDS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.before != nil && f.before(w, r) {
		return
	}
	switch r.URL.Path {
	case "/xrpc/com.atproto.repo.putRecord":
		var in struct {
			Repo, Collection, RKey string
			Record                 json.RawMessage
			SwapRecord             *string `json:"swapRecord"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &in)
		f.mu.Lock()
		f.puts++
		old, exists := f.records[in.RKey]
		if exists && string(old) != string(in.Record) {
			f.mu.Unlock()
			xrpcErr(w, http.StatusBadRequest, "InvalidSwap", "Record was at bafy-old")
			return
		}
		f.records[in.RKey] = in.Record
		f.mu.Unlock()
		if f.fault != nil && f.fault(w, r) {
			return
		}
		writeJSON(w, map[string]string{"uri": "at://" + in.Repo + "/" + in.Collection + "/" + in.RKey, "cid": "bafyrecord"})
	case "/xrpc/com.atproto.repo.getRecord":
		rkey := r.URL.Query().Get("rkey")
		f.mu.Lock()
		rec, ok := f.records[rkey]
		f.mu.Unlock()
		if !ok {
			xrpcErr(w, http.StatusBadRequest, "RecordNotFound", "Could not locate record: at://"+fakeDID+"/app.bsky.feed.post/"+rkey)
			return
		}
		writeJSON(w, map[string]any{"uri": "at://" + fakeDID + "/app.bsky.feed.post/" + rkey, "cid": "bafyrecord", "value": rec})
	case "/xrpc/com.atproto.identity.resolveHandle":
		xrpcErr(w, http.StatusBadRequest, "InvalidRequest", "Unable to resolve handle")
	default:
		http.NotFound(w, r)
	}
}

func (f *fakePDS) count() (records, puts int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.records), f.puts
}

func xrpcErr(w http.ResponseWriter, status int, name, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": name, "message": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func fakeClient(t *testing.T, f *fakePDS) (*Client, *httptest.Server) {
	t.Helper()
	if f.records == nil {
		f.records = map[string]json.RawMessage{}
	}
	srv := adaptertest.LocalServer(t, f)
	c, err := New(Config{BaseURL: srv.URL, DID: fakeDID, Credential: platform.Credential{AccessToken: fakeAccess, RefreshToken: fakeRefresh}})
	if err != nil {
		t.Fatal(err)
	}
	c.http.ReadBackoff = time.Millisecond
	return c, srv
}

func newRequest(text string) platform.PublishRequest {
	return platform.PublishRequest{Handle: ledger.NewHandle(), Text: text, CreatedAt: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}
}

// tokens are what no error may carry: the session's JWTs, and the marker
// both share.
var tokens = []string{fakeAccess, fakeRefresh, "SECRET"}

// The request putRecord sends: the account's repository, the post
// collection, the entry's TID record key, swapRecord as JSON null (not
// omitted), the bearer access token, and the record with the entry's
// createdAt.
func TestPublishRequestShape(t *testing.T) {
	var got map[string]any
	var auth string
	f := &fakePDS{before: func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/xrpc/com.atproto.repo.putRecord" {
			auth = r.Header.Get("Authorization")
			body, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(body, &got)
			writeJSON(w, map[string]string{"uri": "at://" + fakeDID + "/app.bsky.feed.post/x", "cid": "c"})
			return true
		}
		return false
	}}
	c, _ := fakeClient(t, f)
	req := newRequest("hello")
	if _, err := c.Publish(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	rkey := recordKey(req.Handle, req.CreatedAt)
	want := map[string]any{
		"repo": fakeDID, "collection": "app.bsky.feed.post", "rkey": rkey, "swapRecord": nil,
		"record": map[string]any{"$type": "app.bsky.feed.post", "text": "hello", "createdAt": "2026-12-01T08:00:00.000Z"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("putRecord body (-want +got):\n%s", diff)
	}
	if _, present := got["swapRecord"]; !present {
		t.Error("swapRecord omitted: it must be sent as null to mean create-only")
	}
	if auth != "Bearer "+fakeAccess {
		t.Errorf("Authorization = %q", auth)
	}
	if !validTID(rkey) || recordKey(req.Handle, req.CreatedAt) != rkey {
		t.Errorf("record key %q is not a stable TID", rkey)
	}
}

// The record key: a valid TID, the same for the same entry, different for
// different entries of the same second, and in the entry's second.
func TestRecordKey(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	for range 2000 {
		h := ledger.NewHandle()
		k := recordKey(h, at)
		if !validTID(k) {
			t.Fatalf("%q is not a TID", k)
		}
		if k != recordKey(h, at) {
			t.Fatal("the key of one handle changed")
		}
		if seen[k] {
			t.Fatalf("two handles gave the key %q", k)
		}
		seen[k] = true
		v := decodeTID(t, k)
		micros := int64(v >> 10)
		if sec := micros / 1_000_000; sec != at.Unix() {
			t.Fatalf("key %q is at second %d, want %d", k, sec, at.Unix())
		}
	}
	// A known value: the TID encoding is base32-sortable, big-endian.
	if got := encodeTID(0); got != "2222222222222" {
		t.Errorf("encodeTID(0) = %q", got)
	}
}

func decodeTID(t *testing.T, s string) uint64 {
	t.Helper()
	var v uint64
	for _, r := range s {
		i := strings.IndexRune(tidAlphabet, r)
		if i < 0 {
			t.Fatalf("%q: bad TID character %q", s, r)
		}
		v = v<<5 | uint64(i)
	}
	return v
}

// The answers that are not successes, each in its class; every class the
// ledger relies on, and none carrying a token.
func TestPublishAnswers(t *testing.T) {
	var seen adaptertest.Errors
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter)
		check  func(t *testing.T, err error)
	}{
		{"429 with RateLimit-Reset", func(w http.ResponseWriter) {
			w.Header().Set("RateLimit-Limit", "5000")
			w.Header().Set("RateLimit-Remaining", "0")
			w.Header().Set("RateLimit-Reset", strconv.FormatInt(time.Now().Add(90*time.Second).Unix(), 10))
			xrpcErr(w, http.StatusTooManyRequests, "RateLimitExceeded", "Rate Limit Exceeded")
		}, func(t *testing.T, err error) {
			var np *platform.NotPerformed
			if !errors.As(err, &np) || np.RetryAfter < 80*time.Second || np.RetryAfter > 91*time.Second {
				t.Errorf("got %v, want NotPerformed retrying after about 90 s", err)
			}
		}},
		{"expired access token", func(w http.ResponseWriter) {
			xrpcErr(w, http.StatusBadRequest, "ExpiredToken", "Token has expired")
		}, func(t *testing.T, err error) {
			var ua *platform.Unauthorized
			if !errors.As(err, &ua) {
				t.Errorf("got %v, want Unauthorized", err)
			}
		}},
		{"invalid record", func(w http.ResponseWriter) {
			xrpcErr(w, http.StatusBadRequest, "InvalidRequest", "Invalid app.bsky.feed.post record")
		}, func(t *testing.T, err error) {
			var rej *platform.Rejected
			if !errors.As(err, &rej) || rej.Status != 400 {
				t.Errorf("got %v, want Rejected 400", err)
			}
		}},
		{"502 from a proxy", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadGateway)
		}, func(t *testing.T, err error) {
			var amb *platform.Ambiguous
			if !errors.As(err, &amb) {
				t.Errorf("got %v, want Ambiguous", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakePDS{before: func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Path == "/xrpc/com.atproto.repo.putRecord" {
					tt.answer(w)
					return true
				}
				return false
			}}
			c, _ := fakeClient(t, f)
			_, err := c.Publish(context.Background(), newRequest("hello"))
			tt.check(t, seen.Add(err))
		})
	}
	seen.CheckNoSecrets(t, tokens...)
}

// A 500 answered after the PDS stored the record: Ambiguous, Lookup finds
// it, one record. A naive client that re-sent on a 5xx with a fresh key
// would make two; with the entry's key even a re-send makes one.
func TestServerErrorAfterCommitLookupFindsIt(t *testing.T) {
	var seen adaptertest.Errors
	f := &fakePDS{}
	f.fault = func(w http.ResponseWriter, _ *http.Request) bool {
		xrpcErr(w, http.StatusInternalServerError, "InternalServerError", "Internal Server Error")
		return true
	}
	c, _ := fakeClient(t, f)
	ctx := context.Background()
	req := newRequest("committed, then 500")
	_, err := c.Publish(ctx, req)
	var amb *platform.Ambiguous
	if !errors.As(seen.Add(err), &amb) {
		t.Fatalf("got %v, want Ambiguous", err)
	}
	rp, found, err := c.Lookup(ctx, platform.LookupQuery{Handle: req.Handle, CreatedAt: req.CreatedAt})
	seen.Add(err)
	if err != nil || !found || rp.Text != req.Text {
		t.Fatalf("Lookup = %+v, %v, %v", rp, found, err)
	}
	f.fault = nil
	if _, err := c.Publish(ctx, req); seen.Add(err) != nil {
		t.Fatalf("re-send: %v", err)
	}
	if records, puts := f.count(); records != 1 || puts != 2 {
		t.Errorf("%d records after %d puts, want 1 record", records, puts)
	}
	seen.CheckNoSecrets(t, tokens...)
}

// The PDS stores the record and then stalls past the caller's deadline:
// Ambiguous, and Lookup finds it. A request that never reached the server
// (nothing listening) is NotPerformed.
func TestTimeoutAfterCommitAndNotSent(t *testing.T) {
	release := make(chan struct{})
	f := &fakePDS{}
	f.fault = func(http.ResponseWriter, *http.Request) bool {
		<-release
		return true
	}
	c, _ := fakeClient(t, f)
	// Registered after the server's Close, so it runs first (cleanups run
	// last-in first-out) and Close does not wait for the held handler.
	t.Cleanup(func() { close(release) })
	req := newRequest("slow answer")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := c.Publish(ctx, req)
	cancel()
	var amb *platform.Ambiguous
	if !errors.As(err, &amb) {
		t.Fatalf("got %v, want Ambiguous", err)
	}
	if _, found, err := c.Lookup(context.Background(), platform.LookupQuery{Handle: req.Handle, CreatedAt: req.CreatedAt}); err != nil || !found {
		t.Fatalf("Lookup = %v, %v; want found", found, err)
	}

	dead, err := New(Config{BaseURL: adaptertest.ClosedURL(t), DID: fakeDID, Credential: platform.Credential{AccessToken: fakeAccess}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = dead.Publish(context.Background(), newRequest("never sent"))
	var np *platform.NotPerformed
	if !errors.As(err, &np) {
		t.Errorf("publish to a closed port = %v, want NotPerformed", err)
	}
}

// A record of other content at the key (a hash collision between two
// entries) is never overwritten: Rejected. The same content at the key
// (an earlier attempt's post, with facets written differently) is that
// post.
func TestTakenRecordKey(t *testing.T) {
	f := &fakePDS{}
	c, _ := fakeClient(t, f)
	ctx := context.Background()
	req := newRequest("ours")
	rkey := recordKey(req.Handle, req.CreatedAt)

	f.records[rkey] = json.RawMessage(`{"$type":"app.bsky.feed.post","text":"someone else's","createdAt":"2026-12-01T08:00:00.000Z"}`)
	_, err := c.Publish(ctx, req)
	var rej *platform.Rejected
	if !errors.As(err, &rej) || rej.Reason != "record_key_taken" {
		t.Fatalf("publish onto another post's key = %v, want Rejected record_key_taken", err)
	}
	if string(f.records[rkey]) != `{"$type":"app.bsky.feed.post","text":"someone else's","createdAt":"2026-12-01T08:00:00.000Z"}` {
		t.Error("the other post was overwritten")
	}

	f.records[rkey] = json.RawMessage(`{"$type":"app.bsky.feed.post","text":"ours","createdAt":"2026-12-01T08:00:00.000Z","langs":["en"]}`)
	rcpt, err := c.Publish(ctx, req)
	if err != nil || rcpt.RemoteID != "at://"+fakeDID+"/app.bsky.feed.post/"+rkey {
		t.Errorf("publish onto an earlier attempt's record = %+v, %v; want that record", rcpt, err)
	}
}

// refreshSession: authenticated by the refresh JWT; the answer's pair
// replaces the old; an answer without a refresh token keeps it; a refused
// token is reconnect_needed; a 5xx or a lost answer is Ambiguous (the
// token may have been rotated).
func TestRefresh(t *testing.T) {
	var seen adaptertest.Errors
	tests := []struct {
		name    string
		answer  func(w http.ResponseWriter)
		want    platform.Credential
		wantErr func(error) bool
	}{
		{"rotated", func(w http.ResponseWriter) {
			writeJSON(w, session{AccessJWT: "new-access", RefreshJWT: "new-refresh", DID: fakeDID})
		}, platform.Credential{AccessToken: "new-access", RefreshToken: "new-refresh"}, nil},
		{"no refresh token in the answer", func(w http.ResponseWriter) {
			writeJSON(w, session{AccessJWT: "new-access", DID: fakeDID})
		}, platform.Credential{AccessToken: "new-access", RefreshToken: fakeRefresh}, nil},
		{"expired refresh token", func(w http.ResponseWriter) {
			xrpcErr(w, http.StatusBadRequest, "ExpiredToken", "Token has expired")
		}, platform.Credential{}, func(err error) bool {
			var rej *platform.Rejected
			return errors.As(err, &rej) && rej.Reason == platform.ReasonReconnectNeeded
		}},
		{"503", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}, platform.Credential{}, func(err error) bool {
			var amb *platform.Ambiguous
			return errors.As(err, &amb)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var auth string
			f := &fakePDS{before: func(w http.ResponseWriter, r *http.Request) bool {
				auth = r.Header.Get("Authorization")
				tt.answer(w)
				return true
			}}
			c, _ := fakeClient(t, f)
			got, err := c.Refresh(context.Background(), c.cred)
			seen.Add(err)
			if auth != "Bearer "+fakeRefresh {
				t.Errorf("refreshSession sent Authorization %q, want the refresh JWT", auth)
			}
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Errorf("got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.AccessToken != tt.want.AccessToken || got.RefreshToken != tt.want.RefreshToken {
				t.Errorf("refreshed credential differs: access %v, refresh %v", got.AccessToken == tt.want.AccessToken, got.RefreshToken == tt.want.RefreshToken)
			}
		})
	}
	seen.CheckNoSecrets(t, tokens...)
}

// Text limits are checked before any call: 300 graphemes (an emoji family
// is one), 3000 bytes.
func TestTextLimits(t *testing.T) {
	f := &fakePDS{}
	c, _ := fakeClient(t, f)
	family := "👨‍👩‍👧‍👦"
	for _, tt := range []struct {
		text string
		ok   bool
	}{
		{strings.Repeat("a", 300), true},
		{strings.Repeat("a", 301), false},
		{strings.Repeat(family, 120), true}, // 120 graphemes, 3000 bytes
		{strings.Repeat(family, 121), false},
	} {
		_, err := c.Publish(context.Background(), newRequest(tt.text))
		var rej *platform.Rejected
		if tt.ok != (err == nil) || (!tt.ok && (!errors.As(err, &rej) || rej.Reason != "text_too_long")) {
			t.Errorf("%d bytes: got %v, want ok=%v", len(tt.text), err, tt.ok)
		}
	}
	if _, puts := f.count(); puts != 2 {
		t.Errorf("%d puts, want 2 (the refused texts are never sent)", puts)
	}
}

// A server that echoes the request's Authorization header in its error
// text does not get the token into our errors (which are logged and
// recorded as reasons).
func TestEchoedTokenIsRedacted(t *testing.T) {
	var seen adaptertest.Errors
	echo := func(w http.ResponseWriter, r *http.Request) bool {
		xrpcErr(w, http.StatusBadRequest, "InvalidRequest", "refused request with "+r.Header.Get("Authorization"))
		return true
	}
	c, _ := fakeClient(t, &fakePDS{before: echo})
	_, err := c.Publish(context.Background(), newRequest("hello"))
	seen.Add(err)
	_, _, err = c.Lookup(context.Background(), platform.LookupQuery{Handle: ledger.NewHandle(), CreatedAt: time.Now()})
	seen.Add(err)
	_, err = c.Refresh(context.Background(), c.cred)
	seen.Add(err)
	if n := seen.Len(); n != 3 {
		t.Fatalf("%d errors, want 3", n)
	}
	seen.CheckNoSecrets(t, tokens...)
}

// The PDS sends RateLimit-Reset with every answer of a rate-limited
// route, not only with its 429s: a 503 on a read carrying a reset an hour
// away is a passing failure to read again, not an hour's wait.
func TestRateLimitResetOnlyFor429(t *testing.T) {
	f := &fakePDS{}
	c, _ := fakeClient(t, f)
	req := newRequest("read after a 503")
	if _, err := c.Publish(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	failed := 0
	f.before = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/xrpc/com.atproto.repo.getRecord" || failed > 0 {
			return false
		}
		failed++
		w.Header().Set("RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
		xrpcErr(w, http.StatusServiceUnavailable, "InternalServerError", "Service Unavailable")
		return true
	}
	_, found, err := c.Lookup(context.Background(), platform.LookupQuery{Handle: req.Handle, CreatedAt: req.CreatedAt})
	if err != nil || !found || failed != 1 {
		t.Errorf("Lookup after one 503 = found %v, %v (%d failed reads); want found on the read again", found, err, failed)
	}
}

// validTID reports whether s has the syntax of a TID.
func validTID(s string) bool {
	if len(s) != 13 || !strings.ContainsRune("234567abcdefghij", rune(s[0])) {
		return false
	}
	for i := range len(s) {
		if !strings.ContainsRune(tidAlphabet, rune(s[i])) {
			return false
		}
	}
	return true
}
