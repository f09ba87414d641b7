package stacktest

import (
	"fmt"
	"testing"

	"oncepost/shared/awsruntime"
	"oncepost/shared/ebevents/ebeventstest"
	"oncepost/shared/sqsqueue"
)

// BusName is the event bus the notifier is told of.
const BusName = "stack-events"

// Events are the stack's events and webhooks parts: the webhook queue
// and its dead letters on fauxqs, and a fake EventBridge (ebeventstest;
// no emulator of it runs here). The tables' change streams are AWS's:
// dynamostore/streamtest plays them from dynalite.
type Events struct {
	// WebhookQueue is the webhook queue as the functions open it
	// (awsruntime.WebhookMaxReceives).
	WebhookQueue                          *sqsqueue.Queue
	WebhookQueueURL, WebhookDeadLetterURL string
	Bus                                   *ebeventstest.Server
}

// Events adds the webhook queue (redrive maxReceiveCount
// awsruntime.WebhookMaxReceives, visibility 30 s) and a fake EventBridge
// to the stack.
func (s *Stack) Events(t testing.TB) *Events {
	t.Helper()
	e := &Events{Bus: ebeventstest.Start(t)}
	var deadARN string
	e.WebhookDeadLetterURL, deadARN = createQueue(t, s.SQS, "webhooks-dlq", nil)
	e.WebhookQueueURL, _ = createQueue(t, s.SQS, "webhooks", map[string]string{
		"VisibilityTimeout": "30",
		"RedrivePolicy":     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, deadARN, awsruntime.WebhookMaxReceives),
	})
	var err error
	e.WebhookQueue, err = sqsqueue.New(s.SQS, e.WebhookQueueURL, e.WebhookDeadLetterURL, sqsqueue.Options{MaxReceives: awsruntime.WebhookMaxReceives})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Env is what the events parts add to Stack.Env: the bus (the fake's
// endpoint as AWS_ENDPOINT_URL_EVENTBRIDGE) and the webhook queues.
func (e *Events) Env() map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_EVENTBRIDGE":     e.Bus.URL(),
		awsruntime.EnvEventBusName:         BusName,
		awsruntime.EnvWebhookQueueURL:      e.WebhookQueueURL,
		awsruntime.EnvWebhookDeadLetterURL: e.WebhookDeadLetterURL,
	}
}
