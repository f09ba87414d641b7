package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqltime"
)

// DefaultListLimit is how many posts ListPosts returns when
// publishing.PostFilter.Limit is not set.
const DefaultListLimit = 100

// cursorPrefix starts every cursor ListPostPage makes.
const cursorPrefix = "sq1."

// listCursor is where a page ended: the earliest matching slot and the
// id of its last post.
type listCursor struct {
	Slot string  `json:"slot"`
	Post post.ID `json:"post"`
}

func (c listCursor) encode() string {
	raw, _ := json.Marshal(c)
	return cursorPrefix + base64.RawURLEncoding.EncodeToString(raw)
}

func decodeListCursor(s string) (listCursor, error) {
	var c listCursor
	body, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok {
		return c, fmt.Errorf("%w: %q", publishing.ErrBadCursor, cut(s, maxValueBytes))
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	if err == nil && c.Post == "" {
		err = errors.New("no post")
	}
	if err == nil {
		_, err = sqltime.Decode(c.Slot)
	}
	if err != nil {
		return c, fmt.Errorf("%w: %q (%v)", publishing.ErrBadCursor, cut(s, maxValueBytes), err)
	}
	return c, nil
}

// allStatuses are the target statuses, in the order ListPosts reads them.
var allStatuses = []post.TargetStatus{post.NeedsApproval, post.Scheduled, post.Triggered, post.Publishing, post.Waiting,
	post.Published, post.Failed, post.Held, post.Cancelled, post.Deleted}

// listQuery is the query behind ListPosts: the post id and slot of every
// matching target, ordered by slot then post id. With statuses, one range
// per status of the partial index that holds it (statusTargets), merged;
// scheduled and settled targets come from their index already in that
// order, triggered, publishing and waiting ones are sorted (they are
// few). The account, if any, is ?1 and filters each range. With an account
// only, one range of targets_by_account, in order.
//
// With after, a page after a cursor: ?2 and ?3 are the slot and post id
// the page before ended with; each range starts there (its slot, then
// post ids after it), and a post with a matching target at or before the
// cursor is left out, since it was listed before (one lookup of the
// post's targets by primary key per row read).
//
// With window, ?4 and ?5 bound the slot (?4 ≤ slot < ?5): each range
// of targets_due, targets_settled and targets_by_account is then the
// window's only (they are by slot within their status or account); the
// few triggered, publishing and waiting targets are filtered.
func listQuery(statuses []post.TargetStatus, byAccount, after, window bool) string {
	resume, bounds := "", ""
	if window {
		bounds = ` AND slot >= ?4 AND slot < ?5`
	}
	if after {
		// The post's matching targets, as the arm's: the same statuses,
		// account and window.
		same := `e.account = ?1`
		if len(statuses) > 0 {
			quoted := make([]string, len(statuses))
			for i, st := range statuses {
				quoted[i] = "'" + string(st) + "'"
			}
			same = `e.status IN (` + strings.Join(quoted, ", ") + `)`
			if byAccount {
				same += ` AND e.account = ?1`
			}
		}
		if window {
			same += ` AND e.slot >= ?4 AND e.slot < ?5`
		}
		resume = ` AND slot >= ?2 AND (slot > ?2 OR post_id > ?3)` +
			` AND NOT EXISTS (SELECT 1 FROM targets e WHERE e.post_id = targets.post_id AND ` + same +
			` AND (e.slot < ?2 OR (e.slot = ?2 AND e.post_id <= ?3)))`
	}
	if len(statuses) == 0 {
		return `SELECT post_id, slot FROM targets INDEXED BY targets_by_account WHERE account = ?1` + bounds + resume + ` ORDER BY slot, post_id`
	}
	arms := make([]string, len(statuses))
	for i, st := range statuses {
		arms[i] = `SELECT post_id, slot FROM ` + statusTargets[st]
		if byAccount {
			arms[i] += ` AND account = ?1`
		}
		arms[i] += bounds + resume
	}
	return strings.Join(arms, "\nUNION ALL\n") + "\nORDER BY slot, post_id"
}

// ListPosts is the posts of ListPostPage's page.
func (s *Store) ListPosts(ctx context.Context, f publishing.PostFilter) ([]post.Post, error) {
	pg, err := s.ListPostPage(ctx, f)
	return pg.Posts, err
}

// ListPostPage lists the posts that have at least one target matching f
// (in one of f.Statuses if given, to f.Account if given, its slot in
// [f.From, f.To) if either is given), each with all
// its targets, ordered by the earliest slot of its matching targets (with
// no condition: of all its targets), then by id; at most f.Limit posts
// (DefaultListLimit if not set), after the cursor f.After. The page's
// Next is the cursor of the following page when a matching post is left
// (one more is read to know). A status that is not a post.TargetStatus
// constant is refused, and so is a cursor ListPostPage did not make
// (publishing.ErrBadCursor). Everything is read in one snapshot; pages read at
// different times follow the same order, so a post whose targets did not
// move is listed once.
//
// The matching targets are read in slot order from indexes (listQuery:
// the partial index of each status asked for, every status when neither
// statuses nor an account are given; targets_by_account for an account
// alone), and reading stops at the Limit-th distinct post. So the cost is
// about the targets of the posts returned, plus the triggered, publishing
// and waiting targets when those statuses are asked for (they are sorted),
// plus, with both statuses and an account, the targets of other accounts
// in those statuses with earlier slots. Never a scan of every target.
func (s *Store) ListPostPage(ctx context.Context, f publishing.PostFilter) (publishing.PostPage, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	var statuses []post.TargetStatus
	for _, st := range f.Statuses {
		if !slices.Contains(allStatuses, st) {
			return publishing.PostPage{}, fmt.Errorf("list posts: unknown status %q", st)
		}
		if !slices.Contains(statuses, st) {
			statuses = append(statuses, st)
		}
	}
	// In allStatuses order: the query, and so its prepared statement
	// (listStmts), is the same whatever order the statuses are given in;
	// otherwise the permutations of a few statuses fill the cache.
	slices.SortFunc(statuses, func(a, b post.TargetStatus) int {
		return slices.Index(allStatuses, a) - slices.Index(allStatuses, b)
	})
	if len(statuses) == 0 && f.Account == "" {
		statuses = allStatuses
	}
	window := !f.From.IsZero() || !f.To.IsZero()
	if window && !f.To.IsZero() && !f.From.Before(f.To) {
		return publishing.PostPage{}, nil // an empty window
	}
	// ?1 the account, ?2 and ?3 the cursor, ?4 and ?5 the window: each
	// given when the query (or a later one) refers to it.
	args := []any{string(f.Account), "", ""}
	if f.After != "" {
		c, err := decodeListCursor(f.After)
		if err != nil {
			return publishing.PostPage{}, fmt.Errorf("list posts: %w", err)
		}
		args[1], args[2] = c.Slot, string(c.Post)
	}
	if window {
		// An unbounded end is "" (before every slot) or "~" (after every
		// one: stored slots start with a digit).
		to := "~"
		if !f.To.IsZero() {
			to = sqltime.Encode(f.To)
		}
		args = append(args, sqltime.Encode(f.From), to)
	} else if f.Account == "" && f.After == "" {
		args = nil
	} else if f.After == "" {
		args = args[:1]
	}

	// Prepared before the transaction takes a connection: preparing
	// takes one too, and every connection could be in a listing's hands.
	stmt, release, err := s.lists.get(ctx, s.r, listQuery(statuses, f.Account != "", f.After != "", window))
	if err != nil {
		return publishing.PostPage{}, fmt.Errorf("list posts: %w", err)
	}
	defer release()
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return publishing.PostPage{}, fmt.Errorf("list posts: %w", err)
	}
	defer tx.Rollback()
	ids, slots, err := firstPosts(ctx, tx.StmtContext(ctx, stmt), args, limit+1)
	if err != nil {
		return publishing.PostPage{}, fmt.Errorf("list posts: %w", err)
	}
	var pg publishing.PostPage
	if len(ids) > limit {
		ids = ids[:limit]
		pg.Next = listCursor{Slot: slots[limit-1], Post: ids[limit-1]}.encode()
	}
	pg.Posts = make([]post.Post, 0, len(ids))
	get := tx.StmtContext(ctx, s.rs.postGet)
	for _, id := range ids {
		p, err := readPost(ctx, get, id)
		if err != nil {
			return publishing.PostPage{}, fmt.Errorf("list posts: %w", err)
		}
		pg.Posts = append(pg.Posts, p)
	}
	return pg, nil
}

