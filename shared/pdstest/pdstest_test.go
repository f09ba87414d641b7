package pdstest

import (
	"errors"
	"oncepost/shared/emulatortest"
	"testing"
)

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

// A port taken between picking it and the PDS's listen makes the PDS exit
// at start; StartServer starts it again on other ports. Either port: the
// PDS's, or the PLC directory's.
func TestStartAvoidsATakenPort(t *testing.T) {
	for _, taken := range []int{0, 1} {
		t.Run([]string{"PDS port", "PLC port"}[taken], func(t *testing.T) {
			pick, picked := emulatortest.TakenPortFirst(t, taken)
			p, err := startServer(emulatortest.ModuleRoot(t), t.TempDir(), pick)
			if errors.Is(err, ErrNotInstalled) {
				emulatortest.Unavailable(t, err.Error())
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			a := p.CreateAccount(t, "alice.test", "alice-password-1")
			if a.DID == "" {
				t.Fatalf("no account on the PDS started after a taken port")
			}
			if n := picked(); n < 4 {
				t.Errorf("%d ports picked, want a second pair after the taken one", n)
			}
		})
	}
}
