package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"oncepost/shared/apitoken"
	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// Desk is the operator use cases the API translates to: publishing.Desk,
// the same the CLI calls.
type Desk interface {
	// Schedule validates and stores a post; with req, under its
	// Idempotency-Key (a replay returns the first answer).
	Schedule(ctx context.Context, dr post.Draft, sizes map[string]int, req *publishing.KeyedRequest) (publishing.ScheduleResult, error)
	// Show is a post with each target's ledger entries and their history;
	// post.ErrNotFound.
	Show(ctx context.Context, id post.ID) (publishing.PostView, error)
	// List is one page of posts; publishing.ErrBadCursor for a cursor it
	// did not make.
	List(ctx context.Context, f publishing.PostFilter) (publishing.PostPage, error)
	Cancel(ctx context.Context, id post.ID, account post.AccountID) ([]publishing.TargetOutcome, error)
	Reschedule(ctx context.Context, id post.ID, account post.AccountID, at time.Time) ([]publishing.TargetOutcome, error)
	RequestDelete(ctx context.Context, id post.ID, account post.AccountID, approve bool) ([]publishing.TargetOutcome, error)
	// Check is what validation says of a draft, written nowhere.
	Check(ctx context.Context, dr post.Draft, sizes map[string]int) (publishing.DraftCheck, error)
	// ChangeAccount sets an account's zone and slots; its queue follows.
	ChangeAccount(ctx context.Context, id post.AccountID, c publishing.AccountChange) (post.Account, []publishing.QueueMove, error)
	// ShowQueue, ReorderQueue and ShuffleQueue are an account's queue.
	ShowQueue(ctx context.Context, account post.AccountID, free int) (publishing.QueueView, error)
	ReorderQueue(ctx context.Context, account post.AccountID, first []post.ID) ([]publishing.QueueMove, error)
	ShuffleQueue(ctx context.Context, account post.AccountID, seed uint64) ([]publishing.QueueMove, error)
	// Approve, Reject and ListApprovals are the approval of posts that
	// wait for it (publishing.Desk's).
	Approve(ctx context.Context, req publishing.ApproveRequest) ([]publishing.TargetOutcome, error)
	Reject(ctx context.Context, id post.ID, account post.AccountID, reason, by string) ([]publishing.TargetOutcome, error)
	ListApprovals(ctx context.Context, limit int) (publishing.ApprovalQueue, error)
}

// Decider applies an operator's decision on a held entry:
// publishing.Operator.Decide (on one machine, also performing a delete
// once it is approved, as `oncepost approve` does).
type Decider interface {
	Decide(ctx context.Context, key ledger.Key, d publishing.Decision) (publishing.DecideResult, error)
}

// HeldLister lists the ledger entries an operator looks at: held ones and
// open ones (publishing.Ledger has both).
type HeldLister interface {
	Held(ctx context.Context, limit int) ([]ledger.Entry, error)
	Open(ctx context.Context, before time.Time, limit int) ([]ledger.Entry, error)
}

// AccountLister lists the workspace's accounts (publishing.Accounts has it).
type AccountLister interface {
	ListAccounts(ctx context.Context) ([]post.Account, error)
}

// TargetCounter counts targets by status (publishing.Posts has it).
type TargetCounter interface {
	CountTargets(ctx context.Context, statuses ...post.TargetStatus) (map[post.TargetStatus]int, error)
}

// DeadLetterQueue is the publish queue as an operator sees it: its depth,
// its dead letters, and the hand on them.
type DeadLetterQueue interface {
	Depth(ctx context.Context) (publishing.QueueDepth, error)
	// DeadLetters lists them, oldest first; a limit ≤ 0 means all.
	DeadLetters(ctx context.Context, limit int) ([]publishing.DeadLetter, error)
	publishing.DeadLetterAdmin
}

