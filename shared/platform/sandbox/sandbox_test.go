package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/oauth2"

	"oncepost/shared/clocktest"
	"oncepost/shared/platform"
)

func newClock() *clocktest.Clock {
	return clocktest.New(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
}

// start returns a started server, closed when the test ends.
func start(t *testing.T, opts Options) *Server {
	t.Helper()
	s := New(opts)
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// freshClient never reuses a connection, so Go's transport cannot silently
// resend a request whose connection the server dropped.
func freshClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

var client = freshClient(5 * time.Second)

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
}

// send performs one request; a transport error is returned, not fatal.
func send(c *http.Client, method, u, token, contentType string, body []byte, hdr map[string]string) (response, error) {
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return response{}, fmt.Errorf("building request: %w", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, fmt.Errorf("reading body: %w", err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

func mustSend(t *testing.T, method, u, token, contentType string, body []byte, hdr map[string]string) response {
	t.Helper()
	r, err := send(client, method, u, token, contentType, body, hdr)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	return r
}

func get(t *testing.T, u, token string) response {
	t.Helper()
	return mustSend(t, http.MethodGet, u, token, "", nil, nil)
}

// createForm is the form body of a status create.
func createForm(text string, mediaIDs ...string) []byte {
	v := url.Values{"status": {text}}
	for _, id := range mediaIDs {
		v.Add("media_ids[]", id)
	}
	return []byte(v.Encode())
}

const formType = "application/x-www-form-urlencoded"

// post creates a status and returns the response.
func post(t *testing.T, s *Server, a Account, text, key string, mediaIDs ...string) response {
	t.Helper()
	hdr := map[string]string{}
	if key != "" {
		hdr["Idempotency-Key"] = key
	}
	return mustSend(t, http.MethodPost, s.URL()+"/api/v1/statuses", a.AccessToken, formType, createForm(text, mediaIDs...), hdr)
}

// apiStatus is the part of the Status entity the tests look at.
type apiStatus struct {
	ID          string  `json:"id"`
	CreatedAt   string  `json:"created_at"`
	Content     string  `json:"content"`
	Text        *string `json:"text"`
	Visibility  string  `json:"visibility"`
	URL         string  `json:"url"`
	URI         string  `json:"uri"`
	SpoilerText string  `json:"spoiler_text"`
	Sensitive   bool    `json:"sensitive"`
	Language    *string `json:"language"`
	Application struct {
		Name string `json:"name"`
	} `json:"application"`
	Account struct {
		ID          string `json:"id"`
		Username    string `json:"username"`
		Acct        string `json:"acct"`
		DisplayName string `json:"display_name"`
	} `json:"account"`
	MediaAttachments []apiMedia `json:"media_attachments"`
}

type apiMedia struct {
	ID          string  `json:"id"`
	Type        string  `json:"type"`
	URL         *string `json:"url"`
	PreviewURL  *string `json:"preview_url"`
	Description *string `json:"description"`
}

func mustStatus(t *testing.T, r response) apiStatus {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, body %s", r.status, r.body)
	}
	var st apiStatus
	r.decode(t, &st)
	return st
}

func errorOf(t *testing.T, r response) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	r.decode(t, &e)
	return e.Error
}

// waitFor polls cond until it holds or a second has passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestIdempotencyKey(t *testing.T) {
	tests := []struct {
		name         string
		disable      bool
		steps        func(t *testing.T, s *Server, a, b Account, clock *clocktest.Clock) []string // returns the ids answered
		wantSameIDs  [][2]int                                                                     // pairs of steps answered with the same id
		wantDiffIDs  [][2]int
		wantStats    Stats
		wantStatuses int
	}{
		{
			name: "replay returns the original status and commits nothing",
			steps: func(t *testing.T, s *Server, a, _ Account, _ *clocktest.Clock) []string {
				return []string{
					mustStatus(t, post(t, s, a, "hello", "k1")).ID,
					mustStatus(t, post(t, s, a, "hello", "k1")).ID,
				}
			},
			wantSameIDs:  [][2]int{{0, 1}},
			wantStats:    Stats{CreateRequests: 2, Committed: 1, IdempotentReplays: 1},
			wantStatuses: 1,
		},
		{
			name: "replay with different text still returns the original",
			steps: func(t *testing.T, s *Server, a, _ Account, _ *clocktest.Clock) []string {
				first := mustStatus(t, post(t, s, a, "hello", "k1"))
				second := mustStatus(t, post(t, s, a, "something else", "k1"))
				if second.Content != "<p>hello</p>" {
					t.Errorf("replayed content = %q, want the original", second.Content)
				}
				return []string{first.ID, second.ID}
			},
			wantSameIDs:  [][2]int{{0, 1}},
			wantStats:    Stats{CreateRequests: 2, Committed: 1, IdempotentReplays: 1},
			wantStatuses: 1,
		},
		{
			name:    "disabled: the same key commits twice",
			disable: true,
			steps: func(t *testing.T, s *Server, a, _ Account, _ *clocktest.Clock) []string {
				return []string{
					mustStatus(t, post(t, s, a, "hello", "k1")).ID,
					mustStatus(t, post(t, s, a, "hello", "k1")).ID,
				}
			},
			wantDiffIDs:  [][2]int{{0, 1}},
			wantStats:    Stats{CreateRequests: 2, Committed: 2, Duplicates: 1},
			wantStatuses: 2,
		},
		{
			name: "keys are per account",
			steps: func(t *testing.T, s *Server, a, b Account, _ *clocktest.Clock) []string {
				return []string{
					mustStatus(t, post(t, s, a, "hello", "k1")).ID,
					mustStatus(t, post(t, s, b, "hello", "k1")).ID,
				}
			},
			wantDiffIDs:  [][2]int{{0, 1}},
			wantStats:    Stats{CreateRequests: 2, Committed: 2},
			wantStatuses: 1,
		},
		{
			name: "a key is forgotten after one hour",
			steps: func(t *testing.T, s *Server, a, _ Account, clock *clocktest.Clock) []string {
				first := mustStatus(t, post(t, s, a, "hello", "k1")).ID
				clock.Advance(59 * time.Minute)
				second := mustStatus(t, post(t, s, a, "hello", "k1")).ID
				clock.Advance(2 * time.Minute)
				third := mustStatus(t, post(t, s, a, "hello", "k1")).ID
				return []string{first, second, third}
			},
			wantSameIDs:  [][2]int{{0, 1}},
			wantDiffIDs:  [][2]int{{0, 2}},
			wantStats:    Stats{CreateRequests: 3, Committed: 2, IdempotentReplays: 1, Duplicates: 1},
			wantStatuses: 2,
		},
		{
			name: "a key whose status was deleted creates a new status",
			steps: func(t *testing.T, s *Server, a, _ Account, _ *clocktest.Clock) []string {
				first := mustStatus(t, post(t, s, a, "hello", "k1")).ID
				if r := mustSend(t, http.MethodDelete, s.URL()+"/api/v1/statuses/"+first, a.AccessToken, "", nil, nil); r.status != http.StatusOK {
					t.Fatalf("delete: %d %s", r.status, r.body)
				}
				return []string{first, mustStatus(t, post(t, s, a, "hello", "k1")).ID}
			},
			wantDiffIDs:  [][2]int{{0, 1}},
			wantStats:    Stats{CreateRequests: 2, Committed: 2, Duplicates: 1, Deleted: 1},
			wantStatuses: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newClock()
			s := start(t, Options{DisableIdempotency: tt.disable, Now: clock.Now})
			a, b := s.AddAccount("alice"), s.AddAccount("bob")
			ids := tt.steps(t, s, a, b, clock)
			for _, p := range tt.wantSameIDs {
				if ids[p[0]] != ids[p[1]] {
					t.Errorf("answers %d and %d have ids %s and %s, want the same", p[0], p[1], ids[p[0]], ids[p[1]])
				}
			}
			for _, p := range tt.wantDiffIDs {
				if ids[p[0]] == ids[p[1]] {
					t.Errorf("answers %d and %d both have id %s, want different", p[0], p[1], ids[p[0]])
				}
			}
			if diff := cmp.Diff(tt.wantStats, s.Stats()); diff != "" {
				t.Errorf("Stats (-want +got):\n%s", diff)
			}
			if got := len(s.Statuses(a.ID)); got != tt.wantStatuses {
				t.Errorf("len(Statuses(alice)) = %d, want %d", got, tt.wantStatuses)
			}
		})
	}
}

