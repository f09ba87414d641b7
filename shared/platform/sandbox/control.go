package sandbox

// The control API drives a sandbox that runs as a separate process, the
// way tests drive an embedded one through AddAccount, AddToken,
// ScriptRoute, Statuses and Creates:
//
//	POST /sandbox/accounts   {"username":"alice"} → 201 {"id","username","access_token","refresh_token"}
//	POST /sandbox/tokens     {"account_id":"ID","app":"Web"} → 201 {"id","username","access_token","refresh_token","app"}
//	                         (AddToken: tokens of the account that belong to another, new application)
//	POST /sandbox/faults     {"route":"POST /api/v1/statuses","faults":[{"kind":"503"},
//	                          {"kind":"429","retry_after_seconds":3},{"kind":"delay-before-commit","delay_ms":11000}]} → 204
//	GET  /sandbox/statuses?account=ID → an account's statuses, deleted ones included, newest first
//	GET  /sandbox/creates    → every status create request (Creates)
//	GET  /sandbox/stats      → the counters (Stats)
//
// It has no authentication: the server binds a loopback address only
// (Options.Addr), so only processes of the same machine reach it. Against
// a web page reaching it through the browser, the control endpoints answer
// 403 to a Host that is not a loopback name (DNS rebinding) and the POSTs
// take application/json only, which a cross-origin form cannot send.
// Errors are {"error":"..."} naming the offending field.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"
)

// maxControlBody bounds a control request's body.
const maxControlBody = 1 << 20

// maxScriptedDelay bounds delay_ms: a longer delay is a mistake, and Close
// cuts delays short anyway.
const maxScriptedDelay = time.Hour

// usernamePattern is what Mastodon accepts as a local username.
var usernamePattern = regexp.MustCompile(`^[A-Za-z0-9_]{1,30}$`)

// control wraps a control endpoint: tracked for Close like plain, and
// refused when the Host header is not a loopback name.
func (s *Server) control(h http.HandlerFunc) http.Handler {
	return s.plain(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			writeJSON(w, http.StatusForbidden, errorBody(fmt.Sprintf(
				"sandbox: the control API answers only requests to a loopback host (127.0.0.1, [::1] or localhost), not Host %q", r.Host)))
			return
		}
		h(w, r)
	})
}

// loopbackHost reports whether a Host header names this machine: a
// loopback IP literal or localhost, with or without a port.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// controlError is a control endpoint's failure: the status and the
// message naming the field.
type controlError struct {
	status int
	msg    string
}

func (e *controlError) Error() string { return e.msg }

func badRequest(format string, args ...any) *controlError {
	return &controlError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// writeControlError answers err, a *controlError or an unexpected failure.
func writeControlError(w http.ResponseWriter, err error) {
	var ce *controlError
	if errors.As(err, &ce) {
		writeJSON(w, ce.status, errorBody(ce.msg))
		return
	}
	writeJSON(w, http.StatusInternalServerError, errorBody(err.Error()))
}

// readJSON decodes a control request's JSON body into v, refusing other
// content types, unknown fields and trailing data.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return &controlError{status: http.StatusUnsupportedMediaType,
			msg: "body: send JSON with Content-Type: application/json"}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxControlBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "":
			return badRequest("%s: must be a JSON %s", typeErr.Field, typeErr.Type.Kind())
		case errors.As(err, &tooBig):
			return &controlError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("body: larger than %d bytes", maxControlBody)}
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return badRequest("body: %s", strings.TrimPrefix(err.Error(), "json: "))
		}
		return badRequest("body: not valid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("body: data after the JSON object")
	}
	return nil
}

