// Package browsertest drives Debian's Chromium (/usr/bin/chromium)
// headless from Go tests, through chromedp, and checks pages with
// axe-core: what the console's browser tests are written with.
//
// One browser per test binary: a package whose tests use it calls Main
// from its TestMain, and the first NewTab starts the browser, which every
// later test shares and Main stops (by PID if it outlives a graceful
// close) after the last test, so `go test` leaves no chromium behind.
// Without Main, each test gets a browser of its own, stopped at its
// cleanup (about a second more a test). The kernel also kills the browser
// when the test binary dies (chromedp sets Pdeathsig).
//
// Each test opens a Tab: a page of its own in a browser context of its
// own (its own cookies and storage, so tests can run in parallel), with
// the viewport and time zone the test asks for. Its helpers (Navigate,
// WaitText, Click, Type, Text, Eval, Screenshot, …) fail the test on an
// error or after Timeout, so a test reads as a list of steps:
//
//	func TestMain(m *testing.M) { browsertest.Main(m) }
//
//	func TestSignIn(t *testing.T) {
//		tab := browsertest.NewTab(t, browsertest.Options{TimeZone: "America/New_York"})
//		tab.Navigate(srv.URL + "/signin")
//		tab.Type("#token", token)
//		tab.Click("button[type=submit]")
//		tab.WaitPath("/calendar")
//		browsertest.CheckAxe(t, tab, "calendar")
//		tab.Screenshot("console-calendar")
//	}
//
// The browser runs with --headless, --no-sandbox (the tests run as root
// in CI), --disable-gpu, --disable-background-networking,
// --disable-component-update, --disable-sync, --no-first-run and a
// temporary --user-data-dir that is removed at the end: this machine's
// network is closed, and a browser that reaches out for updates or
// Google's services only waits on refused connections.
//
// When chromium is missing the test is skipped with the command that
// installs it (`make chromium`), unless the environment variable
// ONCEPOST_BROWSER is "required" (as `make test` sets it): then the test
// fails, so CI cannot skip silently. The same holds for axe-core
// (infra/emulators/node_modules, `make emulators`). With -short the
// browser tests are skipped.
package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// EnvRequired names the environment variable that, set to "required",
// turns a missing chromium or axe-core from a skipped test into a failed
// one.
const EnvRequired = "ONCEPOST_BROWSER"

// InstallCommand installs chromium, run from the module root.
const InstallCommand = "make chromium"

// ExecPath is the browser the tests drive: Debian's chromium package.
var ExecPath = "/usr/bin/chromium"

// Durations of the browser's lifecycle and of each step.
const (
	// Timeout bounds each step of a Tab (a navigation, a wait, a click).
	Timeout = 10 * time.Second
	// StartTimeout bounds the browser's start.
	StartTimeout = 30 * time.Second
	// StopGrace is how long a stop waits for a graceful close before the
	// process is killed.
	StopGrace = 3 * time.Second
)

// flags are the browser's command line beyond chromedp's defaults (which
// already hold headless, no-first-run, disable-background-networking,
// disable-sync and a temporary user-data-dir); named again here so the
// list does not depend on chromedp's.
var flags = []chromedp.ExecAllocatorOption{
	chromedp.NoSandbox,
	chromedp.DisableGPU,
	chromedp.NoFirstRun,
	chromedp.Flag("disable-background-networking", true),
	chromedp.Flag("disable-component-update", true),
	chromedp.Flag("disable-sync", true),
	chromedp.Flag("disable-quic", true),
	chromedp.Flag("disable-crash-reporter", true),
	chromedp.Flag("disable-domain-reliability", true),
	chromedp.Flag("no-pings", true),
	chromedp.Flag("hide-scrollbars", true),
	chromedp.Flag("font-render-hinting", "none"),
	// chromedp's two, and chromium 156's omnibox popups: two WebUI
	// renderers per window that kept using CPU in an idle headless
	// browser (0.4 s of CPU a second).
	chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup"),
}

// browser is one running chromium.
type browser struct {
	ctx         context.Context // the browser's root chromedp context
	cancel      context.CancelFunc
	cancelAlloc context.CancelFunc
	pid         int
}

// start starts chromium and waits until it answers.
func start() (*browser, error) {
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]), flags...)
	opts = append(opts, chromedp.ExecPath(ExecPath))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b := &browser{ctx: ctx, cancel: cancel, cancelAlloc: cancelAlloc}
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			b.stop()
			return nil, fmt.Errorf("browsertest: start %s: %w", ExecPath, err)
		}
	case <-time.After(StartTimeout):
		b.stop()
		return nil, fmt.Errorf("browsertest: start %s: no answer in %s", ExecPath, StartTimeout)
	}
	if c := chromedp.FromContext(ctx); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		b.pid = c.Browser.Process().Pid
	}
	return b, nil
}

