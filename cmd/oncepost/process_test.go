package main

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// A runtime takes over at start only the workflow task claims of a
// process on its host that is gone: a live sibling's claims (a second
// `oncepost run`) are never taken, nor those of another host or of a name
// it does not recognise.
func TestOwnerGone(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command(os.Args[0], "-test.run=^$")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		owner string
		gone  bool
	}{
		{processOwner(), false},
		{fmt.Sprintf("oncepost/%s/%d", host, os.Getppid()), false},
		{fmt.Sprintf("oncepost/%s/%d", host, dead.Process.Pid), true},
		{fmt.Sprintf("oncepost/other-%s/%d", host, dead.Process.Pid), false},
		{host, false},
		{"oncepost/" + host + "/not-a-pid", false},
	} {
		if got := ownerGone(tc.owner); got != tc.gone {
			t.Errorf("ownerGone(%q) = %v, want %v", tc.owner, got, tc.gone)
		}
	}
}
