package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"oncepost/infra/statemachine"
	"oncepost/shared/emf"
	"oncepost/shared/localcron"
	"oncepost/shared/localflow"
	"oncepost/shared/platform/catalog"
	"oncepost/shared/platform/mastodon"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
	"oncepost/shared/webhook"
)

// confirmFunction is the name the ASL's ${ConfirmFunctionArn} resolves to
// in the embedded runtime; the invoker binds it to the confirm steps.
const confirmFunction = "oncepost-confirm"

// config tunes the embedded runtime. Durations are real time.
type config struct {
	DBPath string
	// MediaDir holds attachment files; post media refs are relative to it.
	// Empty means "media" next to the database file.
	MediaDir string
	Workers  int
	// QueueMaxReceives dead-letters a job delivered this many times.
	QueueMaxReceives int
	Visibility       time.Duration
	CallTimeout      time.Duration
	// LookTimeout bounds one confirm look, which may read many pages of a
	// busy account (a Lambda's timeout on AWS).
	LookTimeout   time.Duration
	RecordMargin  time.Duration
	Lease         time.Duration
	ConfirmWait   time.Duration
	ConfirmChecks int
	// QuickWait is the first look's wait after a quick 5xx answer.
	QuickWait time.Duration
	// FireLead is how long before its slot a target's schedule fires: its
	// job is queued then, delayed to the slot to the nanosecond, so that
	// the firings of a burst (one after another) are done when it is due.
	FireLead time.Duration
	// PrepareBefore is how long before its slot a job is delivered and
	// prepared (publishing.Publisher.PrepareBefore: the reads, the dedup
	// read, the pending entry and its lease), so that at the slot only
	// the re-read and the create are left.
	PrepareBefore time.Duration
	SweepEvery    time.Duration
	// StaleAfter, MissedAfter, LookSkew, ThrottleLimit are the pipeline's
	// time windows (publishing's defaults); a drill that scales time down
	// scales them too.
	StaleAfter, MissedAfter, LookSkew, ThrottleLimit time.Duration
	// WatchEvery is how often the runtime checks whether another process
	// changed the file (a post added with `oncepost post add`).
	WatchEvery time.Duration
	// PruneEvery runs the pruning of finished workflow executions (kept
	// ExecutionRetention), schedules that will not fire again (kept
	// ScheduleRetention) and terminal ledger rows past their TTL.
	PruneEvery, ExecutionRetention, ScheduleRetention time.Duration
	// OAuth app used for refresh grants on Mastodon accounts.
	ClientID, ClientSecret string
	Logger                 *slog.Logger
	// Metrics receives the sweeper's EMF lines.
	Metrics io.Writer
	// Now is the clock of leases, schedules, workflows and the sweeper
	// (tests drive it); nil means time.Now. Network deadlines and the
	// queue's visibility timeouts use real time.
	Now func() time.Time
	// Platforms overrides the platform connector (tests); nil means the
	// Mastodon adapter for every account.
	Platforms publishing.Platforms

	// Tests only: wrap wraps the ports every use case sees; owner and
	// ownerGone replace the process's own, so one test process can play
	// several runtime processes in turn.
	wrap      func(ports) ports
	owner     string
	ownerGone func(owner string) bool
}

// ports are what the use cases consume, built on the one SQLite file.
type ports struct {
	ledger    publishing.Ledger
	posts     publishing.Posts
	accounts  publishing.Accounts
	queue     publishing.Queue
	platforms publishing.Platforms
	flows     publishing.Flows
	tasks     publishing.Tasks
}

