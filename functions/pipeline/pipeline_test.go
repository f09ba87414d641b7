package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"oncepost/shared/awsruntime/stacktest"
	"oncepost/shared/emulatortest"
	"oncepost/shared/ledger"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/sqsesm"
)

// Prices in us-east-1 (USD per million): DynamoDB on-demand write and
// read request units, SQS standard requests (AWS pricing pages for
// DynamoDB and SQS). The happy path makes no Step Functions call.
const (
	pricePerMillionWRU = 0.625
	pricePerMillionRRU = 0.125
	pricePerMillionSQS = 0.40
)

// function runs a built function under the RIE and returns an invoker
// that fails on a function error, and on an invocation the runtime did
// not finish (the RIE's 502 when the process died).
func function(t *testing.T, s *stacktest.Stack, name string) (invoke func(event any) ([]byte, error), bootstrap string) {
	t.Helper()
	bootstrap = emulatortest.BuildBootstrap(t, filepath.Join("..", name))
	f, err := emulatortest.StartLambda(bootstrap, s.Env())
	if errors.Is(err, emulatortest.ErrUnavailable) {
		emulatortest.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop() })
	return func(event any) ([]byte, error) {
		b, err := json.Marshal(event)
		if err != nil {
			return nil, err
		}
		out, err := f.Invoke(context.Background(), b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w\nits output:\n%s", name, err, f.Output())
		}
		var fail struct{ ErrorType, ErrorMessage string }
		if json.Unmarshal(out, &fail) == nil && fail.ErrorType != "" {
			return out, fmt.Errorf("%s: %s: %s", name, fail.ErrorType, fail.ErrorMessage)
		}
		return out, nil
	}, bootstrap
}

// mapping is the publish queue's event source mapping to the publisher.
// fireAndPublish runs the trigger function for slot, due now, and one
// poll of the queue into the publisher function; it returns the poll.
func fireAndPublish(t *testing.T, s *stacktest.Stack, slot time.Time) sqsesm.Result {
	t.Helper()
	trigger, _ := function(t, s, "trigger")
	publish, _ := function(t, s, "publisher")
	if _, err := trigger(map[string]string{"slot": slot.Format(time.RFC3339Nano), "scheduled_time": slot.Format(time.RFC3339)}); err != nil {
		t.Fatal(err)
	}
	res, err := mapping(s, publish).PollOnce(context.Background())
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	return res
}

func mapping(s *stacktest.Stack, publish func(any) ([]byte, error)) *sqsesm.Mapping {
	return &sqsesm.Mapping{Client: s.SQS, QueueURL: s.QueueURL, QueueARN: s.QueueARN,
		Function: func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			out, err := publish(ev)
			if err != nil {
				return events.SQSEventResponse{}, err
			}
			var res events.SQSEventResponse
			return res, json.Unmarshal(out, &res)
		}}
}

