package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
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
	// listFields are the fields read for each thread; children lists a
	// carousel's items ("List of child posts. This only shows up for
	// carousel posts",
	// https://developers.facebook.com/docs/threads/retrieve-and-discover-posts/retrieve-posts).
	listFields = "id,media_type,text,timestamp,permalink,children"
	// replyFields are the fields read for each of the account's replies
	// (GET /{user-id}/replies): listFields and the post each replies to
	// (replied_to, https://developers.facebook.com/docs/threads/retrieve-and-discover-posts/retrieve-replies).
	replyFields = listFields + ",replied_to"
)

// Media types of a thread as listed
// (https://developers.facebook.com/documentation/threads/retrieve-and-discover-posts/retrieve-posts,
// Fields: "TEXT_POST, IMAGE, VIDEO, CAROUSEL_ALBUM, AUDIO, or
// REPOST_FACADE"; TEXT_POST also for posts with GIFs and polls).
const (
	mediaTextPost     = "TEXT_POST"
	mediaCarousel     = "CAROUSEL_ALBUM"
	mediaRepostFacade = "REPOST_FACADE"
)

// thread is a Threads media object as listed.
type thread struct {
	ID        string    `json:"id"`
	MediaType string    `json:"media_type"`
	Text      string    `json:"text"`
	Timestamp string    `json:"timestamp"`
	Permalink string    `json:"permalink"`
	Children  *children `json:"children"`
	// RepliedTo is the post a reply answers (read from the replies edge).
	RepliedTo *struct {
		ID string `json:"id"`
	} `json:"replied_to"`
}

// children are a carousel's items. The Graph API answers an edge read as
// a field as {"data":[{"id":…},…]}; Meta's pages show no example for
// Threads, so a bare list of objects is read too, and anything else
// leaves the items unknown rather than failing the page.
type children struct {
	IDs []string
}

