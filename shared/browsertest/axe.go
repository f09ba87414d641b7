package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// AxeScript is axe-core's script, installed by `make emulators` (npm
// axe-core, pinned in infra/emulators/package.json), relative to the
// repository's root.
const AxeScript = "infra/emulators/node_modules/axe-core/axe.min.js"

// AxeTags are the rule sets Axe runs: WCAG 2.0 and 2.1, levels A and AA.
var AxeTags = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa"}

// AxeViolation is one rule a page breaks, as axe-core reports it.
type AxeViolation struct {
	ID string `json:"id"`
	// Impact is "minor", "moderate", "serious" or "critical".
	Impact  string    `json:"impact"`
	Help    string    `json:"help"`
	HelpURL string    `json:"helpUrl"`
	Nodes   []AxeNode `json:"nodes"`
}

// AxeNode is one element that breaks the rule.
type AxeNode struct {
	// Target is the element's CSS selector path (one entry per frame).
	Target         []string `json:"target"`
	HTML           string   `json:"html"`
	FailureSummary string   `json:"failureSummary"`
}

// Blocking reports whether the violation fails CheckAxe: serious or
// critical.
func (v AxeViolation) Blocking() bool { return v.Impact == "serious" || v.Impact == "critical" }

// String is the violation for a test's message: rule, impact, help and
// the elements' selectors.
func (v AxeViolation) String() string {
	targets := make([]string, 0, len(v.Nodes))
	for _, n := range v.Nodes {
		targets = append(targets, strings.Join(n.Target, " » "))
	}
	return fmt.Sprintf("%s (%s): %s — %s [%s]", v.ID, v.Impact, v.Help, v.HelpURL, strings.Join(targets, ", "))
}

var axeSource struct {
	once sync.Once
	js   string
	err  error
}

// loadAxe reads axe-core's script once per test binary.
func loadAxe(t testing.TB) (string, error) {
	axeSource.once.Do(func() {
		b, err := os.ReadFile(filepath.Join(RepoRoot(t), AxeScript))
		axeSource.js, axeSource.err = string(b), err
	})
	return axeSource.js, axeSource.err
}

// Axe runs axe-core in the tab's page as it is now (injected into the
// page if it is not there yet) with AxeTags, and returns the violations.
// A missing axe-core skips the test (fails it under
// ONCEPOST_BROWSER=required) and names `make emulators`.
func (tab *Tab) Axe(ctx context.Context) ([]AxeViolation, error) {
	tab.t.Helper()
	defer tab.trace("axe", time.Now())
	src, err := loadAxe(tab.t)
	if err != nil {
		skipOrFail(tab.t, fmt.Sprintf("axe-core: %v (make emulators installs it)", err))
	}
	// The tab's chromedp context, bounded by Timeout and ended with ctx.
	runCtx, cancel := context.WithTimeout(tab.ctx, Timeout)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	ctx = runCtx
	injected, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof window.axe === "object"`))
	if err != nil {
		return nil, fmt.Errorf("axe: %w", err)
	}
	if !injected {
		// Evaluated through the DevTools protocol, the script is not
		// subject to the page's Content-Security-Policy.
		t0 := time.Now()
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](src)); err != nil {
			return nil, fmt.Errorf("axe: inject %s: %w", AxeScript, err)
		}
		tab.trace("axe inject", t0)
	}
	tags, _ := json.Marshal(AxeTags)
	run := `axe.run(document, {runOnly: {type: "tag", values: ` + string(tags) + `}, resultTypes: ["violations"]})
		.then(r => JSON.stringify(r.violations.map(v => ({id: v.id, impact: v.impact || "", help: v.help, helpUrl: v.helpUrl,
			nodes: v.nodes.map(n => ({target: n.target.map(String), html: n.html, failureSummary: n.failureSummary || ""}))}))))`
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](run, chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, fmt.Errorf("axe: run: %w", err)
	}
	var vs []AxeViolation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		return nil, fmt.Errorf("axe: read the results: %w", err)
	}
	return vs, nil
}

// CheckAxe runs Axe on the tab's page and fails the test for every
// serious or critical violation (rule id, impact, help, the elements'
// selectors); minor and moderate ones are logged. name says which page
// it was.
func CheckAxe(t testing.TB, tab *Tab, name string) {
	t.Helper()
	vs, err := tab.Axe(context.Background())
	if err != nil {
		t.Fatalf("axe on %s: %v", name, err)
	}
	var blocking []string
	for _, v := range vs {
		if v.Blocking() {
			blocking = append(blocking, v.String())
		} else {
			t.Logf("axe on %s (not failing): %s", name, v)
		}
	}
	if len(blocking) > 0 {
		t.Errorf("axe on %s (%s): %d serious or critical violations:\n  %s", name, tab.location(), len(blocking), strings.Join(blocking, "\n  "))
	}
}
