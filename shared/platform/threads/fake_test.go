package threads

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeThreads is an in-memory Threads Graph API serving the shapes Meta
// documents; each handler names its page. It counts what it committed, so
// tests can assert "exactly one post".
type fakeThreads struct {
	t      *testing.T
	userID string

	mu         sync.Mutex
	token      string // the valid access token
	clock      time.Time
	seq        int
	containers map[string]*fakeContainer
	posts      []*fakePost // newest first
	// Counters of committed effects and of requests by route.
	containersMade, published, deleted int
	calls                              map[string]int
	requests                           []seenRequest
	// created are the ids of the containers made, in order.
	created []string

	// processingReads is how many status reads of a new IMAGE or CAROUSEL
	// container answer IN_PROGRESS before it is final (FINISHED, or ERROR
	// for brokenImage): 1 by default, "IN_PROGRESS then FINISHED". Threads
	// processes image containers asynchronously and Meta recommends
	// waiting before publishing (https://developers.facebook.com/docs/threads/posts,
	// Step 2: "wait on average 30 seconds"); here processing advances with
	// the reads, so tests need no clock.
	processingReads int
	// itemProcessingReads, when not negative, replaces processingReads
	// for carousel item containers (is_carousel_item=true): a carousel
	// whose items take longer than one Publish call allows. -1 by
	// default.
	itemProcessingReads int
	// made counts the containers made by kind: "item" (a carousel item),
	// or the media_type of any other (TEXT, IMAGE, CAROUSEL).
	made map[string]int
	// brokenImage: an image_url containing it ends in status ERROR with
	// error_message brokenMessage, as an image Threads cannot take.
	brokenImage, brokenMessage string

	// Hooks, called with the lock released. before runs ahead of the
	// route (nothing committed): true means it answered. after runs once
	// the route committed its effect (id is the container or media id):
	// true means it answered (or dropped the connection) instead.
	before func(route string, w http.ResponseWriter, r *http.Request) bool
	after  func(route, id string, w http.ResponseWriter, r *http.Request) bool
}

type fakeContainer struct {
	id, text, status, errorMessage string
	mediaID                        string
	// mediaType is the media_type it was made with (TEXT, IMAGE,
	// CAROUSEL); imageURL, alt and carouselItem those of an IMAGE;
	// children the item container ids of a CAROUSEL, in order.
	mediaType, imageURL, alt string
	// replyTo is the reply_to_id it was made with: the post it answers.
	replyTo      string
	carouselItem bool
	children     []string
	// processing reads answer IN_PROGRESS before status becomes final
	// (with finalError as its error_message).
	processing        int
	final, finalError string
}

type fakePost struct {
	id, text, mediaType string
	// repliedTo is the post a reply answers, "" for a thread.
	repliedTo string
	created   time.Time
	// children are a CAROUSEL_ALBUM's item media ids.
	children []string
}

// seenRequest is a request as the fake received it.
type seenRequest struct {
	Method, Path, Auth, ContentType string
	Query                           url.Values
	Form                            url.Values
}

const (
	fakeUserID = "5150"
	fakeToken  = "THAAtoken-1"
)

// fixedNow is the clock of every test client; the fake's posts start an
// hour later and advance a minute each.
var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newFake(t *testing.T) *fakeThreads {
	return &fakeThreads{
		t:          t,
		userID:     fakeUserID,
		token:      fakeToken,
		clock:      fixedNow.Add(time.Hour),
		containers: map[string]*fakeContainer{},
		calls:      map[string]int{},

		processingReads:     1,
		itemProcessingReads: -1,
		made:                map[string]int{},
		brokenMessage:       "INVALID_ASPEC_RATIO",
	}
}

func (f *fakeThreads) nextID(prefix string) string {
	f.seq++
	return fmt.Sprintf("%s%013d", prefix, f.seq)
}

// addPost stores an existing post (newest first) and returns its id.
func (f *fakeThreads) addPost(text, mediaType string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addPostLocked(text, mediaType)
}

