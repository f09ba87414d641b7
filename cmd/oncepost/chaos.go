package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/platform/mastodon"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// chaosProfile is the drill's fault profile. The default is the seed's
// incident profile (12 s delay against a 10 s timeout, 20 % loss) scaled
// by 1/100, so a thousand rounds run in seconds.
type chaosProfile struct {
	Rounds       int
	Accounts     int
	Delay        time.Duration
	DelayRate    float64
	Timeout      time.Duration
	Loss         float64
	ResponseLoss float64
	Seed         int64
	Naive        bool
	Deadline     time.Duration
	// DBPath keeps the drill's database for inspection; empty: a temporary file.
	DBPath string
	// Platform is where the posts go: "mastodon" (the sandbox) or
	// "bluesky" (the reference PDS behind a faulty proxy).
	Platform string
	// Thread is the parts of each round: 1 a post, more a thread (a reply
	// chain) of that many parts.
	Thread int
}

// chaosResult is the drill's one-line verdict.
type chaosResult struct {
	Rounds, Published, Duplicates, ConfirmBranch, LeakedPending, Lost int
	// Held and Failed are settled, for a human: not lost, and not published.
	Held, Failed int
	// Unexplained counts held or failed rounds the fault plan does not
	// explain, and rounds whose record disagrees with the platform's own
	// (a published target missing on the sandbox, a post on the sandbox
	// without a confirmed ledger row).
	Unexplained int
	Elapsed     time.Duration
	// Problems says what each unexplained round is (not on the line).
	Problems []string
	// DuplicateParts counts the copies beyond the first of threads' parts
	// after the first (not on the line; part of Duplicates).
	DuplicateParts int
}

func (r chaosResult) String() string {
	return fmt.Sprintf("rounds=%d published=%d duplicates=%d confirm-branch=%d leaked-pending=%d lost=%d held=%d failed=%d unexplained=%d elapsed=%s",
		r.Rounds, r.Published, r.Duplicates, r.ConfirmBranch, r.LeakedPending, r.Lost, r.Held, r.Failed, r.Unexplained, r.Elapsed.Round(time.Millisecond))
}

func (r chaosResult) ok() bool {
	return r.Duplicates == 0 && r.Lost == 0 && r.LeakedPending == 0 && r.Unexplained == 0
}

