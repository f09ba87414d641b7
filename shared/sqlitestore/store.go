// Package sqlitestore is oncepost's embedded default store (DESIGN §6): the
// ledger, posts, accounts with their credentials, named queues with
// dead-letter queues, and the outbox of webhook events with its
// subscriptions and deliveries (outbox.go: every event is written in the
// transaction of the change that causes it), all in one SQLite file
// opened through the pure-Go driver modernc.org/sqlite. `oncepost run` uses it on one machine where
// the AWS runtime uses DynamoDB and SQS.
//
// # Atomicity
//
// Every conditional write (ledger Create/Update, UpdateTarget, refresh
// leases, queue receives and acks) runs either as one SQL statement or inside
// a BEGIN IMMEDIATE transaction. IMMEDIATE takes SQLite's write lock when the
// transaction starts, before anything is read, so the read-check-write inside
// it cannot interleave with another writer: not another goroutine and not
// another process sharing the file. The conditions themselves are in the SQL
// (`UPDATE … WHERE key = ? AND state = ? AND attempt = ? …`, checked through
// RowsAffected), so a lost race is reported as a conflict, never applied.
//
// Writers that find the lock taken wait under busy_timeout (10 s) instead of
// failing with SQLITE_BUSY; with IMMEDIATE transactions a writer never holds
// a stale read snapshot it would have to upgrade, which is the case where
// SQLite gives up without waiting. The file is in WAL mode, so readers never
// block writers and writers never block readers.
//
// Inside one process, writes go through a pool of exactly one connection
// (they are serialised by SQLite anyway) and reads through a separate pool of
// read-only connections, each statement prepared once per connection.
//
// # Cost of periodic queries
//
// What the runtime and the sweeper ask often (Open, Due, Unfinished,
// Unscheduled, CountTargets with statuses, PruneLedger, held entries) is
// answered from partial indexes that hold only the rows asked for, so its
// cost is what it returns, not the size of the store: a store with a
// million scheduled targets answers a restart's questions in well under a
// millisecond (BenchmarkStartupWithManyScheduled). Those queries name
// their index with INDEXED BY: a schema change that made one unusable
// fails at Open instead of silently scanning (TestQueryPlans).
//
// Times are stored as fixed-width RFC 3339 UTC text with nanoseconds
// ("2006-01-02T15:04:05.000000000Z"), which sorts like the times it encodes;
// the zero time is stored as the empty string. The file (and its -wal and
// -shm companions) has mode 0600 because it holds platform credentials.
//
// # Credentials at rest
//
// The credential values (access token, refresh token, OAuth client id and
// client secret) are encrypted with AES-256-GCM under a key kept in a
// separate file, Options.KeyFile (by default the database path + ".key"),
// and stored as "v1:" + base64(nonce ‖ ciphertext), a random 12-byte nonce
// per value. The additional data names the account and the column, so a
// value copied to another account's row or another column does not
// decrypt. Empty values are stored empty. Webhook subscriptions' signing
// secrets are sealed the same way with the same key (bound to the
// subscription id and "webhook_secret").
//
// Open creates the key file, 32 random bytes with mode 0600, when there is
// none (race-free between processes opening a new store at once: the key
// is written to a temporary file that is hard-linked to the final name,
// and whichever link won is read). It refuses a key file that group or
// others may read or write (the error says to run chmod 600), one of the
// wrong size, and a missing key file when the database already holds
// encrypted values, credentials or webhook secrets (a new key could not
// decrypt them). A value that does
// not decrypt is an error naming the account and the key file, never the
// value (ErrCredentialUndecryptable). Opening a version 2 file encrypts
// its plaintext credentials in the migration, then rewrites the file
// (VACUUM) and empties the WAL so that no old page keeps a token.
//
// What this protects: a copy of the database file without its key file (a
// backup, a file attached to a bug report, a disk image of the database
// alone); keep the key file out of such copies, or set KeyFile to a path
// elsewhere. What it does not protect: anyone who can read both files,
// which includes every process running as the same user as the store
// (and root); nor tokens in the memory of a running process. Losing the
// key file loses the credentials: the accounts must be connected again.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	mathrand "math/rand/v2"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitetx"
	"oncepost/shared/sqltime"
)

