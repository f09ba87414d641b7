package ebschedule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"oncepost/shared/localcron"
	"oncepost/shared/post"
)

// SlotPrefix starts the name of a slot schedule: one schedule per distinct
// slot, firing the trigger for every target due at it. Recurring schedules
// may not use it either. The operators' IAM policy scopes their schedule
// writes to it, so that they cannot touch the stack's own schedules in the
// same group (the sweeper's).
const SlotPrefix = "slot."

// SlotName is the schedule name of a slot: slot.<yyyymmddThhmmssZ> for a
// whole-second slot, slot.<yyyymmddThhmmssZ>.<32 hex digits of SHA-256 of
// the slot in RFC 3339 with nanoseconds> otherwise. A slot name never
// equals a target schedule's (post.…, post-…) or a recurring one's.
func SlotName(slot time.Time) string {
	slot = slot.UTC()
	stamp := slot.Format(stampLayout)
	if len(stamp) != len(stampLayout) {
		stamp = "x"
	}
	if slot.Nanosecond() == 0 && stamp != "x" {
		return SlotPrefix + stamp
	}
	h := sha256.Sum256([]byte(slot.Format(time.RFC3339Nano)))
	return SlotPrefix + stamp + "." + hex.EncodeToString(h[:16])
}

// PutSlot creates the one-time schedule that fires the trigger for every
// target due at slot: at(FireTime(slot)) in UTC, ActionAfterCompletion
// DELETE, Input {"slot": …, "scheduled_time": <aws.scheduler.scheduled-time>}.
// The trigger enqueues every target still scheduled at or before the slot
// in batches of ten (publishing.Trigger.FireSlot), so the posts of one
// slot cost one schedule, one invocation and a tenth of an SQS request
// each instead of one of each.
//
// The schedule's content depends on the slot alone, so PutSlot is
// idempotent and order-free: every post of the slot writes the same
// schedule (a create of an existing name rewrites the same content), a
// cancel leaves it (other posts may share it; the trigger skips what is no
// longer scheduled), and a reschedule puts the new slot's schedule and
// leaves the old one to fire for nothing. A slot whose FireTime is less
// than MinLead away is ErrDue and nothing is written: the caller enqueues
// the slot's jobs itself with Delay.
func (c *Client) PutSlot(ctx context.Context, slot time.Time) error {
	s, err := slotSchedule(slot)
	if err != nil {
		return err
	}
	if fire := FireTime(slot); fire.Before(c.now().Add(MinLead)) {
		return fmt.Errorf("ebschedule: put %s: fires at %s, less than %s from now: %w", s.name, fire.Format(time.RFC3339), MinLead, ErrDue)
	}
	return c.write(ctx, s, true)
}

// slotSchedule builds a slot's schedule, its at() checked with localcron.
func slotSchedule(slot time.Time) (schedule, error) {
	name := SlotName(slot)
	if slot.IsZero() {
		return schedule{}, fmt.Errorf("ebschedule: slot is zero: %w", ErrInvalid)
	}
	if y := slot.UTC().Year(); y < post.MinSlotYear || y > post.MaxSlotYear {
		return schedule{}, fmt.Errorf("ebschedule: put %s: slot year %d is outside %d-%d: %w", name, y, post.MinSlotYear, post.MaxSlotYear, ErrInvalid)
	}
	fire := FireTime(slot)
	expr := AtExpression(fire)
	sched, err := localcron.Parse(expr, "UTC", time.Time{})
	if err != nil {
		return schedule{}, fmt.Errorf("ebschedule: put %s: %w: %w", name, ErrInvalid, err)
	}
	if next, ok := sched.Next(fire.Add(-time.Nanosecond)); !ok || !next.Equal(fire) {
		return schedule{}, fmt.Errorf("ebschedule: put %s: %s does not fire at %s: %w", name, expr, fire.Format(time.RFC3339), ErrInvalid)
	}
	stamp := slot.UTC().Format(time.RFC3339Nano)
	input := `{"slot":"` + stamp + `","scheduled_time":"` + scheduledTimeAttr + `"}`
	return schedule{name: name, expression: expr, zone: "UTC", input: input,
		description: "oncepost slot " + stamp, action: types.ActionAfterCompletionDelete}, nil
}