// TestThousandPostsCountAWSCallsPerPost publishes 1,000 posts in ten slots
// through trigger → SQS → publisher → sandbox and counts, per published
// post, the DynamoDB calls and capacity units, the SQS requests (the
// trigger's batches, the mapping's receives and deletes) and the Step
// Functions calls of the happy path, and the cost per million posts they
// make at us-east-1 prices.
func TestThousandPostsCountAWSCallsPerPost(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes 1,000 posts through two functions under the RIE")
	}
	const posts, slots = 1000, 10
	ctx := context.Background()
	s := stacktest.New(t)
	accounts := []post.AccountID{"news", "events", "jobs", "notes"}
	for _, a := range accounts {
		s.AddAccount(t, a)
	}
	base := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	for i := range posts {
		slot := base.Add(time.Duration(i%slots) * time.Second)
		s.Schedule(t, post.ID(fmt.Sprintf("p%04d", i)), fmt.Sprintf("Post number %d of the load run.", i), slot, accounts[i%len(accounts)])
	}
	trigger, _ := function(t, s, "trigger")
	publish, _ := function(t, s, "publisher")
	esm := mapping(s, publish)

	s.Calls.Reset()
	start := time.Now()
	for i := range slots {
		slot := base.Add(time.Duration(i) * time.Second)
		if _, err := trigger(map[string]string{"slot": slot.Format(time.RFC3339Nano), "scheduled_time": slot.Add(-time.Minute).Format(time.RFC3339)}); err != nil {
			t.Fatal(err)
		}
	}
	received := 0
	for deadline := time.Now().Add(5 * time.Minute); received < posts && time.Now().Before(deadline); {
		res, err := esm.PollOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.InvokeErr != nil || res.Failed > 0 {
			t.Fatalf("batch of %d: %d failed: %v", res.Received, res.Failed, res.InvokeErr)
		}
		received += res.Received
	}
	elapsed := time.Since(start)
	calls := s.Calls.Snapshot()
	if received != posts {
		t.Fatalf("the publisher received %d jobs, want %d", received, posts)
	}

	// Every post is on its account exactly once, and published.
	seen := map[string]int{}
	for _, a := range s.Sandbox.Accounts() {
		for _, st := range s.Sandbox.Statuses(a.ID) {
			seen[st.Text]++
		}
	}
	for i := range posts {
		if n := seen[fmt.Sprintf("Post number %d of the load run.", i)]; n != 1 {
			t.Errorf("post %d is on the platform %d times", i, n)
		}
	}
	counts, err := s.Store.CountTargets(ctx, post.Published)
	if err != nil {
		t.Fatal(err)
	}
	if counts[post.Published] != posts {
		t.Errorf("%d targets published, want %d", counts[post.Published], posts)
	}

	// The counts, per post.
	var writes, reads, sqsReqs, sfn int
	var ops []string
	for op, n := range calls {
		service, name, _ := strings.Cut(op, ".")
		switch {
		case strings.HasPrefix(name, "WriteUnits") || strings.HasPrefix(name, "ReadUnits") || strings.Contains(name, "@"):
			continue // units, and writes counted again by table
		case service == "dynamodb" && stacktestWrite(name):
			writes += n
		case service == "dynamodb":
			reads += n
		case service == "sqs":
			sqsReqs += n
		case service == "states":
			sfn += n
		}
		ops = append(ops, fmt.Sprintf("%s=%d", op, n))
	}
	sort.Strings(ops)
	per := func(n int) float64 { return float64(n) / posts }
	// dynalite's consumed capacity counts the table's units only (no index
	// writes): that every write is one unit says each item is under 1 KB.
	wru := float64(calls["dynamodb.WriteUnits/1000"]) / 1000
	costByCalls := per(writes)*pricePerMillionWRU + per(reads)*pricePerMillionRRU + per(sqsReqs)*pricePerMillionSQS
	t.Logf("%d posts in %s; calls: %s", posts, elapsed.Round(time.Millisecond), strings.Join(ops, " "))
	rru := float64(calls["dynamodb.ReadUnits/1000"]) / 1000
	// Billed by units: the table's write units (each item under 1 KB: one
	// a write), the four index writes a post makes (TestHappyPublishPathCalls
	// in dynamostore counts them from the items; dynalite reports none),
	// the read units (a strongly consistent read of an item under 4 KB is
	// one, a BatchGetItem one per item), SQS requests of 64 KB or less.
	const indexWritesPerPost = 4
	costByUnits := (wru/posts+indexWritesPerPost)*pricePerMillionWRU + rru/posts*pricePerMillionRRU + per(sqsReqs)*pricePerMillionSQS
	t.Logf("per post: DynamoDB %.3f writes (%.3f table write units, %d index write units), %.3f reads (%.3f read units); SQS %.3f requests; Step Functions %.3f calls",
		per(writes), wru/posts, indexWritesPerPost, per(reads), rru/posts, per(sqsReqs), per(sfn))
	t.Logf("cost per 1M posts at us-east-1 prices: $%.2f counting each call one unit; $%.2f by units, index writes included", costByCalls, costByUnits)

	if got := wru / posts; got > per(writes) {
		t.Errorf("%.3f write units per post for %.3f writes: an item is over 1 KB", got, per(writes))
	}
	// The trigger records each slot's firing: one write a slot that fits
	// one page (its claim records it done). The publish path makes three.
	slotWrites := calls["dynamodb.UpdateItem@workspace"]
	if slotWrites != slots {
		t.Errorf("%d writes of slot records for %d slots, want one each", slotWrites, slots)
	}
	if got := per(writes - slotWrites); got > 3 {
		t.Errorf("%.3f DynamoDB writes per post on the publish path, want ≤ 3", got)
	}
	if got := per(reads); got > 1 {
		t.Errorf("%.3f DynamoDB reads per post, want ≤ 1", got)
	}
	if got := per(sqsReqs); got > 0.3 {
		t.Errorf("%.3f SQS requests per post, want ≤ 0.3", got)
	}
	if sfn != 0 {
		t.Errorf("%d Step Functions calls on the happy path, want 0", sfn)
	}
	// The budget in calls (3 writes, 1 read, 0.3 SQS requests) is itself
	// $2.12 per million: three 1-unit writes and SQS's three batched
	// requests alone are $1.995, so the reads decide how far under that the
	// path stays. Index writes (four per post: the open entry in and out of
	// OpenIndex, the target out of and into StatusIndex) are not in the
	// calls; dynalite does not report them, and they add $2.50.
	budget := (3+float64(slots)/posts)*pricePerMillionWRU + 1*pricePerMillionRRU + 0.3*pricePerMillionSQS
	if costByCalls > budget {
		t.Errorf("$%.2f per 1M posts by calls, over the $%.2f the call budget costs", costByCalls, budget)
	}
}

