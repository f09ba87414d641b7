package publishing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// ReasonMediaUnreadable fails a post whose attachment cannot be read as
// the post names it (missing, other bytes), or whose reads kept failing
// for longer than the throttle limit.
const ReasonMediaUnreadable = "media_unreadable"

// ErrMediaInvalid marks an attachment that cannot be read as the post
// names it, whatever the store's health: a ref that names no attachment
// the store could hold, bytes over the limit, bytes whose hash is not the
// one the post names. MediaStore adapters wrap it (or post.ErrNotFound,
// for an attachment that is not there); reading again changes neither.
var ErrMediaInvalid = errors.New("attachment cannot be read as named")

// errMediaUnavailable marks a read of an attachment that did not work
// this time (the store's 503 after its retries, a reset mid-body, the
// deadline): not a refusal. The post waits, as for a platform that did
// not act; a run of them longer than the throttle limit fails it with
// ReasonMediaUnreadable. Its text is the waiting target's reason code.
var errMediaUnavailable = errors.New("media_unavailable")

// mediaReadError classifies a failed read of an attachment (what names
// it): missing or invalid fails the post, anything else waits.
func mediaReadError(what string, err error) error {
	msg := what + ": " + err.Error()
	if errors.Is(err, post.ErrNotFound) || errors.Is(err, ErrMediaInvalid) {
		return &platform.Rejected{Reason: ReasonMediaUnreadable, Message: msg}
	}
	return fmt.Errorf("%w: %w", errMediaUnavailable, &platform.NotPerformed{Message: msg})
}

// ReasonMediaNeedsURL fails a post with media to a platform that fetches
// attachments from a public URL (Threads) in a runtime that cannot give
// one (the embedded runtime).
const ReasonMediaNeedsURL = platform.ReasonMediaNeedsURL

// ReasonOrphanUpload is recorded on an upload entry released after an
// ambiguous upload or a dead owner: unattached media is invisible and
// expires on the platform, so a re-upload cannot duplicate a post.
const ReasonOrphanUpload = "orphan_upload"

// inlineMedia reads the post's attachments for a platform that takes them
// with the create (Capabilities.InlineMedia): no upload, no upload entry;
// the create itself is the one call, under the publish entry. For a
// platform that fetches them (byURL) each gets a public URL instead of
// its bytes; without MediaURLs that is a Rejected reason
// ReasonMediaNeedsURL, nothing sent.
func (p *Publisher) inlineMedia(ctx context.Context, t target, byURL bool) ([]platform.MediaUpload, error) {
	var out []platform.MediaUpload
	for i, md := range t.post.MediaFor(t.account.Platform) {
		// The file is named by its ref, "<sha256>.<ext>": an adapter that
		// reads attachments back by name (Discord) fingerprints them by it.
		m := platform.MediaUpload{Filename: path.Base(md.Ref), ContentType: md.ContentType, Alt: md.Alt}
		switch {
		case byURL && p.MediaURLs == nil:
			return nil, &platform.Rejected{Reason: ReasonMediaNeedsURL, Message: fmt.Sprintf(
				"media[%d]: %s fetches attachments from a public URL, and this runtime has none to give (the AWS runtime signs one)", i, t.account.Platform)}
		case byURL:
			// Signing makes no call: an error is a ref that cannot be
			// signed, which retrying does not change.
			u, err := p.MediaURLs.MediaURL(ctx, md.Ref)
			if err != nil {
				return nil, &platform.Rejected{Reason: ReasonMediaUnreadable, Message: fmt.Sprintf("public URL of media[%d] %s: %v", i, md.Ref, err)}
			}
			m.URL = u
		default:
			data, err := p.readMedia(ctx, md)
			if err != nil {
				return nil, mediaReadError(fmt.Sprintf("media[%d] %s", i, md.Ref), err)
			}
			m.Data = data
		}
		out = append(out, m)
	}
	return out, nil
}

