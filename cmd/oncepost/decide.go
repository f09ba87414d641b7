package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/publishing"
)

// heldRow is one entry waiting for an operator, or still unresolved.
type heldRow struct {
	Key     ledger.Key    `json:"key"`
	Action  ledger.Action `json:"action"`
	State   ledger.State  `json:"state"`
	Post    string        `json:"post"`
	Account string        `json:"account"`
	Attempt int           `json:"attempt"`
	// MaybeSent counts the sends that may have reached the platform.
	MaybeSent int       `json:"maybe_sent"`
	Since     time.Time `json:"since,omitzero"`
	Reason    string    `json:"reason,omitempty"`
	// RemoteID is the evidence: a post pre-publish dedup found with the
	// same content.
	RemoteID string `json:"remote_id,omitempty"`
	// Looks is how many times the attempt's confirm workflows read the platform.
	Looks int `json:"looks"`
	// Decision is an operator's decision not yet applied.
	Decision string `json:"decision,omitempty"`
}

// cmdHeld is `oncepost held`: entries held for an operator and entries
// still unresolved, with their reason and evidence.
func cmdHeld(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("held")
	asJSON := fs.Bool("json", false, "print JSON")
	b, _, err := parseAndOpen(ctx, fs, where, args, stdout, 0, 0)
	if err != nil {
		return err
	}
	defer b.Close()
	rows, looksErr, err := b.heldRows(ctx)
	if err != nil {
		return err
	}
	if looksErr != nil {
		fmt.Fprintf(stderr, "oncepost held: LOOKS counts only what could be read: %v\n", looksErr)
	}
	if *asJSON {
		return printJSON(stdout, rows)
	}
	defer printHeldApprovals(ctx, b, stdout, stderr)
	if len(rows) == 0 {
		fmt.Fprintln(stdout, "nothing is held or unresolved")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tACTION\tSTATE\tPOST\tACCOUNT\tATTEMPT\tSENT?\tLOOKS\tSINCE\tEVIDENCE\tREASON")
	for _, r := range rows {
		evidence := "-"
		if r.RemoteID != "" {
			evidence = "remote " + r.RemoteID
		}
		state := string(r.State)
		if r.Decision != "" {
			state += " (decided)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", r.Key, r.Action, state, r.Post, r.Account, r.Attempt, r.MaybeSent, r.Looks,
			r.Since.UTC().Format(time.RFC3339), evidence, r.Reason)
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\ndecide with: oncepost approve KEY | oncepost confirm KEY --remote-id ID | oncepost reject KEY --reason TEXT")
	return nil
}

// heldRows lists held publish entries, then open ones, oldest first
// (publishing.ListHeld, as GET /v1/held lists them). A failure to count
// an entry's looks is returned apart (looksErr, the first one): the rows
// are listed anyway.
func (b *backend) heldRows(ctx context.Context) (rows []heldRow, looksErr error, err error) {
	q := publishing.HeldQuery{Now: time.Now()}
	if b.looks != nil {
		q.Looks = b.looks
	}
	list, err := publishing.ListHeld(ctx, b.ledger, q)
	if err != nil {
		return nil, nil, err
	}
	rows = make([]heldRow, 0, len(list.Items))
	for _, it := range list.Items {
		e := it.Entry
		rows = append(rows, heldRow{Key: e.Key, Action: e.Action, State: e.State, Post: it.PostID, Account: e.Account, Attempt: e.Attempt,
			MaybeSent: e.MaybeSent, Since: it.Since, Reason: e.Reason, RemoteID: it.RemoteID, Looks: it.Looks, Decision: e.Decision})
	}
	return rows, list.LooksErr, nil
}

func countStates(history []string, state string) int {
	n := 0
	for _, h := range history {
		if h == state {
			n++
		}
	}
	return n
}

// cmdDecide is `oncepost approve|confirm|reject KEY`: an operator's
// decision on a held entry. It works with the runtime stopped: the
// decision is recorded and reaches the waiting workflow when it runs.
func cmdDecide(action string) func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		fs, where := workspaceFlags(verbOf(action))
		var remoteID, reason string
		if action == publishing.DecisionConfirm {
			fs.StringVar(&remoteID, "remote-id", "", "the post's id on the platform (required)")
		}
		if action == publishing.DecisionReject {
			fs.StringVar(&reason, "reason", "", "why the post must not go out")
		}
		rest, err := parseFlags(fs, args, stdout, 1, 1)
		if err != nil {
			return err
		}
		switch {
		case action == publishing.DecisionConfirm && remoteID == "":
			return usageError("remote-id", "is required: the id of the post on the platform")
		}
		b, err := where.open(ctx)
		if err != nil {
			return err
		}
		defer b.Close()
		key, err := b.resolveKey(ctx, rest[0])
		if err != nil {
			return err
		}
		dec := operatorDecider{ledger: b.ledger, operator: b.operator, deleter: b.deleter}
		res, err := dec.Decide(ctx, key, publishing.Decision{Action: action, RemoteID: remoteID, Reason: reason})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %s: %s\n", verbOf(action), key, res.Message)
		return nil
	}
}

func verbOf(action string) string {
	if action == publishing.DecisionRelease {
		return "approve"
	}
	return action
}

// resolveKey accepts a full key or a unique prefix of at least 8
// characters among held and open entries.
func (b *backend) resolveKey(ctx context.Context, arg string) (ledger.Key, error) {
	arg = strings.TrimSpace(arg)
	if _, err := b.ledger.Get(ctx, ledger.Key(arg)); err == nil {
		return ledger.Key(arg), nil
	}
	if len(arg) < 8 {
		return "", badInput("key %q: give at least 8 characters of a key listed by `oncepost held`", arg)
	}
	rows, _, err := b.heldRows(ctx)
	if err != nil {
		return "", err
	}
	var found []ledger.Key
	for _, r := range rows {
		if strings.HasPrefix(string(r.Key), arg) {
			found = append(found, r.Key)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", badInput("no held or unresolved entry has a key starting with %q (see `oncepost held`)", arg)
	default:
		return "", badInput("key %q matches %d entries; give more characters", arg, len(found))
	}
}

// openTool opens the runtime's parts on an existing file for a one-off
// command; nothing runs.
func openTool(ctx context.Context, dbPath string) (*runtime, error) {
	if err := mustExist(dbPath); err != nil {
		return nil, err
	}
	cfg := defaultConfig()
	cfg.DBPath, cfg.Logger, cfg.Metrics = dbPath, discardLogger(), io.Discard
	return openRuntime(ctx, cfg)
}
