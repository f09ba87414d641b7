package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

var _ publishing.Approvals = (*Store)(nil)

// approvalPolicyKey is the approval policy's item in the workspace
// table's "config" partition.
var approvalPolicyKey = item{attrPK: str(pkConfig), attrSK: str("approval-policy")}

// ApprovalPolicy reads the workspace's approval policy (one consistent
// GetItem): the zero policy when none was stored.
func (s *Store) ApprovalPolicy(ctx context.Context) (publishing.ApprovalPolicy, error) {
	it, err := s.getItem(ctx, s.tables.workspace, approvalPolicyKey)
	if err != nil {
		return publishing.ApprovalPolicy{}, fmt.Errorf("read approval policy: %w", err)
	}
	return publishing.ApprovalPolicy{Required: bval(it, "required"), NoSelfApproval: bval(it, "no_self_approval")}, nil
}

// PutApprovalPolicy stores the workspace's approval policy (one PutItem),
// replacing the one stored.
func (s *Store) PutApprovalPolicy(ctx context.Context, p publishing.ApprovalPolicy) error {
	it := item{attrPK: approvalPolicyKey[attrPK], attrSK: approvalPolicyKey[attrSK],
		"required": &types.AttributeValueMemberBOOL{Value: p.Required}, "no_self_approval": &types.AttributeValueMemberBOOL{Value: p.NoSelfApproval},
		attrUpdatedAt: str(encTime(s.now()))}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.tables.workspace, Item: it}); err != nil {
		return fmt.Errorf("store approval policy: %w", err)
	}
	return nil
}

// bval reads a BOOL attribute, false when absent or of another type.
func bval(it item, attr string) bool {
	v, ok := it[attr].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}

// MoveApproval writes m over one target that waits for approval with one
// UpdateItem conditioned on the stored status being needs_approval and the
// stored slot m.Read: of concurrent moves exactly one is applied. It sets
// the status, slot, reason and update time and the target's StatusIndex
// attributes (a target waiting for approval, like a scheduled one, is
// indexed by its slot). The change stream carries the move to the
// notifier like any other. A refusal wraps post.ErrConflict and says what
// the target is (read back with a consistent GetItem when the refusal
// brought nothing); a missing target wraps post.ErrNotFound. Cost: one
// write plus the StatusIndex writes.
func (s *Store) MoveApproval(ctx context.Context, id post.ID, account post.AccountID, m publishing.ApprovalMove) (post.Target, error) {
	wrap := func(err error) error {
		return fmt.Errorf("move post %s target %s waiting for approval: %w", id, account, err)
	}
	switch {
	case m.Status != post.Scheduled && m.Status != post.NeedsApproval:
		return post.Target{}, wrap(fmt.Errorf("to %s: only scheduled or needs_approval", m.Status))
	case m.Read.IsZero() || m.Slot.IsZero():
		return post.Target{}, wrap(errors.New("zero slot"))
	}
	next := post.Target{Account: account, Slot: m.Slot.UTC(), Status: m.Status, Reason: m.Reason, UpdatedAt: m.At.UTC()}
	var x expr
	cond := fmt.Sprintf("%s = %s AND %s = %s", x.name(attrStatus), x.str(string(post.NeedsApproval)), x.name(attrSlot), x.str(encTime(m.Read)))
	var u update
	u.set(&x, attrStatus, str(string(next.Status)))
	u.set(&x, attrSlot, str(encTime(next.Slot)))
	u.setOrRemove(&x, "reason", next.Reason)
	u.remove(&x, "next_try")
	u.setOrRemove(&x, "updated_at", encTime(next.UpdatedAt))
	u.set(&x, attrSt, str(statusShard(id, account, next.Status)))
	u.set(&x, attrStAt, str(stAt(id, next)))
	expression := u.String()
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.tables.posts, Key: targetKey(id, account),
		UpdateExpression: &expression, ConditionExpression: &cond,
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if stored, ok := conditionFailed(err); ok {
		if stored == nil {
			if stored, err = s.getItem(ctx, s.tables.posts, targetKey(id, account)); err != nil {
				return post.Target{}, wrap(fmt.Errorf("refused, then reading the target: %w", err))
			}
		}
		if stored == nil {
			return post.Target{}, wrap(post.ErrNotFound)
		}
		_, cur, err := decodeTarget(stored)
		if err != nil {
			return post.Target{}, wrap(err)
		}
		return post.Target{}, wrap(fmt.Errorf("target is %s at %s, not needs_approval at %s: %w", cur.Status, encTime(cur.Slot), encTime(m.Read), post.ErrConflict))
	}
	if err != nil {
		return post.Target{}, wrap(err)
	}
	_, t, err := decodeTarget(out.Attributes)
	if err != nil {
		return post.Target{}, wrap(err)
	}
	return t, nil
}

// AwaitingApproval lists targets in needs_approval whose slot is before
// before (any when zero), earliest slot first (ties by post id and
// account): StatusIndex's "needs_approval#0…3" partitions, indexed by
// slot, merged, each target checked against the table (as Due does).
// Cost: StatusShards Queries plus about two item reads per target listed.
// A limit ≤ 0 means no limit.
func (s *Store) AwaitingApproval(ctx context.Context, before time.Time, limit int) ([]publishing.TargetRef, error) {
	hi := ""
	if !before.IsZero() {
		hi = sortTime(before) // every st_at of a slot at before is sortTime(before)+"#…", above it
	}
	out, err := s.statusRange(ctx, []post.TargetStatus{post.NeedsApproval}, "", hi, limit)
	if err != nil {
		return nil, fmt.Errorf("targets awaiting approval: %w", err)
	}
	return out, nil
}
