package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"oncepost/shared/publishing"
)

// Interface guards.
var (
	_ publishing.Queue           = (*Queue)(nil)
	_ publishing.DeadLetterAdmin = (*Queue)(nil)
	_ publishing.BatchSender     = (*Queue)(nil)
)

// Options tunes a Queue. The zero value is valid.
type Options struct {
	// MaxReceives, if positive, makes Receive dead-letter a message it
	// gets for delivery number MaxReceives+1 instead of handing it out
	// (reason ReasonMaxReceives). Zero leaves it to the queue's
	// RedrivePolicy. With both, set them equal: SQS then moves the
	// message first, and this is the safety net should the policy be
	// removed.
	MaxReceives int
	// ScanLimit is how many dead letters DeadLetters, Redrive and Drop
	// read at most. Zero means 1000.
	ScanLimit int
	// Logger gets what a call cannot return: a message Receive could not
	// dead-letter (it comes back after its visibility timeout), a
	// dead-letter scan cut short, a dead letter not made visible again.
	// Nil means slog.Default().
	Logger *slog.Logger
}

// Durations of the adapter's own visibility changes, in seconds.
const (
	// holdSeconds hides a delivery while Ack deletes it or DeadLetter
	// copies it: long enough for those calls, short enough that a
	// delivery whose Ack or DeadLetter failed half-way comes back soon.
	holdSeconds = 30
	// scanHoldSeconds hides dead letters while a scan reads them.
	scanHoldSeconds = 30
	// scanWaitSeconds is a scan's long-poll wait: on SQS only a long
	// poll asks every server, so only an empty long poll means the scan
	// has seen every dead letter.
	scanWaitSeconds = 1
	// defaultScanLimit is Options.ScanLimit's default.
	defaultScanLimit = 1000
	// cacheSlack keeps a delivery's body for DeadLetter a little past its
	// visibility timeout.
	cacheSlack = time.Minute
)

// Queue is a publishing.Queue and publishing.DeadLetterAdmin on an SQS
// standard queue and its dead-letter queue. It is safe for concurrent use.
type Queue struct {
	client       *sqs.Client
	url, deadURL string
	name         string // the queue's name, for errors
	source       string // account/name, the oncepost.source of its dead letters
	maxReceives  int
	scanLimit    int
	log          *slog.Logger
	now          func() time.Time
	// bmpOnly base64-encodes text with characters beyond U+FFFF too. Only
	// tests set it: fauxqs refuses such characters, SQS does not.
	bmpOnly bool

	mu         sync.Mutex
	deliveries map[string]delivery // by receipt: what DeadLetter copies
	pruned     time.Time           // when deliveries was last pruned
}

// delivery is a message handed out by Receive, kept for DeadLetter.
type delivery struct {
	w     wire
	count int       // deliveries so far, this one included
	until time.Time // when the entry may be dropped
}

// New returns the adapter for the standard queue at queueURL whose
// dead letters go to the standard queue at deadLetterURL (and, with a
// RedrivePolicy, are moved there by SQS). It makes no call; Check
// verifies the queues' attributes.
func New(client *sqs.Client, queueURL, deadLetterURL string, opts Options) (*Queue, error) {
	if client == nil {
		return nil, errors.New("sqsqueue: nil SQS client")
	}
	account, name, err := queuePath(queueURL)
	if err != nil {
		return nil, fmt.Errorf("sqsqueue: queue URL: %w", err)
	}
	if _, _, err := queuePath(deadLetterURL); err != nil {
		return nil, fmt.Errorf("sqsqueue: dead-letter queue URL: %w", err)
	}
	if queueURL == deadLetterURL {
		return nil, fmt.Errorf("sqsqueue: queue %s cannot be its own dead-letter queue", name)
	}
	if opts.MaxReceives < 0 || opts.ScanLimit < 0 {
		return nil, fmt.Errorf("sqsqueue: MaxReceives %d and ScanLimit %d must not be negative", opts.MaxReceives, opts.ScanLimit)
	}
	q := &Queue{
		client:      client,
		url:         queueURL,
		deadURL:     deadLetterURL,
		name:        name,
		source:      account + "/" + name,
		maxReceives: opts.MaxReceives,
		scanLimit:   opts.ScanLimit,
		log:         opts.Logger,
		now:         time.Now,
		deliveries:  map[string]delivery{},
	}
	if q.scanLimit == 0 {
		q.scanLimit = defaultScanLimit
	}
	if q.log == nil {
		q.log = slog.Default()
	}
	return q, nil
}

