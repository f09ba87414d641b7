package eventsamples

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/awsruntime/stacktest"
	"oncepost/shared/emulatortest"
	"oncepost/shared/publishing"
)

// coveredElsewhere are the samples another test of this package runs,
// by the test.
var coveredElsewhere = map[string]string{
	"notifier-stream.json": "TestEventAndWebhookSamples",
	"webhooks-batch.json":  "TestEventAndWebhookSamples",
}

// The notifier's and the webhooks function's samples, each function
// built and run under the RIE: a stream batch of a published target, an
// entry gone unknown and an account to reconnect becomes three events on
// the bus and three deliveries for the one subscription; a webhook batch
// of a delivery and a message that is none sends the first to the
// receiver and dead-letters the second.
func TestEventAndWebhookSamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two functions and runs them under the RIE against the emulators")
	}
	ctx := context.Background()
	s := stacktest.New(t)
	ev := s.Events(t)
	var mu sync.Mutex
	var got []string
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("webhook-id"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)
	if err := s.Store.AddSubscription(ctx, publishing.Subscription{ID: "wh_sample", URL: rcv.URL, Secret: "whsec_c2FtcGxlLXNlY3JldC1vZi0zMi1ieXRlcy4uLi4=",
		AllowPrivate: true, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	env := s.Env()
	maps.Copy(env, ev.Env())
	invoke := func(t *testing.T, function, sample string) []byte {
		t.Helper()
		return emulatortest.Lambda(t, emulatortest.BuildBootstrap(t, filepath.Join("..", function)), env)(readEvent(t, sample))
	}

	t.Run("notifier-stream.json", func(t *testing.T) {
		var resp events.DynamoDBEventResponse
		if out := invoke(t, "notifier", "notifier-stream.json"); json.Unmarshal(out, &resp) != nil || resp.BatchItemFailures == nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("notifier answered %s, want no failed record", out)
		}
		var types []string
		for _, e := range ev.Bus.Accepted() {
			types = append(types, e.DetailType)
		}
		want := []string{"post.published", "post.unknown", "account.reconnect_needed"}
		if diff := cmp.Diff(want, types); diff != "" {
			t.Errorf("events on the bus (-want +got):\n%s", diff)
		}
		msgs, err := ev.WebhookQueue.Receive(ctx, 10, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var queued []string
		for _, m := range msgs {
			wm, err := publishing.DecodeWebhookMessage(m.Body)
			if err != nil || wm.Subscription != "wh_sample" {
				t.Errorf("queued %s: %v", m.Body, err)
			}
			queued = append(queued, string(wm.Event.Type))
			if err := ev.WebhookQueue.Ack(ctx, m.Receipt); err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(queued)
		slices.Sort(want)
		if diff := cmp.Diff(want, queued); diff != "" {
			t.Errorf("deliveries queued (-want +got):\n%s", diff)
		}
	})
	t.Run("webhooks-batch.json", func(t *testing.T) {
		var resp events.SQSEventResponse
		if out := invoke(t, "webhooks", "webhooks-batch.json"); json.Unmarshal(out, &resp) != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("webhooks answered %s, want every message settled", out)
		}
		mu.Lock()
		defer mu.Unlock()
		if !cmp.Equal(got, []string{"evt_ekrjjkfsevkoisk66e7yu5gtcq"}) {
			t.Errorf("the receiver got webhook-ids %v, want the sample's one delivery", got)
		}
		dls, err := ev.WebhookQueue.DeadLetters(ctx, 0)
		if err != nil || len(dls) != 1 || !strings.HasPrefix(dls[0].Reason, publishing.ReasonUndecodableWebhook) {
			t.Errorf("dead letters %+v, %v; want the message that is no delivery", dls, err)
		}
	})
}
