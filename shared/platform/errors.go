package platform

import (
	"fmt"
	"time"
)

// Rejected means the platform refused the call and will refuse it again
// (a business error, invalid content). The ledger moves the entry to failed.
type Rejected struct {
	// Status is the HTTP status, or 0 when there was none.
	Status int
	// Reason is a short machine-readable cause, e.g. "reconnect_needed".
	Reason string
	// Message is the platform's own explanation.
	Message string
}

func (e *Rejected) Error() string {
	return fmt.Sprintf("platform rejected the call (status %d, %s): %s", e.Status, e.Reason, e.Message)
}

// NotPerformed means the platform certainly did not act (429, 503 before
// processing, connection refused), so the call may be sent again.
type NotPerformed struct {
	Status int
	// RetryAfter is the platform's requested wait, or 0 when it gave none.
	RetryAfter time.Duration
	Message    string
}

func (e *NotPerformed) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("platform did not perform the call (status %d, retry after %s): %s", e.Status, e.RetryAfter, e.Message)
	}
	return fmt.Sprintf("platform did not perform the call (status %d): %s", e.Status, e.Message)
}

// Unauthorized means the access token is expired or revoked; the call was
// not performed. The caller refreshes and re-sends within the same attempt.
type Unauthorized struct {
	Message string
}

func (e *Unauthorized) Error() string {
	return "platform refused the credential: " + e.Message
}

// Ambiguous means the call may or may not have taken effect (timeout after
// the request was written, connection reset, 500/502/504). It is never a
// failure: the ledger records unknown and a confirm loop reads the platform.
type Ambiguous struct {
	Status int
	Err    error
}

func (e *Ambiguous) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("outcome unknown (status %d): %v", e.Status, e.Err)
	}
	return fmt.Sprintf("outcome unknown: %v", e.Err)
}

func (e *Ambiguous) Unwrap() error { return e.Err }
