package publishing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// Operator decisions on a held entry, as the confirm workflow's Hold task
// receives them ({"decision": …}).
const (
	// DecisionRelease re-sends the post with the same handle (approve).
	DecisionRelease = "release"
	// DecisionConfirm records that the post is on the platform.
	DecisionConfirm = "confirm"
	// DecisionReject fails the post: it must not go out.
	DecisionReject = "reject"
)

// MaxDecisionReasonBytes bounds an operator's reason.
const MaxDecisionReasonBytes = 500

// Decision is an operator's answer to a held entry.
type Decision struct {
	Action string `json:"decision"`
	// RemoteID is the post's id on the platform (confirm).
	RemoteID string `json:"remote_id,omitempty"`
	// Reason says why (reject).
	Reason string `json:"reason,omitempty"`
}

// How a decision was handled.
const (
	// DecisionDelivered: the waiting confirm workflow got it through its
	// task token; it applies it (at once, or when the runtime runs next).
	DecisionDelivered = "delivered"
	// DecisionApplied: no workflow waited (a hold by pre-publish dedup, a
	// stopped workflow); the ledger was moved directly.
	DecisionApplied = "applied"
	// DecisionAlready: the same decision was taken before; nothing was done.
	DecisionAlready = "already_decided"
)

// ErrNotHeld is returned for an entry that is not waiting for an operator.
var ErrNotHeld = errors.New("entry is not held for an operator")

// ErrRemoteNotFound is returned by a confirm whose remote id the
// account does not have on the platform.
var ErrRemoteNotFound = errors.New("no such post on the platform")

// ErrDecidedOtherwise is returned when another decision was taken first.
var ErrDecidedOtherwise = errors.New("entry was already decided otherwise")

// DecideResult says what Decide did.
type DecideResult struct {
	How   string
	Entry ledger.Entry
	// Message explains the result to the operator.
	Message string
}

// Operator applies operators' decisions on held entries. A decision is
// first recorded on the entry (held → held), then delivered to the
// workflow task that waits for it, through the latest task token the
// entry holds; if no task waits on it, the decision is applied to the
// ledger directly (the confirm steps are idempotent, and a Hold step that
// runs later finds the entry settled and answers itself). A recorded
// decision always converges: deciding the same again, or the sweeper once
// the workflow has had its time (Converge), delivers it to a task still
// waiting or applies it. Deciding otherwise after a decision is refused.
//
// A delete entry (held for approval by Deleter.Request) has no workflow:
// release and reject are applied to it directly (released_by_operator,
// the approval Deleter.Run sends on; rejected_by_operator, never sent),
// and confirm is refused (ErrDeleteNotConfirmable).
type Operator struct {
	Ledger Ledger
	// Confirmer applies a decision no workflow waits for; its Platforms and
	// Accounts check that a confirmed remote id exists. Decisions on
	// delete entries do not use it.
	Confirmer *Confirmer
	Tasks     Tasks
	Now       func() time.Time
	Logger    *slog.Logger
}

func (o *Operator) now() time.Time { return nowFrom(o.Now) }

func (o *Operator) log() *slog.Logger { return loggerOr(o.Logger) }

// Decide applies d to the held entry key.
func (o *Operator) Decide(ctx context.Context, key ledger.Key, d Decision) (DecideResult, error) {
	if err := d.Validate(); err != nil {
		return DecideResult{}, fmt.Errorf("decide %s: %w", key, err)
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return DecideResult{}, fmt.Errorf("encode decision: %w", err)
	}
	for range 5 {
		e, err := o.Ledger.Get(ctx, key)
		if err != nil {
			return DecideResult{}, fmt.Errorf("decide %s: %w", key, err)
		}
		if e.Action == ledger.Delete && d.Action == DecisionConfirm {
			return DecideResult{Entry: e}, fmt.Errorf("decide %s: %w", key, ErrDeleteNotConfirmable)
		}
		if e.State != ledger.Held {
			return settled(e, d)
		}
		if e.Decision != "" {
			return o.decidedBefore(ctx, e, d)
		}
		if d.Action == DecisionConfirm {
			if err := o.checkExists(ctx, e, d.RemoteID); err != nil {
				return DecideResult{}, err
			}
		}
		next, err := e.WithDecision(string(raw), o.now())
		if err != nil {
			return DecideResult{}, err
		}
		if err := o.Ledger.Update(ctx, e, next); err != nil {
			if errors.Is(err, ledger.ErrConflict) {
				continue // someone moved it first: look again
			}
			return DecideResult{}, fmt.Errorf("record decision on %s: %w", key, err)
		}
		o.log().InfoContext(ctx, "operator decision recorded", "key", key, "attempt", e.Attempt, "decision", d.Action)
		return o.deliver(ctx, next, d, raw)
	}
	return DecideResult{}, fmt.Errorf("decide %s: the entry kept changing; try again", key)
}

