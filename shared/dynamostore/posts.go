package dynamostore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// Posts table attributes the code names.
const (
	attrPost     = "post"
	attrItem     = "item"
	attrStatus   = "status"
	attrSlot     = "slot"
	attrSt       = "st"
	attrStAt     = "st_at"
	attrCreateID = "create_id"
	attrPhase    = "phase"
	attrClaimed  = "claimed_at"
)

// Sort keys of the posts table: one post item, and one item per target.
const (
	postItemKey  = "post"
	targetPrefix = "target#"
)

// A post item's phase: "creating" from CreatePost's first write until its
// last; only "ready" posts are visible.
const (
	phaseCreating = "creating"
	phaseReady    = "ready"
)

// CreateStaleAfter is how long an unfinished CreatePost (a crashed
// writer) keeps its post id: after it, a new CreatePost of the id takes
// the creation over.
const CreateStaleAfter = time.Minute

// allStatuses are the target statuses, for CountTargets and the
// conditions of UpdateTarget.
var allStatuses = []post.TargetStatus{post.NeedsApproval, post.Scheduled, post.Triggered, post.Publishing, post.Waiting,
	post.Published, post.Failed, post.Held, post.Cancelled, post.Deleted}

// postItem is a post as stored, without its targets.
type postItem struct {
	Post  string      `dynamodbav:"post"`
	Item  string      `dynamodbav:"item"`
	Body  string      `dynamodbav:"body,omitempty"`
	Media []mediaItem `dynamodbav:"media,omitempty"`
	// Texts are the post's texts per platform.
	Texts map[string]string `dynamodbav:"texts,omitempty"`
	// Thread are the texts of the replies that follow the post, in order.
	Thread    []string `dynamodbav:"thread,omitempty"`
	Author    string   `dynamodbav:"author,omitempty"`
	CreatedAt string   `dynamodbav:"created_at,omitempty"`
	// Accounts lists the targets' accounts, in order.
	Accounts []string `dynamodbav:"accounts,omitempty"`
	// CreateID names the CreatePost call that wrote the post; its targets
	// carry the same id. It sorts by the call's start.
	CreateID  string `dynamodbav:"create_id"`
	Phase     string `dynamodbav:"phase"`
	ClaimedAt string `dynamodbav:"claimed_at,omitempty"`
}

type mediaItem struct {
	Ref         string `dynamodbav:"ref,omitempty"`
	SHA256      string `dynamodbav:"sha256,omitempty"`
	ContentType string `dynamodbav:"content_type,omitempty"`
	Alt         string `dynamodbav:"alt,omitempty"`
	// Fitted are the attachment's versions per platform.
	Fitted map[string]fittedItem `dynamodbav:"fitted,omitempty"`
}

type fittedItem struct {
	Ref         string `dynamodbav:"ref,omitempty"`
	SHA256      string `dynamodbav:"sha256,omitempty"`
	ContentType string `dynamodbav:"content_type,omitempty"`
}

func newMediaItem(m post.Media) mediaItem {
	it := mediaItem{Ref: m.Ref, SHA256: m.SHA256, ContentType: m.ContentType, Alt: m.Alt}
	for platform, f := range m.Fitted {
		if it.Fitted == nil {
			it.Fitted = map[string]fittedItem{}
		}
		it.Fitted[platform] = fittedItem(f)
	}
	return it
}

func (it mediaItem) media() post.Media {
	m := post.Media{Ref: it.Ref, SHA256: it.SHA256, ContentType: it.ContentType, Alt: it.Alt}
	for platform, f := range it.Fitted {
		if m.Fitted == nil {
			m.Fitted = map[string]post.Fitted{}
		}
		m.Fitted[platform] = post.Fitted(f)
	}
	return m
}