// queuePath splits an SQS queue URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME)
// into its account and name.
func queuePath(u string) (account, name string, err error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", "", err
	}
	parts := strings.Split(strings.Trim(p.Path, "/"), "/")
	if p.Scheme == "" || p.Host == "" || len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", fmt.Errorf("%q is not a queue URL like https://sqs.REGION.amazonaws.com/ACCOUNT/NAME", u)
	}
	return parts[0], parts[1], nil
}

// Send enqueues body, invisible for delay (rounded up to whole seconds),
// and returns the message id. A body over publishing.MaxMessageBytes is
// refused (ErrMessageTooLarge), as is an empty one (ErrEmptyBody) and a
// delay over 15 minutes (ErrDelayTooLong): SQS delays no message longer,
// and a shorter delay would deliver it early.
func (q *Queue) Send(ctx context.Context, body []byte, delay time.Duration) (string, error) {
	in, w, err := q.sendInput(body, delay)
	if err != nil {
		return "", fmt.Errorf("sqsqueue %s send: %w", q.name, err)
	}
	if _, err := q.client.SendMessage(ctx, in); err != nil {
		return "", fmt.Errorf("sqsqueue %s send: %w", q.name, translate(err))
	}
	return w.id, nil
}

// sendInput checks and encodes one outgoing message.
func (q *Queue) sendInput(body []byte, delay time.Duration) (*sqs.SendMessageInput, wire, error) {
	switch {
	case len(body) == 0:
		return nil, wire{}, ErrEmptyBody
	case len(body) > publishing.MaxMessageBytes:
		return nil, wire{}, fmt.Errorf("body of %d bytes is over the limit of %d bytes: %w", len(body), publishing.MaxMessageBytes, ErrMessageTooLarge)
	case seconds(delay) > maxDelaySeconds:
		return nil, wire{}, fmt.Errorf("delay %s is over SQS's %d s: %w", delay, maxDelaySeconds, ErrDelayTooLong)
	}
	w := outgoing(body, q.bmpOnly)
	return &sqs.SendMessageInput{
		QueueUrl:          aws.String(q.url),
		MessageBody:       aws.String(w.body),
		DelaySeconds:      int32(seconds(delay)),
		MessageAttributes: w.attributes(),
	}, w, nil
}

