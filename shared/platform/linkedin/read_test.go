package linkedin

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/platform"
)

// The fake's finder and single-post reads follow posts-api ("Find Posts
// by Authors", "Get Posts by URN",
// https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/posts-api):
// see fakeLinkedIn.

func TestLookupWindow(t *testing.T) {
	const ours = "Our launch (today) — #1 _for real_"
	fp := platform.Fingerprint(ours, nil)
	at := func(d time.Duration) time.Time { return fixedNow.Add(d) }
	type seed struct {
		commentary        string
		created, modified time.Duration
		media             string
		name              string // to refer to it as After
	}
	tests := []struct {
		name      string
		seeds     []seed // oldest first
		after     string // a seed's name, StartOfHistory, a URN, or ""
		notBefore time.Duration
		noBound   bool
		maxCount  int
		want      string // the seed found ("" none)
		wantClass string // "ok" or "inconclusive"
	}{
		{
			name:      "found after NotBefore",
			seeds:     []seed{{commentary: "old", created: -time.Hour, modified: -time.Hour}, {commentary: escapeLittle(ours), created: time.Second, modified: time.Second, name: "ours"}},
			notBefore: -time.Minute, want: "ours", wantClass: "ok",
		},
		{
			name:      "identical post before NotBefore is not ours",
			seeds:     []seed{{commentary: escapeLittle(ours), created: -time.Hour, modified: -time.Hour}, {commentary: "new", created: time.Second, modified: time.Second}},
			notBefore: -time.Minute, wantClass: "ok",
		},
		{
			name:      "an old post edited since is not ours",
			seeds:     []seed{{commentary: escapeLittle(ours), created: -time.Hour, modified: 2 * time.Second}, {commentary: "new", created: time.Second, modified: time.Second}},
			notBefore: -time.Minute, wantClass: "ok",
		},
		{
			name: "an old post edited since, served first, does not end the scan",
			seeds: []seed{
				{commentary: escapeLittle(ours), created: time.Second, modified: time.Second, name: "ours"},
				{commentary: "old, edited", created: -time.Hour, modified: 3 * time.Second},
			},
			notBefore: -time.Minute, want: "ours", wantClass: "ok",
		},
		{
			name: "after: the After post itself is not ours",
			seeds: []seed{
				{commentary: escapeLittle(ours), created: -10 * time.Minute, modified: -10 * time.Minute, name: "after"},
			},
			after: "after", notBefore: -time.Hour, wantClass: "ok",
		},
		{
			name:      "same text with an image is not ours",
			seeds:     []seed{{commentary: escapeLittle(ours), created: time.Second, modified: time.Second, media: "urn:li:image:C4E10AQ"}},
			notBefore: -time.Minute, wantClass: "ok",
		},
		{
			name:      "text read back unescaped still matches",
			seeds:     []seed{{commentary: ours, created: time.Second, modified: time.Second, name: "ours"}},
			notBefore: -time.Minute, want: "ours", wantClass: "ok",
		},
		{
			name: "after: bound is the After post's createdAt",
			seeds: []seed{
				{commentary: "before the send", created: -10 * time.Minute, modified: -10 * time.Minute, name: "after"},
				{commentary: escapeLittle(ours), created: -5 * time.Minute, modified: -5 * time.Minute, name: "ours"},
			},
			// NotBefore would exclude it (clocks disagree); After decides.
			after: "after", notBefore: time.Minute, want: "ours", wantClass: "ok",
		},
		{
			name: "after: posts created before it are not candidates",
			seeds: []seed{
				{commentary: escapeLittle(ours), created: -20 * time.Minute, modified: -20 * time.Minute},
				{commentary: "before the send", created: -10 * time.Minute, modified: -10 * time.Minute, name: "after"},
			},
			after: "after", notBefore: -time.Hour, wantClass: "ok",
		},
		{
			name: "after deleted since: NotBefore bounds",
			seeds: []seed{
				{commentary: escapeLittle(ours), created: -20 * time.Minute, modified: -20 * time.Minute},
				{commentary: escapeLittle(ours), created: time.Second, modified: time.Second, name: "ours"},
			},
			after: "urn:li:share:1", notBefore: -time.Minute, want: "ours", wantClass: "ok",
		},
		{
			name:  "start of history: every post is a candidate",
			seeds: []seed{{commentary: escapeLittle(ours), created: -48 * time.Hour, modified: -48 * time.Hour, name: "ours"}},
			after: platform.StartOfHistory, notBefore: -time.Minute, want: "ours", wantClass: "ok",
		},
		{
			name: "a server serving fewer than asked is read to the end",
			seeds: manySeeds(seed{commentary: escapeLittle(ours), created: time.Second, modified: time.Second, name: "ours"}, 30, func(i int) seed {
				return seed{commentary: fmt.Sprintf("post %d", i), created: time.Duration(i+2) * time.Second, modified: time.Duration(i+2) * time.Second}
			}),
			notBefore: -time.Minute, maxCount: 7, want: "ours", wantClass: "ok",
		},
		{
			name: "no bound and more than lookupDepth posts is inconclusive",
			seeds: manySeeds(seed{commentary: escapeLittle(ours), created: -72 * time.Hour, modified: -72 * time.Hour}, 250, func(i int) seed {
				return seed{commentary: fmt.Sprintf("post %d", i), created: time.Duration(i-300) * time.Minute, modified: time.Duration(i-300) * time.Minute}
			}),
			noBound: true, wantClass: "inconclusive",
		},
		{
			name: "a window deeper than lookupDepth is inconclusive",
			seeds: manySeeds(seed{commentary: "first", created: -time.Hour, modified: -time.Hour}, 250, func(i int) seed {
				return seed{commentary: fmt.Sprintf("post %d", i), created: time.Duration(i+1) * time.Second, modified: time.Duration(i+1) * time.Second}
			}),
			notBefore: -time.Minute, wantClass: "inconclusive",
		},
		{
			name:    "no bound, short history: read to the end, not found",
			seeds:   []seed{{commentary: "a", created: -time.Hour, modified: -time.Hour}, {commentary: "b", created: -time.Minute, modified: -time.Minute}},
			noBound: true, wantClass: "ok",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFake(t, testOrg)
			f.MaxCount = tt.maxCount
			ids := map[string]string{}
			for _, s := range tt.seeds {
				p := f.add(s.commentary, at(s.created), at(s.modified))
				p.MediaID = s.media
				if s.name != "" {
					ids[s.name] = p.ID
				}
			}
			q := platform.LookupQuery{Fingerprint: fp, Text: ours}
			if !tt.noBound {
				q.NotBefore = at(tt.notBefore)
			}
			switch {
			case ids[tt.after] != "":
				q.After = ids[tt.after]
			default:
				q.After = tt.after
			}
			got, found, err := newClient(t, srv.URL).Lookup(context.Background(), q)
			if diff := cmp.Diff(outcome{Class: tt.wantClass}, outcomeOf(t, err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s", diff)
			}
			wantID := ids[tt.want]
			if found != (wantID != "") || got.RemoteID != wantID {
				t.Errorf("Lookup = %q (found %v), want %q", got.RemoteID, found, wantID)
			}
			if found && got.Text != ours {
				t.Errorf("found text %q, want %q", got.Text, ours)
			}
		})
	}
}

