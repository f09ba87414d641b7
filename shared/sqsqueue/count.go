package sqsqueue

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"oncepost/shared/publishing"
)

// Interface guard.
var _ publishing.DeadLetterCounter = (*Queue)(nil)

// CountDeadLetters is the dead-letter queue's approximate number of
// messages (visible, in flight and delayed), read with one
// GetQueueAttributes and without receiving anything, so an operator's
// `dlq list` is never disturbed. SQS's counts are approximate and lag by
// up to a minute, and a dead-letter queue shared by several queues is
// counted whole.
func (q *Queue) CountDeadLetters(ctx context.Context) (int, error) {
	d, err := q.counts(ctx, q.deadURL)
	if err != nil {
		return 0, fmt.Errorf("sqsqueue %s count dead letters: %w", q.name, err)
	}
	return d.Visible + d.InFlight + d.Delayed, nil
}

// Depth counts the queue's messages and its dead-letter queue's with one
// GetQueueAttributes each, receiving nothing.
func (q *Queue) Depth(ctx context.Context) (publishing.QueueDepth, error) {
	d, err := q.counts(ctx, q.url)
	if err != nil {
		return publishing.QueueDepth{}, fmt.Errorf("sqsqueue %s depth: %w", q.name, err)
	}
	if d.DeadLetters, err = q.CountDeadLetters(ctx); err != nil {
		return publishing.QueueDepth{}, err
	}
	return d, nil
}

// counts reads a queue's approximate counts of visible, in-flight and
// delayed messages.
func (q *Queue) counts(ctx context.Context, url string) (publishing.QueueDepth, error) {
	out, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return publishing.QueueDepth{}, translate(err)
	}
	var d publishing.QueueDepth
	for name, dst := range map[types.QueueAttributeName]*int{
		types.QueueAttributeNameApproximateNumberOfMessages:           &d.Visible,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible: &d.InFlight,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed:    &d.Delayed,
	} {
		if v, ok := out.Attributes[string(name)]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return publishing.QueueDepth{}, fmt.Errorf("%s %q is not a count", name, v)
			}
			*dst = n
		}
	}
	return d, nil
}
