package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"oncepost/shared/apitoken"
	"oncepost/shared/httpapi"
)

// view is what every page's template gets (page data embeds it): who is
// signed in, the CSRF token for its forms, the viewer's zone, the flash
// message, the page for the navigation.
type view struct {
	Title     string
	Page      string
	Principal httpapi.Principal
	CSRF      string
	Zone      *time.Location
	Now       time.Time
	Flash     string
	FlashErr  bool
	// SignedIn is false on the sign-in page.
	SignedIn bool
}

// newView is the base of a page for the session.
func (h *Handler) newView(s *session, page, title string) *view {
	v := &view{Title: title, Page: page, Now: h.cfg.Now(), Zone: time.UTC}
	if s != nil {
		v.SignedIn, v.Principal, v.CSRF = true, s.principal, s.csrf
		v.Zone = s.location()
		v.Flash, v.FlashErr = s.takeFlash()
	}
	v.Now = v.Now.In(v.Zone)
	return v
}

// Can reports whether the signed-in principal has the scope ("read",
// "posts", "decide", "operate").
func (v *view) Can(scope string) bool { return v.Principal.Allows(apitoken.Scope(scope)) }

// Time is t in the viewer's zone, e.g. "Wed 2 Dec 2026 15:04".
func (v *view) Time(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.In(v.Zone).Format("Mon 2 Jan 2006 15:04")
}

// ISO is t as RFC 3339 in UTC, for datetime attributes and the API.
func (v *view) ISO(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Ago is how long before now t was, e.g. "3m12s".
func (v *view) Ago(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return v.Now.Sub(t).Round(time.Second).String()
}

// ZoneName is the viewer's zone, e.g. "Europe/Berlin".
func (v *view) ZoneName() string { return v.Zone.String() }

// parseViews parses every page template (templates/*.html but the
// _partials) with the partials (_layout.html and the rest): one template
// set per page, checked at start-up.
func parseViews() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	var partials, pages []string
	for _, n := range names {
		if strings.HasPrefix(path.Base(n), "_") {
			partials = append(partials, n)
		} else {
			pages = append(pages, n)
		}
	}
	funcs := template.FuncMap{
		"join": strings.Join,
		"inc":  func(i int) int { return i + 1 },
	}
	views := map[string]*template.Template{}
	for _, p := range pages {
		t, err := template.New(path.Base(p)).Funcs(funcs).ParseFS(templateFS, append(append([]string{}, partials...), p)...)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", p, err)
		}
		views[strings.TrimSuffix(path.Base(p), ".html")] = t
	}
	return views, nil
}

// render writes the page: the named view's "layout" with data. A
// template that fails renders nothing of itself (it is written to a
// buffer first) and answers 500.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	t, ok := h.views[name]
	if !ok {
		h.fail(w, r, fmt.Errorf("no view %q", name))
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", data); err != nil {
		h.fail(w, r, fmt.Errorf("render %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// fail answers 500 and logs the error (never shown: it may hold what
// the viewer should not see).
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	h.log.ErrorContext(r.Context(), "console: page failed", "path", r.URL.Path, "err", err)
	http.Error(w, "the console failed to answer; see the server's log", http.StatusInternalServerError)
}
