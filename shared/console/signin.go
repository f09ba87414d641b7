package console

import (
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode"

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
	h.startSession(w, r, httpapi.Principal{ID: t.ID, Name: t.Name, Scopes: t.Scopes}, hash, r.PostFormValue("tz"))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// showSignInOnce is GET /signin/once/{secret}: a page with one button
// that signs in. The secret is spent by the POST, never by a GET, so a
// link previewer or a prefetch cannot use it up; the form carries the
// browser's time zone, as the token's sign-in does.
func (h *Handler) showSignInOnce(w http.ResponseWriter, r *http.Request) {
	secret := r.PathValue("secret")
	if h.cfg.Operator.ID == "" || !h.once.valid(secret) {
		h.onceRefused(w, r)
		return
	}
	h.render(w, r, http.StatusOK, "signin_once", signInData{view: h.newView(nil, "signin", "Sign in"), Next: "/signin/once/" + secret})
}

// signInOnce is POST /signin/once/{secret}: the one-time link signs in
// as Config.Operator, once.
func (h *Handler) signInOnce(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Operator.ID == "" || !h.once.take(r.PathValue("secret")) {
		h.onceRefused(w, r)
		return
	}
	h.startSession(w, r, h.cfg.Operator, "", r.PostFormValue("tz"))
	http.Redirect(w, r, "/calendar", http.StatusSeeOther)
}

func (h *Handler) onceRefused(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusUnauthorized, "signin", signInData{view: h.newView(nil, "signin", "Sign in"), Next: "/calendar",
		Error: "this sign-in link is used, expired or unknown; run `oncepost console` again for a new one", ByToken: h.cfg.Tokens != nil})
}

// startSession signs the browser in: the session it had before, if any,
// ends (a new sign-in never keeps an old session id alive), and a new
// one, with a new id, is set in its cookie.
func (h *Handler) startSession(w http.ResponseWriter, r *http.Request, p httpapi.Principal, tokenHash, zone string) {
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		h.sessions.remove(c.Value)
	}
	s := h.sessions.add(p, tokenHash, zoneOf(zone))
	h.setSessionCookie(w, s)
}

// signOut is POST /signout.
func (h *Handler) signOut(w http.ResponseWriter, r *http.Request) {
	if s, err := h.session(r); err == nil {
		if !s.checkCSRF(r.PostFormValue(csrfField)) {
			http.Error(w, "the form lacks this session's CSRF token", http.StatusForbidden)
			return
		}
		h.sessions.remove(s.id)
	}
	h.clearSessionCookie(w)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// safeNext keeps a redirect after sign-in on this console: a path of
// its own, never another site. The path is parsed and cleaned as a
// browser would read it ("/./\\host" is cleaned to "/\\host", which a
// browser takes for "//host"; a tab or a newline is dropped by the
// browser), so anything with a scheme, a host, a backslash or a control
// character, or a cleaned path that starts with "//", is refused.
func safeNext(next string) string {
	const home = "/calendar"
	if next == "" || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\") || strings.ContainsFunc(next, unicode.IsControl) {
		return home
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") {
		return home
	}
	clean := path.Clean(u.Path)
	if strings.HasPrefix(clean, "//") || clean == "/signin" || strings.HasPrefix(clean, "/signin/") {
		return home
	}
	u.Path, u.RawPath = clean, ""
	return u.RequestURI()
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
