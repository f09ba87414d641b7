package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"oncepost/shared/apitoken"
	"oncepost/shared/publishing"
)

// routes is the console's routes table: every page and action, the
// scope it needs ("" for any signed-in session) and its handler.
func (h *Handler) routes() {
	h.mux.Handle("GET /static/", h.static)
	h.mux.HandleFunc("GET /signin", h.showSignIn)
	h.mux.Handle("POST /signin", limitForm(http.HandlerFunc(h.signIn)))
	h.mux.HandleFunc("GET /signin/once/{secret}", h.showSignInOnce)
	h.mux.Handle("POST /signin/once/{secret}", limitForm(http.HandlerFunc(h.signInOnce)))
	h.mux.Handle("POST /signout", limitForm(http.HandlerFunc(h.signOut)))
	h.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/calendar", http.StatusSeeOther)
	})

	h.page("GET /calendar", apitoken.ScopeRead, h.showCalendar)
	h.page("GET /calendar/live", apitoken.ScopeRead, h.calendarLive)
	h.page("GET /posts/{id}", apitoken.ScopeRead, h.showPost)
	h.page("POST /posts/{id}/reschedule", apitoken.ScopePosts, h.reschedulePost)
	h.page("POST /posts/{id}/cancel", apitoken.ScopePosts, h.cancelPost)
	h.page("GET /compose", apitoken.ScopePosts, h.showCompose)
	h.mux.Handle("POST /compose", limitUpload(h.maxComposeBytes(), h.pageHandler(apitoken.ScopePosts, h.compose)))
	h.page("GET /compose/media/{ref}", apitoken.ScopePosts, h.showMedia)
	h.page("GET /inbox", apitoken.ScopeRead, h.showInbox)
	h.page("GET /accounts", apitoken.ScopeRead, h.showAccounts)
	h.page("GET /accounts/{id}/queue", apitoken.ScopeRead, h.showQueue)
	h.page("POST /accounts/{id}/queue/top", apitoken.ScopePosts, h.queueTop)
	h.page("POST /accounts/{id}/queue/shuffle", apitoken.ScopePosts, h.queueShuffle)
	h.page("GET /status", apitoken.ScopeRead, h.showStatus)
	h.page("GET /recurring", apitoken.ScopeRead, h.showRecurring)
	h.page("POST /recurring/{id}/stop", apitoken.ScopePosts, h.stopRule)
	h.page("POST /recurring", apitoken.ScopePosts, h.createRule)

	h.page("POST /inbox/held/{key}/approve", apitoken.ScopeDecide, h.decideHeld(publishing.DecisionRelease))
	h.page("POST /inbox/held/{key}/confirm", apitoken.ScopeDecide, h.decideHeld(publishing.DecisionConfirm))
	h.page("POST /inbox/held/{key}/reject", apitoken.ScopeDecide, h.decideHeld(publishing.DecisionReject))
	h.page("POST /inbox/approvals/{id}/approve", apitoken.ScopeDecide, h.approvePost)
	h.page("POST /inbox/approvals/{id}/reject", apitoken.ScopeDecide, h.rejectPost)
	h.page("POST /inbox/dead-letters/{id}/redrive", apitoken.ScopeOperate, h.redriveDeadLetter)
	h.page("POST /inbox/dead-letters/{id}/drop", apitoken.ScopeOperate, h.dropDeadLetter)
}

// pageFunc is a page or action handler, given the signed-in session.
type pageFunc func(w http.ResponseWriter, r *http.Request, s *session)

// page registers a page or action that needs a signed-in session with
// the scope. Without a session a GET goes to the sign-in page (and comes
// back after it), anything else is 401. A POST must carry the session's
// CSRF token in its form (after CrossOriginProtection let it through).
// Without the scope it is 403, and nothing is done.
func (h *Handler) page(pattern string, scope apitoken.Scope, fn pageFunc) {
	h.mux.Handle(pattern, limitForm(h.pageHandler(scope, fn)))
}

// maxFormBytes bounds the body of every console form but the composer's
// (which carries an image and has its own limit): its fields are a few
// short strings.
const maxFormBytes = 64 << 10

// limitForm bounds a request's body to maxFormBytes and refuses a
// multipart one (whose file parts Go would spool to disk) before
// anything reads it.
func limitForm(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if safeMethod(r.Method) {
			next.ServeHTTP(w, r)
			return
		}
		if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
			http.Error(w, "this form takes application/x-www-form-urlencoded, not multipart", http.StatusUnsupportedMediaType)
			return
		}
		if r.ContentLength > maxFormBytes {
			http.Error(w, fmt.Sprintf("the form is %d bytes, over %d", r.ContentLength, maxFormBytes), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, fmt.Sprintf("the form is over %d bytes", maxFormBytes), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "the form cannot be read: "+err.Error(), http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// pageHandler is page's handler, for a route that wraps it (a body limit).
func (h *Handler) pageHandler(scope apitoken.Scope, fn pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := h.session(r)
		if err != nil && !errors.Is(err, errSignedOut) {
			h.sessionUnavailable(w, r, err)
			return
		}
		if err != nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		if !safeMethod(r.Method) {
			got := r.Header.Get(csrfHeader)
			if got == "" {
				got = r.PostFormValue(csrfField)
			}
			if !s.checkCSRF(got) {
				http.Error(w, "the form lacks this session's CSRF token: reload the page and try again", http.StatusForbidden)
				return
			}
		}
		if scope != "" && !s.principal.Allows(scope) {
			v := h.newView(s, "", "Not allowed")
			h.render(w, r, http.StatusForbidden, "forbidden", struct {
				*view
				Scope apitoken.Scope
			}{v, scope})
			return
		}
		fn(w, r, s)
	})
}

// back redirects a POST to the page it came from (POST-redirect-GET),
// with a flash message.
func (h *Handler) back(w http.ResponseWriter, r *http.Request, s *session, to, msg string, isErr bool) {
	if msg != "" {
		s.setFlash(msg, isErr)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}
