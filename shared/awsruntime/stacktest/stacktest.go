// Package stacktest is the AWS runtime's stack for tests, on one machine:
// dynalite with oncepost's tables, fauxqs with the publish queue and its
// dead-letter queue, a sandbox platform, the environment a function built
// by the Makefile runs with under the Lambda Runtime Interface Emulator,
// a stand-in for EventBridge Scheduler's schedule writes (Schedules), and
// a proxy in front of each emulator that counts the AWS API calls
// made through it, by operation, whoever makes them (a function's process,
// the test's event source mapping, the test itself).
package stacktest

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"oncepost/shared/dynamostore"
	"oncepost/shared/emulatortest"
	"oncepost/shared/platform"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/s3media"
	"oncepost/shared/sqsqueue"
)

// Prefix is the tables' name prefix.
const Prefix = "stack-"

// MediaBucket is the attachments' bucket, in fauxqs's S3.
const MediaBucket = "stack-media"

// MaxReceives is the queue's redrive maxReceiveCount and the functions'
// ONCEPOST_MAX_RECEIVES.
const MaxReceives = 5

// StateMachineARN is the confirm state machine the functions are told
// of; no Step Functions emulator runs here, so its endpoint is a counting
// proxy to nowhere: a call to it is counted and fails.
const StateMachineARN = "arn:aws:states:us-east-1:000000000000:stateMachine:oncepost-confirm"

// Stack is one test's AWS stack.
type Stack struct {
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	Store    *dynamostore.Store
	Queue    *sqsqueue.Queue
	// QueueURL, QueueARN and DeadLetterURL are the publish queue's.
	QueueURL, QueueARN, DeadLetterURL string
	Key                               dynamostore.StaticKey
	Sandbox                           *sandbox.Server
	// Media is the attachments' store (fauxqs's S3).
	Media *s3media.Store
	// Schedules is the stand-in for EventBridge Scheduler.
	Schedules *Schedules
	// Calls counts the calls made through the proxies, by
	// "<service>.<operation>" (dynamodb.PutItem, sqs.SendMessageBatch,
	// states.StartExecution; S3's by method and path).
	Calls *Counter
	// endpoints of the proxies.
	ddbURL, sqsURL, s3URL, sfnURL, schedulerURL string
}

// New starts the stack for t; everything stops when t ends.
func New(t testing.TB) *Stack {
	t.Helper()
	ctx := context.Background()
	s := &Stack{Calls: &Counter{counts: map[string]int{}}}
	s.ddbURL = s.Calls.proxy(t, "dynamodb", emulatortest.Dynalite(t))
	fauxqs := emulatortest.Fauxqs(t)
	s.sqsURL = s.Calls.proxy(t, "sqs", fauxqs)
	s.s3URL = s.Calls.proxy(t, "s3", fauxqs)
	s.sfnURL = s.Calls.proxy(t, "states", "http://127.0.0.1:1")
	s.Schedules = &Schedules{}
	s.schedulerURL = s.Calls.proxy(t, "scheduler", s.Schedules.start(t))
	s.DynamoDB = dynamodb.NewFromConfig(emulatortest.AWSConfig(t, s.ddbURL))
	s.SQS = sqs.NewFromConfig(emulatortest.AWSConfig(t, s.sqsURL))
	if err := dynamostore.CreateTables(ctx, s.DynamoDB, Prefix); err != nil {
		t.Fatal(err)
	}
	s.Key = dynamostore.NewStaticKey()
	var err error
	s.Store, err = dynamostore.New(s.DynamoDB, dynamostore.Options{Prefix: Prefix, Keys: s.Key})
	if err != nil {
		t.Fatal(err)
	}
	var deadARN string
	s.DeadLetterURL, deadARN = createQueue(t, s.SQS, "publish-dlq", nil)
	s.QueueURL, s.QueueARN = createQueue(t, s.SQS, "publish", map[string]string{
		"VisibilityTimeout": "10",
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, deadARN, MaxReceives),
	})
	s.Queue, err = sqsqueue.New(s.SQS, s.QueueURL, s.DeadLetterURL, sqsqueue.Options{MaxReceives: MaxReceives})
	if err != nil {
		t.Fatal(err)
	}
	// fauxqs serves S3 on the same endpoint, addressed by path.
	s3client := s3.NewFromConfig(emulatortest.AWSConfig(t, s.s3URL), func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := s3client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(MediaBucket)}); err != nil {
		t.Fatalf("create bucket %s: %v", MediaBucket, err)
	}
	if s.Media, err = s3media.New(s3client, s3.NewPresignClient(s3client), MediaBucket); err != nil {
		t.Fatal(err)
	}
	s.Sandbox = sandbox.New(sandbox.Options{})
	if err := s.Sandbox.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Sandbox.Close() })
	return s
}

