package x

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

// tweet is the part of X's Post object the adapter reads
// (https://docs.x.com/x-api/fundamentals/data-dictionary: id, text,
// created_at, attachments.media_keys, entities.urls).
type tweet struct {
	ID          string `json:"id"`
	Text        string `json:"text"`
	CreatedAt   string `json:"created_at"`
	Attachments struct {
		MediaKeys []string `json:"media_keys"`
	} `json:"attachments"`
	Entities struct {
		URLs []urlEntity `json:"urls"`
	} `json:"entities"`
	// ReferencedTweets name the post this one replies to (type
	// "replied_to"), quotes or reposts.
	ReferencedTweets []struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	} `json:"referenced_tweets"`
}

// urlEntity is one entry of entities.urls: the t.co link in the text
// (url), what it stands for (expanded_url), and for the link X appends
// to a post with media, the media's key.
type urlEntity struct {
	URL         string `json:"url"`
	ExpandedURL string `json:"expanded_url"`
	DisplayURL  string `json:"display_url"`
	MediaKey    string `json:"media_key"`
}

// timelinePage is an answer of GET /2/users/:id/tweets.
type timelinePage struct {
	Data []tweet `json:"data"`
	Meta struct {
		ResultCount int    `json:"result_count"`
		NextToken   string `json:"next_token"`
	} `json:"meta"`
}

// remote converts the post, undoing X's rendering of its text (see
// readableText) and turning media keys into media ids. sent is the text
// as written when known, else "".
func (t tweet) remote(sent string, expand bool) platform.RemotePost {
	p := platform.RemotePost{
		RemoteID: t.ID,
		Text:     readableText(t.Text, t.Entities.URLs, sent, expand),
		URL:      postURL(t.ID),
	}
	if created, err := time.Parse(time.RFC3339Nano, t.CreatedAt); err == nil {
		p.CreatedAt = created.UTC()
	}
	for _, key := range t.Attachments.MediaKeys {
		p.MediaIDs = append(p.MediaIDs, mediaID(key))
	}
	for _, r := range t.ReferencedTweets {
		if r.Type == "replied_to" {
			p.ReplyTo = r.ID
		}
	}
	return p
}

// mediaID turns a media key ("3_1880028106020515840": type 3 photo, 7
// video, 16 animated GIF, then the media id) into the media id that
// UploadMedia returned and PublishRequest.MediaIDs carried.
func mediaID(key string) string {
	if i := strings.IndexByte(key, '_'); i >= 0 {
		return key[i+1:]
	}
	return key
}

// htmlEntities undoes the only escaping X applies to a post's text: "&",
// "<" and ">" come back as "&amp;", "&lt;" and "&gt;" (tweepy/tweepy#1080,
// sferik/twitter-ruby#348). One pass, so a written "&amp;" (returned as
// "&amp;amp;") stays "&amp;".
var htmlEntities = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">")

// readableText undoes X's rendering of a post's text, so that it can be
// fingerprinted like the text that was sent:
//
//   - &amp;, &lt; and &gt; are unescaped;
//   - the t.co link X appends for attached media (an entity with a
//     media_key, or displayed as pic.x.com/…) is removed with the space
//     before it;
//   - with expand, every other t.co link is replaced by its expanded_url.
//     When sent (the text as written) is known: a t.co link the author
//     wrote is kept, and an expanded_url with a scheme the author did not
//     write ("example.com" comes back as "http://example.com") loses it.
//
// Entities are located by their t.co text, searched from the previous
// one's end, not by their indices.
func readableText(text string, urls []urlEntity, sent string, expand bool) string {
	rest := htmlEntities.Replace(text)
	var out []byte
	for _, u := range urls {
		if u.URL == "" {
			continue
		}
		i := strings.Index(rest, u.URL)
		if i < 0 {
			continue
		}
		out = append(out, rest[:i]...)
		rest = rest[i+len(u.URL):]
		switch {
		case u.MediaKey != "" || strings.HasPrefix(u.DisplayURL, "pic.x.com/") || strings.HasPrefix(u.DisplayURL, "pic.twitter.com/"):
			// X's link to the post's own media, appended after a space: not
			// part of what was written.
			if strings.TrimSpace(rest) == "" && len(out) > 0 && out[len(out)-1] == ' ' {
				out = out[:len(out)-1]
			}
		case !expand || u.ExpandedURL == "" || sent != "" && strings.Contains(sent, u.URL):
			out = append(out, u.URL...)
		default:
			out = append(out, asWritten(u.ExpandedURL, sent)...)
		}
	}
	return string(append(out, rest...))
}

