package dynamostore

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// keyRecord is the record a create with scope's key and fingerprint fp
// asks the store to keep for post id.
func keyRecord(scope, key, fp string, id post.ID) *publishing.IdempotencyRecord {
	return &publishing.IdempotencyRecord{
		Scope: scope, Key: key, Fingerprint: fp, Post: id,
		Status: 201, Response: []byte(fmt.Sprintf(`{"id":%q,"fingerprint":%q}`, id, fp)),
	}
}

// keyExists returns err's *publishing.KeyExistsError, failing t if it has
// none.
func keyExists(t *testing.T, err error) *publishing.KeyExistsError {
	t.Helper()
	var ke *publishing.KeyExistsError
	if !errors.As(err, &ke) {
		t.Fatalf("error %v, want a *publishing.KeyExistsError", err)
	}
	return ke
}

// The first create with a key stores its record; the same key again, with
// the same request or another, writes nothing and gets the record back,
// not in flight; another scope's same key is another record.
func TestCreatePostWithKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, PostsTable, WorkspaceTable)
	clock := &fixedClock{t: t0}
	rec := &recorder{}
	s := e.store(t, prefix, rec, Options{Now: clock.now})
	ctx := t.Context()

	first := keyRecord("arn:aws:iam::123456789012:user/cms", "k-1", "fp-a", "p-key-1")
	mustDo(t, s.CreatePostWithKey(ctx, twoTargets("p-key-1", "first", "acct-a", "acct-b"), first))
	if diff := cmp.Diff([]string{"PutItem", "PutItem", "PutItem", "PutItem", "UpdateItem"}, ops(rec.take())); diff != "" {
		t.Errorf("a create with a key: calls (-want +got):\n%s", diff)
	}
	want := *first
	want.CreatedAt = t0
	got, err := s.GetIdempotencyRecord(ctx, first.Scope, first.Key)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetIdempotencyRecord (-want +got):\n%s", diff)
	}

	clock.add(time.Hour) // long past CreateStaleAfter: a finished request's record is never taken over
	for _, tt := range []struct {
		name string
		p    post.Post
		key  *publishing.IdempotencyRecord
	}{
		{"the same request again", twoTargets("p-key-1", "first", "acct-a", "acct-b"), keyRecord(first.Scope, "k-1", "fp-a", "p-key-1")},
		{"another post id (a generated one)", twoTargets("p-key-1b", "first", "acct-a", "acct-b"), keyRecord(first.Scope, "k-1", "fp-a", "p-key-1b")},
		{"another body", twoTargets("p-key-1c", "second", "acct-c"), keyRecord(first.Scope, "k-1", "fp-b", "p-key-1c")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ke := keyExists(t, s.CreatePostWithKey(ctx, tt.p, tt.key))
			if diff := cmp.Diff(publishing.KeyExistsError{Record: want}, *ke); diff != "" {
				t.Errorf("KeyExistsError (-want +got):\n%s", diff)
			}
			for _, c := range rec.take() {
				if c.Op != "GetItem" && (c.Op != "PutItem" || c.Error == "") {
					t.Errorf("a replay made %s (error %q); want one refused PutItem and reads", c.Op, c.Error)
				}
			}
		})
	}
	if p, err := s.GetPost(ctx, "p-key-1"); err != nil || p.Body != "first" || len(p.Targets) != 2 {
		t.Errorf("GetPost = %+v, %v; want the first post", p, err)
	}
	for _, id := range []post.ID{"p-key-1b", "p-key-1c"} {
		if _, err := s.GetPost(ctx, id); !errors.Is(err, post.ErrNotFound) {
			t.Errorf("GetPost(%s) = %v, want post.ErrNotFound: a replay writes nothing", id, err)
		}
	}

	other := keyRecord("arn:aws:iam::123456789012:user/newsroom", "k-1", "fp-a", "p-key-2")
	mustDo(t, s.CreatePostWithKey(ctx, twoTargets("p-key-2", "other caller", "acct-a"), other))
	if got, err := s.GetIdempotencyRecord(ctx, other.Scope, "k-1"); err != nil || got.Post != "p-key-2" {
		t.Errorf("the other scope's record = %+v, %v; want its own, naming p-key-2", got, err)
	}
	if _, err := s.GetIdempotencyRecord(ctx, first.Scope, "k-unknown"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("GetIdempotencyRecord of an unknown key = %v, want post.ErrNotFound", err)
	}
}

