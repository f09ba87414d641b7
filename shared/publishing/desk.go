package publishing

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
	"oncepost/shared/schedexpr"
)

// The desk: the operator's use cases (schedule, list, show, cancel,
// reschedule, delete), one implementation that the CLI, the HTTP API and
// the console adapt (DESIGN §8). A rule lives here, never in a surface:
// the surfaces parse their input (flags, JSON, forms), call the Desk and
// present its answer. A refusal of the caller's input is an error joining
// *post.FieldError (FieldErrors lists them), each naming the field and
// the fix, in words that fit every surface.

// IdempotencyKeys reads the records of create requests' keys.
type IdempotencyKeys interface {
	// GetIdempotencyRecord returns the record of key in scope, or an
	// error wrapping post.ErrNotFound.
	GetIdempotencyRecord(ctx context.Context, scope, key string) (IdempotencyRecord, error)
}

// PostLister lists an operator's posts a page at a time (both stores'
// ListPostPage).
type PostLister interface {
	// ListPostPage lists one page; a cursor the store did not make is an
	// error wrapping ErrBadCursor.
	ListPostPage(ctx context.Context, f PostFilter) (PostPage, error)
}

// ErrKeyReused is returned (wrapped) by Desk.Schedule for an idempotency
// key that was used for another request (another fingerprint): nothing
// was written. The API answers 422.
var ErrKeyReused = errors.New("idempotency key was used for another request")

// ErrKeyInFlight is returned (wrapped) by Desk.Schedule when the first
// request with the key has not finished after Desk.InFlightWait: nothing
// was written. The API answers 409; the client retries later.
var ErrKeyInFlight = errors.New("the first request with this idempotency key is still in flight")

// DefaultInFlightWait is Desk.InFlightWait's default.
const DefaultInFlightWait = 5 * time.Second

// Desk is the operator's use cases, on the same ports in both runtimes.
type Desk struct {
	Posts     Posts
	Ledger    Ledger
	Accounts  Accounts
	Blocklist Blocklist
	Scheduler PostScheduler
	// Queue keeps the posting slots queued posts take; nil: no post can
	// be added to a queue.
	Queue QueueSlots
	// Approvals keeps the approval policy and approves targets; nil uses
	// Posts when it has them (both stores do).
	Approvals Approvals
	// Keys reads idempotency records; only Schedule with a KeyedRequest
	// needs it.
	Keys IdempotencyKeys
	// Lister lists posts for List.
	Lister PostLister
	// Operator decides held entries, for the surfaces that decide
	// through the desk; Deleter deletes published posts (RequestDelete).
	Operator *Operator
	Deleter  *Deleter
	// Limits are a platform's default content limits (an account's own
	// take precedence); nil derives them from Capabilities.
	Limits func(platform string) (post.Limits, bool)
	// Measure counts a text as the platform counts it; nil counts
	// graphemes.
	Measure func(platform, text string) int
	// Capabilities describe a platform (image limits, MediaByURL, the
	// total bytes of a post's attachments); nil knows none, so no
	// platform's media limits are checked.
	Capabilities func(platform string) (platform.Capabilities, bool)
	// PublicURLs: the runtime can give media a public URL
	// (platform.Capabilities.MediaByURL).
	PublicURLs bool
	// MediaSize is the size of an already stored attachment, an error
	// wrapping post.ErrNotFound if there is none. Nil: attachments not in
	// Validate's sizes are not measured.
	MediaSize func(ctx context.Context, ref string) (int64, error)
	// ReadMedia reads a stored attachment's bytes (an error wrapping
	// post.ErrNotFound if there is none), for Check to give each
	// platform's version's dimensions. Nil: Check gives bytes only.
	ReadMedia func(ctx context.Context, ref string) ([]byte, error)
	// Now is the clock (default time.Now); NewID names a post whose draft
	// has no id (default NewPostID).
	Now    func() time.Time
	NewID  func(time.Time) string
	Logger *slog.Logger
	// InFlightWait is how long a request waits for its key's first
	// request to finish before ErrKeyInFlight (default
	// DefaultInFlightWait).
	InFlightWait time.Duration
}

func (d *Desk) now() time.Time { return nowFrom(d.Now) }

func (d *Desk) log() *slog.Logger { return loggerOr(d.Logger) }

func (d *Desk) newID(now time.Time) string {
	if d.NewID != nil {
		return d.NewID(now)
	}
	return NewPostID(now)
}

// NewPostID is a generated post id: "p-", the date and time of now as
// given (YYYYMMDD-HHMMSS) and four random letters or digits.
func NewPostID(now time.Time) string {
	return "p-" + now.Format("20060102-150405") + "-" + strings.ToLower(rand.Text()[:4])
}

// capabilities are a platform's, or none.
func (d *Desk) capabilities(name string) (platform.Capabilities, bool) {
	if d.Capabilities == nil {
		return platform.Capabilities{}, false
	}
	return d.Capabilities(name)
}