// Interface guards.
var (
	_ publishing.Ledger   = (*Store)(nil)
	_ publishing.Posts    = (*Store)(nil)
	_ publishing.Accounts = (*Store)(nil)
	_ publishing.Queue    = (*Queue)(nil)

	_ publishing.Blocklist       = (*Store)(nil)
	_ publishing.DeadLetterAdmin = (*Queue)(nil)

	_ publishing.Subscriptions   = (*Store)(nil)
	_ publishing.Deliveries      = (*Store)(nil)
	_ publishing.IdempotencyKeys = (*Store)(nil)
	_ publishing.PostLister      = (*Store)(nil)
	_ publishing.QueueSlots      = (*Store)(nil)
)

// schemaVersion is the version of the schema this build creates and reads.
// Version 2 added the ledger's maybe_sent, look_after, retry_at,
// deferred_since and decision, the targets' next_try and has_schedule, the
// accounts' status and status_reason and the credentials' refresh_lost_at.
// Version 3 encrypts the credential values (see "Credentials at rest"), adds
// the credentials' client_id and client_secret, the accounts' limits
// (max_characters, max_media, max_media_bytes), the blocklist table, the
// index targets_by_account and slot to targets_settled (for ListPosts).
// Version 4 adds the ledger's checkpoint, the posts' texts per platform
// and the pace table. The idempotency_keys table came without a new
// version: every Open creates a missing table (whatever the file's
// version), and a build that does not know it leaves it alone.
// Version 5 adds the accounts' time_zone, slots and require_approval, the
// targets' queued and the posts' thread and author.
const schemaVersion = 5

// walCheckpointPages is the WAL size, in pages, at which a commit
// checkpoints it into the database file (4 KiB pages: 32 MiB).
const walCheckpointPages = 8000

// busyTimeout is how long a writer waits for another writer's lock.
const busyTimeout = 10 * time.Second

// Options configure a Store.
type Options struct {
	// Now is the clock for queue visibility and delays and for audit
	// timestamps; default time.Now.
	Now func() time.Time
	// KeyFile is the file holding the key that encrypts the credentials
	// (see "Credentials at rest"); default: the database path + ".key".
	KeyFile string
	// Logger gets a warning for every message a queue's Receive
	// dead-letters by itself; default slog.Default().
	Logger *slog.Logger
}

// Stats counts, since Open, the writes that changed data, per port. One port
// method call that writes counts as one write; the ledger's audit rows are
// counted only in AuditRows.
type Stats struct {
	LedgerWrites  uint64
	PostWrites    uint64
	AccountWrites uint64
	// PaceWrites are the sends taken from posting budgets (Pace).
	PaceWrites  uint64
	QueueWrites uint64
	AuditRows   uint64
	// BlocklistWrites counts blocked terms added or removed.
	BlocklistWrites uint64
	// SubscriptionWrites are webhook subscriptions added, removed or
	// disabled; DeliveryWrites the outbox's claims, recorded attempts,
	// redrives and prunes.
	SubscriptionWrites uint64
	DeliveryWrites     uint64
	// EventRows and DeliveryRows are the events and deliveries recorded
	// with the changes that caused them (counted like AuditRows, not as
	// writes of their own).
	EventRows    uint64
	DeliveryRows uint64
}

// Store is the embedded SQLite store. It implements publishing.Ledger,
// publishing.Posts, publishing.Accounts, publishing.Blocklist,
// publishing.Subscriptions and publishing.Deliveries; Queue returns its
// queues. It is safe for concurrent use, also by several
// processes sharing the file.
type Store struct {
	path string

	// Group commit of creates (commitCreates): the creates waiting, and
	// whether a caller is writing groups.
	createMu      sync.Mutex
	createQueue   []*create
	createLeading bool

	w   *sql.DB // writes: one connection, BEGIN IMMEDIATE
	r   *sql.DB // reads: query_only connections
	now func() time.Time
	log *slog.Logger

	// keyFile holds the credentials' key; seal is set by migrate.
	keyFile string
	seal    *sealer

	ws writeStmts
	rs readStmts
	os outboxStmts
	// lists are ListPostPage's prepared queries, by shape (listStmts).
	lists listStmts

	// fanOut caches the subscriptions for the outbox's fan-out;
	// eventsWritten is EventsWritten's channel.
	fanOut        fanOutCache
	eventsWritten chan struct{}

	ledgerWrites, postWrites, accountWrites, queueWrites, auditRows, blocklistWrites, paceWrites atomic.Uint64
	subscriptionWrites, deliveryWrites, eventRows, deliveryRows                                  atomic.Uint64
}

