package threads

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

// Image limits of Threads (https://developers.facebook.com/docs/threads/posts,
// Carousel Posts and Media Specifications; alt_text in
// https://developers.facebook.com/docs/threads/reference/publishing).
const (
	// MaxCarouselItems is the most images of one post: "Carousels are
	// limited to 20 images, videos, or a mix of the two"; a carousel needs
	// at least two, one image is a single IMAGE post.
	MaxCarouselItems = 20
	// MaxImageBytes is an image's size limit, "File Size: 8 MB maximum",
	// read as the smaller 8,000,000 bytes since Meta does not say which
	// megabyte it means.
	MaxImageBytes = 8_000_000
	// maxAltText is the longest alt_text: "The maximum length of alt_text
	// is 1,000 characters", counted here in code points.
	maxAltText = 1000
)

// imageFormats are the formats Threads takes for image posts, in the
// order Capabilities.MediaFormats declares them: "JPEG and PNG image
// types are the officially supported formats"
// (https://developers.facebook.com/docs/threads/posts, Media
// Specifications).
var imageFormats = []string{"image/jpeg", "image/png"}

// itemsPrefix marks the checkpoint of a carousel's item containers,
// "items:<id1>,<id2>,…" in display order: all of them, recorded once all
// are made and before the CAROUSEL container is, or the first ones, when a
// call runs out of time before it has made them all (see publishMedia).
// The container to publish (TEXT, IMAGE or CAROUSEL) is recorded as its
// bare id, as it always was: a checkpoint without the prefix keeps its
// meaning. Graph ids are digits, so no bare id starts with the prefix.
const itemsPrefix = "items:"

// itemsCheckpoint is the checkpoint of a carousel's item containers.
func itemsCheckpoint(ids []string) string { return itemsPrefix + strings.Join(ids, ",") }

// parseItems reads a checkpoint: isItems is false for a bare container
// id; err is set for an items checkpoint this package cannot have
// written (no ids, an empty, blank or repeated one).
func parseItems(checkpoint string) (ids []string, isItems bool, err error) {
	list, ok := strings.CutPrefix(checkpoint, itemsPrefix)
	if !ok {
		return nil, false, nil
	}
	ids = strings.Split(list, ",")
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if id == "" || strings.TrimSpace(id) != id || seen[id] {
			return nil, true, fmt.Errorf("checkpoint %q is not a list of carousel item containers this adapter records", checkpoint)
		}
		seen[id] = true
	}
	return ids, true, nil
}

// pollConfig bounds the wait for media containers to be processed.
type pollConfig struct {
	// first is the pause after the first IN_PROGRESS answer; each later
	// pause doubles, up to max.
	first, max time.Duration
	// budget is the longest wait of one Publish for all its containers.
	budget time.Duration
	// reserve is the time left on ctx's deadline for threads_publish: the
	// wait ends earlier rather than publish with a deadline about to pass.
	// A carousel item's creation is given as much, on top of it, before it
	// is sent (see roomForItem).
	reserve time.Duration
}

// defaultPoll follows Meta's advice to "wait on average 30 seconds before
// publishing a Threads media container to give our server enough time to
// fully process the upload" (https://developers.facebook.com/docs/threads/posts,
// Step 2), polling the status rather than sleeping blindly: an image is
// usually ready within seconds, and ctx (the publisher's call timeout)
// bounds the wait before the budget does.
var defaultPoll = pollConfig{first: time.Second, max: 5 * time.Second, budget: 30 * time.Second, reserve: 3 * time.Second}

