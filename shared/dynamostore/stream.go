package dynamostore

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The tables' change stream (DynamoDB Streams, NEW_AND_OLD_IMAGES) is the
// AWS runtime's outbox: every change to an item is in it for 24 hours, in
// the order it was made (per item), whoever made it. The notifier function
// reads it (an event source mapping) and derives from each record's old
// and new image the event the change causes, with the same functions the
// embedded store calls in its transaction (publishing.TargetEvent,
// LedgerEvent, AccountEvent). Nothing here reads a stream: the decoders
// below turn one record into the store's values.

// EventTables are the tables whose changes cause events (their streams
// are the notifier's event sources): targets in the posts table, ledger
// entries, and accounts in the workspace table.
var EventTables = []string{LedgerTable, PostsTable, WorkspaceTable}

// StreamImage converts a stream record's image (aws-lambda-go's
// attribute values, as Lambda hands them over) into the SDK's item, which
// the store's decoders read. Every DynamoDB type is converted; a value
// without a type (a zero events.DynamoDBAttributeValue) is an error naming
// the attribute. Written by hand: aws-lambda-go's type keeps its value
// private and the SDK's attributevalue package converts only from the
// DynamoDB Streams SDK's types.
func StreamImage(img map[string]events.DynamoDBAttributeValue) (map[string]types.AttributeValue, error) {
	if img == nil {
		return nil, nil
	}
	out := make(map[string]types.AttributeValue, len(img))
	for name, v := range img {
		av, err := streamValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", name, err)
		}
		out[name] = av
	}
	return out, nil
}

// errNoValue: an attribute value of no type (aws-lambda-go's zero value
// claims to be Binary and panics when read).
var errNoValue = errors.New("value without a type")

// streamValue converts one value, recursively.
func streamValue(v events.DynamoDBAttributeValue) (types.AttributeValue, error) {
	if v.IsNull() && v.DataType() != events.DataTypeNull {
		return nil, errNoValue
	}
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}, nil
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}, nil
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: slices.Clone(v.Binary())}, nil
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: slices.Clone(v.StringSet())}, nil
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: slices.Clone(v.NumberSet())}, nil
	case events.DataTypeBinarySet:
		bs := make([][]byte, len(v.BinarySet()))
		for i, b := range v.BinarySet() {
			bs[i] = slices.Clone(b)
		}
		return &types.AttributeValueMemberBS{Value: bs}, nil
	case events.DataTypeList:
		l := make([]types.AttributeValue, len(v.List()))
		for i, e := range v.List() {
			av, err := streamValue(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			l[i] = av
		}
		return &types.AttributeValueMemberL{Value: l}, nil
	case events.DataTypeMap:
		m, err := StreamImage(v.Map())
		if err != nil {
			return nil, err
		}
		if m == nil {
			m = map[string]types.AttributeValue{}
		}
		return &types.AttributeValueMemberM{Value: m}, nil
	}
	return nil, fmt.Errorf("unknown attribute type %d", v.DataType())
}

// images converts a record's old and new image.
func images(rec events.DynamoDBEventRecord) (old, next item, err error) {
	if old, err = StreamImage(rec.Change.OldImage); err != nil {
		return nil, nil, fmt.Errorf("old image: %w", err)
	}
	if next, err = StreamImage(rec.Change.NewImage); err != nil {
		return nil, nil, fmt.Errorf("new image: %w", err)
	}
	return old, next, nil
}

// ErrNoImages is returned (wrapped) for a record of a change without
// images: the stream's view type is not NEW_AND_OLD_IMAGES (KEYS_ONLY
// streams carry keys only), so no event can be derived from it.
var ErrNoImages = errors.New("stream record carries no item images (want StreamViewType NEW_AND_OLD_IMAGES)")

// checkImages refuses a record that should carry images and does not.
func checkImages(rec events.DynamoDBEventRecord) error {
	if v := rec.Change.StreamViewType; v != "" && v != string(types.StreamViewTypeNewAndOldImages) {
		return fmt.Errorf("stream view type %s: %w", v, ErrNoImages)
	}
	if len(rec.Change.OldImage) == 0 && len(rec.Change.NewImage) == 0 {
		return ErrNoImages
	}
	return nil
}

