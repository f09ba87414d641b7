package publishing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"oncepost/shared/emf"
	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// Confirm policies, chosen when the workflow starts.
const (
	// PolicyAuto: not found after the looks → released and re-sent.
	PolicyAuto = string(post.GateAuto)
	// PolicyManual: not found after the looks → held for an operator.
	PolicyManual = string(post.GateManual)
	// PolicyUnreadable: the platform cannot be read → held without looking.
	PolicyUnreadable = "unreadable"
)

// LookSkew widens the lookup window before the send time, for clock skew
// between us and the platform. It matters only for entries without a
// point to look from (LookAfter), e.g. written by an older version.
const LookSkew = 2 * time.Minute

// ErrTaskNotWaiting is returned by Tasks.SendTaskSuccess when no workflow
// task waits on the token (it was answered, retried with a new token, or
// its workflow stopped).
var ErrTaskNotWaiting = errors.New("no workflow task waits on that token")

// Tasks answers a workflow task that waits for a callback (Step Functions
// SendTaskSuccess; localflow's engine for the embedded runtime).
type Tasks interface {
	// SendTaskSuccess completes the task waiting on token with output;
	// ErrTaskNotWaiting if none waits on it.
	SendTaskSuccess(ctx context.Context, token string, output json.RawMessage) error
}

// Confirmer holds the confirm workflow's steps. Each step is safe to run
// more than once (Step Functions retries tasks): a step whose entry has
// already moved on reports what happened instead of acting again.
type Confirmer struct {
	Ledger    Ledger
	Posts     Posts
	Accounts  Accounts
	Platforms Platforms
	// Queue receives the job again after Release.
	Queue Queue
	// Credentials reads and refreshes credentials (a Look that gets a 401
	// refreshes like Publish); share the Publisher's.
	Credentials *Credentials
	// Tasks answers the Hold task of an entry that needs no operator (it
	// settled meanwhile) or that an operator already decided.
	Tasks Tasks
	// Metrics receives event metrics; nil drops them.
	Metrics MetricsEmitter
	// Now is the clock; default time.Now.
	Now func() time.Time
	// CallTimeout bounds one platform read; default 10 s.
	CallTimeout time.Duration
	// LookSkew replaces the package's LookSkew (a scaled drill scales it).
	LookSkew time.Duration
	Logger   *slog.Logger

	credsOnce sync.Once
	creds     *Credentials
}

func (c *Confirmer) credentials() *Credentials {
	if c.Credentials != nil {
		return c.Credentials
	}
	c.credsOnce.Do(func() {
		c.creds = &Credentials{Accounts: c.Accounts, Owner: "confirm", CallTimeout: c.CallTimeout, Now: c.Now, Metrics: c.Metrics, Logger: c.Logger}
	})
	return c.creds
}

func (c *Confirmer) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, orDefault(c.CallTimeout, 10*time.Second))
}

// LookResult is the Look step's answer, read by the workflow's Choice state.
type LookResult struct {
	Found    bool   `json:"found"`
	RemoteID string `json:"remote_id,omitempty"`
	// Resolved: the entry has left unknown for this attempt (a late
	// success, an operator); the workflow ends without acting.
	Resolved bool   `json:"resolved"`
	State    string `json:"state"`
}

func (c *Confirmer) now() time.Time { return nowFrom(c.Now) }

func (c *Confirmer) log() *slog.Logger { return loggerOr(c.Logger) }

// current reads the entry and reports whether it is still the unknown
// attempt the workflow was started for.
func (c *Confirmer) current(ctx context.Context, in ConfirmInput) (ledger.Entry, bool, error) {
	e, err := c.Ledger.Get(ctx, in.Key)
	if err != nil {
		return e, false, fmt.Errorf("confirm %s: %w", in.Key, err)
	}
	return e, e.State == ledger.Unknown && e.Attempt == in.Attempt, nil
}

