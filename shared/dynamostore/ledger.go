package dynamostore

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"oncepost/shared/ledger"
)

// Ledger attributes the code names (the others are entryItem's tags).
const (
	attrKey            = "key"
	attrState          = "state"
	attrAttempt        = "attempt"
	attrTaskToken      = "task_token"
	attrDecision       = "decision"
	attrOpenShard      = "open_shard"
	attrOpenAt         = "open_at"
	attrHeldShard      = "held_shard"
	attrHeldAt         = "held_at"
	attrHistory        = "history"
	attrHistoryDropped = "history_dropped"
)

// History bounds: the entry item keeps its most recent transitions. When
// an Update leaves more than historyTrimAt, one conditional UpdateItem
// drops the oldest down to HistoryKeep: one extra write every
// historyTrimAt−HistoryKeep transitions, and only for entries that move
// that often (a long run of throttled re-sends); the happy path never
// trims. Reasons are cut to HistoryReasonBytes in the history (the
// entry's own Reason is whole).
const (
	HistoryKeep        = 20
	historyTrimAt      = 32
	HistoryReasonBytes = 256
)

// entryItem is a ledger entry as stored: every field of ledger.Entry
// (empty strings and zero times omitted), plus the attributes derived from
// them that the sparse indexes and the TTL read. The history list is
// written next to them (Create) or appended to (Update).
type entryItem struct {
	Key           string `dynamodbav:"key"`
	Action        string `dynamodbav:"action,omitempty"`
	Account       string `dynamodbav:"account,omitempty"`
	Subject       string `dynamodbav:"subject,omitempty"`
	Post          string `dynamodbav:"post,omitempty"`
	Slot          string `dynamodbav:"slot,omitempty"`
	State         string `dynamodbav:"state"`
	Attempt       int    `dynamodbav:"attempt"`
	MaybeSent     int    `dynamodbav:"maybe_sent,omitempty"`
	Handle        string `dynamodbav:"handle,omitempty"`
	Fingerprint   string `dynamodbav:"fingerprint,omitempty"`
	Checkpoint    string `dynamodbav:"checkpoint,omitempty"`
	LeaseOwner    string `dynamodbav:"lease_owner,omitempty"`
	LeaseUntil    string `dynamodbav:"lease_until,omitempty"`
	OpenSince     string `dynamodbav:"open_since,omitempty"`
	SentAt        string `dynamodbav:"sent_at,omitempty"`
	LookAfter     string `dynamodbav:"look_after,omitempty"`
	RetryAt       string `dynamodbav:"retry_at,omitempty"`
	DeferredSince string `dynamodbav:"deferred_since,omitempty"`
	RemoteID      string `dynamodbav:"remote_id,omitempty"`
	Reason        string `dynamodbav:"reason,omitempty"`
	TaskToken     string `dynamodbav:"task_token,omitempty"`
	Decision      string `dynamodbav:"decision,omitempty"`
	UpdatedAt     string `dynamodbav:"updated_at,omitempty"`
	ExpiresAt     string `dynamodbav:"expires_at,omitempty"`

	// OpenShard and OpenAt exist only while the entry is open (pending or
	// unknown): OpenIndex holds open entries and nothing else.
	OpenShard string `dynamodbav:"open_shard,omitempty"`
	OpenAt    string `dynamodbav:"open_at,omitempty"`
	// HeldShard and HeldAt exist only while the entry is held (HeldIndex).
	HeldShard string `dynamodbav:"held_shard,omitempty"`
	HeldAt    string `dynamodbav:"held_at,omitempty"`
	// TTL is ExpiresAt in epoch seconds, rounded up, on terminal entries
	// only: open, released and held entries never expire.
	TTL int64 `dynamodbav:"ttl,omitempty"`
}