// Open opens the store file at path, creating the file and its schema if
// needed, or bringing the schema of a file written by an older build to
// schemaVersion (in one transaction; see migrate). A file of a newer
// version is refused. A new file is created with mode 0600; an existing
// file, -wal or -shm file that group or others may access is tightened to
// 0600. The credentials' key file is read, or created if there is none
// (see "Credentials at rest"). The caller must Close the store.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" || strings.ContainsRune(path, '?') || strings.HasPrefix(path, "file:") || strings.HasPrefix(path, ":memory:") {
		return nil, fmt.Errorf("sqlitestore: open %q: need a plain file path", path)
	}
	if err := securePath(path); err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	// SQLite creates -wal and -shm with the database file's mode; a looser
	// pair left by an older run is tightened too.
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := tighten(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
		}
	}
	s := &Store{path: path, now: opts.Now, keyFile: opts.KeyFile, log: opts.Logger, eventsWritten: make(chan struct{}, 1)}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.keyFile == "" {
		s.keyFile = path + ".key"
	}
	var err error
	if s.w, err = sql.Open("sqlite", dsn(path, true)); err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	if err := retryBusy(ctx, func() error { return s.migrate(ctx) }); err != nil {
		s.w.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	if err := s.scrub(ctx); err != nil {
		s.w.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	if s.r, err = sql.Open("sqlite", dsn(path, false)); err != nil {
		s.w.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	readers := max(4, 2*runtime.GOMAXPROCS(0))
	s.r.SetMaxOpenConns(readers)
	s.r.SetMaxIdleConns(readers)
	s.r.SetConnMaxLifetime(0)
	s.r.SetConnMaxIdleTime(0)
	if err := s.prepare(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	if err := s.prepareOutbox(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	return s, nil
}

// dsn is the driver's data source name: pragmas run on every new
// connection, IMMEDIATE transactions for the writer, query_only for readers.
func dsn(path string, writer bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	if writer {
		q.Set("_txlock", "immediate")
		// Checkpoint every walCheckpointPages pages instead of SQLite's
		// 1000: hot pages (queue, indexes) are copied back once per
		// checkpoint however often they were written, so fewer, larger
		// checkpoints cost less. journal_size_limit bounds the file that
		// remains after a checkpoint.
		q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walCheckpointPages))
		q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", 2*walCheckpointPages*4096))
	} else {
		q.Add("_pragma", "query_only(ON)")
	}
	return path + "?" + q.Encode()
}

// securePath creates the file with mode 0600 if it is absent, and removes
// group and other permissions from an existing one.
func securePath(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		return f.Close()
	case errors.Is(err, fs.ErrExist):
		return tighten(path)
	default:
		return err
	}
}

// tighten sets path's mode to 0600 unless it is already that strict.
func tighten(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return os.Chmod(path, 0o600)
	}
	return nil
}

