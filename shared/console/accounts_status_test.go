package console

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"oncepost/shared/emf"
	"oncepost/shared/ledger"
	"oncepost/shared/platform/catalog"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// publish moves a new post's target to news to published, as the
// publisher does (the store records the post.published event with it).
func (h *harness) publish(t *testing.T, id post.ID, remoteID string, at time.Time) {
	t.Helper()
	ctx := context.Background()
	slot := at.Add(-time.Minute).UTC().Truncate(time.Second)
	if err := h.store.CreatePost(ctx, post.Post{ID: id, Body: "out", CreatedAt: at,
		Targets: []post.Target{{Account: "news", Slot: slot, Status: post.Scheduled, UpdatedAt: at}}}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []post.TargetStatus{post.Triggered, post.Publishing, post.Published} {
		u := post.TargetUpdate{Status: st, At: at}
		if st == post.Published {
			u.RemoteID = remoteID
		}
		if _, err := h.store.UpdateTarget(ctx, id, "news", u); err != nil {
			t.Fatal(err)
		}
	}
}

// The accounts page shows each account's health (reconnect needed with
// its reason), its pacing budget, its last success and its platform's
// guarantee from the platform table.
func TestAccountsPage(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	h := newHarness(t, harnessOptions{now: func() time.Time { return now }})
	h.publish(t, "out-1", "remote-<1>", now.Add(-time.Hour))
	h.publish(t, "out-2", "remote-2", now)
	sky, _ := catalog.Lookup("bluesky")
	left, err := h.store.Budget(context.Background(), "sky", sky.Capabilities.PostingLimits, now)
	if err != nil || len(left) != 2 {
		t.Fatalf("budget: %v %v", left, err)
	}
	p := h.signIn("read").get("/accounts")
	if p.status != http.StatusOK {
		t.Fatalf("GET /accounts: %d %.500s", p.status, p.body)
	}
	rows := map[string]string{}
	for _, row := range strings.Split(p.body, "<tr>")[1:] {
		id := between(row, `<span class="acct-id">`, "</span>")
		rows[id] = row
	}
	for _, tc := range []struct {
		account string
		want    []string
		not     []string
	}{
		{"news", []string{"Mastodon", "@news@example.social", "<strong>confirm by read-back</strong>", "ok", "sent again when the looks find nothing", "post <code>out-2</code> (remote <code>remote-2</code>)"},
			[]string{"reconnect needed", "out-1"}},
		{"sky", []string{"Bluesky", fmt.Sprintf("<strong>%d</strong> of 1666 per 1 h", left[0]), fmt.Sprintf("<strong>%d</strong> of 11666 per 24 h", left[1]), "<strong>exact</strong>", "none among the latest 500 events", "held for a person"},
			[]string{"reconnect needed"}},
		{"gone", []string{"reconnect needed", "refresh refused", "--replace"}, nil},
	} {
		row, ok := rows[tc.account]
		if !ok {
			t.Errorf("no row for %s", tc.account)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(row, w) {
				t.Errorf("%s's row lacks %q: %s", tc.account, w, row)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(row, w) {
				t.Errorf("%s's row has %q: %s", tc.account, w, row)
			}
		}
	}
}

// The status page shows the open entries with their age, a stale one
// flagged, the gauges the alarms watch and the recent events.
func TestStatusPage(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	h := newHarness(t, harnessOptions{now: func() time.Time { return now }})
	ctx := context.Background()
	slot := now.Add(-time.Hour)
	for _, o := range []struct {
		id  string
		age time.Duration
	}{{"old", 20 * time.Minute}, {"new", time.Minute}} {
		e := ledger.NewEntry(ledger.PublishKey("news", o.id, slot), ledger.Publish, "news", o.id, slot, "fp", "w1", now.Add(-o.age), time.Minute)
		if err := h.store.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	h.hold(t, "dup", "duplicate?", "1")
	h.publish(t, "out-<x>", "r1", now)
	p := h.signIn("read").get("/status")
	if p.status != http.StatusOK {
		t.Fatalf("GET /status: %d %.500s", p.status, p.body)
	}
	stale := `<time datetime="` + now.Add(-20*time.Minute).Format(time.RFC3339) + `">20m0s</time> <span class="state state-failed">stale</span>`
	fresh := `<time datetime="` + now.Add(-time.Minute).Format(time.RFC3339) + `">1m0s</time></td>`
	for _, want := range []string{
		"Open ledger entries (2)", stale, fresh,
		"<code>StalePending</code></span></th><td>1 ", "<code>OldestOpenAgeSeconds</code></span></th><td>20m0s",
		"<code>HeldTargets</code></span></th><td>1 ",
		"<code>post.published</code>", "<code>out-&lt;x&gt;</code>",
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the status page lacks %q", want)
		}
	}
	if strings.Count(p.body, "state-failed\">stale") != 1 {
		t.Errorf("want exactly one stale entry flagged")
	}
}

// between is the text of s after the first from, up to the next to.
func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	out, _, _ := strings.Cut(rest, to)
	return out
}

// metricsCapture is a publishing.MetricsEmitter keeping the last values.
type metricsCapture map[string]float64

func (m metricsCapture) Emit(ms ...emf.Metric) error { return m.EmitAt(time.Time{}, ms...) }

func (m metricsCapture) EmitAt(_ time.Time, ms ...emf.Metric) error {
	for _, x := range ms {
		m[x.Name] = x.Value
	}
	return nil
}

// The status page's gauges are the sweeper's: with the sweeper's
// StaleAfter (Config.StaleAfter, not the package's default) and its
// query (an entry opened at this very instant is open), the page shows
// the values a sweep of the same store emits.
func TestStatusPageGaugesAreTheSweepers(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	const staleAfter = 30 * time.Second
	h := newHarness(t, harnessOptions{now: func() time.Time { return now }, config: func(c *Config) { c.StaleAfter = staleAfter }})
	ctx := context.Background()
	slot := now.Add(-time.Hour)
	for _, o := range []struct {
		id  string
		age time.Duration
	}{{"old", 4 * time.Minute}, {"new", time.Minute}, {"now", 0}} {
		// A long lease: the sweep counts them and leaves them alone.
		e := ledger.NewEntry(ledger.PublishKey("news", o.id, slot), ledger.Publish, "news", o.id, slot, "fp", "w1", now.Add(-o.age), time.Hour)
		if err := h.store.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	h.hold(t, "dup", "duplicate?", "1")
	metrics := metricsCapture{}
	sw := &publishing.Sweeper{Ledger: h.store, Posts: h.store, Queue: h.queue, Metrics: metrics, Now: h.now, StaleAfter: staleAfter,
		Logger: slog.New(slog.DiscardHandler)}
	if _, err := sw.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	p := h.signIn("read").get("/status")
	if p.status != http.StatusOK {
		t.Fatalf("GET /status: %d %.500s", p.status, p.body)
	}
	if got := strings.Count(p.body, "state-failed\">stale"); got != 2 {
		t.Errorf("%d entries flagged stale, want 2 (open longer than %s)", got, staleAfter)
	}
	if !strings.Contains(p.body, "Open ledger entries (3)") {
		t.Error("the page lacks the entry opened at this instant")
	}
	for _, m := range []struct {
		name string
		text func(float64) string
	}{
		{"StalePending", func(v float64) string { return strconv.Itoa(int(v)) }},
		{"StaleUnknown", func(v float64) string { return strconv.Itoa(int(v)) }},
		{"OldestOpenAgeSeconds", func(v float64) string { return (time.Duration(v) * time.Second).String() }},
		{"HeldTargets", func(v float64) string { return strconv.Itoa(int(v)) }},
	} {
		v, ok := metrics[m.name]
		if !ok {
			t.Fatalf("the sweep emitted no %s", m.name)
		}
		cell := between(p.body, "<code>"+m.name+"</code></span></th><td>", "</td>")
		if got := strings.Fields(cell + " "); len(got) == 0 || got[0] != m.text(v) {
			t.Errorf("the page's %s is %q, not the sweep's %s", m.name, cell, m.text(v))
		}
	}
	if metrics["StalePending"] != 2 {
		t.Errorf("the sweep's StalePending %v, want 2", metrics["StalePending"])
	}
}
