package credseal

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func testSealer(t *testing.T, b byte) *Sealer {
	t.Helper()
	s, err := New(bytes.Repeat([]byte{b}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A value opens to itself, for its account and field only; two seals of
// one value differ (fresh nonces); the empty value stays empty.
func TestRoundTripBoundToAccountAndField(t *testing.T) {
	s := testSealer(t, 0x42)
	for _, plain := range []string{"t", "access token with spaces/+=", "ünïcödé ✓", strings.Repeat("x", 4096)} {
		sealed := s.Seal("acct-a", AccessToken, plain)
		if !strings.HasPrefix(sealed, Prefix) || (len(plain) > 8 && strings.Contains(sealed, plain)) {
			t.Fatalf("Seal(%.20q) = %.30q…: want %s and no plain text", plain, sealed, Prefix)
		}
		if again := s.Seal("acct-a", AccessToken, plain); again == sealed {
			t.Errorf("two seals of %.20q are equal: nonce reused", plain)
		}
		if got, err := s.Open("acct-a", AccessToken, sealed); err != nil || got != plain {
			t.Errorf("Open(Seal(%.20q)) = %.20q, %v", plain, got, err)
		}
		for _, other := range []struct{ account, field string }{{"acct-b", AccessToken}, {"acct-a", RefreshToken}, {"acct-a\x00", AccessToken}} {
			if _, err := s.Open(other.account, other.field, sealed); !errors.Is(err, ErrUndecryptable) || errors.Is(err, ErrNotSealed) {
				t.Errorf("Open(%q, %s) of acct-a's %s = %v, want ErrUndecryptable", other.account, other.field, AccessToken, err)
			}
		}
	}
	if got := s.Seal("acct-a", ClientID, ""); got != "" {
		t.Errorf("Seal(empty) = %q, want empty", got)
	}
	if got, err := s.Open("acct-a", ClientID, ""); got != "" || err != nil {
		t.Errorf("Open(empty) = %q, %v", got, err)
	}
}

// Another key, a damaged value and a plain value are refused with the
// sentinel errors, which quote nothing.
func TestRefused(t *testing.T) {
	s, other := testSealer(t, 1), testSealer(t, 2)
	sealed := s.Seal("acct-a", ClientSecret, "secret-value")
	for name, tc := range map[string]struct {
		s      *Sealer
		stored string
		want   error
	}{
		"another key":     {other, sealed, ErrUndecryptable},
		"truncated":       {s, sealed[:len(sealed)-8], ErrUndecryptable},
		"short":           {s, Prefix + "AAAA", ErrUndecryptable},
		"not base64":      {s, Prefix + "!!!!", ErrUndecryptable},
		"flipped bit":     {s, flip(sealed), ErrUndecryptable},
		"plain text":      {s, "secret-value", ErrNotSealed},
		"another version": {s, "v2:" + strings.TrimPrefix(sealed, Prefix), ErrNotSealed},
	} {
		got, err := tc.s.Open("acct-a", ClientSecret, tc.stored)
		if !errors.Is(err, tc.want) || got != "" {
			t.Errorf("%s: Open = %q, %v; want %v", name, got, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret-value") {
			t.Errorf("%s: error %q quotes the value", name, err)
		}
	}
	if !errors.Is(ErrNotSealed, ErrUndecryptable) {
		t.Error("ErrNotSealed does not wrap ErrUndecryptable")
	}
}

func flip(sealed string) string {
	b := []byte(sealed)
	i := len(Prefix) + 20
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// Only AES-256 keys.
func TestKeySize(t *testing.T) {
	for _, n := range []int{0, 16, 24, 31, 33} {
		if _, err := New(make([]byte, n)); err == nil {
			t.Errorf("New(%d-byte key) = nil error", n)
		}
	}
}

// The stored format does not change: a value sealed by an earlier build
// (and by sqlitestore before the sealing moved here) still opens.
func TestStoredFormatStable(t *testing.T) {
	s := testSealer(t, 0x42)
	const stored = "v1:w7EvOc5g1ZPPjwsDArNABhpEC0gWnjsvWfEIjhn1ITvx+Nw="
	if got, err := s.Open("acct-a", AccessToken, stored); err != nil || got != "token-1" {
		t.Errorf("Open(golden value) = %q, %v; want token-1", got, err)
	}
}