// asWritten is expanded without the scheme X added, when sent is known
// and holds the URL only without it.
func asWritten(expanded, sent string) string {
	if sent == "" || strings.Contains(sent, expanded) {
		return expanded
	}
	for _, scheme := range []string{"http://", "https://"} {
		if bare, ok := strings.CutPrefix(expanded, scheme); ok && strings.Contains(sent, bare) {
			return bare
		}
	}
	return expanded
}

// account is the account's user id: Config.UserID, else read once with
// GET /2/users/me (see readMe).
func (c *Client) account(ctx context.Context) (string, error) {
	c.mu.Lock()
	id := c.userID
	c.mu.Unlock()
	if id != "" {
		return id, nil
	}
	me, err := readMe(ctx, c.http, c.base, c.auth())
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.userID = me.ID
	c.mu.Unlock()
	return me.ID, nil
}

// User is the X account an access token acts for, as GET /2/users/me
// answers it (https://docs.x.com/x-api/users/get-my-user: data.id, the
// numeric user id; data.username, the handle without "@"; data.name, the
// display name).
type User struct {
	ID, Username, Name string
}

// Me reads whose the access token is, with GET /2/users/me
// (https://docs.x.com/x-api/users/get-my-user, scope users.read), to
// name an account when it is connected. base is the API root (empty:
// DefaultBaseURL); hc nil means a client without a timeout (deadlines
// come from ctx). It is a read, retried on transient failures (a 5xx, a
// 429 with a short x-rate-limit-reset, a transport error) and then
// *platform.NotPerformed; a refused token is *platform.Unauthorized, any
// other 4xx *platform.Rejected. No error carries the token.
func Me(ctx context.Context, hc *http.Client, base, accessToken string) (User, error) {
	if accessToken == "" {
		return User{}, errors.New("x: the access token is required")
	}
	// The base URL is quoted by its errors: the token is redacted from
	// them too, should it have been pasted there.
	root, err := rootURL("BaseURL", base, DefaultBaseURL)
	if err != nil {
		return User{}, httpcall.Redact(err, accessToken)
	}
	h := httpcall.New(hc)
	h.Describe = func(resp *httpcall.Response) string {
		return httpcall.RedactString(describe(resp), accessToken)
	}
	h.RetryAfter = rateLimitReset
	me, err := readMe(ctx, h, root, httpcall.Bearer(accessToken))
	return me, httpcall.Redact(err, accessToken)
}

// readMe is GET /2/users/me through h, authorised by auth. An answer
// without a numeric user id is NotPerformed: nothing can be known about
// the account from it.
func readMe(ctx context.Context, h *httpcall.Client, base string, auth http.Header) (User, error) {
	const op = "read own user"
	resp, err := h.Read(ctx, op, httpcall.Request{Method: http.MethodGet, URL: base + "/2/users/me", Header: auth})
	if err != nil {
		return User{}, err
	}
	if resp.Status != http.StatusOK {
		return User{}, h.Classify(op, resp, false)
	}
	var me struct {
		Data struct {
			ID       string `json:"id"`
			Username string `json:"username"`
			Name     string `json:"name"`
		} `json:"data"`
	}
	if json.Unmarshal(resp.Body, &me) != nil || !numericID(me.Data.ID) {
		return User{}, &platform.NotPerformed{Status: resp.Status, Message: op + ": the answer carries no user id"}
	}
	return User{ID: me.Data.ID, Username: me.Data.Username, Name: me.Data.Name}, nil
}

// timelineQuery is the query of every timeline read: the fields Lookup
// needs, the media keys, and only the account's own posts (no reposts,
// no replies), https://docs.x.com/x-api/posts/timelines/integrate.
func timelineQuery(maxResults int) url.Values {
	return url.Values{
		"max_results":  {strconv.Itoa(maxResults)},
		"tweet.fields": {"created_at,attachments,entities"},
		"expansions":   {"attachments.media_keys"},
		"exclude":      {"retweets,replies"},
	}
}

// replyQuery is timelineQuery for a thread's part: replies included, each
// with the post it replies to (referenced_tweets, type replied_to).
func replyQuery(maxResults int) url.Values {
	q := timelineQuery(maxResults)
	q.Set("tweet.fields", "created_at,attachments,entities,referenced_tweets")
	q.Set("exclude", "retweets")
	return q
}

