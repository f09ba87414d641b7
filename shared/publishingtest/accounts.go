package publishingtest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// TestAccounts checks that an account store keeps accounts (with their
// limits) and credentials (with their OAuth client), never loses a refresh
// token, lets one owner at a time refresh an account's credential, and
// records a refresh whose answer was lost (RefreshLostAt) until a new
// credential is stored. newAccounts must return an empty store.
//
// ListAccounts may return accounts in any order.
func TestAccounts(t *testing.T, newAccounts func(t *testing.T) publishing.Accounts) {
	t.Helper()
	runChecks(t, accountsChecks(), newAccounts)
}

func accountsChecks() []check[publishing.Accounts] {
	return []check[publishing.Accounts]{
		{"Account/put_get_list", accountsPutGetList},
		{"Account/missing", accountsMissing},
		{"Account/settings_written_alone", accountsSettings},
		{"Credential/round_trip", credentialRoundTrip},
		{"Credential/missing", credentialMissing},
		{"Credential/empty_access_token_refused", credentialEmptyAccess},
		{"Credential/empty_refresh_token_keeps_stored", credentialKeepRefresh},
		{"Credential/lost_refresh_cleared_by_put", credentialLostPut},
		{"Refresh/lease_exclusive_until_saved", refreshExclusive},
		{"Refresh/non_owner_save_refused", refreshNonOwner},
		{"Refresh/save_without_lease_refused", refreshNoLease},
		{"Refresh/empty_refresh_token_keeps_stored", refreshKeepRefresh},
		{"Refresh/nil_credential_drops_lease", refreshNil},
		{"Refresh/expired_lease_taken_over", refreshExpired},
		{"Refresh/mark_lost_owner_only", refreshMarkLost},
		{"Refresh/lost_refresh_cleared_by_save", refreshLostSave},
	}
}

func sampleAccount(id post.AccountID) post.Account {
	return post.Account{
		ID: id, Platform: "mastodon", Handle: "@" + string(id) + "@example.social", BaseURL: "https://example.social",
		RemoteID: "1098" + string(id), CredentialRef: "oncepost/" + string(id), Gate: post.GateManual,
		Limits: post.Limits{MaxTextGraphemes: 500, MaxMedia: 4, MaxMediaBytes: 16 << 20},
	}
}

// cred is a platform.Credential without its redacting String method, so
// diffs show which token differs.
type cred struct {
	AccessToken, RefreshToken string
	ExpiresAt                 time.Time
	ClientID, ClientSecret    string
	RefreshLostAt             time.Time
}

func credOf(c platform.Credential) cred { return cred(c) }

func mustPutAccount(t testing.TB, s publishing.Accounts, a post.Account) {
	t.Helper()
	if err := s.PutAccount(t.Context(), a); err != nil {
		t.Fatalf("PutAccount(%s) = %v, want nil", a.ID, err)
	}
}

func mustPutCredential(t testing.TB, s publishing.Accounts, id post.AccountID, c platform.Credential) {
	t.Helper()
	if err := s.PutCredential(t.Context(), id, c); err != nil {
		t.Fatalf("PutCredential(%s) = %v, want nil", id, err)
	}
}

func wantCredential(t testing.TB, s publishing.Accounts, id post.AccountID, want platform.Credential, what string) {
	t.Helper()
	got, err := s.Credential(t.Context(), id)
	if err != nil {
		t.Errorf("%s: Credential(%s) = %v, want nil", what, id, err)
		return
	}
	checkUTC(t, "Credential("+string(id)+")", map[string]time.Time{"ExpiresAt": got.ExpiresAt, "RefreshLostAt": got.RefreshLostAt})
	if diff := cmp.Diff(credOf(want), credOf(got)); diff != "" {
		t.Errorf("%s: Credential(%s) mismatch (-want +got):\n%s", what, id, diff)
	}
}

// accountWithCredential stores an account and its first credential.
func accountWithCredential(t testing.TB, s publishing.Accounts, id post.AccountID) platform.Credential {
	t.Helper()
	mustPutAccount(t, s, sampleAccount(id))
	c := platform.Credential{AccessToken: "access-1-" + string(id), RefreshToken: "refresh-1-" + string(id), ExpiresAt: base.Add(2*time.Hour + 1),
		ClientID: "client-1-" + string(id), ClientSecret: "secret-1-" + string(id)}
	mustPutCredential(t, s, id, c)
	return c
}