// Look reads the platform back for the entry's post: by handle where the
// platform can, by fingerprint among recent posts otherwise. A platform
// read error is returned (the workflow retries the task); not found is an
// answer, not an error.
func (c *Confirmer) Look(ctx context.Context, in ConfirmInput) (LookResult, error) {
	e, open, err := c.current(ctx, in)
	if err != nil {
		return LookResult{}, err
	}
	if !open {
		return LookResult{Found: e.State == ledger.Confirmed, RemoteID: e.RemoteID, Resolved: true, State: string(e.State)}, nil
	}
	acc, err := c.Accounts.GetAccount(ctx, post.AccountID(e.Account))
	if err != nil {
		return LookResult{}, fmt.Errorf("look %s: account: %w", in.Key, err)
	}
	// A 401 refreshes the credential and looks again, as Publish does.
	a, err := newAuthed(ctx, c.credentials(), c.Platforms, acc, c.callContext)
	if err != nil {
		return LookResult{}, fmt.Errorf("look %s: %w", in.Key, err)
	}
	caps := a.client.Capabilities()
	text, media, count, err := c.postOf(ctx, e, acc.Platform, caps.InlineMedia || caps.MediaByURL)
	if err != nil {
		return LookResult{}, fmt.Errorf("look %s: %w", in.Key, err)
	}
	// A thread's part is told from its look-alikes by what it answers.
	reply, err := partReply(ctx, c.Ledger, e)
	if err != nil {
		return LookResult{}, fmt.Errorf("look %s: %w", in.Key, err)
	}
	q := platform.LookupQuery{
		Handle: e.Handle, Fingerprint: e.Fingerprint, MediaSHA256: media, MediaCount: count, Text: text,
		After: e.LookAfter, NotBefore: e.SentAt.Add(-orDefault(c.LookSkew, LookSkew)),
		CreatedAt: e.Slot, Checkpoint: e.Checkpoint, Reply: reply,
	}
	var (
		rp    platform.RemotePost
		found bool
	)
	err = a.do(ctx, func(ctx context.Context, cl platform.Client) (err error) {
		rp, found, err = cl.Lookup(ctx, q)
		return err
	})
	if err != nil {
		return LookResult{}, fmt.Errorf("look %s: %w", in.Key, err)
	}
	c.log().InfoContext(ctx, "confirm look", "key", in.Key, "attempt", in.Attempt, "found", found, "remote_id", rp.RemoteID)
	return LookResult{Found: found, RemoteID: rp.RemoteID, State: string(e.State)}, nil
}

// postOf returns the entry's post text on the platform, maps the remote
// ids of its uploaded media to their SHA-256s and counts its attachments.
// A deleted post has none of them. A platform that takes media with the
// create (noUploads) has no upload entries to read.
func (c *Confirmer) postOf(ctx context.Context, e ledger.Entry, platformName string, noUploads bool) (string, map[string]string, int, error) {
	postID, part := ledger.SubjectPart(e.Subject)
	pst, err := c.Posts.GetPost(ctx, post.ID(postID))
	if errors.Is(err, post.ErrNotFound) {
		return "", nil, 0, nil
	}
	if err != nil {
		return "", nil, 0, fmt.Errorf("post %s: %w", postID, err)
	}
	pst = pst.Part(part)
	m := map[string]string{}
	media := pst.MediaFor(platformName)
	if noUploads {
		return pst.TextFor(platformName), m, len(media), nil
	}
	for _, md := range media {
		u, err := c.Ledger.Get(ctx, ledger.UploadKey(e.Account, md.SHA256, e.Key))
		if errors.Is(err, ledger.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", nil, 0, fmt.Errorf("upload entry %s: %w", md.SHA256, err)
		}
		if u.RemoteID != "" {
			m[u.RemoteID] = md.SHA256
		}
	}
	return pst.TextFor(platformName), m, len(media), nil
}