// eachPage reads the timeline page by page, newest first, following
// meta.next_token with pagination_token, until fn returns false, there
// is no next page, or maxPages were read. capped reports the last: more
// posts were there to read.
func (c *Client) eachPage(ctx context.Context, q url.Values, maxPages int, fn func([]tweet) bool) (capped bool, err error) {
	const op = "list tweets"
	user, err := c.account(ctx)
	if err != nil {
		return false, err
	}
	u := c.base + "/2/users/" + user + "/tweets"
	for page := 0; ; page++ {
		if page == maxPages {
			return true, nil
		}
		resp, err := c.http.Read(ctx, op, httpcall.Request{Method: http.MethodGet, URL: u, Query: q, Header: c.auth()})
		if err != nil {
			return false, err
		}
		if resp.Status != http.StatusOK {
			return false, c.http.Classify(op, resp, false)
		}
		var p timelinePage
		if err := json.Unmarshal(resp.Body, &p); err != nil {
			return false, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: decode page: %v", op, err)}
		}
		if !fn(p.Data) || p.Meta.NextToken == "" {
			return false, nil
		}
		q = cloneValues(q)
		q.Set("pagination_token", p.Meta.NextToken)
	}
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// Recent returns up to n of the account's newest posts, newest first,
// without reposts and replies, their text as readableText gives it back.
// X serves at least 5 and at most 100 per page.
func (c *Client) Recent(ctx context.Context, n int) ([]platform.RemotePost, error) {
	posts := []platform.RemotePost{}
	if n <= 0 {
		return posts, nil
	}
	// One page more than n needs: X may serve a page short of max_results.
	pages := (n+pageSize-1)/pageSize + 1
	_, err := c.eachPage(ctx, timelineQuery(min(max(n, 5), pageSize)), pages, func(page []tweet) bool {
		for _, t := range page {
			if len(posts) == n {
				return false
			}
			posts = append(posts, t.remote("", true))
		}
		return len(posts) < n
	})
	if err != nil {
		return nil, err
	}
	return posts, nil
}

// Lookup looks for a post carrying q.Fingerprint on the account's
// timeline; X keeps nothing readable by the ledger's handle, so q.Handle
// is not used. Which posts are read:
//
//   - q.After set to a post id: every post newer than it (since_id),
//     whatever the clocks say;
//   - q.After empty: the posts created at or after q.NotBefore
//     (start_time, to the second), or the newest ones when it is zero;
//   - q.After platform.StartOfHistory: the account had no post before the
//     first send, so every post is a candidate.
//
// Pages of 100 are read newest first for at most Config.LookupPages
// pages; a post matches when the fingerprint of its text (X's rendering
// undone with q.Text as the hint, see readableText, and, should that not
// match, with t.co links left as they are) and its media equals
// q.Fingerprint. A thread's part (q.Reply) is looked for among replies
// too, and matches only when it replies to q.Reply.Parent
// (referenced_tweets replied_to). Reading every page without a match is
// "not found"; more pages than allowed is *platform.Inconclusive. A read
// that fails is NotPerformed (httpcall retries it first).
func (c *Client) Lookup(ctx context.Context, q platform.LookupQuery) (platform.RemotePost, bool, error) {
	if q.Fingerprint == "" {
		return platform.RemotePost{}, false, errors.New("x: lookup needs a fingerprint; X posts cannot be found by handle")
	}
	query := timelineQuery(pageSize)
	if q.Reply != nil {
		// A thread's part is a reply, which the plain timeline leaves out.
		query = replyQuery(pageSize)
	}
	window := "the newest posts"
	switch {
	case q.After == platform.StartOfHistory:
		window = "every post (the account had none before the send)"
	case q.After != "":
		if !numericID(q.After) {
			return platform.RemotePost{}, false, fmt.Errorf("x: lookup: After %q is not an X post id", q.After)
		}
		query.Set("since_id", q.After)
		window = "the posts newer than " + q.After
	case !q.NotBefore.IsZero():
		query.Set("start_time", q.NotBefore.UTC().Truncate(time.Second).Format(time.RFC3339))
		window = "the posts since " + q.NotBefore.UTC().Format(time.RFC3339)
	}
	var (
		found    platform.RemotePost
		ok       bool
		examined int
	)
	capped, err := c.eachPage(ctx, query, c.lookupPages, func(page []tweet) bool {
		for _, t := range page {
			examined++
			for _, expand := range []bool{true, false} {
				p := t.remote(q.Text, expand)
				if p.Fingerprint(q.MediaSHA256) == q.Fingerprint && p.RepliesTo(q.Reply) {
					found, ok = p, true
					return false
				}
			}
		}
		return true
	})
	switch {
	case err != nil:
		return platform.RemotePost{}, false, err
	case ok:
		return found, true, nil
	case capped:
		return platform.RemotePost{}, false, &platform.Inconclusive{Message: fmt.Sprintf(
			"lookup: read %d posts (%d pages, the configured maximum) of %s without reaching the end; cannot prove the post absent",
			examined, c.lookupPages, window)}
	}
	return platform.RemotePost{}, false, nil
}