// manySeeds is first followed by n seeds made by gen.
func manySeeds[S any](first S, n int, gen func(int) S) []S {
	out := []S{first}
	for i := range n {
		out = append(out, gen(i))
	}
	return out
}

// TestLookupStopsAtTheWindow: the finder serves the most recently
// modified posts first, so the first post modified before the bound ends
// the scan; a long history behind it is not read.
func TestLookupStopsAtTheWindow(t *testing.T) {
	f, srv := newFake(t, testOrg)
	for i := range 500 {
		f.add(fmt.Sprintf("history %d", i), fixedNow.Add(time.Duration(i-1000)*time.Hour), fixedNow.Add(time.Duration(i-1000)*time.Hour))
	}
	f.add("fresh", fixedNow.Add(time.Second), fixedNow.Add(time.Second))
	_, found, err := newClient(t, srv.URL).Lookup(context.Background(), platform.LookupQuery{
		Fingerprint: platform.Fingerprint("not there", nil), NotBefore: fixedNow.Add(-time.Minute),
	})
	if err != nil || found {
		t.Fatalf("Lookup = found %v, err %v; want not found", found, err)
	}
	if _, _, _, finds, _ := f.counts(); finds != 1 {
		t.Errorf("Lookup read %d pages, want 1", finds)
	}
}