// A request that died after the record, or part way through its post,
// leaves the key in flight. After CreateStaleAfter its record reads as
// gone, and a retry of the same request (the same fingerprint) takes it
// over and writes the post — under the same post id or another one (a
// generated id), the dead creation fenced so that it can never commit —
// while a request with another body never does.
func TestCreatePostWithKeyCrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, PostsTable, WorkspaceTable)
	clock := &fixedClock{t: t0}
	healthy := e.store(t, prefix, nil, Options{Now: clock.now})
	ctx := t.Context()
	const scope = "arn:aws:iam::123456789012:user/cms"
	type crash struct {
		key      string
		id, retr post.ID // the dead request's post id, the retry's
		createID string  // the dead request's creation
	}
	var crashes []crash
	// writes: the record; + the post's claim; + one target (no commit).
	for writes := 1; writes <= 3; writes++ {
		for _, retryID := range []string{"same", "other"} {
			c := crash{key: fmt.Sprintf("k-crash-%d-%s", writes, retryID), id: post.ID(fmt.Sprintf("p-keycrash-%d-%s", writes, retryID))}
			c.retr = c.id
			if retryID == "other" {
				c.retr += "-retry"
			}
			dying := &crashAfter{API: healthy.db}
			dying.n.Store(int64(writes))
			s := &Store{db: dying, now: clock.now, tables: healthy.tables}
			if err := s.CreatePostWithKey(ctx, twoTargets(c.id, "first try", "acct-a", "acct-b"), keyRecord(scope, c.key, "fp", c.id)); !errors.Is(err, errCrashed) {
				t.Fatalf("CreatePostWithKey dying after %d writes = %v", writes, err)
			}
			c.createID = sval(rawItem(t, e, healthy.tables.workspace, idempotencyKey(scope, c.key)), attrCreateID)
			for _, fp := range []string{"fp", "fp-other"} {
				ke := keyExists(t, healthy.CreatePostWithKey(ctx, twoTargets(c.retr, "retry", "acct-b"), keyRecord(scope, c.key, fp, c.retr)))
				if !ke.InFlight || ke.Record.Post != c.id || ke.Record.Fingerprint != "fp" {
					t.Errorf("%s, at once, fingerprint %s: %+v; want the dead request's record, in flight", c.key, fp, ke)
				}
			}
			if r, err := healthy.GetIdempotencyRecord(ctx, scope, c.key); err != nil || r.Post != c.id {
				t.Errorf("%s, at once: GetIdempotencyRecord = %+v, %v; want the record", c.key, r, err)
			}
			crashes = append(crashes, c)
		}
	}
	clock.add(CreateStaleAfter + time.Second)
	for _, c := range crashes {
		if _, err := healthy.GetIdempotencyRecord(ctx, scope, c.key); !errors.Is(err, post.ErrNotFound) {
			t.Errorf("%s, stale: GetIdempotencyRecord = %v, want post.ErrNotFound (a dead request's)", c.key, err)
		}
		ke := keyExists(t, healthy.CreatePostWithKey(ctx, twoTargets(c.retr, "another body", "acct-c"), keyRecord(scope, c.key, "fp-other", c.retr)))
		if !ke.InFlight || ke.Record.Fingerprint != "fp" {
			t.Errorf("%s, stale, another fingerprint: %+v; want the record kept, in flight", c.key, ke)
		}
		mustDo(t, healthy.CreatePostWithKey(ctx, twoTargets(c.retr, "retry", "acct-b"), keyRecord(scope, c.key, "fp", c.retr)))
		if p, err := healthy.GetPost(ctx, c.retr); err != nil || p.Body != "retry" || len(p.Targets) != 1 {
			t.Errorf("%s, the takeover: GetPost = %+v, %v; want the retry's post", c.key, p, err)
		}
		ke = keyExists(t, healthy.CreatePostWithKey(ctx, twoTargets(c.retr, "retry", "acct-b"), keyRecord(scope, c.key, "fp", c.retr)))
		if ke.InFlight || ke.Record.Post != c.retr || !ke.Record.CreatedAt.Equal(clock.now()) {
			t.Errorf("%s, the key after the takeover: %+v; want the retry's record, done", c.key, ke)
		}
		if c.retr == c.id {
			continue
		}
		// The dead request, had it only stalled, can neither commit nor
		// claim its id again; what it wrote is gone.
		if err := healthy.commitPost(ctx, c.id, c.createID); !errors.Is(err, post.ErrConflict) {
			t.Errorf("%s: the dead creation's commit = %v, want post.ErrConflict", c.key, err)
		}
		if err := healthy.CreatePost(ctx, twoTargets(c.id, "first try", "acct-a")); !errors.Is(err, post.ErrConflict) {
			t.Errorf("%s: CreatePost of the dead creation's id = %v, want post.ErrConflict", c.key, err)
		}
		if _, err := healthy.GetPost(ctx, c.id); !errors.Is(err, post.ErrNotFound) {
			t.Errorf("%s: GetPost(%s) = %v, want post.ErrNotFound", c.key, c.id, err)
		}
		if it := rawItem(t, e, healthy.tables.posts, targetKey(c.id, "acct-a")); it != nil {
			t.Errorf("%s: the dead creation's acct-a target is still stored: %v", c.key, it)
		}
	}
	refs, err := healthy.Due(ctx, t0.Add(time.Hour), 0)
	if err != nil || len(refs) != len(crashes) {
		t.Errorf("Due = %v, %v; want the %d retries' targets only", refs, err, len(crashes))
	}
}

