package publishing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"oncepost/shared/post"
)

// Approval: a post to an account that requires approval (post.Account's
// RequireApproval), or any post when the workspace requires it
// (ApprovalPolicy.Required), is created with those targets in
// needs_approval: nothing is scheduled for them, and nothing triggers or
// sends them. Someone with the decide scope approves the post (Desk.Approve:
// one conditional write from needs_approval, then its schedule) or rejects
// it (Desk.Reject: cancelled, with the reason). A slot that passed while
// the post waited is never sent late: approving it needs a new time. A
// target still waiting after its slot is counted by the gauges
// (ApprovalOverdue) and alarms, and ListApprovals is the queue the
// surfaces show.

// ApprovalPolicy is the workspace's approval rule. The zero policy (none
// stored) requires nothing: only accounts that require approval do.
type ApprovalPolicy struct {
	// Required: every post waits for approval, whatever its accounts.
	Required bool `json:"required"`
	// NoSelfApproval: a post's author (post.Post.Author) may not approve
	// it; someone else must.
	NoSelfApproval bool `json:"no_self_approval"`
}

// ApprovalMove is one conditional write on a target that waits for
// approval (Approvals.MoveApproval).
type ApprovalMove struct {
	// Read is the target's slot as the caller read it: the write is
	// refused if the target moved to another time since.
	Read time.Time
	// Slot is the target's slot after the write: Read, or a new time.
	Slot time.Time
	// Status is the target's status after the write: post.Scheduled (it
	// is approved) or post.NeedsApproval (only moved to Slot, still
	// waiting).
	Status post.TargetStatus
	// Reason is the target's reason after the write (who approved it).
	Reason string
	At     time.Time
}

// Approvals is the store side of approval; both stores implement it, and
// every adapter passes publishingtest.TestApprovals.
type Approvals interface {
	// ApprovalPolicy reads the workspace's policy: the zero policy when
	// none was stored.
	ApprovalPolicy(ctx context.Context) (ApprovalPolicy, error)
	// PutApprovalPolicy stores the workspace's policy, replacing the one
	// stored.
	PutApprovalPolicy(ctx context.Context, p ApprovalPolicy) error
	// MoveApproval writes m over one target in one conditional write: the
	// stored target must be in needs_approval at m.Read, else the error
	// wraps post.ErrConflict (and says what the target is now);
	// post.ErrNotFound for a post or target that does not exist. The
	// target gets m's status, slot, reason and time (next try cleared).
	// Moving it to scheduled does not make its schedule: the caller then
	// tells the scheduler (ApprovalScheduler.Approved). It returns the
	// target after the write.
	MoveApproval(ctx context.Context, id post.ID, account post.AccountID, m ApprovalMove) (post.Target, error)
	// AwaitingApproval lists up to limit targets in needs_approval whose
	// slot is before before (any slot when before is zero), earliest slot
	// first, ties by post id and account. Its cost follows the targets
	// waiting for approval, never the others. A limit ≤ 0 means no limit.
	AwaitingApproval(ctx context.Context, before time.Time, limit int) ([]TargetRef, error)
}

// ApprovalScheduler is a PostScheduler that can schedule an approved
// target: both runtimes' schedulers implement it.
type ApprovalScheduler interface {
	// Approved makes sure the target, just moved from needs_approval to
	// scheduled at ref.Slot, is triggered then (the embedded runtime: its
	// at() schedule; AWS: its slot's schedule, or a job now when the slot
	// is too near). Calling it again for the same target is harmless.
	Approved(ctx context.Context, ref TargetRef) error
}

// ErrSelfApproval is returned (wrapped) by Desk.Approve when the workspace
// forbids authors to approve their own posts and the approver is the
// post's author: nothing was written. The API answers 403.
var ErrSelfApproval = errors.New("the workspace does not let authors approve their own posts")

// CLIPrincipal is the author and approver the CLI acts as: on one machine
// the operator at the terminal has no other name.
const CLIPrincipal = "cli"

// approvalStore is the Desk's Approvals: Desk.Approvals, or Posts when it
// has them.
func (d *Desk) approvalStore() (Approvals, bool) {
	if d.Approvals != nil {
		return d.Approvals, true
	}
	a, ok := d.Posts.(Approvals)
	return a, ok
}

