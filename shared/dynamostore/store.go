package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"oncepost/shared/credseal"
	"oncepost/shared/publishing"
)

// The ports the store implements.
var (
	_ publishing.Ledger    = (*Store)(nil)
	_ publishing.Posts     = (*Store)(nil)
	_ publishing.Accounts  = (*Store)(nil)
	_ publishing.Blocklist = (*Store)(nil)
)

// API is the part of the DynamoDB client the store calls; *dynamodb.Client
// implements it. There is deliberately no Scan and no TransactWriteItems.
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Options configure a Store.
type Options struct {
	// Prefix starts every table name (e.g. "oncepost-prod-"): the tables
	// are Prefix+"ledger", Prefix+"posts", Prefix+"workspace" and
	// Prefix+"credentials" (Tables).
	Prefix string
	// Keys wraps and unwraps the data key that seals credentials (KMSKeys
	// on AWS, StaticKey in tests). Without it the credential methods fail;
	// the other ports work.
	Keys DataKeys
	// Now is the store's clock: audit times in the ledger's history, the
	// TTL check of reads, and the age of an unfinished CreatePost. Default
	// time.Now.
	Now func() time.Time
	// ReadWindow is how long GetTarget waits for other reads to share its
	// request; default DefaultReadWindow.
	ReadWindow time.Duration
}

// Store implements the Ledger, Posts, Accounts and Blocklist ports on
// DynamoDB. It is safe for concurrent use, and any number of Stores (in
// any number of processes) may share the tables.
type Store struct {
	db     API
	now    func() time.Time
	keys   DataKeys
	tables tableNames

	// sealMu guards seal, the credentials' sealer, made from the data key
	// on first use: one KMS Decrypt per process.
	sealMu sync.Mutex
	seal   *credseal.Sealer

	// reads batches GetTarget.
	reads readBatcher
}

// tableNames are the store's four tables.
type tableNames struct {
	ledger, posts, workspace, credentials string
}

func namesFor(prefix string) tableNames {
	return tableNames{
		ledger:      prefix + LedgerTable,
		posts:       prefix + PostsTable,
		workspace:   prefix + WorkspaceTable,
		credentials: prefix + CredentialsTable,
	}
}

// tableName is DynamoDB's rule for table names.
var tableName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

// New returns a Store on the tables named with opts.Prefix, which must
// exist (CreateTables). It makes no call.
func New(db API, opts Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("dynamostore: no DynamoDB client")
	}
	names := namesFor(opts.Prefix)
	for _, n := range []string{names.ledger, names.credentials} {
		if !tableName.MatchString(n) {
			return nil, fmt.Errorf("dynamostore: prefix %q makes table name %q, which DynamoDB refuses (3–255 of a-z A-Z 0-9 _ . -)", opts.Prefix, n)
		}
	}
	s := &Store{db: db, now: opts.Now, keys: opts.Keys, tables: names}
	s.reads.window = opts.ReadWindow
	if s.reads.window <= 0 {
		s.reads.window = DefaultReadWindow
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// timeLayout is how times are stored: RFC 3339 in UTC with nanoseconds,
// fixed width, so that strings sort like the times they encode (sort keys
// and condition comparisons use string order).
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// encTime stores t; the zero time is "" (and the attribute is omitted).
func encTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

// sortTime is t as the first part of an index sort key: like encTime, but
// the zero time is the earliest value rather than "".
func sortTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// decoder decodes stored times, keeping the first error.
type decoder struct{ err error }

func (d *decoder) time(attr, s string) time.Time {
	if s == "" || d.err != nil {
		return time.Time{}
	}
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		d.err = fmt.Errorf("attribute %s: stored time %q: %w", attr, s, err)
	}
	return t
}

// shardOf spreads items over n index partitions by a stable hash, so a
// sparse index's partition key ("open#2", "scheduled#0") is never hot.
func shardOf(n int, parts ...string) int {
	h := fnv.New32a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return int(h.Sum32() % uint32(n))
}

// shardKey is an index partition key: name#shard.
func shardKey(name string, shard int) string { return name + "#" + strconv.Itoa(shard) }

// expr builds the placeholders of one request's expressions: every
// attribute name goes through #n placeholders (state, key, status … are
// reserved words) and every value through :v placeholders.
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func (e *expr) name(n string) string {
	if e.names == nil {
		e.names = map[string]string{}
	}
	for p, v := range e.names {
		if v == n {
			return p
		}
	}
	p := "#n" + strconv.Itoa(len(e.names))
	e.names[p] = n
	return p
}

func (e *expr) value(v types.AttributeValue) string {
	if e.values == nil {
		e.values = map[string]types.AttributeValue{}
	}
	p := ":v" + strconv.Itoa(len(e.values))
	e.values[p] = v
	return p
}

func (e *expr) str(s string) string { return e.value(&types.AttributeValueMemberS{Value: s}) }
func (e *expr) num(n int64) string {
	return e.value(&types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)})
}

// update is an update expression in the making.
type update struct {
	sets, removes []string
}

func (u *update) set(e *expr, attr string, v types.AttributeValue) {
	u.sets = append(u.sets, e.name(attr)+" = "+e.value(v))
}

func (u *update) setRaw(clause string) { u.sets = append(u.sets, clause) }

func (u *update) remove(e *expr, attr string) { u.removes = append(u.removes, e.name(attr)) }

// setOrRemove sets a string attribute, or removes it for "" (empty
// strings are never stored).
func (u *update) setOrRemove(e *expr, attr, v string) {
	if v == "" {
		u.remove(e, attr)
		return
	}
	u.set(e, attr, &types.AttributeValueMemberS{Value: v})
}

func (u *update) String() string {
	out := ""
	if len(u.sets) > 0 {
		out = "SET " + strings.Join(u.sets, ", ")
	}
	if len(u.removes) > 0 {
		if out != "" {
			out += " "
		}
		out += "REMOVE " + strings.Join(u.removes, ", ")
	}
	return out
}

// str is an S attribute value.
func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// sval reads an S attribute, "" when absent or of another type.
func sval(item map[string]types.AttributeValue, attr string) string {
	if v, ok := item[attr].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// nval reads an N attribute as an int64, 0 when absent or not a number.
func nval(item map[string]types.AttributeValue, attr string) int64 {
	if v, ok := item[attr].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

// conditionFailed reports whether err is a failed condition, and returns
// the item DynamoDB sent back with it (ReturnValuesOnConditionCheckFailure
// ALL_OLD), nil when it sent none: the item did not exist, or the server
// (dynalite) ignores the parameter.
func conditionFailed(err error) (map[string]types.AttributeValue, bool) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ccf.Item, true
	}
	return nil, false
}

// getItem reads one item with a strongly consistent read; nil if absent.
func (s *Store) getItem(ctx context.Context, table string, key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key, ConsistentRead: ptr(true)})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

func ptr[T any](v T) *T { return &v }
