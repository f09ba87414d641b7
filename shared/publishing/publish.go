package publishing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"oncepost/shared/emf"
	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// Job is one (post, account) publish request, the body of a queue message.
type Job = TargetRef

// Reasons recorded on entries and targets by this package.
const (
	ReasonDuplicateOnAccount = "duplicate_on_account"
	ReasonCancelled          = "cancelled_before_send"
	// ReasonRescheduled: the post was moved to another time after the
	// publisher read it; the entry of its old time is released unsent.
	ReasonRescheduled        = "rescheduled_before_send"
	ReasonPostDeleted        = "post_deleted_before_send"
	ReasonReconnectNeeded    = "reconnect_needed"
	ReasonNotFoundAfterLooks = "not_found_after_looks"
	ReasonOperatorReleased   = "released_by_operator"
	// ReasonOperatorReleasedDuplicate: an operator approved a post held as
	// a duplicate; the next attempt skips pre-publish dedup.
	ReasonOperatorReleasedDuplicate = "released_by_operator_despite_duplicate"
	ReasonOperatorRejected          = "rejected_by_operator"
	ReasonTooManyAttempts           = "too_many_attempts"
	ReasonLeaseTooShort             = "lease_too_short_to_send"
	// ReasonNoTimeToSend: too little of the invocation was left to send
	// and record a write; the job comes back (NoTimeRetry).
	ReasonNoTimeToSend = "no_time_left_to_send"
	ReasonAmbiguous    = "ambiguous"
	// ReasonThrottled fails a post the platform kept refusing with 429 for
	// longer than the throttle limit; ReasonUnavailable one it kept not
	// performing for another reason (unreachable, reads failing).
	ReasonThrottled   = "throttled"
	ReasonUnavailable = "platform_unavailable"
	// ReasonEarly: a job delivered before its slot goes back on the queue.
	ReasonEarly = "delivered_before_slot"
	// ReasonPaced: the account's posting budget (the platform's posting
	// limits, shared through the store) has no send left now; the job
	// comes back when it has.
	ReasonPaced = "posting_limit"
	// ReasonBlocked prefixes the reason of a target held because its text
	// names a blocked term.
	ReasonBlocked = "blocked_term"
)

// ErrBadJob marks a job that can never be processed (unknown post, account
// or target). The publisher loop dead-letters it with the reason.
var ErrBadJob = errors.New("bad job")

// Result says what a Publish call did.
type Result string

// Results of Publish.
const (
	// Published: the post is on the platform (sent now, or an earlier receipt reused).
	Published Result = "published"
	// Retry: nothing was sent this time and a later delivery should try again
	// (platform did not act, someone else holds the lease, refresh in progress).
	Retry Result = "retry"
	// Confirming: the outcome is ambiguous and a confirm workflow reads the platform.
	Confirming Result = "confirming"
	// Failed: the platform refused for good.
	Failed Result = "failed"
	// Held: waiting for an operator (duplicate found, manual gate).
	Held Result = "held"
	// Skipped: nothing to do (cancelled, already finished, stale job).
	Skipped Result = "skipped"
)

// Outcome is the result of one Publish call.
type Outcome struct {
	Result   Result
	Key      ledger.Key
	Attempt  int
	RemoteID string
	Reason   string
	// RetryAfter is the platform's requested wait for Result Retry, or 0.
	RetryAfter time.Duration
}

// ConfirmSettings shape the confirm workflow started after an ambiguous outcome.
type ConfirmSettings struct {
	// Wait between looks; the default is 20 s (3 looks over 60 s, DESIGN §3).
	Wait time.Duration
	// MaxChecks is how many looks before giving up; default 3.
	MaxChecks int
	// QuickWait is the wait before an extra first look when the platform
	// answered a create quickly with a 5xx (a proxy's 503: the post, if it
	// was made, is visible within seconds); default 3 s. It is used only
	// when shorter than Wait, and adds a look: the window of MaxChecks
	// looks Wait apart is kept.
	QuickWait time.Duration
}

// Publisher runs the Publish use case. The zero values of the tuning
// fields are replaced by the defaults documented on each.
type Publisher struct {
	Ledger    Ledger
	Posts     Posts
	Accounts  Accounts
	Flows     Flows
	Platforms Platforms
	// Credentials reads and refreshes credentials; nil means one built from
	// this Publisher's fields (share one between Publisher and Confirmer so
	// a rotated credential that could not be saved is not lost).
	Credentials *Credentials
	// Media reads attachment bytes; may be nil if no post has media.
	Media MediaStore
	// Pacer spaces sends to the platforms' posting limits, shared by every
	// worker through the store; nil paces nothing.
	Pacer Pacer
	// MediaURLs gives attachments public URLs for a platform that fetches
	// them (Threads); nil in a runtime without one (the embedded one):
	// a post with media to such a platform fails there, unsent.
	MediaURLs MediaURLs
	// Blocklist holds a post naming a blocked term instead of sending it
	// (a term added after the post was scheduled); nil checks nothing.
	Blocklist Blocklist
	// Metrics receives event metrics; nil drops them.
	Metrics MetricsEmitter
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Owner names this worker in leases (e.g. the Lambda request id).
	Owner string
	// CallTimeout bounds one platform call; default 10 s.
	CallTimeout time.Duration
	// RecordMargin is kept from the caller's deadline to record the outcome
	// after the platform call; default 2 s.
	RecordMargin time.Duration
	// Lease is how long a pending entry is ours; it must exceed
	// CallTimeout+RecordMargin. Default 2 min.
	Lease time.Duration
	// PrepareBefore is how long before its slot a delivered job is
	// prepared: the blocklist, the credential, the dedup read and the
	// pending entry with its lease are done then, and the publish waits for
	// the slot before the re-read of the post and the create, so that a
	// burst due at one second spends its slot on the creates alone. A job
	// delivered earlier goes back on the queue until it can be prepared.
	// The lease must outlast it (Lease > PrepareBefore + CallTimeout +
	// RecordMargin); the dedup read and the blocklist are then up to
	// PrepareBefore old at the send. Default 0: nothing before the slot.
	PrepareBefore time.Duration
	// DedupWindow is how many recent posts pre-publish dedup reads; default 20.
	DedupWindow int
	// MaxAttempts bounds the sends of one entry that may have reached the
	// platform (ambiguous, then not found); the next acquire holds it for
	// an operator instead. Throttling does not count. Default 5.
	MaxAttempts int
	// ThrottleLimit bounds a run of "not performed" answers (429,
	// unreachable platform): past it the post fails with reason throttled
	// (or platform_unavailable) and an alarm. Default 24 h.
	ThrottleLimit time.Duration
	Confirm       ConfirmSettings
	Logger        *slog.Logger

	credsOnce sync.Once
	creds     *Credentials
}

