package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"oncepost/shared/post"
)

// The live statuses' stream.
const (
	// livePoll is how often a stream reads its page's posts again.
	livePoll = time.Second
	// liveFor is how long one stream lasts; the browser's EventSource
	// then reconnects, and the session is checked again.
	liveFor = 5 * time.Minute
	// liveKeepAlive is how often an idle stream sends a comment, so that
	// proxies keep it open.
	liveKeepAlive = 20 * time.Second
	// liveWriteTime is how long one write of the stream may take (the
	// server's WriteTimeout is pushed back before each).
	liveWriteTime = 30 * time.Second
)

// liveStatus is one target's status, as the stream sends it.
type liveStatus struct {
	Post    post.ID           `json:"post"`
	Account post.AccountID    `json:"account"`
	Status  post.TargetStatus `json:"status"`
}

// calendarLive is GET /calendar/live?view=…&at=…&account=…: server-sent
// events with the statuses of the posts the calendar page with the same
// query shows. It reads that page's days again every livePoll (only
// those: the same capped reads as the page) and sends an event
// "statuses" with the targets whose status changed: first every one (the
// page may be older than the stream), then the changes. The page's script
// (console.js) updates the badges.
func (h *Handler) calendarLive(w http.ResponseWriter, r *http.Request, s *session) {
	zone := s.location()
	q, err := parseCalendarQuery(r.URL.Query(), zone, h.cfg.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	every := h.liveEvery
	if every <= 0 {
		every = livePoll
	}
	ctx := r.Context()
	tick := time.NewTicker(every)
	defer tick.Stop()
	end := time.After(liveFor)
	sent := map[string]post.TargetStatus{}
	idle := time.Now()
	send := func(text string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(liveWriteTime))
		if _, err := fmt.Fprint(w, text); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// Retry after 2 s when the stream ends (EventSource's default is
	// about 3 s).
	if !send("retry: 2000\n\n") {
		return
	}
	for {
		days, err := h.calendarDays(ctx, q, nil)
		if err != nil {
			if ctx.Err() == nil {
				h.log.ErrorContext(ctx, "console: live statuses failed", "err", err)
			}
			return
		}
		var changed []liveStatus
		for _, d := range days {
			for _, it := range d.Items {
				for _, t := range it.Targets {
					k := string(it.ID) + "\x00" + string(t.Account)
					if st, ok := sent[k]; !ok || st != t.Status {
						sent[k] = t.Status
						changed = append(changed, liveStatus{Post: it.ID, Account: t.Account, Status: t.Status})
					}
				}
			}
		}
		slices.SortFunc(changed, func(a, b liveStatus) int {
			return strings.Compare(string(a.Post)+"\x00"+string(a.Account), string(b.Post)+"\x00"+string(b.Account))
		})
		changed = slices.CompactFunc(changed, func(a, b liveStatus) bool { return a == b })
		switch {
		case len(changed) > 0:
			data, err := json.Marshal(changed)
			if err != nil || !send("event: statuses\ndata: "+string(data)+"\n\n") {
				return
			}
			idle = time.Now()
		case time.Since(idle) >= liveKeepAlive:
			if !send(": keep-alive\n\n") {
				return
			}
			idle = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-end:
			return
		case <-tick.C:
		}
		// The session may have ended meanwhile (signed out, token
		// revoked, expired): the stream ends with it.
		if _, err := h.session(r); err != nil {
			return
		}
	}
}