// cmdChaos is `oncepost chaos`.
func cmdChaos(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	p := chaosProfile{}
	fs := newFlags("chaos")
	fs.IntVar(&p.Rounds, "rounds", 1000, "posts to publish")
	fs.IntVar(&p.Accounts, "accounts", 1, "accounts the posts are spread over (1: every post on one busy account)")
	fs.DurationVar(&p.Delay, "delay", 120*time.Millisecond, "how long a slow platform takes before it commits")
	fs.Float64Var(&p.DelayRate, "delay-rate", 0.3, "share of creates that are slow")
	fs.DurationVar(&p.Timeout, "timeout", 100*time.Millisecond, "client timeout of one create")
	fs.Float64Var(&p.Loss, "loss", 0.2, "share of creates dropped before the platform commits")
	fs.Float64Var(&p.ResponseLoss, "response-loss", 0.1, "share of creates whose response is lost after the commit")
	fs.Int64Var(&p.Seed, "seed", 1, "fault plan seed")
	fs.BoolVar(&p.Naive, "naive", false, "run the seed's naive template instead (3 tries 40 ms apart, no ledger): it must duplicate")
	fs.DurationVar(&p.Deadline, "deadline", 0, "give up waiting for posts to settle after this long (default: 100 ms a round, at least 55s)")
	fs.StringVar(&p.DBPath, "db", "", "keep the drill's SQLite file here (must not exist) for `oncepost status` and `post list`; with --naive, its accounts and one post per round as the platform left it (no ledger: the template keeps none)")
	fs.StringVar(&p.Platform, "platform", "mastodon", "mastodon (the sandbox) or bluesky (the reference PDS from `make pds`, faults in a proxy in front of it)")
	fs.IntVar(&p.Thread, "thread", 1, fmt.Sprintf("parts of each round: 1 a post, 2 to %d a thread (a reply chain, each part replying to the one before)", post.MaxThreadParts))
	backendName := embeddedOnly(fs, "chaos")
	if _, err := parseFlags(fs, args, stdout, 0, 0); err != nil {
		return err
	}
	if err := checkEmbeddedOnly("chaos", *backendName); err != nil {
		return err
	}
	switch {
	case p.Rounds < 1:
		return usageError("rounds", "%d: need at least 1", p.Rounds)
	case p.Accounts < 1:
		return usageError("accounts", "%d: need at least 1", p.Accounts)
	case p.Timeout <= 0:
		return usageError("timeout", "%s: must be positive", p.Timeout)
	case p.Platform != "mastodon" && p.Platform != "bluesky":
		return usageError("platform", "%q: use mastodon or bluesky", p.Platform)
	case p.Thread < 1 || p.Thread > post.MaxThreadParts:
		return usageError("thread", "%d: need 1 to %d parts", p.Thread, post.MaxThreadParts)
	}
	for name, v := range map[string]float64{"loss": p.Loss, "response-loss": p.ResponseLoss, "delay-rate": p.DelayRate} {
		if v < 0 || v > 1 {
			return usageError(name, "%v is not a probability in [0, 1]", v)
		}
	}
	if p.DBPath != "" {
		if _, err := os.Stat(p.DBPath); err == nil {
			return usageError("db", "%s exists; the drill needs a fresh file", p.DBPath)
		}
	}
	var (
		res chaosResult
		err error
	)
	switch {
	case p.Naive && p.Platform == "bluesky":
		res, err = chaosNaiveBluesky(ctx, p)
	case p.Naive:
		res, err = chaosNaive(ctx, p)
	default:
		res, err = chaosLedger(ctx, p, stderr)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, res)
	if p.Naive {
		return nil // the naive template is expected to duplicate; the line shows it
	}
	for _, pr := range res.Problems {
		fmt.Fprintln(stderr, "unexplained:", pr)
	}
	if !res.ok() {
		return fmt.Errorf("drill failed: %s", res)
	}
	return nil
}

func chaosSandbox(p chaosProfile) (*sandbox.Server, error) {
	sb := sandbox.New(sandbox.Options{
		DisableIdempotency: true, // prove the ledger alone suffices
		Seed:               p.Seed,
		Random:             sandbox.RandomFaults{DelayRate: p.DelayRate, Delay: p.Delay, Loss: p.Loss, ResponseLoss: p.ResponseLoss},
	})
	if err := sb.Start(); err != nil {
		return nil, fmt.Errorf("start sandbox: %w", err)
	}
	return sb, nil
}

