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

// Depth is how many messages a queue holds, by where they are, as SQS
// counts them: approximately, lagging by up to a minute.
type Depth struct {
	// Visible messages are ready to be received.
	Visible int `json:"visible"`
	// InFlight messages were received and are hidden (a visibility
	// timeout running, or put back with a delay).
	InFlight int `json:"in_flight"`
	// Delayed messages were sent with a delay and are not visible yet.
	Delayed int `json:"delayed"`
	// DeadLetters are the dead-letter queue's messages, all of them (a
	// dead-letter queue shared by several queues is counted whole).
	DeadLetters int `json:"dead_letters"`
}

// Depth counts the queue's messages and its dead-letter queue's with one
// GetQueueAttributes each, receiving nothing.
func (q *Queue) Depth(ctx context.Context) (Depth, error) {
	d, err := q.counts(ctx, q.url)
	if err != nil {
		return Depth{}, fmt.Errorf("sqsqueue %s depth: %w", q.name, err)
	}
	if d.DeadLetters, err = q.CountDeadLetters(ctx); err != nil {
		return Depth{}, err
	}
	return d, nil
}

// counts reads a queue's approximate counts of visible, in-flight and
// delayed messages.
func (q *Queue) counts(ctx context.Context, url string) (Depth, error) {
	out, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return Depth{}, translate(err)
	}
	var d Depth
	for name, dst := range map[types.QueueAttributeName]*int{
		types.QueueAttributeNameApproximateNumberOfMessages:           &d.Visible,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible: &d.InFlight,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed:    &d.Delayed,
	} {
		if v, ok := out.Attributes[string(name)]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return Depth{}, fmt.Errorf("%s %q is not a count", name, v)
			}
			*dst = n
		}
	}
	return d, nil
}