// Config is what the API is built from. Every port is required but
// Budgets, Webhooks and Recurring.
type Config struct {
	Desk        Desk
	Decider     Decider
	Held        HeldLister
	Accounts    AccountLister
	Targets     TargetCounter
	DeadLetters DeadLetterQueue
	Media       MediaWriter
	// Budgets, if set, gives each account's posting budget left.
	Budgets BudgetReader
	// Webhooks, if set, are the webhook subscriptions and deliveries
	// behind /v1/webhooks; without it those routes answer 501.
	Webhooks Webhooks
	// Recurring, if set, are the recurring rules behind /v1/recurring;
	// without it those routes answer 501.
	Recurring Recurring
	// AccountsReadOnly: callers of this API may not change an account
	// (the AWS api function writes no account: its operators change them
	// with the CLI and their own IAM credentials); PATCH
	// /v1/accounts/{id} answers 501.
	AccountsReadOnly bool
	// Auth is BearerTokens (one machine) or ContextPrincipal (AWS).
	Auth Auth
	// Logger gets the access log (method, route, status, duration,
	// principal id: never a header or a body) and server-side errors.
	Logger *slog.Logger
	// MaxJSONBytes bounds a JSON body (default 1 MiB); MaxMediaBytes an
	// upload (default 10 MiB). A larger body is refused with 413 before
	// it is read.
	MaxJSONBytes, MaxMediaBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Pause, tests only: POST /v1/posts calls it at PauseBeforeCommit
	// (validated, the answer encoded, the post not yet written) and at
	// PauseAfterCommit (the post written, the answer not yet sent).
	Pause func(ctx context.Context, point string)
}

// The points Config.Pause is called at.
const (
	PauseBeforeCommit = "before-commit"
	PauseAfterCommit  = "after-commit"
)

// Default body limits.
const (
	DefaultMaxJSONBytes  = 1 << 20
	DefaultMaxMediaBytes = 10 << 20
)

// MediaLimit is the most bytes an upload may be: MaxMediaBytes, else
// DefaultMaxMediaBytes. POST /v1/media and the console's composer take
// uploads up to it.
func (c Config) MediaLimit() int64 {
	if c.MaxMediaBytes <= 0 {
		return DefaultMaxMediaBytes
	}
	return c.MaxMediaBytes
}

// Server is the API's handler.
type Server struct {
	cfg    Config
	mux    *http.ServeMux
	log    *slog.Logger
	limits limiters
	routes []route
}

// route is one operation: its method and path (a ServeMux pattern, as
// the document's path), the scope it needs, its body limit (0: no body)
// and its handler. A handler returns the problem to answer, or nil when
// it answered.
type route struct {
	method, path string
	scope        Scope // "" for a route anyone may call
	maxBody      int64
	handle       func(w http.ResponseWriter, r *http.Request, p Principal) *Problem
}

