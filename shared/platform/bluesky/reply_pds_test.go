package bluesky

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/localpds"
	"oncepost/shared/pdstest"
	"oncepost/shared/platform"
)

// recordReply is a stored record's text and reply references.
type recordReply struct {
	Text  string    `json:"text"`
	Reply *replyRef `json:"reply"`
}

func replyOf(t *testing.T, r localpds.Record) recordReply {
	t.Helper()
	var v recordReply
	if err := json.Unmarshal(r.Value, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A thread's parts are records whose reply references name the thread's
// first post (root) and the one before (parent) by URI and CID, as the
// PDS stores them. The references are read once and recorded through
// Checkpoint; a later attempt takes them from Resume and writes the very
// same record (the PDS answers the same CID, and holds no second one).
// A look for a part takes the record at its key only if it answers the
// part's parent.
func TestPDSThreadReplyRefs(t *testing.T) {
	pds := pdstest.Start(t)
	acc := newPDSAccount(t, "", pds, "carol.test")
	ctx := ctxFor(t)
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if !acc.client.Capabilities().Replies {
		t.Fatal("Capabilities().Replies is false")
	}

	one, err := acc.client.Publish(ctx, platform.PublishRequest{Handle: ledger.NewHandle(), Text: "1/3 a thread", CreatedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	parts := []platform.Receipt{one}
	checkpoints := map[string]string{}
	reqs := map[string]platform.PublishRequest{}
	for _, text := range []string{"2/3 its second part", "3/3 its third"} {
		req := platform.PublishRequest{Handle: ledger.NewHandle(), Text: text, CreatedAt: at,
			Reply: &platform.ReplyRef{Parent: parts[len(parts)-1].RemoteID, Root: one.RemoteID}}
		req.Checkpoint = func(_ context.Context, handle string) error { checkpoints[text] = handle; return nil }
		r, err := acc.client.Publish(ctx, req)
		if err != nil {
			t.Fatalf("publish %q: %v", text, err)
		}
		parts, reqs[text] = append(parts, r), req
	}

	records := pds.ListPosts(t, acc.account.DID)
	byURI := map[string]localpds.Record{}
	for _, r := range records {
		byURI[r.URI] = r
	}
	if len(records) != 3 {
		t.Fatalf("%d records, want 3", len(records))
	}
	ref := func(i int) strongRef { return strongRef{URI: parts[i].RemoteID, CID: byURI[parts[i].RemoteID].CID} }
	want := map[string]recordReply{
		parts[0].RemoteID: {Text: "1/3 a thread"},
		parts[1].RemoteID: {Text: "2/3 its second part", Reply: &replyRef{Root: ref(0), Parent: ref(0)}},
		parts[2].RemoteID: {Text: "3/3 its third", Reply: &replyRef{Root: ref(0), Parent: ref(1)}},
	}
	for uri, w := range want {
		if d := cmp.Diff(w, replyOf(t, byURI[uri])); d != "" {
			t.Errorf("record %s (-want +got):\n%s", uri, d)
		}
	}
	var frozen replyRef
	if err := json.Unmarshal([]byte(checkpoints["3/3 its third"]), &frozen); err != nil || !cmp.Equal(frozen, *want[parts[2].RemoteID].Reply) {
		t.Errorf("the checkpoint of part 3 is %q (%v), want its reply references", checkpoints["3/3 its third"], err)
	}

	// A later attempt of part 3: references from Resume, nothing read,
	// nothing checkpointed; the same record, once.
	again := reqs["3/3 its third"]
	again.Resume = checkpoints["3/3 its third"]
	again.Checkpoint = func(context.Context, string) error { t.Error("a resumed attempt checkpointed again"); return nil }
	r, err := acc.client.Publish(ctx, again)
	if err != nil || r.RemoteID != parts[2].RemoteID {
		t.Fatalf("the repeat of part 3: %+v, %v; want %s", r, err, parts[2].RemoteID)
	}
	after := pds.ListPosts(t, acc.account.DID)
	if len(after) != 3 {
		t.Errorf("%d records after the repeat, want 3", len(after))
	}
	for _, rec := range after {
		if rec.CID != byURI[rec.URI].CID {
			t.Errorf("record %s changed CID: %s, was %s", rec.URI, rec.CID, byURI[rec.URI].CID)
		}
	}
	// Recorded references that are not this reply's are refused, unsent.
	wrong := again
	wrong.Reply = &platform.ReplyRef{Parent: parts[0].RemoteID, Root: parts[0].RemoteID}
	var rej *platform.Rejected
	if _, err := acc.client.Publish(ctx, wrong); !errors.As(err, &rej) {
		t.Errorf("a Resume of another reply's references: %v, want Rejected", err)
	}

	q := platform.LookupQuery{Handle: again.Handle, CreatedAt: at, Reply: again.Reply}
	if rp, found, err := acc.client.Lookup(ctx, q); err != nil || !found || rp.RemoteID != parts[2].RemoteID || rp.ReplyTo != parts[1].RemoteID {
		t.Errorf("look for part 3: %+v %v %v", rp, found, err)
	}
	q.Reply = &platform.ReplyRef{Parent: parts[0].RemoteID, Root: parts[0].RemoteID}
	var inc *platform.Inconclusive
	if _, found, err := acc.client.Lookup(ctx, q); found || !errors.As(err, &inc) {
		t.Errorf("look under part 3's key for another parent: found %v, %v; want Inconclusive", found, err)
	}
	// A reply to a post that is gone is refused before anything is written.
	if err := acc.client.Delete(ctx, parts[2].RemoteID); err != nil {
		t.Fatal(err)
	}
	_, err = acc.client.Publish(ctx, platform.PublishRequest{Handle: ledger.NewHandle(), Text: "4/3 late", CreatedAt: at,
		Reply: &platform.ReplyRef{Parent: parts[2].RemoteID, Root: one.RemoteID}})
	if !errors.As(err, &rej) || rej.Reason != "reply_parent_gone" {
		t.Errorf("a reply to a deleted post: %v, want Rejected reply_parent_gone", err)
	}
}
