package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/recurring"
)

// Recurring rules from the CLI (docs/recurring.md): add, list, show,
// edit and stop, over publishing.Recurring on either backend.

func recurringCommands() []*command {
	return []*command{
		{name: "recurring add", summary: "repeat a post on a schedule (flags, or a JSON rule)", args: "[flags] [RULE.json | -]", run: cmdRecurringAdd,
			help:    `Adds a recurring rule: the post's content, the accounts it goes to, and when it repeats — every N days at a local time (--every-days, --at) or on a cron expression in the scheduler's dialect (--cron 'cron(0 9 ? * MON-FRI *)') — read in an IANA zone (--time-zone; by default the accounts' zone, which they must share), from --start to --until or for --count occurrences (neither: until it is stopped). Each occurrence becomes a post of its own, with an id made of the rule's and the slot's (e.g. tips-20261203T0800Z), created up to 48 hours ahead and validated like any post. Texts that take turns with the body (--variant, repeatable) let a platform that refuses a repeated text (X, LinkedIn) take a daily rule: a rule that would repeat a text to such an account within the platform's window is refused, naming the field and the account. As a JSON file: {"id": "tips", "body": "Tip 1", "variants": ["Tip 2"], "accounts": ["news"], "every_days": 1, "at": "09:00", "start": "2026-10-12", "count": 30}.`,
			example: `oncepost recurring add --id tips --account news --every-days 1 --at 09:00 --start 2026-10-12 --count 30 --body "Tip 1" --variant "Tip 2"`},
		{name: "recurring list", summary: "list recurring rules and their next occurrence", args: "[--json]", run: cmdRecurringList,
			help: "Lists every recurring rule: whether it runs, its repeat rule in words, its next occurrence (UTC and local) and the latest occurrence it could not create, if any.", example: "oncepost recurring list"},
		{name: "recurring show", summary: "a rule, its next and latest occurrences and their posts", args: "ID [--json]", run: cmdRecurringShow,
			help: "Shows a recurring rule: its texts, accounts and repeat rule, its next occurrences with the posts made for them (and their status), its latest ones, and the occurrences it could not create or missed, with why.", example: "oncepost recurring show tips"},
		{name: "recurring edit", summary: "change a rule; what is still to come is replaced, what is past never resent", args: "ID [flags] [EDIT.json | -]", run: cmdRecurringEdit,
			help:    `Changes a recurring rule: only the flags given (or the fields of a JSON edit, e.g. {"body": "New text"}) change. The edit makes a new revision: occurrences whose time has passed are never created again, the old revision's occurrences still to come are cancelled and replaced by the new one's (an occurrence being sent at that moment keeps its slot), and the new revision's posts get ids of their own (…-r2). --cron replaces --every-days/--at and the other way round; --until replaces --count and the other way round.`,
			example: `oncepost recurring edit tips --body "Tip 1, revised"`},
		{name: "recurring stop", summary: "stop a rule; its occurrences still to come are cancelled", args: "ID", run: cmdRecurringStop,
			help: "Stops a recurring rule for good: no occurrence is created any more, and the posts made for occurrences still to come are cancelled (one being sent at that moment goes out). Stopping twice is a no-op; a stopped rule cannot be edited (add a new one).", example: "oncepost recurring stop tips"},
	}
}

// recurring is the recurring rules' use cases on the backend.
func (b *backend) recurring() *publishing.Recurring {
	d := b.desk()
	return &publishing.Recurring{Rules: b.rules, Desk: d, Logger: d.Logger}
}

// recurringUseCases are the embedded runtime's recurring rules, on its
// clock: the sweeper materializes them.
func (rt *runtime) recurringUseCases() *publishing.Recurring {
	d := embeddedBackend(rt).desk()
	d.Now, d.Logger = rt.cfg.Now, rt.log
	return &publishing.Recurring{Rules: rt.store, Desk: d, Logger: rt.log}
}

// ruleFlags are the flags of recurring add and edit; set says which were
// given.
type ruleFlags struct {
	fs                                               *flag.FlagSet
	id, body, bodyFile, at, cron, zone, start, until *string
	everyDays, count                                 *int
	accounts, variants, texts, media, alts           stringList
}

