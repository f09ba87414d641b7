package console

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The inbox's lists are bounded: a page is read in a few queries
// whatever the workspace holds.
const (
	// inboxHeldLimit bounds the held entries and the open ones shown
	// (each list), with their history.
	inboxHeldLimit = 30
	// inboxFailedLimit is a page of posts with a failed target.
	inboxFailedLimit = 25
	// inboxDeadLimit bounds the dead letters shown.
	inboxDeadLimit = 50
)

// inboxData is the inbox page: what waits for a person.
type inboxData struct {
	*view
	// Approvals are the posts waiting for approval (inbox_approval.go),
	// earliest slot first; more wait when ApprovalsMore.
	Approvals        []approvalRow
	ApprovalsMore    bool
	ApprovalsOverdue int
	Held             []heldRow
	// HeldMore: more entries wait than are shown.
	HeldMore bool
	// HistoryShown: the ledger can read an entry's history.
	HistoryShown bool
	Failed       []failedTarget
	// FailedNext is the cursor of the next page of failed targets ("" on
	// the last); FailedPaged is true past the first page.
	FailedNext  string
	FailedPaged bool
	DeadLetters []deadLetter
	// DeadTotal is how many dead letters the queue holds.
	DeadTotal int
	// RemoteIDMax is the longest remote id a confirm takes, in bytes.
	RemoteIDMax, ReasonMax int
}

// heldRow is a held or open entry as the page shows it: its times
// formatted here, not by the template (a page of them renders in a third
// of the time).
type heldRow struct {
	publishing.HeldItem
	IsDelete, IsHeld              bool
	SinceISO, SinceText, SinceAgo string
	SlotISO, SlotText             string
	History                       []historyRow
	// Text is the start of the post's text: what a person decides on
	// ("" when the post is gone).
	Text string
}

// historyRow is one move of an entry's history.
type historyRow struct {
	AtISO, AtText, From, To, Reason string
	Attempt                         int
}

// failedTarget is a target that failed, with its post's text.
type failedTarget struct {
	Post    post.ID
	Excerpt string
	post.Target
}

// deadLetter is a publish job the queue gave up on.
type deadLetter struct {
	publishing.DeadLetter
	// Job is the job decoded (nil if it cannot be: Excerpt has the start
	// of its body then).
	Job     *publishing.Job
	Excerpt string
}

// showInbox is GET /inbox: held and unresolved entries with their
// evidence and the decisions on them, failed targets, dead letters.
func (h *Handler) showInbox(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	d := inboxData{view: h.newView(s, "inbox", "Inbox"), RemoteIDMax: publishing.MaxIDBytes, ReasonMax: publishing.MaxDecisionReasonBytes}
	q := publishing.HeldQuery{Now: d.Now, Limit: inboxHeldLimit}
	// Every Ledger reads history; a HeldLister that cannot shows none.
	if hist, ok := h.cfg.API.Held.(publishing.HistoryReader); ok {
		q.History, d.HistoryShown = hist, true
	}
	if err := h.approvalRows(ctx, &d); err != nil {
		h.fail(w, r, err)
		return
	}
	held, err := publishing.ListHeld(ctx, h.cfg.API.Held, q)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d.HeldMore = held.More
	d.Held = make([]heldRow, 0, len(held.Items))
	texts := map[string]string{}
	for _, it := range held.Items {
		row := heldRow{HeldItem: it, IsDelete: it.Entry.Action == ledger.Delete, IsHeld: it.Entry.State == ledger.Held,
			SinceISO: d.ISO(it.Since), SinceText: d.Time(it.Since), SinceAgo: d.Ago(it.Since)}
		if !it.Entry.Slot.IsZero() {
			row.SlotISO, row.SlotText = d.ISO(it.Entry.Slot), d.Time(it.Entry.Slot)
		}
		for _, t := range it.History {
			from := string(t.From)
			if from == "" {
				from = "(new)"
			}
			row.History = append(row.History, historyRow{AtISO: d.ISO(t.At), AtText: d.Time(t.At), From: from, To: string(t.To), Reason: t.Reason, Attempt: t.Attempt})
		}
		if it.PostID != "" {
			if _, seen := texts[it.PostID]; !seen {
				texts[it.PostID] = ""
				if body, err := h.postBody(ctx, post.ID(it.PostID)); err == nil {
					texts[it.PostID] = excerpt(body, 280)
				} else if !errors.Is(err, post.ErrNotFound) {
					h.fail(w, r, err)
					return
				}
			}
			row.Text = texts[it.PostID]
		}
		d.Held = append(d.Held, row)
	}

	after := r.URL.Query().Get("failed_after")
	page, err := h.cfg.API.Desk.List(ctx, publishing.PostFilter{Statuses: []post.TargetStatus{post.Failed}, Limit: inboxFailedLimit, After: after})
	if errors.Is(err, publishing.ErrBadCursor) {
		d.Flash, d.FlashErr = "failed_after: not a position in this list; showing the first page", true
		after = ""
		page, err = h.cfg.API.Desk.List(ctx, publishing.PostFilter{Statuses: []post.TargetStatus{post.Failed}, Limit: inboxFailedLimit})
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d.FailedNext, d.FailedPaged = page.Next, after != ""
	for _, p := range page.Posts {
		for _, t := range p.Targets {
			if t.Status == post.Failed {
				d.Failed = append(d.Failed, failedTarget{Post: p.ID, Excerpt: excerpt(p.Body, 80), Target: t})
			}
		}
	}

	depth, err := h.cfg.API.DeadLetters.Depth(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d.DeadTotal = depth.DeadLetters
	dls, err := h.cfg.API.DeadLetters.DeadLetters(ctx, inboxDeadLimit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, dl := range dls {
		v := deadLetter{DeadLetter: dl}
		if job, err := publishing.DecodeJob(dl.Body); err == nil {
			v.Job = &job
		} else {
			v.Excerpt = excerpt(strings.ToValidUTF8(string(dl.Body), "\uFFFD"), 120)
		}
		d.DeadLetters = append(d.DeadLetters, v)
	}
	d.DeadTotal = max(d.DeadTotal, len(d.DeadLetters))
	h.render(w, r, http.StatusOK, "inbox", d)
}

// excerpt is the start of s, at most n runes, "…" if cut.
func excerpt(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

// postBody is a post's text: one read of the post (Config.Posts), or,
// without that port, through Desk.Show (which reads its ledger entries
// and their history too). post.ErrNotFound when there is none.
func (h *Handler) postBody(ctx context.Context, id post.ID) (string, error) {
	if h.cfg.Posts != nil {
		p, err := h.cfg.Posts.GetPost(ctx, id)
		return p.Body, err
	}
	v, err := h.cfg.API.Desk.Show(ctx, id)
	return v.Post.Body, err
}
