package publishing

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// Threads. A post with a thread (post.Post.Thread) goes out as a reply
// chain: part 1 is the post, part k+1 replies to part k. Each part is a
// side effect of its own with a ledger entry of its own
// (ledger.PartKey: part 1 keeps the key a post without a thread has), and
// part k+1 is sent only once part k's entry is confirmed, since it must
// name part k's remote id. For one (post, account) job the parts go
// strictly in order:
//
//   - Publish walks the parts from the first. A confirmed part is
//     skipped (its remote id is read from its entry); the first other
//     part is acquired and sent as a post without a thread would be.
//   - A part that is not confirmed at once stops the walk with the
//     part's outcome: unknown goes to the confirm loop, which looks for
//     that part (by its parent too, LookupQuery.Reply) before anything
//     else is sent; throttled waits; failed and held stop the chain, the
//     target's reason naming the part.
//   - When the confirm loop (or an operator) confirms a part that is not
//     the last, it puts the job back on the queue (Confirmer.setTarget):
//     Publish skips the confirmed parts and goes on. A crash between
//     parts leaves the target triggered (or publishing) and the sweeper
//     re-enqueues it: the walk resumes, it never restarts.
//   - The target is published only when the last part is confirmed; its
//     RemoteID is part 1's.

// publishThread publishes a thread's parts in order (see above). t is the
// job's target as load read it, for part 1.
func (p *Publisher) publishThread(ctx context.Context, t target) (Outcome, error) {
	a, err := p.authed(ctx, t.account)
	if err != nil {
		return Outcome{}, err
	}
	whole := t.post
	var root, parent string
	for k := 1; k <= t.parts; k++ {
		pt := t.atPart(whole, k, root, parent)
		out, before, err := p.publishPart(ctx, pt, a)
		if err != nil || out.Result != Published {
			out.Reason = PartReason(k, t.parts, out.Reason)
			return out, err
		}
		if k == 1 {
			root = out.RemoteID
		}
		parent = out.RemoteID
		if k == t.parts && before {
			// Every part was confirmed before this delivery (the one that
			// confirmed the last stopped before its target move): the
			// target is published now.
			pt.root = root
			if err := p.setTarget(ctx, pt, post.Published, root, ""); err != nil {
				return Outcome{}, err
			}
		}
	}
	return Outcome{Result: Published, Key: t.key, RemoteID: root}, nil
}

// atPart is the job's target as part k of the thread whole goes out:
// the part's text and key, replying to parent in the thread root started.
func (t target) atPart(whole post.Post, k int, root, parent string) target {
	pt := t
	pt.post, pt.part, pt.root = whole.Part(k), k, root
	pt.key = ledger.PartKey(string(t.account.ID), string(whole.ID), k, t.target.Slot)
	if k > 1 {
		pt.reply = &platform.ReplyRef{Parent: parent, Root: root}
	}
	return pt
}

// publishPart publishes one part, or reuses its confirmed entry. The
// outcome is Published only when the part is confirmed; before reports
// that it was confirmed before this call (nothing was written).
func (p *Publisher) publishPart(ctx context.Context, t target, a *authedClient) (out Outcome, before bool, err error) {
	e, err := p.Ledger.Get(ctx, t.key)
	switch {
	case err == nil && e.State == ledger.Confirmed:
		return Outcome{Result: Published, Key: e.Key, Attempt: e.Attempt, RemoteID: e.RemoteID}, true, nil
	case errors.Is(err, ledger.ErrNotFound):
		// Nothing sent for this part yet: a term blocked since the post
		// was scheduled holds the chain here.
		if out, held, err := p.checkBlocklist(ctx, t); err != nil || held {
			return out, false, err
		}
	case err != nil:
		return Outcome{}, false, fmt.Errorf("thread part %d of %s: read %s: %w", t.part, t.post.ID, t.key, err)
	}
	acq, o, err := p.acquire(ctx, t, a)
	if err != nil || o != nil {
		if o != nil {
			return *o, false, err
		}
		return Outcome{}, false, err
	}
	out, err = p.sendAcquired(ctx, t, a, acq)
	return out, false, err
}

// threadMove adapts a target move made for one part of a thread: none
// for a part confirmed before the last (the chain goes on, the target
// stays where it is), part 1's remote id for every later part, and a
// reason that names the part. A post without a thread moves as asked.
func threadMove(t target, s post.TargetStatus, remoteID, reason string) (post.TargetStatus, string, string, bool) {
	if t.parts <= 1 && t.part <= 1 {
		return s, remoteID, reason, true
	}
	if s == post.Published && t.part < t.parts {
		return s, remoteID, reason, false
	}
	if t.part > 1 {
		remoteID = t.root
	}
	if s != post.Published {
		reason = PartReason(t.part, t.parts, reason)
	}
	return s, remoteID, reason, true
}

// PartReason names a thread's part in a reason: "thread part 2 of 4:
// <reason>" (without "of n" when n is not known, 0). A post without a
// thread (part 1 of 1) keeps the reason as it is.
func PartReason(part, parts int, reason string) string {
	if parts <= 1 && part <= 1 || strings.HasPrefix(reason, "thread part ") {
		return reason
	}
	name := fmt.Sprintf("thread part %d", part)
	if parts > 0 {
		name += fmt.Sprintf(" of %d", parts)
	}
	if reason == "" {
		return name
	}
	return name + ": " + reason
}