func (f *fakeThreads) addPostLocked(text, mediaType string) string {
	return f.addMediaPostLocked(text, mediaType, 0).id
}

// addMediaPostLocked stores a post with n attachments: a CAROUSEL_ALBUM
// gets n children of its own.
func (f *fakeThreads) addMediaPostLocked(text, mediaType string, n int) *fakePost {
	f.clock = f.clock.Add(time.Minute)
	p := &fakePost{id: f.nextID("180"), text: text, mediaType: mediaType, created: f.clock}
	if mediaType == "CAROUSEL_ALBUM" {
		for range n {
			p.children = append(p.children, f.nextID("181"))
		}
	}
	f.posts = append([]*fakePost{p}, f.posts...)
	return p
}

// addMediaPost stores an existing post with n images (IMAGE for one,
// CAROUSEL_ALBUM for more) and returns its id.
func (f *fakeThreads) addMediaPost(text string, n int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addMediaPostLocked(text, mediaTypeOf(n), n).id
}

// mediaTypeOf is the listed media_type of a post with n images.
func mediaTypeOf(n int) string {
	if n == 1 {
		return "IMAGE"
	}
	return "CAROUSEL_ALBUM"
}

// publishedMediaContainer stores the containers of a post with n images
// (item containers and a CAROUSEL, or one IMAGE) and the post they
// became, as an earlier attempt whose answer was lost would have left
// them; it returns the container that was published and the post's id.
func (f *fakeThreads) publishedMediaContainer(text string, n int) (container, media string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &fakeContainer{id: f.nextID("178"), text: text, status: StatusPublished, mediaType: "IMAGE", imageURL: "https://media.example/0.jpg"}
	if n > 1 {
		c.mediaType, c.imageURL = "CAROUSEL", ""
		for i := range n {
			item := &fakeContainer{id: f.nextID("178"), status: StatusFinished, mediaType: "IMAGE", carouselItem: true, imageURL: fmt.Sprintf("https://media.example/%d.jpg", i)}
			f.containers[item.id] = item
			c.children = append(c.children, item.id)
		}
	}
	c.mediaID = f.addMediaPostLocked(text, mediaTypeOf(n), n).id
	f.containers[c.id] = c
	return c.id, c.mediaID
}

// container returns a copy of a stored container.
func (f *fakeThreads) container(id string) fakeContainer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[id]; ok {
		return *c
	}
	return fakeContainer{}
}

// post returns a copy of a stored post.
func (f *fakeThreads) post(id string) fakePost {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.posts {
		if p.id == id {
			return *p
		}
	}
	return fakePost{}
}

// addContainer stores a container with the given status and returns its id.
func (f *fakeThreads) addContainer(text, status string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &fakeContainer{id: f.nextID("178"), text: text, status: status}
	if status == StatusError {
		c.errorMessage = "UNKNOWN"
	}
	f.containers[c.id] = c
	return c.id
}

// publishedContainer stores a container and its post, as an earlier
// attempt whose answer was lost would have left them.
func (f *fakeThreads) publishedContainer(text string) (container, media string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &fakeContainer{id: f.nextID("178"), text: text, status: StatusPublished}
	c.mediaID = f.addPostLocked(text, "TEXT_POST")
	f.containers[c.id] = c
	return c.id, c.mediaID
}

func (f *fakeThreads) postCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.posts)
}

func (f *fakeThreads) counts() (containers, published, deleted int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.containersMade, f.published, f.deleted
}

func (f *fakeThreads) callCount(route string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[route]
}

// madeOf is how many containers of kind ("item", "IMAGE", "CAROUSEL",
// "TEXT") were made.
func (f *fakeThreads) madeOf(kind string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.made[kind]
}