// chaosLedger runs every round through the embedded runtime: scheduler,
// queue, publishers, confirm workflows from the real ASL, sweeper.
func chaosLedger(ctx context.Context, p chaosProfile, stderr io.Writer) (chaosResult, error) {
	start := time.Now()
	var fx chaosFixture
	var err error
	if p.Platform == "bluesky" {
		fx, err = newBlueskyFixture(ctx, p)
	} else {
		fx, err = newSandboxFixture(p)
	}
	if err != nil {
		return chaosResult{}, err
	}
	defer fx.close()
	cfg := defaultConfig()
	if p.DBPath != "" {
		cfg.DBPath = p.DBPath // cmdChaos made sure it does not exist
	} else {
		dir, err := os.MkdirTemp("", "oncepost-chaos-")
		if err != nil {
			return chaosResult{}, err
		}
		defer os.RemoveAll(dir)
		cfg.DBPath = filepath.Join(dir, "chaos.db")
	}
	// Time is scaled as the profile's timeout is to the seed's 10 s: every
	// window of the pipeline (leases, the sweeper's, lookups') with it.
	scale := float64(p.Timeout) / float64(10*time.Second)
	cfg = cfg.scaled(scale)
	cfg.Workers = 8
	cfg.CallTimeout = p.Timeout
	cfg.RecordMargin = 2 * p.Timeout
	cfg.Lease = 2*p.Timeout + 2*time.Second
	cfg.Visibility = cfg.Lease + time.Second
	cfg.ConfirmWait = time.Second // the shortest a Wait state can count
	cfg.QuickWait = time.Second
	cfg.ConfirmChecks = 3
	cfg.SweepEvery = max(time.Duration(float64(time.Minute)*scale), 100*time.Millisecond)
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	cfg.Metrics = io.Discard
	rt, err := openRuntime(ctx, cfg)
	if err != nil {
		return chaosResult{}, err
	}
	defer rt.Close()

	slot := time.Now().UTC().Add(time.Second).Truncate(time.Second)
	var jobs []publishing.Job
	for a := 0; a < p.Accounts; a++ {
		acc, cred, err := fx.addAccount(ctx, fmt.Sprintf("chaos%02d", a))
		if err != nil {
			return chaosResult{}, err
		}
		if err := rt.store.PutAccount(ctx, acc); err != nil {
			return chaosResult{}, err
		}
		if err := rt.store.PutCredential(ctx, acc.ID, cred); err != nil {
			return chaosResult{}, err
		}
	}
	for i := 0; i < p.Rounds; i++ {
		acc := post.AccountID(fmt.Sprintf("chaos%02d", i%p.Accounts))
		pst := chaosPost(p, i)
		pst.CreatedAt, pst.Targets = start.UTC(), []post.Target{{Account: acc, Slot: slot, Status: post.Scheduled, UpdatedAt: start.UTC()}}
		if err := rt.createPost(ctx, pst); err != nil {
			return chaosResult{}, err
		}
		jobs = append(jobs, publishing.TargetRef{Post: pst.ID, Account: acc, Slot: slot})
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.run(runCtx) }()
	settled := func() bool {
		sum, err := rt.store.Summary(ctx)
		if err != nil {
			return false
		}
		final := sum.Targets[post.Published] + sum.Targets[post.Failed] + sum.Targets[post.Held]
		return final == p.Rounds && sum.Ledger[ledger.Pending]+sum.Ledger[ledger.Unknown] == 0
	}
	wait := p.Deadline
	if wait <= 0 {
		// 10,000 rounds on one account settle in about 10 minutes on 2 cores.
		wait = max(55*time.Second, time.Duration(p.Rounds*max(p.Thread, 1))*100*time.Millisecond)
	}
	deadline, cancel := context.WithTimeout(ctx, wait)
	waitUntil(deadline, 100*time.Millisecond, settled)
	cancel()
	stop()
	if err := <-done; err != nil {
		return chaosResult{}, err
	}

	res := chaosResult{Rounds: p.Rounds, Elapsed: time.Since(start)}
	if res.Duplicates, err = fx.duplicates(ctx); err != nil {
		return res, err
	}
	sum, err := rt.store.Summary(ctx)
	if err != nil {
		return res, err
	}
	res.Published, res.Held, res.Failed = sum.Targets[post.Published], sum.Targets[post.Held], sum.Targets[post.Failed]
	res.Lost = p.Rounds - sum.Targets[post.Published] - sum.Targets[post.Failed] - sum.Targets[post.Held]
	res.LeakedPending = sum.Ledger[ledger.Pending] + sum.Ledger[ledger.Unknown]
	execs, err := rt.flows.List(ctx, "")
	if err != nil {
		return res, err
	}
	res.ConfirmBranch = len(execs)
	if err := fx.check(ctx, rt, jobs, &res); err != nil {
		return res, err
	}
	if res.DuplicateParts, err = duplicateParts(ctx, p, fx); err != nil {
		return res, err
	}
	return res, nil
}

