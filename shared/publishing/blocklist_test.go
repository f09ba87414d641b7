package publishing_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// A term blocked after a post was scheduled holds the post instead of
// sending it: no ledger entry, no create, the reason names the term and
// where it is.
func TestBlockedTermHoldsAScheduledPost(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	e.pub.Blocklist = e.store
	job := e.schedule("launch", "Big news: the SPOILER is out")
	term, err := post.NewBlockedTerm("spoiler", e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.AddBlockedTerm(context.Background(), term); err != nil {
		t.Fatal(err)
	}
	out := e.publish(job)
	if out.Result != publishing.Held {
		t.Fatalf("Publish = %s (%s), want held", out.Result, out.Reason)
	}
	tg := e.target(job)
	if tg.Status != post.Held || !strings.Contains(tg.Reason, `blocked term "spoiler" at line 1, column 15`) {
		t.Errorf("target %s %q, want held naming the term and its position", tg.Status, tg.Reason)
	}
	if got := e.sb.Stats().CreateRequests; got != 0 {
		t.Errorf("sandbox got %d creates, want 0", got)
	}
	if _, err := e.store.Get(context.Background(), ledger.PublishKey(string(job.Account), string(job.Post), job.Slot)); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("ledger entry: %v, want none (nothing was sent)", err)
	}
}

// Once a send may have happened, the ledger's rules finish the post: a
// term added meanwhile must not hide a post that may already be out.
func TestBlockedTermDoesNotHoldAPostAlreadySent(t *testing.T) {
	e := newEnv(t, sandbox.Options{})
	e.pub.Blocklist = e.store
	e.sb.Script(sandbox.Fault{Kind: sandbox.FaultDropResponse})
	job := e.schedule("launch", "Big news: the spoiler is out")
	if out := e.publish(job); out.Result != publishing.Confirming {
		t.Fatalf("first Publish = %s, want confirming", out.Result)
	}
	term, _ := post.NewBlockedTerm("spoiler", e.clock.Now())
	if _, err := e.store.AddBlockedTerm(context.Background(), term); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	out := e.publish(job)
	if out.Result == publishing.Held && strings.HasPrefix(out.Reason, publishing.ReasonBlocked) {
		t.Fatalf("Publish held the post for the blocklist after a send that may have landed: %s", out.Reason)
	}
	if tg := e.target(job); tg.Status == post.Held {
		t.Errorf("target held (%s), want it left to the confirm loop", tg.Reason)
	}
}
