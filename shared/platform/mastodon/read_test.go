package mastodon

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
)

// timeline is a fake Mastodon serving one account's statuses (newest
// first), their sources, and verify_credentials. failFirst makes the first
// n requests answer failStatus.
type timeline struct {
	t          *testing.T
	mu         sync.Mutex
	statuses   []map[string]any
	sources    map[string]string
	failFirst  int
	failStatus int
	failHeader http.Header

	requests    int
	lists       []url.Values
	sourceReads []string
	verifies    int
	// app is the token's application, served by
	// /api/v1/apps/verify_credentials; "" answers 404 (an older server).
	app string
}

func (tl *timeline) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.requests++
	if r.Header.Get("Authorization") != "Bearer access-1" {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "The access token is invalid"})
		return
	}
	if tl.requests <= tl.failFirst {
		for k, v := range tl.failHeader {
			w.Header()[k] = v
		}
		writeJSON(w, tl.failStatus, map[string]string{"error": "failing on purpose"})
		return
	}
	path := r.URL.Path
	switch {
	case r.Method != http.MethodGet:
		tl.t.Errorf("read sent %s %s", r.Method, path)
		w.WriteHeader(http.StatusMethodNotAllowed)
	case path == "/api/v1/apps/verify_credentials":
		if tl.app == "" {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "Record not found"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"name": tl.app, "website": nil})
	case path == "/api/v1/accounts/verify_credentials":
		tl.verifies++
		writeJSON(w, http.StatusOK, map[string]any{"id": "109", "username": "me"})
	case path == "/api/v1/accounts/109/statuses":
		q := r.URL.Query()
		tl.lists = append(tl.lists, q)
		limit, err := strconv.Atoi(q.Get("limit"))
		if err != nil || limit < 1 || limit > 40 {
			tl.t.Errorf("bad limit %q", q.Get("limit"))
			limit = 20
		}
		page := []map[string]any{}
		for _, s := range tl.statuses {
			if maxID := q.Get("max_id"); maxID != "" && !idLess(s["id"].(string), maxID) {
				continue
			}
			if len(page) == limit {
				break
			}
			page = append(page, s)
		}
		writeJSON(w, http.StatusOK, page)
	case strings.HasPrefix(path, "/api/v1/statuses/") && strings.HasSuffix(path, "/source"):
		id := strings.TrimSuffix(strings.TrimPrefix(path, "/api/v1/statuses/"), "/source")
		tl.sourceReads = append(tl.sourceReads, id)
		text, ok := tl.sources[id]
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "Record not found"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"id": id, "text": text, "spoiler_text": ""})
	case strings.HasPrefix(path, "/api/v1/statuses/"):
		id := strings.TrimPrefix(path, "/api/v1/statuses/")
		for _, s := range tl.statuses {
			if s["id"] == id {
				writeJSON(w, http.StatusOK, s)
				return
			}
		}
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Record not found"})
	default:
		tl.t.Errorf("unexpected request %s %s", r.Method, path)
		w.WriteHeader(http.StatusNotFound)
	}
}

// makeTimeline returns n statuses with ids n..1, one minute apart, the
// newest at fixedNow.
func makeTimeline(n int) []map[string]any {
	out := make([]map[string]any, 0, n)
	for i := n; i >= 1; i-- {
		id := strconv.Itoa(i)
		out = append(out, statusJSON(id, "<p>post "+id+"</p>", fixedNow.Add(-time.Duration(n-i)*time.Minute)))
	}
	return out
}