func accountsPutGetList(t testing.TB, s publishing.Accounts) {
	got, err := s.ListAccounts(t.Context())
	if err != nil || len(got) != 0 {
		t.Errorf("ListAccounts(empty store) = %d accounts, %v; want none, nil", len(got), err)
	}
	a, b, c := sampleAccount("acct-a"), sampleAccount("acct-b"), sampleAccount("acct-c")
	b.Platform, b.Gate, b.RemoteID = "bluesky", post.GateAuto, ""
	b.Limits = post.Limits{MaxTextGraphemes: 300} // the other limits unknown
	c.Limits = post.Limits{}
	a.Status, a.StatusReason = post.AccountReconnectNeeded, "refresh refused: 400 invalid_grant"
	a.TimeZone, a.RequireApproval = "Europe/Berlin", true
	a.Slots = []string{"cron(0 9 ? * MON-FRI *)", "cron(30 12 ? * MON-FRI *)"}
	rv := reflect.ValueOf(a)
	for i := range rv.NumField() {
		if rv.Field(i).IsZero() {
			t.Fatalf("suite bug: sample account leaves field %s zero", rv.Type().Field(i).Name)
		}
	}
	for _, x := range []post.Account{c, a, b} {
		mustPutAccount(t, s, x)
	}
	if got, err := s.GetAccount(t.Context(), a.ID); err != nil {
		t.Errorf("GetAccount(%s) = %v", a.ID, err)
	} else if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("GetAccount(%s) mismatch (-want +got):\n%s", a.ID, diff)
	}
	// Putting an account again replaces it (here: reconnected, renamed,
	// on an instance with other limits).
	a.Handle, a.BaseURL = "@renamed@other.example", "https://other.example"
	a.Status, a.StatusReason = post.AccountOK, ""
	a.Limits = post.Limits{MaxTextGraphemes: 5000, MaxMediaBytes: 40 << 20}
	a.TimeZone, a.RequireApproval, a.Slots = "America/New_York", false, []string{"cron(0 17 ? * * *)"}
	mustPutAccount(t, s, a)
	for _, want := range []post.Account{a, b, c} {
		got, err := s.GetAccount(t.Context(), want.ID)
		if err != nil {
			t.Errorf("GetAccount(%s) = %v", want.ID, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GetAccount(%s) mismatch (-want +got):\n%s", want.ID, diff)
		}
	}
	list, err := s.ListAccounts(t.Context())
	if err != nil {
		t.Fatalf("ListAccounts = %v", err)
	}
	byID := cmpopts.SortSlices(func(x, y post.Account) bool { return x.ID < y.ID })
	if diff := cmp.Diff([]post.Account{a, b, c}, list, byID); diff != "" {
		t.Errorf("ListAccounts mismatch (-want +got):\n%s", diff)
	}
}

func accountsMissing(t testing.TB, s publishing.Accounts) {
	if _, err := s.GetAccount(t.Context(), "acct-missing"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("GetAccount(missing) = %v, want post.ErrNotFound", err)
	}
	mustPutAccount(t, s, sampleAccount("acct-a"))
	if _, err := s.GetAccount(t.Context(), "acct-missing"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("GetAccount(missing, another stored) = %v, want post.ErrNotFound", err)
	}
}

func credentialRoundTrip(t testing.TB, s publishing.Accounts) {
	c := accountWithCredential(t, s, "acct-a")
	wantCredential(t, s, "acct-a", c, "after PutCredential")
	other := accountWithCredential(t, s, "acct-b")
	wantCredential(t, s, "acct-a", c, "after PutCredential of another account")
	wantCredential(t, s, "acct-b", other, "after PutCredential")

	// A token that does not expire, a replacement of both tokens, and
	// another OAuth app.
	next := platform.Credential{AccessToken: "access-2 with spaces/+=", RefreshToken: "refresh-2",
		ClientID: "client-2", ClientSecret: "secret-2 ✓"}
	mustPutCredential(t, s, "acct-a", next)
	wantCredential(t, s, "acct-a", next, "after a second PutCredential")
	// The deployment's default app: no client stored.
	def := platform.Credential{AccessToken: "access-3", RefreshToken: "refresh-3"}
	mustPutCredential(t, s, "acct-a", def)
	wantCredential(t, s, "acct-a", def, "after a PutCredential without a client")
	wantCredential(t, s, "acct-b", other, "after PutCredentials of another account")
}

