package sandbox

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// maxBody bounds a request body (media uploads included).
const maxBody = 64 << 20

// timeFormat is Mastodon's created_at: RFC 3339, milliseconds, UTC.
const timeFormat = "2006-01-02T15:04:05.000Z"

// authMode says whether a route needs a bearer token.
type authMode int

const (
	authNone     authMode = iota // no token looked at
	authOptional                 // a token, if sent, must be valid
	authRequired                 // a valid token is needed
)

// call is one API request after faults, body reading and authentication.
type call struct {
	r       *http.Request
	body    []byte
	account *account // nil when not authenticated
	app     *app     // the token's application; nil when not authenticated
	base    string   // the server's base URL
	// createRec is the index of the request's CreateRecord, -1 for routes
	// other than status create.
	createRec int
}

// reply is an API handler's answer, written after the after-commit faults.
type reply struct {
	status int
	header http.Header
	body   any
}

// apiHandler does a route's work (the "commit") and returns its answer.
type apiHandler func(c *call) reply

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	api := func(route string, mode authMode, h apiHandler) {
		pattern := strings.ReplaceAll(route, ":id", "{id}")
		mux.Handle(pattern, s.api(route, mode, h))
	}
	api(RouteCreateStatus, authRequired, s.createStatus)
	api(RouteGetStatus, authOptional, s.getStatus)
	api(RouteStatusSource, authRequired, s.statusSource)
	api(RouteDeleteStatus, authRequired, s.deleteStatus)
	api(RouteAccountStatuses, authRequired, s.accountStatuses)
	api(RouteVerifyCredentials, authRequired, s.verifyCredentials)
	api(RouteUploadMedia, authRequired, s.uploadMedia)
	api(RouteGetMedia, authRequired, s.getMedia)
	api(RouteInstance, authNone, s.instanceV1)
	api(RouteInstanceV2, authNone, s.instanceV2)
	api(RouteOAuthToken, authNone, s.oauthToken)
	api(RouteCreateApp, authNone, s.createApp)
	api(RouteVerifyAppCredentials, authRequired, s.verifyAppCredentials)
	mux.Handle("GET /oauth/authorize", s.plain(s.authorizePage))
	mux.Handle("POST /oauth/authorize", s.plain(s.authorize))
	mux.Handle("GET /{$}", s.plain(s.timelinePage))
	mux.Handle("GET /sandbox/stats", s.plain(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Stats())
	}))
	mux.Handle("POST /sandbox/accounts", s.control(s.controlCreateAccount))
	mux.Handle("POST /sandbox/tokens", s.control(s.controlCreateToken))
	mux.Handle("POST /sandbox/faults", s.control(s.controlScriptFaults))
	mux.Handle("GET /sandbox/statuses", s.control(s.controlStatuses))
	mux.Handle("GET /sandbox/creates", s.control(s.controlCreates))
	mux.Handle("GET /media/{id}", s.plain(s.mediaFile))
	mux.Handle("/", s.plain(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, errorBody("Not found"))
	}))
	return mux
}

// plain wraps a non-API handler: tracked for Close, no faults, no auth.
func (s *Server) plain(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.enter() {
			writeJSON(w, http.StatusServiceUnavailable, errorBody("The sandbox is shutting down"))
			return
		}
		defer s.inflight.Done()
		h(w, r)
	})
}

// api wraps an API handler with the fault plan, body buffering and
// authentication. The order models a real server: a dropped request never
// reaches it (only its headers are looked at, to record a status create's
// idempotency key); 503/429/401 faults answer before any work (a status
// create's body is still read, to record what it would have posted); the
// body is read in full before a delay so the commit can happen even after
// the client has gone; the handler's work is never tied to the request's
// context. Every answer, a dropped one included, is preceded by settle:
// with a DataDir the changes are on disk before the client can learn of
// them.
func (s *Server) api(route string, mode authMode, h apiHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.enter() {
			writeJSON(w, http.StatusServiceUnavailable, errorBody("The sandbox is shutting down"))
			return
		}
		defer s.inflight.Done()
		start := time.Now()
		p, rec := s.planFor(route, r)
		// answer records the status on the request's create record, makes
		// every change durable, then writes the answer (or drops the
		// connection). A change that could not be saved is answered 500.
		answer := func(status int, write func()) {
			if err := s.settle(rec, status); err != nil {
				s.log.Error("sandbox: saving the sandbox's state failed", "route", route, "err", err)
				status = http.StatusInternalServerError
				writeJSON(w, status, errorBody(errSaveFailed))
			} else {
				write()
			}
			s.log.Debug("sandbox: request", "route", route, "status", status,
				"fault", p.String(), "elapsed", time.Since(start))
		}
		if p.dropRequest {
			// Headers only: the idempotency key is already recorded.
			answer(0, func() { drop(w) })
			return
		}
		if p.reject != "" {
			if rec >= 0 {
				// The answer does not depend on the body, but the drill
				// wants to know what the request would have posted.
				s.recordWouldBe(rec, r)
			}
			rep := s.rejectReply(p)
			answer(rep.status, func() { writeReply(w, rep) })
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				answer(http.StatusRequestEntityTooLarge, func() {
					writeJSON(w, http.StatusRequestEntityTooLarge, errorBody("Request body too large"))
				})
				return
			}
			s.log.Debug("sandbox: reading request body failed", "route", route, "err", err)
			return
		}
		c := &call{r: r, body: body, base: s.baseURL(r), createRec: rec}
		if mode != authNone {
			acct, ap, presented, valid := s.authenticate(r)
			if (presented || mode == authRequired) && !valid {
				if rec >= 0 {
					s.recordWouldBeFromBody(rec, c)
				}
				answer(http.StatusUnauthorized, func() { writeUnauthorized(w) })
				return
			}
			c.account, c.app = acct, ap
		}
		if tp, ok := s.textPlan(rec, c); ok {
			p = tp
		}
		if p.delayBefore > 0 && s.testHookDelay != nil {
			s.testHookDelay()
		}
		s.sleep(p.delayBefore)
		rep := h(c)
		if p.dropResponse {
			answer(0, func() { drop(w) })
			return
		}
		if p.fail500 {
			rep = reply{status: http.StatusInternalServerError, body: errorBody("We're sorry, but something went wrong on our end.")}
		}
		s.sleep(p.delayAfter)
		answer(rep.status, func() { writeReply(w, rep) })
	})
}

