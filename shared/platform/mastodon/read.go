package mastodon

import (
	"context"
	"regexp"
	"strings"
	"unicode"

	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"golang.org/x/text/unicode/norm"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

const (
	// pageLimit is the largest page GET /api/v1/accounts/:id/statuses serves.
	pageLimit = 40
	// lookupDepth is how many recent statuses a Lookup without After
	// examines at most. A Lookup that reads this many without reaching the
	// start of its window (or the account's first post) cannot prove a post
	// absent, and says so with *platform.Inconclusive instead of "not
	// found": "not found" licenses a re-send.
	lookupDepth = 200
	// lookupAfterCap is the safety cap of a Lookup with After: an account
	// that posted more than this many statuses since the first send is not
	// searched to the end, and the Lookup is Inconclusive.
	lookupAfterCap = 10_000
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
	// InReplyToID is the status this one replies to; null for none.
	InReplyToID *string `json:"in_reply_to_id"`
	// Application is the app the status was posted with; Mastodon shows it
	// to the account's owner only, and not for every client.
	Application *statusApp `json:"application"`
}

type statusApp struct {
	Name string `json:"name"`
}

// appName is the status's application name, "" when not shown.
func (s status) appName() string {
	if s.Application == nil {
		return ""
	}
	return s.Application.Name
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

// repliesTo reports whether the status answers reply's parent, or is no
// reply when reply is nil.
func (s status) repliesTo(reply *platform.ReplyRef) bool {
	parent := ""
	if s.InReplyToID != nil {
		parent = *s.InReplyToID
	}
	return platform.RemotePost{ReplyTo: parent}.RepliesTo(reply)
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
	if s.InReplyToID != nil {
		post.ReplyTo = *s.InReplyToID
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
		if resp.Status != http.StatusOK {
			return c.classify(op, resp, false)
		}
		var page []status
		if err := json.Unmarshal(resp.Body, &page); err != nil {
			return &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: decode page: %v", op, err)}
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

// ourApp is the name of the application the client's token belongs to
// (GET /api/v1/apps/verify_credentials), read once; "" when it cannot be
// read (an older server, a failed read): then no post is told apart by
// its application.
func (c *Client) ourApp(ctx context.Context) string {
	c.mu.Lock()
	app := c.app
	c.mu.Unlock()
	if app != "" {
		return app
	}
	resp, err := c.read(ctx, "verify app", "/api/v1/apps/verify_credentials", nil)
	if err != nil || resp.Status != http.StatusOK {
		return ""
	}
	var out struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(resp.Body, &out) != nil || out.Name == "" {
		return ""
	}
	c.mu.Lock()
	c.app = out.Name
	c.mu.Unlock()
	return out.Name
}

// account returns the account id, resolving it once through
// verify_credentials when the config did not name it.
func (c *Client) account(ctx context.Context) (string, error) {
	c.mu.Lock()
	id := c.accountID
	c.mu.Unlock()
	if id != "" {
		return id, nil
	}
	p, err := c.VerifyCredentials(ctx)
	if err != nil {
		return "", err
	}
	return p.ID, nil
}

// Lookup looks for a status carrying q.Fingerprint and answering what
// q's post answers: its in_reply_to_id is q.Reply.Parent, or null when
// q.Reply is nil (a thread's part k is told from another part of the same
// text by its place in the chain). Mastodon keeps no record readable by
// Idempotency-Key, so q.Handle is not used.
//
// Which statuses are read:
//
//   - With q.After (the id of the account's newest status before the first
//     send, or platform.StartOfHistory): every status newer than it, by id
//     and not by time, with GET /api/v1/accounts/:id/statuses?min_id=. Each
//     page holds the 40 statuses immediately newer than min_id (served
//     newest first); the next page starts after the newest of the page just
//     read, until a page is short. created_at and q.NotBefore play no part.
//     More than lookupAfterCap (10,000) statuses is Inconclusive.
//   - Without q.After: the newest statuses back to q.NotBefore, at most
//     lookupDepth (200); reaching that depth inside the window is
//     Inconclusive (the statuses were read, absence is not proven).
//
// A status matches when the fingerprint of its content, converted back to
// text (htmlToText), and its attachments equals q.Fingerprint. Before
// Lookup answers "not found" (or Inconclusive), every status it read that
// did not match is read again as written, from GET
// /api/v1/statuses/:id/source, and compared again, whether or not the
// HTML conversion said it was lossy: that conversion is exact only as far
// as this package knows Mastodon's rendering, and "not found" licenses a
// re-send. Two exceptions: a status carrying an attachment that is not
// ours (not in q.MediaSHA256), and, when q.Text is given, a status whose
// rendered text has another skeleton than q.Text (see skeleton: what is
// left once everything Mastodon's rendering can change is taken out) —
// whatever its source says, its fingerprint cannot be ours. On a busy
// account the skeleton keeps the source reads to the few look-alikes.
//
// Cost: a window of n statuses costs ceil(n/40) list requests, and, when
// the post is not among them, up to n source requests more (lossy ones
// first; it stops at the first match). Each is one request against the
// account's rate limit (Mastodon: 300 per 5 minutes per account) and one
// round trip within ctx's deadline: a window of a few hundred statuses
// without ours can exhaust either, and the Lookup then fails NotPerformed
// (429 with its Retry-After, or the context's error) rather than answer.
// A status found in the HTML costs no source read.
func (c *Client) Lookup(ctx context.Context, q platform.LookupQuery) (platform.RemotePost, bool, error) {
	if q.Fingerprint == "" {
		return platform.RemotePost{}, false, errors.New("mastodon: lookup needs a fingerprint; mastodon posts cannot be found by handle")
	}
	l := &lookupScan{q: q}
	var (
		capped bool
		err    error
	)
	if q.After != "" {
		capped, err = c.lookupAfter(ctx, l)
	} else {
		capped, err = c.lookupWindow(ctx, l)
	}
	if err != nil {
		return platform.RemotePost{}, false, err
	}
	if !l.ok {
		if err := c.confirmBySource(ctx, l); err != nil {
			return platform.RemotePost{}, false, err
		}
	}
	if l.ok {
		// Restricted to posts made by our application where Mastodon
		// shows it: a post with our text made with another app (the web
		// interface, a phone) may be a copy made by hand. Taking it for
		// ours would leave ours unsent; taking it for not-ours could send
		// a second copy (if our own app changed since). An operator decides.
		if app := l.foundApp; app != "" {
			if ours := c.ourApp(ctx); ours != "" && ours != app {
				return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf(
					"lookup: the post with this text (%s) was made with %q, not with this account's app %q: it may be a copy made by hand",
					l.found.RemoteID, app, ours)}
			}
		}
		return l.found, true, nil
	}
	if capped {
		if q.After != "" {
			return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf(
				"lookup: read %d posts newer than %s without reaching the newest (safety cap %d); cannot prove the post absent",
				l.examined, q.After, lookupAfterCap)}
		}
		start := "no start given"
		if !q.NotBefore.IsZero() {
			start = q.NotBefore.UTC().Format(time.RFC3339)
		}
		return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf(
			"lookup: read the %d newest posts without reaching the start of the window (%s); cannot prove the post absent",
			l.examined, start)}
	}
	return platform.RemotePost{}, false, nil
}

// lookupScan is the state of one Lookup: the query, the match if any, and
// the statuses read that did not match exactly but could be ours.
type lookupScan struct {
	q          platform.LookupQuery
	skel       string
	plain      []string
	found      platform.RemotePost
	foundApp   string // the application found was posted with, if shown
	ok         bool
	examined   int
	candidates []lookupCandidate
}

type lookupCandidate struct {
	post  platform.RemotePost
	lossy bool
	app   string
}

// consider examines one in-window status; false stops the scan (found).
// A status that does not answer what the query's post answers (another
// parent, or a reply where the post is none) is never ours, whatever its
// text: a thread's parts may read alike (see platform.LookupQuery.Reply).
func (l *lookupScan) consider(s status) bool {
	l.examined++
	if !s.repliesTo(l.q.Reply) {
		return true
	}
	if !containsWords(s.Content, l.words()) {
		// Not ours whatever its source says: a plain word of ours is
		// missing from its HTML (see plainWords). No parsing, no source read.
		return true
	}
	post, lossy := s.remote()
	if post.Fingerprint(l.q.MediaSHA256) == l.q.Fingerprint {
		l.found, l.foundApp, l.ok = post, s.appName(), true
		return false
	}
	if allOurs(post.MediaIDs, l.q.MediaSHA256) && (l.q.Text == "" || skeleton(post.Text) == l.skeleton()) {
		l.candidates = append(l.candidates, lookupCandidate{post: post, lossy: lossy, app: s.appName()})
	}
	return true
}

// words are the plain words of the query's text, computed once.
func (l *lookupScan) words() []string {
	if l.plain == nil {
		l.plain = plainWords(l.q.Text)
	}
	return l.plain
}

// skeleton is the skeleton of the query's text, computed once.
func (l *lookupScan) skeleton() string {
	if l.skel == "" {
		l.skel = skeleton(l.q.Text)
	}
	return l.skel
}

// confirmBySource reads the source text of every candidate, those whose
// HTML was lossy first, until one matches.
func (c *Client) confirmBySource(ctx context.Context, l *lookupScan) error {
	slices.SortStableFunc(l.candidates, func(a, b lookupCandidate) int {
		switch {
		case a.lossy == b.lossy:
			return 0
		case a.lossy:
			return -1
		}
		return 1
	})
	for _, cand := range l.candidates {
		text, exists, err := c.source(ctx, cand.post.RemoteID)
		if err != nil {
			return err
		}
		if !exists {
			continue
		}
		post := cand.post
		post.Text = text
		if post.Fingerprint(l.q.MediaSHA256) == l.q.Fingerprint {
			l.found, l.foundApp, l.ok = post, cand.app, true
			return nil
		}
	}
	return nil
}

// lookupWindow reads the newest statuses back to q.NotBefore. capped
// reports that lookupDepth statuses were read without leaving the window.
func (c *Client) lookupWindow(ctx context.Context, l *lookupScan) (capped bool, err error) {
	windowed := false // reached a post older than the window
	err = c.eachStatus(ctx, lookupDepth, func(s status) bool {
		if created := s.createdAt(); !l.q.NotBefore.IsZero() && !created.IsZero() && created.Before(l.q.NotBefore) {
			windowed = true
			return false
		}
		return l.consider(s)
	})
	if err != nil {
		return false, err
	}
	return !l.ok && !windowed && l.examined >= lookupDepth, nil
}

// lookupAfter reads every status newer than q.After, oldest page first,
// paging forward with min_id. capped reports that lookupAfterCap statuses
// were read and more may follow.
func (c *Client) lookupAfter(ctx context.Context, l *lookupScan) (capped bool, err error) {
	const op = "list statuses"
	account, err := c.account(ctx)
	if err != nil {
		return false, err
	}
	path := "/api/v1/accounts/" + url.PathEscape(account) + "/statuses"
	minID := l.q.After
	read := 0
	for {
		if read >= lookupAfterCap {
			return true, nil
		}
		q := url.Values{}
		q.Set("limit", strconv.Itoa(pageLimit))
		q.Set("exclude_reblogs", "true")
		q.Set("min_id", minID)
		resp, err := c.read(ctx, op, path, q)
		if err != nil {
			return false, err
		}
		if resp.Status != http.StatusOK {
			return false, c.classify(op, resp, false)
		}
		var page []status
		if err := json.Unmarshal(resp.Body, &page); err != nil {
			return false, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: decode page: %v", op, err)}
		}
		read += len(page)
		// The page is newest first; the oldest is examined first, so the
		// scan runs forward in time like the paging.
		for i := len(page) - 1; i >= 0; i-- {
			s := page[i]
			if s.isReblog() {
				continue
			}
			if !idLess(minID, s.ID) {
				return false, &platform.Inconclusive{Message: fmt.Sprintf(
					"lookup: asked for posts newer than %s, the server answered with %s; it does not page with min_id", minID, s.ID)}
			}
			if !l.consider(s) {
				return false, nil
			}
		}
		if len(page) < pageLimit {
			return false, nil
		}
		minID = page[0].ID
	}
}

// plainWords are the words of text that Mastodon's HTML rendering keeps
// verbatim: white-space-separated tokens made of ASCII letters and digits
// only (after sentence punctuation around them), so never part of a link
// (whose text may be split across spans), a mention (whose case may be
// rewritten), a hashtag or a custom emoji. Letters and digits need no HTML
// escaping, so the HTML content of our post contains each of them: a
// status whose content lacks one cannot be ours. A busy account's lookup
// thus parses only the look-alikes. The property test
// TestHTMLToTextRoundTripsSandboxRendering checks the rule. Never empty
// (a non-nil slice, possibly without words).
func plainWords(text string) []string {
	words := []string{}
	seen := map[string]bool{}
	for _, tok := range strings.Fields(text) {
		tok = strings.TrimLeft(tok, `("'`)
		tok = strings.TrimRight(tok, `.,:;!?)"'`)
		if len(tok) < 2 || seen[tok] || !asciiAlnum(tok) {
			continue
		}
		seen[tok] = true
		words = append(words, tok)
	}
	return words
}

func asciiAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// containsWords reports whether content contains every word.
func containsWords(content string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(content, w) {
			return false
		}
	}
	return true
}

// skeleton is what Mastodon's rendering of a status and htmlToText leave
// unchanged in a text: its characters in NFC, lower-cased (Mastodon stores
// a mention of a known account with the account's own case), without any
// white space (paragraphs and line breaks are re-rendered), with full-width
// "＃" and "＠" as "#" and "@", and a mention "@user@domain" as "@user"
// (the rendered anchor shows the user only). Two texts with different
// skeletons can never be a post and its rendering; the property test
// TestHTMLToTextRoundTripsSandboxRendering checks that a rendering keeps
// its text's skeleton.
func skeleton(text string) string {
	text = strings.ToLower(norm.NFC.String(text))
	text = strings.NewReplacer("＃", "#", "＠", "@").Replace(text)
	text = mentionDomain.ReplaceAllString(text, "$1")
	var b strings.Builder
	b.Grow(len(text))
	for _, r := range text {
		if !unicode.IsSpace(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mentionDomain matches a mention with its domain, "@user@example.social",
// keeping the user in $1; the domain never ends with a dot or hyphen (a
// full stop after a mention is the sentence's).
var mentionDomain = regexp.MustCompile(`(@[\p{L}\p{N}_.-]+)@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)*`)

// idLess orders Mastodon's numeric string ids (snowflakes, no leading
// zeros): shorter is smaller, equal lengths compare as strings.
func idLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
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
	switch resp.Status {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusGone:
		return "", false, nil
	default:
		return "", false, c.classify(op, resp, false)
	}
	var src struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(resp.Body, &src); err != nil || src.Text == nil {
		return "", false, &platform.NotPerformed{Status: resp.Status, Message: op + ": no text in the answer"}
	}
	return *src.Text, true, nil
}

// Exists reports whether the status is on the server, reading it with
// GET /api/v1/statuses/:id as the account (which sees all of its own
// statuses, whatever their visibility). It is the read-back of an
// idempotent delete, so "no" is said only when the server says so:
//
//   - 200 with the status (a JSON entity with this id): true;
//   - 404 or 410 with a JSON error body, as Mastodon and compatible
//     servers answer for a missing record ({"error":"Record not found"}):
//     false;
//   - a 404 without one (an HTML page from a proxy, a wrong BaseURL), a 200
//     that is not the status, and any other answer: an error. A 5xx, 429
//     or transport failure is retried as every read and then returned as
//     NotPerformed; it never means false.
func (c *Client) Exists(ctx context.Context, remoteID string) (bool, error) {
	const op = "read status"
	if remoteID == "" {
		return false, errors.New("mastodon: exists needs a remote id")
	}
	resp, err := c.read(ctx, op, "/api/v1/statuses/"+url.PathEscape(remoteID), nil)
	if err != nil {
		return false, err
	}
	switch resp.Status {
	case http.StatusOK:
		var s struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(resp.Body, &s); err != nil {
			return false, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s %s: decode answer: %v", op, remoteID, err)}
		}
		if s.ID != remoteID {
			return false, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s %s: the server answered with status %q", op, remoteID, s.ID)}
		}
		return true, nil
	case http.StatusNotFound, http.StatusGone:
		if !apiError(resp) {
			return false, &platform.Rejected{Status: resp.Status, Reason: fmt.Sprintf("http_%d", resp.Status), Message: fmt.Sprintf(
				"%s %s: %d without the API's JSON error body (a proxy's page? check BaseURL); cannot tell whether the status exists",
				op, remoteID, resp.Status)}
		}
		return false, nil
	}
	return false, c.classify(op, resp, false)
}

// apiError reports whether the answer's body is the API's JSON error
// entity, {"error": "..."}.
func apiError(resp *httpcall.Response) bool {
	var e struct {
		Error *string `json:"error"`
	}
	return json.Unmarshal(resp.Body, &e) == nil && e.Error != nil
}
