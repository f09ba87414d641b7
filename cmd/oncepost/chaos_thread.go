package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The drill's threads (`oncepost chaos --thread N`): each round is a
// thread of N parts. Through the ledger every part must be on the
// platform once, in order, each replying to the one before; the naive
// template (--naive) posts the parts one after the other with its three
// tries each, replying to the part the platform last answered, and
// duplicates parts whose answer was lost.

// chaosPartText is the text of part k (1-based) of the drill's round i.
func chaosPartText(p chaosProfile, i, k int) string {
	if p.Thread <= 1 {
		return fmt.Sprintf("Chaos round %d: this text appears once.", i)
	}
	return fmt.Sprintf("Chaos round %d, part %d of %d: this text appears once.", i, k, p.Thread)
}

// chaosPost is the drill's round i, without its targets.
func chaosPost(p chaosProfile, i int) post.Post {
	pst := post.Post{ID: post.ID(fmt.Sprintf("round-%04d", i)), Body: chaosPartText(p, i, 1)}
	for k := 2; k <= p.Thread; k++ {
		pst.Thread = append(pst.Thread, chaosPartText(p, i, k))
	}
	return pst
}

// naivePartText is the text of part k of the naive template's round i.
func naivePartText(p chaosProfile, i, k int) string {
	if p.Thread <= 1 {
		return naiveText(i)
	}
	return fmt.Sprintf("Naive round %d, part %d of %d: this text should appear once.", i, k, p.Thread)
}

// naiveThread are the texts after the first of the naive round i.
func naiveThread(p chaosProfile, i int) []string {
	var out []string
	for k := 2; k <= p.Thread; k++ {
		out = append(out, naivePartText(p, i, k))
	}
	return out
}

// naiveRound publishes the naive round i with the seed's template: each
// part up to three tries, 40 ms apart, each a create of its own (a fresh
// handle, as a client without a ledger makes); a part replies to the last
// part the platform answered. A part whose three tries all fail ends the
// round: the next part would have nothing to reply to.
func naiveRound(ctx context.Context, p chaosProfile, c platform.Client, i int) {
	var root, parent string
	for k := 1; k <= max(p.Thread, 1); k++ {
		req := platform.PublishRequest{Text: naivePartText(p, i, k)}
		if k > 1 {
			req.Reply = &platform.ReplyRef{Parent: parent, Root: root}
		}
		sent := false
		for try := 0; try < 3 && !sent; try++ {
			req.Handle, req.CreatedAt = ledger.NewHandle(), time.Now()
			cctx, cancel := context.WithTimeout(ctx, p.Timeout)
			r, err := c.Publish(cctx, req)
			cancel()
			if err == nil {
				sent, parent = true, r.RemoteID
				if k == 1 {
					root = r.RemoteID
				}
				break
			}
			time.Sleep(40 * time.Millisecond)
		}
		if !sent {
			return
		}
	}
}

// countDuplicateParts counts, in copies (the platform's posts by text),
// the copies beyond the first of every round's parts after the first.
func countDuplicateParts(p chaosProfile, copies map[string][]string, text func(chaosProfile, int, int) string) int {
	n := 0
	for i := 0; i < p.Rounds; i++ {
		for k := 2; k <= p.Thread; k++ {
			if c := len(copies[text(p, i, k)]); c > 1 {
				n += c - 1
			}
		}
	}
	return n
}

// duplicateParts counts the drill's duplicate thread parts on the
// fixture's platform.
func duplicateParts(ctx context.Context, p chaosProfile, fx chaosFixture) (int, error) {
	if p.Thread <= 1 {
		return 0, nil
	}
	copies, err := fx.copies(ctx)
	if err != nil {
		return 0, err
	}
	return countDuplicateParts(p, copies, chaosPartText), nil
}

// checkThreadRound checks one thread round against the platform's view:
// every part's ledger entry and post; a published target has every part
// on the platform once under its confirmed entry's remote id, part 1
// replying to nothing and each other part to the one before, the target
// under part 1's id; a held or failed one is explained by the fault plan
// for the part that stopped it, and the parts before it are on the
// platform as above. Every confirmed part's remote id is noted in
// confirmed.
func checkThreadRound(ctx context.Context, rt *runtime, job publishing.Job, p post.Post, tg post.Target, view platformView,
	confirmed map[string]bool, problem func(string, ...any)) error {
	texts := append([]string{p.Body}, p.Thread...)
	prev := ""
	for k := 1; k <= len(texts); k++ {
		e, err := rt.store.Get(ctx, ledger.PartKey(string(job.Account), string(job.Post), k, job.Slot))
		if err != nil && !errors.Is(err, ledger.ErrNotFound) {
			return err
		}
		if e.State != ledger.Confirmed {
			switch tg.Status {
			case post.Published:
				problem("%s is published, yet its part %d is %s", job.Post, k, e.State)
			case post.Held, post.Failed:
				if why := view.explain(e); why != "" {
					problem("%s is %s at part %d (%s): %s", job.Post, tg.Status, k, tg.Reason, why)
				}
			}
			return nil
		}
		confirmed[e.RemoteID] = true
		text, ok := view.textOf[e.RemoteID]
		switch {
		case !ok:
			problem("%s part %d is confirmed as %s, which the platform does not have", job.Post, k, e.RemoteID)
		case text != texts[k-1]:
			problem("%s part %d is confirmed as %s, which carries another text", job.Post, k, e.RemoteID)
		case view.copies[text] != 1:
			problem("%s part %d is on the platform %d times", job.Post, k, view.copies[text])
		case view.parentOf[e.RemoteID] != prev:
			problem("%s part %d replies to %q, not to part %d (%q)", job.Post, k, view.parentOf[e.RemoteID], k-1, prev)
		}
		if k == 1 && tg.Status == post.Published && tg.RemoteID != e.RemoteID {
			problem("%s is published as %s, not as its part 1 %s", job.Post, tg.RemoteID, e.RemoteID)
		}
		prev = e.RemoteID
	}
	if tg.Status != post.Published {
		problem("%s has every part confirmed, yet it is %s (%s)", job.Post, tg.Status, tg.Reason)
	}
	return nil
}
