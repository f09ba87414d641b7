package publishing

import (
	"context"
	"fmt"
	"time"

	"oncepost/shared/post"
)

// Intake: how a post enters a workspace from a client that may retry. A
// create carries an Idempotency-Key; the key's record is stored with the
// post (the embedded store: in the post's transaction; DynamoDB: one
// conditional put that names the post id, before the post is written), so
// a retried create finds the record and gets the first answer back
// instead of making a second post.

// IdempotencyKeep is how long a key's record is kept (at least 24 h is
// promised; the stores drop records older than this).
const IdempotencyKeep = 48 * time.Hour

// IdempotencyRecord is a create request's key and its first answer.
type IdempotencyRecord struct {
	// Scope is who sent it (an API token's id, an IAM principal's ARN):
	// keys of different callers never meet.
	Scope string `json:"scope"`
	Key   string `json:"key"`
	// Fingerprint is the hex SHA-256 of the request (method, path and
	// body): the same key with another fingerprint is refused.
	Fingerprint string  `json:"fingerprint"`
	Post        post.ID `json:"post_id"`
	// Status and Response are the first answer, replayed byte for byte.
	Status    int       `json:"status"`
	Response  []byte    `json:"response"`
	CreatedAt time.Time `json:"created_at"`
}

// KeyExistsError is returned (wrapped) by CreatePost when the key's
// record exists already: nothing was written, Record is the stored one.
// InFlight is true when the post it names is not (yet) readable: the first
// request may still be writing it, or crashed midway (Since says when it
// began).
type KeyExistsError struct {
	Record   IdempotencyRecord
	InFlight bool
}

func (e *KeyExistsError) Error() string {
	if e.InFlight {
		return fmt.Sprintf("idempotency key %q is in use by a request in flight since %s", e.Record.Key, e.Record.CreatedAt.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("idempotency key %q was used at %s", e.Record.Key, e.Record.CreatedAt.UTC().Format(time.RFC3339))
}

// PostScheduler writes posts so that their targets fire at their slots:
// the embedded runtime writes the targets' schedules in the post's
// transaction, the AWS runtime puts EventBridge Scheduler schedules after
// the post.
type PostScheduler interface {
	// CreatePost stores a new post (an error wrapping post.ErrConflict if
	// the id exists) and makes sure each target is triggered at its slot.
	// With a key, the key's record is stored with the post; if a record
	// with the key's scope and key exists, nothing is written and the
	// error is a *KeyExistsError.
	CreatePost(ctx context.Context, p post.Post, key *IdempotencyRecord) error
	// Reschedule moves one target to slot (refused with an error wrapping
	// post.ErrConflict when a send under the old slot may have reached the
	// platform) and makes sure it is triggered then.
	Reschedule(ctx context.Context, id post.ID, account post.AccountID, slot time.Time) error
	// Cancelled is told that a target was cancelled; its schedule may go.
	Cancelled(ctx context.Context, ref TargetRef)
}
