package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"oncepost/infra/statemachine"
	"oncepost/shared/emf"
	"oncepost/shared/ledger"
	"oncepost/shared/localcron"
	"oncepost/shared/localflow"
	"oncepost/shared/platform/mastodon"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// confirmFunction is the name the ASL's ${ConfirmFunctionArn} resolves to
// in the embedded runtime; the invoker binds it to the confirm steps.
const confirmFunction = "oncepost-confirm"

// config tunes the embedded runtime. Durations are real time.
type config struct {
	DBPath string
	// MediaDir holds attachment files; post media refs are relative to it.
	MediaDir string
	Workers  int
	// QueueMaxReceives dead-letters a job delivered this many times.
	QueueMaxReceives int
	Visibility       time.Duration
	CallTimeout      time.Duration
	RecordMargin     time.Duration
	Lease            time.Duration
	ConfirmWait      time.Duration
	ConfirmChecks    int
	SweepEvery       time.Duration
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
}

func defaultConfig() config {
	return config{
		DBPath:           filepath.Join("var", "oncepost.db"),
		MediaDir:         filepath.Join("var", "media"),
		Workers:          4,
		QueueMaxReceives: 20,
		Visibility:       time.Minute,
		CallTimeout:      10 * time.Second,
		RecordMargin:     2 * time.Second,
		Lease:            2 * time.Minute,
		ConfirmWait:      20 * time.Second,
		ConfirmChecks:    3,
		SweepEvery:       time.Minute,
		ClientID:         "sandbox-client",
		ClientSecret:     "sandbox-secret",
		Logger:           slog.New(slog.NewJSONHandler(os.Stderr, nil)),
		Metrics:          os.Stdout,
	}
}

func (c config) validate() error {
	switch {
	case c.Workers < 1:
		return usageError("workers", "%d: need at least 1", c.Workers)
	case c.CallTimeout <= 0:
		return usageError("call-timeout", "%s: must be positive", c.CallTimeout)
	case c.Lease <= c.CallTimeout+c.RecordMargin:
		return usageError("lease", "%s must exceed the call timeout plus the record margin (%s)", c.Lease, c.CallTimeout+c.RecordMargin)
	case c.Visibility <= c.CallTimeout+c.RecordMargin:
		return usageError("visibility", "%s must exceed the call timeout plus the record margin (%s)", c.Visibility, c.CallTimeout+c.RecordMargin)
	case c.ConfirmWait < time.Second || c.ConfirmWait%time.Second != 0:
		return usageError("confirm-wait", "%s: whole seconds, at least 1s (a Step Functions Wait counts seconds)", c.ConfirmWait)
	case c.ConfirmChecks < 1:
		return usageError("confirm-checks", "%d: need at least 1", c.ConfirmChecks)
	case c.SweepEvery <= 0:
		return usageError("sweep-every", "%s: must be positive", c.SweepEvery)
	}
	return nil
}

// runtime is the whole pipeline on one SQLite file.
type runtime struct {
	cfg       config
	store     *sqlitestore.Store
	queue     *sqlitestore.Queue
	flows     *localflow.Engine
	cron      *localcron.Runner
	publisher *publishing.Publisher
	confirmer *publishing.Confirmer
	trigger   *publishing.Trigger
	sweeper   *publishing.Sweeper
	log       *slog.Logger
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
	store, err := sqlitestore.Open(ctx, cfg.DBPath, sqlitestore.Options{})
	if err != nil {
		return nil, err
	}
	rt := &runtime{cfg: cfg, store: store, queue: store.Queue("publish", cfg.QueueMaxReceives), log: cfg.Logger}
	// Leases name the worker by process; the workflow engine's claims name
	// the host, so a restarted runtime re-runs an interrupted task at once.
	owner := fmt.Sprintf("oncepost-%d", os.Getpid())
	var plat publishing.Platforms = mastodon.Connector{ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret}
	if cfg.Platforms != nil {
		plat = cfg.Platforms
	}
	rt.confirmer = &publishing.Confirmer{
		Ledger: store, Posts: store, Accounts: store, Platforms: plat, Queue: rt.queue,
		CallTimeout: cfg.CallTimeout, Logger: cfg.Logger, Now: cfg.Now,
	}
	machine, err := localflow.Load(statemachine.Confirm, map[string]string{"ConfirmFunctionArn": confirmFunction})
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("load confirm workflow: %w", err)
	}
	rt.flows, err = localflow.New(ctx, store.DB(), machine, localflow.Options{
		Invoker: confirmInvoker{c: rt.confirmer, engine: func() *localflow.Engine { return rt.flows }}, Logger: cfg.Logger, Now: cfg.Now,
	})
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("confirm workflow engine: %w", err)
	}
	rt.publisher = &publishing.Publisher{
		Ledger: store, Posts: store, Accounts: store, Flows: flowStarter{rt.flows}, Platforms: plat,
		Media: dirMedia{cfg.MediaDir}, Owner: owner, CallTimeout: cfg.CallTimeout, RecordMargin: cfg.RecordMargin,
		Lease: cfg.Lease, Confirm: publishing.ConfirmSettings{Wait: cfg.ConfirmWait, MaxChecks: cfg.ConfirmChecks}, Logger: cfg.Logger, Now: cfg.Now,
	}
	rt.trigger = &publishing.Trigger{Posts: store, Queue: rt.queue, Logger: cfg.Logger, Now: cfg.Now}
	rt.cron, err = localcron.NewRunner(ctx, store.DB(), localcron.Options{Fire: rt.fire, Logger: cfg.Logger, Now: cfg.Now})
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	rt.sweeper = &publishing.Sweeper{
		Ledger: store, Posts: store, Queue: rt.queue, Trigger: rt.trigger, Publisher: rt.publisher,
		Metrics: &emf.Emitter{W: cfg.Metrics, Namespace: "oncepost", Dimensions: map[string]string{"Runtime": "embedded"}, Now: cfg.Now},
		Logger:  cfg.Logger, Now: cfg.Now,
	}
	return rt, nil
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
	errs := make(chan error, 4+rt.cfg.Workers)
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
	for i := 0; i < rt.cfg.Workers; i++ {
		loop := &publishing.Loop{Queue: rt.queue, Publisher: rt.publisher, Batch: 1, Visibility: rt.cfg.Visibility, Idle: 100 * time.Millisecond, Logger: rt.cfg.Logger}
		goLoop("publisher", loop.Run)
	}
	goLoop("sweeper", rt.sweepLoop)
	rt.log.InfoContext(ctx, "runtime started", "db", rt.cfg.DBPath, "workers", rt.cfg.Workers)
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

