package template

import (
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// `sam build` runs `make build-<LogicalId>` with ARTIFACTS_DIR set (the
// functions' BuildMethod is makefile): each target must leave there a
// static linux/arm64 `bootstrap` built from the function's package,
// without the RPC shim and with trimmed paths. The builds share the go
// build cache, one after the other.
func TestBuildTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every function for linux/arm64")
	}
	c, tp := load(t)
	for _, id := range resourcesOf(tp, "AWS::Serverless::Function") {
		t.Run(id, func(t *testing.T) {
			dir, ok := functionDir(id)
			if !ok {
				t.Fatalf("%s: not <Name>Function", id)
			}
			if _, err := os.Stat(filepath.Join(c.root, dir)); err != nil {
				t.Fatalf("%s is built from ./%s, which is missing: %v", id, dir, err)
			}
			out := t.TempDir()
			cmd := exec.Command("make", "--no-print-directory", "build-"+id, "ARTIFACTS_DIR="+out)
			cmd.Dir = c.root
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("make build-%s: %v\n%s", id, err, b)
			}
			bootstrap := filepath.Join(out, "bootstrap")
			info, err := buildinfo.ReadFile(bootstrap)
			if err != nil {
				t.Fatalf("make build-%s left no Go binary named bootstrap: %v", id, err)
			}
			got := map[string]string{"package": info.Path}
			for _, s := range info.Settings {
				switch s.Key {
				case "GOOS", "GOARCH", "CGO_ENABLED", "-tags", "-trimpath":
					got[s.Key] = s.Value
				}
			}
			want := map[string]string{
				"package": "oncepost/" + dir, "GOOS": "linux", "GOARCH": "arm64",
				"CGO_ENABLED": "0", "-tags": "lambda.norpc", "-trimpath": "true",
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("bootstrap's build (-want +got):\n%s", diff)
			}
			f, err := elf.Open(bootstrap)
			if err != nil {
				t.Fatalf("bootstrap is not an ELF binary: %v", err)
			}
			defer f.Close()
			if f.Machine != elf.EM_AARCH64 {
				t.Errorf("bootstrap is for %v, want %v (Architectures: arm64)", f.Machine, elf.EM_AARCH64)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("bootstrap is dynamically linked; provided.al2023 wants a static binary")
				}
			}
		})
	}
}