// publishMedia publishes a post with images that Threads fetches from
// their URLs (req.Media[i].URL; the bytes are not sent):
//
//   - one image: a container POST /{user-id}/threads with media_type=IMAGE,
//     image_url, text and alt_text (https://developers.facebook.com/docs/threads/posts,
//     Single Thread Posts; alt_text per
//     https://developers.facebook.com/docs/threads/posts/accessibility);
//   - two or more: an item container per image (media_type=IMAGE,
//     image_url, is_carousel_item=true, alt_text), in order, then a
//     container media_type=CAROUSEL with children=<the item ids, comma
//     separated, in order> and text (same page, Carousel Posts).
//
// Threads processes image containers asynchronously, so each is polled
// (GET /{container}?fields=status,error_message) until FINISHED before
// the next step: the items before the CAROUSEL container is made (a
// carousel of unfinished items is refused), the container to publish
// before threads_publish. The wait is bounded by pollConfig and ctx.
//
// What is checkpointed (req.Checkpoint, which each time replaces the
// entry's checkpoint and stops Publish when it fails):
//
//   - the IMAGE or CAROUSEL container, the one published, as its bare id,
//     before it is awaited and published;
//   - for a carousel, first its items, as "items:<id1>,<id2>,…" (see
//     itemsPrefix), once all of them are made and before they are
//     awaited. Items that take longer than one call allows are then
//     resumed by the next attempt (see resumeItems) instead of being made
//     again: without it a slow carousel would never be published, each
//     attempt leaving a new set of orphan items behind;
//   - the items made so far, a prefix of them in display order, when
//     ctx's deadline leaves too little time to make the next one (see
//     roomForItem): the call then ends NotPerformed (RetryAfter one
//     minute) without sending that creation, and the next attempt keeps
//     the recorded items and makes only the missing ones. A carousel of
//     many items is thus made over several calls; without it, each call
//     would have its last creation cut off by the deadline, Ambiguous
//     with nothing recorded, until the entry was held for too many
//     attempts. Items are not recorded one by one: a call records what
//     it made once, when it stops or when all are made.
//
// A carousel is published only after its own id was recorded, so no
// carousel was ever published under an items checkpoint (see Lookup).
//
// Only threads_publish makes anything visible. Until it is sent:
//
//   - a container creation whose answer was lost (timeout, reset, 5xx) is
//     Ambiguous, as the text container's is: the write may have made a
//     container, and platform.NotPerformed is the platform's proof that
//     it did not act. It is harmless: the container's id never reached
//     us, so nobody can publish it, and it expires unpublished after 24
//     hours. No container to publish was recorded either, so the confirm
//     loop's Lookup finds no post (there is no published container to
//     match a thread against) and the entry is released and sent again:
//     with new containers, or keeping the recorded items (all of them
//     when only the CAROUSEL container's creation was lost; the first
//     ones, recorded by an earlier call that ran out of time, when an
//     item's was); only a thread of the same text and image count in the
//     window, which a loose match cannot tell from ours, holds it for an
//     operator (when nothing was recorded);
//   - anything else is what it is: a status read that fails, a container
//     still IN_PROGRESS when the wait ends, or too little time left to
//     make the next item, is NotPerformed (RetryAfter one minute; a
//     checkpointed container, or the recorded items, are resumed by the
//     next attempt), a container in ERROR, whether awaited or resumed, is
//     Rejected with Meta's error_message (ReasonMediaFailed), a refused
//     creation is classified like any write.
//
// Refused before anything is sent (Rejected): req.MediaIDs (Threads has
// no upload), more than MaxCarouselItems images, an attachment without an
// absolute http(s) URL (ReasonMediaNeedsURL), one that is not JPEG or PNG
// (ReasonMediaFormat), alt text over 1,000 characters (ReasonAltTooLong),
// text over MaxTextLength. The text may be empty: Threads makes it
// optional for image and carousel posts.
//
// No error names an attachment's URL, which may carry signing parameters
// (the caller, Publish, also redacts it from every error text).
func (c *Client) publishMedia(ctx context.Context, req platform.PublishRequest) (platform.Receipt, error) {
	if err := checkMedia(req); err != nil {
		return platform.Receipt{}, err
	}
	deadline := c.pollDeadline(ctx)
	resume, kept := req.Resume, keptItems{}
	ids, isItems, err := parseItems(req.Resume)
	switch {
	case err != nil:
		// Not written by this adapter: what it stands for is unknown.
		return platform.Receipt{}, &platform.Ambiguous{Err: fmt.Errorf("publish (nothing sent): %w", err)}
	case isItems:
		resume = ""
		if kept, err = c.resumeItems(ctx, ids, len(req.Media)); err != nil {
			return platform.Receipt{}, err
		}
	}
	container, r, err := c.resume(ctx, resume, req, len(req.Media))
	if err != nil || r != nil {
		return deref(r), err
	}
	if container == "" {
		var id string
		if len(req.Media) == 1 {
			id, err = c.createImageContainer(ctx, req)
		} else {
			id, err = c.createCarouselContainer(ctx, req, kept, deadline)
		}
		if err != nil {
			return platform.Receipt{}, err
		}
		if err := checkpoint(ctx, req, id); err != nil {
			return platform.Receipt{}, err
		}
		if err := c.awaitFinished(ctx, []string{id}, deadline, func(int) string { return "container " + id }); err != nil {
			return platform.Receipt{}, err
		}
		container = id
	}
	return c.publishContainer(ctx, container)
}

