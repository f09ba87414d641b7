package publishing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// Reasons recorded on delete entries.
const (
	// ReasonAwaitingApproval: the delete waits for an operator's approval
	// (oncepost approve KEY).
	ReasonAwaitingApproval = "awaiting_approval"
	// ReasonApprovedOnRequest: the operator approved the delete when asking
	// for it.
	ReasonApprovedOnRequest = "approved_on_request"
	// ReasonAlreadyGone: the post was not on the platform when the delete
	// looked (before its DELETE, or after a 404 to it).
	ReasonAlreadyGone = "already_gone"
	// ReasonDeleted: the platform accepted the DELETE and the post was read
	// back gone.
	ReasonDeleted = "deleted"
	// ReasonGoneAfterReadBack: an open entry (ambiguous outcome, dead
	// owner) was resolved by reading the post back gone.
	ReasonGoneAfterReadBack = "gone_after_read_back"
	// ReasonDeletedButStillVisible: the platform answered the DELETE with
	// 2xx but the post was still visible after every read back (Mastodon
	// removes it in a background job); a later Run or the sweeper reads
	// again.
	ReasonDeletedButStillVisible = "deleted_but_still_visible"
	// ReasonStillThereAfterReadBack: an open entry was resolved by reading
	// the post back still there; the approved delete is sent again.
	ReasonStillThereAfterReadBack = "still_there_after_read_back"
	// ReasonNotFoundButStillThere: the platform answered the DELETE with
	// 404 (not found, or not ours) while the post is still there: a
	// failure, never "done".
	ReasonNotFoundButStillThere = "not_found_but_still_there"
	// ReasonExistsCheckRefused: the platform refused, for good, the read
	// that checks the post exists before the DELETE; an operator decides.
	ReasonExistsCheckRefused = "exists_check_refused"
	// ReasonDeletedUnverified: the platform cannot read a post back (a
	// Telegram bot): the DELETE's success is the only evidence.
	ReasonDeletedUnverified = "deleted_unverified"
	// ReasonDeleteUnknownUnreadable: the DELETE's answer was lost on a
	// platform that cannot read the post back; an operator checks.
	ReasonDeleteUnknownUnreadable = "delete_outcome_unknown_unreadable"
)

// ErrNotPublished is returned by Deleter.Request for a post that has no
// published target (with a remote id) on the account.
var ErrNotPublished = errors.New("post is not published there")

// ErrNotApproved is returned by Deleter.Run for a delete held for an
// operator: `oncepost approve KEY` approves it.
var ErrNotApproved = errors.New("delete is not approved")

// ErrDeleteFailed is returned by Deleter.Run for a delete that failed: the
// platform refused it (403, a 404 while the post is still there …) or an
// operator rejected it. The post is not deleted.
var ErrDeleteFailed = errors.New("delete failed")

// ErrDeleteNotConfirmable is returned by Operator.Decide for a confirm
// decision on a delete entry: only the platform, read back, says a post
// is gone; an operator approves (release) or rejects a delete.
var ErrDeleteNotConfirmable = errors.New("a delete cannot be confirmed by an operator; approve (release) or reject it")

// rejectedNotFound is the Rejected reason adapters give a DELETE answered
// 404 (mastodon.ReasonNotFound): the post is gone, or it is not the
// account's. Only a read back tells which.
const rejectedNotFound = "not_found"

// DeletePostID is the id of the post a delete entry was requested for,
// or "" for another entry.
func DeletePostID(e ledger.Entry) string {
	if e.Action != ledger.Delete {
		return ""
	}
	postID, _ := ledger.SubjectPart(e.Post) // a thread's part's delete names its post
	return postID
}

// Defaults of the Deleter's read-back tuning.
const (
	defaultReadBacks    = 5
	defaultReadBackWait = 2 * time.Second
	// maxDeleteSends bounds the DELETEs one Run sends (an ambiguous
	// answer, read back still there, sent again …); the next Run goes on.
	maxDeleteSends = 3
	// maxDeleteSteps bounds the entry moves one Run makes.
	maxDeleteSteps = 12
)

