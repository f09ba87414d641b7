// Package sqsesm plays the Lambda event source mapping (ESM) for SQS on
// one machine: it receives up to ten messages from a queue, hands them to
// a function as the ESM's events.SQSEvent, and deletes what the function
// did not report in batchItemFailures (FunctionResponseTypes
// ReportBatchItemFailures). Tests and `make invoke` use it to drive the
// publisher function against an SQS emulator the way AWS does, with the
// same request pattern: one ReceiveMessage and at most one
// DeleteMessageBatch per batch.
//
// What the ESM does is documented in
// https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html and
// https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html:
// a batch whose invocation fails (an error, a crash, a timeout) is not
// deleted at all and comes back after its visibility timeout; a batch
// answered with batchItemFailures keeps only those; an itemIdentifier
// that is empty or not in the batch fails the whole batch. Hand-written
// because no library plays the ESM outside AWS (SAM CLI's local invoke
// takes a fixed event).
package sqsesm

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Function is the Lambda handler the mapping invokes.
type Function func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// Mapping is one event source mapping: a queue and the function it feeds.
type Mapping struct {
	Client   *sqs.Client
	QueueURL string
	// QueueARN is the records' eventSourceARN.
	QueueARN string
	// BatchSize is at most 10 (a standard queue's ReceiveMessage limit
	// without a batching window); 0 means 10.
	BatchSize int32
	// WaitSeconds is the receive's long-poll wait (the ESM long-polls with
	// 20 s); 0 is a short poll.
	WaitSeconds int32
	Function    Function
}

// Result is what one poll did.
type Result struct {
	// Received is how many messages the function got.
	Received int
	// Failed is how many stayed in the queue (reported failed, or the whole
	// batch when the invocation failed).
	Failed int
	// InvokeErr is the function's error, if it failed.
	InvokeErr error
}

// PollOnce receives one batch, invokes the function with it, and deletes
// what succeeded. An empty receive invokes nothing.
func (m *Mapping) PollOnce(ctx context.Context) (Result, error) {
	size := m.BatchSize
	if size <= 0 || size > 10 {
		size = 10
	}
	out, err := m.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(m.QueueURL), MaxNumberOfMessages: size, WaitTimeSeconds: m.WaitSeconds,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		return Result{}, fmt.Errorf("sqsesm: receive: %w", err)
	}
	if len(out.Messages) == 0 {
		return Result{}, nil
	}
	ev := events.SQSEvent{Records: make([]events.SQSMessage, len(out.Messages))}
	for i, msg := range out.Messages {
		ev.Records[i] = Record(msg, m.QueueARN)
	}
	res := Result{Received: len(ev.Records)}
	resp, err := m.Function(ctx, ev)
	if err != nil {
		res.Failed, res.InvokeErr = len(ev.Records), err
		return res, nil
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		known := false
		for _, r := range ev.Records {
			known = known || r.MessageId == f.ItemIdentifier
		}
		if !known {
			// The ESM treats a bad identifier as a failure of the whole batch.
			res.Failed, res.InvokeErr = len(ev.Records), fmt.Errorf("sqsesm: batchItemFailures names %q, not in the batch", f.ItemIdentifier)
			return res, nil
		}
		failed[f.ItemIdentifier] = true
	}
	var del []types.DeleteMessageBatchRequestEntry
	for i, r := range ev.Records {
		if !failed[r.MessageId] {
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(r.ReceiptHandle)})
		}
	}
	res.Failed = len(failed)
	if len(del) == 0 {
		return res, nil
	}
	dout, err := m.Client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(m.QueueURL), Entries: del})
	if err != nil {
		return res, fmt.Errorf("sqsesm: delete: %w", err)
	}
	if len(dout.Failed) > 0 {
		return res, fmt.Errorf("sqsesm: delete: %d entries failed, first %s", len(dout.Failed), aws.ToString(dout.Failed[0].Message))
	}
	return res, nil
}

// Record is the ESM's record of a received message: the message's body,
// ids, system attributes (as strings) and message attributes.
func Record(m types.Message, queueARN string) events.SQSMessage {
	attrs := map[string]events.SQSMessageAttribute{}
	for name, v := range m.MessageAttributes {
		attrs[name] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue, BinaryValue: v.BinaryValue}
	}
	return events.SQSMessage{
		MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
		Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: m.Attributes, MessageAttributes: attrs,
		EventSource: "aws:sqs", EventSourceARN: queueARN, AWSRegion: "us-east-1",
	}
}