func defaultConfig() config {
	return config{
		DBPath:           filepath.Join("var", "oncepost.db"),
		Workers:          1000,
		QueueMaxReceives: 20,
		Visibility:       time.Minute,
		CallTimeout:      10 * time.Second,
		LookTimeout:      30 * time.Second,
		RecordMargin:     2 * time.Second,
		Lease:            2 * time.Minute,
		ConfirmWait:      20 * time.Second,
		ConfirmChecks:    3,
		QuickWait:        3 * time.Second,
		FireLead:         time.Minute,
		PrepareBefore:    2 * time.Second,
		SweepEvery:       time.Minute,
		StaleAfter:       publishing.StaleAfter,
		// The schedules fire FireLead early and do not mark their targets
		// (as on AWS): a target is scheduled until the publisher moves it,
		// and missed two minutes past its slot (awsruntime.SweeperMissedAfter).
		MissedAfter:   2 * time.Minute,
		LookSkew:      publishing.LookSkew,
		ThrottleLimit: 24 * time.Hour,
		WatchEvery:    500 * time.Millisecond,
		PruneEvery:    time.Hour,
		// Step Functions keeps a closed execution's history 90 days.
		ExecutionRetention: 90 * 24 * time.Hour,
		// A one-time schedule is deleted when it fires (as EventBridge's
		// ActionAfterCompletion DELETE does); a cron or rate schedule past
		// its end is kept a day for inspection.
		ScheduleRetention: 24 * time.Hour,
		ClientID:          "sandbox-client",
		ClientSecret:      "sandbox-secret",
		Logger:            slog.New(slog.NewJSONHandler(os.Stderr, nil)),
		Metrics:           os.Stdout,
	}
}

func (c config) validate() error {
	switch {
	case c.Workers < 1:
		return usageError("workers", "%d: need at least 1", c.Workers)
	case c.CallTimeout <= 0:
		return usageError("call-timeout", "%s: must be positive", c.CallTimeout)
	case c.PrepareBefore < 0:
		return usageError("prepare-before", "%s: must not be negative", c.PrepareBefore)
	case c.Lease <= c.PrepareBefore+c.CallTimeout+c.RecordMargin:
		return usageError("lease", "%s must exceed the preparation before the slot plus the call timeout plus the record margin (%s)",
			c.Lease, c.PrepareBefore+c.CallTimeout+c.RecordMargin)
	case c.Visibility <= c.PrepareBefore+c.CallTimeout+c.RecordMargin:
		return usageError("visibility", "%s must exceed the preparation before the slot plus the call timeout plus the record margin (%s)",
			c.Visibility, c.PrepareBefore+c.CallTimeout+c.RecordMargin)
	case c.ConfirmWait < time.Second || c.ConfirmWait%time.Second != 0:
		return usageError("confirm-wait", "%s: whole seconds, at least 1s (a Step Functions Wait counts seconds)", c.ConfirmWait)
	case c.ConfirmChecks < 1:
		return usageError("confirm-checks", "%d: need at least 1", c.ConfirmChecks)
	case c.SweepEvery <= 0:
		return usageError("sweep-every", "%s: must be positive", c.SweepEvery)
	}
	return nil
}

// scaled returns c with every time window of the pipeline multiplied by f
// (a drill at 1/100 of real time scales leases, waits, the preparation
// before the slot and the sweeper's and lookups' windows alike). Confirm
// waits stay whole seconds.
func (c config) scaled(f float64) config {
	sc := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	c.StaleAfter, c.MissedAfter, c.LookSkew, c.ThrottleLimit = sc(c.StaleAfter), sc(c.MissedAfter), sc(c.LookSkew), sc(c.ThrottleLimit)
	c.PrepareBefore = sc(c.PrepareBefore)
	return c
}

// runtime is the whole pipeline on one SQLite file.
type runtime struct {
	cfg   config
	store *sqlitestore.Store
	queue *sqlitestore.Queue
	// ports are the use cases' view of store, queue, platforms and flows.
	ports     ports
	flows     *localflow.Engine
	cron      *localcron.Runner
	publisher *publishing.Publisher
	confirmer *publishing.Confirmer
	operator  *publishing.Operator
	deleter   *publishing.Deleter
	trigger   *publishing.Trigger
	sweeper   *publishing.Sweeper
	notifier  *publishing.Notifier
	log       *slog.Logger
	// owner names this process in leases and workflow task claims.
	owner string
}