// Deleter deletes published posts from their platform through the ledger,
// like every write to a platform (DESIGN G4): one entry per (account,
// remote id), keyed by ledger.DeleteKey and written before the DELETE is
// sent; at most one effect, never without an approval recorded, and a
// failure is never reported as done. The zero values of the tuning fields
// are replaced by the defaults documented on each.
//
// The approval rule: a DELETE is never sent without an approval recorded
// on the entry, whatever crashes. It holds by construction:
//
//   - Request writes the entry pending at attempt 1 with a zero SentAt, then
//     moves it to held (reason awaiting_approval), or, when the caller
//     approved it, to released (reason approved_on_request). Nothing is sent
//     at attempt 1, ever.
//   - An operator approves a held entry with Operator.Decide (release): held
//     → released, reason released_by_operator.
//   - Run sends only from an attempt it acquired (released → pending,
//     attempt ≥ 2) out of an approved released entry, and that acquiring
//     write sets SentAt. A released entry is approved when its reason is
//     approved_on_request or released_by_operator, or when it comes from
//     an attempt acquired to send (attempt ≥ 2 with SentAt set: an earlier
//     approval, followed by a 429 or a read back that found the post).
//
// A thread (post.Post.Thread) is deleted through the entry of its first
// part's remote id, the target's: once that entry is approved, Run
// deletes the parts after it first, the last part first, each through an
// entry of its own (ledger.DeleteKey of the part's remote id), and part 1
// last; the target is deleted with part 1. A part's entry is written
// pending at attempt 1, like Request's, then released with reason
// approved_with_thread: the thread's approval, recorded on the thread's
// entry, carried to the part before anything is sent for it. A part's
// entry held for approval (a crash between its two writes) is released
// the same way by the next Run of the approved thread.
//
// Hence an open entry (pending with an expired lease, or unknown) at
// attempt 1 or with a zero SentAt never had a DELETE sent and carries no
// approval that survived: it is held with reason awaiting_approval,
// without any platform call, by whoever finds it (Run, the sweeper). This
// covers a crash right after Request's pending write: even a Request that
// was approved, but crashed before recording the approval, asks again. A
// released entry that is not approved (a foreign writer released it) is
// re-acquired with a zero SentAt and held at once, never sent. A held
// entry carrying an operator's decision that was recorded but not applied
// (Decide stopped in between) gets it applied by Run.
//
// Every other open entry may have had a DELETE sent: it is resolved by
// reading the platform back — gone → confirmed; still there → released
// (its approval stands, so Run sends it again; the sweeper never sends).
// A failed read is never "gone".
type Deleter struct {
	Ledger    Ledger
	Posts     Posts
	Accounts  Accounts
	Platforms Platforms
	// Credentials reads and refreshes credentials (a 401 refreshes once
	// and repeats the call, as in Publish); nil means one built from this
	// Deleter's fields. Share the Publisher's.
	Credentials *Credentials
	// Metrics receives event metrics; nil drops them.
	Metrics MetricsEmitter
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Owner names this worker in leases.
	Owner string
	// CallTimeout bounds one platform call; default 10 s.
	CallTimeout time.Duration
	// RecordMargin is kept from the caller's deadline to record an outcome
	// after a platform call; default 2 s.
	RecordMargin time.Duration
	// Lease is how long an acquired entry is ours; it must outlast the
	// exists check, the DELETE and the read backs. Default 2 min.
	Lease time.Duration
	// ReadBacks is how many times Run reads the post back after the
	// platform accepted a DELETE (or answered ambiguously) before it calls
	// it still visible; default 5. A Mastodon DELETE answers 200 and
	// removes the status in a background job.
	ReadBacks int
	// ReadBackWait is the pause between read backs; default 2 s.
	ReadBackWait time.Duration
	Logger       *slog.Logger

	credsOnce sync.Once
	creds     *Credentials
}

func (d *Deleter) now() time.Time { return nowFrom(d.Now) }

func (d *Deleter) log() *slog.Logger { return loggerOr(d.Logger) }

func (d *Deleter) lease() time.Duration { return orDefault(d.Lease, defaultLease) }

func (d *Deleter) callTimeout() time.Duration { return orDefault(d.CallTimeout, 10*time.Second) }

func (d *Deleter) recordMargin() time.Duration { return orDefault(d.RecordMargin, 2*time.Second) }

func (d *Deleter) readBacks() int { return max(orDefault(d.ReadBacks, defaultReadBacks), 1) }

func (d *Deleter) readBackWait() time.Duration { return orDefault(d.ReadBackWait, defaultReadBackWait) }

// credentials returns the shared Credentials, or one built from d.
func (d *Deleter) credentials() *Credentials {
	if d.Credentials != nil {
		return d.Credentials
	}
	d.credsOnce.Do(func() {
		d.creds = &Credentials{Accounts: d.Accounts, Owner: d.Owner, CallTimeout: d.CallTimeout, RecordMargin: d.RecordMargin,
			Now: d.Now, Metrics: d.Metrics, Logger: d.Logger}
	})
	return d.creds
}

// callContext bounds one platform call: CallTimeout, and never past the
// caller's deadline less RecordMargin.
func (d *Deleter) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(d.callTimeout())
	if dl, ok := ctx.Deadline(); ok {
		if d2 := dl.Add(-d.recordMargin()); d2.Before(deadline) {
			deadline = d2
		}
	}
	return context.WithDeadline(ctx, deadline)
}

// DeleteRequest is what Deleter.Request did.
type DeleteRequest struct {
	// Entry is the delete's ledger entry: held awaiting_approval or
	// released approved_on_request when New, else as it stands.
	Entry ledger.Entry
	// New is false when the delete had been requested before: nothing was
	// written (deleting twice is a no-op).
	New bool
}

