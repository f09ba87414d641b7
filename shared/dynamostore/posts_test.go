package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"oncepost/shared/post"
)

// crashAfter lets the first n writes through, then fails every call: a
// process that died after n writes.
type crashAfter struct {
	API
	n atomic.Int64
}

var errCrashed = errors.New("crashed")

func (c *crashAfter) write() error {
	if c.n.Add(-1) < 0 {
		return errCrashed
	}
	return nil
}

func (c *crashAfter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := c.write(); err != nil {
		return nil, err
	}
	return c.API.PutItem(ctx, in, optFns...)
}

func (c *crashAfter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if err := c.write(); err != nil {
		return nil, err
	}
	return c.API.UpdateItem(ctx, in, optFns...)
}

func twoTargets(id post.ID, body string, accounts ...post.AccountID) post.Post {
	p := post.Post{ID: id, Body: body, CreatedAt: t0}
	for i, a := range accounts {
		p.Targets = append(p.Targets, post.Target{Account: a, Slot: t0.Add(time.Duration(i) * time.Minute), Status: post.Scheduled, UpdatedAt: t0})
	}
	return p
}

// A CreatePost that dies after any of its writes leaves nothing visible:
// GetPost says not found, Due skips the targets written. The id stays
// taken for CreateStaleAfter, then a new CreatePost takes it over, and
// the dead creation's extra targets are gone.
func TestCreatePostCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, PostsTable)
	clock := &fixedClock{t: t0}
	healthy := e.store(t, prefix, nil, Options{Now: clock.now})
	ctx := t.Context()
	for writes := 1; writes <= 3; writes++ { // claim; claim + 1 target; claim + 2 targets (no commit)
		id := post.ID(fmt.Sprintf("p-crash-%d", writes))
		dying := &crashAfter{API: healthy.db}
		dying.n.Store(int64(writes))
		s := &Store{db: dying, now: clock.now, tables: healthy.tables}
		if err := s.CreatePost(ctx, twoTargets(id, "first try", "acct-a", "acct-b")); !errors.Is(err, errCrashed) {
			t.Fatalf("CreatePost dying after %d writes = %v", writes, err)
		}
		if _, err := healthy.GetPost(ctx, id); !errors.Is(err, post.ErrNotFound) {
			t.Errorf("after %d writes: GetPost = %v, want post.ErrNotFound", writes, err)
		}
		if refs, err := healthy.Due(ctx, t0.Add(time.Hour), 0); err != nil || len(refs) != 0 {
			t.Errorf("after %d writes: Due = %v, %v; want nothing", writes, refs, err)
		}
		err := healthy.CreatePost(ctx, twoTargets(id, "second try", "acct-b"))
		if !errors.Is(err, post.ErrConflict) || !strings.Contains(err.Error(), "creation in progress") {
			t.Errorf("after %d writes: CreatePost at once = %v, want post.ErrConflict (creation in progress)", writes, err)
		}
	}
	clock.add(CreateStaleAfter + time.Second)
	for writes := 1; writes <= 3; writes++ {
		id := post.ID(fmt.Sprintf("p-crash-%d", writes))
		retry := twoTargets(id, "second try", "acct-b")
		mustDo(t, healthy.CreatePost(ctx, retry))
		got, err := healthy.GetPost(ctx, id)
		if err != nil || got.Body != "second try" || len(got.Targets) != 1 || got.Targets[0].Account != "acct-b" {
			t.Errorf("after the takeover: GetPost = %+v, %v; want the second try with acct-b only", got, err)
		}
		if it := rawItem(t, e, healthy.tables.posts, targetKey(id, "acct-a")); it != nil {
			t.Errorf("the dead creation's acct-a target is still stored: %v", it)
		}
	}
	refs, err := healthy.Due(ctx, t0.Add(time.Hour), 0)
	if err != nil || len(refs) != 3 {
		t.Errorf("Due after the takeovers = %v, %v; want the three acct-b targets", refs, err)
	}
	if err := healthy.CreatePost(ctx, twoTargets("p-crash-1", "third", "acct-c")); !errors.Is(err, post.ErrConflict) || strings.Contains(err.Error(), "progress") {
		t.Errorf("CreatePost of a ready post = %v, want post.ErrConflict (id exists)", err)
	}
}

// Concurrent CreatePosts of one id, from two clients: one wins, the post
// is the winner's whole.
func TestCreatePostRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, PostsTable)
	stores := []*Store{e.store(t, prefix, nil, Options{}), e.store(t, prefix, nil, Options{})}
	ctx := t.Context()
	const n = 8
	errs := make([]error, n)
	start := make(chan struct{})
	done := make(chan int)
	for i := range n {
		go func() {
			<-start
			accounts := []post.AccountID{"acct-a", post.AccountID(fmt.Sprintf("acct-%d", i))}
			errs[i] = stores[i%2].CreatePost(ctx, twoTargets("p-race", fmt.Sprintf("body %d", i), accounts...))
			done <- i
		}()
	}
	close(start)
	for range n {
		<-done
	}
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = i
		case err == nil:
			t.Errorf("racers %d and %d both created the post", winner, i)
		case !errors.Is(err, post.ErrConflict):
			t.Errorf("racer %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no racer created the post")
	}
	got, err := stores[0].GetPost(ctx, "p-race")
	want := twoTargets("p-race", fmt.Sprintf("body %d", winner), "acct-a", post.AccountID(fmt.Sprintf("acct-%d", winner)))
	if err != nil || got.Body != want.Body || len(got.Targets) != 2 || got.Targets[1].Account != want.Targets[1].Account {
		t.Errorf("GetPost = %+v, %v; want the winner's post %+v", got, err, want)
	}
}

// TargetUpdate.Slot is part of UpdateTarget's condition: a target moved
// to another time is not marked.
func TestUpdateTargetSlotCondition(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.store(t, e.tables(t, PostsTable), nil, Options{})
	ctx := t.Context()
	p := twoTargets("p-slot", "b", "acct-a")
	mustDo(t, s.CreatePost(ctx, p))
	u := post.TargetUpdate{Status: post.Triggered, From: []post.TargetStatus{post.Scheduled}, Slot: t0.Add(time.Hour), At: t0}
	if _, err := s.UpdateTarget(ctx, p.ID, "acct-a", u); !errors.Is(err, post.ErrConflict) || !strings.Contains(err.Error(), "moved from") {
		t.Errorf("UpdateTarget at another slot = %v, want post.ErrConflict (moved)", err)
	}
	u.Slot = t0.In(time.FixedZone("CET", 3600))
	got, err := s.UpdateTarget(ctx, p.ID, "acct-a", u)
	if err != nil || got.Status != post.Triggered || !got.Slot.Equal(t0) {
		t.Errorf("UpdateTarget at its slot = %+v, %v", got, err)
	}
	if _, err := s.UpdateTarget(ctx, p.ID, "acct-a", post.TargetUpdate{Status: post.Scheduled, At: t0}); !errors.Is(err, post.ErrConflict) {
		t.Errorf("UpdateTarget to scheduled = %v, want post.ErrConflict", err)
	}
	if _, err := s.UpdateTarget(ctx, p.ID, "acct-x", post.TargetUpdate{Status: post.Scheduled, At: t0}); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("UpdateTarget to scheduled of a missing target = %v, want post.ErrNotFound", err)
	}
}
