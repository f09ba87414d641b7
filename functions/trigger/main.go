// Command trigger is the trigger Lambda function: EventBridge Scheduler
// invokes it when a slot's schedule fires (a minute before the slot), and
// it enqueues the job of every target due at that slot, each delayed
// until its slot; a per-target schedule's input enqueues that one target.
package main

import "oncepost/shared/awsruntime"

func main() {
	awsruntime.Start("trigger", func(rt *awsruntime.Runtime) (any, error) {
		tr, err := rt.Trigger()
		if err != nil {
			return nil, err
		}
		return handler{trigger: tr, log: rt.Logger}.handle, nil
	})
}
