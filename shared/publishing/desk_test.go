package publishing_test

import (
	"bytes"
	stdcmp "cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	stdgif "image/gif"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/ledger"
	"oncepost/shared/mediafit"
	"oncepost/shared/platform"
	"oncepost/shared/platform/catalog"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/sqlitestore"
)

// deskNow is the desks' clock in these tests.
var deskNow = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// deskAccounts are the accounts of a test desk's workspace: one per kind
// of media limit.
var deskAccounts = []post.Account{
	{ID: "news", Platform: "mastodon", Limits: post.Limits{MaxTextGraphemes: 100, MaxMedia: 4, MaxMediaBytes: 1000}},
	{ID: "big", Platform: "mastodon", Limits: post.Limits{MaxMediaBytes: 16 << 20}},
	{ID: "small", Platform: "mastodon", Limits: post.Limits{MaxMediaBytes: 2 << 20}},
	{ID: "plain", Platform: "mastodon"},
	{ID: "chat", Platform: "discord"},
	{ID: "th", Platform: "threads"},
	{ID: "tg", Platform: "telegram"},
	{ID: "sky", Platform: "bluesky"},
}

// storeScheduler is the store's keyed create as a PostScheduler, without
// schedules (the runtime's adds them in the same transaction); it counts
// the targets it was told were cancelled.
type storeScheduler struct {
	s         *sqlitestore.Store
	cancelled atomic.Int32
}

func (k *storeScheduler) CreatePost(ctx context.Context, p post.Post, key *publishing.IdempotencyRecord) error {
	return k.s.CreatePostKeyed(ctx, p, key, nil)
}

func (k *storeScheduler) Reschedule(ctx context.Context, id post.ID, account post.AccountID, slot time.Time) error {
	_, err := k.s.RescheduleTarget(ctx, id, account, slot, deskNow, func(*sql.Tx, publishing.TargetRef, publishing.TargetRef) error { return nil })
	return err
}

func (k *storeScheduler) Cancelled(context.Context, publishing.TargetRef) { k.cancelled.Add(1) }

// deskEnv is a desk on a real SQLite store (a file in the test's temp
// dir) holding deskAccounts and the blocked term "spoiler".
type deskEnv struct {
	store *sqlitestore.Store
	sched *storeScheduler
	desk  *publishing.Desk
	// stored are the attachments MediaSize finds, by ref.
	stored map[string]int64
}

