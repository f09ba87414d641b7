// Package ledger is the heart of oncepost's exactly-once promise: one Entry
// per side-effecting action (publish, media upload, delete), written before
// the call, and the only transitions an entry may make (DESIGN §3).
//
// Everything here is pure: stores persist entries with a conditional write
// on (state, attempt) and call Check before writing, so a transition that is
// not in the table can never be stored, whatever the caller does.
package ledger

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// State is where an entry stands.
type State string

// Ledger states.
const (
	// Pending: a call is (about to be) in flight; the owner holds a lease.
	Pending State = "pending"
	// Confirmed: the platform has it; RemoteID is set. Terminal.
	Confirmed State = "confirmed"
	// Released: the platform certainly did not act; a re-send is safe.
	Released State = "released"
	// Failed: the platform refused for good, or a human rejected. Terminal.
	Failed State = "failed"
	// Unknown: the outcome is ambiguous; a confirm loop reads the platform.
	Unknown State = "unknown"
	// Held: waiting for an operator's decision.
	Held State = "held"
)

// Open reports whether the entry is unresolved (pending or unknown); open
// entries older than five minutes raise an alarm.
func (s State) Open() bool { return s == Pending || s == Unknown }

// Terminal reports whether the entry never moves again.
func (s State) Terminal() bool { return s == Confirmed || s == Failed }

// Action is the kind of side effect an entry guards.
type Action string

// Actions.
const (
	Publish Action = "publish"
	Upload  Action = "upload"
	Delete  Action = "delete"
)

// Key identifies an entry: base32 of sha256(action | account | subject | slot).
type Key string

// PublishKey is the key of publishing a post to an account at its planned
// slot. A post rescheduled to another slot is a new action.
func PublishKey(account, postID string, slot time.Time) Key {
	return keyOf(Publish, account, postID, slot.UTC().Format(time.RFC3339Nano))
}

// UploadKey is the key of uploading media (by its SHA-256) to an account
// for one publish entry. The publish key is part of it because platforms
// attach an upload to one post only (Mastodon answers 422 "already attached
// to another post"): every attempt of one publish reuses its upload, another
// post uploads the same bytes again.
func UploadKey(account, mediaSHA256 string, publish Key) Key {
	return keyOf(Upload, account, mediaSHA256, string(publish))
}

// DeleteKey is the key of deleting a remote post from an account.
func DeleteKey(account, remoteID string) Key {
	return keyOf(Delete, account, remoteID, "")
}

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

func keyOf(a Action, account, subject, slot string) Key {
	sum := sha256.Sum256([]byte(strings.Join([]string{string(a), account, subject, slot}, "|")))
	return Key(strings.ToLower(keyEncoding.EncodeToString(sum[:])))
}