// replies reports whether a platform has a reply chain (a thread goes
// there), by its Capabilities.
func (d *Desk) replies(name string) bool {
	c, ok := d.capabilities(name)
	return ok && c.Replies
}

// limits are a platform's default content limits: Limits, or those of
// its Capabilities.
func (d *Desk) limits(name string) (post.Limits, bool) {
	if d.Limits != nil {
		return d.Limits(name)
	}
	c, ok := d.capabilities(name)
	if !ok {
		return post.Limits{}, false
	}
	return post.Limits{MaxTextGraphemes: c.MaxTextGraphemes, MaxTextWithMedia: c.MaxTextWithMedia, MaxTextBytes: c.MaxTextBytes, MaxMedia: c.MaxMedia}, true
}

// FieldErrors are the *post.FieldError in err's tree (errors.Join,
// wrapping), in order: what a surface shows next to each field. None
// means err is not a refusal of the caller's input.
func FieldErrors(err error) []*post.FieldError {
	var out []*post.FieldError
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *post.FieldError:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

// refused is the error of a post refused for the given field errors.
func refused(id string, errs []error) error {
	return fmt.Errorf("post %q refused: %w", id, errors.Join(errs...))
}

// Validate checks a draft against the workspace's accounts, their
// platforms' limits and the blocklist (post.Draft.Validate), then what
// each target's account gets against its media limits: each file's bytes
// (the instance's own limit, else the platform's), the files' bytes
// together (Discord), and whether the platform fetches images from a URL
// the runtime cannot give. sizes holds the bytes of files not stored yet,
// by ref; other attachments are measured with MediaSize. A draft without
// an id gets one (NewID). A refusal is an error joining *post.FieldError.
func (d *Desk) Validate(ctx context.Context, dr post.Draft, sizes map[string]int) (post.Post, error) {
	p, _, err := d.validateWithMedia(ctx, dr, sizes)
	return p, err
}

// validateWithMedia is Validate, with the accounts it checked against.
func (d *Desk) validateWithMedia(ctx context.Context, dr post.Draft, sizes map[string]int) (post.Post, map[post.AccountID]post.Account, error) {
	p, accounts, err := d.validate(ctx, dr)
	if err != nil {
		return post.Post{}, nil, err
	}
	if err := d.checkMedia(ctx, p, accounts, sizes, map[string]int64{}); err != nil {
		return post.Post{}, nil, err
	}
	return p, accounts, nil
}

// validatePlaced is Validate, then the targets that need approval put
// in needs_approval (holdForApproval), then the queued targets' posting
// slots (placeQueued); release frees those slots if the post is not
// stored.
func (d *Desk) validatePlaced(ctx context.Context, dr post.Draft, sizes map[string]int) (post.Post, func(), error) {
	p, accounts, err := d.validateWithMedia(ctx, dr, sizes)
	if err != nil {
		return post.Post{}, nil, err
	}
	if p, err = d.holdForApproval(ctx, p, accounts); err != nil {
		return post.Post{}, nil, err
	}
	release, err := d.placeQueued(ctx, &p, accounts)
	if err != nil {
		return post.Post{}, nil, fmt.Errorf("schedule post %s: %w", p.ID, err)
	}
	return p, release, nil
}

// releaseIfRefused frees a post's queue claims (release) when its create
// was refused, nothing stored: a refusal of the draft or its id. Any other
// error may come after the post was stored (a schedule that failed after
// the post's write, an answer lost, the caller gone): its claims stay,
// since a stored post on a released slot would share it with the next
// post queued; a claim whose post never appears is a gap, never a second
// post.
func releaseIfRefused(err error, release func()) {
	if len(FieldErrors(err)) > 0 {
		release()
	}
}

// withAccountTimes is the draft with, when it says so (TimesIn
// "account"), each target's time without an offset rewritten with the
// offset its account's zone has then (schedexpr.InZone: the first of two
// in a fall-back overlap, the one before the jump in a gap). Anything
// else is left for Validate to judge.
func withAccountTimes(dr post.Draft, accounts map[post.AccountID]post.Account) post.Draft {
	if dr.TimesIn != post.TimesInAccount {
		return dr
	}
	targets := slices.Clone(dr.Targets)
	for i, t := range targets {
		a, ok := accounts[post.AccountID(t.Account)]
		if !ok || t.At == "" {
			continue
		}
		loc := time.UTC
		if a.TimeZone != "" {
			l, err := time.LoadLocation(a.TimeZone)
			if err != nil {
				continue // left without an offset: Validate refuses it, never read as UTC
			}
			loc = l
		}
		for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
			if wall, err := time.Parse(layout, t.At); err == nil {
				targets[i].At = schedexpr.InZone(wall, loc).In(loc).Format(time.RFC3339)
				break
			}
		}
	}
	dr.Targets = targets
	return dr
}

