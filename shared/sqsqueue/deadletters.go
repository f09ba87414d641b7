package sqsqueue

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"oncepost/shared/publishing"
)

// buried is one dead letter read by a scan.
type buried struct {
	receipt string // of this scan's delivery from the dead-letter queue
	w       wire
	dl      publishing.DeadLetter
}

// scanned is what a scan read: this queue's dead letters and the
// receipts of the other messages it hid.
type scanned struct {
	mine   []buried
	others []string
	// full: the scan stopped at the scan limit, the queue may hold more.
	full bool
}

// scan receives every message of the dead-letter queue, up to the scan
// limit, hidden for scanHoldSeconds, and sorts out this queue's. The
// caller must release (or delete) every receipt.
func (q *Queue) scan(ctx context.Context) (*scanned, error) {
	s := &scanned{}
	seen := map[string]bool{} // SQS message ids: a message may come twice
	var policy *redrivePolicy // read once, if a message SQS moved turns up
	for n := 0; ; {
		if n >= q.scanLimit {
			s.full = true
			q.log.WarnContext(ctx, "sqsqueue: dead-letter scan stopped at its limit; later dead letters are not listed",
				"queue", q.name, "limit", q.scanLimit)
			return s, nil
		}
		out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:            aws.String(q.deadURL),
			MaxNumberOfMessages: int32(min(maxBatchEntries, q.scanLimit-n)),
			VisibilityTimeout:   scanHoldSeconds,
			WaitTimeSeconds:     scanWaitSeconds,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{
				types.MessageSystemAttributeNameSentTimestamp,
				types.MessageSystemAttributeNameApproximateReceiveCount,
				types.MessageSystemAttributeNameDeadLetterQueueSourceArn,
			},
			MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			q.release(ctx, s.receipts())
			return nil, fmt.Errorf("read the dead-letter queue: %w", translate(err))
		}
		if len(out.Messages) == 0 {
			return s, nil
		}
		for _, m := range out.Messages {
			n++
			receipt := aws.ToString(m.ReceiptHandle)
			if id := aws.ToString(m.MessageId); seen[id] {
				s.others = append(s.others, receipt)
				continue
			} else {
				seen[id] = true
			}
			source, moved := deadSource(m)
			if source != "" && source != q.source {
				s.others = append(s.others, receipt)
				continue
			}
			if moved && policy == nil {
				p := q.redrivePolicy(ctx)
				policy = &p
			}
			s.mine = append(s.mine, q.bury(m, receipt, moved, policy))
		}
	}
}

// receipts are every receipt the scan holds.
func (s *scanned) receipts() []string {
	if s == nil {
		return nil
	}
	r := slices.Clone(s.others)
	for _, b := range s.mine {
		r = append(r, b.receipt)
	}
	return r
}

// deadSource is the account/name of the queue a dead letter came from ("" if
// unknown), and whether SQS moved it there (it has no reason attribute).
func deadSource(m types.Message) (source string, moved bool) {
	if _, ok := m.MessageAttributes[attrReason]; ok {
		return stringAttr(m, attrSource), false
	}
	// arn:aws:sqs:REGION:ACCOUNT:NAME. fauxqs does not set it: then the
	// dead letter is every source queue's.
	arn := strings.Split(m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)], ":")
	if len(arn) == 6 && arn[2] == "sqs" {
		return arn[4] + "/" + arn[5], true
	}
	return "", true
}

