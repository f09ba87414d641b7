package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/catalog"
	"oncepost/shared/platform/mastodon"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

func accountCommands() []*command {
	return []*command{
		{name: "account add", summary: "connect an account on any platform: mastodon, bluesky, x, threads, discord, telegram, linkedin", args: "--id ID [--platform NAME] [platform flags]", run: cmdAccountAdd,
			help: "Connects an account on any platform oncepost knows (--platform, default mastodon; oncepost platforms lists them). " +
				"Mastodon: an access token (--url, --token-file) or the instance's OAuth page (--oauth); the token is checked with verify_credentials and the instance's limits are read. " +
				"Bluesky: --handle and an app password (--password-file) open a session on the PDS (--api-url, default https://bsky.social); only the session's tokens are stored, never the password. " +
				"Telegram: a bot token from @BotFather (--token-file), checked with getMe, and the chat it posts to (--chat), which the bot must see (getChat); the chat is stored by its numeric id, so a renamed channel keeps working. " +
				"Discord: a bot token (--token-file) and a channel id (--channel), checked by reading the bot and the channel; or an incoming webhook (--platform discord-webhook --webhook-file), whose URL holds its token, checked by reading the webhook. " +
				"X, LinkedIn, Threads: OAuth with your own app (--client-id, --client-secret-file): the command prints the page where you authorise it, then receives the code on http://127.0.0.1:PORT/callback (--redirect-port, default 8765; register that redirect URL with the app), or with --oob reads the code, or the address the browser lands on, from stdin; the authorised user is then read and stored as the account (X: its numeric id and @username). " +
				"Tokens, passwords, client secrets and webhook URLs are read from files or stdin (-), never from arguments, so they stay out of shell history, and are never printed. " +
				"Nothing is stored unless the platform accepts the credential; it is stored encrypted (AES-256-GCM) with the workspace's key file (0600, created on first use), the account with the platform's text and media limits. " +
				"--replace reconnects an existing account (a new credential, e.g. after reconnect_needed); it must be the same account on the platform.",
			example: "oncepost account add --id news --url https://mastodon.social --token-file - < token.txt\n" +
				"  oncepost account add --id sky --platform bluesky --handle news.bsky.social --password-file app-password.txt\n" +
				"  oncepost account add --id tg --platform telegram --token-file bot.token --chat @newschannel\n" +
				"  oncepost account add --id hook --platform discord-webhook --webhook-file webhook.url\n" +
				"  oncepost account add --id li --platform linkedin --client-id 86abcdef --client-secret-file linkedin.secret"},
		{name: "account set", summary: "set an account's time zone and posting slots", args: "ID [--tz ZONE] [--slot RULE]... [--no-slots]", run: cmdAccountSet,
			help: "Changes how an account is scheduled: --tz sets its IANA time zone (its slots are read in it, and times are shown in it; --tz '' for UTC), " +
				"--slot RULE (repeatable) replaces its posting slots with cron(...) or rate(...) rules of the scheduler's dialect read in that zone, --no-slots removes them. " +
				"Posts already in its queue move, in their order, to the first free slots of the new rules (the moves are printed). Its status and credential are left as they are.",
			example: "oncepost account set news --tz Europe/Berlin --slot 'cron(0 9 ? * MON-FRI *)' --slot 'cron(30 12 ? * MON-FRI *)' --slot 'cron(0 17 ? * MON-FRI *)'"},
		{name: "account list", summary: "list accounts (never their credentials)", args: "[--json]", run: cmdAccountList,
			help: "Lists the workspace's accounts: platform, handle, instance, gate policy, status and the instance's limits.", example: "oncepost account list --json"},
		{name: "account show", summary: "one account, its limits and whether a credential is stored", args: "ID [--json]", run: cmdAccountShow,
			help: "Shows one account: its handle and instance, gate policy, status (reconnect_needed after a refused refresh), the instance's limits, and whether a credential is stored (never the credential itself).", example: "oncepost account show news"},
		{name: "account remove", summary: "remove an account and its credential", args: "ID [--force]", run: cmdAccountRemove,
			help:    "Removes an account and its stored credential. It is refused while the account has posts that have not gone out (cancel them first); --force removes it anyway, and their jobs are dead-lettered until an account with the same id is added again (then redrive them: oncepost dlq redrive --all).",
			example: "oncepost account remove news"},
	}
}

var accountIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// cmdAccountAdd is `oncepost account add`.
func cmdAccountAdd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs, where := workspaceFlags("account add")
	f := addFlags{}
	fs.StringVar(&f.id, "id", "", "the account's name in oncepost, e.g. news (required)")
	fs.StringVar(&f.platform, "platform", catalog.Mastodon, "the platform: "+strings.Join(catalog.Names(), ", "))
	f.define(fs)
	gate := fs.String("gate", "", "after an ambiguous send that cannot be found: auto (send again) or manual (hold for an operator); default auto")
	replace := fs.Bool("replace", false, "reconnect an existing account with a new credential")
	var sched scheduleFlags
	sched.define(fs)
	requireApproval := defineRequireApproval(fs)
	timeout := fs.Duration("timeout", 30*time.Second, "deadline of each call to the platform")
	asJSON := fs.Bool("json", false, "print the stored account as JSON")
	if _, err := parseFlags(fs, args, stdout, 0, 0); err != nil {
		return err
	}
	if err := where.check(); err != nil {
		return err
	}
	switch {
	case f.id == "":
		return usageError("id", "is missing: name the account, e.g. --id news")
	case !accountIDPattern.MatchString(f.id):
		return usageError("id", "%q: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", f.id)
	case *gate != "" && *gate != string(post.GateAuto) && *gate != string(post.GateManual):
		return usageError("gate", "%q: use auto or manual", *gate)
	}
	kind, ok := catalog.Lookup(f.platform)
	if !ok {
		return usageError("platform", "%q is not a platform oncepost knows; use one of %s", f.platform, strings.Join(catalog.Names(), ", "))
	}
	if err := f.check(fs); err != nil {
		return err
	}
	if err := sched.check(); err != nil {
		return err
	}
	// Whatever a flow read or was given that is secret is redacted from
	// the error this command returns, as a last guard: the adapters and
	// the flows never put one in a message.
	var secrets secretSet
	defer func() { err = secrets.scrub(err) }()

	// Check the id before any call to the platform; an embedded workspace
	// that does not exist yet has no accounts (it is created only once the
	// credential is verified: a refused credential leaves nothing behind).
	// A stack exists: it is opened now and written once the credential is
	// verified.
	var existing post.Account
	var b *backend
	defer func() {
		if b != nil {
			b.Close()
		}
	}()
	if where.isAWS() {
		if b, err = where.open(ctx); err != nil {
			return err
		}
		if existing, err = b.lookupAccount(ctx, f.id, *replace); err != nil {
			return err
		}
	} else if _, statErr := os.Stat(where.db); statErr == nil {
		if existing, err = lookupAccount(ctx, where, f.id, *replace); err != nil {
			return err
		}
	} else if *replace {
		return usageError("replace", "there is no account %q to reconnect; leave --replace out to add it", f.id)
	}

	if *replace && existing.Platform != "" && existing.Platform != kind.Name {
		return usageError("platform", "account %q is on %s, not %s; reconnect it with --platform %s, or add this one under another id",
			f.id, existing.Platform, kind.Name, existing.Platform)
	}

	// The prompts of an OAuth flow go where they do not spoil --json.
	prompt := stdout
	if *asJSON {
		prompt = stderr
	}
	hc := &http.Client{Timeout: *timeout}
	conn, err := connect(ctx, &f, hc, prompt, &secrets)
	if err != nil {
		return err
	}
	acc := post.Account{
		ID: post.AccountID(f.id), Platform: kind.Name, Handle: conn.handle, BaseURL: conn.baseURL,
		RemoteID: conn.remoteID, CredentialRef: f.id, Gate: post.GateAuto, Limits: conn.limits,
	}
	if !mastodonAPI(kind.Name) {
		// A Mastodon instance's are its own; every other platform's are
		// the catalog's.
		acc.Limits = kind.AccountLimits()
	}
	if *replace {
		// A reconnect keeps how the account is scheduled.
		acc.Gate, acc.TimeZone, acc.Slots, acc.RequireApproval = existing.Gate, existing.TimeZone, existing.Slots, existing.RequireApproval
		if existing.RemoteID != "" && acc.RemoteID != "" && !conn.same(existing.RemoteID) {
			return badInput("the credential belongs to %s (id %s), not to %s (id %s); use that account's credential, or add it under another id",
				acc.Handle, acc.RemoteID, existing.Handle, existing.RemoteID)
		}
	}
	if *gate != "" {
		acc.Gate = post.GatePolicy(*gate)
	}
	sched.apply(&acc)
	requireApproval.apply(&acc, existing)
	if b == nil {
		if b, err = where.create(ctx); err != nil {
			return err
		}
	}
	if _, err := b.accounts.GetAccount(ctx, acc.ID); err == nil && !*replace {
		return usageError("id", "account %q was added meanwhile; pick another id, or --replace", f.id)
	}
	if err := b.refuseConnectedTwice(ctx, acc, conn); err != nil {
		return err
	}
	// The credential first: an account row without its credential would
	// fail every publish; a credential without its account is inert.
	if err := b.accounts.PutCredential(ctx, acc.ID, conn.cred); err != nil {
		return err
	}
	if err := b.accounts.PutAccount(ctx, acc); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, acc)
	}
	verb := "added"
	if *replace {
		verb = "reconnected"
	}
	fmt.Fprintf(stdout, "%s %s: %s on %s (%s)\n", verb, acc.ID, acc.Handle, acc.BaseURL, describeLimits(acc.Limits.Or(defaultLimits(acc.Platform))))
	for _, n := range conn.notes {
		fmt.Fprintln(stdout, n)
	}
	return nil
}

