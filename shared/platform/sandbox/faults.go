package sandbox

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// plan is what one request suffers, from a scripted fault or from the
// random fault draw.
type plan struct {
	dropRequest  bool
	reject       FaultKind // Fault503, Fault429 or Fault401: answered before the commit
	retryAfter   time.Duration
	delayBefore  time.Duration
	delayAfter   time.Duration
	dropResponse bool
	fail500      bool
}

// String names the plan for logs.
func (p plan) String() string {
	var parts []string
	if p.dropRequest {
		parts = append(parts, string(FaultDropRequest))
	}
	if p.reject != "" {
		parts = append(parts, string(p.reject))
	}
	if p.delayBefore > 0 {
		parts = append(parts, string(FaultDelayBeforeCommit))
	}
	if p.delayAfter > 0 {
		parts = append(parts, string(FaultDelayAfterCommit))
	}
	if p.dropResponse {
		parts = append(parts, string(FaultDropResponse))
	}
	if p.fail500 {
		parts = append(parts, string(Fault500AfterCommit))
	}
	return strings.Join(parts, "+")
}

func planOf(f Fault) plan {
	var p plan
	switch f.Kind {
	case FaultDelayBeforeCommit:
		p.delayBefore = f.Delay
	case FaultDelayAfterCommit:
		p.delayAfter = f.Delay
	case FaultDropRequest:
		p.dropRequest = true
	case FaultDropResponse:
		p.dropResponse = true
	case Fault500AfterCommit:
		p.fail500 = true
	case Fault503, Fault401:
		p.reject = f.Kind
	case Fault429:
		p.reject = f.Kind
		p.retryAfter = f.RetryAfter
	}
	return p
}

// planFor decides the request's faults. A status create is also counted
// and recorded (see Creates); rec is the index of its record, -1 for other
// routes. For status creates three numbers are drawn from the seeded
// generator on every request, scripted or not, so the random plan of the
// n-th create depends only on the seed.
func (s *Server) planFor(route string, r *http.Request) (p plan, rec int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p = s.nextPlanLocked(route)
	rec = -1
	if route == RouteCreateStatus {
		rec = s.recordCreateLocked(r, p)
	}
	return p, rec
}

func (s *Server) nextPlanLocked(route string) plan {
	var random plan
	if route == RouteCreateStatus {
		s.stats.CreateRequests++
		loss, responseLoss, delay := s.rng.Float64(), s.rng.Float64(), s.rng.Float64()
		rf := s.opts.Random
		switch {
		case loss < rf.Loss:
			random.dropRequest = true
		default:
			random.dropResponse = responseLoss < rf.ResponseLoss
			if delay < rf.DelayRate {
				random.delayBefore = rf.Delay
			}
		}
	}
	if q := s.scripts[route]; len(q) > 0 {
		f := q[0]
		s.scripts[route] = q[1:]
		return planOf(f)
	}
	return random
}

// drop closes the client's connection without a response.
func drop(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (HTTP/2, a recorder): abort the response instead,
		// which net/http turns into a closed connection or a reset stream.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// rejectReply is the answer to a before-commit fault.
func (s *Server) rejectReply(p plan) reply {
	switch p.reject {
	case Fault401:
		h := http.Header{}
		h.Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		return reply{status: http.StatusUnauthorized, header: h, body: errorBody("The access token is invalid")}
	case Fault429:
		ra := p.retryAfter
		if ra <= 0 {
			ra = time.Second
		}
		secs := int((ra + time.Second - 1) / time.Second)
		h := http.Header{}
		h.Set("Retry-After", strconv.Itoa(secs))
		h.Set("X-RateLimit-Limit", "300")
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Reset", s.opts.Now().Add(ra).UTC().Format(timeFormat))
		return reply{status: http.StatusTooManyRequests, header: h, body: errorBody("Too many requests")}
	default:
		return errorReply(http.StatusServiceUnavailable, "There was a temporary problem serving your request, please try again")
	}
}
