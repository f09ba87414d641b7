package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
)

var t0 = time.Date(2026, time.November, 30, 9, 0, 0, 123456789, time.UTC)

func newEntry(subject string, now time.Time) ledger.Entry {
	return ledger.NewEntry(ledger.PublishKey("acct", subject, t0), ledger.Publish, "acct", subject, t0,
		"fp-"+subject, "worker-1", now, time.Minute)
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// rawItem reads an item as stored.
func rawItem(t *testing.T, e *env, table string, key item) item {
	t.Helper()
	out, err := e.admin.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &table, Key: key, ConsistentRead: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// itemSize is an item's size as DynamoDB bills it, near enough: attribute
// names plus values (a number ~ half its digits, lists and maps 3 bytes
// plus 1 per element plus their contents).
func itemSize(it item) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(v.Value)+1)/2 + 1
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberL:
		n := 3
		for _, x := range v.Value {
			n += 1 + valueSize(x)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, x := range v.Value {
			n += 1 + len(k) + valueSize(x)
		}
		return n
	}
	return 1
}

// The publish path's store writes: ledger Create, ledger Update pending →
// confirmed, UpdateTarget → published. Three calls, all writes, no read;
// and what DynamoDB bills for them: each write one unit per started KB of
// the larger of the item before and after it, and each index whose key
// the write puts, removes or changes a unit per entry written (a sparse
// index costs nothing for an item it does not hold; a KEYS_ONLY entry
// changes only when its key does).
func TestHappyPublishPathCalls(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, LedgerTable, PostsTable)
	rec := &recorder{}
	s := e.store(t, prefix, rec, Options{})
	ctx := t.Context()
	slot := t0.Add(time.Hour)
	p := post.Post{ID: "p-happy", Body: "We launched.", CreatedAt: t0,
		Targets: []post.Target{{Account: "news", Slot: slot, Status: post.Scheduled, UpdatedAt: t0}}}
	mustDo(t, s.CreatePost(ctx, p))
	_, err := s.UpdateTarget(ctx, p.ID, "news", post.TargetUpdate{Status: post.Triggered, From: []post.TargetStatus{post.Scheduled}, Slot: slot, At: slot})
	mustDo(t, err)
	rec.take()

	// A real-sized entry: an account id, a 26-character post id, the
	// owner a Lambda request id, the fingerprint a SHA-256, a Mastodon
	// snowflake to look after.
	postID := post.ID("01jfx2c4w8n6e2k7v9q3h5m8ta")
	p.ID = postID
	mustDo(t, s.CreatePost(ctx, p))
	_, err = s.UpdateTarget(ctx, postID, "news", post.TargetUpdate{Status: post.Triggered, From: []post.TargetStatus{post.Scheduled}, Slot: slot, At: slot})
	mustDo(t, err)
	rec.take()
	type write struct {
		what          string
		before, after item
		indexes       map[string][2]string // index → key attributes (partition, sort)
	}
	ledgerIdx := map[string][2]string{OpenIndex: {attrOpenShard, attrOpenAt}, HeldIndex: {attrHeldShard, attrHeldAt}}
	postsIdx := map[string][2]string{StatusIndex: {attrSt, attrStAt}}
	key := ledger.PublishKey("news", string(postID), slot)
	en := ledger.NewEntry(key, ledger.Publish, "news", string(postID), slot,
		strings.Repeat("f", 64), "c5b6a8f2-9e1d-4b7a-8f3c-2d6e9a1b4c7e", slot, 2*time.Minute)
	en.LookAfter = "113456789012345678"
	var writes []write
	mustDo(t, s.Create(ctx, en))
	writes = append(writes, write{"ledger create (pending)", nil, rawItem(t, e, s.tables.ledger, ledgerKey(key)), ledgerIdx})
	confirmed, err := en.Confirm("113456789012345742", slot.Add(800*time.Millisecond))
	mustDo(t, err)
	before := rawItem(t, e, s.tables.ledger, ledgerKey(key))
	mustDo(t, s.Update(ctx, en, confirmed))
	writes = append(writes, write{"ledger confirm", before, rawItem(t, e, s.tables.ledger, ledgerKey(key)), ledgerIdx})
	before = rawItem(t, e, s.tables.posts, targetKey(postID, "news"))
	_, err = s.UpdateTarget(ctx, postID, "news", post.TargetUpdate{Status: post.Published, RemoteID: "113456789012345742", At: slot.Add(time.Second)})
	mustDo(t, err)
	writes = append(writes, write{"target published", before, rawItem(t, e, s.tables.posts, targetKey(postID, "news")), postsIdx})

	calls := rec.take()
	got := strings.Join(ops(calls), " ")
	if got != "PutItem UpdateItem UpdateItem" {
		t.Errorf("publish path calls = %s, want PutItem UpdateItem UpdateItem", got)
	}
	for _, c := range calls {
		if c.Error != "" {
			t.Errorf("%s failed: %s", c.Op, c.Error)
		}
	}
	tableUnits, indexUnits := 0, 0
	for _, w := range writes {
		size := max(itemSize(w.before), itemSize(w.after))
		units := (size + 1023) / 1024
		idx := 0
		for name, k := range w.indexes {
			b, a := sval(w.before, k[0])+"|"+sval(w.before, k[1]), sval(w.after, k[0])+"|"+sval(w.after, k[1])
			switch inB, inA := sval(w.before, k[0]) != "", sval(w.after, k[0]) != ""; {
			case inB && inA && a != b:
				idx += 2 // the old entry deleted, the new one put
			case inB != inA:
				idx++
			}
			_ = name
		}
		t.Logf("%-24s item %4d → %4d bytes: %d write unit(s), %d index write(s)", w.what, itemSize(w.before), itemSize(w.after), units, idx)
		if size > 1024 {
			t.Errorf("%s: the item is %d bytes: over 1 KB, the write costs %d units", w.what, size, units)
		}
		tableUnits += units
		indexUnits += idx
	}
	t.Logf("a post's publish path: %d table write units, %d index write units", tableUnits, indexUnits)
	if tableUnits != 3 || indexUnits != 4 {
		t.Errorf("%d table and %d index write units, want 3 and 4", tableUnits, indexUnits)
	}
}