func TestRecentPagesWithMaxID(t *testing.T) {
	tl := &timeline{t: t, statuses: makeTimeline(95)}
	srv := newServer(t, tl)
	c := newClient(t, srv.URL, func(cfg *Config) { cfg.AccountID = "" })

	posts, err := c.Recent(context.Background(), 90)
	if err != nil {
		t.Fatalf("Recent: %v", err)
	}
	if len(posts) != 90 {
		t.Fatalf("Recent returned %d posts, want 90", len(posts))
	}
	first := platform.RemotePost{RemoteID: "95", Text: "post 95", URL: "https://social.example/@me/95", CreatedAt: fixedNow}
	if diff := cmp.Diff(first, posts[0]); diff != "" {
		t.Errorf("first post (-want +got):\n%s", diff)
	}
	if got := posts[89].RemoteID; got != "6" {
		t.Errorf("last post id = %s, want 6", got)
	}
	type page struct{ Limit, MaxID, ExcludeReblogs string }
	var pages []page
	for _, q := range tl.lists {
		pages = append(pages, page{q.Get("limit"), q.Get("max_id"), q.Get("exclude_reblogs")})
	}
	want := []page{{"40", "", "true"}, {"40", "56", "true"}, {"10", "16", "true"}}
	if diff := cmp.Diff(want, pages); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}

	// The account id is resolved once and cached.
	if _, err := c.Recent(context.Background(), 5); err != nil {
		t.Fatalf("second Recent: %v", err)
	}
	if tl.verifies != 1 {
		t.Errorf("verify_credentials called %d times, want 1", tl.verifies)
	}
}

func TestRecentStopsAtEndOfHistory(t *testing.T) {
	tl := &timeline{t: t, statuses: makeTimeline(3)}
	tl.statuses = append([]map[string]any{{"id": "4", "content": "", "created_at": fixedNow.Format(time.RFC3339), "reblog": map[string]any{"id": "x"}}}, tl.statuses...)
	srv := newServer(t, tl)
	posts, err := newClient(t, srv.URL).Recent(context.Background(), 10)
	if err != nil {
		t.Fatalf("Recent: %v", err)
	}
	var ids []string
	for _, p := range posts {
		ids = append(ids, p.RemoteID)
	}
	if diff := cmp.Diff([]string{"3", "2", "1"}, ids); diff != "" {
		t.Errorf("ids, boost left out (-want +got):\n%s", diff)
	}
}

func TestReadRetries(t *testing.T) {
	tests := []struct {
		name         string
		failFirst    int
		failStatus   int
		failHeader   http.Header
		want         outcome
		wantRequests int
	}{
		{"recovers after two 500s", 2, 500, nil, outcome{Class: "ok"}, 3},
		{"recovers after a 429", 1, 429, http.Header{"Retry-After": {"0"}}, outcome{Class: "ok"}, 2},
		{"gives up after three retries of 503", 100, 503, nil, outcome{Class: "not_performed", Status: 503}, 4},
		{"502 is a failed read, not ambiguous", 100, 502, nil, outcome{Class: "not_performed", Status: 502}, 4},
		{"long retry-after is returned at once", 100, 429, http.Header{"Retry-After": {"60"}}, outcome{Class: "not_performed", Status: 429, RetryAfter: time.Minute}, 1},
		{"401 is not retried", 100, 401, nil, outcome{Class: "unauthorized"}, 1},
		{"403 is not retried", 100, 403, nil, outcome{Class: "rejected", Status: 403, Reason: "http_403", Message: "failing on purpose"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := &timeline{t: t, statuses: makeTimeline(2), failFirst: tt.failFirst, failStatus: tt.failStatus, failHeader: tt.failHeader}
			srv := newServer(t, tl)
			_, err := newClient(t, srv.URL).Recent(context.Background(), 2)
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if tl.requests != tt.wantRequests {
				t.Errorf("server received %d requests, want %d", tl.requests, tt.wantRequests)
			}
		})
	}

	t.Run("network error is retried and then reported", func(t *testing.T) {
		_, err := newClient(t, refusedURL(t)).Exists(context.Background(), "1")
		if diff := cmp.Diff(outcome{Class: "not_performed"}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})

	t.Run("backoff is bounded by the context", func(t *testing.T) {
		tl := &timeline{t: t, failFirst: 100, failStatus: 500}
		srv := newServer(t, tl)
		c := newClient(t, srv.URL)
		c.readBackoff = time.Hour
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.Exists(ctx, "1")
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Errorf("Exists took %s, want it to stop at the context deadline", elapsed)
		}
		if diff := cmp.Diff(outcome{Class: "not_performed", Status: 500}, outcomeOf(t, err)); diff != "" {
			t.Errorf("outcome (-want +got):\n%s", diff)
		}
	})
}

