package publishing

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
)

// Events: what the systems around oncepost hear. An event is derived from
// a state change by one of the functions below, the same in both
// runtimes: the embedded store calls them inside the transaction that
// makes the change and writes the event to its outbox there; on AWS the
// notifier function calls them on the tables' change stream (old and new
// image). Because the id is derived from the change itself, a change seen
// twice (a stream record redelivered) is the same event with the same id,
// which is the webhook-id every retry carries.

// EventType names an event, "resource.happening" as Standard Webhooks
// names them.
type EventType string

// The event types a subscription can ask for.
const (
	// EventPublished: a target was published (confirmed on the platform).
	EventPublished EventType = "post.published"
	// EventFailed: a target failed for good; it will not be sent.
	EventFailed EventType = "post.failed"
	// EventHeld: a target is held for a person's decision.
	EventHeld EventType = "post.held"
	// EventUnknown: a send's outcome is unknown and is being confirmed
	// (read back) before anything is sent again.
	EventUnknown EventType = "post.unknown"
	// EventDeleted: a published target was deleted from the platform.
	EventDeleted EventType = "post.deleted"
	// EventReconnectNeeded: an account's credential was refused; an
	// operator must connect it again.
	EventReconnectNeeded EventType = "account.reconnect_needed"
)

// EventTypes are every event type, in the order documentation lists them.
var EventTypes = []EventType{EventPublished, EventFailed, EventHeld, EventUnknown, EventDeleted, EventReconnectNeeded}

// ValidEventType reports whether t is one of EventTypes.
func ValidEventType(t EventType) bool {
	for _, v := range EventTypes {
		if v == t {
			return true
		}
	}
	return false
}

// Event is one state change the surroundings hear of. Its JSON is the
// "data" of the webhook body (Event.Body).
type Event struct {
	// ID is stable for the change (EventID): "evt_" and 26 base32 letters.
	ID   string    `json:"id"`
	Type EventType `json:"type"`
	// At is when the change was recorded (the target's or entry's
	// updated_at), RFC 3339 UTC.
	At      time.Time      `json:"at"`
	Post    post.ID        `json:"post_id,omitempty"`
	Account post.AccountID `json:"account"`
	// Slot is the target's slot (post events).
	Slot time.Time `json:"slot,omitzero"`
	// Status is the target's status after the change (post events), or
	// the account's (account events).
	Status   string `json:"status,omitempty"`
	Reason   string `json:"reason,omitempty"`
	RemoteID string `json:"remote_id,omitempty"`
	// Key is the ledger entry's key (post.unknown).
	Key ledger.Key `json:"ledger_key,omitempty"`
}

// EventID is the id of the change named by parts: the same parts always
// give the same id.
func EventID(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return "evt_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h[:16]))
}

// TargetEvent is the event a target's move from prev to next causes, if
// any: to published, failed, held or deleted (a move within a status, or
// to any other status, causes none). prev is the zero Target for a new
// one.
func TargetEvent(id post.ID, prev, next post.Target) (Event, bool) {
	if prev.Status == next.Status {
		return Event{}, false
	}
	var typ EventType
	switch next.Status {
	case post.Published:
		typ = EventPublished
	case post.Failed:
		typ = EventFailed
	case post.Held:
		typ = EventHeld
	case post.Deleted:
		typ = EventDeleted
	default:
		return Event{}, false
	}
	at := next.UpdatedAt.UTC()
	return Event{
		ID:   EventID(string(typ), string(id), string(next.Account), next.Slot.UTC().Format(time.RFC3339Nano), at.Format(time.RFC3339Nano)),
		Type: typ, At: at, Post: id, Account: next.Account, Slot: next.Slot.UTC(),
		Status: string(next.Status), Reason: next.Reason, RemoteID: next.RemoteID,
	}, true
}

// LedgerEvent is the event a ledger entry's move from prev to next
// causes, if any: a publish entry that becomes unknown (prev is the zero
// Entry for a new one).
func LedgerEvent(prev, next ledger.Entry) (Event, bool) {
	if next.State != ledger.Unknown || prev.State == ledger.Unknown || next.Action != ledger.Publish {
		return Event{}, false
	}
	at := next.UpdatedAt.UTC()
	postID, _ := ledger.SubjectPart(next.Subject) // a thread's part names its post
	return Event{
		ID:   EventID(string(EventUnknown), string(next.Key), string(next.State), strconv.Itoa(next.Attempt), at.Format(time.RFC3339Nano)),
		Type: EventUnknown, At: at, Post: post.ID(postID), Account: post.AccountID(next.Account),
		Status: string(next.State), Reason: next.Reason, Key: next.Key,
	}, true
}

// AccountEvent is the event an account's change from prev to next
// causes, if any: it needs reconnecting and did not before. at is when
// the change was recorded.
func AccountEvent(prev, next post.Account, at time.Time) (Event, bool) {
	if next.Status != post.AccountReconnectNeeded || prev.Status == post.AccountReconnectNeeded {
		return Event{}, false
	}
	at = at.UTC()
	return Event{
		ID:   EventID(string(EventReconnectNeeded), string(next.ID), at.Format(time.RFC3339Nano)),
		Type: EventReconnectNeeded, At: at, Account: next.ID, Status: string(next.Status), Reason: next.StatusReason,
	}, true
}

// Body is the webhook body of the event, the Standard Webhooks shape:
// {"type": …, "timestamp": …, "data": {…}}. Deliveries send these exact
// bytes on every attempt (the signature covers them).
func (e Event) Body() ([]byte, error) {
	return json.Marshal(struct {
		Type      EventType `json:"type"`
		Timestamp time.Time `json:"timestamp"`
		Data      Event     `json:"data"`
	}{e.Type, e.At.UTC(), e})
}

