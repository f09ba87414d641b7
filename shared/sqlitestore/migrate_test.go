package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqltime"
)

// schemaV1 is the schema version 1 builds created, verbatim, with its
// version row: the file existing users have.
var schemaV1 = []string{
	`CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS ledger (
		key         TEXT PRIMARY KEY,
		action      TEXT NOT NULL,
		account     TEXT NOT NULL,
		subject     TEXT NOT NULL,
		slot        TEXT NOT NULL,
		state       TEXT NOT NULL,
		attempt     INTEGER NOT NULL,
		handle      TEXT NOT NULL,
		fingerprint TEXT NOT NULL,
		lease_owner TEXT NOT NULL,
		lease_until TEXT NOT NULL,
		open_since  TEXT NOT NULL,
		sent_at     TEXT NOT NULL,
		remote_id   TEXT NOT NULL,
		reason      TEXT NOT NULL,
		task_token  TEXT NOT NULL,
		updated_at  TEXT NOT NULL,
		expires_at  TEXT NOT NULL
	) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS ledger_open ON ledger (open_since) WHERE state IN ('pending', 'unknown')`,
	`CREATE TABLE IF NOT EXISTS ledger_history (
		key        TEXT NOT NULL,
		n          INTEGER NOT NULL,
		from_state TEXT NOT NULL,
		to_state   TEXT NOT NULL,
		attempt    INTEGER NOT NULL,
		reason     TEXT NOT NULL,
		at         TEXT NOT NULL,
		PRIMARY KEY (key, n)
	) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS posts (
		id         TEXT PRIMARY KEY,
		body       TEXT NOT NULL,
		media      TEXT NOT NULL,
		created_at TEXT NOT NULL
	) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS targets (
		post_id    TEXT NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
		account    TEXT NOT NULL,
		position   INTEGER NOT NULL,
		slot       TEXT NOT NULL,
		status     TEXT NOT NULL,
		remote_id  TEXT NOT NULL,
		reason     TEXT NOT NULL,
		updated_at TEXT NOT NULL,
		PRIMARY KEY (post_id, account)
	) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS targets_due ON targets (slot) WHERE status = 'scheduled'`,
	`CREATE INDEX IF NOT EXISTS targets_unfinished ON targets (updated_at) WHERE status IN ('triggered', 'publishing')`,
	`CREATE TABLE IF NOT EXISTS accounts (
		id             TEXT PRIMARY KEY,
		platform       TEXT NOT NULL,
		handle         TEXT NOT NULL,
		base_url       TEXT NOT NULL,
		remote_id      TEXT NOT NULL,
		credential_ref TEXT NOT NULL,
		gate           TEXT NOT NULL
	) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS credentials (
		account_id    TEXT PRIMARY KEY,
		access_token  TEXT NOT NULL,
		refresh_token TEXT NOT NULL,
		expires_at    TEXT NOT NULL,
		lease_owner   TEXT NOT NULL DEFAULT '',
		lease_until   TEXT NOT NULL DEFAULT ''
	) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS queue_messages (
		seq           INTEGER PRIMARY KEY,
		queue         TEXT NOT NULL,
		id            TEXT NOT NULL,
		body          BLOB NOT NULL,
		sent_at       TEXT NOT NULL,
		visible_at    TEXT NOT NULL,
		receive_count INTEGER NOT NULL DEFAULT 0,
		receipt       TEXT NOT NULL DEFAULT ''
	)`,
	`CREATE INDEX IF NOT EXISTS queue_messages_visible ON queue_messages (queue, visible_at, seq)`,
	`CREATE TABLE IF NOT EXISTS dead_letters (
		seq           INTEGER PRIMARY KEY,
		queue         TEXT NOT NULL,
		id            TEXT NOT NULL,
		body          BLOB NOT NULL,
		sent_at       TEXT NOT NULL,
		receive_count INTEGER NOT NULL,
		reason        TEXT NOT NULL,
		at            TEXT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS dead_letters_queue ON dead_letters (queue, seq)`,
	`INSERT INTO schema_version (version) VALUES (1)`,
}