// New builds the API; a missing port is an error.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Desk == nil, cfg.Decider == nil, cfg.Held == nil, cfg.Accounts == nil, cfg.Targets == nil, cfg.DeadLetters == nil, cfg.Media == nil:
		return nil, errors.New("httpapi: every port of Config is required")
	case cfg.Auth == nil:
		return nil, errors.New("httpapi: Config.Auth is required: BearerTokens(store) or ContextPrincipal()")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxJSONBytes <= 0 {
		cfg.MaxJSONBytes = DefaultMaxJSONBytes
	}
	cfg.MaxMediaBytes = cfg.MediaLimit()
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), log: cfg.Logger}
	j := cfg.MaxJSONBytes
	s.routes = []route{
		{"GET", "/v1/openapi.json", "", 0, s.getOpenAPI},

		{"POST", "/v1/posts", apitoken.ScopePosts, j, s.createPost},
		{"GET", "/v1/posts", apitoken.ScopeRead, 0, s.listPosts},
		{"GET", "/v1/posts/{id}", apitoken.ScopeRead, 0, s.getPost},
		{"POST", "/v1/posts/{id}/cancel", apitoken.ScopePosts, j, s.cancelPost},
		{"POST", "/v1/posts/{id}/reschedule", apitoken.ScopePosts, j, s.reschedulePost},
		{"POST", "/v1/posts/{id}/delete", apitoken.ScopePosts, j, s.deletePost},
		{"POST", "/v1/posts/{id}/approve", apitoken.ScopeDecide, j, s.approvePost},
		{"POST", "/v1/posts/{id}/reject", apitoken.ScopeDecide, j, s.rejectPost},
		{"GET", "/v1/approvals", apitoken.ScopeRead, 0, s.listApprovals},

		{"POST", "/v1/drafts/check", apitoken.ScopePosts, j, s.checkDraft},

		{"POST", "/v1/recurring", apitoken.ScopePosts, j, s.createRule},
		{"GET", "/v1/recurring", apitoken.ScopeRead, 0, s.listRules},
		{"GET", "/v1/recurring/{id}", apitoken.ScopeRead, 0, s.getRule},
		{"PATCH", "/v1/recurring/{id}", apitoken.ScopePosts, j, s.editRule},
		{"POST", "/v1/recurring/{id}/stop", apitoken.ScopePosts, 0, s.stopRule},

		{"POST", "/v1/media", apitoken.ScopePosts, cfg.MaxMediaBytes, s.uploadMedia},

		{"GET", "/v1/held", apitoken.ScopeRead, 0, s.listHeld},
		{"POST", "/v1/held/{key}/approve", apitoken.ScopeDecide, j, s.decide(publishing.DecisionRelease)},
		{"POST", "/v1/held/{key}/confirm", apitoken.ScopeDecide, j, s.decide(publishing.DecisionConfirm)},
		{"POST", "/v1/held/{key}/reject", apitoken.ScopeDecide, j, s.decide(publishing.DecisionReject)},

		{"GET", "/v1/accounts", apitoken.ScopeRead, 0, s.listAccounts},
		{"PATCH", "/v1/accounts/{id}", apitoken.ScopeOperate, j, s.patchAccount},
		{"GET", "/v1/accounts/{id}/queue", apitoken.ScopeRead, 0, s.getQueue},
		{"POST", "/v1/accounts/{id}/queue/reorder", apitoken.ScopePosts, j, s.reorderQueue},
		{"POST", "/v1/accounts/{id}/queue/shuffle", apitoken.ScopePosts, j, s.shuffleQueue},

		{"GET", "/v1/dead-letters", apitoken.ScopeRead, 0, s.listDeadLetters},
		{"POST", "/v1/dead-letters/{id}/redrive", apitoken.ScopeOperate, 0, s.redriveDeadLetter},
		{"DELETE", "/v1/dead-letters/{id}", apitoken.ScopeOperate, 0, s.dropDeadLetter},

		{"GET", "/v1/platforms", apitoken.ScopeRead, 0, s.listPlatforms},
		{"GET", "/v1/status", apitoken.ScopeRead, 0, s.getStatus},

		// Registered whether or not Config.Webhooks is set (without it
		// they answer 501), so the routes are the document's either way.
		{"GET", "/v1/webhooks", apitoken.ScopeRead, 0, s.listWebhooks},
		{"POST", "/v1/webhooks", apitoken.ScopeOperate, j, s.createWebhook},
		{"GET", "/v1/webhooks/{id}", apitoken.ScopeRead, 0, s.getWebhook},
		{"DELETE", "/v1/webhooks/{id}", apitoken.ScopeOperate, 0, s.deleteWebhook},
		{"GET", "/v1/webhooks/{id}/deliveries", apitoken.ScopeRead, 0, s.listWebhookDeliveries},
		{"POST", "/v1/webhooks/{id}/deliveries/{event_id}/redrive", apitoken.ScopeOperate, 0, s.redriveWebhookDelivery},
	}
	for _, rt := range s.routes {
		s.mux.Handle(rt.method+" "+rt.path, s.wrap(rt))
	}
	return s, nil
}