// checkMedia refuses, before any call, a post with media that Threads
// would refuse or that this adapter cannot send (see publishMedia).
func checkMedia(req platform.PublishRequest) error {
	if len(req.MediaIDs) > 0 {
		return errMediaIDs()
	}
	if n := len(req.Media); n > MaxCarouselItems {
		return &platform.Rejected{Reason: ReasonTooManyMedia, Message: fmt.Sprintf("publish: %d images; a Threads carousel holds at most %d", n, MaxCarouselItems)}
	}
	for i, m := range req.Media {
		if m.URL == "" {
			return &platform.Rejected{Reason: ReasonMediaNeedsURL, Message: fmt.Sprintf("publish: media[%d] has no URL; Threads fetches each image from a public URL and has no upload", i)}
		}
		// The URL is never quoted: it may carry a signature.
		if u, err := url.Parse(m.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return &platform.Rejected{Reason: ReasonMediaNeedsURL, Message: fmt.Sprintf("publish: media[%d]'s URL is not an absolute http(s) URL Threads could fetch", i)}
		}
		if ct := imageType(m); !slices.Contains(imageFormats, ct) {
			return &platform.Rejected{Reason: ReasonMediaFormat, Message: fmt.Sprintf("publish: media[%d] is %s; Threads takes JPEG and PNG images", i, ct)}
		}
		if n := utf8.RuneCountInString(m.Alt); n > maxAltText {
			return &platform.Rejected{Reason: ReasonAltTooLong, Message: fmt.Sprintf("publish: media[%d]'s alt text is %d characters, Threads takes at most %d", i, n, maxAltText)}
		}
	}
	if n := measureText(req.Text); n > MaxTextLength {
		return &platform.Rejected{Reason: ReasonTextTooLong, Message: fmt.Sprintf("publish: text is %d characters as Threads counts them (emoji by UTF-8 bytes), the limit is %d", n, MaxTextLength)}
	}
	return nil
}

// imageType is the attachment's media type in canonical form (parameters
// and case dropped, image/jpg read as image/jpeg), from the file name's
// extension when ContentType is empty; "an unreadable content type" when
// it cannot be parsed (it is then never quoted: it may hold anything).
func imageType(m platform.MediaUpload) string {
	ct := m.ContentType
	if ct == "" {
		ct = mime.TypeByExtension(strings.ToLower(path.Ext(m.Filename)))
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "an unreadable content type"
	}
	switch mt {
	case "image/jpg", "image/pjpeg":
		return "image/jpeg"
	}
	return mt
}

// createImageContainer makes the IMAGE container of a post with one
// image. Nothing it makes is visible.
func (c *Client) createImageContainer(ctx context.Context, req platform.PublishRequest) (string, error) {
	m := req.Media[0]
	form := url.Values{"media_type": {"IMAGE"}, "image_url": {m.URL}}
	if req.Text != "" {
		form.Set("text", req.Text)
	}
	if m.Alt != "" {
		form.Set("alt_text", m.Alt)
	}
	return c.createContainer(ctx, "create image container", form)
}

