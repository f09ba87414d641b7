package sqsqueue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"oncepost/shared/publishing"
)

// Outgoing is one message for SendBatch: a body and its delay, as Send
// takes them (the port's type, so the Queue is a publishing.BatchSender).
type Outgoing = publishing.Outgoing

// BatchFailure is one message SendBatch did not send.
type BatchFailure struct {
	// Index is the message's position in SendBatch's argument.
	Index int
	// Code is SQS's error code for the entry ("" when the adapter refused
	// it before sending, or the whole request failed).
	Code string
	// SenderFault is SQS's verdict: true if the entry itself is wrong,
	// false if SQS failed (sending it again may work).
	SenderFault bool
	// Err says why, wrapping the adapter's errors (ErrMessageTooLarge …).
	Err error
}

// BatchError lists the messages of a SendBatch that were not sent; the
// others were. errors.Is on it looks through every failure.
type BatchError struct {
	Failures []BatchFailure
	Total    int
}

// Error counts the failures and names the first three.
func (e *BatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d messages not sent", len(e.Failures), e.Total)
	for i, f := range e.Failures {
		if i == 3 {
			fmt.Fprintf(&b, "; …")
			break
		}
		fmt.Fprintf(&b, "; #%d: %v", f.Index, f.Err)
	}
	return b.String()
}

// Unwrap returns every failure's error.
func (e *BatchError) Unwrap() []error {
	errs := make([]error, len(e.Failures))
	for i, f := range e.Failures {
		errs[i] = f.Err
	}
	return errs
}

// SendBatch sends msgs with SendMessageBatch, ten at most per request and
// at most 1 MiB per request (SQS's limits), and returns their ids in
// order. SQS answers a batch with HTTP 200 even when some entries failed:
// each entry's result is checked. If any message was not sent its id is
// "" and the error is a *BatchError naming each such message (the others
// were sent; sending a failed one again gives it a new id). Messages Send
// would refuse are refused here too, without being sent.
func (q *Queue) SendBatch(ctx context.Context, msgs []Outgoing) ([]string, error) {
	ids := make([]string, len(msgs))
	var failures []BatchFailure
	fail := func(i int, code string, sender bool, err error) {
		failures = append(failures, BatchFailure{Index: i, Code: code, SenderFault: sender, Err: err})
	}
	var chunk []types.SendMessageBatchRequestEntry
	var chunkIdx []int
	chunkBytes := 0
	flush := func() {
		if len(chunk) == 0 {
			return
		}
		out, err := q.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: chunk})
		if err != nil {
			err = translate(err)
			for _, i := range chunkIdx {
				fail(i, "", false, err)
				ids[i] = ""
			}
		} else {
			sent := map[string]bool{}
			for _, ok := range out.Successful {
				sent[aws.ToString(ok.Id)] = true
			}
			for _, f := range out.Failed {
				i, ok := entryIndex(aws.ToString(f.Id), chunkIdx)
				if !ok {
					continue
				}
				code, msg := aws.ToString(f.Code), aws.ToString(f.Message)
				err := fmt.Errorf("%s: %s", code, msg)
				if sentinel := classify(code, msg); sentinel != nil {
					err = fmt.Errorf("%w: %s: %s", sentinel, code, msg)
				}
				fail(i, code, f.SenderFault, err)
				ids[i] = ""
				sent[aws.ToString(f.Id)] = true // accounted for
			}
			// An entry SQS neither accepted nor refused was not sent.
			for k, i := range chunkIdx {
				if !sent["m"+strconv.Itoa(k)] {
					fail(i, "", false, errors.New("SQS returned no result for the entry"))
					ids[i] = ""
				}
			}
		}
		chunk, chunkIdx, chunkBytes = nil, nil, 0
	}
	for i, m := range msgs {
		in, w, err := q.sendInput(m.Body, m.Delay)
		if err != nil {
			fail(i, "", true, err)
			continue
		}
		n := size(w.body, in.MessageAttributes)
		if len(chunk) == maxBatchEntries || chunkBytes+n > maxBatchBytes {
			flush()
		}
		chunk = append(chunk, types.SendMessageBatchRequestEntry{
			Id:                aws.String("m" + strconv.Itoa(len(chunk))),
			MessageBody:       in.MessageBody,
			DelaySeconds:      in.DelaySeconds,
			MessageAttributes: in.MessageAttributes,
		})
		chunkIdx = append(chunkIdx, i)
		chunkBytes += n
		ids[i] = w.id
	}
	flush()
	if len(failures) > 0 {
		slices.SortFunc(failures, func(a, b BatchFailure) int { return cmp.Compare(a.Index, b.Index) })
		return ids, fmt.Errorf("sqsqueue %s send batch: %w", q.name, &BatchError{Failures: failures, Total: len(msgs)})
	}
	return ids, nil
}

// entryIndex maps a batch entry id ("m3") to the message's index.
func entryIndex(id string, idx []int) (int, bool) {
	k, err := strconv.Atoi(strings.TrimPrefix(id, "m"))
	if err != nil || !strings.HasPrefix(id, "m") || k < 0 || k >= len(idx) {
		return 0, false
	}
	return idx[k], true
}
