package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqltime"
)

// CreatePost stores a new post with its targets in one transaction; an
// error wrapping post.ErrConflict if the id exists. Its scheduled targets
// count as unscheduled (Unscheduled lists them) until MarkScheduled.
func (s *Store) CreatePost(ctx context.Context, p post.Post) error {
	if err := s.createPost(ctx, p, nil, nil); err != nil {
		return fmt.Errorf("create post %s: %w", p.ID, err)
	}
	return nil
}

// CreatePostScheduled stores a new post with its targets, like CreatePost,
// and calls schedule for each target in status scheduled, in the same
// transaction: the post and its schedules are stored together or not at
// all. schedule must write through tx only (e.g. the runtime's schedule
// table in the same file) and must not call back into the store. An error
// from schedule rolls everything back and is returned wrapped.
func (s *Store) CreatePostScheduled(ctx context.Context, p post.Post, schedule func(tx *sql.Tx, ref publishing.TargetRef) error) error {
	if schedule == nil {
		return fmt.Errorf("create post %s: no schedule function", p.ID)
	}
	if err := s.createPost(ctx, p, nil, schedule); err != nil {
		return fmt.Errorf("create post %s: %w", p.ID, err)
	}
	return nil
}

// CreatePostKeyed stores a new post like CreatePostScheduled (schedule may
// be nil: then like CreatePost) and, when key is not nil, the key's
// record, naming the post, in the same transaction: a retried create
// finds the record, never a second post. The key is inserted first: if a
// record with its scope and key exists, nothing is written and the error
// wraps a *publishing.KeyExistsError holding the stored record (InFlight
// false: the record's post was committed with it), even when the post's
// id exists too; an existing id alone gives post.ErrConflict.
func (s *Store) CreatePostKeyed(ctx context.Context, p post.Post, key *publishing.IdempotencyRecord, schedule func(tx *sql.Tx, ref publishing.TargetRef) error) error {
	if err := s.createPost(ctx, p, key, schedule); err != nil {
		return fmt.Errorf("create post %s: %w", p.ID, err)
	}
	return nil
}

// createPost inserts p and its targets in one transaction, after the
// key's record if there is one. With a schedule function, it calls it for
// every scheduled target and records that the target has its schedule
// (has_schedule = 1). A target created in a status that causes an event
// (publishing.TargetEvent from the zero target: published, failed, held,
// deleted) has it recorded in the transaction.
//
// Creates made at the same moment share a transaction (commitCreates):
// each is written under its own savepoint, so one refused (an id or key
// that exists) is rolled back alone and the others commit.
func (s *Store) createPost(ctx context.Context, p post.Post, key *publishing.IdempotencyRecord, schedule func(tx *sql.Tx, ref publishing.TargetRef) error) error {
	seen := make(map[post.AccountID]bool, len(p.Targets))
	for _, t := range p.Targets {
		if seen[t.Account] {
			return fmt.Errorf("account %s is targeted twice", t.Account)
		}
		seen[t.Account] = true
	}
	c := &create{p: p, schedule: schedule, done: make(chan struct{})}
	var err error
	if c.media, err = json.Marshal(p.Media); err != nil {
		return fmt.Errorf("encode media: %w", err)
	}
	if len(p.Texts) > 0 {
		if c.texts, err = json.Marshal(p.Texts); err != nil {
			return fmt.Errorf("encode texts: %w", err)
		}
	}
	if len(p.Thread) > 0 {
		if c.thread, err = json.Marshal(p.Thread); err != nil {
			return fmt.Errorf("encode thread: %w", err)
		}
	}
	if key != nil {
		rec := *key
		rec.Post = p.ID
		if rec.CreatedAt.IsZero() {
			rec.CreatedAt = s.now()
		}
		c.key = &rec
	}
	return s.commitCreates(ctx, c)
}

// create is one post to insert, and its outcome once its transaction
// ended (done closed).
type create struct {
	p        post.Post
	media    []byte
	texts    []byte
	thread   []byte
	key      *publishing.IdempotencyRecord
	schedule func(tx *sql.Tx, ref publishing.TargetRef) error
	err      error
	done     chan struct{}
}

