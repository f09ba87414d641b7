package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"oncepost/shared/platform"
)

const (
	// pageLimit is the largest page of GET /{user-id}/threads: "default is
	// 25 and maximum is 100"
	// (https://developers.facebook.com/documentation/threads/reference/user).
	pageLimit = 100
	// lookupDepth is how many threads a Lookup without After reads at most
	// (and a Resume of a published container). Reading that many inside
	// the window without reaching its start cannot prove a post absent:
	// *platform.Inconclusive.
	lookupDepth = 300
	// lookupAfterCap bounds a Lookup with After: more threads than this
	// since the first send (four days of the 250 a day quota) are not
	// searched to the end.
	lookupAfterCap = 1000
	// minSince is the earliest since the list accepts: "the timestamp must
	// be greater than or equal to 1688540400"
	// (https://developers.facebook.com/documentation/threads/reference/user).
	minSince = 1688540400
	// listFields are the fields read for each thread.
	listFields = "id,media_type,text,timestamp,permalink"
)

// Media types of a thread as listed
// (https://developers.facebook.com/documentation/threads/retrieve-and-discover-posts/retrieve-posts,
// Fields: "TEXT_POST, IMAGE, VIDEO, CAROUSEL_ALBUM, AUDIO, or
// REPOST_FACADE"; TEXT_POST also for posts with GIFs and polls).
const (
	mediaTextPost     = "TEXT_POST"
	mediaRepostFacade = "REPOST_FACADE"
)

// thread is a Threads media object as listed.
type thread struct {
	ID        string `json:"id"`
	MediaType string `json:"media_type"`
	Text      string `json:"text"`
	Timestamp string `json:"timestamp"`
	Permalink string `json:"permalink"`
}

// created parses the timestamp, "2023-10-17T05:42:03+0000" in Meta's
// examples; zero when it cannot be read.
func (t thread) created() time.Time {
	for _, layout := range []string{"2006-01-02T15:04:05-0700", time.RFC3339Nano} {
		if ts, err := time.Parse(layout, t.Timestamp); err == nil {
			return ts.UTC()
		}
	}
	return time.Time{}
}

// remote converts the thread. A thread with an image, video, carousel or
// audio carries its own id as an attachment id: no text post of ours has
// one, so its fingerprint never matches ours.
func (t thread) remote() platform.RemotePost {
	p := platform.RemotePost{RemoteID: t.ID, Text: t.Text, URL: t.Permalink, CreatedAt: t.created()}
	if t.MediaType != "" && t.MediaType != mediaTextPost {
		p.MediaIDs = []string{t.ID}
	}
	return p
}

// media reads one thread, GET /{media-id}?fields=… .
func (c *Client) media(ctx context.Context, id string) (thread, error) {
	const op = "read post"
	resp, err := c.read(ctx, op, c.objectURL(id), url.Values{"fields": {listFields}})
	if err != nil {
		return thread{}, err
	}
	if !resp.OK() {
		return thread{}, c.classify(op, resp, false)
	}
	var t thread
	if err := json.Unmarshal(resp.Body, &t); err != nil {
		return thread{}, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s %s: decode answer: %v", op, id, err)}
	}
	return t, nil
}

// scanEnd says why eachThread stopped.
type scanEnd int

const (
	// scanStopped: fn returned false.
	scanStopped scanEnd = iota
	// scanEnded: the list ended (the account's first thread, or the
	// since bound, was reached).
	scanEnded
	// scanCapped: the most threads asked for were read and more may follow, or the
	// server's paging could not be followed.
	scanCapped
)

// threadPage is a page of GET /{user-id}/threads
// (https://developers.facebook.com/docs/threads/threads-media, Example
// Response).
type threadPage struct {
	Data   []thread `json:"data"`
	Paging struct {
		Cursors struct {
			After string `json:"after"`
		} `json:"cursors"`
		// Next is the address of the next page, absent on the last. It
		// carries the token in its query: only its presence is used.
		Next string `json:"next"`
	} `json:"paging"`
}