// Request records that an operator wants the post deleted from the
// account (empty: the post's only target, or its only published one). The
// target must be published with a remote id. The entry is written pending
// (the ledger's first write), then held for approval, or released when
// approved is true; nothing is sent (Run sends). If the delete was
// requested before, its entry is returned as it stands and nothing is
// written.
func (d *Deleter) Request(ctx context.Context, postID post.ID, account post.AccountID, approved bool) (DeleteRequest, error) {
	pst, err := d.Posts.GetPost(ctx, postID)
	if err != nil {
		return DeleteRequest{}, fmt.Errorf("delete post %s: %w", postID, err)
	}
	tg, err := deleteTarget(pst, account)
	if err != nil {
		return DeleteRequest{}, err
	}
	if tg.RemoteID == "" {
		return DeleteRequest{}, fmt.Errorf("delete post %s on %s: it is %s and has no remote id: %w", pst.ID, tg.Account, tg.Status, ErrNotPublished)
	}
	key := ledger.DeleteKey(string(tg.Account), tg.RemoteID)
	cur, err := d.Ledger.Get(ctx, key)
	switch {
	case err == nil:
		return DeleteRequest{Entry: cur}, nil
	case !errors.Is(err, ledger.ErrNotFound):
		return DeleteRequest{}, fmt.Errorf("delete post %s on %s: read %s: %w", pst.ID, tg.Account, key, err)
	}
	switch tg.Status {
	case post.Published:
	case post.Deleted:
		return DeleteRequest{}, fmt.Errorf("delete post %s on %s: it is already deleted (remote id %s; its ledger entry has expired): %w",
			pst.ID, tg.Account, tg.RemoteID, ErrNotPublished)
	default:
		return DeleteRequest{}, fmt.Errorf("delete post %s on %s: it is %s, not published: %w", pst.ID, tg.Account, tg.Status, ErrNotPublished)
	}
	if _, err := d.Accounts.GetAccount(ctx, tg.Account); err != nil {
		return DeleteRequest{}, fmt.Errorf("delete post %s: account %s: %w", pst.ID, tg.Account, err)
	}

	now := d.now()
	e := ledger.NewEntry(key, ledger.Delete, string(tg.Account), tg.RemoteID, time.Time{}, "", d.Owner, now, d.lease())
	e.Post = string(pst.ID)
	e.SentAt = time.Time{} // nothing sent; see the approval rule
	if err := d.Ledger.Create(ctx, e); err != nil {
		if !errors.Is(err, ledger.ErrConflict) {
			return DeleteRequest{}, fmt.Errorf("delete post %s on %s: %w", pst.ID, tg.Account, err)
		}
		// Requested concurrently: theirs stands.
		cur, gerr := d.Ledger.Get(ctx, key)
		if gerr != nil {
			return DeleteRequest{}, fmt.Errorf("delete post %s on %s: read %s: %w", pst.ID, tg.Account, key, gerr)
		}
		return DeleteRequest{Entry: cur}, nil
	}
	d.logMove(ctx, ledger.Entry{}, e)

	var next ledger.Entry
	if approved {
		next, err = e.Release(ReasonApprovedOnRequest, d.now())
	} else {
		next, err = e.Hold(ReasonAwaitingApproval, "", d.now())
	}
	if err != nil {
		return DeleteRequest{}, err
	}
	if err := d.record(ctx, e, next); err != nil {
		// The entry stays pending at attempt 1: whoever finds it holds it
		// for approval (see the approval rule); it is never sent.
		return DeleteRequest{Entry: e, New: true}, err
	}
	return DeleteRequest{Entry: next, New: true}, nil
}

// deleteTarget picks the target a delete is about: the named account's,
// or the post's only target, or its only published one.
func deleteTarget(p post.Post, account post.AccountID) (post.Target, error) {
	if account != "" {
		tg, ok := p.Target(account)
		if !ok {
			return post.Target{}, fmt.Errorf("delete post %s: it has no target on account %s: %w", p.ID, account, ErrNotPublished)
		}
		return tg, nil
	}
	if len(p.Targets) == 1 {
		return p.Targets[0], nil
	}
	var published []post.Target
	var accounts []string
	for _, tg := range p.Targets {
		accounts = append(accounts, string(tg.Account))
		if tg.Status == post.Published {
			published = append(published, tg)
		}
	}
	if len(published) == 1 {
		return published[0], nil
	}
	return post.Target{}, fmt.Errorf("delete post %s: it has targets on %s; name the account", p.ID, strings.Join(accounts, ", "))
}

// DeleteOutcome says what Deleter.Run found or did.
type DeleteOutcome string

// Outcomes of Run.
const (
	// DeleteDone: this Run saw the post gone (deleted, or already gone) and
	// confirmed the entry.
	DeleteDone DeleteOutcome = "deleted"
	// DeleteAlready: the entry was confirmed before; nothing was sent.
	DeleteAlready DeleteOutcome = "already_deleted"
	// DeleteInProgress: another worker holds the entry's lease.
	DeleteInProgress DeleteOutcome = "in_progress"
	// DeleteRetry: the platform did not act (429, unreachable) or this Run
	// sent as many DELETEs as it may; the entry is released and a later
	// Run, from RetryAfter on, sends again.
	DeleteRetry DeleteOutcome = "retry"
	// DeleteUnknown: a DELETE went out and the post could not be read back
	// gone (still visible, or unreadable); a later Run or the sweeper reads
	// again.
	DeleteUnknown DeleteOutcome = "unknown"
	// DeleteHeld: waiting for an operator (Run returns ErrNotApproved).
	DeleteHeld DeleteOutcome = "held"
	// DeleteFailed: the platform refused, or an operator rejected (Run
	// returns ErrDeleteFailed).
	DeleteFailed DeleteOutcome = "failed"
)