// controlAccountJSON is the answer of POST /sandbox/accounts.
type controlAccountJSON struct {
	ID           string `json:"id"`
	Username     string `json:"username"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
}

// controlCreateAccount is POST /sandbox/accounts: a new account with its
// tokens. Unlike AddAccount it refuses a username that is taken (409), as
// Mastodon does.
func (s *Server) controlCreateAccount(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Username string `json:"username"`
	}
	if err := readJSON(w, r, &in); err != nil {
		writeControlError(w, err)
		return
	}
	if !usernamePattern.MatchString(in.Username) {
		writeControlError(w, badRequest("username: must be 1 to 30 letters, digits or underscores, got %q", in.Username))
		return
	}
	s.mu.Lock()
	taken := s.resolveLocked(in.Username)
	s.mu.Unlock()
	if taken != nil {
		writeControlError(w, &controlError{status: http.StatusConflict,
			msg: fmt.Sprintf("username: @%s is taken by account %s", in.Username, taken.id)})
		return
	}
	a, err := s.addAccount(in.Username)
	if err != nil {
		s.log.Error("sandbox: saving a new account failed", "account", a.ID, "err", err)
		writeJSON(w, http.StatusInternalServerError, errorBody(errSaveFailed))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, controlAccountJSON{ID: a.ID, Username: a.Username, AccessToken: a.AccessToken, RefreshToken: a.RefreshToken})
}

// controlTokenJSON is the answer of POST /sandbox/tokens.
type controlTokenJSON struct {
	controlAccountJSON
	App string `json:"app"`
}

// controlCreateToken is POST /sandbox/tokens: AddToken over HTTP, tokens
// of an existing account that belong to a new application, as if the
// account's owner had signed in with another client.
func (s *Server) controlCreateToken(w http.ResponseWriter, r *http.Request) {
	var in struct {
		AccountID string `json:"account_id"`
		App       string `json:"app"`
	}
	if err := readJSON(w, r, &in); err != nil {
		writeControlError(w, err)
		return
	}
	a, err := s.AddToken(in.AccountID, in.App)
	switch {
	case errors.Is(err, errAppName):
		writeControlError(w, badRequest("app: must be 1 to %d characters, got %q", maxAppNameLength, in.App))
		return
	case errors.Is(err, errNoAccount):
		writeControlError(w, &controlError{status: http.StatusNotFound, msg: fmt.Sprintf("account_id: no account %q", in.AccountID)})
		return
	case err != nil:
		s.log.Error("sandbox: adding a token failed", "account", in.AccountID, "err", err)
		writeJSON(w, http.StatusInternalServerError, errorBody(errSaveFailed))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, controlTokenJSON{
		controlAccountJSON: controlAccountJSON{ID: a.ID, Username: a.Username, AccessToken: a.AccessToken, RefreshToken: a.RefreshToken},
		App:                strings.TrimSpace(in.App),
	})
}

// faultJSON is one fault of POST /sandbox/faults.
type faultJSON struct {
	Kind              string `json:"kind"`
	DelayMS           *int64 `json:"delay_ms"`
	RetryAfterSeconds *int64 `json:"retry_after_seconds"`
}

// faultsRequest is the body of POST /sandbox/faults.
type faultsRequest struct {
	Route  string      `json:"route"`
	Faults []faultJSON `json:"faults"`
}

// parseFaults checks a fault script and converts it, so ScriptRoute never
// panics on it.
func parseFaults(in faultsRequest) ([]Fault, error) {
	if !knownRoutes[in.Route] {
		routes := slices.Sorted(maps.Keys(knownRoutes))
		if in.Route == "" {
			return nil, badRequest("route: required, one of %s", strings.Join(routes, ", "))
		}
		return nil, badRequest("route: unknown route %q, want one of %s", in.Route, strings.Join(routes, ", "))
	}
	if len(in.Faults) == 0 {
		return nil, badRequest("faults: at least one fault is required")
	}
	faults := make([]Fault, 0, len(in.Faults))
	for i, fj := range in.Faults {
		field := fmt.Sprintf("faults[%d]", i)
		kind := FaultKind(fj.Kind)
		if !knownKinds[kind] {
			kinds := make([]string, 0, len(knownKinds))
			for k := range knownKinds {
				kinds = append(kinds, string(k))
			}
			slices.Sort(kinds)
			return nil, badRequest("%s.kind: unknown fault kind %q, want one of %s", field, fj.Kind, strings.Join(kinds, ", "))
		}
		f := Fault{Kind: kind}
		isDelay := kind == FaultDelayBeforeCommit || kind == FaultDelayAfterCommit
		switch {
		case isDelay && fj.DelayMS == nil:
			return nil, badRequest("%s.delay_ms: required for %s", field, kind)
		case isDelay && (*fj.DelayMS <= 0 || *fj.DelayMS > maxScriptedDelay.Milliseconds()):
			return nil, badRequest("%s.delay_ms: must be from 1 to %d, got %d", field, maxScriptedDelay.Milliseconds(), *fj.DelayMS)
		case isDelay:
			f.Delay = time.Duration(*fj.DelayMS) * time.Millisecond
		case fj.DelayMS != nil:
			return nil, badRequest("%s.delay_ms: only for %s and %s", field, FaultDelayBeforeCommit, FaultDelayAfterCommit)
		}
		if fj.RetryAfterSeconds != nil {
			ra := *fj.RetryAfterSeconds
			switch {
			case kind != Fault429:
				return nil, badRequest("%s.retry_after_seconds: only for %s", field, Fault429)
			case ra < 1 || ra > 86400:
				return nil, badRequest("%s.retry_after_seconds: must be from 1 to 86400, got %d", field, ra)
			}
			f.RetryAfter = time.Duration(ra) * time.Second
		}
		faults = append(faults, f)
	}
	return faults, nil
}

// controlScriptFaults is POST /sandbox/faults: ScriptRoute over HTTP.
// Scripted faults are not kept across restarts.
func (s *Server) controlScriptFaults(w http.ResponseWriter, r *http.Request) {
	var in faultsRequest
	if err := readJSON(w, r, &in); err != nil {
		writeControlError(w, err)
		return
	}
	faults, err := parseFaults(in)
	if err != nil {
		writeControlError(w, err)
		return
	}
	s.ScriptRoute(in.Route, faults...)
	w.WriteHeader(http.StatusNoContent)
}

// controlStatusJSON is one status of GET /sandbox/statuses.
type controlStatusJSON struct {
	ID             string `json:"id"`
	Text           string `json:"text"`
	CreatedAt      string `json:"created_at"`
	Deleted        bool   `json:"deleted"`
	IdempotencyKey string `json:"idempotency_key"`
	MediaCount     int    `json:"media_count"`
	Duplicate      bool   `json:"duplicate"`
	Injected       bool   `json:"injected"`
	Fingerprint    string `json:"fingerprint"`
	// App is the name of the application the status was posted with.
	App string `json:"app"`
	// InReplyToID is the status it replies to, "" for none.
	InReplyToID string `json:"in_reply_to_id,omitempty"`
}

// controlStatuses is GET /sandbox/statuses?account=ID: every status of the
// account, deleted ones included, newest first.
func (s *Server) controlStatuses(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("account")
	if id == "" {
		writeControlError(w, badRequest("account: required, an account id"))
		return
	}
	s.mu.Lock()
	a := s.accounts[id]
	var out []controlStatusJSON
	if a != nil {
		out = make([]controlStatusJSON, 0, len(a.statuses))
		for i := len(a.statuses) - 1; i >= 0; i-- {
			st := a.statuses[i]
			out = append(out, controlStatusJSON{
				ID: st.ID, Text: st.Text, CreatedAt: st.CreatedAt.UTC().Format(timeFormat), Deleted: st.deleted,
				IdempotencyKey: st.IdempotencyKey, MediaCount: len(st.MediaIDs), Duplicate: st.Duplicate,
				Injected: st.Injected, Fingerprint: st.Fingerprint, App: st.app.name, InReplyToID: st.InReplyToID,
			})
		}
	}
	s.mu.Unlock()
	if a == nil {
		writeControlError(w, &controlError{status: http.StatusNotFound, msg: fmt.Sprintf("account: no account %q", id)})
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// controlCreates is GET /sandbox/creates: Creates as JSON.
func (s *Server) controlCreates(w http.ResponseWriter, r *http.Request) {
	creates := s.Creates()
	if creates == nil {
		creates = []CreateRecord{}
	}
	writeJSON(w, http.StatusOK, creates)
}
