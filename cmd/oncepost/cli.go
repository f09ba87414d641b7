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

// Exit codes, documented in the README and in `oncepost help`.
const (
	exitOK = 0
	// exitFailure: the command ran and something failed or was found
	// wrong (a platform refused, a drill found duplicates, the store could
	// not be read).
	exitFailure = 1
	// exitUsage: bad input (flags, arguments, a draft, an unknown id);
	// nothing was written.
	exitUsage = 2
)

// errUsage marks bad input: exit code 2. Its own text is never printed.
var errUsage = errors.New("bad input")

// inputError is bad input; the message names the field or argument and
// the fix.
type inputError struct{ msg string }

func (e *inputError) Error() string        { return e.msg }
func (e *inputError) Is(target error) bool { return target == errUsage }

// badInput returns an error that exits 2 with the formatted message.
func badInput(format string, a ...any) error {
	return &inputError{msg: fmt.Sprintf(format, a...)}
}

// usageError is bad input naming a flag.
func usageError(flagName, format string, a ...any) error {
	return badInput("--%s: %s", flagName, fmt.Sprintf(format, a...))
}

// command is one command or command group of the CLI.
type command struct {
	// name is the full name, e.g. "post add".
	name    string
	summary string
	// args is what follows the name in the usage line, e.g. "[flags] ID".
	args string
	// help says what the command does; example shows one use.
	help, example string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	subs          []*command
}

