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
	"os/user"
	"time"

	"oncepost/shared/apitoken"
	"oncepost/shared/console"
	"oncepost/shared/httpapi"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// defaultConsoleAddr is where `oncepost console` listens: this machine
// only, beside serve's default.
const defaultConsoleAddr = "127.0.0.1:8081"

// cmdConsole is `oncepost console`: the web console (and the API at /v1
// under it) on 127.0.0.1 for a workspace, without a runtime — for a
// deployed stack (--backend aws), with the operator's own AWS
// credentials: there is no public console endpoint, IAM stays the only
// door. Whoever opens the one-time sign-in link it prints is signed in
// as this operator, once.
func cmdConsole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, where := workspaceFlags("console")
	addr := fs.String("addr", defaultConsoleAddr, "the console's address, a loopback host:port (port 0: any free port)")
	if _, err := parseFlags(fs, args, stdout, 0, 0); err != nil {
		return err
	}
	if err := checkAPIAddr(*addr, false); err != nil {
		return err
	}
	b, err := where.open(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	apiCfg := b.apiConfig()
	apiCfg.Logger = log
	// No token signs in here: the sign-in link does, as the operator who
	// ran the command; the API under the console takes only its session.
	apiCfg.Auth = httpapi.ContextPrincipal()
	h, err := console.New(console.Config{API: apiCfg, Posts: b.posts, Operator: consoleOperator(b.kind), Logger: log})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return usageError("addr", "cannot listen on %s: %v", *addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "oncepost console: open http://%s%s to sign in (the link works once, for 10 minutes); Ctrl-C stops it\n", ln.Addr(), h.SignInLink())
	select {
	case <-ctx.Done():
		shutdown(srv)
		return nil
	case err := <-served:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// consoleOperator is who a console's sign-in link signs in as: the
// operator at this machine, every scope (on AWS their credentials are
// what IAM checks on each call; on one machine they own the file).
func consoleOperator(kind string) httpapi.Principal {
	name := "operator"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	return httpapi.Principal{ID: "console:" + name + "@" + host, Name: name + " (" + kind + ")", Scopes: []apitoken.Scope{apitoken.ScopeAll}}
}

// apiConfig is the HTTP API on the backend's ports: the embedded
// workspace or a stack, as the CLI's commands act on either.
func (b *backend) apiConfig() httpapi.Config {
	cfg := httpapi.Config{
		Desk:        b.desk(),
		Decider:     operatorDecider{ledger: b.ledger, operator: b.operator, deleter: b.deleter},
		Held:        b.ledger,
		Accounts:    b.accounts,
		Targets:     b.posts,
		DeadLetters: deadLetterPort{b.deadLetters, b.depth},
		Media:       mediaWriter{b.media},
		Webhooks:    b.webhooks,
	}
	if b.rules != nil {
		cfg.Recurring = b.recurring()
	}
	if br, ok := b.admin.(httpapi.BudgetReader); ok {
		cfg.Budgets = br
	}
	return cfg
}

// deadLetterPort is the backend's publish queue as the API sees it.
type deadLetterPort struct {
	deadLetterQueue
	depth queueDepths
}

var _ httpapi.DeadLetterQueue = deadLetterPort{}

// Depth is the queue's depth in the API's terms.
func (d deadLetterPort) Depth(ctx context.Context) (publishing.QueueDepth, error) {
	qd, err := d.depth.Depth(ctx)
	if err != nil {
		return publishing.QueueDepth{}, err
	}
	return publishing.QueueDepth{Visible: qd.Visible, InFlight: qd.InFlight, Delayed: qd.Delayed, Undecodable: qd.Undecodable, DeadLetters: qd.DeadLetters}, nil
}

// mediaWriter stores an upload where the backend's publisher reads it.
type mediaWriter struct{ m mediaImporter }

var _ httpapi.MediaWriter = mediaWriter{}

// WriteMedia imports data under m.Ref.
func (w mediaWriter) WriteMedia(ctx context.Context, m post.Media, data []byte) error {
	return w.m.ImportMedia(ctx, importedMedia{Media: m, data: data})
}