// targetItem is one target as stored.
type targetItem struct {
	Post      string `dynamodbav:"post"`
	Item      string `dynamodbav:"item"`
	Account   string `dynamodbav:"account"`
	Pos       int    `dynamodbav:"pos"`
	Slot      string `dynamodbav:"slot,omitempty"`
	Status    string `dynamodbav:"status"`
	RemoteID  string `dynamodbav:"remote_id,omitempty"`
	Reason    string `dynamodbav:"reason,omitempty"`
	NextTry   string `dynamodbav:"next_try,omitempty"`
	UpdatedAt string `dynamodbav:"updated_at,omitempty"`
	Queued    bool   `dynamodbav:"queued,omitempty"`
	CreateID  string `dynamodbav:"create_id"`
	// St and StAt place the target in StatusIndex: "status#shard", and
	// the time its status is compared by (stAt) with post and account.
	St   string `dynamodbav:"st"`
	StAt string `dynamodbav:"st_at"`
}

func targetKey(id post.ID, account post.AccountID) item {
	return item{attrPost: str(string(id)), attrItem: str(targetPrefix + string(account))}
}

func postKey(id post.ID) item { return item{attrPost: str(string(id)), attrItem: str(postItemKey)} }

// statusShard is a target's partition of StatusIndex.
func statusShard(id post.ID, account post.AccountID, status post.TargetStatus) string {
	return shardKey(string(status), shardOf(StatusShards, string(id), string(account)))
}

// stAt is a target's StatusIndex sort key: the time its status is listed
// by (the slot while scheduled or waiting for approval, the next try
// while waiting, the last update otherwise), fixed width, then post id
// and account, so the index orders targets as Due, Unfinished and
// AwaitingApproval list them.
func stAt(id post.ID, t post.Target) string {
	at := t.UpdatedAt
	switch t.Status {
	case post.Scheduled, post.NeedsApproval:
		at = t.Slot
	case post.Waiting:
		at = t.NextTry
	}
	return sortTime(at) + "#" + string(id) + "#" + string(t.Account)
}

func targetItemOf(id post.ID, pos int, t post.Target, createID string) targetItem {
	return targetItem{
		Post: string(id), Item: targetPrefix + string(t.Account), Account: string(t.Account), Pos: pos,
		Slot: encTime(t.Slot), Status: string(t.Status), RemoteID: t.RemoteID, Reason: t.Reason,
		NextTry: encTime(t.NextTry), UpdatedAt: encTime(t.UpdatedAt), Queued: t.Queued, CreateID: createID,
		St: statusShard(id, t.Account, t.Status), StAt: stAt(id, t),
	}
}

func (it targetItem) target() (post.Target, error) {
	var d decoder
	t := post.Target{
		Account: post.AccountID(it.Account), Slot: d.time("slot", it.Slot), Status: post.TargetStatus(it.Status),
		RemoteID: it.RemoteID, Reason: it.Reason, NextTry: d.time("next_try", it.NextTry),
		UpdatedAt: d.time("updated_at", it.UpdatedAt), Queued: it.Queued,
	}
	if d.err != nil {
		return post.Target{}, fmt.Errorf("target %s: %w", it.Account, d.err)
	}
	return t, nil
}

func decodeTarget(raw item) (targetItem, post.Target, error) {
	var it targetItem
	if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
		return it, post.Target{}, fmt.Errorf("target %s: %w", sval(raw, attrItem), err)
	}
	t, err := it.target()
	return it, t, err
}

// newCreateID names one CreatePost call: its start (fixed width, so ids
// sort by it) and 8 random bytes.
func newCreateID(now time.Time) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return sortTime(now) + "-" + hex.EncodeToString(b[:])
}

