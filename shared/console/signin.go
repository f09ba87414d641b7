package console

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"oncepost/shared/apitoken"
	"oncepost/shared/httpapi"
	"oncepost/shared/post"
)

type signInData struct {
	*view
	Next    string
	Error   string
	ByToken bool
}

// showSignIn is GET /signin.
func (h *Handler) showSignIn(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "signin", signInData{view: h.newView(nil, "signin", "Sign in"),
		Next: safeNext(r.URL.Query().Get("next")), ByToken: h.cfg.Tokens != nil})
}

// signIn is POST /signin: an API token (field token) and the browser's
// time zone (field tz, filled by the page's script).
func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.PostFormValue("next"))
	refuse := func(status int, msg string) {
		h.render(w, r, status, "signin", signInData{view: h.newView(nil, "signin", "Sign in"), Next: next, Error: msg, ByToken: h.cfg.Tokens != nil})
	}
	if h.cfg.Tokens == nil {
		refuse(http.StatusBadRequest, "this console signs in with the link `oncepost console` printed")
		return
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	if !apitoken.WellFormed(token) {
		refuse(http.StatusUnauthorized, "token: not an oncepost API token (op_ and 52 letters and digits); `oncepost token add` makes one")
		return
	}
	hash := apitoken.Hash(token)
	t, err := h.cfg.Tokens.TokenByHash(r.Context(), hash)
	switch {
	case errors.Is(err, post.ErrNotFound):
		refuse(http.StatusUnauthorized, "token: unknown (oncepost token list)")
		return
	case err != nil:
		h.fail(w, r, err)
		return
	case t.Revoked():
		refuse(http.StatusUnauthorized, "token: revoked at "+t.RevokedAt.UTC().Format(time.RFC3339))
		return
	}
	s := h.sessions.add(httpapi.Principal{ID: t.ID, Name: t.Name, Scopes: t.Scopes}, hash, zoneOf(r.PostFormValue("tz")))
	h.setSessionCookie(w, s)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// signInOnce is GET /signin/once/{secret}: the one-time link signs in as
// Config.Operator, once.
func (h *Handler) signInOnce(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Operator.ID == "" || !h.once.take(r.PathValue("secret")) {
		h.render(w, r, http.StatusUnauthorized, "signin", signInData{view: h.newView(nil, "signin", "Sign in"), Next: "/calendar",
			Error: "this sign-in link is used, expired or unknown; run `oncepost console` again for a new one", ByToken: h.cfg.Tokens != nil})
		return
	}
	s := h.sessions.add(h.cfg.Operator, "", zoneOf(r.URL.Query().Get("tz")))
	h.setSessionCookie(w, s)
	http.Redirect(w, r, "/calendar", http.StatusSeeOther)
}

// signOut is POST /signout.
func (h *Handler) signOut(w http.ResponseWriter, r *http.Request) {
	if s, ok := h.session(r); ok {
		if !s.checkCSRF(r.PostFormValue(csrfField)) {
			http.Error(w, "the form lacks this session's CSRF token", http.StatusForbidden)
			return
		}
		h.sessions.remove(s.id)
	}
	h.clearSessionCookie(w)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// safeNext keeps a redirect after sign-in on this console: a path, never
// another site ("//host" or "/\host" included).
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.HasPrefix(next, "/signin") {
		return "/calendar"
	}
	return next
}

// zoneOf is the IANA zone name's location, or UTC for a name that is
// not one.
func zoneOf(name string) *time.Location {
	if name == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}
