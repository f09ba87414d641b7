package publishing

import (
	"context"
	"errors"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// Ledger persists ledger entries with conditional writes. Every adapter
// passes publishingtest.TestLedger.
type Ledger interface {
	// Create writes a new entry if no entry has its key (DynamoDB:
	// attribute_not_exists). It refuses an entry ledger.CheckNew refuses and
	// returns ledger.ErrConflict when the key exists.
	Create(ctx context.Context, e ledger.Entry) error
	// Get reads an entry (strongly consistent) or returns ledger.ErrNotFound.
	Get(ctx context.Context, key ledger.Key) (ledger.Entry, error)
	// Update replaces prev by next if the stored entry still has prev's
	// state and attempt, and — for held → held moves, which keep both —
	// prev's task token and decision; ledger.ErrConflict otherwise. It refuses, with
	// ledger.ErrTransition, anything ledger.Check refuses. It records the
	// move in the entry's history.
	Update(ctx context.Context, prev, next ledger.Entry) error
	// Open lists pending and unknown entries open since before t, oldest first.
	Open(ctx context.Context, before time.Time, limit int) ([]ledger.Entry, error)
	// Held lists held entries, least recently updated first (ties by key):
	// the operator's decisions to take, and the sweeper's recorded
	// decisions to make converge. Its cost follows the held entries, never
	// the ledger. A limit ≤ 0 means no limit.
	Held(ctx context.Context, limit int) ([]ledger.Entry, error)
	// History lists an entry's transitions, oldest first.
	History(ctx context.Context, key ledger.Key) ([]ledger.Transition, error)
	// RecordCheckpoint stores checkpoint (a handle the platform made in
	// the first step of a two-step create) on e if the stored entry is
	// still pending with e's attempt and lease owner; ledger.ErrConflict
	// otherwise. It is not a state move: no history is recorded.
	RecordCheckpoint(ctx context.Context, e ledger.Entry, checkpoint string) error
}

// Posts persists posts and their targets' statuses. Every adapter passes
// publishingtest.TestPosts.
type Posts interface {
	// CreatePost stores a new post; post.ErrConflict if the id exists.
	CreatePost(ctx context.Context, p post.Post) error
	// GetPost reads a post (strongly consistent) or returns post.ErrNotFound.
	GetPost(ctx context.Context, id post.ID) (post.Post, error)
	// UpdateTarget moves one target's status if post.Target.Apply allows it
	// from the stored status, atomically; post.ErrConflict otherwise.
	UpdateTarget(ctx context.Context, id post.ID, account post.AccountID, u post.TargetUpdate) (post.Target, error)
	// Due lists targets in status scheduled whose slot is not after t,
	// earliest first.
	Due(ctx context.Context, t time.Time, limit int) ([]TargetRef, error)
	// Unfinished lists targets in status triggered or publishing whose
	// status was last set before t, and waiting targets whose NextTry is
	// before t, oldest first (the sweeper's "triggered and not finished"
	// check; a waiting target is not stuck before its next try).
	Unfinished(ctx context.Context, t time.Time, limit int) ([]TargetRef, error)
	// CountTargets counts targets by status: the given statuses only, or
	// every status when none is given (statuses with none may be absent).
	// Counting a few statuses must not cost a scan of every target.
	CountTargets(ctx context.Context, statuses ...post.TargetStatus) (map[post.TargetStatus]int, error)
}

// PostFilter selects the posts an operator's listing returns (the
// stores' ListPostPage): those with at least one target that matches
// every condition given.
type PostFilter struct {
	// Statuses, if any, are the statuses a matching target may have;
	// none means every status.
	Statuses []post.TargetStatus
	// Account, if set, is the account a matching target goes to.
	Account post.AccountID
	// From and To, if set, bound the slots of a matching target: From ≤
	// slot < To (the calendar's window). Zero means unbounded.
	From, To time.Time
	// Limit is the most posts returned; ≤ 0 means the store's default.
	Limit int
	// After is the cursor of the page before (PostPage.Next); "" for the
	// first page. A cursor is a position, not a filter: it may be used
	// with other filters than its page's.
	After string
}

// PostPage is one page of an operator's post listing.
type PostPage struct {
	Posts []post.Post
	// Next is the cursor of the following page (PostFilter.After), ""
	// when no matching post is left.
	Next string
}

// ErrBadCursor is returned (wrapped) by a store's ListPostPage for a
// cursor it did not make.
var ErrBadCursor = errors.New("not a cursor of this post listing")

// SlotLister is a Posts that can list the targets scheduled at exactly
// one slot without reading those of earlier slots (Due lists every
// scheduled target up to a time), a page at a time. The trigger uses it
// when Posts has it.
type SlotLister interface {
	// DueAt lists up to limit targets scheduled at exactly slot, in a
	// stable order, from after the position after ("" from the start).
	// The page's Next is where the next page starts ("" when the slot has
	// no more); a page may hold fewer than limit targets (and even none)
	// while Next is not "". A limit ≤ 0 means no limit.
	DueAt(ctx context.Context, slot time.Time, after string, limit int) (SlotPage, error)
}

// SlotPage is one page of a slot's scheduled targets.
type SlotPage struct {
	Targets []TargetRef
	// Next is the position after the page's last listed target, opaque;
	// "" when nothing follows.
	Next string
}

// SlotFiring is how far the firing of one slot got.
type SlotFiring struct {
	// After is the position (SlotPage.Next) up to which every target's
	// job was sent; "" before any.
	After string `json:"after,omitempty"`
	// Sent counts the jobs sent so far, by every invocation.
	Sent int `json:"sent"`
	// Done: every target listed was sent.
	Done bool `json:"done"`
}

// ErrSlotBusy is returned by SlotFirings.ClaimSlot when another firing of
// the slot holds it.
var ErrSlotBusy = errors.New("another firing of the slot is in progress")

// SlotFirings records the firings of slots, so that a retried, repeated
// or continued firing sends only the jobs no firing of the slot sent yet,
// and two firings never send a slot at once. The trigger uses it when
// Posts has it (dynamostore: one workspace item a slot).
type SlotFirings interface {
	// ClaimSlot takes the slot's firing for owner until until, unless
	// another owner holds it at now (ErrSlotBusy), and returns how far the
	// slot's firings got before (zero for a slot never fired). A done slot
	// is returned done, not claimed. For a slot never fired, plan (if not
	// zero) is recorded in the same write, and planned reports it: a
	// firing that knows its whole slot records it done before sending, one
	// write a slot.
	ClaimSlot(ctx context.Context, slot time.Time, owner string, now, until time.Time, plan SlotFiring) (prev SlotFiring, planned bool, err error)
	// RecordSlot stores how far owner's firing got, done or not, if owner
	// still holds the claim (post.ErrConflict otherwise). Done frees the
	// claim; so does release, leaving the slot to the next firing.
	RecordSlot(ctx context.Context, slot time.Time, owner string, f SlotFiring, release bool) error
}

// SlotContinuer hands what is left of a slot's firing to a new invocation
// (AWS: the trigger invokes itself asynchronously), when the firing runs
// out of its own time.
type SlotContinuer interface {
	ContinueSlot(ctx context.Context, slot time.Time) error
}

// TargetReader is a Posts that can read one target of a post with the
// post's content, without its other targets (strongly consistent, like
// GetPost): the returned post's Targets hold that target only, or nothing
// when the post has no such target; post.ErrNotFound when there is no
// post. On a store where a post's targets are items of their own it costs
// less than GetPost, and concurrent reads can share one request
// (dynamostore: one BatchGetItem for many). The publisher uses it when
// Posts implements it.
type TargetReader interface {
	GetTarget(ctx context.Context, id post.ID, account post.AccountID) (post.Post, error)
}

// TargetRef names one target of one post.
type TargetRef struct {
	Post    post.ID        `json:"post_id"`
	Account post.AccountID `json:"account_id"`
	Slot    time.Time      `json:"slot"`
}

// Accounts persists accounts and their credentials. Credentials are kept
// apart from accounts and never logged.
type Accounts interface {
	PutAccount(ctx context.Context, a post.Account) error
	// GetAccount returns post.ErrNotFound for an unknown id.
	GetAccount(ctx context.Context, id post.AccountID) (post.Account, error)
	ListAccounts(ctx context.Context) ([]post.Account, error)
	// Credential returns post.ErrNotFound when none is stored.
	Credential(ctx context.Context, id post.AccountID) (platform.Credential, error)
	// PutCredential stores a credential. An empty access token is refused;
	// an empty refresh token keeps the stored one.
	PutCredential(ctx context.Context, id post.AccountID, c platform.Credential) error
	// LeaseRefresh takes the account's refresh lease for owner until the
	// given time, if it is free or expired at now; post.ErrConflict otherwise.
	LeaseRefresh(ctx context.Context, id post.AccountID, owner string, now, until time.Time) error
	// SaveRefreshed stores the refreshed credential and drops the lease, only
	// if owner still holds it (post.ErrConflict otherwise). An empty refresh
	// token keeps the stored one; a stored credential's RefreshLostAt is
	// cleared. A nil credential only drops the lease.
	SaveRefreshed(ctx context.Context, id post.AccountID, owner string, c *platform.Credential) error
	// MarkRefreshLost records, if owner still holds the refresh lease, that
	// a refresh with the stored refresh token was sent and its answer lost
	// (Credential's RefreshLostAt = at), and drops the lease;
	// post.ErrConflict otherwise. The tokens are kept.
	MarkRefreshLost(ctx context.Context, id post.AccountID, owner string, at time.Time) error
}

// Size limits every Queue adapter enforces (SQS's own limit for bodies):
// a larger body is refused by Send, a longer reason is cut by DeadLetter.
const (
	MaxMessageBytes = 256 << 10
	MaxReasonBytes  = 1 << 10
)

// Message is one queue delivery.
type Message struct {
	ID   string
	Body []byte
	// ReceiveCount is how many times the message was delivered, this one included.
	ReceiveCount int
	// Receipt identifies this delivery; it is what Ack, Retry and DeadLetter take.
	Receipt string
	SentAt  time.Time
}

// DeadLetter is a message moved aside with the reason.
type DeadLetter struct {
	ID           string
	Body         []byte
	ReceiveCount int
	Reason       string
	At           time.Time
}

// Queue is an at-least-once queue with visibility timeouts and a
// dead-letter queue (SQS semantics). Every adapter passes
// publishingtest.TestQueue.
type Queue interface {
	// Send enqueues a body, invisible for delay. A body over
	// MaxMessageBytes is refused.
	Send(ctx context.Context, body []byte, delay time.Duration) (id string, err error)
	// Receive returns up to max visible messages and hides them for
	// visibility. A message delivered its queue's maximum number of times
	// and visible again is dead-lettered instead, as is a stored message
	// that cannot be decoded (with the reason): one bad message never
	// stops the others. It does not block.
	Receive(ctx context.Context, max int, visibility time.Duration) ([]Message, error)
	// Ack deletes a delivered message.
	Ack(ctx context.Context, receipt string) error
	// Retry makes a delivered message visible again after delay.
	Retry(ctx context.Context, receipt string, delay time.Duration) error
	// DeadLetter moves a delivered message to the dead-letter queue with a
	// reason, cut to MaxReasonBytes.
	DeadLetter(ctx context.Context, receipt, reason string) error
	// DeadLetters lists dead-lettered messages, oldest first.
	DeadLetters(ctx context.Context, limit int) ([]DeadLetter, error)
	// Depth counts the queue's messages, and its dead letters, without
	// receiving any: SQS's approximate counts, exact on one machine.
	Depth(ctx context.Context) (QueueDepth, error)
}

// QueueDepth is how many messages a queue holds, by where they stand.
type QueueDepth struct {
	// Visible messages wait to be received: more than none means the
	// consumers are behind (a backlog).
	Visible int `json:"visible"`
	// InFlight messages were received and are neither deleted nor visible
	// again (being handled, or retried later).
	InFlight int `json:"in_flight"`
	// Delayed messages were sent with a delay that has not passed and
	// were never received.
	Delayed int `json:"delayed"`
	// Undecodable messages cannot be read by this build (one machine: a
	// visible_at another program wrote); the next receive dead-letters
	// them.
	Undecodable int `json:"undecodable,omitempty"`
	// DeadLetters are in the queue's dead-letter queue (on SQS a
	// dead-letter queue shared by several queues is counted whole).
	DeadLetters int `json:"dead_letters"`
}

// Outgoing is one message of a batch send: a body and its delay, as
// Queue.Send takes them.
type Outgoing struct {
	Body  []byte
	Delay time.Duration
}

// BatchSender is a Queue that sends many messages in few requests (SQS's
// SendMessageBatch: ten per request). SendBatch returns the ids in order;
// on a partial failure the ids of the messages not sent are "" and the
// error says which.
type BatchSender interface {
	SendBatch(ctx context.Context, msgs []Outgoing) ([]string, error)
}

// DeadLetterCounter is a Queue that can count its dead letters without
// reading them (SQS: the dead-letter queue's approximate message count).
// The sweeper uses it when the queue has it: listing would receive every
// dead letter each minute, and hide them from the operator meanwhile.
type DeadLetterCounter interface {
	CountDeadLetters(ctx context.Context) (int, error)
}

// ErrMessageNotFound is returned by DeadLetterAdmin for an id that is not
// in the dead-letter queue.
var ErrMessageNotFound = errors.New("no dead letter with that id")

// DeadLetterAdmin is the operator's hand on a dead-letter queue. Every
// adapter passes publishingtest.TestQueue.
type DeadLetterAdmin interface {
	// Redrive moves the dead letter with the message id back to the queue,
	// visible at once, its receive count reset; ErrMessageNotFound if there
	// is none (a second redrive of the same id finds none).
	Redrive(ctx context.Context, id string) error
	// Drop deletes the dead letter with the message id for good;
	// ErrMessageNotFound if there is none.
	Drop(ctx context.Context, id string) error
}

// Blocklist lists the workspace's blocked words and phrases: a post naming
// one is refused when added and held instead of sent.
type Blocklist interface {
	BlockedTerms(ctx context.Context) ([]post.BlockedTerm, error)
}

// ConfirmInput starts a confirm workflow for one ledger entry attempt.
type ConfirmInput struct {
	Key     ledger.Key `json:"key"`
	Attempt int        `json:"attempt"`
	// Policy is "auto", "manual" or "unreadable" (the platform cannot be read).
	Policy string `json:"policy"`
	// FirstWaitSeconds before the first look (shorter than WaitSeconds
	// when the platform answered quickly, e.g. a proxy's 503), then
	// WaitSeconds between looks, and MaxChecks looks before giving up.
	FirstWaitSeconds int `json:"first_wait_seconds"`
	WaitSeconds      int `json:"wait_seconds"`
	MaxChecks        int `json:"max_checks"`
}

// ErrConfirmClosed is returned by Flows.StartConfirm when a workflow of
// that name has already run and stopped (succeeded or failed): the name
// cannot be used again.
var ErrConfirmClosed = errors.New("confirm workflow of that name has already stopped")

// Flows starts confirm workflows (Step Functions, or localflow running the
// same ASL file).
type Flows interface {
	// StartConfirm starts the workflow named name. A workflow of that name
	// that is still running is not an error (idempotent start, whatever its
	// input); one that has stopped gives ErrConfirmClosed.
	StartConfirm(ctx context.Context, name string, in ConfirmInput) error
}

// Platforms builds platform clients for accounts.
type Platforms interface {
	// Client returns a client for the account acting with the credential.
	Client(ctx context.Context, a post.Account, c platform.Credential) (platform.Client, error)
}

// Pacer spends an account's posting budget, shared through the store by
// every worker and function instance. Both stores implement it, and each
// runtime passes its store as Publisher.Pacer; without it nothing is
// paced. Every adapter passes publishingtest.TestPacer.
type Pacer interface {
	// Pace takes one send from the account's budget under rates at now
	// (pace.Take, atomically): it returns 0 when the send was taken, and
	// otherwise how long until one can be, having taken nothing.
	Pace(ctx context.Context, account post.AccountID, rates []platform.Rate, now time.Time) (time.Duration, error)
}

// MediaStore reads attachment bytes by reference. An error wrapping
// post.ErrNotFound (no such attachment) or ErrMediaInvalid (the ref cannot
// name one) fails the post; any other error is a read that did not work
// this time, and the post waits.
type MediaStore interface {
	ReadMedia(ctx context.Context, ref string) ([]byte, error)
}

// MediaURLs gives an attachment a public, short-lived URL, for a platform
// that fetches attachments itself (platform.Capabilities.MediaByURL:
// Threads). The AWS runtime signs a URL of the attachment's S3 object.
type MediaURLs interface {
	MediaURL(ctx context.Context, ref string) (string, error)
}