// listStmts are ListPostPage's queries, prepared once per shape
// (listQuery's statuses, account, cursor and window): the calendar lists
// a window a day, and parsing the query of every status each time was a
// third of a listing's time. At most maxListStmts shapes are kept; the
// others are prepared for their one use.
type listStmts struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

const maxListStmts = 64

// get returns the prepared query and what to call when done with it
// (which closes a statement prepared past the cache's size). It must not
// be called while holding a connection of db (a transaction): preparing
// takes one, without the lock held.
func (l *listStmts) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, func(), error) {
	l.mu.Lock()
	st, ok := l.m[query]
	l.mu.Unlock()
	if ok {
		return st, func() {}, nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if had, ok := l.m[query]; ok {
		// Prepared meanwhile by another listing: use that one.
		st.Close()
		return had, func() {}, nil
	}
	if l.m == nil {
		l.m = map[string]*sql.Stmt{}
	}
	if len(l.m) >= maxListStmts {
		return st, func() { st.Close() }, nil
	}
	l.m[query] = st
	return st, func() {}, nil
}

func (l *listStmts) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, st := range l.m {
		errs = append(errs, st.Close())
	}
	l.m = nil
	return errors.Join(errs...)
}

// firstPosts runs a (post_id, slot) query and returns the first limit
// distinct post ids, in the order they first appear, with the slot of
// their first row.
func firstPosts(ctx context.Context, stmt *sql.Stmt, args []any, limit int) ([]post.ID, []string, error) {
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var (
		ids   []post.ID
		slots []string
	)
	seen := map[post.ID]bool{}
	for len(ids) < limit && rows.Next() {
		var id, slot string
		if err := rows.Scan(&id, &slot); err != nil {
			return nil, nil, err
		}
		if !seen[post.ID(id)] {
			seen[post.ID(id)] = true
			ids, slots = append(ids, post.ID(id)), append(slots, slot)
		}
	}
	return ids, slots, rows.Err()
}