// bury reads a dead letter. Fields that cannot be decoded are listed
// anyway (an operator must see every dead letter): the body as SQS holds
// it, and the reason saying what is wrong.
func (q *Queue) bury(m types.Message, receipt string, moved bool, policy *redrivePolicy) buried {
	w := fromSQS(m)
	dl := publishing.DeadLetter{ID: w.id}
	var notes []string
	if moved {
		// Moved by SQS after maxReceiveCount deliveries: no reason, no time
		// of the move; its send time is the closest SQS keeps.
		if policy.err != nil {
			dl.Reason = fmt.Sprintf("%s: moved by the queue's redrive policy (its maxReceiveCount could not be read: %v)", ReasonMaxReceives, policy.err)
			dl.ReceiveCount = q.maxReceives
		} else {
			dl.Reason = fmt.Sprintf("%s: delivered %d times, the queue's maxReceiveCount; moved by its redrive policy", ReasonMaxReceives, policy.maxReceiveCount)
			dl.ReceiveCount = policy.maxReceiveCount
		}
		ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64)
		if err != nil {
			notes = append(notes, fmt.Sprintf("SentTimestamp %q is not a time", m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)]))
		} else {
			dl.At = time.UnixMilli(ms).UTC()
		}
	} else {
		dl.Reason = stringAttr(m, attrReason)
		var err error
		raw := stringAttr(m, attrReceiveCount)
		if dl.ReceiveCount, err = strconv.Atoi(raw); err != nil || dl.ReceiveCount < 0 {
			dl.ReceiveCount = 0
			notes = append(notes, fmt.Sprintf("%s %q is not a count", attrReceiveCount, cut(raw, 64)))
		}
		raw = stringAttr(m, attrDeadAt)
		if dl.At, err = time.Parse(time.RFC3339Nano, raw); err != nil {
			notes = append(notes, fmt.Sprintf("%s %q is not an RFC 3339 time", attrDeadAt, cut(raw, 64)))
		}
		dl.At = dl.At.UTC()
	}
	body, err := w.decode()
	if err != nil {
		body = []byte(w.body)
		notes = append(notes, err.Error())
	}
	dl.Body = body
	for _, n := range notes {
		if !strings.Contains(dl.Reason, n) { // Receive's reason may say it already
			dl.Reason += " [" + n + "]"
		}
	}
	return buried{receipt: receipt, w: w, dl: dl}
}

// redrivePolicy is the source queue's RedrivePolicy, as far as DeadLetters
// needs it.
type redrivePolicy struct {
	maxReceiveCount int
	err             error // why it could not be read
}

// redrivePolicy reads the source queue's RedrivePolicy.
func (q *Queue) redrivePolicy(ctx context.Context) redrivePolicy {
	out, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q.url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		return redrivePolicy{err: translate(err)}
	}
	p, err := parseRedrivePolicy(out.Attributes[string(types.QueueAttributeNameRedrivePolicy)])
	if err != nil {
		return redrivePolicy{err: err}
	}
	return redrivePolicy{maxReceiveCount: p.MaxReceiveCount}
}

// policyDoc is an SQS RedrivePolicy; maxReceiveCount comes as a number
// or a string.
type policyDoc struct {
	DeadLetterTargetArn string
	MaxReceiveCount     int
}

func parseRedrivePolicy(s string) (policyDoc, error) {
	if s == "" {
		return policyDoc{}, errors.New("the queue has no RedrivePolicy")
	}
	var raw struct {
		DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return policyDoc{}, fmt.Errorf("RedrivePolicy %q: %w", s, err)
	}
	n, err := strconv.Atoi(strings.Trim(string(raw.MaxReceiveCount), `"`))
	if err != nil || n < 1 {
		return policyDoc{}, fmt.Errorf("RedrivePolicy %q: maxReceiveCount is not a positive count", s)
	}
	return policyDoc{DeadLetterTargetArn: raw.DeadLetterTargetArn, MaxReceiveCount: n}, nil
}

// release makes hidden dead letters visible again at once. It runs even
// if ctx is done; a dead letter it cannot release comes back after the
// scan's hold anyway.
func (q *Queue) release(ctx context.Context, receipts []string) {
	if len(receipts) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for chunk := range slices.Chunk(receipts, maxBatchEntries) {
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(chunk))
		for i, r := range chunk {
			entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String("r" + strconv.Itoa(i)), ReceiptHandle: aws.String(r)}
		}
		out, err := q.client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(q.deadURL), Entries: entries})
		switch {
		case err != nil:
			q.log.WarnContext(ctx, "sqsqueue: dead letters not made visible again; they are after the scan's hold",
				"queue", q.name, "count", len(chunk), "hold_s", scanHoldSeconds, "err", translate(err))
		case len(out.Failed) > 0:
			q.log.WarnContext(ctx, "sqsqueue: dead letters not made visible again; they are after the scan's hold",
				"queue", q.name, "count", len(out.Failed), "hold_s", scanHoldSeconds, "code", aws.ToString(out.Failed[0].Code), "message", aws.ToString(out.Failed[0].Message))
		}
	}
}