func newDeskEnv(t testing.TB) *deskEnv {
	t.Helper()
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "oncepost.db"), sqlitestore.Options{Now: func() time.Time { return deskNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, a := range deskAccounts {
		a.Handle, a.BaseURL, a.CredentialRef, a.Gate = "@"+string(a.ID), "https://example.social", string(a.ID), post.GateAuto
		if err := s.PutAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	term, err := post.NewBlockedTerm("spoiler", deskNow)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddBlockedTerm(ctx, term); err != nil {
		t.Fatal(err)
	}
	e := &deskEnv{store: s, sched: &storeScheduler{s: s}, stored: map[string]int64{}}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ids := atomic.Int32{}
	e.desk = &publishing.Desk{
		Posts: s, Ledger: s, Accounts: s, Blocklist: s, Scheduler: e.sched, Keys: s, Lister: s,
		Deleter: &publishing.Deleter{Ledger: s, Posts: s, Accounts: s, Owner: "test", Now: func() time.Time { return deskNow }, Logger: quiet},
		Limits: func(name string) (post.Limits, bool) {
			k, ok := catalog.Lookup(name)
			return k.Limits(), ok
		},
		Measure: func(name, text string) int { k, _ := catalog.Lookup(name); return k.Measure(text) },
		Capabilities: func(name string) (platform.Capabilities, bool) {
			k, ok := catalog.Lookup(name)
			return k.Capabilities, ok
		},
		MediaSize: func(_ context.Context, ref string) (int64, error) {
			n, ok := e.stored[ref]
			if !ok {
				return 0, fmt.Errorf("media %s: %w", ref, post.ErrNotFound)
			}
			return n, nil
		},
		Now:          func() time.Time { return deskNow },
		NewID:        func(time.Time) string { return fmt.Sprintf("gen-%03d", ids.Add(1)) },
		InFlightWait: 200 * time.Millisecond,
		Logger:       quiet,
	}
	return e
}

// postIDs lists every post in the store.
func (e *deskEnv) postIDs(t testing.TB) []post.ID {
	t.Helper()
	page, err := e.store.ListPostPage(context.Background(), publishing.PostFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var ids []post.ID
	for _, p := range page.Posts {
		ids = append(ids, p.ID)
	}
	slices.Sort(ids)
	return ids
}

const deskAt = "2026-12-01T10:00:00+01:00"

func draftTo(id, body string, accounts ...string) post.Draft {
	d := post.Draft{ID: id, Body: body}
	for _, a := range accounts {
		d.Targets = append(d.Targets, post.DraftTarget{Account: a, At: deskAt})
	}
	return d
}

// asJSON is an API's answer: 201 and the post as JSON.
func asJSON(p post.Post) (int, []byte, error) {
	b, err := json.Marshal(p)
	return 201, b, err
}

func keyed(key, fingerprint string) *publishing.KeyedRequest {
	return &publishing.KeyedRequest{Scope: "token-1", Key: key, Fingerprint: fingerprint, Encode: asJSON}
}

// fields are the fields a refusal names, in order.
func fields(err error) []string {
	var out []string
	for _, fe := range publishing.FieldErrors(err) {
		out = append(out, fe.Field)
	}
	return out
}

// A retried keyed create is answered with the first answer, byte for
// byte, and makes no second post; the same key with another request is
// refused and writes nothing.
func TestDeskScheduleWithAKey(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name        string
		first, then post.Draft
		thenPrint   string // the retry's fingerprint
		wantErr     error
		wantPosts   []post.ID
	}{
		{"a retry, the id generated", draftTo("", "Hello.", "plain"), draftTo("", "Hello.", "plain"), "fp-1", nil, []post.ID{"gen-001"}},
		{"a retry, the id given", draftTo("launch", "Hello.", "plain"), draftTo("launch", "Hello.", "plain"), "fp-1", nil, []post.ID{"launch"}},
		{"the key with another request", draftTo("launch", "Hello.", "plain"), draftTo("other", "Another post.", "plain"), "fp-2", publishing.ErrKeyReused, []post.ID{"launch"}},
		{"the key with another request, the same id", draftTo("launch", "Hello.", "plain"), draftTo("launch", "Changed.", "plain"), "fp-2", publishing.ErrKeyReused, []post.ID{"launch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newDeskEnv(t)
			first, err := e.desk.Schedule(ctx, tt.first, nil, keyed("k1", "fp-1"))
			if err != nil || first.Replayed || first.Status != 201 || len(first.Body) == 0 {
				t.Fatalf("first request: %+v, %v; want a new post and its answer", first, err)
			}
			again, err := e.desk.Schedule(ctx, tt.then, nil, keyed("k1", tt.thenPrint))
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("second request: %+v, %v; want %v", again, err, tt.wantErr)
				}
			case err != nil || !again.Replayed || again.Status != first.Status || !bytes.Equal(again.Body, first.Body) || again.Post.ID != first.Post.ID:
				t.Errorf("second request: replayed %v, %d %q, post %s, %v; want the first answer %d %q replayed",
					again.Replayed, again.Status, again.Body, again.Post.ID, err, first.Status, first.Body)
			}
			if diff := cmp.Diff(tt.wantPosts, e.postIDs(t)); diff != "" {
				t.Errorf("posts stored (-want +got):\n%s", diff)
			}
		})
	}
}

