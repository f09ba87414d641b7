package x

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
)

// TestLookupWindows checks which timeline reads each kind of query makes
// (https://docs.x.com/x-api/posts/timelines/integrate: since_id,
// start_time, max_results, exclude, pagination_token) and that the post
// is found in each.
func TestLookupWindows(t *testing.T) {
	const text = "window test"
	tests := []struct {
		name      string
		query     func(ids []string) platform.LookupQuery
		wantParam map[string]string // query parameters of the first read; "" means absent
	}{
		{"after a post id", func(ids []string) platform.LookupQuery {
			return platform.LookupQuery{After: ids[1]}
		}, map[string]string{"since_id": "1846000000000000102", "start_time": "", "max_results": "100"}},
		{"start of history", func([]string) platform.LookupQuery {
			return platform.LookupQuery{After: platform.StartOfHistory, NotBefore: fixedNow}
		}, map[string]string{"since_id": "", "start_time": ""}},
		{"not before, to the second", func([]string) platform.LookupQuery {
			return platform.LookupQuery{NotBefore: fixedNow.Add(-time.Minute + 2*time.Second + 500*time.Millisecond)}
		}, map[string]string{"since_id": "", "start_time": "2026-03-01T11:59:02Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeX(t)
			ids := f.seed("first", "second", text, "fourth")
			srv := newServer(t, f)
			q := tt.query(ids)
			q.Fingerprint = platform.Fingerprint(text, nil)
			got, found, err := newClient(t, srv.URL).Lookup(context.Background(), q)
			if err != nil || !found || got.RemoteID != ids[2] {
				t.Fatalf("Lookup = %+v, %v, %v; want post %s", got, found, err, ids[2])
			}
			first, err := url.ParseQuery(f.reads[0])
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.wantParam {
				if first.Get(k) != v {
					t.Errorf("read parameter %s = %q, want %q (query %q)", k, first.Get(k), v, f.reads[0])
				}
			}
			if first.Get("tweet.fields") != "created_at,attachments,entities" || first.Get("expansions") != "attachments.media_keys" || first.Get("exclude") != "retweets,replies" {
				t.Errorf("read query %q lacks the fields, expansion or exclusions", f.reads[0])
			}
		})
	}
}

// TestLookupPagesAndAbsence: a post on the second page is found (an
// implementation that read one page would miss it); a post that is not
// there after every page was read is (false, nil); more pages than
// LookupPages allows is Inconclusive, never "not found".
func TestLookupPagesAndAbsence(t *testing.T) {
	f := newFakeX(t)
	var texts []string
	for i := range 250 {
		texts = append(texts, fmt.Sprintf("post %d", i))
	}
	ids := f.seed(texts...)
	srv := newServer(t, f)
	ctx := context.Background()

	c := newClient(t, srv.URL)
	got, found, err := c.Lookup(ctx, platform.LookupQuery{Fingerprint: platform.Fingerprint("post 30", nil), After: ids[9]})
	if err != nil || !found || got.RemoteID != ids[30] {
		t.Fatalf("Lookup on page 3 = %+v, %v, %v", got, found, err)
	}
	if len(f.reads) != 3 || !strings.Contains(f.reads[2], "pagination_token=next-200") {
		t.Errorf("reads %q, want three pages following next_token", f.reads)
	}

	_, found, err = c.Lookup(ctx, platform.LookupQuery{Fingerprint: platform.Fingerprint("never posted", nil), After: ids[100]})
	if diff := cmp.Diff(outcome{Class: "ok"}, outcomeOf(t, err)); diff != "" || found {
		t.Errorf("absent post: found %v, outcome (-want +got):\n%s", found, diff)
	}

	capped := newClient(t, srv.URL, func(cfg *Config) { cfg.LookupPages = 2 })
	_, found, err = capped.Lookup(ctx, platform.LookupQuery{Fingerprint: platform.Fingerprint("never posted", nil), After: platform.StartOfHistory})
	if diff := cmp.Diff(outcome{Class: "inconclusive"}, outcomeOf(t, err)); diff != "" || found {
		t.Errorf("capped: found %v, outcome (-want +got):\n%s", found, diff)
	}
	if !strings.Contains(err.Error(), "read 200 posts (2 pages") {
		t.Errorf("Inconclusive message %q does not say how far it read", err)
	}
}

// TestLookupUndoesXRendering: X gives the text back with &, < and >
// escaped, URLs as t.co links (expanded_url in entities.urls), a bare
// domain expanded with a scheme, and a t.co link for the attached media
// (https://docs.x.com/x-api/fundamentals/data-dictionary, entities.urls
// with media_key). Each is undone before the fingerprint; the cases show
// that matching the raw text would have missed the post.
func TestLookupUndoesXRendering(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		media []string
		hint  bool // LookupQuery.Text given
	}{
		{"escaped characters", `Fish & chips <3 "quoted" > all`, nil, false},
		{"urls with a scheme", "Read https://example.com/a/very/long/path?x=1&y=2 and http://example.org/b", nil, false},
		{"bare domain needs the sent text", "see example.com for more", nil, true},
		{"media link dropped, media keys mapped", "photo of the day", []string{"1880028106020515841", "1880028106020515842"}, false},
		{"media only", "", []string{"1880028106020515841"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeX(t)
			before := f.seed("before")
			f.mu.Lock()
			id := f.store(tt.text, tt.media)
			rendered := f.posts[len(f.posts)-1].render()["text"].(string)
			f.mu.Unlock()
			srv := newServer(t, f)
			shaByID := map[string]string{}
			var shas []string
			for i, m := range tt.media {
				shaByID[m] = fmt.Sprintf("sha%d", i)
				shas = append(shas, shaByID[m])
			}
			q := platform.LookupQuery{Fingerprint: platform.Fingerprint(tt.text, shas), MediaSHA256: shaByID, After: before[0]}
			if tt.hint {
				q.Text = tt.text
			}
			got, found, err := newClient(t, srv.URL).Lookup(context.Background(), q)
			if err != nil || !found || got.RemoteID != id {
				t.Fatalf("Lookup = %+v, %v, %v; X rendered the text as %q", got, found, err, rendered)
			}
			if diff := cmp.Diff(tt.media, got.MediaIDs); diff != "" {
				t.Errorf("media ids (-want +got):\n%s", diff)
			}
			if platform.Fingerprint(rendered, shas) == q.Fingerprint {
				t.Errorf("the raw rendering %q matches too; the case proves nothing", rendered)
			}
		})
	}
}

