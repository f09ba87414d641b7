package sqlitestore

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"oncepost/shared/credseal"
	"oncepost/shared/post"
)

// keySize is the length of the key file: an AES-256 key.
const keySize = credseal.KeySize

// sealedPrefix starts every encrypted credential value: the format's
// version, then base64 of nonce ‖ ciphertext (with the GCM tag).
const sealedPrefix = credseal.Prefix

// ErrCredentialUndecryptable is returned (wrapped) when a stored credential
// value does not decrypt with the store's key: the key file was replaced,
// or the value was copied from another account or column. It is
// credseal.ErrUndecryptable, which every store's credentials share.
var ErrCredentialUndecryptable = credseal.ErrUndecryptable

// The credential columns that are encrypted; each one's name is part of
// the additional data of its values (credseal's field names).
const (
	colAccessToken  = credseal.AccessToken
	colRefreshToken = credseal.RefreshToken
	colClientID     = credseal.ClientID
	colClientSecret = credseal.ClientSecret
)

// sealer encrypts and decrypts credential values (credseal, AES-256-GCM)
// with the key of keyFile, and names the key file in its errors.
type sealer struct {
	s       *credseal.Sealer
	keyFile string
}

func newSealer(key []byte, keyFile string) (*sealer, error) {
	s, err := credseal.New(key)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", keyFile, err)
	}
	return &sealer{s: s, keyFile: keyFile}, nil
}

// seal encrypts one value with a fresh random nonce, bound to its account
// and column. The empty value stays empty: the SQL that keeps a stored
// refresh token when an empty one is given compares with the empty string.
func (s *sealer) seal(account post.AccountID, column, plain string) string {
	return s.s.Seal(string(account), column, plain)
}

// open decrypts one stored value. Errors name the account, the column and
// the key file, never the stored value.
func (s *sealer) open(account post.AccountID, column, stored string) (string, error) {
	plain, err := s.s.Open(string(account), column, stored)
	switch {
	case err == nil:
		return plain, nil
	case errors.Is(err, credseal.ErrNotSealed):
		return "", fmt.Errorf("credential %s: %s is not an encrypted value (written by another program?), so the key in %s cannot read it: %w",
			account, column, s.keyFile, ErrCredentialUndecryptable)
	default:
		return "", fmt.Errorf("credential %s: %s does not decrypt with the key in %s (was the key file replaced, or the value copied from another account or column?): %w",
			account, column, s.keyFile, ErrCredentialUndecryptable)
	}
}

// readKey reads the key file. exists is false, with no error, when there
// is none. A key file that group or others may read or write is refused
// (whoever could read it can read the credentials), and so is a file that
// is not exactly keySize bytes.
func readKey(path string) (key []byte, exists bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("key file %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, true, fmt.Errorf("key file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, true, fmt.Errorf("key file %s is not a regular file (mode %s)", path, fi.Mode())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, true, fmt.Errorf("key file %s has mode %04o: group or others may read or write it, so the credentials it protects may be exposed; "+
			"run `chmod 600 %s` (and connect the accounts again if someone else may have read it)", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, keySize+1))
	if err != nil {
		return nil, true, fmt.Errorf("key file %s: %w", path, err)
	}
	if len(b) != keySize {
		return nil, true, fmt.Errorf("key file %s has %d bytes, want %d: it is not a key this store wrote", path, len(b), keySize)
	}
	return b, true, nil
}

// createKey writes a new random key to path unless a file exists there,
// race-free between processes: the key is written and synced to a
// temporary file of mode 0600 that is then hard-linked to path, which
// fails if path exists; so path, once it exists, always holds a whole key,
// and the caller reads whichever key won.
func createKey(path string) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*") // mode 0600
	if err != nil {
		return fmt.Errorf("create key file %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	key := make([]byte, keySize)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24+)
	_, werr := tmp.Write(key)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("create key file %s: %w", path, werr)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // another process won; its key is the one
		}
		return fmt.Errorf("create key file %s: %w", path, err)
	}
	// Make the new name durable before anything is encrypted with it.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// loadKey returns the key in path, creating it first if there is none and
// mayCreate allows it (mayCreate explains why not otherwise: e.g. the
// database holds values encrypted with a key that is gone).
func loadKey(path string, mayCreate func() error) ([]byte, error) {
	key, exists, err := readKey(path)
	if err != nil || exists {
		return key, err
	}
	if err := mayCreate(); err != nil {
		return nil, err
	}
	if err := createKey(path); err != nil {
		return nil, err
	}
	key, exists, err = readKey(path)
	if err == nil && !exists {
		err = fmt.Errorf("key file %s vanished right after it was created", path)
	}
	return key, err
}