func credentialMissing(t testing.TB, s publishing.Accounts) {
	mustPutAccount(t, s, sampleAccount("acct-a"))
	if _, err := s.Credential(t.Context(), "acct-a"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("Credential(none stored) = %v, want post.ErrNotFound", err)
	}
}

func credentialEmptyAccess(t testing.TB, s publishing.Accounts) {
	mustPutAccount(t, s, sampleAccount("acct-new"))
	if err := s.PutCredential(t.Context(), "acct-new", platform.Credential{RefreshToken: "refresh"}); err == nil {
		t.Errorf("PutCredential(empty access token, nothing stored) = nil, want an error")
	}
	if _, err := s.Credential(t.Context(), "acct-new"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("after a refused first PutCredential: Credential = %v, want post.ErrNotFound", err)
	}
	c := accountWithCredential(t, s, "acct-a")
	if err := s.PutCredential(t.Context(), "acct-a", platform.Credential{RefreshToken: "refresh-2", ExpiresAt: base}); err == nil {
		t.Errorf("PutCredential(empty access token) = nil, want an error")
	}
	wantCredential(t, s, "acct-a", c, "after a refused PutCredential")
}

func credentialKeepRefresh(t testing.TB, s publishing.Accounts) {
	c := accountWithCredential(t, s, "acct-a")
	next := platform.Credential{AccessToken: "access-2", ExpiresAt: base.Add(3*time.Hour + 3)}
	mustPutCredential(t, s, "acct-a", next)
	next.RefreshToken = c.RefreshToken
	wantCredential(t, s, "acct-a", next, "after PutCredential without a refresh token")
}

func mustLease(t testing.TB, s publishing.Accounts, id post.AccountID, owner string, now, until time.Time) {
	t.Helper()
	if err := s.LeaseRefresh(t.Context(), id, owner, now, until); err != nil {
		t.Fatalf("LeaseRefresh(%s, %s) = %v, want nil", id, owner, err)
	}
}

func wantLeaseConflict(t testing.TB, s publishing.Accounts, id post.AccountID, owner string, now, until time.Time, what string) {
	t.Helper()
	if err := s.LeaseRefresh(t.Context(), id, owner, now, until); !errors.Is(err, post.ErrConflict) {
		t.Errorf("%s: LeaseRefresh(%s, %s) = %v, want post.ErrConflict", what, id, owner, err)
	}
}

// One owner refreshes at a time; saving the refreshed credential frees
// the lease at once.
func refreshExclusive(t testing.TB, s publishing.Accounts) {
	accountWithCredential(t, s, "acct-a")
	accountWithCredential(t, s, "acct-b")
	mustLease(t, s, "acct-a", "owner-1", base, base.Add(time.Minute))
	wantLeaseConflict(t, s, "acct-a", "owner-2", base.Add(time.Second), base.Add(2*time.Minute), "lease held")
	wantLeaseConflict(t, s, "acct-a", "owner-2", base.Add(time.Minute-time.Millisecond), base.Add(2*time.Minute), "lease held, about to expire")
	// Leases are per account.
	mustLease(t, s, "acct-b", "owner-2", base.Add(time.Second), base.Add(time.Minute))

	refreshed := platform.Credential{AccessToken: "access-2", RefreshToken: "refresh-2", ExpiresAt: base.Add(4*time.Hour + 4),
		ClientID: "client-2", ClientSecret: "secret-2"}
	if err := s.SaveRefreshed(t.Context(), "acct-a", "owner-1", &refreshed); err != nil {
		t.Fatalf("SaveRefreshed(owner) = %v, want nil", err)
	}
	wantCredential(t, s, "acct-a", refreshed, "after SaveRefreshed")
	mustLease(t, s, "acct-a", "owner-2", base.Add(2*time.Second), base.Add(time.Minute))
	wantLeaseConflict(t, s, "acct-a", "owner-1", base.Add(3*time.Second), base.Add(time.Minute), "lease taken after save")
}