// DeleteResult is what one Run did.
type DeleteResult struct {
	Outcome DeleteOutcome
	// Entry is the entry as this Run last saw it.
	Entry ledger.Entry
	// Sent counts the DELETE requests this Run sent.
	Sent int
	// RetryAfter is when to run again, for DeleteRetry and DeleteInProgress.
	RetryAfter time.Duration
	// Message explains the outcome to an operator.
	Message string
}

// Run performs the approved delete key. It is safe to call any number of
// times, concurrently, and after a crash at any point: a confirmed entry
// is left alone, a failed one reported (ErrDeleteFailed), a held one
// refused (ErrNotApproved), a live lease answered "in progress"; an open
// entry is resolved by reading the platform back; a released, approved one
// is acquired, the post checked to exist (gone: confirmed, no DELETE
// sent), deleted, and read back until it is gone. When the entry is
// confirmed the post's target moves to deleted.
//
// Platform failures are outcomes; the error is non-nil for ErrNotApproved,
// ErrDeleteFailed, and a store or platform that could not be reached
// (every step is then safe to repeat).
func (d *Deleter) Run(ctx context.Context, key ledger.Key) (DeleteResult, error) {
	var res DeleteResult
	acted := false // this Run moved the entry
	for range maxDeleteSteps {
		e, err := d.Ledger.Get(ctx, key)
		if err != nil {
			return res, fmt.Errorf("delete %s: %w", key, err)
		}
		if e.Action != ledger.Delete {
			return res, fmt.Errorf("entry %s is a %s entry, not a delete", key, e.Action)
		}
		res.Entry = e
		now := d.now()
		switch e.State {
		case ledger.Confirmed:
			res.Outcome, res.Message = DeleteAlready, fmt.Sprintf("post %s was deleted from %s before", e.Subject, e.Account)
			if acted {
				res.Outcome, res.Message = DeleteDone, fmt.Sprintf("post %s is deleted from %s (%s)", e.Subject, e.Account, e.Reason)
			}
			// Also when confirmed before: the target move may not have landed.
			return res, d.markDeleted(ctx, e)
		case ledger.Failed:
			res.Outcome, res.Message = DeleteFailed, fmt.Sprintf("delete of post %s from %s failed: %s", e.Subject, e.Account, e.Reason)
			return res, fmt.Errorf("delete %s of post %s from %s: %s: %w", key, e.Subject, e.Account, e.Reason, ErrDeleteFailed)
		case ledger.Held:
			if e.Decision == "" {
				res.Outcome = DeleteHeld
				res.Message = fmt.Sprintf("held (%s); approve with `oncepost approve %s`", e.Reason, key)
				return res, fmt.Errorf("delete %s of post %s from %s is held (%s); approve it with `oncepost approve %s`: %w",
					key, e.Subject, e.Account, e.Reason, key, ErrNotApproved)
			}
			// An operator decided and Decide stopped before applying it.
			var dec Decision
			if err := json.Unmarshal([]byte(e.Decision), &dec); err != nil {
				return res, fmt.Errorf("delete %s: recorded decision %q: %w", key, e.Decision, err)
			}
			switch _, err := applyDeleteDecision(ctx, d.Ledger, e, dec, d.now(), d.log()); {
			case err == nil:
				acted = true
			case !errors.Is(err, ledger.ErrConflict):
				return res, err
			}
		case ledger.Pending, ledger.Unknown:
			if e.State == ledger.Pending && !e.LeaseExpired(now) {
				res.Outcome, res.RetryAfter = DeleteInProgress, e.LeaseUntil.Sub(now)
				res.Message = fmt.Sprintf("in progress (attempt %d, lease of %s)", e.Attempt, e.LeaseOwner)
				return res, nil
			}
			next, err := d.resolve(ctx, e, d.readBacks())
			switch {
			case errors.Is(err, ledger.ErrConflict):
				continue // moved by someone else first: look again
			case err != nil:
				res.Outcome, res.Message = DeleteUnknown, "could not read the post back: "+err.Error()
				return res, err
			}
			acted = true
			if next.State == ledger.Unknown {
				res.Entry, res.Outcome = next, DeleteUnknown
				res.Message = fmt.Sprintf("outcome unknown (%s); run again later", next.Reason)
				return res, nil
			}
		case ledger.Released:
			if now.Before(e.RetryAt) {
				res.Outcome, res.RetryAfter = DeleteRetry, e.RetryAt.Sub(now)
				res.Message = fmt.Sprintf("the platform did not act (%s); run again after %s", e.Reason, e.RetryAt.Format(time.RFC3339))
				return res, nil
			}
			if !deleteApproved(e) {
				switch err := d.holdUnapproved(ctx, e); {
				case err == nil:
					acted = true
				case !errors.Is(err, ledger.ErrConflict):
					return res, err
				}
				continue
			}
			if res.Sent >= maxDeleteSends {
				res.Outcome = DeleteRetry
				res.Message = fmt.Sprintf("sent %d DELETEs without seeing the post gone; run again", res.Sent)
				return res, nil
			}
			// A thread's later parts go first, last part first, each
			// through its own entry (deleteParts).
			if done, err := d.deleteParts(ctx, e, &res); err != nil || !done {
				return res, err
			}
			next, err := d.send(ctx, e, &res)
			if errors.Is(err, ledger.ErrConflict) {
				continue // another Run acquired it first: look again
			}
			if err != nil {
				return res, err
			}
			acted = true
			res.Entry = next
			switch {
			case next.State == ledger.Unknown && strings.HasPrefix(next.Reason, ReasonAmbiguous):
				// Resolved by reading back, on the next step.
			case next.State == ledger.Unknown:
				res.Outcome = DeleteUnknown
				res.Message = fmt.Sprintf("the platform accepted the DELETE but the post is still visible (%s); run again later", next.Reason)
				return res, nil
			case next.State == ledger.Released && next.RetryAt.IsZero():
				res.Outcome = DeleteRetry
				res.Message = fmt.Sprintf("not sent (%s); run again", next.Reason)
				return res, nil
			}
		default:
			return res, fmt.Errorf("delete %s: entry in unexpected state %q", key, e.State)
		}
	}
	return res, fmt.Errorf("delete %s: the entry kept changing; run it again", key)
}

