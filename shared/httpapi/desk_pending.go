package httpapi

// PENDING h-desk: stand-ins for the publishing.Desk types, declared here
// only so that this package compiles before publishing.Desk lands. They
// mirror its announced method set field for field. DELETE THIS FILE once
// publishing.Desk is merged, and write publishing.X for each name below.

import (
	"errors"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
)

// KeyedRequest is publishing.KeyedRequest (stand-in).
type KeyedRequest struct {
	Scope, Key, Fingerprint string
	Encode                  func(post.Post) (status int, body []byte, err error)
}

// ScheduleResult is publishing.ScheduleResult (stand-in).
type ScheduleResult struct {
	Post     post.Post
	Status   int
	Body     []byte
	Replayed bool
}

// ErrKeyReused and ErrKeyInFlight are publishing's (stand-ins).
var (
	ErrKeyReused   = errors.New("idempotency key was used with another request")
	ErrKeyInFlight = errors.New("idempotency key's first request is in flight")
)

// PostView is publishing.PostView (stand-in).
type PostView struct {
	Post    post.Post    `json:"post"`
	Targets []TargetView `json:"targets"`
}

// TargetView is publishing.TargetView (stand-in).
type TargetView struct {
	post.Target
	Ledger []EntryView `json:"ledger"`
}

// EntryView is publishing.EntryView (stand-in).
type EntryView struct {
	ledger.Entry
	History []ledger.Transition `json:"history"`
}

// TargetOutcome is publishing.TargetOutcome (stand-in).
type TargetOutcome struct {
	Account  post.AccountID `json:"account"`
	Done     bool           `json:"done"`
	Message  string         `json:"message"`
	Key      ledger.Key     `json:"ledger_key,omitempty"`
	Decision string         `json:"decision,omitempty"`
}
