package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqltime"
)

// schemaV2 is the schema version 2 builds created, verbatim, with its
// version row.
var schemaV2 = []string{
	`CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS ledger (
		key            TEXT PRIMARY KEY,
		action         TEXT NOT NULL,
		account        TEXT NOT NULL,
		subject        TEXT NOT NULL,
		slot           TEXT NOT NULL,
		state          TEXT NOT NULL,
		attempt        INTEGER NOT NULL,
		handle         TEXT NOT NULL,
		fingerprint    TEXT NOT NULL,
		lease_owner    TEXT NOT NULL,
		lease_until    TEXT NOT NULL,
		open_since     TEXT NOT NULL,
		sent_at        TEXT NOT NULL,
		remote_id      TEXT NOT NULL,
		reason         TEXT NOT NULL,
		task_token     TEXT NOT NULL,
		updated_at     TEXT NOT NULL,
		expires_at     TEXT NOT NULL,
		maybe_sent     INTEGER NOT NULL DEFAULT 0,
		look_after     TEXT NOT NULL DEFAULT '',
		retry_at       TEXT NOT NULL DEFAULT '',
		deferred_since TEXT NOT NULL DEFAULT '',
		decision       TEXT NOT NULL DEFAULT ''
	) WITHOUT ROWID`,
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
		post_id      TEXT NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
		account      TEXT NOT NULL,
		position     INTEGER NOT NULL,
		slot         TEXT NOT NULL,
		status       TEXT NOT NULL,
		remote_id    TEXT NOT NULL,
		reason       TEXT NOT NULL,
		updated_at   TEXT NOT NULL,
		next_try     TEXT NOT NULL DEFAULT '',
		has_schedule INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (post_id, account)
	) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS accounts (
		id             TEXT PRIMARY KEY,
		platform       TEXT NOT NULL,
		handle         TEXT NOT NULL,
		base_url       TEXT NOT NULL,
		remote_id      TEXT NOT NULL,
		credential_ref TEXT NOT NULL,
		gate           TEXT NOT NULL,
		status         TEXT NOT NULL DEFAULT '',
		status_reason  TEXT NOT NULL DEFAULT ''
	) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS credentials (
		account_id      TEXT PRIMARY KEY,
		access_token    TEXT NOT NULL,
		refresh_token   TEXT NOT NULL,
		expires_at      TEXT NOT NULL,
		lease_owner     TEXT NOT NULL DEFAULT '',
		lease_until     TEXT NOT NULL DEFAULT '',
		refresh_lost_at TEXT NOT NULL DEFAULT ''
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
	`CREATE INDEX IF NOT EXISTS ledger_open ON ledger (open_since) WHERE state IN ('pending', 'unknown')`,
	`CREATE INDEX IF NOT EXISTS ledger_held ON ledger (updated_at) WHERE state = 'held'`,
	`CREATE INDEX IF NOT EXISTS ledger_expires ON ledger (expires_at) WHERE expires_at != ''`,
	`CREATE INDEX IF NOT EXISTS targets_due ON targets (slot) WHERE status = 'scheduled'`,
	`CREATE INDEX IF NOT EXISTS targets_unfinished ON targets (updated_at) WHERE status IN ('triggered', 'publishing')`,
	`CREATE INDEX IF NOT EXISTS targets_waiting ON targets (next_try) WHERE status = 'waiting'`,
	`CREATE INDEX IF NOT EXISTS targets_settled ON targets (status) WHERE status IN ('published', 'failed', 'held', 'cancelled', 'deleted')`,
	`CREATE INDEX IF NOT EXISTS targets_unscheduled ON targets (slot) WHERE status = 'scheduled' AND has_schedule = 0`,
	`CREATE INDEX IF NOT EXISTS queue_messages_visible ON queue_messages (queue, visible_at, seq)`,
	`CREATE INDEX IF NOT EXISTS dead_letters_queue ON dead_letters (queue, seq)`,
	`INSERT INTO schema_version (version) VALUES (2)`,
}

