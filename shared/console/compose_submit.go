package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// compose is POST /compose.
func (h *Handler) compose(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	v := h.newView(s, "compose", "Compose")
	form, errs := h.readComposeForm(ctx, r)
	dr, derrs := form.draft(v.Zone)
	for k, e := range derrs {
		errs[k] = append(errs[k], e...)
	}
	if len(errs) == 0 {
		h.fitMedia(ctx, &form, &dr)
	}
	if r.PostFormValue("action") == "schedule" && len(errs) == 0 {
		h.schedule(w, r, s, v, form, dr)
		return
	}
	status := http.StatusOK
	if len(errs) > 0 {
		status = http.StatusUnprocessableEntity
	}
	h.renderCompose(w, r, v, form, dr, errs, nil, status)
}

// schedule schedules the draft under the form's key and redirects to the
// calendar's week of its time; a refusal renders the form with each
// error at its field.
func (h *Handler) schedule(w http.ResponseWriter, r *http.Request, s *session, v *view, form composeForm, dr post.Draft) {
	// The fingerprint is the draft as sent: the same form sent twice is
	// the first request's retry; an edited one under the same key (after
	// a refusal nothing was stored, so none) would be refused.
	raw, err := json.Marshal(dr)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	sum := sha256.Sum256(append([]byte("POST /compose\n"), raw...))
	req := &publishing.KeyedRequest{Scope: s.principal.ID, Key: "console:" + form.Key, Fingerprint: hex.EncodeToString(sum[:]),
		Encode: func(p post.Post) (int, []byte, error) {
			b, err := json.Marshal(p)
			return http.StatusCreated, b, err
		}}
	res, err := h.cfg.API.Desk.Schedule(r.Context(), dr, nil, req)
	switch {
	case errors.Is(err, publishing.ErrKeyReused):
		h.renderCompose(w, r, v, form, dr, nil, []string{"this form was already used for another post: reload the composer for a new one"}, http.StatusConflict)
		return
	case errors.Is(err, publishing.ErrKeyInFlight):
		h.renderCompose(w, r, v, form, dr, nil, []string{"this form is being scheduled already; look at the calendar in a moment"}, http.StatusConflict)
		return
	case err != nil && len(publishing.FieldErrors(err)) == 0:
		h.fail(w, r, err)
		return
	case err != nil:
		errs := map[string][]string{}
		var other []string
		for _, fe := range publishing.FieldErrors(err) {
			other = addFieldError(errs, other, nil, fe)
		}
		h.renderCompose(w, r, v, form, dr, errs, other, http.StatusUnprocessableEntity)
		return
	}
	p := res.Post
	var first time.Time
	var names []string
	for _, t := range p.Targets {
		if first.IsZero() || t.Slot.Before(first) {
			first = t.Slot
		}
		names = append(names, string(t.Account))
	}
	msg := fmt.Sprintf("Scheduled post %s for %s on %s.", p.ID, v.Time(first), strings.Join(names, ", "))
	if res.Replayed {
		msg = fmt.Sprintf("Post %s was scheduled already (this form was sent before): %s on %s.", p.ID, v.Time(first), strings.Join(names, ", "))
	}
	h.back(w, r, s, "/calendar?view=week&at="+url.QueryEscape(first.In(v.Zone).Format("2006-01-02")), msg, false)
}

// renderCompose checks the draft (Desk.Check) and renders the form with
// the check, the previews and the errors: those given (a refusal) or, if
// none, the check's.
func (h *Handler) renderCompose(w http.ResponseWriter, r *http.Request, v *view, form composeForm, dr post.Draft, errs map[string][]string, other []string, status int) {
	data, err := h.composeData(r.Context(), v, form)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if len(dr.Targets) > 0 || strings.TrimSpace(dr.Body) != "" {
		c, err := h.check(r.Context(), dr)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		data.Check = &c
		data.Previews = previews(c, dr)
		// The check's errors join the refusal's (the same, from
		// Schedule), each said once; an input the form itself refused
		// (no account, no time) keeps the form's words.
		if errs == nil {
			errs = map[string][]string{}
		}
		own := map[string]bool{}
		for id := range errs {
			own[id] = true
		}
		for _, fe := range c.Errors {
			other = addFieldError(errs, other, own, fe)
		}
	}
	if errs == nil {
		errs = map[string][]string{}
	}
	data.Errs, data.Other = errs, other
	h.render(w, r, status, "compose", data)
}

// check is the desk's check (the API's Desk is publishing.Desk's).
func (h *Handler) check(ctx context.Context, dr post.Draft) (publishing.DraftCheck, error) {
	return h.cfg.API.Desk.Check(ctx, dr, nil)
}

// previews are the check's targets, each with its platform's version of
// every image.
func previews(c publishing.DraftCheck, dr post.Draft) []composePreview {
	var out []composePreview
	for _, t := range c.Targets {
		p := composePreview{Target: t}
		for _, m := range c.Media {
			alt := ""
			if m.Index < len(dr.Media) {
				alt = dr.Media[m.Index].Alt
			}
			for _, v := range m.Versions {
				if v.Platform == t.Platform {
					p.Media = append(p.Media, previewMedia{MediaVersion: v, Alt: alt})
				}
			}
		}
		out = append(out, p)
	}
	return out
}