// Close closes the store's connections.
func (s *Store) Close() error {
	var errs []error
	for _, st := range s.ws.all() {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	for _, st := range s.rs.all() {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	for _, st := range s.os.all() {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	errs = append(errs, s.lists.close())
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlitestore: close: %w", err)
	}
	return nil
}

// Stats returns the write counters since Open.
func (s *Store) Stats() Stats {
	return Stats{
		LedgerWrites:    s.ledgerWrites.Load(),
		PostWrites:      s.postWrites.Load(),
		AccountWrites:   s.accountWrites.Load(),
		PaceWrites:      s.paceWrites.Load(),
		QueueWrites:     s.queueWrites.Load(),
		AuditRows:       s.auditRows.Load(),
		BlocklistWrites: s.blocklistWrites.Load(),

		SubscriptionWrites: s.subscriptionWrites.Load(),
		DeliveryWrites:     s.deliveryWrites.Load(),
		EventRows:          s.eventRows.Load(),
		DeliveryRows:       s.deliveryRows.Load(),
	}
}

// The schema. tables create every table at the current version (a new
// file gets it directly); migrations[v] brings a file from version v to
// v+1; indexes come last because some of them need migrated columns. All of
// it runs at Open in one IMMEDIATE transaction, so processes opening an old
// file at the same moment migrate it once, and a process that fails midway
// leaves the file as it was.
//
// Columns added by a migration are appended at the end of their table, with
// the same type and default in tables and in the migration, so a migrated
// file has exactly the schema of a new one (TestMigrationMatchesNewSchema).
var tables = []string{
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
		decision       TEXT NOT NULL DEFAULT '',
		post_id        TEXT NOT NULL DEFAULT '',
		checkpoint     TEXT NOT NULL DEFAULT ''
	) WITHOUT ROWID`,
	// Audit rows, clustered by key: n numbers an entry's transitions from 1.
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
		created_at TEXT NOT NULL,
		texts      TEXT NOT NULL DEFAULT '',
		thread     TEXT NOT NULL DEFAULT '',
		author     TEXT NOT NULL DEFAULT ''
	) WITHOUT ROWID`,
	// has_schedule is 1 once the runtime has made the target's schedule
	// (CreatePostScheduled, MarkScheduled).
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
		queued       INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (post_id, account)
	) WITHOUT ROWID`,

	`CREATE TABLE IF NOT EXISTS accounts (
		id              TEXT PRIMARY KEY,
		platform        TEXT NOT NULL,
		handle          TEXT NOT NULL,
		base_url        TEXT NOT NULL,
		remote_id       TEXT NOT NULL,
		credential_ref  TEXT NOT NULL,
		gate            TEXT NOT NULL,
		status          TEXT NOT NULL DEFAULT '',
		status_reason   TEXT NOT NULL DEFAULT '',
		max_characters  INTEGER NOT NULL DEFAULT 0,
		max_media       INTEGER NOT NULL DEFAULT 0,
		max_media_bytes INTEGER NOT NULL DEFAULT 0,
		time_zone       TEXT NOT NULL DEFAULT '',
		slots           TEXT NOT NULL DEFAULT '',
		require_approval INTEGER NOT NULL DEFAULT 0
	) WITHOUT ROWID`,
	// Credentials live apart from accounts; a row may carry only a lease.
	// access_token, refresh_token, client_id and client_secret hold
	// encrypted values (sealer), or the empty string.
	`CREATE TABLE IF NOT EXISTS credentials (
		account_id      TEXT PRIMARY KEY,
		access_token    TEXT NOT NULL,
		refresh_token   TEXT NOT NULL,
		expires_at      TEXT NOT NULL,
		lease_owner     TEXT NOT NULL DEFAULT '',
		lease_until     TEXT NOT NULL DEFAULT '',
		refresh_lost_at TEXT NOT NULL DEFAULT '',
		client_id       TEXT NOT NULL DEFAULT '',
		client_secret   TEXT NOT NULL DEFAULT ''
	) WITHOUT ROWID`,
	// The workspace's blocked terms, by their normalised key.
	`CREATE TABLE IF NOT EXISTS blocklist (
		key      TEXT PRIMARY KEY,
		term     TEXT NOT NULL,
		added_at TEXT NOT NULL
	) WITHOUT ROWID`,

	// An account's posting budget: one GCRA time per posting limit
	// (package pace).
	`CREATE TABLE IF NOT EXISTS pace (
		account TEXT NOT NULL,
		rate    TEXT NOT NULL,
		tat     TEXT NOT NULL,
		PRIMARY KEY (account, rate)
	) WITHOUT ROWID`,
	// The HTTP API's bearer tokens (apitoken): only their SHA-256 is
	// kept; scopes are a comma-separated list, rate requests per second
	// (0: the default).
	`CREATE TABLE IF NOT EXISTS api_tokens (
		id           TEXT PRIMARY KEY,
		name         TEXT NOT NULL UNIQUE,
		hash         TEXT NOT NULL UNIQUE,
		scopes       TEXT NOT NULL,
		rate         REAL NOT NULL DEFAULT 0,
		created_at   TEXT NOT NULL,
		revoked_at   TEXT NOT NULL DEFAULT '',
		last_used_at TEXT NOT NULL DEFAULT ''
	) WITHOUT ROWID`,
	// Messages are addressed by seq (receipts carry it); the random id is
	// for callers and needs no index.
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
	// A create request's idempotency key and its first answer, written in
	// the post's transaction (CreatePostKeyed); kept IdempotencyKeep.
	`CREATE TABLE IF NOT EXISTS idempotency_keys (
		scope       TEXT NOT NULL,
		key         TEXT NOT NULL,
		fingerprint TEXT NOT NULL,
		post_id     TEXT NOT NULL,
		status      INTEGER NOT NULL,
		response    BLOB NOT NULL,
		created_at  TEXT NOT NULL,
		PRIMARY KEY (scope, key)
	) WITHOUT ROWID`,
	// The posting slots queued posts took (queueslots.go).
	`CREATE TABLE IF NOT EXISTS queue_slots (
		account    TEXT NOT NULL,
		slot       TEXT NOT NULL,
		post_id    TEXT NOT NULL,
		claimed_at TEXT NOT NULL,
		PRIMARY KEY (account, slot)
	) WITHOUT ROWID`,
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

	// The outbox (outbox.go). New tables need no migration: this list
	// runs at every Open. Webhook subscriptions: events is a JSON array
	// of event types (every type when empty), secret is sealed like the
	// credentials.
	`CREATE TABLE IF NOT EXISTS subscriptions (
		id              TEXT PRIMARY KEY,
		url             TEXT NOT NULL,
		events          TEXT NOT NULL,
		secret          TEXT NOT NULL,
		allow_private   INTEGER NOT NULL DEFAULT 0,
		description     TEXT NOT NULL DEFAULT '',
		created_at      TEXT NOT NULL,
		disabled        INTEGER NOT NULL DEFAULT 0,
		disabled_reason TEXT NOT NULL DEFAULT ''
	) WITHOUT ROWID`,
	// One row (id 0): n counts the writes to subscriptions, so the fan-out
	// re-reads them only when they changed (in any process).
	`CREATE TABLE IF NOT EXISTS subscriptions_version (
		id INTEGER PRIMARY KEY,
		n  INTEGER NOT NULL
	)`,
	// Every event recorded, for EventKeep (with or without subscribers),
	// in the order recorded: the event as JSON (its webhook body is
	// derived from it) and when the store recorded it. An append-only
	// log without an index: one page a commit, not one per index.
	`CREATE TABLE IF NOT EXISTS events (
		seq         INTEGER PRIMARY KEY,
		id          TEXT NOT NULL,
		type        TEXT NOT NULL,
		recorded_at TEXT NOT NULL,
		event       TEXT NOT NULL
	)`,
	// One event to one subscription: id is publishing.DeliveryID, event
	// the event as JSON. A claimed delivery's next_try is the end of its
	// lease (lease_until). Rows are appended in seq order (their JSON is
	// a few hundred bytes: kept in order, they do not split pages all
	// over the table); only the small id index takes random inserts.
	// Recurring rules (publishing.RecurringRules): the rule as JSON
	// (recurring.Encode) and its version, the condition of every update.
	// Created without a schema version of its own, like idempotency_keys.
	`CREATE TABLE IF NOT EXISTS recurring_rules (
		id      TEXT PRIMARY KEY,
		version INTEGER NOT NULL,
		rule    TEXT NOT NULL
	) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS deliveries (
		seq             INTEGER PRIMARY KEY,
		id              TEXT NOT NULL UNIQUE,
		event           TEXT NOT NULL,
		subscription_id TEXT NOT NULL,
		state           TEXT NOT NULL,
		attempts        INTEGER NOT NULL DEFAULT 0,
		created_at      TEXT NOT NULL,
		next_try        TEXT NOT NULL,
		lease_until     TEXT NOT NULL DEFAULT '',
		last_error      TEXT NOT NULL DEFAULT '',
		last_status     INTEGER NOT NULL DEFAULT 0,
		updated_at      TEXT NOT NULL
	)`,
	// Workspace settings, one row a setting, the value JSON: the
	// approval policy (approval.go).
	`CREATE TABLE IF NOT EXISTS settings (
		name       TEXT PRIMARY KEY,
		value      TEXT NOT NULL,
		updated_at TEXT NOT NULL
	) WITHOUT ROWID`,
}

// migrations[v] are the statements that bring a version v file to v+1.
var migrations = map[int][]string{
	1: {
		`ALTER TABLE ledger ADD COLUMN maybe_sent INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE ledger ADD COLUMN look_after TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE ledger ADD COLUMN retry_at TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE ledger ADD COLUMN deferred_since TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE ledger ADD COLUMN decision TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE targets ADD COLUMN next_try TEXT NOT NULL DEFAULT ''`,
		// Targets created before version 2 count as unscheduled: the
		// runtime makes (or finds) their schedules once, through
		// Unscheduled and MarkScheduled.
		`ALTER TABLE targets ADD COLUMN has_schedule INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE accounts ADD COLUMN status TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE accounts ADD COLUMN status_reason TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE credentials ADD COLUMN refresh_lost_at TEXT NOT NULL DEFAULT ''`,
	},
	// The blocklist table is created with the other tables; the plaintext
	// credentials are encrypted by migrateSteps[2].
	2: {
		// Recreated below as (status, slot).
		`DROP INDEX IF EXISTS targets_settled`,
		`ALTER TABLE accounts ADD COLUMN max_characters INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE accounts ADD COLUMN max_media INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE accounts ADD COLUMN max_media_bytes INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE credentials ADD COLUMN client_id TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE credentials ADD COLUMN client_secret TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE ledger ADD COLUMN post_id TEXT NOT NULL DEFAULT ''`,
	},
	3: {
		`ALTER TABLE ledger ADD COLUMN checkpoint TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE posts ADD COLUMN texts TEXT NOT NULL DEFAULT ''`,
	},
	4: {
		`ALTER TABLE accounts ADD COLUMN time_zone TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE accounts ADD COLUMN slots TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE accounts ADD COLUMN require_approval INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE targets ADD COLUMN queued INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE posts ADD COLUMN thread TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE posts ADD COLUMN author TEXT NOT NULL DEFAULT ''`,
	},
}

// migrateSteps[v] runs, in the same transaction, after migrations[v].
var migrateSteps = map[int]func(s *Store, ctx context.Context, tx *sql.Tx) error{
	2: (*Store).encryptPlaintextCredentials,
}

// indexes are created after the tables are at the current version. Every
// index that a periodic or start-up query needs is partial, so it holds
// only the rows that query looks for; the queries name their index with
// INDEXED BY, so a schema change that makes one unusable fails at Open
// instead of turning it into a scan of every row.
var indexes = []string{
	// The sparse stale index: only open entries are in it.
	`CREATE INDEX IF NOT EXISTS ledger_open ON ledger (open_since) WHERE state IN ('pending', 'unknown')`,
	// Held entries, waiting for an operator, for ByState.
	`CREATE INDEX IF NOT EXISTS ledger_held ON ledger (updated_at) WHERE state = 'held'`,
	// Entries with a TTL (terminal ones), for PruneLedger.
	`CREATE INDEX IF NOT EXISTS ledger_expires ON ledger (expires_at) WHERE expires_at != ''`,

	`CREATE INDEX IF NOT EXISTS targets_due ON targets (slot) WHERE status = 'scheduled'`,
	`CREATE INDEX IF NOT EXISTS targets_unfinished ON targets (updated_at) WHERE status IN ('triggered', 'publishing')`,
	`CREATE INDEX IF NOT EXISTS targets_waiting ON targets (next_try) WHERE status = 'waiting'`,
	// Targets waiting for approval, by slot (version 5): ListPosts and
	// CountTargets of needs_approval, and the approvals whose slot passed.
	`CREATE INDEX IF NOT EXISTS targets_approval ON targets (slot) WHERE status = 'needs_approval'`,
	// The statuses no other index covers, for CountTargets, and by slot
	// within a status for ListPosts (version 3 added slot).
	`CREATE INDEX IF NOT EXISTS targets_settled ON targets (status, slot) WHERE status IN ('published', 'failed', 'held', 'cancelled', 'deleted')`,
	// Scheduled targets whose schedule was never made, for Unscheduled.
	`CREATE INDEX IF NOT EXISTS targets_unscheduled ON targets (slot) WHERE status = 'scheduled' AND has_schedule = 0`,
	// ListPosts of one account's targets, in slot order. A status change
	// leaves it alone (SQLite updates only the indexes whose columns
	// change): only adding or moving a target writes it.
	`CREATE INDEX IF NOT EXISTS targets_by_account ON targets (account, slot)`,

	`CREATE INDEX IF NOT EXISTS queue_messages_visible ON queue_messages (queue, visible_at, seq)`,
	// Messages whose visible_at cannot be read (written by another
	// program): never visible by their text, so Receive finds them here
	// to dead-letter them. Normally empty.
	`CREATE INDEX IF NOT EXISTS queue_messages_undecodable ON queue_messages (queue, seq) WHERE ` + visibleAtUnreadable,
	`CREATE INDEX IF NOT EXISTS dead_letters_queue ON dead_letters (queue, seq)`,

	// The outbox: due deliveries for ClaimDeliveries (only pending ones);
	// by state and last update for ListDeliveries, PruneOutbox and a
	// removed subscription's dead ones.
	`CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (next_try) WHERE state = 'pending'`,
	`CREATE INDEX IF NOT EXISTS deliveries_by_state ON deliveries (state, updated_at)`,

	// Idempotency keys by age, for PruneIdempotencyKeys.
	`CREATE INDEX IF NOT EXISTS idempotency_keys_created ON idempotency_keys (created_at)`,
}

// migrate creates the schema of a new file, or brings an older file's
// schema to schemaVersion, in one transaction. A file of a newer version
// is refused: this build would not know its columns.
func (s *Store) migrate(ctx context.Context) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
			return fmt.Errorf("create schema_version: %w", err)
		}
		v := 0 // a new file
		err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("read schema version: %w", err)
		case v > schemaVersion:
			return fmt.Errorf("schema version %d is newer than this build's %d", v, schemaVersion)
		case v < 1:
			return fmt.Errorf("schema version %d is not a version this build knows", v)
		}
		for _, stmt := range tables {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
		}
		// After the tables: the subscriptions table it counts sealed
		// secrets in may be new.
		if err := s.loadSealer(ctx, tx, v); err != nil {
			return err
		}
		// A new file (v = 0) got the current tables above; an older one
		// kept its tables and is migrated one version at a time.
		for from := v; v > 0 && from < schemaVersion; from++ {
			for _, stmt := range migrations[from] {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("migrate schema from version %d: %w", from, err)
				}
			}
			if step := migrateSteps[from]; step != nil {
				if err := step(s, ctx, tx); err != nil {
					return fmt.Errorf("migrate schema from version %d: %w", from, err)
				}
			}
		}
		for _, stmt := range indexes {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("create indexes: %w", err)
			}
		}
		record := ""
		switch {
		case v == 0:
			record = `INSERT INTO schema_version (version) VALUES (?)`
		case v < schemaVersion:
			record = `UPDATE schema_version SET version = ?`
		}
		if record != "" {
			if _, err := tx.ExecContext(ctx, record, schemaVersion); err != nil {
				return fmt.Errorf("record schema version %d: %w", schemaVersion, err)
			}
		}
		return nil
	})
}

// loadSealer reads the credentials' key file, or creates it if there is
// none and the file (at schema version v, 0 for a new file) holds no
// encrypted value, which a new key could never decrypt. It runs inside
// migrate's transaction, so processes opening one new file at once create
// the key one after the other (and createKey is race-free anyway).
func (s *Store) loadSealer(ctx context.Context, tx *sql.Tx, v int) error {
	key, err := loadKey(s.keyFile, func() error {
		var secrets int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM subscriptions`).Scan(&secrets); err != nil {
			return fmt.Errorf("key file %s is missing; counting the webhook secrets it encrypted: %w", s.keyFile, err)
		}
		if secrets > 0 {
			return fmt.Errorf("key file %s is missing, but the database holds %d webhook subscriptions whose secrets only that key decrypts: "+
				"restore the key file (a new key cannot read them); to start over instead, delete them "+
				"(DELETE FROM subscriptions) and add the subscriptions again", s.keyFile, secrets)
		}
		if v < 3 {
			return nil // a new file, or one whose credentials are still plaintext
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM credentials
			WHERE access_token != '' OR refresh_token != '' OR client_id != '' OR client_secret != ''`).Scan(&n); err != nil {
			return fmt.Errorf("key file %s is missing; counting the credentials it encrypted: %w", s.keyFile, err)
		}
		if n > 0 {
			return fmt.Errorf("key file %s is missing, but the database holds %d encrypted credentials that only that key decrypts: "+
				"restore the key file (a new key cannot read them); to start over instead, delete the credentials "+
				"(DELETE FROM credentials) and connect the accounts again", s.keyFile, n)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.seal, err = newSealer(key, s.keyFile)
	return err
}

// scrubPending is the bit of SQLite's user_version that the migration to
// version 3 sets when it encrypted plaintext credentials: the old values
// may remain in free pages of the file and in WAL frames until scrub has
// rewritten the file.
const scrubPending = 1

// encryptPlaintextCredentials encrypts the credentials of a version 2 file
// (client_id and client_secret are new, hence empty) and marks the file
// for scrub.
func (s *Store) encryptPlaintextCredentials(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT account_id, access_token, refresh_token FROM credentials
		WHERE access_token != '' OR refresh_token != ''`)
	if err != nil {
		return fmt.Errorf("encrypt credentials: %w", err)
	}
	type plain struct{ id, access, refresh string }
	var all []plain
	for rows.Next() {
		var p plain
		if err := rows.Scan(&p.id, &p.access, &p.refresh); err != nil {
			rows.Close()
			return fmt.Errorf("encrypt credentials: %w", err)
		}
		all = append(all, p)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("encrypt credentials: %w", err)
	}
	for _, p := range all {
		id := post.AccountID(p.id)
		if _, err := tx.ExecContext(ctx, `UPDATE credentials SET access_token = ?, refresh_token = ? WHERE account_id = ?`,
			s.seal.seal(id, colAccessToken, p.access), s.seal.seal(id, colRefreshToken, p.refresh), p.id); err != nil {
			return fmt.Errorf("encrypt credential %s: %w", id, err)
		}
	}
	if len(all) > 0 {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, scrubPending)); err != nil {
			return fmt.Errorf("mark the file for scrubbing: %w", err)
		}
	}
	return nil
}