// connectMastodon verifies a Mastodon token (from a file, stdin, or the
// instance's OAuth page) and reads the instance's limits.
func connectMastodon(ctx context.Context, f *addFlags, hc *http.Client, prompt io.Writer, secrets *secretSet) (connection, error) {
	instance, err := instanceURL(f.url)
	if err != nil {
		return connection{}, err
	}
	var cred platform.Credential
	if f.oauth {
		cred, err = oauthConnect(ctx, hc, instance, prompt)
	} else {
		cred, err = readToken(f.tokenFile)
	}
	secrets.add(cred.AccessToken, cred.RefreshToken, cred.ClientSecret)
	if err != nil {
		return connection{}, err
	}
	client, err := mastodon.New(mastodon.Config{BaseURL: instance, Credential: cred, HTTPClient: hc})
	if err != nil {
		return connection{}, err
	}
	profile, err := client.VerifyCredentials(ctx)
	if err != nil {
		return connection{}, refusedCredential(err, f.tokenFile != "")
	}
	limits, err := client.InstanceLimits(ctx)
	if err != nil {
		return connection{}, fmt.Errorf("read the instance's limits from %s: %w", instance, err)
	}
	return connection{
		handle: "@" + profile.Username + "@" + hostOf(instance), baseURL: instance, remoteID: profile.ID, cred: cred,
		limits: post.Limits{MaxTextGraphemes: limits.MaxCharacters, MaxMedia: limits.MaxMediaAttachments, MaxMediaBytes: limits.ImageSizeLimit},
	}, nil
}

// refuseConnectedTwice refuses to connect the remote account of conn
// (same platform, base URL and remote id) under acc.ID when another id
// has it already, naming that id: each id has its own ledger entries, so
// a post sent to both ids would reach the one remote account twice.
func (b *backend) refuseConnectedTwice(ctx context.Context, acc post.Account, conn connection) error {
	if acc.RemoteID == "" {
		return nil
	}
	accounts, err := b.accounts.ListAccounts(ctx)
	if err != nil {
		return err
	}
	for _, a := range accounts {
		if a.ID != acc.ID && a.Platform == acc.Platform && a.BaseURL == acc.BaseURL && a.RemoteID != "" && conn.same(a.RemoteID) {
			return usageError("id", "%s on %s is connected already as account %q; one remote account under two ids would get a post twice: use %q (--id %s --replace to reconnect it), or remove it first (oncepost account remove %s)",
				acc.Handle, acc.BaseURL, a.ID, a.ID, a.ID, a.ID)
		}
	}
	return nil
}