// Of 50 concurrent requests with one key on one SQLite file, exactly one
// makes a post and every one gets its answer, whether the id is given
// (the key is checked before the id, so no retry is refused as a
// duplicate id) or generated (each request names another post).
func TestDeskScheduleConcurrentKey(t *testing.T) {
	const n = 50
	for _, id := range []string{"", "launch"} {
		t.Run("id "+stdcmp.Or(id, "generated"), func(t *testing.T) {
			e := newDeskEnv(t)
			results := make([]publishing.ScheduleResult, n)
			errs := make([]error, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-start
					results[i], errs[i] = e.desk.Schedule(context.Background(), draftTo(id, "Hello.", "plain"), nil, keyed("k1", "fp-1"))
				})
			}
			close(start)
			wg.Wait()
			firsts := 0
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("request %d: %v", i, errs[i])
				}
				if !results[i].Replayed {
					firsts++
				}
				if !bytes.Equal(results[i].Body, results[0].Body) {
					t.Errorf("request %d answered %q, request 0 %q", i, results[i].Body, results[0].Body)
				}
			}
			if posts := e.postIDs(t); len(posts) != 1 || firsts != 1 {
				t.Errorf("%d posts stored (%v), %d requests not replayed; want 1 and 1", len(posts), posts, firsts)
			}
		})
	}
}

// lookupBarrier holds the answers of the first n key lookups until all n
// were read, so every request has looked the key up before any writes:
// the interleaving in which only a key written in the post's own write
// stops a second post.
type lookupBarrier struct {
	publishing.IdempotencyKeys
	n     int32
	calls atomic.Int32
	wg    *sync.WaitGroup
}

func (b *lookupBarrier) GetIdempotencyRecord(ctx context.Context, scope, key string) (publishing.IdempotencyRecord, error) {
	rec, err := b.IdempotencyKeys.GetIdempotencyRecord(ctx, scope, key)
	if b.calls.Add(1) <= b.n {
		b.wg.Done()
		b.wg.Wait()
	}
	return rec, err
}

// naiveScheduler writes the post, then the key in a write of its own (a
// conditional put): both conditional, but not one write.
type naiveScheduler struct {
	*storeScheduler
	mu   sync.Mutex
	keys map[string]publishing.IdempotencyRecord
}

func (s *naiveScheduler) CreatePost(ctx context.Context, p post.Post, key *publishing.IdempotencyRecord) error {
	if err := s.s.CreatePost(ctx, p); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec, ok := s.keys[key.Key]; ok {
		return &publishing.KeyExistsError{Record: rec}
	}
	s.keys[key.Key] = *key
	return nil
}

func (s *naiveScheduler) GetIdempotencyRecord(_ context.Context, _, key string) (publishing.IdempotencyRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec, ok := s.keys[key]; ok {
		return rec, nil
	}
	return publishing.IdempotencyRecord{}, post.ErrNotFound
}

// The key's lookup alone does not stop a second post: requests that all
// looked before any wrote make one post each unless the key is written
// in the post's own write. The naive row shows the race this test sets
// up; the store's row fails if CreatePostKeyed stops writing the key with
// the post.
func TestDeskScheduleKeyWrittenWithThePost(t *testing.T) {
	const n = 8
	tests := []struct {
		name      string
		naive     bool
		wantPosts int
	}{
		{"the key in the post's write", false, 1},
		{"the key written after the post", true, n},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newDeskEnv(t)
			var keys publishing.IdempotencyKeys = e.store
			if tt.naive {
				naive := &naiveScheduler{storeScheduler: e.sched, keys: map[string]publishing.IdempotencyRecord{}}
				e.desk.Scheduler, keys = naive, naive
			}
			var wg sync.WaitGroup
			wg.Add(n)
			e.desk.Keys = &lookupBarrier{IdempotencyKeys: keys, n: n, wg: &wg}
			bodies := make([][]byte, n)
			var done sync.WaitGroup
			for i := range n {
				done.Go(func() {
					res, err := e.desk.Schedule(context.Background(), draftTo("", "Hello.", "plain"), nil, keyed("k1", "fp-1"))
					if err != nil {
						t.Errorf("request %d: %v", i, err)
					}
					bodies[i] = res.Body
				})
			}
			done.Wait()
			if got := len(e.postIDs(t)); got != tt.wantPosts {
				t.Errorf("%d posts stored, want %d", got, tt.wantPosts)
			}
			for i := range n {
				if !bytes.Equal(bodies[i], bodies[0]) {
					t.Errorf("request %d answered %q, request 0 %q", i, bodies[i], bodies[0])
				}
			}
		})
	}
}

