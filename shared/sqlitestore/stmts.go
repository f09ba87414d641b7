package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"oncepost/shared/post"
)

// ledgerColumns are the ledger table's columns in the order scanEntry and
// entryArgs use.
const ledgerColumns = `key, action, account, subject, slot, state, attempt, handle, fingerprint,
	lease_owner, lease_until, open_since, sent_at, remote_id, reason, task_token, updated_at, expires_at,
	maybe_sent, look_after, retry_at, deferred_since, decision, post_id, checkpoint`

// statusTargets says, for every target status, how to read the targets in
// that status: through the partial index that holds it. The WHERE clause
// repeats the index's own condition, which is what lets SQLite use a
// partial index, and INDEXED BY makes Open (or the query) fail if it
// cannot. Within one status, targets_due and targets_settled are in slot
// order; targets_unfinished and targets_waiting are not (their statuses
// are transient and few).
var statusTargets = map[post.TargetStatus]string{
	post.NeedsApproval: `targets INDEXED BY targets_approval WHERE status = 'needs_approval'`,
	post.Scheduled:     `targets INDEXED BY targets_due WHERE status = 'scheduled'`,
	post.Triggered:     `targets INDEXED BY targets_unfinished WHERE status IN ('triggered', 'publishing') AND status = 'triggered'`,
	post.Publishing:    `targets INDEXED BY targets_unfinished WHERE status IN ('triggered', 'publishing') AND status = 'publishing'`,
	post.Waiting:       `targets INDEXED BY targets_waiting WHERE status = 'waiting'`,
	post.Published:     `targets INDEXED BY targets_settled WHERE status IN ('published', 'failed', 'held', 'cancelled', 'deleted') AND status = 'published'`,
	post.Failed:        `targets INDEXED BY targets_settled WHERE status IN ('published', 'failed', 'held', 'cancelled', 'deleted') AND status = 'failed'`,
	post.Held:          `targets INDEXED BY targets_settled WHERE status IN ('published', 'failed', 'held', 'cancelled', 'deleted') AND status = 'held'`,
	post.Cancelled:     `targets INDEXED BY targets_settled WHERE status IN ('published', 'failed', 'held', 'cancelled', 'deleted') AND status = 'cancelled'`,
	post.Deleted:       `targets INDEXED BY targets_settled WHERE status IN ('published', 'failed', 'held', 'cancelled', 'deleted') AND status = 'deleted'`,
}

// targetCounts says, for every target status, how CountTargets counts it:
// through the partial index that holds that status (statusTargets).
var targetCounts = func() map[post.TargetStatus]string {
	out := make(map[post.TargetStatus]string, len(statusTargets))
	for st, from := range statusTargets {
		out[st] = `SELECT count(*) FROM ` + from
	}
	return out
}()

// Queries whose plans the tests check (TestQueryPlans).
const (
	openQuery = `SELECT ` + ledgerColumns + ` FROM ledger INDEXED BY ledger_open
		WHERE state IN ('pending', 'unknown') AND open_since < ?
		ORDER BY open_since, key LIMIT ?`
	dueQuery = `SELECT post_id, account, slot FROM targets INDEXED BY targets_due
		WHERE status = 'scheduled' AND slot <= ?
		ORDER BY slot, post_id, account LIMIT ?`
	// unfinishedQuery merges two index range scans, each already in
	// (time, post_id, account) order: the index key plus the primary key
	// that every index of a WITHOUT ROWID table carries.
	unfinishedQuery = `SELECT post_id, account, slot, updated_at AS at FROM targets INDEXED BY targets_unfinished
			WHERE status IN ('triggered', 'publishing') AND updated_at < ?1
		UNION ALL
		SELECT post_id, account, slot, next_try AS at FROM targets INDEXED BY targets_waiting
			WHERE status = 'waiting' AND next_try < ?1
		ORDER BY at, post_id, account LIMIT ?2`
	unscheduledQuery = `SELECT post_id, account, slot FROM targets INDEXED BY targets_unscheduled
		WHERE status = 'scheduled' AND has_schedule = 0
		ORDER BY slot, post_id, account LIMIT ?`
	heldQuery = `SELECT ` + ledgerColumns + ` FROM ledger INDEXED BY ledger_held
		WHERE state = 'held' ORDER BY updated_at, key LIMIT ?`
	nextVisibleQuery = `SELECT visible_at FROM queue_messages INDEXED BY queue_messages_visible
		WHERE queue = ? AND ` + visibleAtReadable + ` ORDER BY visible_at LIMIT 1`
	expiredQuery = `SELECT key FROM ledger INDEXED BY ledger_expires
		WHERE expires_at != '' AND expires_at < ? AND state IN ('confirmed', 'failed')
		ORDER BY expires_at LIMIT ?`
)