// lookupAccount checks an id against an existing embedded workspace for
// account add: taken (without replace) or missing (with replace) is bad
// input.
func lookupAccount(ctx context.Context, where *where, id string, replace bool) (post.Account, error) {
	b, err := where.open(ctx)
	if err != nil {
		return post.Account{}, err
	}
	defer b.Close()
	return b.lookupAccount(ctx, id, replace)
}

// lookupAccount checks an id against the backend's accounts for account
// add: taken (without replace) or missing (with replace) is bad input.
func (b *backend) lookupAccount(ctx context.Context, id string, replace bool) (post.Account, error) {
	existing, err := b.accounts.GetAccount(ctx, post.AccountID(id))
	switch {
	case err == nil && !replace:
		return existing, usageError("id", "account %q exists already (%s on %s); pick another id, or --replace to reconnect it", id, existing.Handle, existing.BaseURL)
	case errors.Is(err, post.ErrNotFound) && replace:
		return existing, usageError("replace", "there is no account %q to reconnect; leave --replace out to add it", id)
	case err != nil && !errors.Is(err, post.ErrNotFound):
		return existing, err
	}
	return existing, nil
}

// openWorkspace opens (creating it if needed) the workspace for a
// command that writes configuration, like adding the first account.
func openWorkspace(ctx context.Context, dbPath string) (*runtime, error) {
	cfg := defaultConfig()
	cfg.DBPath, cfg.Logger, cfg.Metrics = dbPath, discardLogger(), io.Discard
	return openRuntime(ctx, cfg)
}

func defaultLimits(platformName string) post.Limits {
	l, _ := limitsOf(platformName)
	return l
}

func describeLimits(l post.Limits) string {
	s := fmt.Sprintf("%d characters, %d media", l.MaxTextGraphemes, l.MaxMedia)
	if l.MaxMediaBytes > 0 {
		s += fmt.Sprintf(", images up to %.1f MB", float64(l.MaxMediaBytes)/1e6)
	}
	return s
}

// instanceURL checks an instance address: https, or http on a loopback
// address (a local sandbox); no path, query or credentials.
func instanceURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(raw), "/"))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", usageError("url", "%q is not an instance address; write it like https://mastodon.social", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return "", usageError("url", "%q: give only the instance's address, like https://mastodon.social", raw)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return "", usageError("url", "%q: use https (plain http is allowed only for a local sandbox on 127.0.0.1)", raw)
	}
	return u.Scheme + "://" + u.Host, nil
}

func isLoopback(host string) bool {
	return host == "127.0.0.1" || host == "::1" || host == "localhost"
}

func hostOf(instance string) string {
	u, err := url.Parse(instance)
	if err != nil {
		return instance
	}
	return u.Host
}

// readToken reads an access token from a file or stdin. The token is
// never an argument: arguments land in shell history and process lists.
func readToken(name string) (platform.Credential, error) {
	var raw []byte
	var err error
	if name == "-" {
		raw, err = io.ReadAll(io.LimitReader(os.Stdin, 8<<10))
	} else {
		raw, err = readSecretFile("token-file", name, 8<<10)
	}
	if errors.Is(err, errUsage) {
		return platform.Credential{}, err
	}
	if err != nil {
		return platform.Credential{}, usageError("token-file", "cannot read %s: %v", name, unwrapPathError(err))
	}
	token := strings.TrimSpace(string(raw))
	switch {
	case token == "":
		return platform.Credential{}, usageError("token-file", "%s is empty; put the access token in it", name)
	case len(token) > 4<<10 || strings.ContainsAny(token, " \t\r\n"):
		return platform.Credential{}, usageError("token-file", "%s does not hold one access token (one line, no spaces)", name)
	}
	return platform.Credential{AccessToken: token}, nil
}

