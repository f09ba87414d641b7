package publishing

import (
	"context"
	"fmt"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
)

// OpenLister lists the open ledger entries (Ledger.Open).
type OpenLister interface {
	Open(ctx context.Context, before time.Time, limit int) ([]ledger.Entry, error)
}

// TargetCounter counts targets by status (Posts.CountTargets).
type TargetCounter interface {
	CountTargets(ctx context.Context, statuses ...post.TargetStatus) (map[post.TargetStatus]int, error)
}

// ApprovalLister lists the targets waiting for approval
// (Approvals.AwaitingApproval).
type ApprovalLister interface {
	AwaitingApproval(ctx context.Context, before time.Time, limit int) ([]TargetRef, error)
}

// GaugeSources are the ports the alarms' gauges are read from, and how
// they are read. The sweeper emits the gauges it reads through them (its
// metrics), and the status surfaces (the console's status page, `oncepost
// status`, GET /v1/status) read them the same way, so that what a person
// sees is what the alarms see.
type GaugeSources struct {
	Ledger OpenLister
	// Targets is needed by ReadTargets only.
	Targets TargetCounter
	// Approvals lists the targets waiting for approval, for ReadTargets;
	// nil uses Targets when it has them (both stores do).
	Approvals ApprovalLister
	// StaleAfter is how long an entry may stay open before it is counted
	// stale; zero means the package's StaleAfter. It must be the
	// sweeper's (a drill scales it down).
	StaleAfter time.Duration
	// Limit bounds the open entries read; ≤ 0 reads them all.
	Limit int
}

// Gauges are the values the alarms watch on the ledger and the targets,
// as of At.
type Gauges struct {
	At         time.Time
	StaleAfter time.Duration
	// Open are the pending and unknown entries open at or before At,
	// oldest first, at most GaugeSources.Limit of them; OpenMore says more
	// are open (the counts are then at least what they say).
	Open     []ledger.Entry
	OpenMore bool
	// StalePending and StaleUnknown count the open entries open for more
	// than StaleAfter (the StalePending and StaleUnknown metrics);
	// OldestOpenAge is the age of the oldest (OldestOpenAgeSeconds).
	StalePending, StaleUnknown int
	OldestOpenAge              time.Duration
	// HeldTargets, FailedTargets and WaitingTargets count the targets in
	// those statuses (ReadTargets).
	HeldTargets, FailedTargets, WaitingTargets int
	// ApprovalOverdue counts the targets still waiting for approval at or
	// after their slot (ReadTargets): each missed its time and is sent
	// only once someone approves it with a new one (the ApprovalOverdue
	// metric and alarm). At most GaugeSources.Limit are counted.
	ApprovalOverdue int
}

// Age is how long e has been open at g.At.
func (g Gauges) Age(e ledger.Entry) time.Duration { return g.At.Sub(e.OpenSince) }

// Stale reports whether e has been open for more than g.StaleAfter: what
// the sweeper counts, repairs and alarms on.
func (g Gauges) Stale(e ledger.Entry) bool { return g.Age(e) > g.StaleAfter }

// ReadOpen reads the open entries as of now and the gauges on them
// (StalePending, StaleUnknown, OldestOpenAge): one Open query.
func (s GaugeSources) ReadOpen(ctx context.Context, now time.Time) (Gauges, error) {
	g := Gauges{At: now, StaleAfter: orDefault(s.StaleAfter, StaleAfter)}
	limit := 0
	if s.Limit > 0 {
		limit = s.Limit + 1 // one more tells whether more are open
	}
	// Entries opened at now included: Open lists those open before its time.
	open, err := s.Ledger.Open(ctx, now.Add(time.Nanosecond), limit)
	if err != nil {
		return g, fmt.Errorf("open ledger entries: %w", err)
	}
	if s.Limit > 0 && len(open) > s.Limit {
		open, g.OpenMore = open[:s.Limit], true
	}
	g.Open = open
	for _, e := range open {
		g.OldestOpenAge = max(g.OldestOpenAge, g.Age(e))
		if !g.Stale(e) {
			continue
		}
		if e.State == ledger.Pending {
			g.StalePending++
		} else {
			g.StaleUnknown++
		}
	}
	return g, nil
}

// ReadTargets adds to g the counts of held, failed and waiting targets
// (one CountTargets query of those statuses) and of the approvals
// overdue (ReadApprovals).
func (s GaugeSources) ReadTargets(ctx context.Context, g *Gauges) error {
	counts, err := s.Targets.CountTargets(ctx, post.Held, post.Failed, post.Waiting)
	if err != nil {
		return fmt.Errorf("count targets: %w", err)
	}
	g.SetTargets(counts)
	return s.ReadApprovals(ctx, g)
}

// approvals is the lister of targets waiting for approval, if any.
func (s GaugeSources) approvals() (ApprovalLister, bool) {
	if s.Approvals != nil {
		return s.Approvals, true
	}
	l, ok := s.Targets.(ApprovalLister)
	return l, ok
}

// ReadApprovals sets g.ApprovalOverdue: the targets waiting for approval
// whose slot is at or before g.At (one AwaitingApproval query, up to
// Limit). Without a lister it leaves it 0.
func (s GaugeSources) ReadApprovals(ctx context.Context, g *Gauges) error {
	l, ok := s.approvals()
	if !ok {
		return nil
	}
	refs, err := l.AwaitingApproval(ctx, g.At.Add(time.Nanosecond), s.Limit)
	if err != nil {
		return fmt.Errorf("approvals overdue: %w", err)
	}
	g.ApprovalOverdue = len(refs)
	return nil
}

// SetTargets sets the target gauges from counts by status (a caller
// that counts every status, for a table, has them already).
func (g *Gauges) SetTargets(counts map[post.TargetStatus]int) {
	g.HeldTargets, g.FailedTargets, g.WaitingTargets = counts[post.Held], counts[post.Failed], counts[post.Waiting]
}

// Read reads every gauge as of now: ReadOpen, then ReadTargets.
func (s GaugeSources) Read(ctx context.Context, now time.Time) (Gauges, error) {
	g, err := s.ReadOpen(ctx, now)
	if err != nil {
		return g, err
	}
	return g, s.ReadTargets(ctx, &g)
}
