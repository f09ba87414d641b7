package dynamostore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/recurring"
)

var _ publishing.RecurringRules = (*Store)(nil)

// The workspace table's partition of recurring rules: one item per rule
// (sort key: its id), the rule as JSON (recurring.Encode) in "rule" and
// its version in "version", the condition of every update. A rule is a
// few kilobytes (its content twice while an edit retires the revision
// before), far under DynamoDB's 400 KB item limit; the materializer
// reads the partition once a minute, a Query of a few read units.
const pkRule = "rule"

// RulePartition is the partition key of every recurring rule in the
// workspace table: the one partition the api function writes rules in
// (the template's dynamodb:LeadingKeys condition).
const RulePartition = pkRule

// Attributes of a rule item.
const (
	attrRuleJSON    = "rule"
	attrRuleVersion = "version"
)

func ruleKey(id recurring.ID) item { return item{attrPK: str(pkRule), attrSK: str(string(id))} }

func ruleItem(r recurring.Rule, version int64) (item, error) {
	b, err := recurring.Encode(r)
	if err != nil {
		return nil, err
	}
	it := ruleKey(r.ID)
	it[attrRuleJSON] = str(string(b))
	it[attrRuleVersion] = &types.AttributeValueMemberN{Value: strconv.FormatInt(version, 10)}
	return it, nil
}

func decodeRuleItem(it item) (recurring.Rule, error) {
	r, err := recurring.Decode([]byte(sval(it, attrRuleJSON)))
	if err != nil {
		return recurring.Rule{}, fmt.Errorf("rule %s: %w", sval(it, attrSK), err)
	}
	r.Version = nval(it, attrRuleVersion)
	return r, nil
}

// CreateRule stores a new rule at version 1: one PutItem conditional on
// the id being absent (post.ErrConflict otherwise).
func (s *Store) CreateRule(ctx context.Context, r recurring.Rule) error {
	it, err := ruleItem(r, 1)
	if err != nil {
		return err
	}
	var x expr
	cond := fmt.Sprintf("attribute_not_exists(%s)", x.name(attrPK))
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.tables.workspace, Item: it, ConditionExpression: &cond, ExpressionAttributeNames: x.names,
	})
	if _, ok := conditionFailed(err); ok {
		return fmt.Errorf("create rule %s: the id exists: %w", r.ID, post.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("create rule %s: %w", r.ID, err)
	}
	return nil
}

// GetRule reads a rule with one consistent GetItem; post.ErrNotFound if
// there is none.
func (s *Store) GetRule(ctx context.Context, id recurring.ID) (recurring.Rule, error) {
	it, err := s.getItem(ctx, s.tables.workspace, ruleKey(id))
	if err != nil {
		return recurring.Rule{}, fmt.Errorf("rule %s: %w", id, err)
	}
	if it == nil {
		return recurring.Rule{}, fmt.Errorf("rule %s: %w", id, post.ErrNotFound)
	}
	return decodeRuleItem(it)
}

// UpdateRule replaces the rule with one PutItem conditional on its stored
// version being r.Version (absent: no such rule, a conflict too).
func (s *Store) UpdateRule(ctx context.Context, r recurring.Rule) error {
	it, err := ruleItem(r, r.Version+1)
	if err != nil {
		return err
	}
	var x expr
	cond := fmt.Sprintf("%s = %s", x.name(attrRuleVersion), x.num(r.Version))
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.tables.workspace, Item: it, ConditionExpression: &cond, ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
	})
	if _, ok := conditionFailed(err); ok {
		return fmt.Errorf("update rule %s: not at version %d: %w", r.ID, r.Version, post.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("update rule %s: %w", r.ID, err)
	}
	return nil
}

// ListRules lists every rule by id: one consistent Query of the rules'
// partition (sort keys in byte order).
func (s *Store) ListRules(ctx context.Context) ([]recurring.Rule, error) {
	items, err := s.queryPartition(ctx, pkRule)
	if err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	out := make([]recurring.Rule, 0, len(items))
	for _, it := range items {
		r, err := decodeRuleItem(it)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