// Confirm records the found post (or an operator's word that it is there):
// unknown or held → confirmed, target published.
func (c *Confirmer) Confirm(ctx context.Context, in ConfirmInput, remoteID string) error {
	e, ok, err := c.awaiting(ctx, in)
	if err != nil {
		return err
	}
	if !ok {
		return c.reapply(ctx, e, in, ledger.Confirmed, post.Published)
	}
	next, err := e.Confirm(remoteID, c.now())
	if err != nil {
		return err
	}
	if err := c.Ledger.Update(ctx, e, next); err != nil {
		return fmt.Errorf("confirm %s: %w", in.Key, err)
	}
	c.log().InfoContext(ctx, "confirmed after ambiguous outcome", "key", in.Key, "attempt", in.Attempt, "remote_id", remoteID, "from", e.State)
	emitMetrics(ctx, c.Metrics, c.log(),
		emf.Metric{Name: MetricPublished, Unit: emf.Count, Value: 1},
		emf.Metric{Name: MetricPublishLateness, Unit: emf.Seconds, Value: c.now().Sub(e.Slot).Seconds()})
	return c.setTarget(ctx, next, post.Published)
}

// Reject records an operator's decision that the post must not go out:
// held → failed, target failed.
func (c *Confirmer) Reject(ctx context.Context, in ConfirmInput, reason string) error {
	e, err := c.Ledger.Get(ctx, in.Key)
	if err != nil {
		return fmt.Errorf("reject %s: %w", in.Key, err)
	}
	if e.State != ledger.Held || e.Attempt != in.Attempt {
		return c.reapply(ctx, e, in, ledger.Failed, post.Failed)
	}
	if reason == "" || reason == ReasonOperatorRejected {
		// The workflow's Reject step carries no reason; the operator's is
		// recorded with the decision.
		var d Decision
		if json.Unmarshal([]byte(e.Decision), &d) == nil && d.Reason != "" {
			reason = ReasonOperatorRejected + ": " + d.Reason
		}
	}
	if reason == "" {
		reason = ReasonOperatorRejected
	}
	next, err := e.Fail(reason, c.now())
	if err != nil {
		return err
	}
	if err := c.Ledger.Update(ctx, e, next); err != nil {
		return fmt.Errorf("reject %s: %w", in.Key, err)
	}
	c.log().WarnContext(ctx, "rejected by an operator", "key", in.Key, "attempt", in.Attempt, "reason", reason)
	return c.setTarget(ctx, next, post.Failed)
}

// reapply finishes a step that is being retried after its ledger move
// landed: the target update may not have.
func (c *Confirmer) reapply(ctx context.Context, e ledger.Entry, in ConfirmInput, moved ledger.State, s post.TargetStatus) error {
	if e.State != moved || e.Attempt != in.Attempt {
		return nil
	}
	return c.setTarget(ctx, e, s)
}

// awaiting reads the entry and reports whether it still waits for this
// workflow's decision: unknown or held, at the workflow's attempt.
func (c *Confirmer) awaiting(ctx context.Context, in ConfirmInput) (ledger.Entry, bool, error) {
	e, err := c.Ledger.Get(ctx, in.Key)
	if err != nil {
		return e, false, fmt.Errorf("confirm %s: %w", in.Key, err)
	}
	return e, (e.State == ledger.Unknown || e.State == ledger.Held) && e.Attempt == in.Attempt, nil
}

// Release records that the post was looked for and not found (or that an
// operator approved a re-send): unknown or held → released, then the job goes back on the queue to be re-sent with the same
// handle. Marking comes first: a job delivered while the entry is still
// unknown is acknowledged without sending, so enqueueing first could lose
// it. A retry of this step after the mark re-enqueues (the ledger absorbs
// a second delivery).
func (c *Confirmer) Release(ctx context.Context, in ConfirmInput) error {
	e, err := c.Ledger.Get(ctx, in.Key)
	if err != nil {
		return fmt.Errorf("release %s: %w", in.Key, err)
	}
	switch {
	case (e.State == ledger.Unknown || e.State == ledger.Held) && e.Attempt == in.Attempt:
		reason := ReasonNotFoundAfterLooks
		switch {
		case e.State == ledger.Held && e.Reason == ReasonDuplicateOnAccount:
			reason = ReasonOperatorReleasedDuplicate
		case e.State == ledger.Held:
			reason = ReasonOperatorReleased
		}
		next, err := e.Release(reason, c.now())
		if err != nil {
			return err
		}
		if err := c.Ledger.Update(ctx, e, next); err != nil {
			return fmt.Errorf("release %s: %w", in.Key, err)
		}
		c.log().WarnContext(ctx, "released for re-send", "key", in.Key, "attempt", in.Attempt, "from", e.State, "reason", reason)
		emitCount(ctx, c.Metrics, c.log(), MetricReleased)
		if e.State == ledger.Held {
			// The operator's release puts the target back in line.
			if err := c.setTarget(ctx, next, post.Triggered); err != nil {
				return err
			}
		}
		e = next
	case e.State == ledger.Released && e.Attempt == in.Attempt:
		// A retry of this step: the mark landed, the enqueue may not have.
	default:
		return nil
	}
	return c.enqueue(ctx, e)
}