// Open, Held, Due, Unfinished and CountTargets query the index they are
// for, never scan; GetPost is one consistent Query of the post's items.
func TestIndexReadsQueryNeverScan(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, LedgerTable, PostsTable)
	rec := &recorder{}
	s := e.store(t, prefix, rec, Options{})
	ctx := t.Context()
	for i := range 6 {
		en := newEntry(fmt.Sprintf("open-%d", i), t0.Add(time.Duration(i)*time.Second))
		mustDo(t, s.Create(ctx, en))
		if i%3 == 2 {
			h, _ := en.Hold("dedup", "", t0.Add(time.Minute))
			mustDo(t, s.Update(ctx, en, h))
		}
	}
	p := post.Post{ID: "p-1", Body: "b", CreatedAt: t0, Targets: []post.Target{
		{Account: "a", Slot: t0, Status: post.Scheduled, UpdatedAt: t0},
		{Account: "b", Slot: t0, Status: post.Triggered, UpdatedAt: t0},
		{Account: "c", Slot: t0, Status: post.Held, UpdatedAt: t0},
	}}
	mustDo(t, s.CreatePost(ctx, p))
	rec.take()

	for _, tc := range []struct {
		name    string
		run     func() (int, error)
		index   string
		queries int
		want    int
	}{
		{"Open", func() (int, error) { l, err := s.Open(ctx, t0.Add(time.Hour), 10); return len(l), err }, OpenIndex, OpenShards, 4},
		{"Held", func() (int, error) { l, err := s.Held(ctx, 10); return len(l), err }, HeldIndex, OpenShards, 2},
		{"Due", func() (int, error) { l, err := s.Due(ctx, t0.Add(time.Hour), 10); return len(l), err }, StatusIndex, StatusShards, 1},
		{"Unfinished", func() (int, error) { l, err := s.Unfinished(ctx, t0.Add(time.Hour), 10); return len(l), err }, StatusIndex, 3 * StatusShards, 1},
		{"CountTargets", func() (int, error) {
			m, err := s.CountTargets(ctx, post.Held, post.Failed, post.Waiting)
			return m[post.Held], err
		}, StatusIndex, 3 * StatusShards, 1},
	} {
		n, err := tc.run()
		if err != nil || n != tc.want {
			t.Errorf("%s = %d results, %v; want %d", tc.name, n, err, tc.want)
		}
		queries := 0
		for _, c := range rec.take() {
			switch c.Op {
			case "Query":
				queries++
				if c.Body["IndexName"] != tc.index || c.Body["KeyConditionExpression"] == nil {
					t.Errorf("%s: Query on index %v with key condition %v, want index %s", tc.name, c.Body["IndexName"], c.Body["KeyConditionExpression"], tc.index)
				}
				if tc.name == "CountTargets" && c.Body["Select"] != "COUNT" {
					t.Errorf("%s: Query with Select %v, want COUNT", tc.name, c.Body["Select"])
				}
			case "BatchGetItem":
				if tc.name == "CountTargets" {
					t.Errorf("%s read items", tc.name)
				}
			default:
				t.Errorf("%s called %s", tc.name, c.Op)
			}
		}
		if queries != tc.queries {
			t.Errorf("%s made %d queries, want %d (one per index partition)", tc.name, queries, tc.queries)
		}
	}

	if _, err := s.GetPost(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	calls := rec.take()
	if len(calls) != 1 || calls[0].Op != "Query" || calls[0].Body["ConsistentRead"] != true || calls[0].Body["IndexName"] != nil {
		t.Errorf("GetPost calls = %+v, want one consistent Query of the table", calls)
	}
}

