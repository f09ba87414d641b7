package mastodon

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
	"oncepost/shared/platform/sandbox"
)

// A thread's parts go out as a reply chain (in_reply_to_id), Recent reads
// each post's parent back, and Lookup tells apart two parts of the same
// text by their parents: a look for part 3 never answers part 2, and a
// look for a post that is no reply never answers a reply.
func TestRepliesAndLookupByParent(t *testing.T) {
	ctx := context.Background()
	s := startSandbox(t, sandbox.Options{})
	a := s.AddAccount("alice")
	c := sandboxClient(t, s.URL(), a)
	if !c.Capabilities().Replies {
		t.Fatal("Capabilities().Replies is false")
	}
	send := func(handle, text string, reply *platform.ReplyRef) platform.Receipt {
		t.Helper()
		r, err := c.Publish(ctx, platform.PublishRequest{Handle: handle, Text: text, Reply: reply})
		if err != nil {
			t.Fatalf("publish %q: %v", text, err)
		}
		return r
	}
	one := send("h1", "The same words", nil)
	two := send("h2", "The same words", &platform.ReplyRef{Parent: one.RemoteID, Root: one.RemoteID})
	var chain []string
	for _, st := range s.Statuses(a.ID) {
		chain = append(chain, st.ID+"←"+st.InReplyToID)
	}
	if d := cmp.Diff([]string{two.RemoteID + "←" + one.RemoteID, one.RemoteID + "←"}, chain); d != "" {
		t.Errorf("the sandbox's chain (-want +got):\n%s", d)
	}
	recent, err := c.Recent(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(recent) != 2 || recent[0].ReplyTo != one.RemoteID || recent[1].ReplyTo != "" {
		t.Errorf("Recent's parents: %+v", recent)
	}

	fp := platform.Fingerprint("The same words", nil)
	look := func(reply *platform.ReplyRef) (string, bool) {
		t.Helper()
		p, found, err := c.Lookup(ctx, platform.LookupQuery{Fingerprint: fp, Text: "The same words", After: platform.StartOfHistory, Reply: reply})
		if err != nil {
			t.Fatalf("lookup: %v", err)
		}
		return p.RemoteID, found
	}
	if id, found := look(nil); !found || id != one.RemoteID {
		t.Errorf("look for the post itself: %s %v, want %s", id, found, one.RemoteID)
	}
	if id, found := look(&platform.ReplyRef{Parent: one.RemoteID, Root: one.RemoteID}); !found || id != two.RemoteID {
		t.Errorf("look for part 2: %s %v, want %s", id, found, two.RemoteID)
	}
	// Part 3 (replying to part 2) was never sent: the look must not take
	// part 2, which has its text, for it.
	if id, found := look(&platform.ReplyRef{Parent: two.RemoteID, Root: one.RemoteID}); found {
		t.Errorf("look for part 3 found %s, which is part 1 or 2", id)
	}

	// A reply to a status that is gone is refused for good.
	_, err = c.Publish(ctx, platform.PublishRequest{Handle: "h4", Text: "late", Reply: &platform.ReplyRef{Parent: "999", Root: one.RemoteID}})
	var rej *platform.Rejected
	if !errors.As(err, &rej) || rej.Status != 404 {
		t.Errorf("reply to a missing status: %v, want Rejected 404", err)
	}
}