func TestScriptedFaults(t *testing.T) {
	tests := []struct {
		name          string
		fault         Fault
		clientTimeout time.Duration
		wantErr       bool // transport error instead of a response
		wantStatus    int
		wantError     string            // JSON error message
		wantHeader    map[string]string // response headers
		minElapsed    time.Duration
		wantNow       int // Committed right after the client returned
		wantEventual  int // Committed once the server is done
	}{
		{name: "drop-request", fault: Fault{Kind: FaultDropRequest}, wantErr: true},
		{name: "drop-response", fault: Fault{Kind: FaultDropResponse}, wantErr: true, wantNow: 1, wantEventual: 1},
		{name: "500-after-commit", fault: Fault{Kind: Fault500AfterCommit}, wantStatus: 500,
			wantError: "We're sorry, but something went wrong on our end.", wantNow: 1, wantEventual: 1},
		{name: "503", fault: Fault{Kind: Fault503}, wantStatus: 503,
			wantError: "There was a temporary problem serving your request, please try again"},
		{name: "429 default retry-after", fault: Fault{Kind: Fault429}, wantStatus: 429,
			wantError: "Too many requests", wantHeader: map[string]string{"Retry-After": "1", "X-RateLimit-Remaining": "0"}},
		{name: "429 retry-after rounded up", fault: Fault{Kind: Fault429, RetryAfter: 1500 * time.Millisecond}, wantStatus: 429,
			wantError: "Too many requests", wantHeader: map[string]string{"Retry-After": "2"}},
		{name: "401", fault: Fault{Kind: Fault401}, wantStatus: 401, wantError: "The access token is invalid",
			wantHeader: map[string]string{"WWW-Authenticate": `Bearer error="invalid_token"`}},
		{name: "delay-after-commit", fault: Fault{Kind: FaultDelayAfterCommit, Delay: 60 * time.Millisecond},
			wantStatus: 200, minElapsed: 60 * time.Millisecond, wantNow: 1, wantEventual: 1},
		{name: "delay-before-commit answered", fault: Fault{Kind: FaultDelayBeforeCommit, Delay: 60 * time.Millisecond},
			wantStatus: 200, minElapsed: 60 * time.Millisecond, wantNow: 1, wantEventual: 1},
		{name: "delay-before-commit commits after the client gave up",
			fault: Fault{Kind: FaultDelayBeforeCommit, Delay: 150 * time.Millisecond}, clientTimeout: 30 * time.Millisecond,
			wantErr: true, wantNow: 0, wantEventual: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, Options{})
			a := s.AddAccount("alice")
			s.Script(tt.fault)
			c := freshClient(5 * time.Second)
			if tt.clientTimeout > 0 {
				c = freshClient(tt.clientTimeout)
			}
			began := time.Now()
			r, err := send(c, http.MethodPost, s.URL()+"/api/v1/statuses", a.AccessToken, formType,
				createForm("fault "+tt.name), map[string]string{"Idempotency-Key": "key-1"})
			elapsed := time.Since(began)
			committedNow := s.Stats().Committed
			switch {
			case tt.wantErr && err == nil:
				t.Fatalf("got a response (%d %s), want a transport error", r.status, r.body)
			case !tt.wantErr && err != nil:
				t.Fatalf("transport error: %v", err)
			}
			if !tt.wantErr {
				if r.status != tt.wantStatus {
					t.Errorf("status = %d, want %d (body %s)", r.status, tt.wantStatus, r.body)
				}
				if tt.wantError != "" {
					if got := errorOf(t, r); got != tt.wantError {
						t.Errorf("error = %q, want %q", got, tt.wantError)
					}
				}
				for k, v := range tt.wantHeader {
					if got := r.header.Get(k); got != v {
						t.Errorf("header %s = %q, want %q", k, got, v)
					}
				}
			}
			if elapsed < tt.minElapsed {
				t.Errorf("answered after %v, want at least %v", elapsed, tt.minElapsed)
			}
			if committedNow != tt.wantNow {
				t.Errorf("Committed right after the call = %d, want %d", committedNow, tt.wantNow)
			}
			waitFor(t, "the eventual commit", func() bool { return s.Stats().Committed == tt.wantEventual })
			// The fault was consumed: the same request now succeeds, and
			// is a replay exactly when the faulted call committed.
			again := mustStatus(t, mustSend(t, http.MethodPost, s.URL()+"/api/v1/statuses", a.AccessToken, formType,
				createForm("fault "+tt.name), map[string]string{"Idempotency-Key": "key-1"}))
			want := Stats{CreateRequests: 2, Committed: 1, IdempotentReplays: tt.wantEventual}
			if diff := cmp.Diff(want, s.Stats()); diff != "" {
				t.Errorf("Stats after the retry (-want +got):\n%s", diff)
			}
			if got := s.Statuses(a.ID); len(got) != 1 || got[0].ID != again.ID {
				t.Errorf("Statuses = %v, want exactly the retried status %s", got, again.ID)
			}
		})
	}
}

func TestScriptRouteAndPrecedence(t *testing.T) {
	t.Run("scripted faults come before random ones, in order", func(t *testing.T) {
		s := start(t, Options{Random: RandomFaults{Loss: 1}})
		a := s.AddAccount("alice")
		s.Script(Fault{Kind: Fault503}, Fault{Kind: Fault429})
		var got []string
		for i := range 3 {
			r, err := send(client, http.MethodPost, s.URL()+"/api/v1/statuses", a.AccessToken, formType, createForm(fmt.Sprint("p", i)), nil)
			if err != nil {
				got = append(got, "error")
				continue
			}
			got = append(got, strconv.Itoa(r.status))
		}
		if diff := cmp.Diff([]string{"503", "429", "error"}, got); diff != "" {
			t.Errorf("outcomes (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(Stats{CreateRequests: 3}, s.Stats()); diff != "" {
			t.Errorf("Stats (-want +got):\n%s", diff)
		}
	})
	t.Run("other routes", func(t *testing.T) {
		s := start(t, Options{})
		a := s.AddAccount("alice")
		s.InjectStatus(a.ID, "one")
		s.ScriptRoute(RouteAccountStatuses, Fault{Kind: Fault503})
		s.ScriptRoute(RouteUploadMedia, Fault{Kind: FaultDropResponse})
		s.ScriptRoute(RouteOAuthToken, Fault{Kind: Fault429, RetryAfter: 3 * time.Second})
		list := s.URL() + "/api/v1/accounts/" + a.ID + "/statuses"
		if r := get(t, list, a.AccessToken); r.status != 503 {
			t.Errorf("first list: %d, want 503", r.status)
		}
		if r := get(t, list, a.AccessToken); r.status != 200 {
			t.Errorf("second list: %d, want 200", r.status)
		}
		body, ct := mediaForm(t, []byte("png"), "")
		if _, err := send(client, http.MethodPost, s.URL()+"/api/v2/media", a.AccessToken, ct, body, nil); err == nil {
			t.Errorf("media upload got a response, want a dropped one")
		}
		r := mustSend(t, http.MethodPost, s.URL()+"/oauth/token", "", formType, refreshForm(a.RefreshToken, "sandbox-client", "sandbox-secret"), nil)
		if r.status != 429 || r.header.Get("Retry-After") != "3" {
			t.Errorf("token: %d Retry-After %q, want 429 and 3", r.status, r.header.Get("Retry-After"))
		}
		if got := s.Stats().CreateRequests; got != 0 {
			t.Errorf("CreateRequests = %d, want 0 (no status create was made)", got)
		}
	})
	t.Run("unknown route panics", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Errorf("ScriptRoute with an unknown route did not panic")
			}
		}()
		New(Options{}).ScriptRoute("GET /nowhere", Fault{Kind: Fault503})
	})
}