// TargetChange decodes a posts table record: the target's post, its
// state before the change (the zero Target for a new one) and after it
// (the zero Target for a removed one). ok is false for a record of
// another item (a post item, or another table's). A record that does not
// decode is an error naming the item, never ok.
func TargetChange(rec events.DynamoDBEventRecord) (id post.ID, prev, next post.Target, ok bool, err error) {
	keys, err := StreamImage(rec.Change.Keys)
	if err != nil {
		return "", post.Target{}, post.Target{}, false, fmt.Errorf("stream record %s: keys: %w", rec.EventID, err)
	}
	sk := sval(keys, attrItem)
	if sval(keys, attrPost) == "" || !strings.HasPrefix(sk, targetPrefix) {
		return "", post.Target{}, post.Target{}, false, nil
	}
	id = post.ID(sval(keys, attrPost))
	fail := func(err error) (post.ID, post.Target, post.Target, bool, error) {
		return "", post.Target{}, post.Target{}, false, fmt.Errorf("stream record %s: post %s %s: %w", rec.EventID, id, sk, err)
	}
	if err := checkImages(rec); err != nil {
		return fail(err)
	}
	old, img, err := images(rec)
	if err != nil {
		return fail(err)
	}
	if old != nil {
		if _, prev, err = decodeTarget(old); err != nil {
			return fail(err)
		}
	}
	if img != nil {
		if _, next, err = decodeTarget(img); err != nil {
			return fail(err)
		}
	}
	return id, prev, next, true, nil
}

// LedgerChange decodes a ledger table record: the entry before the
// change (the zero Entry for a new one) and after it (the zero Entry for
// a removed one: TTL deletions). ok is false for a record of another
// table.
func LedgerChange(rec events.DynamoDBEventRecord) (prev, next ledger.Entry, ok bool, err error) {
	keys, err := StreamImage(rec.Change.Keys)
	if err != nil {
		return ledger.Entry{}, ledger.Entry{}, false, fmt.Errorf("stream record %s: keys: %w", rec.EventID, err)
	}
	key := sval(keys, attrKey)
	if key == "" || len(keys) != 1 {
		return ledger.Entry{}, ledger.Entry{}, false, nil
	}
	fail := func(err error) (ledger.Entry, ledger.Entry, bool, error) {
		return ledger.Entry{}, ledger.Entry{}, false, fmt.Errorf("stream record %s: ledger entry %s: %w", rec.EventID, key, err)
	}
	if err := checkImages(rec); err != nil {
		return fail(err)
	}
	old, img, err := images(rec)
	if err != nil {
		return fail(err)
	}
	if old != nil {
		if prev, err = decodeEntry(old); err != nil {
			return fail(err)
		}
	}
	if img != nil {
		if next, err = decodeEntry(img); err != nil {
			return fail(err)
		}
	}
	return prev, next, true, nil
}

// AccountChange decodes a workspace table record of an account: the
// account before and after the change (the zero Account when absent),
// and when the change was made: the new image's updated_at (PutAccount
// stores it), else the record's ApproximateCreationDateTime. ok is false
// for a record of another item (the blocklist, budgets, slot firings,
// subscriptions, the data key) or table.
func AccountChange(rec events.DynamoDBEventRecord) (prev, next post.Account, at time.Time, ok bool, err error) {
	keys, err := StreamImage(rec.Change.Keys)
	if err != nil {
		return post.Account{}, post.Account{}, time.Time{}, false, fmt.Errorf("stream record %s: keys: %w", rec.EventID, err)
	}
	if sval(keys, attrPK) != pkAccount || sval(keys, attrSK) == "" {
		return post.Account{}, post.Account{}, time.Time{}, false, nil
	}
	id := sval(keys, attrSK)
	fail := func(err error) (post.Account, post.Account, time.Time, bool, error) {
		return post.Account{}, post.Account{}, time.Time{}, false, fmt.Errorf("stream record %s: account %s: %w", rec.EventID, id, err)
	}
	if err := checkImages(rec); err != nil {
		return fail(err)
	}
	old, img, err := images(rec)
	if err != nil {
		return fail(err)
	}
	var updated string
	for _, x := range []struct {
		raw item
		dst *post.Account
	}{{old, &prev}, {img, &next}} {
		if x.raw == nil {
			continue
		}
		var it accountItem
		if err := attributevalue.UnmarshalMap(x.raw, &it); err != nil {
			return fail(err)
		}
		*x.dst = it.account()
		updated = it.UpdatedAt
	}
	if img == nil {
		updated = ""
	}
	var d decoder
	at = d.time(attrUpdatedAt, updated)
	if d.err != nil {
		return fail(d.err)
	}
	if at.IsZero() {
		at = rec.Change.ApproximateCreationDateTime.UTC()
	}
	return prev, next, at, true, nil
}

