package dynamostore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"oncepost/shared/pace"
	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

var _ publishing.Pacer = (*Store)(nil)

// pkPace is the workspace table's partition of posting budgets: one item
// per account, one attribute per limit ("tat COUNT/PER", a sortable time).
const pkPace = "pace"

// paceTries bounds the compare-and-set loop of a contended budget: every
// round one contender wins, so it outlasts as many concurrent publishers
// of one account as the event source mapping runs.
const paceTries = 25

func paceKey(id post.AccountID) item { return item{attrPK: str(pkPace), attrSK: str(string(id))} }

func paceAttr(r platform.Rate) string { return "tat " + pace.Key(r) }

// Pace takes one send from the account's posting budget at now. When the
// account has been quiet (every limit's time not after now) it is one
// conditional UpdateItem; otherwise it reads the budget, computes it
// (pace.Take) and writes it back on the condition that no one else did
// meanwhile, again up to paceTries times.
func (s *Store) Pace(ctx context.Context, account post.AccountID, rates []platform.Rate, now time.Time) (time.Duration, error) {
	var valid []platform.Rate
	for _, r := range rates {
		if r.Count > 0 && r.Per > 0 {
			valid = append(valid, r)
		}
	}
	if len(valid) == 0 {
		return 0, nil
	}
	// Quiet account: every limit starts from now.
	fresh, _, _ := pace.Take(nil, valid, now)
	stored, done, err := s.paceWrite(ctx, account, valid, fresh, func(x *expr, r platform.Rate) string {
		a := x.name(paceAttr(r))
		return fmt.Sprintf("(attribute_not_exists(%s) OR %s <= %s)", a, a, x.str(sortTime(now)))
	})
	for try := 0; ; try++ {
		switch {
		case err != nil:
			return 0, fmt.Errorf("pace %s: %w", account, err)
		case done:
			return 0, nil
		case try == paceTries:
			return 0, fmt.Errorf("pace %s: the budget changed under %d tries: %w", account, paceTries, post.ErrConflict)
		}
		if try > 0 {
			// Contended: spread the next round out (0–20 ms).
			t := time.NewTimer(time.Duration(rand.Int64N(int64(20 * time.Millisecond))))
			select {
			case <-ctx.Done():
				t.Stop()
				return 0, fmt.Errorf("pace %s: %w", account, ctx.Err())
			case <-t.C:
			}
		}
		if stored == nil {
			// dynalite does not send the item back with a refusal.
			if stored, err = s.getItem(ctx, s.tables.workspace, paceKey(account)); err != nil {
				return 0, fmt.Errorf("pace %s: %w", account, err)
			}
		}
		tats := map[string]time.Time{}
		var d decoder
		for _, r := range valid {
			if v := sval(stored, paceAttr(r)); v != "" {
				tats[pace.Key(r)] = d.time(paceAttr(r), v)
			}
		}
		if d.err != nil {
			return 0, fmt.Errorf("pace %s: %w", account, d.err)
		}
		next, wait, ok := pace.Take(tats, valid, now)
		if !ok {
			return wait, nil
		}
		was := stored
		stored, done, err = s.paceWrite(ctx, account, valid, next, func(x *expr, r platform.Rate) string {
			return equalsOrAbsent(x, paceAttr(r), sval(was, paceAttr(r)))
		})
	}
}

// paceWrite sets every limit's time from next if cond holds for every
// limit. done reports the write; a refusal returns the stored item when
// DynamoDB sends it back.
func (s *Store) paceWrite(ctx context.Context, account post.AccountID, rates []platform.Rate, next map[string]time.Time, cond func(*expr, platform.Rate) string) (item, bool, error) {
	var x expr
	var u update
	var conds []string
	for _, r := range rates {
		u.set(&x, paceAttr(r), str(sortTime(next[pace.Key(r)])))
		conds = append(conds, cond(&x, r))
	}
	expression, condition := u.String(), strings.Join(conds, " AND ")
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.tables.workspace, Key: paceKey(account),
		UpdateExpression: &expression, ConditionExpression: &condition,
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if stored, ok := conditionFailed(err); ok {
		return stored, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return nil, true, nil
}

// Budget is, for each of rates, how many sends the account may make at
// now (pace.Left of its stored budget: one consistent GetItem; an
// account never paced has its whole budget): what the API shows as an
// account's posting budget left.
func (s *Store) Budget(ctx context.Context, account post.AccountID, rates []platform.Rate, now time.Time) ([]int, error) {
	stored, err := s.getItem(ctx, s.tables.workspace, paceKey(account))
	if err != nil {
		return nil, fmt.Errorf("budget of %s: %w", account, err)
	}
	tats := map[string]time.Time{}
	var d decoder
	for _, r := range rates {
		if v := sval(stored, paceAttr(r)); v != "" {
			tats[pace.Key(r)] = d.time(paceAttr(r), v)
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("budget of %s: %w", account, d.err)
	}
	return pace.Left(tats, rates, now), nil
}