// hiddenPosts hides one post from GetPost for the first hide reads: a
// store that wrote the key before the post, with the post not written yet.
type hiddenPosts struct {
	publishing.Posts
	id    post.ID
	hide  int32
	reads atomic.Int32
}

func (h *hiddenPosts) GetPost(ctx context.Context, id post.ID) (post.Post, error) {
	if id == h.id && h.reads.Add(1) <= h.hide {
		return post.Post{}, post.ErrNotFound
	}
	return h.Posts.GetPost(ctx, id)
}

// A key whose post is not readable yet is waited for: replayed when the
// post shows up, ErrKeyInFlight when it does not within InFlightWait.
func TestDeskScheduleKeyInFlight(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		hide    int32
		wait    time.Duration // InFlightWait: far longer than the three looks take, or short
		wantErr error
	}{
		{"the post shows up", 3, time.Minute, nil},
		{"it does not", 1 << 30, 50 * time.Millisecond, publishing.ErrKeyInFlight},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newDeskEnv(t)
			first, err := e.desk.Schedule(ctx, draftTo("launch", "Hello.", "plain"), nil, keyed("k1", "fp-1"))
			if err != nil {
				t.Fatal(err)
			}
			e.desk.Posts = &hiddenPosts{Posts: e.store, id: "launch", hide: tt.hide}
			e.desk.InFlightWait = tt.wait
			res, err := e.desk.Schedule(ctx, draftTo("launch", "Hello.", "plain"), nil, keyed("k1", "fp-1"))
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("Schedule = %+v, %v; want %v", res, err, tt.wantErr)
			case tt.wantErr == nil && (err != nil || !res.Replayed || !bytes.Equal(res.Body, first.Body)):
				t.Errorf("Schedule = %+v, %v; want the first answer replayed", res, err)
			}
			if diff := cmp.Diff([]post.ID{"launch"}, e.postIDs(t)); diff != "" {
				t.Errorf("posts (-want +got):\n%s", diff)
			}
		})
	}
}

