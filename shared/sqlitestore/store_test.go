package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/clocktest"
	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// t0 is the tests' reference instant, with nanoseconds.
var t0 = time.Date(2026, time.March, 14, 9, 26, 53, 589793238, time.UTC)

func TestOpenCreatesFileWithMode0600(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Force a write so the WAL and shared-memory files exist too.
	if err := s.PutAccount(context.Background(), post.Account{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(p), got)
		}
	}
}

func TestOpenTightensExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutAccount(context.Background(), post.Account{ID: "kept"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode %v after reopening a 0644 file, want 0600", got)
	}
	if _, err := s.GetAccount(context.Background(), "kept"); err != nil {
		t.Errorf("data lost on reopen: %v", err)
	}
}

func TestOpenEmptyForeignFile(t *testing.T) {
	// A pre-existing empty 0644 file (e.g. touched by an operator) is a
	// valid empty database: it is tightened and gets the schema.
	path := filepath.Join(t.TempDir(), "touched.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, _ := os.Stat(path)
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode %v, want 0600", got)
	}
}

func TestOpenRefusesURIs(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x.db", filepath.Join(t.TempDir(), "a?mode=ro")} {
		if s, err := Open(context.Background(), p, Options{}); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error", p)
		}
	}
}

func TestSchemaIsIdempotentAndVersioned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.db")
	for range 3 {
		s, err := Open(context.Background(), path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var n, v int
		if err := s.w.QueryRow(`SELECT count(*), max(version) FROM schema_version`).Scan(&n, &v); err != nil {
			t.Fatal(err)
		}
		if n != 1 || v != schemaVersion {
			t.Errorf("schema_version has %d rows, version %d; want 1 row, version %d", n, v, schemaVersion)
		}
		s.Close()
	}
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(`UPDATE schema_version SET version = ?`, schemaVersion+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := Open(context.Background(), path, Options{}); err == nil {
		s.Close()
		t.Error("Open accepted a newer schema version")
	}
}

func TestPragmas(t *testing.T) {
	s := openTest(t, Options{})
	for _, db := range []struct {
		name string
		q    func(string) (string, error)
	}{
		{"writer", func(p string) (v string, err error) { err = s.w.QueryRow("PRAGMA " + p).Scan(&v); return }},
		{"reader", func(p string) (v string, err error) { err = s.r.QueryRow("PRAGMA " + p).Scan(&v); return }},
	} {
		for pragma, want := range map[string]string{
			"journal_mode": "wal", "busy_timeout": "10000", "synchronous": "1", "foreign_keys": "1",
		} {
			got, err := db.q(pragma)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s: PRAGMA %s = %s, want %s", db.name, pragma, got, want)
			}
		}
	}
	if _, err := s.r.Exec(`INSERT INTO accounts (id, platform, handle, base_url, remote_id, credential_ref, gate)
		VALUES ('x', '', '', '', '', '', '')`); err == nil {
		t.Error("reader connection accepted a write")
	}
}

// fullEntry has every field set, times with nanoseconds in a non-UTC zone.
func fullEntry(key ledger.Key) ledger.Entry {
	paris := time.FixedZone("CET", 3600)
	at := t0.In(paris)
	return ledger.Entry{
		Key: key, Action: ledger.Publish, Account: "acct-1", Subject: "post-1",
		Slot: at.Add(time.Hour), State: ledger.Pending, Attempt: 1, Handle: "handle-1",
		Fingerprint: "fp-abc", Checkpoint: "container-1", LeaseOwner: "worker-7", LeaseUntil: at.Add(30*time.Second + 1),
		OpenSince: at.Add(2), SentAt: at.Add(3), RemoteID: "remote-9", Reason: "why not",
		TaskToken: "token-x", UpdatedAt: at.Add(4), ExpiresAt: at.Add(ledger.TerminalTTL + 5),
		MaybeSent: 3, LookAfter: "110000000000000007", RetryAt: at.Add(6), DeferredSince: at.Add(-7),
		Decision: `{"decision":"approve"}`, Post: "post-of-the-remote-copy",
	}
}