// writeStmts are prepared on the writer connection.
type writeStmts struct {
	ledgerInsert, ledgerUpdate, ledgerExists, historyInsert      *sql.Stmt
	ledgerExpired, ledgerDelete, historyDelete, ledgerCheckpoint *sql.Stmt

	postInsert, targetInsert, targetSelect, targetUpdate, targetMarkScheduled *sql.Stmt
	postExists, targetReschedule, ledgerSendState                             *sql.Stmt

	accountPut, credentialPut, leaseTake, credentialSave, leaseRelease, refreshLost *sql.Stmt
	accountDelete, credentialDelete, accountStatus                                  *sql.Stmt

	blockedAdd, blockedRemove *sql.Stmt

	keyInsert, keySelect, keysPrune *sql.Stmt

	queueInsert, queueVisible, queueDeliver, queueToDead, queueDelete *sql.Stmt
	queueAck, queueRetry, queueByReceipt, queueCurrent                *sql.Stmt
	queueUndecodable                                                  *sql.Stmt
	deadFind, deadRedrive, deadDelete                                 *sql.Stmt
}

func (w *writeStmts) all() []*sql.Stmt {
	return []*sql.Stmt{
		w.ledgerInsert, w.ledgerUpdate, w.ledgerExists, w.historyInsert,
		w.ledgerExpired, w.ledgerDelete, w.historyDelete, w.ledgerCheckpoint,
		w.postInsert, w.targetInsert, w.targetSelect, w.targetUpdate, w.targetMarkScheduled,
		w.postExists, w.targetReschedule, w.ledgerSendState,
		w.accountPut, w.credentialPut, w.leaseTake, w.credentialSave, w.leaseRelease, w.refreshLost,
		w.accountDelete, w.credentialDelete, w.accountStatus, w.blockedAdd, w.blockedRemove,
		w.keyInsert, w.keySelect, w.keysPrune,
		w.queueInsert, w.queueVisible, w.queueDeliver, w.queueToDead, w.queueDelete,
		w.queueAck, w.queueRetry, w.queueByReceipt, w.queueCurrent, w.queueUndecodable,
		w.deadFind, w.deadRedrive, w.deadDelete,
	}
}

// readStmts are prepared on the read-only pool.
type readStmts struct {
	ledgerGet, ledgerOpen, ledgerHistory  *sql.Stmt
	ledgerHeld, ledgerByState             *sql.Stmt
	postGet, due, unfinished, unscheduled *sql.Stmt
	countAll                              *sql.Stmt
	count                                 map[post.TargetStatus]*sql.Stmt
	accountGet, accountList, credential   *sql.Stmt
	blocked                               *sql.Stmt
	keyGet                                *sql.Stmt
	deadLetters, queueAnyVisible          *sql.Stmt
	queueAnyUndecodable                   *sql.Stmt
	queueVisibleCount, queueHiddenCount   *sql.Stmt
	queueUndecodableCount, deadCount      *sql.Stmt
	queueNextVisible                      *sql.Stmt
}

func (r *readStmts) all() []*sql.Stmt {
	out := []*sql.Stmt{
		r.ledgerGet, r.ledgerOpen, r.ledgerHistory, r.ledgerHeld, r.ledgerByState,
		r.postGet, r.due, r.unfinished, r.unscheduled, r.countAll,
		r.accountGet, r.accountList, r.credential, r.blocked, r.keyGet,
		r.deadLetters, r.queueAnyVisible, r.queueAnyUndecodable,
		r.queueVisibleCount, r.queueHiddenCount, r.queueUndecodableCount, r.deadCount, r.queueNextVisible,
	}
	for _, st := range r.count {
		out = append(out, st)
	}
	return out
}