// RecordEvent is the event a record of one of EventTables causes, if any
// (publishing.TargetEvent, LedgerEvent, AccountEvent on its images).
// Records of other items cause none. A record that does not decode is an
// error (the notifier reports it failed: the stream retries it, then
// sends it to the mapping's on-failure destination).
func RecordEvent(rec events.DynamoDBEventRecord) (publishing.Event, bool, error) {
	if id, prev, next, ok, err := TargetChange(rec); err != nil || ok {
		if err != nil {
			return publishing.Event{}, false, err
		}
		ev, has := publishing.TargetEvent(id, prev, next)
		return ev, has, nil
	}
	if prev, next, ok, err := LedgerChange(rec); err != nil || ok {
		if err != nil {
			return publishing.Event{}, false, err
		}
		ev, has := publishing.LedgerEvent(prev, next)
		return ev, has, nil
	}
	if prev, next, at, ok, err := AccountChange(rec); err != nil || ok {
		if err != nil {
			return publishing.Event{}, false, err
		}
		ev, has := publishing.AccountEvent(prev, next, at)
		return ev, has, nil
	}
	return publishing.Event{}, false, nil
}

// Which target statuses, ledger states and account statuses cause
// events: the stream filters below pass only changes to them. The stream
// filters' test holds them to publishing's event functions.
var (
	eventTargetStatuses  = []post.TargetStatus{post.Published, post.Failed, post.Held, post.Deleted}
	eventLedgerStates    = []ledger.State{ledger.Unknown}
	eventLedgerActions   = []ledger.Action{ledger.Publish}
	eventAccountStatuses = []post.AccountStatus{post.AccountReconnectNeeded}
)

// StreamFilter is the event source mapping's filter pattern (Lambda
// event filtering, a FilterCriteria pattern) for the stream of the
// table named name (LedgerTable, PostsTable, WorkspaceTable): it passes
// only the records whose new image is in a state that causes an event,
// so the notifier is not invoked for the many changes that cause none
// (a publish moves its target and entry several times; budgets and slot
// firings are written on every publish). Dropped records are never
// delivered, so the filters must pass every change RecordEvent turns into
// an event (the test checks them against publishing's event functions).
// "" for another table.
func StreamFilter(name string) string {
	var pattern any
	str := func(vs ...string) []any {
		out := make([]any, len(vs))
		for i, v := range vs {
			out[i] = v
		}
		return out
	}
	s := func(vs ...string) map[string]any { return map[string]any{"S": str(vs...)} }
	switch name {
	case PostsTable:
		statuses := make([]string, len(eventTargetStatuses))
		for i, st := range eventTargetStatuses {
			statuses[i] = string(st)
		}
		pattern = map[string]any{"dynamodb": map[string]any{
			"Keys":     map[string]any{attrItem: map[string]any{"S": []any{map[string]any{"prefix": targetPrefix}}}},
			"NewImage": map[string]any{attrStatus: s(statuses...)},
		}}
	case LedgerTable:
		states := make([]string, len(eventLedgerStates))
		for i, st := range eventLedgerStates {
			states[i] = string(st)
		}
		actions := make([]string, len(eventLedgerActions))
		for i, a := range eventLedgerActions {
			actions[i] = string(a)
		}
		pattern = map[string]any{"dynamodb": map[string]any{
			"NewImage": map[string]any{attrState: s(states...), "action": s(actions...)},
		}}
	case WorkspaceTable:
		statuses := make([]string, len(eventAccountStatuses))
		for i, st := range eventAccountStatuses {
			statuses[i] = string(st)
		}
		pattern = map[string]any{"dynamodb": map[string]any{
			"Keys":     map[string]any{attrPK: s(pkAccount)},
			"NewImage": map[string]any{attrStatus: s(statuses...)},
		}}
	default:
		return ""
	}
	b, err := json.Marshal(pattern)
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return string(b)
}