func refreshNonOwner(t testing.TB, s publishing.Accounts) {
	c := accountWithCredential(t, s, "acct-a")
	mustLease(t, s, "acct-a", "owner-1", base, base.Add(time.Minute))
	stolen := platform.Credential{AccessToken: "access-stolen", RefreshToken: "refresh-stolen"}
	if err := s.SaveRefreshed(t.Context(), "acct-a", "owner-2", &stolen); !errors.Is(err, post.ErrConflict) {
		t.Errorf("SaveRefreshed(non-owner) = %v, want post.ErrConflict", err)
	}
	if err := s.SaveRefreshed(t.Context(), "acct-a", "owner-2", nil); !errors.Is(err, post.ErrConflict) {
		t.Errorf("SaveRefreshed(non-owner, nil) = %v, want post.ErrConflict", err)
	}
	wantCredential(t, s, "acct-a", c, "after SaveRefreshed by a non-owner")
	// The owner's lease survived the attempts.
	wantLeaseConflict(t, s, "acct-a", "owner-3", base.Add(time.Second), base.Add(time.Minute), "after SaveRefreshed by a non-owner")
}

func refreshNoLease(t testing.TB, s publishing.Accounts) {
	c := accountWithCredential(t, s, "acct-a")
	next := platform.Credential{AccessToken: "access-2", RefreshToken: "refresh-2"}
	if err := s.SaveRefreshed(t.Context(), "acct-a", "owner-1", &next); !errors.Is(err, post.ErrConflict) {
		t.Errorf("SaveRefreshed(no lease taken) = %v, want post.ErrConflict", err)
	}
	wantCredential(t, s, "acct-a", c, "after SaveRefreshed without a lease")

	// Saving twice: the first save dropped the lease.
	mustLease(t, s, "acct-a", "owner-1", base, base.Add(time.Minute))
	if err := s.SaveRefreshed(t.Context(), "acct-a", "owner-1", &next); err != nil {
		t.Fatalf("SaveRefreshed(owner) = %v", err)
	}
	again := platform.Credential{AccessToken: "access-3", RefreshToken: "refresh-3"}
	if err := s.SaveRefreshed(t.Context(), "acct-a", "owner-1", &again); !errors.Is(err, post.ErrConflict) {
		t.Errorf("second SaveRefreshed after the lease was dropped = %v, want post.ErrConflict", err)
	}
	wantCredential(t, s, "acct-a", next, "after a second SaveRefreshed")
}

func refreshKeepRefresh(t testing.TB, s publishing.Accounts) {
	c := accountWithCredential(t, s, "acct-a")
	mustLease(t, s, "acct-a", "owner-1", base, base.Add(time.Minute))
	next := platform.Credential{AccessToken: "access-2", ExpiresAt: base.Add(5*time.Hour + 5)}
	if err := s.SaveRefreshed(t.Context(), "acct-a", "owner-1", &next); err != nil {
		t.Fatalf("SaveRefreshed(owner, no refresh token) = %v", err)
	}
	next.RefreshToken = c.RefreshToken
	wantCredential(t, s, "acct-a", next, "after SaveRefreshed without a refresh token")
}

func refreshNil(t testing.TB, s publishing.Accounts) {
	c := accountWithCredential(t, s, "acct-a")
	mustLease(t, s, "acct-a", "owner-1", base, base.Add(time.Minute))
	if err := s.SaveRefreshed(t.Context(), "acct-a", "owner-1", nil); err != nil {
		t.Fatalf("SaveRefreshed(owner, nil) = %v", err)
	}
	wantCredential(t, s, "acct-a", c, "after SaveRefreshed(nil)")
	mustLease(t, s, "acct-a", "owner-2", base.Add(time.Second), base.Add(time.Minute))
}