func TestRandomFaults(t *testing.T) {
	// outcomes posts n statuses and reports what each call saw.
	outcomes := func(t *testing.T, opts Options, n int) ([]string, Stats) {
		t.Helper()
		s := start(t, opts)
		a := s.AddAccount("alice")
		var got []string
		for i := range n {
			r, err := send(client, http.MethodPost, s.URL()+"/api/v1/statuses", a.AccessToken, formType, createForm(fmt.Sprint("post ", i)), nil)
			switch {
			case err != nil:
				got = append(got, "error")
			default:
				got = append(got, strconv.Itoa(r.status))
			}
		}
		// Let delayed commits land before reading the counters.
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		return got, s.Stats()
	}
	faulty := RandomFaults{Loss: 0.3, ResponseLoss: 0.3}
	tests := []struct {
		name  string
		opts  Options
		check func(t *testing.T, got []string, st Stats)
	}{
		{
			name: "no rates, no faults",
			opts: Options{Seed: 1},
			check: func(t *testing.T, got []string, st Stats) {
				if diff := cmp.Diff(Stats{CreateRequests: 20, Committed: 20}, st); diff != "" {
					t.Errorf("Stats (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "loss and response loss",
			opts: Options{Seed: 7, Random: faulty},
			check: func(t *testing.T, got []string, st Stats) {
				errs := strings.Count(strings.Join(got, ","), "error")
				oks := strings.Count(strings.Join(got, ","), "200")
				if errs == 0 || oks == 0 || errs+oks != 20 {
					t.Errorf("outcomes %v: want a mix of errors and 200s only", got)
				}
				// Lost responses committed; lost requests did not.
				if st.Committed <= oks || st.Committed >= 20 {
					t.Errorf("Committed = %d with %d answered: want some unanswered commits and some lost requests", st.Committed, oks)
				}
			},
		},
		{
			name: "delay before commit",
			opts: Options{Seed: 3, Random: RandomFaults{DelayRate: 1, Delay: 5 * time.Millisecond}},
			check: func(t *testing.T, got []string, st Stats) {
				if st.Committed != 20 {
					t.Errorf("Committed = %d, want 20", st.Committed)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, st := outcomes(t, tt.opts, 20)
			tt.check(t, got, st)
		})
	}
	t.Run("same seed, same plan", func(t *testing.T) {
		first, st1 := outcomes(t, Options{Seed: 42, Random: faulty}, 20)
		second, st2 := outcomes(t, Options{Seed: 42, Random: faulty}, 20)
		if diff := cmp.Diff(first, second); diff != "" {
			t.Errorf("outcomes differ for one seed (-first +second):\n%s", diff)
		}
		if diff := cmp.Diff(st1, st2); diff != "" {
			t.Errorf("Stats differ for one seed (-first +second):\n%s", diff)
		}
		other, _ := outcomes(t, Options{Seed: 43, Random: faulty}, 20)
		if cmp.Equal(first, other) {
			t.Errorf("seeds 42 and 43 gave the same 20 outcomes %v", first)
		}
	})
}

func TestDuplicates(t *testing.T) {
	type step struct {
		account string // "a" or "b"
		text    string
		media   []string // file contents to upload and attach
		inject  bool
	}
	tests := []struct {
		name  string
		steps []step
		want  int
	}{
		{name: "different texts", steps: []step{{account: "a", text: "one"}, {account: "a", text: "two"}}, want: 0},
		{name: "same text twice", steps: []step{{account: "a", text: "one"}, {account: "a", text: "one"}}, want: 1},
		{name: "three times", steps: []step{{account: "a", text: "x"}, {account: "a", text: "x"}, {account: "a", text: "x"}}, want: 2},
		{name: "other account", steps: []step{{account: "a", text: "one"}, {account: "b", text: "one"}}, want: 0},
		{name: "injected then posted", steps: []step{{account: "a", text: "one", inject: true}, {account: "a", text: "one"}}, want: 1},
		{name: "white space and NFC", steps: []step{{account: "a", text: "caf\u00e9"}, {account: "a", text: "  cafe\u0301\n"}}, want: 1},
		{name: "same text, different media", steps: []step{{account: "a", text: "pic", media: []string{"A"}}, {account: "a", text: "pic", media: []string{"B"}}}, want: 0},
		{name: "same media bytes in another order", steps: []step{
			{account: "a", text: "pic", media: []string{"A", "B"}},
			{account: "a", text: "pic", media: []string{"B", "A"}},
		}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, Options{MediaProcessingPolls: -1})
			accts := map[string]Account{"a": s.AddAccount("alice"), "b": s.AddAccount("bob")}
			for _, st := range tt.steps {
				a := accts[st.account]
				if st.inject {
					s.InjectStatus(a.ID, st.text)
					continue
				}
				var ids []string
				for _, data := range st.media {
					ids = append(ids, upload(t, s, a, []byte(data), "").ID)
				}
				mustStatus(t, post(t, s, a, st.text, "", ids...))
			}
			if got := s.Stats().Duplicates; got != tt.want {
				t.Errorf("Duplicates = %d, want %d", got, tt.want)
			}
		})
	}
}

// htmlText is the text a reader of the HTML sees: text nodes, <br> as a
// line break, paragraphs separated by a blank line.
func htmlText(t *testing.T, content string) string {
	t.Helper()
	nodes, err := html.ParseFragment(strings.NewReader(content), &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div})
	if err != nil {
		t.Fatalf("parsing %q: %v", content, err)
	}
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch {
		case n.Type == html.TextNode:
			b.WriteString(n.Data)
		case n.Type == html.ElementNode && n.Data == "br":
			b.WriteString("\n")
		case n.Type == html.ElementNode && n.Data == "p" && b.Len() > 0:
			b.WriteString("\n\n")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	for _, n := range nodes {
		walk(n)
	}
	return b.String()
}

func link(href, prefix, display, suffix string, ellipsis bool) string {
	class := ""
	if ellipsis {
		class = "ellipsis"
	}
	return `<a href="` + href + `" target="_blank" rel="nofollow noopener" translate="no"><span class="invisible">` + prefix +
		`</span><span class="` + class + `">` + display + `</span><span class="invisible">` + suffix + `</span></a>`
}

// TestContentHTML pins the sandbox's rendering to Mastodon's
// TextFormatter (mastodon/mastodon app/lib/text_formatter.rb at
// 5b395774c05d) and Rails' simple_format; see render.go.
func TestContentHTML(t *testing.T) {
	s := start(t, Options{})
	a := s.AddAccount("alice")
	s.AddAccount("bob")
	base := s.URL()
	bob := `<span class="h-card" translate="no"><a href="` + base + `/@bob" class="u-url mention">@<span>bob</span></a></span>`
	tag := func(name, href string) string {
		return `<a href="` + base + `/tags/` + href + `" class="mention hashtag" rel="tag">#<span>` + name + `</span></a>`
	}
	tests := []struct {
		name       string
		text       string
		want       string
		wantText   string // what the HTML reads as; "" means the stored text
		wantSource string // the stored text; "" means the stripped text
	}{
		{name: "plain", text: "Hello world", want: "<p>Hello world</p>"},
		{name: "stripped", text: "  \n padded \n\n", want: "<p>padded</p>"},
		{name: "line break", text: "a\nb", want: "<p>a<br />b</p>"},
		{name: "paragraphs", text: "a\n\nb", want: "<p>a</p><p>b</p>"},
		{name: "many blank lines are one break", text: "a\n\n\n\nb\nc", want: "<p>a</p><p>b<br />c</p>", wantText: "a\n\nb\nc"},
		{name: "crlf", text: "a\r\nb", want: "<p>a<br />b</p>", wantText: "a\nb"},
		{name: "lone cr is a line break", text: "line one\rline two", want: "<p>line one<br />line two</p>", wantText: "line one\nline two"},
		{name: "two lone crs are a paragraph break", text: "a\r\rb", want: "<p>a</p><p>b</p>", wantText: "a\n\nb"},
		{name: "cr then crlf", text: "a\r\r\nb", want: "<p>a</p><p>b</p>", wantText: "a\n\nb"},
		{name: "tabs and trailing spaces stay", text: "a\t \nb  c", want: "<p>a\t <br />b  c</p>"},
		{name: "blank line holding spaces is not a paragraph break", text: "a\n \nb", want: "<p>a<br /> <br />b</p>"},
		{name: "unicode and emoji", text: "Café 👩‍👩‍👧 🇫🇷 e\u0301 日本語", want: "<p>Café 👩‍👩‍👧 🇫🇷 e\u0301 日本語</p>"},
		{name: "only unicode white space around a word", text: "\u3000word\u00a0", want: "<p>\u3000word\u00a0</p>"},
		{name: "escapes", text: `<b>"Tom" & 'Jerry'</b>`, want: "<p>&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;</p>"},
		{name: "short link with trailing period", text: "see https://example.com/a?b=1&c=2.",
			want: "<p>see " + link("https://example.com/a?b=1&amp;c=2", "https://", "example.com/a?b=1&amp;c=2", "", false) + ".</p>"},
		{name: "long link", text: "https://example.com/a/very/long/path/that/keeps/going?x=1 end",
			want: "<p>" + link("https://example.com/a/very/long/path/that/keeps/going?x=1", "https://",
				"example.com/a/very/long/path/t", "hat/keeps/going?x=1", true) + " end</p>"},
		{name: "exactly 30 characters is not cut", text: "http://abcdefghij.com/0123456789abcde",
			want: "<p>" + link("http://abcdefghij.com/0123456789abcde", "http://", "abcdefghij.com/0123456789abcde", "", false) + "</p>"},
		{name: "31 characters are shown whole rather than cut by one", text: "http://abcdefghij.com/0123456789abcdef",
			want: "<p>" + link("http://abcdefghij.com/0123456789abcdef", "http://", "abcdefghij.com/0123456789abcdef", "", false) + "</p>"},
		{name: "32 characters are cut", text: "http://abcdefghij.com/0123456789abcdefg",
			want: "<p>" + link("http://abcdefghij.com/0123456789abcdefg", "http://", "abcdefghij.com/0123456789abcde", "fg", true) + "</p>"},
		{name: "www is invisible", text: "http://www.example.org", want: "<p>" + link("http://www.example.org", "http://www.", "example.org", "", false) + "</p>"},
		{name: "upper-case scheme is a link with no invisible prefix", text: "HTTPS://EXAMPLE.COM",
			want: "<p>" + link("HTTPS://EXAMPLE.COM", "", "HTTPS://EXAMPLE.COM", "", false) + "</p>"},
		{name: "balanced parentheses", text: "(https://en.wikipedia.org/wiki/Go_(language))",
			want: "<p>(" + link("https://en.wikipedia.org/wiki/Go_(language)", "https://", "en.wikipedia.org/wiki/Go_(lang", "uage)", true) + ")</p>"},
		{name: "path cannot end in =", text: "https://example.com/a= b",
			want: "<p>" + link("https://example.com/a", "https://", "example.com/a", "", false) + "= b</p>"},
		{name: "query cannot end in !", text: "https://example.com/?q=a!",
			want: "<p>" + link("https://example.com/?q=a", "https://", "example.com/?q=a", "", false) + "!</p>"},
		{name: "a non-ASCII letter may precede a link", text: "éhttps://example.com",
			want: "<p>é" + link("https://example.com", "https://", "example.com", "", false) + "</p>"},
		{name: "glued to an ASCII letter is not a link", text: "xhttps://example.com", want: "<p>xhttps://example.com</p>"},
		{name: "unknown top-level domain is not a link", text: "https://example.invalid/x", want: "<p>https://example.invalid/x</p>"},
		{name: "links and paragraphs", text: "One https://a.io\n\nTwo <3",
			want: "<p>One " + link("https://a.io", "https://", "a.io", "", false) + "</p><p>Two &lt;3</p>"},
		{name: "mention of a sandbox account", text: "hi @bob!", want: "<p>hi " + bob + "!</p>"},
		{name: "mention is stored with the account's username", text: "hi @BOB", want: "<p>hi " + bob + "</p>", wantSource: "hi @bob"},
		{name: "mention of the author", text: "@alice says hi",
			want: `<p><span class="h-card" translate="no"><a href="` + base + `/@alice" class="u-url mention">@<span>alice</span></a></span> says hi</p>`},
		{name: "remote mention does not resolve", text: "cc @carol@remote.example", want: "<p>cc @carol@remote.example</p>"},
		{name: "unknown local mention", text: "cc @nobody", want: "<p>cc @nobody</p>"},
		{name: "at sign inside a word is not a mention", text: "mail@bob", want: "<p>mail@bob</p>"},
		{name: "mention followed by an at sign is not linked", text: "@bob@ x", want: "<p>@bob@ x</p>"},
		{name: "hashtag", text: "#golang rocks", want: "<p>" + tag("golang", "golang") + " rocks</p>"},
		{name: "hashtag keeps its case and stops at punctuation", text: "I like #GoLang.", want: "<p>I like " + tag("GoLang", "GoLang") + ".</p>"},
		{name: "full-width hash sign is rendered as #", text: "＃日本 and #café", want: "<p>" + tag("日本", "%E6%97%A5%E6%9C%AC") + " and " + tag("café", "caf%C3%A9") + "</p>",
			wantText: "#日本 and #café"},
		{name: "hash inside a word is not a hashtag", text: "a#tag", want: "<p>a#tag</p>"},
		{name: "digits only is not a hashtag", text: "#123 #1a", want: "<p>#123 " + tag("1a", "1a") + "</p>"},
		{name: "hashtag in a link belongs to the link", text: "https://example.com/#frag",
			want: "<p>" + link("https://example.com/#frag", "https://", "example.com/#frag", "", false) + "</p>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := mustStatus(t, post(t, s, a, tt.text, ""))
			if st.Content != tt.want {
				t.Errorf("content\n got %s\nwant %s", st.Content, tt.want)
			}
			if got := s.RenderContent(tt.text); got != tt.want {
				t.Errorf("RenderContent\n got %s\nwant %s", got, tt.want)
			}
			wantSource := tt.wantSource
			if wantSource == "" {
				wantSource = stripText(tt.text)
			}
			want := tt.wantText
			if want == "" {
				want = wantSource
			}
			if got := htmlText(t, st.Content); got != want {
				t.Errorf("HTML reads as %q, want %q", got, want)
			}
			src := get(t, s.URL()+"/api/v1/statuses/"+st.ID+"/source", a.AccessToken)
			var source struct{ ID, Text, SpoilerText string }
			src.decode(t, &source)
			if source.Text != wantSource || source.ID != st.ID {
				t.Errorf("source = %+v, want text %q", source, wantSource)
			}
		})
	}
}

func TestStatusJSON(t *testing.T) {
	clock := newClock()
	s := start(t, Options{Now: clock.Now})
	a := s.AddAccount("alice")
	st := mustStatus(t, post(t, s, a, "hi", ""))
	want := apiStatus{
		ID:          st.ID,
		CreatedAt:   "2025-03-01T12:00:00.000Z",
		Content:     "<p>hi</p>",
		Visibility:  "public",
		URL:         s.URL() + "/@alice/" + st.ID,
		URI:         s.URL() + "/users/alice/statuses/" + st.ID,
		SpoilerText: "",
	}
	want.Application.Name = "sandbox"
	want.Account.ID, want.Account.Username, want.Account.Acct, want.Account.DisplayName = a.ID, "alice", "alice", "alice"
	want.MediaAttachments = []apiMedia{}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	// language is null, not absent; media_attachments is [], not null.
	r := get(t, s.URL()+"/api/v1/statuses/"+st.ID, "")
	var raw map[string]json.RawMessage
	r.decode(t, &raw)
	for k, v := range map[string]string{"language": "null", "media_attachments": "[]", "sensitive": "false", "spoiler_text": `""`} {
		if got := string(raw[k]); got != v {
			t.Errorf("%s = %s, want %s", k, got, v)
		}
	}
}

func TestCreateRequestFormats(t *testing.T) {
	s := start(t, Options{MediaProcessingPolls: -1})
	a := s.AddAccount("alice")
	m1, m2 := upload(t, s, a, []byte("one"), "first"), upload(t, s, a, []byte("two"), "")
	tests := []struct {
		name        string
		contentType string
		body        func() []byte
		wantText    string
		wantMedia   []string
		wantVis     string
	}{
		{name: "form", contentType: formType, body: func() []byte {
			return []byte(url.Values{"status": {"form post"}, "visibility": {"unlisted"}}.Encode())
		}, wantText: "<p>form post</p>", wantVis: "unlisted"},
		{name: "json with string and number media ids", contentType: "application/json; charset=utf-8", body: func() []byte {
			return []byte(fmt.Sprintf(`{"status":"json post","media_ids":[%q,%s]}`, m1.ID, m2.ID))
		}, wantText: "<p>json post</p>", wantMedia: []string{m1.ID, m2.ID}, wantVis: "public"},
		{name: "multipart", body: nil, wantText: "<p>multipart post</p>", wantVis: "private"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, ct := []byte(nil), tt.contentType
			if tt.body != nil {
				body = tt.body()
			} else {
				var buf bytes.Buffer
				mw := multipart.NewWriter(&buf)
				_ = mw.WriteField("status", "multipart post")
				_ = mw.WriteField("visibility", "private")
				_ = mw.Close()
				body, ct = buf.Bytes(), mw.FormDataContentType()
			}
			st := mustStatus(t, mustSend(t, http.MethodPost, s.URL()+"/api/v1/statuses", a.AccessToken, ct, body, nil))
			var media []string
			for _, m := range st.MediaAttachments {
				media = append(media, m.ID)
			}
			if diff := cmp.Diff(tt.wantMedia, media); diff != "" {
				t.Errorf("media (-want +got):\n%s", diff)
			}
			if st.Content != tt.wantText || st.Visibility != tt.wantVis {
				t.Errorf("content %q visibility %q, want %q %q", st.Content, st.Visibility, tt.wantText, tt.wantVis)
			}
		})
	}
}

