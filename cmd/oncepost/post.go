package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"oncepost/shared/localcron"
	"oncepost/shared/platform"
	"oncepost/shared/platform/catalog"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

func postCommands() []*command {
	return append([]*command{
		{name: "post add", summary: "validate and schedule a post (flags, or a JSON draft)", args: "[flags] [DRAFT.json | -]", run: cmdPostAdd,
			help:    `Validates a post and schedules it for one or more accounts; a refusal names the field and the fix, and nothing is written. Give the post with flags (--body or --body-file, --account and --at, --media with --alt, --text PLATFORM=TEXT for a platform that needs another text), or as a JSON draft file: {"id": "launch", "body": "We launched.", "texts": {"x": "We launched!"}, "media": [{"path": "photo.jpg", "alt": "the team"}], "targets": [{"account": "news", "at": "2026-12-01T09:00:00+01:00"}]}. A thread is the post and its replies in order (--reply TEXT, repeated, or "thread": ["2/ …", "3/ …"] in a draft): it goes out as a reply chain, each part checked like the body, on platforms that have one (Mastodon, Bluesky, X, Threads). Each account gets the text for its platform, or the body; a text over a platform's limit is refused naming the platform. Images over an account's limits are resized to fit (the note says so) before they are stored. Times need an offset (or Z). Media are files: oncepost hashes them, copies them into the workspace and detects their type. A post id is generated when none is given; adding the same id twice is refused.`,
			example: `oncepost post add --account news --at 2026-12-01T09:00:00+01:00 --body "We launched." --media photo.jpg --alt "the team"`},
		{name: "post list", summary: "list posts and their targets", args: "[--status S,S] [--account A] [--limit N] [--after CURSOR] [--json]", run: cmdPostList,
			help: "Lists posts with at least one target matching the filters, earliest slot first (on AWS, in the order of the stack's status index, each page by slot): each target's account, slot (UTC and local), status, remote id and reason. " +
				"A listing longer than --limit is cut into pages, and says so: the command for the next page goes to stderr (with --json, the object's \"next\" holds its cursor), and --after CURSOR lists it. With --json the output is an object: {\"posts\": [...], \"next\": \"CURSOR\"}, next left out on the last page.",
			example: "oncepost post list --status scheduled,held --json\n  oncepost post list --limit 50 --after sq1.eyJzbG90Ijo…"},
		{name: "post show", summary: "a post's targets and ledger history", args: "ID [--json]", run: cmdPostShow,
			help: "Shows a post: its text, replies and media, every target with its status (for a thread, each part's ledger state and remote id), and the ledger entries written for it (publish and delete) with every transition, times in UTC and local time.", example: "oncepost post show launch"},
		{name: "post cancel", summary: "cancel a post that has not gone out", args: "ID [--account A]", run: cmdPostCancel,
			help: "Cancels a post's targets that are scheduled, triggered, waiting or held by the blocklist: they are never sent, and their schedules are removed. Cancelling twice is a no-op. A published target cannot be cancelled (delete it), and a target held after an ambiguous send is decided with `oncepost reject KEY`.", example: "oncepost post cancel launch --account news"},
		{name: "post reschedule", summary: "move a post that has not gone out to another time", args: "ID --at TIME [--account A]", run: cmdPostReschedule,
			help: "Moves a post's scheduled, waiting or blocklist-held targets to a new time. It is refused for a target whose earlier send may have reached the platform (a new time is a new ledger entry, and could post twice).", example: "oncepost post reschedule launch --at 2026-12-02T09:00:00+01:00"},
		{name: "post delete", summary: "delete a published post from the platform (needs approval)", args: "ID [--account A] [--yes]", run: cmdPostDelete,
			help: "Requests the deletion of a published post, through the ledger: the request waits for `oncepost approve KEY` (or --yes approves it at once); then oncepost checks the post exists, deletes it, checks the platform's answer and reads back until it is gone. A thread is deleted part by part, last part first, each through the ledger, under the one approval of its first part's delete. A refusal (403, or a 404 while the post is still there) is reported as a failure, never as done. Deleting twice is a no-op.", example: "oncepost post delete launch --account news"},
	}, approvalCommands()...)
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// cmdPostAdd is `oncepost post add`.
func cmdPostAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("post add")
	id := fs.String("id", "", "post id (letters, digits, '.', '_', '-'); generated when empty")
	body := fs.String("body", "", "the post's text")
	bodyFile := fs.String("body-file", "", "read the text from a file (- for stdin)")
	at := fs.String("at", "", "when to publish, RFC 3339 with an offset, for every --account")
	queue := fs.Bool("queue", false, "add the post to each account's queue: it takes the account's next free posting slot (instead of --at)")
	timesIn := fs.String("times-in", "", "account: read an --at (or a draft's at) without an offset in each account's time zone")
	var accounts, media, alts, texts stringList
	fs.Var(&accounts, "account", "account to publish to (repeatable)")
	fs.Var(&texts, "text", "PLATFORM=TEXT: the text on one platform instead of the body, e.g. --text 'x=Short version' (repeatable)")
	fs.Var(&media, "media", "image file to attach (repeatable, in display order)")
	fs.Var(&alts, "alt", "alt text of the --media at the same position (repeatable)")
	var replies stringList
	fs.Var(&replies, "reply", fmt.Sprintf("a reply that follows the post: the post goes out as a thread, a reply chain (repeatable, in order; at most %d parts with the post)", post.MaxThreadParts))
	asJSON := fs.Bool("json", false, "print the scheduled post as JSON")
	rest, err := parseFlags(fs, args, stdout, 0, 1)
	if err != nil {
		return err
	}
	flagged := *id != "" || *body != "" || *bodyFile != "" || *at != "" || *queue || len(accounts)+len(media)+len(alts)+len(texts)+len(replies) > 0
	var d post.Draft
	var baseDir string
	switch {
	case len(rest) == 1 && flagged:
		return badInput("give the post either as a draft file or with flags, not both")
	case len(rest) == 1:
		raw, err := readDraft(rest[0])
		if err != nil {
			return err
		}
		if d, err = post.DecodeDraft(raw); err != nil {
			return badInput("%v", err)
		}
		baseDir = draftDir(rest[0])
	case !flagged:
		return badInput("no post given: pass a draft file, or --account, --at and --body (see oncepost post add --help)")
	default:
		if *queue && *at != "" {
			return badInput("--queue and --at: give a time, or take the queue's next slot, not both")
		}
		if d, err = draftFromFlags(*id, *body, *bodyFile, *at, *queue, accounts, media, alts); err != nil {
			return err
		}
		for _, t := range texts {
			name, text, ok := strings.Cut(t, "=")
			switch {
			case !ok || name == "":
				return usageError("text", "%q: write PLATFORM=TEXT, e.g. --text 'x=Short version'", t)
			case d.Texts[name] != "":
				return usageError("text", "%s is given twice", name)
			}
			if d.Texts == nil {
				d.Texts = map[string]string{}
			}
			d.Texts[name] = text
		}
		d.Thread = replies
	}
	if *timesIn != "" {
		if *timesIn != post.TimesInAccount {
			return usageError("times-in", "%q: the only way is account (each account's time zone)", *timesIn)
		}
		d.TimesIn = *timesIn
	}
	if err := where.check(); err != nil {
		return err
	}
	files, err := readDraftMedia(&d, baseDir)
	if err != nil {
		return err
	}
	b, err := where.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	p, err := b.addPost(ctx, d, files, stderr)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, p)
	}
	zones := b.zones(ctx)
	for _, t := range p.Targets {
		how := "at"
		if t.Queued {
			how = "from its queue at"
		}
		fmt.Fprintf(stdout, "scheduled %s for %s %s %s\n", p.ID, t.Account, how, zones.show(t.Account, t.Slot))
	}
	return nil
}

