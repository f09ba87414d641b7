package dynamostore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The operator's reads and moves: what `oncepost … --backend aws` does
// besides the publishing ports (sqlitestore has the same methods for the
// embedded workspace). None of them is on the publish path.

// DefaultListLimit is how many posts ListPosts returns when
// publishing.PostFilter.Limit is not set.
const DefaultListLimit = 100

// cursorPrefix starts every cursor ListPostPage makes.
const cursorPrefix = "dy1."

// listCursor is where a page ended: the StatusIndex sort key (st_at) of
// the index entry its last post was met at.
type listCursor struct {
	At string `json:"at"`
}

func (c listCursor) encode() string {
	raw, _ := json.Marshal(c)
	return cursorPrefix + base64.RawURLEncoding.EncodeToString(raw)
}

func decodeListCursor(s string) (listCursor, error) {
	var c listCursor
	body, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok {
		return c, fmt.Errorf("%w: %q", publishing.ErrBadCursor, s[:min(len(s), 64)])
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	if err == nil && strings.Count(c.At, "#") < 2 {
		err = errors.New("no index position")
	}
	if err != nil {
		return c, fmt.Errorf("%w: %q (%v)", publishing.ErrBadCursor, s[:min(len(s), 64)], err)
	}
	return c, nil
}

// postReaders bounds the GetPost Queries ListPosts runs at once.
const postReaders = 8

// ListPosts is the posts of ListPostPage's page.
func (s *Store) ListPosts(ctx context.Context, f publishing.PostFilter) ([]post.Post, error) {
	pg, err := s.ListPostPage(ctx, f)
	return pg.Posts, err
}

// ListPostPage lists the posts that have at least one target matching f,
// each with all its targets (read with GetPost, strongly consistent), at
// most f.Limit of them (DefaultListLimit if not set), after the cursor
// f.After. The posts are the first ones met in StatusIndex order — the
// time each status is listed by: the slot while scheduled, the next try
// while waiting, the last update otherwise — and a page is returned
// ordered by the earliest slot of its matching targets, then by id (as
// sqlitestore's ListPosts orders them). Pages follow the index: the
// page's Next (when a matching post is left; one more is read to know)
// is the index position its last post was met at, and the next page
// reads the index after it and leaves out a post with a matching target
// at or before it (listed before). So each post whose targets did not
// move between the pages is listed once; a later page may hold earlier
// slots than the one before. A status that is not a post.TargetStatus
// constant is refused, and so is a cursor ListPostPage did not make
// (publishing.ErrBadCursor).
//
// Cost: StatusShards Queries of StatusIndex per status asked for (36 for
// every status), reading index keys only (about 150 bytes a target: 0.5
// RRU per ~27 targets) in pages of about Limit entries, until Limit posts
// are found; then one strongly consistent Query per post met (GetPost),
// eight at a time. An index entry that no longer matches (the index is
// eventually consistent) or a post whose creation has not finished is
// skipped after its GetPost. With an Account, the index entries of other
// accounts are read and skipped: the cost then grows with the targets in
// the asked statuses that come first in index order, not only with the
// posts returned. No Scan.
//
// With From or To (the calendar's window), only the scheduled targets'
// partitions are read within the window (their index time is the slot).
// The other statuses are indexed by another time, and StatusIndex
// projects keys only (no slot to filter on): every index entry of those
// statuses after the cursor is read, and each post it names not met yet
// is read with GetPost before its slots are checked. So a window over
// every status costs one strongly consistent read per post ever
// published, failed, cancelled, held or deleted (and per waiting,
// triggered or publishing post), whatever the window: O(history) reads
// per calendar page, until Limit posts in the window are found. Bounding
// them needs the slot in the index (a new GSI projecting it, added
// beside StatusIndex and backfilled; a GSI's projection cannot be
// changed in place) or a settled status indexed by its slot; neither is
// done yet. A window over scheduled targets only costs the posts in it.
func (s *Store) ListPostPage(ctx context.Context, f publishing.PostFilter) (publishing.PostPage, error) {
	pg, err := s.listPosts(ctx, f)
	if err != nil {
		return publishing.PostPage{}, fmt.Errorf("list posts: %w", err)
	}
	return pg, nil
}

func (s *Store) listPosts(ctx context.Context, f publishing.PostFilter) (publishing.PostPage, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	var statuses []post.TargetStatus
	for _, st := range f.Statuses {
		if !slices.Contains(allStatuses, st) {
			return publishing.PostPage{}, fmt.Errorf("unknown status %q", st)
		}
		if !slices.Contains(statuses, st) {
			statuses = append(statuses, st)
		}
	}
	if len(statuses) == 0 {
		statuses = allStatuses
	}
	var after string
	if f.After != "" {
		c, err := decodeListCursor(f.After)
		if err != nil {
			return publishing.PostPage{}, err
		}
		after = c.At
	}
	window := !f.From.IsZero() || !f.To.IsZero()
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return publishing.PostPage{}, nil // an empty window
	}
	matches := func(t post.Target) bool {
		return slices.Contains(statuses, t.Status) && (f.Account == "" || t.Account == f.Account) &&
			(f.From.IsZero() || !t.Slot.Before(f.From)) && (f.To.IsZero() || t.Slot.Before(f.To))
	}
	// listedBefore: the post has a matching target at or before the
	// cursor's index position, so a page before listed it.
	listedBefore := func(p post.Post) bool {
		return after != "" && slices.ContainsFunc(p.Targets, func(t post.Target) bool { return matches(t) && stAt(p.ID, t) <= after })
	}
	queries := s.listQueries(statuses, after, f.From, f.To, pageLimit(limit+1))
	m, err := s.mergeQueries(ctx, attrStAt, queries)
	if err != nil {
		return publishing.PostPage{}, err
	}
	// Each post found, and the index position it was met at.
	type found struct {
		p  post.Post
		at string
	}
	seen := map[post.ID]bool{}
	var met []found
	for len(met) <= limit {
		// The next batch of posts not met yet, in index order, with the
		// index entries each was met at in this batch.
		type entry struct {
			account post.AccountID
			at      string
		}
		var batch []post.ID
		entries := map[post.ID][]entry{}
		exhausted := false
		for len(batch) < limit+1-len(met) {
			it, ok, err := m.next(ctx)
			if err != nil {
				return publishing.PostPage{}, err
			}
			if !ok {
				exhausted = true
				break
			}
			id := post.ID(sval(it, attrPost))
			account := post.AccountID(strings.TrimPrefix(sval(it, attrItem), targetPrefix))
			if f.Account != "" && account != f.Account {
				continue
			}
			if seen[id] {
				if e, ok := entries[id]; ok {
					entries[id] = append(e, entry{account, sval(it, attrStAt)})
				}
				continue
			}
			seen[id] = true
			batch = append(batch, id)
			entries[id] = []entry{{account, sval(it, attrStAt)}}
		}
		posts, err := s.getPosts(ctx, batch)
		if err != nil {
			return publishing.PostPage{}, err
		}
		var kept []found
		for _, p := range posts {
			at := entries[p.ID][0].at
			if window {
				// The statuses other than scheduled are not indexed by
				// slot: a post is met at the first entry of a target in
				// the window, so that a cursor is always at a matching
				// target; met only outside it, it may be met again later.
				i := slices.IndexFunc(entries[p.ID], func(e entry) bool {
					return slices.ContainsFunc(p.Targets, func(t post.Target) bool { return t.Account == e.account && matches(t) })
				})
				if i < 0 {
					seen[p.ID] = false
					continue
				}
				at = entries[p.ID][i].at
			}
			if slices.ContainsFunc(p.Targets, matches) && !listedBefore(p) {
				kept = append(kept, found{p, at})
			}
		}
		// In the order of the positions they were met at (later batches
		// meet later ones), so the cursor is after every post listed.
		slices.SortStableFunc(kept, func(a, b found) int { return strings.Compare(a.at, b.at) })
		met = append(met, kept...)
		if exhausted {
			break
		}
	}
	var pg publishing.PostPage
	if len(met) > limit {
		met = met[:limit]
		pg.Next = listCursor{At: met[limit-1].at}.encode()
	}
	for _, fp := range met {
		pg.Posts = append(pg.Posts, fp.p)
	}
	out := pg.Posts
	earliest := func(p post.Post) time.Time {
		var first time.Time
		for _, t := range p.Targets {
			if matches(t) && (first.IsZero() || t.Slot.Before(first)) {
				first = t.Slot
			}
		}
		return first
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := earliest(out[i]), earliest(out[j])
		if !a.Equal(b) {
			return a.Before(b)
		}
		return out[i].ID < out[j].ID
	})
	return pg, nil
}

