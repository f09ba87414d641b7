package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"oncepost/shared/post"
)

func blocklistCommands() []*command {
	return []*command{
		{name: "blocklist add", summary: "block words or phrases", args: "TERM [TERM…]", run: cmdBlocklistAdd,
			help:    "Adds words or phrases (quote a phrase) to the workspace's blocklist. They match whole words after Unicode normalisation, ignoring case and width (\"Spoiler\", \"SPOILER\" and \"ＳＰＯＩＬＥＲ\" all match spoiler; \"spoilers\" does not). `post add` refuses a post naming one, with its position; a post scheduled before the term was added is held with that reason instead of sent. Adding a term twice is a no-op.",
			example: `oncepost blocklist add spoiler "buy now"`},
		{name: "blocklist list", summary: "list blocked words and phrases", args: "[--json]", run: cmdBlocklistList,
			help: "Lists the blocklist, with the normalised form each term is matched by.", example: "oncepost blocklist list"},
		{name: "blocklist remove", summary: "unblock words or phrases", args: "TERM [TERM…]", run: cmdBlocklistRemove,
			help:    "Removes terms from the blocklist (matched by their normalised form, so the spelling need not be the same). Posts held by a term stay held: reschedule them (oncepost post reschedule ID --at TIME) or cancel them.",
			example: `oncepost blocklist remove "buy now"`},
	}
}

func cmdBlocklistAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("blocklist add")
	rest, err := parseFlags(fs, args, stdout, 1, 1000)
	if err != nil {
		return err
	}
	terms := make([]post.BlockedTerm, 0, len(rest))
	for i, raw := range rest {
		t, err := post.NewBlockedTerm(raw, time.Now())
		if err != nil {
			return badInput("term %d (%q): %v", i+1, raw, err)
		}
		terms = append(terms, t)
	}
	b, err := where.create(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	for _, t := range terms {
		added, err := b.admin.AddBlockedTerm(ctx, t)
		if err != nil {
			return err
		}
		if added {
			fmt.Fprintf(stdout, "blocked %q\n", t.Term)
		} else {
			fmt.Fprintf(stdout, "%q was blocked already\n", t.Term)
		}
	}
	return nil
}

func cmdBlocklistList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("blocklist list")
	asJSON := fs.Bool("json", false, "print JSON")
	b, _, err := parseAndOpen(ctx, fs, where, args, stdout, 0, 0)
	if err != nil {
		return err
	}
	defer b.Close()
	terms, err := b.admin.BlockedTerms(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if terms == nil {
			terms = []post.BlockedTerm{}
		}
		return printJSON(stdout, terms)
	}
	if len(terms) == 0 {
		fmt.Fprintln(stdout, "the blocklist is empty")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TERM\tMATCHED AS\tADDED")
	for _, t := range terms {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Term, t.Key, bothZones(t.AddedAt))
	}
	return tw.Flush()
}

func cmdBlocklistRemove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("blocklist remove")
	b, rest, err := parseAndOpen(ctx, fs, where, args, stdout, 1, 1000)
	if err != nil {
		return err
	}
	defer b.Close()
	for _, raw := range rest {
		removed, err := b.admin.RemoveBlockedTerm(ctx, post.NormalizeTerm(raw))
		if err != nil {
			return err
		}
		if removed {
			fmt.Fprintf(stdout, "unblocked %q\n", raw)
		} else {
			fmt.Fprintf(stdout, "%q was not blocked\n", raw)
		}
	}
	return nil
}