func createQueue(t testing.TB, c *sqs.Client, name string, attrs map[string]string) (url, arn string) {
	t.Helper()
	all := map[string]string{"MaximumMessageSize": "1048576"}
	maps.Copy(all, attrs)
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: all})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	got, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatalf("queue %s ARN: %v", name, err)
	}
	return aws.ToString(out.QueueUrl), got.Attributes[string(types.QueueAttributeNameQueueArn)]
}

// Env is the environment of a function of this stack under the RIE: the
// template's variables, the emulators' endpoints (through the counting
// proxies), a static credential key instead of KMS, dummy credentials.
func (s *Stack) Env() map[string]string {
	return map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_ENDPOINT_URL_DYNAMODB": s.ddbURL, "AWS_ENDPOINT_URL_SQS": s.sqsURL, "AWS_ENDPOINT_URL_SFN": s.sfnURL,
		"AWS_MAX_ATTEMPTS":                  "2",
		"ONCEPOST_TABLE_PREFIX":             Prefix,
		"ONCEPOST_STATIC_CREDENTIAL_KEY":    hex.EncodeToString(s.Key),
		"ONCEPOST_QUEUE_URL":                s.QueueURL,
		"ONCEPOST_DEAD_LETTER_URL":          s.DeadLetterURL,
		"ONCEPOST_STATE_MACHINE_ARN":        StateMachineARN,
		"ONCEPOST_MAX_RECEIVES":             fmt.Sprint(MaxReceives),
		"ONCEPOST_METRICS_NAMESPACE":        "oncepost",
		"ONCEPOST_MEDIA_BUCKET":             MediaBucket,
		"AWS_ENDPOINT_URL_S3":               s.s3URL,
		"AWS_LAMBDA_FUNCTION_TIMEOUT":       "60",
		"AWS_ENDPOINT_URL_SCHEDULER":        s.schedulerURL,
		"ONCEPOST_SCHEDULE_GROUP":           ScheduleGroup,
		"ONCEPOST_TRIGGER_FUNCTION_ARN":     TriggerFunctionARN,
		"ONCEPOST_SCHEDULER_ROLE_ARN":       SchedulerRoleARN,
		"ONCEPOST_SCHEDULE_DEAD_LETTER_ARN": ScheduleDeadLetterARN,
	}
}

// AddAccount adds a Mastodon account on the stack's sandbox, with its
// credential, and returns it.
func (s *Stack) AddAccount(t testing.TB, id post.AccountID) (post.Account, sandbox.Account) {
	t.Helper()
	ctx := context.Background()
	sa := s.Sandbox.AddAccount(string(id))
	a := post.Account{ID: id, Platform: "sandbox", Handle: "@" + string(id), BaseURL: s.Sandbox.URL(), RemoteID: sa.ID, Gate: post.GateAuto}
	if err := s.Store.PutAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.Store.PutCredential(ctx, id, platform.Credential{AccessToken: sa.AccessToken, RefreshToken: sa.RefreshToken}); err != nil {
		t.Fatal(err)
	}
	return a, sa
}

