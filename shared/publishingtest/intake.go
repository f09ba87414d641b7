package publishingtest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// Intake is a store's side of a create that carries an idempotency key:
// its PostScheduler, the reader of its key records, and its Posts (the
// same store).
type Intake struct {
	Scheduler publishing.PostScheduler
	Keys      publishing.IdempotencyKeys
	Posts     publishing.Posts
	// KeyFirst says the store writes a key's record before its post (the
	// DynamoDB store: no transaction), so a request racing the first one
	// may find the key in flight (KeyExistsError.InFlight) while the
	// first post is being written.
	KeyFirst bool
}

// TestIntake checks that a store keeps a create's idempotency key with
// its post (publishing.PostScheduler.CreatePost with a key): the record
// comes back as written; a second create with the key writes nothing and
// is a *publishing.KeyExistsError holding the stored record, also when
// it names the same post id (the key is checked first, so a retry is
// never refused as a duplicate id); a create refused for its id stores no
// key; keys of different scopes never meet; and of many concurrent
// creates with one key exactly one writes. newStore must return an empty
// store.
//
// KeyExistsError.InFlight may be true only while the record's post is
// not readable: every check here creates the post before the key is used
// again, so it must be false — but for the racers of concurrent creates
// on a store that writes the key first (Intake.KeyFirst).
func TestIntake(t *testing.T, newStore func(t *testing.T) Intake) {
	t.Helper()
	runChecks(t, intakeChecks(), newStore)
}

func intakeChecks() []check[Intake] {
	return []check[Intake]{
		{"CreatePost/key_stored_with_the_post", intakeRoundTrip},
		{"CreatePost/existing_key_writes_nothing", intakeExistingKey},
		{"CreatePost/existing_key_checked_before_the_id", intakeKeyBeforeID},
		{"CreatePost/existing_id_stores_no_key", intakeIDConflict},
		{"CreatePost/scopes_apart", intakeScopes},
		{"CreatePost/concurrent_same_key", intakeConcurrent},
		{"GetIdempotencyRecord/missing", intakeMissing},
	}
}

// intakeRecord is a record of key in scope for post id: a binary answer
// (every byte value, a NUL first) and a time with nanoseconds.
func intakeRecord(scope, key string, id post.ID) publishing.IdempotencyRecord {
	body := make([]byte, 256)
	for i := range body {
		body[i] = byte(i)
	}
	return publishing.IdempotencyRecord{Scope: scope, Key: key, Fingerprint: fmt.Sprintf("%064x", len(key)), Post: id,
		Status: 201, Response: body, CreatedAt: base.Add(-time.Minute)}
}

var recordCmp = cmpopts.EquateEmpty()

func wantRecord(t testing.TB, in Intake, want publishing.IdempotencyRecord, what string) {
	t.Helper()
	got, err := in.Keys.GetIdempotencyRecord(t.Context(), want.Scope, want.Key)
	if err != nil {
		t.Fatalf("%s: GetIdempotencyRecord(%q, %q) = %v, want the record", what, want.Scope, want.Key, err)
	}
	checkUTC(t, what, map[string]time.Time{"CreatedAt": got.CreatedAt})
	if diff := cmp.Diff(want, got, recordCmp); diff != "" {
		t.Errorf("%s: record (-want +got):\n%s", what, diff)
	}
}

func wantNoRecord(t testing.TB, in Intake, scope, key, what string) {
	t.Helper()
	if rec, err := in.Keys.GetIdempotencyRecord(t.Context(), scope, key); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("%s: GetIdempotencyRecord(%q, %q) = %+v, %v; want post.ErrNotFound", what, scope, key, rec, err)
	}
}

func wantNoPost(t testing.TB, in Intake, id post.ID, what string) {
	t.Helper()
	if p, err := in.Posts.GetPost(t.Context(), id); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("%s: GetPost(%s) = %+v, %v; want post.ErrNotFound (nothing written)", what, id, p, err)
	}
}

// wantKeyExists checks that err is a *KeyExistsError holding want, not
// in flight.
func wantKeyExists(t testing.TB, err error, want publishing.IdempotencyRecord, what string) {
	t.Helper()
	wantKeyExistsMaybeInFlight(t, err, want, false, what)
}

// wantKeyExistsMaybeInFlight is wantKeyExists, in flight allowed if
// inFlightOK.
func wantKeyExistsMaybeInFlight(t testing.TB, err error, want publishing.IdempotencyRecord, inFlightOK bool, what string) {
	t.Helper()
	var exists *publishing.KeyExistsError
	if !errors.As(err, &exists) {
		t.Fatalf("%s: CreatePost = %v, want a *publishing.KeyExistsError", what, err)
	}
	if exists.InFlight && !inFlightOK {
		t.Errorf("%s: KeyExistsError.InFlight is true, but the record's post %s was created before", what, want.Post)
	}
	if diff := cmp.Diff(want, exists.Record, recordCmp); diff != "" {
		t.Errorf("%s: KeyExistsError.Record (-want +got):\n%s", what, diff)
	}
}