// v1 holds the rows writeV1 stores, as the API reads them back.
var v1 = struct {
	entry   ledger.Entry
	history []ledger.Transition
	post    post.Post
	account post.Account
	cred    platform.Credential
	msgBody string
	dead    publishing.DeadLetter
}{
	entry: ledger.Entry{
		Key: "k-v1", Action: ledger.Publish, Account: "acct-v1", Subject: "post-v1", Slot: t0,
		State: ledger.Unknown, Attempt: 2, Handle: "handle-v1", Fingerprint: "fp-v1",
		OpenSince: t0.Add(time.Minute), SentAt: t0.Add(time.Minute), RemoteID: "", Reason: "timeout",
		UpdatedAt: t0.Add(2 * time.Minute),
	},
	history: []ledger.Transition{
		{Key: "k-v1", From: "", To: ledger.Pending, Attempt: 1, At: t0},
		{Key: "k-v1", From: ledger.Pending, To: ledger.Unknown, Attempt: 2, Reason: "timeout", At: t0.Add(2 * time.Minute)},
	},
	post: post.Post{ID: "post-v1", Body: "from version 1", CreatedAt: t0, Targets: []post.Target{
		{Account: "acct-v1", Slot: t0.Add(time.Hour), Status: post.Scheduled, UpdatedAt: t0},
		{Account: "acct-v1b", Slot: t0.Add(time.Hour), Status: post.Published, RemoteID: "r-1", UpdatedAt: t0.Add(time.Second)},
	}},
	account: post.Account{ID: "acct-v1", Platform: "mastodon", Handle: "@v1@example.social", BaseURL: "https://example.social",
		RemoteID: "1", CredentialRef: "oncepost/acct-v1", Gate: post.GateManual},
	cred:    platform.Credential{AccessToken: "access-v1", RefreshToken: "refresh-v1", ExpiresAt: t0.Add(24 * time.Hour)},
	msgBody: `{"post_id":"post-v1"}`,
	dead:    publishing.DeadLetter{ID: "dead-v1", Body: []byte("poison"), ReceiveCount: 5, Reason: "max_receives_exceeded: delivered 5 times", At: t0},
}

// writeV1 creates a version 1 file at path, as a version 1 build left it,
// with one row in every table; stmts run after the schema.
func writeV1(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := v1.entry
	enc := sqltime.Encode
	rows := []struct {
		q    string
		args []any
	}{
		{`INSERT INTO ledger VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '', '', ?, ?, ?, ?, '', ?, '')`, []any{
			string(e.Key), string(e.Action), e.Account, e.Subject, enc(e.Slot), string(e.State), e.Attempt, e.Handle, e.Fingerprint,
			enc(e.OpenSince), enc(e.SentAt), e.RemoteID, e.Reason, enc(e.UpdatedAt)}},
		{`INSERT INTO ledger_history VALUES (?, 1, '', 'pending', 1, '', ?), (?, 2, 'pending', 'unknown', 2, 'timeout', ?)`,
			[]any{string(e.Key), enc(t0), string(e.Key), enc(t0.Add(2 * time.Minute))}},
		{`INSERT INTO posts VALUES (?, ?, 'null', ?)`, []any{"post-v1", "from version 1", enc(t0)}},
		{`INSERT INTO targets VALUES ('post-v1', 'acct-v1', 0, ?, 'scheduled', '', '', ?),
			('post-v1', 'acct-v1b', 1, ?, 'published', 'r-1', '', ?)`,
			[]any{enc(t0.Add(time.Hour)), enc(t0), enc(t0.Add(time.Hour)), enc(t0.Add(time.Second))}},
		{`INSERT INTO accounts VALUES ('acct-v1', 'mastodon', '@v1@example.social', 'https://example.social', '1', 'oncepost/acct-v1', 'manual')`, nil},
		{`INSERT INTO credentials VALUES ('acct-v1', 'access-v1', 'refresh-v1', ?, 'refresher-v1', ?)`,
			[]any{enc(v1.cred.ExpiresAt), enc(t0.Add(time.Hour))}},
		{`INSERT INTO queue_messages (queue, id, body, sent_at, visible_at) VALUES ('publish', 'msg-v1', ?, ?, ?)`,
			[]any{[]byte(v1.msgBody), enc(t0), enc(t0)}},
		{`INSERT INTO dead_letters (queue, id, body, sent_at, receive_count, reason, at) VALUES ('publish', ?, ?, ?, ?, ?, ?)`,
			[]any{v1.dead.ID, v1.dead.Body, enc(t0), v1.dead.ReceiveCount, v1.dead.Reason, enc(v1.dead.At)}},
	}
	for _, q := range schemaV1 {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("v1 schema: %v", err)
		}
	}
	for _, r := range rows {
		if _, err := db.Exec(r.q, r.args...); err != nil {
			t.Fatalf("v1 row %.60q: %v", r.q, err)
		}
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%.60q: %v", q, err)
		}
	}
}

