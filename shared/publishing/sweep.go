package publishing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"oncepost/shared/emf"
	"oncepost/shared/ledger"
	"oncepost/shared/post"
)

// StaleAfter is how long a ledger entry may stay open, or a target
// triggered, before the sweeper counts it (DESIGN G3).
const StaleAfter = 5 * time.Minute

// MissedAfter is how late a scheduled target may be before the sweeper
// triggers it itself (the scheduler missed it or is down).
const MissedAfter = time.Minute

// Sweeper finds what is not progressing, counts it, and repairs it by
// re-enqueueing the job or starting the confirm workflow (for a delete
// entry: reading the platform back) — never by sending to a platform
// itself. Run it every minute; its metrics raise the alarms
// (a missing sweep is itself an alarm: TreatMissingData breaching).
type Sweeper struct {
	Ledger  Ledger
	Posts   Posts
	Queue   Queue
	Trigger *Trigger
	// Publisher provides the confirm workflow starter with its settings.
	Publisher *Publisher
	// Deleter resolves stale delete entries by reading the platform back
	// (Deleter.ResolveStale: never a send, never a confirm workflow); nil
	// leaves them counted and alarming only.
	Deleter *Deleter
	// Operator makes recorded decisions converge (Operator.Converge): a
	// held entry carrying an operator's decision for longer than
	// DecisionGrace had its workflow fail after the decision reached it, or
	// the delivery fail. nil leaves them held (and HeldTargets alarming).
	Operator *Operator
	// DecisionGrace is how long a recorded decision is left to its
	// workflow, whose own retries take about two minutes; default 2 min.
	DecisionGrace time.Duration
	Metrics       MetricsEmitter
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Limit bounds each query; default 1000.
	Limit int
	// StaleAfter and MissedAfter replace the package's constants (a drill
	// that scales time down scales them too).
	StaleAfter, MissedAfter time.Duration
	Logger                  *slog.Logger
	// Recurring creates the occurrences of recurring rules due within its
	// horizon (Recurring.Materialize); nil: none are.
	Recurring *Recurring
}

// SweepReport is what one sweep found and did.
type SweepReport struct {
	// StalePending and StaleUnknown count ledger entries open for more than StaleAfter.
	StalePending int `json:"stale_pending"`
	StaleUnknown int `json:"stale_unknown"`
	// OldestOpenAge is the age of the oldest open entry (any age).
	OldestOpenAge time.Duration `json:"oldest_open_age"`
	// StuckTargets counts targets triggered or publishing for more than StaleAfter.
	StuckTargets int `json:"stuck_targets"`
	// MissedSchedules counts scheduled targets more than MissedAfter past their slot.
	MissedSchedules int `json:"missed_schedules"`
	// DeadLetters is the dead-letter queue's depth (capped at Limit).
	DeadLetters int `json:"dead_letters"`
	// HeldTargets wait for an operator (G2: held raises an alarm);
	// FailedTargets is the running total of failed targets (alarm on growth).
	HeldTargets   int `json:"held_targets"`
	FailedTargets int `json:"failed_targets"`
	// WaitingTargets wait for their next try (throttled, unreachable).
	WaitingTargets int `json:"waiting_targets"`
	// ApprovalOverdue wait for approval past their slot (G2: never sent
	// late on their own, so a person must hear of them).
	ApprovalOverdue int `json:"approval_overdue"`
	// QueueVisible is how many jobs wait to be received (a backlog when
	// more than none): stuck targets are not re-enqueued into one.
	QueueVisible int `json:"queue_visible"`
	// Requeued, ConfirmsStarted, Triggered and DeletesResolved are the
	// repairs made. DeletesResolved counts stale delete entries settled by
	// reading back (confirmed, released for the next run, or held for
	// approval when never sent).
	Requeued        int `json:"requeued"`
	ConfirmsStarted int `json:"confirms_started"`
	Triggered       int `json:"triggered"`
	DeletesResolved int `json:"deletes_resolved"`
	// DecisionsApplied counts recorded decisions the sweeper delivered
	// again or applied (Operator.Converge).
	DecisionsApplied int `json:"decisions_applied"`
	// Errors counts what failed: reads of the store (then no gauge is
	// emitted, so the gauges' alarms fire) and repairs.
	Errors int `json:"errors"`
	// ReadFailed is set when the sweep could not read the store: its
	// gauges would report zeros that are not true.
	ReadFailed bool `json:"read_failed"`
	// Recurring is what the materializer of recurring rules did.
	Recurring MaterializeReport `json:"recurring"`
}

