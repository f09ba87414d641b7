package mastodon

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
)

const (
	// pageLimit is the largest page GET /api/v1/accounts/:id/statuses serves.
	pageLimit = 40
	// lookupDepth is how many recent statuses Lookup examines at most. A
	// Lookup that reads this many without reaching the start of its window
	// (or the account's first post) cannot prove a post absent, and says so
	// with an error instead of "not found": "not found" licenses a re-send.
	lookupDepth = 200
)

// status is the part of Mastodon's Status entity the adapter reads.
type status struct {
	ID               string            `json:"id"`
	URI              string            `json:"uri"`
	URL              *string           `json:"url"`
	CreatedAt        string            `json:"created_at"`
	Content          string            `json:"content"`
	Reblog           json.RawMessage   `json:"reblog"`
	MediaAttachments []mediaAttachment `json:"media_attachments"`
}

func (s status) link() string {
	if s.URL != nil && *s.URL != "" {
		return *s.URL
	}
	return s.URI
}

// createdAt parses created_at leniently: a status whose time cannot be read
// is still the status we created.
func (s status) createdAt() time.Time {
	t, err := time.Parse(time.RFC3339Nano, s.CreatedAt)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

func (s status) isReblog() bool {
	return len(s.Reblog) > 0 && string(s.Reblog) != "null"
}

// remote converts the status, undoing the HTML rendering. lossy reports
// that the text may differ from what was written (see htmlToText).
func (s status) remote() (post platform.RemotePost, lossy bool) {
	text, lossy := htmlToText(s.Content)
	post = platform.RemotePost{
		RemoteID:  s.ID,
		Text:      text,
		URL:       s.link(),
		CreatedAt: s.createdAt(),
	}
	for _, m := range s.MediaAttachments {
		post.MediaIDs = append(post.MediaIDs, m.ID)
	}
	return post, lossy
}

// Recent returns up to n of the account's newest statuses, newest first,
// paging with max_id. Boosts are not the account's posts and are left out.
func (c *Client) Recent(ctx context.Context, n int) ([]platform.RemotePost, error) {
	posts := []platform.RemotePost{}
	if n <= 0 {
		return posts, nil
	}
	var srcErr error
	err := c.eachStatus(ctx, n, func(s status) bool {
		p, lossy := s.remote()
		if lossy {
			// The HTML does not give the written text back (mentions,
			// blank lines): read the source, so dedup compares what was written.
			text, exists, err := c.source(ctx, s.ID)
			if err != nil {
				srcErr = err
				return false
			}
			if exists {
				p.Text = text
			}
		}
		posts = append(posts, p)
		return len(posts) < n
	})
	if err == nil {
		err = srcErr
	}
	if err != nil {
		return nil, err
	}
	return posts, nil
}

// eachStatus calls fn with the account's statuses, newest first, until fn
// returns false, want statuses were passed to it, or the history ends.
func (c *Client) eachStatus(ctx context.Context, want int, fn func(status) bool) error {
	const op = "list statuses"
	account, err := c.account(ctx)
	if err != nil {
		return err
	}
	path := "/api/v1/accounts/" + url.PathEscape(account) + "/statuses"
	maxID := ""
	seen := 0
	for seen < want {
		q := url.Values{}
		q.Set("limit", strconv.Itoa(min(pageLimit, want-seen)))
		q.Set("exclude_reblogs", "true")
		if maxID != "" {
			q.Set("max_id", maxID)
		}
		resp, err := c.read(ctx, op, path, q)
		if err != nil {
			return err
		}
		if resp.status != http.StatusOK {
			return c.classify(op, resp, false)
		}
		var page []status
		if err := json.Unmarshal(resp.body, &page); err != nil {
			return &platform.NotPerformed{Status: resp.status, Message: fmt.Sprintf("%s: decode page: %v", op, err)}
		}
		if len(page) == 0 {
			return nil
		}
		for _, s := range page {
			if seen >= want {
				return nil
			}
			if s.isReblog() {
				continue
			}
			seen++
			if !fn(s) {
				return nil
			}
		}
		last := page[len(page)-1].ID
		if last == "" || last == maxID {
			return nil
		}
		maxID = last
	}
	return nil
}

// account returns the account id, resolving it once through
// verify_credentials when the config did not name it.
func (c *Client) account(ctx context.Context) (string, error) {
	const op = "verify credentials"
	c.mu.Lock()
	id := c.accountID
	c.mu.Unlock()
	if id != "" {
		return id, nil
	}
	resp, err := c.read(ctx, op, "/api/v1/accounts/verify_credentials", nil)
	if err != nil {
		return "", err
	}
	if resp.status != http.StatusOK {
		return "", c.classify(op, resp, false)
	}
	var a struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(resp.body, &a); err != nil || a.ID == "" {
		return "", &platform.NotPerformed{Status: resp.status, Message: op + ": no account id in the answer"}
	}
	c.mu.Lock()
	c.accountID = a.ID
	c.mu.Unlock()
	return a.ID, nil
}

// Lookup looks for a status carrying q.Fingerprint among the account's
// newest statuses (at most 40, none older than q.NotBefore). Mastodon keeps
// no record readable by Idempotency-Key, so q.Handle is not used.
//
// The fingerprint is computed from the HTML content converted back to text.
// Where that conversion may be lossy (a mention, whose rendering drops the
// domain the author may have typed; several paragraphs, whose rendering
// collapses runs of blank lines) or where the status carries attachments
// that are all ours, a mismatch is not trusted: the plain source text is
// read from GET /api/v1/statuses/:id/source and the fingerprint compared
// again. The cheap pre-check keeps the extra reads to statuses that could be
// ours; a status with an attachment we did not upload never is.
func (c *Client) Lookup(ctx context.Context, q platform.LookupQuery) (platform.RemotePost, bool, error) {
	if q.Fingerprint == "" {
		return platform.RemotePost{}, false, errors.New("mastodon: lookup needs a fingerprint; mastodon posts cannot be found by handle")
	}
	var (
		found    platform.RemotePost
		ok       bool
		loopErr  error
		examined int
		windowed bool // reached a post older than the window
	)
	err := c.eachStatus(ctx, lookupDepth, func(s status) bool {
		examined++
		post, lossy := s.remote()
		if !q.NotBefore.IsZero() && !post.CreatedAt.IsZero() && post.CreatedAt.Before(q.NotBefore) {
			windowed = true
			return false
		}
		if post.Fingerprint(q.MediaSHA256) == q.Fingerprint {
			found, ok = post, true
			return false
		}
		if !allOurs(post.MediaIDs, q.MediaSHA256) || (!lossy && len(post.MediaIDs) == 0) {
			return true
		}
		text, exists, err := c.source(ctx, s.ID)
		if err != nil {
			loopErr = err
			return false
		}
		if !exists {
			return true
		}
		post.Text = text
		if post.Fingerprint(q.MediaSHA256) == q.Fingerprint {
			found, ok = post, true
			return false
		}
		return true
	})
	if err == nil {
		err = loopErr
	}
	if err != nil {
		return platform.RemotePost{}, false, err
	}
	if !ok && !windowed && examined >= lookupDepth {
		return platform.RemotePost{}, false, &platform.NotPerformed{Message: fmt.Sprintf(
			"lookup: read the %d newest posts without reaching the start of the window (%s); cannot prove the post absent",
			examined, q.NotBefore.UTC().Format(time.RFC3339))}
	}
	return found, ok, nil
}

// allOurs reports whether every attachment is one whose bytes we know.
func allOurs(mediaIDs []string, shaByRemoteID map[string]string) bool {
	for _, id := range mediaIDs {
		if _, ok := shaByRemoteID[id]; !ok {
			return false
		}
	}
	return true
}

// source reads a status's plain text as written. exists is false when the
// status is gone.
func (c *Client) source(ctx context.Context, id string) (text string, exists bool, err error) {
	const op = "read status source"
	resp, err := c.read(ctx, op, "/api/v1/statuses/"+url.PathEscape(id)+"/source", nil)
	if err != nil {
		return "", false, err
	}
	switch resp.status {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusGone:
		return "", false, nil
	default:
		return "", false, c.classify(op, resp, false)
	}
	var src struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(resp.body, &src); err != nil || src.Text == nil {
		return "", false, &platform.NotPerformed{Status: resp.status, Message: op + ": no text in the answer"}
	}
	return *src.Text, true, nil
}

// Exists reports whether the status is on the server: 200 true, 404 (or
// 410) false; any other answer is an error.
func (c *Client) Exists(ctx context.Context, remoteID string) (bool, error) {
	const op = "read status"
	if remoteID == "" {
		return false, errors.New("mastodon: exists needs a remote id")
	}
	resp, err := c.read(ctx, op, "/api/v1/statuses/"+url.PathEscape(remoteID), nil)
	if err != nil {
		return false, err
	}
	switch resp.status {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound, http.StatusGone:
		return false, nil
	}
	return false, c.classify(op, resp, false)
}
