package publishing_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// Decision.Validate is the one check of a decision's fields: the API and
// the console answer its refusals in their words, and Decide refuses the
// same before reading the ledger.
func TestDecisionValidate(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name string
		d    publishing.Decision
		want *post.FieldError // nil: valid
	}{
		{"release", publishing.Decision{Action: publishing.DecisionRelease}, nil},
		{"confirm", publishing.Decision{Action: publishing.DecisionConfirm, RemoteID: long(publishing.MaxIDBytes)}, nil},
		{"reject with a reason at the limit", publishing.Decision{Action: publishing.DecisionReject, Reason: long(publishing.MaxDecisionReasonBytes)}, nil},
		{"unknown action", publishing.Decision{Action: "approve"}, &post.FieldError{Field: "decision"}},
		{"confirm without a remote id", publishing.Decision{Action: publishing.DecisionConfirm}, &post.FieldError{Field: "remote_id", Problem: "is missing"}},
		{"remote id over the limit", publishing.Decision{Action: publishing.DecisionConfirm, RemoteID: long(publishing.MaxIDBytes + 1)},
			&post.FieldError{Field: "remote_id", Problem: "is over 256 bytes"}},
		{"reason over the limit", publishing.Decision{Action: publishing.DecisionReject, Reason: long(publishing.MaxDecisionReasonBytes + 1)},
			&post.FieldError{Field: "reason", Problem: "is over 500 bytes"}},
		{"release with a remote id", publishing.Decision{Action: publishing.DecisionRelease, RemoteID: "1"}, &post.FieldError{Field: "remote_id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.d.Validate()
			var fe *post.FieldError
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.As(err, &fe) {
				t.Fatalf("Validate() = %v, want a *post.FieldError on %s", err, tc.want.Field)
			}
			ignore := []string{"Fix"}
			if tc.want.Problem == "" {
				ignore = append(ignore, "Problem")
			}
			if diff := cmp.Diff(tc.want, fe, cmpopts.IgnoreFields(post.FieldError{}, ignore...)); diff != "" {
				t.Errorf("Validate() (-want +got):\n%s", diff)
			}
			// Decide refuses it the same, before it reads anything (a nil
			// Ledger would panic).
			_, err = (&publishing.Operator{}).Decide(context.Background(), "k", tc.d)
			if !errors.As(err, &fe) || fe.Field != tc.want.Field {
				t.Errorf("Decide() = %v, want the field error on %s", err, tc.want.Field)
			}
		})
	}
}
