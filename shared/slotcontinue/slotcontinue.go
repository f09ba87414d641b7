// Package slotcontinue hands the rest of a slot's firing to a new
// invocation of the trigger function (publishing.SlotContinuer): an
// asynchronous Lambda Invoke of the function itself with the slot's
// schedule input (ebschedule.SlotInput). The new invocation claims the
// slot and resumes where the last firing recorded it got.
package slotcontinue

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"oncepost/shared/ebschedule"
	"oncepost/shared/publishing"
)

// Interface guards.
var (
	_ publishing.SlotContinuer = (*Continuer)(nil)
	_ API                      = (*lambda.Client)(nil)
)

// API is the part of the Lambda client a Continuer calls.
type API interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, optFns ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Continuer invokes one function asynchronously to continue a slot.
type Continuer struct {
	api      API
	function string
	now      func() time.Time
}

// New returns a Continuer invoking function (a name or ARN: the trigger
// function's own, AWS_LAMBDA_FUNCTION_NAME in Lambda's environment).
func New(api API, function string) (*Continuer, error) {
	if api == nil || function == "" {
		return nil, errors.New("slotcontinue: a Lambda client and the function's name are required")
	}
	return &Continuer{api: api, function: function, now: time.Now}, nil
}

// ContinueSlot invokes the function with the slot's input, asynchronously
// (InvocationType Event: Lambda queues it and answers 202); anything else
// is an error, and the caller's firing is retried instead.
func (c *Continuer) ContinueSlot(ctx context.Context, slot time.Time) error {
	payload, err := ebschedule.SlotInput(slot, c.now())
	if err != nil {
		return err
	}
	out, err := c.api.Invoke(ctx, &lambda.InvokeInput{FunctionName: &c.function, InvocationType: types.InvocationTypeEvent, Payload: payload})
	if err != nil {
		return fmt.Errorf("continue slot %s: invoke %s: %w", slot.UTC().Format(time.RFC3339Nano), c.function, err)
	}
	if out.StatusCode != http.StatusAccepted {
		return fmt.Errorf("continue slot %s: invoke %s answered %d, want %d", slot.UTC().Format(time.RFC3339Nano), c.function, out.StatusCode, http.StatusAccepted)
	}
	return nil
}