func (rt *runtime) sweepLoop(ctx context.Context) error {
	t := time.NewTicker(rt.cfg.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if _, err := rt.sweeper.Sweep(ctx); err != nil && ctx.Err() == nil {
				rt.log.ErrorContext(ctx, "sweep", "err", err)
			}
		}
	}
}

// scheduleName names a target's one-time schedule, as EventBridge Scheduler
// schedules are named by post in the AWS runtime.
func scheduleName(ref publishing.TargetRef) string {
	return "post/" + string(ref.Post) + "/" + string(ref.Account) + "/" + ref.Slot.UTC().Format(time.RFC3339)
}

// schedule registers a target's at() schedule.
func (rt *runtime) schedule(ctx context.Context, ref publishing.TargetRef) error {
	payload, err := json.Marshal(ref)
	if err != nil {
		return fmt.Errorf("encode schedule payload: %w", err)
	}
	return rt.cron.Put(ctx, localcron.Entry{
		Name:       scheduleName(ref),
		Expression: "at(" + ref.Slot.UTC().Format("2006-01-02T15:04:05") + ")",
		Timezone:   "UTC",
		Payload:    payload,
	})
}

// syncSchedules makes sure every scheduled target has its schedule, for
// posts written into the file by another process.
func (rt *runtime) syncSchedules(ctx context.Context) error {
	refs, err := rt.store.Due(ctx, rt.now().AddDate(100, 0, 0), 0)
	if err != nil {
		return fmt.Errorf("scheduled targets: %w", err)
	}
	for _, ref := range refs {
		if _, _, err := rt.cron.Get(ctx, scheduleName(ref)); err == nil {
			continue
		}
		if err := rt.schedule(ctx, ref); err != nil {
			return err
		}
	}
	return nil
}

// fire is the scheduler's target: the trigger use case.
func (rt *runtime) fire(ctx context.Context, name string, _ time.Time, payload json.RawMessage) error {
	var ref publishing.TargetRef
	if err := json.Unmarshal(payload, &ref); err != nil {
		// A schedule we wrote ourselves cannot be malformed; say so and drop it.
		rt.log.ErrorContext(ctx, "schedule payload is not a target", "schedule", name, "err", err)
		return nil
	}
	_, err := rt.trigger.Fire(ctx, ref)
	return err
}

// flowStarter starts confirm workflows on the local engine.
type flowStarter struct{ engine *localflow.Engine }

func (f flowStarter) StartConfirm(ctx context.Context, name string, in publishing.ConfirmInput) error {
	input, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode confirm input: %w", err)
	}
	err = f.engine.Start(ctx, name, input)
	if errors.Is(err, localflow.ErrExecutionAlreadyExists) {
		// This attempt's workflow ran already (Step Functions refuses a
		// closed name too). If its entry is still unknown, the sweeper's
		// stale-unknown count keeps the alarm up for a human.
		return nil
	}
	return err
}

// confirmInvoker binds the workflow's lambda:invoke of the confirm
// function to the confirm steps, as the confirm Lambda will.
type confirmInvoker struct {
	c      *publishing.Confirmer
	engine func() *localflow.Engine
}

func (i confirmInvoker) Invoke(ctx context.Context, function string, payload json.RawMessage) (json.RawMessage, error) {
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
	if req.Action == publishing.ActionHold && res.State != string(ledger.Held) {
		// The entry settled before the hold (a late success, an operator):
		// nobody will answer this token, so answer it now.
		if err := i.engine().SendTaskSuccess(ctx, req.Token, json.RawMessage(`{"decision":"resolved"}`)); err != nil {
			return nil, fmt.Errorf("answer hold of a settled entry: %w", err)
		}
	}
	return json.Marshal(res)
}

// dirMedia reads attachments from a directory; refs are relative paths
// inside it.
type dirMedia struct{ dir string }

func (d dirMedia) ReadMedia(_ context.Context, ref string) ([]byte, error) {
	if !filepath.IsLocal(ref) {
		return nil, fmt.Errorf("media ref %q must be a relative path inside the media directory", ref)
	}
	b, err := os.ReadFile(filepath.Join(d.dir, ref))
	if err != nil {
		return nil, fmt.Errorf("read media: %w", err)
	}
	return b, nil
}
