package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/localflow"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The embedded media directory translates its errors as the publisher
// reads them: a missing file and a ref outside the directory fail the
// post; any other failure to read is not a refusal (the post waits).
func TestDirMediaErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ok.png"), []byte("\x89PNG"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "adir.png"), 0o700); err != nil {
		t.Fatal(err)
	}
	m := dirMedia{dir: dir}
	for _, tc := range []struct {
		ref  string
		want error // nil: no refusal sentinel
		ok   bool
	}{
		{"ok.png", nil, true},
		{"missing.png", post.ErrNotFound, false},
		{"../outside.png", publishing.ErrMediaInvalid, false},
		{"adir.png", nil, false}, // a read that fails for another reason
	} {
		_, err := m.ReadMedia(t.Context(), tc.ref)
		switch {
		case tc.ok && err != nil:
			t.Errorf("ReadMedia(%q) = %v, want the bytes", tc.ref, err)
		case !tc.ok && err == nil:
			t.Errorf("ReadMedia(%q) succeeded", tc.ref)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("ReadMedia(%q) = %v, want %v", tc.ref, err, tc.want)
		case tc.want == nil && (errors.Is(err, post.ErrNotFound) || errors.Is(err, publishing.ErrMediaInvalid)):
			t.Errorf("ReadMedia(%q) = %v, a refusal; want a transient error", tc.ref, err)
		}
	}
}

// blockingLedger never answers a read before its context ends.
type blockingLedger struct{ publishing.Ledger }

func (blockingLedger) Get(ctx context.Context, _ ledger.Key) (ledger.Entry, error) {
	<-ctx.Done()
	return ledger.Entry{}, ctx.Err()
}

// A confirm step that runs out of the confirm function's time fails, on
// the embedded runtime too, under the name Lambda gives a function timeout:
// the workflow's Retry and Catch then treat it as on AWS.
func TestEmbeddedConfirmStepTimeoutIsNamedAsLambdaNamesIt(t *testing.T) {
	inv := confirmInvoker{c: &publishing.Confirmer{Ledger: blockingLedger{}}, timeout: 50 * time.Millisecond}
	payload := json.RawMessage(`{"action":"release","key":"k","attempt":1}`)
	_, err := inv.Invoke(t.Context(), confirmFunction, payload)
	if got := localflow.ErrorName(err); got != publishing.ErrNameFunctionTimeout {
		t.Errorf("a step past the function's timeout failed as %q (%v), want %q", got, err, publishing.ErrNameFunctionTimeout)
	}
}
