package dynamostore

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"oncepost/shared/credseal"
	"oncepost/shared/platform"
	"oncepost/shared/post"
)

func secretCred(tag string) platform.Credential {
	return platform.Credential{AccessToken: "access-secret-" + tag, RefreshToken: "refresh-secret-" + tag,
		ExpiresAt: t0.Add(time.Hour), ClientID: "client-id-" + tag, ClientSecret: "client-secret-" + tag}
}

// Credentials are sealed at rest, bound to their account and field; a
// store with another key, or none, cannot read them.
func TestCredentialsSealedAtRest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, WorkspaceTable, CredentialsTable)
	key := NewStaticKey()
	s := e.store(t, prefix, nil, Options{Keys: key})
	ctx := t.Context()
	a, b := secretCred("a"), secretCred("b")
	mustDo(t, s.PutCredential(ctx, "acct-a", a))
	mustDo(t, s.PutCredential(ctx, "acct-b", b))

	raw := rawItem(t, e, s.tables.credentials, credentialKey("acct-a"))
	for _, f := range []string{credseal.AccessToken, credseal.RefreshToken, credseal.ClientID, credseal.ClientSecret} {
		if v := sval(raw, f); !strings.HasPrefix(v, credseal.Prefix) {
			t.Errorf("stored %s = %.12q…, want sealed (%s…)", f, v, credseal.Prefix)
		}
	}
	if dump := fmt.Sprint(raw); strings.Contains(dump, "secret-a") {
		t.Errorf("stored credential holds a token in the clear: %s", dump)
	}
	if dk := rawItem(t, e, s.tables.workspace, dataKeyKey); dk == nil || sval(dk, "wrapped_by") != key.Name() {
		t.Errorf("data key item = %v, want one wrapped by %s", dk, key.Name())
	}

	// acct-a's sealed access token copied to acct-b does not open there.
	copied := sval(raw, credseal.AccessToken)
	_, err := e.admin.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.tables.credentials, Key: credentialKey("acct-b"), UpdateExpression: ptr("SET access_token = :v"),
		ExpressionAttributeValues: item{":v": str(copied)},
	})
	mustDo(t, err)
	_, err = s.Credential(ctx, "acct-b")
	if !errors.Is(err, credseal.ErrUndecryptable) {
		t.Fatalf("Credential(acct-b with acct-a's token) = %v, want credseal.ErrUndecryptable", err)
	}
	for _, want := range []string{"credential acct-b:", "access_token does not decrypt", key.Name()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), copied[len(credseal.Prefix):][:12]) {
		t.Errorf("error %q quotes a value", err)
	}

	// Another key, and no key.
	other := e.store(t, prefix, nil, Options{Keys: NewStaticKey()})
	if _, err := other.Credential(ctx, "acct-a"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("Credential with another key = %v, want a refusal that quotes nothing", err)
	}
	none := e.store(t, prefix, nil, Options{})
	if err := none.PutCredential(ctx, "acct-c", a); !errors.Is(err, ErrNoDataKeys) {
		t.Errorf("PutCredential without keys = %v, want ErrNoDataKeys", err)
	}
	if _, err := none.Credential(ctx, "acct-missing"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("Credential(missing) without keys = %v, want post.ErrNotFound", err)
	}
	if got, err := s.Credential(ctx, "acct-a"); err != nil || got != a {
		t.Errorf("Credential(acct-a) = %v, want it back", err)
	}
}

// randomKeys makes a new random data key on every NewDataKey, as KMS
// does; its "wrapping" is only hex (a test double).
type randomKeys struct{ made atomic.Int64 }

func (k *randomKeys) Name() string { return "test random keys" }
func (k *randomKeys) NewDataKey(context.Context) ([]byte, []byte, error) {
	k.made.Add(1)
	key := make([]byte, credseal.KeySize)
	_, _ = rand.Read(key)
	return key, []byte(hex.EncodeToString(key)), nil
}
func (k *randomKeys) OpenDataKey(_ context.Context, wrapped []byte) ([]byte, error) {
	return hex.DecodeString(string(wrapped))
}

