package linkedin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

const (
	// pageSize is the count asked of the posts finder. The end of the
	// list is a page shorter than the count LinkedIn echoes in paging
	// (https://learn.microsoft.com/en-us/linkedin/shared/api-guide/concepts/pagination),
	// so a server that serves fewer per page than asked is still read to
	// the end.
	pageSize = 50
	// lookupDepth is how many posts a Lookup examines at most. Reading
	// this many without leaving the window (or reaching the author's first
	// post) cannot prove a post absent: *platform.Inconclusive, never "not
	// found", which would license a re-send.
	lookupDepth = 200
)

// postEntity is the part of a Posts API post the adapter reads (posts-api,
// "Post Schema"): times are epoch milliseconds.
type postEntity struct {
	ID             string `json:"id"`
	Author         string `json:"author"`
	Commentary     string `json:"commentary"`
	CreatedAt      int64  `json:"createdAt"`
	PublishedAt    int64  `json:"publishedAt"`
	LastModifiedAt int64  `json:"lastModifiedAt"`
	LifecycleState string `json:"lifecycleState"`
	// Content is the post's media: one (content.media) or 2 to 20
	// images (content.multiImage), each with its alt text.
	Content *postContent `json:"content"`
}

func millis(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func (p postEntity) created() time.Time {
	if p.CreatedAt > 0 {
		return millis(p.CreatedAt)
	}
	return millis(p.PublishedAt)
}

// remote converts the post, the commentary read as the text a reader sees
// (unescapeLittle) and each image as the media id UploadMedia returned
// for it (encodeMediaID of its URN and alt text).
func (p postEntity) remote() platform.RemotePost {
	rp := platform.RemotePost{
		RemoteID:  p.ID,
		Text:      unescapeLittle(p.Commentary),
		URL:       postURL(p.ID),
		CreatedAt: p.created(),
	}
	if p.Content != nil {
		if m := p.Content.Media; m != nil && m.ID != "" {
			rp.MediaIDs = append(rp.MediaIDs, encodeMediaID(m.ID, m.AltText))
		}
		if p.Content.MultiImage != nil {
			for _, im := range p.Content.MultiImage.Images {
				rp.MediaIDs = append(rp.MediaIDs, encodeMediaID(im.ID, im.AltText))
			}
		}
	}
	return rp
}

// matches reports whether the post carries the query's fingerprint: its
// commentary unescaped, or as LinkedIn returned it should the API ever
// hand back the text already unescaped (then unescaping it again could
// eat a backslash of ours). Its images are mapped to SHA-256s through
// q.MediaSHA256 by media id, or by image URN alone should LinkedIn return
// an alt text other than the one sent (alignMedia).
func (p postEntity) matches(q platform.LookupQuery) bool {
	rp := p.remote()
	rp.MediaIDs = alignMedia(rp.MediaIDs, q.MediaSHA256)
	if rp.Fingerprint(q.MediaSHA256) == q.Fingerprint {
		return true
	}
	rp.Text = p.Commentary
	return rp.Fingerprint(q.MediaSHA256) == q.Fingerprint
}

// postsPage is the finder's answer.
type postsPage struct {
	Elements []postEntity `json:"elements"`
	Paging   struct {
		Start int `json:"start"`
		Count int `json:"count"`
		Links []struct {
			Rel string `json:"rel"`
		} `json:"links"`
	} `json:"paging"`
}

// last reports whether the page ends the list: empty, or shorter than the
// count LinkedIn says it served per page (or asked, when it says none),
// and without a "next" link.
func (p postsPage) last(asked int) bool {
	if len(p.Elements) == 0 {
		return true
	}
	for _, l := range p.Paging.Links {
		if l.Rel == "next" {
			return false
		}
	}
	count := p.Paging.Count
	if count <= 0 {
		count = asked
	}
	return len(p.Elements) < count
}

// page reads one page of the author's posts, most recently modified
// first: GET /rest/posts?author=…&q=author&count=…&start=…&sortBy=LAST_MODIFIED
// with X-RestLi-Method: FINDER (posts-api, "Find Posts by Authors"). A
// 403 is Rejected with ReasonReadForbidden.
func (c *Client) page(ctx context.Context, op string, start, count int) (postsPage, error) {
	h := c.header()
	h.Set("X-RestLi-Method", "FINDER")
	q := url.Values{}
	q.Set("author", c.author)
	q.Set("q", "author")
	q.Set("count", strconv.Itoa(count))
	q.Set("start", strconv.Itoa(start))
	q.Set("sortBy", "LAST_MODIFIED")
	resp, err := c.http.Read(ctx, op, httpcall.Request{Method: http.MethodGet, URL: c.base + "/rest/posts", Query: q, Header: h})
	if err != nil {
		return postsPage{}, err
	}
	switch resp.Status {
	case http.StatusOK:
	case http.StatusForbidden:
		return postsPage{}, c.readForbidden(op, resp)
	default:
		return postsPage{}, c.classify(op, resp, false)
	}
	var p postsPage
	if err := json.Unmarshal(resp.Body, &p); err != nil {
		return postsPage{}, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: decode page: %v", op, err)}
	}
	return p, nil
}

// Recent returns up to n of the author's posts, most recently modified
// first (LinkedIn's finder sorts by creation or by last modification; an
// edited post counts as new). Without the read permission
// (Config.CanReadPosts false) nothing is sent and the answer is Rejected
// with ReasonReadForbidden.
func (c *Client) Recent(ctx context.Context, n int) ([]platform.RemotePost, error) {
	const op = "list posts"
	posts := []platform.RemotePost{}
	if n <= 0 {
		return posts, nil
	}
	if !c.canRead {
		return nil, &platform.Rejected{Reason: ReasonReadForbidden, Message: op + ": " + c.noReadPermission()}
	}
	for start := 0; len(posts) < n; {
		count := min(pageSize, n-len(posts))
		p, err := c.page(ctx, op, start, count)
		if err != nil {
			return nil, err
		}
		for _, e := range p.Elements {
			if len(posts) == n {
				break
			}
			posts = append(posts, e.remote())
		}
		if p.last(count) {
			break
		}
		start += len(p.Elements)
	}
	return posts, nil
}

func (c *Client) noReadPermission() string {
	return fmt.Sprintf("the posts of %s cannot be read: Config.CanReadPosts is false (reading them needs %s)", c.author, c.readPermission())
}

// Lookup looks for a post of the author carrying q.Fingerprint; q.Handle
// is not used (LinkedIn keeps none). The fingerprint is compared with
// each post's commentary read back as text (unescapeLittle).
//
// Which posts are candidates: those created at or after a bound,
//
//   - with q.After a post URN: that post's createdAt, read with GET
//     /rest/posts/{After} (LinkedIn's own clock, so no skew); when that
//     post is gone, q.NotBefore;
//   - with q.After platform.StartOfHistory: every post;
//   - without q.After: q.NotBefore (every post when it is zero).
//
// The finder serves posts most recently modified first, and a post is
// modified no earlier than it was created, so the scan stops at the first
// post last modified before the bound. Reading lookupDepth (200) posts
// without getting there, or without reaching the author's first post, is
// *platform.Inconclusive.
//
// Without the read permission Lookup cannot prove anything: with
// Config.CanReadPosts false nothing is sent, and a 403 from LinkedIn is
// the same answer, *platform.Inconclusive naming the permission.
func (c *Client) Lookup(ctx context.Context, q platform.LookupQuery) (platform.RemotePost, bool, error) {
	const op = "lookup"
	if q.Fingerprint == "" {
		return platform.RemotePost{}, false, errors.New("linkedin: lookup needs a fingerprint; LinkedIn posts cannot be found by handle")
	}
	if !c.canRead {
		return platform.RemotePost{}, false, &platform.Inconclusive{Message: op + ": " + c.noReadPermission() + "; cannot prove the post absent"}
	}
	post, found, err := c.lookup(ctx, op, q)
	var rej *platform.Rejected
	if errors.As(err, &rej) && rej.Reason == ReasonReadForbidden {
		return platform.RemotePost{}, false, &platform.Inconclusive{Message: rej.Message + "; cannot prove the post absent"}
	}
	return post, found, err
}

func (c *Client) lookup(ctx context.Context, op string, q platform.LookupQuery) (platform.RemotePost, bool, error) {
	bound, err := c.lookupBound(ctx, op, q)
	if err != nil {
		return platform.RemotePost{}, false, err
	}
	examined := 0
	for start := 0; ; {
		if examined >= lookupDepth {
			window := "since " + bound.Format(time.RFC3339)
			if bound.IsZero() {
				window = "with no start"
			}
			return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf(
				"%s: read the %d most recently modified posts of %s without leaving the window (%s); cannot prove the post absent",
				op, examined, c.author, window)}
		}
		p, err := c.page(ctx, op, start, pageSize)
		if err != nil {
			return platform.RemotePost{}, false, err
		}
		for _, e := range p.Elements {
			examined++
			if !bound.IsZero() && e.LastModifiedAt > 0 && millis(e.LastModifiedAt).Before(bound) {
				// Every later post was modified, hence created, before
				// the bound.
				return platform.RemotePost{}, false, nil
			}
			if e.ID == q.After {
				continue
			}
			if created := e.created(); !bound.IsZero() && !created.IsZero() && created.Before(bound) {
				// An older post edited since: not ours, read on.
				continue
			}
			if e.matches(q) {
				return e.remote(), true, nil
			}
		}
		if p.last(pageSize) {
			return platform.RemotePost{}, false, nil
		}
		start += len(p.Elements)
	}
}

// lookupBound is the earliest creation time of a candidate (see Lookup);
// zero means every post is one.
func (c *Client) lookupBound(ctx context.Context, op string, q platform.LookupQuery) (time.Time, error) {
	switch q.After {
	case "":
		return q.NotBefore, nil
	case platform.StartOfHistory:
		return time.Time{}, nil
	}
	resp, err := c.http.Read(ctx, op, httpcall.Request{Method: http.MethodGet, URL: c.postPath(q.After), Header: c.header()})
	if err != nil {
		return time.Time{}, err
	}
	switch resp.Status {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusGone:
		return q.NotBefore, nil
	case http.StatusForbidden:
		return time.Time{}, c.readForbidden(op, resp)
	default:
		return time.Time{}, c.classify(op, resp, false)
	}
	var after postEntity
	if err := json.Unmarshal(resp.Body, &after); err != nil {
		return time.Time{}, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: decode post %s: %v", op, q.After, err)}
	}
	if t := after.created(); !t.IsZero() {
		return t, nil
	}
	return q.NotBefore, nil
}
