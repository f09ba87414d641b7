// Command oncepost is the operator's CLI and the embedded runtime: the
// whole publishing pipeline in one process on one SQLite file.
//
//	oncepost run [--demo]    scheduler → trigger → queue → publishers → confirm workflows → sweeper
//	oncepost status [--json] targets by status, open ledger rows with their age
//	oncepost post add FILE   validate and schedule a post (JSON draft)
//	oncepost held            entries held for an operator, and unresolved ones
//	oncepost approve|confirm|reject KEY   an operator's decision on a held entry
//	oncepost chaos [flags]   the regression drill: many posts through faults, counts duplicates
//
// Run `oncepost help` or `oncepost COMMAND -h` for flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // schedules name IANA zones; hosts without zoneinfo still resolve them
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runCLI(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
