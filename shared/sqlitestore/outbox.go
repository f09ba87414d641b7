package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqltime"
)

// The outbox (DESIGN §8, Events). An event is written in the transaction
// of the state change that causes it: UpdateTarget, CreatePost,
// RescheduleTarget, the ledger's Create and Update and PutAccount derive
// it (publishing.TargetEvent, LedgerEvent, AccountEvent) inside their
// write transaction and, in that same transaction, keep it in the events
// log and insert one pending delivery per subscription that wants it.
// So the change and its deliveries commit together or not at all: a crash
// right after the commit leaves the deliveries in the file for the next
// process, and a change that rolls back leaves no event. Event ids are
// derived from the change and a delivery's id from its event's, so an
// event recorded twice gives one delivery per subscription (INSERT OR
// IGNORE on the delivery id).
//
// Fan-out happens at write time, so it needs the subscriptions: they are
// cached in the Store and re-read only when subscriptions_version, a
// counter every subscription write increments in its own transaction,
// differs from the cached one. The counter is read inside the change's
// transaction, so a subscription added by another process before the
// change commits is seen, and one removed is not fanned out to. The cost
// on a change that causes an event is one read of the counter, one events
// row and one row per delivery: about one more WAL page for the event and
// two per delivery (BenchmarkUpdateTargetOutbox); a change that causes
// none (most moves) costs nothing more.
//
// A commit that recorded a delivery wakes EventsWritten, so a notifier in
// the same process delivers within milliseconds; deliveries written by
// other processes are found by polling ClaimDeliveries.

// How long the outbox keeps what it no longer needs (PruneOutbox).
const (
	// DeliveredKeep is how long a delivered delivery is kept, for the
	// operator's view.
	DeliveredKeep = 7 * 24 * time.Hour
	// DeadKeep is how long a dead delivery is kept for a redrive.
	DeadKeep = 30 * 24 * time.Hour
	// EventKeep is how long the events table keeps an event (the record of
	// every event, with or without subscriptions), from when it was
	// recorded.
	EventKeep = 7 * 24 * time.Hour
)

// colWebhookSecret names the sealed column of a subscription's secret in
// the additional data (with the subscription id), so a sealed secret
// copied to another subscription or to a credential column does not open.
const colWebhookSecret = "webhook_secret"

// deliveryColumns are the deliveries columns scanDelivery reads.
const deliveryColumns = `seq, id, event, subscription_id, state, attempts, created_at, next_try, last_error, last_status, updated_at`

// subscriptionColumns are the subscriptions columns scanSubscription reads.
const subscriptionColumns = `id, url, events, secret, allow_private, description, created_at, disabled, disabled_reason`

// The outbox's periodic queries, through their indexes (TestQueryPlans).
const (
	// claimQuery: the due pending deliveries, oldest NextTry first (then
	// in the order recorded).
	claimQuery = `SELECT ` + deliveryColumns + ` FROM deliveries INDEXED BY deliveries_due
		WHERE state = 'pending' AND next_try <= ? ORDER BY next_try, seq LIMIT ?`
	// listDeliveriesQuery: one state, most recently updated first.
	listDeliveriesQuery = `SELECT ` + deliveryColumns + ` FROM deliveries INDEXED BY deliveries_by_state
		WHERE state = ? ORDER BY updated_at DESC, seq DESC LIMIT ?`
	// listAllDeliveriesQuery: every state, merged from the three ranges.
	listAllDeliveriesQuery = `SELECT ` + deliveryColumns + ` FROM deliveries INDEXED BY deliveries_by_state WHERE state = 'pending'
		UNION ALL SELECT ` + deliveryColumns + ` FROM deliveries INDEXED BY deliveries_by_state WHERE state = 'delivered'
		UNION ALL SELECT ` + deliveryColumns + ` FROM deliveries INDEXED BY deliveries_by_state WHERE state = 'dead'
		ORDER BY updated_at DESC, seq DESC LIMIT ?`
	// pruneDeliveriesQuery: up to ?3 deliveries in state ?1 last updated
	// before ?2.
	pruneDeliveriesQuery = `DELETE FROM deliveries WHERE seq IN (SELECT seq FROM deliveries INDEXED BY deliveries_by_state
		WHERE state = ?1 AND updated_at < ?2 ORDER BY updated_at LIMIT ?3)`
	// pruneEventsQuery: of the ?2 oldest events, those recorded before
	// ?1 (the log is in recording order, so it reads ?2 rows at most).
	pruneEventsQuery = `DELETE FROM events WHERE seq IN (SELECT seq FROM (SELECT seq, recorded_at FROM events ORDER BY seq LIMIT ?2)
		WHERE recorded_at < ?1)`
	// A removed subscription's pending and dead deliveries, through the
	// indexes that hold them.
	removePendingQuery = `DELETE FROM deliveries INDEXED BY deliveries_due WHERE state = 'pending' AND subscription_id = ?`
	removeDeadQuery    = `DELETE FROM deliveries INDEXED BY deliveries_by_state WHERE state = 'dead' AND subscription_id = ?`
	recentEventsQuery  = `SELECT event FROM events ORDER BY seq DESC LIMIT ?`
	// nextDueQuery: the earliest NextTry of a pending delivery.
	nextDueQuery = `SELECT next_try FROM deliveries INDEXED BY deliveries_due
		WHERE state = 'pending' ORDER BY next_try LIMIT 1`
)

