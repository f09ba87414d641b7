package x

import (
	"context"
	"testing"

	"oncepost/shared/platform"
)

// A thread's part is posted with reply.in_reply_to_tweet_id, and a look
// for it reads replies too (exclude=retweets, referenced_tweets) and takes
// a post of its text only when it replies to its parent: a part of the
// same text elsewhere in the thread is not it.
func TestReplyAndLookupByParent(t *testing.T) {
	f := newFakeX(t)
	srv := newServer(t, f)
	c := newClient(t, srv.URL)
	ctx := context.Background()
	one, err := c.Publish(ctx, platform.PublishRequest{Text: "1/ A thread"})
	if err != nil {
		t.Fatal(err)
	}
	two, err := c.Publish(ctx, platform.PublishRequest{Text: "More below", Reply: &platform.ReplyRef{Parent: one.RemoteID, Root: one.RemoteID}})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	stored := f.posts[len(f.posts)-1].inReplyTo
	f.mu.Unlock()
	if stored != one.RemoteID {
		t.Fatalf("X stored part 2 replying to %q, want %s", stored, one.RemoteID)
	}
	fp := platform.Fingerprint("More below", nil)
	look := func(reply *platform.ReplyRef) (string, bool) {
		t.Helper()
		p, found, err := c.Lookup(ctx, platform.LookupQuery{Fingerprint: fp, Text: "More below", After: platform.StartOfHistory, Reply: reply})
		if err != nil {
			t.Fatalf("lookup: %v", err)
		}
		return p.RemoteID, found
	}
	if id, found := look(&platform.ReplyRef{Parent: one.RemoteID, Root: one.RemoteID}); !found || id != two.RemoteID {
		t.Errorf("look for part 2: %s %v, want %s", id, found, two.RemoteID)
	}
	if id, found := look(&platform.ReplyRef{Parent: two.RemoteID, Root: one.RemoteID}); found {
		t.Errorf("look for part 3 (never sent) found %s", id)
	}
	// A post that is no reply is looked for without replies, as before.
	if _, found := look(nil); found {
		t.Error("look for a post that is no reply found the reply")
	}
	if _, err := c.Publish(ctx, platform.PublishRequest{Text: "x", Reply: &platform.ReplyRef{Parent: "not-an-id"}}); outcomeOf(t, err).Class != "rejected" {
		t.Errorf("a reply to a non-id: %v, want rejected before sending", err)
	}
}
