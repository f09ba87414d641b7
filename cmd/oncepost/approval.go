package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"oncepost/shared/post"
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

// approvalCommands are `post approve`, `post reject` and `post approvals`
// (postCommands lists them).
func approvalCommands() []*command {
	return []*command{
		{name: "post approve", summary: "approve a post that waits for approval: it is scheduled", args: "ID [--at TIME] [--account A]", run: cmdPostApprove,
			help: "Approves a post's targets that wait for approval (an account or the workspace requires it): each is scheduled at its time, with one conditional write, so approving twice, or two people at once, schedules it once. " +
				"A post whose time passed while it waited is never sent late on its own: the approval is refused until --at gives a new time (RFC 3339 with an offset), which it is then scheduled at. " +
				"When the workspace forbids it (oncepost approval set --no-self-approval), the post's author cannot approve it; the CLI acts as \"cli\".",
			example: "oncepost post approve launch\n  oncepost post approve launch --at 2026-12-02T09:00:00+01:00"},
		{name: "post reject", summary: "reject a post that waits for approval: it is never sent", args: "ID --reason TEXT [--account A]", run: cmdPostReject,
			help: "Rejects a post's targets that wait for approval: they are cancelled with the reason and never sent. Rejecting twice is a no-op.", example: "oncepost post reject launch --reason \"not on brand\""},
		{name: "post approvals", summary: "posts waiting for approval, earliest first", args: "[--limit N] [--json]", run: cmdPostApprovals,
			help: "Lists the targets waiting for approval, earliest slot first, with the author and the start of the text; OVERDUE marks a slot that passed (approve it with --at, or reject it). `oncepost held` shows the same queue after the held entries.", example: "oncepost post approvals --json"},
	}
}

// quietDesk is the backend's desk without its log lines: the command
// prints what it did.
func quietDesk(b *backend) *publishing.Desk {
	d := b.desk()
	d.Logger = slog.New(slog.DiscardHandler)
	return d
}

// cmdPostApprove is `oncepost post approve ID [--at TIME]`.
func cmdPostApprove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("post approve")
	account := fs.String("account", "", "approve only the target on this account")
	at := fs.String("at", "", "a new time, RFC 3339 with an offset; needed when the post's time passed")
	b, rest, err := parseAndOpen(ctx, fs, where, args, stdout, 1, 1)
	if err != nil {
		return err
	}
	defer b.Close()
	out, err := quietDesk(b).Approve(ctx, publishing.ApproveRequest{Post: post.ID(rest[0]), Account: post.AccountID(*account), At: *at, By: publishing.CLIPrincipal})
	if errors.Is(err, publishing.ErrSelfApproval) {
		return badInput("%v", err)
	}
	return printOutcomes(stdout, rest[0], "approved", out, flagError(err, rest[0]))
}

// cmdPostReject is `oncepost post reject ID --reason TEXT`.
func cmdPostReject(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("post reject")
	account := fs.String("account", "", "reject only the target on this account")
	reason := fs.String("reason", "", "why it must not go out (required)")
	b, rest, err := parseAndOpen(ctx, fs, where, args, stdout, 1, 1)
	if err != nil {
		return err
	}
	defer b.Close()
	out, err := quietDesk(b).Reject(ctx, post.ID(rest[0]), post.AccountID(*account), *reason, publishing.CLIPrincipal)
	return printOutcomes(stdout, rest[0], "rejected", out, flagError(err, rest[0]))
}

// cmdPostApprovals is `oncepost post approvals`.
func cmdPostApprovals(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("post approvals")
	limit := fs.Int("limit", 100, "list at most this many")
	asJSON := fs.Bool("json", false, "print JSON")
	b, _, err := parseAndOpen(ctx, fs, where, args, stdout, 0, 0)
	if err != nil {
		return err
	}
	defer b.Close()
	if *limit < 1 {
		return usageError("limit", "%d: list at least 1", *limit)
	}
	q, err := b.desk().ListApprovals(ctx, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, q)
	}
	printApprovals(stdout, q)
	return nil
}

