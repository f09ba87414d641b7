package publishing

import (
	"context"
	"errors"
	"fmt"
	"path"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
)

// ReasonMediaUnreadable fails a post whose attachment cannot be read.
const ReasonMediaUnreadable = "media_unreadable"

// ReasonOrphanUpload is recorded on an upload entry released after an ambiguous upload.
const ReasonOrphanUpload = "ambiguous upload: unattached media is invisible and expires on the platform, so a re-upload cannot duplicate a post"

// uploadAll uploads the post's attachments in order, each guarded by its own
// ledger entry (account, media SHA-256, publish entry), and returns their
// remote ids. An error is a platform failure class (the publish entry is
// recorded from it) or a store error.
func (p *Publisher) uploadAll(ctx context.Context, t target, client *authedClient) ([]string, error) {
	if len(t.post.Media) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(t.post.Media))
	for _, md := range t.post.Media {
		id, err := p.upload(ctx, t, client, md.SHA256, md.Ref, md.ContentType, md.Alt)
		if err != nil {
			return nil, fmt.Errorf("media %s: %w", md.SHA256, err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func (p *Publisher) upload(ctx context.Context, t target, client *authedClient, sha, ref, contentType, alt string) (string, error) {
	now := p.now()
	key := ledger.UploadKey(string(t.account.ID), sha, t.key)
	e := ledger.NewEntry(key, ledger.Upload, string(t.account.ID), sha, t.target.Slot, sha, p.Owner, now, orDefault(p.Lease, defaultLease))
	switch err := p.Ledger.Create(ctx, e); {
	case err == nil:
	case !errors.Is(err, ledger.ErrConflict):
		return "", fmt.Errorf("acquire upload: %w", err)
	default:
		cur, err := p.Ledger.Get(ctx, key)
		if err != nil {
			return "", fmt.Errorf("acquire upload: %w", err)
		}
		switch ledger.Decide(cur, now) {
		case ledger.DecideReuse:
			return cur.RemoteID, nil
		case ledger.DecideConfirm:
			// An ambiguous upload left nothing visible: release it (see ReasonOrphanUpload).
			rel, err := cur.Release(ReasonOrphanUpload, now)
			if err != nil {
				return "", err
			}
			if err := p.Ledger.Update(ctx, cur, rel); err != nil {
				return "", fmt.Errorf("release upload: %w", err)
			}
			cur = rel
			fallthrough
		case ledger.DecideSend:
			next, err := cur.Reacquire(p.Owner, now, orDefault(p.Lease, defaultLease))
			if err != nil {
				return "", err
			}
			if err := p.Ledger.Update(ctx, cur, next); err != nil {
				return "", fmt.Errorf("re-acquire upload: %w", err)
			}
			e = next
		case ledger.DecideExpire:
			next, err := cur.ExpireLease(now)
			if err != nil {
				return "", err
			}
			if err := p.Ledger.Update(ctx, cur, next); err != nil {
				return "", fmt.Errorf("expire upload lease: %w", err)
			}
			return "", &platform.NotPerformed{Message: "upload lease expired; retrying"}
		case ledger.DecideWait:
			return "", &platform.NotPerformed{RetryAfter: cur.LeaseUntil.Sub(now), Message: "upload in progress elsewhere"}
		default:
			return "", &platform.Rejected{Reason: "upload_" + string(cur.State), Message: cur.Reason}
		}
	}
	var data []byte
	err := errors.New("no media store is configured")
	if p.Media != nil {
		data, err = p.Media.ReadMedia(ctx, ref)
	}
	if err != nil {
		// Nothing was sent: free the upload entry, and fail the post with
		// the reason; retrying cannot make a missing file appear.
		if rel, rerr := e.Release(ReasonMediaUnreadable, p.now()); rerr == nil {
			if uerr := p.Ledger.Update(ctx, e, rel); uerr != nil {
				return "", fmt.Errorf("release upload: %w", uerr)
			}
		}
		return "", &platform.Rejected{Reason: ReasonMediaUnreadable, Message: fmt.Sprintf("%s: %v", ref, err)}
	}
	var rcpt platform.MediaReceipt
	err = client.do(ctx, func(ctx context.Context, c platform.Client) (err error) {
		rcpt, err = c.UploadMedia(ctx, platform.MediaUpload{Handle: e.Handle, Filename: path.Base(ref), ContentType: contentType, Data: data, Alt: alt})
		return err
	})
	o := outcome{state: ledger.Confirmed, remoteID: rcpt.RemoteID}
	if err != nil {
		o = classify(err)
	}
	next, err := o.apply(e, p.now())
	if err != nil {
		return "", err
	}
	if uerr := p.Ledger.Update(ctx, e, next); uerr != nil {
		return "", fmt.Errorf("record upload: %w", uerr)
	}
	if o.state != ledger.Confirmed {
		var perr error = &platform.NotPerformed{RetryAfter: o.retryAfter, Message: "upload: " + o.reason}
		if o.state == ledger.Failed {
			perr = &platform.Rejected{Reason: "upload_failed", Message: o.reason}
		}
		return "", perr
	}
	return rcpt.RemoteID, nil
}
