package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"oncepost/shared/publishing"
)

// Check verifies that the queue and its dead-letter queue exist and have
// the attributes the adapter relies on: DelaySeconds 0 on both (the SDK
// never sends a zero delay, so the queue's own applies),
// ReceiveMessageWaitTimeSeconds 0 on the queue (else Receive blocks), a
// MaximumMessageSize of at least MinQueueMessageSize on both, no
// RedrivePolicy on the dead-letter queue (scans count as receives), and,
// if the queue has a RedrivePolicy, that it targets the dead-letter queue.
// It returns every problem found, joined.
func (q *Queue) Check(ctx context.Context) error {
	names := []types.QueueAttributeName{
		types.QueueAttributeNameQueueArn, types.QueueAttributeNameDelaySeconds,
		types.QueueAttributeNameReceiveMessageWaitTimeSeconds, types.QueueAttributeNameMaximumMessageSize,
		types.QueueAttributeNameRedrivePolicy,
	}
	src, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.url), AttributeNames: names})
	if err != nil {
		return fmt.Errorf("sqsqueue %s check: queue: %w", q.name, translate(err))
	}
	dead, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.deadURL), AttributeNames: names})
	if err != nil {
		return fmt.Errorf("sqsqueue %s check: dead-letter queue: %w", q.name, translate(err))
	}
	var errs []error
	problem := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	number := func(attrs map[string]string, name types.QueueAttributeName, def int) int {
		v, ok := attrs[string(name)]
		if !ok {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			problem("%s %q is not a number", name, v)
		}
		return n
	}
	for _, x := range []struct {
		what  string
		attrs map[string]string
	}{{"queue", src.Attributes}, {"dead-letter queue", dead.Attributes}} {
		if d := number(x.attrs, types.QueueAttributeNameDelaySeconds, 0); d != 0 {
			problem("%s: DelaySeconds is %d, want 0 (a message sent without delay would be delayed)", x.what, d)
		}
		if s := number(x.attrs, types.QueueAttributeNameMaximumMessageSize, 262144); s < MinQueueMessageSize {
			problem("%s: MaximumMessageSize is %d, want at least %d (a %d-byte binary body, base64-encoded)", x.what, s, MinQueueMessageSize, publishing.MaxMessageBytes)
		}
	}
	if w := number(src.Attributes, types.QueueAttributeNameReceiveMessageWaitTimeSeconds, 0); w != 0 {
		problem("queue: ReceiveMessageWaitTimeSeconds is %d, want 0 (Receive must not block)", w)
	}
	if p := dead.Attributes[string(types.QueueAttributeNameRedrivePolicy)]; p != "" {
		problem("dead-letter queue: has a RedrivePolicy %s, want none (listing dead letters counts as receiving them)", p)
	}
	if p := src.Attributes[string(types.QueueAttributeNameRedrivePolicy)]; p != "" {
		doc, err := parseRedrivePolicy(p)
		switch {
		case err != nil:
			problem("queue: %v", err)
		case doc.DeadLetterTargetArn != dead.Attributes[string(types.QueueAttributeNameQueueArn)]:
			problem("queue: RedrivePolicy targets %s, not the dead-letter queue %s", doc.DeadLetterTargetArn, dead.Attributes[string(types.QueueAttributeNameQueueArn)])
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqsqueue %s check: %w", q.name, err)
	}
	return nil
}
