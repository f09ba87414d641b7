package post

import (
	"fmt"
	"strings"
)

// MaxThreadParts is the most parts a thread has, the post itself
// included: a chain longer than this is refused when the post is added.
// Each part is a send of its own, one after the other, each waiting for
// the one before to be confirmed, and a delete takes them all back in
// reverse: 25 covers the long threads people write while a thread's
// publish stays within minutes.
const MaxThreadParts = 25

// Parts is how many parts the post goes out as: 1, plus its thread.
func (p Post) Parts() int { return 1 + len(p.Thread) }

// Part is the post as its thread's part (1-based) goes out: part 1 is
// the post itself; part k ≥ 2 carries Thread[k-2] as its body on every
// platform, without media (a thread's attachments go with its first
// part). Its id and targets are the post's.
func (p Post) Part(k int) Post {
	if k <= 1 || k > p.Parts() {
		return p
	}
	return Post{ID: p.ID, Body: p.Thread[k-2], Targets: p.Targets, CreatedAt: p.CreatedAt, Author: p.Author}
}

// validateThread checks the draft's thread: no more than MaxThreadParts
// parts in all, each part's text valid UTF-8, not empty and free of
// blocked terms. Each part's length is checked per target by checkPart.
func (d Draft) validateThread(r Rules, bad func(field, problem, fix string)) {
	if len(d.Thread) == 0 {
		return
	}
	if n := 1 + len(d.Thread); n > MaxThreadParts {
		bad("thread", fmt.Sprintf("makes %d parts with the post, over the limit of %d", n, MaxThreadParts),
			fmt.Sprintf("split it into threads of at most %d parts", MaxThreadParts))
	}
	for i, text := range d.Thread {
		f := fmt.Sprintf("thread[%d]", i)
		if off := InvalidUTF8(text); off >= 0 {
			bad(f, fmt.Sprintf("byte %d is not valid UTF-8", off), "save the text as UTF-8")
		} else if strings.TrimSpace(text) == "" {
			bad(f, "is empty", "write the text of this reply, or leave it out")
		} else if m, found := FindBlocked(text, r.Blocked); found {
			bad(f, m.Error(), fmt.Sprintf("rewrite it, or take the term off the blocklist (oncepost blocklist remove %q)", m.Term.Term))
		}
	}
}

// checkThreadTarget checks the thread against one target's account: its
// platform must have a reply chain, and every part must fit the
// platform's limits as the body does (no part carries media).
func (d Draft) checkThreadTarget(r Rules, acc Account, lim Limits, bad func(field, problem, fix string)) {
	if len(d.Thread) == 0 {
		return
	}
	if r.Replies == nil || !r.Replies(acc.Platform) {
		bad("thread", fmt.Sprintf("account %q is on %s, which has no reply chain for a thread", acc.ID, acc.Platform),
			fmt.Sprintf("leave %s out of this post, or post the parts as posts of their own", acc.ID))
		return
	}
	for i, text := range d.Thread {
		if InvalidUTF8(text) >= 0 {
			continue
		}
		f := fmt.Sprintf("thread[%d]", i)
		c := r.count(lim, acc.Platform, text, false)
		if c.Limit > 0 && c.Length > c.Limit {
			bad(f, fmt.Sprintf("is %d characters as %s counts them, over its limit of %d for %s", c.Length, acc.Platform, c.Limit, acc.ID),
				fmt.Sprintf("shorten it by %d characters, or split it into two replies", c.Length-c.Limit))
		}
		if c.MaxBytes > 0 && c.Bytes > c.MaxBytes {
			bad(f, fmt.Sprintf("is %d bytes of UTF-8, over %s's limit of %d bytes for %s", c.Bytes, acc.Platform, c.MaxBytes, acc.ID),
				fmt.Sprintf("shorten it by %d bytes", c.Bytes-c.MaxBytes))
		}
	}
}
