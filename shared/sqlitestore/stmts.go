package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
)

// ledgerColumns are the ledger table's columns in the order scanEntry and
// entryArgs use.
const ledgerColumns = `key, action, account, subject, slot, state, attempt, handle, fingerprint,
	lease_owner, lease_until, open_since, sent_at, remote_id, reason, task_token, updated_at, expires_at`

// writeStmts are prepared on the writer connection.
type writeStmts struct {
	ledgerInsert, ledgerUpdate, ledgerExists, historyInsert *sql.Stmt

	postInsert, targetInsert, targetSelect, targetUpdate *sql.Stmt

	accountPut, credentialPut, leaseTake, credentialSave, leaseRelease *sql.Stmt

	queueInsert, queueVisible, queueDeliver, queueToDead, queueDelete *sql.Stmt
	queueAck, queueRetry, queueByReceipt, queueCurrent                *sql.Stmt
}

func (w *writeStmts) all() []*sql.Stmt {
	return []*sql.Stmt{
		w.ledgerInsert, w.ledgerUpdate, w.ledgerExists, w.historyInsert,
		w.postInsert, w.targetInsert, w.targetSelect, w.targetUpdate,
		w.accountPut, w.credentialPut, w.leaseTake, w.credentialSave, w.leaseRelease,
		w.queueInsert, w.queueVisible, w.queueDeliver, w.queueToDead, w.queueDelete,
		w.queueAck, w.queueRetry, w.queueByReceipt, w.queueCurrent,
	}
}

// readStmts are prepared on the read-only pool.
type readStmts struct {
	ledgerGet, ledgerOpen, ledgerHistory *sql.Stmt
	postGet, due, unfinished             *sql.Stmt
	accountGet, accountList, credential  *sql.Stmt
	deadLetters, queueAnyVisible         *sql.Stmt
}

