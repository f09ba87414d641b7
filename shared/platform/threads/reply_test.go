package threads

import (
	"context"
	"testing"

	"oncepost/shared/platform"
)

// A thread's part is a TEXT container made with reply_to_id, published;
// a look for it reads the user's replies (not its threads) and takes a
// post of its text only when it answers the part's parent, by the
// published container or, without one, by fingerprint.
func TestReplyAndLookupByParent(t *testing.T) {
	f := newFake(t)
	srv := newServer(t, f)
	c := newClient(t, srv.URL)
	ctx := context.Background()
	one, err := c.Publish(ctx, platform.PublishRequest{Text: "1/ A thread"})
	if err != nil {
		t.Fatal(err)
	}
	var container string
	reply := &platform.ReplyRef{Parent: one.RemoteID, Root: one.RemoteID}
	two, err := c.Publish(ctx, platform.PublishRequest{Text: "More below", Reply: reply,
		Checkpoint: func(_ context.Context, h string) error { container = h; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.container(container).replyTo; got != one.RemoteID {
		t.Fatalf("the container's reply_to_id is %q, want %s", got, one.RemoteID)
	}
	if got := f.post(two.RemoteID).repliedTo; got != one.RemoteID {
		t.Fatalf("the published reply answers %q, want %s", got, one.RemoteID)
	}
	fp := platform.Fingerprint("More below", nil)
	for _, tt := range []struct {
		name       string
		checkpoint string
		reply      *platform.ReplyRef
		want       string
	}{
		{"by the container", container, reply, two.RemoteID},
		{"by fingerprint among replies", "", reply, two.RemoteID},
		{"another parent", "", &platform.ReplyRef{Parent: two.RemoteID, Root: one.RemoteID}, ""},
		{"no reply looked for", "", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, found, err := c.Lookup(ctx, platform.LookupQuery{Fingerprint: fp, Text: "More below", Checkpoint: tt.checkpoint, Reply: tt.reply,
				NotBefore: fixedNow, After: one.RemoteID})
			if err != nil {
				t.Fatalf("lookup: %v", err)
			}
			if got := map[bool]string{true: p.RemoteID}[found]; got != tt.want {
				t.Errorf("found %q, want %q", got, tt.want)
			}
		})
	}
}
