package publishing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

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
	ReasonPostDeleted        = "post_deleted_before_send"
	ReasonReconnectNeeded    = "reconnect_needed"
	ReasonNotFoundAfterLooks = "not_found_after_looks"
	ReasonOperatorReleased   = "released_by_operator"
	ReasonOperatorRejected   = "rejected_by_operator"
	ReasonTooManyAttempts    = "too_many_attempts"
	ReasonLeaseTooShort      = "lease_too_short_to_send"
	ReasonAmbiguous          = "ambiguous"
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
}

// Publisher runs the Publish use case. The zero values of the tuning
// fields are replaced by the defaults documented on each.
type Publisher struct {
	Ledger    Ledger
	Posts     Posts
	Accounts  Accounts
	Flows     Flows
	Platforms Platforms
	// Media reads attachment bytes; may be nil if no post has media.
	Media MediaStore
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
	// DedupWindow is how many recent posts pre-publish dedup reads; default 20.
	DedupWindow int
	// MaxAttempts bounds sends of one entry; the next acquire holds it for
	// an operator instead. Default 5.
	MaxAttempts int
	Confirm     ConfirmSettings
	Logger      *slog.Logger
}

func (p *Publisher) now() time.Time { return nowFrom(p.Now) }

func (p *Publisher) log() *slog.Logger { return loggerOr(p.Logger) }

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

// target is everything Publish needs about one job.
type target struct {
	post    post.Post
	target  post.Target
	account post.Account
	key     ledger.Key
}

func (p *Publisher) load(ctx context.Context, job Job) (target, error) {
	if job.Post == "" || job.Account == "" || job.Slot.IsZero() {
		return target{}, fmt.Errorf("job %+v misses post_id, account_id or slot: %w", job, ErrBadJob)
	}
	pst, err := p.Posts.GetPost(ctx, job.Post)
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
	return target{post: pst, target: tg, account: acc, key: ledger.PublishKey(string(acc.ID), string(pst.ID), tg.Slot)}, nil
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
	if !t.target.Slot.Equal(job.Slot.UTC()) || t.target.Status.Terminal() {
		// A rescheduled, cancelled or finished target: this delivery is stale.
		return Outcome{Result: Skipped, Key: t.key, Reason: "target " + string(t.target.Status)}, nil
	}
	cred, err := p.Accounts.Credential(ctx, t.account.ID)
	if err != nil {
		return Outcome{}, fmt.Errorf("credential of %s: %w", t.account.ID, err)
	}
	client, err := p.Platforms.Client(ctx, t.account, cred)
	if err != nil {
		return Outcome{}, fmt.Errorf("platform client for %s: %w", t.account.ID, err)
	}

	entry, out, err := p.acquire(ctx, t, client)
	if err != nil || out != nil {
		if out != nil {
			return *out, err
		}
		return Outcome{}, err
	}
	return p.sendAcquired(ctx, t, client, cred, entry)
}

