package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMain(m *testing.M) { Main(m) }

// serve serves the HTML at / on 127.0.0.1 for the test.
func serve(t *testing.T, html string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, html)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

const cleanPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Clean</title></head>
<body><main><h1>A clean page</h1>
<form><label for="name">Name</label> <input id="name" name="name"> <button type="submit">Save</button></form>
<p id="out">Nothing yet</p></main>
<script>document.querySelector("form").addEventListener("submit", e => { e.preventDefault();
  document.getElementById("out").textContent = "Hello, " + document.getElementById("name").value; });</script>
</body></html>`

// brokenPage breaks two serious-or-worse rules: an input without a label
// (label, critical) and grey text on white (color-contrast, serious).
const brokenPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Broken</title></head>
<body><main><h1>A broken page</h1>
<input id="nolabel" type="text">
<p id="faint" style="color:#bbbbbb;background:#ffffff">Faint text</p></main></body></html>`

// TestAxe: on one tab, a page with an unlabelled input and faint text
// has serious violations, which CheckAxe fails on; a clean page has none.
func TestAxe(t *testing.T) {
	t.Parallel()
	tab := NewTab(t, Options{})

	tab.Navigate(serve(t, brokenPage))
	vs, err := tab.Axe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range vs {
		got[v.ID] = v.Impact
		if v.ID == "color-contrast" && !slices.ContainsFunc(v.Nodes, func(n AxeNode) bool { return slices.Contains(n.Target, "#faint") }) {
			t.Errorf("color-contrast names %v, not #faint", v.Nodes)
		}
	}
	if got["label"] != "critical" || got["color-contrast"] != "serious" {
		t.Fatalf("violations %v, want label (critical) and color-contrast (serious)", got)
	}
	// CheckAxe fails the test for them, naming the rules and elements.
	rec := &recorder{TB: t}
	CheckAxe(rec, tab, "broken")
	if !rec.failed {
		t.Fatal("CheckAxe passed a page with serious violations")
	}
	for _, want := range []string{"label (critical)", "color-contrast (serious)", "#nolabel", "#faint"} {
		if !strings.Contains(rec.msg, want) {
			t.Errorf("CheckAxe's message lacks %q:\n%s", want, rec.msg)
		}
	}

	tab.Navigate(serve(t, cleanPage))
	vs, err = tab.Axe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 0 {
		t.Fatalf("violations on a clean page: %v", vs)
	}
	CheckAxe(t, tab, "clean")
}

// recorder is a testing.TB that keeps Errorf's failure instead of
// failing the test.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msg += fmt.Sprintf(format, args...)
}

func (r *recorder) Logf(string, ...any) {}

// TestTab: the helpers, the viewport and time zone, and a full-page
// screenshot, on one tab.
func TestTab(t *testing.T) {
	t.Parallel()
	tab := NewTab(t, Options{Width: 800, Height: 600, TimeZone: "Pacific/Auckland"})
	tab.Navigate(serve(t, cleanPage))
	tab.Type("#name", "Ada")
	tab.Click("button[type=submit]")
	tab.WaitText("Hello, Ada")
	type env struct {
		Zone  string
		Width int
		Text  string
	}
	got := env{
		Zone:  Eval[string](tab, `Intl.DateTimeFormat().resolvedOptions().timeZone`),
		Width: Eval[int](tab, `window.innerWidth`),
		Text:  tab.Text("#out"),
	}
	if diff := cmp.Diff(env{Zone: "Pacific/Auckland", Width: 800, Text: "Hello, Ada"}, got); diff != "" {
		t.Errorf("tab (-want +got):\n%s", diff)
	}
	if got := Eval[string](tab, `new Promise(r => setTimeout(() => r(typeof window.nothing), 1))`); got != "undefined" {
		t.Errorf("awaited typeof = %q", got)
	}

	tab.Navigate(serve(t, cleanPage+`<div style="height:1500px"></div>`))
	path := tab.Screenshot("browsertest-selftest")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", path, err)
	}
	// Full page: the whole document's height, not the viewport's.
	if sz := img.Bounds().Size(); sz.X != 800 || sz.Y < 1500 {
		t.Fatalf("screenshot is %v, want 800 wide and the page's full height (≥ 1500)", sz)
	}
}

