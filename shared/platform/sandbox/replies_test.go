package sandbox

import (
	"net/http"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// postReply creates a status replying to parent (form-encoded, as the
// Mastodon adapter does not: it sends JSON, which TestRepliesAreRecorded
// covers too).
func postReply(t *testing.T, s *Server, a Account, text, parent string) response {
	t.Helper()
	v := url.Values{"status": {text}, "in_reply_to_id": {parent}}
	return mustSend(t, http.MethodPost, s.URL()+"/api/v1/statuses", a.AccessToken, formType, []byte(v.Encode()), nil)
}

// A reply chain is recorded and served as Mastodon serves it: the
// status's in_reply_to_id and in_reply_to_account_id, in the create's
// answer, on reads and in the account's timeline; a reply to a status
// that is not there is refused 404 before anything is committed.
func TestRepliesAreRecorded(t *testing.T) {
	s := start(t, Options{Now: newClock().Now})
	a := s.AddAccount("alice")
	first := mustStatus(t, post(t, s, a, "1/ a thread", ""))
	second := mustStatus(t, postReply(t, s, a, "2/ its second part", first.ID))
	body := []byte(`{"status":"3/ and its third","in_reply_to_id":` + second.ID + `}`) // a number, as some clients send it
	third := mustStatus(t, mustSend(t, http.MethodPost, s.URL()+"/api/v1/statuses", a.AccessToken, "application/json", body, nil))

	type replyJSON struct {
		ID        string  `json:"id"`
		InReplyTo *string `json:"in_reply_to_id"`
		Account   *string `json:"in_reply_to_account_id"`
	}
	var got []replyJSON
	get(t, s.URL()+"/api/v1/accounts/"+a.ID+"/statuses", a.AccessToken).decode(t, &got)
	str := func(s string) *string { return &s }
	want := []replyJSON{
		{ID: third.ID, InReplyTo: str(second.ID), Account: str(a.ID)},
		{ID: second.ID, InReplyTo: str(first.ID), Account: str(a.ID)},
		{ID: first.ID},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("timeline (-want +got):\n%s", d)
	}
	var one replyJSON
	get(t, s.URL()+"/api/v1/statuses/"+second.ID, a.AccessToken).decode(t, &one)
	if d := cmp.Diff(want[1], one); d != "" {
		t.Errorf("GET status (-want +got):\n%s", d)
	}
	var chain []string
	for _, st := range s.Statuses(a.ID) {
		chain = append(chain, st.ID+"←"+st.InReplyToID)
	}
	if d := cmp.Diff([]string{third.ID + "←" + second.ID, second.ID + "←" + first.ID, first.ID + "←"}, chain); d != "" {
		t.Errorf("Statuses' InReplyToID (-want +got):\n%s", d)
	}

	before := s.Stats().Committed
	r := postReply(t, s, a, "a reply to nothing", "999")
	if r.status != http.StatusNotFound || errorOf(t, r) != "The post you are trying to reply to does not appear to exist." {
		t.Errorf("reply to a missing status: %d %s", r.status, r.body)
	}
	mustSend(t, http.MethodDelete, s.URL()+"/api/v1/statuses/"+third.ID, a.AccessToken, "", nil, nil)
	if r := postReply(t, s, a, "a reply to a deleted one", third.ID); r.status != http.StatusNotFound {
		t.Errorf("reply to a deleted status: %d %s", r.status, r.body)
	}
	if n := s.Stats().Committed; n != before {
		t.Errorf("refused replies committed %d statuses", n-before)
	}
}

// ScriptText faults only the create with its text, whatever comes
// before it, once, and the create record says so.
func TestScriptText(t *testing.T) {
	s := start(t, Options{Now: newClock().Now})
	a := s.AddAccount("alice")
	s.ScriptText("2/ lost answer", Fault{Kind: FaultDropResponse})
	if r := post(t, s, a, "1/ untouched", ""); r.status != http.StatusOK {
		t.Fatalf("another text: %d %s", r.status, r.body)
	}
	if _, err := send(freshClient(2e9), http.MethodPost, s.URL()+"/api/v1/statuses", a.AccessToken, formType, createForm("2/ lost answer"), nil); err == nil {
		t.Fatal("the scripted text got an answer; want the connection dropped after the commit")
	}
	if r := post(t, s, a, "2/ lost answer", ""); r.status != http.StatusOK {
		t.Errorf("the second create of the text: %d %s (the fault is consumed once)", r.status, r.body)
	}
	var got []string
	for _, c := range s.Creates() {
		got = append(got, c.Fault+"/"+map[bool]string{true: "committed", false: "not"}[c.Committed])
	}
	if d := cmp.Diff([]string{"/committed", "drop-response/committed", "/committed"}, got); d != "" {
		t.Errorf("create records (-want +got):\n%s", d)
	}
	defer func() {
		if recover() == nil {
			t.Error("ScriptText took a drop-request fault, which acts before the text is read")
		}
	}()
	s.ScriptText("x", Fault{Kind: FaultDropRequest})
}

// A sandbox with a data directory keeps a reply's parent and a text
// fault's record across a restart.
func TestRepliesSurviveRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	clock := newClock()
	s := openStarted(t, Options{DataDir: dir, Now: clock.Now})
	a := s.AddAccount("alice")
	first := mustStatus(t, post(t, s, a, "1/ a thread", ""))
	s.ScriptText("2/ its second part", Fault{Kind: Fault500AfterCommit})
	if r := postReply(t, s, a, "2/ its second part", first.ID); r.status != http.StatusInternalServerError {
		t.Fatalf("scripted 500: %d %s", r.status, r.body)
	}
	before, creates := s.Statuses(a.ID), s.Creates()
	mustClose(t, s)
	s2 := openStarted(t, Options{DataDir: dir, Now: clock.Now})
	if d := cmp.Diff(before, s2.Statuses(a.ID)); d != "" {
		t.Errorf("statuses after restart (-before +after):\n%s", d)
	}
	if d := cmp.Diff(creates, s2.Creates()); d != "" {
		t.Errorf("create records after restart (-before +after):\n%s", d)
	}
	if got := s2.Statuses(a.ID)[0].InReplyToID; got != first.ID {
		t.Errorf("the reply's parent after restart is %q, want %s", got, first.ID)
	}
}