// When a condition fails and the refusal carries no item (dynalite ignores
// ReturnValuesOnConditionCheckFailure), the store reads the item with one
// strongly consistent GetItem to say why.
func TestConditionFailureWithoutItemReadsConsistently(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, LedgerTable, PostsTable)
	rec := &recorder{}
	s := e.store(t, prefix, rec, Options{})
	ctx := t.Context()
	en := newEntry("fallback", t0)
	mustDo(t, s.Create(ctx, en))
	unknown, _ := en.MarkUnknown("timeout", t0.Add(time.Second))
	mustDo(t, s.Update(ctx, en, unknown))
	p := post.Post{ID: "p-fb", CreatedAt: t0, Targets: []post.Target{{Account: "a", Slot: t0, Status: post.Published, UpdatedAt: t0}}}
	mustDo(t, s.CreatePost(ctx, p))
	rec.take()

	late, _ := en.Confirm("remote-late", t0.Add(2*time.Second))
	err := s.Update(ctx, en, late)
	if !errors.Is(err, ledger.ErrConflict) || !strings.Contains(err.Error(), "expected pending attempt 1, stored unknown attempt 1") {
		t.Errorf("stale Update = %v, want ledger.ErrConflict naming both states", err)
	}
	checkFallback(t, rec.take(), "UpdateItem")

	_, err = s.UpdateTarget(ctx, p.ID, "a", post.TargetUpdate{Status: post.Cancelled, At: t0})
	if !errors.Is(err, post.ErrConflict) || !strings.Contains(err.Error(), "published → cancelled") {
		t.Errorf("refused UpdateTarget = %v, want post.ErrConflict from Apply", err)
	}
	checkFallback(t, rec.take(), "UpdateItem")

	missing := newEntry("fallback-missing", t0)
	next, _ := missing.Confirm("r", t0)
	if err := s.Update(ctx, missing, next); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Update(missing) = %v, want ledger.ErrNotFound", err)
	}
	checkFallback(t, rec.take(), "UpdateItem")
}

// checkFallback: a conditional write asking for ALL_OLD, refused; if the
// refusal carried the item, nothing else; if not, one consistent GetItem.
func checkFallback(t *testing.T, calls []call, op string) {
	t.Helper()
	if len(calls) == 0 || calls[0].Op != op {
		t.Fatalf("calls %v, want %s first", ops(calls), op)
	}
	if calls[0].Body["ReturnValuesOnConditionCheckFailure"] != "ALL_OLD" {
		t.Errorf("%s asked ReturnValuesOnConditionCheckFailure %v, want ALL_OLD", op, calls[0].Body["ReturnValuesOnConditionCheckFailure"])
	}
	if !strings.Contains(calls[0].Error, "ConditionalCheckFailedException") {
		t.Fatalf("%s answered %q, want ConditionalCheckFailedException", op, calls[0].Error)
	}
	if strings.Contains(calls[0].Error, `"Item"`) {
		t.Logf("the emulator returned the item with the refusal")
		if len(calls) != 1 {
			t.Errorf("calls %v after a refusal with the item, want none", ops(calls[1:]))
		}
		return
	}
	if len(calls) != 2 || calls[1].Op != "GetItem" || calls[1].Body["ConsistentRead"] != true {
		t.Errorf("calls after a refusal without the item = %v, want one GetItem with ConsistentRead", ops(calls[1:]))
	}
}

