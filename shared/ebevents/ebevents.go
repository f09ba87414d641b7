// Package ebevents puts oncepost's events (publishing.Event) on an
// Amazon EventBridge event bus, so that AWS-native consumers subscribe to
// them with rules: source "oncepost", detail-type the event type
// ("post.published" …), detail the event's JSON (the "data" of the
// webhook body), time the event's.
//
// PutEvents takes at most ten entries per call and answers a partial
// failure with HTTP 200: FailedEntryCount above zero, and in Entries (the
// request's length and order) an ErrorCode on each entry that failed. Bus
// sends ten at a time and sends again only the entries that failed, a few
// rounds apart, so an event is never put twice by one Put (one whose
// answer was lost may be: EventBridge delivers at least once anyway,
// and consumers dedupe on the detail's id).
package ebevents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"oncepost/shared/publishing"
)

// Source is every entry's source: a rule's pattern matches
// {"source": ["oncepost"]}.
const Source = "oncepost"

// MaxEntries is PutEvents' limit of entries per call.
const MaxEntries = 10

// DefaultRounds is how many times Put sends an entry that keeps failing.
const DefaultRounds = 3

// API is the part of the EventBridge client Bus calls;
// *eventbridge.Client implements it.
type API interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

var _ API = (*eventbridge.Client)(nil)

// Options tune a Bus; the zero value is ready to use.
type Options struct {
	// Rounds is how many times an entry that fails is sent; default
	// DefaultRounds.
	Rounds int
	// Pause is the wait before round n (1, 2, …) of resends; default
	// 100 ms × 2^(n-1), cut short when ctx ends.
	Pause func(round int) time.Duration
}

// Bus puts events on one event bus. Safe for concurrent use.
type Bus struct {
	client API
	name   string
	rounds int
	pause  func(int) time.Duration
}

// New returns a Bus putting on the bus named name (its name or ARN).
func New(client API, name string, opts Options) (*Bus, error) {
	if client == nil {
		return nil, errors.New("ebevents: no EventBridge client")
	}
	if name == "" {
		return nil, errors.New("ebevents: no event bus name")
	}
	b := &Bus{client: client, name: name, rounds: opts.Rounds, pause: opts.Pause}
	if b.rounds <= 0 {
		b.rounds = DefaultRounds
	}
	if b.pause == nil {
		b.pause = func(n int) time.Duration { return 100 * time.Millisecond << (n - 1) }
	}
	return b, nil
}

// Entry is the PutEvents entry of ev on the bus named bus.
func Entry(bus string, ev publishing.Event) (types.PutEventsRequestEntry, error) {
	detail, err := json.Marshal(ev)
	if err != nil {
		return types.PutEventsRequestEntry{}, fmt.Errorf("event %s: %w", ev.ID, err)
	}
	e := types.PutEventsRequestEntry{
		EventBusName: aws.String(bus), Source: aws.String(Source), DetailType: aws.String(string(ev.Type)),
		Detail: aws.String(string(detail)),
	}
	if !ev.At.IsZero() {
		e.Time = aws.Time(ev.At.UTC())
	}
	return e, nil
}

// Put puts evs on the bus and returns, for each, nil if it was put or
// why not: an entry that failed is sent again (only it) up to the rounds
// allowed; a call that failed as a whole counts as a failure of each of
// its entries.
func (b *Bus) Put(ctx context.Context, evs []publishing.Event) []error {
	errs := make([]error, len(evs))
	var todo []int
	entries := make([]types.PutEventsRequestEntry, len(evs))
	for i, ev := range evs {
		e, err := Entry(b.name, ev)
		if err != nil {
			errs[i] = err
			continue
		}
		entries[i] = e
		todo = append(todo, i)
	}
	for round := 1; len(todo) > 0; round++ {
		var failed []int
		for start := 0; start < len(todo); start += MaxEntries {
			chunk := todo[start:min(start+MaxEntries, len(todo))]
			for _, i := range b.putChunk(ctx, chunk, entries, errs) {
				failed = append(failed, i)
			}
		}
		todo = failed
		if len(todo) == 0 || round >= b.rounds {
			break
		}
		t := time.NewTimer(b.pause(round))
		select {
		case <-ctx.Done():
			t.Stop()
			for _, i := range todo {
				errs[i] = fmt.Errorf("%w (not sent again: %v)", errs[i], ctx.Err())
			}
			return errs
		case <-t.C:
		}
	}
	return errs
}

// putChunk sends the entries at idx (at most MaxEntries) and returns
// those that failed, their errors recorded in errs (and cleared for the
// others).
func (b *Bus) putChunk(ctx context.Context, idx []int, entries []types.PutEventsRequestEntry, errs []error) (failed []int) {
	in := &eventbridge.PutEventsInput{Entries: make([]types.PutEventsRequestEntry, len(idx))}
	for k, i := range idx {
		in.Entries[k] = entries[i]
	}
	out, err := b.client.PutEvents(ctx, in)
	if err == nil && len(out.Entries) != len(idx) {
		err = fmt.Errorf("PutEvents answered %d entries for %d", len(out.Entries), len(idx))
	}
	if err != nil {
		for _, i := range idx {
			errs[i] = fmt.Errorf("put event on bus %s: %w", b.name, err)
		}
		return idx
	}
	for k, i := range idx {
		res := out.Entries[k]
		if code := aws.ToString(res.ErrorCode); code != "" {
			errs[i] = fmt.Errorf("put event on bus %s: %s: %s", b.name, code, aws.ToString(res.ErrorMessage))
			failed = append(failed, i)
			continue
		}
		errs[i] = nil
	}
	return failed
}
