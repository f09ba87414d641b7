package localcron

import (
	"time"

	"oncepost/shared/schedexpr"
)

// Schedule is a parsed schedule expression (schedexpr.Schedule).
type Schedule = schedexpr.Schedule

// ExprError reports a malformed schedule expression (schedexpr.ExprError).
type ExprError = schedexpr.ExprError

// Parse is schedexpr.Parse: an at, rate or cron expression evaluated in
// the IANA zone timezone ("" is UTC).
func Parse(expr, timezone string, start time.Time) (Schedule, error) {
	return schedexpr.Parse(expr, timezone, start)
}