// eachThread calls fn with the account's threads, newest first, from
// GET /{user-id}/threads?fields=…&limit=&since=&after=, until fn returns
// false, most threads were passed to it or the list ends. Reposts are
// passed too (fn decides). since, when not zero, is sent as a Unix time.
func (c *Client) eachThread(ctx context.Context, since time.Time, most int, fn func(thread) bool) (scanEnd, error) {
	const op = "list threads"
	after := ""
	seen := 0
	for seen < most {
		q := url.Values{"fields": {listFields}, "limit": {strconv.Itoa(min(pageLimit, most-seen))}}
		if !since.IsZero() && since.Unix() >= minSince {
			q.Set("since", strconv.FormatInt(since.Unix(), 10))
		}
		if after != "" {
			q.Set("after", after)
		}
		resp, err := c.read(ctx, op, c.objectURL(c.userID, "threads"), q)
		if err != nil {
			return 0, err
		}
		if !resp.OK() {
			return 0, c.classify(op, resp, false)
		}
		var page threadPage
		if err := json.Unmarshal(resp.Body, &page); err != nil {
			return 0, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: decode page: %v", op, err)}
		}
		for _, t := range page.Data {
			if seen >= most {
				return scanCapped, nil
			}
			seen++
			if !fn(t) {
				return scanStopped, nil
			}
		}
		if len(page.Data) == 0 || page.Paging.Next == "" {
			return scanEnded, nil
		}
		next := page.Paging.Cursors.After
		if next == "" || next == after {
			// More is announced but cannot be asked for.
			return scanCapped, nil
		}
		after = next
	}
	return scanCapped, nil
}

// Recent returns up to n of the account's newest threads, newest first.
// Reposts of other people's posts are left out.
func (c *Client) Recent(ctx context.Context, n int) ([]platform.RemotePost, error) {
	posts := []platform.RemotePost{}
	if n <= 0 {
		return posts, nil
	}
	// Reposts count against the read but not against n; read a little more
	// than n so a few of them do not shorten the answer.
	_, err := c.eachThread(ctx, time.Time{}, n+pageLimit, func(t thread) bool {
		if t.MediaType != mediaRepostFacade {
			posts = append(posts, t.remote())
		}
		return len(posts) < n
	})
	if err != nil {
		return nil, err
	}
	return posts, nil
}

// Lookup looks for the post of a publish whose outcome is unknown.
//
// With q.Checkpoint (the container recorded by Publish) it reads the
// container's status first
// (https://developers.facebook.com/docs/threads/troubleshooting):
//
//   - FINISHED, EXPIRED, ERROR: not found, for certain: the container
//     never became a post;
//   - IN_PROGRESS: NotPerformed, RetryAfter one minute;
//   - PUBLISHED: the post exists; it is found by fingerprint as below and
//     returned. Found without a media id is not an answer: if the post
//     cannot be matched the Lookup is *platform.Inconclusive, saying so;
//   - unreadable, or a status this package does not know: Inconclusive.
//
// Without a checkpoint it reads the account's threads newest first and
// matches q.Fingerprint (text; threads with media never match):
//
//   - with q.After: every thread until the one with that id (or, with
//     platform.StartOfHistory, the account's first), at most
//     lookupAfterCap (1,000); timestamps play no part;
//   - otherwise: threads created at or after q.NotBefore (sent as since),
//     at most lookupDepth (300).
//
// Reaching the bound inside the window is Inconclusive; a read failure is
// NotPerformed. Reposts are never ours.
func (c *Client) Lookup(ctx context.Context, q platform.LookupQuery) (platform.RemotePost, bool, error) {
	if q.Checkpoint == "" {
		if q.Fingerprint == "" {
			return platform.RemotePost{}, false, errors.New("threads: lookup needs a container checkpoint or a fingerprint")
		}
		return c.findByFingerprint(ctx, q)
	}
	st, err := c.containerStatus(ctx, q.Checkpoint)
	if err != nil {
		return platform.RemotePost{}, false, err
	}
	switch {
	case st.gone:
		return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf(
			"container %s of the publish is unreadable (the API says it does not exist); whether it was published is unknown", q.Checkpoint)}
	case st.Status == StatusFinished, st.Status == StatusExpired, st.Status == StatusError:
		return platform.RemotePost{}, false, nil
	case st.Status == StatusInProgress:
		return platform.RemotePost{}, false, &platform.NotPerformed{RetryAfter: containerPollWait, Message: fmt.Sprintf("lookup: container %s is still in progress", q.Checkpoint)}
	case st.Status != StatusPublished:
		return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf("container %s has status %s, which this adapter does not know", q.Checkpoint, st.describe())}
	}
	if q.Fingerprint == "" {
		return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf(
			"container %s was published, but the query has no fingerprint to find its post (and media id) by", q.Checkpoint)}
	}
	p, found, err := c.findByFingerprint(ctx, q)
	var inc *platform.Inconclusive
	switch {
	case found:
		return p, true, nil
	case err != nil && !errors.As(err, &inc):
		return platform.RemotePost{}, false, err
	}
	why := "not found in the window read"
	if inc != nil {
		why = inc.Message
	}
	return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf(
		"container %s was published, but its post could not be matched among the account's threads (%s); its media id is unknown", q.Checkpoint, why)}
}