// commitCreates is group commit for creates. SQLite has one writer: when
// many clients create posts at once (the HTTP API), each transaction
// waits for every one before it, and its BEGIN, COMMIT and the pages
// every create touches (the indexes' upper levels) are paid once per
// post. Here the first caller becomes the leader: it writes every create
// waiting at that moment in one transaction, each under a savepoint,
// then the next group, until none waits; the others wait for their
// outcome. The leader writes without its own cancellation, so a client
// that goes away does not fail the others' creates.
func (s *Store) commitCreates(ctx context.Context, c *create) error {
	s.createMu.Lock()
	s.createQueue = append(s.createQueue, c)
	if s.createLeading {
		s.createMu.Unlock()
		<-c.done
		return c.err
	}
	s.createLeading = true
	for {
		group := s.createQueue
		s.createQueue = nil
		s.createMu.Unlock()
		s.writeCreates(context.WithoutCancel(ctx), group)
		s.createMu.Lock()
		if len(s.createQueue) == 0 {
			s.createLeading = false
			s.createMu.Unlock()
			break
		}
	}
	<-c.done
	return c.err
}

// writeCreates writes a group of creates in one transaction and tells
// each its outcome. A lone create is written without a savepoint.
func (s *Store) writeCreates(ctx context.Context, group []*create) {
	savepoints := len(group) > 1
	err := s.writeChange(ctx, func(tx *sql.Tx, record recordFunc) error {
		for _, c := range group {
			c.err = nil // an earlier attempt's
			if !savepoints {
				return s.insertCreate(ctx, tx, record, c)
			}
			if _, err := tx.ExecContext(ctx, `SAVEPOINT create_post`); err != nil {
				return err
			}
			c.err = s.insertCreate(ctx, tx, record, c)
			if c.err != nil {
				if _, err := tx.ExecContext(ctx, `ROLLBACK TO create_post`); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `RELEASE create_post`); err != nil {
				return err
			}
		}
		return nil
	})
	for _, c := range group {
		switch {
		case err != nil:
			c.err = err
		case c.err == nil:
			s.postWrites.Add(1)
		}
		close(c.done)
	}
}

// insertCreate writes one create's key record, post, targets, their
// events and their schedules in tx.
func (s *Store) insertCreate(ctx context.Context, tx *sql.Tx, record recordFunc, c *create) error {
	p := c.p
	if c.key != nil {
		if err := s.insertKey(ctx, tx, *c.key); err != nil {
			return err
		}
	}
	res, err := tx.StmtContext(ctx, s.ws.postInsert).ExecContext(ctx,
		string(p.ID), p.Body, string(c.media), sqltime.Encode(p.CreatedAt), string(c.texts), string(c.thread), p.Author)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		return fmt.Errorf("id exists: %w", post.ErrConflict)
	}
	ins := tx.StmtContext(ctx, s.ws.targetInsert)
	for i, t := range p.Targets {
		scheduled := 0 // has_schedule
		if c.schedule != nil && t.Status == post.Scheduled {
			scheduled = 1
		}
		if _, err := ins.ExecContext(ctx, string(p.ID), string(t.Account), i, sqltime.Encode(t.Slot),
			string(t.Status), t.RemoteID, t.Reason, sqltime.Encode(t.UpdatedAt), sqltime.Encode(t.NextTry),
			scheduled, t.Queued); err != nil {
			return fmt.Errorf("target %s: %w", t.Account, err)
		}
		if err := record(publishing.TargetEvent(p.ID, post.Target{}, t)); err != nil {
			return fmt.Errorf("target %s: %w", t.Account, err)
		}
		if scheduled == 1 {
			ref := publishing.TargetRef{Post: p.ID, Account: t.Account, Slot: t.Slot.UTC()}
			if err := c.schedule(tx, ref); err != nil {
				return fmt.Errorf("schedule target %s: %w", t.Account, err)
			}
		}
	}
	return nil
}

// Unscheduled lists up to limit targets in status scheduled whose schedule
// was never made (created by CreatePost, or before schema version 2, and
// not yet MarkScheduled), earliest slot first (ties by post id and
// account). It reads only the partial index targets_unscheduled, so it
// costs nothing when every target has its schedule, however many there
// are. A limit ≤ 0 means no limit.
func (s *Store) Unscheduled(ctx context.Context, limit int) ([]publishing.TargetRef, error) {
	out, err := targetRefs(ctx, s.rs.unscheduled, sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("unscheduled targets: %w", err)
	}
	return out, nil
}

