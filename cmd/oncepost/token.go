package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"oncepost/shared/apitoken"
	"oncepost/shared/post"
	"oncepost/shared/sqlitestore"
)

func tokenCommands() []*command {
	return []*command{
		{name: "token add", summary: "make an API token for `oncepost serve` (shown once)", args: "--name NAME --scope S[,S] [--rate N] [--json]", run: cmdTokenAdd,
			help: "Makes a bearer token for the HTTP API (oncepost serve) with the given scopes: read (posts, held entries, accounts, dead letters, platforms, status, webhooks), posts (create, cancel, reschedule and delete posts; upload media), decide (approve, confirm or reject held entries), operate (redrive and drop dead letters; make and remove webhook subscriptions, redrive deliveries), or all. " +
				"The token is printed once and never again: only its SHA-256 is stored. Each token may make --rate requests a second (bursts of twice that); more are answered 429 with Retry-After. " +
				"On AWS the API takes IAM-signed requests (SigV4) instead of tokens.",
			example: "oncepost token add --name cms --scope posts,read"},
		{name: "token list", summary: "list API tokens (never the tokens themselves)", args: "[--json]", run: cmdTokenList,
			help: "Lists the workspace's API tokens: name, id (the caller's name in the access log), scopes, rate, when made, last used and revoked.", example: "oncepost token list --json"},
		{name: "token revoke", summary: "revoke an API token at once", args: "NAME", run: cmdTokenRevoke,
			help: "Revokes a token: every request with it is answered 401 from now on, also by a running `oncepost serve`. Revoking twice is a no-op. The name stays taken.", example: "oncepost token revoke cms"},
	}
}

var tokenNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// tokenStore opens the embedded workspace's token table; tokens are the
// one-machine API's (on AWS, IAM signs requests).
func tokenStore(ctx context.Context, where *where, create bool) (*sqlitestore.Store, func() error, error) {
	if where.isAWS() {
		return nil, nil, usageError("backend", "API tokens are the embedded workspace's (oncepost serve); on AWS the API takes IAM-signed requests (SigV4)")
	}
	if err := where.check(); err != nil {
		return nil, nil, err
	}
	open := openTool
	if create {
		open = openWorkspace
	}
	rt, err := open(ctx, where.db)
	if err != nil {
		return nil, nil, err
	}
	return rt.store, rt.Close, nil
}

// cmdTokenAdd is `oncepost token add`.
func cmdTokenAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("token add")
	name := fs.String("name", "", "the token's name, e.g. cms (required, unique)")
	scope := fs.String("scope", "", "comma-separated scopes: "+apitoken.Names()+" (required)")
	rate := fs.Float64("rate", apitoken.DefaultRate, "requests a second the token may make (bursts of twice that)")
	asJSON := fs.Bool("json", false, `print JSON: {"token": "op_…", "id": …, "name": …, "scopes": […], "rate": …}`)
	if _, err := parseFlags(fs, args, stdout, 0, 0); err != nil {
		return err
	}
	switch {
	case *name == "":
		return usageError("name", "is missing: name the token after its caller, e.g. --name cms")
	case !tokenNamePattern.MatchString(*name):
		return usageError("name", "%q: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", *name)
	case *scope == "":
		return usageError("scope", "is missing: give what the token may do, e.g. --scope posts,read (scopes: %s)", apitoken.Names())
	case math.IsNaN(*rate) || math.IsInf(*rate, 0) || *rate <= 0 || *rate > 100000:
		return usageError("rate", "%v: give requests a second, more than 0 and at most 100000", *rate)
	}
	scopes, err := apitoken.ParseScopes(*scope)
	if err != nil {
		return usageError("scope", "%v", err)
	}
	s, closeStore, err := tokenStore(ctx, where, true)
	if err != nil {
		return err
	}
	defer closeStore()
	secret := apitoken.New()
	t := apitoken.Token{ID: apitoken.NewID(), Name: *name, Hash: apitoken.Hash(secret), Scopes: scopes, Rate: *rate, CreatedAt: time.Now().UTC()}
	if err := s.AddToken(ctx, t); errors.Is(err, post.ErrConflict) {
		return usageError("name", "a token named %q exists (revoked ones keep their name); pick another name", *name)
	} else if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, tokenMade{Secret: secret, Token: t})
	}
	fmt.Fprintf(stdout, "token %s (%s), scopes %s, %g requests/s:\n\n  %s\n\nIt is shown this once; only its hash is kept. Send it as: Authorization: Bearer %s…\n",
		t.Name, t.ID, scopeList(t.Scopes), t.Rate, secret, secret[:7])
	return nil
}

// cmdTokenList is `oncepost token list`.
func cmdTokenList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("token list")
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parseFlags(fs, args, stdout, 0, 0); err != nil {
		return err
	}
	s, closeStore, err := tokenStore(ctx, where, false)
	if err != nil {
		return err
	}
	defer closeStore()
	tokens, err := s.ListTokens(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if tokens == nil {
			tokens = []apitoken.Token{}
		}
		return printJSON(stdout, tokens)
	}
	if len(tokens) == 0 {
		fmt.Fprintln(stdout, "no API tokens (oncepost token add --name NAME --scope S)")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tSCOPES\tRATE/S\tCREATED\tLAST USED\tREVOKED")
	for _, t := range tokens {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%g\t%s\t%s\t%s\n", t.Name, t.ID, scopeList(t.Scopes), t.Rate, bothZones(t.CreatedAt), bothZones(t.LastUsedAt), bothZones(t.RevokedAt))
	}
	return tw.Flush()
}

// cmdTokenRevoke is `oncepost token revoke NAME`.
func cmdTokenRevoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("token revoke")
	asJSON := fs.Bool("json", false, "print the revoked token as JSON")
	rest, err := parseFlags(fs, args, stdout, 1, 1)
	if err != nil {
		return err
	}
	s, closeStore, err := tokenStore(ctx, where, false)
	if err != nil {
		return err
	}
	defer closeStore()
	now := time.Now().UTC()
	t, err := s.RevokeToken(ctx, rest[0], now)
	if errors.Is(err, post.ErrNotFound) {
		return badInput("no token named %q (oncepost token list)", rest[0])
	} else if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, t)
	}
	if t.RevokedAt.Before(now) {
		fmt.Fprintf(stdout, "token %s was revoked already, at %s\n", t.Name, bothZones(t.RevokedAt))
		return nil
	}
	fmt.Fprintf(stdout, "revoked token %s (%s): every request with it is refused from now on\n", t.Name, t.ID)
	return nil
}

// tokenMade is `token add --json`: the token, shown this once, and what
// is stored of it.
type tokenMade struct {
	Secret string `json:"token"`
	apitoken.Token
}

func scopeList(scopes []apitoken.Scope) string {
	names := make([]string, len(scopes))
	for i, s := range scopes {
		names[i] = string(s)
	}
	return strings.Join(names, ",")
}