// ResolveStale settles an open delete entry that has been open longer
// than StaleAfter (the sweeper), without ever sending: a never-sent
// entry is held for approval, any other is read back once (the platform's
// background deletion has long finished): gone → confirmed (target
// deleted), still there → released for the next Run. A pending entry with
// a live lease is returned unchanged. A failed read leaves the entry
// unknown and returns the error.
func (d *Deleter) ResolveStale(ctx context.Context, e ledger.Entry) (ledger.Entry, error) {
	if e.Action != ledger.Delete || !e.State.Open() {
		return e, fmt.Errorf("resolve %s: a %s %s entry is not an open delete", e.Key, e.State, e.Action)
	}
	return d.resolve(ctx, e, 1)
}

// deleteMaySent reports whether a DELETE may have been sent for the
// entry: only an attempt acquired to send does that (attempt ≥ 2, and the
// acquiring write set SentAt). See the approval rule.
func deleteMaySent(e ledger.Entry) bool {
	return e.Attempt >= 2 && !e.SentAt.IsZero()
}

// deleteApproved reports whether a released delete entry carries an
// approval: given on request, by an operator, or before an earlier
// attempt that was acquired to send.
func deleteApproved(e ledger.Entry) bool {
	return e.Reason == ReasonApprovedOnRequest || e.Reason == ReasonOperatorReleased || e.Reason == ReasonApprovedWithThread || deleteMaySent(e)
}

// resolve settles an open entry (pending with an expired lease, or
// unknown) without sending: a never-sent one is held for approval; any
// other is read back up to reads times: gone → confirmed, still there →
// released. It returns the entry as it left it.
func (d *Deleter) resolve(ctx context.Context, e ledger.Entry, reads int) (ledger.Entry, error) {
	now := d.now()
	if e.State == ledger.Pending && !e.LeaseExpired(now) {
		return e, nil
	}
	if !deleteMaySent(e) {
		next, err := e.Hold(ReasonAwaitingApproval, "", now)
		if err != nil {
			return e, err
		}
		return next, d.record(ctx, e, next)
	}
	if e.State == ledger.Pending {
		// The owner died mid-call: nobody knows whether its DELETE went out.
		next, err := e.ExpireLease(now)
		if err != nil {
			return e, err
		}
		if err := d.record(ctx, e, next); err != nil {
			return e, err
		}
		e = next
	}
	a, err := d.authed(ctx, e)
	if err != nil {
		return e, err
	}
	gone, there, rerr := d.readBack(ctx, a, e, reads)
	var next ledger.Entry
	switch {
	case gone:
		next, err = e.Confirm(e.Subject, d.now())
		next.Reason = ReasonGoneAfterReadBack
	case there:
		next, err = e.Release(ReasonStillThereAfterReadBack, d.now())
	default:
		return e, fmt.Errorf("resolve %s: read back post %s on %s: %w", e.Key, e.Subject, e.Account, rerr)
	}
	if err != nil {
		return e, err
	}
	if err := d.record(ctx, e, next); err != nil {
		return e, err
	}
	if next.State == ledger.Confirmed {
		return next, d.markDeleted(ctx, next)
	}
	return next, nil
}

// holdUnapproved moves a released entry that carries no approval to held
// without sending: the only move out of released is a re-acquire, which
// is written with a zero SentAt (not acquired to send), then held.
func (d *Deleter) holdUnapproved(ctx context.Context, cur ledger.Entry) error {
	acq, err := cur.Reacquire(d.Owner, d.now(), d.lease())
	if err != nil {
		return err
	}
	acq.SentAt, acq.Reason = time.Time{}, ReasonAwaitingApproval
	if err := d.record(ctx, cur, acq); err != nil {
		return err
	}
	next, err := acq.Hold(ReasonAwaitingApproval, "", d.now())
	if err != nil {
		return err
	}
	return d.record(ctx, acq, next)
}

