package console

import (
	"net/http"
	"strconv"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The status page's bounds.
const (
	// statusOpenScan bounds the open entries read for the gauges;
	// statusOpenShown those listed.
	statusOpenScan  = 200
	statusOpenShown = 100
	// statusEvents bounds the recent events listed.
	statusEvents = 50
)

// statusData is the status page: what `oncepost status` and GET
// /v1/status show, the gauges the sweeper emits for the alarms, and the
// recent events.
type statusData struct {
	*view
	Gauges []gauge
	// Targets are the targets by status, in a post's life order.
	Targets []targetCount
	Queue   publishing.QueueDepth
	Open    []openRow
	// OpenMore: more entries are open than were read (the gauges count
	// at least what they say).
	OpenMore   bool
	OpenTotal  int
	StaleAfter time.Duration
	// Events are the newest first; EventsShown is false without
	// Config.Events.
	Events      []publishing.Event
	EventsShown bool
}

// gauge is one of the values the alarms watch; Bad says it is not zero
// where zero is healthy.
type gauge struct {
	Name, Metric, Value, Help string
	Bad                       bool
}

type targetCount struct {
	Status post.TargetStatus
	Count  int
}

// openRow is a pending or unknown ledger entry with its age.
type openRow struct {
	ledger.Entry
	Age   time.Duration
	Stale bool
}

// showStatus is GET /status.
func (h *Handler) showStatus(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	d := statusData{view: h.newView(s, "status", "Status")}
	// The gauges as the sweeper reads them for its metrics: the same
	// query and the same StaleAfter.
	g, err := publishing.GaugeSources{Ledger: h.cfg.API.Held, StaleAfter: h.cfg.StaleAfter, Limit: statusOpenScan}.ReadOpen(ctx, d.Now)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// Each status through its own partial index: a fifth of one scan of
	// every target (measured with 20,000 targets).
	counts, err := h.cfg.API.Targets.CountTargets(ctx, publishing.TargetStatuses...)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	g.SetTargets(counts)
	if err := (publishing.GaugeSources{Targets: h.cfg.API.Targets, Limit: statusOpenScan}).ReadApprovals(ctx, &g); err != nil {
		h.fail(w, r, err)
		return
	}
	for _, st := range publishing.TargetStatuses {
		d.Targets = append(d.Targets, targetCount{Status: st, Count: counts[st]})
	}
	d.StaleAfter, d.OpenMore, d.OpenTotal = g.StaleAfter, g.OpenMore, len(g.Open)
	for i, e := range g.Open {
		if i == statusOpenShown {
			break
		}
		d.Open = append(d.Open, openRow{Entry: e, Age: g.Age(e).Round(time.Second), Stale: g.Stale(e)})
	}
	if d.Queue, err = h.cfg.API.DeadLetters.Depth(ctx); err != nil {
		h.fail(w, r, err)
		return
	}
	atLeast := ""
	if d.OpenMore {
		atLeast = "≥ "
	}
	d.Gauges = []gauge{
		{Name: "Stale pending entries", Metric: "StalePending", Value: atLeast + strconv.Itoa(g.StalePending), Bad: g.StalePending > 0,
			Help: "sends open longer than " + g.StaleAfter.String() + ": an owner that died mid-call; the sweeper settles them"},
		{Name: "Stale unknown entries", Metric: "StaleUnknown", Value: atLeast + strconv.Itoa(g.StaleUnknown), Bad: g.StaleUnknown > 0,
			Help: "unsure sends whose confirm workflow has not settled them in " + g.StaleAfter.String()},
		{Name: "Oldest open entry", Metric: "OldestOpenAgeSeconds", Value: ageText(g.OldestOpenAge), Bad: g.OldestOpenAge > g.StaleAfter,
			Help: "the age of the oldest pending or unknown entry"},
		{Name: "Held targets", Metric: "HeldTargets", Value: strconv.Itoa(g.HeldTargets), Bad: g.HeldTargets > 0,
			Help: "posts waiting for a person's decision (the inbox)"},
		{Name: "Approvals overdue", Metric: publishing.MetricApprovalOverdue, Value: strconv.Itoa(g.ApprovalOverdue), Bad: g.ApprovalOverdue > 0,
			Help: "posts still waiting for approval after their time: not sent late on their own (the inbox approves them for a new time)"},
		{Name: "Failed targets", Metric: "FailedTargets", Value: strconv.Itoa(g.FailedTargets), Bad: g.FailedTargets > 0,
			Help: "posts that will not go out without a person"},
		{Name: "Waiting targets", Metric: "WaitingTargets", Value: strconv.Itoa(g.WaitingTargets),
			Help: "posts waiting for their next try (a throttled platform, a pacing budget)"},
		{Name: "Dead letters", Metric: "DeadLetters", Value: strconv.Itoa(d.Queue.DeadLetters), Bad: d.Queue.DeadLetters > 0,
			Help: "publish jobs the queue gave up on (the inbox redrives them)"},
		{Name: "Queue backlog", Metric: "", Value: strconv.Itoa(d.Queue.Visible), Bad: d.Queue.Visible > 0,
			Help: "jobs waiting to be received: more than none means the publishers are behind"},
	}
	if h.cfg.Events != nil {
		d.EventsShown = true
		if d.Events, err = h.cfg.Events.RecentEvents(ctx, statusEvents); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	h.render(w, r, http.StatusOK, "status", d)
}

// ageText is a duration to the second, "—" for none.
func ageText(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	return d.Round(time.Second).String()
}