// addItemContainers stores carousel item containers of an earlier
// attempt, one per status (ERROR with brokenMessage), and returns their
// ids in order.
func (f *fakeThreads) addItemContainers(statuses ...string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]string, len(statuses))
	for i, st := range statuses {
		c := &fakeContainer{id: f.nextID("178"), status: st, mediaType: "IMAGE", carouselItem: true, imageURL: fmt.Sprintf("https://media.example/%d.jpg", i)}
		if st == StatusError {
			c.errorMessage = f.brokenMessage
		}
		f.containers[c.id] = c
		ids[i] = c.id
	}
	return ids
}

// setProcessing makes a stored container answer IN_PROGRESS to its next
// reads status reads, then its final status.
func (f *fakeThreads) setProcessing(id string, reads int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[id]; ok {
		c.processing = reads
	}
}

// setStatus sets a stored container's status (EXPIRED after 24 hours
// unpublished), ending any processing.
func (f *fakeThreads) setStatus(id, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[id]; ok {
		c.status, c.final, c.processing = status, "", 0
	}
}

// finishAfter makes a stored container answer IN_PROGRESS to its next
// reads status reads, then FINISHED: an earlier attempt's container
// still being processed.
func (f *fakeThreads) finishAfter(id string, reads int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[id]; ok {
		c.status, c.final, c.finalError, c.processing = StatusInProgress, StatusFinished, "", reads
	}
}

// setErrorMessage sets a stored container's error_message.
func (f *fakeThreads) setErrorMessage(id, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[id]; ok {
		c.errorMessage = msg
	}
}

// setClock sets the fake's clock: the next post is created a minute
// after t.
func (f *fakeThreads) setClock(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock = t
}

// dropPost removes a post from the list, as one Threads does not list
// (yet, or any more).
func (f *fakeThreads) dropPost(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, p := range f.posts {
		if p.id == id {
			f.posts = append(f.posts[:i], f.posts[i+1:]...)
			return
		}
	}
}

// slowItemCreates makes every carousel item creation take d before the
// fake serves it; nothing is made when the client gives up meanwhile.
func (f *fakeThreads) slowItemCreates(d time.Duration) {
	f.before = func(route string, _ http.ResponseWriter, r *http.Request) bool {
		if route != "create" || r.PostForm.Get("is_carousel_item") != "true" {
			return false
		}
		select {
		case <-time.After(d):
			return false
		case <-r.Context().Done():
			return true
		}
	}
}

// madeContainers returns the ids of the containers made, in order.
func (f *fakeThreads) madeContainers() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.created...)
}

func (f *fakeThreads) seen() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.requests...)
}

func (f *fakeThreads) setToken(tok string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.token = tok
}

// graphErr writes a Graph API error object
// (https://developers.facebook.com/docs/graph-api/guides/error-handling,
// Error Responses).
func graphErr(w http.ResponseWriter, status, code, subcode int, typ, msg string) {
	e := map[string]any{"message": msg, "type": typ, "code": code, "fbtrace_id": "AbCdEf123"}
	if subcode != 0 {
		e["error_subcode"] = subcode
	}
	writeJSON(w, status, map[string]any{"error": e})
}

// notExistErr is the Graph API's answer for an unknown object id.
func notExistErr(w http.ResponseWriter, id string) {
	graphErr(w, http.StatusBadRequest, 100, 33, "GraphMethodException", fmt.Sprintf(
		"Unsupported get request. Object with ID '%s' does not exist, cannot be loaded due to missing permissions, or does not support this operation", id))
}