// stop closes the browser gracefully, kills it by PID if it is still
// there after StopGrace, and waits until chromedp removed its user data
// directory (chromedp also kills the helper processes started with it).
func (b *browser) stop() {
	// chromedp.Cancel closes the browser of its own chromedp context
	// (Browser.close, then a wait for the process); one derived from
	// another context is not one.
	closed := make(chan struct{})
	go func() {
		chromedp.Cancel(b.ctx)
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(StopGrace):
	}
	if b.pid > 0 && syscall.Kill(b.pid, 0) == nil {
		syscall.Kill(b.pid, syscall.SIGKILL)
	}
	b.cancel()
	b.cancelAlloc() // waits for the process and the directory's removal
}

// The shared browser of a test binary whose TestMain calls Main.
var shared struct {
	mu      sync.Mutex
	enabled bool
	b       *browser
	err     error
}

// Main runs the tests of a package (call it from TestMain) with one
// browser for all of them, started by the first NewTab, and stops it
// after the last test, before the test binary exits.
func Main(m *testing.M) {
	shared.mu.Lock()
	shared.enabled = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	if shared.b != nil {
		shared.b.stop()
		shared.b = nil
	}
	shared.mu.Unlock()
	os.Exit(code)
}

// browserFor returns the browser a test's tab opens in: the shared one
// (started on first use) under Main, else one of the test's own.
func browserFor(t testing.TB) (*browser, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.enabled {
		b, err := start()
		if err != nil {
			return nil, err
		}
		t.Cleanup(b.stop)
		return b, nil
	}
	if shared.b == nil && shared.err == nil {
		shared.b, shared.err = start()
	}
	return shared.b, shared.err
}

// Available reports why the browser tests cannot run here ("" when they
// can): chromium is missing, or the tests run with -short.
func Available() string {
	if testing.Short() {
		return "browser test: skipped with -short"
	}
	if _, err := os.Stat(ExecPath); err != nil {
		return fmt.Sprintf("browser test: %s is missing (%s installs Debian's chromium)", ExecPath, InstallCommand)
	}
	return ""
}

// required reports whether a missing browser or axe-core fails the test.
func required() bool { return os.Getenv(EnvRequired) == "required" }

// skipOrFail skips the test for why, or fails it when EnvRequired says the
// browser tests must run (-short still skips).
func skipOrFail(t testing.TB, why string) {
	t.Helper()
	if required() && !testing.Short() {
		t.Fatalf("%s; %s=required", why, EnvRequired)
	}
	t.Skip(why)
}

// Options are a Tab's viewport and time zone.
type Options struct {
	// Width and Height are the viewport in CSS pixels (default 1280×800).
	Width, Height int64
	// TimeZone is the IANA zone the page sees (Intl, Date); default UTC.
	TimeZone string
	// BypassCSP turns the pages' Content-Security-Policy off, for a test
	// that checks what the server's escaping alone prevents.
	BypassCSP bool
}

// Tab is one page of the browser, in a browser context of its own: its
// own cookies, storage and cache. Its methods fail the test on an error.
type Tab struct {
	t   testing.TB
	ctx context.Context
}

// NewTab opens a tab for the test, closed at its cleanup. It skips the
// test when the browser cannot run here (see Available), or fails it
// under ONCEPOST_BROWSER=required.
func NewTab(t testing.TB, opts Options) *Tab {
	t.Helper()
	if why := Available(); why != "" {
		skipOrFail(t, why)
	}
	b, err := browserFor(t)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Width <= 0 {
		opts.Width = 1280
	}
	if opts.Height <= 0 {
		opts.Height = 800
	}
	if opts.TimeZone == "" {
		opts.TimeZone = "UTC"
	}
	defer tab0trace(t, time.Now())
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	tab := &Tab{t: t, ctx: ctx}
	// The first Run creates the target: no timeout on it (a timeout on the
	// first Run's context would bound the tab's whole life).
	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(opts.Width, opts.Height),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: opts.TimeZone})
			if err != nil {
				return fmt.Errorf("time zone %q: %w", opts.TimeZone, err)
			}
			if opts.BypassCSP {
				if _, err := cdp.Call(ctx, tg, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true}); err != nil {
					return err
				}
			}
			_, err = cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: errorRecorder})
			return err
		}))
	if err != nil {
		t.Fatalf("browsertest: open a tab: %v", err)
	}
	return tab
}