// Validate refuses what `oncepost post add` refuses, each problem naming
// its field (the CLI's badinput tests run the same desk through the
// command): drafts, and what each account gets against its media limits.
func TestDeskValidate(t *testing.T) {
	ctx := context.Background()
	sha := strings.Repeat("a", 64)
	img := func(ref string) post.DraftMedia {
		return post.DraftMedia{Media: post.Media{Ref: ref, SHA256: strings.Repeat(ref[:1], 64), ContentType: "image/jpeg"}}
	}
	withMedia := func(d post.Draft, media ...post.DraftMedia) post.Draft { d.Media = media; return d }
	ref := func(c string) string { return strings.Repeat(c, 64) + ".jpg" }
	a, b, c := ref("a"), ref("b"), ref("c")
	three := []post.DraftMedia{img(a), img(b), img(c)}
	mb := func(n int) int { return n << 20 }
	tests := []struct {
		name       string
		draft      post.Draft
		sizes      map[string]int
		publicURLs bool
		want       []string // the fields refused; none accepts
		wantText   string
	}{
		{"accepted", draftTo("p1", "Hello.", "news"), nil, false, nil, ""},
		{"bad id", draftTo("a b", "Hello.", "news"), nil, false, []string{"id"}, "not a valid post id"},
		{"empty", draftTo("p1", "  ", "news"), nil, false, []string{"body"}, "is empty"},
		{"no target", draftTo("p1", "Hello."), nil, false, []string{"targets"}, "is empty"},
		{"unknown account", draftTo("p1", "Hello.", "ghost"), nil, false, []string{"targets[0].account"}, `unknown account "ghost"`},
		{"past", post.Draft{ID: "p1", Body: "x", Targets: []post.DraftTarget{{Account: "news", At: "2026-12-01T07:00:00Z"}}}, nil, false, []string{"targets[0].at"}, "in the past"},
		{"no offset", post.Draft{ID: "p1", Body: "x", Targets: []post.DraftTarget{{Account: "news", At: "2030-01-01T09:00"}}}, nil, false, []string{"targets[0].at"}, "no timezone offset"},
		{"over the instance's text limit", draftTo("p1", strings.Repeat("a", 101), "news"), nil, false, []string{"body"}, "over its limit of 100"},
		{"a text for a platform no target is on", post.Draft{ID: "p1", Body: "hi", Texts: map[string]string{"bluesky": "hello"}, Targets: draftTo("", "", "news").Targets}, nil, false,
			[]string{"texts.bluesky"}, "no target account is on bluesky"},
		{"blocked term", draftTo("p1", "No Spoiler here", "news"), nil, false, []string{"body"}, `blocked term "spoiler"`},
		{"several problems at once", draftTo("a b", "  ", "ghost"), nil, false, []string{"id", "body", "targets[0].account"}, ""},
		{"under an instance's limit", withMedia(draftTo("p1", "x", "news"), img(a)), map[string]int{a: 1000}, false, nil, ""},
		{"over an instance's limit", withMedia(draftTo("p1", "x", "news"), img(a)), map[string]int{a: 1001}, false,
			[]string{"media[0]"}, "is 0.0 MB, over the 0.0 MB images news's instance accepts; resize it"},
		{"over the platform's limit", withMedia(draftTo("p1", "x", "sky"), img(a)), map[string]int{a: 1_000_001}, false,
			[]string{"media[0]"}, "over the 1.0 MB images bluesky takes (sky)"},
		{"discord: three files under 24 MiB together", withMedia(draftTo("p1", "x", "chat"), three...), map[string]int{a: mb(8), b: mb(8), c: mb(8)}, false, nil, ""},
		{"discord: three files over it", withMedia(draftTo("p1", "x", "chat"), three...), map[string]int{a: mb(9), b: mb(9), c: mb(9)}, false,
			[]string{"media"}, "28.3 MB in all, over the 25.2 MB discord takes in one post (chat)"},
		{"threads from the embedded runtime", withMedia(draftTo("p1", "x", "th"), img(a)), map[string]int{a: 10}, false,
			[]string{"media"}, "threads fetches images from a public URL, which the embedded runtime cannot give"},
		{"threads from AWS", withMedia(draftTo("p1", "x", "th"), img(a)), map[string]int{a: 10}, true, nil, ""},
		{"threads without media", draftTo("p1", "x", "th"), nil, false, nil, ""},
		{"an attachment stored before is measured", withMedia(draftTo("p1", "x", "news"), img(sha+".jpg")), nil, false,
			[]string{"media[0]"}, "over the 0.0 MB images news's instance accepts"},
		{"an attachment that is not stored", withMedia(draftTo("p1", "x", "news"), img(b)), nil, false,
			[]string{"media[0].ref"}, "no attachment is stored as " + b},
	}
	e := newDeskEnv(t) // Validate writes nothing: one store for every case
	e.stored[sha+".jpg"] = 5000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.desk.PublicURLs = tt.publicURLs
			p, err := e.desk.Validate(ctx, tt.draft, tt.sizes)
			if diff := cmp.Diff(tt.want, fields(err)); diff != "" {
				t.Fatalf("fields refused (-want +got):\n%s\nerror: %v", diff, err)
			}
			if tt.want == nil && (err != nil || p.ID != post.ID(tt.draft.ID)) {
				t.Fatalf("Validate = %s, %v; want the post", p.ID, err)
			}
			if err != nil && !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not say %q", err, tt.wantText)
			}
		})
	}
}