// CreatePost stores a new post and its targets, or returns an error
// wrapping post.ErrConflict if the id exists. Without transactions it
// writes one item at a time, and the post item is both the claim and the
// commit marker:
//
//  1. the post item, phase "creating", with a fresh create id, if the id
//     is free (or its creation is older than CreateStaleAfter: a crashed
//     writer, taken over);
//  2. each target item, carrying the create id, if absent or written by
//     an older creation (a crashed one's leftovers);
//  3. the post item's phase "ready", if it still carries this create id.
//
// Readers see only ready posts, and only the targets with the post's
// create id: a crash anywhere leaves the post invisible (GetPost says
// post.ErrNotFound, Due and Unfinished skip its targets) until a later
// CreatePost of the id takes it over after CreateStaleAfter. Before that,
// CreatePost of the id is refused with post.ErrConflict ("creation in
// progress"). A taken-over creation's targets for accounts the new post
// does not target are deleted. Cost: 2 + len(Targets) writes, plus a
// StatusIndex write per target.
func (s *Store) CreatePost(ctx context.Context, p post.Post) error {
	if err := checkTargets(p); err != nil {
		return fmt.Errorf("create post %s: %w", p.ID, err)
	}
	now := s.now()
	if err := s.createPost(ctx, p, now, newCreateID(now)); err != nil {
		return fmt.Errorf("create post %s: %w", p.ID, err)
	}
	return nil
}

// checkTargets refuses a post that targets an account twice (a target is
// an item keyed by its account).
func checkTargets(p post.Post) error {
	seen := map[post.AccountID]bool{}
	for _, t := range p.Targets {
		if seen[t.Account] {
			return fmt.Errorf("account %s is targeted twice", t.Account)
		}
		seen[t.Account] = true
	}
	return nil
}

// createPost writes p as the creation createID, started at now (the
// steps of CreatePost); p's targets are checked (checkTargets).
func (s *Store) createPost(ctx context.Context, p post.Post, now time.Time, createID string) error {
	seen := map[post.AccountID]bool{}
	accounts := make([]string, 0, len(p.Targets))
	for _, t := range p.Targets {
		seen[t.Account] = true
		accounts = append(accounts, string(t.Account))
	}
	pi := postItem{
		Post: string(p.ID), Item: postItemKey, Body: p.Body, Texts: p.Texts, Thread: p.Thread, Author: p.Author,
		CreatedAt: encTime(p.CreatedAt), Accounts: accounts,
		CreateID: createID, Phase: phaseCreating, ClaimedAt: encTime(now),
	}
	for _, m := range p.Media {
		pi.Media = append(pi.Media, newMediaItem(m))
	}
	it, err := attributevalue.MarshalMap(pi)
	if err != nil {
		return err
	}

	// 1. Claim the id.
	var x expr
	cond := fmt.Sprintf("attribute_not_exists(%s) OR (%s = %s AND %s < %s)", x.name(attrPost),
		x.name(attrPhase), x.str(phaseCreating), x.name(attrClaimed), x.str(encTime(now.Add(-CreateStaleAfter))))
	out, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.tables.posts, Item: it, ConditionExpression: &cond,
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if old, ok := conditionFailed(err); ok {
		if old == nil {
			if old, err = s.getItem(ctx, s.tables.posts, postKey(p.ID)); err != nil {
				return notClaimed{fmt.Errorf("id exists (reading it: %v): %w", err, post.ErrConflict)}
			}
		}
		if sval(old, attrPhase) == phaseCreating {
			return notClaimed{fmt.Errorf("id taken by a creation in progress since %s (taken over %s after it): %w",
				sval(old, attrClaimed), CreateStaleAfter, post.ErrConflict)}
		}
		return notClaimed{fmt.Errorf("id exists: %w", post.ErrConflict)}
	}
	if err != nil {
		return err
	}
	if len(out.Attributes) > 0 {
		s.dropLeftovers(ctx, p.ID, out.Attributes, seen)
	}

	// 2. The targets.
	for i, t := range p.Targets {
		ti, err := attributevalue.MarshalMap(targetItemOf(p.ID, i, t, createID))
		if err != nil {
			return fmt.Errorf("target %s: %w", t.Account, err)
		}
		var x expr
		cond := fmt.Sprintf("attribute_not_exists(%s) OR %s < %s", x.name(attrPost), x.name(attrCreateID), x.str(createID))
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: &s.tables.posts, Item: ti, ConditionExpression: &cond,
			ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		})
		if _, ok := conditionFailed(err); ok {
			return fmt.Errorf("target %s: another creation of the id took over: %w", t.Account, post.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("target %s: %w", t.Account, err)
		}
	}

	// 3. Commit.
	return s.commitPost(ctx, p.ID, createID)
}