// acquire writes the pending entry, or decides what an existing entry
// means. A nil Outcome means "entry is ours, go on and send".
func (p *Publisher) acquire(ctx context.Context, t target, client platform.Client) (ledger.Entry, *Outcome, error) {
	now := p.now()
	fp := platform.Fingerprint(t.post.Body, mediaSHAs(t.post.Media))
	e := ledger.NewEntry(t.key, ledger.Publish, string(t.account.ID), string(t.post.ID), t.target.Slot, fp, p.Owner, now, orDefault(p.Lease, defaultLease))
	err := p.Ledger.Create(ctx, e)
	if err == nil {
		return e, nil, nil
	}
	if !errors.Is(err, ledger.ErrConflict) {
		return e, nil, fmt.Errorf("acquire %s: %w", t.key, err)
	}
	cur, err := p.Ledger.Get(ctx, t.key)
	if err != nil {
		return e, nil, fmt.Errorf("acquire %s: read existing: %w", t.key, err)
	}
	out := Outcome{Key: cur.Key, Attempt: cur.Attempt, RemoteID: cur.RemoteID, Reason: cur.Reason}
	switch ledger.Decide(cur, now) {
	case ledger.DecideSend:
		next, err := cur.Reacquire(p.Owner, now, orDefault(p.Lease, defaultLease))
		if err != nil {
			return e, nil, err
		}
		if err := p.Ledger.Update(ctx, cur, next); err != nil {
			if errors.Is(err, ledger.ErrConflict) {
				out.Result = Retry
				return e, &out, nil
			}
			return e, nil, fmt.Errorf("re-acquire %s: %w", t.key, err)
		}
		return next, nil, nil
	case ledger.DecideReuse:
		out.Result = Published
		return e, &out, p.setTarget(ctx, t, post.Published, cur.RemoteID, "")
	case ledger.DecideConfirm:
		out.Result = Confirming
		return e, &out, p.startConfirm(ctx, t.account, client, cur)
	case ledger.DecideExpire:
		next, err := p.expireLease(ctx, cur, t.account, client)
		if errors.Is(err, ledger.ErrConflict) {
			out.Result = Retry
			return e, &out, nil
		}
		out.Result, out.Reason = Confirming, next.Reason
		return e, &out, err
	case ledger.DecideWait:
		out.Result = Retry
		out.RetryAfter = cur.LeaseUntil.Sub(now)
		return e, &out, nil
	default: // failed, held
		out.Result = Failed
		status := post.Failed
		if cur.State == ledger.Held {
			out.Result, status = Held, post.Held
		}
		return e, &out, p.setTarget(ctx, t, status, cur.RemoteID, cur.Reason)
	}
}

// sendAcquired runs the steps after a successful acquire: dedup, re-read,
// media, send, record. Every exit moves the pending entry out of pending,
// or leaves it pending for the lease to expire if the store is unreachable.
func (p *Publisher) sendAcquired(ctx context.Context, t target, client platform.Client, cred platform.Credential, e ledger.Entry) (Outcome, error) {
	if e.Attempt > orDefault(p.MaxAttempts, defaultMaxAttempts) {
		// Every earlier attempt ended released (not performed, or looked for
		// and not found): something is wrong that retrying will not fix.
		return p.record(ctx, t, e, outcome{state: ledger.Held, reason: ReasonTooManyAttempts})
	}
	caps := client.Capabilities()

	a := &authedClient{p: p, acc: t.account, client: client, cred: cred}

	// Pre-publish dedup: the same content already on the account is held
	// for a human, never posted again. Media the account got from another
	// post cannot be compared byte for byte, so the comparison is the text
	// and the number of attachments: a false match holds, it never sends.
	if caps.ReadableHistory {
		var recent []platform.RemotePost
		err := a.do(ctx, func(ctx context.Context, c platform.Client) (err error) {
			recent, err = c.Recent(ctx, orDefault(p.DedupWindow, 20))
			return err
		})
		if err != nil {
			return p.recordBeforeSend(ctx, t, e, err)
		}
		// Equal exact fingerprints imply equal loose ones, so one compare does.
		want := platform.LooseFingerprint(t.post.Body, len(t.post.Media))
		for _, rp := range recent {
			if platform.LooseFingerprint(rp.Text, len(rp.MediaIDs)) == want {
				return p.record(ctx, t, e, holdOutcome(rp.RemoteID))
			}
		}
	}

	// Re-read the post right before the irreversible call.
	fresh, err := p.Posts.GetPost(ctx, t.post.ID)
	switch {
	case errors.Is(err, post.ErrNotFound):
		return p.record(ctx, t, e, outcomeNotSent(ReasonPostDeleted))
	case err != nil:
		return p.recordBeforeSend(ctx, t, e, fmt.Errorf("re-read post %s: %w", t.post.ID, err))
	}
	if ft, ok := fresh.Target(t.account.ID); !ok || ft.Status == post.Cancelled {
		return p.record(ctx, t, e, outcomeNotSent(ReasonCancelled))
	}

	mediaIDs, err := p.uploadAll(ctx, t, a)
	if err != nil {
		return p.recordBeforeSend(ctx, t, e, err)
	}

	// The lease must outlast the call and its recording; otherwise another
	// worker may take the entry over while our create is in flight.
	if left := e.LeaseUntil.Sub(p.now()); left < orDefault(p.CallTimeout, 10*time.Second)+orDefault(p.RecordMargin, 2*time.Second) {
		return p.record(ctx, t, e, outcomeNotSent(ReasonLeaseTooShort))
	}
	req := platform.PublishRequest{Handle: e.Handle, Text: t.post.Body, MediaIDs: mediaIDs}
	var rcpt platform.Receipt
	err = a.do(ctx, func(ctx context.Context, c platform.Client) (err error) {
		rcpt, err = c.Publish(ctx, req)
		return err
	})
	if err != nil {
		return p.record(ctx, t, e, classify(err))
	}
	return p.record(ctx, t, e, outcome{state: ledger.Confirmed, remoteID: rcpt.RemoteID})
}