func TestValidation(t *testing.T) {
	longURL := "https://example.com/" + strings.Repeat("p", 80)
	tests := []struct {
		name       string
		text       string
		form       url.Values // overrides text
		wantStatus int
		wantError  string
	}{
		{name: "blank", text: "  \n ", wantStatus: 422, wantError: "Validation failed: Text can't be blank"},
		{name: "unicode white space only is blank", text: "\u3000\u00a0\n", wantStatus: 422, wantError: "Validation failed: Text can't be blank"},
		{name: "a mention counts without its domain", text: strings.Repeat("a", 480) + " @carol@" + strings.Repeat("d", 40) + ".example", wantStatus: 200},
		{name: "500 characters", text: strings.Repeat("a", 500), wantStatus: 200},
		{name: "501 characters", text: strings.Repeat("a", 501), wantStatus: 422, wantError: "Validation failed: Text character limit of 500 exceeded"},
		{name: "graphemes, not bytes", text: strings.Repeat("👍🏽", 500), wantStatus: 200},
		{name: "a link counts 23", text: strings.Repeat("a", 476) + " " + longURL, wantStatus: 200},
		{name: "a link counts 23, one over", text: strings.Repeat("a", 477) + " " + longURL, wantStatus: 422,
			wantError: "Validation failed: Text character limit of 500 exceeded"},
		{name: "bad visibility", form: url.Values{"status": {"x"}, "visibility": {"everyone"}}, wantStatus: 422,
			wantError: "Validation failed: Visibility is not included in the list"},
		{name: "unknown media", form: url.Values{"status": {"x"}, "media_ids[]": {"12345"}}, wantStatus: 422,
			wantError: "Media 12345 not found or already attached to another post"},
		{name: "too many media", form: url.Values{"status": {"x"}, "media_ids[]": {"1", "2", "3", "4", "5"}}, wantStatus: 422,
			wantError: "Cannot attach more than 4 files"},
	}
	s := start(t, Options{})
	a := s.AddAccount("alice")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			form := tt.form
			if form == nil {
				form = url.Values{"status": {tt.text}}
			}
			before := s.Stats().Committed
			r := mustSend(t, http.MethodPost, s.URL()+"/api/v1/statuses", a.AccessToken, formType, []byte(form.Encode()), nil)
			if r.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d (%s)", r.status, tt.wantStatus, r.body)
			}
			if tt.wantError != "" {
				if got := errorOf(t, r); got != tt.wantError {
					t.Errorf("error = %q, want %q", got, tt.wantError)
				}
				if got := s.Stats().Committed; got != before {
					t.Errorf("Committed went from %d to %d on a rejected create", before, got)
				}
			}
		})
	}
}