// scrub rewrites the file (VACUUM) and empties the WAL after the migration
// encrypted plaintext credentials, so that no free page or old WAL frame
// still holds a token. Until it has succeeded, every Open tries again: a
// checkpoint that another process's reader keeps from finishing leaves
// the mark in place.
func (s *Store) scrub(ctx context.Context) error {
	var flags int
	if err := s.w.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&flags); err != nil {
		return fmt.Errorf("read user_version: %w", err)
	}
	if flags&scrubPending == 0 {
		return nil
	}
	if _, err := s.w.ExecContext(ctx, `VACUUM`); err != nil {
		return fmt.Errorf("rewrite the file after encrypting its credentials: %w", err)
	}
	var busy, frames, copied int
	if err := s.w.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &copied); err != nil {
		return fmt.Errorf("empty the WAL after encrypting the credentials: %w", err)
	}
	if busy != 0 {
		return nil
	}
	if _, err := s.w.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, flags&^scrubPending)); err != nil {
		return fmt.Errorf("clear the scrub mark: %w", err)
	}
	return nil
}

// retryBusy runs fn until it succeeds, fails with something other than
// SQLITE_BUSY, or busyTimeout has passed. Only Open needs it: processes
// opening a new file at the same moment all switch it to WAL mode, and
// SQLite refuses one of them at once, without a busy wait, when a lock
// upgrade could deadlock. Once the file is in WAL mode that cannot happen.
func retryBusy(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(busyTimeout)
	for {
		err := fn()
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(5+mathrand.IntN(20)) * time.Millisecond):
		}
	}
}

