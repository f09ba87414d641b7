package console

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/recurring"
)

// recurringData is the recurring rules page.
type recurringData struct {
	*view
	// Off: this runtime keeps no recurring rules (Config.API.Recurring).
	Off   bool
	Rules []publishing.RuleView
	// AllAccounts are the accounts the new-rule form offers; Form, Errs
	// (by input id) and Other are the form as sent and its refusals.
	AllAccounts []post.Account
	Form        ruleForm
	Errs        map[string]string
	Other       []string
}

// Err is the refusal at an input, "" for none.
func (d recurringData) Err(id string) string { return d.Errs[id] }

// Chosen reports whether the form chose the account.
func (d recurringData) Chosen(id post.AccountID) bool {
	return slices.Contains(d.Form.Accounts, string(id))
}

// showRecurring is GET /recurring: every rule, read only (the CLI and
// the API write them), with its repeat rule in words, its next
// occurrences and the post each one is, and what it could not create.
func (h *Handler) showRecurring(w http.ResponseWriter, r *http.Request, s *session) {
	h.renderRules(w, r, s, http.StatusOK, ruleForm{EveryDays: "1", At: "09:00"}, nil, nil)
}

// renderRules renders the rules page with the new-rule form as given.
func (h *Handler) renderRules(w http.ResponseWriter, r *http.Request, s *session, status int, f ruleForm, errs map[string]string, other []string) {
	d := recurringData{view: h.newView(s, "recurring", "Recurring"), Form: f, Errs: errs, Other: other}
	if h.cfg.API.Recurring == nil {
		d.Off = true
		h.render(w, r, status, "recurring", d)
		return
	}
	rules, err := h.cfg.API.Recurring.List(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d.Rules = rules
	if d.AllAccounts, err = h.cfg.API.Accounts.ListAccounts(r.Context()); err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, status, "recurring", d)
}

// stopRule is POST /recurring/{id}/stop: the rule stops (Recurring.Stop,
// as `oncepost recurring stop`), its occurrences still to come are
// cancelled; the outcome is the flash of the rules page.
func (h *Handler) stopRule(w http.ResponseWriter, r *http.Request, s *session) {
	if h.cfg.API.Recurring == nil {
		http.Error(w, "this runtime keeps no recurring rules", http.StatusNotImplemented)
		return
	}
	id := recurring.ID(r.PathValue("id"))
	v, err := h.cfg.API.Recurring.Stop(r.Context(), id)
	switch {
	case errors.Is(err, post.ErrNotFound):
		http.Error(w, "no such rule", http.StatusNotFound)
		return
	case err != nil:
		h.fail(w, r, err)
		return
	}
	h.back(w, r, s, "/recurring", "Rule "+string(v.Rule.ID)+" stopped: no occurrence will be created, and those to come are cancelled.", false)
}

// State says where a rule stands: running, ended (no occurrence left) or
// stopped.
func (recurringData) State(v publishing.RuleView) string {
	switch {
	case !v.Rule.Active():
		return "stopped"
	case len(v.Next) == 0:
		return "ended"
	}
	return "running"
}

// Accounts are a rule's accounts, comma-separated.
func (recurringData) Accounts(ids []post.AccountID) string {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = string(id)
	}
	return strings.Join(names, ", ")
}

// LastMissed is the latest of a rule's missed occurrences.
func (recurringData) LastMissed(m []recurring.Problem) recurring.Problem {
	if len(m) == 0 {
		return recurring.Problem{}
	}
	return m[len(m)-1]
}

// ruleForm is the new-rule form, as typed (shown again when refused).
type ruleForm struct {
	ID, Body, Variants string
	Accounts           []string
	EveryDays, At      string
	Cron, TimeZone     string
	Start, Until       string
	Count              string
}

// draft is the form as a recurring.Draft; a number that is not one is
// refused by its input.
func (f ruleForm) draft() (recurring.Draft, map[string]string) {
	errs := map[string]string{}
	d := recurring.Draft{ID: strings.TrimSpace(f.ID), Body: f.Body, Accounts: f.Accounts, At: strings.TrimSpace(f.At),
		Cron: strings.TrimSpace(f.Cron), TimeZone: strings.TrimSpace(f.TimeZone), Start: strings.TrimSpace(f.Start), Until: strings.TrimSpace(f.Until)}
	for _, v := range strings.Split(strings.ReplaceAll(f.Variants, "\r\n", "\n"), "\n---\n") {
		if strings.TrimSpace(v) != "" {
			d.Variants = append(d.Variants, strings.TrimSpace(v))
		}
	}
	number := func(id, v string) int {
		v = strings.TrimSpace(v)
		if v == "" {
			return 0
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs[id] = fmt.Sprintf("%q is not a whole number", v)
		}
		return n
	}
	d.EveryDays = number("rule-every", f.EveryDays)
	d.Count = number("rule-count", f.Count)
	return d, errs
}

// ruleInput is the form input a refused rule field belongs to.
func ruleInput(field string) string {
	switch {
	case field == "id":
		return "rule-id"
	case field == "body" || strings.HasPrefix(field, "texts"):
		return "rule-body"
	case strings.HasPrefix(field, "variants"):
		return "rule-variants"
	case strings.HasPrefix(field, "accounts"):
		return "rule-accounts"
	case field == "every_days":
		return "rule-every"
	case field == "at":
		return "rule-at"
	case field == "cron":
		return "rule-cron"
	case field == "time_zone":
		return "rule-zone"
	case field == "start":
		return "rule-start"
	case field == "until":
		return "rule-until"
	case field == "count":
		return "rule-count"
	}
	return ""
}

// createRule is POST /recurring: a new rule from the form (Recurring.Create,
// as `oncepost recurring add`); refused, the page again with each error at
// its input and nothing written.
func (h *Handler) createRule(w http.ResponseWriter, r *http.Request, s *session) {
	if h.cfg.API.Recurring == nil {
		http.Error(w, "this runtime keeps no recurring rules", http.StatusNotImplemented)
		return
	}
	f := ruleForm{ID: r.PostFormValue("id"), Body: r.PostFormValue("body"), Variants: r.PostFormValue("variants"), Accounts: r.PostForm["account"],
		EveryDays: r.PostFormValue("every_days"), At: r.PostFormValue("at"), Cron: r.PostFormValue("cron"), TimeZone: r.PostFormValue("time_zone"),
		Start: r.PostFormValue("start"), Until: r.PostFormValue("until"), Count: r.PostFormValue("count")}
	d, errs := f.draft()
	var other []string
	if len(errs) == 0 {
		v, err := h.cfg.API.Recurring.Create(r.Context(), d, publishing.RuleOptions{Author: s.principal.ID})
		if err == nil {
			h.back(w, r, s, "/recurring", "Rule "+string(v.Rule.ID)+" added; its occurrences are made 48 h ahead.", false)
			return
		}
		fields := publishing.FieldErrors(err)
		if len(fields) == 0 {
			h.fail(w, r, err)
			return
		}
		for _, fe := range fields {
			msg := fe.Problem
			if fe.Fix != "" {
				msg += "; " + fe.Fix
			}
			if id := ruleInput(fe.Field); id != "" && errs[id] == "" {
				errs[id] = fe.Field + ": " + msg
			} else {
				other = append(other, fe.Field+": "+msg)
			}
		}
	}
	h.renderRules(w, r, s, http.StatusUnprocessableEntity, f, errs, other)
}