// commitPost makes the creation createID of post id visible, if the post
// item is still that creation's, unfinished.
func (s *Store) commitPost(ctx context.Context, id post.ID, createID string) error {
	var c expr
	var u update
	u.set(&c, attrPhase, str(phaseReady))
	u.remove(&c, attrClaimed)
	expression := u.String()
	cond := fmt.Sprintf("%s = %s AND %s = %s", c.name(attrCreateID), c.str(createID), c.name(attrPhase), c.str(phaseCreating))
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.tables.posts, Key: postKey(id), UpdateExpression: &expression, ConditionExpression: &cond,
		ExpressionAttributeNames: c.names, ExpressionAttributeValues: c.values,
	})
	if _, ok := conditionFailed(err); ok {
		return fmt.Errorf("another creation of the id took over: %w", post.ErrConflict)
	}
	return err
}

// notClaimed is createPost's refusal at its first write: nothing of the
// creation was written.
type notClaimed struct{ err error }

func (e notClaimed) Error() string { return e.err.Error() }
func (e notClaimed) Unwrap() error { return e.err }

// dropLeftovers deletes the targets a taken-over creation wrote for
// accounts the new post does not target (best effort: GetPost ignores
// them anyway, by their create id).
func (s *Store) dropLeftovers(ctx context.Context, id post.ID, old item, keep map[post.AccountID]bool) {
	var prev postItem
	if attributevalue.UnmarshalMap(old, &prev) != nil {
		return
	}
	for _, a := range prev.Accounts {
		if keep[post.AccountID(a)] {
			continue
		}
		var x expr
		cond := fmt.Sprintf("%s = %s", x.name(attrCreateID), x.str(prev.CreateID))
		_, _ = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: &s.tables.posts, Key: targetKey(id, post.AccountID(a)), ConditionExpression: &cond,
			ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		})
	}
}

// GetPost reads a post and its targets with one strongly consistent Query
// of the post's partition (the post item and its target items, in one
// request unless the post exceeds 1 MB), or returns an error wrapping
// post.ErrNotFound, also for a post whose creation has not finished.
// Targets come in the order they were created.
func (s *Store) GetPost(ctx context.Context, id post.ID) (post.Post, error) {
	var x expr
	cond := fmt.Sprintf("%s = %s", x.name(attrPost), x.str(string(id)))
	in := &dynamodb.QueryInput{
		TableName: &s.tables.posts, KeyConditionExpression: &cond, ConsistentRead: ptr(true),
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
	}
	var items []item
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return post.Post{}, fmt.Errorf("get post %s: %w", id, err)
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	p, err := assemblePost(id, items)
	if err != nil {
		return post.Post{}, fmt.Errorf("get post %s: %w", id, err)
	}
	return p, nil
}

// assemblePost builds a post from its partition's items: the ready post
// item and the targets of its creation.
func assemblePost(id post.ID, items []item) (post.Post, error) {
	var pi *postItem
	for _, raw := range items {
		if sval(raw, attrItem) != postItemKey {
			continue
		}
		pi = new(postItem)
		if err := attributevalue.UnmarshalMap(raw, pi); err != nil {
			return post.Post{}, err
		}
	}
	if pi == nil || pi.Phase != phaseReady {
		return post.Post{}, post.ErrNotFound
	}
	var d decoder
	p := post.Post{ID: id, Body: pi.Body, Texts: pi.Texts, Thread: pi.Thread, Author: pi.Author, CreatedAt: d.time("created_at", pi.CreatedAt)}
	if d.err != nil {
		return post.Post{}, d.err
	}
	for _, m := range pi.Media {
		p.Media = append(p.Media, m.media())
	}
	type placed struct {
		pos int
		t   post.Target
	}
	var targets []placed
	for _, raw := range items {
		if !strings.HasPrefix(sval(raw, attrItem), targetPrefix) || sval(raw, attrCreateID) != pi.CreateID {
			continue
		}
		ti, t, err := decodeTarget(raw)
		if err != nil {
			return post.Post{}, err
		}
		targets = append(targets, placed{ti.Pos, t})
	}
	sort.SliceStable(targets, func(i, j int) bool { return targets[i].pos < targets[j].pos })
	for _, t := range targets {
		p.Targets = append(p.Targets, t.t)
	}
	return p, nil
}