// Subscription is a receiver of webhooks: a URL, the event types it
// wants and the secret deliveries are signed with.
type Subscription struct {
	// ID is "wh_" and random letters, made by the store.
	ID  string `json:"id"`
	URL string `json:"url"`
	// Events it wants; every type when empty.
	Events []EventType `json:"events"`
	// Secret is the signing secret, "whsec_" and base64 of 32 random
	// bytes. Stores keep it sealed; it is shown once, when made.
	Secret string `json:"-"`
	// AllowPrivate lets the URL resolve to a private or loopback address
	// (an operator's choice, for receivers on their own network).
	AllowPrivate bool      `json:"allow_private,omitempty"`
	Description  string    `json:"description,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	// Disabled is set when the receiver answered 410 Gone: no more
	// deliveries are made (those due are dead-lettered) until re-enabled.
	Disabled       bool   `json:"disabled,omitempty"`
	DisabledReason string `json:"disabled_reason,omitempty"`
}

// Wants reports whether the subscription receives events of type t.
func (s Subscription) Wants(t EventType) bool {
	if s.Disabled {
		return false
	}
	if len(s.Events) == 0 {
		return true
	}
	for _, e := range s.Events {
		if e == t {
			return true
		}
	}
	return false
}

// DeliveryState is where one event's delivery to one subscription is.
type DeliveryState string

const (
	// DeliveryPending: not delivered yet; tried again at NextTry.
	DeliveryPending DeliveryState = "pending"
	// DeliveryDelivered: the receiver answered 2xx.
	DeliveryDelivered DeliveryState = "delivered"
	// DeliveryDead: given up (24 h of failures, or the receiver is gone);
	// an operator can see it and redrive it.
	DeliveryDead DeliveryState = "dead"
)

// Delivery is one event to one subscription.
type Delivery struct {
	// ID is the event id and the subscription id: "<evt>/<wh>".
	ID           string        `json:"id"`
	Event        Event         `json:"event"`
	Subscription string        `json:"subscription_id"`
	State        DeliveryState `json:"state"`
	// Attempts made so far.
	Attempts int `json:"attempts"`
	// CreatedAt is when the event was recorded for this subscription: the
	// 24 h of retries count from it.
	CreatedAt time.Time `json:"created_at"`
	NextTry   time.Time `json:"next_try,omitzero"`
	// LastError says why the last attempt failed (status or error, never a
	// secret); LastStatus is its HTTP status, 0 when none came back.
	LastError  string    `json:"last_error,omitempty"`
	LastStatus int       `json:"last_status,omitempty"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// DeliveryID is a delivery's id.
func DeliveryID(eventID, subscriptionID string) string { return eventID + "/" + subscriptionID }

// Subscriptions stores webhook subscriptions. Secrets are sealed at rest.
type Subscriptions interface {
	// AddSubscription stores s (its ID and Secret set by the caller);
	// post.ErrConflict if the id exists.
	AddSubscription(ctx context.Context, s Subscription) error
	// GetSubscription returns post.ErrNotFound for an unknown id.
	GetSubscription(ctx context.Context, id string) (Subscription, error)
	ListSubscriptions(ctx context.Context) ([]Subscription, error)
	// RemoveSubscription deletes it and its pending deliveries;
	// post.ErrNotFound for an unknown id.
	RemoveSubscription(ctx context.Context, id string) error
	// DisableSubscription marks it disabled with a reason (a 410).
	DisableSubscription(ctx context.Context, id, reason string) error
}

// Deliveries is the outbox's delivery side: every recorded event fanned
// out to the subscriptions that want it, each delivery leased while one
// worker sends it.
type Deliveries interface {
	// ClaimDeliveries leases up to limit pending deliveries whose NextTry
	// is not after now (oldest NextTry first) until now+lease: no other
	// claim returns them before the lease ends.
	ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Delivery, error)
	// RecordDelivery stores the outcome of an attempt on a claimed
	// delivery: d carries its new State, Attempts, NextTry, LastError,
	// LastStatus and UpdatedAt. ErrDeliveryGone when it was removed.
	RecordDelivery(ctx context.Context, d Delivery) error
	// ListDeliveries lists deliveries in a state (all when ""), most
	// recently updated first; a limit ≤ 0 means all.
	ListDeliveries(ctx context.Context, state DeliveryState, limit int) ([]Delivery, error)
	// RedriveDelivery makes a dead delivery pending again, due at now,
	// its attempts and 24 h window restarted; post.ErrNotFound for an
	// unknown id, post.ErrConflict when it is not dead.
	RedriveDelivery(ctx context.Context, id string, now time.Time) error
}

// ErrDeliveryGone is returned by RecordDelivery for a delivery that no
// longer exists (its subscription was removed meanwhile).
var ErrDeliveryGone = errors.New("delivery no longer exists")

// ErrDeliveryStateNotKept is returned (wrapped) by ListDeliveries of a
// runtime that does not keep deliveries in the state asked for where they
// can be listed (on AWS only dead ones are: shared/awswebhooks).
var ErrDeliveryStateNotKept = errors.New("deliveries in this state are not kept where they can be listed")

// WebhookSender makes one delivery attempt: it posts body, signed for
// sub, with d's event id as webhook-id. Adapters: shared/webhook.
type WebhookSender interface {
	Send(ctx context.Context, sub Subscription, d Delivery, body []byte) SendResult
}

// SendResult is what one attempt came to.
type SendResult struct {
	// Status is the receiver's HTTP status; 0 when none came back.
	Status int
	// Err is why the attempt failed (nil on a 2xx): the status, a refused
	// address, a timeout. It never holds the secret.
	Err error
	// RetryAfter is the receiver's Retry-After (429, 503), zero if none.
	RetryAfter time.Duration
}