// v2 holds the rows writeV2 stores, as the API reads them back.
var v2 = struct {
	account  post.Account
	cred     platform.Credential
	oldCreds []platform.Credential // rotated away before the migration
	post     post.Post
	msgBody  string
	dead     publishing.DeadLetter
}{
	account: post.Account{ID: "acct-v2", Platform: "mastodon", Handle: "@v2@example.social", BaseURL: "https://example.social",
		RemoteID: "2", CredentialRef: "oncepost/acct-v2", Gate: post.GateAuto,
		Status: post.AccountReconnectNeeded, StatusReason: "refresh refused"},
	cred: platform.Credential{AccessToken: "access-v2-CURRENT-6f1c", RefreshToken: "refresh-v2-CURRENT-93ab",
		ExpiresAt: t0.Add(24 * time.Hour), RefreshLostAt: t0.Add(time.Minute)},
	oldCreds: []platform.Credential{
		{AccessToken: "access-v2-OLD-1-aa11", RefreshToken: "refresh-v2-OLD-1-bb22"},
		{AccessToken: "access-v2-OLD-two-cc33", RefreshToken: "refresh-v2-OLD-two-dd44"},
	},
	post: post.Post{ID: "post-v2", Body: "from version 2", CreatedAt: t0, Targets: []post.Target{
		{Account: "acct-v2", Slot: t0.Add(time.Hour), Status: post.Waiting, Reason: "throttled", NextTry: t0.Add(2 * time.Hour), UpdatedAt: t0},
	}},
	msgBody: `{"post_id":"post-v2"}`,
	dead:    publishing.DeadLetter{ID: "dead-v2", Body: []byte("poison"), ReceiveCount: 5, Reason: "max_receives_exceeded: delivered 5 times", At: t0},
}

// secretsV2 are every token writeV2 ever stored.
func secretsV2() []string {
	out := []string{v2.cred.AccessToken, v2.cred.RefreshToken}
	for _, c := range v2.oldCreds {
		out = append(out, c.AccessToken, c.RefreshToken)
	}
	return out
}

