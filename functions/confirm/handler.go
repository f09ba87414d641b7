package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"oncepost/shared/publishing"
)

// steps runs one step of the confirm workflow (publishing.Confirmer).
type steps interface {
	Step(ctx context.Context, req publishing.StepRequest) (publishing.StepResponse, error)
}

// handler serves the confirm workflow's Task states: it decodes the
// event, runs the step, and names every failure the way the state
// machine's Retry and Catch match it.
type handler struct {
	steps steps
}

// handle is the Lambda handler. The event is the Task's Payload, a
// publishing.StepRequest; unknown fields are refused, so a state machine
// and a function out of step fail loudly instead of doing something else.
func (h handler) handle(ctx context.Context, event json.RawMessage) (publishing.StepResponse, error) {
	var req publishing.StepRequest
	dec := json.NewDecoder(bytes.NewReader(event))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return publishing.StepResponse{}, lambdaError(&publishing.StepError{Name: publishing.ErrNameInvalidStep, Err: fmt.Errorf("decode step request: %w", err)})
	}
	res, err := h.steps.Step(ctx, req)
	if err != nil {
		return publishing.StepResponse{}, lambdaError(err)
	}
	return res, nil
}

// lambdaError gives an error the name the workflow matches. aws-lambda-go
// names a returned error by its Go type ("*publishing.StepError") unless
// the error *is* a messages.InvokeResponse_Error value, whose Type it
// sends as is; Step Functions then sees that Type as the error name. An
// error Step did not name is a store failure (retried, then caught).
func lambdaError(err error) error {
	var se *publishing.StepError
	if !errors.As(err, &se) {
		se = &publishing.StepError{Name: publishing.ErrNameStoreUnavailable, Err: err}
	}
	return messages.InvokeResponse_Error{Type: se.Name, Message: se.Err.Error()}
}
