package publishing

import (
	"context"
	"errors"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
)

// PartView is one part of a thread on one target: its text and where its
// publish stands (its ledger entry's state, remote id and reason; no
// state while nothing was sent for it).
type PartView struct {
	// Part is 1 for the post itself, 2 for its first reply, …
	Part int    `json:"part"`
	Text string `json:"text"`
	// Key is the part's publish entry's key (ledger.PartKey).
	Key      ledger.Key   `json:"ledger_key"`
	State    ledger.State `json:"state,omitempty"`
	RemoteID string       `json:"remote_id,omitempty"`
	Reason   string       `json:"reason,omitempty"`
}

// parts reads the parts of p's thread on target t, and the keys of the
// ledger entries Show lists for the target: each part's publish entry,
// then the delete entries of the parts that have a remote id, last part
// first as a thread is deleted (the target's own, part 1's, last).
func (d *Desk) parts(ctx context.Context, p post.Post, t post.Target) ([]PartView, []ledger.Key, error) {
	var (
		out     []PartView
		keys    []ledger.Key
		deletes []ledger.Key
	)
	for k := 1; k <= p.Parts(); k++ {
		pv := PartView{Part: k, Text: p.Part(k).Body, Key: ledger.PartKey(string(t.Account), string(p.ID), k, t.Slot)}
		e, err := d.Ledger.Get(ctx, pv.Key)
		switch {
		case err == nil:
			pv.State, pv.RemoteID, pv.Reason = e.State, e.RemoteID, e.Reason
		case !errors.Is(err, ledger.ErrNotFound):
			return nil, nil, err
		}
		out = append(out, pv)
		keys = append(keys, pv.Key)
		if pv.RemoteID != "" {
			deletes = append([]ledger.Key{ledger.DeleteKey(string(t.Account), pv.RemoteID)}, deletes...)
		}
	}
	return out, append(keys, deletes...), nil
}

// partKey is the key of the thread part a target waits on: the first
// part whose publish entry is not confirmed (part 1's, the post's key,
// for a post without a thread or one nothing was sent for).
func (d *Desk) partKey(ctx context.Context, p post.Post, t post.Target) (ledger.Key, error) {
	first := ledger.PublishKey(string(t.Account), string(p.ID), t.Slot)
	for k := 1; k <= p.Parts(); k++ {
		key := ledger.PartKey(string(t.Account), string(p.ID), k, t.Slot)
		e, err := d.Ledger.Get(ctx, key)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			if k == 1 {
				return first, nil
			}
			return key, nil
		case err != nil:
			return "", err
		case e.State != ledger.Confirmed:
			return key, nil
		}
	}
	return first, nil
}
