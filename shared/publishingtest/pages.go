package publishingtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// PostLister lists one page of an operator's post listing (a store's
// ListPostPage): the posts with at least one target in one of f.Statuses
// (any status if none) to f.Account (any if "") whose slot is in
// [f.From, f.To) (zero: unbounded), each with all its targets, at most
// f.Limit of them, after the page whose cursor is f.After ("" for the
// first page). next is the cursor of the following page, "" when this
// page is the last. A cursor the lister did not make is an error.
type PostLister func(ctx context.Context, f publishing.PostFilter) (posts []post.Post, next string, err error)

// TestPostPages checks that a store's post listing is paged without loss
// or repetition: following the cursors from the first page to the last
// lists every matching post exactly once; every page but the last is
// full; a page says there is more (a cursor) exactly when a matching post
// is left, so a listing is never cut without a word; a cursor the store
// did not make is refused. newStore must return an empty store, and the
// lister of the same store.
//
// The order within a listing is the store's to choose (its own tests pin
// it): by slot, or by the index the store lists from, as long as it is
// stable from one page to the next.
func TestPostPages(t *testing.T, newStore func(t *testing.T) (publishing.Posts, PostLister)) {
	t.Helper()
	runChecks(t, pagesChecks(), func(t *testing.T) pagesStore {
		s, l := newStore(t)
		return pagesStore{s, l}
	})
}

// pagesStore is a store and its lister.
type pagesStore struct {
	posts publishing.Posts
	list  PostLister
}

func pagesChecks() []check[pagesStore] {
	return []check[pagesStore]{
		{"ListPosts/pages_list_each_post_once", pagesEachOnce},
		{"ListPosts/a_full_last_page_says_it_is_the_last", pagesExactFit},
		{"ListPosts/foreign_cursor_refused", pagesForeignCursor},
		{"ListPosts/window_bounds_slots", pagesWindow},
	}
}

// pagesFixture stores 23 posts: one or two targets on accounts a, b and
// c, in every status, slots an hour apart and some equal, and posts whose
// two targets both match a filter far apart in slot (so a post met again
// on a later page would show twice). It returns them by id.
func pagesFixture(t testing.TB, s publishing.Posts) map[post.ID]post.Post {
	statuses := []post.TargetStatus{post.Scheduled, post.Held, post.Published, post.Scheduled, post.Failed,
		post.Waiting, post.Cancelled, post.Scheduled, post.Triggered, post.Publishing}
	accounts := []post.AccountID{"acct-a", "acct-b", "acct-c"}
	out := map[post.ID]post.Post{}
	for i := range 23 {
		id := post.ID(fmt.Sprintf("page-%02d", (i*7)%23)) // ids out of slot order
		slot := base.Add(time.Duration(i/2) * time.Hour)  // pairs share a slot
		p := post.Post{ID: id, Body: "Body of " + string(id), CreatedAt: base.Add(-time.Hour)}
		first := post.Target{Account: accounts[i%3], Slot: slot, Status: statuses[i%len(statuses)], UpdatedAt: base.Add(time.Duration(i) * time.Minute)}
		if first.Status == post.Waiting {
			first.NextTry = slot.Add(time.Minute)
		}
		p.Targets = append(p.Targets, first)
		if i%4 == 1 {
			// A second target, 20 hours later, in a status that matches
			// the same filters as often as not.
			second := post.Target{Account: accounts[(i+1)%3], Slot: slot.Add(20 * time.Hour), Status: statuses[(i+3)%len(statuses)],
				UpdatedAt: base.Add(time.Duration(40-i) * time.Minute)}
			if second.Status == post.Waiting {
				second.NextTry = second.Slot.Add(time.Minute)
			}
			p.Targets = append(p.Targets, second)
			slices.SortFunc(p.Targets, func(a, b post.Target) int { return strings.Compare(string(a.Account), string(b.Account)) })
		}
		mustCreatePost(t, s, p)
		out[id] = p
	}
	return out
}