// createCarouselContainer makes the CAROUSEL container of a post with two
// or more images, of an item container per image in order: those kept
// from an earlier attempt (see resumeItems), then new ones for the rest.
// Before each new item is sent, roomForItem checks ctx's deadline; when
// it is too close, the items made so far are recorded and the call is
// NotPerformed (see outOfTime). Once all exist, the items made by this
// call are recorded with those kept, as one "items:…" list, and the items
// not known to be FINISHED are awaited. Nothing it makes is visible.
func (c *Client) createCarouselContainer(ctx context.Context, req platform.PublishRequest, kept keptItems, deadline time.Time) (string, error) {
	n := len(req.Media)
	items := append(make([]string, 0, n), kept.ids...)
	recorded := len(items)
	pending := slices.Clone(kept.pending)
	var slowest time.Duration
	for i := recorded; i < n; i++ {
		if !c.roomForItem(ctx, slowest) {
			return "", c.outOfTime(ctx, req, items, recorded)
		}
		m := req.Media[i]
		form := url.Values{"media_type": {"IMAGE"}, "image_url": {m.URL}, "is_carousel_item": {"true"}}
		if m.Alt != "" {
			form.Set("alt_text", m.Alt)
		}
		start := time.Now()
		id, err := c.createContainer(ctx, fmt.Sprintf("create carousel item %d of %d (media[%d])", i+1, n, i), form)
		if err != nil {
			return "", beforePublish(err, len(items), recorded, false)
		}
		slowest = max(slowest, time.Since(start))
		items = append(items, id)
		pending = append(pending, i)
	}
	if len(items) > recorded {
		// Recorded before the wait, which may outlast this call: the next
		// attempt then resumes these items rather than make new ones.
		if err := checkpointItems(ctx, req, items); err != nil {
			return "", err
		}
	}
	name := itemName(items, n, recorded)
	wait := make([]string, len(pending))
	for j, i := range pending {
		wait[j] = items[i]
	}
	if err := c.awaitFinished(ctx, wait, deadline, func(j int) string { return name(pending[j]) }); err != nil {
		return "", err
	}
	form := url.Values{"media_type": {"CAROUSEL"}, "children": {strings.Join(items, ",")}}
	if req.Text != "" {
		form.Set("text", req.Text)
	}
	id, err := c.createContainer(ctx, "create carousel container", form)
	if err != nil {
		if recorded > 0 {
			err = fromResumedItems(err)
		}
		return "", beforePublish(err, len(items), len(items), true)
	}
	return id, nil
}

// roomForItem reports whether ctx's deadline leaves time to send one more
// carousel item's creation and still keep poll.reserve for threads_publish
// after it. The creation is given what threads_publish is (poll.reserve;
// both are one write), or as long as the slowest item creation of this
// call (slowest) took, if longer. Without a deadline there is always room.
func (c *Client) roomForItem(ctx context.Context, slowest time.Duration) bool {
	d, ok := ctx.Deadline()
	if !ok {
		return true
	}
	return time.Until(d) >= c.poll.reserve+max(c.poll.reserve, slowest)
}

// outOfTime ends a carousel's creation that has no time left for its next
// item (see roomForItem), without sending it: items, a prefix of the
// carousel's item containers in display order, are recorded when this
// call made any beyond the recorded ones (which the entry already holds),
// for the next attempt to keep and complete (see resumeItems); the answer
// is NotPerformed, RetryAfter one minute (the items meanwhile processed).
// A checkpoint that fails is returned instead.
func (c *Client) outOfTime(ctx context.Context, req platform.PublishRequest, items []string, recorded int) error {
	if len(items) > recorded {
		if err := checkpointItems(ctx, req, items); err != nil {
			return err
		}
	}
	return &platform.NotPerformed{RetryAfter: containerPollWait, Message: fmt.Sprintf(
		"publish: %d of the carousel's %d item containers are made and recorded; too little time is left in this call to make the next one and publish, so it was not sent; not published",
		len(items), len(req.Media))}
}

// itemName describes the i-th of a carousel's n item containers in
// messages; those before index earlier are "of an earlier attempt".
func itemName(items []string, n, earlier int) func(i int) string {
	return func(i int) string {
		s := fmt.Sprintf("carousel item %d of %d (container %s", i+1, n, items[i])
		if i < earlier {
			s += ", of an earlier attempt"
		}
		return s + ")"
	}
}

// fromResumedItems notes on a refused CAROUSEL creation that children of
// it were made by an earlier attempt: Meta does not document whether an
// item container can be a child of a second carousel (one whose creation
// answer was lost may have taken it), so the refusal may be about that
// rather than the post. The class is kept.
func fromResumedItems(err error) error {
	var rej *platform.Rejected
	if !errors.As(err, &rej) {
		return err
	}
	r := *rej
	r.Message += "; item containers of it were made by an earlier attempt and recorded, and a carousel of new ones might be accepted"
	return &r
}

// keptItems are the item containers of an earlier attempt that a Resume
// keeps (see resumeItems): ids, the first of the carousel's items in
// display order (all of them, or fewer when that attempt ran out of time
// to make the rest), and pending, the indexes in ids of those that were
// not FINISHED when read.
type keptItems struct {
	ids     []string
	pending []int
}

// statusReadsAtOnce bounds the container status reads a resume sends at
// once: a read each, well under the Graph API's per-user rate.
const statusReadsAtOnce = 5