// ApprovalPolicy reads the workspace's approval policy.
func (d *Desk) ApprovalPolicy(ctx context.Context) (ApprovalPolicy, error) {
	a, ok := d.approvalStore()
	if !ok {
		return ApprovalPolicy{}, errors.New("approval policy: this store keeps none")
	}
	p, err := a.ApprovalPolicy(ctx)
	if err != nil {
		return ApprovalPolicy{}, fmt.Errorf("read the approval policy: %w", err)
	}
	return p, nil
}

// SetApprovalPolicy stores the workspace's approval policy. It applies to
// posts added from then on: a post already scheduled is not held back,
// and one already waiting still waits.
func (d *Desk) SetApprovalPolicy(ctx context.Context, p ApprovalPolicy) error {
	a, ok := d.approvalStore()
	if !ok {
		return errors.New("approval policy: this store keeps none")
	}
	if err := a.PutApprovalPolicy(ctx, p); err != nil {
		return fmt.Errorf("store the approval policy: %w", err)
	}
	d.log().InfoContext(ctx, "approval policy set", "required", p.Required, "no_self_approval", p.NoSelfApproval)
	return nil
}

// holdForApproval puts the targets of a validated post that need approval
// in needs_approval: those to an account that requires it (accounts, as
// validation read them), or every one when the workspace does. Called
// before the post is stored, so the scheduler makes no schedule for them.
func (d *Desk) holdForApproval(ctx context.Context, p post.Post, accounts map[post.AccountID]post.Account) (post.Post, error) {
	required := false
	if a, ok := d.approvalStore(); ok {
		pol, err := a.ApprovalPolicy(ctx)
		if err != nil {
			return post.Post{}, fmt.Errorf("schedule post %s: read the approval policy: %w", p.ID, err)
		}
		required = pol.Required
	}
	for i, t := range p.Targets {
		if (required || accounts[t.Account].RequireApproval) && t.Status == post.Scheduled {
			p.Targets[i].Status = post.NeedsApproval
		}
	}
	return p, nil
}

// ApproveRequest is an approval of a post.
type ApproveRequest struct {
	Post post.ID
	// Account, if set, approves the target on that account only; "" every
	// target that waits.
	Account post.AccountID
	// At is a new time, RFC 3339 with an offset, checked as a draft's
	// time is; "" keeps each target's slot. A slot that passed needs one.
	At string
	// By is who approves: an API token's id, an IAM principal, a console
	// user, CLIPrincipal; compared with the post's author.
	By string
}

