package sqlitestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/post"
)

// secretCred is a credential whose every value is easy to find in bytes.
func secretCred(id string) platform.Credential {
	return platform.Credential{
		AccessToken: "ACCESS-" + id + "-5e1b", RefreshToken: "REFRESH-" + id + "-77c0",
		ClientID: "CLIENTID-" + id + "-0d2e", ClientSecret: "CLIENTSECRET-" + id + "-a4f9",
		ExpiresAt: t0.Add(time.Hour),
	}
}

// credSecrets are the secret values of some credentials.
type credSecrets []string

// has lists the secrets found in b.
func (c credSecrets) has(b []byte) []string {
	var out []string
	for _, s := range c {
		if bytes.Contains(b, []byte(s)) {
			out = append(out, s)
		}
	}
	return out
}

func secretsOf(cs ...platform.Credential) credSecrets {
	var out credSecrets
	for _, c := range cs {
		for _, v := range []string{c.AccessToken, c.RefreshToken, c.ClientID, c.ClientSecret} {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

func mustPutCred(t *testing.T, s *Store, id post.AccountID, c platform.Credential) {
	t.Helper()
	if err := s.PutCredential(context.Background(), id, c); err != nil {
		t.Fatalf("PutCredential(%s) = %v", id, err)
	}
}

// The stored row holds no token: not the raw columns read with plain SQL,
// not the file's bytes. The values read back through the store.
func TestCredentialsEncryptedAtRest(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "oncepost.db")
	s := openAt(t, path)
	a, b := secretCred("a"), secretCred("b")
	mustPutCred(t, s, "acct-a", a)
	mustPutCred(t, s, "acct-b", b)
	if err := s.LeaseRefresh(ctx, "acct-b", "w1", t0, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	b2 := secretCred("b2")
	if err := s.SaveRefreshed(ctx, "acct-b", "w1", &b2); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[post.AccountID]platform.Credential{"acct-a": a, "acct-b": b2} {
		got, err := s.Credential(ctx, id)
		if err != nil {
			t.Fatalf("Credential(%s) = %v", id, err)
		}
		if fmt.Sprint(credFields(got), got.ClientID, got.ClientSecret) != fmt.Sprint(credFields(want), want.ClientID, want.ClientSecret) {
			t.Errorf("Credential(%s) does not read back what was stored", id)
		}
	}

	rows, err := s.r.Query(`SELECT * FROM credentials`)
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	var raw []byte
	n := 0
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			raw = fmt.Appendf(raw, "%s=%v|", cols[i], v)
			if s, ok := v.(string); ok && slices.Contains([]string{colAccessToken, colRefreshToken, colClientID, colClientSecret}, cols[i]) &&
				s != "" && !strings.HasPrefix(s, sealedPrefix) {
				t.Errorf("column %s holds a value not in the encrypted format", cols[i])
			}
		}
		n++
	}
	rows.Close()
	if n != 2 {
		t.Fatalf("%d credential rows, want 2", n)
	}
	all := secretsOf(a, b, b2)
	if found := all.has(raw); len(found) > 0 {
		t.Errorf("the raw credential rows contain %v", found)
	}
	// The file and its WAL, not only the columns (b's first tokens were
	// replaced, but were they ever written in plaintext?).
	if found := all.has(fileBytes(t, path)); len(found) > 0 {
		t.Errorf("the database file or its WAL contains %v", found)
	}
	// The test can fail: the values are in the file, encrypted, and the
	// same check finds a plaintext value written there.
	if _, err := s.w.Exec(`INSERT INTO blocklist VALUES ('probe', ?, '')`, a.AccessToken); err != nil {
		t.Fatal(err)
	}
	if found := all.has(fileBytes(t, path)); len(found) != 1 {
		t.Errorf("plaintext written on purpose found as %v, want the one value", found)
	}
	wantKeyFile(t, path+".key")
}

// A second Open of the file reuses its key file; the credentials read back.
func TestReopenReusesKey(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "oncepost.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := secretCred("a")
	mustPutCred(t, s, "acct-a", c)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	key := wantKeyFile(t, path+".key")
	s = openAt(t, path)
	got, err := s.Credential(ctx, "acct-a")
	if err != nil || got.AccessToken != c.AccessToken || got.ClientSecret != c.ClientSecret {
		t.Errorf("Credential after reopening: %v (values match: %v)", err, got.AccessToken == c.AccessToken)
	}
	if again := wantKeyFile(t, path+".key"); !bytes.Equal(again, key) {
		t.Error("reopening replaced the key file")
	}
}

// Options.KeyFile puts the key elsewhere; the default place is not used.
func TestKeyFileOption(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path, keyPath := filepath.Join(dir, "db", "oncepost.db"), filepath.Join(dir, "secrets", "oncepost.key")
	for _, d := range []string{filepath.Dir(path), filepath.Dir(keyPath)} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(ctx, path, Options{KeyFile: keyPath})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustPutCred(t, s, "acct-a", secretCred("a"))
	wantKeyFile(t, keyPath)
	if _, err := os.Stat(path + ".key"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("default key file %s: %v, want none", path+".key", err)
	}
	if _, err := s.Credential(ctx, "acct-a"); err != nil {
		t.Error(err)
	}
}

// wantUndecryptable checks err: ErrCredentialUndecryptable, naming the
// account and the key file, saying why (e.g. asking whether the key file
// was replaced), and quoting no stored value.
func wantUndecryptable(t *testing.T, err error, account post.AccountID, keyFile, why string, secrets credSecrets, stored ...string) {
	t.Helper()
	if !errors.Is(err, ErrCredentialUndecryptable) {
		t.Fatalf("Credential(%s) = %v, want ErrCredentialUndecryptable", account, err)
	}
	msg := err.Error()
	for _, want := range []string{"credential " + string(account) + ":", keyFile, why} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if found := secrets.has([]byte(msg)); len(found) > 0 {
		t.Errorf("error quotes %v", found)
	}
	for _, v := range stored {
		if v != "" && strings.Contains(msg, strings.TrimPrefix(v, sealedPrefix)[:16]) {
			t.Errorf("error %q quotes the stored ciphertext", msg)
		}
	}
}

// With another key in the key file, a credential does not decrypt, and
// the error says so clearly.
func TestWrongKeyFails(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "oncepost.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := secretCred("a")
	mustPutCred(t, s, "acct-a", c)
	var stored string
	if err := s.r.QueryRow(`SELECT access_token FROM credentials`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Remove(path + ".key"); err != nil {
		t.Fatal(err)
	}
	if err := createKey(path + ".key"); err != nil { // another key, as a restore of the wrong backup would bring
		t.Fatal(err)
	}
	s = openAt(t, path)
	_, err = s.Credential(ctx, "acct-a")
	wantUndecryptable(t, err, "acct-a", path+".key", "was the key file replaced", secretsOf(c), stored)
}

// A ciphertext copied to another account's row, or to another column of
// the same row, does not decrypt.
func TestSwappedCiphertextFails(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{})
	a, b := secretCred("a"), secretCred("b")
	mustPutCred(t, s, "acct-a", a)
	mustPutCred(t, s, "acct-b", b)
	var aAccess, aClient string
	if err := s.w.QueryRow(`SELECT access_token, client_id FROM credentials WHERE account_id = 'acct-a'`).Scan(&aAccess, &aClient); err != nil {
		t.Fatal(err)
	}
	const replaced = "(was the key file replaced, or the value copied from another account or column?)"
	for _, tc := range []struct {
		name, stmt string
		account    post.AccountID
		value, why string
	}{
		{"another account's access token", `UPDATE credentials SET access_token = ? WHERE account_id = 'acct-b'`, "acct-b", aAccess,
			"access_token does not decrypt with the key in KEY " + replaced},
		{"another column's value", `UPDATE credentials SET client_secret = ? WHERE account_id = 'acct-a'`, "acct-a", aClient,
			"client_secret does not decrypt with the key in KEY " + replaced},
		{"not encrypted", `UPDATE credentials SET refresh_token = ? WHERE account_id = 'acct-a'`, "acct-a", "plain-refresh",
			"refresh_token is not an encrypted value"},
		{"damaged", `UPDATE credentials SET refresh_token = ? WHERE account_id = 'acct-a'`, "acct-a", sealedPrefix + "AAAA",
			"refresh_token does not decrypt with the key in KEY " + replaced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustPutCred(t, s, "acct-a", a)
			mustPutCred(t, s, "acct-b", b)
			if _, err := s.w.Exec(tc.stmt, tc.value); err != nil {
				t.Fatal(err)
			}
			_, err := s.Credential(ctx, tc.account)
			wantUndecryptable(t, err, tc.account, s.keyFile, strings.ReplaceAll(tc.why, "KEY", s.keyFile),
				secretsOf(a, b, platform.Credential{RefreshToken: "plain-refresh"}), aAccess, aClient)
		})
	}
}

