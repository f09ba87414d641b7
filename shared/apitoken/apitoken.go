// Package apitoken is the HTTP API's bearer tokens on one machine: their
// format, their hash (the only form a store keeps), their scopes, and the
// port a store implements to keep them (sqlitestore).
//
// A token is "op_" and the unpadded lowercase base32 of 32 random bytes:
// 256 bits, so a store keeps only its SHA-256 (hex) and looks it up by
// that; no slow password hash is needed, since nothing short can be
// guessed. The token itself is shown once, when it is made.
package apitoken

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Prefix starts every token; it tells a leaked string for what it is
// (secret scanners match it).
const Prefix = "op_"

// secretBytes is the randomness of a token.
const secretBytes = 32

// encoding is base32 without padding; tokens are written in lower case.
var encoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// tokenLen is the length of a token: the prefix and 52 letters.
var tokenLen = len(Prefix) + encoding.EncodedLen(secretBytes)

// New makes a token from crypto randomness.
func New() string {
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand documents it)
	return Prefix + strings.ToLower(encoding.EncodeToString(b))
}

// Hash is the form a store keeps: the hex SHA-256 of the token.
func Hash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// WellFormed reports whether s has a token's form (prefix, length,
// alphabet); a string that has not is refused without a store lookup.
func WellFormed(s string) bool {
	if len(s) != tokenLen || !strings.HasPrefix(s, Prefix) {
		return false
	}
	_, err := encoding.DecodeString(strings.ToUpper(s[len(Prefix):]))
	return err == nil && strings.ToLower(s) == s
}

// NewID is a token's id: "tok_" and 16 random letters. The id, never the
// token, names a caller in logs and idempotency records.
func NewID() string {
	return "tok_" + strings.ToLower(rand.Text()[:16])
}

// Scope is what a token may do.
type Scope string

// The scopes.
const (
	// ScopeRead: read posts, held entries, accounts, dead letters,
	// platforms, status, and webhook subscriptions and deliveries.
	ScopeRead Scope = "read"
	// ScopePosts: create, cancel, reschedule and request the delete of
	// posts; upload media.
	ScopePosts Scope = "posts"
	// ScopeDecide: approve, confirm or reject held entries (and approve a
	// delete when it is requested).
	ScopeDecide Scope = "decide"
	// ScopeOperate: redrive and drop dead letters; make and remove
	// webhook subscriptions and redrive their deliveries.
	ScopeOperate Scope = "operate"
	// ScopeAll grants every scope.
	ScopeAll Scope = "all"
)

// Scopes are every scope, in the order documentation lists them.
var Scopes = []Scope{ScopeRead, ScopePosts, ScopeDecide, ScopeOperate, ScopeAll}

// ParseScopes reads a comma-separated list of scopes ("posts,read"),
// refusing an unknown or empty one; each scope is kept once, in the order
// given.
func ParseScopes(s string) ([]Scope, error) {
	var out []Scope
	for _, part := range strings.Split(s, ",") {
		sc := Scope(strings.TrimSpace(part))
		if sc == "" {
			return nil, fmt.Errorf("%q: an empty scope; write e.g. posts,read", s)
		}
		if !slices.Contains(Scopes, sc) {
			return nil, fmt.Errorf("%q is not a scope; use %s", sc, Names())
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out, nil
}

// Names lists the scopes for messages: "read, posts, decide, operate, all".
func Names() string {
	names := make([]string, len(Scopes))
	for i, s := range Scopes {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// Grants reports whether the scopes have allow need: need itself, or all.
func Grants(have []Scope, need Scope) bool {
	return slices.Contains(have, need) || slices.Contains(have, ScopeAll)
}

// Default request rate of a token that sets none: requests per second,
// and the burst is twice the rate.
const DefaultRate = 50

// Token is a stored token: never the token itself, its hash.
type Token struct {
	// ID is NewID's; it names the caller in logs and idempotency records.
	ID string `json:"id"`
	// Name is the operator's name for it, unique in the workspace.
	Name   string  `json:"name"`
	Hash   string  `json:"-"`
	Scopes []Scope `json:"scopes"`
	// Rate is the requests per second it may make (the burst is twice
	// that); 0 means DefaultRate.
	Rate      float64   `json:"rate"`
	CreatedAt time.Time `json:"created_at"`
	// RevokedAt is when it was revoked; zero while it works.
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	// LastUsedAt is when it was last seen (updated at most once a minute).
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
}

// Revoked reports whether the token was revoked.
func (t Token) Revoked() bool { return !t.RevokedAt.IsZero() }

// Store keeps tokens. Errors name post.ErrNotFound and post.ErrConflict
// as the other stores do.
type Store interface {
	// AddToken stores t; an error wrapping post.ErrConflict when its name
	// (or id) is taken, by a revoked token too.
	AddToken(ctx context.Context, t Token) error
	// TokenByHash returns the token with the hash, revoked or not;
	// post.ErrNotFound when none has it.
	TokenByHash(ctx context.Context, hash string) (Token, error)
	// ListTokens lists every token, revoked ones too, by name.
	ListTokens(ctx context.Context) ([]Token, error)
	// RevokeToken revokes the named token at at and returns it; revoking
	// it again keeps the first time. post.ErrNotFound for an unknown name.
	RevokeToken(ctx context.Context, name string, at time.Time) (Token, error)
	// TouchToken records that the token with the id was used at at.
	TouchToken(ctx context.Context, id string, at time.Time) error
}