// Validate checks a decision before anything is read: the action is
// one of the three, confirm carries a remote id and the others none, and
// the remote id and the reason are within MaxIDBytes and
// MaxDecisionReasonBytes. A refusal is a *post.FieldError naming the
// field as the API's body does (decision, remote_id, reason); Decide
// calls it, and the surfaces call it to answer in their own words
// before reaching Decide.
func (d Decision) Validate() error {
	switch d.Action {
	case DecisionRelease, DecisionReject:
		if d.RemoteID != "" {
			return &post.FieldError{Field: "remote_id", Problem: "is only for confirm", Fix: "leave it out to " + d.Action}
		}
	case DecisionConfirm:
		if d.RemoteID == "" {
			return &post.FieldError{Field: "remote_id", Problem: "is missing", Fix: "give the id of the post on the platform"}
		}
	default:
		return &post.FieldError{Field: "decision", Problem: strconv.Quote(d.Action) + " is not release, confirm or reject"}
	}
	if len(d.RemoteID) > MaxIDBytes {
		return &post.FieldError{Field: "remote_id", Problem: "is over " + strconv.Itoa(MaxIDBytes) + " bytes", Fix: "give the id of the post on the platform"}
	}
	if len(d.Reason) > MaxDecisionReasonBytes {
		return &post.FieldError{Field: "reason", Problem: "is over " + strconv.Itoa(MaxDecisionReasonBytes) + " bytes", Fix: "say it shorter"}
	}
	return nil
}

// settled answers a decision on an entry that is no longer held.
func settled(e ledger.Entry, d Decision) (DecideResult, error) {
	same := map[string][]ledger.State{
		DecisionRelease: {ledger.Released, ledger.Pending, ledger.Confirmed},
		DecisionConfirm: {ledger.Confirmed},
		DecisionReject:  {ledger.Failed},
	}[d.Action]
	for _, s := range same {
		if e.State == s && (d.Action != DecisionConfirm || e.RemoteID == d.RemoteID) {
			return DecideResult{How: DecisionAlready, Entry: e, Message: fmt.Sprintf("already decided: the entry is %s", e.State)}, nil
		}
	}
	switch e.State {
	case ledger.Pending, ledger.Unknown:
		if e.Action == ledger.Delete {
			return DecideResult{Entry: e}, fmt.Errorf("delete %s is %s (%s): %w; running the delete reads the post back and settles it", e.Key, e.State, e.Reason, ErrNotHeld)
		}
		return DecideResult{Entry: e}, fmt.Errorf("entry %s is %s (%s): %w; it is held once its confirm workflow gives up", e.Key, e.State, e.Reason, ErrNotHeld)
	default:
		return DecideResult{Entry: e}, fmt.Errorf("entry %s is %s (%s): %w", e.Key, e.State, e.Reason, ErrDecidedOtherwise)
	}
}

// decidedBefore answers a decision on an entry that carries one already:
// the same decision is made to converge (Converge), another is refused.
func (o *Operator) decidedBefore(ctx context.Context, e ledger.Entry, d Decision) (DecideResult, error) {
	var prev Decision
	if err := json.Unmarshal([]byte(e.Decision), &prev); err != nil || prev.Action != d.Action || prev.RemoteID != d.RemoteID {
		return DecideResult{Entry: e}, fmt.Errorf("entry %s: decision %s recorded first: %w", e.Key, e.Decision, ErrDecidedOtherwise)
	}
	return o.Converge(ctx, e)
}

// Converge makes the decision recorded on a held entry take effect, when
// its first delivery did not: the task still waiting on the entry's token
// gets it (the delivery had failed); if no task waits — the workflow took
// it and then failed (its store retries spent, a function timeout,
// Lambda.Unknown), timed out, or was never there — it is applied to the
// ledger directly. The confirm steps are conditional writes, so applying
// while a slow workflow applies it too is safe: one of them moves the
// entry, the other finds it moved. A second `approve` and the sweeper call
// it; an entry without a recorded decision is refused with ErrNotHeld.
func (o *Operator) Converge(ctx context.Context, e ledger.Entry) (DecideResult, error) {
	var d Decision
	if e.State != ledger.Held || e.Decision == "" || json.Unmarshal([]byte(e.Decision), &d) != nil {
		return DecideResult{Entry: e}, fmt.Errorf("entry %s is %s without a readable decision: %w", e.Key, e.State, ErrNotHeld)
	}
	if e.Action == ledger.Delete {
		// Recorded, not applied (Decide stopped in between): apply it now.
		return o.applyDelete(ctx, e, d)
	}
	if e.TaskToken != "" && o.Tasks != nil {
		err := o.Tasks.SendTaskSuccess(ctx, e.TaskToken, json.RawMessage(e.Decision))
		switch {
		case err == nil:
			return DecideResult{How: DecisionDelivered, Entry: e, Message: "decision delivered to the waiting confirm workflow"}, nil
		case !errors.Is(err, ErrTaskNotWaiting):
			return DecideResult{Entry: e}, fmt.Errorf("decision recorded on %s, not delivered (%w); run the command again", e.Key, err)
		}
	}
	return o.apply(ctx, e, d)
}