// route names the request: create, publish, list, get, delete, refresh,
// oauth, exchange, me; "" when unknown.
func (f *fakeThreads) route(r *http.Request) (name, id string) {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && p == "/v1.0/"+f.userID+"/threads":
		return "create", ""
	case r.Method == http.MethodPost && p == "/v1.0/"+f.userID+"/threads_publish":
		return "publish", ""
	case r.Method == http.MethodGet && p == "/v1.0/"+f.userID+"/threads":
		return "list", ""
	case r.Method == http.MethodGet && p == "/v1.0/"+f.userID+"/replies":
		return "replies", ""
	case r.Method == http.MethodGet && p == "/v1.0/me":
		return "me", ""
	case r.Method == http.MethodGet && p == "/refresh_access_token":
		return "refresh", ""
	case r.Method == http.MethodPost && p == "/oauth/access_token":
		return "oauth", ""
	case r.Method == http.MethodGet && p == "/access_token":
		return "exchange", ""
	}
	rest, ok := strings.CutPrefix(p, "/v1.0/")
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return "", ""
	}
	switch r.Method {
	case http.MethodGet:
		return "get", rest
	case http.MethodDelete:
		return "delete", rest
	}
	return "", ""
}

func (f *fakeThreads) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		f.t.Errorf("fake: parse form: %v", err)
	}
	route, id := f.route(r)
	f.mu.Lock()
	f.calls[route]++
	form := url.Values{}
	if r.Method == http.MethodPost {
		form = r.PostForm
	}
	f.requests = append(f.requests, seenRequest{
		Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"),
		ContentType: r.Header.Get("Content-Type"), Query: r.URL.Query(), Form: form,
	})
	token := f.token
	f.mu.Unlock()

	if route == "" {
		f.t.Errorf("fake: unexpected request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	if f.before != nil && f.before(route, w, r) {
		return
	}
	switch route {
	case "refresh", "oauth", "exchange":
		f.serveToken(route, w, r)
		return
	}
	// Object endpoints: the token goes in the Authorization header, never
	// in the URL.
	if r.URL.Query().Has("access_token") {
		f.t.Errorf("fake: %s %s carries access_token in its URL", r.Method, r.URL.Path)
	}
	if r.Header.Get("Authorization") != "Bearer "+token {
		graphErr(w, http.StatusBadRequest, 190, 0, "OAuthException", "Error validating access token: Session has expired")
		return
	}
	switch route {
	case "create":
		f.serveCreate(w, r)
	case "publish":
		f.servePublish(w, r)
	case "list":
		f.serveList(w, r)
	case "replies":
		f.serveEdge(w, r, true)
	case "get":
		f.serveGet(w, r, id)
	case "delete":
		f.serveDelete(w, r, id)
	case "me":
		writeJSON(w, http.StatusOK, map[string]any{"id": f.userID, "username": "oncepost_test"})
	}
}