// TestLookupReadForbidden: reading a member's posts needs the restricted
// r_member_social permission (posts-api, "Permissions"). A 403 proves
// nothing: Inconclusive, naming the permission. Without
// Config.CanReadPosts nothing is sent at all.
func TestLookupReadForbidden(t *testing.T) {
	q := platform.LookupQuery{Fingerprint: platform.Fingerprint("x", nil), NotBefore: fixedNow.Add(-time.Minute)}
	t.Run("403 from LinkedIn", func(t *testing.T) {
		yes := true
		f, srv := newFake(t, testPerson)
		f.ReadStatus = http.StatusForbidden
		c := newClient(t, srv.URL, func(cfg *Config) { cfg.Author, cfg.CanReadPosts = testPerson, &yes })
		for name, after := range map[string]string{"window": "", "after": "urn:li:share:5"} {
			q := q
			q.After = after
			_, found, err := c.Lookup(context.Background(), q)
			if diff := cmp.Diff(outcome{Class: "inconclusive"}, outcomeOf(t, err)); diff != "" || found {
				t.Errorf("%s: found %v, outcome (-want +got):\n%s", name, found, diff)
			}
			if err != nil && !strings.Contains(err.Error(), "r_member_social") {
				t.Errorf("%s: error %q does not name r_member_social", name, err)
			}
		}
		_, err := c.Recent(context.Background(), 5)
		if diff := cmp.Diff(outcome{Class: "rejected", Status: 403, Reason: ReasonReadForbidden}, outcomeOf(t, err)); diff != "" {
			t.Errorf("Recent outcome (-want +got):\n%s", diff)
		}
	})
	t.Run("member without the permission sends nothing", func(t *testing.T) {
		f, srv := newFake(t, testPerson)
		c := newClient(t, srv.URL, func(cfg *Config) { cfg.Author = testPerson })
		_, found, err := c.Lookup(context.Background(), q)
		if diff := cmp.Diff(outcome{Class: "inconclusive"}, outcomeOf(t, err)); diff != "" || found {
			t.Errorf("found %v, outcome (-want +got):\n%s", found, diff)
		}
		if err != nil && !strings.Contains(err.Error(), "r_member_social") {
			t.Errorf("error %q does not name r_member_social", err)
		}
		_, err = c.Recent(context.Background(), 5)
		if diff := cmp.Diff(outcome{Class: "rejected", Reason: ReasonReadForbidden}, outcomeOf(t, err)); diff != "" {
			t.Errorf("Recent outcome (-want +got):\n%s", diff)
		}
		if _, _, _, finds, gets := f.counts(); finds+gets != 0 {
			t.Errorf("sent %d reads, want none", finds+gets)
		}
	})
}

func TestLookupReadFailures(t *testing.T) {
	tests := []struct {
		name   string
		status int
		want   outcome
	}{
		{"5xx after retries", http.StatusInternalServerError, outcome{Class: "not_performed", Status: 500}},
		{"429 waits for the daily reset", http.StatusTooManyRequests, outcome{Class: "not_performed", Status: 429, RetryAfter: 12 * time.Hour}},
		{"401", http.StatusUnauthorized, outcome{Class: "unauthorized"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, srv := newFake(t, testOrg)
			f.ReadStatus = tt.status
			_, found, err := newClient(t, srv.URL).Lookup(context.Background(), platform.LookupQuery{Fingerprint: "f", NotBefore: fixedNow})
			if diff := cmp.Diff(tt.want, outcomeOf(t, err)); diff != "" || found {
				t.Errorf("found %v, outcome (-want +got):\n%s", found, diff)
			}
		})
	}
	_, _, err := newClient(t, "http://127.0.0.1:9").Lookup(context.Background(), platform.LookupQuery{})
	if err == nil || !strings.Contains(err.Error(), "fingerprint") {
		t.Errorf("Lookup without fingerprint: %v, want an error", err)
	}
}

// TestRecent reads the author's posts most recently modified first,
// paging with start and count, the commentary read back as text.
func TestRecent(t *testing.T) {
	f, srv := newFake(t, testOrg)
	for i := range 120 {
		f.add(fmt.Sprintf(`post \#%d`, i), fixedNow.Add(time.Duration(i)*time.Minute), fixedNow.Add(time.Duration(i)*time.Minute))
	}
	edited := f.add("edited \\(late\\)", fixedNow.Add(-time.Hour), fixedNow.Add(500*time.Minute))
	c := newClient(t, srv.URL)
	got, err := c.Recent(context.Background(), 60)
	if err != nil {
		t.Fatalf("Recent: %v", err)
	}
	if len(got) != 60 {
		t.Fatalf("Recent returned %d posts, want 60", len(got))
	}
	if got[0].RemoteID != edited.ID || got[0].Text != "edited (late)" {
		t.Errorf("first post %q %q, want the edited one, unescaped", got[0].RemoteID, got[0].Text)
	}
	if got[1].Text != "post #119" || got[59].Text != "post #61" {
		t.Errorf("posts 1 and 59 are %q and %q, want post #119 and post #61", got[1].Text, got[59].Text)
	}
	if _, _, _, finds, _ := f.counts(); finds != 2 {
		t.Errorf("read %d pages, want 2 (50 + 10)", finds)
	}
	all, err := c.Recent(context.Background(), 1000)
	if err != nil || len(all) != 121 {
		t.Errorf("Recent(1000) = %d posts, %v; want all 121", len(all), err)
	}
	none, err := c.Recent(context.Background(), 0)
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("Recent(0) = %v, %v; want an empty list", none, err)
	}
}
