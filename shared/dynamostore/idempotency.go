package dynamostore

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

var _ publishing.IdempotencyKeys = (*Store)(nil)

// Idempotency records (publishing.IdempotencyRecord): one workspace item
// per (scope, key), in a partition of its own, "idempotency#" and the
// base32 SHA-256 of scope and key (an IAM principal's ARN and a client's
// key may be long; a hash keeps the key short and spreads the records
// over partitions), sort key "record".
//
// The workspace table rather than the posts table: the posts table holds
// posts and their targets only, which its status index and (for the
// notifier) its change stream read; a record there would be noise to
// both. The workspace table already holds the store's small keyed
// records (accounts, blocklist, slot firings), and IAM can hold a
// function to this partition range (dynamodb:LeadingKeys, see
// template.yaml's ApiFunction).
const (
	// IdempotencyPartitionPrefix starts the partition key of every
	// idempotency record.
	IdempotencyPartitionPrefix = "idempotency#"
	skIdempotency              = "record"
)

// MaxKeyResponseBytes bounds the first answer a record keeps (a
// DynamoDB item holds at most 400 KB).
const MaxKeyResponseBytes = 256 << 10

// keyItem is an idempotency record as stored.
type keyItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	Scope       string `dynamodbav:"scope"`
	Key         string `dynamodbav:"key"`
	Fingerprint string `dynamodbav:"fingerprint"`
	Post        string `dynamodbav:"post_id"`
	// CreateID is the creation of the post the record leads to (the post
	// item carries it once written): a post of that id written by
	// another creation is not this record's.
	CreateID string `dynamodbav:"create_id"`
	Status   int    `dynamodbav:"status"`
	Response []byte `dynamodbav:"response,omitempty"`
	// CreatedAt is the record's CreatedAt as given (the store's clock
	// when zero), returned as it is.
	CreatedAt string `dynamodbav:"created_at"`
	// WrittenAt is when the store wrote the record, by its clock: what
	// a record's age (a dead request's, the TTL) is reckoned from, never
	// a time the caller gave.
	WrittenAt string `dynamodbav:"written_at"`
	// TTL is WrittenAt + publishing.IdempotencyKeep in epoch seconds,
	// the workspace table's TTL attribute.
	TTL int64 `dynamodbav:"ttl"`
}

// Attributes of a record the conditions name.
const (
	attrFingerprint = "fingerprint"
	attrPostID      = "post_id"
	attrCreatedAt   = "created_at"
	attrWrittenAt   = "written_at"
)

// idempotencyPartition is the partition key of scope's key.
func idempotencyPartition(scope, key string) string {
	sum := sha256.Sum256([]byte(scope + "\x00" + key))
	return IdempotencyPartitionPrefix + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:])
}

func idempotencyKey(scope, key string) item {
	return item{attrPK: str(idempotencyPartition(scope, key)), attrSK: str(skIdempotency)}
}

func keyItemOf(r publishing.IdempotencyRecord, createID string, written time.Time) keyItem {
	return keyItem{
		PK: idempotencyPartition(r.Scope, r.Key), SK: skIdempotency, Scope: r.Scope, Key: r.Key, Fingerprint: r.Fingerprint,
		Post: string(r.Post), CreateID: createID, Status: r.Status, Response: r.Response, CreatedAt: encTime(r.CreatedAt),
		WrittenAt: encTime(written), TTL: ttlSeconds(written.Add(publishing.IdempotencyKeep)),
	}
}

// writtenAt is when the store wrote the record (its creation time for a
// record without one).
func (it keyItem) writtenAt() string {
	if it.WrittenAt != "" {
		return it.WrittenAt
	}
	return it.CreatedAt
}

func decodeKeyItem(raw item) (publishing.IdempotencyRecord, keyItem, error) {
	var it keyItem
	if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
		return publishing.IdempotencyRecord{}, it, fmt.Errorf("idempotency record: %w", err)
	}
	var d decoder
	r := publishing.IdempotencyRecord{
		Scope: it.Scope, Key: it.Key, Fingerprint: it.Fingerprint, Post: post.ID(it.Post), Status: it.Status,
		Response: it.Response, CreatedAt: d.time(attrCreatedAt, it.CreatedAt),
	}
	if d.err != nil {
		return publishing.IdempotencyRecord{}, it, fmt.Errorf("idempotency record %q: %w", it.Key, d.err)
	}
	return r, it, nil
}