// entryAttrs are entryItem's attributes but the key: what Update sets
// (present in next) or removes (absent).
var entryAttrs = func() []string {
	var out []string
	t := reflect.TypeFor[entryItem]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("dynamodbav"), ",")
		if name != attrKey {
			out = append(out, name)
		}
	}
	return out
}()

// transitionItem is one element of an entry's history list.
type transitionItem struct {
	At      string `dynamodbav:"at"`
	From    string `dynamodbav:"from,omitempty"`
	To      string `dynamodbav:"to"`
	Attempt int    `dynamodbav:"attempt"`
	Reason  string `dynamodbav:"reason,omitempty"`
}

func entryItemOf(e ledger.Entry) entryItem {
	key := string(e.Key)
	it := entryItem{
		Key: key, Action: string(e.Action), Account: e.Account, Subject: e.Subject, Post: e.Post,
		Slot: encTime(e.Slot), State: string(e.State), Attempt: e.Attempt, MaybeSent: e.MaybeSent,
		Handle: e.Handle, Fingerprint: e.Fingerprint, Checkpoint: e.Checkpoint, LeaseOwner: e.LeaseOwner, LeaseUntil: encTime(e.LeaseUntil),
		OpenSince: encTime(e.OpenSince), SentAt: encTime(e.SentAt), LookAfter: e.LookAfter,
		RetryAt: encTime(e.RetryAt), DeferredSince: encTime(e.DeferredSince), RemoteID: e.RemoteID,
		Reason: e.Reason, TaskToken: e.TaskToken, Decision: e.Decision,
		UpdatedAt: encTime(e.UpdatedAt), ExpiresAt: encTime(e.ExpiresAt),
	}
	if e.State.Open() {
		it.OpenShard = shardKey(OpenIndex, shardOf(OpenShards, key))
		it.OpenAt = sortTime(e.OpenSince) + "#" + key
	}
	if e.State == ledger.Held {
		it.HeldShard = shardKey(HeldIndex, shardOf(OpenShards, key))
		it.HeldAt = sortTime(e.UpdatedAt) + "#" + key
	}
	if e.State.Terminal() && !e.ExpiresAt.IsZero() {
		it.TTL = ttlSeconds(e.ExpiresAt)
	}
	return it
}

// ttlSeconds is t in epoch seconds, rounded up: DynamoDB never deletes an
// entry before its ExpiresAt.
func ttlSeconds(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

func (it entryItem) entry() (ledger.Entry, error) {
	var d decoder
	e := ledger.Entry{
		Key: ledger.Key(it.Key), Action: ledger.Action(it.Action), Account: it.Account, Subject: it.Subject,
		Post: it.Post, Slot: d.time("slot", it.Slot), State: ledger.State(it.State), Attempt: it.Attempt,
		MaybeSent: it.MaybeSent, Handle: it.Handle, Fingerprint: it.Fingerprint, Checkpoint: it.Checkpoint, LeaseOwner: it.LeaseOwner,
		LeaseUntil: d.time("lease_until", it.LeaseUntil), OpenSince: d.time("open_since", it.OpenSince),
		SentAt: d.time("sent_at", it.SentAt), LookAfter: it.LookAfter, RetryAt: d.time("retry_at", it.RetryAt),
		DeferredSince: d.time("deferred_since", it.DeferredSince), RemoteID: it.RemoteID, Reason: it.Reason,
		TaskToken: it.TaskToken, Decision: it.Decision, UpdatedAt: d.time("updated_at", it.UpdatedAt),
		ExpiresAt: d.time("expires_at", it.ExpiresAt),
	}
	if d.err != nil {
		return ledger.Entry{}, fmt.Errorf("entry %s: %w", it.Key, d.err)
	}
	return e, nil
}

func decodeEntry(raw item) (ledger.Entry, error) {
	var it entryItem
	if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
		return ledger.Entry{}, fmt.Errorf("entry %s: %w", sval(raw, attrKey), err)
	}
	return it.entry()
}

