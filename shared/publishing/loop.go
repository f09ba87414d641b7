package publishing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"oncepost/shared/post"
)

// Backoff bounds for retried deliveries: min(2^n·Base, Cap) + jitter.
const (
	BackoffBase = 100 * time.Millisecond
	BackoffCap  = 5 * time.Second
)

// Backoff is the delay before delivery n+1 (n ≥ 1 deliveries so far):
// min(2^(n-1)·100 ms, 5 s) plus up to 50% jitter, and never less than the
// platform's Retry-After.
func Backoff(n int, retryAfter time.Duration, jitter func(time.Duration) time.Duration) time.Duration {
	d := BackoffCap
	if n < 1 {
		n = 1
	}
	if n-1 < 16 {
		d = min(BackoffBase<<(n-1), BackoffCap)
	}
	if jitter != nil && d > 0 {
		d += jitter(d / 2)
	}
	return max(d, retryAfter)
}

// Store retry schedule: a delivery that could not reach the store or the
// workflow service comes back after StoreRetryBase, doubling up to
// StoreRetryCap, and the last receive the queue allows covers whatever of
// the outage to ride out is left (never over SQS's 12 h visibility).
const (
	StoreRetryBase = 15 * time.Second
	StoreRetryCap  = 15 * time.Minute
	// DefaultOutage is how long a store or workflow outage the receives
	// of a job ride out before it is dead-lettered.
	DefaultOutage = time.Hour
	// DefaultMaxReceives is SQS's maxReceiveCount in the template.
	DefaultMaxReceives = 10
	maxVisibility      = 12 * time.Hour
)

// StoreRetryDelay is the delay before delivery n+1 of a job that could
// not reach the store or the workflow service (n ≥ 1 deliveries so far),
// on a queue that dead-letters after maxReceives deliveries: 15 s, 30 s,
// … doubling up to 15 min, and the last allowed redelivery late enough
// that the delays add up to at least outage. Unlike Backoff (a few
// seconds, for a lost race), it is spread so that a job survives the
// outage of a dependency instead of spending its receives in a minute.
// jitter, if not nil, adds up to half of the delay.
func StoreRetryDelay(n, maxReceives int, outage time.Duration, jitter func(time.Duration) time.Duration) time.Duration {
	retries := max(maxReceives-1, 1)
	n = min(max(n, 1), retries)
	step := func(k int) time.Duration {
		if k-1 >= 16 {
			return StoreRetryCap
		}
		return min(StoreRetryBase<<(k-1), StoreRetryCap)
	}
	d := step(n)
	if n == retries {
		var before time.Duration
		for k := 1; k < retries; k++ {
			before += step(k)
		}
		d = min(max(d, outage-before), maxVisibility)
	}
	if jitter != nil {
		d = min(d+jitter(d/2), maxVisibility)
	}
	return d
}

// MaxIDBytes bounds the post and account ids a job may carry: a longer id
// is refused before it reaches a log line, a dead-letter reason or a page.
const MaxIDBytes = 256