// writeV2 creates a version 2 file at path, as a version 2 build left it:
// one row in every table, the credential rotated twice before its current
// tokens (the old ones remain in the file's free space), and a lease-only
// credential row of another account. stmts run after the schema.
func writeV2(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	enc := sqltime.Encode
	a, p, tg := v2.account, v2.post, v2.post.Targets[0]
	type row struct {
		q    string
		args []any
	}
	rows := []row{
		{`INSERT INTO posts VALUES (?, ?, 'null', ?)`, []any{string(p.ID), p.Body, enc(p.CreatedAt)}},
		{`INSERT INTO targets VALUES (?, ?, 0, ?, ?, '', ?, ?, ?, 1)`, []any{string(p.ID), string(tg.Account), enc(tg.Slot),
			string(tg.Status), tg.Reason, enc(tg.UpdatedAt), enc(tg.NextTry)}},
		{`INSERT INTO accounts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, []any{string(a.ID), a.Platform, a.Handle, a.BaseURL, a.RemoteID,
			a.CredentialRef, string(a.Gate), string(a.Status), a.StatusReason}},
		{`INSERT INTO queue_messages (queue, id, body, sent_at, visible_at) VALUES ('publish', 'msg-v2', ?, ?, ?)`,
			[]any{[]byte(v2.msgBody), enc(t0), enc(t0)}},
		{`INSERT INTO dead_letters (queue, id, body, sent_at, receive_count, reason, at) VALUES ('publish', ?, ?, ?, ?, ?, ?)`,
			[]any{v2.dead.ID, v2.dead.Body, enc(t0), v2.dead.ReceiveCount, v2.dead.Reason, enc(v2.dead.At)}},
	}
	for i, c := range append(v2.oldCreds, v2.cred) {
		q := `UPDATE credentials SET access_token = ?, refresh_token = ?, expires_at = ?, refresh_lost_at = ? WHERE account_id = 'acct-v2'`
		if i == 0 {
			q = `INSERT INTO credentials (access_token, refresh_token, expires_at, refresh_lost_at, account_id) VALUES (?, ?, ?, ?, 'acct-v2')`
		}
		rows = append(rows, row{q, []any{c.AccessToken, c.RefreshToken, enc(c.ExpiresAt), enc(c.RefreshLostAt)}})
		if i == 0 {
			// A row after the first one, so that the first one's cell is
			// freed, not reused, when the tokens change size.
			rows = append(rows, row{`INSERT INTO credentials VALUES ('acct-v2b', '', '', '', 'refresher-v2', ?, '')`,
				[]any{enc(t0.Add(time.Hour))}})
		}
	}
	for _, q := range schemaV2 {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("v2 schema: %v", err)
		}
	}
	for _, r := range rows {
		if _, err := db.Exec(r.q, r.args...); err != nil {
			t.Fatalf("v2 row %.60q: %v", r.q, err)
		}
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%.60q: %v", q, err)
		}
	}
}

// fileBytes is the database file and its WAL, as bytes.
func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	var out []byte
	for _, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// TestMigrateFromVersion2 opens a version 2 file: it is at version 3
// afterwards, every row reads back, the credentials decrypt to what they
// were, and no token, current or rotated away, is left in the file or its
// WAL in plaintext.
func TestMigrateFromVersion2(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "oncepost.db")
	writeV2(t, path)
	before := fileBytes(t, path)
	// The current tokens and some rotated away must really be in the
	// file, or the check after the migration proves nothing.
	var present []string
	for _, sec := range secretsV2() {
		if bytes.Contains(before, []byte(sec)) {
			present = append(present, sec)
		}
	}
	if len(present) < 3 {
		t.Fatalf("test setup: only %v of the tokens are in the version 2 file", present)
	}
	t.Logf("tokens in the version 2 file: %v", present)
	s, err := Open(ctx, path, Options{Now: func() time.Time { return t0.Add(3 * time.Hour) }})
	if err != nil {
		t.Fatalf("Open(version 2 file) = %v", err)
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
		{"post", func() (any, error) { return s.GetPost(ctx, v2.post.ID) }, v2.post},
		{"account (limits unknown)", func() (any, error) { return s.GetAccount(ctx, v2.account.ID) }, v2.account},
		{"credential", func() (any, error) {
			c, err := s.Credential(ctx, v2.account.ID)
			return credFields(c), err
		}, credFields(v2.cred)},
		{"lease-only credential row", func() (any, error) {
			_, err := s.Credential(ctx, "acct-v2b")
			return errors.Is(err, post.ErrNotFound), nil
		}, true},
		{"dead letters", func() (any, error) { return s.Queue("publish", 5).DeadLetters(ctx, 0) }, []publishing.DeadLetter{v2.dead}},
		{"queued message", func() (any, error) {
			ms, err := s.Queue("publish", 5).Receive(ctx, 10, time.Minute)
			var bodies []string
			for _, m := range ms {
				bodies = append(bodies, fmt.Sprintf("%s %s %d", m.ID, m.Body, m.ReceiveCount))
			}
			return bodies, err
		}, []string{fmt.Sprintf("msg-v2 %s 1", v2.msgBody)}},
		{"blocklist", func() (any, error) { return s.BlockedTerms(ctx) }, []post.BlockedTerm(nil)},
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

	var access, refresh string
	if err := s.r.QueryRow(`SELECT access_token, refresh_token FROM credentials WHERE account_id = ?`, v2.account.ID).Scan(&access, &refresh); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(access, sealedPrefix) || !strings.HasPrefix(refresh, sealedPrefix) {
		t.Errorf("stored tokens after migration are %.12q…, %.12q…; want both encrypted (%s…)", access, refresh, sealedPrefix)
	}
	after := fileBytes(t, path)
	for _, sec := range secretsV2() {
		if bytes.Contains(after, []byte(sec)) {
			t.Errorf("%s is still in the file or its WAL after the migration", sec)
		}
	}
	var flags int
	if err := s.w.QueryRow(`PRAGMA user_version`).Scan(&flags); err != nil || flags&scrubPending != 0 {
		t.Errorf("user_version after Open = %d (%v), want the scrub mark cleared", flags, err)
	}
	wantKeyFile(t, path+".key")

	// The migrated rows take the new columns and the old lease.
	a := v2.account
	a.Limits = post.Limits{MaxTextGraphemes: 500}
	if err := s.PutAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetAccount(ctx, a.ID); err != nil || got.Limits != a.Limits {
		t.Errorf("GetAccount after PutAccount with limits = %+v, %v; want limits %+v", got.Limits, err, a.Limits)
	}
	if err := s.LeaseRefresh(ctx, "acct-v2b", "other", t0, t0.Add(time.Minute)); !errors.Is(err, post.ErrConflict) {
		t.Errorf("LeaseRefresh over the version 2 lease = %v, want post.ErrConflict", err)
	}
}

// wantKeyFile checks that path holds a key: keySize bytes, mode 0600.
func wantKeyFile(t *testing.T, path string) []byte {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("key file: %v", err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("key file %s has mode %04o, want 0600", filepath.Base(path), perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != keySize {
		t.Errorf("key file %s has %d bytes, want %d", filepath.Base(path), len(b), keySize)
	}
	return b
}

// A file migrated from version 2 has the schema of a new one.
func TestMigrationFromVersion2MatchesNewSchema(t *testing.T) {
	migrated := filepath.Join(t.TempDir(), "migrated.db")
	writeV2(t, migrated)
	got := schemaOf(t, openAt(t, migrated).r)
	want := schemaOf(t, openTest(t, Options{}).r)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("schema of a file migrated from version 2 (-new file +migrated):\n%s", d)
	}
	if ix := got["index targets_settled"]; len(ix) != 1 || !strings.Contains(ix[0], "(status, slot)") {
		t.Errorf("migrated targets_settled is %q, want it on (status, slot)", ix)
	}
	for _, name := range []string{"table blocklist", "index targets_by_account"} {
		if _, ok := got[name]; !ok {
			t.Errorf("migrated schema has no %s", name)
		}
	}
}

// A migration from version 2 that fails leaves the file as it was: still
// version 2, the credentials still readable by a version 2 build.
func TestFailedMigrationFromVersion2ChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stmts   []string
		keyMode os.FileMode // a key file is written first with this mode, if not 0
		wantErr string
	}{
		// A column a later ALTER adds already exists: the ALTER fails
		// after the accounts' columns were added.
		{"failing ALTER", []string{`ALTER TABLE credentials ADD COLUMN client_id TEXT`}, 0, "duplicate column"},
		{"key file readable by others", nil, 0o644, "chmod 600"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "odd.db")
			writeV2(t, path, tc.stmts...)
			if tc.keyMode != 0 {
				if err := os.WriteFile(path+".key", bytes.Repeat([]byte{7}, keySize), tc.keyMode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path+".key", tc.keyMode); err != nil { // past the umask
					t.Fatal(err)
				}
			}
			s, err := Open(context.Background(), path, Options{})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded, want the migration to fail")
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Open = %v, want an error saying %q", err, tc.wantErr)
			}
			if v := schemaVersionOf(t, path); v != 2 {
				t.Errorf("schema version after a failed migration = %d, want 2", v)
			}
			db, err := sql.Open("sqlite", dsn(path, false))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var access string
			if err := db.QueryRow(`SELECT access_token FROM credentials WHERE account_id = ?`, v2.account.ID).Scan(&access); err != nil || access != v2.cred.AccessToken {
				t.Errorf("access token after a failed migration: %v, want it as version 2 stored it", err)
			}
			var n int
			if err := db.QueryRow(`SELECT count(*) FROM pragma_table_info('accounts') WHERE name = 'max_characters'`).Scan(&n); err != nil || n != 0 {
				t.Errorf("accounts.max_characters exists after a failed migration (%d, %v)", n, err)
			}
		})
	}
}
