package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"oncepost/shared/console"
	"oncepost/shared/httpapi"
	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// defaultAPIAddr is where `oncepost serve` listens unless --addr says
// otherwise: this machine only.
const defaultAPIAddr = "127.0.0.1:8080"

// pauseEnv, tests only: "before-commit" or "after-commit" makes POST
// /v1/posts stop there (httpapi.Config.Pause) until the process is
// killed, having said so on stderr.
const pauseEnv = "ONCEPOST_TEST_PAUSE"

// cmdServe is `oncepost serve`: the embedded runtime (as `oncepost run`)
// and the HTTP API on one address, until SIGINT/SIGTERM.
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := defaultConfig()
	fs := newFlags("serve")
	runtimeFlags(fs, &cfg)
	addr := fs.String("addr", defaultAPIAddr, "the API's address, host:port (port 0: any free port, printed)")
	public := fs.Bool("public", false, "allow an --addr other machines can reach (put TLS in front of it)")
	maxMedia := fs.Int64("media-limit", httpapi.DefaultMaxMediaBytes, "the largest upload POST /v1/media takes, in bytes")
	backendName := embeddedOnly(fs, "serve")
	if _, err := parseFlags(fs, args, stdout, 0, 0); err != nil {
		return err
	}
	if err := checkEmbeddedOnly("serve", *backendName); err != nil {
		return err
	}
	if err := checkAPIAddr(*addr, *public); err != nil {
		return err
	}
	if *maxMedia < 1 {
		return usageError("media-limit", "%d: need at least 1 byte", *maxMedia)
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(stderr, nil))
	rt, err := openRuntime(ctx, cfg)
	if err != nil {
		return err
	}
	defer rt.Close()
	apiCfg := rt.apiConfig()
	apiCfg.MaxMediaBytes = *maxMedia
	if point := os.Getenv(pauseEnv); point != "" {
		apiCfg.Pause = func(ctx context.Context, at string) {
			if at == point {
				fmt.Fprintf(stderr, "oncepost serve: paused at %s\n", at)
				<-ctx.Done()
			}
		}
	}
	// The console at / and the API at /v1, on one handler: the console's
	// sessions call the API as the signed-in token.
	// The composer fits images to the limits of the API's own desk.
	fitter, ok := apiCfg.Desk.(console.ImageFitter)
	if !ok {
		return fmt.Errorf("serve: the API's desk (%T) gives no image limits to fit the composer's images to", apiCfg.Desk)
	}
	api, err := console.New(console.Config{API: apiCfg, Tokens: rt.store, Posts: rt.ports.posts, StaleAfter: rt.cfg.StaleAfter, Events: rt.store, SecureCookies: *public, Logger: cfg.Logger,
		Media: dirMedia{rt.cfg.MediaDir}, Fitter: fitter})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return usageError("addr", "cannot listen on %s: %v", *addr, err)
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn)}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- rt.run(runCtx) }()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "oncepost serve: the console is on http://%[1]s/ and the API on http://%[1]s/v1 (contract: /v1/openapi.json), the runtime on %s; Ctrl-C stops both\n", ln.Addr(), cfg.DBPath)
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	case err := <-ran:
		// The runtime stopped by itself (it failed): the API goes too.
		shutdown(srv)
		return err
	}
	// Requests in flight are answered (up to 10 s), then the runtime's
	// loops stop.
	shutdown(srv)
	stop()
	runErr := <-ran
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return errors.Join(serveErr, runErr)
}

func shutdown(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
}

// checkAPIAddr refuses an address other machines could reach, unless
// public.
func checkAPIAddr(addr string, public bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return usageError("addr", "%q is not host:port, e.g. %s", addr, defaultAPIAddr)
	}
	if public || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil && ip.IsLoopback() {
		return nil
	}
	if host == "" {
		host = "every interface"
	}
	return usageError("addr", "%s (%s) is not a loopback address: other machines could reach the API; give --public to mean it (and put TLS in front), or use %s",
		addr, host, defaultAPIAddr)
}

// apiConfig is the HTTP API on the embedded runtime's ports.
func (rt *runtime) apiConfig() httpapi.Config {
	p := rt.ports
	desk := embeddedBackend(rt).desk()
	// The draft check gives each image's dimensions (Desk.Check).
	desk.ReadMedia = dirMedia{rt.cfg.MediaDir}.ReadMedia
	return httpapi.Config{
		Desk:        desk,
		Decider:     operatorDecider{ledger: p.ledger, operator: rt.operator, deleter: rt.deleter},
		Held:        p.ledger,
		Accounts:    p.accounts,
		Targets:     p.posts,
		DeadLetters: rt.queue,
		Media:       mediaDir(rt.cfg.MediaDir),
		Budgets:     rt.store,
		Webhooks:    rt.store,
		Recurring:   &publishing.Recurring{Rules: rt.store, Desk: desk, Logger: rt.log},
		Auth:        httpapi.BearerTokens(rt.store),
		Logger:      rt.log,
	}
}

// The embedded store keeps the webhook subscriptions and the outbox's
// deliveries the API serves.
var _ httpapi.Webhooks = (*sqlitestore.Store)(nil)

// operatorDecider decides held entries as `oncepost approve|confirm|
// reject` does: publishing.Operator's decision, and an approved delete
// performed at once (Deleter.Run, safe to repeat).
type operatorDecider struct {
	ledger   publishing.Ledger
	operator *publishing.Operator
	deleter  *publishing.Deleter
}

var _ httpapi.Decider = operatorDecider{}

// Decide applies d to the entry key.
func (o operatorDecider) Decide(ctx context.Context, key ledger.Key, d publishing.Decision) (publishing.DecideResult, error) {
	res, err := o.operator.Decide(ctx, key, d)
	isDelete := res.Entry.Action == ledger.Delete
	if e, gerr := o.ledger.Get(ctx, key); gerr == nil {
		isDelete = e.Action == ledger.Delete
	}
	if isDelete && d.Action == publishing.DecisionRelease && (err == nil || errors.Is(err, publishing.ErrNotHeld)) {
		// An approved delete is performed now. Approving again (after a
		// crash, a 429, a post still visible) goes on from where the
		// ledger stands.
		out, err := o.deleter.Run(ctx, key)
		if err != nil {
			return res, err
		}
		e, gerr := o.ledger.Get(ctx, key)
		if gerr != nil {
			return res, gerr
		}
		return publishing.DecideResult{How: publishing.DecisionApplied, Entry: e, Message: out.Message}, nil
	}
	return res, err
}

// WriteMedia stores an upload in the media directory under its ref
// (storeMedia: a temporary file renamed, 0600; a ref already there has
// the same bytes).
func (d mediaDir) WriteMedia(_ context.Context, m post.Media, data []byte) error {
	return storeMedia(string(d), importedMedia{Media: m, data: data})
}

// The media directory is what the console's composer reads images from.
var _ console.MediaReader = dirMedia{}
