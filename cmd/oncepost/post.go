package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// cmdPost is `oncepost post add FILE`: validate a JSON draft and schedule
// it. The running runtime picks the schedule up (or its sweeper does, a
// minute late at most, if it started before the post existed).
func cmdPost(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "add" {
		return fmt.Errorf("%w: want `post add FILE` (FILE is a JSON draft, - for stdin)", errUsage)
	}
	cfg := defaultConfig()
	fs := flag.NewFlagSet("post add", flag.ContinueOnError)
	fs.StringVar(&cfg.DBPath, "db", cfg.DBPath, "SQLite file")
	if err := parseFlags(fs, args[1:], stderr, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: FILE is missing", errUsage)
	}
	var raw []byte
	var err error
	if name := fs.Arg(0); name == "-" {
		raw, err = io.ReadAll(os.Stdin)
	} else {
		raw, err = os.ReadFile(name)
	}
	if err != nil {
		return fmt.Errorf("%w: read draft: %v", errUsage, err)
	}
	var d post.Draft
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return fmt.Errorf("%w: draft is not valid JSON for a post: %v", errUsage, err)
	}
	if err := mustExist(cfg.DBPath); err != nil {
		return err
	}
	cfg.Logger = discardLogger()
	rt, err := openRuntime(ctx, cfg)
	if err != nil {
		return err
	}
	defer rt.Close()
	accounts, err := rt.store.ListAccounts(ctx)
	if err != nil {
		return err
	}
	rules := post.Rules{Accounts: map[post.AccountID]post.Account{}, Limits: limitsOf, Now: time.Now()}
	for _, a := range accounts {
		rules.Accounts[a.ID] = a
	}
	p, err := d.Validate(rules)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := rt.store.CreatePost(ctx, p); err != nil {
		return err
	}
	for _, t := range p.Targets {
		if err := rt.schedule(ctx, publishing.TargetRef{Post: p.ID, Account: t.Account, Slot: t.Slot}); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "scheduled %s for %s at %s\n", p.ID, t.Account, t.Slot.Format(time.RFC3339))
	}
	return nil
}

// limitsOf are the content limits of the platforms this build can reach.
func limitsOf(platformName string) (post.Limits, bool) {
	switch platformName {
	case "mastodon":
		return post.Limits{MaxTextGraphemes: 500, MaxMedia: 4}, true
	}
	return post.Limits{}, false
}