// Approve approves a post's targets that wait for approval: each moves
// from needs_approval to scheduled with one conditional write (at its
// slot, or at req.At), then gets its schedule (ApprovalScheduler.Approved).
// Of concurrent approvals of a target exactly one writes and schedules;
// the others answer "already approved", done, and schedule nothing.
//
// Refusals, nothing written: the approver is the post's author while the
// workspace forbids that (an error wrapping ErrSelfApproval); a target's
// slot is now or has passed and no new time is given (a *post.FieldError
// on "at": the post is never sent late without a person choosing the new
// time); a new time that is not RFC 3339 with an offset, or is in the past
// (on "at"). A target that does not wait for approval is reported as it
// is (done when it is scheduled or further on, not done when it was
// rejected or cancelled). An unknown post is an error wrapping
// post.ErrNotFound.
func (d *Desk) Approve(ctx context.Context, req ApproveRequest) ([]TargetOutcome, error) {
	now := d.now()
	wrap := func(err error) error { return fmt.Errorf("approve post %s: %w", req.Post, err) }
	var newSlot time.Time
	if req.At != "" {
		slot, err := post.ParseSlot(req.At)
		if err != nil {
			return nil, wrap(&post.FieldError{Field: "at", Problem: err.Error(), Fix: "write an RFC 3339 time with an offset, e.g. 2026-12-01T09:00:00+01:00"})
		}
		if slot.Before(now) {
			return nil, wrap(&post.FieldError{Field: "at", Problem: fmt.Sprintf("%s is in the past (now %s)", req.At, now.UTC().Format(time.RFC3339)), Fix: "pick a time from now on"})
		}
		newSlot = slot
	}
	if req.By == "" {
		return nil, wrap(errors.New("no approver named"))
	}
	store, ok := d.approvalStore()
	if !ok {
		return nil, wrap(errors.New("this store cannot approve posts"))
	}
	sched, ok := d.Scheduler.(ApprovalScheduler)
	if !ok {
		return nil, wrap(errors.New("this runtime's scheduler cannot schedule an approved post"))
	}
	p, targets, err := d.postTargets(ctx, req.Post, req.Account)
	if err != nil {
		return nil, wrap(err)
	}
	pol, err := store.ApprovalPolicy(ctx)
	if err != nil {
		return nil, wrap(fmt.Errorf("read the approval policy: %w", err))
	}
	if pol.NoSelfApproval && p.Author != "" && p.Author == req.By {
		return nil, wrap(fmt.Errorf("%s added it, and %w: someone else with the decide scope approves it", p.Author, ErrSelfApproval))
	}
	if newSlot.IsZero() {
		if fe := slotPassed(targets, now); fe != nil {
			return nil, wrap(fe)
		}
	}
	var out []TargetOutcome
	for _, t := range targets {
		if t.Status != post.NeedsApproval {
			out = append(out, approvalSettled(t))
			continue
		}
		slot := t.Slot
		if !newSlot.IsZero() {
			slot = newSlot
		}
		nt, err := store.MoveApproval(ctx, p.ID, t.Account, ApprovalMove{Read: t.Slot, Slot: slot, Status: post.Scheduled,
			Reason: "approved by " + req.By, At: now})
		if errors.Is(err, post.ErrConflict) {
			// Another approval, a rejection or a move won the write: say
			// what the target is now, and schedule nothing.
			o, err := d.approvalNow(ctx, p.ID, t.Account)
			if err != nil {
				return out, wrap(err)
			}
			out = append(out, o)
			continue
		}
		if err != nil {
			return out, wrap(fmt.Errorf("target %s: %w", t.Account, err))
		}
		d.log().InfoContext(ctx, "post approved", "post", p.ID, "account", t.Account, "slot", nt.Slot.Format(time.RFC3339), "by", req.By)
		if !nt.Slot.Equal(t.Slot) {
			// A time given by hand takes the post out of its queue's slot,
			// as a reschedule does.
			d.releaseQueued(ctx, p.ID, t)
		}
		if err := sched.Approved(ctx, TargetRef{Post: p.ID, Account: t.Account, Slot: nt.Slot}); err != nil {
			out = append(out, TargetOutcome{Account: t.Account, Done: true, Message: "approved for " + nt.Slot.Format(time.RFC3339) + ", but its schedule was not made"})
			return out, wrap(fmt.Errorf("target %s is approved, but its schedule was not made (the sweeper triggers it if it stays missing): %w", t.Account, err))
		}
		out = append(out, TargetOutcome{Account: t.Account, Done: true, Message: "approved; scheduled for " + nt.Slot.Format(time.RFC3339)})
	}
	return out, nil
}

// slotPassed is the refusal of an approval without a new time when a
// waiting target's slot is now or has passed, or nil.
func slotPassed(targets []post.Target, now time.Time) *post.FieldError {
	var passed []string
	for _, t := range targets {
		if t.Status == post.NeedsApproval && !now.Before(t.Slot) {
			ago := "now"
			if late := now.Sub(t.Slot).Round(time.Second); late > 0 {
				ago = late.String() + " ago"
			}
			passed = append(passed, fmt.Sprintf("%s on %s (%s)", t.Slot.UTC().Format(time.RFC3339), t.Account, ago))
		}
	}
	if len(passed) == 0 {
		return nil
	}
	return &post.FieldError{Field: "at", Problem: "the slot passed while the post waited for approval: " + strings.Join(passed, ", "),
		Fix: "give a new time to publish it at (it is not sent late on its own), or reject it"}
}