// authedClient runs platform calls for one Publish, refreshing the
// credential once on a 401 and repeating the call that got it. A 401 means
// the platform did not act, so repeating a create within the same attempt
// (same handle) is safe. A second 401 after a refresh is reconnect_needed.
type authedClient struct {
	p         *Publisher
	acc       post.Account
	client    platform.Client
	cred      platform.Credential
	refreshed bool
}

func (a *authedClient) do(ctx context.Context, call func(context.Context, platform.Client) error) error {
	err := a.call(ctx, call)
	var unauth *platform.Unauthorized
	if !errors.As(err, &unauth) {
		return err
	}
	if a.refreshed {
		return &platform.Rejected{Status: 401, Reason: ReasonReconnectNeeded, Message: unauth.Message}
	}
	a.refreshed = true
	cred, err := a.p.refresh(ctx, a.acc, a.client, a.cred)
	if err != nil {
		// The call got a 401, so it did not act; nor did the refresh.
		return notPerformedUnlessRejected(err)
	}
	client, err := a.p.Platforms.Client(ctx, a.acc, cred)
	if err != nil {
		return &platform.NotPerformed{Message: "platform client after refresh: " + err.Error()}
	}
	a.client, a.cred = client, cred
	err = a.call(ctx, call)
	if errors.As(err, &unauth) {
		return &platform.Rejected{Status: 401, Reason: ReasonReconnectNeeded, Message: unauth.Message}
	}
	return err
}

func (a *authedClient) call(ctx context.Context, call func(context.Context, platform.Client) error) error {
	ctx, cancel := a.p.callContext(ctx)
	defer cancel()
	return call(ctx, a.client)
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
	state      ledger.State
	remoteID   string
	reason     string
	retryAfter time.Duration
}

// apply returns the entry after the outcome: the one move of an acquired
// (pending) entry that records it. Any state but confirmed, released,
// failed and held is recorded as unknown.
func (o outcome) apply(e ledger.Entry, now time.Time) (ledger.Entry, error) {
	switch o.state {
	case ledger.Confirmed:
		return e.Confirm(o.remoteID, now)
	case ledger.Released:
		return e.Release(o.reason, now)
	case ledger.Failed:
		return e.Fail(o.reason, now)
	case ledger.Held:
		return e.Hold(o.reason, o.remoteID, now)
	default:
		return e.MarkUnknown(o.reason, now)
	}
}

func holdOutcome(remoteID string) outcome {
	return outcome{state: ledger.Held, remoteID: remoteID, reason: ReasonDuplicateOnAccount}
}

func outcomeNotSent(reason string) outcome {
	return outcome{state: ledger.Released, reason: reason}
}