// openRuntime opens the store and builds every component; nothing runs
// until run is called.
func openRuntime(ctx context.Context, cfg config) (*runtime, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(cfg.DBPath), 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Dir(cfg.DBPath), err)
	}
	if cfg.MediaDir == "" {
		cfg.MediaDir = filepath.Join(filepath.Dir(cfg.DBPath), "media")
	}
	store, err := sqlitestore.Open(ctx, cfg.DBPath, sqlitestore.Options{Now: cfg.Now, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	rt := &runtime{cfg: cfg, store: store, queue: store.Queue("publish", cfg.QueueMaxReceives), log: cfg.Logger, owner: processOwner()}
	gone := ownerGone
	if cfg.owner != "" {
		rt.owner, gone = cfg.owner, cfg.ownerGone
	}
	var plat publishing.Platforms = catalog.Connector{Mastodon: mastodon.Connector{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret}}.
		WithHTTPClient(&http.Client{Transport: platformTransport(cfg.Workers)})
	if cfg.Platforms != nil {
		plat = cfg.Platforms
	}
	rt.ports = ports{ledger: store, posts: store, accounts: store, queue: rt.queue, platforms: plat,
		flows: flowStarter{func() *localflow.Engine { return rt.flows }}, tasks: flowTasks{func() *localflow.Engine { return rt.flows }}}
	if cfg.wrap != nil {
		rt.ports = cfg.wrap(rt.ports)
	}
	p := rt.ports
	metrics := &emf.Emitter{W: cfg.Metrics, Namespace: "oncepost", Dimensions: map[string]string{"Runtime": "embedded"}, Now: cfg.Now}
	creds := &publishing.Credentials{Accounts: p.accounts, Owner: rt.owner, CallTimeout: cfg.CallTimeout, RecordMargin: cfg.RecordMargin,
		Now: cfg.Now, Metrics: metrics, Logger: cfg.Logger}
	rt.confirmer = &publishing.Confirmer{
		Ledger: p.ledger, Posts: p.posts, Accounts: p.accounts, Platforms: p.platforms, Queue: p.queue, Credentials: creds, Tasks: p.tasks,
		Metrics: metrics, CallTimeout: cfg.LookTimeout, LookSkew: cfg.LookSkew, Logger: cfg.Logger, Now: cfg.Now,
	}
	machine, err := localflow.Load(statemachine.Confirm, map[string]string{"ConfirmFunctionArn": confirmFunction})
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("load confirm workflow: %w", err)
	}
	rt.flows, err = localflow.New(ctx, store.DB(), machine, localflow.Options{
		Invoker: confirmInvoker{c: rt.confirmer, timeout: confirmFunctionTimeout}, Logger: cfg.Logger, Now: cfg.Now,
		Owner: rt.owner, OwnerGone: gone, Concurrency: cfg.Workers,
	})
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("confirm workflow engine: %w", err)
	}
	rt.publisher = &publishing.Publisher{
		Ledger: p.ledger, Posts: p.posts, Accounts: p.accounts, Flows: p.flows, Platforms: p.platforms, Credentials: creds,
		Pacer: store, Media: dirMedia{cfg.MediaDir}, Metrics: metrics, Owner: rt.owner, CallTimeout: cfg.CallTimeout, RecordMargin: cfg.RecordMargin,
		Lease: cfg.Lease, PrepareBefore: cfg.PrepareBefore, ThrottleLimit: cfg.ThrottleLimit, Blocklist: store,
		Confirm: publishing.ConfirmSettings{Wait: cfg.ConfirmWait, MaxChecks: cfg.ConfirmChecks, QuickWait: cfg.QuickWait},
		Logger:  cfg.Logger, Now: cfg.Now,
	}
	rt.operator = &publishing.Operator{Ledger: p.ledger, Confirmer: rt.confirmer, Tasks: p.tasks, Now: cfg.Now, Logger: cfg.Logger}
	rt.trigger = &publishing.Trigger{Posts: p.posts, Queue: p.queue, Delay: rt.jobDelay, Logger: cfg.Logger, Now: cfg.Now}
	rt.cron, err = localcron.NewRunner(ctx, store.DB(), localcron.Options{Fire: rt.fire, Logger: cfg.Logger, Now: cfg.Now})
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	rt.deleter = &publishing.Deleter{
		Ledger: p.ledger, Posts: p.posts, Accounts: p.accounts, Platforms: p.platforms, Credentials: creds, Metrics: metrics,
		Owner: rt.owner, CallTimeout: cfg.CallTimeout, RecordMargin: cfg.RecordMargin, Lease: cfg.Lease, Logger: cfg.Logger, Now: cfg.Now,
	}
	rt.sweeper = &publishing.Sweeper{
		Ledger: p.ledger, Posts: p.posts, Queue: p.queue, Trigger: rt.trigger, Publisher: rt.publisher, Deleter: rt.deleter, Operator: rt.operator,
		Metrics: metrics, StaleAfter: cfg.StaleAfter, MissedAfter: cfg.MissedAfter, Logger: cfg.Logger, Now: cfg.Now,
	}
	rt.sweeper.Recurring = rt.recurringUseCases()
	rt.notifier = &publishing.Notifier{Deliveries: store, Subscriptions: store, Sender: webhook.NewSender(webhook.Options{}), Now: cfg.Now, Logger: cfg.Logger}
	return rt, nil
}