// printApprovals prints the approval queue (`post approvals`, `held`).
func printApprovals(w io.Writer, q publishing.ApprovalQueue) {
	if len(q.Items) == 0 {
		fmt.Fprintln(w, "no post waits for approval")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WAITING FOR APPROVAL\tACCOUNT\tSLOT (UTC)\tAUTHOR\tTEXT")
	for _, it := range q.Items {
		slot := it.Slot.Format(time.RFC3339)
		if it.Overdue {
			slot += " OVERDUE"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", it.Post, it.Account, slot, orDash(it.Author), snippet(it.Body, 60))
	}
	tw.Flush()
	if q.More {
		fmt.Fprintln(w, "(more wait; --limit lists more)")
	}
	fmt.Fprintln(w, "decide with: oncepost post approve ID [--at TIME] | oncepost post reject ID --reason TEXT")
	if q.Overdue > 0 {
		fmt.Fprintf(w, "%d overdue: their time passed and they are not sent late on their own; approve them with --at a new time\n", q.Overdue)
	}
}

// approvalSetCommands are `approval show` and `approval set`.
func approvalSetCommands() []*command {
	return []*command{
		{name: "approval show", summary: "the workspace's approval policy and the accounts that require approval", args: "[--json]", run: cmdApprovalShow,
			help: "Prints whether every post waits for approval, whether authors may approve their own posts, and which accounts require approval.", example: "oncepost approval show"},
		{name: "approval set", summary: "require approval for every post, forbid self-approval, or require it on one account", args: "[--required[=false]] [--no-self-approval[=false]] [--account ID]", run: cmdApprovalSet,
			help: "Sets the workspace's approval policy: --required makes every new post wait in needs_approval until someone with the decide scope approves it (oncepost post approve, POST /v1/posts/{id}/approve, the console's inbox); --no-self-approval forbids the post's author to approve it. " +
				"With --account ID, --required sets that account's own rule instead (posts to it wait for approval whatever the workspace says). A flag left out keeps its value. The policy applies to posts added from then on: a post already scheduled is not held back.",
			example: "oncepost approval set --required --no-self-approval\n  oncepost approval set --account news --required\n  oncepost approval set --required=false"},
	}
}

// approvalShow is what `approval show --json` prints.
type approvalShow struct {
	publishing.ApprovalPolicy
	// Accounts are the accounts that require approval themselves.
	Accounts []post.AccountID `json:"accounts_requiring_approval"`
}

// cmdApprovalShow is `oncepost approval show`.
func cmdApprovalShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("approval show")
	asJSON := fs.Bool("json", false, "print JSON")
	b, _, err := parseAndOpen(ctx, fs, where, args, stdout, 0, 0)
	if err != nil {
		return err
	}
	defer b.Close()
	show, err := readApprovalShow(ctx, b)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, show)
	}
	printApprovalShow(stdout, show)
	return nil
}

func readApprovalShow(ctx context.Context, b *backend) (approvalShow, error) {
	pol, err := b.desk().ApprovalPolicy(ctx)
	if err != nil {
		return approvalShow{}, err
	}
	accs, err := b.accounts.ListAccounts(ctx)
	if err != nil {
		return approvalShow{}, err
	}
	show := approvalShow{ApprovalPolicy: pol, Accounts: []post.AccountID{}}
	for _, a := range accs {
		if a.RequireApproval {
			show.Accounts = append(show.Accounts, a.ID)
		}
	}
	return show, nil
}

func printApprovalShow(w io.Writer, s approvalShow) {
	yes := map[bool]string{true: "yes", false: "no"}
	fmt.Fprintf(w, "every post waits for approval: %s\n", yes[s.Required])
	fmt.Fprintf(w, "authors may approve their own posts: %s\n", yes[!s.NoSelfApproval])
	if len(s.Accounts) == 0 {
		fmt.Fprintln(w, "accounts that require approval: none")
		return
	}
	names := make([]string, len(s.Accounts))
	for i, a := range s.Accounts {
		names[i] = string(a)
	}
	fmt.Fprintf(w, "accounts that require approval: %s\n", strings.Join(names, ", "))
}

