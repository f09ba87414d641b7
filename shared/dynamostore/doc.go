// Package dynamostore implements the Ledger, Posts, Accounts and
// Blocklist ports (package publishing) on DynamoDB: the AWS runtime's
// store (DESIGN §6). It passes the publishingtest suites, run against
// dynalite.
//
// Every write is a single-item PutItem, UpdateItem or DeleteItem, with a
// condition wherever two writers can meet (every ledger move, every
// target move, creation, leases); no transaction is used (TransactWriteItems would double the write cost, and
// dynalite has none), and nothing is ever read with Scan: every list is a
// Query of an index that holds only what it lists.
//
// # Tables
//
// Four tables, named Options.Prefix + LedgerTable, PostsTable,
// WorkspaceTable, CredentialsTable; Tables returns their CreateTable
// inputs (on-demand billing), CreateTables creates them, EnableTTL turns
// the TTLs of the ledger and the workspace table on. Times are stored as fixed-width RFC 3339 strings in
// UTC with nanoseconds, so string order is time order; empty strings and
// zero times are not stored at all.
//
// ledger — key "key" (the ledger.Key). One item per entry: every
// ledger.Entry field, plus
//
//   - history: the entry's transitions (at, from, to, attempt, reason), a
//     list appended to by the same UpdateItem that moves the entry, so the
//     audit costs no write of its own. It keeps the HistoryKeep most recent
//     transitions: an Update that leaves more than 32 is followed by one
//     conditional trim (history_dropped counts what went), so only an entry
//     that moves very often (a long run of throttled re-sends) pays an extra
//     write every 12 moves, and an item stays under ~3 KB.
//   - open_shard ("open#0" … "open#3", by a hash of the key) and open_at
//     (open_since, then the key), written only while the entry is pending or
//     unknown and removed by the move that closes it: the sparse index
//     OpenIndex holds open entries only, so Open's cost follows the open
//     entries (normally a handful), never the ledger. Four shards keep a
//     burst of acquisitions off a single index partition.
//   - held_shard / held_at (updated_at, then the key): the same, for held
//     entries (HeldIndex, Store.Held: the operator's list).
//   - ttl: ExpiresAt in epoch seconds (rounded up) on confirmed and failed
//     entries only, DynamoDB's TTL attribute. TTL deletion is lazy (within
//     about two days); reads treat an entry past its TTL as deleted already:
//     Get answers ledger.ErrNotFound, History is empty and Create writes over
//     it (attribute_not_exists(key) OR ttl < now). Open, released and held
//     entries never expire.
//
// posts — key (post, item). A post is one partition: the post item
// (item "post": body, media, created_at, its targets' accounts, a create
// id and a phase) and one item per target (item "target#<account>": slot,
// status, remote id, reason, next try, updated at, its position in the
// post, the create id). GetPost is one strongly consistent Query of the
// partition. Each target also carries st ("<status>#<shard>", four shards
// per status by a hash of post and account) and st_at (the time its status
// is listed by — slot while scheduled, next try while waiting, the last
// update otherwise — then post id and account): StatusIndex, with one
// partition range per status, serves Due (scheduled, st_at ≤ t),
// Unfinished (triggered and publishing by update time, waiting by next try)
// and CountTargets (Select COUNT per status), none of which reads more
// than the statuses it asks for.
//
// CreatePost writes the post item first as a claim (phase "creating"),
// then the targets, then flips the post item to "ready" as the commit
// marker. Readers see only ready posts and only targets carrying the
// post's create id, so a crash between writes leaves nothing visible; a
// later CreatePost of the id takes an unfinished creation over after
// CreateStaleAfter (see CreatePost).
//
// workspace — key (pk, sk): accounts in partition "account" (sorted by
// id: ListAccounts is one Query), the blocklist in partition "blocked"
// (sorted by key, as BlockedTerms lists it), the credentials' wrapped
// data key in partition "config", and the API's idempotency records, each
// in a partition of its own ("idempotency#<hash of scope and key>", see
// CreatePostWithKey) with a ttl (publishing.IdempotencyKeep after it was
// written): the workspace table's TTL, which no other item carries.
//
// credentials — key "account". Kept apart from accounts (a table of its
// own, so IAM can give it to the publisher only): the access and refresh
// tokens and the OAuth client id and secret sealed with credseal
// (AES-256-GCM, the account and field as additional data) under a data
// key that DataKeys wraps (KMSKeys: envelope encryption with KMS, see
// there), the expiry and lost-refresh times, and the refresh lease, which
// LeaseRefresh, SaveRefreshed and MarkRefreshLost move with one
// conditional UpdateItem each.
//
// # Indexes and their cost
//
// All indexes project keys only (an index entry is ~100–150 bytes).
// OpenIndex and HeldIndex are sparse: an entry is in one only while it has
// the index's key attributes; StatusIndex holds every target, one range
// per status. Index reads are eventually consistent, so every list reads
// its items back with strongly consistent BatchGetItem and drops what the
// index still lists but that has moved on (an entry that closed, a target
// whose status changed) and targets of unfinished posts. Counts are not
// read back (see CountTargets).
//
// Writes, at $0.625 per million 1 KB write units: an index costs one unit
// when an item enters or leaves it and two when its index key changes
// (delete + put). The publish path — ledger Create, ledger Update pending →
// confirmed, UpdateTarget scheduled → published — is three calls, three
// item writes of under 1 KB each, plus two OpenIndex writes (enter, leave)
// and two StatusIndex writes (scheduled out, published in): 7 write units.
// Its reads are two GetTarget calls, shared by the jobs of a batch.
//
// # Calls per operation
//
//	Create        1 PutItem (+1 index write)
//	Get, History  1 GetItem, strongly consistent
//	Update        1 UpdateItem (+ index writes; +1 trim every 12 moves past 32;
//	              a refused one +1 consistent GetItem when the refusal does not
//	              carry the stored item — DynamoDB sends it, dynalite does not)
//	Open, Held    4 Query (one per shard) + 1 BatchGetItem per 50 entries listed
//	CreatePost    2 + len(Targets) writes
//	CreatePostWithKey
//	              1 PutItem (the record) + CreatePost's; a key used before:
//	              1 refused PutItem + 1 GetItem (the post item; +1 GetItem
//	              of the record on dynalite); a takeover +1 PutItem
//	GetIdempotencyRecord
//	              1 GetItem, strongly consistent (+1 GetItem, the post item,
//	              for a record older than CreateStaleAfter)
//	Budget        1 GetItem, strongly consistent
//	GetPost       1 Query, strongly consistent
//	GetTarget     1 BatchGetItem shared by the reads made within ReadWindow
//	              (up to 50), strongly consistent
//	UpdateTarget  1 UpdateItem (+2 index writes; a refusal as Update)
//	Due           4 Query + BatchGetItem (target and post per result)
//	Unfinished    12 Query + BatchGetItem
//	CountTargets  4 Query (Select COUNT) per status asked, 36 for all
//	Credential    1 GetItem (the process's first also reads the data key and
//	              unwraps it: 1 GetItem + 1 KMS Decrypt)
//	PutCredential, LeaseRefresh, SaveRefreshed, MarkRefreshLost
//	              1 UpdateItem (the first credential ever also makes the data
//	              key: KMS GenerateDataKey + 1 PutItem)
//	accounts, blocklist
//	              1 call each (ListAccounts, BlockedTerms: 1 Query)
//	ListPosts, ListPostPage
//	              4 Query per status asked (36 for all) + 1 Query (GetPost)
//	              per post met (a page's posts and one more, to know
//	              whether another page follows)
//	Waiting       4 Query + BatchGetItem
//	RescheduleTarget
//	              1 Query + 2 GetItem + 1 UpdateItem (+1 UpdateItem when
//	              undone)
package dynamostore