// refusedCredential explains a verify_credentials failure.
func refusedCredential(err error, fromFile bool) error {
	var un *platform.Unauthorized
	var rej *platform.Rejected
	field := "token-file"
	if !fromFile {
		field = "oauth"
	}
	switch {
	case errors.As(err, &un):
		return usageError(field, "the instance refused the token (%s); create a new one with the scopes read and write, and nothing was stored", un.Message)
	case errors.As(err, &rej) && (rej.Status == http.StatusForbidden || rej.Status == http.StatusUnauthorized):
		return usageError(field, "the instance refused the token (%s); give it the scopes read and write, and nothing was stored", rej.Message)
	}
	return fmt.Errorf("verify the token: %w (nothing was stored)", err)
}

// oauthConnect registers an app on the instance, prints the page where
// the user authorises it, reads the code from stdin and exchanges it.
func oauthConnect(ctx context.Context, hc *http.Client, instance string, stdout io.Writer) (platform.Credential, error) {
	app, err := mastodon.RegisterApp(ctx, hc, instance, mastodon.AppRequest{ClientName: "oncepost"})
	if err != nil {
		return platform.Credential{}, fmt.Errorf("register oncepost on %s: %w", instance, err)
	}
	fmt.Fprintf(stdout, "Open this page, sign in and authorise oncepost:\n\n  %s\n\nthen paste the code it shows here: ", mastodon.AuthorizeURL(instance, app))
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	code := strings.TrimSpace(line)
	if code == "" {
		if err != nil && !errors.Is(err, io.EOF) {
			return platform.Credential{}, fmt.Errorf("read the code: %w", err)
		}
		return platform.Credential{}, usageError("oauth", "no code given; run the command again and paste the code the page shows")
	}
	fmt.Fprintln(stdout)
	cred, err := mastodon.ExchangeCode(ctx, hc, instance, app, code)
	if err != nil {
		return platform.Credential{}, usageError("oauth", "%v", err)
	}
	return cred, nil
}

// accountView is an account as listed: never its credential.
type accountView struct {
	post.Account
	// Credential says whether one is stored, never what it is.
	Credential string `json:"credential"`
	// Unfinished counts the account's targets that have not gone out.
	Unfinished int `json:"unfinished_targets"`
}

func (b *backend) accountView(ctx context.Context, a post.Account) (accountView, error) {
	v := accountView{Account: a, Credential: "missing"}
	c, err := b.accounts.Credential(ctx, a.ID)
	switch {
	case err == nil:
		v.Credential = "stored, encrypted"
		if c.RefreshToken != "" {
			v.Credential += ", refreshable"
		}
		if !c.ExpiresAt.IsZero() {
			v.Credential += ", expires " + c.ExpiresAt.UTC().Format(time.RFC3339)
		}
	case !errors.Is(err, post.ErrNotFound):
		v.Credential = "unreadable: " + err.Error()
	}
	page, err := b.lister.ListPostPage(ctx, publishing.PostFilter{Account: a.ID, Statuses: unfinishedStatuses, Limit: 1000})
	if err != nil {
		return v, err
	}
	for _, p := range page.Posts {
		if t, ok := p.Target(a.ID); ok && !t.Status.Terminal() {
			v.Unfinished++
		}
	}
	return v, nil
}

var unfinishedStatuses = []post.TargetStatus{post.NeedsApproval, post.Scheduled, post.Triggered, post.Waiting, post.Publishing, post.Held}

