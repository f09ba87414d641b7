package ledger

import (
	"fmt"
	"time"
)

// Reasons recorded on entries by the ledger itself.
const (
	ReasonLeaseExpired = "lease_expired"
)

// NewEntry is the first write of an action: pending, attempt 1, a fresh
// platform handle, and a lease for owner until now+lease.
func NewEntry(key Key, action Action, account, subject string, slot time.Time, fingerprint, owner string, now time.Time, lease time.Duration) Entry {
	now = now.UTC()
	return Entry{
		Key: key, Action: action, Account: account, Subject: subject, Slot: slot.UTC(),
		State: Pending, Attempt: 1, Handle: NewHandle(), Fingerprint: fingerprint,
		LeaseOwner: owner, LeaseUntil: now.Add(lease), OpenSince: now, SentAt: now, UpdatedAt: now,
	}
}

// move returns e in state to, or ErrTransition. It keeps OpenSince while
// the entry stays open, sets it when it becomes open, clears it when it
// closes, and sets the TTL of terminal entries.
func (e Entry) move(to State, now time.Time) (Entry, error) {
	if !Allowed(e.State, to) {
		return e, fmt.Errorf("entry %s: %s → %s: %w", e.Key, stateName(e.State), to, ErrTransition)
	}
	now = now.UTC()
	wasOpen := e.State.Open()
	e.State = to
	e.UpdatedAt = now
	switch {
	case to.Open() && !wasOpen:
		e.OpenSince = now
	case !to.Open():
		e.OpenSince = time.Time{}
	}
	if to != Pending {
		e.LeaseOwner, e.LeaseUntil = "", time.Time{}
	}
	if to != Held {
		e.TaskToken, e.Decision = "", ""
	}
	if to != Released {
		e.RetryAt = time.Time{}
	}
	if to.Terminal() {
		e.ExpiresAt = now.Add(TerminalTTL)
	}
	return e, nil
}

// Reacquire is released → pending: the next attempt, same handle, a new lease.
func (e Entry) Reacquire(owner string, now time.Time, lease time.Duration) (Entry, error) {
	n, err := e.move(Pending, now)
	if err != nil {
		return e, err
	}
	n.Attempt++
	n.LeaseOwner, n.LeaseUntil = owner, now.UTC().Add(lease)
	n.SentAt = now.UTC()
	n.Reason, n.RemoteID = "", ""
	return n, nil
}

// Defer records that the platform certainly did not act and may be asked
// again from retryAt on (pending → released). It starts, or continues, the
// entry's run of deferrals (DeferredSince); the attempt budget is not spent.
func (e Entry) Defer(reason string, retryAt, now time.Time) (Entry, error) {
	n, err := e.Release(reason, now)
	if err != nil {
		return e, err
	}
	n.RetryAt = retryAt.UTC()
	if n.DeferredSince.IsZero() {
		n.DeferredSince = now.UTC()
	}
	return n, nil
}

// Postpone records that this attempt was not sent for a reason of ours
// (the account's posting budget, too little time left to send) and may be
// sent from retryAt on: pending → released. Unlike Defer it neither
// starts nor continues a run of deferrals: waiting for our own budget or
// time never fails a post as throttled.
func (e Entry) Postpone(reason string, retryAt, now time.Time) (Entry, error) {
	n, err := e.Release(reason, now)
	if err != nil {
		return e, err
	}
	n.RetryAt = retryAt.UTC()
	return n, nil
}

// Confirm records the platform's id: pending, unknown or held → confirmed.
func (e Entry) Confirm(remoteID string, now time.Time) (Entry, error) {
	if remoteID == "" {
		return e, fmt.Errorf("entry %s: confirm without a remote id: %w", e.Key, ErrTransition)
	}
	n, err := e.move(Confirmed, now)
	n.RemoteID = remoteID
	return n, err
}

// Release records that the platform certainly did not act (or an operator
// approved a re-send): pending, unknown or held → released.
func (e Entry) Release(reason string, now time.Time) (Entry, error) {
	n, err := e.move(Released, now)
	n.Reason = reason
	return n, err
}

