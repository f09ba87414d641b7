package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The posting queue's commands (`oncepost queue …`), `account set`, and
// how times are shown in an account's own zone.

func queueCommands() []*command {
	return []*command{
		{name: "queue show", summary: "an account's queued posts and its next free posting slots", args: "ACCOUNT [--free N] [--json]", run: cmdQueueShow,
			help: "Shows the posts in an account's queue, in slot order, with each slot in UTC and in the account's time zone, then its next free slots (--free, default 5). " +
				"A post joins the queue with `post add --queue` (or \"queue\": true in a draft or POST /v1/posts) and takes the next free slot of the account's rules (`account set --slot`).",
			example: "oncepost queue show news"},
		{name: "queue reorder", summary: "put posts first in an account's queue", args: "ACCOUNT POST...", run: cmdQueueReorder,
			help: "Puts the named posts first in the account's queue, in the order given, the others after them in their order, and moves every queued post to the first free slots in that order. " +
				"Posts waiting for approval keep their slots. Each move is a conditional write: a post added meanwhile stops the reorder, with every post still on one slot of its own; run it again.",
			example: "oncepost queue reorder news launch-teaser"},
		{name: "queue shuffle", summary: "shuffle an account's queue", args: "ACCOUNT [--seed N]", run: cmdQueueShuffle,
			help:    "Puts the account's queued posts in a random order and moves them to the first free slots in that order. The order is drawn from --seed; without one, the seed is derived from the account and its queue, and printed, so the same queue shuffles the same way and a shuffle can be repeated.",
			example: "oncepost queue shuffle news --seed 7"},
	}
}

// scheduleFlags are an account's time zone and posting slots, as flags.
type scheduleFlags struct {
	tz      string
	tzSet   bool
	slots   stringList
	noSlots bool
}

func (f *scheduleFlags) define(fs *flag.FlagSet) {
	fs.Func("tz", "the account's IANA time zone, e.g. Europe/Berlin (its slots are read in it; '' for UTC)", func(v string) error {
		f.tz, f.tzSet = v, true
		return nil
	})
	fs.Var(&f.slots, "slot", "a posting slot rule, cron(...) or rate(...) in the account's zone, e.g. 'cron(0 9 ? * MON-FRI *)' (repeatable; replaces the rules)")
	fs.BoolVar(&f.noSlots, "no-slots", false, "remove the account's posting slots")
}

// check refuses a bad zone or rule, naming the flag.
func (f *scheduleFlags) check() error {
	if f.noSlots && len(f.slots) > 0 {
		return badInput("--slot and --no-slots: give the new rules, or remove them, not both")
	}
	if err := post.ValidTimeZone(f.tz); err != nil {
		return usageError("tz", "%v", err)
	}
	for _, fe := range publishing.FieldErrors(publishing.ValidateSlots(f.tz, f.slots)) {
		var i int
		if _, err := fmt.Sscanf(fe.Field, "slots[%d]", &i); err == nil && i >= 0 && i < len(f.slots) {
			return usageError("slot", "%s: %s; %s", f.slots[i], fe.Problem, fe.Fix)
		}
		if strings.HasPrefix(fe.Field, "slots") {
			return usageError("slot", "%s; %s", fe.Problem, fe.Fix)
		}
	}
	return nil
}

// change is the flags as a publishing.AccountChange.
func (f *scheduleFlags) change() publishing.AccountChange {
	var c publishing.AccountChange
	if f.tzSet {
		c.TimeZone = &f.tz
	}
	if len(f.slots) > 0 || f.noSlots {
		slots := []string(f.slots)
		c.Slots = &slots
	}
	return c
}

// apply sets the flags on an account being added.
func (f *scheduleFlags) apply(a *post.Account) {
	if f.tzSet {
		a.TimeZone = f.tz
	}
	if len(f.slots) > 0 {
		a.Slots = f.slots
	}
}

// cmdAccountSet is `oncepost account set ID`.
func cmdAccountSet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("account set")
	var sched scheduleFlags
	sched.define(fs)
	asJSON := fs.Bool("json", false, "print the account and the queue's moves as JSON")
	b, rest, err := parseAndOpen(ctx, fs, where, args, stdout, 1, 1)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := sched.check(); err != nil {
		return err
	}
	c := sched.change()
	if c.TimeZone == nil && c.Slots == nil {
		return badInput("nothing to set: give --tz, --slot or --no-slots")
	}
	a, moves, err := b.desk().ChangeAccount(ctx, post.AccountID(rest[0]), c)
	if len(publishing.FieldErrors(err)) > 0 {
		return refusedInput(err)
	}
	if err != nil && a.ID == "" {
		return err
	}
	if *asJSON {
		if jerr := printJSON(stdout, struct {
			Account post.Account           `json:"account"`
			Moves   []publishing.QueueMove `json:"moves"`
		}{a, moves}); jerr != nil {
			return jerr
		}
		return err
	}
	fmt.Fprintf(stdout, "account %s: time zone %s, slots %s\n", a.ID, zoneName(a.TimeZone), describeSlots(a.Slots))
	printMoves(stdout, a, moves)
	return err
}