// Alarming reports whether anything in the report should page someone.
func (r SweepReport) Alarming() bool {
	return r.ReadFailed || r.StalePending+r.StaleUnknown+r.StuckTargets+r.MissedSchedules+r.DeadLetters+r.HeldTargets+r.ApprovalOverdue > 0
}

func (s *Sweeper) now() time.Time { return nowFrom(s.Now) }

func (s *Sweeper) log() *slog.Logger { return loggerOr(s.Logger) }

// Sweep runs one pass. It returns the report even when some reads or
// repairs failed; the error joins the failures. A sweep that could not
// read the store emits no gauges, only SweepErrors: zeros would say all is
// well, while a missing gauge raises its alarm (TreatMissingData: breaching).
func (s *Sweeper) Sweep(ctx context.Context) (SweepReport, error) {
	now := s.now()
	limit := orDefault(s.Limit, 1000)
	staleAfter, missedAfter := orDefault(s.StaleAfter, StaleAfter), orDefault(s.MissedAfter, MissedAfter)
	var (
		rep  SweepReport
		errs []error
	)
	readFailed := func(err error) {
		errs = append(errs, err)
		rep.ReadFailed = true
	}
	requeued := map[Job]bool{}
	requeue := func(j Job) {
		if requeued[j] {
			return
		}
		requeued[j] = true
		if err := s.enqueue(ctx, j); err != nil {
			errs = append(errs, err)
			return
		}
		rep.Requeued++
	}

	// The gauges as the status surfaces read them (GaugeSources).
	gauges := GaugeSources{Ledger: s.Ledger, Targets: s.Posts, StaleAfter: staleAfter, Limit: limit}
	g, err := gauges.ReadOpen(ctx, now)
	if err != nil {
		readFailed(err)
	}
	rep.StalePending, rep.StaleUnknown, rep.OldestOpenAge = g.StalePending, g.StaleUnknown, g.OldestOpenAge
	for _, e := range g.Open {
		if !g.Stale(e) {
			break // oldest first: the rest are younger
		}
		switch {
		case e.Action == ledger.Upload:
			if err := s.releaseUpload(ctx, e, now); err != nil {
				errs = append(errs, err)
			}
		case e.Action == ledger.Delete:
			// Never to the confirm workflow (it looks for a post by
			// fingerprint): the Deleter reads the post back, and never sends.
			if s.Deleter == nil {
				break
			}
			switch next, err := s.Deleter.ResolveStale(ctx, e); {
			case errors.Is(err, ledger.ErrConflict):
				// Someone else moved it first.
			case err != nil:
				errs = append(errs, err)
			case next.State != e.State:
				rep.DeletesResolved++
				if next.State == ledger.Released || next.State == ledger.Held {
					s.log().WarnContext(ctx, "stale delete resolved; it is not done", "key", e.Key, "state", next.State, "reason", next.Reason,
						"next", "oncepost approve "+string(e.Key))
				}
			}
		case e.Action != ledger.Publish:
			// An action this sweeper does not know: counted, and it alarms.
		case e.State == ledger.Unknown:
			// Its workflow may have stopped without settling it (store
			// errors past its retries): startConfirm starts a new one then.
			if err := s.ensureConfirm(ctx, e); err != nil {
				errs = append(errs, err)
			} else {
				rep.ConfirmsStarted++
			}
		case e.LeaseExpired(now):
			// The owner died mid-call: unknown, and look before anything else.
			if err := s.expire(ctx, e); err != nil && !errors.Is(err, ledger.ErrConflict) {
				errs = append(errs, err)
			} else if err == nil {
				rep.ConfirmsStarted++
			}
		default:
			// Pending for longer than StaleAfter with a live lease: a
			// misconfigured lease or a stuck owner. Counted, and it alarms.
		}
	}

	if s.Operator != nil {
		n, err := s.ConvergeDecisions(ctx)
		rep.DecisionsApplied = n
		if err != nil {
			errs = append(errs, err)
		}
	}

	// Triggered or publishing targets not finished, and waiting targets
	// past their next try: the job was lost. A waiting target is never
	// re-enqueued before its next try.
	stuck, err := s.Posts.Unfinished(ctx, now.Add(-staleAfter), limit)
	if err != nil {
		readFailed(fmt.Errorf("unfinished targets: %w", err))
	}
	rep.StuckTargets = len(stuck)
	// Scheduled targets past their slot: the schedule did not fire, or its
	// job waits in line (a slot's firing does not mark its targets).
	missed, err := s.Posts.Due(ctx, now.Add(-missedAfter), limit)
	if err != nil {
		readFailed(fmt.Errorf("missed schedules: %w", err))
	}
	rep.MissedSchedules = len(missed)
	if len(stuck)+len(missed) > 0 {
		// Jobs waiting to be received (the top of the hour's line) are
		// probably these targets' own: a copy would only lengthen the
		// line. Re-enqueue and trigger only when nothing waits, i.e. when
		// a job may really have been lost or a schedule missed; they are
		// counted (and alarm) either way.
		depth, err := s.Queue.Depth(ctx)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("queue depth: %w", err))
		case depth.Visible > 0:
			rep.QueueVisible = depth.Visible
			s.log().InfoContext(ctx, "stuck and missed targets left alone: the queue has a backlog", "stuck_targets", len(stuck),
				"missed_schedules", len(missed), "queue_visible", depth.Visible)
		default:
			for _, ref := range stuck {
				// Publish decides from the ledger what the target needs: a
				// re-send only if the entry is released (and due) or absent.
				requeue(ref)
			}
			for _, ref := range missed {
				ok, err := s.Trigger.Fire(ctx, ref)
				if err != nil {
					errs = append(errs, err)
				}
				if ok {
					rep.Triggered++
				}
			}
		}
	}

	if c, ok := s.Queue.(DeadLetterCounter); ok {
		n, err := c.CountDeadLetters(ctx)
		if err != nil {
			readFailed(fmt.Errorf("dead letters: %w", err))
		}
		rep.DeadLetters = n
	} else {
		dls, err := s.Queue.DeadLetters(ctx, limit)
		if err != nil {
			readFailed(fmt.Errorf("dead letters: %w", err))
		}
		rep.DeadLetters = len(dls)
	}

	// Counted after the repairs and decisions above: what they settled
	// no longer alarms.
	if err := gauges.ReadTargets(ctx, &g); err != nil {
		readFailed(err)
	}
	rep.HeldTargets, rep.FailedTargets, rep.WaitingTargets = g.HeldTargets, g.FailedTargets, g.WaitingTargets
	rep.ApprovalOverdue = g.ApprovalOverdue
	rep.Errors = len(errs)

	if s.Metrics != nil {
		metrics := []emf.Metric{{Name: MetricSweepErrors, Unit: emf.Count, Value: float64(rep.Errors)}}
		if !rep.ReadFailed {
			metrics = append(metrics,
				emf.Metric{Name: "StalePending", Unit: emf.Count, Value: float64(rep.StalePending)},
				emf.Metric{Name: "StaleUnknown", Unit: emf.Count, Value: float64(rep.StaleUnknown)},
				emf.Metric{Name: "OldestOpenAgeSeconds", Unit: emf.Seconds, Value: rep.OldestOpenAge.Seconds()},
				emf.Metric{Name: "StuckTargets", Unit: emf.Count, Value: float64(rep.StuckTargets)},
				emf.Metric{Name: "MissedSchedules", Unit: emf.Count, Value: float64(rep.MissedSchedules)},
				emf.Metric{Name: "DeadLetters", Unit: emf.Count, Value: float64(rep.DeadLetters)},
				emf.Metric{Name: "SweepRequeued", Unit: emf.Count, Value: float64(rep.Requeued)},
				emf.Metric{Name: "HeldTargets", Unit: emf.Count, Value: float64(rep.HeldTargets)},
				emf.Metric{Name: "FailedTargets", Unit: emf.Count, Value: float64(rep.FailedTargets)},
				emf.Metric{Name: "WaitingTargets", Unit: emf.Count, Value: float64(rep.WaitingTargets)},
				emf.Metric{Name: MetricApprovalOverdue, Unit: emf.Count, Value: float64(rep.ApprovalOverdue)},
			)
		}
		// Filed under the sweep's start: one that ends in the next minute
		// must not leave its own without a datapoint (alarms count a
		// missing one as breaching).
		if err := s.Metrics.EmitAt(now, metrics...); err != nil {
			errs = append(errs, err)
		}
	}
	// Recurring rules last, after the gauges went out: a long
	// materialization (a rule's first 48 hours) must never cost a minute
	// its datapoints, which every alarm counts as breaching.
	if s.Recurring != nil {
		r, err := s.Recurring.Materialize(ctx)
		rep.Recurring = r
		if err != nil {
			errs = append(errs, err)
		}
		if s.Metrics != nil {
			if err := s.Metrics.EmitAt(now, emf.Metric{Name: MetricRecurringProblems, Unit: emf.Count, Value: float64(r.Problems)}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if rep.ReadFailed {
		s.log().ErrorContext(ctx, "sweep could not read the store; no gauges emitted", "errors", rep.Errors)
	}
	if rep.Alarming() {
		s.log().WarnContext(ctx, "sweep found work not progressing", "stale_pending", rep.StalePending, "stale_unknown", rep.StaleUnknown,
			"stuck_targets", rep.StuckTargets, "missed_schedules", rep.MissedSchedules, "dead_letters", rep.DeadLetters, "held_targets", rep.HeldTargets, "approval_overdue", rep.ApprovalOverdue,
			"requeued", rep.Requeued, "confirms_started", rep.ConfirmsStarted, "triggered", rep.Triggered, "deletes_resolved", rep.DeletesResolved)
	}
	return rep, errors.Join(errs...)
}

// MetricRecurringProblems counts the occurrences of recurring rules a
// sweep could not create (each rule's problem says why).
const MetricRecurringProblems = "RecurringProblems"

// ConvergeDecisions is the part of a sweep that makes every decision
// recorded longer than DecisionGrace ago on a still held entry take effect
// (Operator.Converge), and reports how many it delivered again or
// applied. A held entry's UpdatedAt is when its decision was recorded: a
// Hold step retried after a decision answers itself and writes nothing.
// It needs only Ledger, Operator and Now.
func (s *Sweeper) ConvergeDecisions(ctx context.Context) (int, error) {
	if s.Operator == nil {
		return 0, nil
	}
	now := s.now()
	held, err := s.Ledger.Held(ctx, orDefault(s.Limit, 1000))
	if err != nil {
		return 0, fmt.Errorf("held entries: %w", err)
	}
	grace := orDefault(s.DecisionGrace, 2*time.Minute)
	n := 0
	var errs []error
	for _, e := range held {
		if e.Decision == "" || now.Sub(e.UpdatedAt) < grace {
			continue
		}
		res, err := s.Operator.Converge(ctx, e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n++
		s.log().WarnContext(ctx, "recorded decision made to converge", "key", e.Key, "attempt", e.Attempt, "decision", e.Decision,
			"how", res.How, "state", res.Entry.State, "decided_at", e.UpdatedAt.Format(time.RFC3339))
	}
	return n, errors.Join(errs...)
}

func (s *Sweeper) enqueue(ctx context.Context, j Job) error {
	body, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode job: %w", err)
	}
	if _, err := s.Queue.Send(ctx, body, 0); err != nil {
		return fmt.Errorf("re-enqueue %s/%s: %w", j.Post, j.Account, err)
	}
	return nil
}

// expire moves a stale pending publish entry to unknown and starts its
// confirm workflow.
func (s *Sweeper) expire(ctx context.Context, e ledger.Entry) error {
	acc, err := s.Publisher.Accounts.GetAccount(ctx, post.AccountID(e.Account))
	if err != nil {
		return fmt.Errorf("expire %s: account: %w", e.Key, err)
	}
	// The client first: a lease is not expired for an account that cannot
	// be reached to start its confirm workflow.
	client, err := s.Publisher.clientFor(ctx, acc)
	if err != nil {
		return fmt.Errorf("expire %s: %w", e.Key, err)
	}
	_, err = s.Publisher.expireLease(ctx, e, acc, client)
	return err
}

// ensureConfirm makes sure the unknown entry's confirm workflow runs:
// starting it again while it runs is a no-op (named key-attempt), and one
// that stopped without settling the entry is replaced (key-attempt-rN).
func (s *Sweeper) ensureConfirm(ctx context.Context, e ledger.Entry) error {
	acc, err := s.Publisher.Accounts.GetAccount(ctx, post.AccountID(e.Account))
	if err != nil {
		return fmt.Errorf("confirm %s: account: %w", e.Key, err)
	}
	return s.Publisher.startConfirm(ctx, acc, nil, e, false)
}

// releaseUpload frees a stale upload entry: an expired lease becomes
// unknown, and an unknown upload is released (see ReasonOrphanUpload), so the
// next publish attempt uploads again. A live lease is left alone.
func (s *Sweeper) releaseUpload(ctx context.Context, e ledger.Entry, now time.Time) error {
	if e.State == ledger.Pending {
		if !e.LeaseExpired(now) {
			return nil
		}
		next, err := e.ExpireLease(now)
		if err != nil {
			return err
		}
		if err := s.Ledger.Update(ctx, e, next); err != nil {
			if errors.Is(err, ledger.ErrConflict) {
				return nil
			}
			return fmt.Errorf("expire stale upload %s: %w", e.Key, err)
		}
		e = next
	}
	next, err := e.Release(ReasonOrphanUpload, now)
	if err != nil {
		return err
	}
	if err := s.Ledger.Update(ctx, e, next); err != nil && !errors.Is(err, ledger.ErrConflict) {
		return fmt.Errorf("release stale upload %s: %w", e.Key, err)
	}
	return nil
}