func commands() []*command {
	return []*command{
		{name: "run", summary: "run the embedded runtime until Ctrl-C (--demo: a demo workspace)", args: "[flags]", run: cmdRun,
			help:    "Runs the whole pipeline on one SQLite file: schedules fire, jobs are queued, publishers send with a ledger row written first, confirm workflows read the platform back after an ambiguous answer, and the sweeper raises alarms (metric lines) for anything unresolved. Stops cleanly on SIGINT/SIGTERM; running it again resumes.",
			example: "oncepost run --db var/oncepost.db --workers 4"},
		{name: "serve", summary: "run the embedded runtime and the HTTP API on 127.0.0.1 until Ctrl-C", args: "[--addr HOST:PORT] [--public] [flags]", run: cmdServe,
			help:    "Runs everything `oncepost run` runs, plus the HTTP API (docs/api.md; its contract at /v1/openapi.json) on --addr, 127.0.0.1:8080 by default. Callers send a token made by `oncepost token add` (Authorization: Bearer op_…). An address other machines can reach is refused unless --public is given. Stops cleanly on SIGINT/SIGTERM: requests in flight are answered, then the runtime stops.",
			example: "oncepost serve --db var/oncepost.db --addr 127.0.0.1:8080"},
		{name: "console", summary: "serve the web console for a workspace or a stack on 127.0.0.1 (a one-time sign-in link)", args: "[--addr HOST:PORT] [--backend aws --stack NAME]", run: cmdConsole,
			help:    "Serves the web console (docs/console.md) and the API under it at /v1, without running the runtime: for a deployed stack (--backend aws) it acts with your own AWS credentials, so IAM stays the only door and the stack needs no public console. It prints a sign-in link that works once, for 10 minutes. On one machine, `oncepost serve` serves the same console next to the runtime, signed in with API tokens.",
			example: "oncepost console --backend aws --stack oncepost-prod"},
		{name: "status", summary: "targets by status, open ledger rows, waiting targets, dead letters", args: "[--json]", run: cmdStatus,
			help: "Prints how many targets are in each status, every open ledger row with its age, targets waiting for a throttle to pass and the dead-letter queue's depth. With --backend aws the ledger is counted by its open and held entries only (the other states have no index to count them by).", example: "oncepost status --json"},
		{name: "account", summary: "connect, list, show, set and remove platform accounts", subs: accountCommands()},
		{name: "post", summary: "add, list, show, cancel, reschedule and delete posts", subs: postCommands()},
		{name: "queue", summary: "an account's queue of posts on its posting slots: show, reorder, shuffle", subs: queueCommands()},
		{name: "recurring", summary: "posts that repeat on a schedule: add, list, show, edit, stop", subs: recurringCommands()},
		{name: "blocklist", summary: "words and phrases no post may contain", subs: blocklistCommands()},
		{name: "approval", summary: "who must approve posts before they are scheduled", subs: approvalSetCommands()},
		{name: "webhook", summary: "signed event deliveries to the systems around oncepost", subs: webhookCommands()},
		{name: "dlq", summary: "list, redrive and drop dead-lettered jobs", subs: dlqCommands()},
		{name: "held", summary: "entries held for an operator and unresolved ones, with the evidence", args: "[--json]", run: cmdHeld,
			help: "Lists ledger entries waiting for a decision (held) and entries whose outcome is still being resolved, with the reason, how many sends may have reached the platform, how many looks were made and the evidence found.", example: "oncepost held"},
		{name: "approve", summary: "release a held entry: re-send with the same handle, or perform an approved delete", args: "KEY", run: cmdDecide(publishing.DecisionRelease),
			help: "Approves a held entry. A held publish is released and sent again with the same platform handle; a delete waiting for approval is performed at once (check it exists, delete, read back until gone). KEY is the key `held` prints; 8 characters are enough. Approving twice is a no-op.", example: "oncepost approve 2zjy2bt3"},
		{name: "confirm", summary: "record that a held post is on the platform", args: "KEY --remote-id ID", run: cmdDecide(publishing.DecisionConfirm),
			help: "Records that the held post is on the platform under the given id (checked before it is recorded).", example: "oncepost confirm 2zjy2bt3 --remote-id 113402331553439744"},
		{name: "reject", summary: "record that a held entry must not go out", args: "KEY --reason TEXT", run: cmdDecide(publishing.DecisionReject),
			help: "Fails a held entry for good: the post is never sent (or the delete never performed).", example: "oncepost reject 2zjy2bt3 --reason \"already posted by hand\""},
		{name: "token", summary: "API tokens for oncepost serve: add (shown once), list, revoke", subs: tokenCommands()},
		{name: "sandbox", summary: "serve the Mastodon-compatible sandbox platform on 127.0.0.1", args: "[flags]", run: cmdSandbox,
			help:    "Runs the sandbox platform as its own server: a Mastodon-compatible API that misbehaves on purpose (--faults), keeps its timeline on disk (--data) and prints its URL. Its accounts' tokens are written once to a 0600 file, never printed. Add an account to oncepost with the token file: oncepost account add --url URL --token-file FILE.",
			example: "oncepost sandbox --addr 127.0.0.1:4000 --faults flaky --data var/sandbox --account news"},
		{name: "chaos", summary: "the regression drill: many posts through faults, counts duplicates", args: "[flags]", run: cmdChaos,
			help: "Publishes many posts through a sandbox that delays, drops and refuses calls, then checks every post against the platform: none twice, none lost, none left open. --naive runs the seed's retry-three-times template to show it duplicating.", example: "oncepost chaos --rounds 1000 --seed 7"},
		{name: "platforms", summary: "what oncepost guarantees on each platform", args: "[--json | --markdown]", run: cmdPlatforms,
			help: "Prints, per platform, the guarantee oncepost can give when a create's outcome is unknown (exact, confirm by read-back, or human), what the ledger's handle becomes there, how a post is read back, and the text and media limits. The table is made from the adapters' own capabilities; the README carries it (--markdown).", example: "oncepost platforms --json"},
		{name: "version", summary: "print the version", args: "", run: cmdVersion,
			help: "Prints oncepost's version, the Go version it was built with and its VCS revision.", example: "oncepost version"},
	}
}

// find returns the command named by the leading words of args and the
// arguments after them. A group without a known subcommand is returned
// itself.
func find(cmds []*command, args []string) (*command, []string) {
	if len(args) == 0 {
		return nil, args
	}
	for _, c := range cmds {
		if c.name == args[0] || strings.HasSuffix(c.name, " "+args[0]) {
			if len(c.subs) > 0 {
				if sub, rest := find(c.subs, args[1:]); sub != nil {
					return sub, rest
				}
			}
			return c, args[1:]
		}
	}
	return nil, args
}