// Schedule generates an id when the draft has none, and refuses one that
// exists on the field "id"; nothing is written for a refused draft.
func TestDeskScheduleIDs(t *testing.T) {
	ctx := context.Background()
	e := newDeskEnv(t)
	res, err := e.desk.Schedule(ctx, draftTo("", "Hello.", "news"), nil, nil)
	if err != nil || res.Post.ID != "gen-001" || len(res.Post.Targets) != 1 {
		t.Fatalf("Schedule without an id = %+v, %v; want post gen-001", res.Post, err)
	}
	_, err = e.desk.Schedule(ctx, draftTo("gen-001", "Again.", "news"), nil, nil)
	if diff := cmp.Diff([]string{"id"}, fields(err)); diff != "" || !strings.Contains(err.Error(), `post "gen-001" exists already`) {
		t.Errorf("Schedule(existing id) = %v; fields (-want +got):\n%s", err, diff)
	}
	_, err = e.desk.Schedule(ctx, draftTo("", "Hello.", "ghost"), nil, nil)
	if diff := cmp.Diff([]string{"targets[0].account"}, fields(err)); diff != "" {
		t.Errorf("Schedule(unknown account) = %v; fields (-want +got):\n%s", err, diff)
	}
	if diff := cmp.Diff([]post.ID{"gen-001"}, e.postIDs(t)); diff != "" {
		t.Errorf("posts (-want +got):\n%s", diff)
	}
}

// FitLimits gives each platform the strictest limits of its accounts
// and the platform's formats: Threads takes JPEG and PNG only, so a GIF
// is re-encoded for it.
func TestDeskFitLimits(t *testing.T) {
	e := newDeskEnv(t)
	d := draftTo("p1", "Pictures.", "big", "small", "th", "tg")
	d.Media = []post.DraftMedia{{Media: post.Media{Ref: strings.Repeat("a", 64) + ".gif", SHA256: strings.Repeat("a", 64), ContentType: "image/gif"}}}
	_, limits, err := e.desk.FitLimits(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]publishing.ImageLimits{
		"mastodon": {MaxBytes: 2 << 20, MaxPixels: 33_177_600, Who: "small (mastodon, images up to 2.10 MB)"},
		"threads":  {MaxBytes: 8_000_000, Formats: []string{"image/jpeg", "image/png"}, Who: "th (threads, images up to 8.00 MB)"},
		"telegram": {MaxBytes: 10 << 20, Who: "tg (telegram, images up to 10.49 MB)"},
	}
	if diff := cmp.Diff(want, limits); diff != "" {
		t.Errorf("limits per platform (-want +got):\n%s", diff)
	}
	gif := image.NewPaletted(image.Rect(0, 0, 4, 4), []color.Color{color.Black, color.White})
	var buf bytes.Buffer
	if err := stdgif.Encode(&buf, gif, nil); err != nil {
		t.Fatal(err)
	}
	th := limits["threads"]
	r, err := mediafit.Fit(buf.Bytes(), "image/gif", mediafit.Limits{MaxBytes: th.MaxBytes, MaxPixels: th.MaxPixels, Formats: th.Formats})
	if err != nil || !r.Changed || r.ContentType == "image/gif" {
		t.Errorf("a GIF fitted for threads: changed %v, %s, %v; want re-encoded", r.Changed, r.ContentType, err)
	}
	if _, _, err := e.desk.FitLimits(context.Background(), draftTo("p1", "x", "ghost")); len(fields(err)) == 0 {
		t.Errorf("FitLimits(unknown account) = %v, want a refusal", err)
	}
}

