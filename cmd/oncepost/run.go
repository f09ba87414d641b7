package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// runtimeFlags registers the runtime's tuning flags on fs.
func runtimeFlags(fs *flag.FlagSet, cfg *config) {
	fs.StringVar(&cfg.DBPath, "db", cfg.DBPath, "SQLite file (created 0600)")
	fs.StringVar(&cfg.MediaDir, "media", cfg.MediaDir, "directory holding post attachments (default: media next to --db)")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "publishes in flight at once (a burst due in one second needs one per post)")
	fs.DurationVar(&cfg.CallTimeout, "call-timeout", cfg.CallTimeout, "deadline of one platform call")
	fs.DurationVar(&cfg.RecordMargin, "record-margin", cfg.RecordMargin, "time kept after a platform call to record its outcome")
	fs.DurationVar(&cfg.Lease, "lease", cfg.Lease, "how long a pending ledger entry belongs to its worker")
	fs.DurationVar(&cfg.Visibility, "visibility", cfg.Visibility, "queue visibility timeout")
	fs.DurationVar(&cfg.PrepareBefore, "prepare-before", cfg.PrepareBefore, "how long before its slot a post is prepared (reads, ledger entry), so only the send is left at the slot; 0: all at the slot")
	fs.DurationVar(&cfg.ConfirmWait, "confirm-wait", cfg.ConfirmWait, "wait between confirm looks (whole seconds)")
	fs.IntVar(&cfg.ConfirmChecks, "confirm-checks", cfg.ConfirmChecks, "looks before a confirm workflow gives up")
	fs.DurationVar(&cfg.SweepEvery, "sweep-every", cfg.SweepEvery, "sweeper period")
}

// cmdRun is `oncepost run`: the embedded runtime until SIGINT/SIGTERM.
func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := defaultConfig()
	fs := newFlags("run")
	runtimeFlags(fs, &cfg)
	demo := fs.Bool("demo", false, "create (once) and run a demo workspace against a local sandbox platform")
	logFormat := fs.String("log", "", `log format: "json" (default) or "human" (default with --demo)`)
	backendName := embeddedOnly(fs, "run")
	if _, err := parseFlags(fs, args, stdout, 0, 0); err != nil {
		return err
	}
	if err := checkEmbeddedOnly("run", *backendName); err != nil {
		return err
	}
	switch *logFormat {
	case "":
		if *demo {
			*logFormat = "human"
		} else {
			*logFormat = "json"
		}
	case "json", "human":
	default:
		return usageError("log", "%q is not json or human", *logFormat)
	}
	if *logFormat == "human" {
		cfg.Logger = slog.New(newHumanHandler(stdout))
		// Metric lines would drown the transitions; keep them in a file.
		if err := os.MkdirAll(filepath.Dir(cfg.DBPath), 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(filepath.Dir(cfg.DBPath), "metrics.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("open metrics log: %w", err)
		}
		defer f.Close()
		cfg.Metrics = f
	} else {
		cfg.Logger = slog.New(slog.NewJSONHandler(stderr, nil))
	}

	rt, err := openRuntime(ctx, cfg)
	if err != nil {
		return err
	}
	defer rt.Close()
	if *demo {
		d, err := startDemo(ctx, rt, stdout)
		if err != nil {
			return err
		}
		defer d.Close()
	}
	return rt.run(ctx)
}

// humanHandler prints one readable line per log record: the demo's view
// of transitions as they happen. Tokens and post bodies never reach logs.
type humanHandler struct {
	w     io.Writer
	attrs []slog.Attr
}

func newHumanHandler(w io.Writer) *humanHandler { return &humanHandler{w: w} }

func (h *humanHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *humanHandler) Handle(_ context.Context, r slog.Record) error {
	line := r.Time.Local().Format("15:04:05") + "  " + r.Message
	add := func(a slog.Attr) bool {
		v := a.Value.String()
		switch a.Key {
		case "key", "execution":
			// Ledger keys are 52 characters; a prefix identifies them here.
			if len(v) > 12 {
				v = v[:12] + "…"
			}
		case "message":
			return true
		}
		if v != "" {
			line += "  " + a.Key + "=" + v
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	_, err := fmt.Fprintln(h.w, line)
	return err
}

func (h *humanHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &humanHandler{w: h.w, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *humanHandler) WithGroup(string) slog.Handler { return h }

// waitUntil polls cond every interval until it holds or ctx ends.
func waitUntil(ctx context.Context, interval time.Duration, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(interval):
		}
	}
	return true
}
