// Package streamtest plays a DynamoDB table's change stream in tests,
// where the emulator (dynalite) has none: a Recorder snapshots tables
// before a store call and after it, and turns every item that changed
// into the stream record DynamoDB Streams would have written
// (NEW_AND_OLD_IMAGES), as Lambda hands it to a function
// (events.DynamoDBEventRecord).
//
// What it cannot play: several changes to one item within one recorded
// call come out as one record (the stream has one per change), and the
// stream's own delivery (shards, retries, the 24-hour retention) is
// AWS's. It reads with Scan, which the store itself never calls: keep
// the tables small.
package streamtest

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// API is the part of the DynamoDB client a Recorder calls;
// *dynamodb.Client implements it.
type API interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Recorder records the changes to some tables.
type Recorder struct {
	db     API
	tables []string
	// Now stamps records' ApproximateCreationDateTime; default time.Now.
	Now func() time.Time

	mu   sync.Mutex
	keys map[string][]string // table → key attribute names
	snap map[string]map[string]map[string]types.AttributeValue
	seq  int
}

// New returns a Recorder of the named tables; Start takes the first
// snapshot.
func New(db API, tables ...string) *Recorder {
	return &Recorder{db: db, tables: tables, keys: map[string][]string{}}
}

// Start snapshots the tables: Changes reports what changed since.
func (r *Recorder) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	snap, err := r.read(ctx)
	if err != nil {
		return err
	}
	r.snap = snap
	return nil
}

// Changes returns a record for every item that was added, changed or
// removed since the last Start or Changes (table by table in the order
// given to New, items by key), and snapshots again.
func (r *Recorder) Changes(ctx context.Context) ([]events.DynamoDBEventRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.snap
	if now == nil {
		return nil, fmt.Errorf("streamtest: Changes before Start")
	}
	next, err := r.read(ctx)
	if err != nil {
		return nil, err
	}
	at := time.Now
	if r.Now != nil {
		at = r.Now
	}
	var out []events.DynamoDBEventRecord
	for _, table := range r.tables {
		before, after := now[table], next[table]
		ids := slices.Sorted(maps.Keys(before))
		for id := range after {
			if _, ok := before[id]; !ok {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		for _, id := range ids {
			old, img := before[id], after[id]
			if reflect.DeepEqual(ToStreamImage(old), ToStreamImage(img)) {
				continue
			}
			r.seq++
			out = append(out, r.record(table, old, img, at()))
		}
	}
	r.snap = next
	return out, nil
}

// Record makes the record of one change of table's item from old to img
// (nil for absent), numbered after the Recorder's others.
func (r *Recorder) Record(ctx context.Context, table string, old, img map[string]types.AttributeValue) (events.DynamoDBEventRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.keyNames(ctx, table); err != nil {
		return events.DynamoDBEventRecord{}, err
	}
	r.seq++
	at := time.Now
	if r.Now != nil {
		at = r.Now
	}
	return r.record(table, old, img, at()), nil
}

// record builds one record; r.mu is held and the table's keys known.
func (r *Recorder) record(table string, old, img map[string]types.AttributeValue, at time.Time) events.DynamoDBEventRecord {
	name := string(events.DynamoDBOperationTypeModify)
	switch {
	case old == nil:
		name = string(events.DynamoDBOperationTypeInsert)
	case img == nil:
		name = string(events.DynamoDBOperationTypeRemove)
	}
	src := img
	if src == nil {
		src = old
	}
	keys := map[string]types.AttributeValue{}
	for _, k := range r.keys[table] {
		keys[k] = src[k]
	}
	seq := fmt.Sprintf("%021d", r.seq)
	return events.DynamoDBEventRecord{
		AWSRegion: "us-east-1", EventID: "rec-" + strconv.Itoa(r.seq), EventName: name, EventSource: "aws:dynamodb", EventVersion: "1.1",
		EventSourceArn: "arn:aws:dynamodb:us-east-1:000000000000:table/" + table + "/stream/2026-01-01T00:00:00.000",
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: at.Truncate(time.Second)},
			Keys:                        ToStreamImage(keys), OldImage: ToStreamImage(old), NewImage: ToStreamImage(img),
			SequenceNumber: seq, SizeBytes: 100, StreamViewType: string(types.StreamViewTypeNewAndOldImages),
		},
	}
}

// read scans every table (consistent reads), items by their key.
func (r *Recorder) read(ctx context.Context) (map[string]map[string]map[string]types.AttributeValue, error) {
	out := map[string]map[string]map[string]types.AttributeValue{}
	for _, table := range r.tables {
		keys, err := r.keyNames(ctx, table)
		if err != nil {
			return nil, err
		}
		items := map[string]map[string]types.AttributeValue{}
		in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
		for {
			res, err := r.db.Scan(ctx, in)
			if err != nil {
				return nil, fmt.Errorf("streamtest: scan %s: %w", table, err)
			}
			for _, it := range res.Items {
				var id []string
				for _, k := range keys {
					if s, ok := it[k].(*types.AttributeValueMemberS); ok {
						id = append(id, s.Value)
					}
				}
				items[strings.Join(id, "\x00")] = it
			}
			if len(res.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = res.LastEvaluatedKey
		}
		out[table] = items
	}
	return out, nil
}

// keyNames are the table's key attributes (hash, then range), read once.
func (r *Recorder) keyNames(ctx context.Context, table string) ([]string, error) {
	if k, ok := r.keys[table]; ok {
		return k, nil
	}
	d, err := r.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, fmt.Errorf("streamtest: describe %s: %w", table, err)
	}
	var names []string
	for _, k := range d.Table.KeySchema {
		if k.KeyType == types.KeyTypeHash {
			names = append([]string{aws.ToString(k.AttributeName)}, names...)
		} else {
			names = append(names, aws.ToString(k.AttributeName))
		}
	}
	r.keys[table] = names
	return names, nil
}

// ToStreamImage converts an SDK item into a stream record's image, as
// Lambda would hand it over (nil for nil): the inverse of
// dynamostore.StreamImage.
func ToStreamImage(it map[string]types.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if it == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(it))
	for k, v := range it {
		out[k] = toStream(v)
	}
	return out
}

func toStream(v types.AttributeValue) events.DynamoDBAttributeValue {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(x.Value)
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(x.Value)
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(x.Value)
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(x.Value)
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(x.Value)
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(x.Value)
	case *types.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(x.Value)
	case *types.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(x.Value))
		for i, e := range x.Value {
			l[i] = toStream(e)
		}
		return events.NewListAttribute(l)
	case *types.AttributeValueMemberM:
		return events.NewMapAttribute(ToStreamImage(x.Value))
	}
	panic(fmt.Sprintf("streamtest: attribute value of type %T", v))
}
