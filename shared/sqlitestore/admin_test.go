package sqlitestore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/clocktest"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

func TestDeleteAccount(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	for _, id := range []post.AccountID{"acct-a", "acct-b"} {
		if err := s.PutAccount(ctx, post.Account{ID: id, Platform: "mastodon", Limits: post.Limits{MaxMedia: 4}}); err != nil {
			t.Fatal(err)
		}
		mustPutCred(t, s, id, secretCred(string(id)))
	}
	if err := s.LeaseRefresh(ctx, "acct-a", "w1", t0, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	credRows := func(id post.AccountID) int {
		var n int
		if err := s.r.QueryRow(`SELECT count(*) FROM credentials WHERE account_id = ?`, string(id)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := s.Stats().AccountWrites
	if err := s.DeleteAccount(ctx, "acct-a"); err != nil {
		t.Fatalf("DeleteAccount = %v", err)
	}
	if got := s.Stats().AccountWrites - before; got != 1 {
		t.Errorf("DeleteAccount counted %d account writes, want 1", got)
	}
	if _, err := s.GetAccount(ctx, "acct-a"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("GetAccount after DeleteAccount = %v, want post.ErrNotFound", err)
	}
	if _, err := s.Credential(ctx, "acct-a"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("Credential after DeleteAccount = %v, want post.ErrNotFound", err)
	}
	if n := credRows("acct-a"); n != 0 {
		t.Errorf("%d credential rows left (with the lease), want none", n)
	}
	// The other account is untouched.
	if a, err := s.GetAccount(ctx, "acct-b"); err != nil || a.Limits.MaxMedia != 4 {
		t.Errorf("GetAccount(other account) = %+v, %v", a, err)
	}
	if _, err := s.Credential(ctx, "acct-b"); err != nil {
		t.Errorf("Credential(other account) = %v", err)
	}

	err := s.DeleteAccount(ctx, "acct-a")
	if !errors.Is(err, post.ErrNotFound) || !strings.Contains(err.Error(), "acct-a") {
		t.Errorf("second DeleteAccount = %v, want post.ErrNotFound naming acct-a", err)
	}
	// An unknown account: nothing is deleted, not even a credential row
	// stored under its id (the transaction rolls back).
	if err := s.LeaseRefresh(ctx, "acct-ghost", "w1", t0, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAccount(ctx, "acct-ghost"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("DeleteAccount(unknown) = %v, want post.ErrNotFound", err)
	}
	if n := credRows("acct-ghost"); n != 1 {
		t.Errorf("%d credential rows of the unknown account after a refused DeleteAccount, want the 1 kept", n)
	}
}

func TestBlocklist(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	if got, err := s.BlockedTerms(ctx); err != nil || len(got) != 0 {
		t.Errorf("BlockedTerms(empty) = %v, %v; want none", got, err)
	}
	at := t0.In(time.FixedZone("CET", 3600))
	terms := []post.BlockedTerm{
		{Term: "Zebra Crossing", Key: "zebra crossing", AddedAt: at},
		{Term: "Äpfel", Key: "äpfel", AddedAt: at.Add(1)},
		{Term: "apple", Key: "apple", AddedAt: at.Add(2)},
		// The store does not normalise: another key is another entry.
		{Term: "APPLE", Key: "APPLE", AddedAt: at.Add(3)},
	}
	for _, bt := range terms {
		if added, err := s.AddBlockedTerm(ctx, bt); err != nil || !added {
			t.Fatalf("AddBlockedTerm(%q) = %v, %v; want true, nil", bt.Key, added, err)
		}
	}
	// Adding a key twice is a no-op: the first term and time stay.
	if added, err := s.AddBlockedTerm(ctx, post.BlockedTerm{Term: "Apple!", Key: "apple", AddedAt: at.Add(time.Hour)}); err != nil || added {
		t.Errorf("AddBlockedTerm(existing key) = %v, %v; want false, nil", added, err)
	}
	if _, err := s.AddBlockedTerm(ctx, post.BlockedTerm{Term: "x"}); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("AddBlockedTerm(no key) = %v, want ErrEmptyKey", err)
	}
	want := []post.BlockedTerm{terms[3], terms[2], terms[0], terms[1]} // by key, byte order
	for i := range want {
		want[i].AddedAt = want[i].AddedAt.UTC()
	}
	got, err := s.BlockedTerms(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("BlockedTerms (-want +got):\n%s", d)
	}
	for _, bt := range got {
		if bt.AddedAt.Location() != time.UTC {
			t.Errorf("%s: AddedAt in %s, want UTC", bt.Key, bt.AddedAt.Location())
		}
	}

	if removed, err := s.RemoveBlockedTerm(ctx, "apple"); err != nil || !removed {
		t.Errorf("RemoveBlockedTerm(apple) = %v, %v; want true, nil", removed, err)
	}
	if removed, err := s.RemoveBlockedTerm(ctx, "apple"); err != nil || removed {
		t.Errorf("second RemoveBlockedTerm(apple) = %v, %v; want false, nil", removed, err)
	}
	got, err = s.BlockedTerms(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]post.BlockedTerm{want[0], want[2], want[3]}, got); d != "" {
		t.Errorf("BlockedTerms after RemoveBlockedTerm (-want +got):\n%s", d)
	}
	if w := s.Stats().BlocklistWrites; w != 5 {
		t.Errorf("BlocklistWrites = %d, want 5 (four adds, one removal)", w)
	}
}

// deadLetter sends body to q, receives it and dead-letters it.
func deadLetter(t *testing.T, q *Queue, body string) string {
	t.Helper()
	id, err := q.Send(context.Background(), []byte(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	m := receiveOne(t, q, time.Minute)
	if err := q.DeadLetter(context.Background(), m.Receipt, "test"); err != nil {
		t.Fatal(err)
	}
	return id
}

// A redriven message is new: sent at the redrive, visible at once, never
// delivered. A dead letter whose stored sent_at could not be decoded is
// delivered after a redrive.
func TestRedriveOnFakeClock(t *testing.T) {
	ctx := context.Background()
	clock := clocktest.New(t0)
	s := openTest(t, Options{Now: clock.Now})
	q := s.Queue("publish", 2)
	id := deadLetter(t, q, "first")
	bad, err := q.Send(ctx, []byte("bad"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(`UPDATE queue_messages SET sent_at = 'yesterday' WHERE id = ?`, bad); err != nil {
		t.Fatal(err)
	}
	receiveNone(t, q, "with only an undecodable message") // dead-letters it
	clock.Advance(time.Hour)
	for _, x := range []string{id, bad} {
		if err := q.Redrive(ctx, x); err != nil {
			t.Fatalf("Redrive(%s) = %v", x, err)
		}
	}
	ms, err := q.Receive(ctx, 10, time.Minute)
	if err != nil || len(ms) != 2 {
		t.Fatalf("Receive after Redrive = %d messages, %v; want 2", len(ms), err)
	}
	for _, m := range ms {
		if m.ReceiveCount != 1 || !m.SentAt.Equal(t0.Add(time.Hour)) {
			t.Errorf("redriven %s: receive count %d, sent at %s; want 1, the redrive time %s", m.ID, m.ReceiveCount, m.SentAt, t0.Add(time.Hour))
		}
	}
	if dl, err := q.DeadLetters(ctx, 0); err != nil || len(dl) != 0 {
		t.Errorf("DeadLetters after Redrive = %v, %v; want none", dl, err)
	}
}

// Redrive is one transaction: when deleting the dead letter fails, the
// message is not queued either; nothing is lost, nothing duplicated.
func TestRedriveIsAtomic(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	q := s.Queue("publish", 5)
	id := deadLetter(t, q, "keep me once")
	if _, err := s.w.Exec(`CREATE TRIGGER refuse_delete BEFORE DELETE ON dead_letters BEGIN SELECT RAISE(ABORT, 'disk on fire'); END`); err != nil {
		t.Fatal(err)
	}
	if err := q.Redrive(ctx, id); err == nil || !strings.Contains(err.Error(), "disk on fire") || !strings.Contains(err.Error(), id) {
		t.Fatalf("Redrive with a failing delete = %v, want the failure, naming the id", err)
	}
	receiveNone(t, q, "after a failed Redrive")
	if dl, err := q.DeadLetters(ctx, 0); err != nil || len(dl) != 1 || dl[0].ID != id {
		t.Fatalf("DeadLetters after a failed Redrive = %v, %v; want the one dead letter", dl, err)
	}
	if _, err := s.w.Exec(`DROP TRIGGER refuse_delete`); err != nil {
		t.Fatal(err)
	}
	if err := q.Redrive(ctx, id); err != nil {
		t.Fatal(err)
	}
	if m := receiveOne(t, q, time.Minute); m.ID != id || string(m.Body) != "keep me once" {
		t.Errorf("after Redrive: got %s %q", m.ID, m.Body)
	}
}

// Redrive and Drop of another queue's dead letter, through the
// interface, report publishing.ErrMessageNotFound and change nothing.
func TestDeadLetterAdminPerQueue(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	a, b := s.Queue("a", 5), s.Queue("b", 5)
	id := deadLetter(t, a, "in a")
	var admin publishing.DeadLetterAdmin = b
	for name, err := range map[string]error{"Redrive": admin.Redrive(ctx, id), "Drop": admin.Drop(ctx, id)} {
		if !errors.Is(err, publishing.ErrMessageNotFound) || !strings.Contains(err.Error(), "queue b") {
			t.Errorf("queue b %s(queue a's dead letter) = %v, want ErrMessageNotFound naming queue b", name, err)
		}
	}
	if err := a.Drop(ctx, id); err != nil {
		t.Errorf("queue a Drop = %v", err)
	}
	if w := s.Stats().QueueWrites; w == 0 {
		t.Error("Drop counted no queue write")
	}
}