func ledgerKey(key ledger.Key) item { return item{attrKey: str(string(key))} }

// expired reports whether a stored entry's TTL has passed at now. DynamoDB
// deletes expired items lazily (typically within two days) and they stay
// readable until then; the store treats them as deleted already: Get and
// History do not see them, Create overwrites them. Only terminal entries
// carry a TTL.
func expired(it item, now time.Time) bool {
	ttl := nval(it, TTLAttribute)
	return ttl != 0 && ttl < now.Unix()
}

// historyValue is one transition as a history list element.
func historyValue(from, to ledger.State, attempt int, reason string, at time.Time) (types.AttributeValue, error) {
	if len(reason) > HistoryReasonBytes {
		cut := HistoryReasonBytes
		for cut > 0 && !utf8.RuneStart(reason[cut]) {
			cut--
		}
		reason = reason[:cut]
	}
	return attributevalue.Marshal(transitionItem{At: encTime(at), From: string(from), To: string(to), Attempt: attempt, Reason: reason})
}

// Create writes a new entry with one conditional PutItem, its history
// starting with the first write ("" → pending), if no entry has its key
// or the one stored has expired (attribute_not_exists(key) OR ttl < now).
// It returns an error wrapping ledger.ErrTransition for an entry
// ledger.CheckNew refuses and ledger.ErrConflict when the key exists.
// Cost: one write (≈1 WRU for a usual entry) plus one OpenIndex write.
func (s *Store) Create(ctx context.Context, e ledger.Entry) error {
	if err := ledger.CheckNew(e); err != nil {
		return fmt.Errorf("ledger create %s: %w", e.Key, err)
	}
	now := s.now()
	it, err := attributevalue.MarshalMap(entryItemOf(e))
	if err != nil {
		return fmt.Errorf("ledger create %s: %w", e.Key, err)
	}
	first, err := historyValue("", e.State, e.Attempt, e.Reason, now)
	if err != nil {
		return fmt.Errorf("ledger create %s: %w", e.Key, err)
	}
	it[attrHistory] = &types.AttributeValueMemberL{Value: []types.AttributeValue{first}}
	var x expr
	cond := fmt.Sprintf("attribute_not_exists(%s) OR %s < %s", x.name(attrKey), x.name(TTLAttribute), x.num(now.Unix()))
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.tables.ledger, Item: it, ConditionExpression: &cond,
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, ok := conditionFailed(err); ok {
		what := "key exists"
		if old != nil {
			what = fmt.Sprintf("key exists (%s attempt %d)", sval(old, attrState), nval(old, attrAttempt))
		}
		return fmt.Errorf("ledger create %s: %s: %w", e.Key, what, ledger.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("ledger create %s: %w", e.Key, err)
	}
	return nil
}

// Get reads an entry with one strongly consistent GetItem, or returns an
// error wrapping ledger.ErrNotFound (also for an expired entry DynamoDB
// has not deleted yet).
func (s *Store) Get(ctx context.Context, key ledger.Key) (ledger.Entry, error) {
	it, err := s.getItem(ctx, s.tables.ledger, ledgerKey(key))
	if err != nil {
		return ledger.Entry{}, fmt.Errorf("ledger get %s: %w", key, err)
	}
	if it == nil || expired(it, s.now()) {
		return ledger.Entry{}, fmt.Errorf("ledger get %s: %w", key, ledger.ErrNotFound)
	}
	e, err := decodeEntry(it)
	if err != nil {
		return ledger.Entry{}, fmt.Errorf("ledger get %s: %w", key, err)
	}
	return e, nil
}

// Update replaces prev by next with one conditional UpdateItem that also
// appends the move to the entry's history list (no second write), on the
// condition that the stored entry still has prev's state, attempt, task
// token and decision (an absent attribute standing for ""). It returns an
// error wrapping ledger.ErrTransition for a move ledger.Check refuses,
// ledger.ErrNotFound for a missing key and ledger.ErrConflict when the
// stored entry has moved on.
//
// The task token and the decision are in the condition for every move, as
// in sqlitestore: held → held moves keep state and attempt, and without
// them a Retoken computed from an entry read before an operator's decision
// would erase the decision, and a decision computed before a Retoken would
// restore the old token. Every other state has neither.
//
// On a failed condition the stored entry comes back with the refusal
// (ReturnValuesOnConditionCheckFailure ALL_OLD, free); when it does not
// (dynalite ignores the parameter) one strongly consistent GetItem tells
// a missing key from a conflict.
//
// The move also sets or removes the index attributes, so an entry leaves
// OpenIndex the moment it closes and enters HeldIndex while held, and sets
// the TTL of a terminal entry. Cost: one write (the item's size, history
// included, in 1 KB units) plus a write to each index the entry enters or
// leaves.
func (s *Store) Update(ctx context.Context, prev, next ledger.Entry) error {
	if err := ledger.Check(prev, next); err != nil {
		return fmt.Errorf("ledger update %s: %w", prev.Key, err)
	}
	it, err := attributevalue.MarshalMap(entryItemOf(next))
	if err != nil {
		return fmt.Errorf("ledger update %s: %w", prev.Key, err)
	}
	moved, err := historyValue(prev.State, next.State, next.Attempt, next.Reason, s.now())
	if err != nil {
		return fmt.Errorf("ledger update %s: %w", prev.Key, err)
	}
	var x expr
	var u update
	for _, a := range entryAttrs {
		if v, ok := it[a]; ok {
			u.set(&x, a, v)
		} else {
			u.remove(&x, a)
		}
	}
	h := x.name(attrHistory)
	u.setRaw(fmt.Sprintf("%s = list_append(if_not_exists(%s, %s), %s)", h, h,
		x.value(&types.AttributeValueMemberL{Value: []types.AttributeValue{}}),
		x.value(&types.AttributeValueMemberL{Value: []types.AttributeValue{moved}})))
	cond := fmt.Sprintf("%s = %s AND %s = %s AND %s AND %s",
		x.name(attrState), x.str(string(prev.State)), x.name(attrAttempt), x.num(int64(prev.Attempt)),
		equalsOrAbsent(&x, attrTaskToken, prev.TaskToken), equalsOrAbsent(&x, attrDecision, prev.Decision))
	expression := u.String()
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.tables.ledger, Key: ledgerKey(prev.Key),
		UpdateExpression: &expression, ConditionExpression: &cond,
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		ReturnValues:                        types.ReturnValueUpdatedNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if stored, ok := conditionFailed(err); ok {
		return fmt.Errorf("ledger update %s: %w", prev.Key, s.updateRefused(ctx, prev, stored))
	}
	if err != nil {
		return fmt.Errorf("ledger update %s: %w", prev.Key, err)
	}
	if l, ok := out.Attributes[attrHistory].(*types.AttributeValueMemberL); ok && len(l.Value) > historyTrimAt {
		s.trimHistory(ctx, prev.Key, len(l.Value))
	}
	return nil
}

// RecordCheckpoint stores a platform-made handle on the pending entry e:
// one conditional UpdateItem on the entry's key, state pending, attempt
// and lease owner. It is not a state move, so no history is appended.
func (s *Store) RecordCheckpoint(ctx context.Context, e ledger.Entry, checkpoint string) error {
	if e.State != ledger.Pending || checkpoint == "" {
		return fmt.Errorf("ledger checkpoint %s: only a pending entry takes a checkpoint, and it must not be empty: %w", e.Key, ledger.ErrTransition)
	}
	var x expr
	var u update
	u.set(&x, "checkpoint", &types.AttributeValueMemberS{Value: checkpoint})
	cond := fmt.Sprintf("%s = %s AND %s = %s AND %s = %s",
		x.name(attrState), x.str(string(ledger.Pending)), x.name(attrAttempt), x.num(int64(e.Attempt)),
		x.name("lease_owner"), x.str(e.LeaseOwner))
	expression := u.String()
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.tables.ledger, Key: ledgerKey(e.Key),
		UpdateExpression: &expression, ConditionExpression: &cond,
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
	})
	if _, ok := conditionFailed(err); ok {
		return fmt.Errorf("ledger checkpoint %s: not pending attempt %d owned by this worker: %w", e.Key, e.Attempt, ledger.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("ledger checkpoint %s: %w", e.Key, err)
	}
	return nil
}

