package publishingtest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// pagesBugs are the paging mistakes TestPostPages must catch.
type pagesBugs struct {
	cutsSilently    bool // a full page never has a cursor
	repeatsLast     bool // the next page starts with the last post again
	skipsNext       bool // the next page leaves out its first post
	cursorWhenFull  bool // a cursor whenever the page is full, even with nothing left
	resumesByTarget bool // the next page lists the posts of the targets after the cursor, a post met before included
	acceptsAnyText  bool // a cursor it did not make lists from the start
	ignoresWindow   bool // From and To are not read
}

// memLister pages memPosts by each post's earliest matching slot, then
// id; its cursor is "mem:" + the slot and id of the page's last post.
func memLister(m *memPosts, b pagesBugs) PostLister {
	return func(_ context.Context, f publishing.PostFilter) ([]post.Post, string, error) {
		statuses, account, limit, after := f.Statuses, f.Account, f.Limit, f.After
		m.mu.Lock()
		defer m.mu.Unlock()
		type keyed struct {
			key string
			p   post.Post
		}
		matches := func(tg post.Target) bool {
			inWindow := (f.From.IsZero() || !tg.Slot.Before(f.From)) && (f.To.IsZero() || tg.Slot.Before(f.To))
			return (len(statuses) == 0 || slices.Contains(statuses, tg.Status)) && (account == "" || tg.Account == account) &&
				(inWindow || b.ignoresWindow)
		}
		var all []keyed
		for _, p := range m.posts {
			first := ""
			for _, tg := range p.Targets {
				if !matches(tg) {
					continue
				}
				k := tg.Slot.UTC().Format(time.RFC3339Nano) + "|" + string(p.ID)
				if b.resumesByTarget {
					all = append(all, keyed{k, clonePost(p)})
				} else if first == "" || k < first {
					first = k
				}
			}
			if first != "" {
				all = append(all, keyed{first, clonePost(p)})
			}
		}
		slices.SortFunc(all, func(a, b keyed) int { return strings.Compare(a.key, b.key) })

		start := 0
		if after != "" {
			from, ok := strings.CutPrefix(after, "mem:")
			if !ok && !b.acceptsAnyText {
				return nil, "", errors.New("not a cursor of this lister")
			}
			for start < len(all) && all[start].key <= from {
				start++
			}
			if b.repeatsLast && start > 0 {
				start--
			}
			if b.skipsNext {
				start++
			}
		}
		if b.resumesByTarget {
			// Each post once on this page, at the first of its targets
			// after the cursor.
			seen := map[post.ID]bool{}
			all = slices.DeleteFunc(all[start:], func(k keyed) bool {
				dup := seen[k.p.ID]
				seen[k.p.ID] = true
				return dup
			})
			start = 0
		}
		end := min(start+limit, len(all))
		start = min(start, end)
		var out []post.Post
		for _, k := range all[start:end] {
			out = append(out, k.p)
		}
		next := ""
		if (end < len(all) || b.cursorWhenFull && len(out) == limit) && !b.cutsSilently && len(out) > 0 {
			next = "mem:" + all[end-1].key
		}
		return out, next, nil
	}
}

func TestPostPagesSuite(t *testing.T) {
	newStore := func(b pagesBugs) func() pagesStore {
		return func() pagesStore {
			m := newMemPosts(postsBugs{})
			return pagesStore{m, memLister(m, b)}
		}
	}
	t.Run("correct", func(t *testing.T) {
		TestPostPages(t, func(*testing.T) (publishing.Posts, PostLister) {
			s := newStore(pagesBugs{})()
			return s.posts, s.list
		})
	})
	testBroken(t, pagesChecks(), []brokenCase[pagesStore]{
		{"a full page never has a cursor", newStore(pagesBugs{cutsSilently: true}),
			[]string{"ListPosts/pages_list_each_post_once", "ListPosts/a_full_last_page_says_it_is_the_last"}},
		{"the next page repeats the last post", newStore(pagesBugs{repeatsLast: true}), []string{"ListPosts/pages_list_each_post_once"}},
		{"the next page skips a post", newStore(pagesBugs{skipsNext: true}), []string{"ListPosts/pages_list_each_post_once"}},
		{"a cursor on every full page", newStore(pagesBugs{cursorWhenFull: true}), []string{"ListPosts/a_full_last_page_says_it_is_the_last"}},
		{"a later page resumes by target", newStore(pagesBugs{resumesByTarget: true}), []string{"ListPosts/pages_list_each_post_once"}},
		{"any text is a cursor", newStore(pagesBugs{acceptsAnyText: true}), []string{"ListPosts/foreign_cursor_refused"}},
		{"the window is ignored", newStore(pagesBugs{ignoresWindow: true}), []string{"ListPosts/window_bounds_slots"}},
	}, false)
}