// TestLookupKeepsAWrittenTcoLink: a t.co link the author wrote comes back
// with the destination as expanded_url; Lookup keeps it as written when
// LookupQuery.Text says so, and also tries the text without expansion.
func TestLookupKeepsAWrittenTcoLink(t *testing.T) {
	const text = "short link https://t.co/abc123 here"
	urls := []urlEntity{{URL: "https://t.co/zzz999", ExpandedURL: "https://t.co/abc123"}}
	rendered := "short link https://t.co/zzz999 here"
	if got := readableText(rendered, urls, text, true); got != text {
		t.Errorf("expanded with hint = %q, want %q", got, text)
	}
	written := []urlEntity{{URL: "https://t.co/abc123", ExpandedURL: "https://example.com/dest"}}
	if got := readableText(text, written, text, true); got != text {
		t.Errorf("author's own t.co link with hint = %q, want it kept: %q", got, text)
	}
	if got := readableText(text, written, "", false); got != text {
		t.Errorf("unexpanded = %q, want %q", got, text)
	}
	if got := readableText("a &amp;amp; b", nil, "", true); got != "a &amp; b" {
		t.Errorf("one unescaping pass = %q, want %q", got, "a &amp; b")
	}
}

// TestLookupNeedsAFingerprint: X has nothing to look a post up by but its
// content, and After goes into since_id only as a numeric id.
func TestLookupNeedsAFingerprint(t *testing.T) {
	c := newClient(t, refusedURL(t))
	if _, _, err := c.Lookup(context.Background(), platform.LookupQuery{Handle: "h"}); err == nil {
		t.Error("Lookup without a fingerprint succeeded")
	}
	if _, _, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: "f", After: "abc"}); err == nil {
		t.Error("Lookup with a non-numeric After succeeded")
	}
}

// TestLookupReadFailureIsNotPerformed: a timeline that keeps answering
// 503 (https://docs.x.com/x-api/fundamentals/response-codes-and-errors)
// is retried as a read and then NotPerformed, never "not found".
func TestLookupReadFailureIsNotPerformed(t *testing.T) {
	var n int
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		writeJSON(w, http.StatusServiceUnavailable, problemJSON(503, "Service Unavailable", "Service Unavailable"))
	}))
	_, found, err := newClient(t, srv.URL).Lookup(context.Background(), platform.LookupQuery{Fingerprint: "f", After: "1846000000000000100"})
	if diff := cmp.Diff(outcome{Class: "not_performed", Status: 503}, outcomeOf(t, err)); diff != "" || found {
		t.Errorf("found %v, outcome (-want +got):\n%s", found, diff)
	}
	if n != 4 {
		t.Errorf("server received %d reads, want 4 (a read is retried)", n)
	}
}

// TestLookupResolvesTheUserID: without Config.UserID the account's id is
// read once with GET /2/users/me (https://docs.x.com/x-api/users/get-my-user).
func TestLookupResolvesTheUserID(t *testing.T) {
	f := newFakeX(t)
	f.seed("mine")
	srv := newServer(t, f)
	c := newClient(t, srv.URL, func(cfg *Config) { cfg.UserID = "" })
	for range 2 {
		if _, found, err := c.Lookup(context.Background(), platform.LookupQuery{Fingerprint: platform.Fingerprint("mine", nil), After: platform.StartOfHistory}); err != nil || !found {
			t.Fatalf("Lookup: %v %v", found, err)
		}
	}
	me := 0
	for _, r := range f.requests {
		if r == "GET /2/users/me" {
			me++
		}
	}
	if me != 1 {
		t.Errorf("GET /2/users/me sent %d times, want 1: %q", me, f.requests)
	}
}

// TestRecent reads the fake's timeline (shapes: fakeX.timeline): newest
// first, X's rendering undone, max_results at X's minimum of 5.
func TestRecent(t *testing.T) {
	f := newFakeX(t)
	ids := f.seed("one", "two & three", "four https://example.com/x")
	srv := newServer(t, f)
	c := newClient(t, srv.URL)
	got, err := c.Recent(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []platform.RemotePost{
		{RemoteID: ids[2], Text: "four https://example.com/x", URL: postURL(ids[2]), CreatedAt: fixedNow.Add(-time.Minute + 3*time.Second)},
		{RemoteID: ids[1], Text: "two & three", URL: postURL(ids[1]), CreatedAt: fixedNow.Add(-time.Minute + 2*time.Second)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Recent (-want +got):\n%s", diff)
	}
	if q, _ := url.ParseQuery(f.reads[0]); q.Get("max_results") != "5" {
		t.Errorf("max_results = %q, want 5 (X's minimum)", q.Get("max_results"))
	}
	if got, err := c.Recent(context.Background(), 0); err != nil || len(got) != 0 {
		t.Errorf("Recent(0) = %v, %v", got, err)
	}
}