// listQueries are ListPostPage's reads of StatusIndex: StatusShards
// Queries per status, each after the cursor's position when there is
// one (sort keys are unique: time, post id, account). A scheduled
// target's index time is its slot, so the scheduled partitions are read
// within the window [from, to) only (from the cursor's position when it
// is later; the target at the cursor itself was listed before and is left
// out by ListPostPage); the other statuses are indexed by another time
// (last update, next try), so their window is checked on the posts read
// (each read whole: see ListPostPage's cost).
func (s *Store) listQueries(statuses []post.TargetStatus, after string, from, to time.Time, limit *int32) []dynamodb.QueryInput {
	var queries []dynamodb.QueryInput
	for _, st := range statuses {
		for k := range StatusShards {
			var x expr
			cond := fmt.Sprintf("%s = %s", x.name(attrSt), x.str(shardKey(string(st), k)))
			lo, hi := after, ""
			if st == post.Scheduled {
				if l := sortTime(from); !from.IsZero() && l > lo {
					lo = l
				}
				if !to.IsZero() {
					// No sort key equals hi: each goes on with "#post#account".
					hi = sortTime(to)
				}
			}
			switch {
			case lo != "" && hi != "":
				if lo >= hi {
					continue
				}
				cond += fmt.Sprintf(" AND %s BETWEEN %s AND %s", x.name(attrStAt), x.str(lo), x.str(hi))
			case hi != "":
				cond += fmt.Sprintf(" AND %s < %s", x.name(attrStAt), x.str(hi))
			case lo == after && lo != "":
				cond += fmt.Sprintf(" AND %s > %s", x.name(attrStAt), x.str(lo))
			case lo != "":
				cond += fmt.Sprintf(" AND %s >= %s", x.name(attrStAt), x.str(lo))
			}
			queries = append(queries, dynamodb.QueryInput{
				TableName: &s.tables.posts, IndexName: ptr(StatusIndex), KeyConditionExpression: &cond,
				ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values, Limit: limit,
			})
		}
	}
	return queries
}