// processOwner names this process in leases and in workflow task claims:
// host and pid, so two runtimes on one host never share claims.
func processOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return fmt.Sprintf("oncepost/%s/%d", host, os.Getpid())
}

// ownerGone reports whether the process an owner names (processOwner) is
// gone: on this host, and no process has its pid. Claims of owners on
// other hosts are left to expire.
func ownerGone(owner string) bool {
	rest, ok := strings.CutPrefix(owner, "oncepost/")
	if !ok {
		return false
	}
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return false
	}
	host, err := os.Hostname()
	if err != nil || rest[:i] != host {
		return false
	}
	pid, err := strconv.Atoi(rest[i+1:])
	if err != nil || pid <= 0 {
		return false
	}
	return !processAlive(pid)
}

func (rt *runtime) Close() error { return rt.store.Close() }

func (rt *runtime) now() time.Time {
	if rt.cfg.Now != nil {
		return rt.cfg.Now()
	}
	return time.Now()
}

// run starts every loop and blocks until ctx is done, then waits for them:
// in-flight publishes finish recording (or are left to lease expiry).
func (rt *runtime) run(ctx context.Context) error {
	if err := rt.syncSchedules(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, 7)
	goLoop := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	goLoop("scheduler", rt.cron.Run)
	goLoop("confirm workflows", rt.flows.Run)
	goLoop("publishers", rt.publish)
	goLoop("sweeper", rt.sweepLoop)
	goLoop("watcher", rt.watch)
	goLoop("webhooks", rt.deliverWebhooks)
	goLoop("checkpointer", func(ctx context.Context) error { return rt.store.RunCheckpointer(ctx, checkpointEvery) })
	rt.log.InfoContext(ctx, "runtime started", "db", rt.cfg.DBPath, "workers", rt.cfg.Workers, "owner", rt.owner)
	<-ctx.Done()
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	rt.log.Info("runtime stopped")
	return errors.Join(all...)
}

// newLoop handles the publishers' deliveries (see publish).
func (rt *runtime) newLoop() *publishing.Loop {
	return &publishing.Loop{Queue: rt.ports.queue, Publisher: rt.publisher, Batch: 1, Visibility: rt.cfg.Visibility, Logger: rt.cfg.Logger,
		MaxReceives: rt.cfg.QueueMaxReceives}
}