// equalsOrAbsent is the condition "attr is v", where "" means absent.
func equalsOrAbsent(x *expr, attr, v string) string {
	if v == "" {
		return fmt.Sprintf("attribute_not_exists(%s)", x.name(attr))
	}
	return fmt.Sprintf("%s = %s", x.name(attr), x.str(v))
}

// updateRefused explains a failed Update condition from the stored item
// sent back with the refusal, or read now when none was sent.
func (s *Store) updateRefused(ctx context.Context, prev ledger.Entry, stored item) error {
	if stored == nil {
		var err error
		if stored, err = s.getItem(ctx, s.tables.ledger, ledgerKey(prev.Key)); err != nil {
			return fmt.Errorf("condition failed, then reading the entry: %w", err)
		}
	}
	if stored == nil || expired(stored, s.now()) {
		return ledger.ErrNotFound
	}
	state, attempt := sval(stored, attrState), int(nval(stored, attrAttempt))
	if state == string(prev.State) && attempt == prev.Attempt {
		// Tokens stay out of errors.
		return fmt.Errorf("%s attempt %d: task token or decision changed: %w", state, attempt, ledger.ErrConflict)
	}
	return fmt.Errorf("expected %s attempt %d, stored %s attempt %d: %w", prev.State, prev.Attempt, state, attempt, ledger.ErrConflict)
}