// write runs fn in a write transaction (see sqlitetx.Write).
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return sqlitetx.Write(ctx, s.w, fn)
}

// decoder decodes stored times and keeps the first error.
type decoder struct{ err error }

func (d *decoder) time(s string) time.Time {
	t, err := sqltime.Decode(s)
	if err != nil && d.err == nil {
		d.err = err
	}
	return t
}

// sqlLimit maps a non-positive limit to SQLite's "no limit".
func sqlLimit(limit int) int {
	if limit <= 0 {
		return -1
	}
	return limit
}

// DB returns the store's write pool (one connection, BEGIN IMMEDIATE
// transactions) for the embedded runtime's sibling components (localflow,
// localcron) that keep their own tables in the same file. Never hold one of
// its transactions open while doing I/O or calling back into the store:
// there is one write connection, and the callee would wait forever.
func (s *Store) DB() *sql.DB { return s.w }

// DataVersion returns SQLite's data_version of the store's write
// connection: a number that changes when another connection commits a
// change to the file, i.e. another process (every write of this process
// goes through that connection, so its own commits leave it unchanged). It
// is one cheap read, for the runtime to notice posts added by another
// process without rereading anything; only a change means something, the
// values themselves do not.
func (s *Store) DataVersion(ctx context.Context) (int64, error) {
	var v int64
	if err := s.w.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("sqlitestore: data version: %w", err)
	}
	return v, nil
}