func (rt *runtime) sweepLoop(ctx context.Context) error {
	t := time.NewTicker(rt.cfg.SweepEvery)
	defer t.Stop()
	lastPrune := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := rt.sweeper.Sweep(ctx); err != nil && ctx.Err() == nil {
				rt.log.ErrorContext(ctx, "sweep", "err", err)
			}
			if time.Since(lastPrune) >= rt.cfg.PruneEvery {
				lastPrune = time.Now()
				if err := rt.prune(ctx); err != nil && ctx.Err() == nil {
					rt.log.ErrorContext(ctx, "prune", "err", err)
				}
			}
		}
	}
}

// checkpointEvery is how often the runtime checkpoints the WAL into the
// database file, off the write path (sqlitestore.RunCheckpointer).
const checkpointEvery = 250 * time.Millisecond

// webhookPoll is how often the webhook notifier looks for deliveries
// due without being woken: retries coming due, and events recorded by
// other processes sharing the file (a commit in this process wakes it at
// once).
const webhookPoll = 500 * time.Millisecond

// deliverWebhooks delivers the outbox's webhooks until ctx is done.
func (rt *runtime) deliverWebhooks(ctx context.Context) error {
	rt.notifier.Run(ctx, webhookPoll, rt.store.EventsWritten())
	return nil
}

// pruneBatch bounds each delete: the write lock is held briefly.
const pruneBatch = 500

// prune deletes what is past its retention: finished workflow executions,
// fired one-time schedules, terminal ledger rows past their TTL and
// idempotency keys older than publishing.IdempotencyKeep, so the file does
// not grow for ever.
func (rt *runtime) prune(ctx context.Context) error {
	now := rt.now()
	steps := []struct {
		what string
		fn   func() (int, error)
	}{
		{"workflow executions", func() (int, error) { return rt.flows.Prune(ctx, now.Add(-rt.cfg.ExecutionRetention), pruneBatch) }},
		{"ended schedules", func() (int, error) { return rt.cron.Prune(ctx, now.Add(-rt.cfg.ScheduleRetention), pruneBatch) }},
		{"ledger rows", func() (int, error) { return rt.store.PruneLedger(ctx, now, pruneBatch) }},
		{"webhook events and deliveries", func() (int, error) { return rt.store.PruneOutbox(ctx, now, pruneBatch) }},
		{"idempotency keys", func() (int, error) {
			return rt.store.PruneIdempotencyKeys(ctx, now.Add(-publishing.IdempotencyKeep), pruneBatch)
		}},
	}
	var errs []error
	for _, st := range steps {
		total := 0
		for {
			n, err := st.fn()
			total += n
			if err != nil {
				errs = append(errs, fmt.Errorf("prune %s: %w", st.what, err))
				break
			}
			if n < pruneBatch || ctx.Err() != nil {
				break
			}
		}
		if total > 0 {
			rt.log.InfoContext(ctx, "pruned", "what", st.what, "rows", total)
		}
	}
	return errors.Join(errs...)
}

// watch notices commits by other processes sharing the file (SQLite's
// data_version changes only for those) and schedules what they added, so
// a post added with `oncepost post add` while the runtime runs is
// scheduled within WatchEvery instead of at the scheduler's next minute.
func (rt *runtime) watch(ctx context.Context) error {
	last, err := rt.store.DataVersion(ctx)
	if err != nil {
		return fmt.Errorf("data version: %w", err)
	}
	t := time.NewTicker(rt.cfg.WatchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		v, err := rt.store.DataVersion(ctx)
		if err != nil {
			if ctx.Err() == nil {
				rt.log.ErrorContext(ctx, "watch for changes", "err", err)
			}
			continue
		}
		if v == last {
			continue
		}
		last = v
		if err := rt.syncSchedules(ctx); err != nil && ctx.Err() == nil {
			rt.log.ErrorContext(ctx, "schedule posts added by another process", "err", err)
		}
		rt.cron.Wake()
	}
}