// getPosts reads posts with GetPost, postReaders at a time, in the order
// of ids; posts that do not exist (or whose creation has not finished)
// are left out.
func (s *Store) getPosts(ctx context.Context, ids []post.ID) ([]post.Post, error) {
	posts := make([]post.Post, len(ids))
	found := make([]bool, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, postReaders)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			p, err := s.GetPost(ctx, id)
			switch {
			case errors.Is(err, post.ErrNotFound):
			case err != nil:
				errs[i] = err
			default:
				posts[i], found[i] = p, true
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []post.Post
	for i := range ids {
		if found[i] {
			out = append(out, posts[i])
		}
	}
	return out, nil
}

// WaitingTarget is a target waiting for its next try (the platform did
// not act: throttled or unreachable), for the operator's status page.
type WaitingTarget struct {
	Post    post.ID        `json:"post_id"`
	Account post.AccountID `json:"account_id"`
	NextTry time.Time      `json:"next_try,omitzero"`
	Reason  string         `json:"reason,omitempty"`
}

// Waiting lists waiting targets, next try first (ties by post id and
// account): StatusIndex's waiting partitions, merged, each target read
// back with strongly consistent BatchGetItem (with its post, which must be
// ready) and dropped when it has moved on since the index listed it.
// Cost: StatusShards Queries plus about two item reads per target listed;
// it grows with the waiting targets, never with the table. A limit ≤ 0
// means no limit.
func (s *Store) Waiting(ctx context.Context, limit int) ([]WaitingTarget, error) {
	queries := s.statusQueries([]post.TargetStatus{post.Waiting}, "", "", pageLimit(limit))
	m, err := s.mergeQueries(ctx, attrStAt, queries)
	if err != nil {
		return nil, fmt.Errorf("waiting targets: %w", err)
	}
	itemID := func(it item) string { return sval(it, attrPost) + "\x00" + sval(it, attrItem) }
	out, err := collect(ctx, m, limit, func(ctx context.Context, batch []item) ([]WaitingTarget, error) {
		var keys []item
		for _, c := range batch {
			keys = append(keys, item{attrPost: c[attrPost], attrItem: c[attrItem]}, postKey(post.ID(sval(c, attrPost))))
		}
		got, err := s.batchGet(ctx, s.tables.posts, keys, itemID)
		if err != nil {
			return nil, err
		}
		var out []WaitingTarget
		for _, c := range batch {
			ti, pi := got[itemID(c)], got[sval(c, attrPost)+"\x00"+postItemKey]
			if ti == nil || pi == nil || sval(pi, attrPhase) != phaseReady || sval(ti, attrCreateID) != sval(pi, attrCreateID) ||
				sval(ti, attrSt) != sval(c, attrSt) || sval(ti, attrStAt) != sval(c, attrStAt) {
				continue
			}
			stored, t, err := decodeTarget(ti)
			if err != nil {
				return nil, fmt.Errorf("post %s: %w", stored.Post, err)
			}
			out = append(out, WaitingTarget{Post: post.ID(stored.Post), Account: t.Account, NextTry: t.NextTry, Reason: t.Reason})
		}
		return out, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting targets: %w", err)
	}
	return out, nil
}

// reschedulable are the statuses RescheduleTarget moves a target from.
var reschedulable = []post.TargetStatus{post.Scheduled, post.Waiting, post.Held}

// RescheduleTarget moves one target of post id to account to a new slot:
// the target becomes scheduled at slot, its reason and next try cleared,
// UpdatedAt at. It returns the moved target. The caller then makes sure a
// schedule fires at the new slot (the store writes no schedule).
//
// A slot is part of the target's ledger key (ledger.PublishKey), so a
// moved target is published under a new key: moving one whose send under
// the old slot may have reached the platform could post twice. So, as in
// sqlitestore, the move is allowed only when the target is scheduled,
// waiting or held AND the old slot's publish entry does not exist, or is
// released or held with no attempt that may have reached the platform
// (maybe_sent = 0). Otherwise the error wraps post.ErrConflict and says
// why. An unknown post or target gives an error wrapping
// post.ErrNotFound.
//
// Without a transaction, the ledger is read before and after the move,
// which is one conditional UpdateItem on the target's status, slot and
// last update. A publisher writes its ledger entry before it re-reads the
// post, and never sends under a key whose slot moved (publishing.Publish):
// either it re-reads after the move and releases its entry unsent, or it
// wrote the entry before the move, and the read after the move sees it.
// Then the move is undone (one conditional UpdateItem restoring the
// target as it was, if it is still as the move left it) and refused. If
// the target moved on meanwhile, the error says that it could not be put
// back.
//
// Cost: one Query (GetPost), two strongly consistent GetItem of the
// ledger entry, one UpdateItem (plus two StatusIndex writes); an undone
// move one more UpdateItem.
func (s *Store) RescheduleTarget(ctx context.Context, id post.ID, account post.AccountID, slot, at time.Time) (post.Target, error) {
	t, err := s.rescheduleTarget(ctx, id, account, slot, at)
	if err != nil {
		return post.Target{}, fmt.Errorf("reschedule post %s target %s to %s: %w", id, account, encTime(slot), err)
	}
	return t, nil
}

func (s *Store) rescheduleTarget(ctx context.Context, id post.ID, account post.AccountID, slot, at time.Time) (post.Target, error) {
	if slot.IsZero() {
		return post.Target{}, errors.New("zero slot")
	}
	p, err := s.GetPost(ctx, id)
	if errors.Is(err, post.ErrNotFound) {
		return post.Target{}, fmt.Errorf("no post %s: %w", id, post.ErrNotFound)
	}
	if err != nil {
		return post.Target{}, err
	}
	cur, ok := p.Target(account)
	if !ok {
		return post.Target{}, fmt.Errorf("post %s has no target for account %s: %w", id, account, post.ErrNotFound)
	}
	if !slices.Contains(reschedulable, cur.Status) {
		return post.Target{}, fmt.Errorf("target is %s; only a scheduled, waiting or held target can be moved: %w", cur.Status, post.ErrConflict)
	}
	oldKey := ledger.PublishKey(string(account), string(id), cur.Slot)
	if err := s.noSendUnder(ctx, oldKey); err != nil {
		return post.Target{}, err
	}
	next := post.Target{Account: account, Slot: slot.UTC(), Status: post.Scheduled, RemoteID: cur.RemoteID, UpdatedAt: at.UTC(), Queued: cur.Queued}
	if err := s.replaceTarget(ctx, id, cur, next); err != nil {
		return post.Target{}, err
	}
	if err := s.noSendUnder(ctx, oldKey); err != nil {
		if uerr := s.replaceTarget(ctx, id, next, cur); uerr != nil {
			return post.Target{}, fmt.Errorf("%w; the move to the new slot could not be undone (%v): look at the post", err, uerr)
		}
		return post.Target{}, err
	}
	return next, nil
}

// noSendUnder returns nil if no send under key may have reached the
// platform: no entry, or one released or held with maybe_sent 0; else an
// error wrapping post.ErrConflict that says what the entry is.
func (s *Store) noSendUnder(ctx context.Context, key ledger.Key) error {
	e, err := s.Get(ctx, key)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return nil
	case err != nil:
		return err
	case (e.State == ledger.Released || e.State == ledger.Held) && e.MaybeSent == 0:
		return nil
	}
	extra := ""
	if e.MaybeSent > 0 {
		extra = fmt.Sprintf(", %d attempt(s) may have been sent", e.MaybeSent)
	}
	return fmt.Errorf("a send under the old slot may have reached the platform (ledger entry %s is %s%s): %w", key, e.State, extra, post.ErrConflict)
}

// replaceTarget writes to (its slot, status, reason, next try, update time
// and StatusIndex attributes) over the stored target of post id, with one
// conditional UpdateItem: the stored target must still be from (status,
// slot and last update). A refusal wraps post.ErrConflict and says what
// the target is now.
func (s *Store) replaceTarget(ctx context.Context, id post.ID, from, to post.Target) error {
	var x expr
	cond := fmt.Sprintf("%s = %s AND %s = %s AND %s", x.name(attrStatus), x.str(string(from.Status)),
		x.name(attrSlot), x.str(encTime(from.Slot)), equalsOrAbsent(&x, "updated_at", encTime(from.UpdatedAt)))
	var u update
	u.set(&x, attrSlot, str(encTime(to.Slot)))
	u.set(&x, attrStatus, str(string(to.Status)))
	u.setOrRemove(&x, "reason", to.Reason)
	u.setOrRemove(&x, "next_try", encTime(to.NextTry))
	u.setOrRemove(&x, "updated_at", encTime(to.UpdatedAt))
	u.set(&x, attrSt, str(statusShard(id, to.Account, to.Status)))
	u.set(&x, attrStAt, str(stAt(id, to)))
	expression := u.String()
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.tables.posts, Key: targetKey(id, to.Account),
		UpdateExpression: &expression, ConditionExpression: &cond,
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	stored, ok := conditionFailed(err)
	if !ok {
		return err
	}
	if stored == nil {
		if stored, err = s.getItem(ctx, s.tables.posts, targetKey(id, to.Account)); err != nil {
			return fmt.Errorf("target changed meanwhile (reading it: %v): %w", err, post.ErrConflict)
		}
	}
	if stored == nil {
		return fmt.Errorf("target is gone: %w", post.ErrNotFound)
	}
	_, now, err := decodeTarget(stored)
	if err != nil {
		return err
	}
	return fmt.Errorf("target changed meanwhile (now %s at %s): %w", now.Status, encTime(now.Slot), post.ErrConflict)
}
