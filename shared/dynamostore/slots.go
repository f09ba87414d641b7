package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

var (
	_ publishing.SlotLister  = (*Store)(nil)
	_ publishing.SlotFirings = (*Store)(nil)
)

// slotVerifiers is how many BatchGetItem requests DueAt runs at a time to
// check a page of index entries against the table.
const slotVerifiers = 8

// DueAt lists a page of the targets scheduled at exactly slot
// (publishing.SlotLister): the slot's range of StatusIndex in each shard
// (sort keys sortTime(slot)+"#…", after the position after), merged in
// sort-key order, up to limit index entries, then checked against the
// table as Due checks them, slotVerifiers batches at a time. Its cost
// follows the slot's targets, never the targets of earlier slots still
// scheduled (a backlog), which Due would read too. The check reads
// eventually consistently (half the read units of Due's): the slot's
// schedule fires a minute before it, posts are written before that (the
// CLI queues a post under two minutes away itself), and a target
// cancelled or moved in the last second that is still listed is stopped
// by the publisher's consistent re-read. Positions are index sort keys;
// Next is the last one read, so a page whose entries were all stale still
// moves on. A limit ≤ 0 means no limit.
func (s *Store) DueAt(ctx context.Context, slot time.Time, after string, limit int) (publishing.SlotPage, error) {
	lo, hi := sortTime(slot)+"#", sortTime(slot)+"$"
	if after != "" {
		// Positions of this slot only; BETWEEN is inclusive, after itself
		// is skipped below.
		if after < lo || after >= hi {
			return publishing.SlotPage{}, fmt.Errorf("due at exactly %s: position %q is not one of this slot's", encTime(slot), after)
		}
		lo = after
	}
	m, err := s.mergeQueries(ctx, attrStAt, s.statusQueries([]post.TargetStatus{post.Scheduled}, lo, hi, pageLimit(limit)))
	if err != nil {
		return publishing.SlotPage{}, fmt.Errorf("due at exactly %s: %w", encTime(slot), err)
	}
	var entries []item
	more := false
	for limit <= 0 || len(entries) < limit {
		it, ok, err := m.next(ctx)
		if err != nil {
			return publishing.SlotPage{}, fmt.Errorf("due at exactly %s: %w", encTime(slot), err)
		}
		if !ok {
			break
		}
		if sval(it, attrStAt) == after {
			continue
		}
		entries = append(entries, it)
	}
	if limit > 0 && len(entries) == limit {
		// A full page: there may be more (an empty next page ends it).
		more = true
	}
	targets, err := s.verifyInParallel(ctx, entries)
	if err != nil {
		return publishing.SlotPage{}, fmt.Errorf("due at exactly %s: %w", encTime(slot), err)
	}
	page := publishing.SlotPage{Targets: targets}
	if more {
		page.Next = sval(entries[len(entries)-1], attrStAt)
	}
	return page, nil
}

// verifyInParallel checks index entries against the table (verifyTargets)
// in batches of verifyBatch, slotVerifiers at a time, keeping their order.
func (s *Store) verifyInParallel(ctx context.Context, entries []item) ([]publishing.TargetRef, error) {
	var batches [][]item
	for i := 0; i < len(entries); i += verifyBatch {
		batches = append(batches, entries[i:min(i+verifyBatch, len(entries))])
	}
	out := make([][]publishing.TargetRef, len(batches))
	errs := make([]error, len(batches))
	sem := make(chan struct{}, slotVerifiers)
	var wg sync.WaitGroup
	for i, b := range batches {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i], errs[i] = s.verifyTargets(ctx, b, false)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var refs []publishing.TargetRef
	for _, o := range out {
		refs = append(refs, o...)
	}
	return refs, nil
}

// The workspace table's partition of slot firings: one item per slot
// fired by the trigger (publishing.SlotFirings), about 150 bytes, kept.
const pkSlot = "slot"

// Attributes of a slot firing item.
const (
	attrSlotOwner = "owner"
	attrSlotLease = "lease_until"
	attrSlotAfter = "after"
	attrSlotSent  = "sent"
	attrSlotDone  = "done"
	attrSlotAt    = "updated_at"
)

func slotKey(slot time.Time) item { return item{attrPK: str(pkSlot), attrSK: str(sortTime(slot))} }

func slotFiringOf(it item) publishing.SlotFiring {
	return publishing.SlotFiring{After: sval(it, attrSlotAfter), Sent: int(nval(it, attrSlotSent)), Done: sval(it, attrSlotDone) != ""}
}

