package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"oncepost/shared/publishing"
)

// statusApprovalsShown bounds the overdue approvals `status` lists.
const statusApprovalsShown = 100

// approvalsOverdue lists the targets still waiting for approval at or
// after their slot, as the sweeper's ApprovalOverdue gauge counts them
// (none when the store cannot list them).
func approvalsOverdue(ctx context.Context, posts publishing.Posts, now time.Time) ([]publishing.TargetRef, error) {
	out := []publishing.TargetRef{}
	l, ok := posts.(publishing.ApprovalLister)
	if !ok {
		return out, nil
	}
	refs, err := l.AwaitingApproval(ctx, now.Add(time.Nanosecond), statusApprovalsShown)
	if err != nil {
		return nil, fmt.Errorf("approvals overdue: %w", err)
	}
	return append(out, refs...), nil
}

// printApprovalsOverdue prints `status`'s overdue approvals, if any.
func printApprovalsOverdue(w io.Writer, rep statusReport) {
	if len(rep.ApprovalOverdue) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APPROVAL OVERDUE\tACCOUNT\tSLOT (UTC)\tLATE")
	for _, r := range rep.ApprovalOverdue {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Post, r.Account, r.Slot.UTC().Format(time.RFC3339), rep.At.Sub(r.Slot).Truncate(time.Second))
	}
	tw.Flush()
	fmt.Fprintln(w, "not sent late on their own: oncepost post approve ID --at TIME, or oncepost post reject ID --reason TEXT")
}
