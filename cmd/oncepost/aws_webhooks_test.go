package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"oncepost/shared/awsruntime"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/publishing"
	"oncepost/shared/sqsqueue"
)

// Dead webhook deliveries of a stack are seen, redriven and dropped with
// `oncepost dlq --queue webhooks`: listed with their reason and the
// delivery they carry, sent back to the webhook queue with the same
// event; the jobs' dead letters are apart. `oncepost webhook` adds, lists
// and removes the stack's subscriptions (sealed with its key), lists its
// dead deliveries and redrives one. A stack without the webhook queue,
// and the embedded workspace, say why there are none.
func TestWebhookDeadLettersOnAWS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs emulators and a few processes")
	}
	st := newAWSStack(t)
	ctx := t.Context()
	if code, _, errOut := st.cli("", "dlq", "list", "--queue", "webhooks"); code != exitUsage || !strings.Contains(errOut, outWebhookDeadLetterQueueURL) {
		t.Errorf("a stack without the webhook queue: exit %d, %q", code, errOut)
	}

	queueURL, dlqURL := createTestQueue(t, st.sqs, "oncepost-test-webhooks"), createTestQueue(t, st.sqs, "oncepost-test-webhooks-dlq")
	st.outputs[outWebhookQueueURL], st.outputs[outWebhookDeadLetterQueueURL] = queueURL, dlqURL
	raw, err := json.Marshal(st.outputs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st.outputsFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	webhooks, err := sqsqueue.New(st.sqs, queueURL, dlqURL, sqsqueue.Options{MaxReceives: awsruntime.WebhookMaxReceives, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	ev := publishing.Event{ID: publishing.EventID("dead"), Type: publishing.EventFailed, At: now, Post: "p-1", Account: "news", Status: "failed"}
	body, err := publishing.WebhookMessage{Event: ev, Subscription: "wh_gone", CreatedAt: now}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := webhooks.Send(ctx, body, 0); err != nil {
		t.Fatal(err)
	}
	msgs, err := webhooks.Receive(ctx, 1, time.Minute)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("receive: %v, %d messages", err, len(msgs))
	}
	const reason = "receiver_gone: the receiver answered 410 Gone; subscription wh_gone disabled"
	if err := webhooks.DeadLetter(ctx, msgs[0].Receipt, reason); err != nil {
		t.Fatal(err)
	}

	var dls []deadLetterView
	st.okJSON(&dls, "dlq", "list", "--queue", "webhooks")
	if len(dls) != 1 || dls[0].Reason != reason || dls[0].Webhook == nil || dls[0].Webhook.Event.ID != ev.ID || dls[0].Webhook.Subscription != "wh_gone" || dls[0].Job != nil {
		t.Fatalf("dlq list --queue webhooks: %+v", dls)
	}
	if out := st.ok("", "dlq", "list", "--queue", "webhooks"); !strings.Contains(out, "DELIVERY") || !strings.Contains(out, "post.failed "+ev.ID+" → wh_gone") ||
		!strings.Contains(out, "oncepost dlq redrive --queue webhooks") {
		t.Errorf("dlq list --queue webhooks: %q", out)
	}
	if out := st.ok("", "dlq", "list"); !strings.Contains(out, "no dead letters") {
		t.Errorf("the jobs' dead letters show a webhook delivery: %q", out)
	}
	if out := st.ok("", "dlq", "redrive", "--queue", "webhooks", dls[0].ID[:8]); !strings.Contains(out, "redriven "+dls[0].ID) {
		t.Errorf("dlq redrive --queue webhooks: %q", out)
	}
	back, err := webhooks.Receive(ctx, 1, time.Minute)
	if err != nil || len(back) != 1 {
		t.Fatalf("the redriven delivery: %v, %d messages", err, len(back))
	}
	if m, err := publishing.DecodeWebhookMessage(back[0].Body); err != nil || m.Event.ID != ev.ID || back[0].ReceiveCount != 1 {
		t.Errorf("redriven %+v (receive %d), %v; want the same event, its receives started again", m, back[0].ReceiveCount, err)
	}

	// The subscriptions and dead deliveries through `oncepost webhook`.
	var added subscriptionAdded
	st.okJSON(&added, "webhook", "add", "--url", "http://127.0.0.1:9/hooks", "--allow-private", "--events", "post.failed")
	stored, err := st.store.GetSubscription(ctx, added.ID)
	if err != nil || stored.Secret != added.Secret || !stored.AllowPrivate || stored.URL != "http://127.0.0.1:9/hooks" {
		t.Fatalf("webhook add on AWS stored %+v (%v); want the subscription, its secret sealed with the stack's key", stored, err)
	}
	var subs []publishing.Subscription
	st.okJSON(&subs, "webhook", "list")
	if len(subs) != 1 || subs[0].ID != added.ID || subs[0].Secret != "" {
		t.Errorf("webhook list: %+v", subs)
	}
	if err := webhooks.DeadLetter(ctx, back[0].Receipt, "webhook_expired: 13 attempts"); err != nil {
		t.Fatal(err)
	}
	var ds []publishing.Delivery
	st.okJSON(&ds, "webhook", "deliveries", "--state", "dead")
	id := publishing.DeliveryID(ev.ID, "wh_gone")
	if len(ds) != 1 || ds[0].ID != id || ds[0].State != publishing.DeliveryDead || ds[0].LastError != "webhook_expired: 13 attempts" || ds[0].Event.ID != ev.ID {
		t.Fatalf("webhook deliveries --state dead: %+v", ds)
	}
	if code, _, errOut := st.cli("", "webhook", "deliveries", "--state", "pending"); code != exitUsage || !strings.Contains(errOut, "only dead deliveries") {
		t.Errorf("webhook deliveries --state pending on AWS: exit %d, %q", code, errOut)
	}
	if out := st.ok("", "webhook", "redrive", id); !strings.Contains(out, "redriven "+id) {
		t.Errorf("webhook redrive: %q", out)
	}
	if again, err := webhooks.Receive(ctx, 1, time.Minute); err != nil || len(again) != 1 {
		t.Errorf("after webhook redrive: %v, %d messages on the webhook queue", err, len(again))
	}
	if code, _, errOut := st.cli("", "webhook", "redrive", id); code != exitUsage || !strings.Contains(errOut, "no delivery") {
		t.Errorf("a second redrive: exit %d, %q", code, errOut)
	}
	if out := st.ok("", "webhook", "remove", added.ID); !strings.Contains(out, "removed "+added.ID) {
		t.Errorf("webhook remove: %q", out)
	}

	if code, _, errOut := st.cli("", "dlq", "list", "--queue", "hooks"); code != exitUsage || !strings.Contains(errOut, "--queue") {
		t.Errorf("--queue hooks: exit %d, %q", code, errOut)
	}
	ws := newWorkspace(t, sandbox.Options{}, 0)
	if code, _, errOut := runChild(t, st.env, "", "dlq", "list", "--queue", "webhooks", "--db", ws.db); code != exitUsage || !strings.Contains(errOut, "--backend aws") {
		t.Errorf("--queue webhooks on the embedded workspace: exit %d, %q", code, errOut)
	}
}