// findByFingerprint searches the account's threads for q.Fingerprint (see
// Lookup for the window).
func (c *Client) findByFingerprint(ctx context.Context, q platform.LookupQuery) (platform.RemotePost, bool, error) {
	var (
		found    platform.RemotePost
		ok       bool
		reached  bool // the thread named by q.After, or one older than NotBefore
		examined int
	)
	match := func(t thread) bool {
		if t.MediaType == mediaRepostFacade {
			return true
		}
		p := t.remote()
		if p.Fingerprint(q.MediaSHA256) == q.Fingerprint {
			found, ok = p, true
			return false
		}
		return true
	}
	var (
		end scanEnd
		err error
	)
	if q.After != "" {
		end, err = c.eachThread(ctx, time.Time{}, lookupAfterCap, func(t thread) bool {
			if q.After != platform.StartOfHistory && t.ID == q.After {
				reached = true
				return false
			}
			examined++
			return match(t)
		})
	} else {
		end, err = c.eachThread(ctx, q.NotBefore, lookupDepth, func(t thread) bool {
			if created := t.created(); !q.NotBefore.IsZero() && !created.IsZero() && created.Before(q.NotBefore) {
				reached = true
				return false
			}
			examined++
			return match(t)
		})
	}
	switch {
	case err != nil:
		return platform.RemotePost{}, false, err
	case ok:
		return found, true, nil
	case reached, end == scanEnded:
		return platform.RemotePost{}, false, nil
	case q.After != "":
		return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf(
			"read %d threads without reaching %s (safety cap %d); cannot prove the post absent", examined, q.After, lookupAfterCap)}
	}
	start := "no start given"
	if !q.NotBefore.IsZero() {
		start = q.NotBefore.UTC().Format(time.RFC3339)
	}
	return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf(
		"read the %d newest threads without reaching the start of the window (%s); cannot prove the post absent", examined, start)}
}

// Exists reports whether the post is on Threads, GET /{media-id}?fields=id
// (https://developers.facebook.com/docs/threads/threads-media, "Retrieve a
// Single Threads Media Object"). It is the read-back of a delete, so false
// is said only on the Graph API's own "does not exist" answer (error 100,
// subcode 33, or a 404 with a Graph error); any other answer is an error,
// a failed read NotPerformed.
func (c *Client) Exists(ctx context.Context, remoteID string) (bool, error) {
	const op = "read post"
	if remoteID == "" {
		return false, errors.New("threads: exists needs a remote id")
	}
	resp, err := c.read(ctx, op, c.objectURL(remoteID), url.Values{"fields": {"id"}})
	if err != nil {
		return false, err
	}
	if !resp.OK() {
		if notExist(resp) {
			return false, nil
		}
		return false, c.classify(op, resp, false)
	}
	var t struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(resp.Body, &t); err != nil || t.ID != remoteID {
		return false, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s %s: the answer is not that post", op, remoteID)}
	}
	return true, nil
}

// Profile is the account a token belongs to.
type Profile struct {
	// ID is the Threads user id (post.Account.RemoteID).
	ID       string `json:"id"`
	Username string `json:"username"`
}

// Profile reads the token's own user, GET /me?fields=id,username
// (https://developers.facebook.com/docs/threads/threads-profiles), to
// learn the user id after ExchangeCode.
func (c *Client) Profile(ctx context.Context) (Profile, error) {
	const op = "read profile"
	resp, err := c.read(ctx, op, c.objectURL("me"), url.Values{"fields": {"id,username"}})
	if err != nil {
		return Profile{}, err
	}
	if !resp.OK() {
		return Profile{}, c.classify(op, resp, false)
	}
	var p Profile
	if err := json.Unmarshal(resp.Body, &p); err != nil || p.ID == "" {
		return Profile{}, &platform.NotPerformed{Status: resp.Status, Message: op + ": the answer carries no user id"}
	}
	return p, nil
}
