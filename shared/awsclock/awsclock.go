// Package awsclock tells the time by AWS's clock rather than this
// machine's: Clock.Now is the local clock corrected by the skew measured
// on the latest answer an AWS SDK client had (the answer's Date header
// against the moment it arrived).
//
// The operator CLI decides with it whether a slot is still far enough
// away for an EventBridge Scheduler schedule (ebschedule.MinLead), and
// how long to delay the job of a slot that is not: Scheduler fires by its
// own clock, and an operator's laptop may be minutes off. The SDK makes
// the same measurement and signs its requests with it (the Clock Skew
// Correction rules of aws-sdk-go-v2's RecordResponseTiming middleware: no
// measurement from a cached answer, one with an Age header, or from a
// round trip over 15 minutes); Clock reads that measurement from each
// operation's result metadata, so it needs no call of its own: the call
// that wrote the post a moment before measured it. Date has a resolution
// of one second, so the measurement lags AWS's clock by less than that
// second plus the answer's time on the wire: far inside the minute the
// decision leaves.
package awsclock

import (
	"context"
	"sync/atomic"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Clock is this machine's clock corrected by the skew measured on the
// latest AWS answer. Until an answer has been measured it is the local
// clock. Its zero value is ready; it is safe for concurrent use.
type Clock struct {
	skew     atomic.Int64 // nanoseconds, AWS's clock minus the local one
	measured atomic.Bool
}

// Now is AWS's time as last measured: the local clock plus the skew.
func (c *Clock) Now() time.Time {
	return time.Now().Add(time.Duration(c.skew.Load()))
}

// Skew is AWS's clock minus the local one, as last measured, and whether
// any answer has been measured.
func (c *Clock) Skew() (time.Duration, bool) {
	return time.Duration(c.skew.Load()), c.measured.Load()
}

// middlewareID names the measuring middleware in an operation's stack.
const middlewareID = "oncepost.AWSClock"

// APIOptions are what measures: pass them to every client whose answers
// should set the clock (config.WithAPIOptions, or aws.Config.APIOptions
// before the clients are made).
func (c *Clock) APIOptions() []func(*middleware.Stack) error {
	return []func(*middleware.Stack) error{c.addTo}
}

// addTo adds the measuring middleware to an operation's stack: in the
// initialize step, outside the retry loop, it sees the metadata of the
// attempt that ended the operation, answered with an error or not.
func (c *Clock) addTo(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc(middlewareID,
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			if skew, ok := awsmiddleware.GetAttemptSkew(md); ok {
				c.skew.Store(int64(skew))
				c.measured.Store(true)
			}
			return out, md, err
		}), middleware.After)
}
