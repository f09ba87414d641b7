package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/clocktest"
)

// openStarted opens a server on opts and starts it; it is closed when the
// test ends (tests may close it earlier: Close is idempotent).
func openStarted(t *testing.T, opts Options) *Server {
	t.Helper()
	s, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
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

// mustClose closes s and fails the test on an error.
func mustClose(t *testing.T, s *Server) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// State dumps: everything a server holds, in comparable form.
type dumpAccount struct {
	ID, Username    string
	CreatedAt       time.Time
	Statuses        []string
	Live            int
	Access, Refresh string
}

type dumpToken struct {
	AccountID string
	ExpiresAt time.Time
	Revoked   bool
	App       string
}

type dumpGrant struct {
	AccountID, AccessToken, ClientID, Scope, App string
}

type dumpStatus struct {
	Status
	Deleted bool
	App     string
}

// dumpAppRef names an application in a dump: its id and name.
func dumpAppRef(a *app) string {
	if a == nil {
		return "<nil>"
	}
	return a.id + " " + a.name
}

type dumpMedia struct {
	ID, AccountID, ContentType, Description, SHA256, StatusID string
	Data                                                      []byte
	PollsLeft                                                 int
}

type dumpIdem struct {
	StatusID uint64
	Expires  time.Time
}

type dumpApp struct {
	ID, Name, Website, ClientID, ClientSecret string
	RedirectURIs, Scopes                      []string
	CreatedAt                                 time.Time
}

type dumpCode struct {
	ClientID, RedirectURI, Scope, AccountID string
	ExpiresAt                               time.Time
}

type dump struct {
	LastID       uint64
	Accounts     []dumpAccount
	Access       map[string]dumpToken
	Refresh      map[string]dumpGrant
	Statuses     map[uint64]dumpStatus
	Media        map[string]dumpMedia
	Idempotency  map[string]dumpIdem
	Fingerprints map[string]map[string]bool
	Stats        Stats
	Creates      []CreateRecord
	Apps         map[string]dumpApp
	Codes        map[string]dumpCode
}

// dumpState is everything s holds (but the fault scripts, which are not
// kept, and the random generator, see TestRestartKeepsTheRandomPlan).
func dumpState(s *Server) dump {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := dump{
		LastID: s.lastID, Stats: s.stats, Creates: slices.Clone(s.creates),
		Access: map[string]dumpToken{}, Refresh: map[string]dumpGrant{}, Statuses: map[uint64]dumpStatus{},
		Media: map[string]dumpMedia{}, Idempotency: map[string]dumpIdem{}, Fingerprints: map[string]map[string]bool{},
		Apps: map[string]dumpApp{}, Codes: map[string]dumpCode{},
	}
	for _, a := range s.accountOrder {
		da := dumpAccount{ID: a.id, Username: a.username, CreatedAt: a.createdAt, Live: a.live, Access: a.access, Refresh: a.refresh}
		for _, st := range a.statuses {
			da.Statuses = append(da.Statuses, st.ID)
		}
		d.Accounts = append(d.Accounts, da)
	}
	for k, v := range s.access {
		d.Access[k] = dumpToken{AccountID: v.accountID, ExpiresAt: v.expiresAt, Revoked: v.revoked, App: dumpAppRef(v.app)}
	}
	for k, v := range s.refresh {
		d.Refresh[k] = dumpGrant{AccountID: v.accountID, AccessToken: v.accessToken, ClientID: v.clientID, Scope: v.scope, App: dumpAppRef(v.app)}
	}
	for k, v := range s.statuses {
		d.Statuses[k] = dumpStatus{Status: v.clone(), Deleted: v.deleted, App: dumpAppRef(v.app)}
	}
	for k, m := range s.media {
		d.Media[k] = dumpMedia{ID: m.id, AccountID: m.accountID, ContentType: m.contentType, Description: m.description,
			SHA256: m.sha256, StatusID: m.statusID, Data: m.data, PollsLeft: m.pollsLeft}
	}
	for k, v := range s.idempotency {
		d.Idempotency[k] = dumpIdem{StatusID: v.statusID, Expires: v.expires}
	}
	for k, v := range s.fingerprints {
		d.Fingerprints[k] = maps.Clone(v)
	}
	for k, a := range s.apps {
		d.Apps[k] = dumpApp{ID: a.id, Name: a.name, Website: a.website, ClientID: a.clientID, ClientSecret: a.clientSecret,
			RedirectURIs: a.redirectURIs, Scopes: a.scopes, CreatedAt: a.createdAt}
	}
	for k, c := range s.codes {
		d.Codes[k] = dumpCode{ClientID: c.clientID, RedirectURI: c.redirectURI, Scope: c.scope, AccountID: c.accountID, ExpiresAt: c.expiresAt}
	}
	return d
}

// busyDay makes every kind of change the journal records and returns the
// accounts it made (alice, bob, carol) and an unused authorization code of
// the app it registered, with the app.
func busyDay(t *testing.T, s *Server, clock *clocktest.Clock) (accts []Account, code string, ap appAnswer) {
	t.Helper()
	alice, bob, carol := s.AddAccount("alice"), s.AddAccount("bob"), s.AddAccount("carol")
	restored := Account{ID: "42", Username: "old", AccessToken: "restored-access", RefreshToken: "restored-refresh"}
	if err := s.RestoreAccount(restored); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, post(t, s, alice, "  hello @BOB  ", "k1"))
	clock.Advance(time.Second)
	mustStatus(t, post(t, s, alice, "hello @BOB", "k1")) // idempotent replay
	mustStatus(t, post(t, s, alice, "twice", ""))
	mustStatus(t, post(t, s, alice, "twice", "")) // a duplicate
	gone := mustStatus(t, post(t, s, alice, "to be deleted", "k-gone"))
	if r := mustSend(t, http.MethodDelete, s.URL()+"/api/v1/statuses/"+gone.ID, alice.AccessToken, "", nil, nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	// Media: one processed (one 206 poll) and attached, one still processing.
	m := upload(t, s, alice, []byte("png bytes"), "a picture")
	if r := get(t, s.URL()+"/api/v1/media/"+m.ID, alice.AccessToken); r.status != 206 {
		t.Fatalf("media poll: %d", r.status)
	}
	mustStatus(t, post(t, s, alice, "with a picture", "k-media", m.ID))
	upload(t, s, bob, []byte("still processing"), "")
	s.InjectStatus(bob.ID, "injected")
	// Another application's tokens, a post with them and a refresh.
	web, err := s.AddToken(bob.ID, "Web")
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(t, post(t, s, web, "by hand", ""))
	if r := mustSend(t, http.MethodPost, s.URL()+"/oauth/token", "", formType, refreshForm(web.RefreshToken, "sandbox-client", "sandbox-secret"), nil); r.status != 200 {
		t.Fatalf("refresh of another app's token: %d %s", r.status, r.body)
	}
	// Faulted and refused creates.
	s.Script(Fault{Kind: Fault503}, Fault{Kind: FaultDropResponse}, Fault{Kind: Fault429})
	post(t, s, bob, "unavailable", "k503")
	if _, err := send(client, http.MethodPost, s.URL()+"/api/v1/statuses", bob.AccessToken, formType, createForm("lost answer"), map[string]string{"Idempotency-Key": "k-lost"}); err == nil {
		t.Fatalf("drop-response answered")
	}
	post(t, s, bob, "throttled", "k429")
	if r := post(t, s, bob, "   ", "k-blank"); r.status != 422 {
		t.Fatalf("blank create: %d", r.status)
	}
	post(t, s, Account{AccessToken: "bogus"}, "no account", "")
	// Tokens: a refresh rotation, an expiry, a revocation.
	if r := mustSend(t, http.MethodPost, s.URL()+"/oauth/token", "", formType, refreshForm(bob.RefreshToken, "sandbox-client", "sandbox-secret"), nil); r.status != 200 {
		t.Fatalf("refresh: %d %s", r.status, r.body)
	}
	s.ExpireAccessToken(carol.ID)
	s.RevokeRefreshToken(carol.ID)
	// An app, a spent code and an unused one.
	ap = registerApp(t, s, url.Values{"client_name": {"Scheduler"}, "redirect_uris": {oobRedirectURI}, "scopes": {"read write"}})
	spent := authorizeOOB(t, s, ap, alice.ID, "read write")
	r := exchangeCode(t, s, ap.ClientID, ap.ClientSecret, spent, oobRedirectURI)
	var ta tokenAnswer
	r.decode(t, &ta)
	if r.status != 200 {
		t.Fatalf("code exchange: %d %s", r.status, r.body)
	}
	mustStatus(t, post(t, s, Account{AccessToken: ta.AccessToken}, "scheduled", ""))
	code = authorizeOOB(t, s, ap, bob.ID, "read")
	return []Account{alice, bob, carol}, code, ap
}

func TestRestartKeepsEverything(t *testing.T) {
	clock := newClock()
	dir := t.TempDir()
	opts := Options{DataDir: dir, Now: clock.Now, TokenTTL: time.Hour, Seed: 9}
	first := openStarted(t, opts)
	accts, code, ap := busyDay(t, first, clock)
	alice, bob, carol := accts[0], accts[1], accts[2]
	before := dumpState(first)
	beforeAccounts := first.Accounts()
	mustClose(t, first)

	s := openStarted(t, opts)
	if diff := cmp.Diff(before, dumpState(s)); diff != "" {
		t.Fatalf("state after a restart (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(beforeAccounts, s.Accounts()); diff != "" {
		t.Errorf("Accounts after a restart (-before +after):\n%s", diff)
	}
	bobNow := beforeAccounts[1] // bob's tokens were refreshed

	t.Run("an Idempotency-Key answered before the restart is answered again, not committed", func(t *testing.T) {
		stats := s.Stats()
		var want string
		for _, st := range s.Statuses(alice.ID) {
			if st.IdempotencyKey == "k1" {
				want = st.ID
			}
		}
		got := mustStatus(t, post(t, s, alice, "hello @BOB", "k1"))
		if got.ID != want || want == "" {
			t.Errorf("replay after restart answered %s, want %s", got.ID, want)
		}
		stats.CreateRequests++
		stats.IdempotentReplays++
		if diff := cmp.Diff(stats, s.Stats()); diff != "" {
			t.Errorf("Stats (-want +got):\n%s", diff)
		}
	})
	t.Run("a lost answer's commit is found by its key", func(t *testing.T) {
		committed := s.Stats().Committed
		mustStatus(t, post(t, s, bobNow, "lost answer", "k-lost"))
		if got := s.Stats().Committed; got != committed {
			t.Errorf("Committed = %d, want %d: the retry committed again", got, committed)
		}
	})
	t.Run("ids keep increasing, even with the clock set back", func(t *testing.T) {
		clock.Advance(-time.Hour)
		defer clock.Advance(time.Hour)
		st := mustStatus(t, post(t, s, alice, "after the restart", ""))
		id, _ := strconv.ParseUint(st.ID, 10, 64)
		if id <= before.LastID {
			t.Errorf("new id %d is not above the last id before the restart %d", id, before.LastID)
		}
		dup := mustStatus(t, post(t, s, alice, "twice", ""))
		for _, got := range s.Statuses(alice.ID) {
			if got.ID == dup.ID && !got.Duplicate {
				t.Errorf("a third \"twice\" is not flagged duplicate after the restart")
			}
		}
	})
	t.Run("tokens", func(t *testing.T) {
		verify := s.URL() + "/api/v1/accounts/verify_credentials"
		tests := []struct {
			name  string
			token string
			want  int
		}{
			{"alice's access token", alice.AccessToken, 200},
			{"the restored account's access token", "restored-access", 200},
			{"bob's access token rotated away", bob.AccessToken, 401},
			{"bob's current access token", bobNow.AccessToken, 200},
			{"carol's expired access token", carol.AccessToken, 401},
		}
		for _, tt := range tests {
			if r := get(t, verify, tt.token); r.status != tt.want {
				t.Errorf("%s: %d, want %d", tt.name, r.status, tt.want)
			}
		}
		refreshes := []struct {
			name    string
			refresh string
			want    int
		}{
			{"bob's rotated-away refresh token", bob.RefreshToken, 400},
			{"carol's revoked refresh token", carol.RefreshToken, 400},
			{"bob's current refresh token", bobNow.RefreshToken, 200},
		}
		for _, tt := range refreshes {
			r := mustSend(t, http.MethodPost, s.URL()+"/oauth/token", "", formType, refreshForm(tt.refresh, "sandbox-client", "sandbox-secret"), nil)
			if r.status != tt.want {
				t.Errorf("%s: %d %s, want %d", tt.name, r.status, r.body, tt.want)
			}
		}
		clock.Advance(time.Hour) // TokenTTL: the expiry was kept
		if r := get(t, verify, alice.AccessToken); r.status != 401 {
			t.Errorf("alice's token after its TTL: %d, want 401", r.status)
		}
		clock.Advance(-time.Hour)
	})
	t.Run("media", func(t *testing.T) {
		var attached string
		for _, m := range before.Media {
			if m.StatusID != "" {
				attached = m.ID
			}
		}
		r := get(t, s.URL()+"/media/"+attached, "")
		if r.status != 200 || string(r.body) != "png bytes" {
			t.Errorf("media bytes after restart: %d %q", r.status, r.body)
		}
		for _, m := range before.Media {
			if m.StatusID == "" {
				if r := get(t, s.URL()+"/api/v1/media/"+m.ID, s.Accounts()[1].AccessToken); r.status != 206 {
					t.Errorf("processing media after restart: %d, want 206", r.status)
				}
			}
		}
	})
	t.Run("apps and codes", func(t *testing.T) {
		if r := exchangeCode(t, s, ap.ClientID, ap.ClientSecret, code, oobRedirectURI); r.status != 200 {
			t.Errorf("exchanging a code issued before the restart: %d %s", r.status, r.body)
		}
		if r := exchangeCode(t, s, ap.ClientID, ap.ClientSecret, code, oobRedirectURI); r.status != 400 {
			t.Errorf("exchanging it twice: %d, want 400", r.status)
		}
	})
	t.Run("creates", func(t *testing.T) {
		got := s.Creates()
		if diff := cmp.Diff(before.Creates, got[:len(before.Creates)]); diff != "" {
			t.Errorf("Creates before the restart (-before +after):\n%s", diff)
		}
		if last := got[len(got)-1]; last.Seq != len(got) {
			t.Errorf("last create after the restart has Seq %d, want %d", last.Seq, len(got))
		}
	})

	// A second restart keeps what the first run after the restart did.
	after := dumpState(s)
	mustClose(t, s)
	third := openStarted(t, opts)
	if diff := cmp.Diff(after, dumpState(third)); diff != "" {
		t.Errorf("state after a second restart (-before +after):\n%s", diff)
	}
}

// TestRestartKeepsTheRandomPlan: the n-th create draws the same random
// faults whether or not the sandbox restarted before it.
func TestRestartKeepsTheRandomPlan(t *testing.T) {
	opts := Options{Seed: 11, Random: RandomFaults{Loss: 0.3, ResponseLoss: 0.3}}
	outcomes := func(s *Server, a Account, from, to int) []string {
		var got []string
		for i := from; i < to; i++ {
			r, err := send(client, http.MethodPost, s.URL()+"/api/v1/statuses", a.AccessToken, formType, createForm("post "+strconv.Itoa(i)), nil)
			if err != nil {
				got = append(got, "error")
				continue
			}
			got = append(got, strconv.Itoa(r.status))
		}
		return got
	}
	mem := start(t, opts)
	want := outcomes(mem, mem.AddAccount("alice"), 0, 20)

	opts.DataDir = t.TempDir()
	first := openStarted(t, opts)
	a := first.AddAccount("alice")
	got := outcomes(first, a, 0, 10)
	mustClose(t, first)
	second := openStarted(t, opts)
	got = append(got, outcomes(second, a, 10, 20)...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes with a restart after 10 (-without +with):\n%s", diff)
	}
}

// TestDelayedCommitInterruptedByClose: the client gives up, Close cuts the
// delay short, the commit lands and is on disk when Close returns.
func TestDelayedCommitInterruptedByClose(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	delaying := make(chan struct{})
	s.testHookDelay = func() { close(delaying) }
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	a := s.AddAccount("alice")
	s.Script(Fault{Kind: FaultDelayBeforeCommit, Delay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	sent := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/api/v1/statuses", strings.NewReader(string(createForm("the incident"))))
		req.Header.Set("Authorization", "Bearer "+a.AccessToken)
		req.Header.Set("Content-Type", formType)
		req.Header.Set("Idempotency-Key", "incident")
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		sent <- err
	}()
	<-delaying
	cancel() // the client gives up
	if err := <-sent; err == nil {
		t.Fatalf("the client got an answer during a one-hour delay")
	}
	began := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("Close took %v with a one-hour delay pending", took)
	}

	reopened, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	sts := reopened.Statuses(a.ID)
	if len(sts) != 1 || sts[0].Text != "the incident" || sts[0].IdempotencyKey != "incident" {
		t.Fatalf("statuses after reopening = %v, want the delayed commit", sts)
	}
	creates := reopened.Creates()
	if len(creates) != 1 || !creates[0].Committed || creates[0].StatusID != sts[0].ID || creates[0].Fault != "delay-before-commit" {
		t.Errorf("Creates after reopening = %+v, want the committed delayed create", creates)
	}
}

// journalPath is the journal of a data directory.
func journalPath(dir string) string { return filepath.Join(dir, journalName) }

func appendToFile(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestJournalTornLastLine(t *testing.T) {
	tails := []struct {
		name string
		tail string
	}{
		{"a line cut mid-object", `{"op":"status","status":{"id":"9999999999999999","acc`},
		{"a complete object without its newline", `{"op":"expire_access","expire_access":{"account":"1"}}`},
		{"zeros", "\x00\x00\x00\x00"},
		{"a lone brace", "{"},
	}
	for _, tt := range tails {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(Options{DataDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			a := s.AddAccount("alice")
			first := s.InjectStatus(a.ID, "before the crash")
			mustClose(t, s)
			info, err := os.Stat(journalPath(dir))
			if err != nil {
				t.Fatal(err)
			}
			appendToFile(t, journalPath(dir), []byte(tt.tail))

			s, err = Open(Options{DataDir: dir})
			if err != nil {
				t.Fatalf("Open with a torn last line: %v", err)
			}
			if got := s.Statuses(a.ID); len(got) != 1 || got[0].ID != first.ID {
				t.Errorf("statuses = %v, want the one before the crash", got)
			}
			if got, _ := os.Stat(journalPath(dir)); got.Size() != info.Size() {
				t.Errorf("journal is %d bytes after Open, want the torn line cut off (%d)", got.Size(), info.Size())
			}
			second := s.InjectStatus(a.ID, "after the crash")
			mustClose(t, s)

			// What is written after the cut replays.
			s, err = Open(Options{DataDir: dir})
			if err != nil {
				t.Fatalf("Open after writing past the torn line: %v", err)
			}
			defer s.Close()
			var ids []string
			for _, st := range s.Statuses(a.ID) {
				ids = append(ids, st.ID)
			}
			if diff := cmp.Diff([]string{second.ID, first.ID}, ids); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("a torn header", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(journalPath(dir), []byte(`{"op":"hea`), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(Options{DataDir: dir})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		s.AddAccount("alice")
		mustClose(t, s)
		s, err = Open(Options{DataDir: dir})
		if err != nil {
			t.Fatalf("Open again: %v", err)
		}
		defer s.Close()
		if got := len(s.Accounts()); got != 1 {
			t.Errorf("%d accounts, want 1", got)
		}
	})
}

func TestJournalCorruptLine(t *testing.T) {
	// base is a journal of a header, an account and a status.
	dir := t.TempDir()
	s, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	a := s.AddAccount("alice")
	s.InjectStatus(a.ID, "hello")
	mustClose(t, s)
	base, err := os.ReadFile(journalPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(base), "\n")
	lines = lines[:len(lines)-1] // the empty string after the last newline
	if len(lines) != 3 {
		t.Fatalf("base journal has %d lines, want 3:\n%s", len(lines), base)
	}
	tests := []struct {
		name     string
		journal  string
		wantLine string // "line N" in the error
		wantErr  string
	}{
		{"garbage between two lines", lines[0] + lines[1] + "not json\n" + lines[2], "line 3", "invalid character"},
		{"a complete but bad last line", lines[0] + lines[1] + lines[2] + "{\"op\":\n", "line 4", "unexpected end of JSON"},
		{"an unknown change", lines[0] + lines[1] + `{"op":"teleport"}` + "\n", "line 3", `unknown change "teleport"`},
		{"a change without its object", lines[0] + lines[1] + `{"op":"delete"}` + "\n", "line 3", `without its "delete" object`},
		{"a status of an unknown account", lines[0] + strings.Replace(lines[2], `"account":"`+a.ID+`"`, `"account":"7"`, 1), "line 2", `unknown account "7"`},
		{"a delete of an unknown status", lines[0] + lines[1] + `{"op":"delete","delete":{"id":"1"}}` + "\n", "line 3", `no live status "1"`},
		{"a status of an unknown app", lines[0] + lines[1] + strings.Replace(lines[2], `"status":{`, `"status":{"app":"nope",`, 1), "line 3", `unknown app "nope"`},
		{"tokens of an unknown app", lines[0] + strings.Replace(lines[1], `"tokens":{`, `"tokens":{"app":"nope",`, 1) + lines[2], "line 2", `unknown app "nope"`},
		{"a grant of an unknown app", lines[0] + lines[1] + `{"op":"grant","grant":{"account":"` + a.ID + `","tokens":{"access":"x","refresh":"y","scope":"read","app":"nope"}}}` + "\n", "line 3", `unknown app "nope"`},
		{"a token cut short", lines[0] + lines[1][:len(lines[1])/2] + "\n" + lines[2], "line 2", "invalid character"},
		{"no header", lines[1] + lines[2], "line 1", "not a sandbox journal"},
		{"a later version", strings.Replace(lines[0], `"version":1`, `"version":2`, 1) + lines[1], "line 1", "version 2"},
		{"a second header", lines[0] + lines[0] + lines[1], "line 2", "a header after the first line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(journalPath(dir), []byte(tt.journal), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(Options{DataDir: dir})
			if err == nil {
				s.Close()
				t.Fatalf("Open succeeded on a corrupt journal")
			}
			msg := err.Error()
			for _, want := range []string{journalPath(dir), tt.wantLine + ":", tt.wantErr} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not contain %q", msg, want)
				}
			}
			if strings.Contains(msg, a.AccessToken) || strings.Contains(msg, a.RefreshToken) {
				t.Errorf("error %q contains a token", msg)
			}
		})
	}
}

func TestJournalFileModes(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "state", "sandbox")
	s, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	s.AddAccount("alice")
	mustClose(t, s)
	modes := map[string]fs.FileMode{dir: 0o700, journalPath(dir): 0o600}
	for path, want := range modes {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", path, got, want)
		}
	}
	// A journal made readable by hand is closed again.
	if err := os.Chmod(journalPath(dir), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	if info, _ := os.Stat(journalPath(dir)); info.Mode().Perm() != 0o600 {
		t.Errorf("journal mode after reopening: %v, want 0600", info.Mode().Perm())
	}
}

func TestJournalFormat(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	a := s.AddAccount("alice")
	s.InjectStatus(a.ID, "hello")
	mustClose(t, s)
	data, err := os.ReadFile(journalPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var r struct {
			Op string `json:"op"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		ops = append(ops, r.Op)
	}
	if diff := cmp.Diff([]string{"header", "account", "status"}, ops); diff != "" {
		t.Errorf("journal ops (-want +got):\n%s", diff)
	}
	if want := `{"op":"header","header":{"format":"oncepost-sandbox-journal","version":1}}` + "\n"; !bytes.HasPrefix(data, []byte(want)) {
		t.Errorf("journal starts %q, want %q", data[:min(len(data), 80)], want)
	}
}

func TestOpenLocksTheDataDir(t *testing.T) {
	dir := t.TempDir()
	first, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if second, err := Open(Options{DataDir: dir}); err == nil {
		second.Close()
		t.Fatalf("a second Open on a data directory in use succeeded")
	} else if !strings.Contains(err.Error(), "another sandbox") {
		t.Errorf("second Open: %v, want it to say another sandbox uses the directory", err)
	}
	mustClose(t, first)
	again, err := Open(Options{DataDir: dir})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	mustClose(t, again)
}

func TestOpenWithoutDataDirIsNew(t *testing.T) {
	s, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.j != nil {
		t.Errorf("a journal without DataDir")
	}
	s.AddAccount("alice")
	mustClose(t, s)

	defer func() {
		if recover() == nil {
			t.Errorf("New with a DataDir did not panic")
		}
	}()
	New(Options{DataDir: t.TempDir()})
}

// TestJournalFailureIsNotReportedAsSuccess: a change that cannot be saved
// is answered 500, never 200, and Close reports the failure.
func TestJournalFailureIsNotReportedAsSuccess(t *testing.T) {
	s, err := Open(Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	a := s.AddAccount("alice")
	// The disk goes away.
	if err := s.j.f.Close(); err != nil {
		t.Fatal(err)
	}
	r := post(t, s, a, "cannot be saved", "k")
	if r.status != 500 || errorOf(t, r) != errSaveFailed {
		t.Errorf("create with a broken journal: %d %s, want 500 %q", r.status, r.body, errSaveFailed)
	}
	if got := s.Creates(); len(got) != 1 || got[0].HTTPStatus != 500 {
		t.Errorf("Creates = %+v, want the create recorded as answered 500", got)
	}
	if err := s.Close(); err == nil || !errors.Is(err, os.ErrClosed) {
		t.Errorf("Close: %v, want the journal's failure", err)
	}
}

func TestStartAddr(t *testing.T) {
	tests := []struct {
		addr    string
		wantErr string // "" for success
	}{
		{addr: "127.0.0.1:0"},
		{addr: "[::1]:0"},
		{addr: "0.0.0.0:0", wantErr: "not 127.0.0.1 or ::1"},
		{addr: "[::]:0", wantErr: "not 127.0.0.1 or ::1"},
		{addr: ":0", wantErr: "not 127.0.0.1 or ::1"},
		{addr: "localhost:0", wantErr: "not 127.0.0.1 or ::1"},
		{addr: "192.168.1.10:8080", wantErr: "not 127.0.0.1 or ::1"},
		{addr: "127.0.0.2:0", wantErr: "not 127.0.0.1 or ::1"},
		{addr: "[::ffff:127.0.0.1]:0", wantErr: "not 127.0.0.1 or ::1"},
		{addr: "127.0.0.1", wantErr: "missing port"},
		{addr: "127.0.0.1:http", wantErr: "not a number"},
		{addr: "127.0.0.1:70000", wantErr: "not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			s := New(Options{Addr: tt.addr})
			defer s.Close()
			err := s.Start()
			if tt.wantErr == "" {
				if err != nil && strings.Contains(tt.addr, "::1") && !strings.Contains(err.Error(), "not 127.0.0.1") {
					t.Skipf("no IPv6 loopback here: %v", err)
				}
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				if r := get(t, s.URL()+"/api/v1/instance", ""); r.status != 200 {
					t.Errorf("instance on %s: %d", s.URL(), r.status)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Start: %v, want an error containing %q", err, tt.wantErr)
			}
			if _, err := Open(Options{Addr: tt.addr}); err == nil {
				t.Errorf("Open accepted %q", tt.addr)
			}
		})
	}
	t.Run("a chosen port", func(t *testing.T) {
		probe := start(t, Options{})
		u, _ := url.Parse(probe.URL())
		port := u.Port()
		mustClose(t, probe)
		s := New(Options{Addr: "127.0.0.1:" + port})
		defer s.Close()
		if err := s.Start(); err != nil {
			t.Skipf("port %s was taken again meanwhile: %v", port, err)
		}
		if s.URL() != "http://127.0.0.1:"+port {
			t.Errorf("URL = %s, want port %s", s.URL(), port)
		}
	})
}

func TestAccounts(t *testing.T) {
	s := start(t, Options{})
	if got := s.Accounts(); len(got) != 0 {
		t.Errorf("Accounts of a new server = %v", got)
	}
	a, b := s.AddAccount("alice"), s.AddAccount("bob")
	r := mustSend(t, http.MethodPost, s.URL()+"/oauth/token", "", formType, refreshForm(b.RefreshToken, "sandbox-client", "sandbox-secret"), nil)
	var tok tokenAnswer
	r.decode(t, &tok)
	want := []Account{a, {ID: b.ID, Username: "bob", AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken}}
	if diff := cmp.Diff(want, s.Accounts()); diff != "" {
		t.Errorf("Accounts after bob's refresh (-want +got):\n%s", diff)
	}
	// An app's tokens are the app's: Accounts keeps the sandbox's own.
	ap := registerApp(t, s, url.Values{"client_name": {"x"}, "redirect_uris": {oobRedirectURI}})
	code := authorizeOOB(t, s, ap, a.ID, "read")
	if r := exchangeCode(t, s, ap.ClientID, ap.ClientSecret, code, oobRedirectURI); r.status != 200 {
		t.Fatalf("exchange: %d %s", r.status, r.body)
	}
	if diff := cmp.Diff(want, s.Accounts()); diff != "" {
		t.Errorf("Accounts after an app's authorization (-want +got):\n%s", diff)
	}
}

// TestEveryAnswerIsOnDisk: right after each answer, a copy of the journal
// (what a crash at that moment would leave) opens to the state the server
// has, so whatever a client was told survives a crash.
func TestEveryAnswerIsOnDisk(t *testing.T) {
	clock := newClock()
	dir := t.TempDir()
	s := openStarted(t, Options{DataDir: dir, Now: clock.Now, MediaProcessingPolls: 1})
	var a Account
	var ap appAnswer
	var mediaID, statusID, code string
	steps := []struct {
		name string
		do   func(t *testing.T)
	}{
		{"POST /sandbox/accounts", func(t *testing.T) {
			r := mustSend(t, http.MethodPost, s.URL()+"/sandbox/accounts", "", jsonType, []byte(`{"username":"alice"}`), nil)
			if r.status != 201 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			a = s.Accounts()[0]
		}},
		{"media upload", func(t *testing.T) { mediaID = upload(t, s, a, []byte("img"), "").ID }},
		{"media poll", func(t *testing.T) { get(t, s.URL()+"/api/v1/media/"+mediaID, a.AccessToken) }},
		{"create", func(t *testing.T) { statusID = mustStatus(t, post(t, s, a, "hello", "k", mediaID)).ID }},
		{"idempotent replay", func(t *testing.T) { mustStatus(t, post(t, s, a, "hello", "k")) }},
		{"refused create", func(t *testing.T) { post(t, s, a, "", "") }},
		{"503", func(t *testing.T) { s.Script(Fault{Kind: Fault503}); post(t, s, a, "x", "") }},
		{"drop-request", func(t *testing.T) {
			s.Script(Fault{Kind: FaultDropRequest})
			_, _ = send(client, http.MethodPost, s.URL()+"/api/v1/statuses", a.AccessToken, formType, createForm("x"), nil)
		}},
		{"drop-response", func(t *testing.T) {
			s.Script(Fault{Kind: FaultDropResponse})
			_, _ = send(client, http.MethodPost, s.URL()+"/api/v1/statuses", a.AccessToken, formType, createForm("lost"), nil)
		}},
		{"delete", func(t *testing.T) {
			mustSend(t, http.MethodDelete, s.URL()+"/api/v1/statuses/"+statusID, a.AccessToken, "", nil, nil)
		}},
		{"refresh", func(t *testing.T) {
			mustSend(t, http.MethodPost, s.URL()+"/oauth/token", "", formType, refreshForm(a.RefreshToken, "sandbox-client", "sandbox-secret"), nil)
		}},
		{"app", func(t *testing.T) {
			ap = registerApp(t, s, url.Values{"client_name": {"x"}, "redirect_uris": {oobRedirectURI}})
		}},
		{"authorize", func(t *testing.T) { code = authorizeOOB(t, s, ap, a.ID, "read") }},
		{"code exchange", func(t *testing.T) { exchangeCode(t, s, ap.ClientID, ap.ClientSecret, code, oobRedirectURI) }},
	}
	for i, step := range steps {
		step.do(t)
		data, err := os.ReadFile(journalPath(dir))
		if err != nil {
			t.Fatal(err)
		}
		crashed := t.TempDir()
		if err := os.WriteFile(journalPath(crashed), data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Open(Options{DataDir: crashed})
		if err != nil {
			t.Fatalf("after %s: Open of the crash copy: %v", step.name, err)
		}
		if diff := cmp.Diff(dumpState(s), dumpState(c)); diff != "" {
			t.Errorf("step %d, %s: the journal on disk lacks what was answered (-live +on disk):\n%s", i, step.name, diff)
		}
		mustClose(t, c)
	}
}