func newRuleFlags(fs *flag.FlagSet, withID bool) *ruleFlags {
	f := &ruleFlags{fs: fs}
	if withID {
		f.id = fs.String("id", "", "rule id (letters, digits, '.', '_', '-'; at most 64); generated when empty")
	}
	f.body = fs.String("body", "", "the post's text")
	f.bodyFile = fs.String("body-file", "", "read the text from a file (- for stdin)")
	fs.Var(&f.variants, "variant", "a text that takes turns with the body, one occurrence each (repeatable, in order)")
	fs.Var(&f.texts, "text", "PLATFORM=TEXT: the text on one platform instead of the body, e.g. --text 'x=Short version' (repeatable)")
	fs.Var(&f.media, "media", "image file to attach (repeatable, in display order)")
	fs.Var(&f.alts, "alt", "alt text of the --media at the same position (repeatable)")
	fs.Var(&f.accounts, "account", "account to publish to (repeatable)")
	f.everyDays = fs.Int("every-days", 0, "repeat every N days (with --at)")
	f.at = fs.String("at", "", "the local time of day, HH:MM, with --every-days")
	f.cron = fs.String("cron", "", "repeat on a cron expression in the scheduler's dialect, e.g. 'cron(0 9 ? * MON-FRI *)'")
	f.zone = fs.String("time-zone", "", "the IANA zone the times are read in; default: the accounts' zone")
	f.start = fs.String("start", "", "no occurrence before it: RFC 3339 with an offset, or a date (YYYY-MM-DD) in the rule's zone; default now")
	f.until = fs.String("until", "", "no occurrence after it: RFC 3339 with an offset, or a date (its occurrences included)")
	f.count = fs.Int("count", 0, "stop after this many occurrences from the start")
	return f
}

