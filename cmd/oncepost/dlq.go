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
		{name: "dlq list", summary: "list dead-lettered jobs with their reasons", args: "[--queue jobs|webhooks] [--json]", run: cmdDLQList,
			help: "Lists the jobs the publisher gave up on (a body it could not read, a post or account that did not exist, too many failed deliveries), oldest first, with the reason and the post and account the job names. On AWS, --queue webhooks lists the webhook deliveries given up instead (24 h of failures, a receiver gone, a disabled subscription), with the event and subscription each names.", example: "oncepost dlq list --json"},
		{name: "dlq redrive", summary: "put dead-lettered jobs back on the queue", args: "[--queue jobs|webhooks] ID… | --all", run: cmdDLQRedrive,
			help: "Moves dead letters back to the publish queue, their receive count reset, once their cause is fixed (e.g. the account was added again). Redriving is safe: the ledger makes a job that already went out a no-op. With --queue webhooks (AWS), dead webhook deliveries go back to the webhook queue and are tried for another 24 h, with the same webhook-id.", example: "oncepost dlq redrive --all"},
		{name: "dlq drop", summary: "delete dead-lettered jobs for good", args: "[--queue jobs|webhooks] ID… | --all", run: cmdDLQDrop,
			help: "Deletes dead letters that must not be retried. The post's target keeps its status (cancel it with oncepost post cancel if it should never go out). With --queue webhooks (AWS), deletes dead webhook deliveries.", example: "oncepost dlq drop 5f3c2a9e"},
	}
}

// The queues whose dead letters `dlq` handles (--queue).
const (
	dlqJobs     = "jobs"
	dlqWebhooks = "webhooks"
)

// deadLetterQueue is the backend's dead-letter queue named by --queue.
func (b *backend) deadLetterQueue(which string) (deadLetterQueue, error) {
	switch which {
	case dlqJobs:
		return b.deadLetters, nil
	case dlqWebhooks:
		if b.kind != backendAWS {
			return nil, usageError("queue", "--queue webhooks needs --backend aws: the embedded workspace keeps its webhook deliveries in its outbox")
		}
		if b.webhookDeadLetters == nil {
			return nil, usageError("queue", "the stack has no webhook queue (outputs %s and %s): deploy the current template.yaml", outWebhookQueueURL, outWebhookDeadLetterQueueURL)
		}
		return b.webhookDeadLetters, nil
	}
	return nil, usageError("queue", "--queue is %q: want %s or %s", which, dlqJobs, dlqWebhooks)
}

// deadLetterView is a dead letter as listed: the job it carries decoded
// when it can be.
type deadLetterView struct {
	ID           string          `json:"id"`
	At           time.Time       `json:"at,omitzero"`
	ReceiveCount int             `json:"receive_count"`
	Reason       string          `json:"reason"`
	Job          *publishing.Job `json:"job,omitempty"`
	// Webhook is the delivery a dead webhook message carries.
	Webhook *publishing.WebhookMessage `json:"webhook,omitempty"`
	Body    string                     `json:"body,omitempty"`
}

func (b *backend) deadLetterViews(ctx context.Context, q deadLetterQueue) ([]deadLetterView, error) {
	dls, err := q.DeadLetters(ctx, 0)
	if err != nil {
		return nil, err
	}
	out := []deadLetterView{}
	for _, d := range dls {
		v := deadLetterView{ID: d.ID, At: d.At, ReceiveCount: d.ReceiveCount, Reason: d.Reason}
		if q == b.webhookDeadLetters {
			if m, err := publishing.DecodeWebhookMessage(d.Body); err == nil {
				v.Webhook = &m
			}
		} else if job, err := publishing.DecodeJob(d.Body); err == nil {
			v.Job = &job
		}
		if v.Job == nil && v.Webhook == nil {
			v.Body = snippet(strings.ToValidUTF8(string(d.Body), "\uFFFD"), 200)
		}
		out = append(out, v)
	}
	return out, nil
}

func cmdDLQList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("dlq list")
	asJSON := fs.Bool("json", false, "print JSON")
	which := fs.String("queue", dlqJobs, "whose dead letters: jobs, or webhooks (AWS)")
	b, _, err := parseAndOpen(ctx, fs, where, args, stdout, 0, 0)
	if err != nil {
		return err
	}
	defer b.Close()
	q, err := b.deadLetterQueue(*which)
	if err != nil {
		return err
	}
	views, err := b.deadLetterViews(ctx, q)
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
	what := "JOB"
	if *which == dlqWebhooks {
		what = "DELIVERY"
	}
	fmt.Fprintf(tw, "ID\tAT\tRECEIVED\t%s\tREASON\n", what)
	for _, v := range views {
		job := v.Body
		switch {
		case v.Job != nil:
			job = fmt.Sprintf("post %s → %s", v.Job.Post, v.Job.Account)
		case v.Webhook != nil:
			job = fmt.Sprintf("%s %s → %s", v.Webhook.Event.Type, v.Webhook.Event.ID, v.Webhook.Subscription)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", v.ID, bothZones(v.At), v.ReceiveCount, job, v.Reason)
	}
	tw.Flush()
	flag := ""
	if *which == dlqWebhooks {
		flag = " --queue webhooks"
	}
	fmt.Fprintf(stdout, "\nretry with: oncepost dlq redrive%s ID | --all      discard with: oncepost dlq drop%s ID | --all\n", flag, flag)
	return nil
}

func cmdDLQRedrive(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dlqApply(ctx, "dlq redrive", args, stdout, "redriven", func(q deadLetterQueue, id string) error { return q.Redrive(ctx, id) })
}

func cmdDLQDrop(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dlqApply(ctx, "dlq drop", args, stdout, "dropped", func(q deadLetterQueue, id string) error { return q.Drop(ctx, id) })
}

// dlqApply runs one dead-letter operation on the given ids (a unique
// prefix of at least 6 characters is enough) or on all of them.
func dlqApply(ctx context.Context, name string, args []string, stdout io.Writer, done string, op func(q deadLetterQueue, id string) error) error {
	fs, where := workspaceFlags(name)
	all := fs.Bool("all", false, "every dead letter")
	which := fs.String("queue", dlqJobs, "whose dead letters: jobs, or webhooks (AWS)")
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
	q, err := b.deadLetterQueue(*which)
	if err != nil {
		return err
	}
	views, err := b.deadLetterViews(ctx, q)
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
		if err := op(q, id); errors.Is(err, publishing.ErrMessageNotFound) {
			fmt.Fprintf(stdout, "%s: gone meanwhile\n", id)
			continue
		} else if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %s\n", done, id)
	}
	return nil
}
