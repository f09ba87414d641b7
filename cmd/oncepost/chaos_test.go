package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strconv"
	"testing"

	"oncepost/shared/emulatortest"
	"oncepost/shared/localpds"
)

var chaosLine = regexp.MustCompile(`^rounds=(\d+) published=(\d+) duplicates=(\d+) confirm-branch=(\d+) leaked-pending=(\d+) lost=(\d+) held=(\d+) failed=(\d+) unexplained=(\d+) elapsed=\S+\n$`)

func runChaos(t *testing.T, args ...string) (map[string]int, int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runCLI(context.Background(), append([]string{"chaos"}, args...), &stdout, &stderr)
	m := chaosLine.FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("chaos printed %q (stderr %q), not the one-line verdict", stdout.String(), stderr.String())
	}
	got := map[string]int{}
	for i, name := range []string{"rounds", "published", "duplicates", "confirm-branch", "leaked-pending", "lost", "held", "failed", "unexplained"} {
		got[name], _ = strconv.Atoi(m[i+1])
	}
	return got, code, stdout.String()
}

// The drill through the ledger, every post on one account: faults on a
// third of the creates, no duplicate, nothing lost, nothing left open, the
// confirm branch taken, and every held round explained by the fault plan
// (checked against the sandbox's own records). `oncepost chaos --rounds
// 10000` is the full drill; CI runs a shorter one under the race detector.
func TestChaosLedgerHasNoDuplicates(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the drill")
	}
	got, code, line := runChaos(t, "--rounds", "300", "--accounts", "1")
	// A round whose every send is dropped ends held for a human after five
	// (0.2^5 per round): settled and explained, not lost.
	if code != exitOK || got["duplicates"] != 0 || got["lost"] != 0 || got["leaked-pending"] != 0 || got["unexplained"] != 0 ||
		got["published"]+got["held"] != 300 || got["held"] > 3 {
		t.Errorf("chaos exit %d: %s", code, line)
	}
	if got["confirm-branch"] == 0 {
		t.Errorf("no round took the confirm branch: the faults did not bite (%s)", line)
	}
}

// The seed's naive template against the same faults duplicates: the drill
// can tell a broken pipeline from a working one.
func TestChaosNaiveDuplicates(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the drill")
	}
	got, _, line := runChaos(t, "--naive", "--rounds", "200")
	if got["duplicates"] == 0 {
		t.Errorf("the naive template made no duplicate: %s", line)
	}
}

// requirePDS skips (or fails, under make test) a test of the Bluesky
// drill when the reference PDS is not installed.
func requirePDS(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("../../infra/pds/node_modules/@atproto/pds/package.json"); err != nil {
		emulatortest.Unavailable(t, "the Bluesky reference PDS is not installed: run `"+localpds.InstallCommand+"`")
	}
}

// The drill against the Bluesky reference PDS, the fault plan in a proxy
// in front of it: no record twice (counted by listRecords, the PDS's own
// view), nothing lost or left open, held rounds explained by the proxy's
// log of dropped sends.
func TestChaosBlueskyHasNoDuplicates(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the drill")
	}
	requirePDS(t)
	got, code, line := runChaos(t, "--platform", "bluesky", "--rounds", "80", "--accounts", "2")
	if code != exitOK || got["duplicates"] != 0 || got["lost"] != 0 || got["leaked-pending"] != 0 || got["unexplained"] != 0 ||
		got["published"]+got["held"] != 80 || got["held"] > 3 {
		t.Errorf("chaos exit %d: %s", code, line)
	}
	if got["confirm-branch"] == 0 {
		t.Errorf("no round took the confirm branch: the faults did not bite (%s)", line)
	}
}

// The naive template (a fresh create per try) against the same proxy
// duplicates on the PDS too.
func TestChaosBlueskyNaiveDuplicates(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the drill")
	}
	requirePDS(t)
	got, _, line := runChaos(t, "--platform", "bluesky", "--naive", "--rounds", "60")
	if got["duplicates"] == 0 {
		t.Errorf("the naive template made no duplicate on the PDS: %s", line)
	}
}
