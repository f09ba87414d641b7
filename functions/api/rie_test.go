package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/awsruntime/stacktest"
	"oncepost/shared/dynamostore"
	"oncepost/shared/emulatortest"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// sample reads an event of events/.
func sample(t testing.TB, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("events/%s: %v", name, err)
	}
	return ev
}

// call invokes the function with ev and returns its answer.
func call(t testing.TB, invoke func([]byte) []byte, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	out := invoke(b)
	var res events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &res); err != nil || res.StatusCode == 0 {
		t.Fatalf("the function answered %s (%v), not an HTTP response", out, err)
	}
	return res
}

// readyPosts counts the posts in the stack's posts table that are
// committed (a Scan: the test reads the whole table).
func readyPosts(t testing.TB, s *stacktest.Stack) int {
	t.Helper()
	n := 0
	pages := dynamodb.NewScanPaginator(s.DynamoDB, &dynamodb.ScanInput{TableName: aws.String(stacktest.Prefix + dynamostore.PostsTable)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			item, _ := it["item"].(*types.AttributeValueMemberS)
			phase, _ := it["phase"].(*types.AttributeValueMemberS)
			if item != nil && item.Value == "post" && phase != nil && phase.Value == "ready" {
				n++
			}
		}
	}
	return n
}

// The api function built as `bootstrap` (as `make build-ApiFunction`
// builds it), run by the Lambda Runtime Interface Emulator against
// dynalite, fauxqs and the Scheduler stand-in, invoked with API Gateway
// HTTP API events: a create, the same again (the first answer replayed),
// another body under the key (422), a read, the contract, the lists
// and the status (the store, the queues, the budgets), a create
// without an IAM identity (401, nothing written), and one key sent 50
// times with a body that names no post id (each request generates its
// own): one post.
func TestAPIFunctionUnderTheRuntimeInterfaceEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the function and runs it under the RIE against the emulators")
	}
	s := stacktest.New(t)
	s.AddAccount(t, "news")
	hooks := s.Events(t)
	env := s.Env()
	maps.Copy(env, hooks.Env())
	invoke := emulatortest.Lambda(t, emulatortest.BuildBootstrap(t, "."), env)

	first := call(t, invoke, sample(t, "api-create.json"))
	if first.StatusCode != 201 {
		t.Fatalf("api-create.json: %d %s, want 201", first.StatusCode, first.Body)
	}
	again := call(t, invoke, sample(t, "api-create-again.json"))
	if again.StatusCode != first.StatusCode || again.Body != first.Body || again.Headers["Idempotent-Replayed"] != "true" {
		t.Errorf("api-create-again.json: %d %v %s, want the first answer replayed (Idempotent-Replayed: true): %d %s", again.StatusCode, again.Headers, again.Body, first.StatusCode, first.Body)
	}
	if other := call(t, invoke, sample(t, "api-create-other-body.json")); other.StatusCode != 422 {
		t.Errorf("api-create-other-body.json: %d %s, want 422", other.StatusCode, other.Body)
	}
	if got := call(t, invoke, sample(t, "api-get-post.json")); got.StatusCode != 200 || !regexp.MustCompile(`"api-sample"`).MatchString(got.Body) {
		t.Errorf("api-get-post.json: %d %s, want 200 with the post", got.StatusCode, got.Body)
	}
	if n := readyPosts(t, s); n != 1 {
		t.Errorf("%d posts stored after the samples, want 1", n)
	}
	contract := sample(t, "api-get-post.json")
	contract.RawPath = "/v1/openapi.json"
	if got := call(t, invoke, contract); got.StatusCode != 200 || !regexp.MustCompile(`"openapi": *"3\.1`).MatchString(got.Body) {
		t.Errorf("GET /v1/openapi.json: %d %.200s, want 200 with the OpenAPI 3.1 document", got.StatusCode, got.Body)
	}
	for _, path := range []string{"/v1/accounts", "/v1/status", "/v1/held", "/v1/dead-letters", "/v1/posts"} {
		get := sample(t, "api-get-post.json")
		get.RawPath = path
		if got := call(t, invoke, get); got.StatusCode != 200 {
			t.Errorf("GET %s: %d %.300s, want 200", path, got.StatusCode, got.Body)
		}
	}
	unsigned := sample(t, "api-create.json")
	unsigned.Headers["idempotency-key"] = "k-unsigned"
	unsigned.RequestContext.Authorizer = nil
	if got := call(t, invoke, unsigned); got.StatusCode != 401 {
		t.Errorf("a create without an IAM identity: %d %s, want 401", got.StatusCode, got.Body)
	}

	checkWebhooks(t, invoke, s, hooks)

	// One key, 50 times, a body without an id.
	ev := sample(t, "api-create.json")
	ev.Headers["idempotency-key"] = "k-50"
	ev.Body = `{"body": "Fifty tries, one post.", "targets": [{"account": "news", "at": "2036-01-01T10:00:00Z"}]}`
	ev.Headers["content-length"] = strconv.Itoa(len(ev.Body))
	var answers []string
	for i := range 50 {
		ev.RequestContext.RequestID = fmt.Sprintf("r-%d", i)
		res := call(t, invoke, ev)
		answers = append(answers, fmt.Sprintf("%d %s", res.StatusCode, res.Body))
	}
	for i, a := range answers {
		if diff := cmp.Diff(answers[0], a); diff != "" || a[:3] != "201" {
			t.Errorf("answer %d differs from the first, a 201 (-first +got):\n%s", i, diff)
			break
		}
	}
	if n := readyPosts(t, s); n != 2 {
		t.Errorf("%d posts stored after 50 creates with one key, want 2 (the sample's and one)", n)
	}
}