// validate checks the draft's content (everything but the attachments'
// sizes) and returns the post and the accounts it was checked against.
func (d *Desk) validate(ctx context.Context, dr post.Draft) (post.Post, map[post.AccountID]post.Account, error) {
	if dr.ID == "" {
		dr.ID = d.newID(d.now())
	}
	rules, err := d.rules(ctx)
	if err != nil {
		return post.Post{}, nil, err
	}
	dr = withAccountTimes(dr, rules.Accounts)
	p, err := dr.Validate(rules)
	if err != nil {
		return post.Post{}, nil, err
	}
	return p, rules.Accounts, nil
}

// rules are what a draft is validated against now: the workspace's
// accounts, their platforms' limits, the measurer and the blocklist.
func (d *Desk) rules(ctx context.Context) (post.Rules, error) {
	list, err := d.Accounts.ListAccounts(ctx)
	if err != nil {
		return post.Rules{}, fmt.Errorf("validate post: read the accounts: %w", err)
	}
	blocked, err := d.Blocklist.BlockedTerms(ctx)
	if err != nil {
		return post.Rules{}, fmt.Errorf("validate post: read the blocklist: %w", err)
	}
	rules := post.Rules{Accounts: make(map[post.AccountID]post.Account, len(list)), Limits: d.limits, Measure: d.Measure, Now: d.now(), Blocked: blocked,
		Replies: d.replies}
	for _, a := range list {
		rules.Accounts[a.ID] = a
	}
	return rules, nil
}

// checkMedia checks what each target's account gets against its media
// limits (see Validate). stored holds the sizes already read with
// MediaSize or ReadMedia (-1: none stored), by ref; it reads each other
// file once and notes it there.
func (d *Desk) checkMedia(ctx context.Context, p post.Post, accounts map[post.AccountID]post.Account, sizes map[string]int, stored map[string]int64) error {
	if len(p.Media) == 0 {
		return nil
	}
	var errs []error
	said := map[string]bool{}
	bad := func(field, problem, fix string) {
		fe := &post.FieldError{Field: field, Problem: problem, Fix: fix}
		if !said[fe.Error()] {
			said[fe.Error()] = true
			errs = append(errs, fe)
		}
	}
	sizeOf := func(ref string) (int64, bool, error) {
		if n, ok := sizes[ref]; ok {
			return int64(n), true, nil
		}
		if d.MediaSize == nil {
			return 0, true, nil // not measured, as before MediaSize
		}
		if n, ok := stored[ref]; ok {
			return n, n >= 0, nil
		}
		n, err := d.MediaSize(ctx, ref)
		switch {
		case errors.Is(err, post.ErrNotFound):
			stored[ref] = -1
			return 0, false, nil
		case err != nil:
			return 0, false, fmt.Errorf("validate post %s: size of attachment %s: %w", p.ID, ref, err)
		}
		stored[ref] = n
		return n, true, nil
	}
	for _, t := range p.Targets {
		acc := accounts[t.Account]
		caps, _ := d.capabilities(acc.Platform)
		if caps.MediaByURL && !d.PublicURLs {
			bad("media", fmt.Sprintf("%s fetches images from a public URL, which the embedded runtime cannot give", acc.Platform),
				fmt.Sprintf("post this to %s without media, or from the AWS runtime", t.Account))
			continue
		}
		limit, whose := acc.Limits.MaxMediaBytes, string(t.Account)+"'s instance accepts"
		if limit <= 0 {
			limit, whose = caps.MaxMediaBytes, fmt.Sprintf("%s takes (%s)", acc.Platform, t.Account)
		}
		var total int64
		for i, m := range p.MediaFor(acc.Platform) {
			if n := utf8.RuneCountInString(m.Alt); caps.MaxAltText > 0 && n > caps.MaxAltText {
				bad(fmt.Sprintf("media[%d].alt", i), fmt.Sprintf("is %d characters, over the %d %s takes", n, caps.MaxAltText, acc.Platform),
					fmt.Sprintf("shorten it by %d characters", n-caps.MaxAltText))
			}
			field := fmt.Sprintf("media[%d]", i)
			if _, ok := p.Media[i].Fitted[acc.Platform]; ok {
				field += ".fitted." + acc.Platform
			}
			n, ok, err := sizeOf(m.Ref)
			if err != nil {
				return err
			}
			if !ok {
				bad(field+".ref", fmt.Sprintf("no attachment is stored as %s", m.Ref), "upload the file first, or attach it by its path")
				continue
			}
			if limit > 0 && n > limit {
				bad(field, fmt.Sprintf("is %.1f MB, over the %.1f MB images %s", float64(n)/1e6, float64(limit)/1e6, whose), "resize it")
			}
			total += n
		}
		if most := caps.MaxMediaTotalBytes; most > 0 && total > most {
			bad("media", fmt.Sprintf("%.1f MB in all, over the %.1f MB %s takes in one post (%s)", float64(total)/1e6, float64(most)/1e6, acc.Platform, t.Account),
				"attach fewer or smaller images")
		}
	}
	if len(errs) > 0 {
		return refused(string(p.ID), errs)
	}
	return nil
}

