// Package post holds what an operator prepares: a Post with its body, media
// and one Target per account, the Account it goes to, and the validation
// that refuses a post before it is ever scheduled.
//
// A target moves through these statuses:
//
//	needs_approval → scheduled (approved) | cancelled
//	scheduled → triggered → published
//	                      → publishing (the outcome was ambiguous; a confirm loop is reading the platform back)
//	                      → waiting (the platform did not act, e.g. throttled; NextTry says when it is asked again)
//	                      → failed | held
//	publishing → waiting (looked for, not found, released; the re-send was not performed)
//	scheduled|triggered|waiting → cancelled
//	published → deleted (an operator deleted it from the platform)
//
// On the happy path a target goes from triggered straight to published: the
// ledger, not the post, records that a call is in flight.
package post

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// ID identifies a post.
type ID string

// AccountID identifies an account in oncepost (not on the platform).
type AccountID string

// ErrNotFound is returned by stores when a post or account does not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is returned by stores when a conditional write lost a race or
// a status change is not allowed from the stored status.
var ErrConflict = errors.New("conflict")

// GatePolicy says what happens when a confirm loop cannot find a post after
// an ambiguous outcome.
type GatePolicy string

const (
	// GateAuto releases the entry for a re-send.
	GateAuto GatePolicy = "auto"
	// GateManual holds the entry for an operator.
	GateManual GatePolicy = "manual"
)

// Account is one destination on one platform.
type Account struct {
	ID AccountID `json:"id"`
	// Platform names the adapter, e.g. "mastodon".
	Platform string `json:"platform"`
	// Handle is the account's name on the platform, e.g. "@news@example.social".
	Handle string `json:"handle"`
	// BaseURL is the platform instance, e.g. "https://example.social".
	BaseURL string `json:"base_url"`
	// RemoteID is the account's id on the platform, when known.
	RemoteID string `json:"remote_id,omitempty"`
	// CredentialRef names the credential in the secret store.
	CredentialRef string `json:"credential_ref"`
	// Gate is the policy for unconfirmed ambiguous outcomes.
	Gate GatePolicy `json:"gate"`
	// Status is AccountOK (empty) or AccountReconnectNeeded, with the
	// reason in StatusReason.
	Status       AccountStatus `json:"status,omitempty"`
	StatusReason string        `json:"status_reason,omitempty"`
	// Limits are the instance's content limits, read when the account was
	// added; a zero field means "not known" and the platform's default
	// applies.
	Limits Limits `json:"limits"`
	// TimeZone is the account's IANA time zone, e.g. "Europe/Berlin": its
	// posting slots are read in it, and the surfaces show its times in it.
	// Empty means UTC.
	TimeZone string `json:"time_zone,omitempty"`
	// Slots are the account's posting slot rules, in the scheduler's
	// cron dialect (e.g. "cron(0 9 ? * MON-FRI *)"), read in TimeZone: a
	// post added to the account's queue takes the next free one.
	Slots []string `json:"slots,omitempty"`
	// RequireApproval: a post to the account waits in needs_approval
	// until someone with the decide scope approves it.
	RequireApproval bool `json:"require_approval,omitempty"`
}