// Processes storing their first credentials at the same time agree on one
// data key: the one stored first.
func TestDataKeyRaceAcrossStores(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, WorkspaceTable, CredentialsTable)
	keys := &randomKeys{}
	ctx := t.Context()
	const n = 6
	stores := make([]*Store, n)
	for i := range stores {
		stores[i] = e.store(t, prefix, nil, Options{Keys: keys})
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = stores[i].PutCredential(ctx, post.AccountID(fmt.Sprintf("acct-%d", i)), secretCred(fmt.Sprint(i)))
		})
	}
	wg.Wait()
	fresh := e.store(t, prefix, nil, Options{Keys: keys})
	for i := range n {
		if errs[i] != nil {
			t.Errorf("store %d: %v", i, errs[i])
		}
		if got, err := fresh.Credential(ctx, post.AccountID(fmt.Sprintf("acct-%d", i))); err != nil || got != secretCred(fmt.Sprint(i)) {
			t.Errorf("credential %d read by another store: %v", i, err)
		}
	}
	t.Logf("%d stores made %d data keys; one was stored", n, keys.made.Load())
}

// fakeKMS decodes the SDK's real KMS requests (JSON 1.1, X-Amz-Target
// TrentService.*, SigV4-signed) and answers GenerateDataKey and Decrypt,
// wrapping data keys with its own AES-GCM key and the key id and
// encryption context as additional data.
type fakeKMS struct {
	t      *testing.T
	keyARN string
	master cipher.AEAD
	mu     sync.Mutex
	calls  map[string]int
}

func newFakeKMS(t *testing.T) (*fakeKMS, *kms.Client) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	f := &fakeKMS{t: t, keyARN: "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab", master: aead, calls: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	client := kms.NewFromConfig(aws.Config{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
	})
	return f, client
}

func (f *fakeKMS) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// knownKey: the fake's one key, by alias, id or ARN.
func (f *fakeKMS) knownKey(id string) bool {
	return id == "alias/oncepost" || id == f.keyARN || strings.HasSuffix(f.keyARN, "/"+id)
}

func aad(ctx map[string]any) []byte {
	keys := make([]string, 0, len(ctx))
	for k := range ctx {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%v\x00", k, ctx[k])
	}
	return b.Bytes()
}

func (f *fakeKMS) fail(w http.ResponseWriter, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}

func (f *fakeKMS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	f.mu.Lock()
	f.calls[strings.TrimPrefix(target, "TrentService.")]++
	f.mu.Unlock()
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-amz-json-1.1" ||
		!strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDTEST/") {
		f.t.Errorf("KMS request %s %s, Content-Type %q, Authorization %.40q: not a signed JSON 1.1 request",
			r.Method, target, r.Header.Get("Content-Type"), r.Header.Get("Authorization"))
	}
	body, _ := io.ReadAll(r.Body)
	var in map[string]any
	if err := json.Unmarshal(body, &in); err != nil {
		f.fail(w, "SerializationException", err.Error())
		return
	}
	keyID, _ := in["KeyId"].(string)
	ctx, _ := in["EncryptionContext"].(map[string]any)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	switch target {
	case "TrentService.GenerateDataKey":
		if !f.knownKey(keyID) {
			f.fail(w, "NotFoundException", "Key '"+keyID+"' does not exist")
			return
		}
		if in["KeySpec"] != "AES_256" {
			f.t.Errorf("GenerateDataKey KeySpec %v, want AES_256", in["KeySpec"])
		}
		plain := make([]byte, 32)
		_, _ = rand.Read(plain)
		nonce := make([]byte, f.master.NonceSize())
		_, _ = rand.Read(nonce)
		blob := f.master.Seal(nonce, nonce, plain, aad(ctx))
		_ = json.NewEncoder(w).Encode(map[string]any{"CiphertextBlob": blob, "Plaintext": plain, "KeyId": f.keyARN})
	case "TrentService.Decrypt":
		blob, err := base64.StdEncoding.DecodeString(fmt.Sprint(in["CiphertextBlob"]))
		n := f.master.NonceSize()
		if err != nil || len(blob) < n {
			f.fail(w, "InvalidCiphertextException", "bad blob")
			return
		}
		if keyID != "" && !f.knownKey(keyID) {
			f.fail(w, "IncorrectKeyException", "The key ID in the request does not identify the key that encrypted the ciphertext.")
			return
		}
		plain, err := f.master.Open(nil, blob[:n], blob[n:], aad(ctx))
		if err != nil {
			f.fail(w, "InvalidCiphertextException", "")
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"Plaintext": plain, "KeyId": f.keyARN, "EncryptionAlgorithm": "SYMMETRIC_DEFAULT"})
	default:
		f.fail(w, "UnknownOperationException", target)
	}
}