// trimHistory drops the oldest transitions of an entry whose history has
// n elements, down to HistoryKeep, counting them in history_dropped. It
// is conditional on the list still having n elements (an append in
// between fails it harmlessly: the next Update trims) and best effort:
// the Update it follows has succeeded, so its error is dropped.
func (s *Store) trimHistory(ctx context.Context, key ledger.Key, n int) {
	drop := n - HistoryKeep
	var x expr
	var u update
	h := x.name(attrHistory)
	// Highest index first: whether the indexes name positions in the list
	// before the update (as the DynamoDB guide's example reads) or the
	// elements are removed one after another, the rest shifting (as
	// dynalite does), this order drops the same elements.
	for i := drop - 1; i >= 0; i-- {
		u.removes = append(u.removes, fmt.Sprintf("%s[%d]", h, i))
	}
	d := x.name(attrHistoryDropped)
	u.setRaw(fmt.Sprintf("%s = if_not_exists(%s, %s) + %s", d, d, x.num(0), x.num(int64(drop))))
	cond := fmt.Sprintf("size(%s) = %s", h, x.num(int64(n)))
	expression := u.String()
	_, _ = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.tables.ledger, Key: ledgerKey(key), UpdateExpression: &expression,
		ConditionExpression: &cond, ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
	})
}