// prepare prepares every statement the store runs.
func (s *Store) prepare(ctx context.Context) error {
	w, r := &s.ws, &s.rs
	list := []struct {
		dst   **sql.Stmt
		db    *sql.DB
		query string
	}{
		// Ledger.
		{&w.ledgerInsert, s.w, `INSERT INTO ledger (` + ledgerColumns + `)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (key) DO NOTHING`},
		{&w.ledgerUpdate, s.w, `UPDATE ledger SET action = ?, account = ?, subject = ?, slot = ?,
			state = ?, attempt = ?, handle = ?, fingerprint = ?, lease_owner = ?, lease_until = ?,
			open_since = ?, sent_at = ?, remote_id = ?, reason = ?, task_token = ?, updated_at = ?, expires_at = ?,
			maybe_sent = ?, look_after = ?, retry_at = ?, deferred_since = ?, decision = ?, post_id = ?, checkpoint = ?
			WHERE key = ? AND state = ? AND attempt = ? AND task_token = ? AND decision = ?`},
		{&w.ledgerCheckpoint, s.w, `UPDATE ledger SET checkpoint = ?
			WHERE key = ? AND state = 'pending' AND attempt = ? AND lease_owner = ?`},
		{&w.ledgerExists, s.w, `SELECT state, attempt FROM ledger WHERE key = ?`},
		{&w.historyInsert, s.w, `INSERT INTO ledger_history (key, n, from_state, to_state, attempt, reason, at)
			SELECT ?1, coalesce(max(n), 0) + 1, ?2, ?3, ?4, ?5, ?6 FROM ledger_history WHERE key = ?1`},
		{&w.ledgerExpired, s.w, expiredQuery},
		{&w.ledgerDelete, s.w, `DELETE FROM ledger WHERE key = ? AND state IN ('confirmed', 'failed')`},
		{&w.historyDelete, s.w, `DELETE FROM ledger_history WHERE key = ?`},
		{&r.ledgerGet, s.r, `SELECT ` + ledgerColumns + ` FROM ledger WHERE key = ?`},
		{&r.ledgerOpen, s.r, openQuery},
		{&r.ledgerHistory, s.r, `SELECT from_state, to_state, attempt, reason, at FROM ledger_history
			WHERE key = ? ORDER BY n`},
		{&r.ledgerHeld, s.r, heldQuery},
		{&r.ledgerByState, s.r, `SELECT ` + ledgerColumns + ` FROM ledger
			WHERE state = ? ORDER BY updated_at, key LIMIT ?`},

		// Posts.
		{&w.postInsert, s.w, `INSERT INTO posts (id, body, media, created_at, texts, thread, author) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO NOTHING`},
		{&w.targetInsert, s.w, `INSERT INTO targets (post_id, account, position, slot, status, remote_id, reason, updated_at,
			next_try, has_schedule, queued)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&w.targetSelect, s.w, `SELECT slot, status, remote_id, reason, updated_at, next_try FROM targets
			WHERE post_id = ? AND account = ?`},
		{&w.targetUpdate, s.w, `UPDATE targets SET status = ?, remote_id = ?, reason = ?, updated_at = ?, next_try = ?
			WHERE post_id = ? AND account = ? AND status = ?`},
		{&w.targetMarkScheduled, s.w, `UPDATE targets SET has_schedule = 1
			WHERE post_id = ? AND account = ? AND status = 'scheduled' AND slot = ?`},
		{&w.postExists, s.w, `SELECT 1 FROM posts WHERE id = ?`},
		{&w.targetReschedule, s.w, `UPDATE targets SET slot = ?, status = 'scheduled', reason = '', next_try = '',
			updated_at = ?, has_schedule = 1
			WHERE post_id = ? AND account = ? AND status = ? AND slot = ?`},
		{&w.ledgerSendState, s.w, `SELECT state, maybe_sent FROM ledger WHERE key = ?`},
		{&r.postGet, s.r, `SELECT p.body, p.media, p.created_at, p.texts, p.thread, p.author,
			t.account, t.slot, t.status, t.remote_id, t.reason, t.updated_at, t.next_try, t.queued
			FROM posts p LEFT JOIN targets t ON t.post_id = p.id
			WHERE p.id = ? ORDER BY t.position`},
		{&r.due, s.r, dueQuery},
		{&r.unfinished, s.r, unfinishedQuery},
		{&r.unscheduled, s.r, unscheduledQuery},
		{&r.countAll, s.r, `SELECT status, count(*) FROM targets GROUP BY status`},

		// Accounts and credentials.
		{&w.accountPut, s.w, `INSERT INTO accounts (id, platform, handle, base_url, remote_id, credential_ref, gate,
			status, status_reason, max_characters, max_media, max_media_bytes, time_zone, slots, require_approval)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle,
			base_url = excluded.base_url, remote_id = excluded.remote_id,
			credential_ref = excluded.credential_ref, gate = excluded.gate,
			status = excluded.status, status_reason = excluded.status_reason,
			max_characters = excluded.max_characters, max_media = excluded.max_media,
			max_media_bytes = excluded.max_media_bytes, time_zone = excluded.time_zone,
			slots = excluded.slots, require_approval = excluded.require_approval`},
		{&w.accountDelete, s.w, `DELETE FROM accounts WHERE id = ?`},
		{&w.accountStatus, s.w, `SELECT status FROM accounts WHERE id = ?`},
		{&w.credentialDelete, s.w, `DELETE FROM credentials WHERE account_id = ?`},
		// Token values are encrypted (sealer); an empty value is stored
		// empty, so the comparisons with '' below still see it.
		{&w.credentialPut, s.w, `INSERT INTO credentials (account_id, access_token, refresh_token, expires_at,
			client_id, client_secret)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6)
			ON CONFLICT (account_id) DO UPDATE SET access_token = excluded.access_token,
			refresh_token = CASE WHEN excluded.refresh_token = '' THEN credentials.refresh_token ELSE excluded.refresh_token END,
			expires_at = excluded.expires_at, refresh_lost_at = '',
			client_id = excluded.client_id, client_secret = excluded.client_secret`},
		{&w.leaseTake, s.w, `INSERT INTO credentials (account_id, access_token, refresh_token, expires_at, lease_owner, lease_until)
			VALUES (?1, '', '', '', ?2, ?3)
			ON CONFLICT (account_id) DO UPDATE SET lease_owner = ?2, lease_until = ?3
			WHERE credentials.lease_owner = '' OR credentials.lease_owner = ?2 OR credentials.lease_until <= ?4`},
		{&w.credentialSave, s.w, `UPDATE credentials SET access_token = ?1,
			refresh_token = CASE WHEN ?2 = '' THEN refresh_token ELSE ?2 END,
			expires_at = ?3, refresh_lost_at = '', lease_owner = '', lease_until = '',
			client_id = ?6, client_secret = ?7
			WHERE account_id = ?4 AND lease_owner = ?5`},
		{&w.leaseRelease, s.w, `UPDATE credentials SET lease_owner = '', lease_until = ''
			WHERE account_id = ? AND lease_owner = ?`},
		{&w.refreshLost, s.w, `UPDATE credentials SET refresh_lost_at = ?, lease_owner = '', lease_until = ''
			WHERE account_id = ? AND lease_owner = ?`},
		{&r.accountGet, s.r, `SELECT id, platform, handle, base_url, remote_id, credential_ref, gate, status, status_reason,
			max_characters, max_media, max_media_bytes, time_zone, slots, require_approval
			FROM accounts WHERE id = ?`},
		{&r.accountList, s.r, `SELECT id, platform, handle, base_url, remote_id, credential_ref, gate, status, status_reason,
			max_characters, max_media, max_media_bytes, time_zone, slots, require_approval
			FROM accounts ORDER BY id`},
		{&r.credential, s.r, `SELECT access_token, refresh_token, expires_at, refresh_lost_at, client_id, client_secret
			FROM credentials WHERE account_id = ? AND access_token != ''`},

		// Blocklist.
		{&w.blockedAdd, s.w, `INSERT INTO blocklist (key, term, added_at) VALUES (?, ?, ?)
			ON CONFLICT (key) DO NOTHING`},
		{&w.blockedRemove, s.w, `DELETE FROM blocklist WHERE key = ?`},
		{&r.blocked, s.r, `SELECT key, term, added_at FROM blocklist ORDER BY key`},

		// Idempotency keys.
		{&w.keyInsert, s.w, `INSERT INTO idempotency_keys (` + keyColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (scope, key) DO NOTHING`},
		{&w.keySelect, s.w, keyQuery},
		{&w.keysPrune, s.w, keysPruneQuery},
		{&r.keyGet, s.r, keyQuery},

		// Queues. Fields another process may have written in a form this
		// build cannot decode are read as they are stored (receive_count
		// as any value) and checked by Receive and DeadLetters.
		{&w.queueInsert, s.w, `INSERT INTO queue_messages (queue, id, body, sent_at, visible_at)
			VALUES (?, ?, ?, ?, ?)`},
		{&w.queueVisible, s.w, `SELECT seq, id, body, sent_at, receive_count FROM queue_messages
			WHERE queue = ? AND visible_at <= ? ORDER BY visible_at, seq LIMIT ?`},
		{&w.queueDeliver, s.w, `UPDATE queue_messages SET receive_count = ?, visible_at = ?, receipt = ?
			WHERE seq = ?`},
		// The dead-letter table's receive_count stays a count even for a
		// message whose stored count could not be decoded (0 for text or
		// a negative number; the reason quotes the stored value).
		{&w.queueToDead, s.w, `INSERT INTO dead_letters (queue, id, body, sent_at, receive_count, reason, at)
			SELECT queue, id, body, sent_at, max(CAST(receive_count AS INTEGER), 0), ?, ? FROM queue_messages WHERE seq = ?`},
		{&w.queueDelete, s.w, `DELETE FROM queue_messages WHERE seq = ?`},
		{&w.queueAck, s.w, `DELETE FROM queue_messages WHERE seq = ? AND queue = ? AND receipt = ?`},
		{&w.queueRetry, s.w, `UPDATE queue_messages SET visible_at = ? WHERE seq = ? AND queue = ? AND receipt = ?`},
		{&w.queueByReceipt, s.w, `SELECT 1 FROM queue_messages WHERE seq = ? AND queue = ? AND receipt = ?`},
		{&w.queueCurrent, s.w, `SELECT receive_count FROM queue_messages WHERE seq = ? AND queue = ?`},
		// Dead-letter admin: a queue's dead letters are found by message
		// id through dead_letters_queue (they are few); a redriven message
		// is a new row, visible at once, never delivered yet.
		{&w.deadFind, s.w, `SELECT seq FROM dead_letters WHERE queue = ? AND id = ? ORDER BY seq LIMIT 1`},
		{&w.deadRedrive, s.w, `INSERT INTO queue_messages (queue, id, body, sent_at, visible_at, receive_count, receipt)
			SELECT queue, id, body, ?1, ?1, 0, '' FROM dead_letters WHERE seq = ?2`},
		{&w.deadDelete, s.w, `DELETE FROM dead_letters WHERE seq = ?`},
		{&r.queueAnyVisible, s.r, `SELECT 1 FROM queue_messages WHERE queue = ? AND visible_at <= ? LIMIT 1`},
		// Rows whose visible_at cannot be read, through the partial index
		// that holds them alone (the condition is the index's, word for
		// word, so SQLite can use it).
		{&w.queueUndecodable, s.w, `SELECT seq, id, visible_at FROM queue_messages INDEXED BY queue_messages_undecodable
			WHERE queue = ? AND ` + visibleAtUnreadable + ` ORDER BY seq LIMIT ?`},
		{&r.queueAnyUndecodable, s.r, `SELECT 1 FROM queue_messages INDEXED BY queue_messages_undecodable
			WHERE queue = ? AND ` + visibleAtUnreadable + ` LIMIT 1`},
		// Depth: visible, hidden (delivered, or sent with a delay), the
		// undecodable apart, and the dead letters.
		{&r.queueVisibleCount, s.r, `SELECT count(*) FROM queue_messages INDEXED BY queue_messages_visible
			WHERE queue = ?1 AND visible_at <= ?2 AND ` + visibleAtReadable},
		{&r.queueHiddenCount, s.r, `SELECT coalesce(sum(receive_count != 0), 0), coalesce(sum(receive_count = 0), 0)
			FROM queue_messages INDEXED BY queue_messages_visible WHERE queue = ?1 AND visible_at > ?2 AND ` + visibleAtReadable},
		{&r.queueUndecodableCount, s.r, `SELECT count(*) FROM queue_messages INDEXED BY queue_messages_undecodable
			WHERE queue = ? AND ` + visibleAtUnreadable},
		{&r.deadCount, s.r, `SELECT count(*) FROM dead_letters INDEXED BY dead_letters_queue WHERE queue = ?`},
		{&r.queueNextVisible, s.r, nextVisibleQuery},
		{&r.deadLetters, s.r, `SELECT id, body, receive_count, reason, at FROM dead_letters
			WHERE queue = ? ORDER BY seq LIMIT ?`},
	}
	for _, p := range list {
		st, err := p.db.PrepareContext(ctx, p.query)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", p.query, err)
		}
		*p.dst = st
	}
	r.count = make(map[post.TargetStatus]*sql.Stmt, len(targetCounts))
	for status, q := range targetCounts {
		st, err := s.r.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", q, err)
		}
		r.count[status] = st
	}
	return nil
}