// chaosFixture is the platform a drill publishes to, with its fault plan,
// and the platform's own record of what it stored.
type chaosFixture interface {
	// addAccount creates an account on the platform.
	addAccount(ctx context.Context, name string) (post.Account, platform.Credential, error)
	// duplicates counts the posts the platform holds more than once.
	duplicates(ctx context.Context) (int, error)
	// copies are the remote ids of the posts the platform holds, by text.
	copies(ctx context.Context) (map[string][]string, error)
	// check compares the drill's outcome with the platform's records
	// (checkAgainstPlatform's rules).
	check(ctx context.Context, rt *runtime, jobs []publishing.Job, res *chaosResult) error
	close()
}

// sandboxFixture is the Mastodon-compatible sandbox with its own faults.
type sandboxFixture struct{ sb *sandbox.Server }

func newSandboxFixture(p chaosProfile) (chaosFixture, error) {
	sb, err := chaosSandbox(p)
	if err != nil {
		return nil, err
	}
	return sandboxFixture{sb}, nil
}

func (f sandboxFixture) addAccount(_ context.Context, name string) (post.Account, platform.Credential, error) {
	sa := f.sb.AddAccount(name)
	acc := post.Account{ID: post.AccountID(sa.Username), Platform: "sandbox", Handle: "@" + sa.Username, BaseURL: f.sb.URL(), RemoteID: sa.ID, CredentialRef: sa.Username, Gate: post.GateAuto}
	return acc, platform.Credential{AccessToken: sa.AccessToken, RefreshToken: sa.RefreshToken}, nil
}

func (f sandboxFixture) duplicates(context.Context) (int, error) { return f.sb.Stats().Duplicates, nil }

func (f sandboxFixture) copies(context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	for _, a := range f.sb.Accounts() {
		for _, st := range f.sb.Statuses(a.ID) {
			out[st.Text] = append(out[st.Text], st.ID)
		}
	}
	return out, nil
}

func (f sandboxFixture) check(ctx context.Context, rt *runtime, jobs []publishing.Job, res *chaosResult) error {
	return checkAgainstPlatform(ctx, rt, f.sb, jobs, res)
}

func (f sandboxFixture) close() { f.sb.Close() }

// chaosMaxAttempts is the publisher's default attempt budget, which the
// drill uses: a round is held after this many sends that may have reached
// the platform were looked for and not found.
const chaosMaxAttempts = 5

// checkAgainstPlatform checks the drill's outcome against the sandbox's
// own records, not oncepost's: every published target exists once on the
// platform with its text, every post on the platform belongs to a
// confirmed ledger row, and every held or failed round is explained by
// the fault plan (as many dropped sends as the attempt budget).
func checkAgainstPlatform(ctx context.Context, rt *runtime, sb *sandbox.Server, jobs []publishing.Job, res *chaosResult) error {
	// The platform's view: live statuses by id, and the creates it saw by
	// idempotency key (the ledger's handle).
	view := platformView{textOf: map[string]string{}, copies: map[string]int{}}
	accounts, err := rt.store.ListAccounts(ctx)
	if err != nil {
		return err
	}
	view.parentOf = map[string]string{}
	for _, a := range accounts {
		for _, st := range sb.Statuses(a.RemoteID) {
			view.textOf[st.ID] = st.Text
			view.copies[st.Text]++
			view.parentOf[st.ID] = st.InReplyToID
		}
	}
	creates := map[string][]sandbox.CreateRecord{}
	for _, c := range sb.Creates() {
		creates[c.IdempotencyKey] = append(creates[c.IdempotencyKey], c)
	}
	view.explain = func(e ledger.Entry) string { return explainUnsettled(e, creates[e.Handle]) }
	return checkRounds(ctx, rt, jobs, view, res)
}

// platformView is a platform's own record of a drill: the text of every
// post it holds by remote id, how many posts carry each text, and why a
// held or failed round is explained by the fault plan ("" when it is).
type platformView struct {
	textOf  map[string]string
	copies  map[string]int
	explain func(ledger.Entry) string
	// parentOf is the post each post replies to, "" for none.
	parentOf map[string]string
}