// resumeItems reads the item containers an earlier attempt recorded as
// "items:…" (ids, in display order) for a post of n images, and returns
// those to keep; none and no error when the carousel must start over with
// new items. Every item is read once
// (GET /{container}?fields=status,error_message), then:
//
//   - more items than n, or a post of one image: start over (the
//     checkpoint is not this request's carousel), before any read;
//   - any PUBLISHED: Ambiguous, nothing sent. This adapter never
//     publishes a carousel under an items checkpoint, so it should not
//     happen, and as in awaitFinished a post may exist;
//   - else any ERROR: Rejected ReasonMediaFailed with Meta's
//     error_message, as awaitFinished answers a container that ends in
//     ERROR (the same image fails again; starting over could livelock
//     with an image that is both slow and broken, each attempt running
//     out of time before its own items fail);
//   - else any EXPIRED (24 hours unpublished), or unreadable (the API
//     says it does not exist): start over. Nothing was published from
//     them (see Lookup);
//   - else all are kept: FINISHED ones, and those still IN_PROGRESS (or
//     in a status this package does not know), which createCarouselContainer
//     awaits within the call's wait (still processing at its end is
//     NotPerformed for a minute, and the next attempt resumes the same
//     items). Fewer than n, recorded by a call that ran out of time, are
//     the first items: only the missing ones are made.
func (c *Client) resumeItems(ctx context.Context, ids []string, n int) (keptItems, error) {
	if n < 2 || len(ids) > n {
		return keptItems{}, nil
	}
	name := itemName(ids, n, len(ids))
	var (
		pendingAt       []int
		restart, failed = -1, -1
		failedState     containerState
	)
	// The statuses are read side by side: read one by one, a big
	// carousel's reads alone could use up the call's time for items.
	states, errs := make([]containerState, len(ids)), make([]error, len(ids))
	var wg sync.WaitGroup
	sem := make(chan struct{}, statusReadsAtOnce)
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			states[i], errs[i] = c.containerStatus(ctx, id)
		}()
	}
	wg.Wait()
	for i := range ids {
		st, err := states[i], errs[i]
		if err != nil {
			return keptItems{}, readFailed(ctx, err, name(i))
		}
		switch {
		case st.Status == StatusPublished:
			return keptItems{}, &platform.Ambiguous{Err: fmt.Errorf("publish: %s says PUBLISHED, though no carousel of the recorded items was published; nothing sent", name(i))}
		case st.Status == StatusError:
			if failed < 0 {
				failed, failedState = i, st
			}
		case st.gone, st.Status == StatusExpired:
			if restart < 0 {
				restart = i
			}
		case st.Status == StatusFinished:
		default:
			pendingAt = append(pendingAt, i)
		}
	}
	switch {
	case failed >= 0:
		return keptItems{}, mediaFailed(name(failed), failedState)
	case restart >= 0:
		return keptItems{}, nil
	}
	return keptItems{ids: ids, pending: pendingAt}, nil
}

// mediaFailed is the refusal of a post whose container (what names it)
// Threads could not process: ERROR, with Meta's error_message.
func mediaFailed(what string, st containerState) error {
	return &platform.Rejected{Reason: ReasonMediaFailed, Message: fmt.Sprintf(
		"publish: Threads could not process %s: %s; not published", what, errorMessage(st))}
}

// beforePublish adds to an Ambiguous container creation what the reader
// of the ledger's reason needs: nothing was published, and what was
// recorded (see publishMedia); items is how many item containers exist
// before it (kept and made), recorded how many of them the entry's
// checkpoint holds, carousel whether the failed creation is the CAROUSEL
// container (all its items are then recorded). Other classes are returned
// as they are.
func beforePublish(err error, items, recorded int, carousel bool) error {
	var amb *platform.Ambiguous
	if !errors.As(err, &amb) {
		return err
	}
	var what string
	switch {
	case carousel:
		what = fmt.Sprintf("no carousel container recorded (its %d item containers are, for the next attempt to make the carousel of)", items)
	case recorded > 0:
		what = fmt.Sprintf("no container recorded by this call (the %d item containers recorded before stay recorded for the next attempt to complete, the %d made since stay unpublished and expire)", recorded, items-recorded)
	default:
		what = fmt.Sprintf("no container recorded (%d item containers made before stay unpublished and expire)", items)
	}
	return &platform.Ambiguous{Status: amb.Status, Err: fmt.Errorf("nothing was published and %s: %w", what, amb.Err)}
}