// pageFilter is one listing's filter.
type pageFilter struct {
	statuses []post.TargetStatus
	account  post.AccountID
	from, to time.Time
}

func (f pageFilter) String() string {
	return fmt.Sprintf("statuses %v, account %q, slots from %s to %s", f.statuses, f.account, f.from.Format(time.RFC3339), f.to.Format(time.RFC3339))
}

func (f pageFilter) postFilter(limit int, after string) publishing.PostFilter {
	return publishing.PostFilter{Statuses: f.statuses, Account: f.account, From: f.from, To: f.to, Limit: limit, After: after}
}

// matching are the ids of the posts f lists, sorted.
func (f pageFilter) matching(posts map[post.ID]post.Post) []post.ID {
	var out []post.ID
	for id, p := range posts {
		if slices.ContainsFunc(p.Targets, func(tg post.Target) bool {
			return (len(f.statuses) == 0 || slices.Contains(f.statuses, tg.Status)) && (f.account == "" || tg.Account == f.account) &&
				(f.from.IsZero() || !tg.Slot.Before(f.from)) && (f.to.IsZero() || tg.Slot.Before(f.to))
		}) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// pageThrough follows the cursors from the first page, checking each
// page's size, and returns every post listed, in order.
func pageThrough(t testing.TB, s pagesStore, f pageFilter, limit, want int) []post.ID {
	t.Helper()
	var got []post.ID
	after := ""
	for page := 1; ; page++ {
		if page > want+2 {
			t.Fatalf("%s, limit %d: still paging after %d pages", f, limit, page-1)
		}
		posts, next, err := s.list(t.Context(), f.postFilter(limit, after))
		if err != nil {
			t.Fatalf("%s, limit %d, page %d: %v", f, limit, page, err)
		}
		if len(posts) > limit {
			t.Errorf("%s, limit %d, page %d: %d posts", f, limit, page, len(posts))
		}
		for _, p := range posts {
			got = append(got, p.ID)
		}
		if next == "" {
			return got
		}
		if len(posts) < limit {
			t.Errorf("%s, limit %d, page %d: %d posts and a cursor; want a full page before another", f, limit, page, len(posts))
		}
		if len(got) >= want {
			t.Errorf("%s, limit %d, page %d: a cursor after all %d matching posts (an empty page would follow)", f, limit, page, want)
		}
		after = next
	}
}

var pageFilters = []pageFilter{
	{},
	{statuses: []post.TargetStatus{post.Scheduled}},
	{statuses: []post.TargetStatus{post.Scheduled, post.Held, post.Waiting}},
	{account: "acct-a"},
	{statuses: []post.TargetStatus{post.Scheduled, post.Published, post.Triggered}, account: "acct-b"},
}

func pagesEachOnce(t testing.TB, s pagesStore) {
	posts := pagesFixture(t, s.posts)
	for _, f := range pageFilters {
		want := f.matching(posts)
		for _, limit := range []int{1, 2, 3, 7, 100} {
			got := pageThrough(t, s, f, limit, len(want))
			seen := map[post.ID]int{}
			for _, id := range got {
				seen[id]++
			}
			for id, n := range seen {
				if n > 1 {
					t.Errorf("%s, limit %d: post %s listed %d times (pages %v)", f, limit, id, n, got)
				}
			}
			sorted := slices.Clone(got)
			slices.Sort(sorted)
			sorted = slices.Compact(sorted)
			if !slices.Equal(want, sorted) {
				t.Errorf("%s, limit %d: listed %v, want each of %v once", f, limit, sorted, want)
			}
		}
	}
}

// pagesWindow: with From and To, a listing holds the posts with a
// matching target whose slot is in [From, To) — a target at From in, one
// at To out — each once over every page, whatever the other conditions;
// a window with nothing in it lists nothing. (The fixture's slots run
// from base to base+31h; posts with two targets have one outside most
// windows.)
func pagesWindow(t testing.TB, s pagesStore) {
	posts := pagesFixture(t, s.posts)
	hour := func(h int) time.Time { return base.Add(time.Duration(h) * time.Hour) }
	filters := []pageFilter{
		{from: hour(2), to: hour(6)},
		{from: hour(20), to: hour(25)},
		{from: hour(5)},
		{to: hour(3)},
		{statuses: []post.TargetStatus{post.Scheduled}, from: hour(1), to: hour(22)},
		{statuses: []post.TargetStatus{post.Scheduled, post.Held, post.Waiting, post.Failed}, from: hour(3), to: hour(9)},
		{account: "acct-a", from: hour(4), to: hour(21)},
		{statuses: []post.TargetStatus{post.Scheduled, post.Published, post.Triggered}, account: "acct-b", from: hour(0), to: hour(10)},
		{from: hour(40), to: hour(50)},
	}
	for _, f := range filters {
		want := f.matching(posts)
		if len(want) == len(f.withoutWindow().matching(posts)) && len(want) > 0 {
			t.Fatalf("%s: the fixture has no post outside the window; the check could not fail", f)
		}
		for _, limit := range []int{1, 3, 100} {
			got := pageThrough(t, s, f, limit, len(want))
			sorted := slices.Clone(got)
			slices.Sort(sorted)
			if !slices.Equal(want, sorted) {
				t.Errorf("%s, limit %d: listed %v, want each of %v once", f, limit, got, want)
			}
		}
	}
}

func (f pageFilter) withoutWindow() pageFilter {
	f.from, f.to = time.Time{}, time.Time{}
	return f
}

// pagesExactFit: a listing of exactly limit posts is one page without a
// cursor; one more post gives a cursor and a second page of one.
func pagesExactFit(t testing.TB, s pagesStore) {
	for i := range 3 {
		mustCreatePost(t, s.posts, simplePost(fmt.Sprintf("fit-%d", i), base.Add(time.Duration(i)*time.Hour), post.Scheduled, "acct-a"))
	}
	scheduled := []post.TargetStatus{post.Scheduled}
	posts, next, err := s.list(t.Context(), publishing.PostFilter{Statuses: scheduled, Limit: 3})
	if err != nil || len(posts) != 3 || next != "" {
		t.Errorf("3 posts, limit 3: %d posts, cursor %q, %v; want the 3 and no cursor", len(posts), next, err)
	}
	mustCreatePost(t, s.posts, simplePost("fit-3", base.Add(3*time.Hour), post.Scheduled, "acct-a"))
	posts, next, err = s.list(t.Context(), publishing.PostFilter{Statuses: scheduled, Limit: 3})
	if err != nil || len(posts) != 3 || next == "" {
		t.Fatalf("4 posts, limit 3: %d posts, cursor %q, %v; want 3 and a cursor", len(posts), next, err)
	}
	posts, next, err = s.list(t.Context(), publishing.PostFilter{Statuses: scheduled, Limit: 3, After: next})
	if err != nil || len(posts) != 1 || posts[0].ID != "fit-3" || next != "" {
		t.Errorf("the second page: %v, cursor %q, %v; want fit-3 alone and no cursor", postIDs(posts), next, err)
	}
}

func pagesForeignCursor(t testing.TB, s pagesStore) {
	mustCreatePost(t, s.posts, simplePost("foreign", base, post.Scheduled, "acct-a"))
	for _, c := range []string{"not a cursor", "eyJ4IjoxfQ", "s1.!!"} {
		if posts, _, err := s.list(t.Context(), publishing.PostFilter{Limit: 10, After: c}); err == nil {
			t.Errorf("cursor %q: %v, nil; want an error", c, postIDs(posts))
		}
	}
}

func postIDs(posts []post.Post) []post.ID {
	out := []post.ID{}
	for _, p := range posts {
		out = append(out, p.ID)
	}
	return out
}