func (c *children) UnmarshalJSON(b []byte) error {
	type item struct {
		ID string `json:"id"`
	}
	var (
		env struct {
			Data []item `json:"data"`
		}
		list  []item
		items []item
	)
	switch {
	case json.Unmarshal(b, &env) == nil:
		items = env.Data
	case json.Unmarshal(b, &list) == nil:
		items = list
	default:
		return nil
	}
	c.IDs = nil
	for _, it := range items {
		if it.ID != "" {
			c.IDs = append(c.IDs, it.ID)
		}
	}
	return nil
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

// remote converts the thread. Its attachment ids are a carousel's
// children, or the thread's own id for an image, video or audio post (or
// a carousel whose children were not read): no text post of ours has
// one, and Threads re-hosts the images of ours, so a thread with media
// never matches a fingerprint.
func (t thread) remote() platform.RemotePost {
	p := platform.RemotePost{RemoteID: t.ID, Text: t.Text, URL: t.Permalink, CreatedAt: t.created()}
	p.MediaIDs, _ = t.attachments()
	if t.RepliedTo != nil {
		p.ReplyTo = t.RepliedTo.ID
	}
	return p
}

// attachments are the thread's attachment ids (see remote); known is
// false when their number is not: a carousel read without its children.
func (t thread) attachments() (ids []string, known bool) {
	switch t.MediaType {
	case "", mediaTextPost:
		return nil, true
	case mediaCarousel:
		if t.Children != nil && len(t.Children.IDs) > 0 {
			return t.Children.IDs, true
		}
		return []string{t.ID}, false
	}
	return []string{t.ID}, true
}

// sameContent reports whether the thread carries text (normalised as the
// fingerprint does) and count attachments, and whether its count is
// known at all.
func (t thread) sameContent(text string, count int) (same, countKnown bool) {
	if platform.NormalizeText(t.Text) != platform.NormalizeText(text) {
		return false, true
	}
	ids, known := t.attachments()
	return !known || len(ids) == count, known
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
	return c.eachOf(ctx, "threads", listFields, since, most, fn)
}

// eachOf is eachThread on one of the user's edges: "threads" (its
// threads) or "replies" (its replies, GET /{user-id}/replies, read with
// fields).
func (c *Client) eachOf(ctx context.Context, edge, fields string, since time.Time, most int, fn func(thread) bool) (scanEnd, error) {
	op := "list " + edge
	after := ""
	seen := 0
	for seen < most {
		q := url.Values{"fields": {fields}, "limit": {strconv.Itoa(min(pageLimit, most-seen))}}
		if !since.IsZero() && since.Unix() >= minSince {
			q.Set("since", strconv.FormatInt(since.Unix(), 10))
		}
		if after != "" {
			q.Set("after", after)
		}
		resp, err := c.read(ctx, op, c.objectURL(c.userID, edge), q)
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
//   - PUBLISHED: the post exists, and is looked for in the window below.
//     A text post is matched by q.Fingerprint. A post with media
//     (q.MediaCount > 0) cannot be: Threads re-hosts the images, so its
//     copies have other bytes; since the container proves the post
//     exists, it is the one thread of the window with the same text
//     (platform.NormalizeText) and q.MediaCount attachments (see
//     matchPublished). Found without a media id is not an answer: if the
//     post cannot be matched, or more than one thread matches, the
//     Lookup is *platform.Inconclusive, saying so;
//   - unreadable, or a status this package does not know: Inconclusive.
//
// With a checkpoint of a carousel's item containers ("items:…", all of
// them or the first ones, see publishMedia) it reads nothing and answers
// not found (see
// lookupItems); one this package cannot have written is Inconclusive.
//
// Without a checkpoint it reads the account's threads newest first and
// matches q.Fingerprint (text; a thread with media never matches it):
//
//   - with q.After: every thread until the one with that id (or, with
//     platform.StartOfHistory, the account's first), at most
//     lookupAfterCap (1,000); timestamps play no part;
//   - otherwise: threads created at or after q.NotBefore (sent as since),
//     at most lookupDepth (300).
//
// A post with media is never found that way, nor by its text and count
// alone: nothing proves such a thread is ours and not an older post of
// the same words and number of images. A thread of the same text and
// q.MediaCount attachments in the window makes the Lookup Inconclusive;
// without one the post is not there.
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
	if _, isItems, err := parseItems(q.Checkpoint); err != nil {
		return platform.RemotePost{}, false, &platform.Inconclusive{Message: err.Error() + "; what the publish recorded is unknown"}
	} else if isItems {
		return lookupItems()
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
	var (
		p     platform.RemotePost
		found bool
	)
	if q.MediaCount > 0 {
		p, found, err = c.matchPublished(ctx, q)
	} else {
		if q.Fingerprint == "" {
			return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf(
				"container %s was published, but the query has no fingerprint to find its post (and media id) by", q.Checkpoint)}
		}
		p, found, err = c.findByFingerprint(ctx, q)
	}
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

// lookupItems answers a Lookup whose checkpoint records a carousel's
// item containers (all of them, or the first ones) and not yet its
// CAROUSEL container: not found, for certain, without a read. Why it is
// safe:
//
//   - publishMedia publishes a carousel only after Checkpoint recorded
//     the CAROUSEL container's own id, and stops when that fails; items
//     are never published by themselves (Threads refuses to). So while
//     the entry's checkpoint is "items:…", no threads_publish was sent
//     after it was written. When a carousel was made of them, its
//     creation answer was lost or its checkpoint failed, and it was not
//     published.
//   - A checkpoint of the first items only (a call that ran out of time
//     before making the rest, see outOfTime) ended its call at once,
//     NotPerformed, with nothing sent after it: no carousel was made of
//     them, and none can be before the missing items are made and the
//     whole list, then the CAROUSEL id, replace it.
//   - A Checkpoint that failed may still have been stored (a lost
//     answer): then the entry holds the CAROUSEL id, and Lookup reads
//     that container as usual. What the entry holds is what Lookup
//     gets; never an items checkpoint written after a publish.
//   - A checkpoint is replaced only by this attempt's next step (the
//     CAROUSEL id, or the whole list of items after the first ones it
//     resumed), by a later attempt, which first resumes what is
//     recorded: a container it finds FINISHED, EXPIRED or ERROR is one
//     Lookup already counts as never published (PUBLISHED is answered
//     without a new checkpoint), and recorded items, all or the first
//     ones, again lead to no publish before a CAROUSEL id replaces them;
//     or by the repeat of a call that got a 401 (the publisher repeats
//     Publish once after a refresh, resuming what the entry holds then),
//     whose container the 401 says was not published. Every Checkpoint
//     is conditional on the entry still being this attempt's, and each
//     attempt's call ends before its lease does, so no older attempt
//     publishes after a newer one's items were recorded.
//
// Reading the items would prove nothing more: their status says nothing
// documented about the carousels made of them.
func lookupItems() (platform.RemotePost, bool, error) {
	return platform.RemotePost{}, false, nil
}

// scanWindow calls fn with the threads of q's window (see Lookup), newest
// first, until fn returns false or the window or its bound is reached.
// Reposts are passed too (fn decides). complete reports that the window
// was read to its start (the thread named by q.After, one older than
// q.NotBefore, or the account's first); examined counts the threads of
// the window passed to fn.
func (c *Client) scanWindow(ctx context.Context, q platform.LookupQuery, fn func(thread) bool) (complete bool, examined int, err error) {
	var (
		end     scanEnd
		reached bool
	)
	if q.Reply != nil {
		// A thread's part is a reply: the user's replies are read (back
		// to NotBefore; After names a thread of the threads edge, which
		// the replies do not hold).
		end, err = c.eachOf(ctx, "replies", replyFields, q.NotBefore, lookupDepth, func(t thread) bool {
			if created := t.created(); !q.NotBefore.IsZero() && !created.IsZero() && created.Before(q.NotBefore) {
				reached = true
				return false
			}
			examined++
			return fn(t)
		})
		return reached || end == scanEnded, examined, err
	}
	if q.After != "" {
		end, err = c.eachThread(ctx, time.Time{}, lookupAfterCap, func(t thread) bool {
			if q.After != platform.StartOfHistory && t.ID == q.After {
				reached = true
				return false
			}
			examined++
			return fn(t)
		})
	} else {
		end, err = c.eachThread(ctx, q.NotBefore, lookupDepth, func(t thread) bool {
			if created := t.created(); !q.NotBefore.IsZero() && !created.IsZero() && created.Before(q.NotBefore) {
				reached = true
				return false
			}
			examined++
			return fn(t)
		})
	}
	return reached || end == scanEnded, examined, err
}

// windowNotRead is the Inconclusive answer of a search that reached its
// bound before the start of q's window.
func windowNotRead(q platform.LookupQuery, examined int) error {
	if q.After != "" {
		return &platform.Inconclusive{Message: fmt.Sprintf(
			"read %d threads without reaching %s (safety cap %d); cannot prove the post absent", examined, q.After, lookupAfterCap)}
	}
	start := "no start given"
	if !q.NotBefore.IsZero() {
		start = q.NotBefore.UTC().Format(time.RFC3339)
	}
	return &platform.Inconclusive{Message: fmt.Sprintf(
		"read the %d newest threads without reaching the start of the window (%s); cannot prove the post absent", examined, start)}
}

// findByFingerprint reads q's window (see Lookup) for a thread whose
// fingerprint is q.Fingerprint. For a post with media (q.MediaCount > 0)
// when no container was recorded — Threads re-hosts images, so its
// fingerprint does not match — a thread of the same text and
// q.MediaCount attachments (or a carousel whose count is unknown) is
// Inconclusive, since it may be ours or an older post of the same
// content.
func (c *Client) findByFingerprint(ctx context.Context, q platform.LookupQuery) (platform.RemotePost, bool, error) {
	lookalikes := q.MediaCount > 0
	var (
		found     platform.RemotePost
		ok        bool
		lookalike string
	)
	complete, examined, err := c.scanWindow(ctx, q, func(t thread) bool {
		if t.MediaType == mediaRepostFacade {
			return true
		}
		p := t.remote()
		if !p.RepliesTo(q.Reply) {
			return true // another thread's part, or not a reply where one is looked for
		}
		if p.Fingerprint(q.MediaSHA256) == q.Fingerprint {
			found, ok = p, true
			return false
		}
		if lookalikes {
			if same, _ := t.sameContent(q.Text, q.MediaCount); same {
				lookalike = t.ID
				return false
			}
		}
		return true
	})
	switch {
	case err != nil:
		return platform.RemotePost{}, false, err
	case ok:
		return found, true, nil
	case lookalike != "":
		return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf(
			"thread %s has the post's text and %d attachments, and Threads re-hosts images so they cannot be compared; with no published container recorded it cannot be told whether it is this post", lookalike, q.MediaCount)}
	case complete:
		return platform.RemotePost{}, false, nil
	}
	return platform.RemotePost{}, false, windowNotRead(q, examined)
}

// matchPublished finds the post of a container that is PUBLISHED (the
// post exists): the one thread of q's window (see Lookup) with q.Text
// and exactly q.MediaCount attachments. Reading on to the window's start
// makes sure it is the only one; more than one is Inconclusive (which of
// them the container became is unknown, and the receipt's id is what a
// later delete removes). A window cut by its bound with exactly one match
// is taken: the post is recent, and anything beyond the bound is older
// than every thread read. None is Inconclusive when the window was not
// read to its start, and not found otherwise.
func (c *Client) matchPublished(ctx context.Context, q platform.LookupQuery) (platform.RemotePost, bool, error) {
	var matches []thread
	complete, examined, err := c.scanWindow(ctx, q, func(t thread) bool {
		if t.MediaType == mediaRepostFacade || !t.remote().RepliesTo(q.Reply) {
			return true
		}
		if same, known := t.sameContent(q.Text, q.MediaCount); same && known {
			matches = append(matches, t)
		}
		return true
	})
	switch {
	case err != nil:
		return platform.RemotePost{}, false, err
	case len(matches) == 1:
		return matches[0].remote(), true, nil
	case len(matches) > 1:
		ids := make([]string, len(matches))
		for i, t := range matches {
			ids[i] = t.ID
		}
		return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf(
			"%d threads have the post's text and %d attachments (%s); which one the container became is unknown", len(matches), q.MediaCount, strings.Join(ids, ", "))}
	case complete:
		return platform.RemotePost{}, false, nil
	}
	return platform.RemotePost{}, false, windowNotRead(q, examined)
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
