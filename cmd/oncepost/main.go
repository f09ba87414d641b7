// Command oncepost is the operator's CLI and the embedded runtime: the
// whole publishing pipeline in one process on one SQLite file. The
// operator commands also act on a deployed AWS stack: --backend aws
// --stack NAME (its Outputs read with CloudFormation DescribeStacks) or
// --outputs FILE (backend.go).
//
//	oncepost run [--demo]              scheduler → trigger → queue → publishers → confirm workflows → sweeper
//	oncepost account add|list|show|remove   connect Mastodon accounts (token from a file or stdin, or OAuth)
//	oncepost post add|list|show|cancel|reschedule|delete
//	oncepost blocklist add|list|remove words no post may contain
//	oncepost dlq list|redrive|drop     dead-lettered jobs
//	oncepost held | approve|confirm|reject KEY   an operator's decisions
//	oncepost status | sandbox | chaos | version
//
// Run `oncepost help` or `oncepost COMMAND --help` for flags and an example.
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
