package publishing

import (
	"context"
	"fmt"
	"time"

	"oncepost/shared/ledger"
)

// The held view: the entries waiting for an operator and those still
// unresolved, with the evidence for a decision. `oncepost held`,
// GET /v1/held and the console's inbox each present ListHeld's answer.

// HeldReader reads the ledger entries an operator looks at (Ledger has
// them).
type HeldReader interface {
	// Held lists held entries, least recently updated first; a limit ≤ 0
	// means no limit.
	Held(ctx context.Context, limit int) ([]ledger.Entry, error)
	// Open lists pending and unknown entries open since before t, oldest
	// first.
	Open(ctx context.Context, before time.Time, limit int) ([]ledger.Entry, error)
}

// HistoryReader reads an entry's transitions, oldest first (Ledger has
// it).
type HistoryReader interface {
	History(ctx context.Context, key ledger.Key) ([]ledger.Transition, error)
}

// LookCounter counts the looks an entry's confirm workflows made on the
// platform (the workflow engine's executions know them).
type LookCounter interface {
	Looks(ctx context.Context, e ledger.Entry) (int, error)
}

// HeldQuery says what ListHeld reads besides the entries.
type HeldQuery struct {
	// Now is the time the open entries are open before.
	Now time.Time
	// Limit bounds each of the two lists read (held, then open); ≤ 0
	// means no bound.
	Limit int
	// History, if set, gives every entry its transitions: what each look
	// read back, when, and why it was inconclusive.
	History HistoryReader
	// Looks, if set, counts the looks of every publish entry; a failure
	// to count is kept in HeldList.LooksErr and the entries are listed
	// anyway.
	Looks LookCounter
}

// HeldItem is an entry waiting for an operator (held) or still
// unresolved (pending, unknown), with its evidence.
type HeldItem struct {
	// Entry is the ledger entry as stored: its reason, attempt, maybe-sent
	// count and any decision recorded and not yet applied.
	Entry ledger.Entry
	// PostID is the post the entry publishes, or the post a delete
	// removes a copy of.
	PostID string
	// RemoteID is the evidence (a post found on the platform with the same
	// content), or for a delete the remote post it deletes.
	RemoteID string
	// Since is when the entry last became open, or when it was last
	// updated (a held entry).
	Since time.Time
	// Looks counts the looks of a publish entry's confirm workflows (0
	// without HeldQuery.Looks).
	Looks int
	// History is the entry's transitions, oldest first (nil without
	// HeldQuery.History).
	History []ledger.Transition
}

// HeldList is ListHeld's answer.
type HeldList struct {
	// Items are the held entries, oldest first, then the open ones,
	// oldest first; uploads are left out (their publish entry speaks for
	// them).
	Items []HeldItem
	// More is true when a list was cut at HeldQuery.Limit.
	More bool
	// LooksErr is the first failure to count looks, if any.
	LooksErr error
}

// ListHeld lists the held entries, then the open ones, with their
// evidence.
func ListHeld(ctx context.Context, src HeldReader, q HeldQuery) (HeldList, error) {
	read := q.Limit
	if read > 0 {
		read++ // one more, to know there are more
	}
	held, err := src.Held(ctx, read)
	if err != nil {
		return HeldList{}, fmt.Errorf("list held entries: %w", err)
	}
	open, err := src.Open(ctx, q.Now.Add(time.Nanosecond), read)
	if err != nil {
		return HeldList{}, fmt.Errorf("list open entries: %w", err)
	}
	var out HeldList
	if q.Limit > 0 {
		if len(held) > q.Limit {
			held, out.More = held[:q.Limit], true
		}
		if len(open) > q.Limit {
			open, out.More = open[:q.Limit], true
		}
	}
	out.Items = make([]HeldItem, 0, len(held)+len(open))
	for _, e := range append(held, open...) {
		if e.Action == ledger.Upload {
			continue
		}
		postID, _ := ledger.SubjectPart(e.Subject) // a thread's part names its post
		it := HeldItem{Entry: e, PostID: postID, RemoteID: e.RemoteID, Since: e.OpenSince}
		if it.Since.IsZero() {
			it.Since = e.UpdatedAt
		}
		if e.Action == ledger.Delete {
			// A delete's subject is the remote post; its post id is kept
			// with the entry by the Deleter.
			it.PostID, it.RemoteID = DeletePostID(e), e.Subject
		} else if q.Looks != nil {
			n, lerr := q.Looks.Looks(ctx, e)
			it.Looks = n
			if lerr != nil && out.LooksErr == nil {
				out.LooksErr = lerr
			}
		}
		if q.History != nil {
			if it.History, err = q.History.History(ctx, e.Key); err != nil {
				return HeldList{}, fmt.Errorf("list held entries: history of %s: %w", e.Key, err)
			}
		}
		out.Items = append(out.Items, it)
	}
	return out, nil
}
