package console

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// inboxApprovalsLimit bounds the posts waiting for approval the inbox
// shows.
const inboxApprovalsLimit = 30

// approvalRow is a target waiting for approval as the inbox shows it:
// its times formatted here, and the new time its form suggests.
type approvalRow struct {
	publishing.ApprovalItem
	SlotISO, SlotText string
	// Late is how long ago an overdue slot was.
	Late string
	// At is the new time the approve form of an overdue slot suggests
	// (datetime-local in the viewer's zone): the next whole hour.
	At      string
	Excerpt string
	// Mine: the viewer added the post (the workspace may forbid them to
	// approve it; Desk.Approve decides).
	Mine bool
}

// approvalRows reads the approval queue (Desk.ListApprovals, as GET
// /v1/approvals) into the inbox's data.
func (h *Handler) approvalRows(ctx context.Context, d *inboxData) error {
	q, err := h.cfg.API.Desk.ListApprovals(ctx, inboxApprovalsLimit)
	if err != nil {
		return err
	}
	d.ApprovalsMore, d.ApprovalsOverdue = q.More, q.Overdue
	d.Approvals = make([]approvalRow, 0, len(q.Items))
	next := d.Now.In(d.Zone).Truncate(time.Hour).Add(time.Hour)
	for _, it := range q.Items {
		row := approvalRow{ApprovalItem: it, SlotISO: d.ISO(it.Slot), SlotText: d.Time(it.Slot), Excerpt: excerpt(it.Body, 280),
			Mine: it.Author != "" && it.Author == d.Principal.ID}
		if it.Overdue {
			row.Late = d.Ago(it.Slot)
			row.At = next.Format(datetimeLocal)
		}
		d.Approvals = append(d.Approvals, row)
	}
	return nil
}

// approvePost is POST /inbox/approvals/{id}/approve: fields account and
// at (datetime-local in the viewer's zone; the form of a slot that passed
// has it, that of a slot ahead does not and keeps the slot). Desk.Approve
// decides, as POST /v1/posts/{id}/approve does: a slot that passed
// without a new time is refused, never sent late.
func (h *Handler) approvePost(w http.ResponseWriter, r *http.Request, s *session) {
	id := post.ID(r.PathValue("id"))
	req := publishing.ApproveRequest{Post: id, Account: post.AccountID(r.PostFormValue("account")), By: s.principal.ID}
	if raw := strings.TrimSpace(r.PostFormValue("at")); raw != "" {
		at, err := parseLocalTime(raw, s.location())
		if err != nil {
			h.back(w, r, s, "/inbox#approvals", err.Error(), true)
			return
		}
		req.At = at.Format(time.RFC3339)
	}
	outcomes, err := h.cfg.API.Desk.Approve(r.Context(), req)
	if errors.Is(err, publishing.ErrSelfApproval) {
		h.back(w, r, s, "/inbox#approvals", "Not approved: you added "+string(id)+", and the workspace does not let authors approve their own posts. Someone else with the decide scope approves it.", true)
		return
	}
	h.afterAction(w, r, s, "/inbox#approvals", "Approve "+string(id), outcomes, err)
}

// rejectPost is POST /inbox/approvals/{id}/reject: fields account and
// reason (required). Desk.Reject decides.
func (h *Handler) rejectPost(w http.ResponseWriter, r *http.Request, s *session) {
	id := post.ID(r.PathValue("id"))
	outcomes, err := h.cfg.API.Desk.Reject(r.Context(), id, post.AccountID(r.PostFormValue("account")), r.PostFormValue("reason"), s.principal.ID)
	h.afterAction(w, r, s, "/inbox#approvals", "Reject "+string(id), outcomes, err)
}