func schemaVersionOf(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMigrateFromVersion1 opens a version 1 file: it is at version 2
// afterwards and every row reads back, with the new fields zero.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	clock := t0.Add(2 * time.Hour)
	path := filepath.Join(t.TempDir(), "oncepost.db")
	writeV1(t, path)
	s, err := Open(ctx, path, Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatalf("Open(version 1 file) = %v", err)
	}
	defer s.Close()
	if v := schemaVersionOf(t, path); v != schemaVersion {
		t.Errorf("schema version after Open = %d, want %d", v, schemaVersion)
	}

	for _, tc := range []struct {
		name string
		read func() (any, error)
		want any
	}{
		{"ledger entry", func() (any, error) { return s.Get(ctx, v1.entry.Key) }, v1.entry},
		{"ledger history", func() (any, error) { return s.History(ctx, v1.entry.Key) }, v1.history},
		{"post", func() (any, error) { return s.GetPost(ctx, v1.post.ID) }, v1.post},
		{"account", func() (any, error) { return s.GetAccount(ctx, v1.account.ID) }, v1.account},
		{"credential", func() (any, error) {
			c, err := s.Credential(ctx, v1.account.ID)
			return credFields(c), err
		}, credFields(v1.cred)},
		{"dead letters", func() (any, error) { return s.Queue("publish", 5).DeadLetters(ctx, 0) }, []publishing.DeadLetter{v1.dead}},
		{"queued message", func() (any, error) {
			ms, err := s.Queue("publish", 5).Receive(ctx, 10, time.Minute)
			var bodies []string
			for _, m := range ms {
				bodies = append(bodies, fmt.Sprintf("%s %s %d %s", m.ID, m.Body, m.ReceiveCount, m.SentAt.Format(time.RFC3339Nano)))
			}
			return bodies, err
		}, []string{fmt.Sprintf("msg-v1 %s 1 %s", v1.msgBody, t0.Format(time.RFC3339Nano))}},
		{"unscheduled targets", func() (any, error) { return s.Unscheduled(ctx, 0) },
			[]publishing.TargetRef{{Post: "post-v1", Account: "acct-v1", Slot: t0.Add(time.Hour)}}},
		{"counts", func() (any, error) { return s.CountTargets(ctx, post.Scheduled, post.Published, post.Waiting) },
			map[post.TargetStatus]int{post.Scheduled: 1, post.Published: 1, post.Waiting: 0}},
	} {
		got, err := tc.read()
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s after migration (-want +got):\n%s", tc.name, d)
		}
	}

	// The version 1 refresh lease survived: another owner cannot take it.
	if err := s.LeaseRefresh(ctx, v1.account.ID, "other", t0, t0.Add(time.Minute)); !errors.Is(err, post.ErrConflict) {
		t.Errorf("LeaseRefresh over the version 1 lease = %v, want post.ErrConflict", err)
	}
	// The new columns take writes.
	held, err := v1.entry.Hold("not found", "", clock)
	if err != nil {
		t.Fatal(err)
	}
	decided, _ := held.WithDecision(`{"decision":"approve"}`, clock)
	for _, mv := range [][2]ledger.Entry{{v1.entry, held}, {held, decided}} {
		if err := s.Update(ctx, mv[0], mv[1]); err != nil {
			t.Fatalf("Update(%s → %s) after migration = %v", mv[0].State, mv[1].State, err)
		}
	}
	if got, err := s.Get(ctx, v1.entry.Key); err != nil || got.Decision != decided.Decision {
		t.Errorf("Get after a decision = %q, %v; want decision %q", got.Decision, err, decided.Decision)
	}
	if err := s.MarkRefreshLost(ctx, v1.account.ID, "refresher-v1", clock); err != nil {
		t.Errorf("MarkRefreshLost by the version 1 lease owner = %v", err)
	}
}