// The operator's actions on a post's targets: each target's outcome, and
// a refusal of the input naming its field.
func TestDeskTargetActions(t *testing.T) {
	ctx := context.Background()
	e := newDeskEnv(t)
	d := draftTo("p1", "Hello.", "news", "plain")
	if _, err := e.desk.Schedule(ctx, d, nil, nil); err != nil {
		t.Fatal(err)
	}
	later := deskNow.Add(48 * time.Hour)
	type outcome struct {
		Account  post.AccountID
		Done     bool
		Message  string
		Decision string
	}
	tests := []struct {
		name       string
		do         func() ([]publishing.TargetOutcome, error)
		want       []outcome
		wantFields []string
		wantErr    error
	}{
		{"reschedule: in the past", func() ([]publishing.TargetOutcome, error) {
			return e.desk.Reschedule(ctx, "p1", "", deskNow.Add(-time.Minute))
		},
			nil, []string{"at"}, nil},
		{"reschedule: no such target", func() ([]publishing.TargetOutcome, error) { return e.desk.Reschedule(ctx, "p1", "ghost", later) },
			nil, []string{"account"}, nil},
		{"reschedule: no such post", func() ([]publishing.TargetOutcome, error) { return e.desk.Reschedule(ctx, "ghost", "", later) },
			nil, nil, post.ErrNotFound},
		{"reschedule one", func() ([]publishing.TargetOutcome, error) { return e.desk.Reschedule(ctx, "p1", "news", later) },
			[]outcome{{"news", true, "rescheduled for 2026-12-03T08:00:00Z", ""}}, nil, nil},
		{"reschedule again", func() ([]publishing.TargetOutcome, error) { return e.desk.Reschedule(ctx, "p1", "news", later) },
			[]outcome{{"news", true, "already scheduled at 2026-12-03T08:00:00Z", ""}}, nil, nil},
		{"delete: not published", func() ([]publishing.TargetOutcome, error) { return e.desk.RequestDelete(ctx, "p1", "", false) },
			[]outcome{{"news", true, "scheduled, nothing to delete", ""}, {"plain", true, "scheduled, nothing to delete", ""}}, nil, nil},
		{"cancel one", func() ([]publishing.TargetOutcome, error) { return e.desk.Cancel(ctx, "p1", "plain") },
			[]outcome{{"plain", true, "cancelled; it will not be sent", ""}}, nil, nil},
		{"cancel every one", func() ([]publishing.TargetOutcome, error) { return e.desk.Cancel(ctx, "p1", "") },
			[]outcome{{"news", true, "cancelled; it will not be sent", ""}, {"plain", true, "already cancelled", ""}}, nil, nil},
		{"cancel: no such target", func() ([]publishing.TargetOutcome, error) { return e.desk.Cancel(ctx, "p1", "ghost") },
			nil, []string{"account"}, nil},
		{"reschedule a cancelled one", func() ([]publishing.TargetOutcome, error) { return e.desk.Reschedule(ctx, "p1", "plain", later) },
			[]outcome{{"plain", false, "", ""}}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.do()
			if diff := cmp.Diff(tt.wantFields, fields(err)); diff != "" {
				t.Fatalf("fields refused (-want +got):\n%s\nerror: %v", diff, err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) || tt.wantErr == nil && tt.wantFields == nil && err != nil {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			var outs []outcome
			for _, o := range got {
				msg := o.Message
				if !o.Done {
					msg = "" // refusals say why in the store's words; Done is what matters here
				}
				outs = append(outs, outcome{o.Account, o.Done, msg, o.Decision})
			}
			if diff := cmp.Diff(tt.want, outs); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
		})
	}
	if n := e.sched.cancelled.Load(); n != 2 {
		t.Errorf("the scheduler was told of %d cancelled targets, want 2", n)
	}
}

// A published post's delete waits for approval and names the entry to
// approve; asked again, even with approve, it writes nothing and says so
// again: approving the entry is the operator's decision on it.
func TestDeskRequestDelete(t *testing.T) {
	ctx := context.Background()
	e := newDeskEnv(t)
	if _, err := e.desk.Schedule(ctx, draftTo("p1", "Hello.", "news"), nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.UpdateTarget(ctx, "p1", "news", post.TargetUpdate{Status: post.Published, RemoteID: "109", At: deskNow}); err != nil {
		t.Fatal(err)
	}
	want := ledger.DeleteKey("news", "109")
	for i, msg := range []string{"delete of remote post 109 requested; it waits for approval", "delete of remote post 109 requested; it waits for approval"} {
		got, err := e.desk.RequestDelete(ctx, "p1", "", false)
		if diff := cmp.Diff([]publishing.TargetOutcome{{Account: "news", Done: true, Message: msg, Key: want, Decision: "approve"}}, got); err != nil || diff != "" {
			t.Errorf("request %d: %v; outcomes (-want +got):\n%s", i, err, diff)
		}
	}
	got, err := e.desk.RequestDelete(ctx, "p1", "news", true)
	wantOut := []publishing.TargetOutcome{{Account: "news", Done: true, Message: "delete of remote post 109 requested; it waits for approval", Key: want, Decision: "approve"}}
	if diff := cmp.Diff(wantOut, got); err != nil || diff != "" {
		t.Errorf("approve with a second request: %v; outcomes (-want +got):\n%s", err, diff)
	}
}

// Show's JSON is `oncepost post show --json`'s: the post, and each
// target's fields with its ledger entries, each with its history.
func TestDeskShow(t *testing.T) {
	ctx := context.Background()
	e := newDeskEnv(t)
	if _, err := e.desk.Schedule(ctx, draftTo("p1", "Hello.", "news"), nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.desk.Show(ctx, "ghost"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("Show(ghost) = %v, want post.ErrNotFound", err)
	}
	slot, _ := post.ParseSlot(deskAt)
	entry := ledger.NewEntry(ledger.PublishKey("news", "p1", slot), ledger.Publish, "news", "p1", slot, "fp", "w", deskNow, time.Minute)
	if err := e.store.Create(ctx, entry); err != nil {
		t.Fatal(err)
	}
	v, err := e.desk.Show(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var shape struct {
		Post    map[string]any `json:"post"`
		Targets []map[string]json.RawMessage
	}
	if err := json.Unmarshal(raw, &shape); err != nil {
		t.Fatal(err)
	}
	if len(shape.Targets) != 1 {
		t.Fatalf("post show JSON %s: want one target", raw)
	}
	var keys []string
	for k := range shape.Targets[0] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if diff := cmp.Diff([]string{"account", "ledger", "slot", "status", "updated_at"}, keys); diff != "" {
		t.Errorf("a target's keys (-want +got):\n%s", diff)
	}
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal(shape.Targets[0]["ledger"], &entries); err != nil || len(entries) != 1 || entries[0]["history"] == nil || entries[0]["key"] == nil {
		t.Errorf("a target's ledger %s: want one entry with its key and history", shape.Targets[0]["ledger"])
	}
}

// List refuses an unknown status or account naming the field, and passes
// a foreign cursor's ErrBadCursor through.
func TestDeskList(t *testing.T) {
	ctx := context.Background()
	e := newDeskEnv(t)
	if _, err := e.desk.Schedule(ctx, draftTo("p1", "Hello.", "news"), nil, nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		f          publishing.PostFilter
		wantFields []string
		wantErr    error
		wantPosts  int
	}{
		{"every post", publishing.PostFilter{}, nil, nil, 1},
		{"by account", publishing.PostFilter{Account: "news", Statuses: []post.TargetStatus{post.Scheduled}}, nil, nil, 1},
		{"unknown status and account", publishing.PostFilter{Account: "ghost", Statuses: []post.TargetStatus{"sent"}}, []string{"status", "account"}, nil, 0},
		{"a foreign cursor", publishing.PostFilter{After: "nope"}, nil, publishing.ErrBadCursor, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := e.desk.List(ctx, tt.f)
			if diff := cmp.Diff(tt.wantFields, fields(err)); diff != "" {
				t.Errorf("fields refused (-want +got):\n%s", diff)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("List = %v, want %v", err, tt.wantErr)
			}
			if len(page.Posts) != tt.wantPosts {
				t.Errorf("%d posts, want %d", len(page.Posts), tt.wantPosts)
			}
		})
	}
}
