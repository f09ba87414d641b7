package sqlitestore

import (
	"context"
	"path/filepath"
	"testing"
)

// openTest opens a fresh store in the test's temp dir and closes it at the
// end of the test.
func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "oncepost.db"), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}
