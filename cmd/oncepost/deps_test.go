package main

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// testOnly reports whether a package is test code that a shipped binary
// must not link: the testing packages, and any other package whose name
// ends in "test" (the project's helpers taking *testing.T, net/http's
// httptest) but the standard library's internal ones, which the runtime
// itself imports (internal/synctest).
func testOnly(importPath string, standard bool) bool {
	if importPath == "testing" || strings.HasPrefix(importPath, "testing/") {
		return true
	}
	internal := standard && (strings.HasPrefix(importPath, "internal/") || strings.Contains(importPath, "/internal/"))
	return strings.HasSuffix(path.Base(importPath), "test") && !internal
}

// The binaries the project ships — the oncepost CLI and each Lambda
// function's bootstrap, built as the Makefile builds them — link no test
// code: the drill's launchers (the Bluesky PDS, free ports) live in
// packages of their own, and the test helpers that take *testing.T call
// them.
func TestBinariesLinkNoTestCode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	list := func(args ...string) []string {
		t.Helper()
		cmd := exec.Command("go", append([]string{"list"}, args...)...)
		cmd.Dir = "../.."
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
		}
		return strings.Fields(string(out))
	}
	mains := list("-f", "{{if eq .Name \"main\"}}{{.ImportPath}}{{end}}", "./cmd/...", "./functions/...")
	if len(mains) < 5 {
		t.Fatalf("found the binaries %v; want oncepost and the four functions", mains)
	}
	for _, m := range mains {
		args := []string{"-deps", "-f", "{{.ImportPath}},{{.Standard}}"}
		if strings.Contains(m, "/functions/") {
			args = append(args, "-tags", "lambda.norpc")
		}
		var linked []string
		for _, dep := range list(append(args, m)...) {
			importPath, standard, _ := strings.Cut(dep, ",")
			if testOnly(importPath, standard == "true") {
				linked = append(linked, importPath)
			}
		}
		if len(linked) > 0 {
			t.Errorf("%s links test code: %s", m, strings.Join(linked, ", "))
		}
	}
}

// testOnly tells test code from the rest by the package's path.
func TestTestOnly(t *testing.T) {
	for _, tt := range []struct {
		path     string
		standard bool
		want     bool
	}{
		{"testing", true, true},
		{"testing/iotest", true, true},
		{"net/http/httptest", true, true},
		{"oncepost/shared/pdstest", false, true},
		{"oncepost/shared/emulatortest", false, true},
		{"internal/synctest", true, false},
		{"oncepost/shared/localpds", false, false},
		{"oncepost/shared/ledger", false, false},
		{"github.com/aws/aws-sdk-go-v2/aws", false, false},
	} {
		if got := testOnly(tt.path, tt.standard); got != tt.want {
			t.Errorf("testOnly(%q, %v) = %v, want %v", tt.path, tt.standard, got, tt.want)
		}
	}
}
