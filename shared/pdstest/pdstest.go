// Package pdstest starts the Bluesky reference PDS (shared/localpds) for a
// test and stops it by PID when the test ends. A missing install (`make
// pds`) skips the test with the command to run, or fails it when
// ONCEPOST_EMULATORS is "required" (as `make test` sets it).
package pdstest

import (
	"context"
	"errors"
	"testing"

	"oncepost/shared/emulatortest"
	"oncepost/shared/localpds"
)

// PDS is a reference PDS running for a test, with helpers that fail the
// test on an error.
type PDS struct {
	*localpds.PDS
}

// Start runs a PDS for t, its state in a folder of t, and stops it when t
// ends.
func Start(t testing.TB) *PDS {
	t.Helper()
	p, err := localpds.Start(emulatortest.ModuleRoot(t), t.TempDir())
	if errors.Is(err, localpds.ErrNotInstalled) {
		emulatortest.Unavailable(t, err.Error())
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return &PDS{p}
}

// CreateAccount creates an account named handle (a name under .test) with
// password (localpds.PDS.NewAccount).
func (p *PDS) CreateAccount(t testing.TB, handle, password string) localpds.Account {
	t.Helper()
	a, err := p.NewAccount(context.Background(), handle, password)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// ListPosts returns every app.bsky.feed.post record of the repository,
// newest first (localpds.PDS.Posts).
func (p *PDS) ListPosts(t testing.TB, did string) []localpds.Record {
	t.Helper()
	all, err := p.Posts(context.Background(), did)
	if err != nil {
		t.Fatal(err)
	}
	return all
}
