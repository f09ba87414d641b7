package bluesky

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/pdstest"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// noFlows starts no workflow: the test runs the confirm steps itself.
type noFlows struct{}

func (noFlows) StartConfirm(context.Context, string, publishing.ConfirmInput) error { return nil }

// The incident on Bluesky, through the ledger: the reference PDS stores
// the post and the answer is lost (a proxy drops it). The publisher
// records the entry unknown and sends nothing more; the confirm step's
// look finds the post by its record key and confirms it; the target is
// published with the record's URI, and listRecords shows one record.
func TestPDSLostAnswerThroughTheLedger(t *testing.T) {
	pds := pdstest.Start(t)
	proxy := &losingProxy{upstream: pds.URL}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	ctx := ctxFor(t)
	a := pds.CreateAccount(t, "gina.test", "pw-gina")
	s, err := CreateSession(ctx, nil, pds.URL, a.Handle, a.Password)
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "oncepost.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	acc := post.Account{ID: "gina", Platform: "bluesky", Handle: "@" + a.Handle, BaseURL: srv.URL, RemoteID: s.DID, CredentialRef: "gina", Gate: post.GateAuto}
	if err := store.PutAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	if err := store.PutCredential(ctx, acc.ID, s.Credential); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().UTC().Truncate(time.Second)
	body := "Published once, whatever the network does."
	p := post.Post{ID: "incident", Body: body, CreatedAt: slot, Targets: []post.Target{{Account: acc.ID, Slot: slot, Status: post.Scheduled, UpdatedAt: slot}}}
	if err := store.CreatePost(ctx, p); err != nil {
		t.Fatal(err)
	}
	pub := &publishing.Publisher{Ledger: store, Posts: store, Accounts: store, Pacer: store, Platforms: Connector{}, Flows: noFlows{},
		Owner: "worker-1", CallTimeout: 10 * time.Second, RecordMargin: 2 * time.Second, Lease: time.Minute}
	conf := &publishing.Confirmer{Ledger: store, Posts: store, Accounts: store, Platforms: Connector{}}

	proxy.armed.Store(true)
	out, err := pub.Publish(ctx, publishing.Job{Post: p.ID, Account: acc.ID, Slot: slot})
	if err != nil || out.Result != publishing.Confirming {
		t.Fatalf("publish with the answer lost = %+v, %v; want confirming", out, err)
	}
	e, err := store.Get(ctx, out.Key)
	if err != nil || e.State != ledger.Unknown {
		t.Fatalf("entry %s (%v), want unknown", e.State, err)
	}
	in := publishing.ConfirmInput{Key: out.Key, Attempt: e.Attempt}
	res, err := conf.Look(ctx, in)
	if err != nil || !res.Found {
		t.Fatalf("look = %+v, %v; want found", res, err)
	}
	if err := conf.Confirm(ctx, in, res.RemoteID); err != nil {
		t.Fatal(err)
	}
	if e, _ := store.Get(ctx, out.Key); e.State != ledger.Confirmed || e.RemoteID != res.RemoteID {
		t.Errorf("entry %s remote %q, want confirmed %q", e.State, e.RemoteID, res.RemoteID)
	}
	got, err := store.GetPost(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tg, _ := got.Target(acc.ID); tg.Status != post.Published || tg.RemoteID != res.RemoteID {
		t.Errorf("target %s remote %q, want published %q", tg.Status, tg.RemoteID, res.RemoteID)
	}
	records := pds.ListPosts(t, s.DID)
	if len(records) != 1 || records[0].URI != res.RemoteID {
		t.Errorf("%d records on the PDS (want 1, %s)", len(records), res.RemoteID)
	}
	// A redelivered job sends nothing: the entry is confirmed.
	if _, err := pub.Publish(ctx, publishing.Job{Post: p.ID, Account: acc.ID, Slot: slot}); err != nil {
		t.Errorf("redelivery: %v", err)
	}
	if n := len(pds.ListPosts(t, s.DID)); n != 1 {
		t.Errorf("%d records after a redelivery, want 1", n)
	}
}