// ImageLimits are the limits one platform's images must fit for a post:
// the strictest of its accounts the post goes to.
type ImageLimits struct {
	// MaxBytes is the most bytes of one image (an instance's own limit,
	// else the platform's); 0: none known.
	MaxBytes int64
	// MaxPixels is the most width×height; 0: none.
	MaxPixels int64
	// Formats are the content types the platform takes; empty: JPEG,
	// PNG and GIF.
	Formats []string
	// Who names the account and the limit that set them, for a note.
	Who string
}

// FitLimits validates a draft's content as Validate does, without
// measuring its attachments, and returns the image limits of each
// platform it goes to, for a surface that fits the images (resizes,
// re-encodes) before it stores them. Platforms without a known limit are
// left out. The post's id is generated as Validate's (NewID) when the
// draft has none: give the draft that id when it comes back fitted.
func (d *Desk) FitLimits(ctx context.Context, dr post.Draft) (post.Post, map[string]ImageLimits, error) {
	p, accounts, err := d.validate(ctx, dr)
	if err != nil {
		return post.Post{}, nil, err
	}
	return p, d.imageLimits(p, accounts), nil
}

// imageLimits are, per platform of the post's targets, the strictest of
// its accounts' image limits (an instance's own byte limit, else its
// platform's).
func (d *Desk) imageLimits(p post.Post, accounts map[post.AccountID]post.Account) map[string]ImageLimits {
	out := map[string]ImageLimits{}
	for _, t := range p.Targets {
		acc, ok := accounts[t.Account]
		if !ok {
			continue
		}
		caps, _ := d.capabilities(acc.Platform)
		bytes := caps.MaxMediaBytes
		if acc.Limits.MaxMediaBytes > 0 {
			bytes = acc.Limits.MaxMediaBytes
		}
		fl := out[acc.Platform]
		if bytes > 0 && (fl.MaxBytes == 0 || bytes < fl.MaxBytes) {
			fl.MaxBytes = bytes
			fl.Who = fmt.Sprintf("%s (%s, images up to %.2f MB)", acc.ID, acc.Platform, float64(bytes)/1e6)
		}
		if px := caps.MaxMediaPixels; px > 0 && (fl.MaxPixels == 0 || px < fl.MaxPixels) {
			fl.MaxPixels = px
			if fl.Who == "" {
				fl.Who = fmt.Sprintf("%s (%s, up to %d pixels)", acc.ID, acc.Platform, px)
			}
		}
		if f := caps.MediaFormats; len(f) > 0 {
			fl.Formats = f
			if fl.Who == "" {
				fl.Who = fmt.Sprintf("%s (%s, %s only)", acc.ID, acc.Platform, strings.Join(f, ", "))
			}
		}
		if fl.Who != "" {
			out[acc.Platform] = fl
		}
	}
	return out
}

// KeyedRequest is a create request that carries an idempotency key.
type KeyedRequest struct {
	// Scope is who sent it (an API token's id, an IAM principal): keys
	// of different callers never meet.
	Scope string
	Key   string
	// Fingerprint identifies the request (the hex SHA-256 of method, path
	// and body): the same key with another fingerprint is refused.
	Fingerprint string
	// Encode makes the answer to the request from the post it creates:
	// stored with the key, and replayed byte for byte to every retry.
	Encode func(post.Post) (status int, body []byte, err error)
}

// ScheduleResult is a scheduled post and, for a keyed request, its answer.
type ScheduleResult struct {
	Post post.Post
	// Status and Body are the answer (KeyedRequest.Encode's), the first
	// request's when Replayed.
	Status int
	Body   []byte
	// Replayed: the key's first request made the post; nothing was
	// written now.
	Replayed bool
}

// Schedule validates a draft (Validate) and stores the post with its
// targets' schedules (Scheduler.CreatePost). An id that exists is refused
// as a *post.FieldError on "id".
//
// With req, a retried request never makes a second post: the key is
// looked up first, and a record with the same fingerprint is answered
// with its stored answer (Replayed; nothing is validated or written), one
// with another fingerprint is ErrKeyReused. A record whose post is not
// readable yet (the first request still writing, on a store that writes
// the key before the post) is waited for, with backoff, up to
// InFlightWait, then ErrKeyInFlight. Without a record, the post is
// validated, encoded into the answer, and stored with the key's record in
// the post's own write; if a concurrent request with the key won that
// write (*KeyExistsError), this one is answered as a retry of it.
func (d *Desk) Schedule(ctx context.Context, dr post.Draft, sizes map[string]int, req *KeyedRequest) (ScheduleResult, error) {
	if req == nil {
		p, release, err := d.validatePlaced(ctx, dr, sizes)
		if err != nil {
			return ScheduleResult{}, err
		}
		if err := d.create(ctx, p, nil); err != nil {
			releaseIfRefused(err, release)
			return ScheduleResult{}, err
		}
		return ScheduleResult{Post: p}, nil
	}
	switch {
	case d.Keys == nil:
		return ScheduleResult{}, errors.New("schedule post: idempotency keys are not kept here")
	case req.Encode == nil:
		return ScheduleResult{}, errors.New("schedule post: a keyed request without its Encode")
	case req.Scope == "" || req.Key == "":
		return ScheduleResult{}, errors.New("schedule post: a keyed request without its scope or key")
	}
	var waitedSince time.Time // when the key was first found in flight
	for attempt := 0; ; attempt++ {
		rec, err := d.Keys.GetIdempotencyRecord(ctx, req.Scope, req.Key)
		switch {
		case err == nil:
		case errors.Is(err, post.ErrNotFound):
			res, exists, err := d.createKeyed(ctx, dr, sizes, req)
			if exists == nil {
				return res, err
			}
			rec = exists.Record
		default:
			return ScheduleResult{}, fmt.Errorf("schedule post: read idempotency key %q: %w", req.Key, err)
		}
		res, inFlight, err := d.replay(ctx, rec, req)
		if !inFlight {
			return res, err
		}
		if waitedSince.IsZero() {
			waitedSince = time.Now()
		}
		if err := d.waitInFlight(ctx, rec, waitedSince, attempt); err != nil {
			return ScheduleResult{}, err
		}
	}
}

