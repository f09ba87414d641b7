package x

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/adaptertest"
)

// fixedNow is the clock of every test client.
var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Secrets every test client and token server uses; TestMain checks that
// none of them appears in any error a test produced.
const (
	testAccess       = "access-token-1f7c"
	testRefresh      = "refresh-token-9d2e"
	testClientSecret = "client-secret-5b8a"
	testUserID       = "2244994945"
)

var secretValues = []string{testAccess, testRefresh, testClientSecret, "access-token-2-77aa", "refresh-token-2-66bb", "auth-code-3c3c", "verifier-4d4d"}

// seenErrors collects every error that went through outcomeOf.
var seenErrors adaptertest.Errors

// TestMain fails the run when any error produced by any test carries a
// token, a secret, an authorization code or a PKCE verifier.
func TestMain(m *testing.M) {
	os.Exit(adaptertest.Main(m, &seenErrors, secretValues, 20))
}

// The shared test scaffolding (adaptertest), by the names this package's
// tests use.
var (
	newServer  = adaptertest.LocalServer
	refusedURL = adaptertest.ClosedURL
)

// outcome is an error reduced to its failure class and fields, for cmp.
type outcome = adaptertest.Outcome

// newClient returns a client for baseURL with its own transport, a fixed
// clock, fast read backoff and fast media polling.
func newClient(t *testing.T, baseURL string, edit ...func(*Config)) *Client {
	t.Helper()
	cfg := Config{
		BaseURL:      baseURL,
		UserID:       testUserID,
		Credential:   platform.Credential{AccessToken: testAccess, RefreshToken: testRefresh},
		ClientID:     "client-id",
		ClientSecret: testClientSecret,
		HTTPClient:   adaptertest.HTTPClient(t),
	}
	for _, e := range edit {
		e(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.http.Now = func() time.Time { return fixedNow }
	c.http.ReadBackoff = time.Millisecond
	c.pollWait = func(int) time.Duration { return time.Millisecond }
	return c
}

// outcomeOf classifies err and records its text for the secret check.
// Messages are kept for Rejected only.
func outcomeOf(t *testing.T, err error) outcome {
	t.Helper()
	seenErrors.Add(err)
	return adaptertest.OutcomeOf(t, err)
}

// writeJSON answers with the Content-Type X sends.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	adaptertest.WriteJSON(w, status, v)
}

// problemJSON is X's error body (RFC 7807 problem details), as
// https://docs.x.com/x-api/fundamentals/response-codes-and-errors shows.
func problemJSON(status int, title, detail string) map[string]any {
	return map[string]any{"title": title, "detail": detail, "type": "about:blank", "status": status}
}

// fakeX is a stateful fake of the X API v2 for one account, following the
// shapes of the documentation pages cited on each route below.
type fakeX struct {
	t *testing.T

	mu       sync.Mutex
	token    string // the access token it accepts
	posts    []fakePost
	nextID   uint64
	creates  int
	deleted  map[string]int // DELETE answered 200, per id
	gone404  map[string]int // DELETE answered 404, per id
	reads    []string       // query strings of timeline reads
	media    map[string]*fakeMedia
	nextMID  uint64
	requests []string // "METHOD path" of every request

	// states are the processing states STATUS reports, in turn, after a
	// finalize that answered pending; empty means no processing_info.
	states []string
	// afterCreate, when set, runs after a create was stored and answers
	// instead of the 201 when it returns true.
	afterCreate func(w http.ResponseWriter, r *http.Request) bool
	// createdAt is the clock of stored posts.
	createdAt time.Time
}

type fakePost struct {
	id        string
	text      string
	mediaIDs  []string
	createdAt time.Time
	// inReplyTo is the post it replies to, "" for none.
	inReplyTo string
}

type fakeMedia struct {
	mediaType, category string
	total               int
	data                []byte
	segments            []int
	finalized           bool
	alt                 string
}

func newFakeX(t *testing.T) *fakeX {
	return &fakeX{t: t, token: testAccess, nextID: 1846000000000000100, nextMID: 1880028106020515840,
		deleted: map[string]int{}, gone404: map[string]int{}, media: map[string]*fakeMedia{}, createdAt: fixedNow.Add(-time.Minute)}
}

// seed stores posts as if created earlier, oldest first.
func (f *fakeX) seed(texts ...string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for _, text := range texts {
		ids = append(ids, f.store(text, nil))
	}
	return ids
}

func (f *fakeX) store(text string, media []string) string {
	f.nextID++
	id := strconv.FormatUint(f.nextID, 10)
	f.createdAt = f.createdAt.Add(time.Second)
	f.posts = append(f.posts, fakePost{id: id, text: text, mediaIDs: media, createdAt: f.createdAt})
	return id
}

func (f *fakeX) postCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.posts)
}