// approvalNow reads a target again after a refused write and says where
// it stands.
func (d *Desk) approvalNow(ctx context.Context, id post.ID, account post.AccountID) (TargetOutcome, error) {
	p, err := d.Posts.GetPost(ctx, id)
	if err != nil {
		return TargetOutcome{}, fmt.Errorf("read it again: %w", err)
	}
	t, ok := p.Target(account)
	if !ok {
		return TargetOutcome{}, fmt.Errorf("read it again: no target on %s: %w", account, post.ErrNotFound)
	}
	if t.Status == post.NeedsApproval {
		return TargetOutcome{Account: account, Message: "it was moved to " + t.Slot.UTC().Format(time.RFC3339) + " meanwhile and still waits; look at it again"}, nil
	}
	return approvalSettled(t), nil
}

// approvalSettled says where a target that does not wait for approval
// stands, as an approval's or a rejection's outcome.
func approvalSettled(t post.Target) TargetOutcome {
	o := TargetOutcome{Account: t.Account}
	switch t.Status {
	case post.Scheduled:
		o.Done, o.Message = true, "already approved; scheduled for "+t.Slot.UTC().Format(time.RFC3339)
	case post.Cancelled:
		o.Message = "not approved: " + orText(t.Reason, "cancelled")
	case post.Failed, post.Held, post.Published, post.Deleted, post.Triggered, post.Publishing, post.Waiting:
		o.Done, o.Message = true, "already approved; now "+string(t.Status)
	default:
		o.Message = "is " + string(t.Status)
	}
	return o
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Reject rejects a post's targets that wait for approval (account "": every
// one): each moves from needs_approval to cancelled with one conditional
// write, the reason kept on the target; it is never sent. Rejecting twice
// is done ("already rejected"). A reason is required (a *post.FieldError on
// "reason" when it is missing or over MaxDecisionReasonBytes). A target
// that does not wait for approval is reported, not done: a scheduled one
// is stopped with Cancel. An unknown post is an error wrapping
// post.ErrNotFound.
func (d *Desk) Reject(ctx context.Context, id post.ID, account post.AccountID, reason, by string) ([]TargetOutcome, error) {
	wrap := func(err error) error { return fmt.Errorf("reject post %s: %w", id, err) }
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "":
		return nil, wrap(&post.FieldError{Field: "reason", Problem: "is missing", Fix: "say why the post must not go out"})
	case len(reason) > MaxDecisionReasonBytes:
		return nil, wrap(&post.FieldError{Field: "reason", Problem: fmt.Sprintf("is over %d bytes", MaxDecisionReasonBytes), Fix: "say it shorter"})
	case by == "":
		return nil, wrap(errors.New("no one named as rejecting it"))
	}
	p, targets, err := d.postTargets(ctx, id, account)
	if err != nil {
		return nil, wrap(err)
	}
	why := "rejected by " + by + ": " + reason
	var out []TargetOutcome
	for _, t := range targets {
		if t.Status != post.NeedsApproval {
			out = append(out, rejectSettled(t))
			continue
		}
		_, err := d.Posts.UpdateTarget(ctx, p.ID, t.Account, post.TargetUpdate{Status: post.Cancelled, From: []post.TargetStatus{post.NeedsApproval},
			Slot: t.Slot, Reason: why, At: d.now()})
		if errors.Is(err, post.ErrConflict) {
			// An approval, another rejection or a move won the write.
			cur, err := d.Posts.GetPost(ctx, p.ID)
			if err != nil {
				return out, wrap(fmt.Errorf("read it again: %w", err))
			}
			t2, _ := cur.Target(t.Account)
			out = append(out, rejectSettled(t2))
			continue
		}
		if err != nil {
			return out, wrap(fmt.Errorf("target %s: %w", t.Account, err))
		}
		d.releaseQueued(ctx, p.ID, t) // a rejected post frees its queue slot, as a cancelled one does
		d.log().InfoContext(ctx, "post rejected", "post", p.ID, "account", t.Account, "by", by)
		out = append(out, TargetOutcome{Account: t.Account, Done: true, Message: "rejected; it will not be sent"})
	}
	return out, nil
}