// cmdAccountList is `oncepost account list`.
func cmdAccountList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("account list")
	asJSON := fs.Bool("json", false, "print JSON")
	b, _, err := parseAndOpen(ctx, fs, where, args, stdout, 0, 0)
	if err != nil {
		return err
	}
	defer b.Close()
	accounts, err := b.accounts.ListAccounts(ctx)
	if err != nil {
		return err
	}
	views := []accountView{}
	for _, a := range accounts {
		v, err := b.accountView(ctx, a)
		if err != nil {
			return err
		}
		views = append(views, v)
	}
	if *asJSON {
		return printJSON(stdout, views)
	}
	if len(views) == 0 {
		fmt.Fprintln(stdout, "no accounts; add one with: oncepost account add --id ID --url URL --token-file FILE (Mastodon), or --platform NAME (oncepost account add --help)")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPLATFORM\tHANDLE\tINSTANCE\tGATE\tSTATUS\tUNFINISHED\tZONE\tSLOTS\tLIMITS")
	for _, v := range views {
		status := string(v.Status)
		if status == "" {
			status = "ok"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\t%s\n", v.ID, v.Platform, v.Handle, v.BaseURL, v.Gate, status, v.Unfinished,
			zoneName(v.TimeZone), len(v.Slots), describeLimits(v.Limits.Or(defaultLimits(v.Platform))))
	}
	return tw.Flush()
}

// cmdAccountShow is `oncepost account show ID`.
func cmdAccountShow(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("account show")
	asJSON := fs.Bool("json", false, "print JSON")
	b, rest, err := parseAndOpen(ctx, fs, where, args, stdout, 1, 1)
	if err != nil {
		return err
	}
	defer b.Close()
	a, err := b.getAccount(ctx, rest[0])
	if err != nil {
		return err
	}
	v, err := b.accountView(ctx, a)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, v)
	}
	status := string(v.Status)
	if status == "" {
		status = "ok"
	}
	if v.StatusReason != "" {
		status += " (" + v.StatusReason + "; reconnect with: " + reconnectCommand(v.Account) + ")"
	}
	fmt.Fprintf(stdout, "account %s\n  platform:   %s\n  handle:     %s\n  instance:   %s\n  remote id:  %s\n  gate:       %s\n  status:     %s\n  limits:     %s\n  credential: %s\n  unfinished: %d targets\n  time zone:  %s\n  slots:      %s\n",
		v.ID, v.Platform, v.Handle, v.BaseURL, v.RemoteID, v.Gate, status, describeLimits(v.Limits.Or(defaultLimits(v.Platform))), v.Credential, v.Unfinished,
		zoneName(v.TimeZone), describeSlots(v.Slots))
	if v.RequireApproval {
		fmt.Fprintln(stdout, "  approval:   required before a post is scheduled")
	}
	return nil
}

func (b *backend) getAccount(ctx context.Context, id string) (post.Account, error) {
	a, err := b.accounts.GetAccount(ctx, post.AccountID(id))
	if errors.Is(err, post.ErrNotFound) {
		return post.Account{}, badInput("no account %q (oncepost account list)", id)
	}
	return a, err
}

// cmdAccountRemove is `oncepost account remove ID`.
func cmdAccountRemove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("account remove")
	force := fs.Bool("force", false, "remove the account even though posts for it have not gone out")
	b, rest, err := parseAndOpen(ctx, fs, where, args, stdout, 1, 1)
	if err != nil {
		return err
	}
	defer b.Close()
	a, err := b.getAccount(ctx, rest[0])
	if err != nil {
		return err
	}
	v, err := b.accountView(ctx, a)
	if err != nil {
		return err
	}
	if v.Unfinished > 0 && !*force {
		return fmt.Errorf("account %s has %d posts that have not gone out (oncepost post list --account %s --status %s); cancel them first, or --force",
			a.ID, v.Unfinished, a.ID, strings.Join(statusStrings(unfinishedStatuses), ","))
	}
	if err := b.admin.DeleteAccount(ctx, a.ID); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed %s (%s) and its credential\n", a.ID, a.Handle)
	if v.Unfinished > 0 {
		fmt.Fprintf(stdout, "%d posts for it have not gone out: their jobs will be dead-lettered until an account %s is added again\n", v.Unfinished, a.ID)
	}
	return nil
}

func statusStrings(ss []post.TargetStatus) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}
