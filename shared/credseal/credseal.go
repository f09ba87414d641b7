// Package credseal encrypts credential values at rest: AES-256-GCM with a
// fresh random nonce per value, each value bound to its account and field
// by the additional data, so a ciphertext copied to another account or
// field does not decrypt.
//
// It only seals and opens; where the 32-byte key comes from is the
// caller's business (sqlitestore: a 0600 key file next to the database;
// dynamostore: a data key wrapped by KMS, unwrapped once per process).
//
// A sealed value is text: Prefix, then standard base64 of
// nonce ‖ ciphertext ‖ GCM tag. The empty value is stored as the empty
// string, unsealed, so stores can tell "no value" without the key.
package credseal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the length of a key: AES-256.
const KeySize = 32

// Prefix starts every sealed value: the format's version.
const Prefix = "v1:"

// The credential fields sealed by the stores; each one's name is part of
// the additional data of its values, so stores that use the same names
// can open each other's values with the same key.
const (
	AccessToken  = "access_token"
	RefreshToken = "refresh_token"
	ClientID     = "client_id"
	ClientSecret = "client_secret"
)

// ErrUndecryptable is returned by Open when a stored value does not
// decrypt with the key: another key, a value copied from another account
// or field, or damaged bytes.
var ErrUndecryptable = errors.New("credential does not decrypt")

// ErrNotSealed is returned by Open for a non-empty value without Prefix
// (written in plain text, e.g. by another program). It wraps
// ErrUndecryptable.
var ErrNotSealed = fmt.Errorf("not an encrypted value: %w", ErrUndecryptable)

// Sealer seals and opens values with one key. It is safe for concurrent
// use.
type Sealer struct {
	aead cipher.AEAD
}

// New returns a Sealer for a KeySize-byte key.
func New(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("credential key has %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("credential key: %w", err)
	}
	aead, err := cipher.NewGCM(block) // 12-byte nonces, 16-byte tags
	if err != nil {
		return nil, fmt.Errorf("credential key: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// additionalData binds a value to its account and field. Field names are
// fixed and contain no NUL, so the encoding is unambiguous.
func additionalData(account, field string) []byte {
	return []byte("oncepost credentials\x00" + field + "\x00" + account)
}

// Seal encrypts one value of account's field with a fresh random nonce.
// The empty value stays empty.
func (s *Sealer) Seal(account, field, plain string) string {
	if plain == "" {
		return ""
	}
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails (Go 1.24+)
	out := s.aead.Seal(nonce, nonce, []byte(plain), additionalData(account, field))
	return Prefix + base64.StdEncoding.EncodeToString(out)
}

// Open decrypts one stored value of account's field; the empty value opens
// to the empty value. It returns ErrNotSealed or ErrUndecryptable, as they
// are: the caller names the account, the field and the key in its message.
// Neither the stored value nor the plain text is ever part of an error.
func (s *Sealer) Open(account, field, stored string) (string, error) {
	if stored == "" {
		return "", nil
	}
	b64, ok := strings.CutPrefix(stored, Prefix)
	if !ok {
		return "", ErrNotSealed
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	n := s.aead.NonceSize()
	if err != nil || len(raw) < n+s.aead.Overhead() {
		return "", ErrUndecryptable
	}
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], additionalData(account, field))
	if err != nil {
		return "", ErrUndecryptable
	}
	return string(plain), nil
}