// checkRounds compares the drill's outcome with the platform's view:
// every published target is on the platform once under its remote id with
// its text, every post on the platform belongs to a confirmed ledger row,
// and every held or failed round is explained by the fault plan.
func checkRounds(ctx context.Context, rt *runtime, jobs []publishing.Job, view platformView, res *chaosResult) error {
	problem := func(format string, a ...any) {
		res.Unexplained++
		if len(res.Problems) < 20 {
			res.Problems = append(res.Problems, fmt.Sprintf(format, a...))
		}
	}
	confirmed := map[string]bool{}
	for _, job := range jobs {
		p, err := rt.store.GetPost(ctx, job.Post)
		if err != nil {
			return err
		}
		tg, _ := p.Target(job.Account)
		if len(p.Thread) > 0 {
			if err := checkThreadRound(ctx, rt, job, p, tg, view, confirmed, problem); err != nil {
				return err
			}
			continue
		}
		e, err := rt.store.Get(ctx, ledger.PublishKey(string(job.Account), string(job.Post), job.Slot))
		if err != nil && !errors.Is(err, ledger.ErrNotFound) {
			return err
		}
		switch tg.Status {
		case post.Published:
			text, ok := view.textOf[tg.RemoteID]
			switch {
			case !ok:
				problem("%s is published as %s, which the platform does not have", job.Post, tg.RemoteID)
			case text != p.Body:
				problem("%s is published as %s, which carries another text", job.Post, tg.RemoteID)
			case view.copies[p.Body] != 1:
				problem("%s is on the platform %d times", job.Post, view.copies[p.Body])
			}
			if e.State == ledger.Confirmed {
				confirmed[e.RemoteID] = true
			}
		case post.Held, post.Failed:
			if why := view.explain(e); why != "" {
				problem("%s is %s (%s): %s", job.Post, tg.Status, tg.Reason, why)
			}
		}
	}
	for id, text := range view.textOf {
		if !confirmed[id] {
			problem("the platform has post %s (%q) that no confirmed ledger row records", id, text)
		}
	}
	return nil
}

// explainUnsettled says why a held or failed round is not explained by
// the fault plan, or "" when it is: held for too many attempts after the
// budget of sends, each dropped before the platform committed anything.
func explainUnsettled(e ledger.Entry, creates []sandbox.CreateRecord) string {
	if e.State != ledger.Held || e.Reason != publishing.ReasonTooManyAttempts {
		return "the fault plan never makes a post " + string(e.State) + " for this reason"
	}
	dropped := 0
	for _, c := range creates {
		if c.Committed {
			return "a send committed, yet the post was not found"
		}
		if strings.Contains(c.Fault, string(sandbox.FaultDropRequest)) {
			dropped++
		}
	}
	if dropped < chaosMaxAttempts {
		return fmt.Sprintf("only %d of its %d sends were dropped", dropped, len(creates))
	}
	return ""
}

// chaosNaive is the seed's original template: try the create up to three
// times, 4 s apart (scaled: 40 ms), with no ledger.
func chaosNaive(ctx context.Context, p chaosProfile) (chaosResult, error) {
	fx, err := newSandboxFixture(p)
	if err != nil {
		return chaosResult{}, err
	}
	defer fx.close()
	sb := fx.(sandboxFixture).sb
	return runNaive(ctx, p, fx, 32, func(_ context.Context, acc post.Account, cred platform.Credential) (platform.Client, error) {
		return mastodon.New(mastodon.Config{BaseURL: sb.URL(), AccountID: acc.RemoteID, Credential: cred})
	})
}