// UpdateTarget moves one target's status with one conditional UpdateItem
// that applies post.Target.Apply's rules in its condition: the stored
// status must be one the move may start from (post.CanMove, narrowed by
// u.From), and the stored slot u.Slot when it is set. It sets what Apply
// sets (status, reason, the remote id when given, next try while waiting,
// updated at) and the target's StatusIndex attributes, and returns the
// new target (ReturnValues ALL_NEW). On a refusal it returns an error
// wrapping post.ErrConflict that says why (Apply's message on the stored
// target, sent back with the refusal or read with one consistent
// GetItem), or post.ErrNotFound for a target that does not exist; nothing
// is created. Cost: one write plus two StatusIndex writes (the target
// leaves one status partition and enters another).
func (s *Store) UpdateTarget(ctx context.Context, id post.ID, account post.AccountID, u post.TargetUpdate) (post.Target, error) {
	t, err := s.updateTarget(ctx, id, account, u)
	if err != nil {
		return post.Target{}, fmt.Errorf("update post %s target %s: %w", id, account, err)
	}
	return t, nil
}

func (s *Store) updateTarget(ctx context.Context, id post.ID, account post.AccountID, u post.TargetUpdate) (post.Target, error) {
	if u.Status == post.Scheduled && u.Slot.IsZero() {
		// A scheduled target is indexed by its slot, which u does not
		// name: read it, and make the write conditional on it.
		stored, err := s.getItem(ctx, s.tables.posts, targetKey(id, account))
		if err != nil {
			return post.Target{}, err
		}
		if stored == nil {
			return post.Target{}, post.ErrNotFound
		}
		_, cur, err := decodeTarget(stored)
		if err != nil {
			return post.Target{}, err
		}
		u.Slot = cur.Slot
	}
	var from []post.TargetStatus
	for _, st := range allStatuses {
		if post.CanMove(st, u.Status) && (len(u.From) == 0 || slices.Contains(u.From, st)) {
			from = append(from, st)
		}
	}
	if len(from) == 0 {
		// No stored status allows it: say why from the stored target.
		return post.Target{}, s.targetRefused(ctx, id, account, u, nil)
	}
	var x expr
	var in []string
	for _, st := range from {
		in = append(in, x.str(string(st)))
	}
	cond := fmt.Sprintf("%s IN (%s)", x.name(attrStatus), strings.Join(in, ", "))
	if !u.Slot.IsZero() {
		cond += fmt.Sprintf(" AND %s = %s", x.name(attrSlot), x.str(encTime(u.Slot)))
	}
	// The target after the move, as far as the update knows it (Apply
	// keeps the slot and, without a new one, the remote id).
	next := post.Target{Account: account, Slot: u.Slot.UTC(), Status: u.Status, Reason: u.TargetReason(), UpdatedAt: u.At.UTC()}
	if u.Status == post.Waiting {
		next.NextTry = u.NextTry.UTC()
	}
	var up update
	up.set(&x, attrStatus, str(string(u.Status)))
	up.setOrRemove(&x, "reason", next.Reason)
	if u.RemoteID != "" {
		up.set(&x, "remote_id", str(u.RemoteID))
	}
	up.setOrRemove(&x, "next_try", encTime(next.NextTry))
	up.setOrRemove(&x, "updated_at", encTime(next.UpdatedAt))
	up.set(&x, attrSt, str(statusShard(id, account, u.Status)))
	up.set(&x, attrStAt, str(stAt(id, next)))
	expression := up.String()
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.tables.posts, Key: targetKey(id, account),
		UpdateExpression: &expression, ConditionExpression: &cond,
		ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if stored, ok := conditionFailed(err); ok {
		return post.Target{}, s.targetRefused(ctx, id, account, u, stored)
	}
	if err != nil {
		return post.Target{}, err
	}
	_, t, err := decodeTarget(out.Attributes)
	return t, err
}