// DeadLetters lists this queue's dead letters, oldest first (by the time
// they were dead-lettered; for those SQS moved, the time they were sent),
// at most limit of them (limit ≤ 0: all). Copies of one message (see the
// package comment) are listed once, the oldest. It reads the whole
// dead-letter queue, up to Options.ScanLimit messages, and leaves it as it
// was.
func (q *Queue) DeadLetters(ctx context.Context, limit int) ([]publishing.DeadLetter, error) {
	s, err := q.scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqsqueue %s dead letters: %w", q.name, err)
	}
	defer q.release(ctx, s.receipts())
	byID := map[string]publishing.DeadLetter{}
	for _, b := range s.mine {
		if prev, ok := byID[b.dl.ID]; !ok || b.dl.At.Before(prev.At) {
			byID[b.dl.ID] = b.dl
		}
	}
	out := make([]publishing.DeadLetter, 0, len(byID))
	for _, d := range byID {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b publishing.DeadLetter) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.ID, b.ID))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Redrive sends the dead letter with message id id back to this queue,
// visible at once, with its id and body; its receive count starts again
// (it is a new SQS message, whose SentAt is the redrive). Then every copy
// of it is deleted from the dead-letter queue. A crash in between leaves
// it queued and still dead-lettered (a later Redrive sends it again: a
// duplicate, never a loss). An id that is not among this queue's dead
// letters gives an error wrapping publishing.ErrMessageNotFound (or
// ErrScanLimit if the scan did not see the whole dead-letter queue).
func (q *Queue) Redrive(ctx context.Context, id string) error {
	err := q.takeDead(ctx, id, func(b buried) error {
		attrs := b.w.attributes()
		_, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl: aws.String(q.url), MessageBody: aws.String(b.w.body), MessageAttributes: attrs,
		})
		if err != nil {
			return fmt.Errorf("send it back: %w", translate(err))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqsqueue %s redrive %s: %w", q.name, id, err)
	}
	return nil
}

// Drop deletes every copy of the dead letter with message id id. An id
// that is not among this queue's dead letters gives an error wrapping
// publishing.ErrMessageNotFound (or ErrScanLimit).
func (q *Queue) Drop(ctx context.Context, id string) error {
	if err := q.takeDead(ctx, id, nil); err != nil {
		return fmt.Errorf("sqsqueue %s drop %s: %w", q.name, id, err)
	}
	return nil
}

// takeDead finds the dead letter id, calls first (if not nil) with its
// oldest copy, and if that succeeds deletes every copy. Everything else
// the scan hid is released.
func (q *Queue) takeDead(ctx context.Context, id string, first func(buried) error) error {
	s, err := q.scan(ctx)
	if err != nil {
		return err
	}
	var match []buried
	keep := slices.Clone(s.others)
	for _, b := range s.mine {
		if b.dl.ID == id {
			match = append(match, b)
		} else {
			keep = append(keep, b.receipt)
		}
	}
	defer func() { q.release(ctx, keep) }()
	if len(match) == 0 {
		if s.full {
			return fmt.Errorf("not among the first %d dead letters read: %w", q.scanLimit, ErrScanLimit)
		}
		return publishing.ErrMessageNotFound
	}
	slices.SortFunc(match, func(a, b buried) int { return a.dl.At.Compare(b.dl.At) })
	if first != nil {
		if err := first(match[0]); err != nil {
			for _, b := range match {
				keep = append(keep, b.receipt)
			}
			return err
		}
	}
	var errs []error
	for _, b := range match {
		_, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.deadURL), ReceiptHandle: aws.String(b.receipt)})
		if err != nil {
			errs = append(errs, fmt.Errorf("delete a copy from the dead-letter queue (it is listed again after %d s): %w", scanHoldSeconds, translate(err)))
		}
	}
	return errors.Join(errs...)
}