// credFields shows a credential's fields (its String method hides them).
func credFields(c platform.Credential) []string {
	return []string{c.AccessToken, c.RefreshToken, c.ExpiresAt.Format(time.RFC3339Nano), c.RefreshLostAt.Format(time.RFC3339Nano)}
}

// schemaOf describes a file's schema: every table's columns (name, type,
// NOT NULL, default, primary key position) and every index's SQL.
func schemaOf(t *testing.T, db *sql.DB) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	rows, err := db.Query(`SELECT type, name, coalesce(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	type object struct{ kind, name, sql string }
	var objects []object
	for rows.Next() {
		var o object
		if err := rows.Scan(&o.kind, &o.name, &o.sql); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, o)
	}
	rows.Close()
	for _, o := range objects {
		if o.kind == "index" {
			out["index "+o.name] = []string{o.sql}
			continue
		}
		cols, err := db.Query(`SELECT name, type, "notnull", coalesce(dflt_value, 'NULL'), pk FROM pragma_table_info(?) ORDER BY cid`, o.name)
		if err != nil {
			t.Fatal(err)
		}
		for cols.Next() {
			var name, typ, dflt string
			var notNull, pk int
			if err := cols.Scan(&name, &typ, &notNull, &dflt, &pk); err != nil {
				t.Fatal(err)
			}
			out[o.kind+" "+o.name] = append(out[o.kind+" "+o.name], fmt.Sprintf("%s %s notnull=%d default=%s pk=%d", name, typ, notNull, dflt, pk))
		}
		cols.Close()
	}
	return out
}

// A migrated file has the schema of a new one, column for column.
func TestMigrationMatchesNewSchema(t *testing.T) {
	migrated := filepath.Join(t.TempDir(), "migrated.db")
	writeV1(t, migrated)
	s := openAt(t, migrated)
	got := schemaOf(t, s.r)
	want := schemaOf(t, openTest(t, Options{}).r)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("schema of a migrated file (-new file +migrated):\n%s", d)
	}
	for _, name := range []string{"index targets_waiting", "index targets_unscheduled", "index targets_settled", "index ledger_expires", "table credentials"} {
		if _, ok := got[name]; !ok {
			t.Errorf("migrated schema has no %s", name)
		}
	}
}

func openAt(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("Open(%s) = %v", filepath.Base(path), err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Stores opening one version 1 file at the same moment migrate it once.
func TestConcurrentMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	writeV1(t, path)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			s, err := Open(context.Background(), path, Options{})
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			if _, err := s.Get(context.Background(), v1.entry.Key); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if v := schemaVersionOf(t, path); v != schemaVersion {
		t.Errorf("schema version = %d, want %d", v, schemaVersion)
	}
}

// A migration that fails midway leaves the file as it was: still version
// 1, without the columns added before the failure.
func TestFailedMigrationChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd.db")
	// A column a later ALTER adds already exists: that ALTER fails after
	// the ledger's columns were added.
	writeV1(t, path, `ALTER TABLE accounts ADD COLUMN status TEXT`)
	if s, err := Open(context.Background(), path, Options{}); err == nil {
		s.Close()
		t.Fatal("Open succeeded, want the migration to fail")
	}
	if v := schemaVersionOf(t, path); v != 1 {
		t.Errorf("schema version after a failed migration = %d, want 1", v)
	}
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pragma_table_info('ledger') WHERE name = 'maybe_sent'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("ledger.maybe_sent exists after a failed migration (%d, %v)", n, err)
	}
}
