package main

import (
	"context"
	"errors"
	"time"

	"oncepost/shared/awswebhooks"
	"oncepost/shared/publishing"
)

// stackWebhooks are a stack's subscriptions and dead deliveries
// (awswebhooks.Admin, as the api function reaches them), their refusals
// told as the CLI's flags: --state for a state not kept on AWS, the
// stack's outputs for a stack without a webhook queue.
type stackWebhooks struct {
	*awswebhooks.Admin
}

var _ webhookStore = stackWebhooks{}

// ListDeliveries lists the dead deliveries, most recently given up first.
func (w stackWebhooks) ListDeliveries(ctx context.Context, state publishing.DeliveryState, limit int) ([]publishing.Delivery, error) {
	ds, err := w.Admin.ListDeliveries(ctx, state, limit)
	return ds, stackWebhookError(err)
}

// RedriveDelivery sends the dead delivery back to the webhook queue.
func (w stackWebhooks) RedriveDelivery(ctx context.Context, id string, now time.Time) error {
	return stackWebhookError(w.Admin.RedriveDelivery(ctx, id, now))
}

// stackWebhookError is err as a usage error naming what to change, when
// there is one.
func stackWebhookError(err error) error {
	switch {
	case errors.Is(err, publishing.ErrDeliveryStateNotKept):
		return usageError("state", "%v; use --state dead", err)
	case errors.Is(err, awswebhooks.ErrNoWebhookQueue):
		return usageError("outputs", "the stack has no webhook queue (outputs %s and %s): deploy the current template.yaml", outWebhookQueueURL, outWebhookDeadLetterQueueURL)
	}
	return err
}