// A long run of throttled re-sends keeps the entry item bounded: the
// history is trimmed to its most recent transitions by an occasional
// extra write, and the count of dropped ones is kept.
func TestHistoryBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, LedgerTable)
	rec := &recorder{}
	s := e.store(t, prefix, rec, Options{})
	ctx := t.Context()
	cur := newEntry("throttled", t0)
	mustDo(t, s.Create(ctx, cur))
	rec.take()
	now := t0
	const rounds = 40 // 80 moves
	for i := range rounds {
		now = now.Add(time.Second)
		rel, err := cur.Defer(fmt.Sprintf("429 round %d", i), now.Add(time.Second), now)
		mustDo(t, err)
		mustDo(t, s.Update(ctx, cur, rel))
		now = now.Add(time.Second)
		acq, err := rel.Reacquire("worker-2", now, time.Minute)
		mustDo(t, err)
		mustDo(t, s.Update(ctx, rel, acq))
		cur = acq
	}
	updates, trims := 0, 0
	for _, c := range rec.take() {
		if c.Op != "UpdateItem" {
			t.Errorf("unexpected %s", c.Op)
			continue
		}
		if strings.HasPrefix(c.Body["UpdateExpression"].(string), "REMOVE") || c.Body["ConditionExpression"] != nil && strings.HasPrefix(c.Body["ConditionExpression"].(string), "size(") {
			trims++
		} else {
			updates++
		}
	}
	h, err := s.History(ctx, cur.Key)
	mustDo(t, err)
	raw := rawItem(t, e, s.tables.ledger, ledgerKey(cur.Key))
	dropped := int(nval(raw, attrHistoryDropped))
	t.Logf("%d moves: %d updates + %d trims; history keeps %d, dropped %d; item %d bytes", 2*rounds, updates, trims, len(h), dropped, itemSize(raw))
	if updates != 2*rounds || trims == 0 || trims > 2*rounds/(historyTrimAt-HistoryKeep)+1 {
		t.Errorf("%d updates and %d trims for %d moves", updates, trims, 2*rounds)
	}
	if len(h) < HistoryKeep || len(h) > historyTrimAt || len(h)+dropped != 2*rounds+1 {
		t.Fatalf("history has %d transitions and %d dropped, want %d…%d kept of %d", len(h), dropped, HistoryKeep, historyTrimAt, 2*rounds+1)
	}
	last := h[len(h)-1]
	if last.From != ledger.Released || last.To != ledger.Pending || last.Attempt != cur.Attempt {
		t.Errorf("last transition %+v, want released → pending attempt %d", last, cur.Attempt)
	}
	for i := 1; i < len(h); i++ {
		if h[i].From != h[i-1].To {
			t.Errorf("history[%d] from %s after a move to %s: a gap", i, h[i].From, h[i-1].To)
		}
	}
	got, err := s.Get(ctx, cur.Key)
	if err != nil || got.Attempt != rounds+1 {
		t.Errorf("Get after the trims = attempt %d, %v; want %d", got.Attempt, err, rounds+1)
	}
}

// A history reason is cut to HistoryReasonBytes at a rune boundary; the
// entry keeps the whole reason.
func TestHistoryReasonCut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.store(t, e.tables(t, LedgerTable), nil, Options{})
	ctx := t.Context()
	en := newEntry("long-reason", t0)
	mustDo(t, s.Create(ctx, en))
	reason := strings.Repeat("é", HistoryReasonBytes) // 2 bytes each
	failed, _ := en.Fail(reason, t0.Add(time.Second))
	mustDo(t, s.Update(ctx, en, failed))
	h, err := s.History(ctx, en.Key)
	mustDo(t, err)
	if got := h[len(h)-1].Reason; len(got) != HistoryReasonBytes || !strings.HasPrefix(reason, got) {
		t.Errorf("history reason has %d bytes, want the first %d of the reason", len(got), HistoryReasonBytes)
	}
	if got, _ := s.Get(ctx, en.Key); got.Reason != reason {
		t.Errorf("entry reason cut to %d bytes", len(got.Reason))
	}
}

