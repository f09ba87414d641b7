package pdstest

import "testing"

// The PDS starts, an account can be created, and its repository starts
// empty.
func TestStartCreateAccountList(t *testing.T) {
	p := Start(t)
	a := p.CreateAccount(t, "alice.test", "alice-password-1")
	if a.DID == "" || a.AccessJWT == "" || a.RefreshJWT == "" {
		t.Fatalf("createAccount answered %+v", a.DID)
	}
	if got := p.ListPosts(t, a.DID); len(got) != 0 {
		t.Errorf("a new account has %d posts, want 0", len(got))
	}
}
