// Package ebschedule writes oncepost's schedules to Amazon EventBridge
// Scheduler: one-time at() schedules invoking the trigger Lambda, as the
// embedded runtime (cmd/oncepost) does with localcron, and recurring
// cron()/rate() schedules in an IANA time zone.
//
// Client implements the ports Targets (Put, Move, Delete) and Recurring
// (PutRecurring, DeleteRecurring) on the SDK's scheduler client (API),
// and PutSlot.
//
// # One schedule per slot
//
// The AWS runtime writes one schedule per distinct slot (PutSlot, named
// by SlotName): its Input names the slot only, and the trigger enqueues
// every target due at it in SendMessageBatch calls of ten. The posts of a
// slot then share one schedule, one invocation and one SQS request per
// ten jobs. The schedule's content depends on the slot alone, so any
// number of writers put the same schedule, and a cancel or reschedule
// never has to touch it (the trigger skips what is no longer scheduled
// there). Per-target schedules (Put, below) remain for callers that need
// one target fired on its own. The sections below on firing early,
// idempotency and errors hold for both kinds.
//
// # One schedule per target
//
// With Put, every target gets its own schedule in the client's schedule group:
// at(FireTime(slot)) with ScheduleExpressionTimezone "UTC",
// FlexibleTimeWindow OFF, ActionAfterCompletion DELETE (Scheduler deletes
// it after its one invocation, keeping the account far under the
// schedule quota), and a templated Lambda Invoke target: the trigger
// function, the execution role, a RetryPolicy and a standard SQS
// dead-letter queue, all from Config.
//
// # Firing early, delaying to the second
//
// Scheduler invokes targets "with 60 second precision": a schedule at 1:00
// fires between 1:00:00 and 1:00:59. A schedule at the slot would publish
// up to 59 s late. So the schedule fires a minute early — FireTime is the
// slot minus 60 s, truncated to the minute, so that the whole minute
// Scheduler may fire in ends at or before the slot — and its Input carries
// the real slot. The trigger enqueues the job with SQS DelaySeconds =
// Delay(slot, now): the seconds left, rounded up, bounded to 0-900. The
// job becomes visible at the slot or within a second after it, never
// before (the publisher puts a job that arrives early back anyway). A
// late invocation (Scheduler retrying an invocation Lambda did not
// accept, or Lambda retrying a firing that failed) gets 0 and goes at
// once.
//
// A slot whose FireTime is less than MinLead from now is not scheduled:
// Put returns ErrDue and the caller enqueues the job itself with Delay.
// (The API reference does not say what Scheduler does with an at() in the
// past; localcron fires one at once. ErrDue avoids depending on either.)
//
// # Names
//
// Name derives a schedule's name from the target alone (post, account,
// slot): post.<post>.<account>.<yyyymmddThhmmssZ> when that is readable
// without ambiguity and fits Scheduler's 64 bytes of [0-9a-zA-Z-_.], else
// post-<yyyymmddThhmmssZ>-<128 bits of SHA-256 in hex>. Each schedule's
// Description names the target in full.
//
// # Input
//
// The Lambda receives Input: the target as the localcron payload encodes
// it (post_id, account_id, slot) plus scheduled_time, Scheduler's
// <aws.scheduler.scheduled-time> context attribute, which is the same on
// every retry attempt. The execution id (<aws.scheduler.execution-id>) is
// never used: it changes on every attempt, so it cannot identify the
// invocation. DecodeInput reads the event back.
//
// # Idempotency
//
// A create carries a ClientToken derived (SHA-256) from the whole
// request — the target, its slot and the configuration — so a create
// retried by the SDK or by a caller that lost the answer is a no-op for
// Scheduler. A create of a name that exists (ConflictException) means the
// same target and slot were scheduled before: the schedule is rewritten
// with UpdateSchedule (the same content, or the current configuration
// after a deploy). If it vanished meanwhile (fired, or deleted by a
// cancel) it is not re-created. Deletes of a missing schedule
// (ResourceNotFoundException) are success.
//
// # Ordering
//
// A reschedule never updates a schedule in place. UpdateSchedule has no
// condition (no version, no If-Match): of two racing reschedules, the one
// Scheduler received last would win, even if it is the older. Instead
// the name carries the slot, so each slot has its own schedule, with
// content that depends only on that slot: Move creates the new slot's
// schedule and then deletes the old one. An older request delivered late
// can only re-create the old slot's schedule, never touch the new one;
// and when that stale schedule fires, the trigger drops it, because the
// target's slot in the store no longer matches the slot in the Input
// (publishing.Trigger.Fire). Create comes before delete, so a crash in
// between leaves an extra schedule (harmless, as above), never none.
//
// # Recurring schedules
//
// PutRecurring writes cron() or rate() schedules in an IANA zone. Every
// expression this package writes, at() included, is first parsed by
// localcron, the embedded runtime's implementation of the same dialect,
// so both runtimes accept the same schedules.
//
// # Errors
//
// Scheduler's exceptions are translated at the edge: ConflictException →
// ErrConflict, ResourceNotFoundException → ErrNotFound (where it is a
// failure), ThrottlingException → ErrThrottled, ValidationException →
// ErrInvalid, ServiceQuotaExceededException → ErrQuotaExceeded, each
// wrapped with the operation, the schedule name and the service's
// message. Refusals made before sending (bad name, expression, zone,
// input) are ErrInvalid too.
//
// API reference: https://docs.aws.amazon.com/scheduler/latest/APIReference/
// (CreateSchedule, UpdateSchedule, DeleteSchedule, Target, RetryPolicy,
// DeadLetterConfig, FlexibleTimeWindow).
package ebschedule
