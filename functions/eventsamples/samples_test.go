package eventsamples

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/awsruntime/stacktest"
	"oncepost/shared/emulatortest"
	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// slot is the sample events' slot.
var slot = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEverySampleEventThroughItsFunction seeds one stack with what the
// samples name (account news; posts launch, slot-a, slot-b scheduled at the
// samples' slot; ambiguous, released and held candidates in unknown), then
// invokes each function under the RIE with each of its samples, in the
// order a post's life takes them, and checks the effect of each; the API's
// samples (API Gateway HTTP API events) last.
func TestEverySampleEventThroughItsFunction(t *testing.T) {
	if testing.Short() {
		t.Skip("builds five functions and runs them under the RIE against the emulators")
	}
	ctx := context.Background()
	s := stacktest.New(t)
	s.AddAccount(t, "news")
	for _, id := range []post.ID{"launch", "slot-a", "slot-b"} {
		s.Schedule(t, id, "Sample post "+string(id)+".", slot, "news")
	}
	// Three entries left unknown by an ambiguous create; the first is on
	// the platform.
	s.Sandbox.InjectStatus(s.Sandbox.Accounts()[0].ID, "Sample post launch-ambiguous.")
	for _, id := range []post.ID{"launch-ambiguous", "launch-released", "launch-held"} {
		p := s.Schedule(t, id, "Sample post "+string(id)+".", slot, "news")
		if _, err := s.Store.UpdateTarget(ctx, p.ID, "news", post.TargetUpdate{Status: post.Publishing, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		e := ledger.NewEntry(ledger.PublishKey("news", string(id), slot), ledger.Publish, "news", string(id), slot,
			platform.Fingerprint(p.Body, nil), "publisher/crashed", time.Now(), time.Minute)
		e.LookAfter = platform.StartOfHistory
		if err := s.Store.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		unknown, err := e.MarkUnknown("ambiguous: timeout", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Store.Update(ctx, e, unknown); err != nil {
			t.Fatal(err)
		}
	}
	missed := s.Schedule(t, "missed", "A post whose schedule never fired.", time.Now().Add(-10*time.Minute).Truncate(time.Second), "news")

	fn := map[string]func([]byte) []byte{}
	for _, name := range []string{"trigger", "publisher", "confirm", "sweeper"} {
		fn[name] = emulatortest.Lambda(t, emulatortest.BuildBootstrap(t, filepath.Join("..", name)), s.Env())
	}
	// The api function also serves /v1/webhooks: it needs the webhook
	// queues.
	apiEnv := s.Env()
	maps.Copy(apiEnv, s.Events(t).Env())
	fn["api"] = emulatortest.Lambda(t, emulatortest.BuildBootstrap(t, filepath.Join("..", "api")), apiEnv)
	invoke := func(t *testing.T, function, sample string, out any) {
		t.Helper()
		b := fn[function](readEvent(t, sample))
		var fail struct {
			ErrorType, ErrorMessage string
		}
		if json.Unmarshal(b, &fail) == nil && fail.ErrorType != "" {
			t.Fatalf("%s(%s) failed: %s: %s", function, sample, fail.ErrorType, fail.ErrorMessage)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s(%s) answered %s: %v", function, sample, b, err)
		}
	}
	queued := func(t *testing.T) []string {
		t.Helper()
		msgs, err := s.Queue.Receive(ctx, 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range msgs {
			j, err := publishing.DecodeJob(m.Body)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(j.Post))
			if err := s.Queue.Ack(ctx, m.Receipt); err != nil {
				t.Fatal(err)
			}
		}
		slices.Sort(got)
		return got
	}
	entry := func(t *testing.T, id post.ID) ledger.Entry {
		t.Helper()
		e, err := s.Store.Get(ctx, ledger.PublishKey("news", string(id), slot))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	covered := map[string]bool{}

	t.Run("trigger-slot.json", func(t *testing.T) {
		covered["trigger-slot.json"] = true
		var res struct{ Sent int }
		s.Calls.Reset()
		invoke(t, "trigger", "trigger-slot.json", &res)
		noStoreWrites(t, s.Calls.Snapshot(), 1) // the slot claimed and recorded done in one write
		if diff := cmp.Diff([]string{"launch", "slot-a", "slot-b"}, queued(t)); diff != "" || res.Sent != 3 {
			t.Errorf("sent %d; queued (-want +got):\n%s", res.Sent, diff)
		}
	})
	t.Run("trigger-target.json", func(t *testing.T) {
		covered["trigger-target.json"] = true
		var res struct{ Sent int }
		s.Calls.Reset()
		invoke(t, "trigger", "trigger-target.json", &res)
		noStoreWrites(t, s.Calls.Snapshot(), 0)
		if diff := cmp.Diff([]string{"launch"}, queued(t)); diff != "" || res.Sent != 1 {
			t.Errorf("sent %d; queued (-want +got):\n%s", res.Sent, diff)
		}
	})
	t.Run("publisher-batch.json", func(t *testing.T) {
		covered["publisher-batch.json"] = true
		var res events.SQSEventResponse
		invoke(t, "publisher", "publisher-batch.json", &res)
		if len(res.BatchItemFailures) != 0 {
			t.Errorf("batch item failures %v: a malformed body must not fail the batch", res.BatchItemFailures)
		}
		if e := entry(t, "launch"); e.State != ledger.Confirmed || e.RemoteID == "" {
			t.Errorf("launch entry %s %q, want confirmed with the remote id", e.State, e.RemoteID)
		}
		if n := strings.Count(strings.Join(statusTexts(s.Sandbox.Statuses(s.Sandbox.Accounts()[0].ID)), "\n"), "Sample post launch."); n != 1 {
			t.Errorf("launch is on the platform %d times, want 1", n)
		}
		dls, err := s.Queue.DeadLetters(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(dls) != 1 || !strings.Contains(dls[0].Reason, "account_id is missing") {
			t.Errorf("dead letters %+v, want the malformed body with a reason naming account_id", dls)
		}
	})
	t.Run("confirm-look.json", func(t *testing.T) {
		covered["confirm-look.json"] = true
		var res publishing.StepResponse
		invoke(t, "confirm", "confirm-look.json", &res)
		if !res.Found || res.RemoteID == "" {
			t.Errorf("look = %+v, want found with the remote id", res)
		}
	})
	t.Run("confirm-confirm.json", func(t *testing.T) {
		covered["confirm-confirm.json"] = true
		var res publishing.StepResponse
		invoke(t, "confirm", "confirm-confirm.json", &res)
		if e := entry(t, "launch-ambiguous"); e.State != ledger.Confirmed || e.RemoteID != "113500000000000001" {
			t.Errorf("entry %s %q after confirm, want confirmed with the sample's remote id", e.State, e.RemoteID)
		}
	})
	t.Run("confirm-release.json", func(t *testing.T) {
		covered["confirm-release.json"] = true
		var res publishing.StepResponse
		invoke(t, "confirm", "confirm-release.json", &res)
		if e := entry(t, "launch-released"); e.State != ledger.Released {
			t.Errorf("entry %s after release, want released", e.State)
		}
		if got := queued(t); !slices.Contains(got, "launch-released") {
			t.Errorf("queued %v after release, want the released post's job", got)
		}
	})
	t.Run("confirm-hold.json", func(t *testing.T) {
		covered["confirm-hold.json"] = true
		var res publishing.StepResponse
		invoke(t, "confirm", "confirm-hold.json", &res)
		if e := entry(t, "launch-held"); e.State != ledger.Held {
			t.Errorf("entry %s after hold, want held", e.State)
		}
	})
	t.Run("sweeper.json", func(t *testing.T) {
		covered["sweeper.json"] = true
		var rep publishing.SweepReport
		invoke(t, "sweeper", "sweeper.json", &rep)
		// Still scheduled (the trigger does not mark): slot-a, slot-b and
		// missed; launch-held is held.
		if rep.MissedSchedules != 3 || rep.Triggered != 3 || rep.HeldTargets != 1 || rep.ReadFailed {
			t.Errorf("sweep report %+v, want 3 missed and triggered, 1 held", rep)
		}
		if got := queued(t); !slices.Contains(got, string(missed.ID)) {
			t.Errorf("queued %v after the sweep, want the missed post's job", got)
		}
	})

	// The API's samples: a create with an Idempotency-Key, the same
	// request again (the first answer replayed), another body under the
	// key (422), a read of the post.
	var created events.APIGatewayV2HTTPResponse
	for _, tt := range []struct {
		sample string
		check  func(t *testing.T, res events.APIGatewayV2HTTPResponse)
	}{
		{"api-create.json", func(t *testing.T, res events.APIGatewayV2HTTPResponse) {
			created = res
			if res.StatusCode != 201 {
				t.Errorf("create: %d %s, want 201", res.StatusCode, res.Body)
			}
			if _, err := s.Store.GetPost(ctx, "api-sample"); err != nil {
				t.Errorf("GetPost(api-sample) after the create: %v", err)
			}
		}},
		{"api-create-again.json", func(t *testing.T, res events.APIGatewayV2HTTPResponse) {
			if res.StatusCode != created.StatusCode || res.Body != created.Body {
				t.Errorf("the same create again: %d %s, want the first answer %d %s", res.StatusCode, res.Body, created.StatusCode, created.Body)
			}
		}},
		{"api-create-other-body.json", func(t *testing.T, res events.APIGatewayV2HTTPResponse) {
			if res.StatusCode != 422 {
				t.Errorf("another body under the key: %d %s, want 422", res.StatusCode, res.Body)
			}
			if p, err := s.Store.GetPost(ctx, "api-sample"); err != nil || p.Body != "Sample post from the API." {
				t.Errorf("GetPost(api-sample) = %+v, %v; want the first body", p, err)
			}
		}},
		{"api-get-post.json", func(t *testing.T, res events.APIGatewayV2HTTPResponse) {
			if res.StatusCode != 200 || !strings.Contains(res.Body, `"api-sample"`) {
				t.Errorf("read: %d %s, want 200 with the post", res.StatusCode, res.Body)
			}
		}},
	} {
		t.Run(tt.sample, func(t *testing.T) {
			covered[tt.sample] = true
			var res events.APIGatewayV2HTTPResponse
			invoke(t, "api", tt.sample, &res)
			tt.check(t, res)
		})
	}

	files, err := filepath.Glob(filepath.Join("..", "..", "events", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !covered[filepath.Base(f)] && coveredElsewhere[filepath.Base(f)] == "" {
			t.Errorf("events/%s is not run through its function by this test", filepath.Base(f))
		}
	}
}

// noStoreWrites fails t if calls hold a DynamoDB write: the trigger reads
// posts and enqueues their jobs, and the stack's policy lets it write
// nothing (infra/template's least-privilege rules).
// noStoreWrites: the trigger reads posts and writes none, nor a ledger
// row or a credential; it may only update its slot's firing record in
// the workspace table (one write for a slot that fits one page).
func noStoreWrites(t *testing.T, calls map[string]int, slotRecords int) {
	t.Helper()
	for _, op := range []string{"PutItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"} {
		if n := calls["dynamodb."+op]; n > 0 {
			t.Errorf("the trigger made %d dynamodb.%s call(s); it may only read posts (calls: %v)", n, op, calls)
		}
	}
	if n, ws := calls["dynamodb.UpdateItem"], calls["dynamodb.UpdateItem@workspace"]; n != ws || ws != slotRecords {
		t.Errorf("the trigger made %d dynamodb.UpdateItem call(s), %d of them on its slot's record; want only the record's %d (calls: %v)", n, ws, slotRecords, calls)
	}
}

func statusTexts(sts []sandbox.Status) []string {
	var out []string
	for _, st := range sts {
		out = append(out, st.Text)
	}
	return out
}
