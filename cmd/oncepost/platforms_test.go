package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform/catalog"
)

// The README's guarantee table is the one the adapters' capabilities
// make: a change of an adapter that is not carried into the README fails
// here.
func TestReadmeGuaranteeTableIsCurrent(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "<!-- platforms:begin -->\n")
	table, _, ok2 := strings.Cut(rest, "<!-- platforms:end -->")
	if !ok || !ok2 {
		t.Fatal("README.md has no <!-- platforms:begin --> … <!-- platforms:end --> section")
	}
	var out bytes.Buffer
	if err := cmdPlatforms(context.Background(), []string{"--markdown"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(out.String(), table); diff != "" {
		t.Errorf("README.md's platform table is stale; replace it with the output of `go run ./cmd/oncepost platforms --markdown` (-generated +README):\n%s", diff)
	}
}

// platforms --json lists every platform with its guarantee.
func TestPlatformsJSON(t *testing.T) {
	var out bytes.Buffer
	if err := cmdPlatforms(context.Background(), []string{"--json"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	var kinds []struct {
		Name      string `json:"name"`
		Guarantee string `json:"guarantee"`
	}
	if err := json.Unmarshal(out.Bytes(), &kinds); err != nil {
		t.Fatalf("decode %s: %v", out.String(), err)
	}
	got := map[string]string{}
	for _, k := range kinds {
		got[k.Name] = k.Guarantee
	}
	want := map[string]string{}
	for _, k := range catalog.Kinds() {
		want[k.Name] = string(k.Guarantee)
	}
	if diff := cmp.Diff(want, got); diff != "" || len(got) < 8 {
		t.Errorf("platforms --json (-want +got):\n%s", diff)
	}
	if got[catalog.Bluesky] != "exact" || got[catalog.Telegram] != "human" {
		t.Errorf("bluesky %q telegram %q", got[catalog.Bluesky], got[catalog.Telegram])
	}
}