// addPost schedules a draft through the desk (publishing.Desk.Schedule),
// after fitting its new image files to the limits of the platforms it
// goes to (saying so on notes) and storing them. Files are fitted and
// stored only for a draft the desk accepts.
func (b *backend) addPost(ctx context.Context, d post.Draft, files []importedMedia, notes io.Writer) (post.Post, error) {
	desk := b.desk()
	sizes := map[string]int{}
	if len(files) > 0 {
		// Fitted after validation: a draft that is refused does not pay
		// for decoding and re-encoding its images.
		p, limits, err := desk.FitLimits(ctx, d)
		if err != nil {
			return post.Post{}, refusedInput(err)
		}
		d.ID = string(p.ID)
		var changed []string
		if files, changed, err = fitMedia(p.Media, files, limits); err != nil {
			return post.Post{}, err
		}
		for i := range d.Media {
			d.Media[i].Fitted = p.Media[i].Fitted
		}
		for _, n := range changed {
			fmt.Fprintln(notes, n)
		}
		for _, f := range files {
			sizes[f.Ref] = len(f.data)
		}
		if _, err := desk.Validate(ctx, d, sizes); err != nil {
			return post.Post{}, refusedInput(err)
		}
		for _, f := range files {
			if err := b.media.ImportMedia(ctx, f); err != nil {
				return post.Post{}, err
			}
		}
	}
	d.Author = publishing.CLIPrincipal
	res, err := desk.Schedule(ctx, d, sizes, nil)
	if err != nil {
		return post.Post{}, refusedInput(err)
	}
	return res.Post, nil
}