// createKeyed validates the draft and creates its post with the key's
// record. exists is not nil when another request's record is there
// (nothing was written).
func (d *Desk) createKeyed(ctx context.Context, dr post.Draft, sizes map[string]int, req *KeyedRequest) (ScheduleResult, *KeyExistsError, error) {
	dr.Author = req.Scope // the authenticated caller, whatever the surface said
	p, release, err := d.validatePlaced(ctx, dr, sizes)
	if err != nil {
		return ScheduleResult{}, nil, err
	}
	status, body, err := req.Encode(p)
	if err != nil {
		release()
		return ScheduleResult{}, nil, fmt.Errorf("schedule post %s: encode the answer: %w", p.ID, err)
	}
	rec := IdempotencyRecord{Scope: req.Scope, Key: req.Key, Fingerprint: req.Fingerprint, Post: p.ID, Status: status, Response: body, CreatedAt: d.now()}
	err = d.create(ctx, p, &rec)
	var exists *KeyExistsError
	if errors.As(err, &exists) {
		release()
		return ScheduleResult{}, exists, nil
	}
	if err != nil {
		releaseIfRefused(err, release)
		return ScheduleResult{}, nil, err
	}
	return ScheduleResult{Post: p, Status: status, Body: body}, nil, nil
}

// create stores the post through the scheduler; an existing id is
// refused on the field "id".
func (d *Desk) create(ctx context.Context, p post.Post, key *IdempotencyRecord) error {
	err := d.Scheduler.CreatePost(ctx, p, key)
	var exists *KeyExistsError
	switch {
	case err == nil, errors.As(err, &exists):
		return err
	case errors.Is(err, post.ErrConflict):
		return refused(string(p.ID), []error{&post.FieldError{Field: "id", Problem: fmt.Sprintf("post %q exists already", p.ID),
			Fix: "pick another id, or leave it out to have one generated"}})
	}
	return fmt.Errorf("schedule post %s: %w", p.ID, err)
}

// replay answers a request whose key has a record: the stored answer if
// the fingerprints match and the record's post is readable; inFlight when
// it is not (yet).
func (d *Desk) replay(ctx context.Context, rec IdempotencyRecord, req *KeyedRequest) (res ScheduleResult, inFlight bool, err error) {
	if rec.Fingerprint != req.Fingerprint {
		return ScheduleResult{}, false, fmt.Errorf("idempotency key %q was used at %s for another request: %w",
			req.Key, rec.CreatedAt.UTC().Format(time.RFC3339), ErrKeyReused)
	}
	p, err := d.Posts.GetPost(ctx, rec.Post)
	switch {
	case errors.Is(err, post.ErrNotFound):
		return ScheduleResult{}, true, nil
	case err != nil:
		return ScheduleResult{}, false, fmt.Errorf("schedule post: read post %s of idempotency key %q: %w", rec.Post, req.Key, err)
	}
	d.log().DebugContext(ctx, "create replayed", "key", req.Key, "post", string(p.ID))
	return ScheduleResult{Post: p, Status: rec.Status, Body: rec.Response, Replayed: true}, false, nil
}