// MarkScheduled makes one target's schedule, in one transaction: if the
// target is still scheduled at ref.Slot it records that the target has its
// schedule and calls schedule(tx), which must write through tx only. An
// error from schedule rolls both back and is returned wrapped. A target
// that is gone, or no longer scheduled at that slot, needs no schedule:
// schedule is not called and MarkScheduled returns nil. Marking a target
// that already has its schedule calls schedule again.
func (s *Store) MarkScheduled(ctx context.Context, ref publishing.TargetRef, schedule func(tx *sql.Tx) error) error {
	if schedule == nil {
		return fmt.Errorf("mark %s/%s scheduled: no schedule function", ref.Post, ref.Account)
	}
	marked := false
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.StmtContext(ctx, s.ws.targetMarkScheduled).ExecContext(ctx,
			string(ref.Post), string(ref.Account), sqltime.Encode(ref.Slot))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err
		}
		marked = true
		return schedule(tx)
	})
	if err != nil {
		return fmt.Errorf("mark %s/%s scheduled: %w", ref.Post, ref.Account, err)
	}
	if marked {
		s.postWrites.Add(1)
	}
	return nil
}

// GetPost reads a post and its targets in one statement (one snapshot), or
// returns an error wrapping post.ErrNotFound.
func (s *Store) GetPost(ctx context.Context, id post.ID) (post.Post, error) {
	return readPost(ctx, s.rs.postGet, id)
}

// readPost runs the postGet statement (on its own or in a transaction).
func readPost(ctx context.Context, stmt *sql.Stmt, id post.ID) (post.Post, error) {
	rows, err := stmt.QueryContext(ctx, string(id))
	if err != nil {
		return post.Post{}, fmt.Errorf("get post %s: %w", id, err)
	}
	defer rows.Close()
	p := post.Post{ID: id}
	found := false
	for rows.Next() {
		var media, createdAt, texts, thread string
		var account, slot, status, remoteID, reason, updatedAt, nextTry sql.NullString
		var queued sql.NullBool
		if err := rows.Scan(&p.Body, &media, &createdAt, &texts, &thread, &p.Author,
			&account, &slot, &status, &remoteID, &reason, &updatedAt, &nextTry, &queued); err != nil {
			return post.Post{}, fmt.Errorf("get post %s: %w", id, err)
		}
		var d decoder
		if !found {
			found = true
			if err := json.Unmarshal([]byte(media), &p.Media); err != nil {
				return post.Post{}, fmt.Errorf("get post %s: decode media: %w", id, err)
			}
			if texts != "" {
				if err := json.Unmarshal([]byte(texts), &p.Texts); err != nil {
					return post.Post{}, fmt.Errorf("get post %s: decode texts: %w", id, err)
				}
			}
			if thread != "" {
				if err := json.Unmarshal([]byte(thread), &p.Thread); err != nil {
					return post.Post{}, fmt.Errorf("get post %s: decode thread: %w", id, err)
				}
			}
			p.CreatedAt = d.time(createdAt)
		}
		if account.Valid {
			p.Targets = append(p.Targets, post.Target{
				Account:   post.AccountID(account.String),
				Slot:      d.time(slot.String),
				Status:    post.TargetStatus(status.String),
				RemoteID:  remoteID.String,
				Reason:    reason.String,
				NextTry:   d.time(nextTry.String),
				UpdatedAt: d.time(updatedAt.String),
				Queued:    queued.Bool,
			})
		}
		if d.err != nil {
			return post.Post{}, fmt.Errorf("get post %s: %w", id, d.err)
		}
	}
	if err := rows.Err(); err != nil {
		return post.Post{}, fmt.Errorf("get post %s: %w", id, err)
	}
	if !found {
		return post.Post{}, fmt.Errorf("get post %s: %w", id, post.ErrNotFound)
	}
	return p, nil
}