// outboxStmts are the outbox's statements, prepared at Open.
type outboxStmts struct {
	// On the writer: the change's fan-out, and the port methods' writes.
	eventInsert, deliveryInsert, subsVersion, subsBump, subsFanOut *sql.Stmt
	claim, claimLease, deliveryRecord, deliveryState, redrive      *sql.Stmt
	subInsert, subDelete, subDisable, removePending, removeDead    *sql.Stmt
	pruneDeliveries, pruneEvents, deadUndecodable                  *sql.Stmt
	// On the readers.
	subGet, subList, listDeliveries, listAllDeliveries, recentEvents, nextDue *sql.Stmt
}

func (o *outboxStmts) all() []*sql.Stmt {
	return []*sql.Stmt{
		o.eventInsert, o.deliveryInsert, o.subsVersion, o.subsBump, o.subsFanOut,
		o.claim, o.claimLease, o.deliveryRecord, o.deliveryState, o.redrive,
		o.subInsert, o.subDelete, o.subDisable, o.removePending, o.removeDead,
		o.pruneDeliveries, o.pruneEvents, o.deadUndecodable,
		o.subGet, o.subList, o.listDeliveries, o.listAllDeliveries, o.recentEvents, o.nextDue,
	}
}

// prepareOutbox prepares the outbox's statements.
func (s *Store) prepareOutbox(ctx context.Context) error {
	o := &s.os
	list := []struct {
		dst   **sql.Stmt
		db    *sql.DB
		query string
	}{
		{&o.eventInsert, s.w, `INSERT INTO events (id, type, recorded_at, event) VALUES (?, ?, ?, ?)`},
		{&o.deliveryInsert, s.w, `INSERT INTO deliveries (id, event, subscription_id, state, attempts, created_at, next_try, updated_at)
			VALUES (?1, ?2, ?3, 'pending', 0, ?4, ?4, ?4) ON CONFLICT (id) DO NOTHING`},
		{&o.subsVersion, s.w, `SELECT coalesce((SELECT n FROM subscriptions_version WHERE id = 0), 0)`},
		{&o.subsBump, s.w, `INSERT INTO subscriptions_version (id, n) VALUES (0, 1) ON CONFLICT (id) DO UPDATE SET n = n + 1`},
		{&o.subsFanOut, s.w, `SELECT id, events, disabled FROM subscriptions ORDER BY id`},
		{&o.claim, s.w, claimQuery},
		{&o.claimLease, s.w, `UPDATE deliveries SET next_try = ?1, lease_until = ?1 WHERE seq = ?2 AND state = 'pending'`},
		{&o.deliveryRecord, s.w, `UPDATE deliveries SET state = ?, attempts = ?, next_try = ?, lease_until = '',
			last_error = ?, last_status = ?, updated_at = ? WHERE id = ? AND state = 'pending'`},
		{&o.deliveryState, s.w, `SELECT state FROM deliveries WHERE id = ?`},
		{&o.redrive, s.w, `UPDATE deliveries SET state = 'pending', attempts = 0, created_at = ?1, next_try = ?1,
			lease_until = '', updated_at = ?1 WHERE id = ?2 AND state = 'dead'`},
		{&o.deadUndecodable, s.w, `UPDATE deliveries SET state = 'dead', lease_until = '', last_error = ?, updated_at = ?
			WHERE seq = ? AND state = 'pending'`},
		{&o.subInsert, s.w, `INSERT INTO subscriptions (` + subscriptionColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, 0, '')
			ON CONFLICT (id) DO NOTHING`},
		{&o.subDelete, s.w, `DELETE FROM subscriptions WHERE id = ?`},
		{&o.subDisable, s.w, `UPDATE subscriptions SET disabled = 1, disabled_reason = ? WHERE id = ?`},
		{&o.removePending, s.w, removePendingQuery},
		{&o.removeDead, s.w, removeDeadQuery},
		{&o.pruneDeliveries, s.w, pruneDeliveriesQuery},
		{&o.pruneEvents, s.w, pruneEventsQuery},
		{&o.subGet, s.r, `SELECT ` + subscriptionColumns + ` FROM subscriptions WHERE id = ?`},
		{&o.subList, s.r, `SELECT ` + subscriptionColumns + ` FROM subscriptions ORDER BY id`},
		{&o.listDeliveries, s.r, listDeliveriesQuery},
		{&o.listAllDeliveries, s.r, listAllDeliveriesQuery},
		{&o.recentEvents, s.r, recentEventsQuery},
		{&o.nextDue, s.r, nextDueQuery},
	}
	for _, p := range list {
		st, err := p.db.PrepareContext(ctx, p.query)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", p.query, err)
		}
		*p.dst = st
	}
	return nil
}

// fanOutCache is the subscriptions as the fan-out needs them (no
// secrets), as of subscriptions_version = version.
type fanOutCache struct {
	mu      sync.Mutex
	valid   bool
	version int64
	subs    []publishing.Subscription
}

// subscribers returns the subscriptions as of tx: the cached list if the
// counter read in tx is the cached one, else the list read in tx.
func (s *Store) subscribers(ctx context.Context, tx *sql.Tx) ([]publishing.Subscription, error) {
	var v int64
	if err := tx.StmtContext(ctx, s.os.subsVersion).QueryRowContext(ctx).Scan(&v); err != nil {
		return nil, fmt.Errorf("read subscriptions version: %w", err)
	}
	c := &s.fanOut
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.valid && c.version == v {
		return c.subs, nil
	}
	rows, err := tx.StmtContext(ctx, s.os.subsFanOut).QueryContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("read subscriptions: %w", err)
	}
	defer rows.Close()
	var subs []publishing.Subscription
	for rows.Next() {
		var sub publishing.Subscription
		var events string
		if err := rows.Scan(&sub.ID, &events, &sub.Disabled); err != nil {
			return nil, fmt.Errorf("read subscriptions: %w", err)
		}
		if err := json.Unmarshal([]byte(events), &sub.Events); err != nil {
			return nil, fmt.Errorf("read subscription %s: events: %w", sub.ID, err)
		}
		subs = append(subs, sub)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read subscriptions: %w", err)
	}
	c.valid, c.version, c.subs = true, v, subs
	return subs, nil
}

// recordEvent appends e to the events log and inserts one pending
// delivery per subscription that wants it, due at once (unless a delivery
// with its id exists: the event was recorded before), all in tx. It
// returns how many deliveries it inserted. (An event recorded twice is
// in the log twice; only its deliveries count, and those are made once.)
func (s *Store) recordEvent(ctx context.Context, tx *sql.Tx, e publishing.Event) (int, error) {
	now := s.now()
	if e.At.IsZero() {
		e.At = now // a change without a time; the delivery still needs one
	}
	e.At = e.At.UTC()
	body, err := json.Marshal(e)
	if err != nil {
		return 0, err
	}
	if _, err := tx.StmtContext(ctx, s.os.eventInsert).ExecContext(ctx, e.ID, string(e.Type), sqltime.Encode(now), string(body)); err != nil {
		return 0, err
	}
	at := sqltime.Encode(e.At)
	subs, err := s.subscribers(ctx, tx)
	if err != nil {
		return 0, err
	}
	written := 0
	for _, sub := range subs {
		if !sub.Wants(e.Type) {
			continue
		}
		res, err := tx.StmtContext(ctx, s.os.deliveryInsert).ExecContext(ctx,
			publishing.DeliveryID(e.ID, sub.ID), string(body), sub.ID, at)
		if err != nil {
			return 0, fmt.Errorf("delivery to %s: %w", sub.ID, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		written += int(n)
	}
	return written, nil
}

// recordFunc records the event a change caused, if caused; callers pass
// the result of publishing.TargetEvent, LedgerEvent or AccountEvent.
type recordFunc func(e publishing.Event, caused bool) error

// writeChange runs fn in a write transaction (as write does) with a
// record function that records events in that transaction. A commit that
// recorded a delivery wakes EventsWritten.
func (s *Store) writeChange(ctx context.Context, fn func(tx *sql.Tx, record recordFunc) error) error {
	events, written := 0, 0
	err := s.write(ctx, func(tx *sql.Tx) error {
		events, written = 0, 0 // fn's transaction, not an earlier attempt's
		return fn(tx, func(e publishing.Event, caused bool) error {
			if !caused {
				return nil
			}
			n, err := s.recordEvent(ctx, tx, e)
			if err != nil {
				return fmt.Errorf("record event %s %s: %w", e.Type, e.ID, err)
			}
			events, written = events+1, written+n
			return nil
		})
	})
	if err != nil {
		return err
	}
	s.eventRows.Add(uint64(events))
	s.deliveryRows.Add(uint64(written))
	if written > 0 {
		s.wakeNotifier()
	}
	return nil
}

// wakeNotifier signals EventsWritten without blocking: one pending
// signal stands for any number of commits.
func (s *Store) wakeNotifier() {
	select {
	case s.eventsWritten <- struct{}{}:
	default:
	}
}

// EventsWritten receives a value after a commit of this Store recorded
// at least one delivery, so an in-process notifier can deliver at once
// instead of at its next poll. The channel holds one signal: a notifier
// that was busy finds it when it next looks, however many commits there
// were. Writes of other processes sharing the file do not signal it;
// polling ClaimDeliveries finds them.
func (s *Store) EventsWritten() <-chan struct{} { return s.eventsWritten }

// validateSubscription refuses a subscription the outbox could not
// deliver to, naming the field.
func validateSubscription(sub publishing.Subscription) error {
	switch {
	case sub.ID == "":
		return errors.New("id: empty")
	case sub.URL == "":
		return errors.New("url: empty")
	case sub.Secret == "":
		return errors.New("secret: empty")
	}
	for _, e := range sub.Events {
		if !publishing.ValidEventType(e) {
			return fmt.Errorf("events: %q is not an event type (want one of %v)", cut(string(e), 100), publishing.EventTypes)
		}
	}
	return nil
}

// AddSubscription stores sub with its secret sealed (the credentials'
// key, see "Credentials at rest"); an error wrapping post.ErrConflict if
// the id exists. A subscription without an id, URL or secret, or with an
// event type that is not one of publishing.EventTypes, is refused with an
// error naming the field. Changes recorded after it commits, by any
// process, are fanned out to it.
func (s *Store) AddSubscription(ctx context.Context, sub publishing.Subscription) error {
	if err := validateSubscription(sub); err != nil {
		return fmt.Errorf("add subscription %s: %w", sub.ID, err)
	}
	events := sub.Events
	if events == nil {
		events = []publishing.EventType{}
	}
	eventsJSON, err := json.Marshal(events)
	if err != nil {
		return fmt.Errorf("add subscription %s: events: %w", sub.ID, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, s.os.subInsert).ExecContext(ctx, sub.ID, sub.URL, string(eventsJSON),
			s.seal.s.Seal(sub.ID, colWebhookSecret, sub.Secret), sub.AllowPrivate, sub.Description, sqltime.Encode(sub.CreatedAt))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return fmt.Errorf("id exists: %w", post.ErrConflict)
		}
		_, err = tx.StmtContext(ctx, s.os.subsBump).ExecContext(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("add subscription %s: %w", sub.ID, err)
	}
	s.subscriptionWrites.Add(1)
	return nil
}

// GetSubscription reads a subscription with its secret opened, or returns
// an error wrapping post.ErrNotFound. A secret that does not open with
// the store's key gives an error wrapping ErrCredentialUndecryptable that
// names the subscription and the key file, never the value.
func (s *Store) GetSubscription(ctx context.Context, id string) (publishing.Subscription, error) {
	sub, err := s.scanSubscription(s.os.subGet.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return publishing.Subscription{}, fmt.Errorf("get subscription %s: %w", id, post.ErrNotFound)
	}
	if err != nil {
		return publishing.Subscription{}, fmt.Errorf("get subscription %s: %w", id, err)
	}
	return sub, nil
}

// ListSubscriptions lists every subscription, by id, secrets opened.
func (s *Store) ListSubscriptions(ctx context.Context) ([]publishing.Subscription, error) {
	rows, err := s.os.subList.QueryContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("list subscriptions: %w", err)
	}
	defer rows.Close()
	var out []publishing.Subscription
	for rows.Next() {
		sub, err := s.scanSubscription(rows)
		if err != nil {
			return nil, fmt.Errorf("list subscriptions: %w", err)
		}
		out = append(out, sub)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list subscriptions: %w", err)
	}
	return out, nil
}

// scanSubscription reads one row of subscriptionColumns and opens its
// secret.
func (s *Store) scanSubscription(sc scanner) (publishing.Subscription, error) {
	var sub publishing.Subscription
	var events, secret, createdAt string
	if err := sc.Scan(&sub.ID, &sub.URL, &events, &secret, &sub.AllowPrivate, &sub.Description, &createdAt,
		&sub.Disabled, &sub.DisabledReason); err != nil {
		return publishing.Subscription{}, err
	}
	if err := json.Unmarshal([]byte(events), &sub.Events); err != nil {
		return publishing.Subscription{}, fmt.Errorf("subscription %s: events: %w", sub.ID, err)
	}
	var d decoder
	sub.CreatedAt = d.time(createdAt)
	if d.err != nil {
		return publishing.Subscription{}, fmt.Errorf("subscription %s: %w", sub.ID, d.err)
	}
	plain, err := s.seal.s.Open(sub.ID, colWebhookSecret, secret)
	if err != nil {
		return publishing.Subscription{}, fmt.Errorf("subscription %s: its secret does not decrypt with the key in %s "+
			"(was the key file replaced?); remove the subscription and add it again: %w", sub.ID, s.keyFile, ErrCredentialUndecryptable)
	}
	sub.Secret = plain
	return sub, nil
}

// RemoveSubscription deletes a subscription with its pending and dead
// deliveries (none of which can be made any more; a worker holding one
// gets ErrDeliveryGone when it records the attempt), in one transaction;
// delivered ones stay until pruned. An error wrapping post.ErrNotFound
// for an unknown id.
func (s *Store) RemoveSubscription(ctx context.Context, id string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, s.os.subDelete).ExecContext(ctx, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return post.ErrNotFound
		}
		for _, st := range []*sql.Stmt{s.os.removePending, s.os.removeDead} {
			if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, id); err != nil {
				return fmt.Errorf("its deliveries: %w", err)
			}
		}
		_, err = tx.StmtContext(ctx, s.os.subsBump).ExecContext(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("remove subscription %s: %w", id, err)
	}
	s.subscriptionWrites.Add(1)
	return nil
}

// DisableSubscription marks a subscription disabled with a reason (cut to
// publishing.MaxReasonBytes): no event recorded after it commits is
// fanned out to it. Its deliveries are left to the notifier, which
// dead-letters those it claims. An error wrapping post.ErrNotFound for an
// unknown id.
func (s *Store) DisableSubscription(ctx context.Context, id, reason string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, s.os.subDisable).ExecContext(ctx, cut(reason, publishing.MaxReasonBytes), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return post.ErrNotFound
		}
		_, err = tx.StmtContext(ctx, s.os.subsBump).ExecContext(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("disable subscription %s: %w", id, err)
	}
	s.subscriptionWrites.Add(1)
	return nil
}

// ClaimDeliveries leases up to limit pending deliveries whose NextTry is
// not after now (oldest NextTry first; a limit ≤ 0 means all) until
// now+lease, in one write transaction, so no claim of any process returns
// them again before the lease ends. The lease is the delivery's NextTry:
// the claimed deliveries are returned with NextTry = now+lease, and one
// whose worker died is due again then. A due delivery whose stored event
// cannot be decoded (written by another program) is made dead, with the
// reason, instead of being claimed. When nothing is due, which a read
// connection tells, it returns without taking the write lock: polling
// costs the writers nothing.
func (s *Store) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]publishing.Delivery, error) {
	if lease <= 0 {
		return nil, fmt.Errorf("claim deliveries: lease %s: want a positive duration", lease)
	}
	if next, ok, err := s.NextDeliveryDue(ctx); err == nil && (!ok || next.After(now)) {
		return nil, nil
	}
	until := now.Add(lease).UTC()
	var out []publishing.Delivery
	err := s.write(ctx, func(tx *sql.Tx) error {
		out = out[:0]
		rows, err := tx.StmtContext(ctx, s.os.claim).QueryContext(ctx, sqltime.Encode(now), sqlLimit(limit))
		if err != nil {
			return err
		}
		type bad struct {
			seq    int64
			id     string
			reason string
		}
		var undecodable []bad
		var seqs []int64
		for rows.Next() {
			seq, d, err := scanDelivery(rows)
			var ue *undecodableDelivery
			switch {
			case errors.As(err, &ue):
				undecodable = append(undecodable, bad{seq, ue.id, ue.Error()})
				continue
			case err != nil:
				rows.Close()
				return err
			}
			out, seqs = append(out, d), append(seqs, seq)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		at := sqltime.Encode(s.now())
		for _, b := range undecodable {
			if _, err := tx.StmtContext(ctx, s.os.deadUndecodable).ExecContext(ctx, cut(b.reason, publishing.MaxReasonBytes), at, b.seq); err != nil {
				return fmt.Errorf("dead-letter undecodable delivery %s: %w", b.id, err)
			}
		}
		leaseStmt := tx.StmtContext(ctx, s.os.claimLease)
		for i := range out {
			if _, err := leaseStmt.ExecContext(ctx, sqltime.Encode(until), seqs[i]); err != nil {
				return fmt.Errorf("lease delivery %s: %w", out[i].ID, err)
			}
			out[i].NextTry = until
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries due at %s: %w", sqltime.Encode(now), err)
	}
	if len(out) > 0 {
		s.deliveryWrites.Add(1)
	}
	return out, nil
}

// NextDeliveryDue returns when the next pending delivery is due, so a
// notifier can sleep until then instead of polling: the earliest NextTry
// (a claimed delivery's is the end of its lease; one due already gives a
// time not after now), and false when no delivery is pending. One read of
// the index deliveries_due, from a read connection.
func (s *Store) NextDeliveryDue(ctx context.Context) (time.Time, bool, error) {
	var at string
	switch err := s.os.nextDue.QueryRowContext(ctx).Scan(&at); {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("next delivery due: %w", err)
	}
	t, err := sqltime.Decode(at)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next delivery due: next_try %q: %w", cut(at, maxValueBytes), err)
	}
	return t, true, nil
}

// deliveryStates are the states a delivery may be recorded in.
var deliveryStates = []publishing.DeliveryState{publishing.DeliveryPending, publishing.DeliveryDelivered, publishing.DeliveryDead}

// RecordDelivery stores the outcome of an attempt on a pending delivery:
// d's State, Attempts, NextTry, LastError (cut to
// publishing.MaxReasonBytes), LastStatus and UpdatedAt (now if zero); its
// lease ends. It returns an error wrapping publishing.ErrDeliveryGone when
// the delivery no longer exists (its subscription was removed), and one
// wrapping post.ErrConflict when it is delivered or dead already (another
// worker recorded it after this one's lease ran out): the first final
// outcome stays.
func (s *Store) RecordDelivery(ctx context.Context, d publishing.Delivery) error {
	if !slices.Contains(deliveryStates, d.State) {
		return fmt.Errorf("record delivery %s: state %q: want one of %v", d.ID, d.State, deliveryStates)
	}
	if d.UpdatedAt.IsZero() {
		d.UpdatedAt = s.now()
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, s.os.deliveryRecord).ExecContext(ctx, string(d.State), d.Attempts,
			sqltime.Encode(d.NextTry), cut(d.LastError, publishing.MaxReasonBytes), d.LastStatus, sqltime.Encode(d.UpdatedAt), d.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var state string
		switch err := tx.StmtContext(ctx, s.os.deliveryState).QueryRowContext(ctx, d.ID).Scan(&state); {
		case errors.Is(err, sql.ErrNoRows):
			return publishing.ErrDeliveryGone
		case err != nil:
			return err
		}
		return fmt.Errorf("it is %s already: %w", state, post.ErrConflict)
	})
	if err != nil {
		return fmt.Errorf("record delivery %s: %w", d.ID, err)
	}
	s.deliveryWrites.Add(1)
	return nil
}

// ListDeliveries lists deliveries in a state (every state when ""), most
// recently updated first (ties by id, descending), through the index
// deliveries_by_state; a limit ≤ 0 means all. Another state is refused.
func (s *Store) ListDeliveries(ctx context.Context, state publishing.DeliveryState, limit int) ([]publishing.Delivery, error) {
	var rows *sql.Rows
	var err error
	switch {
	case state == "":
		rows, err = s.os.listAllDeliveries.QueryContext(ctx, sqlLimit(limit))
	case slices.Contains(deliveryStates, state):
		rows, err = s.os.listDeliveries.QueryContext(ctx, string(state), sqlLimit(limit))
	default:
		return nil, fmt.Errorf("list deliveries: state %q: want one of %v, or none", state, deliveryStates)
	}
	if err != nil {
		return nil, fmt.Errorf("list deliveries %s: %w", state, err)
	}
	defer rows.Close()
	var out []publishing.Delivery
	for rows.Next() {
		_, d, err := scanDelivery(rows)
		if err != nil {
			return nil, fmt.Errorf("list deliveries %s: %w", state, err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list deliveries %s: %w", state, err)
	}
	return out, nil
}

// RedriveDelivery makes a dead delivery pending again, due at now, with
// no attempts and its CreatedAt (the start of its 24 h of retries) at
// now. An error wrapping post.ErrNotFound for an unknown id, and one
// wrapping post.ErrConflict for a delivery that is not dead.
func (s *Store) RedriveDelivery(ctx context.Context, id string, now time.Time) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, s.os.redrive).ExecContext(ctx, sqltime.Encode(now), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var state string
		switch err := tx.StmtContext(ctx, s.os.deliveryState).QueryRowContext(ctx, id).Scan(&state); {
		case errors.Is(err, sql.ErrNoRows):
			return post.ErrNotFound
		case err != nil:
			return err
		}
		return fmt.Errorf("it is %s; only a dead delivery is redriven: %w", state, post.ErrConflict)
	})
	if err != nil {
		return fmt.Errorf("redrive delivery %s: %w", id, err)
	}
	s.deliveryWrites.Add(1)
	return nil
}

// RecentEvents lists the events recorded in the last EventKeep (whether
// or not any subscription wanted them), newest first; a limit ≤ 0 means
// all.
func (s *Store) RecentEvents(ctx context.Context, limit int) ([]publishing.Event, error) {
	rows, err := s.os.recentEvents.QueryContext(ctx, sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("recent events: %w", err)
	}
	defer rows.Close()
	var out []publishing.Event
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("recent events: %w", err)
		}
		var e publishing.Event
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			return nil, fmt.Errorf("recent events: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("recent events: %w", err)
	}
	return out, nil
}

// PruneOutbox deletes what the outbox no longer needs as of now:
// delivered deliveries last updated more than DeliveredKeep ago, dead
// ones more than DeadKeep ago, and events recorded (by the store's clock)
// more than EventKeep ago. It deletes at most limit rows of each kind (a
// limit ≤ 0 means all), oldest first, in transactions of at most
// pruneBatch rows (deliveries found through the index
// deliveries_by_state, events from the start of their log), and returns
// how many rows it deleted. Pending deliveries are never pruned.
func (s *Store) PruneOutbox(ctx context.Context, now time.Time, limit int) (int, error) {
	total := 0
	for _, p := range []struct {
		what string
		stmt *sql.Stmt
		args []any // before the cut-off time and the batch size
	}{
		{"delivered deliveries", s.os.pruneDeliveries, []any{string(publishing.DeliveryDelivered)}},
		{"dead deliveries", s.os.pruneDeliveries, []any{string(publishing.DeliveryDead)}},
		{"events", s.os.pruneEvents, nil},
	} {
		keep := EventKeep
		switch p.what {
		case "delivered deliveries":
			keep = DeliveredKeep
		case "dead deliveries":
			keep = DeadKeep
		}
		before := sqltime.Encode(now.Add(-keep))
		done := 0
		for limit <= 0 || done < limit {
			n := pruneBatch
			if limit > 0 {
				n = min(n, limit-done)
			}
			var deleted int64
			err := s.write(ctx, func(tx *sql.Tx) error {
				res, err := tx.StmtContext(ctx, p.stmt).ExecContext(ctx, append(slices.Clone(p.args), before, n)...)
				if err != nil {
					return err
				}
				deleted, err = res.RowsAffected()
				return err
			})
			if err != nil {
				return total, fmt.Errorf("prune %s before %s: %w", p.what, before, err)
			}
			done += int(deleted)
			total += int(deleted)
			if deleted > 0 {
				s.deliveryWrites.Add(1)
			}
			if int(deleted) < n {
				break
			}
		}
	}
	return total, nil
}

// undecodableDelivery is a stored delivery this build cannot read.
type undecodableDelivery struct {
	id  string
	err error
}

func (e *undecodableDelivery) Error() string {
	return fmt.Sprintf("undecodable delivery %s: %v", e.id, e.err)
}

func (e *undecodableDelivery) Unwrap() error { return e.err }

// scanDelivery reads one row of deliveryColumns: its seq and the
// delivery. A row whose event or times cannot be decoded gives its seq
// and an *undecodableDelivery.
func scanDelivery(sc scanner) (int64, publishing.Delivery, error) {
	var seq int64
	var d publishing.Delivery
	var event, state, createdAt, nextTry, updatedAt string
	if err := sc.Scan(&seq, &d.ID, &event, &d.Subscription, &state, &d.Attempts, &createdAt, &nextTry,
		&d.LastError, &d.LastStatus, &updatedAt); err != nil {
		return 0, publishing.Delivery{}, err
	}
	d.State = publishing.DeliveryState(state)
	if err := json.Unmarshal([]byte(event), &d.Event); err != nil {
		return seq, publishing.Delivery{}, &undecodableDelivery{d.ID, fmt.Errorf("event: %w", err)}
	}
	var dec decoder
	d.CreatedAt, d.NextTry, d.UpdatedAt = dec.time(createdAt), dec.time(nextTry), dec.time(updatedAt)
	if dec.err != nil {
		return seq, publishing.Delivery{}, &undecodableDelivery{d.ID, dec.err}
	}
	return seq, d, nil
}