// scheduleName names a target's one-time schedule, as EventBridge Scheduler
// schedules are named by post in the AWS runtime.
func scheduleName(ref publishing.TargetRef) string {
	// RFC3339Nano: two slots less than a second apart are two schedules
	// (a whole-second slot is named as before).
	return "post/" + string(ref.Post) + "/" + string(ref.Account) + "/" + ref.Slot.UTC().Format(time.RFC3339Nano)
}

// scheduleEntry is a target's at() schedule: lead before the slot, in
// whole seconds (at() counts seconds), never after it. The payload
// carries the slot itself.
func scheduleEntry(ref publishing.TargetRef, lead time.Duration) (localcron.Entry, error) {
	payload, err := json.Marshal(ref)
	if err != nil {
		return localcron.Entry{}, fmt.Errorf("encode schedule payload: %w", err)
	}
	return localcron.Entry{
		Name:       scheduleName(ref),
		Expression: "at(" + ref.Slot.Add(-lead).UTC().Format("2006-01-02T15:04:05") + ")",
		Timezone:   "UTC",
		Payload:    payload,
	}, nil
}

// scheduleTx registers a target's at() schedule inside tx.
func (rt *runtime) scheduleTx(ctx context.Context, tx *sql.Tx, ref publishing.TargetRef) error {
	e, err := scheduleEntry(ref, rt.cfg.FireLead)
	if err != nil {
		return err
	}
	return rt.cron.PutTx(ctx, tx, e)
}

// createPost writes a post and the schedules of its targets in one
// transaction: all or nothing.
func (rt *runtime) createPost(ctx context.Context, p post.Post) error {
	return rt.createPostKeyed(ctx, p, nil)
}

// createPostKeyed is createPost that also writes the key's record, if
// key is not nil, in the same transaction (sqlitestore's CreatePostKeyed:
// an existing key is a *publishing.KeyExistsError and nothing is written).
func (rt *runtime) createPostKeyed(ctx context.Context, p post.Post, key *publishing.IdempotencyRecord) error {
	err := rt.store.CreatePostKeyed(ctx, p, key, func(tx *sql.Tx, ref publishing.TargetRef) error {
		return rt.scheduleTx(ctx, tx, ref)
	})
	if err != nil {
		return err
	}
	rt.cron.Wake()
	return nil
}

// syncSchedules gives every scheduled target without a schedule its
// schedule (posts written by another process, or by CreatePost alone). It
// reads them with one indexed query: its cost does not grow with the
// number of scheduled posts.
func (rt *runtime) syncSchedules(ctx context.Context) error {
	for {
		refs, err := rt.store.Unscheduled(ctx, 500)
		if err != nil {
			return fmt.Errorf("targets without a schedule: %w", err)
		}
		for _, ref := range refs {
			err := rt.store.MarkScheduled(ctx, ref, func(tx *sql.Tx) error { return rt.scheduleTx(ctx, tx, ref) })
			if err != nil {
				return fmt.Errorf("schedule %s: %w", scheduleName(ref), err)
			}
		}
		if len(refs) < 500 {
			if len(refs) > 0 {
				rt.cron.Wake()
			}
			return nil
		}
	}
}

// fire is the scheduler's target: the trigger use case. It queues the job
// without writing the target (as the AWS trigger does): the job is the
// record, and the target stays scheduled, so it can still be moved or
// cancelled until its slot (the publisher re-reads it).
func (rt *runtime) fire(ctx context.Context, name string, _ time.Time, payload json.RawMessage) error {
	var ref publishing.TargetRef
	if err := json.Unmarshal(payload, &ref); err != nil {
		// A schedule we wrote ourselves cannot be malformed; say so and drop it.
		rt.log.ErrorContext(ctx, "schedule payload is not a target", "schedule", name, "err", err)
		return nil
	}
	_, err := rt.trigger.Enqueue(ctx, ref)
	return err
}

// jobDelay is the embedded queue's delay of a job for slot sent at now:
// to the nanosecond (publishing.DelayUntil's whole seconds are SQS's), so
// a job fired early is visible PrepareBefore before its slot, when the
// publisher prepares it, not up to a second later.
func (rt *runtime) jobDelay(slot, now time.Time) time.Duration {
	return max(slot.Add(-rt.cfg.PrepareBefore).Sub(now), 0)
}