var userTweetsPath = regexp.MustCompile(`^/2/users/([0-9]+)/tweets$`)

func (f *fakeX) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	token := f.token
	f.mu.Unlock()
	if r.URL.Path != "/2/oauth2/token" && r.Header.Get("Authorization") != "Bearer "+token {
		// https://docs.x.com/x-api/fundamentals/response-codes-and-errors: 401.
		writeJSON(w, http.StatusUnauthorized, problemJSON(401, "Unauthorized", "Unauthorized"))
		return
	}
	switch p := r.URL.Path; {
	case r.Method == http.MethodPost && p == "/2/tweets":
		f.create(w, r)
	case r.Method == http.MethodGet && userTweetsPath.MatchString(p):
		f.timeline(w, r, userTweetsPath.FindStringSubmatch(p)[1])
	case r.Method == http.MethodGet && p == "/2/users/me":
		// https://docs.x.com/x-api/users/get-my-user: {"data": {"id", "name", "username"}}.
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": testUserID, "name": "Once Post", "username": "oncepost"}})
	case strings.HasPrefix(p, "/2/tweets/") && r.Method == http.MethodGet:
		f.lookupOne(w, strings.TrimPrefix(p, "/2/tweets/"))
	case strings.HasPrefix(p, "/2/tweets/") && r.Method == http.MethodDelete:
		f.delete(w, strings.TrimPrefix(p, "/2/tweets/"))
	case strings.HasPrefix(p, "/2/media/"):
		f.mediaRoute(w, r)
	default:
		f.t.Errorf("fake X: unexpected request %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusNotFound)
	}
}

