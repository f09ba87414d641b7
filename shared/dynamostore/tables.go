package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Table name suffixes (after Options.Prefix).
const (
	LedgerTable      = "ledger"
	PostsTable       = "posts"
	WorkspaceTable   = "workspace"
	CredentialsTable = "credentials"
)

// Index names.
const (
	// OpenIndex (ledger): pending and unknown entries only, by open_since.
	OpenIndex = "open"
	// HeldIndex (ledger): held entries only, by updated_at.
	HeldIndex = "held"
	// StatusIndex (posts): targets by status, each status by the time its
	// sweeper compares (slot, updated_at or next_try).
	StatusIndex = "status"
)

// Shard counts of the sparse indexes' partition keys. Changing them needs
// a migration of the stored shard attributes; every reader queries
// shards 0 … n-1.
const (
	// OpenShards partitions OpenIndex and HeldIndex ("open#0" … "open#3").
	OpenShards = 4
	// StatusShards partitions StatusIndex per status ("scheduled#0" …).
	StatusShards = 4
)

// TTLAttribute is the time-to-live attribute of the ledger and the
// workspace table: epoch seconds, set on terminal ledger entries only
// (ledger.Entry.ExpiresAt rounded up) and on idempotency records (their
// creation + publishing.IdempotencyKeep); no other item carries it.
const TTLAttribute = "ttl"

// Tables returns the CreateTable inputs of the store's four tables, named
// with prefix, on-demand billing. They are the single definition of the
// layout (the package comment explains it): CreateTables creates them and
// a CloudFormation template can be checked against them.
func Tables(prefix string) []dynamodb.CreateTableInput {
	names := namesFor(prefix)
	s := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	key := func(hash, rng string) []types.KeySchemaElement {
		k := []types.KeySchemaElement{{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash}}
		if rng != "" {
			k = append(k, types.KeySchemaElement{AttributeName: aws.String(rng), KeyType: types.KeyTypeRange})
		}
		return k
	}
	keysOnly := &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}
	return []dynamodb.CreateTableInput{
		{
			TableName:            aws.String(names.ledger),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{s(attrKey), s(attrOpenShard), s(attrOpenAt), s(attrHeldShard), s(attrHeldAt)},
			KeySchema:            key(attrKey, ""),
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
				{IndexName: aws.String(OpenIndex), KeySchema: key(attrOpenShard, attrOpenAt), Projection: keysOnly},
				{IndexName: aws.String(HeldIndex), KeySchema: key(attrHeldShard, attrHeldAt), Projection: keysOnly},
			},
		},
		{
			TableName:            aws.String(names.posts),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{s(attrPost), s(attrItem), s(attrSt), s(attrStAt)},
			KeySchema:            key(attrPost, attrItem),
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
				{IndexName: aws.String(StatusIndex), KeySchema: key(attrSt, attrStAt), Projection: keysOnly},
			},
		},
		{
			TableName:            aws.String(names.workspace),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{s(attrPK), s(attrSK)},
			KeySchema:            key(attrPK, attrSK),
		},
		{
			TableName:            aws.String(names.credentials),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{s(attrAccount)},
			KeySchema:            key(attrAccount, ""),
		},
	}
}

// TimeToLive is the UpdateTimeToLive input that lets DynamoDB delete
// terminal ledger entries after their TTL (free, lazily: typically within
// two days; reads ignore expired entries meanwhile). CreateTables does not
// call it: it is a separate, one-time call (dynalite has no
// UpdateTimeToLive).
func TimeToLive(prefix string) dynamodb.UpdateTimeToLiveInput {
	return dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(namesFor(prefix).ledger),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(TTLAttribute), Enabled: aws.Bool(true),
		},
	}
}

// TimeToLives are the UpdateTimeToLive inputs of every table with a TTL:
// the ledger's (TimeToLive) and the workspace table's, which drops
// idempotency records publishing.IdempotencyKeep after they were written
// (reads ignore an expired record meanwhile). EnableTTL makes these
// calls; a template must declare the same.
func TimeToLives(prefix string) []dynamodb.UpdateTimeToLiveInput {
	return []dynamodb.UpdateTimeToLiveInput{
		TimeToLive(prefix),
		{
			TableName: aws.String(namesFor(prefix).workspace),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{
				AttributeName: aws.String(TTLAttribute), Enabled: aws.Bool(true),
			},
		},
	}
}

// TablesAPI is what CreateTables and EnableTTL call; *dynamodb.Client
// implements it.
type TablesAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

var _ TablesAPI = (*dynamodb.Client)(nil)

// CreateTables creates the tables Tables(prefix) describes, or those of
// names (LedgerTable …) only, and waits until they and their indexes are
// active. A table that exists already is left as it is (it is not
// compared with the definition). It does not enable the TTL (EnableTTL).
func CreateTables(ctx context.Context, client TablesAPI, prefix string, names ...string) error {
	var want []dynamodb.CreateTableInput
	for _, in := range Tables(prefix) {
		if len(names) == 0 || slices.Contains(names, aws.ToString(in.TableName)[len(prefix):]) {
			want = append(want, in)
		}
	}
	if len(want) == 0 {
		return fmt.Errorf("create tables: none of %v is a table of the store", names)
	}
	for _, in := range want {
		if _, err := client.CreateTable(ctx, &in); err != nil {
			var inUse *types.ResourceInUseException
			if !errors.As(err, &inUse) {
				return fmt.Errorf("create table %s: %w", aws.ToString(in.TableName), err)
			}
		}
	}
	for _, in := range want {
		if err := waitActive(ctx, client, aws.ToString(in.TableName)); err != nil {
			return err
		}
	}
	return nil
}

// waitActive polls DescribeTable until the table and its indexes are
// ACTIVE: every 50 ms at first (emulators take half a second), backing
// off to 2 s (DynamoDB takes seconds).
func waitActive(ctx context.Context, client TablesAPI, name string) error {
	delay := 50 * time.Millisecond
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &name})
		if err != nil {
			var nf *types.ResourceNotFoundException
			if !errors.As(err, &nf) {
				return fmt.Errorf("wait for table %s: %w", name, err)
			}
		} else if active(out.Table) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for table %s to become active: %w", name, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

func active(t *types.TableDescription) bool {
	if t == nil || t.TableStatus != types.TableStatusActive {
		return false
	}
	for _, g := range t.GlobalSecondaryIndexes {
		if g.IndexStatus != types.IndexStatusActive {
			return false
		}
	}
	return true
}

// EnableTTL enables the TTLs of TimeToLives(prefix). DynamoDB refuses
// one while it is already enabled; that is not an error here.
func EnableTTL(ctx context.Context, client TablesAPI, prefix string) error {
	for _, in := range TimeToLives(prefix) {
		if _, err := client.UpdateTimeToLive(ctx, &in); err != nil {
			var ve interface{ ErrorMessage() string }
			if errors.As(err, &ve) && strings.Contains(strings.ToLower(ve.ErrorMessage()), "already enabled") {
				continue
			}
			return fmt.Errorf("enable TTL on %s: %w", aws.ToString(in.TableName), err)
		}
	}
	return nil
}