func TestPagination(t *testing.T) {
	s := start(t, Options{})
	a := s.AddAccount("alice")
	other := s.AddAccount("bob")
	var ids []string // oldest first
	for i := range 6 {
		ids = append(ids, s.InjectStatus(a.ID, fmt.Sprint("status ", i)).ID)
		s.InjectStatus(other.ID, fmt.Sprint("noise ", i))
	}
	del := mustSend(t, http.MethodDelete, s.URL()+"/api/v1/statuses/"+ids[5], a.AccessToken, "", nil, nil)
	if del.status != 200 {
		t.Fatalf("delete: %d", del.status)
	}
	// ids[5] is deleted; live, newest first: 4 3 2 1 0.
	tests := []struct {
		query    string
		want     []int
		wantNext string // max_id in the next link, "" for none
	}{
		{query: "", want: []int{4, 3, 2, 1, 0}},
		{query: "limit=2", want: []int{4, 3}, wantNext: ids[3]},
		{query: "limit=2&max_id=" + ids[3], want: []int{2, 1}, wantNext: ids[1]},
		{query: "since_id=" + ids[2], want: []int{4, 3}},
		{query: "limit=1&since_id=" + ids[2], want: []int{4}, wantNext: ids[4]},
		{query: "limit=2&min_id=" + ids[0], want: []int{2, 1}, wantNext: ids[1]},
		{query: "min_id=" + ids[0] + "&max_id=" + ids[3], want: []int{2, 1}},
		{query: "min_id=" + ids[1] + "&since_id=" + ids[3], want: []int{4, 3, 2}},
		{query: "max_id=" + ids[0], want: []int{}},
		{query: "limit=0", want: []int{4, 3, 2, 1, 0}},
		// A present id of 0 counts (Rails' present?): min_id=0 pages from
		// the oldest status, since_id=0 excludes nothing, max_id=0 all.
		{query: "limit=2&min_id=0", want: []int{1, 0}, wantNext: ids[0]},
		{query: "min_id=0", want: []int{4, 3, 2, 1, 0}},
		{query: "limit=2&min_id=" + ids[1], want: []int{3, 2}, wantNext: ids[2]},
		{query: "since_id=0", want: []int{4, 3, 2, 1, 0}},
		{query: "max_id=0", want: []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			r := get(t, s.URL()+"/api/v1/accounts/"+a.ID+"/statuses?"+tt.query, other.AccessToken)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			var page []apiStatus
			r.decode(t, &page)
			got := []string{}
			for _, st := range page {
				got = append(got, st.ID)
			}
			want := []string{}
			for _, i := range tt.want {
				want = append(want, ids[i])
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
			link := r.header.Get("Link")
			hasNext := strings.Contains(link, `rel="next"`)
			if tt.wantNext == "" && hasNext {
				t.Errorf("Link %q has a next page, want none", link)
			}
			if tt.wantNext != "" && !strings.Contains(link, "max_id="+tt.wantNext+`>; rel="next"`) {
				t.Errorf("Link %q, want next with max_id=%s", link, tt.wantNext)
			}
		})
	}
	t.Run("limit is clamped to 40, default 20", func(t *testing.T) {
		for i := range 45 {
			s.InjectStatus(a.ID, fmt.Sprint("more ", i))
		}
		for query, want := range map[string]int{"": 20, "limit=100": 40, "limit=40": 40, "limit=7": 7} {
			var page []apiStatus
			get(t, s.URL()+"/api/v1/accounts/"+a.ID+"/statuses?"+query, a.AccessToken).decode(t, &page)
			if len(page) != want {
				t.Errorf("%q: %d statuses, want %d", query, len(page), want)
			}
		}
	})
	t.Run("errors", func(t *testing.T) {
		cases := []struct {
			url, token string
			want       int
		}{
			{url: "/api/v1/accounts/" + a.ID + "/statuses", token: "", want: 401},
			{url: "/api/v1/accounts/" + a.ID + "/statuses", token: "bogus", want: 401},
			{url: "/api/v1/accounts/999/statuses", token: a.AccessToken, want: 404},
			{url: "/api/v1/accounts/" + a.ID + "/statuses?max_id=abc", token: a.AccessToken, want: 400},
		}
		for _, c := range cases {
			if r := get(t, s.URL()+c.url, c.token); r.status != c.want {
				t.Errorf("GET %s: %d, want %d", c.url, r.status, c.want)
			}
		}
	})
}

