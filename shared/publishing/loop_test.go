package publishing_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestLoopDeadLettersBadBodiesAndKeepsGoing(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	ctx := context.Background()
	good := e.schedule("good", "Still published.")
	slot := good.Slot.Format(time.RFC3339)
	bad := []struct{ body, reason string }{
		{`not json`, "not a job"},
		{`{"post_id":"good","account_id":"news","slot":"` + slot + `","priority":1}`, `unknown field "priority"`},
		{`{"account_id":"news","slot":"` + slot + `"}`, "post_id is missing"},
		{`{"post_id":"good","slot":"` + slot + `"}`, "account_id is missing"},
		{`{"post_id":"good","account_id":"news"}`, "slot is missing"},
		{`{"post_id":"good","account_id":"news","slot":"tomorrow"}`, "slot"},
		{`{"post_id":"ghost","account_id":"news","slot":"` + slot + `"}`, "post ghost"},
		{`{"post_id":"good","account_id":"news","slot":"` + slot + `"} {}`, "data after"},
		{"", "not a job"},
	}
	for _, b := range bad {
		if _, err := e.queue.Send(ctx, []byte(b.body), 0); err != nil {
			t.Fatal(err)
		}
	}
	e.enqueue(good)
	e.drain()

	if tg := e.target(good); tg.Status != post.Published {
		t.Errorf("good job's target %s, want published", tg.Status)
	}
	dls, err := e.queue.DeadLetters(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != len(bad) {
		t.Fatalf("%d dead letters, want %d: %+v", len(dls), len(bad), dls)
	}
	byBody := map[string]string{}
	for _, d := range dls {
		byBody[string(d.Body)] = d.Reason
	}
	for _, b := range bad {
		reason, ok := byBody[b.body]
		if !ok || !strings.Contains(reason, b.reason) {
			t.Errorf("body %q dead-lettered=%v with reason %q, want it to mention %q", b.body, ok, reason, b.reason)
		}
	}
}

func TestLoopRetriesNotPerformedAfterRetryAfter(t *testing.T) {
	e := newEnv(t, sandbox.Options{DisableIdempotency: true})
	e.sb.Script(sandbox.Fault{Kind: sandbox.Fault429, RetryAfter: time.Second})
	job := e.schedule("throttled", "Hello again.")
	e.enqueue(job)
	e.drain()
	if tg := e.target(job); tg.Status != post.Waiting {
		t.Fatalf("target %s right after a 429, want waiting (retry pending)", tg.Status)
	}
	if n, err := e.loop.RunOnce(context.Background()); err != nil || n != 0 {
		t.Fatalf("message visible again before Retry-After (n=%d err=%v)", n, err)
	}
	time.Sleep(1100 * time.Millisecond)
	e.clock.Advance(time.Second)
	e.drain()
	if tg := e.target(job); tg.Status != post.Published {
		t.Errorf("target %s after Retry-After, want published", tg.Status)
	}
	if st := e.sb.Stats(); st.CreateRequests != 2 || st.Committed != 1 || st.Duplicates != 0 {
		t.Errorf("sandbox stats %+v, want 2 creates, 1 commit", st)
	}
}

func TestBackoff(t *testing.T) {
	half := func(d time.Duration) time.Duration { return d - 1 } // the largest jitter
	tests := []struct {
		n          int
		retryAfter time.Duration
		jitter     func(time.Duration) time.Duration
		want       time.Duration
	}{
		{1, 0, nil, 100 * time.Millisecond},
		{2, 0, nil, 200 * time.Millisecond},
		{4, 0, nil, 800 * time.Millisecond},
		{6, 0, nil, 3200 * time.Millisecond},
		{7, 0, nil, 5 * time.Second},
		{60, 0, nil, 5 * time.Second},
		{1, 0, half, 150*time.Millisecond - 1},
		{7, 0, half, 7500*time.Millisecond - 1},
		{1, 30 * time.Second, nil, 30 * time.Second},
		{0, 0, nil, 100 * time.Millisecond},
	}
	var got, want []time.Duration
	for _, tt := range tests {
		got = append(got, publishing.Backoff(tt.n, tt.retryAfter, tt.jitter))
		want = append(want, tt.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Backoff (-want +got):\n%s", diff)
	}
}