// optionalBool is a boolean flag that knows whether it was given
// (--flag, --flag=true, --flag=false).
type optionalBool struct {
	set, value bool
}

func (o *optionalBool) String() string   { return strconv.FormatBool(o.value) }
func (o *optionalBool) IsBoolFlag() bool { return true }
func (o *optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("%q: use true or false", s)
	}
	o.set, o.value = true, v
	return nil
}

// cmdApprovalSet is `oncepost approval set`.
func cmdApprovalSet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("approval set")
	var required, noSelf optionalBool
	fs.Var(&required, "required", "every new post waits for approval (with --account: posts to that account)")
	fs.Var(&noSelf, "no-self-approval", "a post's author may not approve it")
	account := fs.String("account", "", "set --required on this account instead of the workspace")
	if _, err := parseFlags(fs, args, stdout, 0, 0); err != nil {
		return err
	}
	switch {
	case *account != "" && noSelf.set:
		return usageError("no-self-approval", "is the workspace's rule; leave --account out to set it")
	case *account != "" && !required.set:
		return usageError("required", "is missing: say whether posts to %s wait for approval (--required or --required=false)", *account)
	case *account == "" && !required.set && !noSelf.set:
		return badInput("nothing to set: give --required and/or --no-self-approval (oncepost approval show prints the policy)")
	}
	b, err := where.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	if *account != "" {
		// The flag alone (Desk.ChangeAccount): a concurrent status or
		// slots change is kept.
		req := required.value
		_, _, err := b.desk().ChangeAccount(ctx, post.AccountID(*account), publishing.AccountChange{RequireApproval: &req})
		if len(publishing.FieldErrors(err)) > 0 {
			return usageError("account", "no account %q (oncepost account list)", *account)
		}
		if err != nil {
			return err
		}
	} else {
		desk := quietDesk(b)
		pol, err := desk.ApprovalPolicy(ctx)
		if err != nil {
			return err
		}
		if required.set {
			pol.Required = required.value
		}
		if noSelf.set {
			pol.NoSelfApproval = noSelf.value
		}
		if err := desk.SetApprovalPolicy(ctx, pol); err != nil {
			return err
		}
	}
	show, err := readApprovalShow(ctx, b)
	if err != nil {
		return err
	}
	printApprovalShow(stdout, show)
	return nil
}

// requireApprovalFlag is account add's --require-approval (and the
// lead's account set can take it too): given, it sets the account's
// RequireApproval; left out, a reconnected account keeps its own.
type requireApprovalFlag struct{ optionalBool }

// defineRequireApproval adds --require-approval to fs.
func defineRequireApproval(fs *flag.FlagSet) *requireApprovalFlag {
	f := &requireApprovalFlag{}
	fs.Var(f, "require-approval", "posts to this account wait for approval before they are scheduled (oncepost post approve)")
	return f
}

// apply sets acc.RequireApproval: the flag's value when given, else
// existing's (the account as stored before, zero for a new one).
func (f *requireApprovalFlag) apply(acc *post.Account, existing post.Account) {
	acc.RequireApproval = existing.RequireApproval
	if f.set {
		acc.RequireApproval = f.value
	}
}

// heldApprovalsShown bounds the approval queue `held` prints.
const heldApprovalsShown = 50

// printHeldApprovals prints the approval queue after `held`'s entries:
// the other things waiting for a person.
func printHeldApprovals(ctx context.Context, b *backend, stdout, stderr io.Writer) {
	q, err := b.desk().ListApprovals(ctx, heldApprovalsShown)
	if err != nil {
		fmt.Fprintf(stderr, "oncepost held: the approval queue could not be read: %v\n", err)
		return
	}
	if len(q.Items) == 0 {
		return
	}
	fmt.Fprintln(stdout)
	printApprovals(stdout, q)
}