func tab0trace(t testing.TB, start time.Time) {
	if tracing {
		t.Logf("browser: open a tab: %s", time.Since(start).Round(time.Millisecond))
	}
}

// SetViewport resizes the tab's viewport (CSS pixels), e.g. to a
// phone's 390×844.
func (tab *Tab) SetViewport(width, height int64) {
	tab.t.Helper()
	tab.run(fmt.Sprintf("set the viewport to %d×%d", width, height), chromedp.EmulateViewport(width, height))
}

// Context is the tab's chromedp context, for chromedp actions the
// helpers do not cover (give each a timeout of its own).
func (tab *Tab) Context() context.Context { return tab.ctx }

// run runs the steps within Timeout; an error fails the test with what.
func (tab *Tab) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	tab.t.Helper()
	defer tab.trace(what, time.Now())
	ctx, cancel := context.WithTimeout(tab.ctx, Timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tab.t.Fatalf("browser: %s: %v (page %s)", what, err, tab.location())
	}
}

// runValue runs one action that returns a value within Timeout.
func runValue[T any](tab *Tab, what string, a chromedp.Action[T]) T {
	tab.t.Helper()
	defer tab.trace(what, time.Now())
	ctx, cancel := context.WithTimeout(tab.ctx, Timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		tab.t.Fatalf("browser: %s: %v (page %s)", what, err, tab.location())
	}
	return v
}

// EnvTrace names the environment variable that, set to 1, logs every
// step of every Tab with its duration (to find what makes a test slow).
const EnvTrace = "ONCEPOST_BROWSER_TRACE"

var tracing = os.Getenv(EnvTrace) == "1"

// trace logs a step's duration when EnvTrace is set.
func (tab *Tab) trace(what string, start time.Time) {
	if tracing {
		tab.t.Logf("browser: %s: %s", what, time.Since(start).Round(time.Millisecond))
	}
}

// location is the tab's URL for messages ("?" when it cannot be read).
func (tab *Tab) location() string {
	ctx, cancel := context.WithTimeout(tab.ctx, time.Second)
	defer cancel()
	u, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "?"
	}
	return u
}

// errorRecorder runs in every document before its own scripts (the
// DevTools protocol puts it there, past the page's CSP) and keeps what
// PageErrors returns.
const errorRecorder = `(() => {
	const errs = [];
	Object.defineProperty(window, "__browsertestErrors", {value: errs});
	document.addEventListener("securitypolicyviolation", e => errs.push("Content-Security-Policy blocked " +
		(e.blockedURI || "inline") + " (" + e.violatedDirective + ")" + (e.sourceFile ? " at " + e.sourceFile + ":" + e.lineNumber : "")));
	window.addEventListener("error", e => {
		if (e.target && e.target !== window) {
			errs.push("failed to load <" + e.target.tagName.toLowerCase() + "> " + (e.target.src || e.target.href || ""));
		} else {
			errs.push(e.message + (e.filename ? " at " + e.filename + ":" + e.lineno : ""));
		}
	}, true);
	window.addEventListener("unhandledrejection", e => errs.push("unhandled rejection: " +
		(e.reason && e.reason.message ? e.reason.message : JSON.stringify(e.reason))));
})()`

// PageErrors are what went wrong in the tab's current document so far:
// uncaught JavaScript errors and rejections, elements whose resource
// failed to load, and what its Content-Security-Policy blocked. A page
// that works has none.
func (tab *Tab) PageErrors() []string {
	tab.t.Helper()
	// One turn of the event loop first: violations are reported as tasks.
	return Eval[[]string](tab, `new Promise(r => setTimeout(() => r(window.__browsertestErrors || []), 0))`)
}

// Navigate loads the URL, waits for its load event and returns the
// HTTP status of the document it ended on (after redirects).
func (tab *Tab) Navigate(url string) int {
	tab.t.Helper()
	res := runValue(tab, "navigate to "+url, chromedp.NavigateResponse(url))
	if res == nil {
		tab.t.Fatalf("browser: navigate to %s: no response", url)
	}
	return int(res.Status)
}

// Status is the HTTP status of the tab's current document, however it
// got there (a link, a form's submission, a redirect): the Navigation
// Timing entry's responseStatus.
func (tab *Tab) Status() int {
	tab.t.Helper()
	return Eval[int](tab, `performance.getEntriesByType("navigation")[0].responseStatus`)
}