// Schedule stores a post with one target per account, all at slot.
func (s *Stack) Schedule(t testing.TB, id post.ID, body string, slot time.Time, accounts ...post.AccountID) post.Post {
	t.Helper()
	now := time.Now().UTC()
	p := post.Post{ID: id, Body: body, CreatedAt: now}
	for _, a := range accounts {
		p.Targets = append(p.Targets, post.Target{Account: a, Slot: slot.UTC(), Status: post.Scheduled, UpdatedAt: now})
	}
	if err := s.Store.CreatePost(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// Counter counts API calls by "<service>.<operation>", and keeps when
// each operation was first and last called.
type Counter struct {
	mu     sync.Mutex
	counts map[string]int
	spans  map[string][2]time.Time
	// latency is added to every call (SetLatency).
	latency atomic.Int64
}

// SetLatency makes every call through the proxies take d longer: the
// round trip to an AWS service in the region, which the emulators on
// 127.0.0.1 do not have, for a benchmark whose result depends on it.
func (c *Counter) SetLatency(d time.Duration) { c.latency.Store(int64(d)) }

// Reset forgets every count.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = map[string]int{}
	c.spans = map[string][2]time.Time{}
}

// Span is when "<service>.<operation>" was first and last called since
// the last Reset (zero times if never).
func (c *Counter) Span(op string) (first, last time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sp := c.spans[op]
	return sp[0], sp[1]
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// proxy starts a reverse proxy to target on 127.0.0.1 that counts each
// request by its X-Amz-Target operation (the AWS JSON protocol of
// DynamoDB, SQS and Step Functions: "DynamoDB_20120810.PutItem"), a
// DynamoDB write also by its table (writtenTable), and returns its URL. For DynamoDB it also asks for and adds up the consumed
// capacity (see capacity).
func (c *Counter) proxy(t testing.TB, service, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	if service == "dynamodb" {
		rp.ModifyResponse = c.capacity
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := r.Header.Get("X-Amz-Target")
		if i := strings.LastIndexByte(op, '.'); i >= 0 {
			op = op[i+1:]
		}
		if op == "" {
			op = r.Method + " " + r.URL.Path
		}
		table := ""
		if service == "dynamodb" && writeOps[op] {
			table = writtenTable(r)
		}
		if d := time.Duration(c.latency.Load()); d > 0 {
			time.Sleep(d)
		}
		at := time.Now()
		c.mu.Lock()
		c.counts[service+"."+op]++
		if c.spans == nil {
			c.spans = map[string][2]time.Time{}
		}
		sp := c.spans[service+"."+op]
		if sp[0].IsZero() {
			sp[0] = at
		}
		sp[1] = at
		c.spans[service+"."+op] = sp
		if table != "" {
			c.counts[service+"."+op+"@"+table]++
		}
		c.mu.Unlock()
		if service == "dynamodb" && capacityOps[op] {
			askCapacity(r)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// writtenTable is the table a DynamoDB write request names, without the
// stack's prefix ("posts", "workspace" …; "" for a batch), so that writes
// are also counted by table ("dynamodb.UpdateItem@workspace"). The body
// is read and put back.
func writtenTable(r *http.Request) string {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return ""
	}
	var in struct{ TableName string }
	if json.Unmarshal(body, &in) != nil {
		return ""
	}
	if i := strings.LastIndexByte(in.TableName, '-'); i >= 0 {
		return in.TableName[i+1:]
	}
	return in.TableName
}

// capacityOps are the DynamoDB operations that report consumed capacity.
var capacityOps = map[string]bool{
	"PutItem": true, "UpdateItem": true, "DeleteItem": true, "GetItem": true, "Query": true, "Scan": true,
	"BatchGetItem": true, "BatchWriteItem": true,
}

// writeOps are the DynamoDB operations whose capacity is write capacity.
var writeOps = map[string]bool{"PutItem": true, "UpdateItem": true, "DeleteItem": true, "BatchWriteItem": true}

// askCapacity sets ReturnConsumedCapacity INDEXES on a DynamoDB request
// (dynalite checks no signature), so the answer says what the call cost,
// index writes included.
func askCapacity(r *http.Request) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	var req map[string]any
	if err == nil && json.Unmarshal(body, &req) == nil {
		req["ReturnConsumedCapacity"] = "INDEXES"
		if b, err := json.Marshal(req); err == nil {
			body = b
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	r.Header.Set("X-Oncepost-Op", strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810."))
}

// capacity adds the answer's ConsumedCapacity to "dynamodb.WriteUnits" or
// "dynamodb.ReadUnits" (in thousandths, the counts being integers).
func (c *Counter) capacity(resp *http.Response) error {
	op := resp.Request.Header.Get("X-Oncepost-Op")
	if !capacityOps[op] {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var out struct {
		ConsumedCapacity json.RawMessage
	}
	if json.Unmarshal(body, &out) != nil || len(out.ConsumedCapacity) == 0 {
		return nil
	}
	var one struct{ CapacityUnits float64 }
	var many []struct{ CapacityUnits float64 }
	units := 0.0
	if json.Unmarshal(out.ConsumedCapacity, &many) == nil {
		for _, m := range many {
			units += m.CapacityUnits
		}
	} else if json.Unmarshal(out.ConsumedCapacity, &one) == nil {
		units = one.CapacityUnits
	}
	name := "dynamodb.ReadUnits"
	if writeOps[op] {
		name = "dynamodb.WriteUnits"
	}
	c.mu.Lock()
	c.counts[name+"/1000"] += int(units*1000 + 0.5)
	c.mu.Unlock()
	return nil
}