// serveCreate is POST /{threads-user-id}/threads
// (https://developers.facebook.com/docs/threads/posts, Step 1: "Create a
// Threads media container"; answer {"id": "<THREADS_MEDIA_CONTAINER_ID>"}):
//
//   - media_type=TEXT with text;
//   - media_type=IMAGE with image_url ("Required for media_type=IMAGE"),
//     optional text, is_carousel_item=true for a carousel's item
//     (Carousel Posts, Step 1), optional alt_text of at most 1,000
//     characters (https://developers.facebook.com/docs/threads/posts/accessibility;
//     the limit in https://developers.facebook.com/docs/threads/reference/publishing);
//   - media_type=CAROUSEL with children, "a comma-separated list of the
//     media container IDs", "at least 2 and no more than 20" (Carousel
//     Posts, Step 2), and optional text.
//
// An IMAGE or CAROUSEL container starts IN_PROGRESS (see
// processingReads). A carousel whose items are not FINISHED is refused:
// Meta answers it with error subcode 4279004, "carousel child items are
// invalid or expired" (observed, not documented:
// https://github.com/exileum/meta-mcp/pull/4).
func (f *fakeThreads) serveCreate(w http.ResponseWriter, r *http.Request) {
	p := r.PostForm
	c := &fakeContainer{text: p.Get("text"), mediaType: p.Get("media_type"), status: StatusFinished, replyTo: p.Get("reply_to_id")}
	switch c.mediaType {
	case "TEXT":
	case "IMAGE":
		c.imageURL, c.alt, c.carouselItem = p.Get("image_url"), p.Get("alt_text"), p.Get("is_carousel_item") == "true"
		if c.imageURL == "" {
			graphErr(w, http.StatusBadRequest, 100, 0, "OAuthException", "Param image_url is required for media_type IMAGE")
			return
		}
		if len([]rune(c.alt)) > 1000 {
			graphErr(w, http.StatusBadRequest, 100, 0, "OAuthException", "Param alt_text must be at most 1000 characters")
			return
		}
	case "CAROUSEL":
		c.children = strings.Split(p.Get("children"), ",")
		if p.Get("children") == "" || len(c.children) < 2 || len(c.children) > 20 {
			graphErr(w, http.StatusBadRequest, 100, 0, "OAuthException", "Carousels must have at least 2 and no more than 20 children")
			return
		}
	default:
		graphErr(w, http.StatusBadRequest, 100, 0, "OAuthException", "Param media_type must be one of {TEXT, IMAGE, VIDEO, CAROUSEL}")
		return
	}
	f.mu.Lock()
	if c.mediaType != "TEXT" {
		c.status, c.final, c.processing = StatusInProgress, StatusFinished, f.processingReads
		if c.carouselItem && f.itemProcessingReads >= 0 {
			c.processing = f.itemProcessingReads
		}
		if c.mediaType == "IMAGE" && f.brokenImage != "" && strings.Contains(c.imageURL, f.brokenImage) {
			c.final, c.finalError = StatusError, f.brokenMessage
		}
	}
	for _, id := range c.children {
		item, ok := f.containers[id]
		if !ok || !item.carouselItem || item.status != StatusFinished {
			f.mu.Unlock()
			graphErr(w, http.StatusBadRequest, 24, 4279004, "OAuthException", "The carousel child items are invalid or expired")
			return
		}
	}
	c.id = f.nextID("178")
	if c.processing == 0 && c.final != "" {
		c.status, c.errorMessage = c.final, c.finalError
	}
	f.containers[c.id] = c
	f.containersMade++
	f.created = append(f.created, c.id)
	kind := c.mediaType
	if c.carouselItem {
		kind = "item"
	}
	f.made[kind]++
	f.mu.Unlock()
	if f.after != nil && f.after("create", c.id, w, r) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": c.id})
}

// servePublish is POST /{threads-user-id}/threads_publish?creation_id=
// (https://developers.facebook.com/docs/threads/posts, Step 2: "Publish a
// Threads media container"; answer {"id": "<THREADS_MEDIA_ID>"}). Only a
// FINISHED container that is not a carousel item is published: a TEXT
// container becomes a TEXT_POST, an IMAGE one an IMAGE, a CAROUSEL one a
// CAROUSEL_ALBUM with a child per item ("the API will return the carousel
// album's Threads media ID", Carousel Posts, Step 3).
func (f *fakeThreads) servePublish(w http.ResponseWriter, r *http.Request) {
	cid := r.PostForm.Get("creation_id")
	f.mu.Lock()
	c, ok := f.containers[cid]
	if !ok || c.status != StatusFinished || c.carouselItem {
		f.mu.Unlock()
		graphErr(w, http.StatusBadRequest, 100, 0, "OAuthException", "The media container cannot be published")
		return
	}
	switch c.mediaType {
	case "IMAGE":
		c.mediaID = f.addMediaPostLocked(c.text, "IMAGE", 1).id
	case "CAROUSEL":
		c.mediaID = f.addMediaPostLocked(c.text, "CAROUSEL_ALBUM", len(c.children)).id
	default:
		c.mediaID = f.addPostLocked(c.text, "TEXT_POST")
		if c.replyTo != "" {
			f.posts[0].repliedTo = c.replyTo // newest first
		}
	}
	c.status = StatusPublished
	f.published++
	media := c.mediaID
	f.mu.Unlock()
	if f.after != nil && f.after("publish", media, w, r) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": media})
}