// History lists an entry's transitions, oldest first: its first write
// ("" → pending) and every Update, or the HistoryKeep most recent of them
// when older ones were dropped. One strongly consistent GetItem. A key
// without an entry (or with an expired one) has an empty history.
func (s *Store) History(ctx context.Context, key ledger.Key) ([]ledger.Transition, error) {
	it, err := s.getItem(ctx, s.tables.ledger, ledgerKey(key))
	if err != nil {
		return nil, fmt.Errorf("ledger history %s: %w", key, err)
	}
	if it == nil || expired(it, s.now()) {
		return nil, nil
	}
	var list []transitionItem
	if v := it[attrHistory]; v != nil {
		if err := attributevalue.Unmarshal(v, &list); err != nil {
			return nil, fmt.Errorf("ledger history %s: %w", key, err)
		}
	}
	out := make([]ledger.Transition, 0, len(list))
	for i, tr := range list {
		var d decoder
		at := d.time("at", tr.At)
		if d.err != nil {
			return nil, fmt.Errorf("ledger history %s[%d]: %w", key, i, d.err)
		}
		out = append(out, ledger.Transition{
			Key: key, From: ledger.State(tr.From), To: ledger.State(tr.To), Attempt: tr.Attempt, Reason: tr.Reason, At: at,
		})
	}
	return out, nil
}

// Open lists pending and unknown entries open since before t, oldest
// first (ties by key). It queries OpenIndex, which holds open entries
// only, in each of its OpenShards partitions (open_at < t), merges them,
// and reads the entries with strongly consistent BatchGetItem, dropping
// any the index still lists but that closed or reopened since (the index
// is eventually consistent). Cost: OpenShards Queries (0.5 RRU each for
// up to 4 KB of index keys) plus one read per entry listed; it grows with
// the open entries, never with the ledger. A limit ≤ 0 means no limit.
func (s *Store) Open(ctx context.Context, before time.Time, limit int) ([]ledger.Entry, error) {
	out, err := s.ledgerIndex(ctx, OpenIndex, attrOpenShard, attrOpenAt, sortTime(before), limit)
	if err != nil {
		return nil, fmt.Errorf("ledger open before %s: %w", encTime(before), err)
	}
	return out, nil
}

// Held lists held entries, least recently updated first (ties by key),
// through HeldIndex: the operator's list of decisions to take. Its cost
// grows with the held entries only. A limit ≤ 0 means no limit.
func (s *Store) Held(ctx context.Context, limit int) ([]ledger.Entry, error) {
	out, err := s.ledgerIndex(ctx, HeldIndex, attrHeldShard, attrHeldAt, "", limit)
	if err != nil {
		return nil, fmt.Errorf("ledger held: %w", err)
	}
	return out, nil
}

// ledgerIndex lists the entries of a sparse ledger index in sort-key
// order, sort keys below before (all when before is "").
func (s *Store) ledgerIndex(ctx context.Context, index, shardAttr, sortAttr, before string, limit int) ([]ledger.Entry, error) {
	var queries []dynamodb.QueryInput
	for k := range OpenShards {
		var x expr
		cond := fmt.Sprintf("%s = %s", x.name(shardAttr), x.str(shardKey(index, k)))
		if before != "" {
			cond += fmt.Sprintf(" AND %s < %s", x.name(sortAttr), x.str(before))
		}
		queries = append(queries, dynamodb.QueryInput{
			TableName: &s.tables.ledger, IndexName: ptr(index), KeyConditionExpression: ptr(cond),
			ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values, Limit: pageLimit(limit),
		})
	}
	m, err := s.mergeQueries(ctx, sortAttr, queries)
	if err != nil {
		return nil, err
	}
	return collect(ctx, m, limit, func(ctx context.Context, batch []item) ([]ledger.Entry, error) {
		keys := make([]item, len(batch))
		for i, c := range batch {
			keys[i] = ledgerKey(ledger.Key(sval(c, attrKey)))
		}
		got, err := s.batchGet(ctx, s.tables.ledger, keys, func(it item) string { return sval(it, attrKey) })
		if err != nil {
			return nil, err
		}
		var out []ledger.Entry
		for _, c := range batch {
			it := got[sval(c, attrKey)]
			// Still in the index at the same place: open (or held) since
			// the time the index listed it under.
			if it == nil || sval(it, sortAttr) != sval(c, sortAttr) || sval(it, shardAttr) != sval(c, shardAttr) {
				continue
			}
			e, err := decodeEntry(it)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	})
}
