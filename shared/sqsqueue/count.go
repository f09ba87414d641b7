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
	out, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q.deadURL),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return 0, fmt.Errorf("sqsqueue %s count dead letters: %w", q.name, translate(err))
	}
	total := 0
	for _, name := range []types.QueueAttributeName{
		types.QueueAttributeNameApproximateNumberOfMessages,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
	} {
		if v, ok := out.Attributes[string(name)]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("sqsqueue %s count dead letters: %s %q is not a count", q.name, name, v)
			}
			total += n
		}
	}
	return total, nil
}

// Depth reads the publish queue's approximate counts with one
// GetQueueAttributes (publishing.Queue): ApproximateNumberOfMessages
// (visible), ...Delayed and ...NotVisible (in flight). SQS's counts lag by
// up to a minute.
func (q *Queue) Depth(ctx context.Context) (publishing.QueueDepth, error) {
	out, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q.url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		return publishing.QueueDepth{}, fmt.Errorf("sqsqueue %s depth: %w", q.name, translate(err))
	}
	var d publishing.QueueDepth
	for name, into := range map[types.QueueAttributeName]*int{
		types.QueueAttributeNameApproximateNumberOfMessages:           &d.Visible,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed:    &d.Delayed,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible: &d.InFlight,
	} {
		v, ok := out.Attributes[string(name)]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return publishing.QueueDepth{}, fmt.Errorf("sqsqueue %s depth: %s %q is not a count", q.name, name, v)
		}
		*into = n
	}
	return d, nil
}