// refusedInput is a desk's refusal of the input (publishing.FieldErrors)
// as bad input, printed as the desk words it; other errors pass.
func refusedInput(err error) error {
	if len(publishing.FieldErrors(err)) > 0 {
		return badInput("%v", err)
	}
	return err
}

// flagError is refusedInput for a command whose refused fields are its
// flags (--account, --at, --status), each problem naming its flag; an
// unknown post is bad input naming id.
func flagError(err error, id string) error {
	fes := publishing.FieldErrors(err)
	if len(fes) == 0 {
		if errors.Is(err, post.ErrNotFound) && id != "" {
			return badInput("no post %q (oncepost post list)", id)
		}
		return err
	}
	msgs := make([]string, len(fes))
	for i, fe := range fes {
		msgs[i] = "--" + fe.Error()
	}
	return badInput("%s", strings.Join(msgs, "\n"))
}

// readDraft reads a draft file (- for stdin) of at most maxDraftBytes.
// draftDir is the folder a draft file's relative media paths are read
// from: the file's own, or "" (the working directory) for stdin ("-").
func draftDir(name string) string {
	if name == "-" {
		return ""
	}
	return filepath.Dir(name)
}

func readDraft(name string) ([]byte, error) {
	var raw []byte
	var err error
	if name == "-" {
		raw, err = io.ReadAll(io.LimitReader(os.Stdin, maxDraftBytes+1))
	} else {
		raw, err = readLimited(name, maxDraftBytes)
	}
	if err != nil {
		return nil, badInput("cannot read the draft %s: %v", name, unwrapPathError(err))
	}
	return raw, nil
}

// draftFromFlags builds a draft from post add's flags.
func draftFromFlags(id, body, bodyFile, at string, queue bool, accounts, media, alts stringList) (post.Draft, error) {
	d := post.Draft{ID: id, Body: body, Queue: queue}
	switch {
	case body != "" && bodyFile != "":
		return d, badInput("--body and --body-file: give the text one way")
	case bodyFile != "":
		raw, err := readDraft(bodyFile)
		if err != nil {
			return d, usageError("body-file", "%v", err)
		}
		if len(raw) > maxDraftBytes {
			return d, usageError("body-file", "%s is larger than %d bytes", bodyFile, maxDraftBytes)
		}
		d.Body = strings.TrimRight(string(raw), "\r\n")
	}
	if len(accounts) == 0 {
		return d, usageError("account", "is missing: name the account to publish to (oncepost account list)")
	}
	if at == "" && !queue {
		return d, usageError("at", "is missing: give the time, e.g. --at 2026-12-01T09:00:00+01:00, or --queue for each account's next free posting slot")
	}
	if len(alts) > len(media) {
		return d, usageError("alt", "%d alt texts for %d --media files; give one --alt after each --media", len(alts), len(media))
	}
	for _, a := range accounts {
		d.Targets = append(d.Targets, post.DraftTarget{Account: a, At: at})
	}
	for i, m := range media {
		dm := post.DraftMedia{Path: m}
		if i < len(alts) {
			dm.Alt = alts[i]
		}
		d.Media = append(d.Media, dm)
	}
	return d, nil
}

