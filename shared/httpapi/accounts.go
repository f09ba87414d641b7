package httpapi

import (
	"context"
	"net/http"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/catalog"
	"oncepost/shared/post"
)

// BudgetReader reads what is left of an account's posting budget (the
// state publishing.Pacer keeps), without spending any.
type BudgetReader interface {
	// Budget is, for each of rates, how many sends the account may make
	// at now.
	Budget(ctx context.Context, account post.AccountID, rates []platform.Rate, now time.Time) ([]int, error)
}

// rateView is a posting limit: count sends per per_seconds.
type rateView struct {
	Count      int   `json:"count"`
	PerSeconds int64 `json:"per_seconds"`
	// Left is how many sends the account may make now, when known.
	Left *int `json:"left,omitempty"`
}

// accountView is an account and its health.
type accountView struct {
	ID       post.AccountID  `json:"id"`
	Platform string          `json:"platform"`
	Handle   string          `json:"handle"`
	BaseURL  string          `json:"base_url"`
	Gate     post.GatePolicy `json:"gate"`
	// Status is ok or reconnect_needed (its reason in StatusReason).
	Status          string      `json:"status"`
	StatusReason    string      `json:"status_reason,omitempty"`
	ReconnectNeeded bool        `json:"reconnect_needed"`
	Limits          post.Limits `json:"limits"`
	// TimeZone is its IANA zone ("" for UTC), Slots its posting slot
	// rules, RequireApproval whether its posts wait for approval.
	TimeZone        string   `json:"time_zone"`
	Slots           []string `json:"slots"`
	RequireApproval bool     `json:"require_approval"`
	// Pacing are the platform's posting limits, each with the budget
	// left when the runtime can read it.
	Pacing []rateView `json:"pacing"`
}

// listAccounts is GET /v1/accounts: every account with its health.
func (s *Server) listAccounts(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	accounts, err := s.cfg.Accounts.ListAccounts(r.Context())
	if err != nil {
		return s.internal(r, err)
	}
	out := struct {
		Accounts []accountView `json:"accounts"`
	}{Accounts: []accountView{}}
	now := s.cfg.Now()
	for _, a := range accounts {
		v := accountView{ID: a.ID, Platform: a.Platform, Handle: a.Handle, BaseURL: a.BaseURL, Gate: a.Gate, Status: "ok",
			StatusReason: a.StatusReason, ReconnectNeeded: a.Status == post.AccountReconnectNeeded, Limits: a.Limits, Pacing: []rateView{},
			TimeZone: a.TimeZone, Slots: a.Slots, RequireApproval: a.RequireApproval}
		if v.Slots == nil {
			v.Slots = []string{}
		}
		if a.Status != post.AccountOK {
			v.Status = string(a.Status)
		}
		k, known := catalog.Lookup(a.Platform)
		if known {
			v.Limits = a.Limits.Or(k.Limits())
		}
		rates := k.Capabilities.PostingLimits
		var left []int
		if s.cfg.Budgets != nil && len(rates) > 0 {
			if left, err = s.cfg.Budgets.Budget(r.Context(), a.ID, rates, now); err != nil {
				return s.internal(r, err)
			}
		}
		for i, rt := range rates {
			rv := rateView{Count: rt.Count, PerSeconds: int64(rt.Per / time.Second)}
			if i < len(left) {
				rv.Left = &left[i]
			}
			v.Pacing = append(v.Pacing, rv)
		}
		out.Accounts = append(out.Accounts, v)
	}
	return s.writeJSON(w, r, http.StatusOK, out)
}
