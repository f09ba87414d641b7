package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/awsruntime/stacktest"
	"oncepost/shared/emulatortest"
	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The confirm function built as `bootstrap` (as `make build-ConfirmFunction`
// builds it), run by the Lambda Runtime Interface Emulator against
// dynalite and fauxqs: the error names the state machine's Retry and
// Catch match must cross the Runtime API as the error type.
func TestConfirmFunctionUnderTheRuntimeInterfaceEmulator(t *testing.T) {
	ctx := context.Background()
	stack := stacktest.New(t)
	store := stack.Store

	// An account on a sandbox that has the post, and one whose instance
	// does not answer.
	sb := stack.Sandbox
	sa := sb.AddAccount("news")
	const body = "Found by the confirm function."
	sb.InjectStatus(sa.ID, body)
	accounts := map[post.AccountID]string{"news": sb.URL(), "down": "http://127.0.0.1:1"}
	now := time.Now().UTC().Truncate(time.Second)
	entries := map[post.AccountID]ledger.Key{}
	for id, base := range accounts {
		if err := store.PutAccount(ctx, post.Account{ID: id, Platform: "mastodon", Handle: "@" + string(id), BaseURL: base, RemoteID: sa.ID, Gate: post.GateAuto}); err != nil {
			t.Fatal(err)
		}
		if err := store.PutCredential(ctx, id, platform.Credential{AccessToken: sa.AccessToken}); err != nil {
			t.Fatal(err)
		}
		p := post.Post{ID: post.ID("p-" + id), Body: body, CreatedAt: now,
			Targets: []post.Target{{Account: id, Slot: now, Status: post.Publishing, UpdatedAt: now}}}
		if err := store.CreatePost(ctx, p); err != nil {
			t.Fatal(err)
		}
		k := ledger.PublishKey(string(id), string(p.ID), now)
		e := ledger.NewEntry(k, ledger.Publish, string(id), string(p.ID), now, platform.Fingerprint(body, nil), "worker", now, time.Minute)
		e.LookAfter = platform.StartOfHistory
		if err := store.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		unknown, err := e.MarkUnknown("ambiguous: timeout", now)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Update(ctx, e, unknown); err != nil {
			t.Fatal(err)
		}
		entries[id] = k
	}

	invoke := emulatortest.Lambda(t, bootstrap(t), stack.Env())
	tests := []struct {
		name      string
		event     any
		wantType  string
		wantFound bool
	}{
		{"found on the platform", publishing.StepRequest{Action: publishing.ActionLook, Key: entries["news"], Attempt: 1}, "", true},
		{"platform does not answer", publishing.StepRequest{Action: publishing.ActionLook, Key: entries["down"], Attempt: 1}, publishing.ErrNamePlatformUnavailable, false},
		{"no such entry", publishing.StepRequest{Action: publishing.ActionLook, Key: "nope", Attempt: 1}, publishing.ErrNameInvalidStep, false},
		{"unknown field", map[string]any{"action": "look", "key": entries["news"], "attempt": 1, "extra": 1}, publishing.ErrNameInvalidStep, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload, err := json.Marshal(tt.event)
			if err != nil {
				t.Fatal(err)
			}
			out := invoke(payload)
			var got struct {
				ErrorType    string `json:"errorType"`
				ErrorMessage string `json:"errorMessage"`
				publishing.StepResponse
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("answer %s: %v", out, err)
			}
			if diff := cmp.Diff(tt.wantType, got.ErrorType); diff != "" {
				t.Errorf("error type (-want +got):\n%s\nanswer: %s", diff, out)
			}
			if got.Found != tt.wantFound {
				t.Errorf("found = %t, want %t; answer: %s", got.Found, tt.wantFound, out)
			}
		})
	}
}

// bootstrap builds this function as the Makefile's build target does and
// returns the binary's path.
func bootstrap(t *testing.T) string {
	t.Helper()
	return emulatortest.BuildBootstrap(t, ".")
}