// cmdQueueShow is `oncepost queue show ACCOUNT`.
func cmdQueueShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("queue show")
	free := fs.Int("free", 5, "how many free slots to show")
	asJSON := fs.Bool("json", false, "print JSON")
	b, rest, err := parseAndOpen(ctx, fs, where, args, stdout, 1, 1)
	if err != nil {
		return err
	}
	defer b.Close()
	if *free < 0 || *free > 1000 {
		return usageError("free", "%d: give 0 to 1000", *free)
	}
	v, err := b.desk().ShowQueue(ctx, post.AccountID(rest[0]), *free)
	if len(publishing.FieldErrors(err)) > 0 {
		return refusedInput(err)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, v)
	}
	a := v.Account
	fmt.Fprintf(stdout, "queue of %s (time zone %s, slots %s)\n", a.ID, zoneName(a.TimeZone), describeSlots(a.Slots))
	if len(v.Entries) == 0 {
		fmt.Fprintln(stdout, "  no queued posts")
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for i, e := range v.Entries {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", i+1, showIn(a, e.Slot), e.Post, e.Status, e.Text)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(v.FreeSlots) > 0 {
		fmt.Fprintln(stdout, "next free slots:")
		for _, s := range v.FreeSlots {
			fmt.Fprintf(stdout, "  %s\n", showIn(a, s))
		}
	} else if len(a.Slots) == 0 {
		fmt.Fprintf(stdout, "no posting slots: oncepost account set %s --slot 'cron(0 9 ? * MON-FRI *)'\n", a.ID)
	}
	return nil
}

// cmdQueueReorder is `oncepost queue reorder ACCOUNT POST...`.
func cmdQueueReorder(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("queue reorder")
	b, rest, err := parseAndOpen(ctx, fs, where, args, stdout, 2, 1000)
	if err != nil {
		return err
	}
	defer b.Close()
	var first []post.ID
	for _, id := range rest[1:] {
		first = append(first, post.ID(id))
	}
	return b.moveQueue(ctx, stdout, post.AccountID(rest[0]), func(d *publishing.Desk) ([]publishing.QueueMove, error) {
		return d.ReorderQueue(ctx, post.AccountID(rest[0]), first)
	})
}

// cmdQueueShuffle is `oncepost queue shuffle ACCOUNT`.
func cmdQueueShuffle(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("queue shuffle")
	seedFlag := fs.String("seed", "", "the seed the order is drawn from (a number); default: derived from the account and its queue")
	b, rest, err := parseAndOpen(ctx, fs, where, args, stdout, 1, 1)
	if err != nil {
		return err
	}
	defer b.Close()
	account := post.AccountID(rest[0])
	var seed uint64
	if *seedFlag != "" {
		if seed, err = strconv.ParseUint(*seedFlag, 10, 64); err != nil {
			return usageError("seed", "%q is not a number from 0 to %d", *seedFlag, uint64(1<<64-1))
		}
	} else {
		v, err := b.desk().ShowQueue(ctx, account, 0)
		if len(publishing.FieldErrors(err)) > 0 {
			return refusedInput(err)
		}
		if err != nil {
			return err
		}
		seed = publishing.QueueSeed(v)
		fmt.Fprintf(stdout, "seed %d (repeat with --seed %d)\n", seed, seed)
	}
	return b.moveQueue(ctx, stdout, account, func(d *publishing.Desk) ([]publishing.QueueMove, error) {
		return d.ShuffleQueue(ctx, account, seed)
	})
}

// moveQueue runs one of the queue's arrangements and prints its moves.
func (b *backend) moveQueue(ctx context.Context, stdout io.Writer, account post.AccountID, move func(*publishing.Desk) ([]publishing.QueueMove, error)) error {
	d := b.desk()
	moves, err := move(d)
	if len(publishing.FieldErrors(err)) > 0 {
		return refusedInput(err)
	}
	a, aerr := b.accounts.GetAccount(ctx, account)
	if aerr != nil {
		a = post.Account{ID: account}
	}
	printMoves(stdout, a, moves)
	return err
}

func printMoves(w io.Writer, a post.Account, moves []publishing.QueueMove) {
	if len(moves) == 0 {
		fmt.Fprintln(w, "no queued post moved")
		return
	}
	for _, m := range moves {
		if m.Done {
			fmt.Fprintf(w, "moved %s from %s to %s\n", m.Post, showIn(a, m.From), showIn(a, m.To))
		} else {
			fmt.Fprintf(w, "did not move %s (%s): %s\n", m.Post, showIn(a, m.From), m.Message)
		}
	}
}

// zoneName is an account's zone as shown: its name, or UTC.
func zoneName(tz string) string {
	if tz == "" {
		return "UTC"
	}
	return tz
}

// describeSlots lists an account's slot rules.
func describeSlots(slots []string) string {
	if len(slots) == 0 {
		return "none"
	}
	return strings.Join(slots, ", ")
}

// showIn is t in UTC and, when the account has a zone of its own, in it:
// "2026-12-02 08:00:00Z (09:00 CET Wed 2 Dec, Europe/Berlin)".
func showIn(a post.Account, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	utc := t.UTC().Format("2006-01-02 15:04:05Z")
	if a.TimeZone == "" || a.TimeZone == "UTC" {
		return utc
	}
	return utc + " (" + t.In(a.Location()).Format("15:04 MST Mon 2 Jan") + ", " + a.TimeZone + ")"
}

// accountZones shows times in each account's zone.
type accountZones map[post.AccountID]post.Account

// zones reads the workspace's accounts once, to show times in their
// zones; none when they cannot be read (times are then shown as before).
func (b *backend) zones(ctx context.Context) accountZones {
	list, err := b.accounts.ListAccounts(ctx)
	if err != nil {
		return nil
	}
	z := accountZones{}
	for _, a := range list {
		z[a.ID] = a
	}
	return z
}

// show is t in UTC and in the account's zone, or as bothZones shows it
// when the account has none.
func (z accountZones) show(account post.AccountID, t time.Time) string {
	if a, ok := z[account]; ok && a.TimeZone != "" {
		return showIn(a, t)
	}
	return bothZones(t)
}