func mustCreateKeyed(t testing.TB, in Intake, p post.Post, rec *publishing.IdempotencyRecord) {
	t.Helper()
	if err := in.Scheduler.CreatePost(t.Context(), p, rec); err != nil {
		t.Fatalf("CreatePost(%s) = %v, want nil", p.ID, err)
	}
}

func intakeRoundTrip(t testing.TB, in Intake) {
	p := simplePost("keyed", base.Add(time.Hour), post.Scheduled, "a", "b")
	rec := intakeRecord("token-1", "key-1", p.ID)
	mustCreateKeyed(t, in, p, &rec)
	wantPost(t, in.Posts, p, "after a keyed create")
	wantRecord(t, in, rec, "after a keyed create")
	plain := simplePost("plain", base.Add(time.Hour), post.Scheduled, "a")
	mustCreateKeyed(t, in, plain, nil)
	wantPost(t, in.Posts, plain, "after a create without a key")
}

func intakeExistingKey(t testing.TB, in Intake) {
	first := simplePost("first", base.Add(time.Hour), post.Scheduled, "a")
	rec := intakeRecord("token-1", "key-1", first.ID)
	mustCreateKeyed(t, in, first, &rec)
	second := simplePost("second", base.Add(2*time.Hour), post.Scheduled, "b")
	again := intakeRecord("token-1", "key-1", second.ID)
	again.Fingerprint, again.Status, again.Response = "other", 202, []byte("another answer")
	wantKeyExists(t, in.Scheduler.CreatePost(t.Context(), second, &again), rec, "the key again, another post")
	wantNoPost(t, in, second.ID, "the key again, another post")
	wantRecord(t, in, rec, "the key again, another post")
}

func intakeKeyBeforeID(t testing.TB, in Intake) {
	p := simplePost("launch", base.Add(time.Hour), post.Scheduled, "a")
	rec := intakeRecord("token-1", "key-1", p.ID)
	mustCreateKeyed(t, in, p, &rec)
	retry := rec
	retry.CreatedAt = base
	wantKeyExists(t, in.Scheduler.CreatePost(t.Context(), p, &retry), rec, "a retry: the same key and post id")
}

func intakeIDConflict(t testing.TB, in Intake) {
	p := simplePost("taken", base.Add(time.Hour), post.Scheduled, "a")
	mustCreateKeyed(t, in, p, nil)
	other := simplePost("taken", base.Add(3*time.Hour), post.Scheduled, "b")
	rec := intakeRecord("token-1", "key-1", other.ID)
	if err := in.Scheduler.CreatePost(t.Context(), other, &rec); !errors.Is(err, post.ErrConflict) {
		t.Fatalf("CreatePost(existing id, new key) = %v, want post.ErrConflict", err)
	}
	wantNoRecord(t, in, rec.Scope, rec.Key, "after a create refused for its id")
	wantPost(t, in.Posts, p, "after a create refused for its id")
}

func intakeScopes(t testing.TB, in Intake) {
	a := simplePost("of-a", base.Add(time.Hour), post.Scheduled, "a")
	recA := intakeRecord("token-a", "same-key", a.ID)
	mustCreateKeyed(t, in, a, &recA)
	wantNoRecord(t, in, "token-b", "same-key", "another scope's key")
	b := simplePost("of-b", base.Add(time.Hour), post.Scheduled, "a")
	recB := intakeRecord("token-b", "same-key", b.ID)
	recB.Response = []byte("b's answer")
	mustCreateKeyed(t, in, b, &recB)
	wantRecord(t, in, recA, "scope a")
	wantRecord(t, in, recB, "scope b")
}

func intakeConcurrent(t testing.TB, in Intake) {
	const n = 16
	recs := make([]publishing.IdempotencyRecord, n)
	errs := runTogether(n, func(i int) error {
		p := simplePost(fmt.Sprintf("race-%02d", i), base.Add(time.Hour), post.Scheduled, "a")
		recs[i] = intakeRecord("token-1", "raced", p.ID)
		recs[i].Response = []byte(p.ID)
		return in.Scheduler.CreatePost(t.Context(), p, &recs[i])
	})
	winner := exactlyOneWinner(t, errs, func(err error) bool {
		var exists *publishing.KeyExistsError
		return errors.As(err, &exists)
	})
	if winner < 0 {
		return
	}
	for i, err := range errs {
		if i != winner {
			wantKeyExistsMaybeInFlight(t, err, recs[winner], in.KeyFirst, fmt.Sprintf("racer %d", i))
			wantNoPost(t, in, recs[i].Post, fmt.Sprintf("racer %d", i))
		}
	}
	wantRecord(t, in, recs[winner], "after the race")
	mustGetPost(t, in.Posts, recs[winner].Post)
}

func intakeMissing(t testing.TB, in Intake) {
	wantNoRecord(t, in, "token-1", "never-used", "an empty store")
}