// TestPageErrors: an uncaught error, a missing image, a rejected promise
// and what the page's CSP blocked are reported; a clean page has none.
func TestPageErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/clean":
			fmt.Fprint(w, cleanPage)
		case "/broken":
			w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self'")
			fmt.Fprint(w, `<!doctype html><html lang="en"><title>b</title><p style="color:red">x</p><img src="/missing.png" alt="m">
<script>Promise.reject(new Error("nope")); undefinedFunction();</script>`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	tab := NewTab(t, Options{})
	tab.Navigate(srv.URL + "/clean")
	if errs := tab.PageErrors(); len(errs) != 0 {
		t.Errorf("a clean page's errors: %q", errs)
	}
	tab.Navigate(srv.URL + "/broken")
	got := strings.Join(tab.PageErrors(), "\n")
	for _, want := range []string{"Uncaught ReferenceError: undefinedFunction is not defined", "failed to load <img> " + srv.URL + "/missing.png",
		"unhandled rejection: nope", "Content-Security-Policy blocked inline (style-src-attr)"} {
		if !strings.Contains(got, want) {
			t.Errorf("page errors lack %q:\n%s", want, got)
		}
	}
}

// TestTabsAreIsolated: each tab is a browser context of its own, so a
// cookie one test's tab gets is not sent by another's.
func TestTabsAreIsolated(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/set" {
			http.SetCookie(w, &http.Cookie{Name: "who", Value: "first", Path: "/"})
		}
		c, _ := r.Cookie("who")
		v := "none"
		if c != nil {
			v = c.Value
		}
		fmt.Fprintf(w, `<!doctype html><title>c</title><p id="who">%s</p>`, v)
	}))
	t.Cleanup(srv.Close)
	first, second := NewTab(t, Options{}), NewTab(t, Options{})
	first.Navigate(srv.URL + "/set")
	first.Navigate(srv.URL + "/")
	second.Navigate(srv.URL + "/")
	if a, b := first.Text("#who"), second.Text("#who"); a != "first" || b != "none" {
		t.Fatalf("cookie seen by the first tab %q (want first), by the second %q (want none)", a, b)
	}
}

// TestStopLeavesNoProcess: a browser's stop ends its process and every
// helper process started with its user data directory.
func TestStopLeavesNoProcess(t *testing.T) {
	t.Parallel()
	if why := Available(); why != "" {
		skipOrFail(t, why)
	}
	b, err := start()
	if err != nil {
		t.Fatal(err)
	}
	if b.pid == 0 {
		b.stop()
		t.Fatal("no browser PID")
	}
	children := childrenOf(b.pid)
	if len(children) == 0 {
		t.Errorf("chromium %d has no helper processes: this test checks nothing", b.pid)
	}
	b.stop()
	for _, pid := range append(children, b.pid) {
		if alive(pid) {
			t.Errorf("process %d is still running after stop", pid)
		}
	}
}

// childrenOf lists the processes whose parent is pid (from /proc).
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		var p int
		if _, err := fmt.Sscanf(e.Name(), "%d", &p); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces, so read after ')'.
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == fmt.Sprint(pid) {
			out = append(out, p)
		}
	}
	return out
}

// alive reports whether the process exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func TestRequiredFailsWhenChromiumIsMissing(t *testing.T) {
	if testing.Short() {
		t.Skip("with -short the browser tests skip whatever the environment says")
	}
	old := ExecPath
	ExecPath = "/nonexistent/chromium"
	t.Cleanup(func() { ExecPath = old })
	for _, tc := range []struct {
		env                   string
		wantFailed, wantSkips bool
	}{
		{env: "", wantSkips: true},
		{env: "required", wantFailed: true},
	} {
		t.Run("env="+tc.env, func(t *testing.T) {
			t.Setenv(EnvRequired, tc.env)
			rec := &outcome{TB: t}
			done := make(chan struct{})
			go func() { // Fatal and Skip end the goroutine (runtime.Goexit)
				defer close(done)
				NewTab(rec, Options{})
			}()
			<-done
			if rec.failed != tc.wantFailed || rec.skipped != tc.wantSkips {
				t.Fatalf("failed %v skipped %v, want %v %v (%s)", rec.failed, rec.skipped, tc.wantFailed, tc.wantSkips, rec.msg)
			}
			if !strings.Contains(rec.msg, InstallCommand) {
				t.Errorf("message %q does not name %q", rec.msg, InstallCommand)
			}
		})
	}
}

// outcome records a Fatal or Skip and ends the calling goroutine, as
// testing.T does, without ending the test.
type outcome struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (o *outcome) Helper() {}
func (o *outcome) Fatalf(format string, args ...any) {
	o.failed, o.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (o *outcome) Skip(args ...any) {
	o.skipped, o.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}