// Receive returns up to maxMessages visible messages (at most 10, SQS's limit;
// fewer may come, SQS short-polls) and hides them for visibility, rounded
// up to whole seconds and at least one. It does not block. A message that
// cannot be decoded is dead-lettered instead (ReasonUndecodable), and so
// is one delivered Options.MaxReceives times already (ReasonMaxReceives);
// one that could not be moved is logged and comes back after its
// visibility timeout. A visibility over 12 hours is refused
// (ErrDelayTooLong).
func (q *Queue) Receive(ctx context.Context, maxMessages int, visibility time.Duration) ([]publishing.Message, error) {
	if maxMessages <= 0 {
		return nil, nil
	}
	vis := seconds(visibility)
	if vis > maxVisibilitySeconds {
		return nil, fmt.Errorf("sqsqueue %s receive: visibility %s is over SQS's 12 h: %w", q.name, visibility, ErrDelayTooLong)
	}
	vis = max(vis, 1) // 0 would be omitted, and the queue's default apply
	out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(q.url),
		MaxNumberOfMessages: int32(min(maxMessages, maxBatchEntries)),
		VisibilityTimeout:   int32(vis),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{
			types.MessageSystemAttributeNameApproximateReceiveCount,
			types.MessageSystemAttributeNameSentTimestamp,
		},
		MessageAttributeNames: []string{"All"},
	})
	if err != nil {
		return nil, fmt.Errorf("sqsqueue %s receive: %w", q.name, translate(err))
	}
	received := q.now()
	var msgs []publishing.Message
	var moveErrs []error
	for _, m := range out.Messages {
		receipt := aws.ToString(m.ReceiptHandle)
		w := fromSQS(m)
		count, sentAt, body, problem := inbound(m, w)
		if reason := q.deadOnArrival(count, problem); reason != "" {
			if err := q.moveToDead(ctx, receipt, w, max(count-1, 0), reason); err != nil {
				q.log.ErrorContext(ctx, "sqsqueue: could not dead-letter a message; it comes back after its visibility timeout",
					"queue", q.name, "message_id", w.id, "reason", reason, "err", err)
				moveErrs = append(moveErrs, err)
				continue
			}
			q.log.WarnContext(ctx, "sqsqueue: message dead-lettered on receive", "queue", q.name, "message_id", w.id, "reason", reason)
			continue
		}
		q.remember(receipt, delivery{w: w, count: count, until: received.Add(time.Duration(vis)*time.Second + cacheSlack)})
		msgs = append(msgs, publishing.Message{ID: w.id, Body: body, ReceiveCount: count, Receipt: receipt, SentAt: sentAt})
	}
	if len(msgs) == 0 && len(moveErrs) > 0 {
		return nil, fmt.Errorf("sqsqueue %s receive: %w", q.name, errors.Join(moveErrs...))
	}
	return msgs, nil
}

// inbound decodes a received message: its receive count, send time and
// body, or what makes it undecodable.
// deadOnArrival is why a delivery is dead-lettered instead of handed
// out — it cannot be decoded (problem), or this is delivery MaxReceives+1 —
// or "".
func (q *Queue) deadOnArrival(count int, problem string) string {
	switch {
	case problem != "":
		return ReasonUndecodable + ": " + problem
	case q.maxReceives > 0 && count > q.maxReceives:
		return fmt.Sprintf("%s: delivered %d times", ReasonMaxReceives, count-1)
	}
	return ""
}

func inbound(m types.Message, w wire) (count int, sentAt time.Time, body []byte, problem string) {
	count, err := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	if err != nil || count < 1 {
		return 0, time.Time{}, nil, fmt.Sprintf("ApproximateReceiveCount %q is not a count", m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	}
	ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	if err != nil {
		return count, time.Time{}, nil, fmt.Sprintf("SentTimestamp %q is not a time in milliseconds", m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)])
	}
	sentAt = time.UnixMilli(ms).UTC()
	body, err = w.decode()
	switch {
	case err != nil:
		return count, sentAt, nil, err.Error()
	case len(body) > publishing.MaxMessageBytes:
		return count, sentAt, nil, fmt.Sprintf("body of %d bytes is over the limit of %d bytes", len(body), publishing.MaxMessageBytes)
	}
	return count, sentAt, body, ""
}

// remember keeps a delivery for DeadLetter, and forgets expired ones.
func (q *Queue) remember(receipt string, d delivery) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.deliveries[receipt] = d
	now := q.now()
	if now.Sub(q.pruned) < cacheSlack {
		return
	}
	q.pruned = now
	for r, d := range q.deliveries {
		if now.After(d.until) {
			delete(q.deliveries, r)
		}
	}
}

func (q *Queue) delivered(receipt string) (delivery, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	d, ok := q.deliveries[receipt]
	return d, ok
}

func (q *Queue) forget(receipt string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.deliveries, receipt)
}

// Ack deletes a delivered message. A receipt that is not the message's
// current delivery is refused (ErrStaleReceipt) and deletes nothing: Ack
// first changes the delivery's visibility, which SQS refuses for a
// message no longer in flight under that receipt, then deletes. An Ack
// after the visibility timeout may therefore be refused too; the message
// is then delivered again, never lost.
func (q *Queue) Ack(ctx context.Context, receipt string) error {
	if err := q.hold(ctx, receipt, holdSeconds); err != nil {
		return fmt.Errorf("sqsqueue %s ack: %w", q.name, err)
	}
	if _, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(receipt)}); err != nil {
		return fmt.Errorf("sqsqueue %s ack: %w", q.name, translate(err))
	}
	q.forget(receipt)
	return nil
}