// Concurrent creates with one key, from two clients, each with a post id
// of its own (as generated ids would be): one post.
func TestCreatePostWithKeyRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, PostsTable, WorkspaceTable)
	stores := []*Store{e.store(t, prefix, nil, Options{}), e.store(t, prefix, nil, Options{})}
	ctx := t.Context()
	const n = 16
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			id := post.ID(fmt.Sprintf("p-keyrace-%d", i))
			errs[i] = stores[i%2].CreatePostWithKey(ctx, twoTargets(id, "one body", "acct-a"), keyRecord("scope", "k-race", "fp", id))
		})
	}
	close(start)
	wg.Wait()
	var created, posts []int
	for i, err := range errs {
		var ke *publishing.KeyExistsError
		switch {
		case err == nil:
			created = append(created, i)
		case !errors.As(err, &ke):
			t.Errorf("racer %d: %v, want nil or a *publishing.KeyExistsError", i, err)
		}
		if _, err := stores[0].GetPost(ctx, post.ID(fmt.Sprintf("p-keyrace-%d", i))); err == nil {
			posts = append(posts, i)
		}
	}
	if len(created) != 1 || !cmp.Equal(created, posts) {
		t.Errorf("racers %v created, posts of racers %v stored; want one, the same", created, posts)
	}
}