// runNaive runs the naive template on the fixture's platform, its
// accounts connected with client, concurrency rounds at a time, counts
// what the platform holds, and with --db keeps the run (recordNaive).
func runNaive(ctx context.Context, p chaosProfile, fx chaosFixture, concurrency int,
	client func(context.Context, post.Account, platform.Credential) (platform.Client, error)) (chaosResult, error) {
	start := time.Now()
	var (
		accounts []naiveAccount
		clients  []platform.Client
	)
	for a := 0; a < p.Accounts; a++ {
		acc, cred, err := fx.addAccount(ctx, fmt.Sprintf("naive%02d", a))
		if err != nil {
			return chaosResult{}, err
		}
		c, err := client(ctx, acc, cred)
		if err != nil {
			return chaosResult{}, err
		}
		accounts = append(accounts, naiveAccount{acc, cred})
		clients = append(clients, c)
	}
	naiveRounds(ctx, p, clients, concurrency)
	// Slow creates commit after the client gave up; let them land.
	time.Sleep(2 * p.Delay)
	dups, err := fx.duplicates(ctx)
	if err != nil {
		return chaosResult{}, err
	}
	copies, err := fx.copies(ctx)
	if err != nil {
		return chaosResult{}, err
	}
	published := 0
	for i := 0; i < p.Rounds; i++ {
		if len(copies[naivePartText(p, i, p.Thread)]) > 0 {
			published++
		}
	}
	res := chaosResult{Rounds: p.Rounds, Published: published, Duplicates: dups, Lost: p.Rounds - published, Elapsed: time.Since(start),
		DuplicateParts: countDuplicateParts(p, copies, naivePartText)}
	if p.DBPath != "" {
		if err := recordNaive(ctx, p, start, accounts, copies); err != nil {
			return res, err
		}
	}
	return res, nil
}

// naiveAccount is an account the naive template posts to.
type naiveAccount struct {
	acc  post.Account
	cred platform.Credential
}

// naiveText is the text of the naive template's round i.
func naiveText(i int) string {
	return fmt.Sprintf("Naive round %d: this text should appear once.", i)
}

// recordNaive keeps a naive run in a new workspace at p.DBPath, as the
// drill through the ledger keeps its own: the accounts (with their
// credentials, as `account add` stores them) and one post per round
// (naive-NNNN), its target as the platform left it: published with the
// remote id of its first copy, or failed when no copy landed. There are
// no ledger rows: the naive template keeps none, which is the point of
// the comparison; the duplicates are on the result line.
func recordNaive(ctx context.Context, p chaosProfile, start time.Time, accounts []naiveAccount, copies map[string][]string) error {
	rt, err := openWorkspace(ctx, p.DBPath)
	if err != nil {
		return fmt.Errorf("keep the naive run in %s: %w", p.DBPath, err)
	}
	defer rt.Close()
	for _, a := range accounts {
		if err := rt.store.PutCredential(ctx, a.acc.ID, a.cred); err != nil {
			return err
		}
		if err := rt.store.PutAccount(ctx, a.acc); err != nil {
			return err
		}
	}
	now, slot := time.Now().UTC(), start.UTC()
	for i := 0; i < p.Rounds; i++ {
		tg := post.Target{Account: accounts[i%len(accounts)].acc.ID, Slot: slot, Status: post.Failed,
			Reason: "the naive template's 3 tries left no copy on the platform", UpdatedAt: now}
		if ids := copies[naivePartText(p, i, 1)]; len(ids) > 0 {
			tg.Status, tg.RemoteID, tg.Reason = post.Published, ids[0], ""
		}
		pst := post.Post{ID: post.ID(fmt.Sprintf("naive-%04d", i)), Body: naivePartText(p, i, 1), Thread: naiveThread(p, i), CreatedAt: slot, Targets: []post.Target{tg}}
		if err := rt.store.CreatePost(ctx, pst); err != nil {
			return fmt.Errorf("keep the naive run in %s: %w", p.DBPath, err)
		}
	}
	return nil
}

// naiveRounds publishes every round with the seed's template: up to three
// tries, 40 ms apart, each a create of its own (a fresh handle, as a
// client without a ledger makes), concurrency at a time.
func naiveRounds(ctx context.Context, p chaosProfile, clients []platform.Client, concurrency int) {
	var (
		wg  sync.WaitGroup
		sem = make(chan struct{}, concurrency)
	)
	for i := 0; i < p.Rounds; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			naiveRound(ctx, p, clients[i%len(clients)], i)
		}()
	}
	wg.Wait()
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