// targetRefused explains why a move is refused, from the stored target
// (read with a consistent GetItem when the refusal did not bring it).
func (s *Store) targetRefused(ctx context.Context, id post.ID, account post.AccountID, u post.TargetUpdate, stored item) error {
	if stored == nil {
		var err error
		if stored, err = s.getItem(ctx, s.tables.posts, targetKey(id, account)); err != nil {
			return fmt.Errorf("refused, then reading the target: %w", err)
		}
	}
	if stored == nil {
		return post.ErrNotFound
	}
	_, cur, err := decodeTarget(stored)
	if err != nil {
		return err
	}
	if _, err := cur.Apply(u); err != nil {
		return err
	}
	return fmt.Errorf("target changed concurrently (now %s): %w", cur.Status, post.ErrConflict)
}

// Due lists targets in status scheduled whose slot is not after t,
// earliest first (ties by post id and account): StatusIndex's
// "scheduled#0…3" partitions, st_at up to t, merged, each target checked
// against the table (see Unfinished). A limit ≤ 0 means no limit.
func (s *Store) Due(ctx context.Context, t time.Time, limit int) ([]publishing.TargetRef, error) {
	// st_at ≤ t: every st_at of time t is sortTime(t)+"#…", below "$".
	out, err := s.statusRefs(ctx, []post.TargetStatus{post.Scheduled}, sortTime(t)+"$", limit)
	if err != nil {
		return nil, fmt.Errorf("due at %s: %w", encTime(t), err)
	}
	return out, nil
}

// Unfinished lists triggered or publishing targets last updated before t
// and waiting targets whose next try is before t, oldest first (by the
// time compared with t, then post id and account). It merges StatusIndex's
// partitions of the three statuses (StatusShards each), reading about
// limit index keys from each, then reads the targets and their posts with
// strongly consistent BatchGetItem and drops what the index still lists
// but that moved since, and targets of unfinished creations. Cost: 3 ×
// StatusShards Queries (0.5 RRU per 4 KB of keys) plus about two item
// reads per target listed; it grows with the targets listed, never with
// the table. A limit ≤ 0 means no limit.
func (s *Store) Unfinished(ctx context.Context, t time.Time, limit int) ([]publishing.TargetRef, error) {
	out, err := s.statusRefs(ctx, []post.TargetStatus{post.Triggered, post.Publishing, post.Waiting}, sortTime(t), limit)
	if err != nil {
		return nil, fmt.Errorf("unfinished at %s: %w", encTime(t), err)
	}
	return out, nil
}

// statusQueries are the StatusIndex Queries of statuses, one per status
// and shard in that order: the whole partition when hi is "", the sort
// keys below hi when lo is "", else those from lo (inclusive) to below hi.
// Each Query reads at most limit keys (nil: no limit).
func (s *Store) statusQueries(statuses []post.TargetStatus, lo, hi string, limit *int32) []dynamodb.QueryInput {
	var queries []dynamodb.QueryInput
	for _, st := range statuses {
		for k := range StatusShards {
			var x expr
			cond := fmt.Sprintf("%s = %s", x.name(attrSt), x.str(shardKey(string(st), k)))
			switch {
			case hi == "":
			case lo == "":
				cond += fmt.Sprintf(" AND %s < %s", x.name(attrStAt), x.str(hi))
			default:
				// BETWEEN is inclusive; no sort key equals hi (it ends in "$"
				// where sort keys have "#").
				cond += fmt.Sprintf(" AND %s BETWEEN %s AND %s", x.name(attrStAt), x.str(lo), x.str(hi))
			}
			queries = append(queries, dynamodb.QueryInput{
				TableName: &s.tables.posts, IndexName: ptr(StatusIndex), KeyConditionExpression: &cond,
				ExpressionAttributeNames: x.names, ExpressionAttributeValues: x.values, Limit: limit,
			})
		}
	}
	return queries
}

