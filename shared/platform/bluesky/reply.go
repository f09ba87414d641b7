package bluesky

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"oncepost/shared/platform"
)

// replyRef is app.bsky.feed.post#replyRef: the thread's first post (root)
// and the post replied to (parent), both required, each a
// com.atproto.repo.strongRef, a record's URI and the CID of its content
// (atproto lexicons/app/bsky/feed/post.json).
type replyRef struct {
	Root   strongRef `json:"root"`
	Parent strongRef `json:"parent"`
}

// strongRef is com.atproto.repo.strongRef.
type strongRef struct {
	URI string `json:"uri"`
	CID string `json:"cid"`
}

// replyRefs are the reply references of a thread's part (req.Reply names
// its parent and root by URI): the same on every attempt of one ledger
// entry, so that the record is the same bytes each time. The first
// attempt reads the CIDs of the parent and the root (getRecord: reads
// retry freely) and records the references on the ledger entry through
// req.Checkpoint before the putRecord; a later attempt takes them from
// req.Resume and reads nothing. A parent or root that cannot be read is
// NotPerformed (nothing was written, a later attempt reads again), one
// that is gone Rejected: the chain cannot go on under it.
func (c *Client) replyRefs(ctx context.Context, req platform.PublishRequest) (replyRef, error) {
	if req.Resume != "" {
		var ref replyRef
		if err := json.Unmarshal([]byte(req.Resume), &ref); err != nil || ref.Parent.URI != req.Reply.Parent || ref.Root.URI != req.Reply.Root ||
			ref.Parent.CID == "" || ref.Root.CID == "" {
			return replyRef{}, &platform.Rejected{Reason: "invalid_request", Message: fmt.Sprintf("bluesky: the reply references recorded by an earlier attempt (%q) are not this reply's", req.Resume)}
		}
		return ref, nil
	}
	if req.Reply.Parent == "" || req.Reply.Root == "" {
		return replyRef{}, &platform.Rejected{Reason: "invalid_request", Message: "bluesky: a reply needs its parent's and its root's URIs"}
	}
	parent, err := c.strongRef(ctx, req.Reply.Parent)
	if err != nil {
		return replyRef{}, err
	}
	root := parent
	if req.Reply.Root != req.Reply.Parent {
		if root, err = c.strongRef(ctx, req.Reply.Root); err != nil {
			return replyRef{}, err
		}
	}
	ref := replyRef{Root: root, Parent: parent}
	if req.Checkpoint != nil {
		b, err := json.Marshal(ref)
		if err != nil {
			return replyRef{}, fmt.Errorf("bluesky: encode the reply references: %w", err)
		}
		if err := req.Checkpoint(ctx, string(b)); err != nil {
			return replyRef{}, fmt.Errorf("bluesky: record the reply references before writing the reply (nothing written): %w", err)
		}
	}
	return ref, nil
}

// strongRef reads the record at uri, a post of this repository, for its
// CID.
func (c *Client) strongRef(ctx context.Context, uri string) (strongRef, error) {
	rkey, err := c.ownKey(uri)
	if err != nil {
		return strongRef{}, err
	}
	var out listedRecord
	resp, err := c.query(ctx, "bluesky getRecord", "com.atproto.repo.getRecord", url.Values{"repo": {c.did}, "collection": {postCollection}, "rkey": {rkey}}, &out)
	if err != nil {
		if resp != nil && decodeError(resp).Error == "RecordNotFound" {
			return strongRef{}, &platform.Rejected{Status: resp.Status, Reason: "reply_parent_gone", Message: "bluesky: the post to reply to, " + uri + ", is not there"}
		}
		return strongRef{}, err
	}
	if out.CID == "" || out.URI != uri {
		return strongRef{}, &platform.NotPerformed{Status: resp.Status, Message: "bluesky getRecord: the answer carries no CID for " + uri}
	}
	return strongRef{URI: out.URI, CID: out.CID}, nil
}