func (p *fakePost) json(fields []string) map[string]any {
	all := map[string]any{
		"id":         p.id,
		"media_type": p.mediaType,
		"text":       p.text,
		"timestamp":  p.created.Format("2006-01-02T15:04:05-0700"),
		"permalink":  "https://www.threads.net/@oncepost_test/post/" + p.id,
	}
	if p.repliedTo != "" {
		all["replied_to"] = map[string]any{"id": p.repliedTo}
	}
	if len(p.children) > 0 {
		// An edge read as a field, as the Graph API answers it; Threads
		// lists children "only ... for carousel posts"
		// (https://developers.facebook.com/docs/threads/retrieve-and-discover-posts/retrieve-posts).
		data := make([]map[string]any, len(p.children))
		for i, id := range p.children {
			data[i] = map[string]any{"id": id}
		}
		all["children"] = map[string]any{"data": data}
	}
	out := map[string]any{"id": p.id}
	for _, k := range fields {
		if v, ok := all[k]; ok {
			out[k] = v
		}
	}
	return out
}

// serveList is GET /{threads-user-id}/threads with fields, since, limit
// and the after cursor (https://developers.facebook.com/documentation/threads/reference/user;
// example response with data and paging.cursors in
// https://developers.facebook.com/docs/threads/threads-media). The cursor
// here is an offset; the real one is opaque.
func (f *fakeThreads) serveList(w http.ResponseWriter, r *http.Request) {
	f.serveEdge(w, r, false)
}

// serveEdge is serveList for the user's threads (replies false) or, for
// GET /{threads-user-id}/replies
// (https://developers.facebook.com/docs/threads/retrieve-and-discover-posts/retrieve-replies),
// its replies, each with replied_to.
func (f *fakeThreads) serveEdge(w http.ResponseWriter, r *http.Request, replies bool) {
	q := r.URL.Query()
	limit := 25
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 100 {
			graphErr(w, http.StatusBadRequest, 100, 0, "OAuthException", "Param limit must be a number between 0 and 100")
			return
		}
		limit = n
	}
	var since time.Time
	if s := q.Get("since"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1688540400 {
			graphErr(w, http.StatusBadRequest, 100, 0, "OAuthException", "Param since is invalid")
			return
		}
		since = time.Unix(n, 0)
	}
	offset := 0
	if s := q.Get("after"); s != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(s, "cur-"))
		if err != nil {
			graphErr(w, http.StatusBadRequest, 100, 0, "OAuthException", "Invalid cursor")
			return
		}
		offset = n
	}
	fields := strings.Split(q.Get("fields"), ",")
	f.mu.Lock()
	var window []*fakePost
	for _, p := range f.posts {
		if (since.IsZero() || !p.created.Before(since)) && (p.repliedTo != "") == replies {
			window = append(window, p)
		}
	}
	f.mu.Unlock()
	data := []map[string]any{}
	end := min(offset+limit, len(window))
	for i := offset; i < end; i++ {
		data = append(data, window[i].json(fields))
	}
	paging := map[string]any{"cursors": map[string]any{"before": fmt.Sprintf("cur-%d", offset), "after": fmt.Sprintf("cur-%d", end)}}
	if end < len(window) {
		// The real next link repeats the token in its query.
		paging["next"] = fmt.Sprintf("https://graph.threads.net/v1.0/%s/threads?access_token=%s&after=cur-%d", f.userID, fakeToken, end)
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": data, "paging": paging})
}