// reschedulable are the statuses RescheduleTarget moves a target from.
var reschedulable = []post.TargetStatus{post.Scheduled, post.Waiting, post.Held}

// RescheduleTarget moves one target of post id to account to a new slot,
// in one write transaction: the target becomes scheduled at slot, its
// reason and next try cleared and UpdatedAt at, and the runtime's
// schedule function is called with the old and the new target (it must
// write through tx only, replacing the old slot's schedule by the new
// one, and must not call back into the store); has_schedule is then set.
// An error from schedule rolls everything back and is returned wrapped.
//
// A slot is part of the target's ledger key (ledger.PublishKey), so a
// moved target is published under a new key: moving one whose send under
// the old slot may have reached the platform could post twice. So the
// move is allowed only when the target is scheduled, waiting or held AND
// the old slot's publish entry does not exist, or is released or held
// with no attempt that may have reached the platform (maybe_sent = 0).
// Otherwise the error wraps post.ErrConflict and says why: the target's
// status, or "a send under the old slot may have reached the platform
// (ledger entry KEY is STATE…)". An unknown post or target gives an error
// wrapping post.ErrNotFound.
//
// RescheduleTarget returns the moved target. (The publisher must drop a
// job, or a send acquired under the old key, whose slot is no longer the
// target's.)
func (s *Store) RescheduleTarget(ctx context.Context, id post.ID, account post.AccountID, slot time.Time, at time.Time,
	schedule func(tx *sql.Tx, old, next publishing.TargetRef) error) (post.Target, error) {
	wrap := func(err error) error {
		return fmt.Errorf("reschedule post %s target %s to %s: %w", id, account, sqltime.Encode(slot), err)
	}
	switch {
	case schedule == nil:
		return post.Target{}, wrap(errors.New("no schedule function"))
	case slot.IsZero():
		return post.Target{}, wrap(errors.New("zero slot"))
	}
	var out post.Target
	err := s.writeChange(ctx, func(tx *sql.Tx, record recordFunc) error {
		var oldSlot, status, remoteID, reason, updatedAt, nextTry string
		err := tx.StmtContext(ctx, s.ws.targetSelect).QueryRowContext(ctx, string(id), string(account)).
			Scan(&oldSlot, &status, &remoteID, &reason, &updatedAt, &nextTry)
		if errors.Is(err, sql.ErrNoRows) {
			var one int
			switch err := tx.StmtContext(ctx, s.ws.postExists).QueryRowContext(ctx, string(id)).Scan(&one); {
			case errors.Is(err, sql.ErrNoRows):
				return fmt.Errorf("no post %s: %w", id, post.ErrNotFound)
			case err != nil:
				return err
			}
			return fmt.Errorf("post %s has no target for account %s: %w", id, account, post.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if !slices.Contains(reschedulable, post.TargetStatus(status)) {
			return fmt.Errorf("target is %s; only a scheduled, waiting or held target can be moved: %w", status, post.ErrConflict)
		}
		old, err := sqltime.Decode(oldSlot)
		if err != nil {
			return err
		}
		key := ledger.PublishKey(string(account), string(id), old)
		var state string
		var maybeSent int
		switch err := tx.StmtContext(ctx, s.ws.ledgerSendState).QueryRowContext(ctx, string(key)).Scan(&state, &maybeSent); {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case (state == string(ledger.Released) || state == string(ledger.Held)) && maybeSent == 0:
		default:
			extra := ""
			if maybeSent > 0 {
				extra = fmt.Sprintf(", %d attempt(s) may have been sent", maybeSent)
			}
			return fmt.Errorf("a send under the old slot may have reached the platform (ledger entry %s is %s%s): %w",
				key, state, extra, post.ErrConflict)
		}
		next := post.Target{Account: account, Slot: slot.UTC(), Status: post.Scheduled, RemoteID: remoteID, UpdatedAt: at.UTC()}
		oldRef := publishing.TargetRef{Post: id, Account: account, Slot: old}
		nextRef := publishing.TargetRef{Post: id, Account: account, Slot: next.Slot}
		if err := schedule(tx, oldRef, nextRef); err != nil {
			return fmt.Errorf("schedule: %w", err)
		}
		res, err := tx.StmtContext(ctx, s.ws.targetReschedule).ExecContext(ctx,
			sqltime.Encode(next.Slot), sqltime.Encode(next.UpdatedAt), string(id), string(account), status, oldSlot)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			return fmt.Errorf("target changed from %s at %s: %w", status, oldSlot, post.ErrConflict)
		}
		// A move to scheduled causes no event today; recorded like every
		// other status change should that change.
		prev := post.Target{Account: account, Slot: old, Status: post.TargetStatus(status), RemoteID: remoteID, Reason: reason}
		if err := record(publishing.TargetEvent(id, prev, next)); err != nil {
			return err
		}
		out = next
		return nil
	})
	if err != nil {
		return post.Target{}, wrap(err)
	}
	s.postWrites.Add(1)
	return out, nil
}
