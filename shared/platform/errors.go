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

// ReasonMediaConsumed is the Rejected reason of a create refused because an
// attachment is already attached to another post (Mastodon answers 422
// "already attached"). On a re-send that reuses an upload it is evidence
// that an earlier attempt's post exists: the caller looks for it instead of
// failing.
const ReasonMediaConsumed = "media_already_attached"

// ReasonDuplicate is the Rejected reason of a create the platform refused
// as a duplicate of a post already there (X's duplicate-content 403,
// LinkedIn's DUPLICATE_POST). Like ReasonMediaConsumed it is a signal to
// look, not a failure: the post may be ours from an earlier attempt.
const ReasonDuplicate = "duplicate_content"

// ReasonMediaNeedsURL is the Rejected reason of a post with media to a
// platform that fetches attachments from a public URL (Capabilities.
// MediaByURL) when an attachment has none: the adapter's refusal and the
// publisher's, in a runtime that cannot give one.
const ReasonMediaNeedsURL = "media_needs_public_url"

// ReasonReconnectNeeded is the Rejected reason of a refresh the platform
// refused for good (invalid_grant and the like): an operator must connect
// the account again.
const ReasonReconnectNeeded = "reconnect_needed"

// NotPerformed means the platform certainly did not act (429, a refused
// connection, a request not completely written), so the call may be sent
// again. A 5xx on a write is never NotPerformed: a proxy may answer it
// after forwarding the request.
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
// the request was written, connection reset, any 5xx on a write). It is
// never a failure: the ledger records unknown and a confirm loop reads the
// platform.
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

// Inconclusive means the platform was read but a Lookup could not prove the
// post absent (it would have to read further than it may). It is neither
// "found" nor "not found": a re-send is not safe and retrying the same read
// will not help, so the confirm workflow hands the entry to an operator
// with Message as the reason.
type Inconclusive struct {
	Message string
}

func (e *Inconclusive) Error() string { return "lookup inconclusive: " + e.Message }