// statusRefs lists the targets in statuses whose StatusIndex sort key is
// below bound, in sort-key order.
func (s *Store) statusRefs(ctx context.Context, statuses []post.TargetStatus, bound string, limit int) ([]publishing.TargetRef, error) {
	return s.statusRange(ctx, statuses, "", bound, limit)
}

// statusRange lists the targets in statuses whose StatusIndex sort key is
// from lo (inclusive; "" for no lower bound) to below hi, in sort-key
// order.
func (s *Store) statusRange(ctx context.Context, statuses []post.TargetStatus, lo, hi string, limit int) ([]publishing.TargetRef, error) {
	queries := s.statusQueries(statuses, lo, hi, pageLimit(limit))
	m, err := s.mergeQueries(ctx, attrStAt, queries)
	if err != nil {
		return nil, err
	}
	return collect(ctx, m, limit, func(ctx context.Context, batch []item) ([]publishing.TargetRef, error) {
		return s.verifyTargets(ctx, batch, true)
	})
}

// verifyTargets reads the targets a batch of StatusIndex entries names,
// and their posts, with one BatchGetItem (two when the batch names over
// 50 targets), strongly consistent or not, and keeps the entries the
// table agrees with: the post is ready, the target is of its creation and
// still at the index entry's status and sort key.
func (s *Store) verifyTargets(ctx context.Context, batch []item, consistent bool) ([]publishing.TargetRef, error) {
	itemID := func(it item) string { return sval(it, attrPost) + "\x00" + sval(it, attrItem) }
	var keys []item
	for _, c := range batch {
		keys = append(keys, item{attrPost: c[attrPost], attrItem: c[attrItem]}, postKey(post.ID(sval(c, attrPost))))
	}
	got, err := s.batchGetConsistency(ctx, s.tables.posts, keys, itemID, consistent)
	if err != nil {
		return nil, err
	}
	var out []publishing.TargetRef
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
		out = append(out, publishing.TargetRef{Post: post.ID(stored.Post), Account: t.Account, Slot: t.Slot})
	}
	return out, nil
}

// CountTargets counts targets by status with Select COUNT Queries of
// StatusIndex, one per status and shard (StatusShards per status, run in
// parallel): the given statuses, each in the result (0 without targets),
// or every status when none is given (statuses without targets absent).
// It keeps no counters, so the publish path pays no extra write; a count
// reads the status's index keys (about 150 bytes a target: 0.5 RRU per
// ~25 targets counted, e.g. 10,000 failed targets ≈ 200 RRU ≈ $0.000025),
// so counting a few statuses costs their targets, not the table. Counts
// are eventually consistent (the index) and include targets of a creation
// that never finished. An unknown status is refused.
func (s *Store) CountTargets(ctx context.Context, statuses ...post.TargetStatus) (map[post.TargetStatus]int, error) {
	all := len(statuses) == 0
	var asked []post.TargetStatus
	for _, st := range statuses {
		if !slices.Contains(allStatuses, st) {
			return nil, fmt.Errorf("count targets: unknown status %q", st)
		}
		if !slices.Contains(asked, st) {
			asked = append(asked, st)
		}
	}
	if all {
		asked = allStatuses
	}
	queries := s.statusQueries(asked, "", "", nil)
	counts, err := s.countQueries(ctx, queries)
	if err != nil {
		return nil, fmt.Errorf("count targets: %w", err)
	}
	out := map[post.TargetStatus]int{}
	for i, st := range asked {
		n := 0
		for k := range StatusShards {
			n += counts[i*StatusShards+k]
		}
		if n > 0 || !all {
			out[st] = n
		}
	}
	return out, nil
}
