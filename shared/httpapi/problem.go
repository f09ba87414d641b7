package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// Problem is an RFC 9457 problem details object: every error the API
// answers, as application/problem+json.
type Problem struct {
	// Type names the kind of problem: "about:blank" when the HTTP status
	// says it all, else one of the urn:oncepost:problem: types of
	// docs/api.md.
	Type  string `json:"type"`
	Title string `json:"title"`
	// Status is the HTTP status, repeated.
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Instance is the request's path.
	Instance string `json:"instance,omitempty"`
	// Errors are the fields refused, each with the fix (post.FieldError).
	Errors []FieldProblem `json:"errors,omitempty"`
	// Scope is the scope a 403 lacked.
	Scope string `json:"scope,omitempty"`
	// Targets are what an action did on each target, when some were
	// refused (409 from cancel, reschedule, delete).
	Targets []publishing.TargetOutcome `json:"targets,omitempty"`

	// challenge is a 401's WWW-Authenticate; retry a 409's or 429's
	// Retry-After.
	challenge, retry string
}

// FieldProblem is one refused field: its JSON path, what is wrong, and
// how to fix it.
type FieldProblem struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
	Fix     string `json:"fix,omitempty"`
}

// Problem types beyond about:blank (docs/api.md lists them).
const (
	typeBlank            = "about:blank"
	typeInvalidRequest   = "urn:oncepost:problem:invalid-request"
	typeValidation       = "urn:oncepost:problem:validation"
	typeKeyMissing       = "urn:oncepost:problem:idempotency-key-missing"
	typeKeyInvalid       = "urn:oncepost:problem:idempotency-key-invalid"
	typeKeyReused        = "urn:oncepost:problem:idempotency-key-reused"
	typeKeyInFlight      = "urn:oncepost:problem:idempotency-key-in-flight"
	typeConflict         = "urn:oncepost:problem:conflict"
	typeScopeMissing     = "urn:oncepost:problem:scope-missing"
	typeTargetsRefused   = "urn:oncepost:problem:targets-refused"
	typeUnsupportedMedia = "urn:oncepost:problem:unsupported-media-type"
)

// titles are the fixed titles of the oncepost problem types.
var titles = map[string]string{
	typeInvalidRequest:   "The request cannot be read",
	typeValidation:       "The request was refused: see errors",
	typeKeyMissing:       "The Idempotency-Key header is missing",
	typeKeyInvalid:       "The Idempotency-Key header is not a valid key",
	typeKeyReused:        "The Idempotency-Key was used with another request",
	typeKeyInFlight:      "The Idempotency-Key's first request is still in flight",
	typeConflict:         "The request conflicts with the current state",
	typeScopeMissing:     "The caller lacks the scope this needs",
	typeTargetsRefused:   "Some targets were refused",
	typeUnsupportedMedia: "The body's media type is not accepted here",
	typeSelfApproval:     "Authors may not approve their own posts here",
}

// newProblem is a problem of the type with the status, for the request.
func newProblem(r *http.Request, status int, typ, detail string) *Problem {
	title := titles[typ]
	if typ == typeBlank || title == "" {
		typ, title = typeBlank, http.StatusText(status)
	}
	return &Problem{Type: typ, Title: title, Status: status, Detail: detail, Instance: r.URL.Path}
}

// fieldProblem is a 422 naming one field.
func fieldProblem(r *http.Request, field, problem, fix string) *Problem {
	p := newProblem(r, http.StatusUnprocessableEntity, typeValidation, field+": "+problem)
	p.Errors = []FieldProblem{{Field: field, Problem: problem, Fix: fix}}
	return p
}

// badRequest is a 400 naming one field (a query parameter, a header, a
// member of the body).
func badRequest(r *http.Request, field, problem, fix string) *Problem {
	p := newProblem(r, http.StatusBadRequest, typeInvalidRequest, field+": "+problem)
	p.Errors = []FieldProblem{{Field: field, Problem: problem, Fix: fix}}
	return p
}

// fieldErrors returns the *post.FieldErrors err holds (joined or
// wrapped), in order.
func fieldErrors(err error) []FieldProblem {
	var out []FieldProblem
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		var fe *post.FieldError
		if e, ok := err.(*post.FieldError); ok {
			out = append(out, FieldProblem{Field: e.Field, Problem: e.Problem, Fix: e.Fix})
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		default:
			if errors.As(err, &fe) {
				out = append(out, FieldProblem{Field: fe.Field, Problem: fe.Problem, Fix: fe.Fix})
			}
		}
	}
	walk(err)
	return out
}

// writeProblem sends p as application/problem+json.
func writeProblem(w http.ResponseWriter, p *Problem) {
	body, err := json.Marshal(p)
	if err != nil {
		// A Problem always encodes; this is a programming error.
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	if p.challenge != "" {
		h.Set("WWW-Authenticate", p.challenge)
	}
	if p.retry != "" {
		h.Set("Retry-After", p.retry)
	}
	w.WriteHeader(p.Status)
	_, _ = w.Write(body)
}