// mediaForm builds a multipart media upload body.
func mediaForm(t *testing.T, data []byte, description string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", "image.png")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(data)
	if description != "" {
		_ = mw.WriteField("description", description)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), mw.FormDataContentType()
}

// upload posts a media file and returns the decoded answer.
func upload(t *testing.T, s *Server, a Account, data []byte, description string) apiMedia {
	t.Helper()
	body, ct := mediaForm(t, data, description)
	r := mustSend(t, http.MethodPost, s.URL()+"/api/v2/media", a.AccessToken, ct, body, nil)
	if r.status != http.StatusOK && r.status != http.StatusAccepted {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	var m apiMedia
	r.decode(t, &m)
	return m
}

func TestMedia(t *testing.T) {
	tests := []struct {
		name       string
		polls      int
		wantUpload int
		wantPolls  []int // statuses of GET /api/v1/media/:id in order
	}{
		{name: "default: one 206", polls: 0, wantUpload: 202, wantPolls: []int{206, 200, 200}},
		{name: "three 206", polls: 3, wantUpload: 202, wantPolls: []int{206, 206, 206, 200}},
		{name: "processed at upload", polls: -1, wantUpload: 200, wantPolls: []int{200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, Options{MediaProcessingPolls: tt.polls})
			a := s.AddAccount("alice")
			body, ct := mediaForm(t, []byte("\x89PNG fake"), "a cat")
			r := mustSend(t, http.MethodPost, s.URL()+"/api/v2/media", a.AccessToken, ct, body, nil)
			if r.status != tt.wantUpload {
				t.Fatalf("upload status %d, want %d", r.status, tt.wantUpload)
			}
			var m apiMedia
			r.decode(t, &m)
			if (m.URL == nil) != (tt.wantUpload == 202) || m.Type != "image" || m.Description == nil || *m.Description != "a cat" {
				t.Errorf("upload answer %+v: want type image, description, url null exactly when 202", m)
			}
			if tt.wantUpload == 202 {
				attach := post(t, s, a, "too early", "", m.ID)
				if attach.status != 422 || errorOf(t, attach) != "Cannot attach files that have not finished processing. Try again in a moment!" {
					t.Errorf("attaching unprocessed media: %d %s, want 422 not finished processing", attach.status, attach.body)
				}
			}
			var got []int
			for range tt.wantPolls {
				pr := get(t, s.URL()+"/api/v1/media/"+m.ID, a.AccessToken)
				var pm apiMedia
				pr.decode(t, &pm)
				if (pm.URL == nil) != (pr.status == 206) {
					t.Errorf("poll answered %d with url %v: want url null exactly on 206", pr.status, pm.URL)
				}
				got = append(got, pr.status)
			}
			if diff := cmp.Diff(tt.wantPolls, got); diff != "" {
				t.Errorf("poll statuses (-want +got):\n%s", diff)
			}
			st := mustStatus(t, post(t, s, a, "with a cat", "", m.ID))
			if len(st.MediaAttachments) != 1 || st.MediaAttachments[0].URL == nil {
				t.Fatalf("media_attachments = %+v, want one with a url", st.MediaAttachments)
			}
			file := get(t, *st.MediaAttachments[0].URL, "")
			if file.status != 200 || string(file.body) != "\x89PNG fake" {
				t.Errorf("media url served %d %q", file.status, file.body)
			}
			// Attached media is no longer readable nor attachable.
			if pr := get(t, s.URL()+"/api/v1/media/"+m.ID, a.AccessToken); pr.status != 404 {
				t.Errorf("GET attached media: %d, want 404", pr.status)
			}
			again := post(t, s, a, "again", "", m.ID)
			if again.status != 422 || errorOf(t, again) != "Media "+m.ID+" not found or already attached to another post" {
				t.Errorf("re-attaching: %d %s", again.status, again.body)
			}
		})
	}
	t.Run("media belongs to the uploader", func(t *testing.T) {
		s := start(t, Options{MediaProcessingPolls: -1})
		a, b := s.AddAccount("alice"), s.AddAccount("bob")
		m := upload(t, s, a, []byte("x"), "")
		if r := get(t, s.URL()+"/api/v1/media/"+m.ID, b.AccessToken); r.status != 404 {
			t.Errorf("other account GET: %d, want 404", r.status)
		}
		if r := post(t, s, b, "steal", "", m.ID); r.status != 422 {
			t.Errorf("other account attach: %d, want 422", r.status)
		}
		r := mustSend(t, http.MethodPost, s.URL()+"/api/v2/media", a.AccessToken, formType, []byte("description=x"), nil)
		if r.status != 422 || errorOf(t, r) != "Validation failed: File can't be blank" {
			t.Errorf("upload without file: %d %s", r.status, r.body)
		}
	})
}

func TestReadAndDelete(t *testing.T) {
	s := start(t, Options{})
	a, b := s.AddAccount("alice"), s.AddAccount("bob")
	st := mustStatus(t, post(t, s, a, "to delete", ""))
	statusURL := s.URL() + "/api/v1/statuses/" + st.ID
	steps := []struct {
		name       string
		method     string
		url        string
		token      string
		wantStatus int
		wantText   *string
	}{
		{name: "get without token", method: "GET", url: statusURL, wantStatus: 200},
		{name: "get with a bad token", method: "GET", url: statusURL, token: "bogus", wantStatus: 401},
		{name: "source needs a token", method: "GET", url: statusURL + "/source", wantStatus: 401},
		{name: "someone else cannot delete", method: "DELETE", url: statusURL, token: b.AccessToken, wantStatus: 404},
		{name: "owner deletes", method: "DELETE", url: statusURL, token: a.AccessToken, wantStatus: 200, wantText: new("to delete")},
		{name: "gone", method: "GET", url: statusURL, token: a.AccessToken, wantStatus: 404},
		{name: "source gone", method: "GET", url: statusURL + "/source", token: a.AccessToken, wantStatus: 404},
		{name: "delete again", method: "DELETE", url: statusURL, token: a.AccessToken, wantStatus: 404},
		{name: "not an id", method: "GET", url: s.URL() + "/api/v1/statuses/abc", wantStatus: 404},
		{name: "unknown route", method: "GET", url: s.URL() + "/api/v1/nothing", wantStatus: 404},
	}
	for _, step := range steps {
		r := mustSend(t, step.method, step.url, step.token, "", nil, nil)
		if r.status != step.wantStatus {
			t.Errorf("%s: %d, want %d (%s)", step.name, r.status, step.wantStatus, r.body)
			continue
		}
		if r.status != 200 {
			if errorOf(t, r) == "" {
				t.Errorf("%s: body %s, want a JSON error", step.name, r.body)
			}
			continue
		}
		var got apiStatus
		r.decode(t, &got)
		if diff := cmp.Diff(step.wantText, got.Text); diff != "" {
			t.Errorf("%s: text (-want +got):\n%s", step.name, diff)
		}
	}
	if got := s.Stats().Deleted; got != 1 {
		t.Errorf("Deleted = %d, want 1", got)
	}
	if got := s.Statuses(a.ID); len(got) != 0 {
		t.Errorf("Statuses after delete = %v, want none", got)
	}
}

func refreshForm(refresh, id, secret string) []byte {
	v := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}
	if id != "" {
		v.Set("client_id", id)
		v.Set("client_secret", secret)
	}
	return []byte(v.Encode())
}