// partReply is what the thread part of a publish entry replies to, read
// from the entries of the parts before it (confirmed before it was ever
// sent): nil for a part 1.
func partReply(ctx context.Context, l Ledger, e ledger.Entry) (*platform.ReplyRef, error) {
	postID, k := ledger.SubjectPart(e.Subject)
	if k <= 1 {
		return nil, nil
	}
	remote := func(part int) (string, error) {
		pe, err := l.Get(ctx, ledger.PartKey(e.Account, postID, part, e.Slot))
		if err != nil {
			return "", fmt.Errorf("thread part %d of %s: %w", part, postID, err)
		}
		if pe.State != ledger.Confirmed || pe.RemoteID == "" {
			return "", fmt.Errorf("thread part %d of %s is %s, not confirmed, though part %d was sent", part, postID, pe.State, k)
		}
		return pe.RemoteID, nil
	}
	parent, err := remote(k - 1)
	if err != nil {
		return nil, err
	}
	root := parent
	if k > 2 {
		if root, err = remote(1); err != nil {
			return nil, err
		}
	}
	return &platform.ReplyRef{Parent: parent, Root: root}, nil
}

// setTarget moves the target of a publish entry after a confirm step:
// for a post without a thread, to s with the entry's remote id and
// reason. For a thread's part it names the part in the reason and keeps
// part 1's remote id on the target; a part confirmed before the last does
// not publish the target but puts the job back on the queue, so that
// Publish goes on with the next part (the target stays publishing, or
// goes back in line from held).
func (c *Confirmer) setTarget(ctx context.Context, e ledger.Entry, s post.TargetStatus) error {
	postID, k := ledger.SubjectPart(e.Subject)
	u := post.TargetUpdate{Status: s, RemoteID: e.RemoteID, Reason: e.Reason, At: c.now()}
	var pst post.Post
	var err error
	if r, ok := c.Posts.(TargetReader); ok {
		pst, err = r.GetTarget(ctx, post.ID(postID), post.AccountID(e.Account))
	} else {
		pst, err = c.Posts.GetPost(ctx, post.ID(postID))
	}
	if err != nil && !errors.Is(err, post.ErrNotFound) {
		return fmt.Errorf("target %s/%s → %s: %w", postID, e.Account, s, err)
	}
	// A post that is gone moves no target: UpdateTarget says so below.
	if n := pst.Parts(); err == nil && n > 1 {
		root := e.RemoteID
		if k > 1 {
			pe, err := c.Ledger.Get(ctx, ledger.PartKey(e.Account, postID, 1, e.Slot))
			if err != nil {
				return fmt.Errorf("target %s/%s → %s: thread part 1: %w", postID, e.Account, s, err)
			}
			root = pe.RemoteID
		}
		u.RemoteID, u.Reason = root, PartReason(k, n, e.Reason)
		if s == post.Published && k < n {
			return c.continueThread(ctx, pst, e, k, u)
		}
	}
	_, err = c.Posts.UpdateTarget(ctx, post.ID(postID), post.AccountID(e.Account), u)
	if err != nil && !errors.Is(err, post.ErrConflict) {
		return fmt.Errorf("target %s/%s → %s: %w", postID, e.Account, s, err)
	}
	return nil
}

// continueThread records that part k of pst's thread is confirmed and
// the next is due, then puts the job back on the queue. The target stays
// publishing, or goes back in line (triggered) from held or waiting. The
// move comes first: a crash before the enqueue leaves a target whose
// status was set just now, which the sweeper re-enqueues once it is
// stale; one after it is a second delivery, which the ledger absorbs.
func (c *Confirmer) continueThread(ctx context.Context, pst post.Post, e ledger.Entry, k int, u post.TargetUpdate) error {
	tg, ok := pst.Target(post.AccountID(e.Account))
	if !ok || tg.Status.Terminal() || !tg.Slot.Equal(e.Slot) {
		return nil // settled, cancelled or moved meanwhile: nothing goes on
	}
	u.Status, u.Reason = post.Triggered, fmt.Sprintf("thread part %d of %d confirmed; part %d is next", k, pst.Parts(), k+1)
	if tg.Status == post.Publishing {
		u.Status = post.Publishing
	}
	if _, err := c.Posts.UpdateTarget(ctx, pst.ID, tg.Account, u); err != nil && !errors.Is(err, post.ErrConflict) {
		return fmt.Errorf("target %s/%s: %w", pst.ID, tg.Account, err)
	}
	c.log().InfoContext(ctx, "thread part confirmed; the chain goes on", "key", e.Key, "post", pst.ID, "account", e.Account, "part", k)
	return c.enqueue(ctx, e)
}

// jobOf is the publish job an entry belongs to: its post (a thread's,
// for a part), account and slot.
func jobOf(e ledger.Entry) Job {
	postID, _ := ledger.SubjectPart(e.Subject)
	return Job{Post: post.ID(postID), Account: post.AccountID(e.Account), Slot: e.Slot}
}