// checkKey refuses a record that cannot be stored for p.
func checkKey(p post.Post, k publishing.IdempotencyRecord) error {
	switch {
	case k.Scope == "":
		return errors.New("idempotency record: no scope")
	case k.Key == "":
		return errors.New("idempotency record: no key")
	case k.Fingerprint == "":
		return errors.New("idempotency record: no fingerprint")
	case k.Post != "" && k.Post != p.ID:
		return fmt.Errorf("idempotency record names post %s, not %s", k.Post, p.ID)
	case len(k.Response) > MaxKeyResponseBytes:
		return fmt.Errorf("idempotency record: the response is %d bytes, over %d", len(k.Response), MaxKeyResponseBytes)
	}
	return nil
}

// CreatePostWithKey is CreatePost with an idempotency key (the
// publishing.PostScheduler contract): key nil is CreatePost. Without
// transactions (dynalite has none, and they double the write cost), the
// key's record is written first, with one conditional PutItem naming the
// post id, the fingerprint, the first answer and the creation that will
// write the post; then the post is written as CreatePost writes it. So a
// crash leaves at worst a record whose post is not (yet) readable.
//
// If a record of the scope and key exists (and has not expired: its TTL
// is publishing.IdempotencyKeep), nothing is written and the error wraps
// a *publishing.KeyExistsError with the stored record (sent back by the
// refused put; dynalite does not send it, so there one GetItem reads
// it), InFlight when its post is not readable: the post item is read
// with one consistent GetItem, and the record's post is readable once it
// is ready and written by the record's creation.
//
// One exception: a dead request's record — older than CreateStaleAfter,
// its post not committed and its creation not live (see keyedPostState)
// — is taken over by a retry with the same fingerprint (a PutItem
// conditional on the record it read, so one retry wins), which then
// writes its post. A retry under the same post id takes the unfinished
// creation over as CreatePost does; one under another post id (the Desk
// generates ids) first fences the dead creation (abandon), so neither
// can it commit later nor can two posts come of one key. An api request
// lives at most its function's timeout (under 30 s): a record that old
// is a dead request's. Another fingerprint never takes a record over.
//
// If the post's first write is refused (the id exists, or another
// creation holds it), nothing of the post was written: the record is
// deleted again (conditionally, on its creation) and the error wraps
// post.ErrConflict, so a retry with the key meets that error again rather
// than a replayed answer for a post that is not its own.
//
// The record keeps key's CreatedAt (the store's clock if it is zero); its
// age — when it is a dead request's, when it expires — is reckoned from
// when the store wrote it, by the store's clock. key is not modified.
// Cost: one write more than CreatePost; a key used before costs one
// refused write and one read; a takeover two writes more.
func (s *Store) CreatePostWithKey(ctx context.Context, p post.Post, key *publishing.IdempotencyRecord) error {
	if key == nil {
		return s.CreatePost(ctx, p)
	}
	if err := s.createWithKey(ctx, p, *key); err != nil {
		return fmt.Errorf("create post %s with idempotency key %q: %w", p.ID, key.Key, err)
	}
	return nil
}

func (s *Store) createWithKey(ctx context.Context, p post.Post, key publishing.IdempotencyRecord) error {
	if err := checkTargets(p); err != nil {
		return err
	}
	if err := checkKey(p, key); err != nil {
		return err
	}
	now := s.now()
	createID := newCreateID(now)
	rec := key
	rec.Post = p.ID
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = now
	}
	rec.CreatedAt = rec.CreatedAt.UTC()
	it, err := attributevalue.MarshalMap(keyItemOf(rec, createID, now))
	if err != nil {
		return err
	}
	if err := s.putKey(ctx, it, rec, now); err != nil {
		return err
	}
	err = s.createPost(ctx, p, now, createID)
	if errors.As(err, new(notClaimed)) {
		s.dropKey(ctx, rec, createID)
	}
	return err
}

