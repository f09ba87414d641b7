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
	CreateID  string `dynamodbav:"create_id"`
	Status    int    `dynamodbav:"status"`
	Response  []byte `dynamodbav:"response,omitempty"`
	CreatedAt string `dynamodbav:"created_at"`
	// TTL is CreatedAt + publishing.IdempotencyKeep in epoch seconds,
	// the workspace table's TTL attribute.
	TTL int64 `dynamodbav:"ttl"`
}

// Attributes of a record the conditions name.
const (
	attrFingerprint = "fingerprint"
	attrPostID      = "post_id"
	attrCreatedAt   = "created_at"
)

// idempotencyPartition is the partition key of scope's key.
func idempotencyPartition(scope, key string) string {
	sum := sha256.Sum256([]byte(scope + "\x00" + key))
	return IdempotencyPartitionPrefix + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:])
}

func idempotencyKey(scope, key string) item {
	return item{attrPK: str(idempotencyPartition(scope, key)), attrSK: str(skIdempotency)}
}

func keyItemOf(r publishing.IdempotencyRecord, createID string) keyItem {
	return keyItem{
		PK: idempotencyPartition(r.Scope, r.Key), SK: skIdempotency, Scope: r.Scope, Key: r.Key, Fingerprint: r.Fingerprint,
		Post: string(r.Post), CreateID: createID, Status: r.Status, Response: r.Response, CreatedAt: encTime(r.CreatedAt),
		TTL: ttlSeconds(r.CreatedAt.Add(publishing.IdempotencyKeep)),
	}
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
// is ready and written by the record's creation. One exception: a retry
// of a crashed request — the same fingerprint and post id, the record
// older than CreateStaleAfter, the post's own creation unfinished for as
// long or absent — takes the record over (a PutItem conditional on the
// record it read, so one retry wins) and writes the post, taking its
// unfinished creation over as CreatePost does; the dead request's
// creation can then never commit (its create id no longer matches). A
// request of the api function lives at most its timeout (under 30 s), so
// a record that old is a dead request's. Another fingerprint never takes
// a record over.
//
// If the post's first write is refused (the id exists, or another
// creation holds it), nothing of the post was written: the record is
// deleted again (conditionally, on its creation) and the error wraps
// post.ErrConflict, so a retry with the key meets that error again rather
// than a replayed answer for a post that is not its own.
//
// The record's CreatedAt is the store's clock; key is not modified.
// Cost: one write more than CreatePost; a replay costs one refused write
// and one read.
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
	rec.Post, rec.CreatedAt = p.ID, now.UTC()
	it, err := attributevalue.MarshalMap(keyItemOf(rec, createID))
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
		ready, claimable, err := s.keyedPost(ctx, stored.Post, storedItem.CreateID, now)
		if err != nil {
			return err
		}
		if ready {
			return &publishing.KeyExistsError{Record: stored}
		}
		stale := stored.CreatedAt.Before(now.Add(-CreateStaleAfter))
		if !stale || !claimable || stored.Fingerprint != rec.Fingerprint || stored.Post != rec.Post {
			return &publishing.KeyExistsError{Record: stored, InFlight: true}
		}
		// A dead request's record: take it over, if no one else did since.
		var y expr
		cond = fmt.Sprintf("%s = %s AND %s = %s AND %s = %s",
			y.name(attrCreatedAt), y.str(storedItem.CreatedAt), y.name(attrFingerprint), y.str(stored.Fingerprint),
			y.name(attrPostID), y.str(string(stored.Post)))
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

// keyedPost reads the post item of id (one consistent GetItem): ready when
// it is committed by the creation createID; claimable when a new creation
// may take the id (CreatePost's condition: absent, or a creation
// unfinished for CreateStaleAfter) or the id is another creation's (a
// creation under the record can then only be refused, which drops the
// record).
func (s *Store) keyedPost(ctx context.Context, id post.ID, createID string, now time.Time) (ready, claimable bool, err error) {
	it, err := s.getItem(ctx, s.tables.posts, postKey(id))
	if err != nil {
		return false, false, fmt.Errorf("read post %s of the idempotency record: %w", id, err)
	}
	switch {
	case it == nil:
		return false, true, nil
	case sval(it, attrCreateID) != createID:
		return false, sval(it, attrPhase) == phaseReady || sval(it, attrClaimed) < encTime(now.Add(-CreateStaleAfter)), nil
	case sval(it, attrPhase) == phaseReady:
		return true, false, nil
	default:
		return false, sval(it, attrClaimed) < encTime(now.Add(-CreateStaleAfter)), nil
	}
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
// there is none or it has expired (publishing.IdempotencyKeep after it
// was written; DynamoDB deletes it lazily).
func (s *Store) GetIdempotencyRecord(ctx context.Context, scope, key string) (publishing.IdempotencyRecord, error) {
	it, err := s.getItem(ctx, s.tables.workspace, idempotencyKey(scope, key))
	if err != nil {
		return publishing.IdempotencyRecord{}, fmt.Errorf("get idempotency record %q: %w", key, err)
	}
	if it == nil || expired(it, s.now()) {
		return publishing.IdempotencyRecord{}, fmt.Errorf("get idempotency record %q: %w", key, post.ErrNotFound)
	}
	r, _, err := decodeKeyItem(it)
	if err != nil {
		return publishing.IdempotencyRecord{}, fmt.Errorf("get idempotency record %q: %w", key, err)
	}
	return r, nil
}