// Entry is one side-effecting action and what is known of its outcome.
// Its JSON leaves out the times it does not have (omitzero), never
// printing the zero time.
type Entry struct {
	Key     Key    `json:"key"`
	Action  Action `json:"action"`
	Account string `json:"account"`
	// Subject is the post id, media SHA-256 or remote id the action is about.
	Subject string `json:"subject"`
	// Post is the post a delete removes a copy of (its Subject is the
	// remote id); "" for the other actions, whose Subject says it.
	Post  string    `json:"post,omitempty"`
	Slot  time.Time `json:"slot,omitzero"`
	State State     `json:"state"`
	// Attempt counts acquisitions; it grows by one on every re-acquire.
	Attempt int `json:"attempt"`
	// MaybeSent counts the attempts whose call may have reached the
	// platform (the entry went unknown: an ambiguous outcome or a dead
	// owner). It is the attempt budget: throttling and other definite
	// "not performed" answers do not spend it.
	MaybeSent int `json:"maybe_sent"`
	// Handle is the platform handle (Idempotency-Key, rkey, nonce), fixed at
	// the first write and sent by every attempt.
	Handle string `json:"handle"`
	// Fingerprint is the content fingerprint the confirm loop looks for.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Checkpoint is a handle the platform made in the first step of a
	// two-step create (a Threads container id), recorded while the entry
	// is pending, before the step that publishes (Ledger stores'
	// RecordCheckpoint). Every later attempt and look gets it back.
	Checkpoint string `json:"checkpoint,omitempty"`
	// LeaseOwner and LeaseUntil: who may act on a pending entry, and until when.
	LeaseOwner string    `json:"lease_owner,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// OpenSince is when the entry last became open (pending or unknown).
	OpenSince time.Time `json:"open_since,omitzero"`
	// SentAt is when the current attempt's call went out (lookup window).
	SentAt time.Time `json:"sent_at,omitzero"`
	// LookAfter is the remote id of the account's newest post read before
	// the first send (platform.StartOfHistory for an empty account, "" if
	// none was read): a Lookup reads only posts newer than it. It is set
	// once and kept by every attempt.
	LookAfter string `json:"look_after,omitempty"`
	// RetryAt is when a released entry may be sent again (the platform's
	// Retry-After, or a backoff); zero means at once.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// DeferredSince is when the current run of "not performed" outcomes
	// (throttling, unreachable platform) began; zero once a send may have
	// reached the platform. A run longer than the throttle limit fails.
	DeferredSince time.Time `json:"deferred_since,omitzero"`
	RemoteID      string    `json:"remote_id,omitempty"`
	// Reason explains failed, held, released and unknown.
	Reason string `json:"reason,omitempty"`
	// TaskToken is the confirm workflow's latest token while held (a Hold
	// step retried by the workflow gets a new one and stores it).
	TaskToken string `json:"task_token,omitempty"`
	// Decision is an operator's decision on a held entry, recorded before
	// it is delivered to the waiting workflow: the JSON the workflow's
	// Hold task completes with. Empty while nobody decided.
	Decision  string    `json:"decision,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
	// ExpiresAt is the TTL of a terminal entry; zero while it can move.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// TerminalTTL is how long terminal entries are kept.
const TerminalTTL = 90 * 24 * time.Hour

// ErrTransition is returned for a move not in the transition table.
var ErrTransition = errors.New("transition not allowed")

// ErrConflict is returned by stores when a conditional write found the entry
// changed (another worker moved it first) or already present.
var ErrConflict = errors.New("ledger entry changed concurrently")

// ErrNotFound is returned by stores for a missing key.
var ErrNotFound = errors.New("ledger entry not found")

var table = map[State][]State{
	"":       {Pending},
	Pending:  {Confirmed, Released, Failed, Unknown, Held},
	Unknown:  {Confirmed, Released, Held},
	Released: {Pending},
	// Held → held records a newer task token or an operator's decision.
	Held: {Released, Confirmed, Failed, Held},
}

// Allowed reports whether DESIGN §3 allows from → to. The empty state is
// "no entry yet".
func Allowed(from, to State) bool { return slices.Contains(table[from], to) }

// Check validates that next may replace prev in a store: same key, an
// allowed move, the attempt counter grown by one exactly on re-acquire and
// unchanged otherwise. Stores call it before their conditional write.
func Check(prev, next Entry) error {
	if prev.Key != next.Key {
		return fmt.Errorf("entry %s replaced by %s: %w", prev.Key, next.Key, ErrTransition)
	}
	if !Allowed(prev.State, next.State) {
		return fmt.Errorf("entry %s: %s → %s: %w", prev.Key, stateName(prev.State), next.State, ErrTransition)
	}
	want := prev.Attempt
	if prev.State == Released && next.State == Pending {
		want++
	}
	if next.Attempt != want {
		return fmt.Errorf("entry %s: %s → %s with attempt %d, want %d: %w", prev.Key, prev.State, next.State, next.Attempt, want, ErrTransition)
	}
	if next.Handle != prev.Handle {
		return fmt.Errorf("entry %s: platform handle changed: %w", prev.Key, ErrTransition)
	}
	if next.Post != prev.Post {
		return fmt.Errorf("entry %s: post changed: %w", prev.Key, ErrTransition)
	}
	return nil
}

// CheckNew validates a first write.
func CheckNew(e Entry) error {
	if e.Key == "" || e.Handle == "" {
		return fmt.Errorf("new entry needs a key and a handle: %w", ErrTransition)
	}
	if e.State != Pending || e.Attempt != 1 {
		return fmt.Errorf("entry %s: first write must be pending attempt 1, got %s attempt %d: %w", e.Key, e.State, e.Attempt, ErrTransition)
	}
	return nil
}

func stateName(s State) string {
	if s == "" {
		return "(none)"
	}
	return string(s)
}

// NewHandle returns a fresh platform handle: 26 base32 characters of
// crypto randomness, valid as a Mastodon Idempotency-Key or Discord nonce.
func NewHandle() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return strings.ToLower(keyEncoding.EncodeToString(b[:]))
}

// Transition is one audit record: an entry moved from one state to another.
type Transition struct {
	Key     Key       `json:"key"`
	From    State     `json:"from"`
	To      State     `json:"to"`
	Attempt int       `json:"attempt"`
	Reason  string    `json:"reason,omitempty"`
	At      time.Time `json:"at"`
}