// putKey writes the record it, or takes a dead request's record over, or
// returns the *publishing.KeyExistsError.
func (s *Store) putKey(ctx context.Context, it item, rec publishing.IdempotencyRecord, now time.Time) error {
	for range 3 {
		var x expr
		cond := fmt.Sprintf("attribute_not_exists(%s) OR %s < %s", x.name(attrPK), x.name(TTLAttribute), x.num(now.Unix()))
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: &s.tables.workspace, Item: it, ConditionExpression: &cond,
			ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		old, refused := conditionFailed(err)
		switch {
		case err == nil:
			return nil
		case !refused:
			return fmt.Errorf("write the idempotency record: %w", err)
		case old == nil:
			if old, err = s.getItem(ctx, s.tables.workspace, idempotencyKey(rec.Scope, rec.Key)); err != nil {
				return fmt.Errorf("read the idempotency record: %w", err)
			}
			if old == nil {
				continue // expired and deleted since: write it again
			}
		}
		stored, storedItem, err := decodeKeyItem(old)
		if err != nil {
			return err
		}
		kp, err := s.keyedPost(ctx, stored.Post, storedItem, now)
		if err != nil {
			return err
		}
		switch {
		case kp.ready:
			return &publishing.KeyExistsError{Record: stored}
		case !kp.dead || stored.Fingerprint != rec.Fingerprint:
			return &publishing.KeyExistsError{Record: stored, InFlight: true}
		}
		// A dead request's record, and a retry of the same request: take
		// it over. A retry under another post id (a generated one) first
		// fences the dead request's creation, so that it can never commit.
		if stored.Post != rec.Post {
			if err := s.abandon(ctx, stored.Post, storedItem.CreateID, kp.item); err != nil {
				return &publishing.KeyExistsError{Record: stored, InFlight: true}
			}
		}
		var y expr
		cond = fmt.Sprintf("%s = %s AND %s = %s AND %s = %s",
			y.name(attrWrittenAt), y.str(storedItem.writtenAt()), y.name(attrFingerprint), y.str(stored.Fingerprint),
			y.name(attrCreateID), y.str(storedItem.CreateID))
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: &s.tables.workspace, Item: it, ConditionExpression: &cond,
			ExpressionAttributeNames: y.names, ExpressionAttributeValues: y.values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if newer, refused := conditionFailed(err); refused {
			if newer != nil {
				if r, _, err := decodeKeyItem(newer); err == nil {
					stored = r
				}
			}
			return &publishing.KeyExistsError{Record: stored, InFlight: true}
		}
		if err != nil {
			return fmt.Errorf("take the idempotency record over: %w", err)
		}
		return nil
	}
	return errors.New("the idempotency record keeps expiring while it is written; try again")
}

// keyedPostState is what a record's post says of the record.
type keyedPostState struct {
	// item is the post item (nil if none).
	item item
	// ready: the post is committed by the record's creation (readable).
	ready bool
	// dead: the request that wrote the record died before its post was
	// committed: the record is older than CreateStaleAfter and its
	// creation is not ready and not live (its post item absent, another
	// creation's, or claimed longer than CreateStaleAfter ago). An api
	// request lives at most its function's timeout (under 30 s), and it
	// claims its post within that time.
	dead bool
}

// keyedPost reads the post item of the record rec (one consistent
// GetItem), post id.
func (s *Store) keyedPost(ctx context.Context, id post.ID, rec keyItem, now time.Time) (keyedPostState, error) {
	it, err := s.getItem(ctx, s.tables.posts, postKey(id))
	if err != nil {
		return keyedPostState{}, fmt.Errorf("read post %s of the idempotency record: %w", id, err)
	}
	stale := encTime(now.Add(-CreateStaleAfter))
	ours := it != nil && sval(it, attrCreateID) == rec.CreateID
	st := keyedPostState{item: it, ready: ours && sval(it, attrPhase) == phaseReady}
	live := ours && sval(it, attrPhase) == phaseCreating && sval(it, attrClaimed) >= stale
	st.dead = rec.writtenAt() < stale && !st.ready && !live
	return st, nil
}

