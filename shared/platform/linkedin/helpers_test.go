package linkedin

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/adaptertest"
)

// Secrets of the test credential; TestNoSecretInErrors searches every
// error for them.
const (
	testAccess       = "li-access-5ecret-AAA"
	testRefresh      = "li-refresh-5ecret-BBB"
	testClientSecret = "li-client-5ecret-CCC"
	testPerson       = "urn:li:person:8675309"
	testOrg          = "urn:li:organization:2414183"
)

// fixedNow is the clock of every test client and of the fake's first post.
var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// The shared test scaffolding (adaptertest), by the names this package's
// tests use.
var (
	newServer  = adaptertest.LocalServer
	refusedURL = adaptertest.ClosedURL
	writeJSON  = adaptertest.WriteJSON
)

// outcome is an error reduced to its failure class and fields, for cmp.
type outcome = adaptertest.Outcome

// newClient returns a client for baseURL posting as the organization (so
// its posts are readable by default), with its own transport, a fixed
// clock and fast read backoff.
func newClient(t *testing.T, baseURL string, edit ...func(*Config)) *Client {
	t.Helper()
	cfg := Config{
		BaseURL:      baseURL,
		Author:       testOrg,
		Credential:   platform.Credential{AccessToken: testAccess, RefreshToken: testRefresh},
		ClientID:     "client-id",
		ClientSecret: testClientSecret,
		TokenURL:     baseURL + "/oauth/v2/accessToken",
		HTTPClient:   adaptertest.HTTPClient(t),
	}
	for _, e := range edit {
		e(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.now = func() time.Time { return fixedNow }
	c.http.ReadBackoff = time.Millisecond
	return c
}

// outcomeOf classifies err; it fails the test unless err is nil or of
// exactly one failure class. The tests compare the class and its fields,
// not the message.
func outcomeOf(t *testing.T, err error) outcome {
	t.Helper()
	return adaptertest.OutcomeOf(t, err).WithoutMessage()
}

// fakePost is a post the fake keeps, its commentary as it was sent.
type fakePost struct {
	ID             string
	Author         string
	Commentary     string
	CreatedAt      int64
	LastModifiedAt int64
	MediaID        string
}

// entity renders the post as the Posts API does (posts-api, "Post
// Schema"; GET /rest/posts/{urn} and the elements of the author finder,
// https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/posts-api).
func (p *fakePost) entity() map[string]any {
	e := map[string]any{
		"id":                        p.ID,
		"author":                    p.Author,
		"commentary":                p.Commentary,
		"visibility":                "PUBLIC",
		"lifecycleState":            "PUBLISHED",
		"isReshareDisabledByAuthor": false,
		"createdAt":                 p.CreatedAt,
		"publishedAt":               p.CreatedAt,
		"lastModifiedAt":            p.LastModifiedAt,
		"distribution":              map[string]any{"feedDistribution": "MAIN_FEED", "targetEntities": []any{}, "thirdPartyDistributionChannels": []any{}},
		"lifecycleStateInfo":        map[string]any{"isEditedByAuthor": p.LastModifiedAt != p.CreatedAt},
	}
	if p.MediaID != "" {
		e["content"] = map[string]any{"media": map[string]any{"id": p.MediaID, "altText": ""}}
	}
	return e
}

// createFault is what the fake does with a create after storing it;
// answered reports whether it wrote the answer.
type createFault func(w http.ResponseWriter, r *http.Request) (answered bool)

// fakeLinkedIn is an httptest stand-in for the Posts API that keeps
// posts, following the documented shapes:
//
//   - POST /rest/posts → 201, empty body, the URN in x-restli-id
//     (posts-api, "Create a Text-Only Post");
//   - GET /rest/posts?author=…&q=author&count=…&start=…&sortBy=LAST_MODIFIED
//     with X-RestLi-Method: FINDER → {"elements": […], "paging": {"start",
//     "count", "links"}}, most recently modified first (posts-api, "Find
//     Posts by Authors"; paging per
//     https://learn.microsoft.com/en-us/linkedin/shared/api-guide/concepts/pagination);
//   - GET /rest/posts/{encoded urn} → the post, or 404 (posts-api, "Get
//     Posts by URN"; Rest.li 2.0 keys URL-encoded, ":" as %3A,
//     https://learn.microsoft.com/en-us/linkedin/shared/api-guide/concepts/protocol-version);
//   - DELETE /rest/posts/{encoded urn} → 204; "Post deletions are
//     idempotent": a post already gone answers AgainStatus (204 or 404).
//
// Every request must carry the bearer token, LinkedIn-Version and
// X-Restli-Protocol-Version: 2.0.0 (posts-api: "All APIs require the
// request header LinkedIn-Version … X-Restli-Protocol-Version: 2.0.0").
type fakeLinkedIn struct {
	t       *testing.T
	author  string
	token   string
	version string

	mu    sync.Mutex
	clock time.Time
	seq   int
	posts []*fakePost
	// CreateFault, when set, runs after a create was stored.
	CreateFault createFault
	// ReadStatus, when set, answers every GET with it and an error body.
	ReadStatus int
	// MaxCount caps the count a finder page serves (0: as asked).
	MaxCount int
	// AgainStatus answers a DELETE of a post already gone (0: 204).
	AgainStatus int

	creates, removed, deletes, finds, gets int
	bodies                                 []map[string]any
}

func newFake(t *testing.T, author string) (*fakeLinkedIn, *httptest.Server) {
	f := &fakeLinkedIn{t: t, author: author, token: testAccess, version: DefaultAPIVersion, clock: fixedNow}
	return f, newServer(t, f)
}

// add stores a post written elsewhere (commentary in little text),
// created at created and last modified at modified.
func (f *fakeLinkedIn) add(commentary string, created, modified time.Time) *fakePost {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	p := &fakePost{
		ID: fmt.Sprintf("urn:li:share:%d", 7100000000000000000+f.seq), Author: f.author, Commentary: commentary,
		CreatedAt: created.UnixMilli(), LastModifiedAt: modified.UnixMilli(),
	}
	f.posts = append(f.posts, p)
	return p
}

// stored returns the posts the fake holds, oldest first.
func (f *fakeLinkedIn) stored() []fakePost {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []fakePost{}
	for _, p := range f.posts {
		out = append(out, *p)
	}
	return out
}

func (f *fakeLinkedIn) counts() (creates, removed, deletes, finds, gets int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates, f.removed, f.deletes, f.finds, f.gets
}

func (f *fakeLinkedIn) find(urn string) (int, *fakePost) {
	for i, p := range f.posts {
		if p.ID == urn {
			return i, p
		}
	}
	return -1, nil
}

func (f *fakeLinkedIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if got := r.Header.Get("Authorization"); got != "Bearer "+f.token {
		// https://learn.microsoft.com/en-us/linkedin/shared/api-guide/concepts/error-handling (401)
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Invalid access token", "serviceErrorCode": 65600, "status": 401})
		return
	}
	if got := r.Header.Get("LinkedIn-Version"); got != f.version {
		// A retired version: 426 NONEXISTENT_VERSION (n8n-io/n8n#28600).
		writeJSON(w, http.StatusUpgradeRequired, map[string]any{"status": 426, "code": "NONEXISTENT_VERSION", "message": "Requested version " + got + " is not active"})
		return
	}
	if got := r.Header.Get("X-Restli-Protocol-Version"); got != "2.0.0" {
		f.t.Errorf("%s %s: X-Restli-Protocol-Version %q, want 2.0.0", r.Method, r.URL.Path, got)
	}
	const collection = "/rest/posts"
	escaped := r.URL.EscapedPath()
	switch {
	case r.Method == http.MethodPost && escaped == collection:
		f.create(w, r)
	case r.Method == http.MethodGet && escaped == collection:
		f.finder(w, r)
	case strings.HasPrefix(escaped, collection+"/"):
		key := strings.TrimPrefix(escaped, collection+"/")
		if strings.Contains(key, ":") {
			f.t.Errorf("%s %s: the post key is not URL-encoded (Rest.li 2.0 wants %%3A for ':')", r.Method, escaped)
		}
		urn, err := url.PathUnescape(key)
		if err != nil {
			f.t.Errorf("%s %s: %v", r.Method, escaped, err)
		}
		switch r.Method {
		case http.MethodGet:
			f.get(w, urn)
		case http.MethodDelete:
			f.delete(w, urn)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	default:
		f.t.Errorf("unexpected request %s %s", r.Method, escaped)
		w.WriteHeader(http.StatusNotFound)
	}
}

func (f *fakeLinkedIn) create(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.t.Errorf("create: decode body: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	commentary, _ := body["commentary"].(string)
	f.mu.Lock()
	f.creates++
	f.bodies = append(f.bodies, body)
	f.seq++
	f.clock = f.clock.Add(time.Second)
	p := &fakePost{
		ID: fmt.Sprintf("urn:li:share:%d", 7100000000000000000+f.seq), Author: fmt.Sprint(body["author"]), Commentary: commentary,
		CreatedAt: f.clock.UnixMilli(), LastModifiedAt: f.clock.UnixMilli(),
	}
	f.posts = append(f.posts, p)
	fault := f.CreateFault
	f.mu.Unlock()
	if fault != nil && fault(w, r) {
		return
	}
	w.Header().Set("x-restli-id", p.ID)
	w.WriteHeader(http.StatusCreated)
}

func (f *fakeLinkedIn) finder(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finds++
	if f.ReadStatus != 0 {
		writeJSON(w, f.ReadStatus, map[string]any{"message": "Not enough permissions to access: partnerApiPostsExternal.FINDER-author.20260501", "status": f.ReadStatus})
		return
	}
	q := r.URL.Query()
	if got := r.Header.Get("X-RestLi-Method"); got != "FINDER" {
		f.t.Errorf("finder: X-RestLi-Method %q, want FINDER", got)
	}
	if q.Get("q") != "author" || q.Get("author") != f.author || q.Get("sortBy") != "LAST_MODIFIED" {
		f.t.Errorf("finder: query %v, want q=author, author=%s, sortBy=LAST_MODIFIED", q, f.author)
	}
	start, _ := strconv.Atoi(q.Get("start"))
	count, err := strconv.Atoi(q.Get("count"))
	if err != nil || count <= 0 {
		count = 10
	}
	if f.MaxCount > 0 && count > f.MaxCount {
		count = f.MaxCount
	}
	sorted := slices.Clone(f.posts)
	slices.SortStableFunc(sorted, func(a, b *fakePost) int {
		if c := cmp.Compare(b.LastModifiedAt, a.LastModifiedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	elements := []any{}
	for i := start; i < len(sorted) && i < start+count; i++ {
		elements = append(elements, sorted[i].entity())
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"elements": elements,
		"paging":   map[string]any{"start": start, "count": count, "links": []any{}},
	})
}

func (f *fakeLinkedIn) get(w http.ResponseWriter, urn string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	if f.ReadStatus != 0 {
		writeJSON(w, f.ReadStatus, map[string]any{"message": "Not enough permissions to access: partnerApiPostsExternal.GET.20260501", "status": f.ReadStatus})
		return
	}
	_, p := f.find(urn)
	if p == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found", "status": 404})
		return
	}
	writeJSON(w, http.StatusOK, p.entity())
}

func (f *fakeLinkedIn) delete(w http.ResponseWriter, urn string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes++
	i, p := f.find(urn)
	if p == nil {
		if f.AgainStatus != 0 && f.AgainStatus != http.StatusNoContent {
			writeJSON(w, f.AgainStatus, map[string]any{"message": "Not Found", "status": f.AgainStatus})
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	f.posts = slices.Delete(f.posts, i, i+1)
	f.removed++
	w.WriteHeader(http.StatusNoContent)
}

// drain reads a request body to its end.
func drain(r *http.Request) { io.Copy(io.Discard, r.Body) }

func jsonEncode(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }
