package console

import (
	"testing"

	"oncepost/shared/browsertest"
)

// TestMain shares one headless chromium among the package's browser
// tests (browser_test.go) and stops it after the last test.
func TestMain(m *testing.M) { browsertest.Main(m) }