// hold sets a delivery's visibility timeout; a stale receipt gives
// ErrStaleReceipt (and is forgotten).
func (q *Queue) hold(ctx context.Context, receipt string, secs int64) error {
	if receipt == "" {
		return fmt.Errorf("empty receipt: %w", ErrStaleReceipt)
	}
	_, err := q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(receipt), VisibilityTimeout: int32(secs),
	})
	err = translate(err)
	if errors.Is(err, ErrStaleReceipt) {
		q.forget(receipt)
	}
	return err
}

// Retry makes a delivered message visible again after delay (rounded up
// to whole seconds): ChangeMessageVisibility. A stale receipt is refused
// (ErrStaleReceipt), and so is a delay over 12 hours (ErrDelayTooLong).
func (q *Queue) Retry(ctx context.Context, receipt string, delay time.Duration) error {
	secs := seconds(delay)
	if secs > maxVisibilitySeconds {
		return fmt.Errorf("sqsqueue %s retry: delay %s is over SQS's 12 h: %w", q.name, delay, ErrDelayTooLong)
	}
	if err := q.hold(ctx, receipt, secs); err != nil {
		return fmt.Errorf("sqsqueue %s retry: %w", q.name, err)
	}
	q.mu.Lock()
	if d, ok := q.deliveries[receipt]; ok {
		d.until = q.now().Add(time.Duration(secs)*time.Second + cacheSlack)
		q.deliveries[receipt] = d
	}
	q.mu.Unlock()
	return nil
}

// DeadLetter moves a delivered message to the dead-letter queue with the
// reason (invalid UTF-8 and characters SQS refuses replaced by U+FFFD;
// over publishing.MaxReasonBytes cut on a rune boundary, ending with
// "… (cut)"). The receipt must come from this Queue value's Receive
// (ErrUnknownReceipt otherwise: SQS cannot read a message by receipt) and
// be current (ErrStaleReceipt). The copy is sent before the delivery is
// deleted (see the package comment).
func (q *Queue) DeadLetter(ctx context.Context, receipt, reason string) error {
	d, ok := q.delivered(receipt)
	if !ok {
		return fmt.Errorf("sqsqueue %s dead-letter: %w", q.name, ErrUnknownReceipt)
	}
	if err := q.moveToDead(ctx, receipt, d.w, d.count, reason); err != nil {
		return fmt.Errorf("sqsqueue %s dead-letter %s: %w", q.name, d.w.id, err)
	}
	return nil
}

// moveToDead hides the delivery (proving the receipt current), sends its
// copy with the reason to the dead-letter queue, then deletes the
// delivery.
func (q *Queue) moveToDead(ctx context.Context, receipt string, w wire, count int, reason string) error {
	if err := q.hold(ctx, receipt, holdSeconds); err != nil {
		return err
	}
	if err := q.copyToDead(ctx, w, count, reason); err != nil {
		return err
	}
	if _, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(receipt)}); err != nil {
		return fmt.Errorf("copied to the dead-letter queue, but the delivery was not deleted (it will be delivered again): %w", translate(err))
	}
	q.forget(receipt)
	return nil
}

// copyToDead sends w's copy with the reason to the dead-letter queue.
func (q *Queue) copyToDead(ctx context.Context, w wire, count int, reason string) error {
	attrs := w.attributes()
	attrs[attrReason] = text(reasonText(reason))
	attrs[attrReceiveCount] = number(count)
	attrs[attrDeadAt] = text(q.now().UTC().Format(time.RFC3339Nano))
	attrs[attrSource] = text(q.source)
	_, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(q.deadURL), MessageBody: aws.String(w.body), MessageAttributes: attrs,
	})
	if err != nil {
		return fmt.Errorf("copy to the dead-letter queue: %w", translate(err))
	}
	return nil
}
