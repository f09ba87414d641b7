package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"oncepost/shared/apitoken"
	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// MaxKeyLength bounds an Idempotency-Key (its quotes left out).
const MaxKeyLength = 255

// idempotencyKey reads the Idempotency-Key header: an RFC 8941 sf-string
// ("…", as the draft writes it) or the bare token many clients send; one
// pair of quotes is stripped. The key is 1 to MaxKeyLength printable
// ASCII characters without '"' or '\'.
func idempotencyKey(r *http.Request) (string, *Problem) {
	values := r.Header.Values("Idempotency-Key")
	if len(values) == 0 {
		p := newProblem(r, http.StatusBadRequest, typeKeyMissing,
			"POST /v1/posts needs an Idempotency-Key header: a unique value per post (e.g. a UUID), sent again unchanged when the request is retried")
		p.Errors = []FieldProblem{{Field: "Idempotency-Key", Problem: "is missing", Fix: `send Idempotency-Key: "<a new UUID>" with every create, the same on a retry`}}
		return "", p
	}
	invalid := func(problem string) (string, *Problem) {
		p := newProblem(r, http.StatusBadRequest, typeKeyInvalid, "Idempotency-Key "+problem)
		p.Errors = []FieldProblem{{Field: "Idempotency-Key", Problem: problem, Fix: fmt.Sprintf("send 1-%d printable ASCII characters (a UUID is good), quoted or not", MaxKeyLength)}}
		return "", p
	}
	if len(values) > 1 {
		return invalid("is given more than once")
	}
	key := values[0]
	if len(key) >= 2 && key[0] == '"' && key[len(key)-1] == '"' {
		key = key[1 : len(key)-1]
	}
	switch {
	case key == "":
		return invalid("is empty")
	case len(key) > MaxKeyLength:
		return invalid(fmt.Sprintf("is %d characters, over %d", len(key), MaxKeyLength))
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return invalid(fmt.Sprintf("has a character that is not printable ASCII (or is a quote or backslash) at position %d", i+1))
		}
	}
	return key, nil
}

