package httpapi

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/recurring"
)

// Recurring is the recurring rules' use cases (publishing.Recurring), the
// same the CLI calls.
type Recurring interface {
	Create(ctx context.Context, d recurring.Draft, opts publishing.RuleOptions) (publishing.RuleView, error)
	List(ctx context.Context) ([]publishing.RuleView, error)
	Show(ctx context.Context, id recurring.ID) (publishing.RuleView, error)
	Edit(ctx context.Context, id recurring.ID, patch recurring.Patch, sizes map[string]int) (publishing.RuleView, error)
	Stop(ctx context.Context, id recurring.ID) (publishing.RuleView, error)
}

var _ Recurring = (*publishing.Recurring)(nil)

// ruleAnswer is a rule as the API answers it: what the operator wrote,
// its state, and its next occurrences (the materializer's bookkeeping
// left out).
type ruleAnswer struct {
	ID        recurring.ID                `json:"id"`
	Revision  int                         `json:"revision"`
	Summary   string                      `json:"summary"`
	Body      string                      `json:"body"`
	Variants  []string                    `json:"variants,omitempty"`
	Texts     map[string]string           `json:"texts,omitempty"`
	Media     []post.Media                `json:"media,omitempty"`
	Accounts  []post.AccountID            `json:"accounts"`
	EveryDays int                         `json:"every_days,omitempty"`
	At        string                      `json:"at,omitempty"`
	Cron      string                      `json:"cron,omitempty"`
	TimeZone  string                      `json:"time_zone"`
	Start     time.Time                   `json:"start"`
	Until     time.Time                   `json:"until,omitzero"`
	Count     int                         `json:"count,omitempty"`
	State     string                      `json:"state"`
	StoppedAt time.Time                   `json:"stopped_at,omitzero"`
	CreatedAt time.Time                   `json:"created_at"`
	UpdatedAt time.Time                   `json:"updated_at"`
	Problem   *recurring.Problem          `json:"problem,omitempty"`
	Missed    []recurring.Problem         `json:"missed,omitempty"`
	Next      []publishing.OccurrenceView `json:"next"`
	Recent    []publishing.OccurrenceView `json:"recent,omitempty"`
}

// The states of a rule.
const (
	ruleRunning = "running"
	ruleEnded   = "ended"
	ruleStopped = "stopped"
)

func answerRule(v publishing.RuleView) ruleAnswer {
	r := v.Rule
	a := ruleAnswer{ID: r.ID, Revision: r.Revision, Summary: v.Summary, Body: r.Body, Variants: r.Variants, Texts: r.Texts, Media: r.Media,
		Accounts: r.Accounts, EveryDays: r.Repeat.EveryDays, At: r.Repeat.At, Cron: r.Repeat.Cron, TimeZone: r.TimeZone, Start: r.Start,
		Until: r.Until, Count: r.Count, State: ruleRunning, StoppedAt: r.StoppedAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		Problem: r.Problem, Missed: r.Missed, Next: v.Next, Recent: v.Recent}
	if a.TimeZone == "" {
		a.TimeZone = "UTC"
	}
	switch {
	case !r.Active():
		a.State = ruleStopped
	case len(v.Next) == 0:
		a.State = ruleEnded
	}
	if a.Next == nil {
		a.Next = []publishing.OccurrenceView{}
	}
	return a
}

// recurringOff is the 501 of a runtime without recurring rules.
func recurringOff(r *http.Request) *Problem {
	return newProblem(r, http.StatusNotImplemented, typeBlank, "this runtime keeps no recurring rules")
}

// ruleError translates an error of a rule use case: refused fields 422,
// an unknown rule 404, a stopped rule or one changed meanwhile 409, a
// reused key 422, anything else 500.
func (s *Server) ruleError(r *http.Request, err error) *Problem {
	fields := fieldErrors(err)
	switch {
	case errors.Is(err, post.ErrNotFound):
		return newProblem(r, http.StatusNotFound, typeBlank, "no recurring rule "+strconv.Quote(r.PathValue("id"))+" (GET /v1/recurring lists them)")
	case errors.Is(err, publishing.ErrKeyReused):
		return newProblem(r, http.StatusUnprocessableEntity, typeKeyReused,
			"this Idempotency-Key was used with another request (method, path or body); use a new key for a new rule, or send the first request's body unchanged")
	case errors.Is(err, publishing.ErrRuleStopped), errors.Is(err, publishing.ErrRuleChanged):
		return newProblem(r, http.StatusConflict, typeConflict, err.Error())
	case len(fields) > 0:
		prob := newProblem(r, http.StatusUnprocessableEntity, typeValidation, fields[0].Field+": "+fields[0].Problem)
		prob.Errors = fields
		return prob
	}
	return s.internal(r, err)
}