func TestEntryRoundTripsEveryField(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	e := fullEntry("k1")
	v := reflect.ValueOf(e)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("fullEntry leaves %s zero", v.Type().Field(i).Name)
		}
	}
	if err := s.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(e, got); d != "" {
		t.Errorf("Get after Create (-want +got):\n%s", d)
	}
	for name, tm := range map[string]time.Time{"Slot": got.Slot, "LeaseUntil": got.LeaseUntil, "OpenSince": got.OpenSince,
		"SentAt": got.SentAt, "RetryAt": got.RetryAt, "DeferredSince": got.DeferredSince,
		"UpdatedAt": got.UpdatedAt, "ExpiresAt": got.ExpiresAt} {
		if tm.Location() != time.UTC {
			t.Errorf("%s read back in %v, want UTC", name, tm.Location())
		}
	}

	// Zero times round-trip as zero.
	next, err := got.MarkUnknown("timeout", t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	next.Slot = time.Time{}
	if err := s.Update(ctx, got, next); err != nil {
		t.Fatal(err)
	}
	got2, err := s.Get(ctx, e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(next, got2); d != "" {
		t.Errorf("Get after Update (-want +got):\n%s", d)
	}
	if !got2.Slot.IsZero() || !got2.LeaseUntil.IsZero() {
		t.Errorf("zero times came back as %v, %v", got2.Slot, got2.LeaseUntil)
	}
}

var rfc3339UTCNano = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$`)

func TestAuditRowsForEveryTransition(t *testing.T) {
	ctx := context.Background()
	clock := clocktest.New(t0)
	s := openTest(t, Options{Now: clock.Now})
	e := ledger.NewEntry("k-audit", ledger.Publish, "acct", "post", t0, "fp", "w1", t0, time.Minute)
	if err := s.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	want := []ledger.Transition{{Key: e.Key, From: "", To: ledger.Pending, Attempt: 1, At: clock.Now()}}
	steps := []func(ledger.Entry, time.Time) (ledger.Entry, error){
		func(e ledger.Entry, now time.Time) (ledger.Entry, error) { return e.MarkUnknown("timeout", now) },
		func(e ledger.Entry, now time.Time) (ledger.Entry, error) { return e.Hold("not found", "", now) },
		func(e ledger.Entry, now time.Time) (ledger.Entry, error) { return e.Release("operator approved", now) },
		func(e ledger.Entry, now time.Time) (ledger.Entry, error) { return e.Reacquire("w2", now, time.Minute) },
		func(e ledger.Entry, now time.Time) (ledger.Entry, error) { return e.Confirm("remote-1", now) },
	}
	cur := e
	for i, step := range steps {
		clock.Advance(time.Second + 7)
		next, err := step(cur, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Update(ctx, cur, next); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		want = append(want, ledger.Transition{Key: e.Key, From: cur.State, To: next.State, Attempt: next.Attempt, Reason: next.Reason, At: clock.Now()})
		cur = next
	}
	got, err := s.History(ctx, e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("History (-want +got):\n%s", d)
	}
	rows, err := s.r.Query(`SELECT at FROM ledger_history WHERE key = ? ORDER BY n`, string(e.Key))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for i := 0; rows.Next(); i++ {
		var at string
		if err := rows.Scan(&at); err != nil {
			t.Fatal(err)
		}
		if !rfc3339UTCNano.MatchString(at) {
			t.Errorf("row %d: at = %q, want fixed-width RFC 3339 UTC with nanoseconds", i, at)
		}
		if tm, err := time.Parse(time.RFC3339Nano, at); err != nil || !tm.Equal(want[i].At) {
			t.Errorf("row %d: at = %q (%v), want %s", i, at, err, want[i].At.Format(time.RFC3339Nano))
		}
	}
	if got := s.Stats(); got.LedgerWrites != 6 || got.AuditRows != 6 {
		t.Errorf("Stats = %+v, want 6 ledger writes and 6 audit rows", got)
	}

	// A refused or lost update writes no audit row.
	stale := e // pending attempt 1, long gone
	next, _ := stale.MarkUnknown("late", clock.Now())
	if err := s.Update(ctx, stale, next); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("stale Update: %v, want ErrConflict", err)
	}
	if h, _ := s.History(ctx, e.Key); len(h) != len(want) {
		t.Errorf("history has %d rows after a lost update, want %d", len(h), len(want))
	}
}

func TestLedgerErrors(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	e := ledger.NewEntry("k", ledger.Publish, "a", "p", t0, "", "w", t0, time.Minute)
	if err := s.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, e); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("second Create: %v, want ErrConflict", err)
	}
	bad := e
	bad.Key, bad.Attempt = "other", 2
	if err := s.Create(ctx, bad); !errors.Is(err, ledger.ErrTransition) {
		t.Errorf("Create attempt 2: %v, want ErrTransition", err)
	}
	if _, err := s.Get(ctx, "missing"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Get missing: %v, want ErrNotFound", err)
	}
	ghost := e
	ghost.Key = "ghost"
	ghostNext, _ := ghost.MarkUnknown("x", t0)
	if err := s.Update(ctx, ghost, ghostNext); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Update missing: %v, want ErrNotFound", err)
	}
	conf, _ := e.Confirm("r", t0)
	back := conf
	back.State = ledger.Pending
	if err := s.Update(ctx, conf, back); !errors.Is(err, ledger.ErrTransition) {
		t.Errorf("confirmed → pending: %v, want ErrTransition", err)
	}
}

func TestOpenUsesPartialIndex(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	var plan []string
	rows, err := s.r.Query(`EXPLAIN QUERY PLAN SELECT `+ledgerColumns+` FROM ledger
		WHERE state IN ('pending', 'unknown') AND open_since < ? ORDER BY open_since, key LIMIT ?`, "x", 10)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	rows.Close()
	if !strings.Contains(strings.Join(plan, "\n"), "ledger_open") {
		t.Errorf("Open's plan does not use the partial index ledger_open:\n%s", strings.Join(plan, "\n"))
	}

	// Open lists only open entries, oldest first.
	var all []ledger.Entry
	for i := range 6 {
		e := ledger.NewEntry(ledger.Key(fmt.Sprintf("k%d", i)), ledger.Publish, "a", "p", t0, "", "w", t0.Add(time.Duration(5-i)*time.Minute), time.Minute)
		if err := s.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		all = append(all, e)
	}
	done, _ := all[0].Confirm("r", t0.Add(time.Hour))
	if err := s.Update(ctx, all[0], done); err != nil {
		t.Fatal(err)
	}
	got, err := s.Open(ctx, t0.Add(4*time.Minute), 3)
	if err != nil {
		t.Fatal(err)
	}
	var keys []ledger.Key
	for _, e := range got {
		keys = append(keys, e.Key)
	}
	if d := cmp.Diff([]ledger.Key{"k5", "k4", "k3"}, keys); d != "" {
		t.Errorf("Open keys (-want +got):\n%s", d)
	}
}

func TestPostWithManyTargets(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	p := post.Post{ID: "big", Body: "hello", CreatedAt: t0,
		Media: []post.Media{{Ref: "a.png", SHA256: strings.Repeat("a", 64), ContentType: "image/png", Alt: "alt"}}}
	for i := range 300 {
		p.Targets = append(p.Targets, post.Target{
			Account: post.AccountID(fmt.Sprintf("acct-%03d", 299-i)), Slot: t0.Add(time.Duration(i%7) * time.Minute),
			Status: post.Scheduled, UpdatedAt: t0,
		})
	}
	if err := s.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetPost(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(p, got); d != "" {
		t.Errorf("GetPost (-want +got):\n%s", d)
	}
	if err := s.CreatePost(ctx, p); !errors.Is(err, post.ErrConflict) {
		t.Errorf("second CreatePost: %v, want ErrConflict", err)
	}
	due, err := s.Due(ctx, t0.Add(time.Minute), 0)
	if err != nil {
		t.Fatal(err)
	}
	// i%7 ∈ {0, 1}: 43 + 43 targets.
	if len(due) != 86 || !due[0].Slot.Equal(t0) || !due[len(due)-1].Slot.Equal(t0.Add(time.Minute)) {
		t.Errorf("Due returned %d targets from %v to %v", len(due), due[0].Slot, due[len(due)-1].Slot)
	}

	// Concurrent moves of one target: exactly one triggered wins.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = s.UpdateTarget(ctx, "big", "acct-000", post.TargetUpdate{Status: post.Published, RemoteID: fmt.Sprint(i), At: t0})
		})
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, post.ErrConflict):
			t.Errorf("UpdateTarget: %v, want nil or ErrConflict", err)
		}
	}
	if wins != 1 {
		t.Errorf("%d concurrent published moves won, want 1", wins)
	}
	if _, err := s.UpdateTarget(ctx, "big", "nobody", post.TargetUpdate{Status: post.Triggered, At: t0}); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("UpdateTarget unknown account: %v, want ErrNotFound", err)
	}
}

func TestCredentials(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	const secret = "s3cr3t-access"
	if err := s.PutAccount(ctx, post.Account{ID: "a", Platform: "mastodon", Gate: post.GateAuto}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Credential(ctx, "a"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("Credential before Put: %v, want ErrNotFound", err)
	}
	if err := s.PutCredential(ctx, "a", platform.Credential{RefreshToken: "r"}); !errors.Is(err, ErrNoAccessToken) {
		t.Errorf("PutCredential without access token: %v, want ErrNoAccessToken", err)
	}
	if _, err := s.Credential(ctx, "a"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("refused credential was stored: %v", err)
	}
	exp := t0.Add(time.Hour)
	if err := s.PutCredential(ctx, "a", platform.Credential{AccessToken: secret, RefreshToken: "refresh-1", ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutCredential(ctx, "a", platform.Credential{AccessToken: "access-2"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Credential(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.AccessToken != "access-2" || got.RefreshToken != "refresh-1" || !got.ExpiresAt.IsZero() {
		t.Errorf("after PutCredential without refresh token: access %q refresh %q expires %v; want access-2, refresh-1 kept, no expiry",
			got.AccessToken, got.RefreshToken, got.ExpiresAt)
	}
	// The credential lives in its own table, not with the account, and
	// encrypted.
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM credentials WHERE account_id = 'a' AND refresh_token LIKE 'v1:%'
		AND access_token LIKE 'v1:%'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("credentials table row count %d (%v), want 1", n, err)
	}

	// Refresh lease.
	if err := s.LeaseRefresh(ctx, "a", "w1", t0, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.LeaseRefresh(ctx, "a", "w2", t0.Add(time.Second), t0.Add(time.Minute)); !errors.Is(err, post.ErrConflict) {
		t.Errorf("LeaseRefresh while held: %v, want ErrConflict", err)
	}
	if err := s.SaveRefreshed(ctx, "a", "w2", &platform.Credential{AccessToken: "stolen"}); !errors.Is(err, post.ErrConflict) {
		t.Errorf("SaveRefreshed by non-owner: %v, want ErrConflict", err)
	}
	if err := s.SaveRefreshed(ctx, "a", "w1", &platform.Credential{AccessToken: secret + "-3", ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Credential(ctx, "a")
	if got.AccessToken != secret+"-3" || got.RefreshToken != "refresh-1" || !got.ExpiresAt.Equal(exp) {
		t.Errorf("after SaveRefreshed: access %q refresh %q expires %v", got.AccessToken, got.RefreshToken, got.ExpiresAt)
	}
	// Lease dropped: anyone may take it now, and w1's second save is refused.
	if err := s.SaveRefreshed(ctx, "a", "w1", nil); !errors.Is(err, post.ErrConflict) {
		t.Errorf("SaveRefreshed after the lease was dropped: %v, want ErrConflict", err)
	}
	if err := s.LeaseRefresh(ctx, "a", "w2", t0.Add(2*time.Second), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// Expired lease: taken over at lease_until.
	if err := s.LeaseRefresh(ctx, "a", "w3", t0.Add(time.Minute), t0.Add(2*time.Minute)); err != nil {
		t.Errorf("LeaseRefresh of an expired lease: %v", err)
	}
	if err := s.SaveRefreshed(ctx, "a", "w2", nil); !errors.Is(err, post.ErrConflict) {
		t.Errorf("SaveRefreshed by the expired owner: %v, want ErrConflict", err)
	}
	if err := s.SaveRefreshed(ctx, "a", "w3", nil); err != nil {
		t.Errorf("release by the owner: %v", err)
	}
	got, _ = s.Credential(ctx, "a")
	if got.AccessToken != secret+"-3" {
		t.Errorf("release changed the credential")
	}

	// Concurrent leases: exactly one owner wins.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			errs[i] = s.LeaseRefresh(ctx, "a", fmt.Sprint("racer-", i), t0.Add(time.Hour), t0.Add(2*time.Hour))
		})
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
		} else if !errors.Is(err, post.ErrConflict) {
			t.Errorf("LeaseRefresh: %v", err)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("error leaks the token: %v", err)
		}
	}
	if wins != 1 {
		t.Errorf("%d concurrent leases won, want 1", wins)
	}
}

func TestConcurrentCreateAndUpdateInProcess(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	const keys, racers = 40, 8
	creates := make([][]error, racers)
	updates := make([][]error, racers)
	var wg sync.WaitGroup
	for r := range racers {
		wg.Go(func() {
			for k := range keys {
				e := raceEntry(k)
				creates[r] = append(creates[r], s.Create(ctx, e))
				next, _ := e.MarkUnknown("timeout", t0)
				updates[r] = append(updates[r], s.Update(ctx, e, next))
			}
		})
	}
	wg.Wait()
	for k := range keys {
		var cw, uw int
		for r := range racers {
			if err := creates[r][k]; err == nil {
				cw++
			} else if !errors.Is(err, ledger.ErrConflict) {
				t.Errorf("Create: %v", err)
			}
			if err := updates[r][k]; err == nil {
				uw++
			} else if !errors.Is(err, ledger.ErrConflict) {
				t.Errorf("Update: %v", err)
			}
		}
		if cw != 1 || uw != 1 {
			t.Errorf("key %d: %d creates and %d updates won, want 1 and 1", k, cw, uw)
		}
	}
}

// raceEntry is the k-th entry every racer tries to create: the same key and
// handle everywhere, so every racer's Update names the same prev.
func raceEntry(k int) ledger.Entry {
	key := ledger.Key(fmt.Sprintf("race-%03d", k))
	return ledger.Entry{
		Key: key, Action: ledger.Publish, Account: "acct", Subject: string(key), Slot: t0,
		State: ledger.Pending, Attempt: 1, Handle: "h-" + string(key),
		LeaseOwner: "x", LeaseUntil: t0.Add(time.Minute), OpenSince: t0, SentAt: t0, UpdatedAt: t0,
	}
}

func TestStatsPublishHappyPath(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	p := post.Post{ID: "p", Body: "b", CreatedAt: t0, Targets: []post.Target{{Account: "a", Slot: t0, Status: post.Triggered}}}
	if err := s.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	before := s.Stats()
	e := ledger.NewEntry("k", ledger.Publish, "a", "p", t0, "", "w", t0, time.Minute)
	if err := s.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetPost(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	done, _ := e.Confirm("r", t0)
	if err := s.Update(ctx, e, done); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateTarget(ctx, "p", "a", post.TargetUpdate{Status: post.Published, RemoteID: "r", At: t0}); err != nil {
		t.Fatal(err)
	}
	after := s.Stats()
	writes := (after.LedgerWrites - before.LedgerWrites) + (after.PostWrites - before.PostWrites) +
		(after.AccountWrites - before.AccountWrites) + (after.QueueWrites - before.QueueWrites)
	if writes != 3 || after.AuditRows-before.AuditRows != 2 {
		t.Errorf("happy path: %d writes and %d audit rows, want 3 and 2 (%+v)", writes, after.AuditRows-before.AuditRows, after)
	}
	// Failed writes are not counted.
	_ = s.Create(ctx, e)
	_, _ = s.UpdateTarget(ctx, "p", "a", post.TargetUpdate{Status: post.Scheduled, At: t0})
	if got := s.Stats(); got != after {
		t.Errorf("refused writes counted: %+v, want %+v", got, after)
	}
}

func TestConcurrentOpenOfNewFile(t *testing.T) {
	// Stores opening a new file at the same moment all switch it to WAL;
	// none may fail with SQLITE_BUSY.
	for round := range 10 {
		path := filepath.Join(t.TempDir(), fmt.Sprint(round, ".db"))
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				s, err := Open(context.Background(), path, Options{})
				if err != nil {
					t.Error(err)
					return
				}
				defer s.Close()
				if err := s.PutAccount(context.Background(), post.Account{ID: post.AccountID(fmt.Sprint(i))}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
}
