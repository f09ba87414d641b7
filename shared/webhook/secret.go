package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts every signing secret, as Standard Webhooks shows
// symmetric secrets.
const SecretPrefix = "whsec_"

// SecretBytes is how many random bytes NewSecret makes (the spec asks
// for 24 to 64).
const SecretBytes = 32

// Secret sizes ParseSecret accepts, from the spec: 192 bits at least,
// 512 at most.
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
)

// SignatureVersion names the symmetric (HMAC-SHA256) scheme in a
// webhook-signature entry.
const SignatureVersion = "v1"

// NewSecret makes a signing secret: "whsec_" and the standard base64 of
// SecretBytes random bytes.
func NewSecret() (string, error) {
	b := make([]byte, SecretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make webhook secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// ParseSecret returns the key bytes of a secret, with or without the
// "whsec_" prefix. Its errors name the problem and never hold the secret.
func ParseSecret(s string) ([]byte, error) {
	raw := strings.TrimPrefix(s, SecretPrefix)
	if raw == "" {
		return nil, errors.New("webhook secret is empty")
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return nil, fmt.Errorf("webhook secret is not standard base64 after %q: %w", SecretPrefix, err)
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return nil, fmt.Errorf("webhook secret is %d bytes; a secret is %d to %d random bytes", len(key), MinSecretBytes, MaxSecretBytes)
	}
	return key, nil
}

// Sign returns the webhook-signature of one attempt: "v1," and the
// standard base64 of HMAC-SHA256(key, "{msgID}.{unix seconds of ts}.{body}").
// body must be the exact bytes sent. msgID must be non-empty and hold no
// "." (the spec's rule: it delimits the signed content).
func Sign(secret string, msgID string, ts time.Time, body []byte) (string, error) {
	key, err := ParseSecret(secret)
	if err != nil {
		return "", err
	}
	if msgID == "" {
		return "", errors.New("webhook-id is empty")
	}
	if strings.Contains(msgID, ".") {
		return "", fmt.Errorf("webhook-id %q holds a \".\", which delimits the signed content", msgID)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return SignatureVersion + "," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}