// A terminal entry past its TTL is gone for the store, whether DynamoDB
// has deleted it yet or not: Get and History do not see it, Create writes
// over it. Entries that can still move never expire, whatever ExpiresAt.
func TestExpiredEntriesAreGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clock := &fixedClock{t: t0}
	s := e.store(t, e.tables(t, LedgerTable), nil, Options{Now: clock.now})
	ctx := t.Context()
	en := newEntry("ttl", t0)
	mustDo(t, s.Create(ctx, en))
	done, _ := en.Confirm("remote-1", t0.Add(time.Second))
	mustDo(t, s.Update(ctx, en, done))
	raw := rawItem(t, e, s.tables.ledger, ledgerKey(en.Key))
	if got, want := nval(raw, TTLAttribute), done.ExpiresAt.Unix()+1; got != want {
		t.Errorf("ttl = %d, want %d (ExpiresAt rounded up)", got, want)
	}
	if _, ok := raw[attrOpenShard]; ok {
		t.Error("a confirmed entry keeps its open index attributes")
	}
	held := newEntry("held-old", t0)
	held.ExpiresAt = t0.Add(time.Second) // a stale value: held entries never expire
	mustDo(t, s.Create(ctx, held))
	h, _ := held.Hold("manual", "", t0.Add(time.Second))
	mustDo(t, s.Update(ctx, held, h))

	clock.add(ledger.TerminalTTL + 5*time.Second)
	if _, err := s.Get(ctx, en.Key); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("Get(expired) = %v, want ledger.ErrNotFound", err)
	}
	if hist, err := s.History(ctx, en.Key); err != nil || len(hist) != 0 {
		t.Errorf("History(expired) = %v, %v; want none", hist, err)
	}
	if _, err := s.Get(ctx, held.Key); err != nil {
		t.Errorf("Get(held, ExpiresAt passed) = %v, want the entry", err)
	}
	again := newEntry("ttl", clock.now())
	mustDo(t, s.Create(ctx, again))
	got, err := s.Get(ctx, en.Key)
	if err != nil || got.Handle != again.Handle || got.State != ledger.Pending {
		t.Errorf("after Create over the expired entry: %s %s, %v; want the new pending entry", got.State, got.Handle, err)
	}
	if hist, _ := s.History(ctx, en.Key); len(hist) != 1 {
		t.Errorf("new entry's history = %+v, want its first write only", hist)
	}
	if err := s.Create(ctx, newEntry("ttl", clock.now())); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("Create over the live entry = %v, want ledger.ErrConflict", err)
	}
}

// Held lists held entries, least recently updated first, and only them.
func TestHeld(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.store(t, e.tables(t, LedgerTable), nil, Options{})
	ctx := t.Context()
	var held []ledger.Entry
	for i := range 3 {
		en := newEntry(fmt.Sprintf("held-%d", i), t0)
		mustDo(t, s.Create(ctx, en))
		h, _ := en.Hold("dedup", "", t0.Add(time.Duration(10-i)*time.Minute))
		mustDo(t, s.Update(ctx, en, h))
		held = append(held, h)
	}
	// held-2 (updated at +8m), held-1 (+9m), held-0 (+10m); a retoken
	// moves held-2 last; a release drops held-1.
	re, _ := held[2].Retoken("token-2", t0.Add(time.Hour))
	mustDo(t, s.Update(ctx, held[2], re))
	rel, _ := held[1].Release("approved", t0.Add(time.Hour))
	mustDo(t, s.Update(ctx, held[1], rel))
	list, err := s.Held(ctx, 0)
	mustDo(t, err)
	var keys []ledger.Key
	for _, x := range list {
		keys = append(keys, x.Key)
	}
	if want := []ledger.Key{held[0].Key, re.Key}; fmt.Sprint(keys) != fmt.Sprint(want) {
		t.Errorf("Held = %v, want %v", keys, want)
	}
	if one, _ := s.Held(ctx, 1); len(one) != 1 || one[0].Key != held[0].Key {
		t.Errorf("Held(limit 1) = %v", one)
	}
}

// staleIndex answers index Queries with one more entry than the index
// holds: what an eventually consistent index shows just after a write. The
// entry goes to the Query of its partition (shardAttr's value).
type staleIndex struct {
	API
	index, shardAttr string
	extra            item
}

