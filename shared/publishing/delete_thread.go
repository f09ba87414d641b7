package publishing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
)

// ReasonApprovedWithThread: a thread's part's delete, approved by the
// approval of the thread's delete (its first part's entry).
const ReasonApprovedWithThread = "approved_with_thread"

// deleteParts deletes, before the thread's first part, the parts after it
// (see Deleter): e is the approved entry of the first part's delete. It
// reports done when every later part is gone (or the entry is no thread's);
// otherwise res says which part stopped it and why, and the first part is
// not sent.
func (d *Deleter) deleteParts(ctx context.Context, e ledger.Entry, res *DeleteResult) (bool, error) {
	postID, part := ledger.SubjectPart(e.Post)
	if postID == "" || part > 1 {
		return true, nil
	}
	pst, err := d.Posts.GetPost(ctx, post.ID(postID))
	switch {
	case errors.Is(err, post.ErrNotFound):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("delete %s: read post %s: %w", e.Key, postID, err)
	}
	tg, ok := pst.Target(post.AccountID(e.Account))
	n := pst.Parts()
	if !ok || n <= 1 || tg.RemoteID != e.Subject {
		return true, nil
	}
	for k := n; k >= 2; k-- {
		pe, err := d.Ledger.Get(ctx, ledger.PartKey(e.Account, postID, k, tg.Slot))
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			continue // never sent: nothing to delete
		case err != nil:
			return false, fmt.Errorf("delete %s: thread part %d's entry: %w", e.Key, k, err)
		}
		if pe.State != ledger.Confirmed || pe.RemoteID == "" {
			res.Outcome, res.Entry = DeleteRetry, pe
			res.Message = PartReason(k, n, fmt.Sprintf("its publish is %s (%s); it is deleted once it is settled", pe.State, pe.Reason))
			return false, nil
		}
		key, err := d.approvePart(ctx, e, postID, k, pe.RemoteID)
		if err != nil {
			return false, fmt.Errorf("delete %s: thread part %d: %w", e.Key, k, err)
		}
		sub, err := d.Run(ctx, key)
		res.Sent += sub.Sent
		if err != nil || sub.Outcome != DeleteDone && sub.Outcome != DeleteAlready {
			res.Outcome, res.Entry, res.RetryAfter = sub.Outcome, sub.Entry, sub.RetryAfter
			res.Message = PartReason(k, n, sub.Message)
			if err != nil {
				return false, fmt.Errorf("delete %s: %s: %w", e.Key, PartReason(k, n, ""), err)
			}
			return false, nil
		}
	}
	return true, nil
}

// approvePart makes sure the delete of part k (its remote id remote)
// of the thread whose first part's approved delete entry is thread has
// an entry carrying the thread's approval, and returns its key: written
// (pending at attempt 1, then released approved_with_thread) when there
// is none, released the same way from held awaiting approval (never
// sent), else left as it is (Run settles it).
func (d *Deleter) approvePart(ctx context.Context, thread ledger.Entry, postID string, k int, remote string) (ledger.Key, error) {
	key := ledger.DeleteKey(thread.Account, remote)
	cur, err := d.Ledger.Get(ctx, key)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		e := ledger.NewEntry(key, ledger.Delete, thread.Account, remote, time.Time{}, "", d.Owner, d.now(), d.lease())
		e.Post = ledger.PartSubject(postID, k)
		e.SentAt = time.Time{} // nothing sent; see the approval rule
		if err := d.Ledger.Create(ctx, e); err != nil {
			if errors.Is(err, ledger.ErrConflict) {
				return key, nil // written meanwhile: Run settles it
			}
			return "", err
		}
		d.logMove(ctx, ledger.Entry{}, e)
		cur = e
	case err != nil:
		return "", err
	}
	if cur.State == ledger.Pending && cur.Attempt == 1 && cur.LeaseOwner == d.Owner || cur.State == ledger.Held && cur.Decision == "" && cur.Reason == ReasonAwaitingApproval {
		next, err := cur.Release(ReasonApprovedWithThread, d.now())
		if err != nil {
			return "", err
		}
		if err := d.record(ctx, cur, next); err != nil && !errors.Is(err, ledger.ErrConflict) {
			return "", err
		}
	}
	return key, nil
}
