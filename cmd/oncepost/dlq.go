package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"oncepost/shared/publishing"
)

func dlqCommands() []*command {
	return []*command{
		{name: "dlq list", summary: "list dead-lettered jobs with their reasons", args: "[--json]", run: cmdDLQList,
			help: "Lists the jobs the publisher gave up on (a body it could not read, a post or account that did not exist, too many failed deliveries), oldest first, with the reason and the post and account the job names.", example: "oncepost dlq list --json"},
		{name: "dlq redrive", summary: "put dead-lettered jobs back on the queue", args: "ID… | --all", run: cmdDLQRedrive,
			help: "Moves dead letters back to the publish queue, their receive count reset, once their cause is fixed (e.g. the account was added again). Redriving is safe: the ledger makes a job that already went out a no-op.", example: "oncepost dlq redrive --all"},
		{name: "dlq drop", summary: "delete dead-lettered jobs for good", args: "ID… | --all", run: cmdDLQDrop,
			help: "Deletes dead letters that must not be retried. The post's target keeps its status (cancel it with oncepost post cancel if it should never go out).", example: "oncepost dlq drop 5f3c2a9e"},
	}
}

// deadLetterView is a dead letter as listed: the job it carries decoded
// when it can be.
type deadLetterView struct {
	ID           string          `json:"id"`
	At           time.Time       `json:"at,omitzero"`
	ReceiveCount int             `json:"receive_count"`
	Reason       string          `json:"reason"`
	Job          *publishing.Job `json:"job,omitempty"`
	Body         string          `json:"body,omitempty"`
}

func (b *backend) deadLetterViews(ctx context.Context) ([]deadLetterView, error) {
	dls, err := b.deadLetters.DeadLetters(ctx, 0)
	if err != nil {
		return nil, err
	}
	out := []deadLetterView{}
	for _, d := range dls {
		v := deadLetterView{ID: d.ID, At: d.At, ReceiveCount: d.ReceiveCount, Reason: d.Reason}
		if job, err := publishing.DecodeJob(d.Body); err == nil {
			v.Job = &job
		} else {
			v.Body = snippet(strings.ToValidUTF8(string(d.Body), "\uFFFD"), 200)
		}
		out = append(out, v)
	}
	return out, nil
}

func cmdDLQList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("dlq list")
	asJSON := fs.Bool("json", false, "print JSON")
	b, _, err := parseAndOpen(ctx, fs, where, args, stdout, 0, 0)
	if err != nil {
		return err
	}
	defer b.Close()
	views, err := b.deadLetterViews(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, views)
	}
	if len(views) == 0 {
		fmt.Fprintln(stdout, "no dead letters")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAT\tRECEIVED\tJOB\tREASON")
	for _, v := range views {
		job := v.Body
		if v.Job != nil {
			job = fmt.Sprintf("post %s → %s", v.Job.Post, v.Job.Account)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", v.ID, bothZones(v.At), v.ReceiveCount, job, v.Reason)
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\nretry with: oncepost dlq redrive ID | --all      discard with: oncepost dlq drop ID | --all")
	return nil
}

func cmdDLQRedrive(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dlqApply(ctx, "dlq redrive", args, stdout, "redriven", func(b *backend, id string) error { return b.deadLetters.Redrive(ctx, id) })
}

func cmdDLQDrop(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dlqApply(ctx, "dlq drop", args, stdout, "dropped", func(b *backend, id string) error { return b.deadLetters.Drop(ctx, id) })
}

// dlqApply runs one dead-letter operation on the given ids (a unique
// prefix of at least 6 characters is enough) or on all of them.
func dlqApply(ctx context.Context, name string, args []string, stdout io.Writer, done string, op func(b *backend, id string) error) error {
	fs, where := workspaceFlags(name)
	all := fs.Bool("all", false, "every dead letter")
	rest, err := parseFlags(fs, args, stdout, 0, 1000)
	if err != nil {
		return err
	}
	if *all == (len(rest) > 0) {
		return badInput("give dead-letter ids (oncepost dlq list) or --all, one of the two")
	}
	b, err := where.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	views, err := b.deadLetterViews(ctx)
	if err != nil {
		return err
	}
	var ids []string
	if *all {
		for _, v := range views {
			ids = append(ids, v.ID)
		}
	}
	for _, arg := range rest {
		var match []string
		for _, v := range views {
			if v.ID == arg || (len(arg) >= 6 && strings.HasPrefix(v.ID, arg)) {
				match = append(match, v.ID)
			}
		}
		switch len(match) {
		case 0:
			return badInput("no dead letter %q (oncepost dlq list); nothing was changed", arg)
		case 1:
			ids = append(ids, match[0])
		default:
			return badInput("%q matches %d dead letters; give more characters; nothing was changed", arg, len(match))
		}
	}
	if len(ids) == 0 {
		fmt.Fprintln(stdout, "no dead letters")
		return nil
	}
	for _, id := range ids {
		if err := op(b, id); errors.Is(err, publishing.ErrMessageNotFound) {
			fmt.Fprintf(stdout, "%s: gone meanwhile\n", id)
			continue
		} else if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %s\n", done, id)
	}
	return nil
}