// ruleMediaPaths refuses attachments named by a file path, which the API
// cannot read (as mediaPaths for posts).
func ruleMediaPaths(r *http.Request, media []post.DraftMedia) *Problem {
	return mediaPaths(r, post.Draft{Media: media})
}

// createRule is POST /v1/recurring: a rule (recurring.Draft), its first
// occurrences created at once. An Idempotency-Key is optional: with one,
// a rule without an id gets one derived from the key, and a retry with
// the same key and body is answered with the rule (Idempotent-Replayed);
// without one, a rule's own id makes a retry a 422 on "id".
func (s *Server) createRule(w http.ResponseWriter, r *http.Request, p Principal) *Problem {
	if s.cfg.Recurring == nil {
		return recurringOff(r)
	}
	var key *publishing.KeyedRequest
	if len(r.Header.Values("Idempotency-Key")) > 0 {
		k, prob := idempotencyKey(r)
		if prob != nil {
			return prob
		}
		key = &publishing.KeyedRequest{Scope: p.ID, Key: k}
	}
	if !isJSON(r) {
		return unsupportedType(r, "application/json")
	}
	raw, prob := readBody(r)
	if prob != nil {
		return prob
	}
	d, err := recurring.DecodeDraft(raw)
	if err != nil {
		return newProblem(r, http.StatusBadRequest, typeInvalidRequest, err.Error())
	}
	if prob := ruleMediaPaths(r, d.Media); prob != nil {
		return prob
	}
	if key != nil {
		key.Fingerprint = fingerprint(r, raw)
	}
	v, err := s.cfg.Recurring.Create(r.Context(), d, publishing.RuleOptions{Author: p.ID, Key: key})
	if err != nil {
		return s.ruleError(r, err)
	}
	w.Header().Set("Location", "/v1/recurring/"+url.PathEscape(string(v.Rule.ID)))
	if v.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	return s.writeJSON(w, r, http.StatusCreated, answerRule(v))
}

// listRules is GET /v1/recurring.
func (s *Server) listRules(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	if s.cfg.Recurring == nil {
		return recurringOff(r)
	}
	if len(r.URL.Query()) > 0 {
		for name := range r.URL.Query() {
			return badRequest(r, name, "is not a query parameter of this listing", "list every rule without parameters")
		}
	}
	views, err := s.cfg.Recurring.List(r.Context())
	if err != nil {
		return s.internal(r, err)
	}
	out := struct {
		Rules []ruleAnswer `json:"rules"`
	}{Rules: []ruleAnswer{}}
	for _, v := range views {
		out.Rules = append(out.Rules, answerRule(v))
	}
	return s.writeJSON(w, r, http.StatusOK, out)
}

// getRule is GET /v1/recurring/{id}: the rule, its next occurrences with
// their posts, and its latest ones.
func (s *Server) getRule(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	if s.cfg.Recurring == nil {
		return recurringOff(r)
	}
	v, err := s.cfg.Recurring.Show(r.Context(), recurring.ID(r.PathValue("id")))
	if err != nil {
		return s.ruleError(r, err)
	}
	return s.writeJSON(w, r, http.StatusOK, answerRule(v))
}

// editRule is PATCH /v1/recurring/{id}: the fields given change
// (recurring.Patch), making a new revision.
func (s *Server) editRule(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	if s.cfg.Recurring == nil {
		return recurringOff(r)
	}
	if !isJSON(r) && !isMergePatch(r) {
		return unsupportedType(r, "application/json or application/merge-patch+json")
	}
	raw, prob := readBody(r)
	if prob != nil {
		return prob
	}
	patch, err := recurring.DecodePatch(raw)
	if err != nil {
		return newProblem(r, http.StatusBadRequest, typeInvalidRequest, err.Error())
	}
	if patch.Media != nil {
		if prob := ruleMediaPaths(r, *patch.Media); prob != nil {
			return prob
		}
	}
	v, err := s.cfg.Recurring.Edit(r.Context(), recurring.ID(r.PathValue("id")), patch, nil)
	if err != nil {
		return s.ruleError(r, err)
	}
	return s.writeJSON(w, r, http.StatusOK, answerRule(v))
}

// stopRule is POST /v1/recurring/{id}/stop.
func (s *Server) stopRule(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	if s.cfg.Recurring == nil {
		return recurringOff(r)
	}
	v, err := s.cfg.Recurring.Stop(r.Context(), recurring.ID(r.PathValue("id")))
	if err != nil {
		return s.ruleError(r, err)
	}
	return s.writeJSON(w, r, http.StatusOK, answerRule(v))
}

// isMergePatch reports whether the body is declared a JSON merge patch.
func isMergePatch(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/merge-patch+json"
}
