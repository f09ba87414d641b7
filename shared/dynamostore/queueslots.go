package dynamostore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The posting slots queued posts took (publishing.QueueSlots): one item
// per (account, slot) in the workspace table, partition "qslot#<account>",
// sorted by slot. A claim is a PutItem on attribute_not_exists, or on the
// item still naming the post it passes from; a claim expires (TTL) 30
// days after its slot, when nothing reads it any more.

// QueueSlotPartitions is the dynamodb:LeadingKeys pattern of the queue
// claims' partitions: what a policy grants a function that adds posts to
// a queue (the api function), and nothing else of the workspace table.
const QueueSlotPartitions = pkQueueSlot + "*"

const (
	pkQueueSlot = "qslot#"
	// queueSlotKeep is how long after its slot a claim is kept.
	queueSlotKeep = 30 * 24 * time.Hour
)

func queueSlotKey(account post.AccountID, slot time.Time) item {
	return item{attrPK: str(pkQueueSlot + string(account)), attrSK: str(sortTime(slot))}
}

// ClaimQueueSlot records that owner takes account's slot: if no claim
// holds it (prev ""), or if prev still does; post.ErrConflict otherwise.
// One conditional PutItem.
func (s *Store) ClaimQueueSlot(ctx context.Context, account post.AccountID, slot time.Time, owner, prev post.ID, at time.Time) error {
	it := queueSlotKey(account, slot)
	it["post_id"] = str(string(owner))
	it["claimed_at"] = str(encTime(at))
	it[TTLAttribute] = &types.AttributeValueMemberN{Value: strconv.FormatInt(slot.Add(queueSlotKeep).Unix(), 10)}
	var x expr
	var cond string
	if prev == "" {
		cond = fmt.Sprintf("attribute_not_exists(%s)", x.name(attrPK))
	} else {
		cond = fmt.Sprintf("%s = %s", x.name("post_id"), x.str(string(prev)))
	}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.tables.workspace, Item: it, ConditionExpression: &cond,
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
	})
	if _, failed := conditionFailed(err); failed {
		return fmt.Errorf("claim queue slot %s of %s for %s: taken: %w", encTime(slot), account, owner, post.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("claim queue slot %s of %s: %w", encTime(slot), account, err)
	}
	return nil
}

// ReleaseQueueSlot deletes account's claim of slot if owner holds it
// (one conditional DeleteItem; a claim held by another is left).
func (s *Store) ReleaseQueueSlot(ctx context.Context, account post.AccountID, slot time.Time, owner post.ID) error {
	var x expr
	cond := fmt.Sprintf("%s = %s", x.name("post_id"), x.str(string(owner)))
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.tables.workspace, Key: queueSlotKey(account, slot), ConditionExpression: &cond,
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
	})
	if _, failed := conditionFailed(err); failed {
		return nil
	}
	if err != nil {
		return fmt.Errorf("release queue slot %s of %s: %w", encTime(slot), account, err)
	}
	return nil
}

// QueueSlotClaims lists account's claims from from on, earliest first:
// one consistent Query of its partition, paged.
func (s *Store) QueueSlotClaims(ctx context.Context, account post.AccountID, from time.Time, limit int) ([]publishing.SlotClaim, error) {
	var x expr
	cond := fmt.Sprintf("%s = %s AND %s >= %s", x.name(attrPK), x.str(pkQueueSlot+string(account)), x.name(attrSK), x.str(sortTime(from)))
	in := &dynamodb.QueryInput{
		TableName: &s.tables.workspace, KeyConditionExpression: &cond, ConsistentRead: ptr(true),
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
	}
	if limit > 0 {
		in.Limit = ptr(int32(min(limit, 1000)))
	}
	var out []publishing.SlotClaim
	for {
		res, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("queue slot claims of %s: %w", account, err)
		}
		for _, it := range res.Items {
			var d decoder
			c := publishing.SlotClaim{Slot: d.time("sk", sval(it, attrSK)), Post: post.ID(sval(it, "post_id")), At: d.time("claimed_at", sval(it, "claimed_at"))}
			if d.err != nil {
				return nil, fmt.Errorf("queue slot claims of %s: %w", account, d.err)
			}
			out = append(out, c)
			if limit > 0 && len(out) == limit {
				return out, nil
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

var _ publishing.QueueSlots = (*Store)(nil)