// KMSKeys against the fake: a data key round-trips through
// GenerateDataKey and Decrypt; another key or context is refused.
func TestKMSKeys(t *testing.T) {
	f, client := newFakeKMS(t)
	ctx := t.Context()
	k := KMSKeys{Client: client, KeyID: "alias/oncepost"}
	plain, wrapped, err := k.NewDataKey(ctx)
	if err != nil || len(plain) != credseal.KeySize || len(wrapped) == 0 || bytes.Contains(wrapped, plain) {
		t.Fatalf("NewDataKey = %d-byte key, %d-byte wrapped, %v", len(plain), len(wrapped), err)
	}
	got, err := k.OpenDataKey(ctx, wrapped)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("OpenDataKey = %v, want the generated key", err)
	}
	for name, tc := range map[string]struct {
		k       KMSKeys
		wrapped []byte
	}{
		"another key":     {KMSKeys{Client: client, KeyID: "alias/other"}, wrapped},
		"another context": {KMSKeys{Client: client, KeyID: "alias/oncepost", Context: map[string]string{"oncepost": "other"}}, wrapped},
		"damaged":         {k, append(bytes.Clone(wrapped[:len(wrapped)-1]), wrapped[len(wrapped)-1]^1)},
	} {
		if _, err := tc.k.OpenDataKey(ctx, tc.wrapped); err == nil || !strings.Contains(err.Error(), tc.k.Name()) {
			t.Errorf("%s: OpenDataKey = %v, want a refusal naming %s", name, err, tc.k.Name())
		}
	}
	if _, _, err := (KMSKeys{Client: client, KeyID: "alias/missing"}).NewDataKey(ctx); err == nil {
		t.Error("NewDataKey with an unknown key = nil error")
	}
	if f.count("GenerateDataKey") != 2 || f.count("Decrypt") != 4 {
		t.Errorf("fake KMS saw %v", f.calls)
	}
}

// With KMS, the first credential stored makes the data key (one
// GenerateDataKey); a new process unwraps it once (one Decrypt) however
// many credentials it reads; a store configured with another KMS key
// cannot read them.
func TestCredentialsWithKMS(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prefix := e.tables(t, WorkspaceTable, CredentialsTable)
	f, client := newFakeKMS(t)
	keys := KMSKeys{Client: client, KeyID: "alias/oncepost"}
	ctx := t.Context()
	first := e.store(t, prefix, nil, Options{Keys: keys})
	for _, id := range []post.AccountID{"acct-a", "acct-b"} {
		mustDo(t, first.PutCredential(ctx, id, secretCred(string(id))))
		if got, err := first.Credential(ctx, id); err != nil || got != secretCred(string(id)) {
			t.Errorf("Credential(%s) = %v", id, err)
		}
	}
	if g, d := f.count("GenerateDataKey"), f.count("Decrypt"); g != 1 || d != 0 {
		t.Errorf("first process: %d GenerateDataKey, %d Decrypt; want 1, 0", g, d)
	}
	rec := &recorder{}
	cold := e.store(t, prefix, rec, Options{Keys: keys})
	for range 3 {
		for _, id := range []post.AccountID{"acct-a", "acct-b"} {
			if got, err := cold.Credential(ctx, id); err != nil || got != secretCred(string(id)) {
				t.Errorf("cold start: Credential(%s) = %v", id, err)
			}
		}
	}
	if d := f.count("Decrypt"); d != 1 {
		t.Errorf("a cold start reading 6 credentials made %d KMS Decrypt calls, want 1", d)
	}
	if got := strings.Join(ops(rec.take()), " "); got != "GetItem GetItem"+strings.Repeat(" GetItem", 5) {
		t.Errorf("cold start's DynamoDB calls = %s, want the data key, then one GetItem per credential", got)
	}
	wrong := e.store(t, prefix, nil, Options{Keys: KMSKeys{Client: client, KeyID: "alias/other"}})
	if _, err := wrong.Credential(ctx, "acct-a"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("Credential with another KMS key = %v, want a refusal", err)
	}
}