type tokenAnswer struct {
	AccessToken      string `json:"access_token"`
	TokenType        string `json:"token_type"`
	Scope            string `json:"scope"`
	CreatedAt        int64  `json:"created_at"`
	ExpiresIn        int64  `json:"expires_in"`
	RefreshToken     string `json:"refresh_token"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

func TestTokens(t *testing.T) {
	clock := newClock()
	s := start(t, Options{TokenTTL: time.Hour, Now: clock.Now})
	a := s.AddAccount("alice")
	verify := s.URL() + "/api/v1/accounts/verify_credentials"
	tokenURL := s.URL() + "/oauth/token"

	if r := get(t, verify, a.AccessToken); r.status != 200 {
		t.Fatalf("fresh token: %d", r.status)
	}
	clock.Advance(time.Hour)
	r := get(t, verify, a.AccessToken)
	if r.status != 401 || errorOf(t, r) != "The access token is invalid" || r.header.Get("WWW-Authenticate") != `Bearer error="invalid_token"` {
		t.Fatalf("expired token: %d %s %q", r.status, r.body, r.header.Get("WWW-Authenticate"))
	}
	if r := post(t, s, a, "with an expired token", ""); r.status != 401 || s.Stats().Committed != 0 {
		t.Errorf("create with expired token: %d, Committed %d; want 401 and nothing committed", r.status, s.Stats().Committed)
	}

	rr := mustSend(t, http.MethodPost, tokenURL, "", formType, refreshForm(a.RefreshToken, "sandbox-client", "sandbox-secret"), nil)
	var tok tokenAnswer
	rr.decode(t, &tok)
	if rr.status != 200 {
		t.Fatalf("refresh: %d %s", rr.status, rr.body)
	}
	want := tokenAnswer{AccessToken: tok.AccessToken, TokenType: "Bearer", Scope: "read write",
		CreatedAt: clock.Now().Unix(), ExpiresIn: 3600, RefreshToken: tok.RefreshToken}
	if diff := cmp.Diff(want, tok); diff != "" {
		t.Errorf("token answer (-want +got):\n%s", diff)
	}
	if tok.AccessToken == a.AccessToken || tok.RefreshToken == a.RefreshToken || tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Errorf("refresh did not rotate both tokens")
	}
	var me struct{ ID, Username string }
	vr := get(t, verify, tok.AccessToken)
	vr.decode(t, &me)
	if vr.status != 200 || me.ID != a.ID || me.Username != "alice" {
		t.Errorf("verify with the new token: %d %+v", vr.status, me)
	}

	steps := []struct {
		name      string
		body      []byte
		basicAuth [2]string
		wantError string
	}{
		{name: "old refresh token is refused", body: refreshForm(a.RefreshToken, "sandbox-client", "sandbox-secret"), wantError: "invalid_grant"},
		{name: "wrong client secret", body: refreshForm(tok.RefreshToken, "sandbox-client", "nope"), wantError: "invalid_grant"},
		{name: "no client", body: refreshForm(tok.RefreshToken, "", ""), wantError: "invalid_grant"},
		{name: "wrong grant type", body: []byte("grant_type=password&username=a&password=b"), wantError: "unsupported_grant_type"},
	}
	for _, step := range steps {
		r := mustSend(t, http.MethodPost, tokenURL, "", formType, step.body, nil)
		var e tokenAnswer
		r.decode(t, &e)
		if r.status != 400 || e.Error != step.wantError || e.ErrorDescription == "" {
			t.Errorf("%s: %d %s, want 400 %s", step.name, r.status, r.body, step.wantError)
		}
	}

	t.Run("expired access token, then refresh through golang.org/x/oauth2 with basic auth", func(t *testing.T) {
		s.ExpireAccessToken(a.ID)
		if r := get(t, verify, tok.AccessToken); r.status != 401 {
			t.Fatalf("after ExpireAccessToken: %d, want 401", r.status)
		}
		conf := &oauth2.Config{ClientID: "sandbox-client", ClientSecret: "sandbox-secret",
			Endpoint: oauth2.Endpoint{TokenURL: tokenURL, AuthStyle: oauth2.AuthStyleInHeader}}
		ctx := context.WithValue(context.Background(), oauth2.HTTPClient, client)
		old := &oauth2.Token{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, Expiry: time.Now().Add(-time.Minute)}
		fresh, err := conf.TokenSource(ctx, old).Token()
		if err != nil {
			t.Fatalf("oauth2 refresh: %v", err)
		}
		if fresh.RefreshToken == tok.RefreshToken || fresh.AccessToken == tok.AccessToken {
			t.Errorf("oauth2 refresh did not rotate")
		}
		if r := get(t, verify, fresh.AccessToken); r.status != 200 {
			t.Errorf("verify with the oauth2 token: %d", r.status)
		}
		// The rotated-away refresh token fails through oauth2 too.
		_, err = conf.TokenSource(ctx, old).Token()
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
			t.Errorf("refresh with the old token: %v, want invalid_grant", err)
		}

		s.RevokeRefreshToken(a.ID)
		r := mustSend(t, http.MethodPost, tokenURL, "", formType, refreshForm(fresh.RefreshToken, "sandbox-client", "sandbox-secret"), nil)
		var e tokenAnswer
		r.decode(t, &e)
		if r.status != 400 || e.Error != "invalid_grant" {
			t.Errorf("revoked refresh token: %d %s, want 400 invalid_grant", r.status, r.body)
		}
		if r := get(t, verify, fresh.AccessToken); r.status != 200 {
			t.Errorf("revoking the refresh token should leave the access token working, got %d", r.status)
		}
	})
}

func TestTokensNeverExpireByDefault(t *testing.T) {
	clock := newClock()
	s := start(t, Options{Now: clock.Now})
	a := s.AddAccount("alice")
	clock.Advance(10 * 365 * 24 * time.Hour)
	if r := get(t, s.URL()+"/api/v1/accounts/verify_credentials", a.AccessToken); r.status != 200 {
		t.Errorf("token after ten years: %d, want 200", r.status)
	}
	var tok tokenAnswer
	get(t, s.URL()+"/sandbox/stats", "") // unrelated route keeps working
	r := mustSend(t, http.MethodPost, s.URL()+"/oauth/token", "", formType, refreshForm(a.RefreshToken, "sandbox-client", "sandbox-secret"), nil)
	r.decode(t, &tok)
	var raw map[string]json.RawMessage
	r.decode(t, &raw)
	if _, ok := raw["expires_in"]; ok || r.status != 200 {
		t.Errorf("refresh without TTL: %d %s, want 200 without expires_in", r.status, r.body)
	}
}

func TestStatsEndpointAndInstance(t *testing.T) {
	s := start(t, Options{MaxCharacters: 300, MaxMediaAttachments: 2})
	a := s.AddAccount("alice")
	s.InjectStatus(a.ID, "dup")
	mustStatus(t, post(t, s, a, "dup", "k"))
	mustStatus(t, post(t, s, a, "dup", "k"))
	var got map[string]int
	r := get(t, s.URL()+"/sandbox/stats", "")
	r.decode(t, &got)
	want := map[string]int{"create_requests": 2, "committed": 2, "idempotent_replays": 1, "duplicates": 1, "deleted": 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/sandbox/stats (-want +got):\n%s", diff)
	}

	var inst struct {
		URI           string `json:"uri"`
		Configuration struct {
			Statuses struct {
				MaxCharacters       int `json:"max_characters"`
				MaxMediaAttachments int `json:"max_media_attachments"`
			} `json:"statuses"`
		} `json:"configuration"`
	}
	get(t, s.URL()+"/api/v1/instance", "").decode(t, &inst)
	if inst.URI != strings.TrimPrefix(s.URL(), "http://") || inst.Configuration.Statuses.MaxCharacters != 300 || inst.Configuration.Statuses.MaxMediaAttachments != 2 {
		t.Errorf("instance = %+v", inst)
	}
}

func TestTimelinePage(t *testing.T) {
	s := start(t, Options{})
	a, b := s.AddAccount("alice"), s.AddAccount("bob")
	first := s.InjectStatus(a.ID, "first <script>alert(1)</script>")
	second := mustStatus(t, post(t, s, b, "second & last", ""))
	gone := mustStatus(t, post(t, s, a, "deleted one", ""))
	mustSend(t, http.MethodDelete, s.URL()+"/api/v1/statuses/"+gone.ID, a.AccessToken, "", nil, nil)

	r := get(t, s.URL()+"/", "")
	page := string(r.body)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", r.status, r.header.Get("Content-Type"))
	}
	for _, want := range []string{"first &lt;script&gt;alert(1)&lt;/script&gt;", "second &amp; last", "@alice", "@bob", first.ID, second.ID,
		first.CreatedAt.UTC().Format(timeFormat)} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script>", "deleted one", "<script src"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if strings.Index(page, second.ID) > strings.Index(page, first.ID) {
		t.Errorf("page is not newest first")
	}
}

func TestCloseCutsDelaysShort(t *testing.T) {
	s := New(Options{})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	a := s.AddAccount("alice")
	s.Script(Fault{Kind: FaultDelayBeforeCommit, Delay: time.Minute})
	done := make(chan error, 1)
	go func() {
		_, err := send(client, http.MethodPost, s.URL()+"/api/v1/statuses", a.AccessToken, formType, createForm("slow"), nil)
		done <- err
	}()
	waitFor(t, "the request to arrive", func() bool { return s.Stats().CreateRequests == 1 })
	time.Sleep(20 * time.Millisecond) // let the handler reach the delay
	began := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("Close took %v with a one-minute delay pending", took)
	}
	if got := s.Stats().Committed; got != 1 {
		t.Errorf("Committed after Close = %d, want 1 (the delayed commit lands)", got)
	}
	<-done
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Start(); err == nil {
		t.Errorf("Start after Close succeeded")
	}
}

func TestConcurrentCreates(t *testing.T) {
	s := start(t, Options{})
	a := s.AddAccount("alice")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			key := fmt.Sprint("k", i%5)
			r, err := send(client, http.MethodPost, s.URL()+"/api/v1/statuses", a.AccessToken, formType, createForm("same "+key), map[string]string{"Idempotency-Key": key})
			if err != nil || r.status != 200 {
				t.Errorf("create: %v %d", err, r.status)
			}
		})
	}
	wg.Wait()
	if diff := cmp.Diff(Stats{CreateRequests: 20, Committed: 5, IdempotentReplays: 15}, s.Stats()); diff != "" {
		t.Errorf("Stats (-want +got):\n%s", diff)
	}
	sts := s.Statuses(a.ID)
	for i := 1; i < len(sts); i++ {
		prev, _ := strconv.ParseUint(sts[i-1].ID, 10, 64)
		cur, _ := strconv.ParseUint(sts[i].ID, 10, 64)
		if prev <= cur {
			t.Errorf("Statuses not newest first: %s before %s", sts[i-1].ID, sts[i].ID)
		}
	}
}

func TestRestoreAccount(t *testing.T) {
	first := New(Options{})
	a := first.AddAccount("news")
	s := New(Options{})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.RestoreAccount(a); err != nil {
		t.Fatal(err)
	}
	if err := s.RestoreAccount(a); err == nil {
		t.Errorf("restoring a taken id succeeded")
	}
	if err := s.RestoreAccount(Account{ID: "1"}); err == nil {
		t.Errorf("restoring an account without tokens succeeded")
	}
	req, _ := http.NewRequest("GET", s.URL()+"/api/v1/accounts/verify_credentials", nil)
	req.Header.Set("Authorization", "Bearer "+a.AccessToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("restored token answered %d, want 200", resp.StatusCode)
	}
	if st := s.InjectStatus(a.ID, "hello"); st.AccountID != a.ID {
		t.Errorf("status on restored account has account %q", st.AccountID)
	}
}

// TestCreateLog checks that every status create is on record with what
// the fault plan did to it, so a drill can explain each outcome.
func TestCreateLog(t *testing.T) {
	clock := newClock()
	s := start(t, Options{Now: clock.Now})
	a := s.AddAccount("alice")
	s.AddAccount("bob")
	s.Script(
		Fault{Kind: FaultDropRequest},
		Fault{Kind: Fault503},
		Fault{Kind: Fault429},
		Fault{Kind: Fault401},
		Fault{Kind: FaultDropResponse},
		Fault{Kind: Fault500AfterCommit},
	)
	create := func(token, text, key string) response {
		t.Helper()
		r, err := send(client, http.MethodPost, s.URL()+"/api/v1/statuses", token, formType, createForm(text), map[string]string{"Idempotency-Key": key})
		if err != nil {
			return response{}
		}
		return r
	}
	create(a.AccessToken, "dropped", "k1")
	create(a.AccessToken, "unavailable", "k2")
	create(a.AccessToken, "throttled", "k3")
	create(a.AccessToken, "refused", "k4")
	create(a.AccessToken, "lost answer", "k5")
	failed := create(a.AccessToken, "server error", "k6")
	ok := mustStatus(t, create(a.AccessToken, "  hello @BOB  ", "k7"))
	replay := mustStatus(t, create(a.AccessToken, "lost answer", "k5"))
	create(a.AccessToken, " \n ", "k8")
	create("bogus", "no account", "k9")

	if failed.status != 500 {
		t.Fatalf("500-after-commit answered %d", failed.status)
	}
	byText := map[string]string{}
	for _, st := range s.Statuses(a.ID) {
		byText[st.Text] = st.ID
	}
	at := clock.Now()
	fp := func(text string) string { return platform.Fingerprint(text, nil) }
	want := []CreateRecord{
		{Seq: 1, AccountID: a.ID, IdempotencyKey: "k1", Fault: "drop-request", At: at},
		{Seq: 2, AccountID: a.ID, IdempotencyKey: "k2", Fingerprint: fp("unavailable"), Fault: "503", HTTPStatus: 503, At: at},
		{Seq: 3, AccountID: a.ID, IdempotencyKey: "k3", Fingerprint: fp("throttled"), Fault: "429", HTTPStatus: 429, At: at},
		{Seq: 4, AccountID: a.ID, IdempotencyKey: "k4", Fingerprint: fp("refused"), Fault: "401", HTTPStatus: 401, At: at},
		{Seq: 5, AccountID: a.ID, IdempotencyKey: "k5", Fingerprint: fp("lost answer"), Fault: "drop-response",
			Committed: true, StatusID: byText["lost answer"], At: at},
		{Seq: 6, AccountID: a.ID, IdempotencyKey: "k6", Fingerprint: fp("server error"), Fault: "500-after-commit",
			Committed: true, StatusID: byText["server error"], HTTPStatus: 500, At: at},
		{Seq: 7, AccountID: a.ID, IdempotencyKey: "k7", Fingerprint: fp("hello @bob"), Committed: true, StatusID: ok.ID, HTTPStatus: 200, At: at},
		{Seq: 8, AccountID: a.ID, IdempotencyKey: "k5", Fingerprint: fp("lost answer"), StatusID: replay.ID, HTTPStatus: 200, At: at},
		{Seq: 9, AccountID: a.ID, IdempotencyKey: "k8", Fingerprint: fp(""), HTTPStatus: 422, At: at},
		{Seq: 10, IdempotencyKey: "k9", Fingerprint: fp("no account"), HTTPStatus: 401, At: at},
	}
	if diff := cmp.Diff(want, s.Creates()); diff != "" {
		t.Errorf("Creates (-want +got):\n%s", diff)
	}
	if replay.ID != byText["lost answer"] || byText["lost answer"] == "" {
		t.Errorf("replay answered %s, want the committed %s", replay.ID, byText["lost answer"])
	}
	// Creates returns a copy.
	got := s.Creates()
	got[0].Fault = "changed"
	if s.Creates()[0].Fault != "drop-request" {
		t.Errorf("Creates shares its records with the server")
	}
}

// TestCreateLogStaysCheap keeps the record of a drill-sized run small and
// fast: 10,000 creates through the handler.
func TestCreateLogStaysCheap(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 creates")
	}
	s := New(Options{MaxCharacters: 500})
	a := s.AddAccount("alice")
	h := s.Handler()
	for i := range 10_000 {
		req := httptest.NewRequest(http.MethodPost, "http://sandbox.test/api/v1/statuses", strings.NewReader(string(createForm(fmt.Sprint("post ", i)))))
		req.Header.Set("Authorization", "Bearer "+a.AccessToken)
		req.Header.Set("Content-Type", formType)
		req.Header.Set("Idempotency-Key", fmt.Sprint("k", i))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("create %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	creates := s.Creates()
	if len(creates) != 10_000 || creates[9_999].Seq != 10_000 || !creates[9_999].Committed {
		t.Fatalf("Creates: %d records, last %+v", len(creates), creates[len(creates)-1])
	}
}
