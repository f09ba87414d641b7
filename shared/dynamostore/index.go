package dynamostore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// item is one DynamoDB item.
type item = map[string]types.AttributeValue

// merged reads several partitions of one index (its shards, and for the
// status index several statuses) as one list in sort-key order: a k-way
// merge of Query streams, each already sorted by the index's sort key.
// Pages are read as they are needed, so a caller that stops after limit
// results reads about limit index entries per stream, never the index.
type merged struct {
	db      API
	sortKey string
	streams []*stream
}

// stream is one Query's pages.
type stream struct {
	in   dynamodb.QueryInput
	buf  []item
	done bool
}

// pageLimit is the Query Limit per page: the caller's limit (a few more
// when verification drops some), at most 1,000, or unset (1 MB pages).
func pageLimit(limit int) *int32 {
	if limit <= 0 {
		return nil
	}
	return ptr(int32(min(limit, 1000)))
}

// mergeQueries starts the streams and reads their first pages in parallel.
func (s *Store) mergeQueries(ctx context.Context, sortKey string, queries []dynamodb.QueryInput) (*merged, error) {
	m := &merged{db: s.db, sortKey: sortKey}
	for _, q := range queries {
		m.streams = append(m.streams, &stream{in: q})
	}
	errs := make([]error, len(m.streams))
	var wg sync.WaitGroup
	for i, st := range m.streams {
		wg.Go(func() { errs[i] = st.fill(ctx, m.db) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return m, nil
}

// fill reads the stream's next page if its buffer is empty.
func (st *stream) fill(ctx context.Context, db API) error {
	for len(st.buf) == 0 && !st.done {
		out, err := db.Query(ctx, &st.in)
		if err != nil {
			return fmt.Errorf("query index %s of %s: %w", deref(st.in.IndexName), deref(st.in.TableName), err)
		}
		st.buf = out.Items
		st.in.ExclusiveStartKey = out.LastEvaluatedKey
		st.done = len(out.LastEvaluatedKey) == 0
	}
	return nil
}

// next returns the index entry with the smallest sort key over all
// streams, and false when every stream is exhausted.
func (m *merged) next(ctx context.Context) (item, bool, error) {
	best := -1
	for i, st := range m.streams {
		if err := st.fill(ctx, m.db); err != nil {
			return nil, false, err
		}
		if len(st.buf) == 0 {
			continue
		}
		if best < 0 || sval(st.buf[0], m.sortKey) < sval(m.streams[best].buf[0], m.sortKey) {
			best = i
		}
	}
	if best < 0 {
		return nil, false, nil
	}
	it := m.streams[best].buf[0]
	m.streams[best].buf = m.streams[best].buf[1:]
	return it, true, nil
}

// verifyBatch is how many index entries are checked against the table in
// one BatchGetItem (each may need two items: a target and its post).
const verifyBatch = 50

// collect pulls index entries in order and keeps what verify keeps, until
// limit results (≤ 0: all). verify reads the entries' items with strongly
// consistent reads and drops those the index no longer describes (GSIs are
// eventually consistent) or that are not visible (an unfinished post).
func collect[T any](ctx context.Context, m *merged, limit int, verify func(ctx context.Context, batch []item) ([]T, error)) ([]T, error) {
	var out []T
	for limit <= 0 || len(out) < limit {
		want := verifyBatch
		if limit > 0 {
			want = min(want, limit-len(out))
		}
		var batch []item
		for len(batch) < want {
			it, ok, err := m.next(ctx)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			batch = append(batch, it)
		}
		if len(batch) == 0 {
			break
		}
		kept, err := verify(ctx, batch)
		if err != nil {
			return nil, err
		}
		out = append(out, kept...)
		if len(batch) < want {
			break
		}
	}
	return out, nil
}

// batchGet reads items by key with strongly consistent reads, 100 keys a
// request, until DynamoDB has answered for every key (unprocessed keys are
// asked again after a short backoff). keyOf names an item for the result
// map; duplicate keys are asked once.
func (s *Store) batchGet(ctx context.Context, table string, keys []item, keyOf func(item) string) (map[string]item, error) {
	return s.batchGetConsistency(ctx, table, keys, keyOf, true)
}

// batchGetConsistency is batchGet with eventually consistent reads when
// consistent is false: half the read units, and what was written in the
// last second or so may not be seen yet.
func (s *Store) batchGetConsistency(ctx context.Context, table string, keys []item, keyOf func(item) string, consistent bool) (map[string]item, error) {
	out := map[string]item{}
	seen := map[string]bool{}
	var todo []item
	for _, k := range keys {
		if id := keyOf(k); !seen[id] {
			seen[id] = true
			todo = append(todo, k)
		}
	}
	backoff := 20 * time.Millisecond
	for len(todo) > 0 {
		n := min(len(todo), 100)
		req := map[string]types.KeysAndAttributes{table: {Keys: todo[:n], ConsistentRead: ptr(consistent)}}
		todo = todo[n:]
		for len(req) > 0 {
			res, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, fmt.Errorf("batch get from %s: %w", table, err)
			}
			for _, it := range res.Responses[table] {
				out[keyOf(it)] = it
			}
			req = res.UnprocessedKeys
			if len(req) > 0 {
				select {
				case <-ctx.Done():
					return nil, fmt.Errorf("batch get from %s: %w", table, ctx.Err())
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, time.Second)
			}
		}
	}
	return out, nil
}

// countQueries runs Select COUNT queries in parallel (at most 8 at a
// time), each paged to its end, and returns their counts in order.
func (s *Store) countQueries(ctx context.Context, queries []dynamodb.QueryInput) ([]int, error) {
	counts := make([]int, len(queries))
	errs := make([]error, len(queries))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range queries {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			q := queries[i]
			q.Select = types.SelectCount
			for {
				out, err := s.db.Query(ctx, &q)
				if err != nil {
					errs[i] = fmt.Errorf("count in index %s of %s: %w", deref(q.IndexName), deref(q.TableName), err)
					return
				}
				counts[i] += int(out.Count)
				if len(out.LastEvaluatedKey) == 0 {
					return
				}
				q.ExclusiveStartKey = out.LastEvaluatedKey
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return counts, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
