package httpapi

import (
	"net/http"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// statusView is GET /v1/status (`oncepost status`): targets by status,
// the open ledger entries with their age, and the publish queue.
type statusView struct {
	At      time.Time                 `json:"at"`
	Targets map[post.TargetStatus]int `json:"targets"`
	Open    []openEntry               `json:"open"`
	Queue   publishing.QueueDepth     `json:"queue"`
	// ApprovalOverdue counts the targets still waiting for approval at or
	// after their slot, up to statusApprovalScan, as the sweeper's
	// ApprovalOverdue gauge counts them.
	ApprovalOverdue int `json:"approval_overdue"`
}

// openEntry is a pending or unknown ledger entry; stale when open longer
// than publishing.StaleAfter (the sweeper alarms on those).
type openEntry struct {
	Key        ledger.Key    `json:"key"`
	Action     ledger.Action `json:"action"`
	Account    string        `json:"account"`
	Subject    string        `json:"subject"`
	State      ledger.State  `json:"state"`
	Attempt    int           `json:"attempt"`
	OpenSince  time.Time     `json:"open_since"`
	AgeSeconds float64       `json:"age_seconds"`
	Stale      bool          `json:"stale"`
	Reason     string        `json:"reason,omitempty"`
}

// statusApprovalScan bounds the overdue approvals GET /v1/status counts
// (the sweeper's default limit: the same count the alarm sees).
const statusApprovalScan = 1000

// getStatus is GET /v1/status.
func (s *Server) getStatus(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	now := s.cfg.Now().UTC()
	counts, err := s.cfg.Targets.CountTargets(r.Context())
	if err != nil {
		return s.internal(r, err)
	}
	// Every open entry, stale as the sweeper counts it (GaugeSources).
	g, err := publishing.GaugeSources{Ledger: s.cfg.Held}.ReadOpen(r.Context(), now)
	if err != nil {
		return s.internal(r, err)
	}
	depth, err := s.cfg.DeadLetters.Depth(r.Context())
	if err != nil {
		return s.internal(r, err)
	}
	ga := publishing.Gauges{At: now}
	if err := (publishing.GaugeSources{Targets: s.cfg.Targets, Limit: statusApprovalScan}).ReadApprovals(r.Context(), &ga); err != nil {
		return s.internal(r, err)
	}
	out := statusView{At: now, Targets: map[post.TargetStatus]int{}, Open: []openEntry{}, Queue: depth, ApprovalOverdue: ga.ApprovalOverdue}
	for _, st := range targetStatuses {
		out.Targets[st] = counts[st]
	}
	for _, e := range g.Open {
		out.Open = append(out.Open, openEntry{Key: e.Key, Action: e.Action, Account: e.Account, Subject: e.Subject, State: e.State,
			Attempt: e.Attempt, OpenSince: e.OpenSince.UTC(), AgeSeconds: g.Age(e).Seconds(), Stale: g.Stale(e), Reason: e.Reason})
	}
	return s.writeJSON(w, r, http.StatusOK, out)
}