// Location is the account's time zone (UTC when none is set). A name
// that does not load (ValidTimeZone refuses it before it is stored) is
// UTC too.
func (a Account) Location() *time.Location {
	if a.TimeZone == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(a.TimeZone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// ValidTimeZone checks an IANA time zone name as an account's TimeZone:
// "" (UTC) or a name the zone database knows, and not "Local" (this
// machine's zone, which another machine does not share).
func ValidTimeZone(name string) error {
	switch {
	case name == "":
		return nil
	case name == "Local":
		return errors.New(`"Local" is this machine's zone, not a zone name; give an IANA name such as Europe/Berlin`)
	}
	if _, err := time.LoadLocation(name); err != nil {
		return fmt.Errorf("%q is not an IANA time zone name (such as Europe/Berlin or America/New_York)", name)
	}
	return nil
}

// AccountStatus says whether an account can publish.
type AccountStatus string

const (
	// AccountOK: the account's credential works (or was never refused).
	AccountOK AccountStatus = ""
	// AccountReconnectNeeded: the platform refused the credential and its
	// refresh; an operator must connect the account again.
	AccountReconnectNeeded AccountStatus = "reconnect_needed"
)

// Media is one attachment, referenced by content hash.
type Media struct {
	// Ref locates the bytes (a path in the media store).
	Ref string `json:"ref"`
	// SHA256 is the hex SHA-256 of the bytes.
	SHA256      string `json:"sha256"`
	ContentType string `json:"content_type"`
	Alt         string `json:"alt"`
	// Fitted are the attachment's versions fitted to a platform's image
	// limits (resized or re-encoded when the post was added), by platform
	// name. A platform not named takes the attachment as it is.
	Fitted map[string]Fitted `json:"fitted,omitempty"`
}

// Fitted is an attachment's version for one platform: other bytes, the
// same alt text.
type Fitted struct {
	Ref         string `json:"ref"`
	SHA256      string `json:"sha256"`
	ContentType string `json:"content_type"`
}

// For is the attachment as it goes to a platform: its fitted version
// there, or itself; either way without versions of its own.
func (m Media) For(platform string) Media {
	if f, ok := m.Fitted[platform]; ok {
		return Media{Ref: f.Ref, SHA256: f.SHA256, ContentType: f.ContentType, Alt: m.Alt}
	}
	m.Fitted = nil
	return m
}

// TargetStatus is where one (post, account) pair stands.
type TargetStatus string

// Target statuses; see the package comment for the moves between them.
const (
	// NeedsApproval: the account or the workspace requires approval; the
	// target is scheduled only once someone approves it.
	NeedsApproval TargetStatus = "needs_approval"
	Scheduled     TargetStatus = "scheduled"
	Triggered     TargetStatus = "triggered"
	Publishing    TargetStatus = "publishing"
	// Waiting: the platform did not act (throttled, unreachable); the
	// target is tried again at its NextTry.
	Waiting   TargetStatus = "waiting"
	Published TargetStatus = "published"
	Failed    TargetStatus = "failed"
	Held      TargetStatus = "held"
	Cancelled TargetStatus = "cancelled"
	// Deleted: the published post was deleted from the platform through
	// the ledger (RemoteID keeps the id it had).
	Deleted TargetStatus = "deleted"
)

// Terminal reports whether no automatic move leaves the status. Held waits
// for an operator, which is not automatic.
func (s TargetStatus) Terminal() bool {
	return s == Published || s == Failed || s == Cancelled || s == Deleted
}

// targetMoves are the allowed moves. Publishing → waiting: the confirm loop
// did not find the post and released it, and the re-send was not
// performed (throttled).
var targetMoves = map[TargetStatus][]TargetStatus{
	NeedsApproval: {Scheduled, Cancelled},
	Scheduled:     {Triggered, Publishing, Waiting, Published, Failed, Held, Cancelled},
	Triggered:     {Triggered, Publishing, Waiting, Published, Failed, Held, Cancelled},
	Waiting:       {Triggered, Publishing, Waiting, Published, Failed, Held, Cancelled},
	Publishing:    {Publishing, Waiting, Published, Failed, Held},
	Held:          {Triggered, Publishing, Published, Failed, Cancelled},
	Published:     {Deleted},
}

// CanMove reports whether a target may go from one status to another.
// Failed, cancelled and deleted are final; published only moves to deleted. A cancelled target is never
// published: the publisher re-reads the post before sending.
func CanMove(from, to TargetStatus) bool {
	return slices.Contains(targetMoves[from], to)
}

// Target is one account a post goes to, at its planned slot.
type Target struct {
	Account AccountID `json:"account"`
	// Slot is the planned publish time, UTC.
	Slot   time.Time    `json:"slot"`
	Status TargetStatus `json:"status"`
	// Queued: the slot was taken from the account's queue (its posting
	// slots), so reordering the queue may move it.
	Queued bool `json:"queued,omitempty"`
	// RemoteID is the platform's id once published (or found by dedup).
	RemoteID string `json:"remote_id,omitempty"`
	// Reason explains failed, held and waiting.
	Reason string `json:"reason,omitempty"`
	// NextTry is when a waiting target is tried again; zero (and left out
	// of JSON) otherwise.
	NextTry   time.Time `json:"next_try,omitzero"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Post is a prepared post.
type Post struct {
	ID   ID     `json:"id"`
	Body string `json:"body"`
	// Texts replace Body on a platform, by platform name (a shorter text
	// for X's 280 characters).
	Texts map[string]string `json:"texts,omitempty"`
	Media []Media           `json:"media,omitempty"`
	// Thread are the texts of the replies that follow the post, in order:
	// a post with a thread goes out as a reply chain, part k+1 replying
	// to part k (the post itself is part 1).
	Thread    []string  `json:"thread,omitempty"`
	Targets   []Target  `json:"targets"`
	CreatedAt time.Time `json:"created_at"`
	// Author is who added the post (an API token's id, an IAM principal,
	// "cli"): an approval policy may forbid approving one's own post.
	Author string `json:"author,omitempty"`
}

// TextFor is the text the post goes out with on a platform: its text for
// that platform, or Body.
func (p Post) TextFor(platform string) string {
	if t, ok := p.Texts[platform]; ok {
		return t
	}
	return p.Body
}

// MediaFor are the attachments the post goes out with on a platform, in
// order: each one's version fitted to that platform, or the original.
func (p Post) MediaFor(platform string) []Media {
	if len(p.Media) == 0 {
		return nil
	}
	out := make([]Media, len(p.Media))
	for i, m := range p.Media {
		out[i] = m.For(platform)
	}
	return out
}

// Target returns the post's target for an account.
func (p Post) Target(account AccountID) (Target, bool) {
	for _, t := range p.Targets {
		if t.Account == account {
			return t, true
		}
	}
	return Target{}, false
}

// TargetUpdate is a status change for one target.
type TargetUpdate struct {
	Status TargetStatus
	// From, when set, are the only statuses the move may start from (the
	// caller's expectation, e.g. the trigger marks only a scheduled target).
	From []TargetStatus
	// Slot, when set, is the slot the caller read: the move is refused if
	// the target was moved to another time since.
	Slot     time.Time
	RemoteID string
	// Reason is the target's reason after the move; a move to published
	// keeps none (TargetReason).
	Reason string
	// NextTry is when a waiting target is tried again (Status Waiting only).
	NextTry time.Time
	At      time.Time
}

// TargetReason is the reason the target keeps after u: u.Reason, except
// that a published target keeps none. A reason explains failed, held,
// waiting and an ambiguous send (publishing); the confirm step that
// publishes after an ambiguous send passes its ledger entry's reason,
// which still tells the episode that is over.
func (u TargetUpdate) TargetReason() string {
	if u.Status == Published {
		return ""
	}
	return u.Reason
}

// Apply returns the target after the update, or ErrConflict when the move
// is not allowed or the target is not in one of u.From. Stores call it
// inside their conditional write.
func (t Target) Apply(u TargetUpdate) (Target, error) {
	if len(u.From) > 0 && !slices.Contains(u.From, t.Status) {
		return t, fmt.Errorf("target %s: is %s, not %v: %w", t.Account, t.Status, u.From, ErrConflict)
	}
	if !u.Slot.IsZero() && !u.Slot.Equal(t.Slot) {
		return t, fmt.Errorf("target %s: moved from %s to %s: %w", t.Account, u.Slot.UTC().Format(time.RFC3339), t.Slot.UTC().Format(time.RFC3339), ErrConflict)
	}
	if !CanMove(t.Status, u.Status) {
		return t, fmt.Errorf("target %s: %s → %s: %w", t.Account, t.Status, u.Status, ErrConflict)
	}
	t.Status = u.Status
	if u.RemoteID != "" {
		t.RemoteID = u.RemoteID
	}
	t.Reason = u.TargetReason()
	t.NextTry = time.Time{}
	if u.Status == Waiting {
		t.NextTry = u.NextTry.UTC()
	}
	t.UpdatedAt = u.At.UTC()
	return t, nil
}