// errSaveFailed is the error answered when a change cannot be journaled.
const errSaveFailed = "sandbox: the change could not be saved to the data directory"

// settle sets the HTTP status of create record rec (none when rec < 0)
// and makes every change made so far durable. On failure the record says
// 500, the answer the client gets instead.
func (s *Server) settle(rec, status int) error {
	if rec >= 0 {
		s.mu.Lock()
		if cr := &s.creates[rec]; cr.HTTPStatus != status {
			cr.HTTPStatus = status
			s.journalCreateUpdateLocked(cr.Seq, nil, &status)
		}
		s.mu.Unlock()
	}
	err := s.sync()
	if err != nil && rec >= 0 {
		s.updateCreate(rec, func(cr *CreateRecord) { cr.HTTPStatus = http.StatusInternalServerError })
	}
	return err
}

// writeReply writes an API handler's answer.
func writeReply(w http.ResponseWriter, rep reply) {
	for k, v := range rep.header {
		w.Header()[k] = v
	}
	writeJSON(w, rep.status, rep.body)
}

// recordWouldBe reads a rejected create's body (bounded) to record the
// fingerprint it would have committed.
func (s *Server) recordWouldBe(rec int, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return
	}
	s.recordWouldBeFromBody(rec, &call{r: r, body: body})
}

// recordWouldBeFromBody records the fingerprint of a create that did not
// reach createStatus.
func (s *Server) recordWouldBeFromBody(rec int, c *call) {
	p, err := parseStatusParams(c)
	if err != nil {
		return
	}
	a, _, _, _ := s.authenticate(c.r)
	s.mu.Lock()
	defer s.mu.Unlock()
	cr := &s.creates[rec]
	cr.Fingerprint = s.wouldBeFingerprintLocked(a, p)
	s.journalCreateUpdateLocked(cr.Seq, &cr.Fingerprint, nil)
}

// baseURL is the URL statuses and media links are built on.
func (s *Server) baseURL(r *http.Request) string {
	if u := s.URL(); u != "" {
		return u
	}
	if r.TLS != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

// authenticate resolves the bearer token to its account and its
// application. presented is false when the request carries no
// Authorization header.
func (s *Server) authenticate(r *http.Request) (acct *account, ap *app, presented, valid bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authenticateLocked(r)
}

// authenticateLocked is authenticate with s.mu held.
func (s *Server) authenticateLocked(r *http.Request) (acct *account, ap *app, presented, valid bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, nil, false, false
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil, nil, true, false
	}
	token = strings.TrimSpace(token)
	tok := s.access[token]
	if tok == nil || tok.revoked {
		return nil, nil, true, false
	}
	if !tok.expiresAt.IsZero() && !s.opts.Now().Before(tok.expiresAt) {
		return nil, nil, true, false
	}
	a := s.accounts[tok.accountID]
	if a == nil {
		return nil, nil, true, false
	}
	return a, tok.app, true, true
}

// errorJSON is Mastodon's error body.
type errorJSON struct {
	Error string `json:"error"`
}

func errorBody(msg string) errorJSON { return errorJSON{Error: msg} }

func errorReply(status int, msg string) reply {
	return reply{status: status, body: errorBody(msg)}
}

// writeUnauthorized answers an invalid, expired or missing token.
func writeUnauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	writeJSON(w, http.StatusUnauthorized, errorBody("The access token is invalid"))
}

// writeJSON writes v as the JSON response body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var data []byte
	var err error
	if raw, ok := v.(rawJSONArray); ok {
		data = raw.bytes()
	} else {
		data, err = json.Marshal(v)
	}
	if err != nil {
		status = http.StatusInternalServerError
		data = []byte(`{"error":"sandbox: encoding the response failed"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// rawJSONArray is a reply body of already-encoded elements, written as a
// JSON array without re-encoding (json.Marshal would re-validate every
// element; timelines are read on every publish).
type rawJSONArray []json.RawMessage

func (a rawJSONArray) bytes() []byte {
	n := 2
	for _, e := range a {
		n += len(e) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, e := range a {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, ']')
}
