package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// typeSelfApproval is the problem of an author approving their own post
// where the workspace forbids it (403).
const typeSelfApproval = "urn:oncepost:problem:self-approval"

// approvePost is POST /v1/posts/{id}/approve {"at": …, "account": …}:
// Desk.Approve by the caller. The author of the post is refused (403)
// when the workspace forbids self-approval; a slot that passed without
// "at" is 422 naming at.
func (s *Server) approvePost(w http.ResponseWriter, r *http.Request, p Principal) *Problem {
	var in struct {
		At      string `json:"at"`
		Account string `json:"account"`
	}
	if prob := decodeJSON(r, &in, true); prob != nil {
		return prob
	}
	outs, err := s.cfg.Desk.Approve(r.Context(), publishing.ApproveRequest{Post: post.ID(r.PathValue("id")), Account: post.AccountID(in.Account), At: in.At, By: p.ID})
	if errors.Is(err, publishing.ErrSelfApproval) {
		return newProblem(r, http.StatusForbidden, typeSelfApproval,
			"you added this post, and the workspace does not let authors approve their own posts: someone else with the decide scope approves it")
	}
	return s.answerOutcomes(w, r, outs, err)
}

// rejectPost is POST /v1/posts/{id}/reject {"reason": …, "account": …}:
// Desk.Reject by the caller.
func (s *Server) rejectPost(w http.ResponseWriter, r *http.Request, p Principal) *Problem {
	var in struct {
		Reason  string `json:"reason"`
		Account string `json:"account"`
	}
	if prob := decodeJSON(r, &in, false); prob != nil {
		return prob
	}
	outs, err := s.cfg.Desk.Reject(r.Context(), post.ID(r.PathValue("id")), post.AccountID(in.Account), in.Reason, p.ID)
	return s.answerOutcomes(w, r, outs, err)
}

// maxApprovalsListed bounds GET /v1/approvals's limit.
const maxApprovalsListed = 500

// listApprovals is GET /v1/approvals?limit=N: the approval queue
// (Desk.ListApprovals), earliest slot first.
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request, _ Principal) *Problem {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxApprovalsListed {
			return badRequest(r, "limit", strconv.Quote(v)+" is not a number from 1 to "+strconv.Itoa(maxApprovalsListed), "give e.g. limit=100")
		}
		limit = n
	}
	q, err := s.cfg.Desk.ListApprovals(r.Context(), limit)
	if err != nil {
		return s.internal(r, err)
	}
	return s.writeJSON(w, r, http.StatusOK, q)
}
