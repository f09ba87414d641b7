package ebschedule

import (
	"time"

	"oncepost/shared/publishing"
)

// Timing constants of one-time target schedules.
const (
	// Precision is how late EventBridge Scheduler may invoke a target
	// after its scheduled minute: "if you set your schedule to run at 1:00,
	// it will invoke the target API between 1:00:00 and 1:00:59"
	// (https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html).
	Precision = time.Minute
	// MaxDelay is SQS's largest DelaySeconds (900 s, 15 minutes): Delay
	// never returns more.
	MaxDelay = publishing.MaxDelay
	// MinLead is the least time between now and a schedule's firing time
	// that Put accepts; a slot closer than that is ErrDue, and the caller
	// enqueues the job itself with Delay. A slot that is ErrDue is always
	// less than MinLead + 2·Precision (3 minutes) away, well under MaxDelay.
	MinLead = time.Minute
)

// FireTime is when a target's one-time schedule fires: the start of the
// last whole UTC minute that ends at or before slot minus Precision, i.e.
// slot−60 s truncated to the minute. Scheduler invokes the target anywhere
// in [FireTime, FireTime+60 s), which is never after slot; the trigger then
// delays the job by Delay(slot, now), between 0 and 120 s.
//
//	slot 09:00:00   → at(08:59:00), invoked 08:59:00–08:59:59, delay 60–1 s
//	slot 09:00:30   → at(08:59:00), invoked 08:59:00–08:59:59, delay 90–31 s
//	slot 09:00:59.5 → at(08:59:00), invoked 08:59:00–08:59:59, delay 120–61 s
func FireTime(slot time.Time) time.Time {
	return slot.UTC().Add(-Precision).Truncate(time.Minute)
}

// Delay is the SQS DelaySeconds the trigger gives a job invoked at now for
// slot: the time left until slot rounded up to a whole second, so the job
// becomes visible at slot or less than a second after it (never before),
// bounded to [0, MaxDelay]. A slot already past gives 0. The result is a
// whole number of seconds.
func Delay(slot, now time.Time) time.Duration {
	return publishing.DelayUntil(slot, now)
}