// send acquires the approved released entry (the write that sets SentAt),
// checks the post exists, sends the DELETE and records its outcome. It
// returns the entry as recorded; ledger.ErrConflict when another worker
// acquired it first.
func (d *Deleter) send(ctx context.Context, cur ledger.Entry, res *DeleteResult) (ledger.Entry, error) {
	a, err := d.authed(ctx, cur)
	if err != nil {
		return cur, err
	}
	e, err := cur.Reacquire(d.Owner, d.now(), d.lease())
	if err != nil {
		return cur, err
	}
	if err := d.Ledger.Update(ctx, cur, e); err != nil {
		return cur, fmt.Errorf("acquire delete %s: %w", cur.Key, err)
	}
	d.logMove(ctx, cur, e)

	// 1. Is it there at all? A post already gone is confirmed without a
	// DELETE. A platform that cannot read a post back (inconclusive) gets
	// the DELETE unchecked, and its answer is the only evidence.
	var exists bool
	err = a.do(ctx, func(ctx context.Context, c platform.Client) (err error) {
		exists, err = c.Exists(ctx, e.Subject)
		return err
	})
	var inc *platform.Inconclusive
	unreadable := errors.As(err, &inc)
	switch {
	case unreadable:
	case err != nil:
		return d.recordCheckFailed(ctx, e, err)
	case !exists:
		return d.confirm(ctx, e, ReasonAlreadyGone)
	}

	// 2. The DELETE, once. The lease and the invocation must outlast it
	// and its recording.
	invocation := ctx
	err = a.do(ctx, func(ctx context.Context, c platform.Client) error {
		if err := roomToWrite(invocation, e.LeaseUntil, d.now(), d.callTimeout(), d.recordMargin()); err != nil {
			return err
		}
		res.Sent++
		return c.Delete(ctx, e.Subject)
	})

	// 3. The answer's status is data, not the truth: read back.
	var (
		rej *platform.Rejected
		np  *platform.NotPerformed
		ua  *platform.Unauthorized
	)
	var amb *platform.Ambiguous
	switch {
	case err == nil && unreadable:
		return d.confirm(ctx, e, ReasonDeletedUnverified)
	case unreadable && (errors.As(err, &amb) || !isClassified(err)):
		reason := ReasonDeleteUnknownUnreadable + ": " + err.Error()
		return d.moveTo(ctx, e, func(now time.Time) (ledger.Entry, error) { return e.Hold(reason, "", now) })
	case err == nil:
		gone, _, rerr := d.readBack(ctx, a, e, d.readBacks())
		if gone {
			return d.confirm(ctx, e, ReasonDeleted)
		}
		reason := ReasonDeletedButStillVisible
		if rerr != nil {
			reason += ": read back failed: " + rerr.Error()
		}
		return d.moveTo(ctx, e, func(now time.Time) (ledger.Entry, error) { return e.MarkUnknown(reason, now) })
	case errors.Is(err, errLeaseTooShort):
		return d.moveTo(ctx, e, func(now time.Time) (ledger.Entry, error) { return e.Release(ReasonLeaseTooShort, now) })
	case errors.Is(err, errNoTimeToWrite):
		return d.moveTo(ctx, e, func(now time.Time) (ledger.Entry, error) {
			return e.Postpone(ReasonNoTimeToSend, now.Add(NoTimeRetry), now)
		})
	case errors.As(err, &rej) && rej.Reason == rejectedNotFound:
		// 404: not found, or not ours. Only a read back says which.
		gone, there, rerr := d.readBack(ctx, a, e, d.readBacks())
		switch {
		case gone:
			return d.confirm(ctx, e, ReasonAlreadyGone)
		case there:
			reason := fmt.Sprintf("%s: 404 but the post is still there: %s", ReasonNotFoundButStillThere, rej.Message)
			return d.fail(ctx, e, reason)
		default:
			reason := fmt.Sprintf("%s: 404, read back failed: %v", ReasonAmbiguous, rerr)
			return d.moveTo(ctx, e, func(now time.Time) (ledger.Entry, error) { return e.MarkUnknown(reason, now) })
		}
	case errors.As(err, &rej) && rej.Reason == ReasonReconnectNeeded:
		// The account, not the delete, is at fault: an operator approves
		// it again once the account is reconnected.
		reason := rej.Reason + ": " + rej.Message
		return d.moveTo(ctx, e, func(now time.Time) (ledger.Entry, error) { return e.Hold(reason, "", now) })
	case errors.As(err, &rej):
		reason := rej.Reason
		if rej.Message != "" {
			reason += ": " + rej.Message
		}
		return d.fail(ctx, e, reason)
	case errors.As(err, &np):
		if np.Status == http.StatusTooManyRequests {
			emitCount(ctx, d.Metrics, d.log(), MetricThrottled)
		}
		return d.deferEntry(ctx, e, err.Error(), np.RetryAfter)
	case errors.As(err, &ua):
		reason := ReasonReconnectNeeded + ": " + ua.Message
		return d.moveTo(ctx, e, func(now time.Time) (ledger.Entry, error) { return e.Hold(reason, "", now) })
	default:
		// Ambiguous (timeout after writing, reset, 5xx), or anything not
		// classified: it may have been deleted. Recorded first, then read back.
		reason := ReasonAmbiguous + ": " + err.Error()
		return d.moveTo(ctx, e, func(now time.Time) (ledger.Entry, error) { return e.MarkUnknown(reason, now) })
	}
}