// runCLI dispatches a command and maps its error to an exit code.
func runCLI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 {
		usage(stderr, cmds)
		return exitUsage
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if c, _ := find(cmds, args[1:]); c != nil {
			printHelp(stdout, c, nil)
			return exitOK
		}
		usage(stdout, cmds)
		return exitOK
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	c, rest := find(cmds, args)
	if c == nil {
		fmt.Fprintf(stderr, "oncepost: unknown command %q; run `oncepost help` for the list\n", args[0])
		return exitUsage
	}
	if c.run == nil {
		if len(rest) > 0 && (rest[0] == "-h" || rest[0] == "--help" || rest[0] == "help") {
			printHelp(stdout, c, nil)
			return exitOK
		}
		if len(rest) == 0 {
			fmt.Fprintf(stderr, "oncepost %s: which one? %s\n", c.name, subNames(c))
		} else {
			fmt.Fprintf(stderr, "oncepost %s: unknown command %q; want %s\n", c.name, rest[0], subNames(c))
		}
		return exitUsage
	}
	err := c.run(ctx, rest, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "oncepost %s: %v\n", c.name, err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "oncepost %s: %v\n", c.name, err)
		return exitFailure
	}
}

func subNames(c *command) string {
	var names []string
	for _, s := range c.subs {
		names = append(names, s.name)
	}
	return strings.Join(names, ", ") + " (oncepost " + c.name + " --help)"
}

func usage(w io.Writer, cmds []*command) {
	fmt.Fprintln(w, "oncepost publishes prepared posts on schedule: never twice, never silently failed.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "usage: oncepost COMMAND [flags]     (oncepost help COMMAND, or COMMAND --help)")
	fmt.Fprintln(w)
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
		for _, s := range c.subs {
			fmt.Fprintf(w, "    %-17s %s\n", strings.TrimPrefix(s.name, c.name+" "), s.summary)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "workspace: --db FILE (the embedded SQLite workspace, the default), or --backend aws with --stack NAME")
	fmt.Fprintln(w, "           (a deployed stack's Outputs, standard AWS SDK configuration) or --outputs FILE; run, sandbox, chaos are embedded only")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "exit codes: 0 done; 1 failed (a platform refused, a check found a problem, the store failed); 2 bad input (nothing written)")
}

// printHelp prints a command's help: usage, what it does, its flags, an
// example.
func printHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	args := c.args
	if len(c.subs) > 0 {
		args = "COMMAND [flags]"
	}
	fmt.Fprintf(w, "usage: oncepost %s %s\n\n", c.name, args)
	if c.help != "" {
		fmt.Fprintln(w, wrap(c.help, 78))
		fmt.Fprintln(w)
	}
	if len(c.subs) > 0 {
		for _, s := range c.subs {
			fmt.Fprintf(w, "  %-22s %s\n", s.name, s.summary)
		}
		fmt.Fprintln(w)
	}
	if fs != nil {
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(w, "flags:")
			fs.SetOutput(w)
			fs.PrintDefaults()
			fs.SetOutput(io.Discard)
			fmt.Fprintln(w)
		}
	}
	if c.example != "" {
		fmt.Fprintf(w, "example:\n  %s\n", c.example)
	}
}

// wrap breaks text into lines of at most width characters.
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(text) {
		if n > 0 && n+1+len(word) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

// spec returns the command with the full name; it panics on a name that
// is not in the table (a programming error).
func spec(name string) *command {
	c, rest := find(commands(), strings.Fields(name))
	if c == nil || len(rest) > 0 || c.name != name {
		panic("oncepost: no command " + name)
	}
	return c
}

// newFlags returns the flag set of the named command.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses a command's flags, placed before, between or after
// its positional arguments, and returns the positional ones. -h/--help
// prints the command's help to stdout and returns flag.ErrHelp. Flag
// errors and a wrong number of arguments are bad input naming the flag or
// argument.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer, minArgs, maxArgs int) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printHelp(stdout, spec(fs.Name()), fs)
				return nil, err
			}
			return nil, badInput("%v (see oncepost %s --help)", err, fs.Name())
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		if args[0] == "--" {
			rest = append(rest, args[1:]...)
			break
		}
		rest = append(rest, args[0])
		args = args[1:]
	}
	c := spec(fs.Name())
	switch {
	case len(rest) > maxArgs:
		return nil, badInput("unexpected argument %q; the command is: oncepost %s", strings.Join(rest[maxArgs:], " "), strings.TrimSpace(c.name+" "+c.args))
	case len(rest) < minArgs:
		return nil, badInput("missing argument; the command is: oncepost %s", strings.TrimSpace(c.name+" "+c.args))
	}
	return rest, nil
}
