package console

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"sync"
	"time"

	"oncepost/shared/httpapi"
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
	zone    *time.Location
	expires time.Time

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

func (s *session) checkCSRF(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}

type sessions struct {
	mu  sync.Mutex
	m   map[string]*session
	ttl time.Duration
	now func() time.Time
}

func newSessions(ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{m: map[string]*session{}, ttl: ttl, now: now}
}

func (ss *sessions) add(p httpapi.Principal, tokenHash string, zone *time.Location) *session {
	s := &session{id: randomID(), csrf: randomID(), principal: p, tokenHash: tokenHash, zone: zone, expires: ss.now().Add(ss.ttl)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := ss.now()
	for id, old := range ss.m {
		if now.After(old.expires) {
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
	if now.After(s.expires) {
		delete(ss.m, id)
		return nil, false
	}
	s.expires = now.Add(ss.ttl)
	return s, true
}

func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.m, id)
}

// session returns the request's live session; one whose token was
// revoked (or is gone) is ended here.
func (h *Handler) session(r *http.Request) (*session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil, false
	}
	s, ok := h.sessions.get(c.Value)
	if !ok {
		return nil, false
	}
	if s.tokenHash != "" {
		if err := h.tokenAlive(r.Context(), s.tokenHash); err != nil {
			h.sessions.remove(s.id)
			return nil, false
		}
	}
	return s, true
}

func (h *Handler) tokenAlive(ctx context.Context, hash string) error {
	t, err := h.cfg.Tokens.TokenByHash(ctx, hash)
	if err != nil {
		return err
	}
	if t.Revoked() {
		return errors.New("revoked")
	}
	return nil
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
// within 10 minutes.
type onceLinks struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func newOnceLinks() *onceLinks { return &onceLinks{m: map[string]time.Time{}} }

func (o *onceLinks) add() string {
	id := randomID()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m[id] = time.Now().Add(10 * time.Minute)
	return id
}

// take uses up the secret; false if it is unknown, used or expired.
func (o *onceLinks) take(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	until, ok := o.m[id]
	delete(o.m, id)
	return ok && time.Now().Before(until)
}