// rejectSettled is a rejection's outcome on a target that does not wait
// for approval (any more).
func rejectSettled(t post.Target) TargetOutcome {
	switch t.Status {
	case post.Cancelled:
		return TargetOutcome{Account: t.Account, Done: true, Message: "already " + orText(t.Reason, "cancelled")}
	case post.NeedsApproval:
		return TargetOutcome{Account: t.Account, Message: "it was moved to " + t.Slot.UTC().Format(time.RFC3339) + " meanwhile and still waits; look at it again"}
	case post.Scheduled, post.Triggered, post.Waiting:
		return TargetOutcome{Account: t.Account, Message: "does not wait for approval (" + string(t.Status) + "); to stop it, cancel it"}
	}
	return TargetOutcome{Account: t.Account, Message: "does not wait for approval (" + string(t.Status) + ")"}
}

// moveAwaiting moves a target that waits for approval to at, still
// waiting: a new time is not an approval.
func (d *Desk) moveAwaiting(ctx context.Context, id post.ID, t post.Target, at time.Time) (TargetOutcome, error) {
	if t.Slot.Equal(at) {
		return TargetOutcome{Account: t.Account, Done: true, Message: "already at " + at.Format(time.RFC3339) + "; it waits for approval"}, nil
	}
	store, ok := d.approvalStore()
	if !ok {
		return TargetOutcome{}, errors.New("this store cannot move a post that waits for approval")
	}
	_, err := store.MoveApproval(ctx, id, t.Account, ApprovalMove{Read: t.Slot, Slot: at, Status: post.NeedsApproval, At: d.now()})
	if errors.Is(err, post.ErrConflict) {
		o, err := d.approvalNow(ctx, id, t.Account)
		if err != nil {
			return TargetOutcome{}, err
		}
		return TargetOutcome{Account: t.Account, Message: "changed meanwhile: " + o.Message}, nil
	}
	if err != nil {
		return TargetOutcome{}, err
	}
	return TargetOutcome{Account: t.Account, Done: true, Message: "moved to " + at.Format(time.RFC3339) + "; it still waits for approval"}, nil
}

// ApprovalItem is a target waiting for approval, as the approval queue
// shows it.
type ApprovalItem struct {
	Post    post.ID        `json:"post_id"`
	Account post.AccountID `json:"account"`
	Slot    time.Time      `json:"slot"`
	// Author is who added the post ("" when not known).
	Author string `json:"author,omitempty"`
	// Body is the post's text (its thread's first part).
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
	// Overdue: the slot is now or has passed. It is not sent late on its
	// own: approving it needs a new time.
	Overdue bool `json:"overdue"`
}

// ApprovalQueue is Desk.ListApprovals's answer.
type ApprovalQueue struct {
	Items []ApprovalItem `json:"items"`
	// More: more targets wait than the limit listed.
	More bool `json:"more"`
	// Overdue counts the listed items whose slot passed.
	Overdue int `json:"overdue"`
}

// ListApprovals lists the targets waiting for approval, earliest slot
// first, up to limit (≤ 0: every one), with their posts' text and author:
// the approval queue the CLI (`held`), the API (GET /v1/approvals) and
// the console's inbox show. It reads the waiting targets (one indexed
// query) and each listed post once.
func (d *Desk) ListApprovals(ctx context.Context, limit int) (ApprovalQueue, error) {
	out := ApprovalQueue{Items: []ApprovalItem{}}
	store, ok := d.approvalStore()
	if !ok {
		return out, nil
	}
	read := limit
	if read > 0 {
		read++ // one more, to know there are more
	}
	refs, err := store.AwaitingApproval(ctx, time.Time{}, read)
	if err != nil {
		return out, fmt.Errorf("list approvals: %w", err)
	}
	if limit > 0 && len(refs) > limit {
		refs, out.More = refs[:limit], true
	}
	now := d.now()
	posts := map[post.ID]post.Post{}
	for _, r := range refs {
		p, ok := posts[r.Post]
		if !ok {
			var err error
			p, err = d.Posts.GetPost(ctx, r.Post)
			if errors.Is(err, post.ErrNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				return out, fmt.Errorf("list approvals: post %s: %w", r.Post, err)
			}
			posts[r.Post] = p
		}
		it := ApprovalItem{Post: r.Post, Account: r.Account, Slot: r.Slot.UTC(), Author: p.Author, Body: p.Body, CreatedAt: p.CreatedAt.UTC(), Overdue: !now.Before(r.Slot)}
		if it.Overdue {
			out.Overdue++
		}
		out.Items = append(out.Items, it)
	}
	return out, nil
}