// request is the sample GET with method, path, query and JSON body.
func request(t testing.TB, method, path, query, body string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	ev := sample(t, "api-get-post.json")
	ev.RequestContext.HTTP.Method, ev.RequestContext.HTTP.Path = method, path
	ev.RawPath, ev.RawQueryString, ev.Body = path, query, body
	ev.Headers["content-length"] = strconv.Itoa(len(body))
	if body != "" {
		ev.Headers["content-type"] = "application/json"
	}
	return ev
}

// checkWebhooks: the stack's webhook subscriptions through the api
// function: a create answers 201 with the secret (stored sealed with the
// stack's key), the list shows it without the secret, the deliveries
// listed are the webhook queue's dead letters (a state AWS does not keep
// is a 400 naming state), and a delete answers 204 and removes it.
func checkWebhooks(t *testing.T, invoke func([]byte) []byte, s *stacktest.Stack, hooks *stacktest.Events) {
	t.Helper()
	ctx := t.Context()
	created := call(t, invoke, request(t, "POST", "/v1/webhooks", "",
		`{"url": "http://127.0.0.1:9/hooks", "allow_private": true, "events": ["post.failed"], "description": "cms"}`))
	var sub struct {
		ID, Secret string
	}
	if err := json.Unmarshal([]byte(created.Body), &sub); created.StatusCode != 201 || err != nil || sub.ID == "" || sub.Secret == "" {
		t.Fatalf("POST /v1/webhooks: %d %s, want 201 with the id and secret", created.StatusCode, created.Body)
	}
	if stored, err := s.Store.GetSubscription(ctx, sub.ID); err != nil || stored.Secret != sub.Secret || stored.URL != "http://127.0.0.1:9/hooks" {
		t.Errorf("stored %+v (%v); want the subscription, its secret the one answered", stored, err)
	}
	listed := call(t, invoke, request(t, "GET", "/v1/webhooks", "", ""))
	var list struct {
		Webhooks []map[string]any `json:"webhooks"`
	}
	if err := json.Unmarshal([]byte(listed.Body), &list); listed.StatusCode != 200 || err != nil || len(list.Webhooks) != 1 ||
		list.Webhooks[0]["id"] != sub.ID || list.Webhooks[0]["secret"] != nil || strings.Contains(listed.Body, sub.Secret) {
		t.Errorf("GET /v1/webhooks: %d %s, want the subscription without its secret", listed.StatusCode, listed.Body)
	}

	now := time.Now().UTC().Truncate(time.Second)
	ev := publishing.Event{ID: publishing.EventID("dead"), Type: publishing.EventFailed, At: now, Post: "p-1", Account: "news", Status: "failed"}
	body, err := publishing.WebhookMessage{Event: ev, Subscription: sub.ID, CreatedAt: now}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hooks.WebhookQueue.Send(ctx, body, 0); err != nil {
		t.Fatal(err)
	}
	msgs, err := hooks.WebhookQueue.Receive(ctx, 1, time.Minute)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("receive: %v, %d messages", err, len(msgs))
	}
	if err := hooks.WebhookQueue.DeadLetter(ctx, msgs[0].Receipt, "webhook_expired: 13 attempts"); err != nil {
		t.Fatal(err)
	}
	deliveries := "/v1/webhooks/" + sub.ID + "/deliveries"
	if got := call(t, invoke, request(t, "GET", deliveries, "state=dead", "")); got.StatusCode != 200 ||
		!strings.Contains(got.Body, publishing.DeliveryID(ev.ID, sub.ID)) || !strings.Contains(got.Body, "webhook_expired") {
		t.Errorf("GET %s?state=dead: %d %s, want 200 with the dead delivery", deliveries, got.StatusCode, got.Body)
	}
	if got := call(t, invoke, request(t, "GET", deliveries, "state=pending", "")); got.StatusCode != 400 || !strings.Contains(got.Body, `"field":"state"`) {
		t.Errorf("GET %s?state=pending: %d %s, want 400 naming state", deliveries, got.StatusCode, got.Body)
	}

	if got := call(t, invoke, request(t, "DELETE", "/v1/webhooks/"+sub.ID, "", "")); got.StatusCode != 204 {
		t.Errorf("DELETE /v1/webhooks/%s: %d %s, want 204", sub.ID, got.StatusCode, got.Body)
	}
	if _, err := s.Store.GetSubscription(ctx, sub.ID); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("after DELETE the subscription reads %v, want post.ErrNotFound", err)
	}
}

