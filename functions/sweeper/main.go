// Command sweeper is the sweeper Lambda function, run every minute by an
// EventBridge Scheduler rate(1 minute) schedule: it counts what is not
// progressing (EMF gauges the alarms watch) and repairs it by
// re-enqueueing jobs or starting confirm workflows, never by sending.
package main

import (
	"time"

	"oncepost/shared/awsruntime"
)

// callTimeout bounds one platform read (a stale delete's read-back).
const callTimeout = 10 * time.Second

func main() {
	awsruntime.Start("sweeper", func(rt *awsruntime.Runtime) (any, error) {
		sw, err := rt.Sweeper(callTimeout)
		if err != nil {
			return nil, err
		}
		return handler{sweeper: sw, log: rt.Logger}.handle, nil
	})
}
