package localpds

import (
	"context"
	"errors"
	"os"
	"testing"

	"oncepost/shared/emulatortest"
)

// A port taken between picking it and the PDS's listen makes the PDS exit
// at start; Start starts it again on other ports. Either port: the PDS's,
// or the PLC directory's. Stop ends the process and removes the folder
// Start made.
func TestStartAvoidsATakenPort(t *testing.T) {
	for _, taken := range []int{0, 1} {
		t.Run([]string{"PDS port", "PLC port"}[taken], func(t *testing.T) {
			pick, picked := emulatortest.TakenPortFirst(t, taken)
			p, err := start(emulatortest.ModuleRoot(t), "", pick)
			if errors.Is(err, ErrNotInstalled) {
				emulatortest.Unavailable(t, err.Error())
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			a, err := p.NewAccount(context.Background(), "alice.test", "alice-password-1")
			if err != nil || a.DID == "" {
				t.Fatalf("no account on the PDS started after a taken port: %v", err)
			}
			if n := picked(); n < 4 {
				t.Errorf("%d ports picked, want a second pair after the taken one", n)
			}
			p.Stop()
			if p.cmd.ProcessState == nil {
				t.Errorf("PDS process %d still running after Stop", p.PID())
			}
			if _, err := os.Stat(p.data); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the folder Start made is still there after Stop: %v", err)
			}
		})
	}
}
