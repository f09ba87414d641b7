package publishing

import (
	"time"

	"oncepost/shared/emf"
)

// Event metrics, emitted (EMF) at the moment they happen; the sweeper's
// gauges (StalePending, HeldTargets, …) are emitted once per sweep.
const (
	// MetricPublished counts posts confirmed on a platform, by the create's
	// answer or by a confirm look.
	MetricPublished = "Published"
	// MetricAmbiguous counts creates whose outcome was ambiguous (and owners
	// that died mid-call): each starts a confirm workflow.
	MetricAmbiguous = "AmbiguousOutcomes"
	// MetricReleased counts entries released for a re-send after a confirm
	// workflow looked and did not find the post (or an operator approved).
	MetricReleased = "Released"
	// MetricDuplicateBlocked counts posts held because pre-publish dedup
	// found the same content already on the account.
	MetricDuplicateBlocked = "DuplicateBlocked"
	// MetricReconnectNeeded counts refused credential refreshes: an account
	// must be connected again.
	MetricReconnectNeeded = "ReconnectNeeded"
	// MetricThrottled counts creates (and deletes) a platform refused with 429.
	MetricThrottled = "Throttled"
	// MetricDeleted counts posts confirmed gone from a platform by a delete.
	MetricDeleted = "Deleted"
	// MetricDeleteFailed counts deletes the platform refused (403, a 404
	// while the post is still there).
	MetricDeleteFailed = "DeleteFailed"
	// MetricPublishLateness is the time from a post's slot to the
	// platform's answer confirming it, in seconds.
	MetricPublishLateness = "PublishLatenessSeconds"
	// MetricSweepErrors counts the errors of one sweep; a sweep that could
	// not read the store emits this and no gauges, so the gauges' alarms
	// (TreatMissingData: breaching) fire.
	MetricSweepErrors = "SweepErrors"
	// MetricApprovalOverdue is the sweeper's gauge of targets still
	// waiting for approval at or after their slot (Gauges.ApprovalOverdue).
	MetricApprovalOverdue = "ApprovalOverdue"
)

// MetricsEmitter receives metrics (emf.Emitter).
type MetricsEmitter interface {
	// Emit records metrics as of now.
	Emit(metrics ...emf.Metric) error
	// EmitAt records metrics as of at: the sweeper's gauges carry the
	// sweep's start, so that a sweep ending in the next minute still
	// fills its own.
	EmitAt(at time.Time, metrics ...emf.Metric) error
}