// A dead owner's lease expires; the next owner takes it and the dead one
// can no longer save.
func refreshExpired(t testing.TB, s publishing.Accounts) {
	accountWithCredential(t, s, "acct-a")
	mustLease(t, s, "acct-a", "owner-1", base, base.Add(time.Minute))
	mustLease(t, s, "acct-a", "owner-2", base.Add(2*time.Minute), base.Add(3*time.Minute))
	wantLeaseConflict(t, s, "acct-a", "owner-3", base.Add(2*time.Minute+time.Second), base.Add(4*time.Minute), "lease re-taken")
	late := platform.Credential{AccessToken: "access-late", RefreshToken: "refresh-late"}
	if err := s.SaveRefreshed(t.Context(), "acct-a", "owner-1", &late); !errors.Is(err, post.ErrConflict) {
		t.Errorf("SaveRefreshed(expired owner) = %v, want post.ErrConflict", err)
	}
	fresh := platform.Credential{AccessToken: "access-2", RefreshToken: "refresh-2", ExpiresAt: base.Add(6 * time.Hour)}
	if err := s.SaveRefreshed(t.Context(), "acct-a", "owner-2", &fresh); err != nil {
		t.Fatalf("SaveRefreshed(new owner) = %v", err)
	}
	wantCredential(t, s, "acct-a", fresh, "after the new owner saved")
}

// markLost records a lost refresh for owner, who must hold the lease.
func markLost(t testing.TB, s publishing.Accounts, id post.AccountID, owner string, at time.Time) {
	t.Helper()
	if err := s.MarkRefreshLost(t.Context(), id, owner, at); err != nil {
		t.Fatalf("MarkRefreshLost(%s, %s) = %v, want nil", id, owner, err)
	}
}

// Only the lease's owner records a lost refresh; doing so keeps the tokens
// and drops the lease.
func refreshMarkLost(t testing.TB, s publishing.Accounts) {
	c := accountWithCredential(t, s, "acct-a")
	lostAt := base.Add(30*time.Second + 3).In(time.FixedZone("CET", 3600))
	if err := s.MarkRefreshLost(t.Context(), "acct-a", "owner-1", lostAt); !errors.Is(err, post.ErrConflict) {
		t.Errorf("MarkRefreshLost(no lease taken) = %v, want post.ErrConflict", err)
	}
	wantCredential(t, s, "acct-a", c, "after MarkRefreshLost without a lease")

	mustLease(t, s, "acct-a", "owner-1", base, base.Add(time.Minute))
	if err := s.MarkRefreshLost(t.Context(), "acct-a", "owner-2", lostAt); !errors.Is(err, post.ErrConflict) {
		t.Errorf("MarkRefreshLost(non-owner) = %v, want post.ErrConflict", err)
	}
	wantCredential(t, s, "acct-a", c, "after MarkRefreshLost by a non-owner")
	wantLeaseConflict(t, s, "acct-a", "owner-3", base.Add(time.Second), base.Add(time.Minute), "after MarkRefreshLost by a non-owner")

	markLost(t, s, "acct-a", "owner-1", lostAt)
	lost := c
	lost.RefreshLostAt = lostAt
	wantCredential(t, s, "acct-a", lost, "after MarkRefreshLost by the owner")
	if err := s.MarkRefreshLost(t.Context(), "acct-a", "owner-1", lostAt.Add(time.Second)); !errors.Is(err, post.ErrConflict) {
		t.Errorf("second MarkRefreshLost after the lease was dropped = %v, want post.ErrConflict", err)
	}
	wantCredential(t, s, "acct-a", lost, "after a second MarkRefreshLost")
	// The lease was dropped: the next refresh may start at once.
	mustLease(t, s, "acct-a", "owner-2", base.Add(2*time.Second), base.Add(time.Minute))
}

