package main

import (
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"oncepost/shared/emulatortest"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The notifier built as `bootstrap` (as `make build-NotifierFunction`
// builds it), run by the Lambda Runtime Interface Emulator with the
// stack's environment, handed a stream batch as Lambda hands it over
// (JSON): its wiring reads the subscriptions, queues the delivery and
// puts the event on the bus, and answers with no failed record.
// (A case of TestNotifier, on its stack.)
func testUnderTheRuntimeInterfaceEmulator(t *testing.T, w *world) {
	if testing.Short() {
		t.Skip("builds the function and runs it under the RIE")
	}
	env := w.stack.Env()
	maps.Copy(env, w.events.Env())
	invoke := emulatortest.Lambda(t, emulatortest.BuildBootstrap(t, "."), env)

	recs := w.move(t, "acct-a", post.Published, w.now.Add(time.Minute))
	payload, err := json.Marshal(events.DynamoDBEvent{Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	out := invoke(payload)
	var resp events.DynamoDBEventResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.BatchItemFailures == nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("answer %s (%v), want no failed record", out, err)
	}
	got := w.queued(t)
	if len(got) != 1 || got[0].Subscription != "wh_all" || got[0].Event.Type != publishing.EventPublished {
		t.Errorf("queued %+v, want wh_all's post.published", got)
	}
	if e := w.events.Bus.Accepted(); len(e) != 1 || e[0].DetailType != "post.published" {
		t.Errorf("bus entries %+v, want the post.published event", e)
	}
}