// writeKeyFile writes a key file of n bytes with mode perm.
func writeKeyFile(t *testing.T, path string, n int, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, bytes.Repeat([]byte{0x5a}, n), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil { // past the umask
		t.Fatal(err)
	}
}

// Open refuses a key file that others may read or write, or that is not a
// key, with an error that names the file and what to do.
func TestKeyFileRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, key string)
		want  []string
	}{
		{"readable by others", func(t *testing.T, key string) { writeKeyFile(t, key, keySize, 0o644) },
			[]string{"mode 0644", "chmod 600 KEY"}},
		{"writable by the group", func(t *testing.T, key string) { writeKeyFile(t, key, keySize, 0o620) },
			[]string{"mode 0620", "chmod 600 KEY"}},
		{"too short", func(t *testing.T, key string) { writeKeyFile(t, key, keySize/2, 0o600) },
			[]string{"16 bytes, want 32"}},
		{"too long", func(t *testing.T, key string) { writeKeyFile(t, key, keySize+1, 0o600) },
			[]string{"33 bytes, want 32"}},
		{"a directory", func(t *testing.T, key string) {
			if err := os.Mkdir(key, 0o700); err != nil {
				t.Fatal(err)
			}
		}, []string{"not a regular file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "oncepost.db")
			key := path + ".key"
			tc.setup(t, key)
			s, err := Open(context.Background(), path, Options{})
			if err == nil {
				s.Close()
				t.Fatalf("Open with a key file that is %s succeeded, want an error", tc.name)
			}
			for _, w := range append(tc.want, "KEY") {
				if w = strings.ReplaceAll(w, "KEY", key); !strings.Contains(err.Error(), w) {
					t.Errorf("Open = %v, want an error saying %q", err, w)
				}
			}
		})
	}
}

