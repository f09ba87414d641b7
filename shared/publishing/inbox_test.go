package publishing_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// countLooks is a LookCounter: n looks for every entry, or err.
type countLooks struct {
	n   int
	err error
}

func (c countLooks) Looks(context.Context, ledger.Entry) (int, error) { return c.n, c.err }

// ListHeld lists held entries, then open ones, each with its evidence:
// the post it is about (a delete's own post, its remote post as the
// remote id), the reason, looks, and the history when asked; uploads are
// left out, and a limit bounds each list and says there was more.
func TestListHeld(t *testing.T) {
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "oncepost.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	slot := t0.Add(time.Hour)
	mk := func(key ledger.Key, a ledger.Action, subject string, at time.Time) ledger.Entry {
		t.Helper()
		e := ledger.NewEntry(key, a, "news", subject, slot, "fp", "w1", at, time.Minute)
		if err := s.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		return e
	}
	held := func(e ledger.Entry, reason, remote string, at time.Time) ledger.Entry {
		t.Helper()
		h, err := e.Hold(reason, remote, at)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Update(ctx, e, h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	dupKey := ledger.PublishKey("news", "dup", slot)
	held(mk(dupKey, ledger.Publish, "dup", t0), "duplicate on the account", "113", t0.Add(time.Minute))
	openKey := ledger.PublishKey("news", "slow", slot)
	mk(openKey, ledger.Publish, "slow", t0.Add(2*time.Minute))
	mk(ledger.UploadKey("news", "sha", openKey), ledger.Upload, "sha", t0.Add(3*time.Minute))

	list, err := publishing.ListHeld(ctx, s, publishing.HeldQuery{Now: t0.Add(time.Hour), History: s, Looks: countLooks{n: 2}})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Key      ledger.Key
		State    ledger.State
		Post     string
		RemoteID string
		Reason   string
		Looks    int
		History  []ledger.State
	}
	var got []row
	for _, it := range list.Items {
		r := row{Key: it.Entry.Key, State: it.Entry.State, Post: it.PostID, RemoteID: it.RemoteID, Reason: it.Entry.Reason, Looks: it.Looks}
		for _, h := range it.History {
			r.History = append(r.History, h.To)
		}
		got = append(got, r)
	}
	want := []row{
		{Key: dupKey, State: ledger.Held, Post: "dup", RemoteID: "113", Reason: "duplicate on the account", Looks: 2, History: []ledger.State{ledger.Pending, ledger.Held}},
		{Key: openKey, State: ledger.Pending, Post: "slow", Looks: 2, History: []ledger.State{ledger.Pending}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListHeld (-want +got):\n%s", diff)
	}
	if list.More || list.LooksErr != nil {
		t.Errorf("More %v, LooksErr %v: want false, nil", list.More, list.LooksErr)
	}

	// Bounded (the open list has the publish and its upload: cut, and
	// said), without history; a failure to count looks is kept apart.
	lookErr := errors.New("engine down")
	list, err = publishing.ListHeld(ctx, s, publishing.HeldQuery{Now: t0.Add(time.Hour), Limit: 1, Looks: countLooks{err: lookErr}})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 || !list.More || list.Items[0].History != nil || !errors.Is(list.LooksErr, lookErr) {
		t.Errorf("limit 1: %d items, More %v, history %v, LooksErr %v; want 2 items (one held, one open), more, no history, the looks' error",
			len(list.Items), list.More, list.Items[0].History, list.LooksErr)
	}
	if list, err = publishing.ListHeld(ctx, s, publishing.HeldQuery{Now: t0.Add(time.Hour), Limit: 2}); err != nil || list.More || len(list.Items) != 2 {
		t.Errorf("limit 2: %d items, More %v, err %v; want 2 items and no more", len(list.Items), list.More, err)
	}
}