// isClassified reports whether err is one of the platform's error classes
// other than Ambiguous (an unclassified error counts as ambiguous).
func isClassified(err error) bool {
	var (
		rej *platform.Rejected
		np  *platform.NotPerformed
		ua  *platform.Unauthorized
	)
	return errors.As(err, &rej) || errors.As(err, &np) || errors.As(err, &ua) || errors.Is(err, errLeaseTooShort) || errors.Is(err, errNoTimeToWrite)
}

// recordCheckFailed records a failed exists check: no DELETE was sent.
// A refused credential holds; another refusal holds for an operator; a
// read that did not work releases the entry with a backoff (its approval
// stands). A failed read is never "gone".
func (d *Deleter) recordCheckFailed(ctx context.Context, e ledger.Entry, err error) (ledger.Entry, error) {
	var rej *platform.Rejected
	if errors.As(err, &rej) {
		reason := ReasonExistsCheckRefused + ": " + rej.Reason + ": " + rej.Message
		if rej.Reason == ReasonReconnectNeeded {
			reason = rej.Reason + ": " + rej.Message
		}
		return d.moveTo(ctx, e, func(now time.Time) (ledger.Entry, error) { return e.Hold(reason, "", now) })
	}
	var np *platform.NotPerformed
	var wait time.Duration
	if errors.As(err, &np) {
		wait = np.RetryAfter
	}
	return d.deferEntry(ctx, e, "exists check: "+err.Error(), wait)
}

// deferEntry releases the acquired entry until the platform's Retry-After
// (or a backoff): it did not act.
func (d *Deleter) deferEntry(ctx context.Context, e ledger.Entry, reason string, retryAfter time.Duration) (ledger.Entry, error) {
	return d.moveTo(ctx, e, func(now time.Time) (ledger.Entry, error) {
		return e.Defer(reason, now.Add(max(retryAfter, Backoff(e.Attempt, 0, jitter))), now)
	})
}

// confirm records the post gone. Run moves its target to deleted when it
// next reads the entry confirmed.
func (d *Deleter) confirm(ctx context.Context, e ledger.Entry, reason string) (ledger.Entry, error) {
	return d.moveTo(ctx, e, func(now time.Time) (ledger.Entry, error) {
		n, err := e.Confirm(e.Subject, now)
		n.Reason = reason
		return n, err
	})
}

// fail records a refusal for good: the post is not deleted.
func (d *Deleter) fail(ctx context.Context, e ledger.Entry, reason string) (ledger.Entry, error) {
	return d.moveTo(ctx, e, func(now time.Time) (ledger.Entry, error) { return e.Fail(reason, now) })
}

// moveTo records the move that mk computes from the acquired entry.
func (d *Deleter) moveTo(ctx context.Context, e ledger.Entry, mk func(time.Time) (ledger.Entry, error)) (ledger.Entry, error) {
	next, err := mk(d.now())
	if err != nil {
		return e, err
	}
	if err := d.record(ctx, e, next); err != nil {
		return e, err
	}
	return next, nil
}

// record writes prev → next under a context that survives the caller's
// cancellation for RecordMargin (an unrecorded outcome is left to lease
// expiry: safe but slow), logs the move and emits its metrics.
func (d *Deleter) record(ctx context.Context, prev, next ledger.Entry) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.recordMargin())
	defer cancel()
	if err := d.Ledger.Update(rctx, prev, next); err != nil {
		return fmt.Errorf("record delete %s %s → %s: %w", prev.Key, prev.State, next.State, err)
	}
	d.logMove(ctx, prev, next)
	switch next.State {
	case ledger.Confirmed:
		emitCount(ctx, d.Metrics, d.log(), MetricDeleted)
	case ledger.Failed:
		emitCount(ctx, d.Metrics, d.log(), MetricDeleteFailed)
	}
	return nil
}

// logMove writes the one log line of a delete entry's move. It never
// carries tokens.
func (d *Deleter) logMove(ctx context.Context, prev, next ledger.Entry) {
	logDeleteMove(ctx, d.log(), prev, next)
}

func logDeleteMove(ctx context.Context, log *slog.Logger, prev, next ledger.Entry) {
	lvl := slog.LevelInfo
	switch next.State {
	case ledger.Failed, ledger.Unknown, ledger.Held:
		lvl = slog.LevelWarn
	}
	log.Log(ctx, lvl, "delete recorded", "key", next.Key, "post", next.Post, "account", next.Account, "remote_id", next.Subject,
		"attempt", next.Attempt, "from", prev.State, "state", next.State, "reason", next.Reason)
}