// URL is the tab's current address.
func (tab *Tab) URL() string {
	tab.t.Helper()
	return runValue(tab, "read the location", chromedp.Location())
}

// WaitFor waits until the JavaScript expression is truthy (polling every
// 20 ms), or fails the test after Timeout naming what it waited for.
func (tab *Tab) WaitFor(what, expr string) {
	tab.t.Helper()
	defer tab.trace("wait for "+what, time.Now())
	ctx, cancel := context.WithTimeout(tab.ctx, Timeout)
	defer cancel()
	js := "!!(" + expr + ")"
	var lastErr error
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err == nil && ok {
			return
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			tab.t.Fatalf("browser: waited %s for %s on %s (last error: %v); the page says: %.500s",
				Timeout, what, tab.location(), lastErr, tab.bodyText())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// bodyText is the page's visible text, for messages.
func (tab *Tab) bodyText() string {
	ctx, cancel := context.WithTimeout(tab.ctx, time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return s
}

// WaitText waits until the page's visible text contains text.
func (tab *Tab) WaitText(text string) {
	tab.t.Helper()
	tab.WaitFor(fmt.Sprintf("the text %q", text), "document.body && document.body.innerText.includes("+jsString(text)+")")
}

// WaitSelector waits until an element matches the CSS selector and is
// visible.
func (tab *Tab) WaitSelector(sel string) {
	tab.t.Helper()
	tab.run("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
}

// WaitPath waits until the tab's URL path is path (after a form's
// submission or a redirect), and its document has loaded.
func (tab *Tab) WaitPath(path string) {
	tab.t.Helper()
	tab.WaitFor("the path "+path, "location.pathname === "+jsString(path)+` && document.readyState === "complete"`)
}

// Click clicks the first visible element the CSS selector matches.
func (tab *Tab) Click(sel string) {
	tab.t.Helper()
	tab.run("click "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// Type focuses the element the CSS selector matches and enters text as
// the keyboard would (Input.insertText: beforeinput and input events, as
// a typed or pasted text gets), in one step rather than one key event per
// character (a 55-character token took 0.4 to 1.9 s as key events). Use
// Press for keys that act (Tab, Enter).
func (tab *Tab) Type(sel, text string) {
	tab.t.Helper()
	tab.run("type into "+sel, chromedp.Focus(chromedp.CSS(sel), chromedp.NodeVisible),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, input.InsertText, input.InsertTextParams{Text: text})
			return err
		}))
}

// SetFiles chooses files for the file input the CSS selector matches,
// as a person picking them in the file dialog does.
func (tab *Tab) SetFiles(sel string, paths ...string) {
	tab.t.Helper()
	tab.run("choose files for "+sel, chromedp.SetUploadFiles(chromedp.CSS(sel), paths, chromedp.NodeReady))
}

// Press sends keys to the focused element as key events: text, or a
// key of chromedp's kb package such as kb.Tab ("\t") or kb.Enter ("\r").
func (tab *Tab) Press(keys string) {
	tab.t.Helper()
	tab.run(fmt.Sprintf("press %q", keys), chromedp.KeyEvent(keys))
}

// Text is the visible text (innerText) of the first element the CSS
// selector matches.
func (tab *Tab) Text(sel string) string {
	tab.t.Helper()
	return runValue(tab, "read the text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

// Eval evaluates the JavaScript expression in the tab and decodes its
// JSON value into T (a promise is awaited). An exception, or undefined
// or null for a T that cannot be nil, fails the test; ask for a string
// with typeof to test for undefined.
func Eval[T any](tab *Tab, expr string) T {
	tab.t.Helper()
	return runValue(tab, "evaluate "+firstLine(expr), chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// Screenshot saves a full-page PNG of the tab as
// var/screenshots/<name>.png at the repository's root and returns its
// path.
func (tab *Tab) Screenshot(name string) string {
	tab.t.Helper()
	png := runValue(tab, "screenshot "+name, chromedp.FullScreenshot(100))
	dir := filepath.Join(RepoRoot(tab.t), "var", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tab.t.Fatal(err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tab.t.Fatal(err)
	}
	return path
}

// RepoRoot is the repository's root: the nearest folder up from the
// test's working directory that holds go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("browsertest: no go.mod above the working directory")
		}
		dir = up
	}
}

// jsString is s as a JavaScript string literal (JSON's string is one;
// encoding/json also escapes <, > and U+2028/9).
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > 80 {
		s = s[:80] + " …"
	}
	return s
}