func (s *staleIndex) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := s.API.Query(ctx, in, optFns...)
	if err != nil || deref(in.IndexName) != s.index {
		return out, err
	}
	if v, ok := in.ExpressionAttributeValues[":v0"].(*types.AttributeValueMemberS); ok && v.Value == sval(s.extra, s.shardAttr) {
		out.Items = append([]item{s.extra}, out.Items...)
	}
	return out, nil
}

// An index entry the table no longer backs (the entry closed, the target
// moved, but the index has not caught up) is not listed.
func TestStaleIndexEntriesDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, LedgerTable, PostsTable)
	base := e.store(t, prefix, nil, Options{})
	ctx := t.Context()

	closed := newEntry("closed", t0)
	mustDo(t, base.Create(ctx, closed))
	ci := entryItemOf(closed) // its index entry while it was open
	done, _ := closed.Confirm("r", t0.Add(time.Second))
	mustDo(t, base.Update(ctx, closed, done))
	reopened := newEntry("reopened", t0)
	mustDo(t, base.Create(ctx, reopened))
	ri := entryItemOf(reopened)
	rel, _ := reopened.Release("429", t0.Add(time.Second))
	mustDo(t, base.Update(ctx, reopened, rel))
	acq, _ := rel.Reacquire("w", t0.Add(time.Hour), time.Minute) // open again, since +1h
	mustDo(t, base.Update(ctx, rel, acq))
	live := newEntry("live", t0.Add(time.Minute))
	mustDo(t, base.Create(ctx, live))

	for _, stale := range []entryItem{ci, ri} {
		extra := item{attrKey: str(stale.Key), attrOpenShard: str(stale.OpenShard), attrOpenAt: str(stale.OpenAt)}
		s := &Store{db: &staleIndex{API: base.db, index: OpenIndex, shardAttr: attrOpenShard, extra: extra}, now: time.Now, tables: base.tables}
		got, err := s.Open(ctx, t0.Add(30*time.Minute), 10)
		mustDo(t, err)
		if len(got) != 1 || got[0].Key != live.Key {
			t.Errorf("Open with a stale index entry for %s = %v, want only %s", stale.Key, got, live.Key)
		}
	}

	p := post.Post{ID: "p-stale", CreatedAt: t0, Targets: []post.Target{
		{Account: "a", Slot: t0, Status: post.Scheduled, UpdatedAt: t0},
		{Account: "b", Slot: t0.Add(time.Second), Status: post.Scheduled, UpdatedAt: t0},
	}}
	mustDo(t, base.CreatePost(ctx, p))
	ta := targetItemOf(p.ID, 0, p.Targets[0], "")
	_, err := base.UpdateTarget(ctx, p.ID, "a", post.TargetUpdate{Status: post.Triggered, At: t0})
	mustDo(t, err)
	extra := item{attrPost: str(ta.Post), attrItem: str(ta.Item), attrSt: str(ta.St), attrStAt: str(ta.StAt)}
	s := &Store{db: &staleIndex{API: base.db, index: StatusIndex, shardAttr: attrSt, extra: extra}, now: time.Now, tables: base.tables}
	refs, err := s.Due(ctx, t0.Add(time.Hour), 10)
	mustDo(t, err)
	if len(refs) != 1 || refs[0].Account != "b" {
		t.Errorf("Due with a stale index entry for a triggered target = %v, want only b", refs)
	}
}

// The ledger's item layout: every ledger.Entry field has an attribute.
func TestEntryAttributes(t *testing.T) {
	en := newEntry("attrs", t0)
	it, err := attributevalue.MarshalMap(entryItemOf(en))
	mustDo(t, err)
	for _, a := range []string{attrKey, attrState, attrAttempt, attrOpenShard, attrOpenAt} {
		if _, ok := it[a]; !ok {
			t.Errorf("pending entry item lacks %s", a)
		}
	}
	if want := reflect.TypeFor[ledger.Entry]().NumField() - 1 + 5; len(entryAttrs) != want {
		t.Errorf("entryAttrs = %d attributes (%v), want every ledger.Entry field but the key + 5 index/TTL attributes (%d)", len(entryAttrs), entryAttrs, want)
	}
}
