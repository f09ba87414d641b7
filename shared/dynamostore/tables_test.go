package dynamostore

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
)

// The table definitions: four tables, on-demand, key-only sparse indexes
// whose key attributes are defined.
func TestTables(t *testing.T) {
	tables := Tables("oncepost-prod-")
	want := map[string][]string{
		"oncepost-prod-ledger":      {OpenIndex, HeldIndex},
		"oncepost-prod-posts":       {StatusIndex},
		"oncepost-prod-workspace":   nil,
		"oncepost-prod-credentials": nil,
	}
	if len(tables) != len(want) {
		t.Fatalf("%d tables, want %d", len(tables), len(want))
	}
	for _, in := range tables {
		name := aws.ToString(in.TableName)
		indexes, ok := want[name]
		if !ok {
			t.Errorf("unexpected table %s", name)
			continue
		}
		if in.BillingMode != types.BillingModePayPerRequest {
			t.Errorf("%s: billing %s, want on-demand", name, in.BillingMode)
		}
		defined := map[string]bool{}
		for _, d := range in.AttributeDefinitions {
			defined[aws.ToString(d.AttributeName)] = true
		}
		keys := map[string]bool{}
		for _, k := range in.KeySchema {
			keys[aws.ToString(k.AttributeName)] = true
		}
		var got []string
		for _, g := range in.GlobalSecondaryIndexes {
			got = append(got, aws.ToString(g.IndexName))
			if g.Projection.ProjectionType != types.ProjectionTypeKeysOnly {
				t.Errorf("%s.%s projects %s, want KEYS_ONLY", name, aws.ToString(g.IndexName), g.Projection.ProjectionType)
			}
			for _, k := range g.KeySchema {
				keys[aws.ToString(k.AttributeName)] = true
			}
		}
		if !reflect.DeepEqual(got, indexes) {
			t.Errorf("%s: indexes %v, want %v", name, got, indexes)
		}
		if !reflect.DeepEqual(keys, defined) {
			t.Errorf("%s: key attributes %v, defined %v", name, keys, defined)
		}
	}
	ttl := TimeToLive("oncepost-prod-")
	if aws.ToString(ttl.TableName) != "oncepost-prod-ledger" || aws.ToString(ttl.TimeToLiveSpecification.AttributeName) != TTLAttribute {
		t.Errorf("TimeToLive = %+v", ttl)
	}
	if _, err := New(&dynamodb.Client{}, Options{Prefix: "bad prefix/"}); err == nil {
		t.Error("New accepted a prefix DynamoDB refuses")
	}
}

// The store's client interface has no Scan and no transaction: neither
// can be called.
func TestAPIHasNoScanNorTransactions(t *testing.T) {
	api := reflect.TypeFor[API]()
	for i := range api.NumMethod() {
		if m := api.Method(i).Name; strings.Contains(m, "Scan") || strings.HasPrefix(m, "Transact") || strings.HasPrefix(m, "ExecuteStatement") {
			t.Errorf("API has %s", m)
		}
	}
}

// CreateTables is idempotent; EnableTTL is a separate call, which dynalite
// does not know.
func TestCreateTablesAndTTL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t)
	if err := CreateTables(t.Context(), e.admin, prefix); err != nil {
		t.Errorf("CreateTables again = %v, want nil", err)
	}
	err := EnableTTL(t.Context(), e.admin, prefix)
	if err != nil && strings.Contains(err.Error(), "UnknownOperation") {
		t.Logf("dynalite has no UpdateTimeToLive: %v", err)
	} else if err != nil {
		t.Errorf("EnableTTL = %v", err)
	}
	if err := CreateTables(t.Context(), e.admin, prefix, "nope"); err == nil {
		t.Error("CreateTables of an unknown table = nil error")
	}
}

// canned is a DynamoDB endpoint with one answer per operation, for what
// dynalite does not do: a refusal that carries the stored item.
type canned struct {
	t       *testing.T
	answers map[string]string // operation → JSON body of a 400 answer
	ops     []string
}

func (c *canned) Do(req *http.Request) (*http.Response, error) {
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	c.ops = append(c.ops, op)
	body, ok := c.answers[op]
	if !ok {
		c.t.Errorf("unexpected %s", op)
		body = `{"__type":"com.amazon.coral.service#UnknownOperationException"}`
	}
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
	}
	return &http.Response{StatusCode: 400, Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}},
		Body: io.NopCloser(bytes.NewReader([]byte(body))), Request: req}, nil
}

func refusal(t *testing.T, it map[string]any) string {
	b, err := json.Marshal(map[string]any{
		"__type":  "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",
		"message": "The conditional request failed", "Item": it,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// With ReturnValuesOnConditionCheckFailure honoured (DynamoDB since
// 2023), a refused write is explained from the item that came back with
// the refusal: no extra read.
func TestConditionFailureUsesReturnedItem(t *testing.T) {
	c := &canned{t: t, answers: map[string]string{}}
	client := dynamodb.NewFromConfig(aws.Config{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""),
		BaseEndpoint: aws.String("http://dynamodb.invalid"), HTTPClient: c, RetryMaxAttempts: 1,
	})
	s, err := New(client, Options{Prefix: "t-"})
	mustDo(t, err)
	ctx := t.Context()
	en := newEntry("returned", t0)

	c.answers["UpdateItem"] = refusal(t, map[string]any{"key": map[string]string{"S": string(en.Key)},
		"state": map[string]string{"S": "confirmed"}, "attempt": map[string]string{"N": "1"}})
	next, _ := en.MarkUnknown("timeout", t0)
	err = s.Update(ctx, en, next)
	if !errors.Is(err, ledger.ErrConflict) || !strings.Contains(err.Error(), "stored confirmed attempt 1") {
		t.Errorf("Update = %v, want ledger.ErrConflict naming the returned state", err)
	}

	c.answers["UpdateItem"] = refusal(t, map[string]any{"post": map[string]string{"S": "p"}, "item": map[string]string{"S": "target#a"},
		"account": map[string]string{"S": "a"}, "status": map[string]string{"S": "cancelled"}, "slot": map[string]string{"S": encTime(t0)}})
	_, err = s.UpdateTarget(ctx, "p", "a", post.TargetUpdate{Status: post.Published, At: t0})
	if !errors.Is(err, post.ErrConflict) || !strings.Contains(err.Error(), "cancelled → published") {
		t.Errorf("UpdateTarget = %v, want post.ErrConflict from Apply on the returned target", err)
	}

	c.answers["PutItem"] = refusal(t, map[string]any{"key": map[string]string{"S": string(en.Key)},
		"state": map[string]string{"S": "held"}, "attempt": map[string]string{"N": "3"}})
	if err := s.Create(ctx, en); !errors.Is(err, ledger.ErrConflict) || !strings.Contains(err.Error(), "held attempt 3") {
		t.Errorf("Create = %v, want ledger.ErrConflict naming the stored entry", err)
	}
	if got := strings.Join(c.ops, " "); got != "UpdateItem UpdateItem PutItem" {
		t.Errorf("calls = %s, want the three writes and no read", got)
	}
}