// ServeHTTP answers a request: a route's, or a problem for a path or
// method the API does not have.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.ErrorContext(r.Context(), "handler panicked", "method", r.Method, "route", r.Pattern, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if !rec.wrote {
				writeProblem(rec, newProblem(r, http.StatusInternalServerError, typeBlank, "the server failed; see its log"))
			}
		}
		s.log.InfoContext(r.Context(), "http request", "method", r.Method, "route", routeOf(r), "status", rec.status,
			"duration_ms", float64(time.Since(start).Microseconds())/1000, "principal", rec.principal)
	}()
	if _, pattern := s.mux.Handler(r); pattern == "" {
		s.noRoute(rec, r)
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// routeOf is the route pattern the request matched, for the log: never
// the path itself, which may carry ids.
func routeOf(r *http.Request) string {
	if r.Pattern != "" {
		return r.Pattern
	}
	return "(no route)"
}

// noRoute answers 405 (with Allow) for a path the API has under other
// methods, else 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		writeProblem(w, newProblem(r, http.StatusNotFound, typeBlank, "no such resource: "+r.URL.Path+" (GET /v1/openapi.json lists every path)"))
		return
	}
	allowed := ""
	for i, m := range allow {
		if i > 0 {
			allowed += ", "
		}
		allowed += m
	}
	w.Header().Set("Allow", allowed)
	writeProblem(w, newProblem(r, http.StatusMethodNotAllowed, typeBlank, r.Method+" is not allowed on "+r.URL.Path+"; use "+allowed))
}

// wrap runs a route: authenticate, rate-limit, check the scope, bound
// the body, then the handler. Nothing is read from the body before all of
// these passed.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec, _ := w.(*recorder)
		var p Principal
		if rt.scope != "" {
			var perSecond float64
			var prob *Problem
			p, perSecond, prob = s.cfg.Auth.authenticate(r, s.log)
			if prob != nil {
				writeProblem(w, prob)
				return
			}
			if rec != nil {
				rec.principal = p.ID
			}
			if ok, wait := s.limits.allow(p.ID, perSecond, time.Now()); !ok {
				prob := newProblem(r, http.StatusTooManyRequests, typeBlank, fmt.Sprintf("over this caller's rate of %g requests a second; retry after %s", perSecond, retryAfter(wait)+" s"))
				prob.retry = retryAfter(wait)
				writeProblem(w, prob)
				return
			}
			if !p.Allows(rt.scope) {
				writeProblem(w, scopeProblem(r, rt.scope))
				return
			}
		}
		if rt.maxBody > 0 {
			if r.ContentLength > rt.maxBody {
				w.Header().Set("Connection", "close")
				writeProblem(w, newProblem(r, http.StatusRequestEntityTooLarge, typeBlank,
					fmt.Sprintf("the body is %d bytes, over this route's limit of %d bytes", r.ContentLength, rt.maxBody)))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, rt.maxBody)
		}
		if prob := rt.handle(w, r, p); prob != nil {
			writeProblem(w, prob)
		}
	})
}

// scopeProblem is the 403 of a caller without the scope.
func scopeProblem(r *http.Request, scope Scope) *Problem {
	prob := newProblem(r, http.StatusForbidden, typeScopeMissing,
		fmt.Sprintf("this needs the scope %q, which the caller lacks; make a token with it (oncepost token add --scope %s)", scope, scope))
	prob.Scope = string(scope)
	return prob
}

// recorder keeps what the access log needs of a response.
type recorder struct {
	http.ResponseWriter
	status    int
	wrote     bool
	principal string
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// writeJSON answers status with v as JSON.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) *Problem {
	body, err := json.Marshal(v)
	if err != nil {
		return s.internal(r, fmt.Errorf("encode answer: %w", err))
	}
	writeRaw(w, status, "application/json", body)
	return nil
}

// writeRaw answers status with body.
func writeRaw(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// internal logs err and is the 500 to answer: its detail says nothing of
// the cause, which is in the log.
func (s *Server) internal(r *http.Request, err error) *Problem {
	s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "route", routeOf(r), "err", err)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return newProblem(r, http.StatusServiceUnavailable, typeBlank, "the request was cut short before it was answered; retry it")
	}
	return newProblem(r, http.StatusInternalServerError, typeBlank, "the server failed to answer; the cause is in its log at "+time.Now().UTC().Format(time.RFC3339))
}