func TestExists(t *testing.T) {
	tests := []struct {
		name string
		id   string
		fail int
		want bool
		out  outcome
	}{
		{"present", "2", 0, true, outcome{Class: "ok"}},
		{"absent", "999", 0, false, outcome{Class: "ok"}},
		{"read fails", "2", 500, false, outcome{Class: "not_performed", Status: 500}},
		{"token revoked", "2", 401, false, outcome{Class: "unauthorized"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := &timeline{t: t, statuses: makeTimeline(3)}
			if tt.fail != 0 {
				tl.failFirst, tl.failStatus = 100, tt.fail
			}
			srv := newServer(t, tl)
			got, err := newClient(t, srv.URL).Exists(context.Background(), tt.id)
			if diff := cmp.Diff(tt.out, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if got != tt.want {
				t.Errorf("Exists = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLookupByFingerprint(t *testing.T) {
	shaA := strings.Repeat("a", 64)
	shaB := strings.Repeat("b", 64)
	mine := map[string]string{"m1": shaA, "m2": shaB}
	at := func(minutesAgo int) time.Time { return fixedNow.Add(-time.Duration(minutesAgo) * time.Minute) }

	// Newest first. Several posts resemble ours; only "30" is it.
	statuses := []map[string]any{
		statusJSON("34", "<p>Launch day!</p>", at(1)),                          // same text, no media
		statusJSON("33", "<p>Launch day!</p>", at(2), "m1", "other"),           // one foreign attachment
		statusJSON("32", "<p>Launch day</p>", at(3), "m2", "m1"),               // text differs
		statusJSON("31", "<p>unrelated</p>", at(4)),                            //
		statusJSON("30", "<p>Launch day!<br />See you</p>", at(5), "m2", "m1"), // ours, media in other order
		statusJSON("29", "<p>Launch day!<br />See you</p>", at(90), "m1", "m2"),
	}
	ours := platform.Fingerprint("Launch day!\nSee you", []string{shaA, shaB})

	tests := []struct {
		name      string
		statuses  []map[string]any
		q         platform.LookupQuery
		failFirst int
		wantPost  platform.RemotePost
		wantFound bool
		wantOut   outcome
	}{
		{"finds the matching post among several", statuses,
			platform.LookupQuery{Handle: "ignored", Fingerprint: ours, MediaSHA256: mine, NotBefore: at(10)}, 0,
			platform.RemotePost{RemoteID: "30", Text: "Launch day!\nSee you", MediaIDs: []string{"m2", "m1"}, URL: "https://social.example/@me/30", CreatedAt: at(5)},
			true, outcome{Class: "ok"}},
		{"posts older than NotBefore are not candidates", statuses[5:],
			platform.LookupQuery{Fingerprint: ours, MediaSHA256: mine, NotBefore: at(10)}, 0,
			platform.RemotePost{}, false, outcome{Class: "ok"}},
		{"without NotBefore the older post is found", statuses[5:],
			platform.LookupQuery{Fingerprint: ours, MediaSHA256: mine}, 0,
			platform.RemotePost{RemoteID: "29", Text: "Launch day!\nSee you", MediaIDs: []string{"m1", "m2"}, URL: "https://social.example/@me/29", CreatedAt: at(90)},
			true, outcome{Class: "ok"}},
		{"empty history is a successful not-found", nil,
			platform.LookupQuery{Fingerprint: ours, MediaSHA256: mine}, 0,
			platform.RemotePost{}, false, outcome{Class: "ok"}},
		{"a failed read is an error, not a not-found", statuses,
			platform.LookupQuery{Fingerprint: ours, MediaSHA256: mine}, 100,
			platform.RemotePost{}, false, outcome{Class: "not_performed", Status: 500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := &timeline{t: t, statuses: tt.statuses, failFirst: tt.failFirst, failStatus: 500}
			srv := newServer(t, tl)
			post, found, err := newClient(t, srv.URL).Lookup(context.Background(), tt.q)
			if diff := cmp.Diff(tt.wantOut, outcomeOf(t, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if found != tt.wantFound {
				t.Errorf("found = %v, want %v", found, tt.wantFound)
			}
			if diff := cmp.Diff(tt.wantPost, post); diff != "" {
				t.Errorf("post (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLookupPagesThroughItsWindowAndNeverGuesses(t *testing.T) {
	t.Run("found beyond the first page", func(t *testing.T) {
		tl := &timeline{t: t, statuses: makeTimeline(100)}
		srv := newServer(t, tl)
		target := platform.Fingerprint("post 50", nil) // 51st newest
		got, found, err := newClient(t, srv.URL).Lookup(context.Background(), platform.LookupQuery{Fingerprint: target})
		if err != nil || !found || got.RemoteID != "50" {
			t.Fatalf("Lookup = %q, %v, %v; want post 50 found", got.RemoteID, found, err)
		}
		if len(tl.lists) != 2 {
			t.Errorf("list requests = %v, want two pages", tl.lists)
		}
	})
	t.Run("absent within the window", func(t *testing.T) {
		tl := &timeline{t: t, statuses: makeTimeline(300)}
		srv := newServer(t, tl)
		q := platform.LookupQuery{Fingerprint: platform.Fingerprint("not there", nil), NotBefore: fixedNow.Add(-30 * time.Minute)}
		_, found, err := newClient(t, srv.URL).Lookup(context.Background(), q)
		if err != nil || found {
			t.Fatalf("Lookup = %v, %v; want a definite not found", found, err)
		}
		if len(tl.lists) != 1 {
			t.Errorf("list requests = %v, want one page (the window ends inside it)", tl.lists)
		}
	})
	t.Run("window deeper than the lookup reads", func(t *testing.T) {
		tl := &timeline{t: t, statuses: makeTimeline(300)}
		srv := newServer(t, tl)
		q := platform.LookupQuery{Fingerprint: platform.Fingerprint("post 20", nil), NotBefore: fixedNow.Add(-299 * time.Minute)}
		_, found, err := newClient(t, srv.URL).Lookup(context.Background(), q)
		// The posts were read: not NotPerformed ("could not read") but
		// Inconclusive, naming how far it read and the window start.
		var inc *platform.Inconclusive
		if found || !errors.As(err, &inc) {
			t.Fatalf("Lookup = %v, %v; want *platform.Inconclusive: 200 posts read cannot prove absence", found, err)
		}
		for _, want := range []string{"200", "2026-03-01T07:01:00Z"} {
			if !strings.Contains(inc.Message, want) {
				t.Errorf("message %q does not say %s", inc.Message, want)
			}
		}
		if len(tl.sourceReads) != 200 {
			t.Errorf("source reads = %d, want the 200 posts read re-read before giving up", len(tl.sourceReads))
		}
	})
}

// TestLookupConfirmsThroughSource covers statuses whose HTML does not give
// back the written text: the source is read only for candidates the cheap
// pre-check admits.
func TestLookupConfirmsThroughSource(t *testing.T) {
	sha := strings.Repeat("c", 64)
	remoteMention := `<p><span class="h-card"><a href="https://other.example/@alice" class="u-url mention">@<span>alice</span></a></span> thanks!</p>`
	tests := []struct {
		name        string
		statuses    []map[string]any
		sources     map[string]string
		q           platform.LookupQuery
		wantFound   string // remote id, "" for not found
		wantText    string
		wantSources []string
	}{
		{"remote mention confirmed by source",
			[]map[string]any{statusJSON("9", remoteMention, fixedNow)},
			map[string]string{"9": "@alice@other.example thanks!"},
			platform.LookupQuery{Fingerprint: platform.Fingerprint("@alice@other.example thanks!", nil)},
			"9", "@alice@other.example thanks!", []string{"9"}},
		{"collapsed blank lines confirmed by source",
			[]map[string]any{statusJSON("9", "<p>a</p><p>b</p>", fixedNow)},
			map[string]string{"9": "a\n\n\n\nb"},
			platform.LookupQuery{Fingerprint: platform.Fingerprint("a\n\n\n\nb", nil)},
			"9", "a\n\n\n\nb", []string{"9"}},
		{"our attachment triggers a source read",
			[]map[string]any{statusJSON("9", "<p>x</p>", fixedNow, "m1")},
			map[string]string{"9": "y"},
			platform.LookupQuery{Fingerprint: platform.Fingerprint("y", []string{sha}), MediaSHA256: map[string]string{"m1": sha}},
			"9", "y", []string{"9"}},
		{"single plain paragraph is re-read too: not lossy is not proof",
			[]map[string]any{statusJSON("9", "<p>hello</p>", fixedNow)},
			map[string]string{"9": "hello there"},
			platform.LookupQuery{Fingerprint: platform.Fingerprint("hello there", nil)},
			"9", "hello there", []string{"9"}},
		{"an exact match needs no source read",
			[]map[string]any{statusJSON("10", "<p>other</p>", fixedNow), statusJSON("9", "<p>hello there</p>", fixedNow)},
			map[string]string{"9": "hello there", "10": "other"},
			platform.LookupQuery{Fingerprint: platform.Fingerprint("hello there", nil)},
			"9", "hello there", nil},
		{"every non-matching candidate is re-read before not found, lossy ones first",
			[]map[string]any{statusJSON("12", "<p>plain</p>", fixedNow), statusJSON("11", "<p>a</p><p>b</p>", fixedNow),
				statusJSON("10", "<p>theirs</p>", fixedNow, "foreign"), statusJSON("9", "<p>also plain</p>", fixedNow)},
			map[string]string{"12": "plain", "11": "a\n\nb", "10": "theirs", "9": "also plain"},
			platform.LookupQuery{Fingerprint: platform.Fingerprint("absent", nil)},
			"", "", []string{"11", "12", "9"}},
		{"foreign attachment rules the post out, no source read",
			[]map[string]any{statusJSON("9", remoteMention, fixedNow, "theirs")},
			map[string]string{"9": "@alice@other.example thanks!"},
			platform.LookupQuery{Fingerprint: platform.Fingerprint("@alice@other.example thanks!", nil)},
			"", "", nil},
		{"source that still differs is not a match",
			[]map[string]any{statusJSON("9", remoteMention, fixedNow)},
			map[string]string{"9": "@alice@elsewhere.example thanks!"},
			platform.LookupQuery{Fingerprint: platform.Fingerprint("@alice@other.example thanks!", nil)},
			"", "", []string{"9"}},
		{"status gone before its source was read",
			[]map[string]any{statusJSON("9", remoteMention, fixedNow)},
			map[string]string{},
			platform.LookupQuery{Fingerprint: platform.Fingerprint("@alice@other.example thanks!", nil)},
			"", "", []string{"9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := &timeline{t: t, statuses: tt.statuses, sources: tt.sources}
			srv := newServer(t, tl)
			post, found, err := newClient(t, srv.URL).Lookup(context.Background(), tt.q)
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if found != (tt.wantFound != "") || post.RemoteID != tt.wantFound || post.Text != tt.wantText {
				t.Errorf("Lookup = (%q, %q, %v), want (%q, %q, %v)", post.RemoteID, post.Text, found, tt.wantFound, tt.wantText, tt.wantFound != "")
			}
			if diff := cmp.Diff(tt.wantSources, tl.sourceReads); diff != "" {
				t.Errorf("source reads (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLookupSourceReadFailureIsAnError(t *testing.T) {
	var lists atomic.Int32
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/source") {
			writeJSON(w, http.StatusBadGateway, map[string]string{"error": "upstream"})
			return
		}
		lists.Add(1)
		writeJSON(w, http.StatusOK, []any{statusJSON("9", `<p>a</p><p>b</p>`, fixedNow)})
	}))
	_, found, err := newClient(t, srv.URL).Lookup(context.Background(), platform.LookupQuery{Fingerprint: platform.Fingerprint("a\n\n\nb", nil)})
	if diff := cmp.Diff(outcome{Class: "not_performed", Status: 502}, outcomeOf(t, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if found {
		t.Errorf("found = true on a failed read")
	}
}

func TestLookupNeedsFingerprint(t *testing.T) {
	_, found, err := newClient(t, "http://127.0.0.1:1").Lookup(context.Background(), platform.LookupQuery{Handle: "h"})
	if err == nil || found {
		t.Fatalf("Lookup by handle only = (found %v, err %v), want an error", found, err)
	}
}

// Recent gives the written text back for statuses whose HTML loses it, so
// pre-publish dedup compares what was written.
func TestRecentReadsSourceOfLossyStatuses(t *testing.T) {
	remoteMention := `<p><span class="h-card"><a href="https://other.example/@alice" class="u-url mention">@<span>alice</span></a></span> thanks!</p>`
	tl := &timeline{t: t,
		statuses: []map[string]any{statusJSON("9", remoteMention, fixedNow), statusJSON("8", "<p>plain</p>", fixedNow.Add(-time.Minute))},
		sources:  map[string]string{"9": "@alice@other.example thanks!", "8": "never read"},
	}
	srv := newServer(t, tl)
	posts, err := newClient(t, srv.URL).Recent(context.Background(), 20)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, p := range posts {
		texts = append(texts, p.Text)
	}
	if diff := cmp.Diff([]string{"@alice@other.example thanks!", "plain"}, texts); diff != "" {
		t.Errorf("texts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"9"}, tl.sourceReads); diff != "" {
		t.Errorf("source reads (-want +got):\n%s", diff)
	}
}

// Lookup is restricted to posts made by our application where Mastodon
// shows it (docs.joinmastodon.org/entities/Status/#application: shown to
// the owner): a post with our text made with another app is not taken for
// ours, nor is it proof of absence — an operator decides (Inconclusive).
func TestLookupRestrictedToOurApplication(t *testing.T) {
	at := func(minutesAgo int) time.Time { return fixedNow.Add(-time.Duration(minutesAgo) * time.Minute) }
	withApp := func(s map[string]any, app string) map[string]any {
		s["application"] = map[string]any{"name": app, "website": nil}
		return s
	}
	q := platform.LookupQuery{Fingerprint: platform.Fingerprint("Launch day!", nil), NotBefore: at(10)}
	tests := []struct {
		name             string
		app              string
		status           map[string]any
		wantFound        bool
		wantInconclusive string
	}{
		{"our app's post is ours", "oncepost", withApp(statusJSON("30", "<p>Launch day!</p>", at(1)), "oncepost"), true, ""},
		{"the same text from the web interface is not taken for ours", "oncepost", withApp(statusJSON("31", "<p>Launch day!</p>", at(1)), "Web"), false,
			`lookup: the post with this text (31) was made with "Web", not with this account's app "oncepost": it may be a copy made by hand`},
		{"no application shown: as before", "oncepost", statusJSON("32", "<p>Launch day!</p>", at(1)), true, ""},
		{"our app unknown (an older server): as before", "", withApp(statusJSON("33", "<p>Launch day!</p>", at(1)), "Web"), true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := &timeline{t: t, statuses: []map[string]any{tt.status}, app: tt.app}
			srv := newServer(t, tl)
			_, found, err := newClient(t, srv.URL).Lookup(context.Background(), q)
			var inc *platform.Inconclusive
			switch {
			case tt.wantInconclusive != "":
				if !errors.As(err, &inc) || inc.Message != tt.wantInconclusive {
					t.Errorf("err = %v, want Inconclusive %q", err, tt.wantInconclusive)
				}
			case err != nil:
				t.Errorf("err = %v", err)
			}
			if found != tt.wantFound {
				t.Errorf("found = %v, want %v", found, tt.wantFound)
			}
		})
	}
}
