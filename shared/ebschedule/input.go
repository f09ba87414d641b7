package ebschedule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// scheduledTimeAttr is the context attribute Scheduler replaces, in a
// target's Input, with the time the invocation was scheduled for
// (https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-context-attributes.html).
// The execution id (<aws.scheduler.execution-id>) is deliberately not
// used: it changes on every retry attempt.
const scheduledTimeAttr = "<aws.scheduler.scheduled-time>"

// Input is the event a target schedule hands the trigger Lambda:
//
//	{"post_id":"launch","account_id":"news","slot":"2026-12-01T08:00:00Z","scheduled_time":"2026-12-01T07:59:00Z"}
//
// post_id, account_id and slot are the target (publishing.TargetRef's
// encoding, as the embedded runtime's localcron payload); slot is the real
// planned time, which the schedule fires up to two minutes before (see
// FireTime). scheduled_time is Scheduler's <aws.scheduler.scheduled-time>,
// the schedule's at() time, the same on every retry attempt of one
// invocation.
type Input struct {
	publishing.TargetRef
	// ScheduledTime is the invocation's scheduled time, filled in by
	// Scheduler.
	ScheduledTime time.Time `json:"scheduled_time"`
}

// encodeInput writes a target's Input with the scheduled-time context
// attribute in place of scheduled_time. The ids are encoded by
// encoding/json, which escapes '<' and '>', so no id can smuggle in a
// context attribute; the attribute itself is appended verbatim, as
// Scheduler only replaces its literal text.
func encodeInput(ref publishing.TargetRef) (string, error) {
	ref.Slot = ref.Slot.UTC()
	b, err := json.Marshal(ref)
	if err != nil {
		return "", fmt.Errorf("encode input: %w", err)
	}
	if len(b) < 2 || b[len(b)-1] != '}' {
		return "", fmt.Errorf("encode input: unexpected encoding %s", b)
	}
	return string(b[:len(b)-1]) + `,"scheduled_time":"` + scheduledTimeAttr + `"}`, nil
}

// AllDue reports whether the input is a slot schedule's (PutSlot): no
// post or account, the trigger fires every target due at Slot.
func (in Input) AllDue() bool { return in.Post == "" && in.Account == "" }

// DecodeInput decodes the event a target schedule (Put) or a slot
// schedule (PutSlot: no post_id and account_id) invoked the trigger with.
// Unknown fields are refused, and every other field is required; errors
// name the field. The trigger enqueues the job with Delay(in.Slot, now) as
// its SQS DelaySeconds.
func DecodeInput(b []byte) (Input, error) {
	var raw struct {
		Post          *post.ID        `json:"post_id"`
		Account       *post.AccountID `json:"account_id"`
		Slot          *string         `json:"slot"`
		ScheduledTime *string         `json:"scheduled_time"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Input{}, fmt.Errorf("schedule input: %w", err)
	}
	if dec.More() {
		return Input{}, errors.New("schedule input: data after the JSON object")
	}
	slotOnly := raw.Post == nil && raw.Account == nil
	switch {
	case !slotOnly && (raw.Post == nil || *raw.Post == ""):
		return Input{}, errors.New("schedule input: post_id is missing")
	case !slotOnly && (raw.Account == nil || *raw.Account == ""):
		return Input{}, errors.New("schedule input: account_id is missing")
	case raw.Slot == nil || *raw.Slot == "":
		return Input{}, errors.New("schedule input: slot is missing")
	case raw.ScheduledTime == nil || *raw.ScheduledTime == "":
		return Input{}, errors.New("schedule input: scheduled_time is missing")
	}
	slot, err := time.Parse(time.RFC3339Nano, *raw.Slot)
	if err != nil {
		return Input{}, fmt.Errorf("schedule input: slot %q is not an RFC 3339 time", *raw.Slot)
	}
	scheduled, err := time.Parse(time.RFC3339Nano, *raw.ScheduledTime)
	if err != nil {
		// An unreplaced context attribute (a test invocation from the
		// console) lands here.
		return Input{}, fmt.Errorf("schedule input: scheduled_time %q is not an RFC 3339 time", *raw.ScheduledTime)
	}
	in := Input{TargetRef: publishing.TargetRef{Slot: slot.UTC()}, ScheduledTime: scheduled.UTC()}
	if !slotOnly {
		in.Post, in.Account = *raw.Post, *raw.Account
	}
	return in, nil
}

// SlotInput is the input of a slot's firing as the trigger decodes it
// (DecodeInput, AllDue), with scheduledTime as its scheduled_time: what a
// continuation of a slot's firing invokes the trigger with.
func SlotInput(slot, scheduledTime time.Time) ([]byte, error) {
	b, err := json.Marshal(struct {
		Slot          string `json:"slot"`
		ScheduledTime string `json:"scheduled_time"`
	}{slot.UTC().Format(time.RFC3339Nano), scheduledTime.UTC().Format(time.RFC3339Nano)})
	if err != nil {
		return nil, fmt.Errorf("encode slot input: %w", err)
	}
	return b, nil
}