func (p *Publisher) now() time.Time { return nowFrom(p.Now) }

func (p *Publisher) log() *slog.Logger { return loggerOr(p.Logger) }

// credentials returns the shared Credentials, or one built from p.
func (p *Publisher) credentials() *Credentials {
	if p.Credentials != nil {
		return p.Credentials
	}
	p.credsOnce.Do(func() {
		p.creds = &Credentials{Accounts: p.Accounts, Owner: p.Owner, CallTimeout: p.CallTimeout, RecordMargin: p.RecordMargin,
			Now: p.Now, Metrics: p.Metrics, Logger: p.Logger}
	})
	return p.creds
}

// nowFrom reads an injected clock in UTC, or the wall clock when none is set.
func nowFrom(clock func() time.Time) time.Time {
	if clock != nil {
		return clock().UTC()
	}
	return time.Now().UTC()
}

// loggerOr returns l, or the default logger when l is nil.
func loggerOr(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.Default()
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// readTarget reads the post with the job's target: GetTarget when the
// store has it (one target, not the post's others), GetPost otherwise.
func (p *Publisher) readTarget(ctx context.Context, id post.ID, account post.AccountID) (post.Post, error) {
	if r, ok := p.Posts.(TargetReader); ok {
		return r.GetTarget(ctx, id, account)
	}
	return p.Posts.GetPost(ctx, id)
}

// target is everything Publish needs about one job, or about one part of
// a thread's job (see publishThread): then post is the part as it goes
// out (post.Post.Part) and key the part's own.
type target struct {
	post    post.Post
	target  post.Target
	account post.Account
	key     ledger.Key
	// part is the thread part this is (1 for a post without a thread),
	// of parts; reply is what it answers (nil for part 1), and root part
	// 1's remote id once it is known (the target's RemoteID).
	part, parts int
	reply       *platform.ReplyRef
	root        string
}

func (p *Publisher) load(ctx context.Context, job Job) (target, error) {
	if job.Post == "" || job.Account == "" || job.Slot.IsZero() {
		return target{}, fmt.Errorf("job misses post_id, account_id or slot: %w", ErrBadJob)
	}
	pst, err := p.readTarget(ctx, job.Post, job.Account)
	if errors.Is(err, post.ErrNotFound) {
		return target{}, fmt.Errorf("post %s: %w", job.Post, ErrBadJob)
	}
	if err != nil {
		return target{}, fmt.Errorf("load post %s: %w", job.Post, err)
	}
	tg, ok := pst.Target(job.Account)
	if !ok {
		return target{}, fmt.Errorf("post %s has no target %s: %w", job.Post, job.Account, ErrBadJob)
	}
	acc, err := p.Accounts.GetAccount(ctx, job.Account)
	if errors.Is(err, post.ErrNotFound) {
		return target{}, fmt.Errorf("account %s: %w", job.Account, ErrBadJob)
	}
	if err != nil {
		return target{}, fmt.Errorf("load account %s: %w", job.Account, err)
	}
	return target{post: pst, target: tg, account: acc, key: ledger.PublishKey(string(acc.ID), string(pst.ID), tg.Slot), part: 1, parts: pst.Parts()}, nil
}

// Publish sends one job's post to its account at most once. It returns an
// error only when the store or workflow could not be reached; the caller
// retries the delivery then (every step is safe to repeat). Platform
// failures are outcomes, not errors.
func (p *Publisher) Publish(ctx context.Context, job Job) (Outcome, error) {
	t, err := p.load(ctx, job)
	if err != nil {
		return Outcome{}, err
	}
	if !t.target.Slot.Equal(job.Slot.UTC()) || t.target.Status.Terminal() || t.target.Status == post.NeedsApproval {
		// A rescheduled, cancelled or finished target: this delivery is
		// stale. One waiting for approval is never sent (nothing triggers
		// it; a job for it comes from elsewhere).
		return Outcome{Result: Skipped, Key: t.key, Reason: "target " + string(t.target.Status)}, nil
	}
	if now := p.now(); t.target.Slot.Sub(now) > p.PrepareBefore {
		// A job delivered early (a foreign producer, a replay, a clock
		// jump) goes back on the queue until its slot, or until it can be
		// prepared (PrepareBefore).
		return Outcome{Result: Retry, Key: t.key, Reason: ReasonEarly, RetryAfter: t.target.Slot.Sub(now) - p.PrepareBefore}, nil
	}
	if t.parts > 1 {
		return p.publishThread(ctx, t)
	}
	if out, held, err := p.checkBlocklist(ctx, t); err != nil || held {
		return out, err
	}
	a, err := p.authed(ctx, t.account)
	if err != nil {
		return Outcome{}, err
	}
	acq, out, err := p.acquire(ctx, t, a)
	if err != nil || out != nil {
		if out != nil {
			return *out, err
		}
		return Outcome{}, err
	}
	return p.sendAcquired(ctx, t, a, acq)
}

// pace spends one send of the account's posting budget (the platform's
// own limits, Capabilities.PostingLimits, never learned from its 429s),
// shared through the store by every worker. It runs once the entry is ours
// and nothing but the send is left: a delivery that cannot send (its entry
// is unknown, held, pending with another worker, or waits for its retry
// time), a post held as a duplicate or cancelled, spends nothing. Without
// budget it returns the time until there is some; the caller postpones
// the entry (no attempt spent, no run of deferrals started). Without a
// Pacer nothing is paced.
func (p *Publisher) pace(ctx context.Context, t target, a *authedClient) (time.Duration, error) {
	if p.Pacer == nil {
		return 0, nil
	}
	rates := a.client.Capabilities().PostingLimits
	if len(rates) == 0 {
		return 0, nil
	}
	wait, err := p.Pacer.Pace(ctx, t.account.ID, rates, p.now())
	if err != nil {
		return 0, fmt.Errorf("posting budget of %s: %w", t.account.ID, err)
	}
	return wait, nil
}

// checkBlocklist holds the target when the post names a blocked term and
// nothing was sent for it yet. Once a ledger entry exists a send may have
// happened, and the entry's own rules finish it: a hold then would hide a
// post that is already out.
func (p *Publisher) checkBlocklist(ctx context.Context, t target) (Outcome, bool, error) {
	if p.Blocklist == nil {
		return Outcome{}, false, nil
	}
	terms, err := p.Blocklist.BlockedTerms(ctx)
	if err != nil {
		return Outcome{}, false, fmt.Errorf("read blocklist: %w", err)
	}
	m, found := post.FindBlocked(t.post.TextFor(t.account.Platform), terms)
	if !found {
		return Outcome{}, false, nil
	}
	if _, err := p.Ledger.Get(ctx, t.key); err == nil {
		return Outcome{}, false, nil
	} else if !errors.Is(err, ledger.ErrNotFound) {
		return Outcome{}, false, fmt.Errorf("blocklist check %s: read ledger: %w", t.key, err)
	}
	reason := fmt.Sprintf("%s: %s; cancel the post, or take the term off the blocklist and reschedule it", ReasonBlocked, m.Error())
	if err := p.setTarget(ctx, t, post.Held, "", reason); err != nil {
		return Outcome{}, false, err
	}
	p.log().WarnContext(ctx, "post held: blocked term", "post", t.post.ID, "account", t.account.ID, "term", m.Term.Term)
	return Outcome{Result: Held, Key: t.key, Reason: reason}, true, nil
}

// authed returns a platform client for the account that refreshes its
// credential on a 401.
func (p *Publisher) authed(ctx context.Context, acc post.Account) (*authedClient, error) {
	return newAuthed(ctx, p.credentials(), p.Platforms, acc, p.callContext)
}

// acquired is an entry this delivery holds (pending, its lease), with what
// was read from the platform right before acquiring it.
type acquired struct {
	entry ledger.Entry
	// recent is the dedup read: the account's newest posts, newest first;
	// nil when the platform cannot be read.
	recent []platform.RemotePost
	// readErr is the dedup read's failure, recorded on the entry.
	readErr error
	// approved: an operator released the entry, so the attempt budget does
	// not hold it again; skipDedup: they approved a duplicate.
	approved, skipDedup bool
}

// acquire writes the pending entry, or decides what an existing entry
// means. A nil Outcome means "the entry is ours, go on and send".
//
// The entry is created before anything is read from the ledger: on the
// publish path the conditional put is the only ledger call before the
// send, and an entry that exists is read only after the put is refused
// (one DynamoDB read less per post). The dedup read (the account's newest
// posts) happens before the put, so the first write already carries the
// point a Lookup reads from (LookAfter): the newest post before the send.
// A read that fails is recorded on the acquired entry as "not performed".
// When the entry exists, the same dedup read serves a re-acquire; for the
// other decisions it was not needed (a redelivered job, rare).
func (p *Publisher) acquire(ctx context.Context, t target, a *authedClient) (acquired, *Outcome, error) {
	lease := orDefault(p.Lease, defaultLease)
	recent, readErr := p.readRecent(ctx, a)
	fp := platform.Fingerprint(t.post.TextFor(t.account.Platform), mediaSHAs(t.post.MediaFor(t.account.Platform)))
	e := ledger.NewEntry(t.key, ledger.Publish, string(t.account.ID), ledger.PartSubject(string(t.post.ID), t.part), t.target.Slot, fp, p.Owner, p.now(), lease)
	if readErr == nil {
		e.LookAfter = lookAfter(recent)
	}
	err := p.Ledger.Create(ctx, e)
	if err == nil {
		return acquired{entry: e, recent: recent, readErr: readErr}, nil, nil
	}
	if !errors.Is(err, ledger.ErrConflict) {
		return acquired{}, nil, fmt.Errorf("acquire %s: %w", t.key, err)
	}
	cur, err := p.Ledger.Get(ctx, t.key)
	if err != nil {
		return acquired{}, nil, fmt.Errorf("acquire %s: read existing: %w", t.key, err)
	}
	if cur.State == ledger.Pending && cur.Attempt == e.Attempt && cur.Handle == e.Handle && cur.LeaseOwner == e.LeaseOwner {
		// The entry this call wrote (the handle is new for every entry):
		// the put was stored, its answer lost, and the client sent it again.
		return acquired{entry: e, recent: recent, readErr: readErr}, nil, nil
	}
	now := p.now()
	out := Outcome{Key: cur.Key, Attempt: cur.Attempt, RemoteID: cur.RemoteID, Reason: cur.Reason}
	switch ledger.Decide(cur, now) {
	case ledger.DecideSend:
		if now.Before(cur.RetryAt) {
			// Throttled or backing off: not before the time it recorded.
			out.Result, out.RetryAfter = Retry, cur.RetryAt.Sub(now)
			return acquired{}, &out, nil
		}
		next, err := cur.Reacquire(p.Owner, p.now(), lease)
		if err != nil {
			return acquired{}, nil, err
		}
		if readErr == nil && next.LookAfter == "" && next.MaybeSent == 0 {
			// No earlier attempt can have posted: the point is sound.
			next.LookAfter = lookAfter(recent)
		}
		if err := p.Ledger.Update(ctx, cur, next); err != nil {
			if errors.Is(err, ledger.ErrConflict) {
				out.Result = Retry
				return acquired{}, &out, nil
			}
			return acquired{}, nil, fmt.Errorf("re-acquire %s: %w", t.key, err)
		}
		return acquired{
			entry: next, recent: recent, readErr: readErr,
			approved:  cur.Reason == ReasonOperatorReleased || cur.Reason == ReasonOperatorReleasedDuplicate,
			skipDedup: cur.Reason == ReasonOperatorReleasedDuplicate,
		}, nil, nil
	case ledger.DecideReuse:
		out.Result = Published
		return acquired{}, &out, p.setTarget(ctx, t, post.Published, cur.RemoteID, "")
	case ledger.DecideConfirm:
		out.Result = Confirming
		return acquired{}, &out, p.startConfirm(ctx, t.account, a.client, cur, false)
	case ledger.DecideExpire:
		next, err := p.expireLease(ctx, cur, t.account, a.client)
		if errors.Is(err, ledger.ErrConflict) {
			out.Result = Retry
			return acquired{}, &out, nil
		}
		out.Result, out.Reason = Confirming, next.Reason
		return acquired{}, &out, err
	case ledger.DecideWait:
		out.Result = Retry
		out.RetryAfter = cur.LeaseUntil.Sub(now)
		return acquired{}, &out, nil
	default: // failed, held
		out.Result = Failed
		status := post.Failed
		if cur.State == ledger.Held {
			out.Result, status = Held, post.Held
		}
		return acquired{}, &out, p.setTarget(ctx, t, status, cur.RemoteID, cur.Reason)
	}
}

// readRecent is the pre-publish dedup read: the account's newest posts,
// newest first, or nil when the platform cannot be read back.
func (p *Publisher) readRecent(ctx context.Context, a *authedClient) ([]platform.RemotePost, error) {
	if !a.client.Capabilities().ReadableHistory {
		return nil, nil
	}
	var recent []platform.RemotePost
	err := a.do(ctx, func(ctx context.Context, c platform.Client) (err error) {
		recent, err = c.Recent(ctx, orDefault(p.DedupWindow, 20))
		return err
	})
	return recent, err
}

// lookAfter is the point a Lookup reads from: the newest post read before
// the send, or the start of the account's history if it had none.
func lookAfter(recent []platform.RemotePost) string {
	if len(recent) == 0 {
		return platform.StartOfHistory
	}
	return recent[0].RemoteID
}

// errLeaseTooShort stops a write whose lease cannot outlast it: another
// worker could take the entry over while the call is in flight.
var errLeaseTooShort = errors.New("the lease cannot outlast the call")

// errNoTimeToWrite stops a write whose call and recording do not fit in
// what is left of the invocation (the context's deadline).
var errNoTimeToWrite = errors.New("too little time left to send and record the outcome")

// NoTimeRetry is how soon a job stopped by errNoTimeToWrite comes back:
// on a new invocation, with its time.
const NoTimeRetry = time.Second

// roomToWrite is checked right before every platform write (create,
// upload, delete): the call (CallTimeout) and the recording of its
// outcome (RecordMargin) must fit both in the entry's lease and in what is
// left of the invocation. A write sent with less is cut off after the
// platform may have acted: an unknown outcome of our own making, which on
// a platform that cannot be read back is a hold for a person. Deadlines
// are wall-clock time; the lease is the store's clock (Now).
func roomToWrite(ctx context.Context, leaseUntil, now time.Time, callTimeout, recordMargin time.Duration) error {
	need := callTimeout + recordMargin
	if leaseUntil.Sub(now) < need {
		return errLeaseTooShort
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < need {
		return errNoTimeToWrite
	}
	return nil
}

func (p *Publisher) roomToWrite(ctx context.Context, leaseUntil time.Time) error {
	return roomToWrite(ctx, leaseUntil, p.now(), orDefault(p.CallTimeout, 10*time.Second), orDefault(p.RecordMargin, 2*time.Second))
}

// notSentForTime is the outcome of a write stopped by roomToWrite: nothing
// was sent. Too little of the invocation left postpones the entry briefly
// (the job comes back on a new invocation, no attempt spent); a lease too
// short releases it.
func notSentForTime(err error) (outcome, bool) {
	switch {
	case errors.Is(err, errNoTimeToWrite):
		return outcomePostponed(ReasonNoTimeToSend, NoTimeRetry), true
	case errors.Is(err, errLeaseTooShort):
		return outcomeNotSent(ReasonLeaseTooShort), true
	}
	return outcome{}, false
}

// sendAcquired runs the steps after a successful acquire: the attempt
// budget, dedup, re-read, the posting budget, media, send, record. Every exit moves the pending entry out of
// pending, or leaves it pending for the lease to expire if the store is
// unreachable.
func (p *Publisher) sendAcquired(ctx context.Context, t target, a *authedClient, acq acquired) (Outcome, error) {
	e := acq.entry
	if acq.readErr != nil {
		return p.recordBeforeSend(ctx, t, e, acq.readErr)
	}
	if e.MaybeSent >= orDefault(p.MaxAttempts, defaultMaxAttempts) && !acq.approved {
		// Every earlier send that may have reached the platform was looked
		// for and not found: something is wrong that re-sending will not fix.
		return p.record(ctx, t, e, outcome{state: ledger.Held, reason: ReasonTooManyAttempts})
	}

	// Pre-publish dedup: the same content already on the account is held
	// for a human, never posted again. Media the account got from another
	// post cannot be compared byte for byte, so the comparison is the text
	// and the number of attachments: a false match holds, it never sends.
	// Equal exact fingerprints imply equal loose ones, so one compare does.
	if !acq.skipDedup {
		want := platform.LooseFingerprint(t.post.TextFor(t.account.Platform), len(t.post.Media))
		for _, rp := range acq.recent {
			if t.reply != nil && !rp.RepliesTo(t.reply) {
				// A thread's part is a duplicate only of a reply to its
				// own parent: its words may well be another part's.
				continue
			}
			if platform.LooseFingerprint(rp.Text, len(rp.MediaIDs)) == want {
				emitCount(ctx, p.Metrics, p.log(), MetricDuplicateBlocked)
				return p.record(ctx, t, e, holdOutcome(rp.RemoteID))
			}
		}
	}

	if err := p.waitForSlot(ctx, t.target.Slot); err != nil {
		// Stopped while a prepared job waited: nothing was sent, and the
		// job comes back at its slot.
		return p.record(ctx, t, e, outcomePostponed(ReasonEarly, max(t.target.Slot.Sub(p.now()), 0)))
	}

	// Re-read the post right before the irreversible call.
	fresh, err := p.readTarget(ctx, t.post.ID, t.account.ID)
	switch {
	case errors.Is(err, post.ErrNotFound):
		return p.record(ctx, t, e, outcomeNotSent(ReasonPostDeleted))
	case err != nil:
		return p.recordBeforeSend(ctx, t, e, fmt.Errorf("re-read post %s: %w", t.post.ID, err))
	}
	ft, ok := fresh.Target(t.account.ID)
	switch {
	case !ok || ft.Status == post.Cancelled:
		return p.record(ctx, t, e, outcomeNotSent(ReasonCancelled))
	case !ft.Slot.Equal(t.target.Slot):
		// Moved to another time since the first read: that time is another
		// ledger key, whose own job sends it. Sending under this key too
		// would post it twice. (A reschedule refuses a target whose entry
		// is pending, so after this re-read the slot cannot change.)
		return p.record(ctx, t, e, outcomeNotSent(ReasonRescheduled))
	}

	wait, err := p.pace(ctx, t, a)
	switch {
	case err != nil:
		return p.recordBeforeSend(ctx, t, e, err)
	case wait > 0:
		return p.record(ctx, t, e, outcomePostponed(ReasonPaced, wait))
	}

	var (
		mediaIDs []string
		inline   []platform.MediaUpload
	)
	if caps := a.client.Capabilities(); caps.InlineMedia || caps.MediaByURL {
		inline, err = p.inlineMedia(ctx, t, caps.MediaByURL)
	} else {
		mediaIDs, err = p.uploadAll(ctx, t, a)
	}
	if err != nil {
		if o, ok := notSentForTime(err); ok {
			return p.record(ctx, t, e, o)
		}
		return p.recordBeforeSend(ctx, t, e, err)
	}

	req := platform.PublishRequest{Handle: e.Handle, Text: t.post.TextFor(t.account.Platform), MediaIDs: mediaIDs, Media: inline, CreatedAt: e.Slot, Reply: t.reply}
	// A two-step create (Threads: container, then publish) records the
	// first step's handle before the second: a later attempt resumes it,
	// and a look after an unknown outcome asks the platform about it. e
	// carries it into every later write of this attempt.
	req.Checkpoint = func(ctx context.Context, handle string) error {
		if err := p.Ledger.RecordCheckpoint(ctx, e, handle); err != nil {
			return &platform.NotPerformed{Message: "record the platform's handle before publishing: " + err.Error()}
		}
		e.Checkpoint = handle
		return nil
	}
	var rcpt platform.Receipt
	invocation := ctx
	err = a.do(ctx, func(ctx context.Context, c platform.Client) (err error) {
		// Checked before every create: a 401 and a slow refresh come
		// between the first create and its repetition.
		if err := p.roomToWrite(invocation, e.LeaseUntil); err != nil {
			return err
		}
		// A repeat after a 401 resumes from what the first call recorded.
		req.Resume = e.Checkpoint
		rcpt, err = c.Publish(ctx, req)
		return err
	})
	if o, ok := notSentForTime(err); ok {
		return p.record(ctx, t, e, o)
	}
	if err != nil {
		return p.record(ctx, t, e, classify(err))
	}
	return p.record(ctx, t, e, outcome{state: ledger.Confirmed, remoteID: rcpt.RemoteID})
}

// waitForSlot waits until the slot, by the Publisher's clock, for a job
// prepared before it (PrepareBefore): each wait is what the clock says is
// left, then the clock is read again. It returns ctx's error if ctx ends
// first.
func (p *Publisher) waitForSlot(ctx context.Context, slot time.Time) error {
	for d := slot.Sub(p.now()); d > 0; d = slot.Sub(p.now()) {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// callContext bounds one platform call: CallTimeout, and never past the
// caller's deadline less RecordMargin. Deadlines are wall-clock time.
func (p *Publisher) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(orDefault(p.CallTimeout, 10*time.Second))
	if d, ok := ctx.Deadline(); ok {
		if d2 := d.Add(-orDefault(p.RecordMargin, 2*time.Second)); d2.Before(deadline) {
			deadline = d2
		}
	}
	return context.WithDeadline(ctx, deadline)
}

// outcome is what to record for an acquired entry.
type outcome struct {
	state    ledger.State
	remoteID string
	reason   string
	// deferral: released because the platform did not act (retry after
	// retryAfter); a plain release (cancelled, lease too short) is not.
	deferral bool
	// postponed: released unsent for a reason of ours (posting budget,
	// time left), to be sent again after retryAfter; no deferral.
	postponed  bool
	retryAfter time.Duration
	// status is the platform's HTTP status, when it answered.
	status int
	// limitReason fails a deferral past the throttle limit (default:
	// throttled for 429s, platform_unavailable otherwise).
	limitReason string
	// quick: an ambiguous outcome answered fast (a 5xx): look soon.
	quick bool
}

func holdOutcome(remoteID string) outcome {
	return outcome{state: ledger.Held, remoteID: remoteID, reason: ReasonDuplicateOnAccount}
}

func outcomeNotSent(reason string) outcome {
	return outcome{state: ledger.Released, reason: reason}
}

func outcomePostponed(reason string, wait time.Duration) outcome {
	return outcome{state: ledger.Released, reason: reason, postponed: true, retryAfter: wait}
}

// lookSignal reports whether a Rejected reason is evidence that the post
// may already be on the platform, so the create goes unknown and is looked
// for rather than failed.
func lookSignal(reason string) bool {
	return reason == platform.ReasonMediaConsumed || reason == platform.ReasonDuplicate
}

// classify maps a platform call's error to the ledger move (DESIGN §4).
// Anything not classified by the adapter is treated as ambiguous: when in
// doubt, look before re-sending.
func classify(err error) outcome {
	var (
		rej *platform.Rejected
		np  *platform.NotPerformed
		ua  *platform.Unauthorized
		amb *platform.Ambiguous
	)
	switch {
	case errors.As(err, &rej) && lookSignal(rej.Reason):
		// An upload this attempt reuses is attached to a post already, or
		// the platform refused the post as a duplicate of one it has:
		// evidence that an earlier attempt's post exists. Look for it.
		return outcome{state: ledger.Unknown, reason: rej.Reason + ": " + rej.Message, status: rej.Status}
	case errors.As(err, &rej):
		reason := rej.Reason
		if rej.Message != "" {
			reason += ": " + rej.Message
		}
		if rej.Reason == ReasonReconnectNeeded {
			// The account, not the post, is at fault: hold the post for
			// the operator who reconnects the account, then approves it.
			return outcome{state: ledger.Held, reason: reason, status: rej.Status}
		}
		return outcome{state: ledger.Failed, reason: reason, status: rej.Status}
	case errors.As(err, &np):
		o := outcome{state: ledger.Released, deferral: true, reason: err.Error(), retryAfter: np.RetryAfter, status: np.Status}
		if errors.Is(err, errMediaUnavailable) {
			o.limitReason = ReasonMediaUnreadable
		}
		return o
	case errors.As(err, &ua):
		return outcome{state: ledger.Held, reason: ReasonReconnectNeeded}
	case errors.As(err, &amb):
		return outcome{state: ledger.Unknown, reason: ReasonAmbiguous + ": " + err.Error(), status: amb.Status, quick: amb.Status >= 500}
	default:
		return outcome{state: ledger.Unknown, reason: ReasonAmbiguous + ": " + err.Error()}
	}
}

// recordBeforeSend records err, raised before the create was sent: the
// platform did not act, so it is released (retry) unless the platform or
// the content refused for good.
func (p *Publisher) recordBeforeSend(ctx context.Context, t target, e ledger.Entry, err error) (Outcome, error) {
	return p.record(ctx, t, e, classify(notPerformedUnlessRejected(err)))
}

// notPerformedUnlessRejected keeps Rejected and NotPerformed errors and
// turns anything else (a store error, a local failure) into NotPerformed.
func notPerformedUnlessRejected(err error) error {
	var (
		rej *platform.Rejected
		np  *platform.NotPerformed
	)
	if errors.As(err, &rej) || errors.As(err, &np) {
		return err
	}
	return &platform.NotPerformed{Message: err.Error()}
}

// next computes the entry after the outcome: the one move of an acquired
// (pending) entry that records it, and the target status that goes with it.
func (p *Publisher) next(e ledger.Entry, o outcome, now time.Time) (ledger.Entry, Result, post.TargetStatus, error) {
	switch o.state {
	case ledger.Confirmed:
		n, err := e.Confirm(o.remoteID, now)
		return n, Published, post.Published, err
	case ledger.Released:
		if o.postponed {
			n, err := e.Postpone(o.reason, now.Add(o.retryAfter), now)
			return n, Retry, post.Waiting, err
		}
		if !o.deferral {
			n, err := e.Release(o.reason, now)
			return n, Retry, "", err
		}
		if limit := orDefault(p.ThrottleLimit, defaultThrottleLimit); !e.DeferredSince.IsZero() && now.Sub(e.DeferredSince) >= limit {
			reason := ReasonUnavailable
			switch {
			case o.limitReason != "":
				reason = o.limitReason
			case o.status == http.StatusTooManyRequests:
				reason = ReasonThrottled
			}
			n, err := e.Fail(fmt.Sprintf("%s: not performed for %s (limit %s): %s", reason, now.Sub(e.DeferredSince).Round(time.Second), limit, o.reason), now)
			return n, Failed, post.Failed, err
		}
		wait := max(o.retryAfter, Backoff(e.Attempt, 0, jitter))
		n, err := e.Defer(o.reason, now.Add(wait), now)
		return n, Retry, post.Waiting, err
	case ledger.Failed:
		n, err := e.Fail(o.reason, now)
		return n, Failed, post.Failed, err
	case ledger.Held:
		n, err := e.Hold(o.reason, o.remoteID, now)
		return n, Held, post.Held, err
	default:
		n, err := e.MarkUnknown(o.reason, now)
		return n, Confirming, post.Publishing, err
	}
}

// record moves the acquired pending entry, then the target, emits the
// event's metrics and starts the confirm workflow for an unknown outcome.
func (p *Publisher) record(ctx context.Context, t target, e ledger.Entry, o outcome) (Outcome, error) {
	now := p.now()
	next, res, ts, err := p.next(e, o, now)
	if err != nil {
		return Outcome{}, err
	}
	// Updates here must land even if the caller's context just expired:
	// an unrecorded outcome is left for lease expiry, which is safe but slow.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), orDefault(p.RecordMargin, 2*time.Second))
	defer cancel()
	if err := p.Ledger.Update(rctx, e, next); err != nil {
		return Outcome{}, fmt.Errorf("record %s %s: %w", next.State, e.Key, err)
	}
	out := Outcome{Result: res, Key: next.Key, Attempt: next.Attempt, RemoteID: next.RemoteID, Reason: next.Reason}
	if next.State == ledger.Released && !next.RetryAt.IsZero() {
		out.RetryAfter = max(next.RetryAt.Sub(now), 0)
	}
	lvl := slog.LevelInfo
	if res != Published {
		lvl = slog.LevelWarn
	}
	p.log().Log(ctx, lvl, "publish recorded", "key", next.Key, "post", t.post.ID, "account", t.account.ID, "attempt", next.Attempt,
		"state", next.State, "remote_id", next.RemoteID, "reason", next.Reason)
	p.emitOutcome(ctx, t, next, o, now)
	if o.reason == ReasonCancelled || o.reason == ReasonPostDeleted || o.reason == ReasonRescheduled {
		out.Result = Skipped
		return out, nil
	}
	if ts != "" {
		if err := p.setTargetNext(rctx, t, ts, next.RemoteID, next.Reason, next.RetryAt); err != nil {
			return out, err
		}
	}
	if next.State == ledger.Unknown {
		return out, p.startConfirm(rctx, t.account, nil, next, o.quick)
	}
	return out, nil
}

// emitOutcome emits the metrics of a recorded outcome.
func (p *Publisher) emitOutcome(ctx context.Context, t target, next ledger.Entry, o outcome, now time.Time) {
	switch {
	case next.State == ledger.Confirmed:
		emitMetrics(ctx, p.Metrics, p.log(),
			emf.Metric{Name: MetricPublished, Unit: emf.Count, Value: 1},
			emf.Metric{Name: MetricPublishLateness, Unit: emf.Seconds, Value: now.Sub(t.target.Slot).Seconds()})
	case next.State == ledger.Unknown:
		emitCount(ctx, p.Metrics, p.log(), MetricAmbiguous)
	case o.deferral && o.status == http.StatusTooManyRequests:
		emitCount(ctx, p.Metrics, p.log(), MetricThrottled)
	}
}

// clientFor returns a platform client for the account, with its current
// credential.
func (p *Publisher) clientFor(ctx context.Context, acc post.Account) (platform.Client, error) {
	a, err := p.authed(ctx, acc)
	if err != nil {
		return nil, err
	}
	return a.client, nil
}

// MaxConfirmRuns bounds the confirm workflows started for one attempt: a
// workflow that stopped without settling its entry (store errors past its
// retries, a Failed execution) is replaced by a new one, named
// key-attempt-rN, up to this many; then the entry stays unknown and its
// StaleUnknown alarm stays up for a human.
const MaxConfirmRuns = 20

// startConfirm makes sure the confirm workflow of an unknown entry runs.
// It is named key-attempt, so a second start of a running one is a no-op;
// if that one stopped without settling the entry, a new one is started
// (key-attempt-r2, -r3 …). quick asks for an early first look. client may
// be nil; it is then built to learn the platform's capabilities.
func (p *Publisher) startConfirm(ctx context.Context, acc post.Account, client platform.Client, e ledger.Entry, quick bool) error {
	if client == nil {
		c, err := p.clientFor(ctx, acc)
		if err != nil {
			return err
		}
		client = c
	}
	wait := orDefault(p.Confirm.Wait, 20*time.Second)
	in := ConfirmInput{
		Key:              e.Key,
		Attempt:          e.Attempt,
		Policy:           string(acc.Gate),
		FirstWaitSeconds: int(wait / time.Second),
		WaitSeconds:      int(wait / time.Second),
		MaxChecks:        orDefault(p.Confirm.MaxChecks, 3),
	}
	if qw := orDefault(p.Confirm.QuickWait, 3*time.Second); quick && qw < wait {
		in.FirstWaitSeconds = max(int(qw/time.Second), 1)
		in.MaxChecks++
	}
	if in.Policy == "" {
		in.Policy = PolicyAuto
	}
	if reason, _, _ := strings.Cut(e.Reason, ":"); lookSignal(reason) {
		// Our upload is attached to a post we cannot see, or the platform
		// has a post like ours that we cannot see: re-sending would be
		// refused the same way. Not found means a human looks.
		in.Policy = PolicyManual
	}
	if !client.Capabilities().ReadableHistory {
		in.Policy = PolicyUnreadable
	}
	base := ConfirmName(e.Key, e.Attempt)
	for run := 1; run <= MaxConfirmRuns; run++ {
		name := base
		if run > 1 {
			name = fmt.Sprintf("%s-r%d", base, run)
		}
		err := p.Flows.StartConfirm(ctx, name, in)
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrConfirmClosed) {
			return fmt.Errorf("start confirm %s: %w", name, err)
		}
	}
	return fmt.Errorf("confirm of %s attempt %d: %d workflows stopped without settling it; an operator must decide", e.Key, e.Attempt, MaxConfirmRuns)
}

// expireLease moves a pending publish entry whose owner ran out of time to
// unknown, marks its target publishing and starts its confirm workflow:
// nobody knows whether the owner's call reached the platform.
func (p *Publisher) expireLease(ctx context.Context, cur ledger.Entry, acc post.Account, client platform.Client) (ledger.Entry, error) {
	next, err := cur.ExpireLease(p.now())
	if err != nil {
		return cur, err
	}
	if err := p.Ledger.Update(ctx, cur, next); err != nil {
		return cur, fmt.Errorf("expire lease of %s: %w", cur.Key, err)
	}
	p.log().WarnContext(ctx, "lease expired, outcome unknown", "key", cur.Key, "attempt", cur.Attempt, "owner", cur.LeaseOwner)
	emitCount(ctx, p.Metrics, p.log(), MetricAmbiguous)
	postID, part := ledger.SubjectPart(cur.Subject)
	t := target{post: post.Post{ID: post.ID(postID)}, account: acc, part: part}
	if err := p.setTarget(ctx, t, post.Publishing, "", next.Reason); err != nil {
		return next, err
	}
	return next, p.startConfirm(ctx, acc, client, next, false)
}

// ConfirmName is the confirm workflow's execution name: unique per attempt.
func ConfirmName(key ledger.Key, attempt int) string {
	return fmt.Sprintf("%s-%d", key, attempt)
}

// setTarget moves the post's target, tolerating a target already there.
func (p *Publisher) setTarget(ctx context.Context, t target, s post.TargetStatus, remoteID, reason string) error {
	return p.setTargetNext(ctx, t, s, remoteID, reason, time.Time{})
}

// setTargetNext is setTarget with a waiting target's next try. For a
// thread's part (see threadMove) the move names the part, keeps part 1's
// remote id on the target, and is none for a part confirmed before the
// last: the chain goes on.
func (p *Publisher) setTargetNext(ctx context.Context, t target, s post.TargetStatus, remoteID, reason string, nextTry time.Time) error {
	var move bool
	if s, remoteID, reason, move = threadMove(t, s, remoteID, reason); !move {
		return nil
	}
	_, err := p.Posts.UpdateTarget(ctx, t.post.ID, t.account.ID, post.TargetUpdate{Status: s, RemoteID: remoteID, Reason: reason, NextTry: nextTry, At: p.now()})
	if err == nil || !errors.Is(err, post.ErrConflict) {
		if err != nil {
			return fmt.Errorf("target %s/%s → %s: %w", t.post.ID, t.account.ID, s, err)
		}
		return nil
	}
	cur, gerr := p.Posts.GetPost(ctx, t.post.ID)
	if gerr != nil {
		return fmt.Errorf("target %s/%s → %s: %w", t.post.ID, t.account.ID, s, gerr)
	}
	if ct, ok := cur.Target(t.account.ID); ok && ct.Status != s {
		// e.g. cancelled after the re-read but before the call returned:
		// the ledger holds the truth; say so loudly.
		p.log().WarnContext(ctx, "target status not updated", "post", t.post.ID, "account", t.account.ID, "status", ct.Status, "wanted", s)
	}
	return nil
}

func mediaSHAs(ms []post.Media) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.SHA256
	}
	return out
}

// jitter returns a random duration in [0, d).
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

const (
	defaultLease         = 2 * time.Minute
	defaultMaxAttempts   = 5
	defaultThrottleLimit = 24 * time.Hour
)
