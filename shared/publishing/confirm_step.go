package publishing

import (
	"context"
	"errors"
	"fmt"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
)

// Step actions, as named in infra/statemachine/confirm.asl.json.
const (
	ActionLook    = "look"
	ActionConfirm = "confirm"
	ActionRelease = "release"
	ActionHold    = "hold"
	ActionReject  = "reject"
)

// Step error names the workflow's Retry and Catch match on.
const (
	// ErrNamePlatformUnavailable: the platform could not be read; retried.
	ErrNamePlatformUnavailable = "PlatformUnavailable"
	// ErrNameStoreUnavailable: the ledger or posts could not be reached; retried.
	ErrNameStoreUnavailable = "StoreUnavailable"
	// ErrNameInvalidStep: the request cannot be served; never retried.
	ErrNameInvalidStep = "InvalidStepRequest"
	// ErrNameLookupInconclusive: the platform was read but the post could
	// not be proven absent; not retried, an operator decides.
	ErrNameLookupInconclusive = "LookupInconclusive"
	// ErrNameFunctionTimeout is how Lambda names a function that ran out
	// of its time (Step Functions has also reported it as Lambda.Unknown;
	// the workflow matches both): the embedded runtime names a step that
	// overran the confirm function's timeout the same.
	ErrNameFunctionTimeout = "Sandbox.Timedout"
)

// StepRequest is the payload the confirm workflow sends to each step (the
// confirm Lambda's event, and localflow's Task payload).
type StepRequest struct {
	Action   string     `json:"action"`
	Key      ledger.Key `json:"key"`
	Attempt  int        `json:"attempt"`
	RemoteID string     `json:"remote_id,omitempty"`
	// Token is the workflow's task token (hold only).
	Token  string `json:"token,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// StepResponse is a step's answer, read by the workflow's Choice states.
type StepResponse struct {
	Found    bool   `json:"found"`
	RemoteID string `json:"remote_id,omitempty"`
	Resolved bool   `json:"resolved"`
	State    string `json:"state"`
}

// StepError is a step failure with the error name the workflow sees (Step
// Functions takes a Lambda error's name from its type or ErrorName).
type StepError struct {
	Name string
	Err  error
}

func (e *StepError) Error() string     { return e.Name + ": " + e.Err.Error() }
func (e *StepError) Unwrap() error     { return e.Err }
func (e *StepError) ErrorName() string { return e.Name }

// Step runs one step of the confirm workflow.
func (c *Confirmer) Step(ctx context.Context, req StepRequest) (StepResponse, error) {
	if req.Key == "" || req.Attempt < 1 {
		return StepResponse{}, &StepError{Name: ErrNameInvalidStep, Err: fmt.Errorf("step %q: key and attempt ≥ 1 are required", req.Action)}
	}
	in := ConfirmInput{Key: req.Key, Attempt: req.Attempt}
	var err error
	switch req.Action {
	case ActionLook:
		res, err := c.Look(ctx, in)
		if err != nil {
			return StepResponse{}, stepError(err)
		}
		return StepResponse{Found: res.Found, RemoteID: res.RemoteID, Resolved: res.Resolved, State: res.State}, nil
	case ActionConfirm:
		if req.RemoteID == "" {
			return StepResponse{}, &StepError{Name: ErrNameInvalidStep, Err: errors.New("step confirm: remote_id is required")}
		}
		err = c.Confirm(ctx, in, req.RemoteID)
	case ActionRelease:
		err = c.Release(ctx, in)
	case ActionHold:
		if req.Token == "" {
			return StepResponse{}, &StepError{Name: ErrNameInvalidStep, Err: errors.New("step hold: token is required")}
		}
		reason := req.Reason
		if reason == "" {
			reason = ReasonNotFoundAfterLooks
		}
		err = c.Hold(ctx, in, req.Token, reason)
	case ActionReject:
		reason := req.Reason
		if reason == "" {
			reason = ReasonOperatorRejected
		}
		err = c.Reject(ctx, in, reason)
	default:
		return StepResponse{}, &StepError{Name: ErrNameInvalidStep, Err: fmt.Errorf("step action %q is not one of look, confirm, release, hold, reject", req.Action)}
	}
	if err != nil {
		return StepResponse{}, stepError(err)
	}
	e, err := c.Ledger.Get(ctx, req.Key)
	if err != nil {
		return StepResponse{}, stepError(err)
	}
	return StepResponse{State: string(e.State), RemoteID: e.RemoteID}, nil
}

// stepError names an error for the workflow: platform failures and store
// failures are transient (retried); a missing entry or a refused
// transition is not.
func stepError(err error) error {
	var (
		np  *platform.NotPerformed
		amb *platform.Ambiguous
		ua  *platform.Unauthorized
		rej *platform.Rejected
		inc *platform.Inconclusive
	)
	switch {
	case errors.Is(err, ledger.ErrNotFound), errors.Is(err, ledger.ErrTransition):
		return &StepError{Name: ErrNameInvalidStep, Err: err}
	case errors.As(err, &inc):
		return &StepError{Name: ErrNameLookupInconclusive, Err: err}
	case errors.As(err, &np), errors.As(err, &amb), errors.As(err, &ua), errors.As(err, &rej):
		return &StepError{Name: ErrNamePlatformUnavailable, Err: err}
	default:
		return &StepError{Name: ErrNameStoreUnavailable, Err: err}
	}
}