// fingerprint is the hex SHA-256 of the request: method, path and raw
// body. The same key with another fingerprint is refused.
func fingerprint(r *http.Request, body []byte) string {
	h := sha256.New()
	h.Write([]byte(r.Method + "\n" + r.URL.Path + "\n"))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// mediaPaths refuses a draft whose media name a file (path), which the
// API cannot read: 422 naming each.
func mediaPaths(r *http.Request, d post.Draft) *Problem {
	var refused []FieldProblem
	for i, m := range d.Media {
		if m.Path != "" {
			refused = append(refused, FieldProblem{Field: fmt.Sprintf("media[%d].path", i), Problem: "names a file, which the API cannot read",
				Fix: "upload the file with POST /v1/media and give the ref and sha256 it answers"})
		}
	}
	if len(refused) == 0 {
		return nil
	}
	prob := newProblem(r, http.StatusUnprocessableEntity, typeValidation, refused[0].Field+": "+refused[0].Problem)
	prob.Errors = refused
	return prob
}

// createPost is POST /v1/posts: a `post add` draft, scheduled under the
// caller's Idempotency-Key.
func (s *Server) createPost(w http.ResponseWriter, r *http.Request, p Principal) *Problem {
	key, prob := idempotencyKey(r)
	if prob != nil {
		return prob
	}
	if !isJSON(r) {
		return unsupportedType(r, "application/json")
	}
	raw, prob := readBody(r)
	if prob != nil {
		return prob
	}
	fp := fingerprint(r, raw)
	d, err := post.DecodeDraft(raw)
	if err != nil {
		return newProblem(r, http.StatusBadRequest, typeInvalidRequest, err.Error())
	}
	if prob := mediaPaths(r, d); prob != nil {
		return prob
	}
	req := &publishing.KeyedRequest{Scope: p.ID, Key: key, Fingerprint: fp, Encode: func(pp post.Post) (int, []byte, error) {
		body, err := json.Marshal(pp)
		if err != nil {
			return 0, nil, fmt.Errorf("encode post %s: %w", pp.ID, err)
		}
		if s.cfg.Pause != nil {
			s.cfg.Pause(r.Context(), PauseBeforeCommit)
		}
		return http.StatusCreated, body, nil
	}}
	res, err := s.cfg.Desk.Schedule(r.Context(), d, nil, req)
	switch {
	case errors.Is(err, publishing.ErrKeyReused):
		return newProblem(r, http.StatusUnprocessableEntity, typeKeyReused,
			"this Idempotency-Key was used with another request (method, path or body); use a new key for a new post, or send the first request's body unchanged")
	case errors.Is(err, publishing.ErrKeyInFlight):
		prob := newProblem(r, http.StatusConflict, typeKeyInFlight, "a request with this Idempotency-Key is being processed; retry it unchanged after a moment")
		prob.retry = "1"
		return prob
	case err != nil:
		return s.postError(r, err)
	}
	if s.cfg.Pause != nil {
		s.cfg.Pause(r.Context(), PauseAfterCommit)
	}
	id := res.Post.ID
	if id == "" {
		var stored struct {
			ID post.ID `json:"id"`
		}
		_ = json.Unmarshal(res.Body, &stored)
		id = stored.ID
	}
	if id != "" {
		w.Header().Set("Location", "/v1/posts/"+url.PathEscape(string(id)))
	}
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeRaw(w, res.Status, "application/json", res.Body)
	return nil
}

// postError translates an error of a post use case: refused fields are
// 422 (an id that exists too: the Desk refuses it on the field id), an
// unknown post 404, a conflict 409, anything else 500.
func (s *Server) postError(r *http.Request, err error) *Problem {
	fields := fieldErrors(err)
	switch {
	case errors.Is(err, post.ErrNotFound):
		return newProblem(r, http.StatusNotFound, typeBlank, "no post "+strconv.Quote(r.PathValue("id"))+" (GET /v1/posts lists them)")
	case errors.Is(err, post.ErrConflict):
		prob := newProblem(r, http.StatusConflict, typeConflict, err.Error())
		prob.Errors = fields
		return prob
	case len(fields) > 0:
		prob := newProblem(r, http.StatusUnprocessableEntity, typeValidation, fields[0].Field+": "+fields[0].Problem)
		prob.Errors = fields
		return prob
	}
	return s.internal(r, err)
}

// getPost is GET /v1/posts/{id}: the post, every target's status and
// its ledger entries with their history.
func (s *Server) getPost(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	v, err := s.cfg.Desk.Show(r.Context(), post.ID(r.PathValue("id")))
	if err != nil {
		return s.postError(r, err)
	}
	if v.Targets == nil {
		v.Targets = []publishing.TargetView{}
	}
	for i := range v.Targets {
		if v.Targets[i].Ledger == nil {
			v.Targets[i].Ledger = []publishing.EntryView{}
		}
		for j := range v.Targets[i].Ledger {
			e := &v.Targets[i].Ledger[j]
			// A workflow task token and the lease owner are the runtime's,
			// not a caller's.
			e.TaskToken, e.LeaseOwner = "", ""
			if e.History == nil {
				e.History = []ledger.Transition{}
			}
		}
	}
	return s.writeJSON(w, r, http.StatusOK, v)
}

// The listing's page size.
const (
	defaultPageSize = 100
	maxPageSize     = 500
)

// postList is GET /v1/posts's answer.
type postList struct {
	Posts []post.Post `json:"posts"`
	// Next is the cursor of the following page (?after=), left out on
	// the last.
	Next string `json:"next,omitempty"`
}

// listPosts is GET /v1/posts: posts with a target matching the filters,
// a page at a time. from and to keep posts with a matching target whose
// slot is in [from, to): the store selects them (PostFilter.From, To).
func (s *Server) listPosts(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	q := r.URL.Query()
	for name := range q {
		if !slices.Contains([]string{"status", "account", "from", "to", "after", "limit"}, name) {
			return badRequest(r, name, "is not a query parameter of this listing", "use status, account, from, to, after, limit")
		}
	}
	f := publishing.PostFilter{Account: post.AccountID(q.Get("account")), After: q.Get("after"), Limit: defaultPageSize}
	if v := q.Get("status"); v != "" {
		for _, part := range strings.Split(v, ",") {
			st := post.TargetStatus(strings.TrimSpace(part))
			if !slices.Contains(targetStatuses, st) {
				return badRequest(r, "status", fmt.Sprintf("%q is not a target status", part), "use a comma-separated list of "+statusNames())
			}
			f.Statuses = append(f.Statuses, st)
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			return badRequest(r, "limit", fmt.Sprintf("%q is not a number from 1 to %d", v, maxPageSize), "give the page size, e.g. limit=100")
		}
		f.Limit = n
	}
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return badRequest(r, p.name, fmt.Sprintf("%q is not an RFC 3339 time", v), "write e.g. 2026-12-01T09:00:00+01:00 (a + in a query is %2B)")
			}
			*p.t = t
		}
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return badRequest(r, "to", "is not after from", "give a range with from before to")
	}
	page, err := s.cfg.Desk.List(r.Context(), f)
	if errors.Is(err, publishing.ErrBadCursor) {
		return badRequest(r, "after", "is not a cursor of this listing", "pass the next value of the page before, unchanged")
	}
	if fields := fieldErrors(err); len(fields) > 0 {
		prob := newProblem(r, http.StatusBadRequest, typeInvalidRequest, fields[0].Field+": "+fields[0].Problem)
		prob.Errors = fields
		return prob
	}
	if err != nil {
		return s.internal(r, err)
	}
	out := postList{Posts: page.Posts, Next: page.Next}
	if out.Posts == nil {
		out.Posts = []post.Post{}
	}
	return s.writeJSON(w, r, http.StatusOK, out)
}

