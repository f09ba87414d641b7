package linkedin

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/adaptertest"
)

// Secrets of the test credential; TestNoSecretInErrors searches every
// error for them.
const (
	testAccess       = "li-access-5ecret-AAA"
	testRefresh      = "li-refresh-5ecret-BBB"
	testClientSecret = "li-client-5ecret-CCC"
	testPerson       = "urn:li:person:8675309"
	testOrg          = "urn:li:organization:2414183"
)

// fixedNow is the clock of every test client and of the fake's first post.
var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// The shared test scaffolding (adaptertest), by the names this package's
// tests use.
var (
	newServer  = adaptertest.LocalServer
	refusedURL = adaptertest.ClosedURL
	writeJSON  = adaptertest.WriteJSON
)

// outcome is an error reduced to its failure class and fields, for cmp.
type outcome = adaptertest.Outcome

// newClient returns a client for baseURL posting as the organization (so
// its posts are readable by default), with its own transport, a fixed
// clock and fast read backoff.
func newClient(t *testing.T, baseURL string, edit ...func(*Config)) *Client {
	t.Helper()
	cfg := Config{
		BaseURL:      baseURL,
		Author:       testOrg,
		Credential:   platform.Credential{AccessToken: testAccess, RefreshToken: testRefresh},
		ClientID:     "client-id",
		ClientSecret: testClientSecret,
		TokenURL:     baseURL + "/oauth/v2/accessToken",
		HTTPClient:   adaptertest.HTTPClient(t),
	}
	for _, e := range edit {
		e(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.now = func() time.Time { return fixedNow }
	c.http.ReadBackoff = time.Millisecond
	return c
}

// outcomeOf classifies err; it fails the test unless err is nil or of
// exactly one failure class. The tests compare the class and its fields,
// not the message.
func outcomeOf(t *testing.T, err error) outcome {
	t.Helper()
	return adaptertest.OutcomeOf(t, err).WithoutMessage()
}

// fakePost is a post the fake keeps, its commentary and content as they
// were sent.
type fakePost struct {
	ID             string
	Author         string
	Commentary     string
	CreatedAt      int64
	LastModifiedAt int64
	// MediaID is an image of a post written elsewhere (a seed).
	MediaID string
	// Content is the create's "content", as sent.
	Content map[string]any
}

// entity renders the post as the Posts API does (posts-api, "Post
// Schema"; GET /rest/posts/{urn} and the elements of the author finder,
// https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/posts-api).
func (p *fakePost) entity() map[string]any {
	e := map[string]any{
		"id":                        p.ID,
		"author":                    p.Author,
		"commentary":                p.Commentary,
		"visibility":                "PUBLIC",
		"lifecycleState":            "PUBLISHED",
		"isReshareDisabledByAuthor": false,
		"createdAt":                 p.CreatedAt,
		"publishedAt":               p.CreatedAt,
		"lastModifiedAt":            p.LastModifiedAt,
		"distribution":              map[string]any{"feedDistribution": "MAIN_FEED", "targetEntities": []any{}, "thirdPartyDistributionChannels": []any{}},
		"lifecycleStateInfo":        map[string]any{"isEditedByAuthor": p.LastModifiedAt != p.CreatedAt},
	}
	switch {
	case p.Content != nil:
		e["content"] = p.Content
	case p.MediaID != "":
		e["content"] = map[string]any{"media": map[string]any{"id": p.MediaID, "altText": ""}}
	}
	return e
}

// fakeImage is an image the fake keeps (Images API).
type fakeImage struct {
	URN   string // urn:li:image:<Key>
	Key   string
	Owner string
	// Status is WAITING_UPLOAD until the bytes arrive, then PROCESSING,
	// then AVAILABLE or PROCESSING_FAILED.
	Status string
	// Sig is the signed "m" parameter of its upload URL.
	Sig  string
	Data []byte
	// Reads counts the reads served while it was PROCESSING.
	Reads int
}

// fakeRequest is a request as the fake received it, and when.
type fakeRequest struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
	At                     time.Time
}

// createFault is what the fake does with a create after storing it;
// answered reports whether it wrote the answer.
type createFault func(w http.ResponseWriter, r *http.Request) (answered bool)

// fakeLinkedIn is an httptest stand-in for the Posts and Images APIs that
// keeps posts and images, following the documented shapes:
//
//   - POST /rest/posts → 201, empty body, the URN in x-restli-id
//     (posts-api, "Create a Text-Only Post"); a "content" is kept as sent
//     and every image it names (content.media.id, one; or
//     content.multiImage.images[].id, 2 to 20) must be one of the fake's,
//     owned by the author, else 422 (posts-api, "Create an Image Post";
//     MultiImage API: "minimum of 2 images and maximum of 20 images.
//     Please ensure that all images being used are owned by the author",
//     https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/multiimage-post-api);
//   - GET /rest/posts?author=…&q=author&count=…&start=…&sortBy=LAST_MODIFIED
//     with X-RestLi-Method: FINDER → {"elements": […], "paging": {"start",
//     "count", "links"}}, most recently modified first (posts-api, "Find
//     Posts by Authors"; paging per
//     https://learn.microsoft.com/en-us/linkedin/shared/api-guide/concepts/pagination);
//   - GET /rest/posts/{encoded urn} → the post, or 404 (posts-api, "Get
//     Posts by URN"; Rest.li 2.0 keys URL-encoded, ":" as %3A,
//     https://learn.microsoft.com/en-us/linkedin/shared/api-guide/concepts/protocol-version);
//   - DELETE /rest/posts/{encoded urn} → 204; "Post deletions are
//     idempotent": a post already gone answers AgainStatus (204 or 404).
//
// and, after the Images API
// (https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/images-api):
//
//   - POST /rest/images?action=initializeUpload with
//     {"initializeUploadRequest": {"owner": <author>}} → 200
//     {"value": {"uploadUrlExpiresAt", "uploadUrl", "image"}}, the image
//     WAITING_UPLOAD; another owner is 403;
//   - PUT <uploadUrl> (on this server, the path and signed query of the
//     page's www.linkedin.com/dms-uploads/… example) with the bearer
//     token and the bytes → 201, the image PROCESSING; a wrong signature
//     is 403, a second upload 400;
//   - GET /rest/images/{encoded urn} → {"owner", "status", "id", …}:
//     PROCESSING for ProcessingPolls reads, then AVAILABLE (with
//     downloadUrl), or FinalStatus (PROCESSING_FAILED).
//
// Every API request must carry the bearer token, LinkedIn-Version and
// X-Restli-Protocol-Version: 2.0.0 (posts-api and images-api: "All APIs
// require the request header LinkedIn-Version … X-Restli-Protocol-Version:
// 2.0.0"); the upload carries the bearer token only (the images-api
// example: curl --upload-file with an Authorization header).
type fakeLinkedIn struct {
	t       *testing.T
	author  string
	token   string
	version string

	mu    sync.Mutex
	clock time.Time
	seq   int
	posts []*fakePost
	// CreateFault, when set, runs after a create was stored.
	CreateFault createFault
	// ReadStatus, when set, answers every GET with it and an error body.
	ReadStatus int
	// MaxCount caps the count a finder page serves (0: as asked).
	MaxCount int
	// AgainStatus answers a DELETE of a post already gone (0: 204).
	AgainStatus int

	creates, removed, deletes, finds, gets int
	bodies                                 []map[string]any

	images []*fakeImage
	// InitFault, when set, runs after initializeUpload registered an
	// image; UploadFault after an upload stored the bytes.
	InitFault, UploadFault createFault
	// ProcessingPolls is how many reads of an uploaded image answer
	// PROCESSING before its final status.
	ProcessingPolls int
	// FinalStatus, when set, is the status an uploaded image ends in
	// instead of AVAILABLE (PROCESSING_FAILED).
	FinalStatus string
	// ImageReadStatus, when set, answers every image read with it.
	ImageReadStatus int
	// UploadBase, when set, is the scheme and host of the upload URLs
	// the fake answers instead of its own.
	UploadBase string

	inits, uploads, imageReads int
	requests                   []fakeRequest
}

func newFake(t *testing.T, author string) (*fakeLinkedIn, *httptest.Server) {
	f := &fakeLinkedIn{t: t, author: author, token: testAccess, version: DefaultAPIVersion, clock: fixedNow}
	return f, newServer(t, f)
}

// add stores a post written elsewhere (commentary in little text),
// created at created and last modified at modified.
func (f *fakeLinkedIn) add(commentary string, created, modified time.Time) *fakePost {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	p := &fakePost{
		ID: fmt.Sprintf("urn:li:share:%d", 7100000000000000000+f.seq), Author: f.author, Commentary: commentary,
		CreatedAt: created.UnixMilli(), LastModifiedAt: modified.UnixMilli(),
	}
	f.posts = append(f.posts, p)
	return p
}

// stored returns the posts the fake holds, oldest first.
func (f *fakeLinkedIn) stored() []fakePost {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []fakePost{}
	for _, p := range f.posts {
		out = append(out, *p)
	}
	return out
}

func (f *fakeLinkedIn) counts() (creates, removed, deletes, finds, gets int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates, f.removed, f.deletes, f.finds, f.gets
}

func (f *fakeLinkedIn) find(urn string) (int, *fakePost) {
	for i, p := range f.posts {
		if p.ID == urn {
			return i, p
		}
	}
	return -1, nil
}

func (f *fakeLinkedIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("%s %s: read body: %v", r.Method, r.URL.Path, err)
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	f.mu.Lock()
	f.requests = append(f.requests, fakeRequest{Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: raw, At: time.Now()})
	f.mu.Unlock()
	if got := r.Header.Get("Authorization"); got != "Bearer "+f.token {
		// https://learn.microsoft.com/en-us/linkedin/shared/api-guide/concepts/error-handling (401)
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Invalid access token", "serviceErrorCode": 65600, "status": 401})
		return
	}
	if strings.HasPrefix(r.URL.Path, uploadPrefix) {
		f.upload(w, r)
		return
	}
	if got := r.Header.Get("LinkedIn-Version"); got != f.version {
		// A retired version: 426 NONEXISTENT_VERSION (n8n-io/n8n#28600).
		writeJSON(w, http.StatusUpgradeRequired, map[string]any{"status": 426, "code": "NONEXISTENT_VERSION", "message": "Requested version " + got + " is not active"})
		return
	}
	if got := r.Header.Get("X-Restli-Protocol-Version"); got != "2.0.0" {
		f.t.Errorf("%s %s: X-Restli-Protocol-Version %q, want 2.0.0", r.Method, r.URL.Path, got)
	}
	const collection = "/rest/posts"
	escaped := r.URL.EscapedPath()
	switch {
	case r.Method == http.MethodPost && escaped == "/rest/images":
		f.initialize(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(escaped, "/rest/images/"):
		key := strings.TrimPrefix(escaped, "/rest/images/")
		if strings.Contains(key, ":") {
			f.t.Errorf("GET %s: the image key is not URL-encoded (Rest.li 2.0 wants %%3A for ':')", escaped)
		}
		urn, err := url.PathUnescape(key)
		if err != nil {
			f.t.Errorf("GET %s: %v", escaped, err)
		}
		f.getImage(w, urn)
	case r.Method == http.MethodPost && escaped == collection:
		f.create(w, r)
	case r.Method == http.MethodGet && escaped == collection:
		f.finder(w, r)
	case strings.HasPrefix(escaped, collection+"/"):
		key := strings.TrimPrefix(escaped, collection+"/")
		if strings.Contains(key, ":") {
			f.t.Errorf("%s %s: the post key is not URL-encoded (Rest.li 2.0 wants %%3A for ':')", r.Method, escaped)
		}
		urn, err := url.PathUnescape(key)
		if err != nil {
			f.t.Errorf("%s %s: %v", r.Method, escaped, err)
		}
		switch r.Method {
		case http.MethodGet:
			f.get(w, urn)
		case http.MethodDelete:
			f.delete(w, urn)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	default:
		f.t.Errorf("unexpected request %s %s", r.Method, escaped)
		w.WriteHeader(http.StatusNotFound)
	}
}

func (f *fakeLinkedIn) create(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.t.Errorf("create: decode body: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	commentary, _ := body["commentary"].(string)
	content, _ := body["content"].(map[string]any)
	f.mu.Lock()
	f.creates++
	f.bodies = append(f.bodies, body)
	if msg := f.checkContent(body["content"]); msg != "" {
		f.mu.Unlock()
		// posts-api: a create LinkedIn refuses is a 4xx with the error body
		// of the error-handling page.
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": msg, "status": 422})
		return
	}
	f.seq++
	f.clock = f.clock.Add(time.Second)
	p := &fakePost{
		ID: fmt.Sprintf("urn:li:share:%d", 7100000000000000000+f.seq), Author: fmt.Sprint(body["author"]), Commentary: commentary,
		CreatedAt: f.clock.UnixMilli(), LastModifiedAt: f.clock.UnixMilli(), Content: content,
	}
	f.posts = append(f.posts, p)
	fault := f.CreateFault
	f.mu.Unlock()
	if fault != nil && fault(w, r) {
		return
	}
	w.Header().Set("x-restli-id", p.ID)
	w.WriteHeader(http.StatusCreated)
}

func (f *fakeLinkedIn) finder(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finds++
	if f.ReadStatus != 0 {
		writeJSON(w, f.ReadStatus, map[string]any{"message": "Not enough permissions to access: partnerApiPostsExternal.FINDER-author.20260501", "status": f.ReadStatus})
		return
	}
	q := r.URL.Query()
	if got := r.Header.Get("X-RestLi-Method"); got != "FINDER" {
		f.t.Errorf("finder: X-RestLi-Method %q, want FINDER", got)
	}
	if q.Get("q") != "author" || q.Get("author") != f.author || q.Get("sortBy") != "LAST_MODIFIED" {
		f.t.Errorf("finder: query %v, want q=author, author=%s, sortBy=LAST_MODIFIED", q, f.author)
	}
	start, _ := strconv.Atoi(q.Get("start"))
	count, err := strconv.Atoi(q.Get("count"))
	if err != nil || count <= 0 {
		count = 10
	}
	if f.MaxCount > 0 && count > f.MaxCount {
		count = f.MaxCount
	}
	sorted := slices.Clone(f.posts)
	slices.SortStableFunc(sorted, func(a, b *fakePost) int {
		if c := cmp.Compare(b.LastModifiedAt, a.LastModifiedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	elements := []any{}
	for i := start; i < len(sorted) && i < start+count; i++ {
		elements = append(elements, sorted[i].entity())
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"elements": elements,
		"paging":   map[string]any{"start": start, "count": count, "links": []any{}},
	})
}

func (f *fakeLinkedIn) get(w http.ResponseWriter, urn string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	if f.ReadStatus != 0 {
		writeJSON(w, f.ReadStatus, map[string]any{"message": "Not enough permissions to access: partnerApiPostsExternal.GET.20260501", "status": f.ReadStatus})
		return
	}
	_, p := f.find(urn)
	if p == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found", "status": 404})
		return
	}
	writeJSON(w, http.StatusOK, p.entity())
}

func (f *fakeLinkedIn) delete(w http.ResponseWriter, urn string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes++
	i, p := f.find(urn)
	if p == nil {
		if f.AgainStatus != 0 && f.AgainStatus != http.StatusNoContent {
			writeJSON(w, f.AgainStatus, map[string]any{"message": "Not Found", "status": f.AgainStatus})
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	f.posts = slices.Delete(f.posts, i, i+1)
	f.removed++
	w.WriteHeader(http.StatusNoContent)
}

// checkContent returns why a create's content is refused, or "" (f.mu
// held): content.media is one image, content.multiImage 2 to 20, each
// owned by the author (posts-api, "Create an Image Post"; MultiImage API,
// https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/multiimage-post-api).
func (f *fakeLinkedIn) checkContent(v any) string {
	if v == nil {
		return ""
	}
	content, ok := v.(map[string]any)
	if !ok {
		return "/content :: not a record"
	}
	var ids []string
	media, hasMedia := content["media"].(map[string]any)
	multi, hasMulti := content["multiImage"].(map[string]any)
	switch {
	case hasMedia == hasMulti:
		return "/content :: exactly one of media and multiImage is required"
	case hasMedia:
		ids = append(ids, fmt.Sprint(media["id"]))
	default:
		images, _ := multi["images"].([]any)
		if len(images) < 2 || len(images) > 20 {
			return fmt.Sprintf("/content/multiImage/images :: %d images, a MultiImage post takes 2 to 20", len(images))
		}
		for _, im := range images {
			m, _ := im.(map[string]any)
			ids = append(ids, fmt.Sprint(m["id"]))
		}
	}
	for _, id := range ids {
		img := f.image(id)
		if img == nil || img.Owner != f.author {
			return fmt.Sprintf("/content :: %s is not an image owned by %s", id, f.author)
		}
	}
	return ""
}

// uploadPrefix starts the path of the fake's upload URLs, as
// www.linkedin.com/dms-uploads/… does LinkedIn's.
const uploadPrefix = "/dms-uploads/"

// image returns the image with the URN, or nil (f.mu held).
func (f *fakeLinkedIn) image(urn string) *fakeImage {
	for _, img := range f.images {
		if img.URN == urn {
			return img
		}
	}
	return nil
}

// initialize is POST /rest/images?action=initializeUpload (images-api,
// "Initialize Image Upload",
// https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/images-api):
// the answer's shape and upload URL follow the page's sample.
func (f *fakeLinkedIn) initialize(w http.ResponseWriter, r *http.Request) {
	if got := r.URL.Query().Get("action"); got != "initializeUpload" {
		f.t.Errorf("POST /rest/images: action %q, want initializeUpload", got)
	}
	if got := r.Header.Get("Content-Type"); got != "application/json" {
		f.t.Errorf("initializeUpload: Content-Type %q, want application/json", got)
	}
	var body struct {
		InitializeUploadRequest struct {
			Owner string `json:"owner"`
		} `json:"initializeUploadRequest"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.t.Errorf("initializeUpload: decode body: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.inits++
	if owner := body.InitializeUploadRequest.Owner; owner != f.author {
		f.mu.Unlock()
		writeJSON(w, http.StatusForbidden, map[string]any{"message": "Not enough permissions to upload images for " + owner, "status": 403})
		return
	}
	f.seq++
	key := fmt.Sprintf("D4E10AQH%08dxQ", f.seq)
	img := &fakeImage{URN: "urn:li:image:" + key, Key: key, Owner: f.author, Status: imageWaitingUpload, Sig: fmt.Sprintf("AQJbrN86Zm265g%06d-5igned", f.seq)}
	f.images = append(f.images, img)
	base := f.UploadBase
	if base == "" {
		base = "http://" + r.Host
	}
	expires := f.clock.Add(24 * time.Hour).UnixMilli()
	fault := f.InitFault
	f.mu.Unlock()
	if fault != nil && fault(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"value": map[string]any{
		"uploadUrlExpiresAt": expires,
		"uploadUrl":          base + uploadPrefix + key + "/uploaded-image/0?ca=vector_ads&cn=uploads&m=" + img.Sig + "&app=1953784&sync=0&v=beta&ut=0SpGfGtx6dM9g1",
		"image":              img.URN,
	}})
}

// upload is the PUT of an image's bytes to its upload URL (images-api,
// "Upload the Image": the bearer token, the file as the body; 201).
func (f *fakeLinkedIn) upload(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	key, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, uploadPrefix), "/")
	data, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	var img *fakeImage
	for _, im := range f.images {
		if im.Key == key {
			img = im
		}
	}
	switch {
	case img == nil:
		f.mu.Unlock()
		w.WriteHeader(http.StatusNotFound)
		return
	case r.URL.Query().Get("m") != img.Sig:
		f.mu.Unlock()
		w.WriteHeader(http.StatusForbidden)
		return
	case img.Status != imageWaitingUpload:
		f.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	f.uploads++
	img.Data = data
	img.Status = imageProcessing
	fault := f.UploadFault
	f.mu.Unlock()
	if fault != nil && fault(w, r) {
		return
	}
	w.WriteHeader(http.StatusCreated)
}

// getImage is GET /rest/images/{encoded urn} (images-api, "Get a Single
// Image": owner, status, id, and downloadUrl once AVAILABLE).
func (f *fakeLinkedIn) getImage(w http.ResponseWriter, urn string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.imageReads++
	if f.ImageReadStatus != 0 {
		writeJSON(w, f.ImageReadStatus, map[string]any{"message": "image read refused", "status": f.ImageReadStatus})
		return
	}
	img := f.image(urn)
	if img == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found", "status": 404})
		return
	}
	if img.Status == imageProcessing {
		if img.Reads >= f.ProcessingPolls {
			img.Status = cmp.Or(f.FinalStatus, imageAvailable)
		}
		img.Reads++
	}
	e := map[string]any{"owner": img.Owner, "status": img.Status, "id": img.URN, "mediaLibraryStatus": "NON_LIBRARY"}
	if img.Status == imageAvailable {
		e["downloadUrl"] = "https://media.licdn.com/dms/image/" + img.Key + "/image-shrink_1280/0?e=1&v=beta&t=x"
		e["downloadUrlExpiresAt"] = f.clock.Add(time.Hour).UnixMilli()
	}
	writeJSON(w, http.StatusOK, e)
}

// imageCounts are the image calls the fake served.
func (f *fakeLinkedIn) imageCounts() (inits, uploads, reads int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inits, f.uploads, f.imageReads
}

// storedImages returns the images the fake holds, oldest first.
func (f *fakeLinkedIn) storedImages() []fakeImage {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []fakeImage{}
	for _, img := range f.images {
		out = append(out, *img)
	}
	return out
}

// createBodies returns the bodies of the creates the fake received.
func (f *fakeLinkedIn) createBodies() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.bodies)
}

// received returns the requests the fake received, in order.
func (f *fakeLinkedIn) received() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// drain reads a request body to its end.
func drain(r *http.Request) { io.Copy(io.Discard, r.Body) }

func jsonEncode(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }
