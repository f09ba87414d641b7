// Command webhooks is the webhooks Lambda function: the webhook queue's
// event source mapping hands it up to ten deliveries, and it makes one
// signed attempt of each (Standard Webhooks), hiding a failed one until
// its next try and dead-lettering, with the reason, one given up.
package main

import (
	"time"

	"oncepost/shared/awsruntime"
	"oncepost/shared/webhook"
)

// attemptTimeout bounds one attempt (the spec suggests 15 to 30 s).
const attemptTimeout = 15 * time.Second

func main() {
	awsruntime.Start("webhooks", func(rt *awsruntime.Runtime) (any, error) {
		q, err := rt.WebhookQueue()
		if err != nil {
			return nil, err
		}
		sender := webhook.NewSender(webhook.Options{Timeout: attemptTimeout})
		return handler{batches: q, webhooks: rt.QueuedWebhooks(sender), log: rt.Logger, need: attemptTimeout + 5*time.Second}.handle, nil
	})
}