var targetStatuses = []post.TargetStatus{post.NeedsApproval, post.Scheduled, post.Triggered, post.Waiting, post.Publishing, post.Published,
	post.Held, post.Failed, post.Cancelled, post.Deleted}

func statusNames() string {
	names := make([]string, len(targetStatuses))
	for i, s := range targetStatuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// targetsAnswer is what cancel, reschedule and delete did on each target.
type targetsAnswer struct {
	Post    post.ID                    `json:"post_id"`
	Targets []publishing.TargetOutcome `json:"targets"`
}

// answerOutcomes answers 200 when every target was done, else 409 with
// what was done on each.
func (s *Server) answerOutcomes(w http.ResponseWriter, r *http.Request, outs []publishing.TargetOutcome, err error) *Problem {
	if err != nil {
		return s.postError(r, err)
	}
	if outs == nil {
		outs = []publishing.TargetOutcome{}
	}
	var refused []string
	for _, o := range outs {
		if !o.Done {
			refused = append(refused, string(o.Account)+": "+o.Message)
		}
	}
	if len(refused) > 0 {
		prob := newProblem(r, http.StatusConflict, typeTargetsRefused, "refused on "+strings.Join(refused, "; "))
		prob.Targets = outs
		return prob
	}
	return s.writeJSON(w, r, http.StatusOK, targetsAnswer{Post: post.ID(r.PathValue("id")), Targets: outs})
}

// cancelPost is POST /v1/posts/{id}/cancel {"account": …}.
func (s *Server) cancelPost(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	var in struct {
		Account string `json:"account"`
	}
	if prob := decodeJSON(r, &in, true); prob != nil {
		return prob
	}
	outs, err := s.cfg.Desk.Cancel(r.Context(), post.ID(r.PathValue("id")), post.AccountID(in.Account))
	return s.answerOutcomes(w, r, outs, err)
}

// reschedulePost is POST /v1/posts/{id}/reschedule {"at": …, "account": …}.
func (s *Server) reschedulePost(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	var in struct {
		At      string `json:"at"`
		Account string `json:"account"`
	}
	if prob := decodeJSON(r, &in, false); prob != nil {
		return prob
	}
	if in.At == "" {
		return fieldProblem(r, "at", "is missing", "give the new time, e.g. 2026-12-01T09:00:00+01:00")
	}
	at, err := post.ParseSlot(in.At)
	if err != nil {
		return fieldProblem(r, "at", err.Error(), "write an RFC 3339 time with an offset, e.g. 2026-12-01T09:00:00+01:00")
	}
	outs, err := s.cfg.Desk.Reschedule(r.Context(), post.ID(r.PathValue("id")), post.AccountID(in.Account), at)
	return s.answerOutcomes(w, r, outs, err)
}

// deletePost is POST /v1/posts/{id}/delete {"account": …, "approve": …}:
// a delete through the ledger, waiting for approval unless approve (which
// needs the decide scope too).
func (s *Server) deletePost(w http.ResponseWriter, r *http.Request, p Principal) *Problem {
	var in struct {
		Account string `json:"account"`
		Approve bool   `json:"approve"`
	}
	if prob := decodeJSON(r, &in, true); prob != nil {
		return prob
	}
	if in.Approve && !p.Allows(apitoken.ScopeDecide) {
		return scopeProblem(r, apitoken.ScopeDecide)
	}
	outs, err := s.cfg.Desk.RequestDelete(r.Context(), post.ID(r.PathValue("id")), post.AccountID(in.Account), in.Approve)
	return s.answerOutcomes(w, r, outs, err)
}
