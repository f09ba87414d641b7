package console

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"oncepost/shared/httpapi"
	"oncepost/shared/post"
)

const (
	sessionCookie = "oncepost_session"
	csrfField     = "csrf"
	csrfHeader    = "X-CSRF-Token"
)

// session is a signed-in browser. It lives in this process's memory
// only: a restart signs everyone out, which a console on an operator's
// machine can afford, and no session secret is ever written anywhere.
type session struct {
	id        string
	csrf      string
	principal httpapi.Principal
	// tokenHash is the API token signed in with ("" for a one-time link):
	// checked again on every request, so a revoked token ends the
	// session at once.
	tokenHash string
	// zone is the viewer's time zone (the browser's, sent at sign-in).
	zone *time.Location
	// expires moves on with every request (SessionTTL after it); ends
	// does not (SessionMaxAge after the sign-in): an open tab does not
	// keep a session alive for ever.
	expires, ends time.Time

	mu sync.Mutex
	// flash is a message for the next page this session sees (after a
	// POST, the page it is redirected to); flashErr says it is an error.
	flash    string
	flashErr bool
}

// setFlash leaves a message for the next page.
func (s *session) setFlash(msg string, isErr bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flash, s.flashErr = msg, isErr
}

// takeFlash returns the message left for this page, once.
func (s *session) takeFlash() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msg, isErr := s.flash, s.flashErr
	s.flash, s.flashErr = "", false
	return msg, isErr
}

// location is the viewer's time zone (UTC when the browser sent none).
func (s *session) location() *time.Location {
	if s.zone == nil {
		return time.UTC
	}
	return s.zone
}

func (s *session) checkCSRF(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}

type sessions struct {
	mu          sync.Mutex
	m           map[string]*session
	ttl, maxAge time.Duration
	now         func() time.Time
}

func newSessions(ttl, maxAge time.Duration, now func() time.Time) *sessions {
	return &sessions{m: map[string]*session{}, ttl: ttl, maxAge: maxAge, now: now}
}

func (ss *sessions) add(p httpapi.Principal, tokenHash string, zone *time.Location) *session {
	now := ss.now()
	s := &session{id: randomID(), csrf: randomID(), principal: p, tokenHash: tokenHash, zone: zone, expires: now.Add(ss.ttl), ends: now.Add(ss.maxAge)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for id, old := range ss.m {
		if now.After(old.expires) || now.After(old.ends) {
			delete(ss.m, id)
		}
	}
	ss.m[s.id] = s
	return s
}

// get returns the live session with the id, its life extended.
func (ss *sessions) get(id string) (*session, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.m[id]
	if !ok {
		return nil, false
	}
	now := ss.now()
	if now.After(s.expires) || now.After(s.ends) {
		delete(ss.m, id)
		return nil, false
	}
	s.expires = now.Add(ss.ttl)
	if s.expires.After(s.ends) {
		s.expires = s.ends
	}
	return s, true
}

func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.m, id)
}

// errSignedOut: the request has no live session (no cookie, an unknown
// or expired one, or its token is revoked or gone).
var errSignedOut = errors.New("not signed in")

// session returns the request's live session, or errSignedOut. A session
// whose token was revoked (or is gone) is ended here; one whose token
// cannot be checked now (the store is busy, the request was cancelled)
// is kept, and the error says so: the request is answered 503.
func (h *Handler) session(r *http.Request) (*session, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil, errSignedOut
	}
	s, ok := h.sessions.get(c.Value)
	if !ok {
		return nil, errSignedOut
	}
	if s.tokenHash != "" {
		switch err := h.tokenAlive(r.Context(), s.tokenHash); {
		case errors.Is(err, errSignedOut):
			h.sessions.remove(s.id)
			return nil, errSignedOut
		case err != nil:
			return nil, err
		}
	}
	return s, nil
}

// tokenAlive checks the session's token: errSignedOut when it is
// revoked or gone, another error when it cannot be checked now.
func (h *Handler) tokenAlive(ctx context.Context, hash string) error {
	t, err := h.cfg.Tokens.TokenByHash(ctx, hash)
	switch {
	case errors.Is(err, post.ErrNotFound):
		return errSignedOut
	case err != nil:
		return fmt.Errorf("check the session's token: %w", err)
	case t.Revoked():
		return errSignedOut
	}
	return nil
}

// sessionUnavailable answers a request whose session could not be
// checked now.
func (h *Handler) sessionUnavailable(w http.ResponseWriter, r *http.Request, err error) {
	h.log.WarnContext(r.Context(), "console: session not checked", "path", r.URL.Path, "err", err)
	w.Header().Set("Retry-After", "1")
	http.Error(w, "the session could not be checked now; try again", http.StatusServiceUnavailable)
}

// setSessionCookie gives the browser the session: HttpOnly, SameSite
// Strict, Secure off loopback, for the whole console.
func (h *Handler) setSessionCookie(w http.ResponseWriter, s *session) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: s.id, Path: "/", HttpOnly: true,
		Secure: h.cfg.SecureCookies, SameSite: http.SameSiteStrictMode})
}

func (h *Handler) clearSessionCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: h.cfg.SecureCookies, SameSite: http.SameSiteStrictMode})
}

// onceLinks are one-time sign-in secrets, each good for one sign-in
// within onceFor.
type onceLinks struct {
	mu  sync.Mutex
	m   map[string]time.Time
	now func() time.Time
}

// onceFor is how long a one-time sign-in link works.
const onceFor = 10 * time.Minute

func newOnceLinks(now func() time.Time) *onceLinks {
	return &onceLinks{m: map[string]time.Time{}, now: now}
}

func (o *onceLinks) add() string {
	id := randomID()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m[id] = o.now().Add(onceFor)
	return id
}

// valid reports whether the secret would sign in now, without using it.
func (o *onceLinks) valid(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	until, ok := o.m[id]
	return ok && o.now().Before(until)
}

// take uses up the secret; false if it is unknown, used or expired.
func (o *onceLinks) take(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	until, ok := o.m[id]
	delete(o.m, id)
	return ok && o.now().Before(until)
}