// serveGet is GET /{threads-container-id}?fields=status,error_message
// (https://developers.facebook.com/docs/threads/troubleshooting, "Publishing
// Does Not Return a Media ID": EXPIRED, ERROR with an error_message,
// FINISHED, IN_PROGRESS, PUBLISHED; a read of a container still being
// processed advances it, see processingReads) and GET /{threads-media-id}?fields=…
// (https://developers.facebook.com/docs/threads/threads-media, "Retrieve a
// Single Threads Media Object").
func (f *fakeThreads) serveGet(w http.ResponseWriter, r *http.Request, id string) {
	fields := strings.Split(r.URL.Query().Get("fields"), ",")
	f.mu.Lock()
	if c, ok := f.containers[id]; ok {
		if c.status == StatusInProgress && c.final != "" {
			if c.processing > 0 {
				c.processing--
			} else {
				c.status, c.errorMessage = c.final, c.finalError
			}
		}
		out := map[string]any{"id": c.id, "status": c.status}
		if c.errorMessage != "" {
			out["error_message"] = c.errorMessage
		}
		f.mu.Unlock()
		writeJSON(w, http.StatusOK, out)
		return
	}
	for _, p := range f.posts {
		if p.id == id {
			out := p.json(fields)
			f.mu.Unlock()
			writeJSON(w, http.StatusOK, out)
			return
		}
	}
	f.mu.Unlock()
	notExistErr(w, id)
}

// serveDelete is DELETE /{threads-media-id}
// (https://developers.facebook.com/docs/threads/posts/delete-posts;
// answer {"success": true, "deleted_id": "…"}). An unknown id gets the
// Graph API's "does not exist" error.
func (f *fakeThreads) serveDelete(w http.ResponseWriter, r *http.Request, id string) {
	f.mu.Lock()
	for i, p := range f.posts {
		if p.id == id {
			f.posts = append(f.posts[:i], f.posts[i+1:]...)
			f.deleted++
			f.mu.Unlock()
			if f.after != nil && f.after("delete", id, w, r) {
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"success": true, "deleted_id": id})
			return
		}
	}
	f.mu.Unlock()
	notExistErr(w, id)
}

// Test app of the OAuth endpoints.
const (
	testClientID     = "990602627938098"
	testClientSecret = "a1b2C3D4secret"
	testRedirectURI  = "https://oncepost.example/threads/callback"
	testCode         = "AQBcode-xyz"
)

// serveToken serves the token endpoints:
//   - GET /refresh_access_token?grant_type=th_refresh_token&access_token=
//     (https://developers.facebook.com/docs/threads/get-started/long-lived-tokens,
//     "Refresh a Long-Lived Token": {"access_token","token_type","expires_in"});
//   - POST /oauth/access_token (form client_id, client_secret, code,
//     grant_type=authorization_code, redirect_uri;
//     https://developers.facebook.com/docs/threads/get-started/get-access-tokens-and-permissions,
//     Step 2: {"access_token","user_id"});
//   - GET /access_token?grant_type=th_exchange_token&client_secret&access_token
//     (long-lived-tokens page, "Get a Long-Lived Token").
func (f *fakeThreads) serveToken(route string, w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch route {
	case "refresh":
		f.mu.Lock()
		ok := q.Get("grant_type") == "th_refresh_token" && q.Get("access_token") == f.token
		next := ""
		if ok {
			f.seq++
			next = fmt.Sprintf("THAAtoken-%d", f.seq+1)
			f.token = next
		}
		f.mu.Unlock()
		if !ok {
			graphErr(w, http.StatusBadRequest, 190, 0, "OAuthException", "Error validating access token: the session is invalid")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"access_token": next, "token_type": "bearer", "expires_in": 5184000})
	case "oauth":
		p := r.PostForm
		if p.Get("client_id") != testClientID || p.Get("client_secret") != testClientSecret ||
			p.Get("grant_type") != "authorization_code" || p.Get("redirect_uri") != testRedirectURI || p.Get("code") != testCode {
			graphErr(w, http.StatusBadRequest, 100, 36007, "OAuthException", "Invalid verification code format.")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"access_token": "THshort-1", "user_id": 5150})
	case "exchange":
		if q.Get("grant_type") != "th_exchange_token" || q.Get("client_secret") != testClientSecret || q.Get("access_token") != "THshort-1" {
			graphErr(w, http.StatusBadRequest, 190, 0, "OAuthException", "Invalid OAuth access token")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"access_token": "THlong-1", "token_type": "bearer", "expires_in": 5183944})
	}
}