func stacktestWrite(op string) bool {
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems":
		return true
	}
	return false
}

// TestPublisherKilledMidInvocationPostsOnce kills the publisher's process
// while its create is on the platform (committed, the answer not yet
// sent): the mapping's invocation fails, SQS delivers the message again
// after its visibility timeout, and the new process finds the dead one's
// pending entry and does not send again.
func TestPublisherKilledMidInvocationPostsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the publisher under the RIE and waits for a visibility timeout")
	}
	ctx := context.Background()
	s := stacktest.New(t)
	_, sa := s.AddAccount(t, "news")
	slot := time.Now().UTC().Add(-time.Second).Truncate(time.Second)
	const body = "Killed mid-invocation, posted once."
	p := s.Schedule(t, "killed", body, slot, "news")
	publish, bootstrap := function(t, s, "publisher")
	trigger, _ := function(t, s, "trigger")
	if _, err := trigger(map[string]string{"slot": slot.Format(time.RFC3339Nano), "scheduled_time": slot.Format(time.RFC3339)}); err != nil {
		t.Fatal(err)
	}
	s.Sandbox.Script(sandbox.Fault{Kind: sandbox.FaultDelayAfterCommit, Delay: 20 * time.Second})
	esm := mapping(s, publish)

	// Kill the function's process once the post is on the platform.
	killed := make(chan error, 1)
	go func() {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if len(s.Sandbox.Statuses(sa.ID)) > 0 {
				killed <- killProcess(bootstrap)
				return
			}
		}
		killed <- fmt.Errorf("the post never reached the platform")
	}()
	res, err := esm.PollOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-killed; err != nil {
		t.Fatal(err)
	}
	if res.Received != 1 || res.InvokeErr == nil {
		t.Fatalf("first delivery: %+v; want one message and a failed invocation", res)
	}
	key := ledger.PublishKey("news", string(p.ID), slot)
	e, err := s.Store.Get(ctx, key)
	if err != nil || e.State != ledger.Pending {
		t.Fatalf("entry after the kill: %+v, %v; want pending", e, err)
	}

	// SQS delivers the message again after its visibility timeout.
	var again sqsesm.Result
	for deadline := time.Now().Add(time.Minute); again.Received == 0 && time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if again, err = esm.PollOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if again.Received != 1 || again.InvokeErr != nil || again.Failed != 0 {
		t.Fatalf("redelivery: %+v; want the message, handled", again)
	}
	if n := len(s.Sandbox.Creates()); n != 1 {
		t.Errorf("%d creates on the platform, want 1", n)
	}
	if n := len(s.Sandbox.Statuses(sa.ID)); n != 1 {
		t.Errorf("%d statuses on the platform, want 1", n)
	}
	e, err = s.Store.Get(ctx, key)
	if err != nil || e.State != ledger.Pending || e.Attempt != 1 {
		t.Errorf("entry after the redelivery: %s attempt %d, %v; want still pending attempt 1 (the dead owner's lease; then the sweeper looks)", e.State, e.Attempt, err)
	}
}

// killProcess sends SIGKILL to the process running the binary at path
// (the function under the RIE).
func killProcess(path string) error {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if args := strings.Split(string(cmdline), "\x00"); args[0] == path {
			var pid int
			if _, err := fmt.Sscan(d.Name(), &pid); err != nil {
				continue
			}
			return syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return fmt.Errorf("no process runs %s", path)
}
