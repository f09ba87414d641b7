package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"oncepost/shared/publishing"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and found a problem (chaos duplicates, …)
	exitUsage   = 2 // bad arguments
)

// errUsage marks an argument error; the message names the flag or argument.
var errUsage = errors.New("usage")

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"run", "run the embedded runtime (add --demo for a demo workspace)", cmdRun},
		{"status", "print targets by status and open ledger rows", cmdStatus},
		{"post", "post add FILE: validate and schedule a post", cmdPost},
		{"held", "list entries held for an operator and unresolved ones, with the evidence", cmdHeld},
		{"approve", "approve KEY: release a held post for a re-send with the same handle", cmdDecide(publishing.DecisionRelease)},
		{"confirm", "confirm KEY --remote-id ID: the held post is on the platform", cmdDecide(publishing.DecisionConfirm)},
		{"reject", "reject KEY --reason TEXT: the held post must not go out", cmdDecide(publishing.DecisionReject)},
		{"chaos", "run the regression drill against the sandbox", cmdChaos},
	}
}

// runCLI dispatches a command and maps its error to an exit code.
func runCLI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil:
			return exitOK
		case errors.Is(err, flag.ErrHelp):
			return exitOK
		case errors.Is(err, errUsage):
			fmt.Fprintf(stderr, "oncepost %s: %v\n", c.name, err)
			return exitUsage
		default:
			fmt.Fprintf(stderr, "oncepost %s: %v\n", c.name, err)
			return exitFailure
		}
	}
	fmt.Fprintf(stderr, "oncepost: unknown command %q\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: oncepost COMMAND [flags]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
}

// parseFlags parses a command's flags, turning flag errors into usage
// errors that name the flag, and refusing stray arguments unless allowed.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer, maxArgs int) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > maxArgs {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, strings.Join(fs.Args()[maxArgs:], " "))
	}
	return nil
}

// usageError is a usage error naming a flag.
func usageError(flagName, format string, a ...any) error {
	return fmt.Errorf("%w: --%s: %s", errUsage, flagName, fmt.Sprintf(format, a...))
}