func (c *Confirmer) enqueue(ctx context.Context, e ledger.Entry) error {
	body, err := json.Marshal(jobOf(e))
	if err != nil {
		return fmt.Errorf("encode job: %w", err)
	}
	if _, err := c.Queue.Send(ctx, body, 0); err != nil {
		return fmt.Errorf("re-enqueue %s: %w", e.Key, err)
	}
	return nil
}

// Hold hands the entry to an operator: unknown → held with the workflow's
// task token, target held. The workflow waits for the operator's decision.
//
// A Hold step retried by the workflow waits on a new token: the entry,
// already held at this attempt, then records the newer token (held →
// held), so that an operator's decision reaches the task that waits. If an
// operator already decided, or the entry settled before the hold, nobody
// will answer the token: the step answers it itself (Tasks), with the
// recorded decision or with "resolved".
func (c *Confirmer) Hold(ctx context.Context, in ConfirmInput, taskToken, reason string) error {
	e, err := c.Ledger.Get(ctx, in.Key)
	if err != nil {
		return fmt.Errorf("hold %s: %w", in.Key, err)
	}
	reason = readableReason(reason)
	switch {
	case e.State == ledger.Unknown && e.Attempt == in.Attempt:
		next, err := e.Hold(reason, "", c.now())
		if err != nil {
			return err
		}
		next.TaskToken = taskToken
		if err := c.Ledger.Update(ctx, e, next); err != nil {
			return fmt.Errorf("hold %s: %w", in.Key, err)
		}
		c.log().WarnContext(ctx, "held for an operator", "key", in.Key, "attempt", in.Attempt, "reason", reason)
		return c.setTarget(ctx, next, post.Held)
	case e.State == ledger.Held && e.Attempt == in.Attempt && e.Decision != "":
		return c.answer(ctx, taskToken, json.RawMessage(e.Decision))
	case e.State == ledger.Held && e.Attempt == in.Attempt:
		if e.TaskToken != taskToken {
			next, err := e.Retoken(taskToken, c.now())
			if err != nil {
				return err
			}
			if err := c.Ledger.Update(ctx, e, next); err != nil {
				return fmt.Errorf("hold %s: record the new task token: %w", in.Key, err)
			}
		}
		// A retry of this step: the target update may not have landed.
		return c.setTarget(ctx, e, post.Held)
	default:
		// Settled before the hold (a late success, an operator).
		return c.answer(ctx, taskToken, json.RawMessage(`{"decision":"resolved"}`))
	}
}

// readableReason turns the Lambda error document a workflow puts in a
// reason ({"errorMessage":…,"errorType":…}, how Step Functions reports a
// function's error Cause) into its message, and bounds the reason's length.
func readableReason(reason string) string {
	if i := strings.Index(reason, `{"errorMessage"`); i >= 0 {
		var doc struct {
			Message string `json:"errorMessage"`
		}
		if json.Unmarshal([]byte(reason[i:]), &doc) == nil && doc.Message != "" {
			reason = reason[:i] + doc.Message
		}
	}
	return cut(reason, MaxReasonBytes)
}

// cut bounds s to n bytes on a UTF-8 boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "… (cut)"
	i := n - len(mark)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + mark
}

// answer completes the Hold task with output, if Tasks is configured.
func (c *Confirmer) answer(ctx context.Context, token string, output json.RawMessage) error {
	if c.Tasks == nil {
		return nil
	}
	if err := c.Tasks.SendTaskSuccess(ctx, token, output); err != nil && !errors.Is(err, ErrTaskNotWaiting) {
		return fmt.Errorf("answer hold: %w", err)
	}
	return nil
}
