package sqsqueue

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/logging"

	"oncepost/shared/emulatortest"
)

// env is one fauxqs process and a client for it.
type env struct {
	client *sqs.Client
}

// newEnv starts fauxqs for t. The tests take minutes of real time (SQS
// counts in whole seconds), so -short skips them.
func newEnv(t *testing.T, optFns ...func(*sqs.Options)) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("SQS adapter tests run against fauxqs in real time; skipped with -short")
	}
	endpoint := emulatortest.Fauxqs(t)
	cfg := emulatortest.AWSConfig(t, endpoint)
	// A retried call against a local emulator is worth seeing: a retried
	// Receive whose first answer was lost hides its messages.
	cfg.ClientLogMode = aws.LogRetries
	cfg.Logger = logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		if line := fmt.Sprintf(format, v...); !strings.Contains(line, "unretryable") {
			t.Logf("SDK %s: %s", c, line)
		}
	})
	return &env{client: sqs.NewFromConfig(cfg, optFns...)}
}

// pairSpec describes a queue and its dead-letter queue.
type pairSpec struct {
	// policy wires the dead-letter queue with a RedrivePolicy of
	// maxReceiveCount policy (0: none).
	policy int
	// deadURL reuses an existing dead-letter queue.
	deadURL string
	// attrs are more attributes for the queue.
	attrs map[string]string
	// opts are the adapter's options.
	opts Options
}

var queueSeq atomic.Int64

// createQueue creates a queue with a fresh name and returns its URL and ARN.
func (e *env) createQueue(t *testing.T, prefix string, attrs map[string]string) (string, string) {
	t.Helper()
	name := fmt.Sprintf("%s-%d-%s", prefix, queueSeq.Add(1), newID()[:8])
	all := map[string]string{"MaximumMessageSize": strconv.Itoa(1 << 20)}
	for k, v := range attrs {
		all[k] = v
	}
	out, err := e.client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: all})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	got, err := e.client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatalf("GetQueueAttributes %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl), got.Attributes[string(types.QueueAttributeNameQueueArn)]
}

// pair creates a queue and (unless spec.deadURL) its dead-letter queue and
// returns the adapter on them, as tests must use it against fauxqs
// (bmpOnly: see the fauxqs deviation test).
func (e *env) pair(t *testing.T, spec pairSpec) *Queue {
	t.Helper()
	deadURL := spec.deadURL
	var deadARN string
	if deadURL == "" {
		deadURL, deadARN = e.createQueue(t, "dlq", nil)
	} else {
		got, err := e.client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(deadURL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
		})
		if err != nil {
			t.Fatal(err)
		}
		deadARN = got.Attributes[string(types.QueueAttributeNameQueueArn)]
	}
	attrs := map[string]string{}
	for k, v := range spec.attrs {
		attrs[k] = v
	}
	if spec.policy > 0 {
		attrs["RedrivePolicy"] = fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, deadARN, spec.policy)
	}
	url, _ := e.createQueue(t, "q", attrs)
	q, err := New(e.client, url, deadURL, spec.opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	q.bmpOnly = true
	return q
}
