package main

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
	"oncepost/shared/publishing"
)

type stepFunc func(ctx context.Context, req publishing.StepRequest) (publishing.StepResponse, error)

func (f stepFunc) Step(ctx context.Context, req publishing.StepRequest) (publishing.StepResponse, error) {
	return f(ctx, req)
}

func TestHandlerNamesErrorsAsTheWorkflowMatchesThem(t *testing.T) {
	tests := []struct {
		name    string
		event   string
		stepErr error
		want    string // InvokeResponse_Error.Type; "" for success
	}{
		{"found", `{"action":"look","key":"k","attempt":1}`, nil, ""},
		{"platform unreadable", `{"action":"look","key":"k","attempt":1}`,
			&publishing.StepError{Name: publishing.ErrNamePlatformUnavailable, Err: &platform.NotPerformed{Status: 503}}, "PlatformUnavailable"},
		{"store down", `{"action":"look","key":"k","attempt":1}`,
			&publishing.StepError{Name: publishing.ErrNameStoreUnavailable, Err: errors.New("dynamodb: timeout")}, "StoreUnavailable"},
		{"inconclusive", `{"action":"look","key":"k","attempt":1}`,
			&publishing.StepError{Name: publishing.ErrNameLookupInconclusive, Err: &platform.Inconclusive{Message: "too far"}}, "LookupInconclusive"},
		{"unnamed error", `{"action":"look","key":"k","attempt":1}`, errors.New("boom"), "StoreUnavailable"},
		{"unknown field", `{"action":"look","key":"k","attempt":1,"extra":true}`, nil, "InvalidStepRequest"},
		{"not json", `look`, nil, "InvalidStepRequest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := handler{steps: stepFunc(func(context.Context, publishing.StepRequest) (publishing.StepResponse, error) {
				if tt.stepErr != nil {
					return publishing.StepResponse{}, tt.stepErr
				}
				return publishing.StepResponse{Found: true, RemoteID: "r", State: "confirmed"}, nil
			})}
			res, err := h.handle(context.Background(), json.RawMessage(tt.event))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("handle = %v", err)
				}
				if diff := cmp.Diff(publishing.StepResponse{Found: true, RemoteID: "r", State: "confirmed"}, res); diff != "" {
					t.Errorf("response (-want +got):\n%s", diff)
				}
				return
			}
			// aws-lambda-go sends a messages.InvokeResponse_Error's Type as
			// the error name only for that exact type, not a pointer or a
			// wrapper: check the value type itself.
			ive, ok := err.(messages.InvokeResponse_Error)
			if !ok {
				t.Fatalf("error %T %v, want a messages.InvokeResponse_Error value", err, err)
			}
			if ive.Type != tt.want {
				t.Errorf("error name %q, want %q", ive.Type, tt.want)
			}
		})
	}
}