// given reports whether the flag named was set.
func (f *ruleFlags) given(name string) bool {
	set := false
	f.fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

// any reports whether any rule flag was set.
func (f *ruleFlags) any() bool {
	for _, n := range []string{"id", "body", "body-file", "variant", "text", "media", "alt", "account", "every-days", "at", "cron", "time-zone", "start", "until", "count"} {
		if f.given(n) {
			return true
		}
	}
	return false
}

// patch is the edit the flags given make, with the media files to import.
func (f *ruleFlags) patch() (recurring.Patch, []importedMedia, error) {
	var p recurring.Patch
	str := func(name string, v *string) *string {
		if f.given(name) {
			s := *v
			return &s
		}
		return nil
	}
	num := func(name string, v *int) *int {
		if f.given(name) {
			n := *v
			return &n
		}
		return nil
	}
	p.Body, p.At, p.Cron, p.TimeZone, p.Start, p.Until = str("body", f.body), str("at", f.at), str("cron", f.cron), str("time-zone", f.zone), str("start", f.start), str("until", f.until)
	p.EveryDays, p.Count = num("every-days", f.everyDays), num("count", f.count)
	if f.given("body-file") {
		if p.Body != nil {
			return p, nil, badInput("--body and --body-file: give the text one way")
		}
		raw, err := readDraft(*f.bodyFile)
		if err != nil {
			return p, nil, usageError("body-file", "%v", err)
		}
		body := strings.TrimRight(string(raw), "\r\n")
		p.Body = &body
	}
	if f.given("variant") {
		v := slices.Clone([]string(f.variants))
		p.Variants = &v
	}
	if f.given("account") {
		a := slices.Clone([]string(f.accounts))
		p.Accounts = &a
	}
	if f.given("text") {
		texts := map[string]string{}
		for _, t := range f.texts {
			name, text, ok := strings.Cut(t, "=")
			switch {
			case !ok || name == "":
				return p, nil, usageError("text", "%q: write PLATFORM=TEXT, e.g. --text 'x=Short version'", t)
			case texts[name] != "":
				return p, nil, usageError("text", "%s is given twice", name)
			}
			texts[name] = text
		}
		p.Texts = &texts
	}
	var files []importedMedia
	if f.given("media") || f.given("alt") {
		if len(f.alts) > len(f.media) {
			return p, nil, usageError("alt", "%d alt texts for %d --media files; give one --alt after each --media", len(f.alts), len(f.media))
		}
		d := post.Draft{}
		for i, m := range f.media {
			dm := post.DraftMedia{Path: m}
			if i < len(f.alts) {
				dm.Alt = f.alts[i]
			}
			d.Media = append(d.Media, dm)
		}
		var err error
		if files, err = readDraftMedia(&d, ""); err != nil {
			return p, nil, err
		}
		p.Media = &d.Media
	}
	return p, files, nil
}

// ruleMedia reads the attachments a rule names by path, as post add
// does: paths relative to baseDir; ref, hash and type filled in.
func ruleMedia(media []post.DraftMedia, baseDir string) ([]post.DraftMedia, []importedMedia, error) {
	d := post.Draft{Media: media}
	files, err := readDraftMedia(&d, baseDir)
	return d.Media, files, err
}

// sizesOf are the files' sizes by ref, for the desk's media checks.
func sizesOf(files []importedMedia) map[string]int {
	sizes := map[string]int{}
	for _, f := range files {
		sizes[f.Ref] = len(f.data)
	}
	return sizes
}

// importFiles stores the files where the publisher reads them.
func (b *backend) importFiles(ctx context.Context, files []importedMedia) error {
	for _, f := range files {
		if err := b.media.ImportMedia(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// cmdRecurringAdd is `oncepost recurring add`.
func cmdRecurringAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("recurring add")
	f := newRuleFlags(fs, true)
	asJSON := fs.Bool("json", false, "print the rule as JSON")
	rest, err := parseFlags(fs, args, stdout, 0, 1)
	if err != nil {
		return err
	}
	var d recurring.Draft
	var files []importedMedia
	switch {
	case len(rest) == 1 && f.any():
		return badInput("give the rule either as a JSON file or with flags, not both")
	case len(rest) == 1:
		raw, err := readDraft(rest[0])
		if err != nil {
			return err
		}
		if d, err = recurring.DecodeDraft(raw); err != nil {
			return badInput("%v", err)
		}
		if d.Media, files, err = ruleMedia(d.Media, draftDir(rest[0])); err != nil {
			return err
		}
	case !f.any():
		return badInput("no rule given: pass a JSON file, or --account, --every-days and --at (or --cron) and --body (see oncepost recurring add --help)")
	default:
		p, fl, err := f.patch()
		if err != nil {
			return err
		}
		d, files = p.Apply(recurring.Draft{ID: *f.id}), fl
	}
	if err := where.check(); err != nil {
		return err
	}
	b, err := where.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	rec := b.recurring()
	if len(files) > 0 {
		// Checked before the files are stored, which the occurrences then
		// find.
		if d.ID == "" {
			d.ID = publishing.NewRuleID(time.Now())
		}
		if _, err := rec.CheckRule(ctx, d, nil, sizesOf(files)); err != nil {
			return refusedInput(err)
		}
		if err := b.importFiles(ctx, files); err != nil {
			return err
		}
	}
	v, err := rec.Create(ctx, d, publishing.RuleOptions{Author: "cli"})
	if err != nil {
		return refusedInput(err)
	}
	if *asJSON {
		return printJSON(stdout, v)
	}
	fmt.Fprintf(stdout, "added rule %s: %s\n", v.Rule.ID, v.Summary)
	printNext(stdout, v)
	return nil
}

// cmdRecurringEdit is `oncepost recurring edit ID`.
func cmdRecurringEdit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("recurring edit")
	f := newRuleFlags(fs, false)
	asJSON := fs.Bool("json", false, "print the rule as JSON")
	rest, err := parseFlags(fs, args, stdout, 1, 2)
	if err != nil {
		return err
	}
	var p recurring.Patch
	var files []importedMedia
	switch {
	case len(rest) == 2 && f.any():
		return badInput("give the edit either as a JSON file or with flags, not both")
	case len(rest) == 2:
		raw, err := readDraft(rest[1])
		if err != nil {
			return err
		}
		if p, err = recurring.DecodePatch(raw); err != nil {
			return badInput("%v", err)
		}
		if p.Media != nil {
			m, fl, err := ruleMedia(*p.Media, draftDir(rest[1]))
			if err != nil {
				return err
			}
			p.Media, files = &m, fl
		}
	case !f.any():
		return badInput("nothing to change: give the flags to change (see oncepost recurring edit --help) or a JSON edit")
	default:
		if p, files, err = f.patch(); err != nil {
			return err
		}
	}
	if err := where.check(); err != nil {
		return err
	}
	b, err := where.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.importFiles(ctx, files); err != nil {
		return err
	}
	v, err := b.recurring().Edit(ctx, recurring.ID(rest[0]), p, sizesOf(files))
	if err != nil {
		return ruleError(err, rest[0])
	}
	if *asJSON {
		return printJSON(stdout, v)
	}
	fmt.Fprintf(stdout, "rule %s is at revision %d: %s\n", v.Rule.ID, v.Rule.Revision, v.Summary)
	printNext(stdout, v)
	return nil
}

// ruleError is refusedInput, and an unknown or stopped rule as bad input.
func ruleError(err error, id string) error {
	switch {
	case len(publishing.FieldErrors(err)) > 0:
		return badInput("%v", err)
	case errors.Is(err, post.ErrNotFound):
		return badInput("no rule %q (oncepost recurring list)", id)
	case errors.Is(err, publishing.ErrRuleStopped):
		return badInput("%v", err)
	}
	return err
}

// cmdRecurringStop is `oncepost recurring stop ID`.
func cmdRecurringStop(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("recurring stop")
	b, rest, err := parseAndOpen(ctx, fs, where, args, stdout, 1, 1)
	if err != nil {
		return err
	}
	defer b.Close()
	v, err := b.recurring().Stop(ctx, recurring.ID(rest[0]))
	if err != nil {
		return ruleError(err, rest[0])
	}
	fmt.Fprintf(stdout, "rule %s stopped at %s; no occurrence will be created\n", v.Rule.ID, bothZones(v.Rule.StoppedAt))
	return nil
}

// cmdRecurringList is `oncepost recurring list`.
func cmdRecurringList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("recurring list")
	asJSON := fs.Bool("json", false, "print JSON: {\"rules\": [...]}")
	b, _, err := parseAndOpen(ctx, fs, where, args, stdout, 0, 0)
	if err != nil {
		return err
	}
	defer b.Close()
	views, err := b.recurring().List(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, struct {
			Rules []publishing.RuleView `json:"rules"`
		}{views})
	}
	if len(views) == 0 {
		fmt.Fprintln(stdout, "no recurring rules (oncepost recurring add --help)")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tSTATE\tREPEAT\tNEXT\tPROBLEM")
	for _, v := range views {
		state, next := "running", "-"
		if !v.Rule.Active() {
			state = "stopped"
		}
		if len(v.Next) > 0 {
			next = bothZones(v.Next[0].Slot)
		} else if v.Rule.Active() {
			state = "ended"
		}
		problem := "-"
		if p := v.Rule.Problem; p != nil {
			problem = snippet(p.Reason, 60)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.Rule.ID, state, v.Summary, next, problem)
	}
	return tw.Flush()
}

// cmdRecurringShow is `oncepost recurring show ID`.
func cmdRecurringShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("recurring show")
	asJSON := fs.Bool("json", false, "print JSON")
	b, rest, err := parseAndOpen(ctx, fs, where, args, stdout, 1, 1)
	if err != nil {
		return err
	}
	defer b.Close()
	v, err := b.recurring().Show(ctx, recurring.ID(rest[0]))
	if err != nil {
		return ruleError(err, rest[0])
	}
	if *asJSON {
		return printJSON(stdout, v)
	}
	r := v.Rule
	fmt.Fprintf(stdout, "rule %s, revision %d: %s\n", r.ID, r.Revision, v.Summary)
	accounts := make([]string, len(r.Accounts))
	for i, a := range r.Accounts {
		accounts[i] = string(a)
	}
	fmt.Fprintf(stdout, "  accounts: %s\n", strings.Join(accounts, ", "))
	for k := range r.Rotation() {
		label := "text"
		if r.Rotation() > 1 {
			label = "text " + strconv.Itoa(k+1)
		}
		fmt.Fprintf(stdout, "  %s: %s\n", label, strings.ReplaceAll(r.BodyAt(k), "\n", "\n        "))
	}
	for _, name := range slices.Sorted(maps.Keys(r.Texts)) {
		fmt.Fprintf(stdout, "  text on %s: %s\n", name, r.Texts[name])
	}
	for i, m := range r.Media {
		fmt.Fprintf(stdout, "  media[%d]: %s %s alt=%q\n", i, m.ContentType, m.Ref, m.Alt)
	}
	if p := r.Problem; p != nil {
		fmt.Fprintf(stdout, "  problem: the occurrence at %s could not be created: %s\n", bothZones(p.Slot), p.Reason)
	}
	printNext(stdout, v)
	if len(v.Recent) > 0 {
		fmt.Fprintln(stdout, "  latest:")
		for _, o := range v.Recent {
			fmt.Fprintf(stdout, "    %s  %s  %s\n", bothZones(o.Slot), o.Post, occurrenceState(o))
		}
	}
	for _, m := range r.Missed {
		fmt.Fprintf(stdout, "  missed %s: %s\n", bothZones(m.Slot), m.Reason)
	}
	return nil
}

// printNext prints a view's next occurrences.
func printNext(w io.Writer, v publishing.RuleView) {
	if len(v.Next) == 0 {
		fmt.Fprintln(w, "  no occurrence to come")
		return
	}
	fmt.Fprintln(w, "  next:")
	for _, o := range v.Next {
		fmt.Fprintf(w, "    %s  %s  %s\n", bothZones(o.Slot), o.Post, occurrenceState(o))
	}
}

// occurrenceState says where an occurrence stands: its post's targets'
// statuses, or that it is not created yet.
func occurrenceState(o publishing.OccurrenceView) string {
	switch {
	case o.Kept:
		return "kept by an earlier revision"
	case !o.Created:
		return "not created yet"
	}
	var parts []string
	for _, t := range o.Targets {
		parts = append(parts, fmt.Sprintf("%s %s", t.Account, t.Status))
	}
	return strings.Join(parts, ", ")
}
