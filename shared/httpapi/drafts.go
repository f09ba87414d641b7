package httpapi

import (
	"net/http"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// checkAnswer is POST /v1/drafts/check's answer: the check, its field
// errors in the API's shape.
type checkAnswer struct {
	publishing.DraftCheck
	Errors []FieldProblem `json:"errors"`
}

// checkDraft is POST /v1/drafts/check: what POST /v1/posts would say of
// the same draft (publishing.Desk.Check), written nowhere; no
// Idempotency-Key. A draft the desk refuses is answered 200 with its
// errors: the check is the answer, not a failure. Only a body that is
// not a draft the API takes is a problem (400, 415; 422 for a media
// path, as POST /v1/posts).
func (s *Server) checkDraft(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	if !isJSON(r) {
		return unsupportedType(r, "application/json")
	}
	raw, prob := readBody(r)
	if prob != nil {
		return prob
	}
	d, err := post.DecodeDraft(raw)
	if err != nil {
		return newProblem(r, http.StatusBadRequest, typeInvalidRequest, err.Error())
	}
	if prob := mediaPaths(r, d); prob != nil {
		return prob
	}
	c, err := s.cfg.Desk.Check(r.Context(), d, nil)
	if err != nil {
		return s.internal(r, err)
	}
	ans := checkAnswer{DraftCheck: c, Errors: []FieldProblem{}}
	for _, fe := range c.Errors {
		ans.Errors = append(ans.Errors, FieldProblem{Field: fe.Field, Problem: fe.Problem, Fix: fe.Fix})
	}
	return s.writeJSON(w, r, http.StatusOK, ans)
}
