package post

import (
	"testing"
	"time"
)

// A target that publishes keeps no reason, whatever reason the move
// carries; every other move keeps the move's reason.
func TestApplyClearsTheReasonOnPublished(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	const ambiguous = "ambiguous: timeout after the request was written"
	tests := []struct {
		from, to TargetStatus
		want     string
	}{
		{Publishing, Published, ""},
		{Held, Published, ""},
		{Triggered, Published, ""},
		{Triggered, Publishing, ambiguous},
		{Publishing, Held, ambiguous},
		{Triggered, Failed, ambiguous},
	}
	for _, tt := range tests {
		got, err := Target{Account: "a", Status: tt.from, Reason: "earlier"}.Apply(TargetUpdate{Status: tt.to, RemoteID: "r", Reason: ambiguous, At: at})
		if err != nil {
			t.Fatalf("%s → %s: %v", tt.from, tt.to, err)
		}
		if got.Reason != tt.want {
			t.Errorf("%s → %s: reason %q, want %q", tt.from, tt.to, got.Reason, tt.want)
		}
	}
}