// waitInFlight sleeps before the next look at a key in flight: 25 ms,
// doubling up to 500 ms, and ErrKeyInFlight once InFlightWait has passed
// since since.
func (d *Desk) waitInFlight(ctx context.Context, rec IdempotencyRecord, since time.Time, attempt int) error {
	left := orDefault(d.InFlightWait, DefaultInFlightWait) - time.Since(since)
	if left <= 0 {
		return fmt.Errorf("idempotency key %q: its first request (since %s) has not finished: %w",
			rec.Key, rec.CreatedAt.UTC().Format(time.RFC3339), ErrKeyInFlight)
	}
	wait := min(25*time.Millisecond<<min(attempt, 5), 500*time.Millisecond, left)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// PostView is a post with, for each target, the ledger entries written
// for it (publish and delete) and every transition of each: what
// `oncepost post show --json` prints.
type PostView struct {
	Post    post.Post    `json:"post"`
	Targets []TargetView `json:"targets"`
}

// TargetView is one target of a PostView with its ledger entries.
type TargetView struct {
	post.Target
	Ledger []EntryView `json:"ledger"`
	// Parts are a thread's parts on this target, in order (none for a
	// post without a thread): their ledger entries are in Ledger too.
	Parts []PartView `json:"parts,omitempty"`
}

// EntryView is a ledger entry with its history, oldest first.
type EntryView struct {
	ledger.Entry
	History []ledger.Transition `json:"history"`
}

// Show reads a post and its targets' ledger entries; an error wrapping
// post.ErrNotFound for an unknown post.
func (d *Desk) Show(ctx context.Context, id post.ID) (PostView, error) {
	p, err := d.Posts.GetPost(ctx, id)
	if err != nil {
		return PostView{}, fmt.Errorf("show post %s: %w", id, err)
	}
	v := PostView{Post: p}
	for _, t := range p.Targets {
		tv := TargetView{Target: t, Ledger: []EntryView{}}
		keys := []ledger.Key{ledger.PublishKey(string(t.Account), string(p.ID), t.Slot)}
		if t.RemoteID != "" {
			keys = append(keys, ledger.DeleteKey(string(t.Account), t.RemoteID))
		}
		if p.Parts() > 1 {
			var err error
			if tv.Parts, keys, err = d.parts(ctx, p, t); err != nil {
				return PostView{}, fmt.Errorf("show post %s: %w", id, err)
			}
		}
		for _, k := range keys {
			e, err := d.Ledger.Get(ctx, k)
			if errors.Is(err, ledger.ErrNotFound) {
				continue
			}
			if err != nil {
				return PostView{}, fmt.Errorf("show post %s: %w", id, err)
			}
			h, err := d.Ledger.History(ctx, k)
			if err != nil {
				return PostView{}, fmt.Errorf("show post %s: %w", id, err)
			}
			tv.Ledger = append(tv.Ledger, EntryView{Entry: e, History: h})
		}
		v.Targets = append(v.Targets, tv)
	}
	return v, nil
}

// TargetStatuses are every target status, in the order of a post's life.
var TargetStatuses = []post.TargetStatus{post.NeedsApproval, post.Scheduled, post.Triggered, post.Waiting, post.Publishing, post.Published,
	post.Held, post.Failed, post.Cancelled, post.Deleted}

// List lists one page of the posts with a target that matches f. An
// unknown status or account is refused as a *post.FieldError on "status"
// or "account"; a cursor the store did not make is an error wrapping
// ErrBadCursor.
func (d *Desk) List(ctx context.Context, f PostFilter) (PostPage, error) {
	var errs []error
	for _, s := range f.Statuses {
		if !slices.Contains(TargetStatuses, s) {
			errs = append(errs, &post.FieldError{Field: "status", Problem: fmt.Sprintf("%q is not a target status", s), Fix: "use " + statusList()})
		}
	}
	if f.Account != "" {
		_, err := d.Accounts.GetAccount(ctx, f.Account)
		switch {
		case errors.Is(err, post.ErrNotFound):
			errs = append(errs, &post.FieldError{Field: "account", Problem: fmt.Sprintf("unknown account %q", f.Account), Fix: "name one of the workspace's accounts"})
		case err != nil:
			return PostPage{}, fmt.Errorf("list posts: account %s: %w", f.Account, err)
		}
	}
	if len(errs) > 0 {
		return PostPage{}, fmt.Errorf("list posts: %w", errors.Join(errs...))
	}
	page, err := d.Lister.ListPostPage(ctx, f)
	if err != nil {
		return PostPage{}, fmt.Errorf("list posts: %w", err)
	}
	return page, nil
}

func statusList() string {
	names := make([]string, len(TargetStatuses))
	for i, s := range TargetStatuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// TargetOutcome is what an operator's action did on one target.
type TargetOutcome struct {
	Account post.AccountID `json:"account"`
	// Done is false when the action was refused there: Message says why
	// and what to do.
	Done    bool   `json:"done"`
	Message string `json:"message"`
	// Key is the ledger entry the message is about, if any; Decision is
	// the operator's decision on it that lets the action go on
	// ("approve", or "reject" to drop a held post), if one does.
	Key      ledger.Key `json:"ledger_key,omitempty"`
	Decision string     `json:"decision,omitempty"`
}

// postTargets reads a post and its targets, or the one on account (a
// *post.FieldError on "account" if it has none there).
func (d *Desk) postTargets(ctx context.Context, id post.ID, account post.AccountID) (post.Post, []post.Target, error) {
	p, err := d.Posts.GetPost(ctx, id)
	if err != nil {
		return post.Post{}, nil, err
	}
	if account == "" {
		return p, p.Targets, nil
	}
	t, ok := p.Target(account)
	if !ok {
		var names []string
		for _, t := range p.Targets {
			names = append(names, string(t.Account))
		}
		return post.Post{}, nil, &post.FieldError{Field: "account", Problem: fmt.Sprintf("post %s has no target on %q", p.ID, account),
			Fix: "name one of its accounts: " + strings.Join(names, ", ")}
	}
	return p, []post.Target{t}, nil
}

// Cancel cancels the post's targets (account "": every one) that nothing
// was sent for: waiting for approval, scheduled, triggered, waiting, or
// held by the blocklist. They are never sent and their schedules go. Cancelling twice is done
// ("already cancelled"); a published, failed or publishing target, or one
// held after a send, is refused with what to do instead. An unknown post
// is an error wrapping post.ErrNotFound. An error that is not a refusal
// stops at that target and comes with the outcomes before it.
func (d *Desk) Cancel(ctx context.Context, id post.ID, account post.AccountID) ([]TargetOutcome, error) {
	p, targets, err := d.postTargets(ctx, id, account)
	if err != nil {
		return nil, fmt.Errorf("cancel post %s: %w", id, err)
	}
	var out []TargetOutcome
	for _, t := range targets {
		o, err := d.cancelTarget(ctx, p, t)
		if err != nil {
			return out, fmt.Errorf("cancel post %s on %s: %w", id, t.Account, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// cancelTarget cancels one target if nothing was sent for it.
func (d *Desk) cancelTarget(ctx context.Context, p post.Post, t post.Target) (TargetOutcome, error) {
	done := func(msg string) TargetOutcome { return TargetOutcome{Account: t.Account, Done: true, Message: msg} }
	no := func(msg string) TargetOutcome { return TargetOutcome{Account: t.Account, Message: msg} }
	key := ledger.PublishKey(string(t.Account), string(p.ID), t.Slot)
	if p.Parts() > 1 {
		// A thread waits on one part: the first not confirmed.
		var err error
		if key, err = d.partKey(ctx, p, t); err != nil {
			return TargetOutcome{}, err
		}
	}
	switch t.Status {
	case post.Cancelled:
		return done("already cancelled"), nil
	case post.Published, post.Deleted:
		return no(fmt.Sprintf("already %s (remote id %s); to remove it from the platform, delete the post there", t.Status, t.RemoteID)), nil
	case post.Failed:
		return no(fmt.Sprintf("already failed (%s); it will not be sent", t.Reason)), nil
	case post.Publishing:
		return no("a send may have reached the platform and is being confirmed; its outcome decides"), nil
	case post.Held:
		e, err := d.Ledger.Get(ctx, key)
		switch {
		case err == nil:
			o := no(fmt.Sprintf("held after a send (ledger entry %s is %s); an operator decides it", e.Key[:12], e.State))
			o.Key, o.Decision = e.Key, "reject"
			return o, nil
		case !errors.Is(err, ledger.ErrNotFound):
			return TargetOutcome{}, err
		}
	}
	_, err := d.Posts.UpdateTarget(ctx, p.ID, t.Account, post.TargetUpdate{Status: post.Cancelled, Reason: "cancelled by operator",
		From: []post.TargetStatus{post.NeedsApproval, post.Scheduled, post.Triggered, post.Waiting, post.Held}, At: d.now()})
	if errors.Is(err, post.ErrConflict) {
		return no("its status changed meanwhile; look at the post again"), nil
	}
	if err != nil {
		return TargetOutcome{}, err
	}
	d.Scheduler.Cancelled(ctx, TargetRef{Post: p.ID, Account: t.Account, Slot: t.Slot})
	d.releaseQueued(ctx, p.ID, t)
	// A publisher re-reads the post before it sends, but one already past
	// that point may be sending now: the ledger says so.
	if e, err := d.Ledger.Get(ctx, key); err == nil && (e.State == ledger.Pending || e.State == ledger.Unknown || e.State == ledger.Confirmed) {
		o := done(fmt.Sprintf("cancelled, but a send was already in flight (ledger entry %s is %s): check the post's ledger history", e.Key[:12], e.State))
		o.Key = e.Key
		return o, nil
	}
	if first := ledger.PublishKey(string(t.Account), string(p.ID), t.Slot); key != first {
		return done("cancelled; the rest of the thread will not be sent, but its parts before the one it waited on are on the platform (post show lists them)"), nil
	}
	return done("cancelled; it will not be sent"), nil
}

// Reschedule moves the post's scheduled, waiting or blocklist-held
// targets (account "": every one) to at; a target waiting for approval
// moves there and still waits (moveAwaiting). A time in the past is refused as
// a *post.FieldError on "at"; a target whose earlier send may have
// reached the platform is refused (a new time is a new ledger entry, and
// could post twice). Errors as Cancel's.
func (d *Desk) Reschedule(ctx context.Context, id post.ID, account post.AccountID, at time.Time) ([]TargetOutcome, error) {
	now := d.now()
	at = at.UTC()
	switch {
	case at.Before(now):
		return nil, fmt.Errorf("reschedule post %s: %w", id, &post.FieldError{Field: "at",
			Problem: fmt.Sprintf("%s is in the past (now %s)", at.Format(time.RFC3339), now.Format(time.RFC3339)), Fix: "pick a time from now on"})
	case at.Year() > post.MaxSlotYear:
		return nil, fmt.Errorf("reschedule post %s: %w", id, &post.FieldError{Field: "at",
			Problem: fmt.Sprintf("%s is after %d", at.Format(time.RFC3339), post.MaxSlotYear), Fix: "pick an earlier time"})
	}
	p, targets, err := d.postTargets(ctx, id, account)
	if err != nil {
		return nil, fmt.Errorf("reschedule post %s: %w", id, err)
	}
	var out []TargetOutcome
	for _, t := range targets {
		if t.Slot.Equal(at) && t.Status == post.Scheduled {
			out = append(out, TargetOutcome{Account: t.Account, Done: true, Message: "already scheduled at " + at.Format(time.RFC3339)})
			continue
		}
		if t.Status == post.NeedsApproval {
			o, err := d.moveAwaiting(ctx, p.ID, t, at)
			if err != nil {
				return out, fmt.Errorf("reschedule post %s on %s: %w", id, t.Account, err)
			}
			if o.Done && !t.Slot.Equal(at) {
				d.releaseQueued(ctx, p.ID, t)
			}
			out = append(out, o)
			continue
		}
		err := d.Scheduler.Reschedule(ctx, p.ID, t.Account, at)
		switch {
		case errors.Is(err, post.ErrConflict):
			out = append(out, TargetOutcome{Account: t.Account, Message: err.Error()})
		case err != nil:
			return out, fmt.Errorf("reschedule post %s on %s: %w", id, t.Account, err)
		default:
			// A time given by hand takes the post out of its queue's slot.
			d.releaseQueued(ctx, p.ID, t)
			out = append(out, TargetOutcome{Account: t.Account, Done: true, Message: "rescheduled for " + at.Format(time.RFC3339)})
		}
	}
	return out, nil
}

// RequestDelete requests the deletion of the post's published copies
// (account "": every published target; the others are reported as having
// nothing to delete) through the ledger (Deleter.Request): the request
// waits for an operator's approval (Key, Decision "approve"), unless
// approve, which approves it and performs it now (Deleter.Run). Deleting
// twice is done ("already deleted"). A target that is not published, an
// earlier delete that failed, or a delete the platform refused is
// refused. Errors as Cancel's.
func (d *Desk) RequestDelete(ctx context.Context, id post.ID, account post.AccountID, approve bool) ([]TargetOutcome, error) {
	p, targets, err := d.postTargets(ctx, id, account)
	if err != nil {
		return nil, fmt.Errorf("delete post %s: %w", id, err)
	}
	var out []TargetOutcome
	for _, t := range targets {
		o, err := d.deleteTarget(ctx, p, t, account == "", approve)
		if err != nil {
			return out, fmt.Errorf("delete post %s on %s: %w", id, t.Account, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// deleteTarget requests, and if approved performs, one target's delete.
func (d *Desk) deleteTarget(ctx context.Context, p post.Post, t post.Target, every, approve bool) (TargetOutcome, error) {
	done := func(msg string) TargetOutcome { return TargetOutcome{Account: t.Account, Done: true, Message: msg} }
	no := func(msg string) TargetOutcome { return TargetOutcome{Account: t.Account, Message: msg} }
	if every && t.Status != post.Published && t.Status != post.Deleted {
		return done(string(t.Status) + ", nothing to delete"), nil
	}
	req, err := d.Deleter.Request(ctx, p.ID, t.Account, approve)
	if errors.Is(err, ErrNotPublished) {
		return no(err.Error()), nil
	}
	if err != nil {
		return TargetOutcome{}, err
	}
	e := req.Entry
	waiting := func(msg string) TargetOutcome {
		o := done(msg)
		o.Key, o.Decision = e.Key, "approve"
		return o
	}
	switch {
	case !req.New && e.State == ledger.Confirmed:
		return done(fmt.Sprintf("already deleted (remote id %s)", e.Subject)), nil
	case !req.New && e.State == ledger.Failed:
		return no(fmt.Sprintf("an earlier delete failed: %s", e.Reason)), nil
	case e.State == ledger.Held && e.Decision == "":
		return waiting(fmt.Sprintf("delete of remote post %s requested; it waits for approval", e.Subject)), nil
	case !approve && !req.New:
		return waiting(fmt.Sprintf("delete requested before (%s); it goes on once approved", e.State)), nil
	}
	res, err := d.Deleter.Run(ctx, e.Key)
	if errors.Is(err, ErrNotApproved) {
		// Requested before without approval: approving now is the
		// operator's decision on that entry, not this request's.
		o := no(fmt.Sprintf("the delete requested before is %s and waits for approval", e.State))
		o.Key, o.Decision = e.Key, "approve"
		return o, nil
	}
	if err != nil {
		return no(err.Error()), nil
	}
	return done(res.Message), nil
}