// readTarget reads one target (its status fields) in tx; post.ErrNotFound
// when there is none.
func (s *Store) readTarget(ctx context.Context, tx *sql.Tx, id post.ID, account post.AccountID) (post.Target, error) {
	var slot, status, remoteID, reason, updatedAt, nextTry string
	err := tx.StmtContext(ctx, s.ws.targetSelect).QueryRowContext(ctx, string(id), string(account)).
		Scan(&slot, &status, &remoteID, &reason, &updatedAt, &nextTry)
	if errors.Is(err, sql.ErrNoRows) {
		return post.Target{}, post.ErrNotFound
	}
	if err != nil {
		return post.Target{}, err
	}
	var d decoder
	t := post.Target{
		Account: account, Slot: d.time(slot), Status: post.TargetStatus(status),
		RemoteID: remoteID, Reason: reason, NextTry: d.time(nextTry), UpdatedAt: d.time(updatedAt),
	}
	return t, d.err
}

// UpdateTarget moves one target's status in one transaction: it reads the
// target, applies u with post.Target.Apply (which checks u.From against the
// status read and the move itself) and writes the result on the condition
// that the status is still the one read, recording the event the move
// causes (publishing.TargetEvent: see the outbox) in the same
// transaction. It returns the new target, an
// error wrapping post.ErrNotFound for a missing target, or one wrapping
// post.ErrConflict when the target is not in one of u.From or the move is
// not allowed.
func (s *Store) UpdateTarget(ctx context.Context, id post.ID, account post.AccountID, u post.TargetUpdate) (post.Target, error) {
	var out post.Target
	err := s.writeChange(ctx, func(tx *sql.Tx, record recordFunc) error {
		cur, err := s.readTarget(ctx, tx, id, account)
		if err != nil {
			return err
		}
		next, err := cur.Apply(u)
		if err != nil {
			return err
		}
		// The condition on the status read keeps the write correct even
		// if this ever ran outside an IMMEDIATE transaction.
		res, err := tx.StmtContext(ctx, s.ws.targetUpdate).ExecContext(ctx,
			string(next.Status), next.RemoteID, next.Reason, sqltime.Encode(next.UpdatedAt), sqltime.Encode(next.NextTry),
			string(id), string(account), string(cur.Status))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return fmt.Errorf("status changed from %s: %w", cur.Status, post.ErrConflict)
		}
		if err := record(publishing.TargetEvent(id, cur, next)); err != nil {
			return err
		}
		out = next
		return nil
	})
	if err != nil {
		return post.Target{}, fmt.Errorf("update post %s target %s: %w", id, account, err)
	}
	s.postWrites.Add(1)
	return out, nil
}

// Due lists targets in status scheduled whose slot is not after t, earliest
// first (ties by post id and account). A limit ≤ 0 means no limit.
func (s *Store) Due(ctx context.Context, t time.Time, limit int) ([]publishing.TargetRef, error) {
	at := sqltime.Encode(t)
	out, err := targetRefs(ctx, s.rs.due, at, sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("due at %s: %w", at, err)
	}
	return out, nil
}

// Unfinished lists triggered or publishing targets last updated before t
// and waiting targets whose next try is before t, oldest first: ordered by
// the time compared with t (updated_at, or next_try for a waiting target),
// then post id and account. It merges two range scans of partial indexes
// (targets_unfinished, targets_waiting). A limit ≤ 0 means no limit.
func (s *Store) Unfinished(ctx context.Context, t time.Time, limit int) ([]publishing.TargetRef, error) {
	at := sqltime.Encode(t)
	out, err := targetRefs(ctx, s.rs.unfinished, at, sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("unfinished at %s: %w", at, err)
	}
	return out, nil
}

// targetRefs runs a query whose first columns are post_id, account and
// slot; any further column is only for ordering and is ignored.
func targetRefs(ctx context.Context, stmt *sql.Stmt, args ...any) ([]publishing.TargetRef, error) {
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var id, account, slot string
	dest := []any{&id, &account, &slot}
	for range len(cols) - len(dest) {
		dest = append(dest, new(sql.RawBytes))
	}
	var out []publishing.TargetRef
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		st, err := sqltime.Decode(slot)
		if err != nil {
			return nil, fmt.Errorf("target %s/%s: %w", id, account, err)
		}
		out = append(out, publishing.TargetRef{Post: post.ID(id), Account: post.AccountID(account), Slot: st})
	}
	return out, rows.Err()
}