// uploadAll uploads the post's attachments in order, each guarded by its own
// ledger entry (account, media SHA-256, publish entry), and returns their
// remote ids. An error is a platform failure class naming the upload (the
// publish entry is recorded from it) or a store error.
func (p *Publisher) uploadAll(ctx context.Context, t target, client *authedClient) ([]string, error) {
	media := t.post.MediaFor(t.account.Platform)
	if len(media) == 0 {
		return nil, nil
	}
	ids := make([]string, 0, len(media))
	for i, md := range media {
		id, err := p.upload(ctx, t, client, md)
		if err != nil {
			return nil, uploadError(i, md, err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// uploadError names the upload in err's message, keeping its class.
func uploadError(i int, md post.Media, err error) error {
	what := fmt.Sprintf("upload of media[%d] %s (sha256 %.12s)", i, path.Base(md.Ref), md.SHA256)
	var (
		rej *platform.Rejected
		np  *platform.NotPerformed
	)
	switch {
	case errors.As(err, &rej):
		return &platform.Rejected{Status: rej.Status, Reason: rej.Reason, Message: what + ": " + rej.Message}
	case errors.As(err, &np):
		out := &platform.NotPerformed{Status: np.Status, RetryAfter: np.RetryAfter, Message: what + ": " + np.Message}
		if errors.Is(err, errMediaUnavailable) {
			return fmt.Errorf("%w: %w", errMediaUnavailable, out)
		}
		return out
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}

// acquireUpload writes the upload's pending entry, or takes over an
// existing one that is safe to upload again. done is set with the remote id
// when the upload was confirmed earlier.
//
// An upload that did not certainly succeed is never left open: unattached
// media is invisible to readers and expires on the platform (Mastodon
// removes unattached media), so an ambiguous upload, or one whose owner
// died, is released and uploaded again within the same attempt.
func (p *Publisher) acquireUpload(ctx context.Context, t target, md post.Media) (e ledger.Entry, done string, err error) {
	now := p.now()
	lease := orDefault(p.Lease, defaultLease)
	key := ledger.UploadKey(string(t.account.ID), md.SHA256, t.key)
	e = ledger.NewEntry(key, ledger.Upload, string(t.account.ID), md.SHA256, t.target.Slot, md.SHA256, p.Owner, now, lease)
	switch err := p.Ledger.Create(ctx, e); {
	case err == nil:
		return e, "", nil
	case !errors.Is(err, ledger.ErrConflict):
		return e, "", fmt.Errorf("acquire upload: %w", err)
	}
	cur, err := p.Ledger.Get(ctx, key)
	if err != nil {
		return e, "", fmt.Errorf("acquire upload: %w", err)
	}
	switch ledger.Decide(cur, now) {
	case ledger.DecideReuse:
		return cur, cur.RemoteID, nil
	case ledger.DecideWait:
		return e, "", &platform.NotPerformed{RetryAfter: cur.LeaseUntil.Sub(now), Message: "in progress elsewhere"}
	case ledger.DecideExpire:
		next, err := cur.ExpireLease(now)
		if err != nil {
			return e, "", err
		}
		if err := p.Ledger.Update(ctx, cur, next); err != nil {
			return e, "", fmt.Errorf("expire upload lease: %w", err)
		}
		cur = next
		fallthrough
	case ledger.DecideConfirm:
		rel, err := cur.Release(ReasonOrphanUpload, now)
		if err != nil {
			return e, "", err
		}
		if err := p.Ledger.Update(ctx, cur, rel); err != nil {
			return e, "", fmt.Errorf("release upload: %w", err)
		}
		cur = rel
		fallthrough
	case ledger.DecideSend:
		next, err := cur.Reacquire(p.Owner, now, lease)
		if err != nil {
			return e, "", err
		}
		if err := p.Ledger.Update(ctx, cur, next); err != nil {
			if errors.Is(err, ledger.ErrConflict) {
				return e, "", &platform.NotPerformed{Message: "taken by another worker"}
			}
			return e, "", fmt.Errorf("re-acquire upload: %w", err)
		}
		return next, "", nil
	default:
		return e, "", &platform.Rejected{Reason: "upload_" + string(cur.State), Message: cur.Reason}
	}
}

func (p *Publisher) upload(ctx context.Context, t target, client *authedClient, md post.Media) (string, error) {
	e, done, err := p.acquireUpload(ctx, t, md)
	if err != nil || done != "" {
		return done, err
	}
	data, err := p.readMedia(ctx, md)
	if err != nil {
		// Nothing was sent: free the upload entry. A missing file fails the
		// post (retrying cannot make it appear); a read that did not work
		// this time makes it wait.
		rerr := mediaReadError(md.Ref, err)
		reason := ReasonMediaUnreadable
		if errors.Is(rerr, errMediaUnavailable) {
			reason = errMediaUnavailable.Error()
		}
		if rel, terr := e.Release(reason, p.now()); terr == nil {
			if uerr := p.Ledger.Update(ctx, e, rel); uerr != nil {
				return "", fmt.Errorf("release upload: %w", uerr)
			}
		}
		return "", rerr
	}
	var rcpt platform.MediaReceipt
	invocation := ctx
	err = client.do(ctx, func(ctx context.Context, c platform.Client) (err error) {
		if err := p.roomToWrite(invocation, e.LeaseUntil); err != nil {
			return err
		}
		rcpt, err = c.UploadMedia(ctx, platform.MediaUpload{Handle: e.Handle, Filename: path.Base(md.Ref), ContentType: md.ContentType, Data: data, Alt: md.Alt})
		return err
	})
	if _, stopped := notSentForTime(err); stopped {
		// Nothing was sent: free the upload entry; the publish entry
		// records why (see notSentForTime).
		reason := ReasonNoTimeToSend
		if errors.Is(err, errLeaseTooShort) {
			reason = ReasonLeaseTooShort
		}
		rel, rerr := e.Release(reason, p.now())
		if rerr != nil {
			return "", rerr
		}
		if uerr := p.Ledger.Update(ctx, e, rel); uerr != nil {
			return "", fmt.Errorf("release upload: %w", uerr)
		}
		return "", err
	}
	now := p.now()
	var (
		next ledger.Entry
		perr error
	)
	var o outcome
	if err != nil {
		o = classify(err)
	}
	switch {
	case err == nil:
		next, perr = e.Confirm(rcpt.RemoteID, now)
	case o.state == ledger.Failed:
		next, perr = e.Fail(o.reason, now)
		err = &platform.Rejected{Status: o.status, Reason: "upload_failed", Message: o.reason}
	case o.state == ledger.Released:
		next, perr = e.Release(o.reason, now)
		err = &platform.NotPerformed{Status: o.status, RetryAfter: o.retryAfter, Message: o.reason}
	default:
		// Ambiguous: the media may exist, unattached and invisible; it
		// expires on the platform. Upload again next time (see acquireUpload).
		next, perr = e.Release(ReasonOrphanUpload+": "+o.reason, now)
		err = &platform.NotPerformed{Status: o.status, Message: o.reason}
	}
	if perr != nil {
		return "", perr
	}
	if uerr := p.Ledger.Update(ctx, e, next); uerr != nil {
		return "", fmt.Errorf("record upload: %w", uerr)
	}
	if err != nil {
		return "", err
	}
	return rcpt.RemoteID, nil
}

// readMedia reads an attachment's bytes and checks they are the ones its
// hash names: the hash is what the post's fingerprint and the upload's
// ledger key hold, so other bytes would be sent as one file and looked
// for as another.
func (p *Publisher) readMedia(ctx context.Context, md post.Media) ([]byte, error) {
	if p.Media == nil {
		return nil, fmt.Errorf("no media store is configured: %w", ErrMediaInvalid)
	}
	data, err := p.Media.ReadMedia(ctx, md.Ref)
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != md.SHA256 {
		return nil, fmt.Errorf("the stored bytes' SHA-256 is %s, not the %s the post names: %w", hex.EncodeToString(sum[:]), md.SHA256, ErrMediaInvalid)
	}
	return data, nil
}