// ClaimSlot takes the slot's firing for owner until until
// (publishing.SlotFirings) with one conditional UpdateItem: the item is
// new, or not done and held by nobody, by owner, or by a claim that ran
// out at now. The answer carries how far the slot got. A plan is written
// with the claim only into a new item (a first, conditional UpdateItem);
// for an item that exists the plain claim follows.
func (s *Store) ClaimSlot(ctx context.Context, slot time.Time, owner string, now, until time.Time, plan publishing.SlotFiring) (publishing.SlotFiring, bool, error) {
	if plan != (publishing.SlotFiring{}) {
		var x expr
		u := slotClaim(&x, owner, now, until)
		slotProgress(&x, &u, plan)
		cond := fmt.Sprintf("attribute_not_exists(%s)", x.name(attrPK))
		expression := u.String()
		_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.tables.workspace, Key: slotKey(slot),
			UpdateExpression: &expression, ConditionExpression: &cond,
			ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		})
		if _, failed := conditionFailed(err); !failed {
			if err != nil {
				return publishing.SlotFiring{}, false, fmt.Errorf("claim slot %s: %w", encTime(slot), err)
			}
			return publishing.SlotFiring{}, true, nil
		}
	}
	var x expr
	u := slotClaim(&x, owner, now, until)
	cond := fmt.Sprintf("attribute_not_exists(%s) OR (attribute_not_exists(%s) AND (attribute_not_exists(%s) OR %s = %s OR %s < %s))",
		x.name(attrPK), x.name(attrSlotDone), x.name(attrSlotOwner), x.name(attrSlotOwner), x.str(owner), x.name(attrSlotLease), x.str(sortTime(now)))
	expression := u.String()
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.tables.workspace, Key: slotKey(slot),
		UpdateExpression: &expression, ConditionExpression: &cond,
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if stored, failed := conditionFailed(err); failed {
		if stored == nil {
			// dynalite does not send the item back with a refusal.
			if stored, err = s.getItem(ctx, s.tables.workspace, slotKey(slot)); err != nil {
				return publishing.SlotFiring{}, false, fmt.Errorf("claim slot %s: %w", encTime(slot), err)
			}
		}
		if f := slotFiringOf(stored); f.Done {
			return f, false, nil
		}
		return slotFiringOf(stored), false, fmt.Errorf("claim slot %s: held by %s until %s: %w", encTime(slot), sval(stored, attrSlotOwner), sval(stored, attrSlotLease), publishing.ErrSlotBusy)
	}
	if err != nil {
		return publishing.SlotFiring{}, false, fmt.Errorf("claim slot %s: %w", encTime(slot), err)
	}
	return slotFiringOf(out.Attributes), false, nil
}

// RecordSlot stores how far owner's firing got (publishing.SlotFirings),
// with one UpdateItem conditional on owner's claim; done, or release,
// frees the claim.
func (s *Store) RecordSlot(ctx context.Context, slot time.Time, owner string, f publishing.SlotFiring, release bool) error {
	var x expr
	var u update
	slotProgress(&x, &u, f)
	u.set(&x, attrSlotAt, str(encTime(s.now())))
	if f.Done || release {
		u.remove(&x, attrSlotOwner)
		u.remove(&x, attrSlotLease)
	}
	cond := fmt.Sprintf("%s = %s", x.name(attrSlotOwner), x.str(owner))
	expression := u.String()
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.tables.workspace, Key: slotKey(slot),
		UpdateExpression: &expression, ConditionExpression: &cond,
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
	})
	if _, failed := conditionFailed(err); failed {
		return fmt.Errorf("record slot %s: %s no longer holds it: %w", encTime(slot), owner, post.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("record slot %s: %w", encTime(slot), err)
	}
	return nil
}

// slotClaim is the update that takes a slot for owner until until.
func slotClaim(x *expr, owner string, now, until time.Time) update {
	var u update
	u.set(x, attrSlotOwner, str(owner))
	u.set(x, attrSlotLease, str(sortTime(until)))
	u.set(x, attrSlotAt, str(encTime(now)))
	return u
}

// slotProgress adds f's fields to an update: after (removed when ""),
// sent, and done set or removed.
func slotProgress(x *expr, u *update, f publishing.SlotFiring) {
	u.setOrRemove(x, attrSlotAfter, f.After)
	u.set(x, attrSlotSent, &types.AttributeValueMemberN{Value: strconv.Itoa(f.Sent)})
	if f.Done {
		u.set(x, attrSlotDone, str("1"))
	} else {
		u.remove(x, attrSlotDone)
	}
}