// readDraftMedia reads every attachment given by path, filling its ref,
// hash and content type; paths are relative to baseDir (the draft's
// directory) unless absolute.
func readDraftMedia(d *post.Draft, baseDir string) ([]importedMedia, error) {
	var files []importedMedia
	for i := range d.Media {
		m := &d.Media[i]
		if m.Path == "" {
			continue
		}
		if m.Ref != "" || m.SHA256 != "" || len(m.Fitted) > 0 {
			return nil, badInput("media[%d]: give path, or ref and sha256, not both", i)
		}
		path := m.Path
		if !filepath.IsAbs(path) && baseDir != "" {
			path = filepath.Join(baseDir, path)
		}
		f, err := readMediaFile(fmt.Sprintf("media[%d].path", i), path, m.Alt)
		if err != nil {
			return nil, err
		}
		m.Media = f.Media
		f.index = i
		files = append(files, f)
	}
	return files, nil
}

// maxDraftBytes bounds a draft file (a post body is at most a few
// thousand characters; media are referenced, not embedded).
const maxDraftBytes = post.MaxDraftBytes

// readLimited reads a file of at most limit bytes (one more, so the
// caller can tell it was larger).
func readLimited(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// limitsOf are the default content limits of the platforms this build
// can reach; an account's own instance limits, read when it was added,
// take precedence.
func limitsOf(platformName string) (post.Limits, bool) {
	k, ok := catalog.Lookup(platformName)
	if !ok {
		return post.Limits{}, false
	}
	return k.Limits(), true
}

// measureText counts text as the platform does (graphemes, or X's weights).
func measureText(platformName, text string) int {
	k, _ := catalog.Lookup(platformName)
	return k.Measure(text)
}

// capabilitiesOf describe a platform this build can reach.
func capabilitiesOf(platformName string) (platform.Capabilities, bool) {
	k, ok := catalog.Lookup(platformName)
	return k.Capabilities, ok
}

// bothZones formats a time in UTC and in the local zone.
func bothZones(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	utc := t.UTC().Format("2006-01-02 15:04:05Z")
	if _, off := t.Local().Zone(); off == 0 {
		return utc
	}
	return utc + " (" + t.Local().Format("2006-01-02 15:04:05 MST") + ")"
}

// cmdPostList is `oncepost post list`.
func cmdPostList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("post list")
	statuses := fs.String("status", "", "comma-separated target statuses: "+strings.Join(statusNames(), ","))
	account := fs.String("account", "", "only targets on this account")
	limit := fs.Int("limit", 100, "at most this many posts on a page")
	after := fs.String("after", "", "list the page after the one that gave this cursor (printed when a listing is cut)")
	asJSON := fs.Bool("json", false, "print JSON: {\"posts\": [...], \"next\": \"CURSOR\"}")
	if _, err := parseFlags(fs, args, stdout, 0, 0); err != nil {
		return err
	}
	filter := publishing.PostFilter{Account: post.AccountID(*account), Limit: *limit, After: *after}
	if *limit < 1 {
		return usageError("limit", "%d: need at least 1", *limit)
	}
	if *statuses != "" {
		for _, s := range strings.Split(*statuses, ",") {
			filter.Statuses = append(filter.Statuses, post.TargetStatus(strings.TrimSpace(s)))
		}
	}
	b, err := where.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	page, err := b.desk().List(ctx, filter)
	if errors.Is(err, publishing.ErrBadCursor) {
		return badCursor(*after)
	}
	if err != nil {
		return flagError(err, "")
	}
	if *asJSON {
		listing := postListing{Posts: page.Posts, Next: page.Next}
		if listing.Posts == nil {
			listing.Posts = []post.Post{}
		}
		return printJSON(stdout, listing)
	}
	if len(page.Posts) == 0 {
		fmt.Fprintln(stdout, "no posts match")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POST\tACCOUNT\tSLOT\tSTATUS\tREMOTE ID\tTEXT\tREASON")
	zones := b.zones(ctx)
	for _, p := range page.Posts {
		for _, t := range p.Targets {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, t.Account, zones.show(t.Account, t.Slot), t.Status, orDash(t.RemoteID), snippet(p.Body, 32), t.Reason)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Next != "" {
		fmt.Fprintf(stderr, "more posts: %d listed; the next page: %s\n", len(page.Posts), nextPageCommand(args, page.Next))
	}
	return nil
}

// postListing is `post list --json`: a page of posts and the cursor of
// the next page, left out on the last.
type postListing struct {
	Posts []post.Post `json:"posts"`
	Next  string      `json:"next,omitempty"`
}

// nextPageCommand is the command line of the page after this one: the
// same arguments, --after replaced by the cursor.
func nextPageCommand(args []string, cursor string) string {
	out := []string{"oncepost", "post", "list"}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--after" || a == "-after":
			i++ // and its value
		case strings.HasPrefix(a, "--after=") || strings.HasPrefix(a, "-after="):
		default:
			out = append(out, shellQuote(a))
		}
	}
	return strings.Join(append(out, "--after", cursor), " ")
}