// pollDeadline is when the wait for this Publish's containers ends: after
// poll.budget, and poll.reserve before ctx's deadline.
func (c *Client) pollDeadline(ctx context.Context) time.Time {
	d := time.Now().Add(c.poll.budget)
	if cd, ok := ctx.Deadline(); ok {
		if r := cd.Add(-c.poll.reserve); r.Before(d) {
			d = r
		}
	}
	return d
}

// awaitFinished reads each container's status
// (https://developers.facebook.com/docs/threads/troubleshooting) until it
// is FINISHED, pausing poll.first, then twice as long each time up to
// poll.max, while IN_PROGRESS (or not readable yet) and before deadline.
// Nothing is published here, so no failure is Ambiguous unless a
// container unexpectedly says PUBLISHED:
//
//   - ERROR: Rejected ReasonMediaFailed with Meta's error_message (an
//     image it could not fetch or process; the same image will fail
//     again);
//   - still IN_PROGRESS at the deadline, or ctx ended (during a pause
//     or a read): NotPerformed, RetryAfter one minute (Meta's polling
//     interval);
//   - EXPIRED or a status this package does not know: NotPerformed;
//   - a failed read: NotPerformed, as every read;
//   - PUBLISHED: Ambiguous; a post may exist, and only the checkpointed
//     container's Lookup can tell.
//
// name describes the i-th container in messages.
func (c *Client) awaitFinished(ctx context.Context, ids []string, deadline time.Time, name func(i int) string) error {
	wait := c.poll.first
	for i, id := range ids {
		for {
			st, err := c.containerStatus(ctx, id)
			if err != nil {
				return readFailed(ctx, err, name(i))
			}
			switch {
			case st.gone, st.Status == StatusInProgress:
				if time.Now().Add(wait).After(deadline) {
					return &platform.NotPerformed{RetryAfter: containerPollWait, Message: fmt.Sprintf(
						"publish: %s is still being processed by Threads (%s); not published", name(i), st.describe())}
				}
				if err := httpcall.Sleep(ctx, wait); err != nil {
					return &platform.NotPerformed{RetryAfter: containerPollWait, Message: fmt.Sprintf(
						"publish: waiting for %s to be processed: %v; not published", name(i), err)}
				}
				wait = min(2*wait, c.poll.max)
				continue
			case st.Status == StatusFinished:
			case st.Status == StatusError:
				return mediaFailed(name(i), st)
			case st.Status == StatusPublished:
				return &platform.Ambiguous{Err: fmt.Errorf("publish: %s says PUBLISHED before this attempt published it", name(i))}
			default:
				return &platform.NotPerformed{Message: fmt.Sprintf("publish: %s is %s before it was published; not published", name(i), st.describe())}
			}
			break
		}
	}
	return nil
}

// readFailed is the answer to a failed status read of what (a
// container): the read's own error (NotPerformed), or when ctx ended
// during it, the answer of a wait that ran out (NotPerformed, RetryAfter
// one minute).
func readFailed(ctx context.Context, err error, what string) error {
	if ctx.Err() == nil {
		return err
	}
	return &platform.NotPerformed{RetryAfter: containerPollWait, Message: fmt.Sprintf(
		"publish: waiting for %s to be processed: %v; not published", what, ctx.Err())}
}

// errorMessage is the container's error_message (one of Meta's codes,
// such as UNKNOWN or INVALID_ASPEC_RATIO), without the query of any URL
// it quotes (see stripURLQueries), quoted, or a note that there is none.
func errorMessage(st containerState) string {
	if m := strings.TrimSpace(stripURLQueries(st.ErrorMessage)); m != "" {
		return strconv.Quote(m)
	}
	return "no error_message given"
}

// redactMedia removes the attachments' URLs from err's text (see
// mediaSecrets), keeping its class.
func redactMedia(err error, media []platform.MediaUpload) error {
	if err == nil {
		return nil
	}
	return httpcall.Redact(err, mediaSecrets(media)...)
}

// mediaSecrets are the parts of the attachments' URLs that may carry a
// signature or a credential (httpcall.URLSecrets of each).
func mediaSecrets(media []platform.MediaUpload) []string {
	var out []string
	for _, m := range media {
		if m.URL != "" {
			out = append(out, httpcall.URLSecrets(m.URL)...)
		}
	}
	return out
}