// A key file that is gone is created again only if the database holds no
// encrypted value; otherwise Open refuses and creates nothing.
func TestMissingKeyFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "oncepost.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutAccount(ctx, post.Account{ID: "acct-a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.LeaseRefresh(ctx, "acct-a", "w1", t0, t0.Add(time.Minute)); err != nil { // a row without values
		t.Fatal(err)
	}
	s.Close()
	if err := os.Remove(path + ".key"); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("Open without a key file and without credentials = %v, want a new key", err)
	}
	wantKeyFile(t, path+".key")
	mustPutCred(t, s, "acct-a", secretCred("a"))
	s.Close()

	if err := os.Remove(path + ".key"); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open without the key file of stored credentials succeeded, want an error")
	}
	for _, w := range []string{path + ".key", "missing", "1 encrypted credentials", "restore the key file"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Open = %v, want an error saying %q", err, w)
		}
	}
	if _, err := os.Stat(path + ".key"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("key file after the refused Open: %v, want none created", err)
	}
}

// Stores opening one new file at the same moment end with one key: every
// credential any of them stored decrypts with the key file.
func TestConcurrentOpenMakesOneKey(t *testing.T) {
	ctx := context.Background()
	for round := range 5 {
		path := filepath.Join(t.TempDir(), fmt.Sprint(round, ".db"))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				<-start
				s, err := Open(ctx, path, Options{})
				if err != nil {
					t.Error(err)
					return
				}
				defer s.Close()
				id := post.AccountID(fmt.Sprint("acct-", i))
				if err := s.PutCredential(ctx, id, secretCred(string(id))); err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		s := openAt(t, path)
		for i := range 6 {
			id := post.AccountID(fmt.Sprint("acct-", i))
			if c, err := s.Credential(ctx, id); err != nil || c.AccessToken != secretCred(string(id)).AccessToken {
				t.Errorf("round %d: Credential(%s) = %v", round, id, err)
			}
		}
	}
}

// createKey racing itself on one path, without the database's lock to
// serialise it: every racer reads the same whole key, and no temporary
// file is left behind.
func TestCreateKeyRace(t *testing.T) {
	for round := range 20 {
		dir := t.TempDir()
		path := filepath.Join(dir, "k.key")
		const n = 8
		keys := make([][]byte, n)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				keys[i], errs[i] = loadKey(path, func() error { return nil })
			})
		}
		close(start)
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("round %d racer %d: %v", round, i, errs[i])
			}
			if len(keys[i]) != keySize || !bytes.Equal(keys[i], keys[0]) {
				t.Fatalf("round %d: racer %d read another key than racer 0", round, i)
			}
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("round %d: directory holds %v, want only the key file", round, names)
		}
		wantKeyFile(t, path)
	}
}
