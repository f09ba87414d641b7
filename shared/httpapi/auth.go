package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"oncepost/shared/apitoken"
	"oncepost/shared/post"
)

// Scope is what a caller may do (apitoken's scopes: read, posts, decide,
// operate, all).
type Scope = apitoken.Scope

// Principal is the caller of a request, in its context once
// authenticated.
type Principal struct {
	// ID names the caller in logs and scopes its idempotency keys: an
	// API token's id, or an IAM principal's ARN.
	ID string
	// Name is for people: the token's name, or the IAM user or role.
	Name   string
	Scopes []Scope
}

// Allows reports whether the principal has the scope (or all).
func (p Principal) Allows(s Scope) bool { return apitoken.Grants(p.Scopes, s) }

type principalKey struct{}

// WithPrincipal returns ctx carrying p: how an adapter that verified the
// caller itself (AWS: API Gateway checked the SigV4 signature) hands it
// to a handler built with ContextPrincipal.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the request's principal, if it has one.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok && p.ID != ""
}

// Auth is how the API learns who calls: BearerTokens or
// ContextPrincipal.
type Auth interface {
	// authenticate returns the caller and its request rate (requests a
	// second; 0: not limited here), or the problem to answer.
	authenticate(r *http.Request, log *slog.Logger) (Principal, float64, *Problem)
}

// BearerTokens authenticates `Authorization: Bearer op_…` against the
// tokens in store (one machine). A missing or unknown token is 401 with
// WWW-Authenticate; a revoked one is 401. Each token is limited to its
// rate. The token is looked up by its SHA-256 on every request, so a
// revoke takes effect at once; a token's last use is recorded at most
// once a minute.
func BearerTokens(store apitoken.Store) Auth {
	return &bearerAuth{store: store, touched: map[string]time.Time{}}
}

// ContextPrincipal takes the principal an adapter put in the request's
// context (WithPrincipal): the AWS API, where API Gateway verified the
// caller's IAM signature. A request without one is 401. Rates are API
// Gateway's to limit there.
func ContextPrincipal() Auth { return contextAuth{} }

// ContextPrincipalOr takes the principal an in-process adapter put in
// the request's context (WithPrincipal), and asks next for a request
// without one: the console, whose signed-in session calls /v1 from the
// browser, next to API tokens on the same server. Only code in this
// process can put a principal in a context; no header can.
func ContextPrincipalOr(next Auth) Auth { return contextOrAuth{next: next} }

type contextOrAuth struct{ next Auth }

func (c contextOrAuth) authenticate(r *http.Request, log *slog.Logger) (Principal, float64, *Problem) {
	if p, ok := PrincipalFrom(r.Context()); ok {
		return p, 0, nil
	}
	return c.next.authenticate(r, log)
}

type contextAuth struct{}

func (contextAuth) authenticate(r *http.Request, log *slog.Logger) (Principal, float64, *Problem) {
	p, ok := PrincipalFrom(r.Context())
	if !ok {
		return Principal{}, 0, newProblem(r, http.StatusUnauthorized, typeBlank, "the request carries no verified caller; sign it with AWS SigV4")
	}
	return p, 0, nil
}

type bearerAuth struct {
	store   apitoken.Store
	mu      sync.Mutex
	touched map[string]time.Time
}

// touchEvery is how often a token's last use is written.
const touchEvery = time.Minute

func (b *bearerAuth) authenticate(r *http.Request, log *slog.Logger) (Principal, float64, *Problem) {
	unauthorized := func(code, detail string) (Principal, float64, *Problem) {
		p := newProblem(r, http.StatusUnauthorized, typeBlank, detail)
		return Principal{}, 0, p.withChallenge(code, detail)
	}
	values := r.Header.Values("Authorization")
	if len(values) == 0 {
		return unauthorized("", "the Authorization header is missing; send Authorization: Bearer <token> (oncepost token add makes one)")
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	if len(values) > 1 || !ok || !strings.EqualFold(scheme, "Bearer") {
		return unauthorized("invalid_request", "the Authorization header is not one Bearer token; send Authorization: Bearer <token>")
	}
	token = strings.TrimSpace(token)
	if !apitoken.WellFormed(token) {
		return unauthorized("invalid_token", "the bearer token is not an oncepost API token (op_ and 52 letters and digits)")
	}
	t, err := b.store.TokenByHash(r.Context(), apitoken.Hash(token))
	if errors.Is(err, post.ErrNotFound) {
		return unauthorized("invalid_token", "the bearer token is unknown (oncepost token list)")
	}
	if err != nil {
		log.ErrorContext(r.Context(), "token lookup", "err", err)
		return Principal{}, 0, newProblem(r, http.StatusServiceUnavailable, typeBlank, "the token could not be checked now; try again")
	}
	if t.Revoked() {
		return unauthorized("invalid_token", "the bearer token was revoked at "+t.RevokedAt.UTC().Format(time.RFC3339))
	}
	b.touch(r.Context(), log, t.ID)
	rt := t.Rate
	if rt <= 0 {
		rt = apitoken.DefaultRate
	}
	return Principal{ID: t.ID, Name: t.Name, Scopes: t.Scopes}, rt, nil
}

// touch records the token's use, at most once a minute per token; a
// failure is logged, not answered: the request goes on.
func (b *bearerAuth) touch(ctx context.Context, log *slog.Logger, id string) {
	now := time.Now()
	b.mu.Lock()
	last, seen := b.touched[id]
	due := !seen || now.Sub(last) >= touchEvery
	if due {
		b.touched[id] = now
	}
	b.mu.Unlock()
	if due {
		if err := b.store.TouchToken(ctx, id, now.UTC()); err != nil {
			log.WarnContext(ctx, "token last use not recorded", "token_id", id, "err", err)
		}
	}
}

// withChallenge adds the RFC 6750 challenge to a 401.
func (p *Problem) withChallenge(code, detail string) *Problem {
	c := `Bearer realm="oncepost"`
	if code != "" {
		c += `, error="` + code + `", error_description="` + strings.ReplaceAll(detail, `"`, `'`) + `"`
	}
	p.challenge = c
	return p
}

// limiters keeps one token bucket per principal (golang.org/x/time/rate):
// rate requests a second, bursts of twice that.
type limiters struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

// allow takes one request from the principal's bucket; when it is empty,
// it returns false and how long until one is there.
func (l *limiters) allow(id string, perSecond float64, now time.Time) (bool, time.Duration) {
	if perSecond <= 0 {
		return true, 0
	}
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*rate.Limiter{}
	}
	lim, ok := l.m[id]
	if !ok || lim.Limit() != rate.Limit(perSecond) {
		burst := max(int(math.Ceil(2*perSecond)), 1)
		lim = rate.NewLimiter(rate.Limit(perSecond), burst)
		l.m[id] = lim
	}
	l.mu.Unlock()
	if lim.AllowN(now, 1) {
		return true, 0
	}
	res := lim.ReserveN(now, 1)
	wait := res.DelayFrom(now)
	res.CancelAt(now)
	return false, wait
}

// retryAfter is a Retry-After value: whole seconds, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(int(math.Ceil(d.Seconds())), 1))
}