// classify maps a platform call's error to the ledger move (DESIGN §4).
// Anything not classified by the adapter is treated as ambiguous: when in
// doubt, look before re-sending.
func classify(err error) outcome {
	var (
		rej *platform.Rejected
		np  *platform.NotPerformed
		ua  *platform.Unauthorized
	)
	switch {
	case errors.As(err, &rej):
		reason := rej.Reason
		if rej.Message != "" {
			reason += ": " + rej.Message
		}
		return outcome{state: ledger.Failed, reason: reason}
	case errors.As(err, &np):
		return outcome{state: ledger.Released, reason: err.Error(), retryAfter: np.RetryAfter}
	case errors.As(err, &ua):
		return outcome{state: ledger.Failed, reason: ReasonReconnectNeeded}
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

// record moves the acquired pending entry, then the target, and starts the
// confirm workflow for an unknown outcome.
func (p *Publisher) record(ctx context.Context, t target, e ledger.Entry, o outcome) (Outcome, error) {
	next, err := o.apply(e, p.now())
	var (
		res Result
		ts  post.TargetStatus
	)
	switch o.state {
	case ledger.Confirmed:
		res, ts = Published, post.Published
	case ledger.Released:
		res = Retry
	case ledger.Failed:
		res, ts = Failed, post.Failed
	case ledger.Held:
		res, ts = Held, post.Held
	default:
		res, ts = Confirming, post.Publishing
	}
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
	out := Outcome{Result: res, Key: next.Key, Attempt: next.Attempt, RemoteID: next.RemoteID, Reason: next.Reason, RetryAfter: o.retryAfter}
	lvl := slog.LevelInfo
	if res != Published {
		lvl = slog.LevelWarn
	}
	p.log().Log(ctx, lvl, "publish recorded", "key", next.Key, "post", t.post.ID, "account", t.account.ID, "attempt", next.Attempt, "state", next.State, "remote_id", next.RemoteID, "reason", next.Reason)
	if o.reason == ReasonCancelled || o.reason == ReasonPostDeleted {
		out.Result = Skipped
		return out, nil
	}
	if ts != "" {
		if err := p.setTarget(rctx, t, ts, next.RemoteID, next.Reason); err != nil {
			return out, err
		}
	}
	if next.State == ledger.Unknown {
		client, err := p.clientFor(rctx, t.account)
		if err != nil {
			return out, err
		}
		return out, p.startConfirm(rctx, t.account, client, next)
	}
	return out, nil
}

func (p *Publisher) clientFor(ctx context.Context, acc post.Account) (platform.Client, error) {
	cred, err := p.Accounts.Credential(ctx, acc.ID)
	if err != nil {
		return nil, fmt.Errorf("credential of %s: %w", acc.ID, err)
	}
	c, err := p.Platforms.Client(ctx, acc, cred)
	if err != nil {
		return nil, fmt.Errorf("platform client for %s: %w", acc.ID, err)
	}
	return c, nil
}

// startConfirm starts the confirm workflow of an unknown entry, named
// key-attempt so a second start of the same attempt is a no-op.
func (p *Publisher) startConfirm(ctx context.Context, acc post.Account, client platform.Client, e ledger.Entry) error {
	in := ConfirmInput{
		Key:         e.Key,
		Attempt:     e.Attempt,
		Policy:      string(acc.Gate),
		WaitSeconds: int(orDefault(p.Confirm.Wait, 20*time.Second) / time.Second),
		MaxChecks:   orDefault(p.Confirm.MaxChecks, 3),
	}
	if in.Policy == "" {
		in.Policy = string(post.GateAuto)
	}
	if !client.Capabilities().ReadableHistory {
		in.Policy = PolicyUnreadable
	}
	if err := p.Flows.StartConfirm(ctx, ConfirmName(e.Key, e.Attempt), in); err != nil {
		return fmt.Errorf("start confirm of %s attempt %d: %w", e.Key, e.Attempt, err)
	}
	return nil
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
	t := target{post: post.Post{ID: post.ID(cur.Subject)}, account: acc}
	if err := p.setTarget(ctx, t, post.Publishing, "", next.Reason); err != nil {
		return next, err
	}
	return next, p.startConfirm(ctx, acc, client, next)
}

// ConfirmName is the confirm workflow's execution name: unique per attempt.
func ConfirmName(key ledger.Key, attempt int) string {
	return fmt.Sprintf("%s-%d", key, attempt)
}

// setTarget moves the post's target, tolerating a target already there.
func (p *Publisher) setTarget(ctx context.Context, t target, s post.TargetStatus, remoteID, reason string) error {
	_, err := p.Posts.UpdateTarget(ctx, t.post.ID, t.account.ID, post.TargetUpdate{Status: s, RemoteID: remoteID, Reason: reason, At: p.now()})
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

const (
	defaultLease       = 2 * time.Minute
	defaultMaxAttempts = 5
)
