package sqsqueue

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"
)

// Errors the adapter returns, wrapped with the operation, the queue and,
// where SQS answered, SQS's own error (errors.As reaches its type).
var (
	// ErrStaleReceipt: the receipt is not the message's current delivery
	// (delivered again since, acked, dead-lettered, or no receipt at all).
	ErrStaleReceipt = errors.New("stale receipt")
	// ErrUnknownReceipt: DeadLetter got a receipt this Queue value did not
	// hand out, or one whose visibility timeout has long ended. The body
	// to copy is known only from the delivery.
	ErrUnknownReceipt = errors.New("receipt not delivered by this queue value")
	// ErrMessageTooLarge: a body over publishing.MaxMessageBytes, or a
	// message over the queue's MaximumMessageSize.
	ErrMessageTooLarge = errors.New("message body too large")
	// ErrEmptyBody: SQS refuses an empty body.
	ErrEmptyBody = errors.New("empty message body")
	// ErrDelayTooLong: a Send delay over 15 minutes (SQS's DelaySeconds
	// limit), or a Retry delay or Receive visibility over 12 hours.
	ErrDelayTooLong = errors.New("delay over the SQS limit")
	// ErrQueueNotFound: the queue (or dead-letter queue) does not exist.
	ErrQueueNotFound = errors.New("queue does not exist")
	// ErrThrottled: SQS throttled the call after the SDK's retries.
	ErrThrottled = errors.New("throttled by SQS")
	// ErrScanLimit: Redrive or Drop did not find the id among the first
	// Options.ScanLimit dead letters, and the dead-letter queue holds more.
	ErrScanLimit = errors.New("dead-letter queue larger than the scan limit")
)

// translate maps an SQS error to the adapter's errors, keeping the
// original in the chain. Errors that are not SQS's (context, network)
// are returned as they are.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return err
	}
	if sentinel := classify(ae.ErrorCode(), ae.ErrorMessage()); sentinel != nil {
		return fmt.Errorf("%w: %w", sentinel, err)
	}
	return err
}

// classify names the adapter error for an SQS error code and message, nil
// if none applies. Codes come in the JSON protocol's form
// ("QueueDoesNotExist") or the query protocol's
// ("AWS.SimpleQueueService.NonExistentQueue"); both are understood.
func classify(code, message string) error {
	code = strings.TrimPrefix(code, "AWS.SimpleQueueService.")
	lower := strings.ToLower(message)
	switch code {
	case "QueueDoesNotExist", "NonExistentQueue":
		return ErrQueueNotFound
	case "MessageNotInflight", "ReceiptHandleIsInvalid":
		return ErrStaleReceipt
	case "BatchRequestTooLong":
		return ErrMessageTooLarge
	case "RequestThrottled", "ThrottlingException", "Throttling", "OverLimit", "KmsThrottled":
		return ErrThrottled
	case "InvalidParameterValue":
		switch {
		case strings.Contains(lower, "receipthandle") || strings.Contains(lower, "receipt handle"):
			return ErrStaleReceipt
		case strings.Contains(lower, "shorter than") || strings.Contains(lower, "message size"):
			return ErrMessageTooLarge
		}
	}
	return nil
}
