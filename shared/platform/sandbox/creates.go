package sandbox

import (
	"net/http"
	"time"

	"oncepost/shared/platform"
)

// CreateRecord is one POST /api/v1/statuses request as the sandbox saw it,
// so the chaos drill can explain every outcome from the fault plan. It
// holds no token and no post text. GET /sandbox/creates serves it with the
// JSON names given.
type CreateRecord struct {
	// Seq numbers the create requests from 1 in the order they arrived,
	// which is the order the random fault plan is drawn in.
	Seq int `json:"seq"`
	// AccountID is the account of the request's bearer token, "" when the
	// token was missing or not valid.
	AccountID string `json:"account_id"`
	// IdempotencyKey is the request's Idempotency-Key header, read even
	// when the request was dropped.
	IdempotencyKey string `json:"idempotency_key"`
	// Fingerprint is platform.Fingerprint of the text and media as
	// committed, or as they would have been committed had the request got
	// that far (text stripped and mentions rewritten; a media id the
	// sandbox does not know counts as "unknown:<id>"). It is "" when the
	// body was never read (drop-request) or could not be parsed.
	Fingerprint string `json:"fingerprint"`
	// Fault is the fault plan the request suffered, as the debug log names
	// it (e.g. "drop-response", "delay-before-commit"); "" for none.
	Fault string `json:"fault"`
	// Committed is true when this request stored a new status.
	Committed bool `json:"committed"`
	// StatusID is the status this request committed or, for an idempotent
	// replay, the one it was answered with; "" otherwise.
	StatusID string `json:"status_id"`
	// HTTPStatus is the status code the sandbox answered with, 0 when it
	// closed the connection without an answer (drop-request,
	// drop-response). A delayed answer the client no longer waited for
	// still counts as answered.
	HTTPStatus int `json:"http_status"`
	// At is when the request arrived, by Options.Now.
	At time.Time `json:"at"`
}

// Creates returns a copy of the record of every status create request so
// far, in arrival order.
func (s *Server) Creates() []CreateRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CreateRecord(nil), s.creates...)
}

// recordCreateLocked appends the record of a create request that has just
// arrived with plan p and returns its index. Only headers are read.
func (s *Server) recordCreateLocked(r *http.Request, p plan) int {
	rec := CreateRecord{
		Seq:            s.stats.CreateRequests,
		IdempotencyKey: r.Header.Get("Idempotency-Key"),
		Fault:          p.String(),
		At:             s.opts.Now(),
	}
	if a, _, _, valid := s.authenticateLocked(r); valid {
		rec.AccountID = a.id
	}
	s.creates = append(s.creates, rec)
	if s.j != nil {
		s.j.add(record{Op: opCreate, Create: &createRec{
			Seq: rec.Seq, At: rec.At, Account: rec.AccountID, IdempotencyKey: rec.IdempotencyKey, Fault: rec.Fault,
		}})
	}
	return len(s.creates) - 1
}

// updateCreate applies edit to the record at index i; i < 0 (not a create
// request) is ignored.
func (s *Server) updateCreate(i int, edit func(*CreateRecord)) {
	if i < 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	edit(&s.creates[i])
}

// wouldBeFingerprintLocked is the fingerprint a create with params p by
// account a would commit: the prepared text and the SHA-256s of its media
// (each id once, in request order). a may be nil when the token was not
// valid; media is then looked up regardless of its owner.
func (s *Server) wouldBeFingerprintLocked(a *account, p statusParams) string {
	var shas []string
	seen := map[string]bool{}
	for _, id := range p.mediaIDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		if m := s.media[id]; m != nil && (a == nil || m.accountID == a.id) {
			shas = append(shas, m.sha256)
			continue
		}
		shas = append(shas, "unknown:"+id)
	}
	return platform.Fingerprint(s.prepareTextLocked(p.text), shas)
}