// A create whose post id exists already is refused as CreatePost refuses
// it, and drops its record again: a retry meets the same refusal, not a
// replayed answer for a post that is not its own.
func TestCreatePostWithKeyIDTaken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.store(t, e.tables(t, PostsTable, WorkspaceTable), nil, Options{})
	ctx := t.Context()
	mustDo(t, s.CreatePost(ctx, twoTargets("p-taken", "someone else's", "acct-a")))
	for try := 1; try <= 2; try++ {
		err := s.CreatePostWithKey(ctx, twoTargets("p-taken", "mine", "acct-b"), keyRecord("scope", "k-taken", "fp", "p-taken"))
		if !errors.Is(err, post.ErrConflict) || errors.As(err, new(*publishing.KeyExistsError)) {
			t.Errorf("try %d: CreatePostWithKey of an existing id = %v, want post.ErrConflict", try, err)
		}
		if _, err := s.GetIdempotencyRecord(ctx, "scope", "k-taken"); !errors.Is(err, post.ErrNotFound) {
			t.Errorf("try %d: GetIdempotencyRecord = %v, want post.ErrNotFound (the record dropped)", try, err)
		}
	}
	if p, err := s.GetPost(ctx, "p-taken"); err != nil || p.Body != "someone else's" {
		t.Errorf("GetPost = %+v, %v; want the first post untouched", p, err)
	}
}

// A record is kept publishing.IdempotencyKeep: then it reads as gone
// (DynamoDB's TTL deletes it lazily; dynalite never does) and the key is
// free again.
func TestIdempotencyRecordExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clock := &fixedClock{t: t0}
	s := e.store(t, e.tables(t, PostsTable, WorkspaceTable), nil, Options{Now: clock.now})
	ctx := t.Context()
	mustDo(t, s.CreatePostWithKey(ctx, twoTargets("p-old", "old", "acct-a"), keyRecord("scope", "k-old", "fp", "p-old")))
	clock.add(publishing.IdempotencyKeep - time.Second)
	keyExists(t, s.CreatePostWithKey(ctx, twoTargets("p-new", "new", "acct-a"), keyRecord("scope", "k-old", "fp", "p-new")))
	clock.add(3 * time.Second) // the TTL is in whole seconds, rounded up
	if _, err := s.GetIdempotencyRecord(ctx, "scope", "k-old"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("GetIdempotencyRecord after IdempotencyKeep = %v, want post.ErrNotFound", err)
	}
	mustDo(t, s.CreatePostWithKey(ctx, twoTargets("p-new", "new", "acct-a"), keyRecord("scope", "k-old", "fp", "p-new")))
	if got, err := s.GetIdempotencyRecord(ctx, "scope", "k-old"); err != nil || got.Post != "p-new" {
		t.Errorf("GetIdempotencyRecord after reuse = %+v, %v; want the new record", got, err)
	}
}

// A record that cannot be kept is refused before anything is written.
func TestCreatePostWithKeyBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.store(t, e.tables(t, PostsTable, WorkspaceTable), nil, Options{})
	ctx := t.Context()
	for _, tt := range []struct {
		name string
		p    post.Post
		key  func(k *publishing.IdempotencyRecord)
		want string
	}{
		{"no scope", twoTargets("p-bad", "b", "acct-a"), func(k *publishing.IdempotencyRecord) { k.Scope = "" }, "no scope"},
		{"no key", twoTargets("p-bad", "b", "acct-a"), func(k *publishing.IdempotencyRecord) { k.Key = "" }, "no key"},
		{"no fingerprint", twoTargets("p-bad", "b", "acct-a"), func(k *publishing.IdempotencyRecord) { k.Fingerprint = "" }, "no fingerprint"},
		{"another post", twoTargets("p-bad", "b", "acct-a"), func(k *publishing.IdempotencyRecord) { k.Post = "p-other" }, "names post p-other"},
		{"a huge answer", twoTargets("p-bad", "b", "acct-a"), func(k *publishing.IdempotencyRecord) { k.Response = make([]byte, MaxKeyResponseBytes+1) }, "response is"},
		{"an account twice", post.Post{ID: "p-bad", Body: "b", Targets: []post.Target{{Account: "a", Slot: t0}, {Account: "a", Slot: t0}}}, func(*publishing.IdempotencyRecord) {}, "targeted twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := keyRecord("scope", "k-bad", "fp", "p-bad")
			tt.key(k)
			err := s.CreatePostWithKey(ctx, tt.p, k)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CreatePostWithKey = %v, want an error saying %q", err, tt.want)
			}
			if _, err := s.GetIdempotencyRecord(ctx, "scope", "k-bad"); !errors.Is(err, post.ErrNotFound) {
				t.Errorf("GetIdempotencyRecord = %v, want post.ErrNotFound: nothing written", err)
			}
		})
	}
}