// apply moves the held entry as the decision says, without the workflow
// (the confirm steps Release, Confirm, Reject). Lost to a workflow that
// applied it at the same time, it reports the entry as decided.
func (o *Operator) apply(ctx context.Context, e ledger.Entry, d Decision) (DecideResult, error) {
	in := ConfirmInput{Key: e.Key, Attempt: e.Attempt}
	var err error
	switch d.Action {
	case DecisionRelease:
		err = o.Confirmer.Release(ctx, in)
	case DecisionConfirm:
		err = o.Confirmer.Confirm(ctx, in, d.RemoteID)
	case DecisionReject:
		err = o.Confirmer.Reject(ctx, in, "")
	}
	cur, gerr := o.Ledger.Get(ctx, e.Key)
	if gerr != nil {
		return DecideResult{Entry: e}, fmt.Errorf("decide %s: %w", e.Key, errors.Join(err, gerr))
	}
	if err != nil {
		if errors.Is(err, ledger.ErrConflict) && cur.State != ledger.Held {
			if res, serr := settled(cur, d); serr == nil {
				return res, nil
			}
		}
		return DecideResult{Entry: cur}, fmt.Errorf("apply decision on %s: %w", e.Key, err)
	}
	o.log().InfoContext(ctx, "operator decision applied without the workflow", "key", e.Key, "attempt", e.Attempt, "decision", d.Action, "state", cur.State)
	return DecideResult{How: DecisionApplied, Entry: cur, Message: fmt.Sprintf("no workflow waited; decision applied: the entry is %s", cur.State)}, nil
}

// deliver hands the recorded decision to the task waiting on the entry's
// latest token, or applies it directly when none waits.
func (o *Operator) deliver(ctx context.Context, e ledger.Entry, d Decision, raw []byte) (DecideResult, error) {
	if e.Action == ledger.Delete {
		// No workflow waits on a delete entry: applied directly.
		return o.applyDelete(ctx, e, d)
	}
	if e.TaskToken != "" && o.Tasks != nil {
		err := o.Tasks.SendTaskSuccess(ctx, e.TaskToken, raw)
		switch {
		case err == nil:
			return DecideResult{How: DecisionDelivered, Entry: e, Message: "decision delivered to the waiting confirm workflow; it is applied at once if the runtime runs, else when it runs next"}, nil
		case !errors.Is(err, ErrTaskNotWaiting):
			return DecideResult{Entry: e}, fmt.Errorf("decision recorded on %s but not delivered (%w); run the command again", e.Key, err)
		}
	}
	return o.apply(ctx, e, d)
}

// checkExists refuses to confirm a remote id the platform does not have.
func (o *Operator) checkExists(ctx context.Context, e ledger.Entry, remoteID string) error {
	c := o.Confirmer
	if c == nil || c.Platforms == nil || c.Accounts == nil {
		return nil
	}
	acc, err := c.Accounts.GetAccount(ctx, post.AccountID(e.Account))
	if err != nil {
		return fmt.Errorf("confirm %s: account: %w", e.Key, err)
	}
	a, err := newAuthed(ctx, c.credentials(), c.Platforms, acc, c.callContext)
	if err != nil {
		return fmt.Errorf("confirm %s: %w", e.Key, err)
	}
	var exists bool
	err = a.do(ctx, func(ctx context.Context, cl platform.Client) (err error) {
		exists, err = cl.Exists(ctx, remoteID)
		return err
	})
	if err != nil {
		return fmt.Errorf("confirm %s: could not check remote id %s on %s: %w", e.Key, remoteID, acc.ID, err)
	}
	if !exists {
		return fmt.Errorf("confirm %s: account %s has no post %s on the platform; check the id: %w", e.Key, acc.ID, remoteID, ErrRemoteNotFound)
	}
	return nil
}