// flowStarter starts confirm workflows on the local engine.
type flowStarter struct{ engine func() *localflow.Engine }

func (f flowStarter) StartConfirm(ctx context.Context, name string, in publishing.ConfirmInput) error {
	input, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode confirm input: %w", err)
	}
	err = f.engine().Start(ctx, name, input)
	if !errors.Is(err, localflow.ErrExecutionAlreadyExists) {
		return err
	}
	// Step Functions refuses a name already used; whether that execution
	// still runs decides between "already started" and "closed".
	ex, derr := f.engine().Describe(ctx, name)
	if derr != nil {
		return fmt.Errorf("describe %s: %w", name, derr)
	}
	if ex.Status == localflow.StatusRunning {
		return nil
	}
	return fmt.Errorf("%s is %s: %w", name, strings.ToLower(ex.Status), publishing.ErrConfirmClosed)
}

// flowTasks answers workflow task tokens on the local engine.
type flowTasks struct{ engine func() *localflow.Engine }

func (f flowTasks) SendTaskSuccess(ctx context.Context, token string, output json.RawMessage) error {
	err := f.engine().SendTaskSuccess(ctx, token, output)
	if errors.Is(err, localflow.ErrTaskDoesNotExist) {
		return fmt.Errorf("%w: %v", publishing.ErrTaskNotWaiting, err)
	}
	return err
}

// confirmFunctionTimeout is the confirm function's timeout in
// template.yaml: one step may take that long here too.
const confirmFunctionTimeout = 60 * time.Second

// confirmInvoker binds the workflow's lambda:invoke of the confirm
// function to the confirm steps, as the confirm Lambda will. A step that
// runs out of the function's time fails as Lambda names it
// (publishing.ErrNameFunctionTimeout), so the workflow's Retry and Catch
// treat it as on AWS.
type confirmInvoker struct {
	c       *publishing.Confirmer
	timeout time.Duration
}

func (i confirmInvoker) Invoke(ctx context.Context, function string, payload json.RawMessage) (json.RawMessage, error) {
	if i.timeout > 0 {
		parent := ctx
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, i.timeout)
		defer cancel()
		out, err := i.invoke(ctx, function, payload)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && parent.Err() == nil {
			return nil, &publishing.StepError{Name: publishing.ErrNameFunctionTimeout, Err: fmt.Errorf("task timed out after %s", i.timeout)}
		}
		return out, err
	}
	return i.invoke(ctx, function, payload)
}

func (i confirmInvoker) invoke(ctx context.Context, function string, payload json.RawMessage) (json.RawMessage, error) {
	if function != confirmFunction {
		return nil, &publishing.StepError{Name: publishing.ErrNameInvalidStep, Err: fmt.Errorf("no function %q", function)}
	}
	var req publishing.StepRequest
	dec := json.NewDecoder(strings.NewReader(string(payload)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, &publishing.StepError{Name: publishing.ErrNameInvalidStep, Err: fmt.Errorf("confirm step payload: %w", err)}
	}
	res, err := i.c.Step(ctx, req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// dirMedia reads attachments from a directory; refs are relative paths
// inside it.
type dirMedia struct{ dir string }

// ReadMedia translates at the edge: a ref outside the directory is
// publishing.ErrMediaInvalid, a missing file post.ErrNotFound; any other
// error (a disk that does not answer now) is transient.
func (d dirMedia) ReadMedia(_ context.Context, ref string) ([]byte, error) {
	if !filepath.IsLocal(ref) {
		return nil, fmt.Errorf("media ref %q must be a relative path inside the media directory: %w", ref, publishing.ErrMediaInvalid)
	}
	b, err := os.ReadFile(filepath.Join(d.dir, ref))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read media %s: %w", ref, post.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read media %s: %w", ref, err)
	}
	return b, nil
}