// DecodeJob parses a queue body strictly: unknown fields, missing or
// oversized ids or slot, and trailing data are errors naming the field.
func DecodeJob(body []byte) (Job, error) {
	if len(body) > MaxMessageBytes {
		return Job{}, fmt.Errorf("queue body is %d bytes, over the limit of %d", len(body), MaxMessageBytes)
	}
	var w struct {
		Post    string `json:"post_id"`
		Account string `json:"account_id"`
		Slot    string `json:"slot"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Job{}, fmt.Errorf("queue body is not a job: %w", err)
	}
	if dec.More() {
		return Job{}, errors.New("queue body has data after the job object")
	}
	switch {
	case w.Post == "":
		return Job{}, errors.New("queue body: post_id is missing")
	case w.Account == "":
		return Job{}, errors.New("queue body: account_id is missing")
	case w.Slot == "":
		return Job{}, errors.New("queue body: slot is missing")
	case len(w.Post) > MaxIDBytes:
		return Job{}, fmt.Errorf("queue body: post_id is %d bytes, over the limit of %d", len(w.Post), MaxIDBytes)
	case len(w.Account) > MaxIDBytes:
		return Job{}, fmt.Errorf("queue body: account_id is %d bytes, over the limit of %d", len(w.Account), MaxIDBytes)
	case len(w.Slot) > 64:
		return Job{}, fmt.Errorf("queue body: slot is %d bytes, not an RFC 3339 time", len(w.Slot))
	}
	slot, err := time.Parse(time.RFC3339Nano, w.Slot)
	if err != nil {
		return Job{}, fmt.Errorf("queue body: slot %q is not an RFC 3339 time", w.Slot)
	}
	return Job{Post: post.ID(w.Post), Account: post.AccountID(w.Account), Slot: slot.UTC()}, nil
}

// Loop feeds queue deliveries to a Publisher: receive → Publish → ack, or
// retry later with backoff, or dead-letter what can never be processed.
type Loop struct {
	Queue     Queue
	Publisher *Publisher
	// Batch is how many messages one receive takes; default 10.
	Batch int
	// Visibility hides a received message while it is processed; it must
	// exceed the publisher's CallTimeout+RecordMargin. Default 1 min.
	Visibility time.Duration
	// Idle is the pause after an empty receive; default 200 ms.
	Idle   time.Duration
	Logger *slog.Logger
	// Jitter returns a random duration in [0, d); default math/rand.
	Jitter func(d time.Duration) time.Duration
	// MaxDelay caps the delay of a job put back on the queue to wait
	// (SQS's DelaySeconds stops at 15 minutes); a job back too early is
	// put back again. Default 15 min.
	MaxDelay time.Duration
	// MaxReceives is how many deliveries the queue makes before it
	// dead-letters a job (SQS's maxReceiveCount); default 10. With Outage
	// it spreads the redeliveries of a job that cannot reach the store
	// (StoreRetryDelay).
	MaxReceives int
	// Outage is how long a store or workflow outage a job rides out before
	// its receives are spent; default 1 h.
	Outage time.Duration
}

func (l *Loop) log() *slog.Logger { return loggerOr(l.Logger) }

// Run processes deliveries until ctx is done. A delivery in flight when
// ctx ends is finished with the context's values but not its cancellation,
// so the outcome is recorded; anything not acknowledged comes back after
// its visibility timeout.
func (l *Loop) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		n, err := l.RunOnce(ctx)
		if err != nil {
			l.log().ErrorContext(ctx, "publisher loop", "err", err)
		}
		if n == 0 || err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(orDefault(l.Idle, 200*time.Millisecond)):
			}
		}
	}
	return nil
}

// RunOnce receives one batch and handles every message in it. It returns
// how many messages it handled.
func (l *Loop) RunOnce(ctx context.Context) (int, error) {
	msgs, err := l.Queue.Receive(ctx, orDefault(l.Batch, 10), orDefault(l.Visibility, time.Minute))
	if err != nil {
		return 0, fmt.Errorf("receive: %w", err)
	}
	var errs []error
	for _, m := range msgs {
		if err := l.Handle(context.WithoutCancel(ctx), m); err != nil {
			errs = append(errs, err)
		}
	}
	return len(msgs), errors.Join(errs...)
}

// Handle processes one delivery. An error means the queue could not be
// told the result; the message then comes back after its visibility timeout.
func (l *Loop) Handle(ctx context.Context, m Message) error {
	job, err := DecodeJob(m.Body)
	if err != nil {
		l.log().WarnContext(ctx, "dead-lettering malformed queue body", "message_id", m.ID, "reason", err.Error())
		return l.deadLetter(ctx, m, err.Error())
	}
	out, err := l.Publisher.Publish(ctx, job)
	switch {
	case errors.Is(err, ErrBadJob):
		l.log().WarnContext(ctx, "dead-lettering job", "message_id", m.ID, "reason", err.Error())
		return l.deadLetter(ctx, m, err.Error())
	case err != nil:
		// The store or the workflow service could not be reached: the
		// delivery comes back later and spends a receive, spread so that
		// the receives ride out an outage of Outage, and a message that
		// always fails still ends in the dead-letter queue.
		delay := StoreRetryDelay(m.ReceiveCount, orDefault(l.MaxReceives, DefaultMaxReceives), orDefault(l.Outage, DefaultOutage), l.jitter)
		l.log().ErrorContext(ctx, "publish failed; delivery retried", "message_id", m.ID, "post", job.Post, "account", job.Account, "err", err, "retry_in", delay.String())
		return l.retry(ctx, m, delay)
	case out.Result == Retry && out.RetryAfter > 0:
		// The entry records when it may be sent again (throttled, backing
		// off, early): wait for that on a fresh message, so that waiting
		// never spends the message's receives.
		delay := min(out.RetryAfter, orDefault(l.MaxDelay, 15*time.Minute))
		l.log().InfoContext(ctx, "publish not performed; job put back", "message_id", m.ID, "key", out.Key, "reason", out.Reason, "retry_in", delay.String())
		return l.putBack(ctx, m, delay)
	case out.Result == Retry:
		delay := Backoff(m.ReceiveCount, 0, l.jitter)
		l.log().InfoContext(ctx, "publish not performed; delivery retried", "message_id", m.ID, "key", out.Key, "reason", out.Reason, "retry_in", delay.String())
		return l.retry(ctx, m, delay)
	}
	if err := l.Queue.Ack(ctx, m.Receipt); err != nil {
		return fmt.Errorf("ack %s: %w", m.ID, err)
	}
	return nil
}

func (l *Loop) jitter(d time.Duration) time.Duration {
	if l.Jitter != nil {
		return l.Jitter(d)
	}
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

func (l *Loop) retry(ctx context.Context, m Message, delay time.Duration) error {
	if err := l.Queue.Retry(ctx, m.Receipt, delay); err != nil {
		return fmt.Errorf("retry %s: %w", m.ID, err)
	}
	return nil
}

// putBack sends the body again with a delay, then acknowledges this
// delivery (a crash in between leaves two copies; the ledger absorbs them).
func (l *Loop) putBack(ctx context.Context, m Message, delay time.Duration) error {
	if _, err := l.Queue.Send(ctx, m.Body, delay); err != nil {
		return fmt.Errorf("put back %s: %w", m.ID, err)
	}
	if err := l.Queue.Ack(ctx, m.Receipt); err != nil {
		return fmt.Errorf("ack %s after putting it back: %w", m.ID, err)
	}
	return nil
}

func (l *Loop) deadLetter(ctx context.Context, m Message, reason string) error {
	if err := l.Queue.DeadLetter(ctx, m.Receipt, reason); err != nil {
		return fmt.Errorf("dead-letter %s: %w", m.ID, err)
	}
	return nil
}
