package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/localflow"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// embeddedBackend is the embedded workspace's runtime as the operator
// commands use it; nothing runs.
func embeddedBackend(rt *runtime) *backend {
	return &backend{
		kind: backendEmbedded, ledger: rt.store, posts: rt.store, accounts: rt.store, admin: rt.store,
		views: sqliteViews{rt.store}, lister: rt.store, queue: rt.store, schedules: embeddedSchedules{rt}, keys: rt.store, deadLetters: rt.queue, depth: sqliteDepth{rt.queue},
		looks: localLooks{rt.flows}, operator: rt.operator, deleter: rt.deleter, media: mediaDir(rt.cfg.MediaDir), webhooks: rt.store, close: rt.Close,
		rules: rt.store,
	}
}

// openStatus opens what `status` reads: on the embedded workspace the
// store alone (no workflow engine nor scheduler is set up), on AWS the
// stack as every command opens it.
func (w *where) openStatus(ctx context.Context) (*backend, error) {
	if err := w.check(); err != nil {
		return nil, err
	}
	if w.isAWS() {
		return w.openStack(ctx)
	}
	if err := mustExist(w.db); err != nil {
		return nil, err
	}
	s, err := sqlitestore.Open(ctx, w.db, sqlitestore.Options{})
	if err != nil {
		return nil, err
	}
	q := s.Queue("publish", 0)
	return &backend{kind: backendEmbedded, ledger: s, posts: s, accounts: s, admin: s, views: sqliteViews{s}, lister: s, queue: s, keys: s,
		deadLetters: q, depth: sqliteDepth{q}, webhooks: s, close: s.Close}, nil
}

// sqliteDepth is the embedded publish queue's depth.
type sqliteDepth struct{ q *sqlitestore.Queue }

// Depth counts the queue's messages (sqlitestore.Queue.Depth).
func (d sqliteDepth) Depth(ctx context.Context) (queueDepth, error) {
	qd, err := d.q.Depth(ctx)
	return queueDepth{Visible: qd.Visible, InFlight: qd.InFlight, Delayed: qd.Delayed, Undecodable: qd.Undecodable, DeadLetters: qd.DeadLetters}, err
}

// sqliteViews are the operator's lists on the SQLite store.
type sqliteViews struct{ s *sqlitestore.Store }

// Waiting lists waiting targets, next try first.
func (v sqliteViews) Waiting(ctx context.Context, limit int) ([]waitingTarget, error) {
	ws, err := v.s.Waiting(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]waitingTarget, len(ws))
	for i, w := range ws {
		out[i] = waitingTarget(w)
	}
	return out, nil
}

// Counts reads every target status and ledger state in one snapshot.
func (v sqliteViews) Counts(ctx context.Context) (storeCounts, error) {
	sum, err := v.s.Summary(ctx)
	if err != nil {
		return storeCounts{}, err
	}
	return storeCounts{Targets: sum.Targets, Ledger: sum.Ledger}, nil
}

// embeddedSchedules are the targets' one-time schedules in localcron,
// written in the post's transaction.
type embeddedSchedules struct{ rt *runtime }

var (
	_ publishing.PostScheduler     = embeddedSchedules{}
	_ publishing.ApprovalScheduler = embeddedSchedules{}
)

// CreatePost writes the post, its targets' schedules and the key's record
// (if any) in one transaction (runtime.createPostKeyed).
func (e embeddedSchedules) CreatePost(ctx context.Context, p post.Post, key *publishing.IdempotencyRecord) error {
	return e.rt.createPostKeyed(ctx, p, key)
}

// Reschedule moves the target and replaces its schedule in one
// transaction, then deletes the old slot's schedule.
func (e embeddedSchedules) Reschedule(ctx context.Context, id post.ID, account post.AccountID, slot time.Time) error {
	rt := e.rt
	defer rt.cron.Wake()
	var old publishing.TargetRef
	_, err := rt.store.RescheduleTarget(ctx, id, account, slot, time.Now(), func(tx *sql.Tx, prev, next publishing.TargetRef) error {
		old = prev
		return rt.scheduleTx(ctx, tx, next)
	})
	if err != nil {
		return err
	}
	rt.dropSchedule(ctx, old)
	return nil
}

// Approved makes the schedule of a target just approved (moved from
// needs_approval to scheduled, without a schedule): the same path the
// runtime takes for a scheduled target without one (MarkScheduled), so a
// crash before it is repaired by syncSchedules.
func (e embeddedSchedules) Approved(ctx context.Context, ref publishing.TargetRef) error {
	rt := e.rt
	if err := rt.store.MarkScheduled(ctx, ref, func(tx *sql.Tx) error { return rt.scheduleTx(ctx, tx, ref) }); err != nil {
		return err
	}
	rt.cron.Wake()
	return nil
}

// Cancelled deletes the target's schedule.
func (e embeddedSchedules) Cancelled(ctx context.Context, ref publishing.TargetRef) {
	e.rt.dropSchedule(ctx, ref)
}

// localLooks counts looks in the local workflow engine's executions.
type localLooks struct{ flows *localflow.Engine }

// Looks counts the Look states the attempt's confirm workflows (the name
// and its replacements -r2 …) entered.
func (l localLooks) Looks(ctx context.Context, e ledger.Entry) (int, error) {
	n := 0
	base := publishing.ConfirmName(e.Key, e.Attempt)
	for run := 1; run <= publishing.MaxConfirmRuns; run++ {
		name := base
		if run > 1 {
			name = fmt.Sprintf("%s-r%d", base, run)
		}
		ex, err := l.flows.Describe(ctx, name)
		if errors.Is(err, localflow.ErrExecutionDoesNotExist) {
			break
		}
		if err != nil {
			return n, fmt.Errorf("describe confirm workflow %s: %w", name, err)
		}
		n += countStates(ex.History, "Look")
	}
	return n, nil
}