// shellQuote quotes an argument for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,/:=+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// badCursor is the error of a --after cursor the store did not make.
func badCursor(cursor string) error {
	return usageError("after", "%q is not a cursor of this listing; use the one the page before printed (post list prints it when a listing is cut)", snippet(cursor, 40))
}

func statusNames() []string {
	var out []string
	for _, s := range publishing.TargetStatuses {
		out = append(out, string(s))
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// snippet is the start of a text on one line.
func snippet(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// cmdPostShow is `oncepost post show ID`.
func cmdPostShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("post show")
	asJSON := fs.Bool("json", false, "print JSON")
	b, rest, err := parseAndOpen(ctx, fs, where, args, stdout, 1, 1)
	if err != nil {
		return err
	}
	defer b.Close()
	v, err := b.desk().Show(ctx, post.ID(rest[0]))
	if err != nil {
		return flagError(err, rest[0])
	}
	p := v.Post
	if *asJSON {
		return printJSON(stdout, v)
	}
	fmt.Fprintf(stdout, "post %s (created %s)\n", p.ID, bothZones(p.CreatedAt))
	fmt.Fprintf(stdout, "  text: %s\n", strings.ReplaceAll(p.Body, "\n", "\n        "))
	for _, name := range slices.Sorted(maps.Keys(p.Texts)) {
		fmt.Fprintf(stdout, "  text on %s: %s\n", name, strings.ReplaceAll(p.Texts[name], "\n", "\n        "))
	}
	for i, text := range p.Thread {
		fmt.Fprintf(stdout, "  reply %d: %s\n", i+2, strings.ReplaceAll(text, "\n", "\n           "))
	}
	for i, m := range p.Media {
		fmt.Fprintf(stdout, "  media[%d]: %s %s alt=%q\n", i, m.ContentType, m.Ref, m.Alt)
		for _, name := range slices.Sorted(maps.Keys(m.Fitted)) {
			f := m.Fitted[name]
			fmt.Fprintf(stdout, "    on %s: %s %s (fitted)\n", name, f.ContentType, f.Ref)
		}
	}
	zones := b.zones(ctx)
	for _, tv := range v.Targets {
		t := tv.Target
		fmt.Fprintf(stdout, "\n  %s: %s\n", t.Account, t.Status)
		fmt.Fprintf(stdout, "    slot:    %s\n", zones.show(t.Account, t.Slot))
		if t.RemoteID != "" {
			fmt.Fprintf(stdout, "    remote:  %s\n", t.RemoteID)
		}
		if t.Reason != "" {
			fmt.Fprintf(stdout, "    reason:  %s\n", t.Reason)
		}
		if !t.NextTry.IsZero() {
			fmt.Fprintf(stdout, "    next try: %s\n", bothZones(t.NextTry))
		}
		for _, pv := range tv.Parts {
			state := string(pv.State)
			if state == "" {
				state = "not sent"
			}
			line := fmt.Sprintf("    part %d: %s", pv.Part, state)
			if pv.RemoteID != "" {
				line += "  remote " + pv.RemoteID
			}
			if pv.Reason != "" {
				line += "  " + pv.Reason
			}
			fmt.Fprintln(stdout, line)
		}
		for _, e := range tv.Ledger {
			fmt.Fprintf(stdout, "    ledger %s %s: %s, attempt %d, handle %s\n", e.Action, e.Key, e.State, e.Attempt, e.Handle)
			for _, h := range e.History {
				from := string(h.From)
				if from == "" {
					from = "(new)"
				}
				line := fmt.Sprintf("      %s  %s → %s  attempt %d", bothZones(h.At), from, h.To, h.Attempt)
				if h.Reason != "" {
					line += "  " + h.Reason
				}
				fmt.Fprintln(stdout, line)
			}
		}
	}
	return nil
}

// parseAndOpen parses a workspace command's flags and arguments and opens
// the workspace (which must exist); the caller closes it.
func parseAndOpen(ctx context.Context, fs *flag.FlagSet, where *where, args []string, stdout io.Writer, minArgs, maxArgs int) (*backend, []string, error) {
	rest, err := parseFlags(fs, args, stdout, minArgs, maxArgs)
	if err != nil {
		return nil, nil, err
	}
	b, err := where.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	return b, rest, nil
}

// cmdPostCancel is `oncepost post cancel ID`.
func cmdPostCancel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("post cancel")
	account := fs.String("account", "", "cancel only the target on this account")
	b, rest, err := parseAndOpen(ctx, fs, where, args, stdout, 1, 1)
	if err != nil {
		return err
	}
	defer b.Close()
	out, err := b.desk().Cancel(ctx, post.ID(rest[0]), post.AccountID(*account))
	return printOutcomes(stdout, rest[0], "cancelled", out, flagError(err, rest[0]))
}

// printOutcomes prints what a post command did on each target ("POST on
// ACCOUNT: message"); the targets it refused are returned together as
// one error ("not VERB: …"). An error that stopped the command is
// returned after the outcomes before it are printed.
func printOutcomes(stdout io.Writer, id, verb string, outcomes []publishing.TargetOutcome, stopped error) error {
	var failed []string
	for _, o := range outcomes {
		if o.Done {
			fmt.Fprintf(stdout, "%s on %s: %s\n", id, o.Account, outcomeText(o))
		} else {
			failed = append(failed, fmt.Sprintf("%s: %s", o.Account, outcomeText(o)))
		}
	}
	if stopped != nil {
		return stopped
	}
	if len(failed) > 0 {
		return fmt.Errorf("not %s: %s", verb, strings.Join(failed, "; "))
	}
	return nil
}

// outcomeText is an outcome's message with the command that takes the
// decision it names.
func outcomeText(o publishing.TargetOutcome) string {
	switch o.Decision {
	case "approve":
		return fmt.Sprintf("%s: oncepost approve %s", o.Message, o.Key)
	case "reject":
		return fmt.Sprintf("%s; to drop the post: oncepost reject %s --reason TEXT", o.Message, o.Key[:min(len(o.Key), 12)])
	}
	return o.Message
}

// dropSchedule deletes a target's one-time schedule, if it still exists
// (a schedule that fires for a moved or cancelled target does nothing, so
// a failure here only leaves a harmless schedule behind).
func (rt *runtime) dropSchedule(ctx context.Context, ref publishing.TargetRef) {
	if err := rt.cron.Delete(ctx, scheduleName(ref)); err != nil && !errors.Is(err, localcron.ErrNotFound) {
		rt.log.WarnContext(ctx, "schedule not deleted", "name", scheduleName(ref), "err", err)
	}
}

// cmdPostReschedule is `oncepost post reschedule ID --at TIME`.
func cmdPostReschedule(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("post reschedule")
	account := fs.String("account", "", "move only the target on this account")
	at := fs.String("at", "", "the new time, RFC 3339 with an offset (required)")
	rest, err := parseFlags(fs, args, stdout, 1, 1)
	if err != nil {
		return err
	}
	if *at == "" {
		return usageError("at", "is missing: give the new time, e.g. --at 2026-12-01T09:00:00+01:00")
	}
	slot, err := post.ParseSlot(*at)
	if err != nil {
		return usageError("at", "%v; write an RFC 3339 time with an offset, e.g. 2026-12-01T09:00:00+01:00", err)
	}
	b, err := where.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	out, err := b.desk().Reschedule(ctx, post.ID(rest[0]), post.AccountID(*account), slot)
	return printOutcomes(stdout, rest[0], "rescheduled", out, flagError(err, rest[0]))
}

// cmdPostDelete is `oncepost post delete ID`: a delete through the ledger,
// waiting for approval unless --yes.
func cmdPostDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("post delete")
	account := fs.String("account", "", "delete only the copy on this account")
	yes := fs.Bool("yes", false, "approve the delete now and perform it (default: it waits for oncepost approve KEY)")
	b, rest, err := parseAndOpen(ctx, fs, where, args, stdout, 1, 1)
	if err != nil {
		return err
	}
	defer b.Close()
	out, err := b.desk().RequestDelete(ctx, post.ID(rest[0]), post.AccountID(*account), *yes)
	return printOutcomes(stdout, rest[0], "deleted", out, flagError(err, rest[0]))
}
