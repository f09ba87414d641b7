package sandbox

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// profiles are the named random fault profiles (see Profile).
var profiles = map[string]RandomFaults{
	// none: a well-behaved platform.
	"none": {},
	// flaky: a bad day on a real instance. One create in twenty commits
	// 11 s late, after a 10 s client timeout has given up (the incident);
	// 3 % are dropped before the server sees them and 3 % lose their
	// response after committing.
	"flaky": {DelayRate: 0.05, Delay: 11 * time.Second, Loss: 0.03, ResponseLoss: 0.03},
	// slow: every create commits 2 s late but is answered: a congested
	// instance that a 10 s client timeout still survives.
	"slow": {DelayRate: 1, Delay: 2 * time.Second},
	// lossy: a broken network path. One create in five is dropped before
	// the server sees it and one in five loses its response after
	// committing; nothing is slow.
	"lossy": {Loss: 0.2, ResponseLoss: 0.2},
	// incident: every create commits 11 s late, after a 10 s client timeout
	// has given up: the outcome of every send is unknown until read back.
	"incident": {DelayRate: 1, Delay: 11 * time.Second},
}

// Profile returns the random faults of a named profile, for
// Options.Random of a standalone sandbox:
//
//	none      no faults
//	flaky     5 % of creates commit after 11 s, 3 % dropped, 3 % lose the response after committing
//	slow      every create commits after 2 s, then is answered
//	lossy     20 % dropped, 20 % lose the response after committing
//	incident  every create commits after 11 s (beyond a 10 s client timeout)
//
// The faults apply to POST /api/v1/statuses only, drawn from Options.Seed.
// An unknown name is an error listing the valid ones.
func Profile(name string) (RandomFaults, error) {
	rf, ok := profiles[name]
	if !ok {
		return RandomFaults{}, fmt.Errorf("sandbox: unknown fault profile %q, want one of %s", name, strings.Join(ProfileNames(), ", "))
	}
	return rf, nil
}

// ProfileNames returns the names Profile accepts, sorted.
func ProfileNames() []string {
	return slices.Sorted(maps.Keys(profiles))
}
