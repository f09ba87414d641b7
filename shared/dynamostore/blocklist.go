package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"oncepost/shared/post"
)

// ErrEmptyKey is returned (wrapped) by AddBlockedTerm for a term without a
// key.
var ErrEmptyKey = errors.New("blocked term has no key")

func blockedKey(key string) item { return item{attrPK: str(pkBlocked), attrSK: str(key)} }

// AddBlockedTerm adds a term to the blocklist under its key, as given (the
// caller normalises: Key is post.NormalizeTerm of Term), with one PutItem
// conditional on the key being absent. It returns false, and changes
// nothing, if a term with that key is already listed: adding twice is a
// no-op, and the first term's wording and time are kept. A term without a
// key is refused with an error wrapping ErrEmptyKey.
func (s *Store) AddBlockedTerm(ctx context.Context, t post.BlockedTerm) (added bool, err error) {
	if t.Key == "" {
		return false, fmt.Errorf("add blocked term %q: %w", t.Term, ErrEmptyKey)
	}
	it := blockedKey(t.Key)
	it["term"] = str(t.Term)
	if at := encTime(t.AddedAt); at != "" {
		it["added_at"] = str(at)
	}
	var x expr
	cond := fmt.Sprintf("attribute_not_exists(%s)", x.name(attrPK))
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.tables.workspace, Item: it, ConditionExpression: &cond, ExpressionAttributeNames: x.names,
	})
	if _, ok := conditionFailed(err); ok {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("add blocked term %q: %w", t.Key, err)
	}
	return true, nil
}

// RemoveBlockedTerm removes the term with the key (one DeleteItem); it
// returns false, with no error, if there is none.
func (s *Store) RemoveBlockedTerm(ctx context.Context, key string) (removed bool, err error) {
	out, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.tables.workspace, Key: blockedKey(key), ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil {
		return false, fmt.Errorf("remove blocked term %q: %w", key, err)
	}
	return len(out.Attributes) > 0, nil
}

// BlockedTerms lists the blocklist ordered by key (byte order: DynamoDB
// sorts string sort keys by their UTF-8 bytes), with one consistent Query
// of the workspace table's blocklist partition.
func (s *Store) BlockedTerms(ctx context.Context) ([]post.BlockedTerm, error) {
	items, err := s.queryPartition(ctx, pkBlocked)
	if err != nil {
		return nil, fmt.Errorf("blocked terms: %w", err)
	}
	var out []post.BlockedTerm
	for _, it := range items {
		var d decoder
		t := post.BlockedTerm{Key: sval(it, attrSK), Term: sval(it, "term"), AddedAt: d.time("added_at", sval(it, "added_at"))}
		if d.err != nil {
			return nil, fmt.Errorf("blocked term %q: %w", t.Key, d.err)
		}
		out = append(out, t)
	}
	return out, nil
}
