package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// statusReport is what `oncepost status` prints.
type statusReport struct {
	At          time.Time                 `json:"at"`
	Targets     map[post.TargetStatus]int `json:"targets"`
	Ledger      map[ledger.State]int      `json:"ledger"`
	Open        []openRow                 `json:"open"`
	Waiting     []waitingTarget           `json:"waiting"`
	DeadLetters []deadLetterRow           `json:"dead_letters"`
	// Queue is the publish queue's depth.
	Queue queueDepth `json:"queue"`
	// ApprovalOverdue are the targets still waiting for approval at or
	// after their slot (the ApprovalOverdue gauge), earliest first.
	ApprovalOverdue []publishing.TargetRef `json:"approval_overdue"`
}

type openRow struct {
	Key        ledger.Key    `json:"key"`
	Action     ledger.Action `json:"action"`
	Account    string        `json:"account"`
	Subject    string        `json:"subject"`
	State      ledger.State  `json:"state"`
	Attempt    int           `json:"attempt"`
	OpenSince  time.Time     `json:"open_since"`
	AgeSeconds float64       `json:"age_seconds"`
	Stale      bool          `json:"stale"`
	Reason     string        `json:"reason,omitempty"`
}

type deadLetterRow struct {
	ID     string    `json:"id"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at,omitzero"`
}

// cmdStatus is `oncepost status`: targets by status and open ledger rows.
func cmdStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("status")
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parseFlags(fs, args, stdout, 0, 0); err != nil {
		return err
	}
	b, err := where.openStatus(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	rep, err := readStatus(ctx, b, time.Now().UTC())
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, rep)
	}
	printStatus(stdout, rep)
	return nil
}

func mustExist(path string) error {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return usageError("db", "%s does not exist (start with `oncepost run`, or `make run`)", filepath.Clean(path))
	} else if err != nil {
		return err
	}
	return nil
}

// readStatus reads what `status` prints from the backend's store and
// dead-letter queue.
func readStatus(ctx context.Context, b *backend, now time.Time) (statusReport, error) {
	counts, err := b.views.Counts(ctx)
	if err != nil {
		return statusReport{}, err
	}
	// Every open entry, stale as the sweeper counts it (GaugeSources).
	g, err := publishing.GaugeSources{Ledger: b.ledger}.ReadOpen(ctx, now)
	if err != nil {
		return statusReport{}, err
	}
	rep := statusReport{At: now, Targets: counts.Targets, Ledger: counts.Ledger, Open: []openRow{}, Waiting: []waitingTarget{}, DeadLetters: []deadLetterRow{}}
	if rep.Queue, err = b.depth.Depth(ctx); err != nil {
		return statusReport{}, err
	}
	waiting, err := b.views.Waiting(ctx, 100)
	if err != nil {
		return statusReport{}, err
	}
	rep.Waiting = append(rep.Waiting, waiting...)
	for _, e := range g.Open {
		rep.Open = append(rep.Open, openRow{Key: e.Key, Action: e.Action, Account: e.Account, Subject: e.Subject, State: e.State,
			Attempt: e.Attempt, OpenSince: e.OpenSince, AgeSeconds: g.Age(e).Seconds(), Stale: g.Stale(e), Reason: e.Reason})
	}
	dls, err := b.deadLetters.DeadLetters(ctx, 0)
	if err != nil {
		return statusReport{}, err
	}
	for _, d := range dls {
		rep.DeadLetters = append(rep.DeadLetters, deadLetterRow{ID: d.ID, Reason: d.Reason, At: d.At})
	}
	if rep.ApprovalOverdue, err = approvalsOverdue(ctx, b.posts, now); err != nil {
		return statusReport{}, err
	}
	return rep, nil
}

func printStatus(w io.Writer, rep statusReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGETS\tCOUNT")
	for _, s := range []post.TargetStatus{post.NeedsApproval, post.Scheduled, post.Triggered, post.Waiting, post.Publishing, post.Published, post.Held, post.Failed, post.Cancelled, post.Deleted} {
		fmt.Fprintf(tw, "%s\t%d\n", s, rep.Targets[s])
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, describeQueue(rep.Queue))
	fmt.Fprintln(w)
	if len(rep.Open) == 0 {
		fmt.Fprintln(w, "no open ledger rows")
	} else {
		fmt.Fprintln(tw, "OPEN LEDGER ROWS\tSTATE\tATTEMPT\tACCOUNT\tSUBJECT\tAGE\tREASON")
		for _, o := range rep.Open {
			age := time.Duration(o.AgeSeconds * float64(time.Second)).Truncate(time.Second).String()
			if o.Stale {
				age += " STALE"
			}
			fmt.Fprintf(tw, "%s %s\t%s\t%d\t%s\t%s\t%s\t%s\n", o.Action, o.Key[:12], o.State, o.Attempt, o.Account, o.Subject, age, o.Reason)
		}
		tw.Flush()
	}
	if len(rep.Waiting) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(tw, "WAITING\tACCOUNT\tNEXT TRY (UTC)\tIN\tREASON")
		for _, wt := range rep.Waiting {
			in := wt.NextTry.Sub(rep.At).Truncate(time.Second)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", wt.Post, wt.Account, wt.NextTry.UTC().Format(time.RFC3339), max(in, 0), wt.Reason)
		}
		tw.Flush()
	}
	printApprovalsOverdue(w, rep)
	if len(rep.DeadLetters) > 0 {
		fmt.Fprintf(w, "\n%d dead letters; newest: %s\n", len(rep.DeadLetters), slices.MaxFunc(rep.DeadLetters, func(a, b deadLetterRow) int { return a.At.Compare(b.At) }).Reason)
	}
}

// describeQueue is the publish queue's depth in one line.
func describeQueue(d queueDepth) string {
	s := fmt.Sprintf("queue: %d visible, %d in flight, %d delayed, %d dead letters", d.Visible, d.InFlight, d.Delayed, d.DeadLetters)
	if d.Undecodable > 0 {
		s += fmt.Sprintf("; %d undecodable (the runtime's next receive dead-letters them)", d.Undecodable)
	}
	if d.Approximate {
		s += " (SQS's approximate counts)"
	}
	return s
}

// printJSON writes v as indented JSON: every --json output.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