// phaseAbandoned marks the post item of a dead request's creation fenced
// by a retry under another post id: no reader shows it (they want
// "ready"), and the dead creation can neither claim the id (it exists and
// is not "creating") nor commit (it is not "creating").
const phaseAbandoned = "abandoned"

// abandon fences the creation createID of post id (whose post item is it,
// nil if none): a tombstone where it never claimed the id, or its claim
// marked abandoned and the targets it wrote deleted. A post item of
// another creation is left alone.
func (s *Store) abandon(ctx context.Context, id post.ID, createID string, it item) error {
	var x expr
	switch {
	case it == nil:
		tomb := item{attrPost: str(string(id)), attrItem: str(postItemKey), attrCreateID: str(createID), attrPhase: str(phaseAbandoned)}
		cond := fmt.Sprintf("attribute_not_exists(%s)", x.name(attrPost))
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: &s.tables.posts, Item: tomb, ConditionExpression: &cond, ExpressionAttributeNames: x.names,
		})
		if err != nil {
			return fmt.Errorf("fence the creation of post %s: %w", id, err)
		}
	case sval(it, attrCreateID) == createID && sval(it, attrPhase) == phaseCreating:
		var u update
		u.set(&x, attrPhase, str(phaseAbandoned))
		u.remove(&x, attrClaimed)
		expression := u.String()
		cond := fmt.Sprintf("%s = %s AND %s = %s", x.name(attrCreateID), x.str(createID), x.name(attrPhase), x.str(phaseCreating))
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.tables.posts, Key: postKey(id), UpdateExpression: &expression, ConditionExpression: &cond,
			ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		})
		if err != nil {
			return fmt.Errorf("fence the creation of post %s: %w", id, err)
		}
		s.dropLeftovers(ctx, id, it, nil)
	}
	return nil
}

// dropKey deletes the record written for the creation createID, if it
// still names that creation (best effort: a record left behind is taken
// over by a retry after CreateStaleAfter, whose creation is refused the
// same way).
func (s *Store) dropKey(ctx context.Context, rec publishing.IdempotencyRecord, createID string) {
	var x expr
	cond := fmt.Sprintf("%s = %s", x.name(attrCreateID), x.str(createID))
	_, _ = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.tables.workspace, Key: idempotencyKey(rec.Scope, rec.Key), ConditionExpression: &cond,
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
	})
}

// GetIdempotencyRecord reads the record of scope's key (one strongly
// consistent GetItem), or returns an error wrapping post.ErrNotFound when
// there is none, it has expired (publishing.IdempotencyKeep after it was
// written; DynamoDB deletes it lazily), or it is a dead request's (its
// post never committed, see CreatePostWithKey): that record is no answer
// to replay, and a retry of the same request takes it over. A record
// older than CreateStaleAfter costs one more GetItem (its post item).
func (s *Store) GetIdempotencyRecord(ctx context.Context, scope, key string) (publishing.IdempotencyRecord, error) {
	it, err := s.getItem(ctx, s.tables.workspace, idempotencyKey(scope, key))
	if err != nil {
		return publishing.IdempotencyRecord{}, fmt.Errorf("get idempotency record %q: %w", key, err)
	}
	now := s.now()
	if it == nil || expired(it, now) {
		return publishing.IdempotencyRecord{}, fmt.Errorf("get idempotency record %q: %w", key, post.ErrNotFound)
	}
	r, ki, err := decodeKeyItem(it)
	if err != nil {
		return publishing.IdempotencyRecord{}, fmt.Errorf("get idempotency record %q: %w", key, err)
	}
	if ki.writtenAt() < encTime(now.Add(-CreateStaleAfter)) {
		kp, err := s.keyedPost(ctx, r.Post, ki, now)
		if err != nil {
			return publishing.IdempotencyRecord{}, fmt.Errorf("get idempotency record %q: %w", key, err)
		}
		if kp.dead {
			return publishing.IdempotencyRecord{}, fmt.Errorf("get idempotency record %q: a dead request's (taken over by its retry): %w", key, post.ErrNotFound)
		}
	}
	return r, nil
}