// A request that claimed its post late (a slow request) is live while its
// claim is younger than CreateStaleAfter, however old its record: its key
// is in flight, not taken over.
func TestCreatePostWithKeyLiveClaim(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, PostsTable, WorkspaceTable)
	clock := &fixedClock{t: t0}
	healthy := e.store(t, prefix, nil, Options{Now: clock.now})
	ctx := t.Context()
	p := twoTargets("p-slow", "slow", "acct-a")
	slow := &crashAfter{API: healthy.db}
	slow.n.Store(1) // the record only
	s := &Store{db: slow, now: clock.now, tables: healthy.tables}
	if err := s.CreatePostWithKey(ctx, p, keyRecord("scope", "k-slow", "fp", p.ID)); !errors.Is(err, errCrashed) {
		t.Fatal(err)
	}
	createID := sval(rawItem(t, e, healthy.tables.workspace, idempotencyKey("scope", "k-slow")), attrCreateID)
	clock.add(CreateStaleAfter - 10*time.Second)
	slow.n.Store(1) // its claim, 50 s later
	if err := s.createPost(ctx, p, clock.now(), createID); !errors.Is(err, errCrashed) {
		t.Fatal(err)
	}
	clock.add(20 * time.Second) // the record 70 s old, the claim 20 s
	if r, err := healthy.GetIdempotencyRecord(ctx, "scope", "k-slow"); err != nil || r.Post != p.ID {
		t.Errorf("GetIdempotencyRecord = %+v, %v; want the live request's record", r, err)
	}
	if ke := keyExists(t, healthy.CreatePostWithKey(ctx, twoTargets("p-slow-retry", "slow", "acct-a"), keyRecord("scope", "k-slow", "fp", "p-slow-retry"))); !ke.InFlight {
		t.Errorf("a retry while the claim is live: %+v, want in flight", ke)
	}
	clock.add(CreateStaleAfter)
	mustDo(t, healthy.CreatePostWithKey(ctx, twoTargets("p-slow-retry", "slow", "acct-a"), keyRecord("scope", "k-slow", "fp", "p-slow-retry")))
	if _, err := healthy.GetPost(ctx, "p-slow-retry"); err != nil {
		t.Errorf("GetPost after the claim went stale = %v", err)
	}
}

// A record keeps the CreatedAt it was given, but its age is the store's:
// a caller whose clock is an hour behind does not make its own request
// look dead to a concurrent retry.
func TestIdempotencyRecordAgeIsTheStores(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clock := &fixedClock{t: t0}
	healthy := e.store(t, e.tables(t, PostsTable, WorkspaceTable), nil, Options{Now: clock.now})
	ctx := t.Context()
	key := keyRecord("scope", "k-age", "fp", "p-age")
	key.CreatedAt = t0.Add(-time.Hour)
	slow := &crashAfter{API: healthy.db}
	slow.n.Store(1) // the record only, the post not claimed yet
	s := &Store{db: slow, now: clock.now, tables: healthy.tables}
	if err := s.CreatePostWithKey(ctx, twoTargets("p-age", "b", "acct-a"), key); !errors.Is(err, errCrashed) {
		t.Fatal(err)
	}
	got, err := healthy.GetIdempotencyRecord(ctx, "scope", "k-age")
	if err != nil || !got.CreatedAt.Equal(key.CreatedAt) {
		t.Errorf("GetIdempotencyRecord = %+v, %v; want the record with the CreatedAt given", got, err)
	}
	retry := keyRecord("scope", "k-age", "fp", "p-age-retry")
	if ke := keyExists(t, healthy.CreatePostWithKey(ctx, twoTargets("p-age-retry", "b", "acct-a"), retry)); !ke.InFlight {
		t.Errorf("a retry at once: %+v, want in flight (the record was written just now)", ke)
	}
}