// A stored refreshed credential clears RefreshLostAt; dropping the lease
// alone (a nil credential) does not.
func refreshLostSave(t testing.TB, s publishing.Accounts) {
	c := accountWithCredential(t, s, "acct-a")
	mustLease(t, s, "acct-a", "owner-1", base, base.Add(time.Minute))
	lostAt := base.Add(40*time.Second + 9)
	markLost(t, s, "acct-a", "owner-1", lostAt)

	mustLease(t, s, "acct-a", "owner-2", base.Add(time.Minute), base.Add(2*time.Minute))
	if err := s.SaveRefreshed(t.Context(), "acct-a", "owner-2", nil); err != nil {
		t.Fatalf("SaveRefreshed(owner, nil) = %v", err)
	}
	lost := c
	lost.RefreshLostAt = lostAt
	wantCredential(t, s, "acct-a", lost, "after SaveRefreshed(nil)")

	mustLease(t, s, "acct-a", "owner-3", base.Add(2*time.Minute), base.Add(3*time.Minute))
	refreshed := platform.Credential{AccessToken: "access-2", ExpiresAt: base.Add(7*time.Hour + 7)}
	if err := s.SaveRefreshed(t.Context(), "acct-a", "owner-3", &refreshed); err != nil {
		t.Fatalf("SaveRefreshed(owner) = %v", err)
	}
	refreshed.RefreshToken = c.RefreshToken
	wantCredential(t, s, "acct-a", refreshed, "after SaveRefreshed with a credential")
}

// An operator's new credential clears RefreshLostAt.
func credentialLostPut(t testing.TB, s publishing.Accounts) {
	accountWithCredential(t, s, "acct-a")
	accountWithCredential(t, s, "acct-b")
	for _, id := range []post.AccountID{"acct-a", "acct-b"} {
		mustLease(t, s, id, "owner-1", base, base.Add(time.Minute))
		markLost(t, s, id, "owner-1", base.Add(20*time.Second+1))
	}
	reconnected := platform.Credential{AccessToken: "access-new", RefreshToken: "refresh-new", ExpiresAt: base.Add(8 * time.Hour)}
	mustPutCredential(t, s, "acct-a", reconnected)
	wantCredential(t, s, "acct-a", reconnected, "after PutCredential")
	// Only that account's.
	b, err := s.Credential(t.Context(), "acct-b")
	if err != nil || !b.RefreshLostAt.Equal(base.Add(20*time.Second+1)) {
		t.Errorf("other account after PutCredential: RefreshLostAt %s (%v), want %s", b.RefreshLostAt, err, base.Add(20*time.Second+1))
	}
}

// accountsSettings: an adapter that writes settings alone
// (publishing.AccountSettingsWriter) writes the zone, slots and approval
// flag the change names and leaves the rest — the other settings and a
// concurrent reconnect_needed included; an adapter without it passes.
func accountsSettings(t testing.TB, s publishing.Accounts) {
	w, ok := s.(publishing.AccountSettingsWriter)
	if !ok {
		return
	}
	a := sampleAccount("acct-a")
	a.Status, a.StatusReason = post.AccountReconnectNeeded, "refresh refused"
	a.TimeZone, a.Slots, a.RequireApproval = "Europe/Berlin", []string{"cron(0 9 * * ? *)"}, false
	mustPutAccount(t, s, a)
	set := func(c publishing.AccountChange) {
		t.Helper()
		if err := w.SetAccountSettings(t.Context(), a.ID, c); err != nil {
			t.Fatalf("SetAccountSettings = %v", err)
		}
		got, err := s.GetAccount(t.Context(), a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a, got); diff != "" {
			t.Errorf("account after SetAccountSettings (-want +got):\n%s", diff)
		}
	}
	zone, slots, yes, no := "America/New_York", []string{"cron(0 9 ? * MON-FRI *)", "rate(4 hours)"}, true, false
	a.TimeZone, a.Slots = zone, slots
	set(publishing.AccountChange{TimeZone: &zone, Slots: &slots})
	a.RequireApproval = true // the zone and slots stay
	set(publishing.AccountChange{RequireApproval: &yes})
	empty, none := "", []string{}
	a.TimeZone, a.Slots = "", nil // the approval flag stays
	set(publishing.AccountChange{TimeZone: &empty, Slots: &none})
	a.RequireApproval = false
	set(publishing.AccountChange{RequireApproval: &no})
	set(publishing.AccountChange{}) // nothing named: nothing changes
	if err := w.SetAccountSettings(t.Context(), "nobody", publishing.AccountChange{TimeZone: &zone}); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("SetAccountSettings(unknown) = %v, want post.ErrNotFound", err)
	}
	if _, err := s.GetAccount(t.Context(), "nobody"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("SetAccountSettings(unknown) made an account: %v", err)
	}
}