// readBack reads the post up to n times, ReadBackWait apart, until a read
// says it is gone. there is true when a read succeeded and saw it; err is
// the last failed read's error. A failed read is never "gone". An acquired
// (pending) entry stops reading before its lease runs short.
func (d *Deleter) readBack(ctx context.Context, a *authedClient, e ledger.Entry, n int) (gone, there bool, err error) {
	for i := range n {
		if i > 0 {
			if e.State == ledger.Pending && e.LeaseUntil.Sub(d.now()) < d.readBackWait()+d.callTimeout()+d.recordMargin() {
				break
			}
			if serr := sleep(ctx, d.readBackWait()); serr != nil {
				if err == nil && !there {
					err = serr
				}
				break
			}
		}
		var exists bool
		rerr := a.do(ctx, func(ctx context.Context, c platform.Client) (err error) {
			exists, err = c.Exists(ctx, e.Subject)
			return err
		})
		switch {
		case rerr != nil:
			err = rerr
		case !exists:
			return true, false, nil
		default:
			there = true
		}
	}
	return false, there, err
}

// authed returns a platform client for the entry's account that refreshes
// its credential on a 401.
func (d *Deleter) authed(ctx context.Context, e ledger.Entry) (*authedClient, error) {
	acc, err := d.Accounts.GetAccount(ctx, post.AccountID(e.Account))
	if err != nil {
		return nil, fmt.Errorf("delete %s: account %s: %w", e.Key, e.Account, err)
	}
	a, err := newAuthed(ctx, d.credentials(), d.Platforms, acc, d.callContext)
	if err != nil {
		return nil, fmt.Errorf("delete %s: %w", e.Key, err)
	}
	return a, nil
}

// markDeleted moves the post's target from published to deleted. A
// target already deleted is fine; one in another status is left alone
// with a warning (the ledger holds the truth).
func (d *Deleter) markDeleted(ctx context.Context, e ledger.Entry) error {
	id, part := ledger.SubjectPart(e.Post)
	if part > 1 {
		// A thread's later part: the target goes with part 1, deleted last.
		return nil
	}
	postID := post.ID(id)
	if postID == "" {
		d.log().WarnContext(ctx, "delete entry names no post; no target to mark deleted", "key", e.Key, "remote_id", e.Subject)
		return nil
	}
	acc := post.AccountID(e.Account)
	_, err := d.Posts.UpdateTarget(ctx, postID, acc, post.TargetUpdate{Status: post.Deleted, From: []post.TargetStatus{post.Published}, At: d.now()})
	switch {
	case err == nil:
		d.log().InfoContext(ctx, "target deleted", "key", e.Key, "post", postID, "account", acc, "remote_id", e.Subject)
		return nil
	case errors.Is(err, post.ErrNotFound):
		d.log().WarnContext(ctx, "post of a confirmed delete is gone from the store", "key", e.Key, "post", postID)
		return nil
	case !errors.Is(err, post.ErrConflict):
		return fmt.Errorf("target %s/%s → deleted: %w", postID, acc, err)
	}
	cur, gerr := d.Posts.GetPost(ctx, postID)
	if gerr != nil {
		return fmt.Errorf("target %s/%s → deleted: %w", postID, acc, gerr)
	}
	if tg, ok := cur.Target(acc); ok && tg.Status != post.Deleted {
		d.log().WarnContext(ctx, "target of a confirmed delete not marked deleted", "key", e.Key, "post", postID, "account", acc, "status", tg.Status)
	}
	return nil
}

// applyDeleteDecision applies an operator's decision on a held delete
// entry directly (no workflow waits on delete entries): release → released
// (released_by_operator: the approval Run sends on), reject → failed
// (rejected_by_operator, never sent).
func applyDeleteDecision(ctx context.Context, l Ledger, e ledger.Entry, dec Decision, now time.Time, log *slog.Logger) (ledger.Entry, error) {
	var (
		next ledger.Entry
		err  error
	)
	switch dec.Action {
	case DecisionRelease:
		next, err = e.Release(ReasonOperatorReleased, now)
	case DecisionReject:
		reason := ReasonOperatorRejected
		if dec.Reason != "" {
			reason += ": " + dec.Reason
		}
		next, err = e.Fail(reason, now)
	default:
		return e, fmt.Errorf("delete %s: decision %q: %w", e.Key, dec.Action, ErrDeleteNotConfirmable)
	}
	if err != nil {
		return e, err
	}
	if err := l.Update(ctx, e, next); err != nil {
		return e, fmt.Errorf("apply decision %s on delete %s: %w", dec.Action, e.Key, err)
	}
	logDeleteMove(ctx, log, e, next)
	return next, nil
}

// applyDelete answers a decision on a held delete entry: it is applied to
// the ledger at once. Run (`oncepost approve KEY` calls it next) sends an
// approved delete.
func (o *Operator) applyDelete(ctx context.Context, e ledger.Entry, d Decision) (DecideResult, error) {
	next, err := applyDeleteDecision(ctx, o.Ledger, e, d, o.now(), o.log())
	if err != nil {
		return DecideResult{Entry: e}, err
	}
	msg := "delete approved: the entry is released; running the delete sends it"
	if next.State == ledger.Failed {
		msg = "delete rejected: the entry is failed and nothing is sent"
	}
	return DecideResult{How: DecisionApplied, Entry: next, Message: msg}, nil
}
