package platformtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// recorder sees every call the use case makes to a platform client: it
// keeps the errors, counts the 401s and the refreshes, and can hold the
// first refresh (the gate).
type recorder struct {
	unauthorized atomic.Int32
	refreshes    atomic.Int32

	mu   sync.Mutex
	errs []text
	gate func()
	n    int
}

// setGate makes the first Client.Refresh run gate before it is sent.
func (r *recorder) setGate(gate func()) {
	r.mu.Lock()
	r.gate = gate
	r.mu.Unlock()
}

func (r *recorder) record(op string, err error) {
	if err == nil {
		return
	}
	var ua *platform.Unauthorized
	if errors.As(err, &ua) {
		r.unauthorized.Add(1)
	}
	r.mu.Lock()
	r.n++
	r.errs = append(r.errs, errorTexts("error of "+op, err)...)
	r.mu.Unlock()
}

func (r *recorder) texts() []text {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]text(nil), r.errs...)
}

func (r *recorder) errorCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// recordingPlatforms wraps the adapter's Platforms so that every client it
// builds reports to rec. The publishing use case asks its clients for no
// optional interface, so the wrapper changes nothing it does.
type recordingPlatforms struct {
	next publishing.Platforms
	rec  *recorder
}

func (p recordingPlatforms) Client(ctx context.Context, a post.Account, c platform.Credential) (platform.Client, error) {
	cl, err := p.next.Client(ctx, a, c)
	p.rec.record("Platforms.Client", err)
	if err != nil {
		return nil, err
	}
	return &recordingClient{next: cl, rec: p.rec}, nil
}

type recordingClient struct {
	next platform.Client
	rec  *recorder
}

func (c *recordingClient) Publish(ctx context.Context, req platform.PublishRequest) (platform.Receipt, error) {
	rc, err := c.next.Publish(ctx, req)
	c.rec.record("Publish", err)
	return rc, err
}

func (c *recordingClient) Lookup(ctx context.Context, q platform.LookupQuery) (platform.RemotePost, bool, error) {
	rp, found, err := c.next.Lookup(ctx, q)
	c.rec.record("Lookup", err)
	return rp, found, err
}

func (c *recordingClient) Recent(ctx context.Context, n int) ([]platform.RemotePost, error) {
	rps, err := c.next.Recent(ctx, n)
	c.rec.record("Recent", err)
	return rps, err
}

func (c *recordingClient) Delete(ctx context.Context, remoteID string) error {
	err := c.next.Delete(ctx, remoteID)
	c.rec.record("Delete", err)
	return err
}

func (c *recordingClient) Exists(ctx context.Context, remoteID string) (bool, error) {
	ok, err := c.next.Exists(ctx, remoteID)
	c.rec.record("Exists", err)
	return ok, err
}

func (c *recordingClient) UploadMedia(ctx context.Context, m platform.MediaUpload) (platform.MediaReceipt, error) {
	mr, err := c.next.UploadMedia(ctx, m)
	c.rec.record("UploadMedia", err)
	return mr, err
}

func (c *recordingClient) Refresh(ctx context.Context, cred platform.Credential) (platform.Credential, error) {
	c.rec.mu.Lock()
	gate := c.rec.gate
	c.rec.gate = nil
	c.rec.mu.Unlock()
	if gate != nil {
		gate()
	}
	c.rec.refreshes.Add(1)
	next, err := c.next.Refresh(ctx, cred)
	c.rec.record("Refresh", err)
	return next, err
}

func (c *recordingClient) Capabilities() platform.Capabilities { return c.next.Capabilities() }

// capture keeps every log record twice: as a JSON handler writes it, and
// as the raw values of its message and attributes (so no encoding can
// hide a secret from the search).
type capture struct {
	mu   sync.Mutex
	json bytes.Buffer
	raw  []string
}

func (c *capture) handler() slog.Handler {
	return &captureHandler{c: c, json: slog.NewJSONHandler(lockedWriter{c}, &slog.HandlerOptions{Level: slog.LevelDebug})}
}

func (c *capture) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.raw)
}

func (c *capture) jsonLines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Split(strings.TrimSpace(c.json.String()), "\n")
}

func (c *capture) texts() []text {
	var out []text
	for i, l := range c.jsonLines() {
		out = append(out, text{fmt.Sprintf("log line %d", i+1), l})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, l := range c.raw {
		out = append(out, text{fmt.Sprintf("log record %d", i+1), l})
	}
	return out
}

// lockedWriter writes to the capture's JSON buffer under its lock.
type lockedWriter struct{ c *capture }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return w.c.json.Write(p)
}

// captureHandler records at every level.
type captureHandler struct {
	c      *capture
	json   slog.Handler
	prefix string // attributes and groups given by WithAttrs and WithGroup, rendered
	group  string
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *captureHandler) Handle(ctx context.Context, rec slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s%s", rec.Level, rec.Message, h.prefix)
	rec.Attrs(func(a slog.Attr) bool {
		writeAttr(&b, h.group, a)
		return true
	})
	h.c.mu.Lock()
	h.c.raw = append(h.c.raw, b.String())
	h.c.mu.Unlock()
	return h.json.Handle(ctx, rec)
}

func (h *captureHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	for _, a := range attrs {
		writeAttr(&b, h.group, a)
	}
	return &captureHandler{c: h.c, json: h.json.WithAttrs(attrs), prefix: h.prefix + b.String(), group: h.group}
}

func (h *captureHandler) WithGroup(name string) slog.Handler {
	return &captureHandler{c: h.c, json: h.json.WithGroup(name), prefix: h.prefix, group: h.group + name + "."}
}

// writeAttr renders an attribute's raw value: an error with %v and %+v,
// anything else with %+v, groups flattened.
func writeAttr(b *strings.Builder, group string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		for _, g := range v.Group() {
			writeAttr(b, group+a.Key+".", g)
		}
		return
	}
	if err, ok := v.Any().(error); ok {
		fmt.Fprintf(b, " %s%s=%v | %+v | %#v", group, a.Key, err, err, err)
		return
	}
	fmt.Fprintf(b, " %s%s=%+v", group, a.Key, v.Any())
}