// Fail records a definite refusal: pending or held → failed.
func (e Entry) Fail(reason string, now time.Time) (Entry, error) {
	n, err := e.move(Failed, now)
	n.Reason = reason
	return n, err
}

// MarkUnknown records an ambiguous outcome: pending → unknown. The call
// may have reached the platform, so it spends one of the attempt budget
// (MaybeSent) and ends any run of deferrals.
func (e Entry) MarkUnknown(reason string, now time.Time) (Entry, error) {
	n, err := e.move(Unknown, now)
	if err != nil {
		return e, err
	}
	n.Reason = reason
	n.MaybeSent++
	n.DeferredSince = time.Time{}
	return n, nil
}

// Hold hands the entry to an operator: pending or unknown → held. remoteID
// is what dedup found, if anything.
func (e Entry) Hold(reason, remoteID string, now time.Time) (Entry, error) {
	n, err := e.move(Held, now)
	n.Reason = reason
	if remoteID != "" {
		n.RemoteID = remoteID
	}
	return n, err
}

// Retoken records the workflow's newer task token on a held entry (held →
// held): a Hold step retried by the workflow waits on a new token, and an
// operator's decision must reach that one.
func (e Entry) Retoken(token string, now time.Time) (Entry, error) {
	if e.State != Held {
		return e, fmt.Errorf("entry %s: retoken while %s: %w", e.Key, stateName(e.State), ErrTransition)
	}
	n, err := e.move(Held, now)
	n.TaskToken = token
	return n, err
}

// WithDecision records an operator's decision on a held entry (held →
// held) before it is delivered: decision is the JSON the waiting workflow
// completes with. A second decision is refused with ErrTransition.
func (e Entry) WithDecision(decision string, now time.Time) (Entry, error) {
	switch {
	case e.State != Held:
		return e, fmt.Errorf("entry %s: decision while %s: %w", e.Key, stateName(e.State), ErrTransition)
	case e.Decision != "":
		return e, fmt.Errorf("entry %s: already decided: %w", e.Key, ErrTransition)
	case decision == "":
		return e, fmt.Errorf("entry %s: empty decision: %w", e.Key, ErrTransition)
	}
	n, err := e.move(Held, now)
	n.Decision = decision
	return n, err
}

// LeaseExpired reports whether a pending entry's owner has run out of time:
// it died mid-call or is too slow to trust.
func (e Entry) LeaseExpired(now time.Time) bool {
	return e.State == Pending && !now.Before(e.LeaseUntil)
}

// ExpireLease is pending with an expired lease → unknown: nobody knows
// whether the dead owner's call reached the platform.
func (e Entry) ExpireLease(now time.Time) (Entry, error) {
	if !e.LeaseExpired(now) {
		return e, fmt.Errorf("entry %s: lease held until %s: %w", e.Key, e.LeaseUntil.Format(time.RFC3339Nano), ErrTransition)
	}
	return e.MarkUnknown(ReasonLeaseExpired, now)
}

// Decision is what an acquirer must do with an existing entry.
type Decision string

// Decisions; see Decide.
const (
	// DecideSend: the entry is released, re-acquire it and send.
	DecideSend Decision = "send"
	// DecideReuse: confirmed, reuse its receipt; never send.
	DecideReuse Decision = "reuse"
	// DecideConfirm: unknown, make sure its confirm workflow runs.
	DecideConfirm Decision = "confirm"
	// DecideExpire: pending with a dead owner, move it to unknown and confirm.
	DecideExpire Decision = "expire"
	// DecideWait: pending with a live lease, someone else is sending; back off.
	DecideWait Decision = "wait"
	// DecideStop: failed or held, nothing to do without an operator.
	DecideStop Decision = "stop"
)

// Decide says what acquiring an existing entry means (DESIGN §3: acquire on
// an existing row never sends, except a released one).
func Decide(e Entry, now time.Time) Decision {
	switch e.State {
	case Released:
		return DecideSend
	case Confirmed:
		return DecideReuse
	case Unknown:
		return DecideConfirm
	case Pending:
		if e.LeaseExpired(now) {
			return DecideExpire
		}
		return DecideWait
	default:
		return DecideStop
	}
}
