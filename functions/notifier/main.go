// Command notifier is the notifier Lambda function: event source
// mappings hand it the change streams of the posts, ledger and workspace
// tables (filtered to changes that can cause an event), and it turns each
// change into the event it causes, queues one webhook message per
// subscription that wants it, and puts it on the EventBridge bus.
package main

import "oncepost/shared/awsruntime"

func main() {
	awsruntime.Start("notifier", func(rt *awsruntime.Runtime) (any, error) {
		q, err := rt.WebhookQueue()
		if err != nil {
			return nil, err
		}
		bus, err := rt.EventBus()
		if err != nil {
			return nil, err
		}
		return handler{routes: rt.Subscriptions(), webhook: q, bus: bus, now: rt.Now, log: rt.Logger}.handle, nil
	})
}