func (r *readStmts) all() []*sql.Stmt {
	return []*sql.Stmt{
		r.ledgerGet, r.ledgerOpen, r.ledgerHistory,
		r.postGet, r.due, r.unfinished,
		r.accountGet, r.accountList, r.credential,
		r.deadLetters, r.queueAnyVisible,
	}
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
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (key) DO NOTHING`},
		{&w.ledgerUpdate, s.w, `UPDATE ledger SET action = ?, account = ?, subject = ?, slot = ?,
			state = ?, attempt = ?, handle = ?, fingerprint = ?, lease_owner = ?, lease_until = ?,
			open_since = ?, sent_at = ?, remote_id = ?, reason = ?, task_token = ?, updated_at = ?, expires_at = ?
			WHERE key = ? AND state = ? AND attempt = ?`},
		{&w.ledgerExists, s.w, `SELECT state, attempt FROM ledger WHERE key = ?`},
		{&w.historyInsert, s.w, `INSERT INTO ledger_history (key, n, from_state, to_state, attempt, reason, at)
			SELECT ?1, coalesce(max(n), 0) + 1, ?2, ?3, ?4, ?5, ?6 FROM ledger_history WHERE key = ?1`},
		{&r.ledgerGet, s.r, `SELECT ` + ledgerColumns + ` FROM ledger WHERE key = ?`},
		{&r.ledgerOpen, s.r, `SELECT ` + ledgerColumns + ` FROM ledger
			WHERE state IN ('pending', 'unknown') AND open_since < ?
			ORDER BY open_since, key LIMIT ?`},
		{&r.ledgerHistory, s.r, `SELECT from_state, to_state, attempt, reason, at FROM ledger_history
			WHERE key = ? ORDER BY n`},

		// Posts.
		{&w.postInsert, s.w, `INSERT INTO posts (id, body, media, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (id) DO NOTHING`},
		{&w.targetInsert, s.w, `INSERT INTO targets (post_id, account, position, slot, status, remote_id, reason, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`},
		{&w.targetSelect, s.w, `SELECT slot, status, remote_id, reason, updated_at FROM targets
			WHERE post_id = ? AND account = ?`},
		{&w.targetUpdate, s.w, `UPDATE targets SET status = ?, remote_id = ?, reason = ?, updated_at = ?
			WHERE post_id = ? AND account = ? AND status = ?`},
		{&r.postGet, s.r, `SELECT p.body, p.media, p.created_at,
			t.account, t.slot, t.status, t.remote_id, t.reason, t.updated_at
			FROM posts p LEFT JOIN targets t ON t.post_id = p.id
			WHERE p.id = ? ORDER BY t.position`},
		{&r.due, s.r, `SELECT post_id, account, slot FROM targets
			WHERE status = 'scheduled' AND slot <= ?
			ORDER BY slot, post_id, account LIMIT ?`},
		{&r.unfinished, s.r, `SELECT post_id, account, slot FROM targets
			WHERE status IN ('triggered', 'publishing') AND updated_at < ?
			ORDER BY updated_at, post_id, account LIMIT ?`},

		// Accounts and credentials.
		{&w.accountPut, s.w, `INSERT INTO accounts (id, platform, handle, base_url, remote_id, credential_ref, gate)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET platform = excluded.platform, handle = excluded.handle,
			base_url = excluded.base_url, remote_id = excluded.remote_id,
			credential_ref = excluded.credential_ref, gate = excluded.gate`},
		{&w.credentialPut, s.w, `INSERT INTO credentials (account_id, access_token, refresh_token, expires_at)
			VALUES (?1, ?2, ?3, ?4)
			ON CONFLICT (account_id) DO UPDATE SET access_token = excluded.access_token,
			refresh_token = CASE WHEN excluded.refresh_token = '' THEN credentials.refresh_token ELSE excluded.refresh_token END,
			expires_at = excluded.expires_at`},
		{&w.leaseTake, s.w, `INSERT INTO credentials (account_id, access_token, refresh_token, expires_at, lease_owner, lease_until)
			VALUES (?1, '', '', '', ?2, ?3)
			ON CONFLICT (account_id) DO UPDATE SET lease_owner = ?2, lease_until = ?3
			WHERE credentials.lease_owner = '' OR credentials.lease_owner = ?2 OR credentials.lease_until <= ?4`},
		{&w.credentialSave, s.w, `UPDATE credentials SET access_token = ?1,
			refresh_token = CASE WHEN ?2 = '' THEN refresh_token ELSE ?2 END,
			expires_at = ?3, lease_owner = '', lease_until = ''
			WHERE account_id = ?4 AND lease_owner = ?5`},
		{&w.leaseRelease, s.w, `UPDATE credentials SET lease_owner = '', lease_until = ''
			WHERE account_id = ? AND lease_owner = ?`},
		{&r.accountGet, s.r, `SELECT id, platform, handle, base_url, remote_id, credential_ref, gate
			FROM accounts WHERE id = ?`},
		{&r.accountList, s.r, `SELECT id, platform, handle, base_url, remote_id, credential_ref, gate
			FROM accounts ORDER BY id`},
		{&r.credential, s.r, `SELECT access_token, refresh_token, expires_at FROM credentials
			WHERE account_id = ? AND access_token != ''`},

		// Queues.
		{&w.queueInsert, s.w, `INSERT INTO queue_messages (queue, id, body, sent_at, visible_at)
			VALUES (?, ?, ?, ?, ?)`},
		{&w.queueVisible, s.w, `SELECT seq, id, body, sent_at, receive_count FROM queue_messages
			WHERE queue = ? AND visible_at <= ? ORDER BY visible_at, seq LIMIT ?`},
		{&w.queueDeliver, s.w, `UPDATE queue_messages SET receive_count = ?, visible_at = ?, receipt = ?
			WHERE seq = ?`},
		{&w.queueToDead, s.w, `INSERT INTO dead_letters (queue, id, body, sent_at, receive_count, reason, at)
			SELECT queue, id, body, sent_at, receive_count, ?, ? FROM queue_messages WHERE seq = ?`},
		{&w.queueDelete, s.w, `DELETE FROM queue_messages WHERE seq = ?`},
		{&w.queueAck, s.w, `DELETE FROM queue_messages WHERE seq = ? AND queue = ? AND receipt = ?`},
		{&w.queueRetry, s.w, `UPDATE queue_messages SET visible_at = ? WHERE seq = ? AND queue = ? AND receipt = ?`},
		{&w.queueByReceipt, s.w, `SELECT 1 FROM queue_messages WHERE seq = ? AND queue = ? AND receipt = ?`},
		{&w.queueCurrent, s.w, `SELECT receive_count FROM queue_messages WHERE seq = ? AND queue = ?`},
		{&r.queueAnyVisible, s.r, `SELECT 1 FROM queue_messages WHERE queue = ? AND visible_at <= ? LIMIT 1`},
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
	return nil
}