// create is POST /2/tweets (https://docs.x.com/x-api/posts/create-post,
// https://docs.x.com/x-api/posts/manage-tweets/quickstart): a JSON body
// with text and media.media_ids, answered 201 {"data": {"id", "text"}};
// a text the account posted already is refused with the duplicate-content
// 403 (akrherz/iembot#163, sferik/x-ruby#24).
func (f *fakeX) create(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Text  *string `json:"text"`
		Media *struct {
			MediaIDs []string `json:"media_ids"`
		} `json:"media"`
		Reply *struct {
			InReplyToTweetID string `json:"in_reply_to_tweet_id"`
		} `json:"reply"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || body.Text == nil {
		writeJSON(w, http.StatusBadRequest, problemJSON(400, "Invalid Request", "One or more parameters to your request was invalid."))
		return
	}
	var media []string
	if body.Media != nil {
		media = body.Media.MediaIDs
	}
	f.mu.Lock()
	f.creates++
	for _, p := range f.posts {
		if p.text == *body.Text && *body.Text != "" {
			f.mu.Unlock()
			writeJSON(w, http.StatusForbidden, problemJSON(403, "Forbidden", "You are not allowed to create a Tweet with duplicate content."))
			return
		}
	}
	id := f.store(*body.Text, media)
	if body.Reply != nil {
		f.posts[len(f.posts)-1].inReplyTo = body.Reply.InReplyToTweetID
	}
	after := f.afterCreate
	f.mu.Unlock()
	if after != nil && after(w, r) {
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"data": map[string]any{"id": id, "text": *body.Text}})
}

// fakeURL is what the fake wraps in t.co links: URLs with a scheme and
// bare .com/.org/.net domains (expanded with http://, as X does).
var fakeURL = regexp.MustCompile(`https?://[^\s]+|\b[a-z0-9-]+\.(?:com|org|net)\b`)

// render is the post as GET /2/users/:id/tweets returns it
// (https://docs.x.com/x-api/posts/timelines/integrate, fields per
// https://docs.x.com/x-api/fundamentals/data-dictionary): "&", "<" and ">"
// escaped, URLs replaced by t.co links listed in entities.urls with their
// expanded_url, and for media a trailing t.co link with its media_key,
// plus attachments.media_keys ("3_<media id>").
func (p fakePost) render() map[string]any {
	var urls []map[string]any
	n := 0
	text := fakeURL.ReplaceAllStringFunc(p.text, func(u string) string {
		n++
		tco := fmt.Sprintf("https://t.co/%s%d", p.id[len(p.id)-4:], n)
		expanded := u
		if !strings.Contains(u, "://") {
			expanded = "http://" + u
		}
		urls = append(urls, map[string]any{"url": tco, "expanded_url": expanded, "display_url": strings.TrimPrefix(strings.TrimPrefix(expanded, "https://"), "http://")})
		return tco
	})
	text = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(text)
	t := map[string]any{"id": p.id, "created_at": p.createdAt.UTC().Format("2006-01-02T15:04:05.000Z"), "edit_history_tweet_ids": []string{p.id}}
	if len(p.mediaIDs) > 0 {
		var keys []string
		for _, m := range p.mediaIDs {
			keys = append(keys, "3_"+m)
		}
		tco := "https://t.co/m" + p.id[len(p.id)-4:]
		urls = append(urls, map[string]any{"url": tco, "expanded_url": "https://x.com/oncepost/status/" + p.id + "/photo/1",
			"display_url": "pic.x.com/m" + p.id[len(p.id)-4:], "media_key": keys[0]})
		text = strings.TrimSpace(text + " " + tco)
		t["attachments"] = map[string]any{"media_keys": keys}
	}
	t["text"] = text
	if p.inReplyTo != "" {
		t["referenced_tweets"] = []map[string]any{{"type": "replied_to", "id": p.inReplyTo}}
	}
	if len(urls) > 0 {
		t["entities"] = map[string]any{"urls": urls}
	}
	return t
}

// timeline is GET /2/users/:id/tweets
// (https://docs.x.com/x-api/posts/timelines/integrate): newest first,
// max_results 5–100, since_id and start_time bounds, exclude, paging with
// pagination_token and meta.next_token.
func (f *fakeX) timeline(w http.ResponseWriter, r *http.Request, user string) {
	q := r.URL.Query()
	if user != testUserID {
		writeJSON(w, http.StatusBadRequest, problemJSON(400, "Invalid Request", "unknown user"))
		return
	}
	size, err := strconv.Atoi(q.Get("max_results"))
	if err != nil || size < 5 || size > 100 {
		writeJSON(w, http.StatusBadRequest, problemJSON(400, "Invalid Request", "The `max_results` query parameter value is not between 5 and 100"))
		return
	}
	replies := q.Get("exclude") == "retweets" && strings.Contains(q.Get("tweet.fields"), "referenced_tweets")
	if q.Get("exclude") != "retweets,replies" && !replies || !strings.Contains(q.Get("tweet.fields"), "entities") || q.Get("expansions") != "attachments.media_keys" {
		f.t.Errorf("timeline query %q lacks exclude, entities or the media expansion", r.URL.RawQuery)
	}
	f.mu.Lock()
	f.reads = append(f.reads, r.URL.RawQuery)
	var list []fakePost
	for i := len(f.posts) - 1; i >= 0; i-- {
		p := f.posts[i]
		if s := q.Get("since_id"); s != "" && !idLess(s, p.id) {
			continue
		}
		if p.inReplyTo != "" && !replies {
			continue
		}
		if s := q.Get("start_time"); s != "" {
			start, err := time.Parse(time.RFC3339, s)
			if err != nil {
				f.mu.Unlock()
				writeJSON(w, http.StatusBadRequest, problemJSON(400, "Invalid Request", "bad start_time"))
				return
			}
			if p.createdAt.Before(start) {
				continue
			}
		}
		list = append(list, p)
	}
	f.mu.Unlock()
	offset := 0
	if tok := q.Get("pagination_token"); tok != "" {
		offset, _ = strconv.Atoi(strings.TrimPrefix(tok, "next-"))
	}
	end := min(offset+size, len(list))
	data := []map[string]any{}
	for _, p := range list[min(offset, len(list)):end] {
		data = append(data, p.render())
	}
	meta := map[string]any{"result_count": len(data)}
	if len(data) > 0 {
		meta["newest_id"], meta["oldest_id"] = data[0]["id"], data[len(data)-1]["id"]
	}
	if end < len(list) {
		meta["next_token"] = fmt.Sprintf("next-%d", end)
	}
	ans := map[string]any{"meta": meta}
	if len(data) > 0 {
		ans["data"] = data
	}
	writeJSON(w, http.StatusOK, ans)
}

func idLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// lookupOne is GET /2/tweets/:id (https://docs.x.com/x-api/posts/get-post-by-id):
// the post, or 200 with a resource-not-found error ("Not Found Error",
// https://docs.x.com/x-api/fundamentals/response-codes-and-errors).
func (f *fakeX) lookupOne(w http.ResponseWriter, id string) {
	f.mu.Lock()
	i := slices.IndexFunc(f.posts, func(p fakePost) bool { return p.id == id })
	var p fakePost
	if i >= 0 {
		p = f.posts[i]
	}
	f.mu.Unlock()
	if i < 0 {
		writeJSON(w, http.StatusOK, map[string]any{"errors": []map[string]any{{
			"value": id, "detail": "Could not find tweet with id: [" + id + "].", "title": "Not Found Error",
			"resource_type": "tweet", "parameter": "id", "resource_id": id,
			"type": "https://api.x.com/2/problems/resource-not-found",
		}}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": p.id, "text": p.text}})
}

// delete is DELETE /2/tweets/:id (https://docs.x.com/x-api/posts/delete-post):
// 200 {"data": {"deleted": true}}; a post that does not exist is 404
// (https://docs.x.com/x-api/fundamentals/response-codes-and-errors).
func (f *fakeX) delete(w http.ResponseWriter, id string) {
	f.mu.Lock()
	i := slices.IndexFunc(f.posts, func(p fakePost) bool { return p.id == id })
	if i < 0 {
		f.gone404[id]++
		f.mu.Unlock()
		writeJSON(w, http.StatusNotFound, map[string]any{"title": "Not Found Error", "detail": "Could not find tweet with id: [" + id + "].",
			"type": "https://api.x.com/2/problems/resource-not-found", "status": 404})
		return
	}
	f.posts = slices.Delete(f.posts, i, i+1)
	f.deleted[id]++
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"deleted": true}})
}

var mediaPath = regexp.MustCompile(`^/2/media/upload/([0-9]+)/(append|finalize)$`)

// mediaRoute is X's v2 media upload: initialize
// (https://docs.x.com/x-api/media/initialize-media-upload: JSON
// media_type, total_bytes, media_category → {"data": {"id", "media_key",
// "expires_after_secs"}}), append (https://docs.x.com/x-api/media/append-media-upload:
// multipart segment_index and media), finalize
// (https://docs.x.com/x-api/media/finalize-media-upload: the media, with
// processing_info while X processes it), status
// (https://docs.x.com/x-api/media/get-media-upload-status:
// ?command=STATUS&media_id=, processing_info.state pending, in_progress,
// failed or succeeded) and metadata
// (https://docs.x.com/x-api/media/create-media-metadata: {"id",
// "metadata": {"alt_text": {"text"}}}).
func (f *fakeX) mediaRoute(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch m := mediaPath.FindStringSubmatch(r.URL.Path); {
	case r.Method == http.MethodPost && r.URL.Path == "/2/media/upload/initialize":
		var body struct {
			MediaType     string `json:"media_type"`
			TotalBytes    int    `json:"total_bytes"`
			MediaCategory string `json:"media_category"`
		}
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil || r.Header.Get("Content-Type") != "application/json" {
			writeJSON(w, http.StatusBadRequest, problemJSON(400, "Invalid Request", "bad initialize body"))
			return
		}
		f.nextMID++
		id := strconv.FormatUint(f.nextMID, 10)
		f.media[id] = &fakeMedia{mediaType: body.MediaType, category: body.MediaCategory, total: body.TotalBytes}
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": id, "media_key": "3_" + id, "expires_after_secs": 86400}})
	case r.Method == http.MethodPost && m != nil && m[2] == "append":
		md := f.media[m[1]]
		if md == nil {
			writeJSON(w, http.StatusBadRequest, problemJSON(400, "Invalid Request", "unknown media"))
			return
		}
		if err := r.ParseMultipartForm(16 << 20); err != nil {
			writeJSON(w, http.StatusBadRequest, problemJSON(400, "Invalid Request", "bad multipart"))
			return
		}
		seg, _ := strconv.Atoi(r.FormValue("segment_index"))
		file, _, err := r.FormFile("media")
		if err != nil {
			writeJSON(w, http.StatusBadRequest, problemJSON(400, "Invalid Request", "no media part"))
			return
		}
		data, _ := io.ReadAll(file)
		md.data = append(md.data, data...)
		md.segments = append(md.segments, seg)
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"expires_at": fixedNow.Add(24 * time.Hour).Unix()}})
	case r.Method == http.MethodPost && m != nil && m[2] == "finalize":
		md := f.media[m[1]]
		if md == nil || len(md.data) != md.total {
			writeJSON(w, http.StatusBadRequest, problemJSON(400, "Invalid Request", "incomplete upload"))
			return
		}
		md.finalized = true
		data := map[string]any{"id": m[1], "media_key": "3_" + m[1], "size": md.total, "expires_after_secs": 86400}
		if len(f.states) > 0 {
			data["processing_info"] = map[string]any{"state": "pending", "check_after_secs": 1}
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": data})
	case r.Method == http.MethodGet && r.URL.Path == "/2/media/upload":
		id := r.URL.Query().Get("media_id")
		if r.URL.Query().Get("command") != "STATUS" || f.media[id] == nil || len(f.states) == 0 {
			writeJSON(w, http.StatusBadRequest, problemJSON(400, "Invalid Request", "bad status request"))
			return
		}
		state := f.states[0]
		if len(f.states) > 1 {
			f.states = f.states[1:]
		}
		info := map[string]any{"state": state, "check_after_secs": 1, "progress_percent": 50}
		if state == "failed" {
			info["error"] = map[string]any{"code": 1, "name": "InvalidMedia", "message": "Unsupported image format"}
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": id, "media_key": "3_" + id, "processing_info": info}})
	case r.Method == http.MethodPost && r.URL.Path == "/2/media/metadata":
		var body struct {
			ID       string `json:"id"`
			Metadata struct {
				AltText struct {
					Text string `json:"text"`
				} `json:"alt_text"`
			} `json:"metadata"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || f.media[body.ID] == nil {
			writeJSON(w, http.StatusBadRequest, problemJSON(400, "Invalid Request", "bad metadata"))
			return
		}
		f.media[body.ID].alt = body.Metadata.AltText.Text
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": body.ID, "associated_metadata": map[string]any{}}})
	default:
		f.t.Errorf("fake X: unexpected media request %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusNotFound)
	}
}