// DeleteAccount removes the account and its credential.
func TestDeleteAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.store(t, e.tables(t, WorkspaceTable, CredentialsTable), nil, Options{Keys: NewStaticKey()})
	ctx := t.Context()
	mustDo(t, s.PutAccount(ctx, post.Account{ID: "acct-a", Platform: "mastodon"}))
	mustDo(t, s.PutCredential(ctx, "acct-a", secretCred("a")))
	mustDo(t, s.DeleteAccount(ctx, "acct-a"))
	if _, err := s.GetAccount(ctx, "acct-a"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("GetAccount after delete = %v", err)
	}
	if _, err := s.Credential(ctx, "acct-a"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("Credential after delete = %v", err)
	}
	if err := s.DeleteAccount(ctx, "acct-a"); !errors.Is(err, post.ErrNotFound) {
		t.Errorf("second DeleteAccount = %v, want post.ErrNotFound", err)
	}
}

// The blocklist: byte order, adding twice keeps the first, removing
// reports whether there was a term.
func TestBlocklist(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.store(t, e.tables(t, WorkspaceTable), nil, Options{})
	ctx := t.Context()
	if list, err := s.BlockedTerms(ctx); err != nil || len(list) != 0 {
		t.Fatalf("BlockedTerms(empty) = %v, %v", list, err)
	}
	var want []post.BlockedTerm
	for i, term := range []string{"Spoiler", "café", "ZED", "apple pie", "ＳＰＯＩＬＥＲ"} {
		bt, err := post.NewBlockedTerm(term, t0.Add(time.Duration(i)*time.Second))
		mustDo(t, err)
		added, err := s.AddBlockedTerm(ctx, bt)
		mustDo(t, err)
		if added != (i < 4) {
			t.Errorf("AddBlockedTerm(%q) = %v", term, added)
		}
		if added {
			want = append(want, bt)
		}
	}
	slices.SortFunc(want, func(a, b post.BlockedTerm) int { return strings.Compare(a.Key, b.Key) })
	got, err := s.BlockedTerms(ctx)
	mustDo(t, err)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("BlockedTerms = %v, want %v", got, want)
	}
	for _, bt := range got {
		if bt.AddedAt.Location() != time.UTC {
			t.Errorf("AddedAt of %q not in UTC", bt.Key)
		}
	}
	if removed, err := s.RemoveBlockedTerm(ctx, want[0].Key); !removed || err != nil {
		t.Errorf("RemoveBlockedTerm = %v, %v", removed, err)
	}
	if removed, err := s.RemoveBlockedTerm(ctx, want[0].Key); removed || err != nil {
		t.Errorf("second RemoveBlockedTerm = %v, %v", removed, err)
	}
	if _, err := s.AddBlockedTerm(ctx, post.BlockedTerm{Term: "x"}); !errors.Is(err, ErrEmptyKey) {
		t.Errorf("AddBlockedTerm(no key) = %v", err)
	}
}
