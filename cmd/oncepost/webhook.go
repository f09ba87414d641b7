package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/webhook"
)

func webhookCommands() []*command {
	return []*command{
		{name: "webhook add", summary: "send signed events to a URL (prints its secret once)", args: "--url URL [--events T,T] [--allow-private] [--description TEXT] [--json]", run: cmdWebhookAdd,
			help: "Subscribes a receiver to events: " + webhook.EventTypeNames() + " (all of them when --events is left out). " +
				"Every delivery is signed the Standard Webhooks way (webhook-id, webhook-timestamp, webhook-signature, HMAC-SHA256 with the secret printed once here), " +
				"carries the same webhook-id on every retry, and is retried with backoff for 24 h, then kept as a dead delivery (oncepost webhook deliveries --state dead) you can redrive. " +
				"The URL must be https (http only to a loopback address), is never redirected, and may not reach a private, loopback or link-local address unless --allow-private is given.",
			example: "oncepost webhook add --url https://cms.example.com/hooks/oncepost --events post.published,post.failed"},
		{name: "webhook list", summary: "list webhook subscriptions", args: "[--json]", run: cmdWebhookList,
			help: "Lists the subscriptions: id, URL, events, and whether the receiver disabled it (410 Gone). Secrets are never shown again.", example: "oncepost webhook list"},
		{name: "webhook remove", summary: "remove a subscription and its pending deliveries", args: "ID", run: cmdWebhookRemove,
			help: "Removes a subscription; its deliveries not yet made are dropped.", example: "oncepost webhook remove wh_3k9x2m4p7q"},
		{name: "webhook deliveries", summary: "list webhook deliveries (pending, delivered, dead)", args: "[--state S] [--limit N] [--json]", run: cmdWebhookDeliveries,
			help:    "Lists deliveries, most recently updated first, with their attempts, next try and last error. A dead delivery was given up after 24 h of failures (or its receiver answered 410): redrive it with oncepost webhook redrive ID.",
			example: "oncepost webhook deliveries --state dead"},
		{name: "webhook redrive", summary: "try a dead delivery again", args: "ID", run: cmdWebhookRedrive,
			help: "Makes a dead delivery pending again, due now, with a new 24 h of retries; it keeps its webhook-id, so a receiver that got it before can tell.", example: "oncepost webhook redrive evt_…/wh_…"},
	}
}

// webhookStore is where a workspace keeps its subscriptions and their
// deliveries.
type webhookStore interface {
	publishing.Subscriptions
	publishing.Deliveries
}

// splitEvents reads --events: comma-separated event type names, each
// trimmed; none when empty.
func splitEvents(raw string) []string {
	if strings.TrimSpace(raw) == "" {
		return nil
	}
	var out []string
	for _, s := range strings.Split(raw, ",") {
		out = append(out, strings.TrimSpace(s))
	}
	return out
}

// subscriptionInputError is webhook.NewSubscription's refusal as a usage
// error naming the flag of the first field refused ("events[2]" is
// --events); another error is returned as is.
func subscriptionInputError(err error) error {
	var fe *post.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	flag, _, _ := strings.Cut(fe.Field, "[")
	if flag == "url" && fe.Problem == "is missing" {
		return usageError("url", "is missing: give the receiver's URL, e.g. --url https://cms.example.com/hooks/oncepost")
	}
	if flag == "url" {
		// CheckURL's refusals say how to fix them.
		return usageError(flag, "%s", fe.Problem)
	}
	return usageError(flag, "%s; %s", fe.Problem, fe.Fix)
}

// subscriptionAdded is `webhook add --json`: the subscription and its
// secret, shown this once.
type subscriptionAdded struct {
	publishing.Subscription
	Secret string `json:"secret"`
}

func cmdWebhookAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("webhook add")
	url := fs.String("url", "", "the receiver's URL (https; http only to a loopback address)")
	events := fs.String("events", "", "comma-separated event types: "+webhook.EventTypeNames()+" (default all)")
	allowPrivate := fs.Bool("allow-private", false, "let the URL reach private, loopback and link-local addresses (a receiver on your own network)")
	description := fs.String("description", "", "what the receiver is, for the list")
	asJSON := fs.Bool("json", false, "print the subscription and its secret as JSON")
	if _, err := parseFlags(fs, args, stdout, 0, 0); err != nil {
		return err
	}
	s, err := webhook.NewSubscription(webhook.SubscriptionRequest{URL: *url, Events: splitEvents(*events),
		AllowPrivate: *allowPrivate, Description: *description}, time.Now())
	if err != nil {
		return subscriptionInputError(err)
	}
	secret := s.Secret
	b, err := where.create(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	store := b.webhooks
	if err := store.AddSubscription(ctx, s); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, subscriptionAdded{Subscription: s, Secret: secret})
	}
	fmt.Fprintf(stdout, "subscribed %s to %s\n", s.ID, eventsOf(s))
	fmt.Fprintf(stdout, "signing secret (shown only now; keep it in your receiver's secret store):\n%s\n", secret)
	return nil
}

func eventsOf(s publishing.Subscription) string {
	if len(s.Events) == 0 {
		return "every event"
	}
	names := make([]string, len(s.Events))
	for i, t := range s.Events {
		names[i] = string(t)
	}
	return strings.Join(names, ",")
}

func cmdWebhookList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("webhook list")
	asJSON := fs.Bool("json", false, "print JSON")
	b, _, err := parseAndOpen(ctx, fs, where, args, stdout, 0, 0)
	if err != nil {
		return err
	}
	defer b.Close()
	store := b.webhooks
	subs, err := store.ListSubscriptions(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if subs == nil {
			subs = []publishing.Subscription{}
		}
		return printJSON(stdout, subs)
	}
	if len(subs) == 0 {
		fmt.Fprintln(stdout, "no webhook subscriptions (oncepost webhook add --url URL)")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tURL\tEVENTS\tSTATE\tDESCRIPTION")
	for _, s := range subs {
		state := "active"
		if s.Disabled {
			state = "disabled: " + s.DisabledReason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.ID, s.URL, eventsOf(s), state, s.Description)
	}
	return tw.Flush()
}

func cmdWebhookRemove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("webhook remove")
	b, rest, err := parseAndOpen(ctx, fs, where, args, stdout, 1, 1)
	if err != nil {
		return err
	}
	defer b.Close()
	store := b.webhooks
	if err := store.RemoveSubscription(ctx, rest[0]); errors.Is(err, post.ErrNotFound) {
		return badInput("no webhook subscription %q (oncepost webhook list)", rest[0])
	} else if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed %s\n", rest[0])
	return nil
}

func cmdWebhookDeliveries(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("webhook deliveries")
	state := fs.String("state", "", "only deliveries in this state: pending, delivered or dead")
	limit := fs.Int("limit", 100, "at most this many")
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parseFlags(fs, args, stdout, 0, 0); err != nil {
		return err
	}
	st := publishing.DeliveryState(*state)
	switch st {
	case "", publishing.DeliveryPending, publishing.DeliveryDelivered, publishing.DeliveryDead:
	default:
		return usageError("state", "%q: use pending, delivered or dead", *state)
	}
	if *limit < 1 {
		return usageError("limit", "%d: need at least 1", *limit)
	}
	b, err := where.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	store := b.webhooks
	ds, err := store.ListDeliveries(ctx, st, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		if ds == nil {
			ds = []publishing.Delivery{}
		}
		return printJSON(stdout, ds)
	}
	if len(ds) == 0 {
		fmt.Fprintln(stdout, "no deliveries match")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEVENT\tPOST\tSTATE\tATTEMPTS\tNEXT TRY\tLAST ERROR")
	for _, d := range ds {
		next := "-"
		if d.State == publishing.DeliveryPending {
			next = bothZones(d.NextTry)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.ID, d.Event.Type, orDash(string(d.Event.Post)), d.State, d.Attempts, next, d.LastError)
	}
	return tw.Flush()
}

func cmdWebhookRedrive(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("webhook redrive")
	b, rest, err := parseAndOpen(ctx, fs, where, args, stdout, 1, 1)
	if err != nil {
		return err
	}
	defer b.Close()
	store := b.webhooks
	switch err := store.RedriveDelivery(ctx, rest[0], time.Now()); {
	case errors.Is(err, post.ErrNotFound):
		return badInput("no delivery %q (oncepost webhook deliveries --state dead)", rest[0])
	case errors.Is(err, post.ErrConflict):
		return badInput("delivery %q is not dead; only a dead delivery is redriven", rest[0])
	case err != nil:
		return err
	}
	fmt.Fprintf(stdout, "redriven %s: due now\n", rest[0])
	return nil
}