// initDuration is the RIE's report of a function's init phase ("INIT
// REPORT(durationMs: 13.80)").
var initDuration = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)

// BenchmarkAPIFunctionInit starts the api function under the RIE b.N
// times and reports its init phase as the RIE measures it (reading the
// environment, loading the AWS configuration, building the store, queue,
// schedules and the API's handler) and the time from the RIE's start to
// the first answer (a GET of a post that does not exist: one DynamoDB
// Query).
func BenchmarkAPIFunctionInit(b *testing.B) {
	s := stacktest.New(b)
	env := s.Env()
	maps.Copy(env, s.Events(b).Env())
	bootstrap := emulatortest.BuildBootstrap(b, ".")
	get := sample(b, "api-get-post.json")
	get.RawPath = "/v1/posts/none"
	event, err := json.Marshal(get)
	if err != nil {
		b.Fatal(err)
	}
	var initTotal, firstTotal time.Duration
	for b.Loop() {
		start := time.Now()
		f, err := emulatortest.StartLambda(bootstrap, env)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Invoke(context.Background(), event); err != nil {
			b.Fatal(err)
		}
		firstTotal += time.Since(start)
		m := initDuration.FindStringSubmatch(f.Output())
		_ = f.Stop()
		if m == nil {
			b.Fatalf("no INIT REPORT in the RIE's output:\n%s", f.Output())
		}
		ms, _ := strconv.ParseFloat(m[1], 64)
		initTotal += time.Duration(ms * float64(time.Millisecond))
	}
	b.ReportMetric(float64(initTotal.Microseconds())/1000/float64(b.N), "init-ms")
	b.ReportMetric(float64(firstTotal.Microseconds())/1000/float64(b.N), "start-to-first-answer-ms")
}
